/*
 * file_set_watch.c - the directories a file set's patterns reach, and
 * inotify on them.
 *
 * inotify watches directories, not files: a directory's watch reports
 * what happens to every name in it (created, moved in or out, deleted,
 * written), so a set of 10,000 files costs a watch per directory and no
 * descriptor per idle file. Each instance's fd is waited on with a poll
 * op of the loop (either engine), then read here without blocking.
 *
 * Two instances, because the two kinds of news differ in urgency. Names
 * (a file made, renamed, deleted: a rotation) are read as they come: a
 * rotation's copy may be compressed and gone moments later. Writes come
 * once per line a program writes, and what they say is only "look at
 * its size": they are read once per settle period, so ten files written
 * a hundred times a second wake the loop twenty times, not a thousand.
 * Whenever names are read, the writes waiting are read after them. A
 * write's event names the file by the name it had then; read after the
 * renames that followed it, it makes weir look at whatever has that name
 * now, which costs a look and changes nothing (what is looked at is its
 * size, and rotated files are looked at on the tick anyway). Read before
 * them, it would be taken for news of the file that had the name.
 * For a settle period after names were read, writes are read as they
 * come: a rotation is under way, and its cut (a copytruncate's) is a
 * write that is wanted before the copy can go.
 *
 * Where the second instance cannot be had (max_user_instances), the first
 * takes the writes too, and they are read as they come.
 *
 * Where inotify is not to be had (no instance or watch left: EMFILE,
 * ENOSPC), or a queue overflowed and events were lost, the kind is told
 * through hooks.no_inotify and rescans on a timer from then on.
 */
#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <unistd.h>

#include "file_set_impl.h"

static const uint32_t fs_mask[FS_INOTIFY_KINDS] = {
    [FS_NAMES] = IN_CREATE | IN_MOVED_TO | IN_MOVED_FROM | IN_DELETE |
                 IN_DELETE_SELF | IN_MOVE_SELF | IN_ONLYDIR,
    [FS_WRITES] = IN_MODIFY | IN_CLOSE_WRITE | IN_ONLYDIR,
};

static void fs_watch_arm(struct fs_set *s, enum fs_inotify_kind k);

static uint64_t fs_now_ns(void)
{
    return weir__fs_clock(CLOCK_MONOTONIC);
}

static void fs_watch_lost(struct fs_set *s, int err)
{
    if (s->hooks.no_inotify)
        s->hooks.no_inotify(s, err);
}

static void fs_dir_forget_wd(struct fs_set *s, enum fs_inotify_kind k, int wd)
{
    struct fs_inotify *in = &s->inotify[k];

    if (wd >= 0 && (size_t)wd < in->cap_wd && in->by_wd[wd]) {
        in->by_wd[wd]->wd[k] = -1;
        in->by_wd[wd]->gone = true;
        in->by_wd[wd] = NULL;
    }
}

/* Reads what instance k has, without waiting; false when the set ended
 * or was destroyed under a hook. */
static bool fs_watch_events(struct fs_set *s, enum fs_inotify_kind k)
{
    /* Aligned for struct inotify_event, as inotify(7) asks. */
    char buf[16384] __attribute__((aligned(__alignof__(struct inotify_event))));
    struct fs_inotify *in = &s->inotify[k];

    if (in->fd < 0)
        return true;
    for (;;) {
        ssize_t n = read(in->fd, buf, sizeof(buf));

        if (n <= 0)
            return true;
        for (char *p = buf; p < buf + n;) {
            const struct inotify_event *ev = (const void *)p;
            struct fs_dir *d = NULL;

            p += sizeof(*ev) + ev->len;
            if (ev->mask & IN_Q_OVERFLOW) {
                fs_watch_lost(s, -EOVERFLOW);
                continue;
            }
            if (ev->wd >= 0 && (size_t)ev->wd < in->cap_wd)
                d = in->by_wd[ev->wd];
            if (!d)
                continue;
            if (ev->mask & (IN_IGNORED | IN_DELETE_SELF | IN_MOVE_SELF)) {
                if (ev->mask & IN_IGNORED)
                    fs_dir_forget_wd(s, k, ev->wd);
                else
                    d->gone = true;
                continue;
            }
            if (ev->len && s->hooks.event)
                s->hooks.event(s, d, ev->name, ev->mask, ev->cookie);
            if (s->ep.destroyed || s->ended)
                return false;
        }
    }
}

static bool fs_watch_done(struct fs_set *s)
{
    if (!s->ep.destroyed && !s->ended && s->hooks.events_done)
        s->hooks.events_done(s);
    return !s->ep.destroyed && !s->ended;
}

static void fs_names_ready(struct weir_op *op, int res, uint32_t flags)
{
    struct fs_set *s = EP_CONTAINER(op, struct fs_set, inotify[FS_NAMES].poll);

    (void)flags;
    if (weir__ep_op_done(&s->ep) || s->ended || res == -ECANCELED)
        return;
    if (res < 0) {
        fs_watch_lost(s, res);
        return;
    }
    if (!fs_watch_events(s, FS_NAMES) || !fs_watch_events(s, FS_WRITES) ||
        !fs_watch_done(s))
        return;
    fs_watch_arm(s, FS_NAMES);
    /* A rotation is under way: its cut and its copy's bytes come as
     * writes, and are wanted as soon as they come. */
    s->writes_prompt_until = fs_now_ns() + s->o.settle_ns;
    if (s->iwait.op.pending) {
        weir_loop_timer_stop(s->ep.loop, &s->iwait);
        fs_watch_arm(s, FS_WRITES);
    }
}

static void fs_writes_waited(struct weir_op *op, int res, uint32_t flags)
{
    struct fs_set *s = EP_CONTAINER(op, struct fs_set, iwait.op);

    (void)flags;
    if (weir__ep_op_done(&s->ep) || s->ended || res == -ECANCELED)
        return;
    fs_watch_arm(s, FS_WRITES);
}

static void fs_writes_ready(struct weir_op *op, int res, uint32_t flags)
{
    struct fs_set *s = EP_CONTAINER(op, struct fs_set, inotify[FS_WRITES].poll);

    (void)flags;
    if (weir__ep_op_done(&s->ep) || s->ended || res == -ECANCELED)
        return;
    if (res < 0) {
        fs_watch_lost(s, res);
        return;
    }
    if (!fs_watch_events(s, FS_WRITES) || !fs_watch_done(s))
        return;
    if (!s->o.settle_ns || s->o.once || s->iwait.op.pending ||
        fs_now_ns() < s->writes_prompt_until) {
        fs_watch_arm(s, FS_WRITES);
        return;
    }
    s->iwait.op.fn = fs_writes_waited;
    if (weir_loop_timer_start(s->ep.loop, &s->iwait, s->o.settle_ns) == 0)
        ep_op_started(&s->ep);
    else
        fs_watch_arm(s, FS_WRITES);
}

static void fs_watch_arm(struct fs_set *s, enum fs_inotify_kind k)
{
    struct fs_inotify *in = &s->inotify[k];

    if (in->fd < 0 || in->poll.pending)
        return;
    in->poll.fn = k == FS_NAMES ? fs_names_ready : fs_writes_ready;
    if (weir_loop_poll(s->ep.loop, &in->poll, in->fd, POLLIN) == 0)
        ep_op_started(&s->ep);
    else
        /* The submission queue is full: the tick arms it again. */
        in->poll_failed = true;
}

int weir__fs_watch_start(struct fs_set *s)
{
    s->inotify[FS_NAMES].fd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
    if (s->inotify[FS_NAMES].fd < 0) {
        int err = -errno;

        fs_watch_lost(s, err);
        return err;
    }
    /* Without a second instance (max_user_instances reached), the first
     * takes the writes too, read as they come: dearer, nothing missed. */
    s->inotify[FS_WRITES].fd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
    for (int k = 0; k < FS_INOTIFY_KINDS; k++)
        fs_watch_arm(s, (enum fs_inotify_kind)k);
    return 0;
}

void weir__fs_watch_rearm(struct fs_set *s)
{
    for (int k = 0; k < FS_INOTIFY_KINDS; k++)
        if (s->inotify[k].poll_failed && !s->ended) {
            s->inotify[k].poll_failed = false;
            fs_watch_arm(s, (enum fs_inotify_kind)k);
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

static int fs_watch_add_one(struct fs_set *s, struct fs_dir *d,
                            enum fs_inotify_kind k)
{
    struct fs_inotify *in = &s->inotify[k];
    uint32_t mask;
    int wd;

    if (in->fd < 0)
        return 0;
    mask = fs_mask[k];
    if (k == FS_NAMES && s->inotify[FS_WRITES].fd < 0)
        mask |= fs_mask[FS_WRITES];
    wd = inotify_add_watch(in->fd, d->path, mask);
    if (wd < 0) {
        int err = -errno;

        if (err == -ENOSPC || err == -EMFILE || err == -ENOMEM)
            fs_watch_lost(s, err);
        return err;
    }
    if ((size_t)wd >= in->cap_wd) {
        size_t cap = in->cap_wd ? in->cap_wd : 64;
        struct fs_dir **b;

        while (cap <= (size_t)wd)
            cap *= 2;
        b = realloc(in->by_wd, cap * sizeof(*b));
        if (!b) {
            inotify_rm_watch(in->fd, wd);
            return -ENOMEM;
        }
        memset(b + in->cap_wd, 0, (cap - in->cap_wd) * sizeof(*b));
        in->by_wd = b;
        in->cap_wd = cap;
    }
    /* The same directory by another name: inotify gave the same wd. */
    if (in->by_wd[wd] && in->by_wd[wd] != d)
        return 0;
    in->by_wd[wd] = d;
    d->wd[k] = wd;
    return 0;
}

static void fs_watch_add(struct fs_set *s, struct fs_dir *d)
{
    for (int k = 0; k < FS_INOTIFY_KINDS; k++)
        if (fs_watch_add_one(s, d, (enum fs_inotify_kind)k) != 0)
            return;
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
    d->wd[FS_NAMES] = d->wd[FS_WRITES] = -1;
    d->dev = st->st_dev;
    d->ino = st->st_ino;
    d->mtime_ns = -1;
    s->dirs[s->ndirs++] = d;
    fs_watch_add(s, d);
    return d;
}

void weir__fs_watch_stop(struct fs_set *s)
{
    for (int k = 0; k < FS_INOTIFY_KINDS; k++)
        if (s->inotify[k].poll.pending)
            weir_loop_cancel(s->ep.loop, &s->inotify[k].poll);
    if (s->iwait.op.pending)
        weir_loop_timer_stop(s->ep.loop, &s->iwait);
}

void weir__fs_dirs_free(struct fs_set *s)
{
    for (size_t i = 0; i < s->ndirs; i++) {
        free(s->dirs[i]->path);
        free(s->dirs[i]);
    }
    free(s->dirs);
    weir__fs_map_free(&s->dir_map);
    for (int k = 0; k < FS_INOTIFY_KINDS; k++) {
        free(s->inotify[k].by_wd);
        s->inotify[k].by_wd = NULL;
        if (s->inotify[k].fd >= 0)
            close(s->inotify[k].fd);
        s->inotify[k].fd = -1;
    }
}
