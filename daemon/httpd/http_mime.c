/*
 * http_mime.c - see http_mime.h. One sorted array of (extension, type)
 * searched by bsearch; the strings live in one block read from the file.
 */
#include "httpd/http_mime.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

struct mime_entry {
    const char *ext, *type;
    size_t line; /* its place in the file: the first one wins */
};

struct http_mime {
    struct mime_entry *e;
    size_t n, cap;
    char *text; /* the file, cut into the strings above */
};

#define OCTET_STREAM "application/octet-stream"

static int entry_cmp(const void *a, const void *b)
{
    return strcasecmp(((const struct mime_entry *)a)->ext,
                      ((const struct mime_entry *)b)->ext);
}

static int entry_order(const void *a, const void *b)
{
    const struct mime_entry *x = a, *y = b;
    int c = entry_cmp(a, b);

    if (c)
        return c;
    return x->line < y->line ? -1 : x->line > y->line;
}

static char *read_all(const char *path)
{
    FILE *f = fopen(path, "re");
    char *buf = NULL;
    size_t len = 0, cap = 0, k;

    if (!f)
        return calloc(1, 1);
    for (;;) {
        if (cap - len < 4096) {
            char *nb = realloc(buf, cap + 65536);

            if (!nb) {
                free(buf);
                fclose(f);
                return NULL;
            }
            buf = nb;
            cap += 65536;
        }
        k = fread(buf + len, 1, cap - len - 1, f);
        len += k;
        if (k == 0)
            break;
    }
    fclose(f);
    buf[len] = '\0';
    return buf;
}

static int add(struct http_mime *m, const char *ext, const char *type)
{
    if (m->n == m->cap) {
        size_t cap = m->cap ? m->cap * 2 : 256;
        struct mime_entry *e = realloc(m->e, cap * sizeof(*e));

        if (!e)
            return -1;
        m->e = e;
        m->cap = cap;
    }
    m->e[m->n] = (struct mime_entry){ext, type, m->n};
    m->n++;
    return 0;
}

struct http_mime *http_mime_load(const char *path)
{
    struct http_mime *m = calloc(1, sizeof(*m));
    char *line, *next, *save, *type, *ext;

    if (!m || !(m->text = read_all(path))) {
        free(m);
        return NULL;
    }
    for (line = m->text; line; line = next) {
        next = strchr(line, '\n');
        if (next)
            *next++ = '\0';
        if (strchr(line, '#'))
            *strchr(line, '#') = '\0';
        type = strtok_r(line, " \t\r", &save);
        if (!type || !strchr(type, '/'))
            continue;
        while ((ext = strtok_r(NULL, " \t\r", &save)) != NULL)
            if (add(m, ext, type) != 0) {
                http_mime_free(m);
                return NULL;
            }
    }
    /* Equal extensions in the file's order: the first line for one wins,
     * as in nginx's types. */
    if (m->n)
        qsort(m->e, m->n, sizeof(*m->e), entry_order);
    return m;
}

void http_mime_free(struct http_mime *m)
{
    if (!m)
        return;
    free(m->e);
    free(m->text);
    free(m);
}

const char *http_mime_type(const struct http_mime *m, const char *name)
{
    const char *dot = strrchr(name, '.'), *slash = strrchr(name, '/');
    struct mime_entry key, *lo, *hit;

    if (!m || !dot || (slash && dot < slash) || dot[1] == '\0')
        return OCTET_STREAM;
    key.ext = dot + 1;
    hit = bsearch(&key, m->e, m->n, sizeof(*m->e), entry_cmp);
    if (!hit)
        return OCTET_STREAM;
    /* The first of equal keys: the file's first line for it. */
    for (lo = hit; lo > m->e && entry_cmp(lo - 1, &key) == 0; lo--)
        ;
    return lo->type;
}
