/*
 * address.c - see address.h. The whole address grammar (kinds, options,
 * socat's spellings) stays in one file past the usual size, because every
 * part of it reads the same two tables, kinds[] and options[].
 */
#include "conf/address.h"

#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/un.h>

#include "conf/suggest.h"
#include "conf/value.h"

#define KIND(k)   (1u << (k))
#define ALL_KINDS 0xffu
#define LISTENERS (KIND(ADDR_TCP_LISTEN) | KIND(ADDR_UNIX_LISTEN))
#define TLS_ONLY  (1u << 16) /* the option needs tls: or tls-listen: */
#define TLS_BOTH  (KIND(ADDR_TCP) | KIND(ADDR_TCP_LISTEN) | TLS_ONLY)
#define ROLE(r)   (1u << (r))

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
};

#define NKINDS (sizeof(kinds) / sizeof(kinds[0]))

static const char *const role_names[] = {
    [ADDR_SOURCE] = "source",
    [ADDR_SINK] = "sink",
};

static const char *const on_full_names[] = {
    [ON_FULL_BLOCK] = "block",
    [ON_FULL_DROP_NEWEST] = "drop-newest",
    [ON_FULL_DROP_OLDEST] = "drop-oldest",
    [ON_FULL_DISCONNECT] = "disconnect",
};

const char *addr_kind_name(enum addr_kind kind)
{
    return kinds[kind].name;
}

/* The kind as the address spells it: tls and tls-listen are tcp's. */
static const char *kind_label(const struct weir_address *a)
{
    if (a->tls)
        return a->kind == ADDR_TCP ? "tls" : "tls-listen";
    return kinds[a->kind].name;
}

const char *on_full_name(enum on_full policy)
{
    return on_full_names[policy];
}

typedef int (*option_fn)(struct weir_address *a, const char *value, char *err,
                         size_t errlen);

static int opt_follow(struct weir_address *a, const char *v, char *err,
                      size_t errlen)
{
    a->follow_set = true;
    return value_bool(v, &a->follow, err, errlen);
}

static int opt_fifo(struct weir_address *a, const char *v, char *err,
                    size_t errlen)
{
    a->fifo_set = true;
    return value_bool(v, &a->fifo, err, errlen);
}

static int opt_append(struct weir_address *a, const char *v, char *err,
                      size_t errlen)
{
    a->append_set = true;
    return value_bool(v, &a->append, err, errlen);
}

static int opt_on_full(struct weir_address *a, const char *v, char *err,
                       size_t errlen)
{
    for (size_t i = 0; i < sizeof(on_full_names) / sizeof(on_full_names[0]);
         i++) {
        if (strcmp(v, on_full_names[i]) == 0) {
            a->on_full = (enum on_full)i;
            a->on_full_set = true;
            return 0;
        }
    }
    {
        static const char *const names[] = {"block", "drop-newest",
                                            "drop-oldest", "disconnect", NULL};
        const char *near = suggest_word(v, strlen(v), names);

        if (near != NULL)
            snprintf(err, errlen, "'%s' is not a policy (did you mean '%s'?)",
                     v, near);
        else
            snprintf(err, errlen,
                     "'%s' is not a policy: use block, drop-newest, "
                     "drop-oldest or disconnect",
                     v);
    }
    return -EINVAL;
}

static int opt_hwm(struct weir_address *a, const char *v, char *err,
                   size_t errlen)
{
    return value_size(v, CONF_MIN_HWM, CONF_MAX_HWM, &a->high_water_mark, err,
                      errlen);
}

static int opt_max_clients(struct weir_address *a, const char *v, char *err,
                           size_t errlen)
{
    uint64_t n;
    int r = value_uint(v, 1, CONF_MAX_CLIENTS, &n, err, errlen);

    a->max_clients = (unsigned)n;
    return r;
}

static int opt_backlog(struct weir_address *a, const char *v, char *err,
                       size_t errlen)
{
    uint64_t n;
    int r = value_uint(v, 1, CONF_MAX_BACKLOG, &n, err, errlen);

    a->backlog = (unsigned)n;
    return r;
}

static int opt_notsent_lowat(struct weir_address *a, const char *v, char *err,
                             size_t errlen)
{
    if (strcmp(v, "auto") == 0) {
        a->notsent_lowat = CONF_NOTSENT_AUTO;
        return 0;
    }
    return value_size(v, 0, CONF_MAX_NOTSENT, &a->notsent_lowat, err, errlen);
}

struct option_def {
    const char *name;
    unsigned kinds;
    unsigned roles;
    const char *applies_to; /* for the message when misplaced */
    option_fn parse;
};

static int opt_str(char **dst, const char *v)
{
    free(*dst);
    *dst = strdup(v);
    return *dst ? 0 : -ENOMEM;
}

static int opt_cert(struct weir_address *a, const char *v, char *err,
                    size_t errlen)
{
    (void)err;
    (void)errlen;
    return opt_str(&a->cert, v);
}

static int opt_key(struct weir_address *a, const char *v, char *err,
                   size_t errlen)
{
    (void)err;
    (void)errlen;
    return opt_str(&a->key, v);
}

static int opt_ca(struct weir_address *a, const char *v, char *err,
                  size_t errlen)
{
    (void)err;
    (void)errlen;
    return opt_str(&a->ca, v);
}

static int opt_sni(struct weir_address *a, const char *v, char *err,
                   size_t errlen)
{
    (void)err;
    (void)errlen;
    return opt_str(&a->sni, v);
}

static int opt_alpn(struct weir_address *a, const char *v, char *err,
                    size_t errlen)
{
    (void)err;
    (void)errlen;
    return opt_str(&a->alpn, v);
}

static int opt_ciphers(struct weir_address *a, const char *v, char *err,
                       size_t errlen)
{
    (void)err;
    (void)errlen;
    return opt_str(&a->ciphers, v);
}

static int opt_verify(struct weir_address *a, const char *v, char *err,
                      size_t errlen)
{
    return value_bool(v, &a->verify, err, errlen);
}

static int opt_min_version(struct weir_address *a, const char *v, char *err,
                           size_t errlen)
{
    if (strcasecmp(v, "TLS1.2") == 0 || strcmp(v, "1.2") == 0 ||
        strcasecmp(v, "TLSv1.2") == 0)
        a->min_version = WEIR_TLS_1_2;
    else if (strcasecmp(v, "TLS1.3") == 0 || strcmp(v, "1.3") == 0 ||
             strcasecmp(v, "TLSv1.3") == 0)
        a->min_version = WEIR_TLS_1_3;
    else {
        snprintf(err, errlen, "'%s' is not a version: use TLS1.2 or TLS1.3", v);
        return -EINVAL;
    }
    return 0;
}

static int opt_handshake_timeout(struct weir_address *a, const char *v,
                                 char *err, size_t errlen)
{
    return value_duration_ms(v, 1, CONF_MAX_HANDSHAKE_MS,
                             &a->handshake_timeout_ms, err, errlen);
}

static const struct option_def options[] = {
    {"follow", KIND(ADDR_FILE), ROLE(ADDR_SOURCE), "a file source", opt_follow},
    {"append", KIND(ADDR_FILE), ROLE(ADDR_SINK), "a file sink", opt_append},
    {"fifo", KIND(ADDR_FILE), ROLE(ADDR_SOURCE), "a file source", opt_fifo},
    {"on_full", ALL_KINDS, ROLE(ADDR_SINK), "sinks", opt_on_full},
    {"high_water_mark", ALL_KINDS, ROLE(ADDR_SINK), "sinks", opt_hwm},
    {"max_clients", LISTENERS, ROLE(ADDR_SOURCE) | ROLE(ADDR_SINK),
     "tcp-listen and unix-listen", opt_max_clients},
    {"backlog", LISTENERS, ROLE(ADDR_SOURCE) | ROLE(ADDR_SINK),
     "tcp-listen and unix-listen", opt_backlog},
    {"notsent_lowat", KIND(ADDR_TCP_LISTEN),
     ROLE(ADDR_SOURCE) | ROLE(ADDR_SINK), "tcp-listen", opt_notsent_lowat},
    {"cert", TLS_BOTH, ROLE(ADDR_SOURCE) | ROLE(ADDR_SINK),
     "tls and tls-listen", opt_cert},
    {"key", TLS_BOTH, ROLE(ADDR_SOURCE) | ROLE(ADDR_SINK), "tls and tls-listen",
     opt_key},
    {"ca", TLS_BOTH, ROLE(ADDR_SOURCE) | ROLE(ADDR_SINK), "tls and tls-listen",
     opt_ca},
    {"verify", KIND(ADDR_TCP) | TLS_ONLY, ROLE(ADDR_SOURCE) | ROLE(ADDR_SINK),
     "tls", opt_verify},
    {"sni", KIND(ADDR_TCP) | TLS_ONLY, ROLE(ADDR_SOURCE) | ROLE(ADDR_SINK),
     "tls", opt_sni},
    {"alpn", TLS_BOTH, ROLE(ADDR_SOURCE) | ROLE(ADDR_SINK),
     "tls and tls-listen", opt_alpn},
    {"min_version", TLS_BOTH, ROLE(ADDR_SOURCE) | ROLE(ADDR_SINK),
     "tls and tls-listen", opt_min_version},
    {"ciphers", TLS_BOTH, ROLE(ADDR_SOURCE) | ROLE(ADDR_SINK),
     "tls and tls-listen", opt_ciphers},
    {"handshake_timeout", TLS_BOTH, ROLE(ADDR_SOURCE) | ROLE(ADDR_SINK),
     "tls and tls-listen", opt_handshake_timeout},
};

#define NOPTIONS (sizeof(options) / sizeof(options[0]))

static bool option_fits(const struct option_def *o,
                        const struct weir_address *a)
{
    return (o->kinds & KIND(a->kind)) && (o->roles & ROLE(a->role)) &&
           (!(o->kinds & TLS_ONLY) || a->tls);
}

/* "on_full, high_water_mark" for a tcp sink; "none" when nothing fits. */
static void list_options(const struct weir_address *a, char *buf, size_t len)
{
    size_t n = 0;

    buf[0] = '\0';
    for (size_t i = 0; i < NOPTIONS && n < len; i++)
        if (option_fits(&options[i], a))
            n += (size_t)snprintf(buf + n, len - n, "%s%s", n ? ", " : "",
                                  options[i].name);
    if (n == 0)
        snprintf(buf, len, "none");
}

/* socat options whose job weir does without being asked. */
static const struct {
    const char *name, *why;
} socat_options[] = {
    {"fork", "a listen address serves every client that connects (limit them "
             "with max_clients=)"},
    {"reuseaddr", "weir sets SO_REUSEADDR on every socket it listens on"},
};

/* socat's OPENSSL options that weir spells its own way. */
static const struct {
    const char *name, *why;
} socat_renamed[] = {
    {"cafile", "weir's name for it is ca=FILE"},
    {"capath", "weir takes one PEM file of CAs: ca=FILE"},
    {"certificate", "weir's name for it is cert=FILE"},
    {"cipher", "weir's name for it is ciphers=LIST"},
    {"snihost", "weir's name for it is sni=NAME"},
    {"commonname", "weir checks the name sni= gives (default: the host)"},
    {"openssl-min-proto-version", "weir's name for it is min_version="},
};

static void unknown_option(const struct weir_address *a, const char *key,
                           const char *known, char *err, size_t errlen)
{
    const char *names[NOPTIONS + 1], *near;
    size_t n = 0;

    for (size_t i = 0; i < sizeof(socat_options) / sizeof(socat_options[0]);
         i++) {
        if (strcasecmp(key, socat_options[i].name) == 0) {
            snprintf(err, errlen, "option '%s' is not needed: %s; leave it out",
                     key, socat_options[i].why);
            return;
        }
    }
    for (size_t i = 0; i < sizeof(socat_renamed) / sizeof(socat_renamed[0]);
         i++) {
        if (strcasecmp(key, socat_renamed[i].name) == 0) {
            snprintf(err, errlen, "option '%s' is socat's: %s", key,
                     socat_renamed[i].why);
            return;
        }
    }
    for (size_t i = 0; i < NOPTIONS; i++)
        if (option_fits(&options[i], a))
            names[n++] = options[i].name;
    names[n] = NULL;
    near = suggest_word(key, strlen(key), names);
    if (near != NULL)
        snprintf(err, errlen,
                 "unknown option '%s' for a %s %s (did you mean '%s'?)", key,
                 kind_label(a), role_names[a->role], near);
    else
        snprintf(err, errlen, "unknown option '%s' for a %s %s (options: %s)",
                 key, kind_label(a), role_names[a->role], known);
}

static char *trim(char *s)
{
    char *end;

    while (isspace((unsigned char)*s))
        s++;
    end = s + strlen(s);
    while (end > s && isspace((unsigned char)end[-1]))
        *--end = '\0';
    return s;
}

/* One "key=value" of the option list; key and value are trimmed. */
static int parse_option(struct weir_address *a, char *item, unsigned *seen,
                        char *err, size_t errlen)
{
    char *eq = strchr(item, '=');
    char *key, *value, known[128];
    const struct option_def *o = NULL;

    if (eq != NULL)
        *eq = '\0';
    key = trim(item);
    value = eq ? trim(eq + 1) : NULL;
    if (*key == '\0') {
        snprintf(err, errlen, "empty option in '%s'", a->text);
        return -EINVAL;
    }
    for (size_t i = 0; i < NOPTIONS; i++)
        if (strcmp(options[i].name, key) == 0)
            o = &options[i];
    list_options(a, known, sizeof(known));
    if (o == NULL) {
        unknown_option(a, key, known, err, errlen);
        return -EINVAL;
    }
    if (!option_fits(o, a)) {
        snprintf(err, errlen,
                 "option '%s' applies to %s, not to a %s %s (options: %s)", key,
                 o->applies_to, kind_label(a), role_names[a->role], known);
        return -EINVAL;
    }
    if (value == NULL || *value == '\0') {
        snprintf(err, errlen, "option '%s' needs a value: %s=VALUE", key, key);
        return -EINVAL;
    }
    if (*seen & (1u << (o - options))) {
        snprintf(err, errlen, "option '%s' is given twice", key);
        return -EINVAL;
    }
    *seen |= 1u << (o - options);
    if (o->parse(a, value, err, errlen) == 0)
        return 0;
    /* Prefix the value parser's sentence with the option it was about. */
    {
        char inner[256];
        snprintf(inner, sizeof(inner), "%s", err);
        snprintf(err, errlen, "%s: %s", key, inner);
    }
    return -EINVAL;
}

static bool valid_hostname(const char *h)
{
    size_t len = strlen(h);

    if (len == 0 || len > 253 || h[0] == '-' || h[0] == '.')
        return false;
    for (; *h; h++)
        if (!isalnum((unsigned char)*h) && *h != '-' && *h != '.')
            return false;
    return true;
}

int address_parse_hostport(const char *s, char **host, bool *ipv6,
                           uint16_t *port, char *err, size_t errlen)
{
    const char *colon, *hstart = s, *hend;
    char buf[256], perr[128];
    uint64_t p;
    unsigned char bin[16];
    size_t hlen;

    *ipv6 = false;
    if (s[0] == '[') {
        hend = strchr(s, ']');
        if (hend == NULL) {
            snprintf(err, errlen, "missing ']' in '%s'", s);
            return -EINVAL;
        }
        hstart = s + 1;
        colon = hend + 1;
        if (*colon != ':') {
            snprintf(err, errlen, "expected ':PORT' after ']' in '%s'", s);
            return -EINVAL;
        }
        *ipv6 = true;
    } else {
        colon = strrchr(s, ':');
        if (colon == NULL) {
            snprintf(err, errlen, "'%s' has no port: write HOST:PORT", s);
            return -EINVAL;
        }
        hend = colon;
        if (memchr(s, ':', (size_t)(colon - s)) != NULL) {
            snprintf(err, errlen,
                     "an IPv6 address needs brackets, like [::1]:9000, in "
                     "'%s'",
                     s);
            return -EINVAL;
        }
    }
    hlen = (size_t)(hend - hstart);
    if (hlen == 0 || hlen >= sizeof(buf)) {
        snprintf(err, errlen, "%s host in '%s'", hlen ? "overlong" : "empty",
                 s);
        return -EINVAL;
    }
    memcpy(buf, hstart, hlen);
    buf[hlen] = '\0';
    if (*ipv6 && inet_pton(AF_INET6, buf, bin) != 1) {
        snprintf(err, errlen, "'%s' is not an IPv6 address", buf);
        return -EINVAL;
    }
    if (!*ipv6 && strspn(buf, "0123456789.") == hlen &&
        inet_pton(AF_INET, buf, bin) != 1) {
        snprintf(err, errlen, "'%s' is not an IPv4 address", buf);
        return -EINVAL;
    }
    /* Literals in canonical form ([0::1] is [::1]), so that comparing two
     * listen addresses compares the addresses. */
    if (*ipv6 || strspn(buf, "0123456789.") == hlen)
        inet_ntop(*ipv6 ? AF_INET6 : AF_INET, bin, buf, sizeof(buf));
    else if (!valid_hostname(buf)) {
        snprintf(err, errlen, "'%s' is not a host name or address", buf);
        return -EINVAL;
    }
    if (value_uint(colon + 1, 1, 65535, &p, perr, sizeof(perr)) < 0) {
        snprintf(err, errlen, "bad port '%s': a number from 1 to 65535",
                 colon + 1);
        return -EINVAL;
    }
    *host = strdup(buf);
    if (*host == NULL)
        return -ENOMEM;
    *port = (uint16_t)p;
    return 0;
}

static int parse_path(struct weir_address *a, const char *arg,
                      const char *base_dir, char *err, size_t errlen)
{
    int n;

    if (*arg == '\0') {
        snprintf(err, errlen, "empty path in '%s': write %s", a->text,
                 kinds[a->kind].usage);
        return -EINVAL;
    }
    if (arg[0] == '/' || base_dir == NULL)
        n = asprintf(&a->path, "%s", arg);
    else
        n = asprintf(&a->path, "%s/%s", base_dir, arg);
    if (n < 0) {
        a->path = NULL;
        return -ENOMEM;
    }
    if ((a->kind == ADDR_UNIX || a->kind == ADDR_UNIX_LISTEN) &&
        (size_t)n >= sizeof(((struct sockaddr_un *)0)->sun_path)) {
        snprintf(err, errlen, "unix socket path '%s' is longer than %zu bytes",
                 a->path, sizeof(((struct sockaddr_un *)0)->sun_path) - 1);
        return -EINVAL;
    }
    return 0;
}

/* tls: and tls-listen: (and socat's OPENSSL spellings) are the tcp kinds
 * with TLS on. socat's OPENSSL-LISTEN takes a bare PORT; parse_tcp asks
 * for the host then, as for tcp-listen. */
static const struct {
    const char *name;
    enum addr_kind kind;
} tls_kinds[] = {
    {"tls", ADDR_TCP},
    {"tls-listen", ADDR_TCP_LISTEN},
    {"openssl", ADDR_TCP},
    {"openssl-connect", ADDR_TCP},
    {"openssl-listen", ADDR_TCP_LISTEN},
};

static int find_tls_kind(struct weir_address *a, const char *name, size_t len)
{
    for (size_t i = 0; i < sizeof(tls_kinds) / sizeof(tls_kinds[0]); i++) {
        if (strlen(tls_kinds[i].name) == len &&
            strncasecmp(tls_kinds[i].name, name, len) == 0) {
            a->kind = tls_kinds[i].kind;
            a->tls = true;
            return 0;
        }
    }
    return -ENOENT;
}

static int find_kind(const char *name, size_t len, enum addr_kind *kind)
{
    for (size_t i = 0; i < NKINDS; i++) {
        if (strlen(kinds[i].name) == len &&
            strncasecmp(kinds[i].name, name, len) == 0) {
            *kind = (enum addr_kind)i;
            return 0;
        }
    }
    return -ENOENT;
}

/*
 * socat's spellings that are not weir's. Those that mean exactly a weir
 * kind are accepted as it (`kind`); the others leave a choice to the
 * operator (which address to listen on, an address family weir does not
 * pin), so they are answered with the weir spelling (`answer`).
 */
struct socat_def {
    const char *name;
    int kind; /* accepted as this kind; -1: answered */
    enum addr_kind answer;
    const char *any; /* for a listen answer given a bare PORT */
};

static const struct socat_def socat_kinds[] = {
    {"unix-connect", ADDR_UNIX, ADDR_UNIX, NULL},
    {"tcp-connect", ADDR_TCP, ADDR_TCP, NULL},
    {"tcp-l", -1, ADDR_TCP_LISTEN, "0.0.0.0"},
    {"tcp4-listen", -1, ADDR_TCP_LISTEN, "0.0.0.0"},
    {"tcp4-l", -1, ADDR_TCP_LISTEN, "0.0.0.0"},
    {"tcp6-listen", -1, ADDR_TCP_LISTEN, "[::]"},
    {"tcp6-l", -1, ADDR_TCP_LISTEN, "[::]"},
    {"tcp4", -1, ADDR_TCP, NULL},
    {"tcp6", -1, ADDR_TCP, NULL},
    {"unix-l", -1, ADDR_UNIX_LISTEN, NULL},
    {"unix-client", -1, ADDR_UNIX, NULL},
    {"open", -1, ADDR_FILE, NULL},
    {"gopen", -1, ADDR_FILE, NULL},
    {"create", -1, ADDR_FILE, NULL},
};

#define NSOCAT (sizeof(socat_kinds) / sizeof(socat_kinds[0]))

static bool all_digits(const char *s)
{
    return *s != '\0' && strspn(s, "0123456789") == strlen(s);
}

/*
 * A kind weir does not know: socat's name for one of weir's (accepted:
 * returns 0 with a->kind set), or an error that spells it the weir way.
 */
static int other_kind(struct weir_address *a, const char *head, size_t klen,
                      const char *arg, char *err, size_t errlen)
{
    const char *names[NKINDS + 3], *near;

    for (size_t i = 0; i < NSOCAT; i++) {
        const struct socat_def *d = &socat_kinds[i];

        if (strlen(d->name) != klen || strncasecmp(d->name, head, klen) != 0)
            continue;
        if (d->kind >= 0) {
            a->kind = (enum addr_kind)d->kind;
            return 0;
        }
        if (arg != NULL && d->any != NULL && all_digits(arg))
            snprintf(err, errlen,
                     "'%.*s' is socat's; weir needs the host to listen on: did "
                     "you mean %s:%s:%s?",
                     (int)klen, head, kinds[d->answer].name, d->any, arg);
        else
            snprintf(err, errlen, "'%.*s' is socat's: did you mean %s:%s?",
                     (int)klen, head, kinds[d->answer].name,
                     arg != NULL ? arg
                                 : strchr(kinds[d->answer].usage, ':') + 1);
        return -EINVAL;
    }
    if (head[0] == '/' || head[0] == '.') {
        snprintf(err, errlen, "'%s' has no kind: write file:%s", head, head);
        return -EINVAL;
    }
    for (size_t i = 0; i < NKINDS; i++)
        names[i] = kinds[i].name;
    names[NKINDS] = "tls";
    names[NKINDS + 1] = "tls-listen";
    names[NKINDS + 2] = NULL;
    near = suggest_word(head, klen, names);
    if (near != NULL)
        snprintf(err, errlen,
                 "unknown address kind '%.*s' in '%s' (did you mean "
                 "'%s%s%s'?)",
                 (int)klen, head, a->text, near, arg != NULL ? ":" : "",
                 arg != NULL ? arg : "");
    else
        snprintf(err, errlen,
                 "unknown address kind '%.*s' in '%s' (kinds: file, tcp, "
                 "tcp-listen, tls, tls-listen, unix, unix-listen, stdin, "
                 "stdout, null)",
                 (int)klen, head, a->text);
    return -EINVAL;
}

/* TCP kinds: HOST:PORT; a bare PORT is socat's TCP-LISTEN habit. */
static int parse_tcp(struct weir_address *a, const char *arg, char *err,
                     size_t errlen)
{
    int r;

    if (all_digits(arg)) {
        if (a->kind == ADDR_TCP_LISTEN)
            snprintf(err, errlen,
                     "'%s' has no host to listen on: did you mean "
                     "%s:0.0.0.0:%s? (every interface; "
                     "%s:127.0.0.1:%s for this machine only)",
                     a->text, kind_label(a), arg, kind_label(a), arg);
        else
            snprintf(err, errlen,
                     "'%s' has no host: did you mean %s:127.0.0.1:%s?", a->text,
                     kind_label(a), arg);
        return -EINVAL;
    }
    r = address_parse_hostport(arg, &a->host, &a->ipv6, &a->port, err, errlen);
    if (r == -EINVAL && strchr(arg, ':') == NULL)
        snprintf(err, errlen, "'%s' has no port: write %s:HOST:PORT", a->text,
                 kind_label(a));
    return r;
}

/* The kind and its argument: everything before the first comma. */
static int parse_head(struct weir_address *a, char *head, const char *base_dir,
                      char *err, size_t errlen)
{
    char *colon = strchr(head, ':');
    size_t klen = colon ? (size_t)(colon - head) : strlen(head);
    const struct kind_def *k;

    /* `-` and STDIO: socat's standard input and output, by role. */
    if (strcmp(head, "-") == 0 || strcasecmp(head, "stdio") == 0)
        a->kind = a->role == ADDR_SOURCE ? ADDR_STDIN : ADDR_STDOUT;
    else if (find_tls_kind(a, head, klen) < 0 &&
             find_kind(head, klen, &a->kind) < 0 &&
             other_kind(a, head, klen, colon ? colon + 1 : NULL, err, errlen) <
                 0)
        return -EINVAL;
    k = &kinds[a->kind];
    if (!(k->roles & ROLE(a->role))) {
        snprintf(err, errlen, "%s cannot be a %s", kind_label(a),
                 role_names[a->role]);
        return -EINVAL;
    }
    if (!k->takes_argument) {
        if (colon == NULL)
            return 0;
        snprintf(err, errlen, "%s takes no address: write just '%s'", k->name,
                 k->name);
        return -EINVAL;
    }
    if (colon == NULL) {
        snprintf(err, errlen, "%s needs an address: write %s:%s", kind_label(a),
                 kind_label(a), strchr(k->usage, ':') + 1);
        return -EINVAL;
    }
    if (a->kind == ADDR_TCP || a->kind == ADDR_TCP_LISTEN)
        return parse_tcp(a, colon + 1, err, errlen);
    return parse_path(a, colon + 1, base_dir, err, errlen);
}

static int parse_into(struct weir_address *a, const char *base_dir, char *err,
                      size_t errlen)
{
    char *copy = strdup(a->text), *head, *rest, *item;
    unsigned seen = 0;
    int r;

    if (copy == NULL)
        return -ENOMEM;
    rest = strchr(copy, ',');
    if (rest != NULL)
        *rest++ = '\0';
    head = trim(copy);
    r = parse_head(a, head, base_dir, err, errlen);
    while (r == 0 && rest != NULL) {
        item = rest;
        rest = strchr(rest, ',');
        if (rest != NULL)
            *rest++ = '\0';
        r = parse_option(a, item, &seen, err, errlen);
    }
    free(copy);
    return r;
}

int address_parse(const char *text, enum addr_role role, const char *base_dir,
                  const struct conf_loc *loc, struct weir_address **out,
                  char *err, size_t errlen)
{
    struct weir_address *a = calloc(1, sizeof(*a));
    int r;

    if (a == NULL)
        return -ENOMEM;
    a->role = role;
    a->loc = *loc;
    a->backlog = CONF_DEFAULT_BACKLOG;
    a->notsent_lowat = CONF_NOTSENT_AUTO;
    a->verify = true;
    a->handshake_timeout_ms = CONF_DEFAULT_HANDSHAKE_MS;
    a->text = strdup(text);
    if (a->text == NULL) {
        free(a);
        return -ENOMEM;
    }
    if (*text == '\0') {
        snprintf(err, errlen, "needs a value: an address like file:PATH");
        r = -EINVAL;
    } else {
        r = parse_into(a, base_dir, err, errlen);
    }
    if (r < 0) {
        if (r == -ENOMEM)
            snprintf(err, errlen, "out of memory");
        address_free(a);
        return r;
    }
    *out = a;
    return 0;
}

void address_free(struct weir_address *a)
{
    if (a == NULL)
        return;
    free(a->text);
    free(a->host);
    free(a->path);
    free(a->cert);
    free(a->key);
    free(a->ca);
    free(a->sni);
    free(a->alpn);
    free(a->ciphers);
    weir_tls_ctx_destroy(a->tls_ctx);
    free(a);
}
