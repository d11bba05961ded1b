/*
 * ckpt_text.c - see ckpt_text.h. The reader takes nothing on trust: the
 * text may be damaged or not weir's at all, so every field is checked
 * and a record is valid only with all five present.
 */
#include "sys/ckpt_text.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static bool plain_byte(unsigned char c)
{
    return c >= 0x20 && c != 0x7f && c != '\\';
}

size_t ckpt_text_format(const struct ckpt_rec *r, const char *path, char *buf,
                        size_t size)
{
    size_t n = 0;

#define PUT(...)                                                               \
    do {                                                                       \
        int k_ = snprintf(buf + n, n < size ? size - n : 0, __VA_ARGS__);      \
        n += k_ > 0 ? (size_t)k_ : 0;                                          \
    } while (0)
    PUT("weir checkpoint 1\npath ");
    for (const unsigned char *c = (const unsigned char *)path; *c; c++) {
        if (plain_byte(*c))
            PUT("%c", *c);
        else
            PUT("\\x%02x", *c);
    }
    PUT("\ndev %" PRIu64 "\nino %" PRIu64 "\noffset %" PRIu64 "\nhead ", r->dev,
        r->ino, r->off);
    for (uint32_t i = 0; i < r->head_len && i < sizeof(r->head); i++)
        PUT("%02x", r->head[i]);
    PUT("\n");
#undef PUT
    return n < size ? n : size - 1;
}

static int hexval(char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    return -1;
}

/* The path of a "path " line (len bytes at p), unescaped; NULL when it is
 * malformed or out of memory. */
static char *path_unescape(const char *p, size_t len)
{
    char *out = malloc(len + 1);
    size_t n = 0;

    if (!out)
        return NULL;
    for (size_t i = 0; i < len; i++) {
        if (p[i] != '\\') {
            out[n++] = p[i];
            continue;
        }
        if (i + 3 >= len || p[i + 1] != 'x' || hexval(p[i + 2]) < 0 ||
            hexval(p[i + 3]) < 0 ||
            (hexval(p[i + 2]) | hexval(p[i + 3])) == 0) {
            free(out);
            return NULL;
        }
        out[n++] = (char)(hexval(p[i + 2]) << 4 | hexval(p[i + 3]));
        i += 3;
    }
    out[n] = '\0';
    return out;
}

/* A decimal field of a line ("dev 2049"): all digits, no overflow. */
static bool field_u64(const char *v, size_t len, uint64_t *out)
{
    uint64_t x = 0;

    if (len == 0 || len > 20)
        return false;
    for (size_t i = 0; i < len; i++) {
        uint64_t d = (uint64_t)(v[i] - '0');

        if (v[i] < '0' || v[i] > '9' || x > (UINT64_MAX - d) / 10)
            return false;
        x = x * 10 + d;
    }
    *out = x;
    return true;
}

static bool field_head(const char *h, size_t n, struct ckpt_rec *r)
{
    if (n % 2 || n / 2 > sizeof(r->head))
        return false;
    for (size_t i = 0; i < n / 2; i++) {
        int a = hexval(h[2 * i]), b = hexval(h[2 * i + 1]);

        if (a < 0 || b < 0)
            return false;
        r->head[i] = (uint8_t)(a << 4 | b);
    }
    r->head_len = (uint32_t)(n / 2);
    return true;
}

enum ckpt_text_kind ckpt_text_parse(const char *text, const char *path,
                                    struct ckpt_rec *r, char **other)
{
    static const char magic[] = "weir checkpoint 1\n";
    const char *line = text + sizeof(magic) - 1;
    char *found = NULL;
    unsigned seen = 0;
    bool ok = true;

    *r = (struct ckpt_rec){0};
    *other = NULL;
    if (strncmp(text, magic, sizeof(magic) - 1) != 0)
        return CKPT_TEXT_BAD;
    while (ok && *line) {
        const char *end = strchr(line, '\n');
        size_t len = end ? (size_t)(end - line) : strlen(line);

        if (len > 5 && memcmp(line, "path ", 5) == 0 && !found)
            ok = (found = path_unescape(line + 5, len - 5)) != NULL, seen |= 1;
        else if (len > 4 && memcmp(line, "dev ", 4) == 0)
            ok = field_u64(line + 4, len - 4, &r->dev), seen |= 2;
        else if (len > 4 && memcmp(line, "ino ", 4) == 0)
            ok = field_u64(line + 4, len - 4, &r->ino), seen |= 4;
        else if (len > 7 && memcmp(line, "offset ", 7) == 0)
            ok = field_u64(line + 7, len - 7, &r->off), seen |= 8;
        else if (len >= 5 && memcmp(line, "head ", 5) == 0)
            ok = field_head(line + 5, len - 5, r), seen |= 16;
        line += len + (end != NULL);
    }
    if (!ok || seen != 31) {
        free(found);
        *r = (struct ckpt_rec){0};
        return CKPT_TEXT_BAD;
    }
    if (strcmp(found, path) != 0) {
        *other = found;
        *r = (struct ckpt_rec){0};
        return CKPT_TEXT_OTHER;
    }
    free(found);
    r->valid = true;
    return CKPT_TEXT_OK;
}
