/*
 * http_file_cache.c - see http_file_cache.h. A table of chains by a hash
 * of (dirfd, resolve flags, path), and a list from the most recently
 * asked for to the least, whose tail goes first when the table is full.
 */
#include "httpd/http_file_cache.h"

#include <fcntl.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "weir/util.h"

/* Chains: twice the entries, a power of two. */
#define BUCKETS (2 * HTTP_FILE_CACHE_MAX)

struct http_file {
    struct http_file *chain; /* the bucket's next */
    struct weir_list lru;    /* most recently asked for first */
    uint64_t hash, resolve;
    int dirfd, fd;
    dev_t dev;
    ino_t ino;
    unsigned holds;
    bool kept; /* in the table; false: let go, closed at its last put */
    char path[];
};

struct http_file_cache {
    struct http_file *bucket[BUCKETS];
    struct weir_list lru; /* its tail goes first */
    unsigned n;
};

/* FNV-1a over the path, mixed with the rest of the key. */
static uint64_t key_hash(int dirfd, const char *path, uint64_t resolve)
{
    uint64_t h = 0xcbf29ce484222325ull ^ resolve ^ ((uint64_t)dirfd << 32);

    for (const unsigned char *p = (const unsigned char *)path; *p; p++)
        h = (h ^ *p) * 0x100000001b3ull;
    return h;
}

struct http_file_cache *http_file_cache_new(void)
{
    struct http_file_cache *fc = calloc(1, sizeof(*fc));

    if (fc)
        weir_list_init(&fc->lru);
    return fc;
}

static struct http_file *of_lru(struct weir_list *l)
{
    return weir_list_entry(l, struct http_file, lru);
}

/* Out of the table; closed now, or by the last hold's put. */
static void let_go(struct http_file_cache *fc, struct http_file *f)
{
    struct http_file **pp = &fc->bucket[f->hash & (BUCKETS - 1)];

    while (*pp != f)
        pp = &(*pp)->chain;
    *pp = f->chain;
    weir_list_remove(&f->lru);
    fc->n--;
    f->kept = false;
    if (!f->holds) {
        close(f->fd);
        free(f);
    }
}

bool http_file_cache_trim(struct http_file_cache *fc)
{
    bool any = !weir_list_empty(&fc->lru);

    while (!weir_list_empty(&fc->lru))
        let_go(fc, of_lru(fc->lru.next));
    return any;
}

void http_file_cache_free(struct http_file_cache *fc)
{
    if (!fc)
        return;
    http_file_cache_trim(fc);
    free(fc);
}

struct http_file *http_file_get(struct http_file_cache *fc, int dirfd,
                                const char *path, uint64_t resolve, int *fd,
                                struct stat *st)
{
    uint64_t h = key_hash(dirfd, path, resolve);
    struct http_file *f = fc->bucket[h & (BUCKETS - 1)];
    struct statx sx;

    while (f && !(f->hash == h && f->dirfd == dirfd && f->resolve == resolve &&
                  strcmp(f->path, path) == 0))
        f = f->chain;
    if (!f)
        return NULL;
    /* Where the path leads now. Not beneath-checked itself: only the
     * inode it names is compared with the one opened by the rules. */
    if (statx(dirfd, path, AT_NO_AUTOMOUNT,
              STATX_TYPE | STATX_MODE | STATX_INO | STATX_SIZE | STATX_MTIME,
              &sx) != 0 ||
        !S_ISREG(sx.stx_mode) || sx.stx_ino != f->ino ||
        makedev(sx.stx_dev_major, sx.stx_dev_minor) != f->dev) {
        let_go(fc, f);
        return NULL;
    }
    memset(st, 0, sizeof(*st));
    st->st_mode = sx.stx_mode;
    st->st_dev = f->dev;
    st->st_ino = f->ino;
    st->st_size = (off_t)sx.stx_size;
    st->st_mtim.tv_sec = sx.stx_mtime.tv_sec;
    st->st_mtim.tv_nsec = sx.stx_mtime.tv_nsec;
    weir_list_remove(&f->lru);
    weir_list_push_head(&fc->lru, &f->lru);
    f->holds++;
    *fd = f->fd;
    return f;
}

struct http_file *http_file_add(struct http_file_cache *fc, int dirfd,
                                const char *path, uint64_t resolve, int fd,
                                const struct stat *st)
{
    size_t len = strlen(path);
    struct http_file *f = malloc(sizeof(*f) + len + 1);

    if (!f)
        return NULL;
    if (fc->n >= HTTP_FILE_CACHE_MAX)
        let_go(fc, of_lru(fc->lru.prev));
    *f = (struct http_file){
        .hash = key_hash(dirfd, path, resolve),
        .resolve = resolve,
        .dirfd = dirfd,
        .fd = fd,
        .dev = st->st_dev,
        .ino = st->st_ino,
        .holds = 1,
        .kept = true,
    };
    memcpy(f->path, path, len + 1);
    f->chain = fc->bucket[f->hash & (BUCKETS - 1)];
    fc->bucket[f->hash & (BUCKETS - 1)] = f;
    weir_list_push_head(&fc->lru, &f->lru);
    fc->n++;
    return f;
}

void http_file_put(struct http_file_cache *fc, struct http_file *f)
{
    (void)fc;
    if (--f->holds == 0 && !f->kept) {
        close(f->fd);
        free(f);
    }
}
