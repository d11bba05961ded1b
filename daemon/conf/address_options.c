/*
 * address_options.c - the options of an address (kind:address,key=value,
 * ...): which kinds and roles each applies to, their values, and the
 * sentences for an option unknown, misplaced, repeated, or spelt as socat
 * spells it.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "conf/address.h"
#include "conf/address_impl.h"
#include "conf/suggest.h"
#include "conf/value.h"

static const char *const on_full_names[] = {
    [ON_FULL_BLOCK] = "block",
    [ON_FULL_DROP_NEWEST] = "drop-newest",
    [ON_FULL_DROP_OLDEST] = "drop-oldest",
    [ON_FULL_DISCONNECT] = "disconnect",
};

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

/* A sink's label in the series: a short word, as a Prometheus label
 * value is best kept. */
static int opt_name(struct weir_address *a, const char *v, char *err,
                    size_t errlen)
{
    size_t n = strlen(v);

    if (n == 0 || n > CONF_MAX_NAME ||
        strspn(v, "abcdefghijklmnopqrstuvwxyz"
                  "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
                  "0123456789._-") != n) {
        snprintf(err, errlen,
                 "name: '%s' is not a name: 1 to %d letters, digits, '.', "
                 "'_' or '-'",
                 v, CONF_MAX_NAME);
        return -EINVAL;
    }
    return opt_str(&a->name, v);
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

/* ---- http and https ---- */

static const char *const preset_names[] = {
    [WEIR_HTTP_RAW] = "raw",
    [WEIR_HTTP_CLICKHOUSE] = "clickhouse",
    [WEIR_HTTP_ELASTICSEARCH] = "elasticsearch",
    [WEIR_HTTP_SPLUNK_HEC] = "splunk_hec",
    [WEIR_HTTP_LOKI] = "loki",
    [WEIR_HTTP_OTLP] = "otlp",
    NULL,
};

static const char *const compression_names[] = {
    [WEIR_HTTP_IDENTITY] = "none",
    [WEIR_HTTP_GZIP] = "gzip",
    [WEIR_HTTP_ZSTD] = "zstd",
    NULL,
};

/* v as one of names (a NULL-ended list): its index, or -EINVAL with the
 * list, or the nearest name, in err. */
static int one_of(const char *v, const char *const *names, const char *what,
                  char *err, size_t errlen)
{
    const char *near;
    size_t n = 0;
    char list[128];

    for (int i = 0; names[i]; i++)
        if (strcmp(v, names[i]) == 0)
            return i;
    near = suggest_word(v, strlen(v), names);
    if (near != NULL) {
        snprintf(err, errlen, "'%s' is not a %s (did you mean '%s'?)", v, what,
                 near);
        return -EINVAL;
    }
    list[0] = '\0';
    for (int i = 0; names[i] && n < sizeof(list); i++)
        n += (size_t)snprintf(list + n, sizeof(list) - n, "%s%s", i ? ", " : "",
                              names[i]);
    snprintf(err, errlen, "'%s' is not a %s: use %s", v, what, list);
    return -EINVAL;
}

static int opt_preset(struct weir_address *a, const char *v, char *err,
                      size_t errlen)
{
    int i = one_of(v, preset_names, "preset", err, errlen);

    if (i < 0)
        return i;
    a->preset = (enum weir_http_preset)i;
    return 0;
}

static int opt_compression(struct weir_address *a, const char *v, char *err,
                           size_t errlen)
{
    int i = one_of(v, compression_names, "compression", err, errlen);

    if (i < 0)
        return i;
    a->compression = (enum weir_http_compression)i;
    return 0;
}

static int opt_index(struct weir_address *a, const char *v, char *err,
                     size_t errlen)
{
    (void)err;
    (void)errlen;
    return opt_str(&a->index, v);
}

/* "Name: value"; repeatable. */
static int opt_header(struct weir_address *a, const char *v, char *err,
                      size_t errlen)
{
    const char *colon = strchr(v, ':');
    char **h;

    if (colon == NULL || colon == v ||
        strcspn(v, " \t") < (size_t)(colon - v)) {
        snprintf(err, errlen, "'%s' is not a header: write Name: value", v);
        return -EINVAL;
    }
    if (a->nheaders >= CONF_MAX_HTTP_HEADERS) {
        snprintf(err, errlen, "more than %d headers", CONF_MAX_HTTP_HEADERS);
        return -EINVAL;
    }
    h = realloc(a->headers, (a->nheaders + 1) * sizeof(*h));
    if (h == NULL)
        return -ENOMEM;
    a->headers = h;
    h[a->nheaders] = strdup(v);
    if (h[a->nheaders] == NULL)
        return -ENOMEM;
    a->nheaders++;
    return 0;
}

/* A Loki stream label, "name=value" (the value may hold '='); repeatable.
 * Loki's names are Prometheus's: letters, digits and '_', not a digit
 * first. */
static int opt_label(struct weir_address *a, const char *v, char *err,
                     size_t errlen)
{
    size_t n = strcspn(v, "=");
    char **l;

    if (v[n] != '=' || n == 0 || (v[0] >= '0' && v[0] <= '9') ||
        strspn(v, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
                  "0123456789_.") != n) {
        snprintf(err, errlen,
                 "'%s' is not a label: write name=value (name: letters, "
                 "digits, '_', and '.' for otlp)",
                 v);
        return -EINVAL;
    }
    if (a->nlabels >= CONF_MAX_HTTP_HEADERS) {
        snprintf(err, errlen, "more than %d labels", CONF_MAX_HTTP_HEADERS);
        return -EINVAL;
    }
    l = realloc(a->labels, (a->nlabels + 1) * sizeof(*l));
    if (l == NULL)
        return -ENOMEM;
    a->labels = l;
    l[a->nlabels] = strdup(v);
    if (l[a->nlabels] == NULL)
        return -ENOMEM;
    a->nlabels++;
    return 0;
}

static int opt_auth_file(struct weir_address *a, const char *v, char *err,
                         size_t errlen)
{
    (void)err;
    (void)errlen;
    return opt_str(&a->auth_file, v);
}

static int opt_user(struct weir_address *a, const char *v, char *err,
                    size_t errlen)
{
    (void)err;
    (void)errlen;
    return opt_str(&a->user, v);
}

static int opt_password_file(struct weir_address *a, const char *v, char *err,
                             size_t errlen)
{
    (void)err;
    (void)errlen;
    return opt_str(&a->password_file, v);
}

static int opt_dead_letter(struct weir_address *a, const char *v, char *err,
                           size_t errlen)
{
    (void)err;
    (void)errlen;
    return opt_str(&a->dead_letter, v);
}

static int opt_batch_bytes(struct weir_address *a, const char *v, char *err,
                           size_t errlen)
{
    return value_size(v, 1, CONF_MAX_HTTP_BATCH_BYTES, &a->batch_bytes, err,
                      errlen);
}

static int opt_batch_records(struct weir_address *a, const char *v, char *err,
                             size_t errlen)
{
    return value_uint(v, 1, CONF_MAX_HTTP_BATCH_RECORDS, &a->batch_records, err,
                      errlen);
}

static int opt_batch_age(struct weir_address *a, const char *v, char *err,
                         size_t errlen)
{
    return value_duration_ms(v, 1, CONF_MAX_HTTP_BATCH_AGE_MS, &a->batch_age_ms,
                             err, errlen);
}

static int opt_concurrency(struct weir_address *a, const char *v, char *err,
                           size_t errlen)
{
    return value_uint(v, 1, CONF_MAX_HTTP_CONCURRENCY, &a->concurrency, err,
                      errlen);
}

static int opt_timeout(struct weir_address *a, const char *v, char *err,
                       size_t errlen)
{
    return value_duration_ms(v, 1, CONF_MAX_HTTP_TIMEOUT_MS, &a->timeout_ms,
                             err, errlen);
}

/* A number of retries, or `forever` (0). */
static int opt_retries(struct weir_address *a, const char *v, char *err,
                       size_t errlen)
{
    if (strcmp(v, "forever") == 0) {
        a->retries = 0;
        return 0;
    }
    if (value_uint(v, 1, CONF_MAX_HTTP_RETRIES, &a->retries, err, errlen) == 0)
        return 0;
    snprintf(err, errlen, "'%s' is not a count of retries (1 to %d) or forever",
             v, CONF_MAX_HTTP_RETRIES);
    return -EINVAL;
}

/* ---- kafka ---- */

static int opt_kafka_key(struct weir_address *a, const char *v, char *err,
                         size_t errlen)
{
    static const char *const names[] = {
        [KAFKA_KEY_FILE] = "file",
        [KAFKA_KEY_HOST] = "host",
        [KAFKA_KEY_NONE] = "none",
    };

    for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
        if (strcmp(v, names[i]) == 0) {
            a->key_by = (enum kafka_key)i;
            return 0;
        }
    snprintf(err, errlen, "'%s' is not a key: use file, host or none", v);
    return -EINVAL;
}

static int opt_kafka_compression(struct weir_address *a, const char *v,
                                 char *err, size_t errlen)
{
    static const char *const names[] = {"none", "gzip", "lz4", "zstd"};

    for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
        if (strcmp(v, names[i]) == 0)
            return opt_str(&a->kafka_compression, v);
    snprintf(err, errlen,
             "'%s' is not a compression: use zstd, lz4, gzip or none", v);
    return -EINVAL;
}

/* rdkafka.NAME=VALUE: librdkafka's NAME, checked by librdkafka itself
 * (config_check.c); given once per NAME. */
static int opt_rdkafka(struct weir_address *a, const char *name, const char *v,
                       char *err, size_t errlen)
{
    char **grown;
    size_t len = strlen(name);

    if (a->kind != ADDR_KAFKA || a->role != ADDR_SINK) {
        snprintf(err, errlen, "option 'rdkafka.%s' applies to kafka sinks",
                 name);
        return -EINVAL;
    }
    if (*name == '\0' || v == NULL || *v == '\0') {
        snprintf(err, errlen, "write rdkafka.NAME=VALUE (librdkafka's NAME)");
        return -EINVAL;
    }
    for (unsigned i = 0; i < a->nkafka_props; i++)
        if (strncmp(a->kafka_props[i], name, len) == 0 &&
            a->kafka_props[i][len] == '=') {
            snprintf(err, errlen, "option 'rdkafka.%s' is given twice", name);
            return -EINVAL;
        }
    if (a->nkafka_props >= CONF_MAX_KAFKA_PROPS) {
        snprintf(err, errlen, "more than %d rdkafka. options",
                 CONF_MAX_KAFKA_PROPS);
        return -EINVAL;
    }
    grown = realloc(a->kafka_props,
                    (a->nkafka_props + 1) * sizeof(*a->kafka_props));
    if (grown == NULL)
        return -ENOMEM;
    a->kafka_props = grown;
    if (asprintf(&a->kafka_props[a->nkafka_props], "%s=%s", name, v) < 0)
        return -ENOMEM;
    a->nkafka_props++;
    return 0;
}

static int opt_creds(struct weir_address *a, const char *v, char *err,
                     size_t errlen)
{
    (void)err;
    (void)errlen;
    return opt_str(&a->creds, v);
}

/* A jetstream source's durable consumer: JetStream's names, no '.'. */
static int opt_consumer(struct weir_address *a, const char *v, char *err,
                        size_t errlen)
{
    if (!*v || strpbrk(v, " \t.*>/\\") != NULL || strlen(v) > 255) {
        snprintf(err, errlen,
                 "'%s' is not a consumer's name (no '.', '*', '>', '/', "
                 "'\\' or spaces)",
                 v);
        return -EINVAL;
    }
    return opt_str(&a->consumer, v);
}

/* A jetstream source's filter: a subject, wildcards allowed. */
static int opt_js_subject(struct weir_address *a, const char *v, char *err,
                          size_t errlen)
{
    if (!*v || strpbrk(v, " \t") != NULL || v[0] == '.' ||
        v[strlen(v) - 1] == '.' || strstr(v, "..") != NULL) {
        snprintf(err, errlen,
                 "'%s' is not a subject (dot-separated tokens, * and > "
                 "as wildcards)",
                 v);
        return -EINVAL;
    }
    return opt_str(&a->subject, v);
}

static int opt_ack_wait(struct weir_address *a, const char *v, char *err,
                        size_t errlen)
{
    return value_duration_ms(v, 1000, CONF_MAX_JS_ACK_WAIT_MS, &a->ack_wait_ms,
                             err, errlen);
}

#define HTTP      KIND(ADDR_HTTP)
#define KAFKA     KIND(ADDR_KAFKA)
#define JETSTREAM KIND(ADDR_JETSTREAM)

/* ---- http-listen ---- */

#define HTTPD (KIND(ADDR_TCP_LISTEN) | HTTPD_OPT)

static int opt_url_path(struct weir_address *a, const char *v, char *err,
                        size_t errlen)
{
    if (v[0] != '/' || strpbrk(v, "?#\\") || strstr(v, "/.")) {
        snprintf(err, errlen,
                 "'%s' is not a URL path: write one that starts with '/', "
                 "with no '?', '#', '\\' or segment starting with '.'",
                 v);
        return -EINVAL;
    }
    return opt_str(&a->url_path, v);
}

static int opt_server(struct weir_address *a, const char *v, char *err,
                      size_t errlen)
{
    return value_bool(v, &a->server_header, err, errlen);
}

static int opt_dotfiles(struct weir_address *a, const char *v, char *err,
                        size_t errlen)
{
    return value_bool(v, &a->dotfiles, err, errlen);
}

static int opt_dir_index(struct weir_address *a, const char *v, char *err,
                         size_t errlen)
{
    return value_bool(v, &a->dir_index, err, errlen);
}

static int opt_follow_symlinks(struct weir_address *a, const char *v, char *err,
                               size_t errlen)
{
    return value_bool(v, &a->follow_symlinks, err, errlen);
}

static int opt_header_timeout(struct weir_address *a, const char *v, char *err,
                              size_t errlen)
{
    return value_duration_ms(v, 1, CONF_MAX_HEADER_TIMEOUT_MS,
                             &a->header_timeout_ms, err, errlen);
}

static int opt_access_log(struct weir_address *a, const char *v, char *err,
                          size_t errlen)
{
    if (strcmp(v, "stdout") != 0 && v[0] != '/') {
        snprintf(err, errlen,
                 "'%s' is not an absolute path or stdout: write "
                 "request_log=/var/log/weir/access.log or request_log=stdout",
                 v);
        return -EINVAL;
    }
    return opt_str(&a->access_log, v);
}

static int opt_log_format(struct weir_address *a, const char *v, char *err,
                          size_t errlen)
{
    a->access_format_set = true;
    if (strcmp(v, "clf") == 0 || strcmp(v, "json") == 0) {
        a->access_json = v[0] == 'j';
        return 0;
    }
    snprintf(err, errlen, "'%s' is not a log format: use clf or json", v);
    return -EINVAL;
}

static const struct option_def options[] = {
    {"follow", KIND(ADDR_FILE) | KIND(ADDR_FILE_SET), ROLE(ADDR_SOURCE),
     "a file source", opt_follow},
    {"append", KIND(ADDR_FILE), ROLE(ADDR_SINK), "a file sink", opt_append},
    {"fifo", KIND(ADDR_FILE), ROLE(ADDR_SOURCE), "a file source", opt_fifo},
    {"name", ALL_KINDS, ROLE(ADDR_SINK), "sinks", opt_name},
    {"on_full", ALL_KINDS, ROLE(ADDR_SINK), "sinks", opt_on_full},
    {"high_water_mark", ALL_KINDS, ROLE(ADDR_SINK), "sinks", opt_hwm},
    {"max_clients", LISTENERS, ROLE(ADDR_SOURCE) | ROLE(ADDR_SINK),
     "tcp-listen and unix-listen", opt_max_clients},
    {"backlog", LISTENERS, ROLE(ADDR_SOURCE) | ROLE(ADDR_SINK),
     "tcp-listen and unix-listen", opt_backlog},
    {"notsent_lowat", KIND(ADDR_TCP_LISTEN),
     ROLE(ADDR_SOURCE) | ROLE(ADDR_SINK), "tcp-listen", opt_notsent_lowat},
    {"cert", TLS_BOTH, ROLE(ADDR_SOURCE) | ROLE(ADDR_SINK),
     "tls, tls-listen and https-listen", opt_cert},
    {"key", TLS_BOTH, ROLE(ADDR_SOURCE) | ROLE(ADDR_SINK),
     "tls, tls-listen and https-listen", opt_key},
    {"ca", TLS_BOTH | HTTP | JETSTREAM, ROLE(ADDR_SOURCE) | ROLE(ADDR_SINK),
     "tls, tls-listen, https-listen, https and jetstream", opt_ca},
    {"verify", KIND(ADDR_TCP) | TLS_ONLY | HTTP,
     ROLE(ADDR_SOURCE) | ROLE(ADDR_SINK), "tls and https", opt_verify},
    {"sni", KIND(ADDR_TCP) | TLS_ONLY, ROLE(ADDR_SOURCE) | ROLE(ADDR_SINK),
     "tls", opt_sni},
    {"alpn", TLS_BOTH, ROLE(ADDR_SOURCE) | ROLE(ADDR_SINK),
     "tls, tls-listen and https-listen", opt_alpn},
    {"min_version", TLS_BOTH, ROLE(ADDR_SOURCE) | ROLE(ADDR_SINK),
     "tls, tls-listen and https-listen", opt_min_version},
    {"ciphers", TLS_BOTH, ROLE(ADDR_SOURCE) | ROLE(ADDR_SINK),
     "tls, tls-listen and https-listen", opt_ciphers},
    {"handshake_timeout", TLS_BOTH, ROLE(ADDR_SOURCE) | ROLE(ADDR_SINK),
     "tls, tls-listen and https-listen", opt_handshake_timeout},
    {"preset", HTTP, ROLE(ADDR_SINK), "http and https", opt_preset},
    {"compression", HTTP, ROLE(ADDR_SINK), "http and https", opt_compression},
    {"index", HTTP, ROLE(ADDR_SINK), "http and https", opt_index},
    {"header", HTTP, ROLE(ADDR_SINK), "http and https", opt_header},
    {"label", HTTP, ROLE(ADDR_SINK), "http and https", opt_label},
    {"auth_file", HTTP, ROLE(ADDR_SINK), "http and https", opt_auth_file},
    {"user", HTTP, ROLE(ADDR_SINK), "http and https", opt_user},
    {"password_file", HTTP, ROLE(ADDR_SINK), "http and https",
     opt_password_file},
    {"dead_letter", HTTP | KAFKA | JETSTREAM, ROLE(ADDR_SINK),
     "http, https, kafka and jetstream", opt_dead_letter},
    {"batch_bytes", HTTP, ROLE(ADDR_SINK), "http and https", opt_batch_bytes},
    {"batch_records", HTTP, ROLE(ADDR_SINK), "http and https",
     opt_batch_records},
    {"batch_age", HTTP, ROLE(ADDR_SINK), "http and https", opt_batch_age},
    {"concurrency", HTTP, ROLE(ADDR_SINK), "http and https", opt_concurrency},
    {"timeout", HTTP, ROLE(ADDR_SINK), "http and https", opt_timeout},
    {"retries", HTTP | JETSTREAM, ROLE(ADDR_SINK), "http, https and jetstream",
     opt_retries},
    {"key", KAFKA, ROLE(ADDR_SINK), "kafka", opt_kafka_key},
    {"compression", KAFKA, ROLE(ADDR_SINK), "kafka", opt_kafka_compression},
    {"creds", JETSTREAM, ROLE(ADDR_SOURCE) | ROLE(ADDR_SINK), "jetstream",
     opt_creds},
    {"consumer", JETSTREAM, ROLE(ADDR_SOURCE), "a jetstream source",
     opt_consumer},
    {"subject", JETSTREAM, ROLE(ADDR_SOURCE), "a jetstream source",
     opt_js_subject},
    {"ack_wait", JETSTREAM, ROLE(ADDR_SOURCE), "a jetstream source",
     opt_ack_wait},
    {"path", HTTPD, ROLE(ADDR_SINK), "http-listen and https-listen",
     opt_url_path},
    {"server", HTTPD, ROLE(ADDR_SINK), "http-listen and https-listen",
     opt_server},
    {"dotfiles", HTTPD, ROLE(ADDR_SINK), "http-listen and https-listen",
     opt_dotfiles},
    {"index", HTTPD, ROLE(ADDR_SINK), "http-listen and https-listen",
     opt_dir_index},
    {"follow_symlinks", HTTPD, ROLE(ADDR_SINK), "http-listen and https-listen",
     opt_follow_symlinks},
    {"header_timeout", HTTPD, ROLE(ADDR_SINK), "http-listen and https-listen",
     opt_header_timeout},
    {"request_log", HTTPD, ROLE(ADDR_SINK), "http-listen and https-listen",
     opt_access_log},
    {"request_log_format", HTTPD, ROLE(ADDR_SINK),
     "http-listen and https-listen", opt_log_format},
};

_Static_assert(sizeof(options) / sizeof(options[0]) <= 64,
               "options given are bits of a uint64_t");

#define NOPTIONS (sizeof(options) / sizeof(options[0]))

static bool option_fits(const struct option_def *o,
                        const struct weir_address *a)
{
    return (o->kinds & KIND(a->kind)) && (o->roles & ROLE(a->role)) &&
           (!(o->kinds & TLS_ONLY) || a->tls || a->kind == ADDR_HTTP ||
            a->kind == ADDR_JETSTREAM) &&
           (!(o->kinds & HTTPD_OPT) || a->serve_http);
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

/* One "key=value" of the option list; key and value are trimmed. */
int address_parse_option(struct weir_address *a, char *item, uint64_t *seen,
                         char *err, size_t errlen)
{
    char *eq = strchr(item, '=');
    char *key, *value, known[320];
    const struct option_def *o = NULL;

    if (eq != NULL)
        *eq = '\0';
    key = trim(item);
    value = eq ? trim(eq + 1) : NULL;
    if (*key == '\0') {
        snprintf(err, errlen, "empty option in '%s'", a->text);
        return -EINVAL;
    }
    if (strncmp(key, "rdkafka.", 8) == 0)
        return opt_rdkafka(a, key + 8, value, err, errlen);
    /* Names shared by kinds (compression=, key=) have a row per kind. */
    for (size_t i = 0; i < NOPTIONS; i++)
        if (strcmp(options[i].name, key) == 0 &&
            (o == NULL || (!option_fits(o, a) && option_fits(&options[i], a))))
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
    /* header= and label= may be given once per header or label. */
    if ((*seen & (UINT64_C(1) << (o - options))) && o->parse != opt_header &&
        o->parse != opt_label) {
        snprintf(err, errlen, "option '%s' is given twice", key);
        return -EINVAL;
    }
    *seen |= UINT64_C(1) << (o - options);
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
