/*
 * address_impl.h - what the two halves of the address grammar share:
 * address.c (kinds, hosts, paths) and address_options.c (the options
 * after them). The kinds table and the role names are static here, so
 * that each half has its own copy of a few hundred bytes and neither
 * calls the other for a name; the options half is called for each
 * option.
 */
#ifndef WEIR_DAEMON_ADDRESS_IMPL_H
#define WEIR_DAEMON_ADDRESS_IMPL_H

#include <ctype.h>
#include <stdbool.h>
#include <stddef.h>
#include <string.h>
#include <strings.h>

#include "conf/config.h"

#define KIND(k)   (1u << (k))
#define ALL_KINDS ((1u << ADDR_KINDS) - 1)
#define LISTENERS (KIND(ADDR_TCP_LISTEN) | KIND(ADDR_UNIX_LISTEN))
#define TLS_ONLY  (1u << 16) /* the option needs tls: or tls-listen: */
#define TLS_BOTH  (KIND(ADDR_TCP) | KIND(ADDR_TCP_LISTEN) | TLS_ONLY)
#define HTTPD_OPT (1u << 17) /* the option needs http-listen: */
#define ROLE(r)   (1u << (r))

_Static_assert(ADDR_KINDS <= 16, "kinds are bits below TLS_ONLY");

struct kind_def {
    const char *name;
    bool takes_argument;
    unsigned roles;
    const char *usage; /* shown when the argument is missing */
};

static const struct kind_def kinds[] = {
    [ADDR_FILE] = {"file", true, ROLE(ADDR_SOURCE) | ROLE(ADDR_SINK),
                   "file:PATH"},
    [ADDR_TCP] = {"tcp", true, ROLE(ADDR_SOURCE) | ROLE(ADDR_SINK),
                  "tcp:HOST:PORT"},
    [ADDR_TCP_LISTEN] = {"tcp-listen", true,
                         ROLE(ADDR_SOURCE) | ROLE(ADDR_SINK),
                         "tcp-listen:HOST:PORT"},
    [ADDR_UNIX] = {"unix", true, ROLE(ADDR_SOURCE) | ROLE(ADDR_SINK),
                   "unix:PATH"},
    [ADDR_UNIX_LISTEN] = {"unix-listen", true,
                          ROLE(ADDR_SOURCE) | ROLE(ADDR_SINK),
                          "unix-listen:PATH"},
    [ADDR_STDIN] = {"stdin", false, ROLE(ADDR_SOURCE), "stdin"},
    [ADDR_STDOUT] = {"stdout", false, ROLE(ADDR_SINK), "stdout"},
    [ADDR_NULL] = {"null", false, ROLE(ADDR_SINK), "null"},
    /* Never found by name: a file source whose path is a pattern
     * (address.c). */
    [ADDR_FILE_SET] = {"file", true, ROLE(ADDR_SOURCE), "file:PATTERN"},
    /* Also found as https (address.c): the scheme stays in the URL. */
    [ADDR_HTTP] = {"http", true, ROLE(ADDR_SINK), "http://HOST:PORT/PATH"},
    [ADDR_KAFKA] = {"kafka", true, ROLE(ADDR_SINK),
                    "kafka:HOST:PORT[,HOST:PORT...]/TOPIC"},
    [ADDR_JETSTREAM] = {"jetstream", true, ROLE(ADDR_SOURCE) | ROLE(ADDR_SINK),
                        "jetstream:nats://HOST:PORT[,nats://HOST:PORT...]/"
                        "SUBJECT"},
    [ADDR_DIR] = {"dir", true, ROLE(ADDR_SOURCE), "dir:PATH"},
};

#define NKINDS (sizeof(kinds) / sizeof(kinds[0]))

static const char *const role_names[] = {
    [ADDR_SOURCE] = "source",
    [ADDR_SINK] = "sink",
};

/* The kind as the address spells it: tls and tls-listen are tcp's. */
static inline const char *kind_label(const struct weir_address *a)
{
    if (a->kind == ADDR_HTTP && a->url && strncasecmp(a->url, "https", 5) == 0)
        return "https";
    if (a->serve_http)
        return a->tls ? "https-listen" : "http-listen";
    if (a->tls)
        return a->kind == ADDR_TCP ? "tls" : "tls-listen";
    return kinds[a->kind].name;
}

static inline char *trim(char *s)
{
    char *end;

    while (isspace((unsigned char)*s))
        s++;
    end = s + strlen(s);
    while (end > s && isspace((unsigned char)end[-1]))
        *--end = '\0';
    return s;
}

/* One "key=value" of the option list (address_options.c). 0, or -EINVAL
 * with a sentence in err (-ENOMEM); seen holds the options given so far,
 * each at most once. */
int address_parse_option(struct weir_address *a, char *item, uint64_t *seen,
                         char *err, size_t errlen);

#endif
