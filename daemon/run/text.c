/*
 * text.c - see text.h.
 */
#include "run/text.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

void text_put(struct text *t, const char *fmt, ...)
{
    va_list ap;
    int n;

    if (t->oom)
        return;
    for (;;) {
        size_t room = t->cap - t->len;

        va_start(ap, fmt);
        n = vsnprintf(t->p ? t->p + t->len : NULL, room, fmt, ap);
        va_end(ap);
        if (n < 0) {
            t->oom = true;
            return;
        }
        if ((size_t)n < room) {
            t->len += (size_t)n;
            return;
        }
        size_t cap = t->cap ? t->cap * 2 : 4096;
        while (cap - t->len <= (size_t)n)
            cap *= 2;
        char *np = realloc(t->p, cap);
        if (!np) {
            t->oom = true;
            return;
        }
        t->p = np;
        t->cap = cap;
    }
}

void text_prom_label(struct text *t, const char *v)
{
    for (; *v; v++) {
        if (*v == '\\')
            text_put(t, "\\\\");
        else if (*v == '"')
            text_put(t, "\\\"");
        else if (*v == '\n')
            text_put(t, "\\n");
        else
            text_put(t, "%c", *v);
    }
}

void text_json_str(struct text *t, const char *s)
{
    text_put(t, "\"");
    for (const unsigned char *c = (const unsigned char *)s; *c; c++) {
        if (*c == '"' || *c == '\\')
            text_put(t, "\\%c", *c);
        else if (*c == '\n')
            text_put(t, "\\n");
        else if (*c < 0x20 || *c == 0x7f)
            text_put(t, "\\u%04x", *c);
        else
            text_put(t, "%c", *c);
    }
    text_put(t, "\"");
}

void text_human_bytes(char *out, size_t len, double v, const char *suffix)
{
    static const char *const unit[] = {"B", "KiB", "MiB", "GiB", "TiB"};
    unsigned u = 0;

    while (v >= 1024 && u < 4) {
        v /= 1024;
        u++;
    }
    if (u == 0)
        snprintf(out, len, "%.0f %s%s", v, unit[u], suffix);
    else
        snprintf(out, len, "%.1f %s%s", v, unit[u], suffix);
}
