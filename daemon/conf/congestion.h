/*
 * congestion.h - a TCP congestion control named in a config, checked
 * against what this kernel offers and lets this user set.
 */
#ifndef WEIR_CONF_CONGESTION_H
#define WEIR_CONF_CONGESTION_H

#include <stddef.h>

/*
 * Copies name into out (len bytes, at least 16) when a TCP socket accepts
 * it as its TCP_CONGESTION; "system" leaves out empty (the system's
 * default). 0, or -EINVAL with the reason and the names that would do in
 * err.
 */
int congestion_check(const char *name, char *out, size_t len, char *err,
                     size_t errlen);

#endif /* WEIR_CONF_CONGESTION_H */
