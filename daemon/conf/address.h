/*
 * address.h - socat-shaped endpoint addresses: kind:address[,option=value...]
 *
 *   file:PATH                 tcp:HOST:PORT        tcp-listen:HOST:PORT
 *   unix:PATH                 unix-listen:PATH     stdin  stdout  null
 *   tls:HOST:PORT             tls-listen:HOST:PORT (tcp with TLS: tls set)
 *
 * HOST is a name, an IPv4 literal, or an IPv6 literal in brackets
 * ([::1]:9000). Kinds are case-insensitive; options are lowercase. A PATH
 * runs up to the first comma, so a path cannot contain one.
 */
#ifndef WEIR_DAEMON_ADDRESS_H
#define WEIR_DAEMON_ADDRESS_H

#include "conf/config.h"

/*
 * Parses `text` as the source or a sink. A relative PATH is joined to
 * base_dir unless base_dir is NULL. Returns 0 and a new address in *out, or
 * -EINVAL with a sentence in err (or -ENOMEM).
 */
int address_parse(const char *text, enum addr_role role, const char *base_dir,
                  const struct conf_loc *loc, struct weir_address **out,
                  char *err, size_t errlen);

/* HOST:PORT alone (the metrics key); host is a new string. */
int address_parse_hostport(const char *s, char **host, bool *ipv6,
                           uint16_t *port, char *err, size_t errlen);

void address_free(struct weir_address *a);

/* tcp-listen or unix-listen. */
static inline bool addr_kind_listens(enum addr_kind kind)
{
    return kind == ADDR_TCP_LISTEN || kind == ADDR_UNIX_LISTEN;
}

#endif
