/*
 * http_reply.c - see http_reply.h. The ETag is strong and made of what
 * changes when the file does: its inode, size and modification time.
 */
#include "httpd/http_reply.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <time.h>

const char *http_reply_reason(int status)
{
    switch (status) {
    case 200:
        return "OK";
    case 206:
        return "Partial Content";
    case 301:
        return "Moved Permanently";
    case 304:
        return "Not Modified";
    case 400:
        return "Bad Request";
    case 404:
        return "Not Found";
    case 405:
        return "Method Not Allowed";
    case 412:
        return "Precondition Failed";
    case 414:
        return "URI Too Long";
    case 416:
        return "Range Not Satisfiable";
    case 431:
        return "Request Header Fields Too Large";
    case 500:
        return "Internal Server Error";
    case 503:
        return "Service Unavailable";
    case 505:
        return "HTTP Version Not Supported";
    }
    return "";
}

static int etag(char *buf, size_t len, const struct stat *st)
{
    uint64_t mt = (uint64_t)st->st_mtim.tv_sec * 1000000000u +
                  (uint64_t)st->st_mtim.tv_nsec;

    return snprintf(buf, len, "\"%" PRIx64 "-%" PRIx64 "-%" PRIx64 "\"",
                    (uint64_t)st->st_ino, (uint64_t)st->st_size, mt);
}

/* An HTTP date into a time; -1 when it is not one. Senders write the
 * IMF-fixdate; the two obsolete forms (RFC 850's and asctime's) are still
 * read, as RFC 9110 asks of a recipient. */
static time_t http_date_parse(const struct http_span *s)
{
    static const char *const forms[] = {
        "%a, %d %b %Y %H:%M:%S GMT", /* Sun, 06 Nov 1994 08:49:37 GMT */
        "%A, %d-%b-%y %H:%M:%S GMT", /* Sunday, 06-Nov-94 08:49:37 GMT */
        "%a %b %e %H:%M:%S %Y",      /* Sun Nov  6 08:49:37 1994 */
    };
    char buf[64];

    if (s->len == 0 || s->len >= sizeof(buf))
        return -1;
    memcpy(buf, s->p, s->len);
    buf[s->len] = '\0';
    for (size_t i = 0; i < sizeof(forms) / sizeof(forms[0]); i++) {
        struct tm tm;
        const char *end;

        memset(&tm, 0, sizeof(tm));
        end = strptime(buf, forms[i], &tm);
        if (end && !*end)
            return timegm(&tm);
    }
    return -1;
}

static size_t http_date(char *buf, size_t len, time_t t)
{
    struct tm tm;

    gmtime_r(&t, &tm);
    return strftime(buf, len, "%a, %d %b %Y %H:%M:%S GMT", &tm);
}

/* Whether a list of entity tags (If-Match, If-None-Match) names ours or
 * is "*". The weak comparison (If-None-Match's) lets a W/ tag match; the
 * strong one (If-Match's) never does. */
static bool tag_listed(const struct http_span *s, const char *ours, bool weak)
{
    const char *p = s->p, *end = s->p + s->len;
    size_t olen = strlen(ours);

    while (p < end) {
        const char *q;
        bool w = false;

        while (p < end && (*p == ' ' || *p == '\t' || *p == ','))
            p++;
        if (p < end && *p == '*')
            return true;
        if (end - p >= 2 && p[0] == 'W' && p[1] == '/') {
            p += 2;
            w = true;
        }
        q = p;
        while (q < end && *q != ',')
            q++;
        while (q > p && (q[-1] == ' ' || q[-1] == '\t'))
            q--;
        if ((weak || !w) && (size_t)(q - p) == olen &&
            memcmp(p, ours, olen) == 0)
            return true;
        while (p < end && *p != ',')
            p++;
    }
    return false;
}

/* Whether If-Range names the file as it is: its ETag exactly (a weak one
 * never does), or its modification time. */
static bool if_range_holds(const struct http_span *s, const char *ours,
                           const struct stat *st)
{
    if (s->len && s->p[0] == '"')
        return s->len == strlen(ours) && memcmp(s->p, ours, s->len) == 0;
    if (s->len >= 2 && s->p[0] == 'W' && s->p[1] == '/')
        return false;
    return http_date_parse(s) == st->st_mtim.tv_sec;
}

static bool digits(const char **p, const char *end, uint64_t *v)
{
    const char *s = *p;

    *v = 0;
    while (*p < end && **p >= '0' && **p <= '9') {
        if (*v > (UINT64_MAX - 9) / 10)
            return false;
        *v = *v * 10 + (uint64_t)(**p - '0');
        (*p)++;
    }
    return *p > s;
}

/* One "bytes=A-B", "bytes=A-" or "bytes=-N": 206 with the range, 416,
 * or 200 for what is ignored. */
static int range_of(const struct http_span *s, uint64_t size, uint64_t *off,
                    uint64_t *len)
{
    const char *p = s->p, *end = s->p + s->len;
    uint64_t a, b;
    bool has_a, has_b;

    if (s->len < 6 || strncasecmp(p, "bytes=", 6) != 0 ||
        memchr(p, ',', s->len))
        return 200;
    p += 6;
    while (p < end && *p == ' ')
        p++;
    has_a = digits(&p, end, &a);
    if (p >= end || *p++ != '-')
        return 200;
    has_b = digits(&p, end, &b);
    while (p < end && *p == ' ')
        p++;
    if (p != end || (!has_a && !has_b) || (has_a && has_b && b < a))
        return 200;
    if (!has_a) { /* the last b bytes */
        if (b == 0 || size == 0)
            return 416;
        *off = b < size ? size - b : 0;
        *len = size - *off;
        return 206;
    }
    if (a >= size)
        return 416;
    if (!has_b || b >= size)
        b = size - 1;
    *off = a;
    *len = b - a + 1;
    return 206;
}

int http_reply_status(const struct http_req *r, const struct stat *st,
                      uint64_t *off, uint64_t *len)
{
    char tag[64];
    uint64_t size = (uint64_t)st->st_size;
    time_t since;
    int rc;

    etag(tag, sizeof(tag), st);
    *off = 0;
    *len = size;
    /* RFC 9110's order: the client's preconditions on changing nothing
     * (If-Match, else If-Unmodified-Since) first, then those on having a
     * current copy, then the range. */
    if (r->if_match.len) {
        if (!tag_listed(&r->if_match, tag, false))
            return 412;
    } else if (r->if_unmodified_since.len &&
               (since = http_date_parse(&r->if_unmodified_since)) != -1 &&
               st->st_mtim.tv_sec > since) {
        return 412;
    }
    if (r->if_none_match.len) {
        if (tag_listed(&r->if_none_match, tag, true))
            return 304;
    } else if (r->if_modified_since.len &&
               (since = http_date_parse(&r->if_modified_since)) != -1 &&
               st->st_mtim.tv_sec <= since) {
        return 304;
    }
    if (!r->range.len ||
        (r->if_range.len && !if_range_holds(&r->if_range, tag, st)))
        return 200;
    rc = range_of(&r->range, size, off, len);
    if (rc != 206) {
        *off = 0;
        *len = size;
    }
    return rc;
}

/* Appends to buf[HTTP_HEAD_MAX] at *n; what does not fit is cut. */
__attribute__((format(printf, 3, 4))) static void put(char *buf, size_t *n,
                                                      const char *fmt, ...)
{
    va_list ap;
    int k;

    if (*n >= HTTP_HEAD_MAX - 1)
        return;
    va_start(ap, fmt);
    k = vsnprintf(buf + *n, HTTP_HEAD_MAX - *n, fmt, ap);
    va_end(ap);
    if (k > 0)
        *n =
            *n + (size_t)k < HTTP_HEAD_MAX ? *n + (size_t)k : HTTP_HEAD_MAX - 1;
}

size_t http_reply_head(char *buf, const struct http_head *h)
{
    char date[64], tag[64];
    size_t n;
    bool error = h->st == NULL && h->type == NULL;
    const char *reason = http_reply_reason(h->status);
    uint64_t clen = h->len;

    http_date(date, sizeof(date), time(NULL));
    n = 0;
    put(buf, &n, "HTTP/1.1 %d %s\r\n%sDate: %s\r\n", h->status, reason,
        h->server ? "Server: weir\r\n" : "", date);
    if (error) {
        /* The body: "404 Not Found\n". */
        clen = (uint64_t)snprintf(NULL, 0, "%d %s\n", h->status, reason);
        put(buf, &n, "Content-Type: text/plain\r\n%s",
            h->status == 405 ? "Allow: GET, HEAD\r\n" : "");
        if (h->location)
            put(buf, &n, "Location: %s\r\n", h->location);
    } else if (!h->st) {
        put(buf, &n, "Content-Type: %s\r\n", h->type);
    } else {
        etag(tag, sizeof(tag), h->st);
        http_date(date, sizeof(date), h->st->st_mtim.tv_sec);
        if (h->status != 304 && h->status != 416)
            put(buf, &n, "Content-Type: %s\r\n", h->type);
        put(buf, &n,
            "Last-Modified: %s\r\nETag: %s\r\n"
            "Accept-Ranges: bytes\r\n",
            date, tag);
        if (h->status == 206)
            put(buf, &n,
                "Content-Range: bytes %" PRIu64 "-%" PRIu64 "/%" PRIu64 "\r\n",
                h->off, h->off + h->len - 1, (uint64_t)h->st->st_size);
        if (h->status == 416)
            put(buf, &n, "Content-Range: bytes */%" PRIu64 "\r\n",
                (uint64_t)h->st->st_size);
        if (h->status == 304 || h->status == 416)
            clen = 0;
    }
    if (h->status != 304)
        put(buf, &n, "Content-Length: %" PRIu64 "\r\n", clen);
    if (!h->keep_alive)
        put(buf, &n, "Connection: close\r\n");
    else if (h->http10)
        put(buf, &n, "Connection: keep-alive\r\n");
    put(buf, &n, "\r\n");
    if (error && !h->head_only)
        put(buf, &n, "%d %s\n", h->status, reason);
    return n;
}
