/*
 * ckpt_set_text.c - see ckpt_set_text.h. Like ckpt_text.c, the reader
 * takes nothing on trust: a file it cannot read whole is not used.
 */
#include "sys/ckpt_set_text.h"

#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static bool plain_byte(unsigned char c)
{
    return c >= 0x20 && c != 0x7f && c != '\\';
}

static void rfc3339(time_t t, char *buf, size_t size)
{
    struct tm tm;

    if (gmtime_r(&t, &tm) == NULL ||
        strftime(buf, size, "%Y-%m-%dT%H:%M:%SZ", &tm) == 0)
        snprintf(buf, size, "1970-01-01T00:00:00Z");
}

size_t ckpt_set_text_header(const char *name, time_t now, char *buf,
                            size_t size)
{
    char when[32];
    int n;

    rfc3339(now, when, sizeof(when));
    n = snprintf(buf, size,
                 "# weir file checkpoints for pipeline %s, "
                 "written %s\n",
                 name, when);
    return n < 0 ? 0 : (size_t)n < size ? (size_t)n : size - 1;
}

/* A line a file, for each of thousands of files a second: no printf, and
 * the time formatted once per second it names. */
struct out {
    char *buf;
    size_t size, n;
};

static void put(struct out *o, const char *s, size_t len)
{
    if (o->n + len < o->size) {
        memcpy(o->buf + o->n, s, len);
        o->n += len;
    }
}

static void put_dec(struct out *o, uint64_t v)
{
    char d[20];
    size_t i = sizeof(d);

    do {
        d[--i] = (char)('0' + v % 10);
        v /= 10;
    } while (v);
    put(o, d + i, sizeof(d) - i);
}

static void put_hex16(struct out *o, uint64_t v)
{
    static const char hex[] = "0123456789abcdef";
    char d[16];

    for (int i = 15; i >= 0; i--, v >>= 4)
        d[i] = hex[v & 15];
    put(o, d, sizeof(d));
}

size_t ckpt_set_text_line(const struct ckpt_set_entry *e, char *buf,
                          size_t size)
{
    /* The writer runs on one thread per stream; each keeps its own. */
    static _Thread_local time_t when_t = (time_t)-1;
    static _Thread_local char when[32];
    struct out o = {buf, size, 0};

    if (size == 0)
        return 0;
    if (e->written != when_t) {
        rfc3339(e->written, when, sizeof(when));
        when_t = e->written;
    }
    put(&o, "file fp=", 8);
    put_hex16(&o, e->fp);
    put(&o, " fplen=", 7);
    put_dec(&o, e->fplen);
    put(&o, " dev=", 5);
    put_dec(&o, e->dev);
    put(&o, " ino=", 5);
    put_dec(&o, e->ino);
    put(&o, " offset=", 8);
    put_dec(&o, e->offset);
    put(&o, " written=", 9);
    put(&o, when, strlen(when));
    put(&o, " path=", 6);
    for (const unsigned char *c = (const unsigned char *)e->path;
         *c && o.n + 5 < size; c++) {
        if (plain_byte(*c)) {
            o.buf[o.n++] = (char)*c;
        } else {
            static const char hex[] = "0123456789abcdef";
            char x[4] = {'\\', 'x', hex[*c >> 4], hex[*c & 15]};

            put(&o, x, sizeof(x));
        }
    }
    if (o.n + 1 < size)
        buf[o.n++] = '\n';
    buf[o.n < size ? o.n : size - 1] = '\0';
    return o.n;
}

static int hexval(char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    return -1;
}

/* "key=" then a number up to the next space: decimal, or 16 hex digits
 * for fp. Moves *p past the space. */
static bool field(const char **p, const char *key, bool hex, uint64_t *out)
{
    size_t klen = strlen(key), n = 0;
    uint64_t x = 0;
    const char *v;

    if (strncmp(*p, key, klen) != 0 || (*p)[klen] != '=')
        return false;
    v = *p + klen + 1;
    for (; v[n] && v[n] != ' '; n++) {
        int d = hex                            ? hexval(v[n])
                : (v[n] >= '0' && v[n] <= '9') ? v[n] - '0'
                                               : -1;

        if (d < 0 || (hex && n >= 16) ||
            (!hex && x > (UINT64_MAX - (uint64_t)d) / 10))
            return false;
        x = hex ? x << 4 | (uint64_t)d : x * 10 + (uint64_t)d;
    }
    if (n == 0 || v[n] != ' ')
        return false;
    *out = x;
    *p = v + n + 1;
    return true;
}

/* written=YYYY-MM-DDTHH:MM:SSZ */
static bool field_time(const char **p, time_t *out)
{
    struct tm tm = {0};
    const char *end;

    if (strncmp(*p, "written=", 8) != 0)
        return false;
    end = strptime(*p + 8, "%Y-%m-%dT%H:%M:%SZ", &tm);
    if (end == NULL || *end != ' ')
        return false;
    *out = timegm(&tm);
    *p = end + 1;
    return true;
}

/* path=..., to the end of the line (len bytes at p), unescaped. */
static char *field_path(const char *p, size_t len)
{
    char *out;
    size_t n = 0;

    if (len < 5 || strncmp(p, "path=", 5) != 0)
        return NULL;
    p += 5;
    len -= 5;
    if (len == 0 || (out = malloc(len + 1)) == NULL)
        return NULL;
    for (size_t i = 0; i < len; i++) {
        int hi, lo;

        if (p[i] != '\\') {
            out[n++] = p[i];
            continue;
        }
        if (i + 3 >= len || p[i + 1] != 'x' || (hi = hexval(p[i + 2])) < 0 ||
            (lo = hexval(p[i + 3])) < 0 || (hi | lo) == 0) {
            free(out);
            return NULL;
        }
        out[n++] = (char)(hi << 4 | lo);
        i += 3;
    }
    out[n] = '\0';
    return out;
}

static bool parse_line(const char *p, size_t len, struct ckpt_set_entry *e)
{
    const char *end = p + len;
    uint64_t fplen;

    if (len < 5 || strncmp(p, "file ", 5) != 0)
        return false;
    p += 5;
    if (!field(&p, "fp", true, &e->fp) || !field(&p, "fplen", false, &fplen) ||
        fplen > UINT32_MAX || !field(&p, "dev", false, &e->dev) ||
        !field(&p, "ino", false, &e->ino) ||
        !field(&p, "offset", false, &e->offset) ||
        !field_time(&p, &e->written) || p > end)
        return false;
    e->fplen = (uint32_t)fplen;
    e->path = field_path(p, (size_t)(end - p));
    return e->path != NULL;
}

int ckpt_set_text_parse(const char *text, struct ckpt_set_entry **out)
{
    struct ckpt_set_entry *v = NULL, *nv;
    size_t n = 0, cap = 0;
    const char *line = text;

    *out = NULL;
    while (*line) {
        size_t len = strcspn(line, "\n");

        if (len > 0 && line[0] != '#') {
            if (n == cap) {
                cap = cap ? cap * 2 : 16;
                nv = reallocarray(v, cap, sizeof(*v));
                if (!nv) {
                    ckpt_set_text_free(v, n);
                    return -ENOMEM;
                }
                v = nv;
            }
            v[n] = (struct ckpt_set_entry){0};
            if (!parse_line(line, len, &v[n])) {
                ckpt_set_text_free(v, n);
                return -EINVAL;
            }
            n++;
        }
        line += len + (line[len] == '\n');
    }
    if (n > INT32_MAX) {
        ckpt_set_text_free(v, n);
        return -EINVAL;
    }
    *out = v;
    return (int)n;
}

void ckpt_set_text_free(struct ckpt_set_entry *v, size_t n)
{
    for (size_t i = 0; i < n; i++)
        free(v[i].path);
    free(v);
}
