/*
 * address.c - see address.h: an address's kind and where it points
 * (kinds, socat's spellings, HOST:PORT, paths), and the parse that goes
 * on to its options (address_options.c). The kinds table both files read
 * is in address_impl.h.
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

#include "conf/address_impl.h"
#include "conf/suggest.h"
#include "conf/value.h"

const char *addr_kind_name(enum addr_kind kind)
{
    return kinds[kind].name;
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

/* A file source whose path holds * ? or [ names every file it matches,
 * now and later. Absolute only: a pattern joined to the config's
 * directory would follow the config file around if it moved. */
static int parse_pattern(struct weir_address *a, const char *arg, char *err,
                         size_t errlen)
{
    a->kind = ADDR_FILE_SET;
    if (arg[0] != '/') {
        snprintf(err, errlen,
                 "the pattern '%s' is not an absolute path (a glob source "
                 "names its files from /)",
                 arg);
        return -EINVAL;
    }
    a->path = strdup(arg);
    return a->path ? 0 : -ENOMEM;
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

/* http-listen: serves files over HTTP; it listens as tcp-listen: does.
 * https-listen: the same over TLS, with tls-listen's options. */
static int find_http_kind(struct weir_address *a, const char *name, size_t len)
{
    if (len == 12 && strncasecmp(name, "https-listen", len) == 0)
        a->tls = true;
    else if (len != 11 || strncasecmp(name, "http-listen", len) != 0)
        return -ENOENT;
    a->kind = ADDR_TCP_LISTEN;
    a->serve_http = true;
    return 0;
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
    const char *names[NKINDS + 6], *near;

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
    names[NKINDS + 2] = "https";
    names[NKINDS + 3] = "http-listen";
    names[NKINDS + 4] = "https-listen";
    names[NKINDS + 5] = NULL;
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
                 "stdout, null, http, https, kafka, jetstream, http-listen, "
                 "https-listen, dir)",
                 (int)klen, head, a->text);
    return -EINVAL;
}

/* http: and https: take a URL whose scheme is the kind: "http://H:P/X".
 * A space in it (a ClickHouse query written as it reads) is sent as
 * %20; a comma ends it, as it ends every address (write %2C). */
static int parse_url(struct weir_address *a, const char *head, const char *arg,
                     char *err, size_t errlen)
{
    size_t n = 0;

    if (strncmp(arg, "//", 2) != 0 || arg[2] == '\0' || arg[2] == '/') {
        snprintf(err, errlen, "'%s' is not a URL: write %s://HOST:PORT/PATH",
                 a->text, kind_label(a));
        return -EINVAL;
    }
    a->url = malloc(strlen(head) * 3 + 1);
    if (a->url == NULL)
        return -ENOMEM;
    for (const char *p = head; *p; p++) {
        if (*p == ' ') {
            memcpy(a->url + n, "%20", 3);
            n += 3;
        } else {
            a->url[n++] = *p;
        }
    }
    a->url[n] = '\0';
    for (char *p = a->url; *p != ':'; p++) /* the scheme, as curl wants it */
        *p = (char)tolower((unsigned char)*p);
    return 0;
}

/* The slash before jetstream's subject: the first that is not half of a
 * URL's "//". */
static const char *subject_slash(const char *s)
{
    while ((s = strchr(s, '/')) != NULL && s[1] == '/')
        s += 2;
    return s;
}

/* Checks a comma-separated list of servers, each HOST:PORT, or with
 * `urls` a nats:// or tls:// URL of one. */
static int check_servers(const char *list, bool urls, char *err, size_t errlen)
{
    char *copy = strdup(list), *item, *save = NULL, *host;
    bool ipv6;
    uint16_t port;
    int r = copy ? 0 : -ENOMEM;

    for (item = copy ? strtok_r(copy, ",", &save) : NULL;
         item != NULL && r == 0; item = strtok_r(NULL, ",", &save)) {
        char *u = trim(item);

        if (urls && strncmp(u, "nats://", 7) != 0 &&
            strncmp(u, "tls://", 6) != 0) {
            snprintf(err, errlen,
                     "'%s' is not a NATS server: write nats://HOST:PORT "
                     "(tls://HOST:PORT with TLS)",
                     u);
            r = -EINVAL;
            break;
        }
        r = address_parse_hostport(urls ? strstr(u, "//") + 2 : u, &host, &ipv6,
                                   &port, err, errlen);
        if (r == 0)
            free(host);
    }
    free(copy);
    return r;
}

/* kafka: the brokers (HOST:PORT, comma-separated) and, after a slash, the
 * topic (Kafka's names: letters, digits, '.', '_' and '-'). */
static int parse_kafka(struct weir_address *a, const char *arg, char *err,
                       size_t errlen)
{
    const char *slash = strchr(arg, '/');

    if (slash == NULL || slash == arg || slash[1] == '\0') {
        snprintf(err, errlen, "'%s' names no %s: write %s", a->text,
                 slash == arg ? "broker" : "topic", kinds[a->kind].usage);
        return -EINVAL;
    }
    if (strlen(slash + 1) > 249 ||
        strspn(slash + 1, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
                          "0123456789._-") != strlen(slash + 1)) {
        snprintf(err, errlen,
                 "'%s' is not a Kafka topic (letters, digits, '.', '_' and "
                 "'-', at most 249)",
                 slash + 1);
        return -EINVAL;
    }
    a->topic = strdup(slash + 1);
    a->brokers = strndup(arg, (size_t)(slash - arg));
    if (a->topic == NULL || a->brokers == NULL)
        return -ENOMEM;
    return check_servers(a->brokers, false, err, errlen);
}

/* jetstream: the servers (nats:// or tls:// URLs, comma-separated) and,
 * after a slash, the subject to publish to (no wildcards, no spaces), or
 * for a source the stream to read (JetStream's names: no '.', '*', '>',
 * '/', '\\' or spaces). */
static int parse_jetstream(struct weir_address *a, const char *arg, char *err,
                           size_t errlen)
{
    const char *slash = subject_slash(arg);
    bool source = a->role == ADDR_SOURCE;

    if (slash == NULL || slash == arg || slash[1] == '\0') {
        snprintf(err, errlen, "'%s' names no %s: write %s", a->text,
                 slash == arg ? "server"
                 : source     ? "stream"
                              : "subject",
                 source ? "jetstream:nats://HOST:PORT[,nats://HOST:PORT...]/"
                          "STREAM"
                        : kinds[a->kind].usage);
        return -EINVAL;
    }
    if (source &&
        (strpbrk(slash + 1, " \t.*>/\\") != NULL || strlen(slash + 1) > 255)) {
        snprintf(err, errlen,
                 "'%s' is not a JetStream stream's name (no '.', '*', '>', "
                 "'/', '\\' or spaces)",
                 slash + 1);
        return -EINVAL;
    }
    if (source) {
        a->js_stream = strdup(slash + 1);
        a->servers = strndup(arg, (size_t)(slash - arg));
        if (a->js_stream == NULL || a->servers == NULL)
            return -ENOMEM;
        return check_servers(a->servers, true, err, errlen);
    }
    if (strpbrk(slash + 1, " \t*>") != NULL || slash[1] == '.' ||
        slash[strlen(slash) - 1] == '.' || strstr(slash, "..") != NULL) {
        snprintf(err, errlen,
                 "'%s' is not a subject to publish to (dot-separated "
                 "tokens, no wildcards)",
                 slash + 1);
        return -EINVAL;
    }
    a->subject = strdup(slash + 1);
    a->servers = strndup(arg, (size_t)(slash - arg));
    if (a->subject == NULL || a->servers == NULL)
        return -ENOMEM;
    return check_servers(a->servers, true, err, errlen);
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
    else if (klen == 5 && strncasecmp(head, "https", 5) == 0)
        a->kind = ADDR_HTTP;
    else if (find_tls_kind(a, head, klen) < 0 &&
             find_http_kind(a, head, klen) < 0 &&
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
    if (a->kind == ADDR_HTTP)
        return parse_url(a, head, colon + 1, err, errlen);
    if (a->kind == ADDR_KAFKA)
        return parse_kafka(a, colon + 1, err, errlen);
    if (a->kind == ADDR_JETSTREAM)
        return parse_jetstream(a, colon + 1, err, errlen);
    if (a->kind == ADDR_FILE && a->role == ADDR_SOURCE &&
        strpbrk(colon + 1, "*?["))
        return parse_pattern(a, colon + 1, err, errlen);
    return parse_path(a, colon + 1, base_dir, err, errlen);
}

/* Where an address's kind and argument end: at the first comma, but
 * kafka's brokers and jetstream's servers are lists, and their head ends
 * at the first comma after the topic's or subject's slash. */
static size_t head_len(const char *text)
{
    const char *head = text + strspn(text, " \t"), *slash;

    if (strncasecmp(head, "kafka:", 6) == 0 && (slash = strchr(head, '/')))
        return (size_t)(slash - text) + strcspn(slash, ",");
    if (strncasecmp(head, "jetstream:", 10) == 0 &&
        (slash = subject_slash(head + 10)))
        return (size_t)(slash - text) + strcspn(slash, ",");
    return strcspn(text, ",");
}

static int parse_into(struct weir_address *a, const char *base_dir, char *err,
                      size_t errlen)
{
    char *copy = strdup(a->text), *head, *rest, *item;
    uint64_t seen = 0;
    int r;

    if (copy == NULL)
        return -ENOMEM;
    rest = copy[head_len(copy)] ? copy + head_len(copy) : NULL;
    if (rest != NULL)
        *rest++ = '\0';
    head = trim(copy);
    r = parse_head(a, head, base_dir, err, errlen);
    while (r == 0 && rest != NULL) {
        item = rest;
        rest = strchr(rest, ',');
        if (rest != NULL)
            *rest++ = '\0';
        r = address_parse_option(a, item, &seen, err, errlen);
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
    a->batch_bytes = CONF_DEFAULT_HTTP_BATCH_BYTES;
    a->batch_records = CONF_DEFAULT_HTTP_BATCH_RECORDS;
    a->batch_age_ms = CONF_DEFAULT_HTTP_BATCH_AGE_MS;
    a->concurrency = CONF_DEFAULT_HTTP_CONCURRENCY;
    a->timeout_ms = CONF_DEFAULT_HTTP_TIMEOUT_MS;
    a->retries = CONF_HTTP_RETRIES_UNSET;
    a->server_header = true;
    a->header_timeout_ms = CONF_DEFAULT_HEADER_TIMEOUT_MS;
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
    if (r >= 0) {
        a->label =
            a->name ? strdup(a->name) : strndup(a->text, head_len(a->text));
        r = a->label ? r : -ENOMEM;
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
    free(a->label);
    free(a->name);
    free(a->host);
    free(a->path);
    free(a->cert);
    free(a->key);
    free(a->ca);
    free(a->sni);
    free(a->alpn);
    free(a->ciphers);
    weir_tls_ctx_destroy(a->tls_ctx);
    free(a->url);
    free(a->index);
    for (unsigned i = 0; i < a->nheaders; i++)
        free(a->headers[i]);
    free(a->headers);
    for (unsigned i = 0; i < a->nlabels; i++)
        free(a->labels[i]);
    free(a->labels);
    free(a->auth_file);
    free(a->user);
    free(a->password_file);
    free(a->dead_letter);
    free(a->brokers);
    free(a->topic);
    free(a->kafka_compression);
    for (unsigned i = 0; i < a->nkafka_props; i++)
        free(a->kafka_props[i]);
    free(a->kafka_props);
    free(a->servers);
    free(a->subject);
    free(a->js_stream);
    free(a->consumer);
    free(a->creds);
    free(a->url_path);
    free(a->access_log);
    free(a);
}
