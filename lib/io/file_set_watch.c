/*
 * file_set_watch.c - the directories a file set's patterns reach, and
 * inotify on them.
 *
 * One inotify instance per set, watching directories, not files: a
 * directory's watch reports what happens to every name in it (created,
 * moved in or out, deleted, written), so a set of 10,000 files costs a
 * watch per directory and no descriptor per idle file. The instance's fd
 * is waited on with a poll op of the loop (either engine), then read here
 * without blocking.
 *
 * Where inotify is not to be had (no instance or watch left: EMFILE,
 * ENOSPC), or its queue overflowed and events were lost, the kind is told
 * through hooks.no_inotify and rescans on a timer from then on.
 */
#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <unistd.h>

#include "file_set_impl.h"

#define FS_DIR_MASK                                                            \
    (IN_CREATE | IN_MOVED_TO | IN_MOVED_FROM | IN_DELETE | IN_MODIFY |         \
     IN_CLOSE_WRITE | IN_DELETE_SELF | IN_MOVE_SELF | IN_ONLYDIR)

static void fs_watch_arm(struct fs_set *s);

static void fs_watch_lost(struct fs_set *s, int err)
{
    if (s->hooks.no_inotify)
        s->hooks.no_inotify(s, err);
}

static void fs_dir_forget_wd(struct fs_set *s, int wd)
{
    if (wd >= 0 && (size_t)wd < s->cap_wd && s->by_wd[wd]) {
        s->by_wd[wd]->wd = -1;
        s->by_wd[wd]->gone = true;
        s->by_wd[wd] = NULL;
    }
}

static void fs_watch_events(struct fs_set *s)
{
    /* Aligned for struct inotify_event, as inotify(7) asks. */
    char buf[16384] __attribute__((aligned(__alignof__(struct inotify_event))));

    for (;;) {
        ssize_t n = read(s->ifd, buf, sizeof(buf));

        if (n <= 0)
            return;
        for (char *p = buf; p < buf + n;) {
            const struct inotify_event *ev = (const void *)p;
            struct fs_dir *d = NULL;

            p += sizeof(*ev) + ev->len;
            if (ev->mask & IN_Q_OVERFLOW) {
                fs_watch_lost(s, -EOVERFLOW);
                continue;
            }
            if (ev->wd >= 0 && (size_t)ev->wd < s->cap_wd)
                d = s->by_wd[ev->wd];
            if (!d)
                continue;
            if (ev->mask & (IN_IGNORED | IN_DELETE_SELF | IN_MOVE_SELF)) {
                if (ev->mask & IN_IGNORED)
                    fs_dir_forget_wd(s, ev->wd);
                else
                    d->gone = true;
                continue;
            }
            if (ev->len && s->hooks.event)
                s->hooks.event(s, d, ev->name, ev->mask, ev->cookie);
            if (s->ep.destroyed || s->ended)
                return;
        }
    }
}

static void fs_watch_ready(struct weir_op *op, int res, uint32_t flags)
{
    struct fs_set *s = EP_CONTAINER(op, struct fs_set, ipoll);

    (void)flags;
    if (weir__ep_op_done(&s->ep) || s->ended || res == -ECANCELED)
        return;
    if (res < 0) {
        fs_watch_lost(s, res);
        return;
    }
    fs_watch_events(s);
    if (!s->ep.destroyed && !s->ended && s->hooks.events_done)
        s->hooks.events_done(s);
    if (!s->ep.destroyed && !s->ended)
        fs_watch_arm(s);
}

static void fs_watch_arm(struct fs_set *s)
{
    int rc;

    if (s->ifd < 0 || s->ipoll.pending)
        return;
    s->ipoll.fn = fs_watch_ready;
    rc = weir_loop_poll(s->ep.loop, &s->ipoll, s->ifd, POLLIN);
    if (rc == 0)
        ep_op_started(&s->ep);
    else
        /* The submission queue is full: the tick arms it again. */
        s->ipoll_failed = true;
}

int weir__fs_watch_start(struct fs_set *s)
{
    s->ifd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
    if (s->ifd < 0) {
        fs_watch_lost(s, -errno);
        return -errno;
    }
    fs_watch_arm(s);
    return 0;
}

void weir__fs_watch_rearm(struct fs_set *s)
{
    if (s->ipoll_failed && !s->ended) {
        s->ipoll_failed = false;
        fs_watch_arm(s);
    }
}

struct fs_dir *weir__fs_dir_find(struct fs_set *s, const char *path)
{
    uint64_t key = weir__fs_path_key(path);

    for (struct fs_link *l = weir__fs_map_find(&s->dir_map, key); l;
         l = l->next) {
        struct fs_dir *d = EP_CONTAINER(l, struct fs_dir, by_path);

        if (l->key == key && strcmp(d->path, path) == 0)
            return d;
    }
    return NULL;
}

static int fs_watch_add(struct fs_set *s, struct fs_dir *d)
{
    int wd;

    if (s->ifd < 0)
        return 0;
    wd = inotify_add_watch(s->ifd, d->path, FS_DIR_MASK);
    if (wd < 0) {
        int err = -errno;

        if (err == -ENOSPC || err == -EMFILE || err == -ENOMEM)
            fs_watch_lost(s, err);
        return err;
    }
    if ((size_t)wd >= s->cap_wd) {
        size_t cap = s->cap_wd ? s->cap_wd : 64;
        struct fs_dir **b;

        while (cap <= (size_t)wd)
            cap *= 2;
        b = realloc(s->by_wd, cap * sizeof(*b));
        if (!b) {
            inotify_rm_watch(s->ifd, wd);
            return -ENOMEM;
        }
        memset(b + s->cap_wd, 0, (cap - s->cap_wd) * sizeof(*b));
        s->by_wd = b;
        s->cap_wd = cap;
    }
    /* The same directory by another name: inotify gave the same wd. */
    if (s->by_wd[wd] && s->by_wd[wd] != d)
        return 0;
    s->by_wd[wd] = d;
    d->wd = wd;
    return 0;
}

struct fs_dir *weir__fs_dir_add(struct fs_set *s, const char *path,
                                const struct stat *st)
{
    struct fs_dir *d = weir__fs_dir_find(s, path);

    if (d) {
        if (!d->gone)
            return NULL;
        /* Made again under the same name. */
        d->gone = false;
        d->dev = st->st_dev;
        d->ino = st->st_ino;
        d->mtime_ns = -1;
        fs_watch_add(s, d);
        return d;
    }
    if (s->ndirs == s->cap_dirs) {
        size_t cap = s->cap_dirs ? s->cap_dirs * 2 : 16;
        struct fs_dir **b = realloc(s->dirs, cap * sizeof(*b));

        if (!b)
            return NULL;
        s->dirs = b;
        s->cap_dirs = cap;
    }
    d = calloc(1, sizeof(*d));
    if (!d || !(d->path = strdup(path)) ||
        weir__fs_map_add(&s->dir_map, &d->by_path, weir__fs_path_key(path))) {
        if (d)
            free(d->path);
        free(d);
        return NULL;
    }
    d->wd = -1;
    d->dev = st->st_dev;
    d->ino = st->st_ino;
    d->mtime_ns = -1;
    s->dirs[s->ndirs++] = d;
    fs_watch_add(s, d);
    return d;
}

void weir__fs_watch_stop(struct fs_set *s)
{
    if (s->ipoll.pending)
        weir_loop_cancel(s->ep.loop, &s->ipoll);
}

void weir__fs_dirs_free(struct fs_set *s)
{
    for (size_t i = 0; i < s->ndirs; i++) {
        free(s->dirs[i]->path);
        free(s->dirs[i]);
    }
    free(s->dirs);
    free(s->by_wd);
    weir__fs_map_free(&s->dir_map);
    if (s->ifd >= 0)
        close(s->ifd);
    s->ifd = -1;
}
