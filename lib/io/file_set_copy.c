/*
 * file_set_copy.c - where the copies of a truncated file are.
 *
 * A copytruncate rotation copies a log to a file of its directory
 * (app.log.1, app.log-20261206) and cuts the log to 0. Whatever weir had
 * not read at the cut is in the copy, found by the head it had: its
 * fingerprint. When weir learns of cuts late (its events wait, or the
 * machine is loaded), the log may have been cut more than once meanwhile;
 * the head it had between two cuts was never seen, so the later copies
 * are found by when they were made instead: each copy is written after
 * the one before it, and a rename keeps a file's mtime.
 */
#include <dirent.h>
#include <fcntl.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "file_set_impl.h"

static uint64_t mtime_ns(const struct stat *st)
{
    return (uint64_t)st->st_mtim.tv_sec * 1000000000ull +
           (uint64_t)st->st_mtim.tv_nsec;
}

/* Calls fn for each regular file of f's directory that could be one of
 * its copies: not f, not compressed, not hidden, at least min bytes and
 * a fingerprint long. fn returns true to stop. */
static void each_candidate(const struct fs_set *s, const struct fs_file *f,
                           uint64_t min,
                           bool (*fn)(void *arg, const char *name,
                                      const char *full, const struct stat *st),
                           void *arg)
{
    char *dup = strdup(f->path), *dir, full[4096];
    const char *base = strrchr(f->path, '/') + 1;
    struct dirent *e;
    DIR *dp;

    if (!dup)
        return;
    dir = dirname(dup);
    dp = opendir(dir);
    if (!dp) {
        free(dup);
        return;
    }
    while ((e = readdir(dp))) {
        struct stat st;

        if (e->d_name[0] == '.' || strcmp(e->d_name, base) == 0 ||
            weir__fs_compressed(e->d_name) ||
            snprintf(full, sizeof(full), "%s/%s", dir, e->d_name) >=
                (int)sizeof(full) ||
            stat(full, &st) != 0 || !S_ISREG(st.st_mode) ||
            (uint64_t)st.st_ino == f->ino || (uint64_t)st.st_size < min ||
            (uint64_t)st.st_size < s->o.fingerprint_len)
            continue;
        if (fn(arg, e->d_name, full, &st))
            break;
    }
    closedir(dp);
    free(dup);
}

struct by_head {
    uint32_t len;
    uint64_t fp, size;
    int fd;
    char *path;
};

static bool take_by_head(void *arg, const char *name, const char *full,
                         const struct stat *st)
{
    struct by_head *h = arg;
    int fd = open(full, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);

    (void)name;
    (void)st;
    if (fd < 0)
        return false;
    if (weir__fs_fingerprint(fd, h->len) == h->fp) {
        struct stat now;

        if (fstat(fd, &now) == 0) {
            h->fd = fd;
            h->size = (uint64_t)now.st_size;
            h->path = strdup(full);
            return true;
        }
    }
    close(fd);
    return false;
}

int weir__fs_find_copy(const struct fs_set *s, const struct fs_file *f,
                       uint64_t fp, uint64_t min, uint64_t *size, char **path)
{
    struct by_head h = {.len = s->o.fingerprint_len, .fp = fp, .fd = -1};

    if (!fp)
        return -1;
    each_candidate(s, f, min, take_by_head, &h);
    if (h.fd >= 0)
        *size = h.size;
    if (path)
        *path = h.path;
    else
        free(h.path);
    return h.fd;
}

struct by_time {
    const char *base;
    size_t base_len;
    uint64_t after, before, skip_ino;
    uint64_t best_mtime;
    char best[4096];
};

static bool take_by_time(void *arg, const char *name, const char *full,
                         const struct stat *st)
{
    struct by_time *t = arg;
    uint64_t m = mtime_ns(st);

    /* Named after the log, as rotations name their copies; made after
     * the copy before it and before the cut weir saw last; the earliest
     * such is the next. */
    if (strncmp(name, t->base, t->base_len) != 0 ||
        (uint64_t)st->st_ino == t->skip_ino || m < t->after || m > t->before ||
        (t->best[0] && m >= t->best_mtime))
        return false;
    snprintf(t->best, sizeof(t->best), "%s", full);
    t->best_mtime = m;
    return false;
}

int weir__fs_find_later_copy(const struct fs_set *s, const struct fs_file *f,
                             const struct stat *copy, uint64_t before,
                             uint64_t head_now, uint64_t *size, uint64_t *fp,
                             char **path)
{
    const char *base = strrchr(f->path, '/') + 1;
    struct by_time t = {
        .base = base,
        .base_len = strlen(base),
        .after = mtime_ns(copy),
        .before = before,
        .skip_ino = (uint64_t)copy->st_ino,
    };
    struct stat st;
    int fd;

    each_candidate(s, f, 0, take_by_time, &t);
    if (!t.best[0])
        return -1;
    fd = open(t.best, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
    if (fd < 0)
        return -1;
    *fp = weir__fs_fingerprint(fd, s->o.fingerprint_len);
    /* A copy of what f holds now is the next cut's, found by its head
     * (fs_cut_again), not one missed. */
    if (!*fp || *fp == head_now || fstat(fd, &st) != 0) {
        close(fd);
        return -1;
    }
    *size = (uint64_t)st.st_size;
    if (path)
        *path = strdup(t.best);
    return fd;
}

/* ---- the copies waiting to be read ---- */

bool weir__fs_copy_push(struct fs_set *s, struct fs_file *f, int fd,
                        uint64_t size, uint64_t fp, uint64_t lost_mark)
{
    struct fs_copy *c, **tail = &f->waiting;

    if (f->nwaiting >= FS_COPIES_WAITING || !(c = malloc(sizeof(*c))))
        return false;
    *c = (struct fs_copy){
        .of = f, .fd = fd, .size = size, .fp = fp, .lost_mark = lost_mark};
    if (fp && weir__fs_map_add(&s->next_map, &c->by_fp, fp) == 0)
        c->in_map = true;
    while (*tail)
        tail = &(*tail)->next;
    *tail = c;
    f->nwaiting++;
    s->nopen++;
    return true;
}

/* The oldest copy waiting, out of the queue; its descriptor is the
 * caller's (still counted in s->nopen), the rest freed with free(). */
struct fs_copy *weir__fs_copy_pop(struct fs_set *s, struct fs_file *f)
{
    struct fs_copy *c = f->waiting;

    if (!c)
        return NULL;
    f->waiting = c->next;
    f->nwaiting--;
    if (c->in_map)
        weir__fs_map_del(&s->next_map, &c->by_fp);
    c->in_map = false;
    return c;
}

void weir__fs_copies_free(struct fs_set *s, struct fs_file *f)
{
    struct fs_copy *c;

    while ((c = weir__fs_copy_pop(s, f))) {
        close(c->fd);
        s->nopen--;
        free(c);
    }
}
