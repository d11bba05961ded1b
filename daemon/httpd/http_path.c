/*
 * http_path.c - see http_path.h. The target is decoded once: "%252e" is
 * the three characters "%2e", a file name like any other, never a dot.
 */
#include "httpd/http_path.h"

#include <string.h>

static int hex(char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}

/* The path part of the target: up to '?' or '#', after the authority of
 * an absolute form. NULL when it has none that begins with '/'. */
static const char *path_part(const char *t, size_t len, size_t *plen)
{
    const char *end = t + len, *q;

    if (len >= 7 && (strncmp(t, "http://", 7) == 0 ||
                     (len >= 8 && strncmp(t, "https://", 8) == 0))) {
        t = memchr(t + 7, '/', (size_t)(end - t - 7));
        if (!t)
            return NULL;
    }
    if (t >= end || *t != '/')
        return NULL;
    for (q = t; q < end && *q != '?' && *q != '#'; q++)
        ;
    *plen = (size_t)(q - t);
    return t;
}

/* Whether s[0..n) is well-formed UTF-8: no overlong form, no surrogate,
 * nothing past U+10FFFF. */
static bool utf8_valid(const unsigned char *s, size_t n)
{
    size_t i = 0;

    while (i < n) {
        unsigned c = s[i], need, cp;

        if (c < 0x80) {
            i++;
            continue;
        }
        if (c >= 0xc2 && c <= 0xdf)
            need = 1, cp = c & 0x1f;
        else if (c >= 0xe0 && c <= 0xef)
            need = 2, cp = c & 0x0f;
        else if (c >= 0xf0 && c <= 0xf4)
            need = 3, cp = c & 0x07;
        else
            return false; /* 0xc0, 0xc1 (overlong) and the rest */
        if (n - i <= need)
            return false;
        for (unsigned k = 1; k <= need; k++) {
            if ((s[i + k] & 0xc0) != 0x80)
                return false;
            cp = cp << 6 | (s[i + k] & 0x3f);
        }
        if ((need == 2 && cp < 0x800) || (need == 3 && cp < 0x10000) ||
            (cp >= 0xd800 && cp <= 0xdfff) || cp > 0x10ffff)
            return false;
        i += need + 1;
    }
    return true;
}

/* Appends one decoded segment to out (at *n), or returns a status. */
static int segment(const char *seg, size_t len, bool dotfiles, char *out,
                   size_t *n)
{
    if (len == 0 || (len == 1 && seg[0] == '.'))
        return 0;
    if (len == 2 && seg[0] == '.' && seg[1] == '.')
        return 400;
    if (seg[0] == '.' && !dotfiles)
        return 404;
    if (*n + len + 1 >= HTTP_PATH_MAX)
        return 414;
    if (*n)
        out[(*n)++] = '/';
    memcpy(out + *n, seg, len);
    *n += len;
    return 0;
}

int http_path_map(const char *target, size_t len, bool dotfiles, char *out)
{
    char dec[HTTP_PATH_MAX];
    const char *p;
    size_t plen, d = 0, n = 0, start;
    int rc;

    p = path_part(target, len, &plen);
    if (!p)
        return 400;
    for (size_t i = 0; i < plen; i++) {
        unsigned char c = (unsigned char)p[i];

        if (c == '%') {
            int hi = i + 2 < plen ? hex(p[i + 1]) : -1;
            int lo = i + 2 < plen ? hex(p[i + 2]) : -1;

            if (hi < 0 || lo < 0)
                return 400;
            c = (unsigned char)(hi << 4 | lo);
            i += 2;
        }
        if (c < 0x20 || c == 0x7f || c == '\\')
            return 400;
        if (d + 1 >= sizeof(dec))
            return 414;
        dec[d++] = (char)c;
    }
    if (!utf8_valid((const unsigned char *)dec, d))
        return 400;
    /* Segments between slashes; a decoded %2F splits like a slash, which
     * is what the file system would make of it anyway. */
    start = 0;
    for (size_t i = 0; i <= d; i++) {
        if (i < d && dec[i] != '/')
            continue;
        rc = segment(dec + start, i - start, dotfiles, out, &n);
        if (rc)
            return rc;
        start = i + 1;
    }
    out[n] = '\0';
    return 0;
}
