/*
 * http_index.c - see http_index.h. The directory is read whole (up to
 * HTTP_INDEX_MAX entries), each entry looked at with fstatat without
 * following it; a symlink is opened beneath the root as a request for it
 * would be, so that the listing shows what a click on it would serve.
 */
#include "httpd/http_index.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <linux/openat2.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "httpd/http_path.h"

struct entry {
    char *name;
    bool dir;
    uint64_t size;
    int64_t mtime;
};

/* The page as it grows; a failed growth is remembered, not reported at
 * every append. */
struct page {
    char *p;
    size_t len, cap;
    bool failed;
};

static void grow(struct page *pg, size_t more)
{
    size_t cap = pg->cap ? pg->cap : 4096;
    char *p;

    while (cap - pg->len < more)
        cap *= 2;
    if (cap == pg->cap)
        return;
    p = realloc(pg->p, cap);
    if (!p) {
        pg->failed = true;
        return;
    }
    pg->p = p;
    pg->cap = cap;
}

static void put_bytes(struct page *pg, const char *s, size_t n)
{
    grow(pg, n + 1);
    if (pg->failed)
        return;
    memcpy(pg->p + pg->len, s, n);
    pg->len += n;
}

__attribute__((format(printf, 2, 3))) static void put(struct page *pg,
                                                      const char *fmt, ...)
{
    va_list ap;
    int k;

    va_start(ap, fmt);
    k = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (k < 0)
        return;
    grow(pg, (size_t)k + 1);
    if (pg->failed)
        return;
    va_start(ap, fmt);
    vsnprintf(pg->p + pg->len, (size_t)k + 1, fmt, ap);
    va_end(ap);
    pg->len += (size_t)k;
}

/* Text, with the five characters HTML gives a meaning escaped. */
static void put_escaped(struct page *pg, const char *s)
{
    for (; *s; s++) {
        switch (*s) {
        case '&':
            put_bytes(pg, "&amp;", 5);
            break;
        case '<':
            put_bytes(pg, "&lt;", 4);
            break;
        case '>':
            put_bytes(pg, "&gt;", 4);
            break;
        case '"':
            put_bytes(pg, "&quot;", 6);
            break;
        case '\'':
            put_bytes(pg, "&#39;", 5);
            break;
        default:
            put_bytes(pg, s, 1);
        }
    }
}

size_t http_index_encode(const char *s, size_t n, char *out)
{
    static const char hexd[] = "0123456789ABCDEF";
    size_t k = 0;

    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];

        if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
            (c >= '0' && c <= '9') || c == '-' || c == '.' || c == '_' ||
            c == '~') {
            out[k++] = (char)c;
        } else {
            out[k++] = '%';
            out[k++] = hexd[c >> 4];
            out[k++] = hexd[c & 15];
        }
    }
    out[k] = '\0';
    return k;
}

/* What a symlink named name in the listed directory leads to, opened
 * beneath the root as a request for it would be. */
static int stat_link(const struct http_index_options *o, const char *name,
                     struct stat *st)
{
    char path[HTTP_PATH_MAX];
    struct open_how how = {
        .flags = O_PATH | O_CLOEXEC,
        .resolve =
            RESOLVE_NO_MAGICLINKS | (o->follow_symlinks ? 0 : RESOLVE_BENEATH),
    };
    int n = snprintf(path, sizeof(path), "%s%s%s", o->rel, o->rel[0] ? "/" : "",
                     name);
    int fd, rc;

    if (n < 0 || (size_t)n >= sizeof(path))
        return -ENAMETOOLONG;
    fd = (int)syscall(SYS_openat2, o->root_fd, path, &how, sizeof(how));
    if (fd < 0)
        return -errno;
    rc = fstat(fd, st) == 0 ? 0 : -errno;
    close(fd);
    return rc;
}

/* The entry for name, or false when the listing leaves it out. */
static bool look(const struct http_index_options *o, int dfd, const char *name,
                 struct entry *e)
{
    struct stat st;

    if (name[0] == '.' &&
        (!o->dotfiles || !name[1] || (name[1] == '.' && !name[2])))
        return false;
    if (fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW) != 0)
        return false;
    if (S_ISLNK(st.st_mode) && stat_link(o, name, &st) != 0)
        return false;
    if (!S_ISREG(st.st_mode) && !S_ISDIR(st.st_mode))
        return false; /* a device, a FIFO, a socket: never served */
    e->dir = S_ISDIR(st.st_mode);
    e->size = (uint64_t)st.st_size;
    e->mtime = (int64_t)st.st_mtim.tv_sec;
    e->name = strdup(name);
    return e->name != NULL;
}

static int by_kind_then_name(const void *a, const void *b)
{
    const struct entry *x = a, *y = b;

    if (x->dir != y->dir)
        return x->dir ? -1 : 1;
    return strcmp(x->name, y->name);
}

/* Reads up to HTTP_INDEX_MAX entries; *more tells of the rest. */
static int read_dir(const struct http_index_options *o, struct entry **out,
                    size_t *n, bool *more)
{
    int dfd = fcntl(o->dir_fd, F_DUPFD_CLOEXEC, 0);
    struct entry *v = NULL;
    size_t cap = 0;
    struct dirent *d;
    DIR *dir;

    *n = 0;
    *more = false;
    if (dfd < 0)
        return -errno;
    dir = fdopendir(dfd);
    if (!dir) {
        close(dfd);
        return -errno;
    }
    rewinddir(dir);
    while ((d = readdir(dir)) != NULL) {
        if (*n == cap) {
            size_t nc = cap ? cap * 2 : 64;
            struct entry *nv = realloc(v, nc * sizeof(*v));

            if (!nv)
                break;
            v = nv;
            cap = nc;
        }
        if (*n == HTTP_INDEX_MAX) {
            *more = true;
            break;
        }
        if (look(o, dirfd(dir), d->d_name, &v[*n]))
            (*n)++;
    }
    closedir(dir);
    *out = v;
    return 0;
}

static void put_entry(struct page *pg, const struct entry *e)
{
    size_t n = strlen(e->name);
    char *href = malloc(3 * n + 1);
    char when[32];
    time_t t = (time_t)e->mtime;
    struct tm tm;

    if (!href) {
        pg->failed = true;
        return;
    }
    http_index_encode(e->name, n, href);
    gmtime_r(&t, &tm);
    strftime(when, sizeof(when), "%Y-%m-%d %H:%M", &tm);
    put(pg, "<tr><td><a href=\"%s%s\">", href, e->dir ? "/" : "");
    put_escaped(pg, e->name);
    put(pg, "%s</a></td><td>", e->dir ? "/" : "");
    if (e->dir)
        put(pg, "-");
    else
        put(pg, "%" PRIu64, e->size);
    put(pg, "</td><td>%s</td></tr>\n", when);
    free(href);
}

int http_index_page(const struct http_index_options *o, char **out, size_t *len)
{
    struct page pg = {0};
    struct entry *v = NULL;
    size_t n = 0;
    bool more;
    int rc = read_dir(o, &v, &n, &more);

    *out = NULL;
    *len = 0;
    if (rc)
        return rc;
    qsort(v, n, sizeof(*v), by_kind_then_name);
    put(&pg, "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\">"
             "<title>Index of /");
    put_escaped(&pg, o->rel);
    put(&pg, "%s</title></head>\n<body><h1>Index of /", o->rel[0] ? "/" : "");
    put_escaped(&pg, o->rel);
    put(&pg,
        "%s</h1>\n<table>\n<tr><th>Name</th><th>Size</th>"
        "<th>Modified (UTC)</th></tr>\n",
        o->rel[0] ? "/" : "");
    if (o->rel[0])
        put(&pg, "<tr><td><a href=\"../\">../</a></td><td></td><td></td>"
                 "</tr>\n");
    for (size_t i = 0; i < n; i++)
        put_entry(&pg, &v[i]);
    put(&pg, "</table>\n");
    if (more)
        put(&pg, "<p>Only the first %d entries are listed.</p>\n",
            HTTP_INDEX_MAX);
    put(&pg, "</body></html>\n");
    for (size_t i = 0; i < n; i++)
        free(v[i].name);
    free(v);
    if (pg.failed) {
        free(pg.p);
        return -ENOMEM;
    }
    *out = pg.p;
    *len = pg.len;
    return 0;
}
