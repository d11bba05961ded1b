/*
 * transforms.h - the transforms the config and `weir pipe --transform`
 * may name. A spec is NAME or NAME:ARGUMENT (gzip:6).
 */
#ifndef WEIR_DAEMON_TRANSFORMS_H
#define WEIR_DAEMON_TRANSFORMS_H

#include <stddef.h>

/* 0 when spec names a known transform with a valid argument; else -EINVAL
 * and a sentence in err. */
int transform_check(const char *spec, char *err, size_t errlen);

#endif
