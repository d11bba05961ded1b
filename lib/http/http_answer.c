/*
 * http_answer.c - what a collector's answer means for a batch: delivered,
 * to be sent again, or refused for good; and the per-item statuses of an
 * Elasticsearch _bulk answer, whose 200 may still hold failed items.
 */
#include <ctype.h>
#include <errno.h>
#include <string.h>
#include <strings.h>

#include "http_impl.h"

enum hans_kind weir__http_classify(CURLcode rc, long status, enum hretry *why)
{
    if (rc != CURLE_OK) {
        *why = rc == CURLE_OPERATION_TIMEDOUT ? HRETRY_TIMEOUT : HRETRY_CONNECT;
        return HANS_RETRY;
    }
    if (status >= 200 && status < 300)
        return HANS_DONE;
    /* Worth another try: the collector is busy, slow or broken for now.
     * Every other answer (3xx included: no redirect is followed, a body
     * posted to the wrong place stays wrong) would be the same again. */
    if (status == 429) {
        *why = HRETRY_429;
        return HANS_RETRY;
    }
    if (status == 408) {
        *why = HRETRY_TIMEOUT;
        return HANS_RETRY;
    }
    if (status >= 500 || status < 200) {
        *why = HRETRY_5XX;
        return HANS_RETRY;
    }
    return HANS_REJECT;
}

uint64_t weir__retry_after_ns(const char *line, size_t len)
{
    static const char name[] = "retry-after:";
    uint64_t s = 0;
    size_t i = sizeof(name) - 1;

    if (len < i || strncasecmp(line, name, i) != 0)
        return 0;
    while (i < len && (line[i] == ' ' || line[i] == '\t'))
        i++;
    if (i == len || !isdigit((unsigned char)line[i]))
        return 0; /* an HTTP date: the backoff decides */
    for (; i < len && isdigit((unsigned char)line[i]) && s < 86400; i++)
        s = s * 10 + (uint64_t)(line[i] - '0');
    return s * 1000000000ull;
}

/* ---- a small reader of the _bulk answer ---- */

struct jr {
    const char *p, *end;
};

static void ws(struct jr *r)
{
    while (r->p < r->end && isspace((unsigned char)*r->p))
        r->p++;
}

/* Skips a string at r->p (its opening quote); its contents in *s, *n. */
static int str(struct jr *r, const char **s, size_t *n)
{
    const char *b = ++r->p;

    while (r->p < r->end && *r->p != '"')
        r->p += *r->p == '\\' ? 2 : 1;
    if (r->p >= r->end)
        return -EPROTO;
    *s = b;
    *n = (size_t)(r->p - b);
    r->p++;
    return 0;
}

static int value(struct jr *r, int depth);

static int container(struct jr *r, int depth)
{
    char close = *r->p == '{' ? '}' : ']';
    bool obj = close == '}';

    if (depth > 64)
        return -EPROTO;
    r->p++;
    for (;;) {
        ws(r);
        if (r->p >= r->end)
            return -EPROTO;
        if (*r->p == close) {
            r->p++;
            return 0;
        }
        if (obj) {
            const char *k;
            size_t kn;

            if (*r->p != '"' || str(r, &k, &kn))
                return -EPROTO;
            ws(r);
            if (r->p >= r->end || *r->p++ != ':')
                return -EPROTO;
        }
        if (value(r, depth + 1))
            return -EPROTO;
        ws(r);
        if (r->p < r->end && *r->p == ',')
            r->p++;
    }
}

static int value(struct jr *r, int depth)
{
    const char *s;
    size_t n;

    ws(r);
    if (r->p >= r->end)
        return -EPROTO;
    if (*r->p == '"')
        return str(r, &s, &n);
    if (*r->p == '{' || *r->p == '[')
        return container(r, depth);
    while (r->p < r->end && !strchr(",}] \t\r\n", *r->p))
        r->p++;
    return 0;
}

/* In an object at r->p, finds key (at this level) and leaves r->p at its
 * value. -ENOENT when absent (r->p then past the object). */
static int find_key(struct jr *r, const char *key)
{
    size_t klen = strlen(key);

    ws(r);
    if (r->p >= r->end || *r->p != '{')
        return -EPROTO;
    r->p++;
    for (;;) {
        const char *k;
        size_t kn;

        ws(r);
        if (r->p >= r->end)
            return -EPROTO;
        if (*r->p == '}') {
            r->p++;
            return -ENOENT;
        }
        if (*r->p != '"' || str(r, &k, &kn))
            return -EPROTO;
        ws(r);
        if (r->p >= r->end || *r->p++ != ':')
            return -EPROTO;
        ws(r);
        if (kn == klen && memcmp(k, key, klen) == 0)
            return 0;
        if (value(r, 1))
            return -EPROTO;
        ws(r);
        if (r->p < r->end && *r->p == ',')
            r->p++;
    }
}

static long number(struct jr *r)
{
    long v = 0;

    ws(r);
    if (r->p >= r->end || !isdigit((unsigned char)*r->p))
        return -1;
    while (r->p < r->end && isdigit((unsigned char)*r->p) && v < 1000)
        v = v * 10 + (*r->p++ - '0');
    return v;
}

/* One item: {"create":{..., "status":N, ...}} (or index, update, ...). */
static int item_status(struct jr *r, int *status)
{
    const char *k;
    size_t kn;
    struct jr in;

    ws(r);
    if (r->p >= r->end || *r->p != '{')
        return -EPROTO;
    in = *r;
    if (value(r, 1)) /* r past the item */
        return -EPROTO;
    in.p++;
    ws(&in);
    if (in.p >= in.end || *in.p != '"' || str(&in, &k, &kn))
        return -EPROTO;
    ws(&in);
    if (in.p >= in.end || *in.p++ != ':')
        return -EPROTO;
    if (find_key(&in, "status"))
        return -EPROTO;
    *status = (int)number(&in);
    return *status < 0 ? -EPROTO : 0;
}

int weir__bulk_statuses(const char *ans, size_t len, int *statuses,
                        uint32_t cap, uint32_t *n, bool *errors)
{
    struct jr r = {ans, ans + len}, top = r;

    *n = 0;
    if (find_key(&r, "errors"))
        return -EPROTO;
    *errors = (size_t)(r.end - r.p) >= 4 && memcmp(r.p, "true", 4) == 0;
    if (!*errors)
        return 0;
    if (find_key(&top, "items"))
        return -EPROTO;
    ws(&top);
    if (top.p >= top.end || *top.p++ != '[')
        return -EPROTO;
    for (;;) {
        int st;

        ws(&top);
        if (top.p >= top.end)
            return -EPROTO;
        if (*top.p == ']')
            return 0;
        if (*n >= cap || item_status(&top, &st))
            return -EPROTO;
        statuses[(*n)++] = st;
        ws(&top);
        if (top.p < top.end && *top.p == ',')
            top.p++;
    }
}
