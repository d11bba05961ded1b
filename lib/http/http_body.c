/*
 * http_body.c - a batch's body: its records as the preset wants them
 * (raw lines, JSONEachRow, _bulk NDJSON, Loki's and OTLP's JSON),
 * compressed when asked. Built afresh for each request, from the records
 * still to deliver, so that a retry of failed _bulk items carries those
 * items only.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <zlib.h>
#include <zstd.h>

#include "http_impl.h"

int weir__hbuf_put(struct hbuf *b, const void *p, size_t n)
{
    if (b->len + n > b->cap) {
        size_t cap = b->cap ? b->cap : 4096;
        uint8_t *q;

        while (cap < b->len + n)
            cap *= 2;
        q = realloc(b->p, cap);
        if (!q)
            return -ENOMEM;
        b->p = q;
        b->cap = cap;
    }
    if (n)
        memcpy(b->p + b->len, p, n);
    b->len += n;
    return 0;
}

void weir__hbuf_free(struct hbuf *b)
{
    free(b->p);
    *b = (struct hbuf){0};
}

/* Bytes >= 0x80 pass as they are: the collector judges the UTF-8 (a
 * record it refuses goes to the dead letters with its answer). */
int weir__http_json_escape(struct hbuf *b, const uint8_t *s, size_t n)
{
    size_t run = 0;
    int rc = 0;

    for (size_t i = 0; i < n && rc == 0; i++) {
        uint8_t c = s[i];
        char esc[8];
        size_t elen;

        if (c >= 0x20 && c != '"' && c != '\\')
            continue;
        rc = weir__hbuf_put(b, s + run, i - run);
        run = i + 1;
        switch (c) {
        case '"':
            elen = (size_t)snprintf(esc, sizeof(esc), "\\\"");
            break;
        case '\\':
            elen = (size_t)snprintf(esc, sizeof(esc), "\\\\");
            break;
        case '\t':
            elen = (size_t)snprintf(esc, sizeof(esc), "\\t");
            break;
        case '\r':
            elen = (size_t)snprintf(esc, sizeof(esc), "\\r");
            break;
        case '\n':
            elen = (size_t)snprintf(esc, sizeof(esc), "\\n");
            break;
        default:
            elen = (size_t)snprintf(esc, sizeof(esc), "\\u%04x", c);
            break;
        }
        if (rc == 0)
            rc = weir__hbuf_put(b, esc, elen);
    }
    if (rc == 0)
        rc = weir__hbuf_put(b, s + run, n - run);
    return rc;
}

bool weir__http_json_is_object(const uint8_t *s, size_t n)
{
    size_t i = 0;

    while (i < n && (s[i] == ' ' || s[i] == '\t' || s[i] == '\r'))
        i++;
    while (n > i && (s[n - 1] == ' ' || s[n - 1] == '\t' || s[n - 1] == '\r'))
        n--;
    return n - i >= 2 && s[i] == '{' && s[n - 1] == '}';
}

/* A record as a JSON object: itself when it is one, else wrapped. */
static int put_object(struct hbuf *b, const uint8_t *s, size_t n)
{
    int rc;

    if (weir__http_json_is_object(s, n))
        return weir__hbuf_put(b, s, n);
    rc = HBUF_LIT(b, "{\"message\":\"");
    if (rc == 0)
        rc = weir__http_json_escape(b, s, n);
    if (rc == 0)
        rc = HBUF_LIT(b, "\"}");
    return rc;
}

/* Splunk's HTTP Event Collector: {"event":RECORD}, the record as an
 * object when it is one, else as a string. */
static int put_event(struct hbuf *b, const uint8_t *s, size_t n)
{
    bool obj = weir__http_json_is_object(s, n);
    int rc =
        weir__hbuf_put(b, obj ? "{\"event\":" : "{\"event\":\"", obj ? 9 : 10);

    if (rc == 0)
        rc = obj ? weir__hbuf_put(b, s, n) : weir__http_json_escape(b, s, n);
    if (rc == 0)
        rc = weir__hbuf_put(b, obj ? "}" : "\"}", obj ? 1 : 2);
    return rc;
}

static int put_action(struct hbuf *b, const char *index)
{
    int rc;

    if (!index)
        return HBUF_LIT(b, "{\"create\":{}}\n");
    rc = HBUF_LIT(b, "{\"create\":{\"_index\":\"");
    if (rc == 0)
        rc = weir__http_json_escape(b, (const uint8_t *)index, strlen(index));
    if (rc == 0)
        rc = HBUF_LIT(b, "\"}}\n");
    return rc;
}

/* Loki's push API: one stream of the sink's labels, a value per record:
 * [nanoseconds as a string, the line]. */
static int shape_loki(struct hbuf *b, const struct hbatch *hb,
                      const char *labels)
{
    int rc = HBUF_LIT(b, "{\"streams\":[{\"stream\":");

    if (rc == 0)
        rc = weir__hbuf_put(b, labels, strlen(labels));
    if (rc == 0)
        rc = HBUF_LIT(b, ",\"values\":[");
    for (uint32_t i = 0; i < hb->ntodo && rc == 0; i++) {
        const struct hb_rec *r = &hb->recs[hb->todo[i]];
        char ts[40];
        int n = snprintf(ts, sizeof(ts), "%s[\"%lld\",\"", i ? "," : "",
                         (long long)(hb->stamp + hb->todo[i]));

        rc = weir__hbuf_put(b, ts, (size_t)n);
        if (rc == 0)
            rc = weir__http_json_escape(b, hb->raw + r->off, r->len);
        if (rc == 0)
            rc = HBUF_LIT(b, "\"]");
    }
    if (rc == 0)
        rc = HBUF_LIT(b, "]}]}\n");
    return rc;
}

/* OTLP/HTTP JSON logs: one resource (the sink's attributes), one scope,
 * a log record per record with the line as its string body. The time is
 * the batch's, as Loki's, so that a retry sends the same records. */
static int shape_otlp(struct hbuf *b, const struct hbatch *hb,
                      const char *attrs)
{
    int rc = HBUF_LIT(b, "{\"resourceLogs\":[{\"resource\":{"
                         "\"attributes\":");

    if (rc == 0)
        rc = weir__hbuf_put(b, attrs, strlen(attrs));
    if (rc == 0)
        rc = HBUF_LIT(b, "},\"scopeLogs\":[{\"scope\":{\"name\":\"weir\"},"
                         "\"logRecords\":[");
    for (uint32_t i = 0; i < hb->ntodo && rc == 0; i++) {
        const struct hb_rec *r = &hb->recs[hb->todo[i]];
        long long t = (long long)(hb->stamp + hb->todo[i]);
        char head[160]; /* two 20-digit times and the keys */
        int n = snprintf(head, sizeof(head),
                         "%s{\"timeUnixNano\":\"%lld\",\"observedTimeUnixNano"
                         "\":\"%lld\",\"body\":{\"stringValue\":\"",
                         i ? "," : "", t, t);

        rc = weir__hbuf_put(b, head, (size_t)n);
        if (rc == 0)
            rc = weir__http_json_escape(b, hb->raw + r->off, r->len);
        if (rc == 0)
            rc = HBUF_LIT(b, "\"}}");
    }
    if (rc == 0)
        rc = HBUF_LIT(b, "]}]}]}\n");
    return rc;
}

static int shape(struct hbuf *b, const struct hbatch *hb,
                 enum weir_http_preset preset, const char *index)
{
    int rc = 0;

    for (uint32_t i = 0; i < hb->ntodo && rc == 0; i++) {
        const struct hb_rec *r = &hb->recs[hb->todo[i]];
        const uint8_t *s = hb->raw + r->off;

        switch (preset) {
        case WEIR_HTTP_ELASTICSEARCH:
            rc = put_action(b, index);
            if (rc == 0)
                rc = put_object(b, s, r->len);
            break;
        case WEIR_HTTP_CLICKHOUSE:
            rc = put_object(b, s, r->len);
            break;
        case WEIR_HTTP_SPLUNK_HEC:
            rc = put_event(b, s, r->len);
            break;
        default:
            rc = weir__hbuf_put(b, s, r->len);
            break;
        }
        if (rc == 0)
            rc = HBUF_LIT(b, "\n");
    }
    return rc;
}

static int gzip_body(struct hbuf *out, const struct hbuf *in)
{
    z_stream z = {0};
    int zr;

    /* 16 + 15: a gzip wrapper, as Content-Encoding: gzip means. */
    if (deflateInit2(&z, 6, Z_DEFLATED, 16 + 15, 8, Z_DEFAULT_STRATEGY) != Z_OK)
        return -ENOMEM;
    out->len = 0;
    if (out->cap < deflateBound(&z, in->len)) {
        uint8_t *q = realloc(out->p, deflateBound(&z, in->len));

        if (!q) {
            deflateEnd(&z);
            return -ENOMEM;
        }
        out->p = q;
        out->cap = deflateBound(&z, in->len);
    }
    z.next_in = in->p;
    z.avail_in = (uInt)in->len;
    z.next_out = out->p;
    z.avail_out = (uInt)out->cap;
    zr = deflate(&z, Z_FINISH);
    out->len = z.total_out;
    deflateEnd(&z);
    return zr == Z_STREAM_END ? 0 : -EIO;
}

static int zstd_body(struct hbuf *out, const struct hbuf *in)
{
    size_t bound = ZSTD_compressBound(in->len), n;

    if (out->cap < bound) {
        uint8_t *q = realloc(out->p, bound);

        if (!q)
            return -ENOMEM;
        out->p = q;
        out->cap = bound;
    }
    n = ZSTD_compress(out->p, out->cap, in->p, in->len, 3);
    if (ZSTD_isError(n))
        return -EIO;
    out->len = n;
    return 0;
}

static int shape_any(struct hbuf *out, const struct hbatch *b,
                     const struct hshape *sh)
{
    if (sh->preset == WEIR_HTTP_LOKI)
        return shape_loki(out, b, sh->labels);
    if (sh->preset == WEIR_HTTP_OTLP)
        return shape_otlp(out, b, sh->labels);
    return shape(out, b, sh->preset, sh->index);
}

int weir__http_body(struct hbuf *out, const struct hbatch *b,
                    const struct hshape *sh)
{
    struct hbuf plain = {0};
    int rc;

    out->len = 0;
    if (sh->comp == WEIR_HTTP_IDENTITY)
        return shape_any(out, b, sh);
    rc = shape_any(&plain, b, sh);
    if (rc == 0)
        rc = sh->comp == WEIR_HTTP_GZIP ? gzip_body(out, &plain)
                                        : zstd_body(out, &plain);
    weir__hbuf_free(&plain);
    return rc;
}
