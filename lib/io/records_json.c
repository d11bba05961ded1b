/*
 * records_json.c - a record as one JSON object: its text as a string, the
 * file, the host and the time it was read.
 *
 * Log lines are bytes, not text: a binary blob or a Latin-1 line must
 * still come out as JSON a collector parses, so every byte that does not
 * belong to a well-formed UTF-8 sequence becomes U+FFFD (one per maximal
 * ill-formed subpart, as Unicode recommends), and the control characters
 * are escaped. Nothing is ever refused or cut here: the framer already
 * bounded the text, and the buffer has room for its worst case.
 */
#include <stdbool.h>
#include <string.h>
#include <time.h>

#include "records_json.h"

static const char hex[] = "0123456789abcdef";

static uint8_t *put(uint8_t *w, const char *s, size_t n)
{
    memcpy(w, s, n);
    return w + n;
}

/* The length of the well-formed UTF-8 sequence at p (1..4), or 0 with
 * *bad set to how many bytes form its maximal ill-formed subpart. */
static size_t utf8_len(const uint8_t *p, size_t n, size_t *bad)
{
    uint8_t c = p[0], lo = 0x80, hi = 0xbf;
    size_t need;

    if (c >= 0xc2 && c <= 0xdf)
        need = 2;
    else if (c >= 0xe0 && c <= 0xef)
        need = 3;
    else if (c >= 0xf0 && c <= 0xf4)
        need = 4;
    else {
        *bad = 1; /* 80..c1, f5..ff never start a sequence */
        return 0;
    }
    /* The second byte's range excludes overlongs, surrogates and code
     * points past U+10FFFF. */
    if (c == 0xe0)
        lo = 0xa0;
    else if (c == 0xed)
        hi = 0x9f;
    else if (c == 0xf0)
        lo = 0x90;
    else if (c == 0xf4)
        hi = 0x8f;
    for (size_t i = 1; i < need; i++) {
        if (i >= n || p[i] < lo || p[i] > hi) {
            *bad = i;
            return 0;
        }
        lo = 0x80;
        hi = 0xbf;
    }
    return need;
}

size_t weir__json_escape(uint8_t *out, const uint8_t *p, size_t n)
{
    uint8_t *w = out;
    size_t i = 0;

    while (i < n) {
        uint8_t c = p[i];
        size_t len, bad;

        if (c >= 0x20 && c < 0x80 && c != '"' && c != '\\') {
            *w++ = c;
            i++;
            continue;
        }
        if (c >= 0x80) {
            len = utf8_len(p + i, n - i, &bad);
            if (len) {
                w = put(w, (const char *)p + i, len);
                i += len;
            } else {
                w = put(w, "\\ufffd", 6);
                i += bad;
            }
            continue;
        }
        *w++ = '\\';
        switch (c) {
        case '"':
        case '\\':
            *w++ = c;
            break;
        case '\n':
            *w++ = 'n';
            break;
        case '\r':
            *w++ = 'r';
            break;
        case '\t':
            *w++ = 't';
            break;
        case '\b':
            *w++ = 'b';
            break;
        case '\f':
            *w++ = 'f';
            break;
        default:
            w = put(w, "u00", 3);
            *w++ = (uint8_t)hex[c >> 4];
            *w++ = (uint8_t)hex[c & 15];
        }
        i++;
    }
    return (size_t)(w - out);
}

size_t weir__records_json_suffix(uint8_t *out, const char *path,
                                 const char *host)
{
    uint8_t *w = put(out, "\",\"file\":\"", 10);

    w += weir__json_escape(w, (const uint8_t *)path, strlen(path));
    w = put(w, "\",\"host\":\"", 10);
    w += weir__json_escape(w, (const uint8_t *)host, strlen(host));
    w = put(w, "\",\"timestamp\":\"", 15);
    return (size_t)(w - out);
}

/* 2026-12-06T12:00:00.123Z: 24 bytes (a uint64_t of nanoseconds ends
 * in 2554, so the year always has four digits). */
static uint8_t *put_time(uint8_t *w, struct weir__json_clock *c,
                         uint64_t now_ns)
{
    uint64_t sec = now_ns / 1000000000u;
    unsigned ms = (unsigned)(now_ns / 1000000u % 1000u);

    if (sec != c->sec) {
        time_t s = (time_t)sec;
        struct tm tm;

        gmtime_r(&s, &tm);
        strftime(c->text, sizeof(c->text), "%Y-%m-%dT%H:%M:%S", &tm);
        c->sec = sec;
    }
    w = put(w, c->text, 19);
    *w++ = '.';
    *w++ = (uint8_t)('0' + ms / 100);
    *w++ = (uint8_t)('0' + ms / 10 % 10);
    *w++ = (uint8_t)('0' + ms % 10);
    *w++ = 'Z';
    return w;
}

size_t weir__records_json(uint8_t *out, const uint8_t *text, size_t n,
                          const uint8_t *suffix, size_t suffix_len,
                          struct weir__json_clock *clock, uint64_t now_ns)
{
    uint8_t *w = put(out, "{\"message\":\"", 12);

    w += weir__json_escape(w, text, n);
    w = put(w, (const char *)suffix, suffix_len);
    w = put_time(w, clock, now_ns);
    w = put(w, "\"}\n", 3);
    return (size_t)(w - out);
}
