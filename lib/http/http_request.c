/*
 * http_request.c - one request of the http sink: the easy handle for a
 * batch's body, what it keeps of the answer (its body, Retry-After), and
 * what every request of a sink carries (struct hclient: URL, headers,
 * TLS, authentication), made once from the options.
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "http_impl.h"

/* The most of an answer kept: a _bulk answer names every item. */
#define ANSWER_MAX (64u << 20)

static size_t on_body(char *p, size_t size, size_t n, void *arg)
{
    struct hreq *r = arg;

    n *= size;
    if (r->ans.len + n <= ANSWER_MAX && weir__hbuf_put(&r->ans, p, n))
        return 0;
    return n;
}

static size_t on_header(char *p, size_t size, size_t n, void *arg)
{
    struct hreq *r = arg;
    uint64_t ra = weir__retry_after_ns(p, size * n);

    if (ra)
        r->retry_after_ns = ra;
    return size * n;
}

void weir__hreq_free(struct hreq *r)
{
    if (r->easy)
        curl_easy_cleanup(r->easy);
    weir__hbuf_free(&r->body);
    weir__hbuf_free(&r->ans);
    free(r);
}

static void easy_setup(const struct hclient *c, struct hreq *r)
{
    CURL *e = r->easy;

    curl_easy_setopt(e, CURLOPT_URL, c->url);
    curl_easy_setopt(e, CURLOPT_POST, 1L);
    curl_easy_setopt(e, CURLOPT_POSTFIELDS, (char *)r->body.p);
    curl_easy_setopt(e, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)r->body.len);
    curl_easy_setopt(e, CURLOPT_HTTPHEADER, c->hdrs);
    curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, on_body);
    curl_easy_setopt(e, CURLOPT_WRITEDATA, r);
    curl_easy_setopt(e, CURLOPT_HEADERFUNCTION, on_header);
    curl_easy_setopt(e, CURLOPT_HEADERDATA, r);
    curl_easy_setopt(e, CURLOPT_PRIVATE, r);
    /* No signals (the daemon's are its own), no name lookup that blocks:
     * curl's threaded resolver runs the lookup off the loop. */
    curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(e, CURLOPT_TIMEOUT_MS, c->timeout_ms);
    curl_easy_setopt(e, CURLOPT_CONNECTTIMEOUT_MS, c->connect_timeout_ms);
    curl_easy_setopt(e, CURLOPT_TCP_KEEPALIVE, 1L);
    curl_easy_setopt(e, CURLOPT_PROTOCOLS_STR, "http,https");
    if (c->ca)
        curl_easy_setopt(e, CURLOPT_CAINFO, c->ca);
    if (c->insecure) {
        curl_easy_setopt(e, CURLOPT_SSL_VERIFYPEER, 0L);
        curl_easy_setopt(e, CURLOPT_SSL_VERIFYHOST, 0L);
    }
    if (c->userpwd) {
        curl_easy_setopt(e, CURLOPT_HTTPAUTH, (long)CURLAUTH_BASIC);
        curl_easy_setopt(e, CURLOPT_USERPWD, c->userpwd);
    }
}

int weir__hreq_new(struct hreq **out, const struct hclient *c, struct hbatch *b)
{
    struct hreq *r = calloc(1, sizeof(*r));
    int rc;

    if (!r)
        return -ENOMEM;
    r->b = b;
    rc = weir__http_body(&r->body, b, &c->shape);
    if (rc == 0 && !(r->easy = curl_easy_init()))
        rc = -ENOMEM;
    if (rc) {
        weir__hreq_free(r);
        return rc;
    }
    easy_setup(c, r);
    *out = r;
    return 0;
}

/* ---- what every request carries ---- */

static pthread_once_t curl_once = PTHREAD_ONCE_INIT;
static CURLcode curl_init_rc;

static void curl_init(void)
{
    curl_init_rc = curl_global_init(CURL_GLOBAL_DEFAULT);
}

const char *weir_http_curl_version(void)
{
    return curl_version_info(CURLVERSION_NOW)->version;
}

static int add_header(struct hclient *c, const char *h)
{
    struct curl_slist *l = curl_slist_append(c->hdrs, h);

    if (!l)
        return -ENOMEM;
    c->hdrs = l;
    return 0;
}

static int headers(struct hclient *c, const struct weir_http_sink_options *o)
{
    static const char *const types[] = {
        [WEIR_HTTP_RAW] = "Content-Type: text/plain",
        [WEIR_HTTP_CLICKHOUSE] = "Content-Type: application/x-ndjson",
        [WEIR_HTTP_ELASTICSEARCH] = "Content-Type: application/x-ndjson",
        [WEIR_HTTP_SPLUNK_HEC] = "Content-Type: application/json",
        [WEIR_HTTP_LOKI] = "Content-Type: application/json",
        [WEIR_HTTP_OTLP] = "Content-Type: application/json",
    };
    int rc = add_header(c, types[o->preset]);

    /* No "Expect: 100-continue" round trip before big bodies. */
    if (rc == 0)
        rc = add_header(c, "Expect:");
    if (rc == 0 && o->compression == WEIR_HTTP_GZIP)
        rc = add_header(c, "Content-Encoding: gzip");
    if (rc == 0 && o->compression == WEIR_HTTP_ZSTD)
        rc = add_header(c, "Content-Encoding: zstd");
    for (unsigned i = 0; rc == 0 && i < o->nheaders; i++)
        rc = add_header(c, o->headers[i]);
    if (rc == 0 && o->bearer) {
        char *h = NULL;

        if (asprintf(&h, "Authorization: %s %s",
                     o->preset == WEIR_HTTP_SPLUNK_HEC ? "Splunk" : "Bearer",
                     o->bearer) < 0)
            return -ENOMEM;
        rc = add_header(c, h);
        explicit_bzero(h, strlen(h));
        free(h);
    }
    return rc;
}

/* One name=value label as JSON: Loki's "name":"value", or an OTLP
 * attribute {"key":"name","value":{"stringValue":"value"}}. */
static int put_label(struct hbuf *l, const char *label, bool otlp)
{
    const char *eq = strchr(label, '=');
    int rc;

    if (!eq || eq == label)
        return -EINVAL;
    rc = otlp ? HBUF_LIT(l, "{\"key\":\"") : HBUF_LIT(l, "\"");
    if (rc == 0)
        rc = weir__http_json_escape(l, (const uint8_t *)label,
                                    (size_t)(eq - label));
    if (rc == 0)
        rc = otlp ? HBUF_LIT(l, "\",\"value\":{\"stringValue\":\"")
                  : HBUF_LIT(l, "\":\"");
    if (rc == 0)
        rc = weir__http_json_escape(l, (const uint8_t *)eq + 1, strlen(eq + 1));
    if (rc == 0)
        rc = otlp ? HBUF_LIT(l, "\"}}") : HBUF_LIT(l, "\"");
    return rc;
}

/* The labels every body carries: Loki's stream as a JSON object, or
 * OTLP's resource attributes as a JSON array. */
static int labels(struct hclient *c, const struct weir_http_sink_options *o)
{
    bool otlp = o->preset == WEIR_HTTP_OTLP;
    struct hbuf l = {0};
    int rc = weir__hbuf_put(&l, otlp ? "[" : "{", 1);

    for (unsigned i = 0; rc == 0 && i < o->nlabels; i++) {
        if (i)
            rc = HBUF_LIT(&l, ",");
        if (rc == 0)
            rc = put_label(&l, o->labels[i], otlp);
    }
    if (rc == 0 && o->nlabels == 0)
        rc = put_label(&l, otlp ? "service.name=weir" : "job=weir", otlp);
    if (rc == 0)
        rc = weir__hbuf_put(&l, otlp ? "]" : "}", 2); /* and the NUL */
    if (rc == 0)
        l.p[l.len - 1] = '\0';
    if (rc) {
        weir__hbuf_free(&l);
        return rc;
    }
    c->labels = (char *)l.p;
    return 0;
}

static int copy(char **dst, const char *src)
{
    if (!src)
        return 0;
    *dst = strdup(src);
    return *dst ? 0 : -ENOMEM;
}

int weir__hclient_init(struct hclient *c,
                       const struct weir_http_sink_options *set,
                       const struct weir_http_sink_options *o)
{
    int rc;

    pthread_once(&curl_once, curl_init);
    if (curl_init_rc != CURLE_OK)
        return -ENOMEM;
    rc = copy(&c->url, o->url);
    if (rc == 0)
        rc = copy(&c->index, o->index);
    if (rc == 0)
        rc = copy(&c->ca, o->ca);
    if (rc == 0 && o->user &&
        asprintf(&c->userpwd, "%s:%s", o->user,
                 o->password ? o->password : "") < 0) {
        c->userpwd = NULL;
        rc = -ENOMEM;
    }
    if (rc == 0)
        rc = headers(c, o);
    if (rc == 0 && (o->preset == WEIR_HTTP_LOKI || o->preset == WEIR_HTTP_OTLP))
        rc = labels(c, o);
    c->insecure = o->insecure;
    c->timeout_ms = (long)(set->timeout_ns / 1000000);
    c->connect_timeout_ms = (long)(set->connect_timeout_ns / 1000000);
    c->shape = (struct hshape){.preset = o->preset,
                               .comp = o->compression,
                               .index = c->index,
                               .labels = c->labels};
    return rc;
}

void weir__hclient_free(struct hclient *c)
{
    /* A header may carry the token: gone from memory with the sink. */
    for (struct curl_slist *l = c->hdrs; l; l = l->next)
        explicit_bzero(l->data, strlen(l->data));
    curl_slist_free_all(c->hdrs);
    free(c->url);
    free(c->labels);
    free(c->index);
    free(c->ca);
    if (c->userpwd) {
        explicit_bzero(c->userpwd, strlen(c->userpwd));
        free(c->userpwd);
    }
    *c = (struct hclient){0};
}
