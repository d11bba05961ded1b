/*
 * endpoint_file_set.c - the file-set source (weir/file_set.h): every file
 * a set of patterns names, now and later, read as records into one
 * stream.
 *
 * One read in flight per set, through the loop's read op (either engine;
 * on epoll a read that would wait for the disk goes to its I/O threads),
 * into a pool buffer; the file's framer cuts it into records, which are
 * copied into output buffers holding that file's records only
 * (file_set_emit.c), each
 * chunk's end and the file's offset behind it noted in the ledger
 * (file_set_ack.c). Reading happens only on the stream's pull, so a slow
 * sink slows every file, and the next file read is the one with unread
 * bytes whose last read is oldest (the ready queue), so that a busy file
 * cannot starve a quiet one.
 *
 * What happens to files is learnt from inotify on their directories
 * (file_set_watch.c) and a tick: the tick looks at files that no event
 * can tell about (renamed out of the watched directories, deleted and
 * still open), flushes lines held past line_timeout, closes files quiet
 * for idle_close, finishes rotated ones quiet for rotate_wait, and runs
 * the rescans (file_set_scan.c).
 *
 * Identity. A name's file is its device and inode while it is open or
 * named; its fingerprint (file_set_ident.c) decides across a close and
 * reopen, and finds a copytruncate's copy. A new inode under a known name
 * is a new file (resume is asked where it starts); the old one is rotated
 * and read to its end through the descriptor kept open.
 *
 * Truncation of a file at offset R: the copy (same fingerprint, another
 * inode, in the same directory, at least R bytes) is read from R to its
 * end as the rest of that file, then the file from 0. Without a copy, the
 * bytes between R and the size last seen are reported lost (what came
 * after that size cannot be known).
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <time.h>
#include <stddef.h>
#include <unistd.h>

#include "file_set_impl.h"

#define FS_MS (1000ull * 1000ull)
/* How often the tick looks at every file known, not only the open ones:
 * a closed file renamed away and a closed file's held line are timed to
 * this (rotate_wait and line_timeout are seconds by default). */
#define FS_WALK_NS (1000 * FS_MS)
/* Fewer new bytes than this in a file wait out the settle period. */
#define FS_SETTLE_BYTES (16u * 1024u)

static const struct ep_ops file_set_ops;

static struct fs_set *fs_of(struct weir_endpoint *ep)
{
    return EP_CONTAINER(ep, struct fs_set, ep);
}

static uint64_t fs_now(void)
{
    return weir__fs_clock(CLOCK_MONOTONIC);
}

static void fs_event(struct fs_set *s, enum weir_file_set_event ev,
                     const char *path, int err, uint64_t off)
{
    /* Every change of a file's state comes with an event: the tick's
     * walk of every file is due again. */
    s->walk_due = true;
    if (s->o.on_event)
        s->o.on_event(s->o.event_arg, ev, path, err, off);
}

static void fs_produce(struct fs_set *s);

/* f is to be looked at (fs_refresh): by whoever holds it next, or by the
 * tick's walk when it is closed. */
static void fs_look(struct fs_set *s, struct fs_file *f)
{
    f->check = true;
    s->walk_due = true;
}

/* ---- the table of files ---- */

static struct fs_file *fs_find_path(struct fs_set *s, const char *path)
{
    uint64_t key = weir__fs_path_key(path);

    for (struct fs_link *l = weir__fs_map_find(&s->path_map, key); l;
         l = l->next) {
        struct fs_file *f = EP_CONTAINER(l, struct fs_file, by_path);

        if (l->key == key && strcmp(f->path, path) == 0)
            return f;
    }
    return NULL;
}

static struct fs_file *fs_find_ino(struct fs_set *s, uint64_t dev, uint64_t ino)
{
    uint64_t key = fs_ino_key(dev, ino);

    for (struct fs_link *l = weir__fs_map_find(&s->ino_map, key); l;
         l = l->next) {
        struct fs_file *f = EP_CONTAINER(l, struct fs_file, by_ino);

        if (l->key == key && f->dev == dev && f->ino == ino)
            return f;
    }
    return NULL;
}

/* g is another file of f's directory, still followed. */
static bool fs_dir_mate(const struct fs_file *g, const struct fs_file *f)
{
    size_t dlen = (size_t)(strrchr(f->path, '/') - f->path);

    return g != f && !g->done && strncmp(g->path, f->path, dlen + 1) == 0 &&
           !strchr(g->path + dlen + 1, '/');
}

/* A known file of f's directory, not a copy itself, linked in map m under
 * key fp (the link is the member at offset off of struct fs_file). */
static bool fs_same_dir_in(struct fs_map *m, size_t off, uint64_t fp,
                           const struct fs_file *f)
{
    for (struct fs_link *l = weir__fs_map_find(m, fp); l; l = l->next) {
        struct fs_file *g = (struct fs_file *)(void *)((char *)l - off);

        if (l->key == fp && !g->alias && fs_dir_mate(g, f))
            return true;
    }
    return false;
}

/* f has the head of a copy waiting to be read as a file's of f's
 * directory: it is that copy (or a copy of it). */
static bool fs_copy_waits(struct fs_set *s, const struct fs_file *f)
{
    for (struct fs_link *l = weir__fs_map_find(&s->next_map, f->fp); l;
         l = l->next)
        if (l->key == f->fp &&
            fs_dir_mate(EP_CONTAINER(l, struct fs_copy, by_fp)->of, f))
            return true;
    return false;
}

/* f is a copy of a file of its directory: it has that file's head, or the
 * head of what a file being cut holds now (the copy of the next cut) or
 * held between two cuts (a copy waiting to be read). */
static bool fs_same_dir_fp(struct fs_set *s, const struct fs_file *f)
{
    return fs_same_dir_in(&s->fp_map, offsetof(struct fs_file, by_fp), f->fp,
                          f) ||
           fs_same_dir_in(&s->cut_map, offsetof(struct fs_file, by_cut), f->fp,
                          f) ||
           fs_copy_waits(s, f);
}

static void fs_unname(struct fs_set *s, struct fs_file *f)
{
    if (f->in_path)
        weir__fs_map_del(&s->path_map, &f->by_path);
    f->in_path = false;
}

static void fs_unino(struct fs_set *s, struct fs_file *f)
{
    if (f->in_ino)
        weir__fs_map_del(&s->ino_map, &f->by_ino);
    f->in_ino = false;
}

static void fs_set_cut(struct fs_set *s, struct fs_file *f, uint64_t fp)
{
    if (f->in_cut)
        weir__fs_map_del(&s->cut_map, &f->by_cut);
    f->in_cut = false;
    f->cut_fp = fp;
    if (fp && weir__fs_map_add(&s->cut_map, &f->by_cut, fp) == 0)
        f->in_cut = true;
}

static void fs_set_fp(struct fs_set *s, struct fs_file *f, uint64_t fp)
{
    if (f->in_fp)
        weir__fs_map_del(&s->fp_map, &f->by_fp);
    f->in_fp = false;
    if (f->fp != fp)
        s->changes.files++;
    f->fp = fp;
    if (fp && weir__fs_map_add(&s->fp_map, &f->by_fp, fp) == 0)
        f->in_fp = true;
}

/* Busy, or its records wait in the output buffer: not to be freed. */
static bool fs_held(const struct fs_set *s, const struct fs_file *f)
{
    return weir__fs_busy(s, f) || (s->out && s->out_len && s->cur_f == f);
}

static bool fs_has_unread(const struct fs_file *f)
{
    return !f->done && !f->alias &&
           (f->restart || f->copy_fd >= 0 || f->size > f->read);
}

/* ---- the ready queue: files with unread bytes, oldest read first ---- */

static void fs_settle_del(struct fs_set *s, struct fs_file *f)
{
    if (!f->settling)
        return;
    if (f->sprev)
        f->sprev->snext = f->snext;
    else
        s->settle_head = f->snext;
    if (f->snext)
        f->snext->sprev = f->sprev;
    else
        s->settle_tail = f->sprev;
    f->sprev = f->snext = NULL;
    f->settling = false;
}

static void fs_ready_del(struct fs_set *s, struct fs_file *f)
{
    fs_settle_del(s, f);
    if (!f->in_ready)
        return;
    if (f->rprev)
        f->rprev->rnext = f->rnext;
    else
        s->ready = f->rnext;
    if (f->rnext)
        f->rnext->rprev = f->rprev;
    else
        s->ready_tail = f->rprev;
    f->rprev = f->rnext = NULL;
    f->in_ready = false;
}

static void fs_settle_add(struct fs_set *s, struct fs_file *f);

/* A file a writer trickles into (a few lines, nothing else to do with it)
 * waits a settle period before it is read, when nothing else is being
 * read: its lines of that period are one read and one chunk, not one
 * each. While other files are read it is not kept waiting: their reads
 * are what it would wait for. */
static bool fs_trickle(const struct fs_set *s, const struct fs_file *f)
{
    return s->o.settle_ns && !s->o.once && !s->ready && !s->rd.busy &&
           !f->restart && f->copy_fd < 0 && !f->rotated &&
           f->size - f->read < FS_SETTLE_BYTES;
}

static void fs_ready_insert(struct fs_set *s, struct fs_file *f)
{
    struct fs_file *at;

    /* From the tail: a file just read goes last at once. */
    for (at = s->ready_tail; at && at->last_read > f->last_read; at = at->rprev)
        ;
    f->rprev = at;
    f->rnext = at ? at->rnext : s->ready;
    if (f->rnext)
        f->rnext->rprev = f;
    else
        s->ready_tail = f;
    if (at)
        at->rnext = f;
    else
        s->ready = f;
    f->in_ready = true;
}

static void fs_produce(struct fs_set *s);
static void fs_settled(struct weir_op *op, int res, uint32_t flags);

static void fs_settle_arm(struct fs_set *s)
{
    uint64_t now = fs_now(), at;

    if (!s->settle_head || s->settle.op.pending)
        return;
    at = s->settle_head->settle_at;
    s->settle.op.fn = fs_settled;
    if (weir_loop_timer_start(s->ep.loop, &s->settle,
                              at > now ? at - now : 0) == 0)
        ep_op_started(&s->ep);
}

/* The files whose settle period is over go to the ready queue (every file
 * waits the same period: the list is in the order of their deadlines). */
static void fs_settled(struct weir_op *op, int res, uint32_t flags)
{
    struct fs_set *s = EP_CONTAINER(op, struct fs_set, settle.op);
    uint64_t now = fs_now();

    (void)flags;
    if (weir__ep_op_done(&s->ep) || res == -ECANCELED)
        return;
    while (s->settle_head && s->settle_head->settle_at <= now) {
        struct fs_file *f = s->settle_head;

        fs_settle_del(s, f);
        if (fs_has_unread(f))
            fs_ready_insert(s, f);
    }
    fs_settle_arm(s);
    fs_produce(s);
}

static void fs_settle_add(struct fs_set *s, struct fs_file *f)
{
    f->settle_at = fs_now() + s->o.settle_ns;
    f->snext = NULL;
    f->sprev = s->settle_tail;
    if (s->settle_tail)
        s->settle_tail->snext = f;
    else
        s->settle_head = f;
    s->settle_tail = f;
    f->settling = true;
    fs_settle_arm(s);
}

static void fs_ready_update(struct fs_set *s, struct fs_file *f)
{
    if (!fs_has_unread(f)) {
        fs_ready_del(s, f);
        return;
    }
    if (f->in_ready || f->settling)
        return;
    if (fs_trickle(s, f))
        fs_settle_add(s, f);
    else
        fs_ready_insert(s, f);
}

/* ---- opening and closing ---- */

static void fs_open_del(struct fs_set *s, struct fs_file *f)
{
    if (f->oprev)
        f->oprev->onext = f->onext;
    else if (s->opened == f)
        s->opened = f->onext;
    if (f->onext)
        f->onext->oprev = f->oprev;
    else if (s->opened_tail == f)
        s->opened_tail = f->oprev;
    f->oprev = f->onext = NULL;
}

/* f was just opened or read: last in the list of open files. */
static void fs_open_touch(struct fs_set *s, struct fs_file *f)
{
    fs_open_del(s, f);
    f->oprev = s->opened_tail;
    if (s->opened_tail)
        s->opened_tail->onext = f;
    else
        s->opened = f;
    s->opened_tail = f;
}

static void fs_rec_free(struct fs_set *s, struct fs_file *f)
{
    struct weir_records_stats st;

    if (!f->rec)
        return;
    weir_records_stats(f->rec, &st);
    s->rec_gone.records += st.records;
    s->rec_gone.truncated += st.truncated;
    s->rec_gone.skipped += st.skipped;
    weir_records_free(f->rec);
    f->rec = NULL;
}

static void fs_close(struct fs_set *s, struct fs_file *f)
{
    s->walk_due = true; /* a closed file is timed by the walk */
    if (f->fd >= 0) {
        close(f->fd);
        f->fd = -1;
        s->nopen--;
        fs_open_del(s, f);
    }
    if (f->rec && weir_records_pending(f->rec) == 0 && !weir__fs_busy(s, f))
        fs_rec_free(s, f);
}

static void fs_forget(struct fs_set *s, struct fs_file *f)
{
    fs_ready_del(s, f);
    fs_unname(s, f);
    fs_unino(s, f);
    fs_set_fp(s, f, 0);
    fs_set_cut(s, f, 0);
    weir__fs_copies_free(s, f);
    fs_close(s, f);
    if (f->copy_fd >= 0) {
        close(f->copy_fd);
        s->nopen--;
    }
    fs_rec_free(s, f);
    if (f->prev)
        f->prev->next = f->next;
    else
        s->files = f->next;
    if (f->next)
        f->next->prev = f->prev;
    s->nfiles--;
    s->changes.files++;
    free(f->path);
    free(f);
}

/* Forgets the files finished and fully acknowledged. Only from the tick:
 * a file is never freed under a caller that holds it (an ack may come
 * from inside the stream's enqueue). */
static void fs_sweep(struct fs_set *s)
{
    for (struct fs_file *f = s->files, *next; f; f = next) {
        next = f->next;
        if (f->done && f->refs == 0 && !fs_held(s, f) && !f->gone_check &&
            !f->written)
            fs_forget(s, f);
    }
}

/*
 * Makes room for a descriptor: closes the file read least recently among
 * those caught up, or else, among those with bytes left, the one read
 * most recently (it is the last to be read again). Never a rotated or
 * deleted file: it could not be opened again.
 */
static bool fs_close_lru(struct fs_set *s)
{
    struct fs_file *quiet = NULL, *busy = NULL;

    for (struct fs_file *f = s->opened; f && !quiet; f = f->onext)
        if (!f->rotated && !f->deleted && !weir__fs_busy(s, f) &&
            f->copy_fd < 0 && !f->restart && f->size <= f->read)
            quiet = f;
    for (struct fs_file *f = s->opened_tail; f && !quiet && !busy; f = f->oprev)
        if (!f->rotated && !f->deleted && !weir__fs_busy(s, f) &&
            f->copy_fd < 0 && !f->restart)
            busy = f;
    if (!quiet && !busy)
        return false;
    fs_close(s, quiet ? quiet : busy);
    return true;
}

static void fs_gone(struct fs_set *s, struct fs_file *f);
static void fs_finish(struct fs_set *s, struct fs_file *f);
static void fs_lost(struct fs_set *s, struct fs_file *f, uint64_t n);
static void fs_truncated(struct fs_set *s, struct fs_file *f, uint64_t size);
static bool fs_cut_again(struct fs_set *s, struct fs_file *f, uint64_t size);
static void fs_found(struct fs_set *s, const char *path);

/* Opens f for reading; false when it cannot be now. */
static bool fs_open(struct fs_set *s, struct fs_file *f)
{
    struct stat st;
    int fd;

    if (f->fd >= 0)
        return true;
    if (f->deleted || !f->path)
        return false;
    while (s->nopen >= s->o.max_open_files)
        if (!fs_close_lru(s))
            return false;
    fd = open(f->path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
    if (fd < 0) {
        int err = -errno;

        if (!f->open_fail)
            fs_event(s, WEIR_FS_OPEN_FAIL, f->path, err, f->read);
        f->open_fail = true;
        fs_ready_del(s, f);
        if (err == -ENOENT && !f->rotated) {
            fs_gone(s, f);
        } else if (err == -ENOENT) {
            fs_lost(s, f, f->size > f->read ? f->size - f->read : 0);
            fs_finish(s, f);
        }
        return false;
    }
    if (fstat(fd, &st) != 0 || (uint64_t)st.st_dev != f->dev ||
        (uint64_t)st.st_ino != f->ino) {
        /* The name leads to another file now. */
        char *path = strdup(f->path);

        close(fd);
        fs_gone(s, f);
        if (path) {
            fs_found(s, path);
            free(path);
        }
        return false;
    }
    f->fd = fd;
    s->nopen++;
    fs_open_touch(s, f);
    f->open_fail = false;
    /* Checked to be the same file: its first bytes are still those. */
    if (f->fp && f->copy_fd < 0 && !f->restart &&
        (uint64_t)st.st_size >= s->o.fingerprint_len &&
        weir__fs_fingerprint(fd, s->o.fingerprint_len) != f->fp)
        fs_truncated(s, f, (uint64_t)st.st_size);
    return true;
}

/* ---- what the name of a file leads to ---- */

static void fs_name(struct fs_set *s, struct fs_file *f, const char *path)
{
    struct fs_file *other = fs_find_path(s, path);
    char *copy;

    if (other == f)
        return;
    if (other) /* renamed over it: that one has no name any more */
        fs_gone(s, other);
    copy = strdup(path);
    if (!copy)
        return;
    fs_unname(s, f);
    free(f->path);
    f->path = copy;
    s->changes.files++;
    if (weir__fs_map_add(&s->path_map, &f->by_path, weir__fs_path_key(path)) ==
        0)
        f->in_path = true;
}

/* Nothing more will come from f: read, flushed, closed. */
static void fs_finish(struct fs_set *s, struct fs_file *f)
{
    if (f->done)
        return;
    f->done = true;
    fs_ready_del(s, f);
    fs_close(s, f);
    fs_unname(s, f);
    fs_unino(s, f);
    fs_event(s, WEIR_FS_DONE, f->path, 0, f->read);
}

static void fs_lost(struct fs_set *s, struct fs_file *f, uint64_t n)
{
    if (n == 0)
        return;
    s->lost += n;
    fs_event(s, WEIR_FS_LOST, f->path, 0, n);
}

/* f's name no longer leads to it: renamed away, or deleted. It is read to
 * its end through its descriptor, when it has one. */
static void fs_gone(struct fs_set *s, struct fs_file *f)
{
    struct stat st;

    if (f->rotated || f->done)
        return;
    f->rotated = true;
    f->last_change = fs_now();
    s->rotations++;
    fs_unname(s, f);
    fs_event(s, WEIR_FS_ROTATED, f->path, 0, f->read);
    if (f->fd >= 0) {
        if (fstat(f->fd, &st) == 0 && st.st_nlink == 0) {
            f->deleted = true;
            fs_unino(s, f); /* its inode may be given to a new file */
        }
        fs_look(s, f);
        return;
    }
    if (f->alias) {
        fs_finish(s, f);
        return;
    }
    /* Closed (quiet, or never opened): what it had unread is lost unless
     * the name it went to is seen (IN_MOVED_TO). */
    f->deleted = true;
    fs_unino(s, f);
    if (!weir__fs_busy(s, f)) {
        fs_lost(s, f, f->size > f->read ? f->size - f->read : 0);
        fs_finish(s, f);
    }
}

/* f was renamed out of the patterns, to path (in a watched directory). */
static void fs_moved(struct fs_set *s, struct fs_file *f, const char *path)
{
    if (f->rotated || f->done)
        return;
    if (f->fd < 0 && !f->alias) {
        /* Closed: it is opened by its new name if it grows. */
        f->rotated = true;
        f->last_change = fs_now();
        s->rotations++;
        fs_event(s, WEIR_FS_ROTATED, f->path, 0, f->read);
        fs_name(s, f, path);
        fs_look(s, f);
        return;
    }
    fs_gone(s, f);
    if (!f->done)
        fs_name(s, f, path);
}

static uint64_t fs_fingerprint_of(struct fs_set *s, struct fs_file *f)
{
    struct stat st;

    if (f->fd >= 0)
        return weir__fs_fingerprint(f->fd, s->o.fingerprint_len);
    return weir__fs_fingerprint_path(f->path, s->o.fingerprint_len, &st);
}

/* Looks at f's size now: growth, truncation, its fingerprint. Not while a
 * read of it is out. */
static void fs_refresh(struct fs_set *s, struct fs_file *f)
{
    struct stat st;
    uint64_t size;

    if (f->done || weir__fs_busy(s, f))
        return;
    f->check = false;
    if (f->fd >= 0) {
        if (fstat(f->fd, &st) != 0)
            return;
        if (st.st_nlink == 0 && !f->deleted) {
            fs_gone(s, f);
            f->deleted = true;
            fs_unino(s, f);
        }
    } else if (stat(f->path, &st) != 0 || (uint64_t)st.st_dev != f->dev ||
               (uint64_t)st.st_ino != f->ino) {
        if (!f->rotated) {
            fs_gone(s, f);
        } else {
            /* Rotated and closed, and its new name is gone too. */
            fs_lost(s, f, f->size > f->read ? f->size - f->read : 0);
            fs_finish(s, f);
        }
        return;
    }
    size = (uint64_t)st.st_size;
    if (f->alias) {
        f->size = f->read = size;
        return;
    }
    if (f->copy_fd >= 0 && !f->restart && fs_cut_again(s, f, size))
        return;
    if (f->copy_fd < 0 && !f->restart) {
        /* A log does not shrink: one that did was cut, whether or not
         * weir had read up to its new end. */
        if (size < f->read || size < f->size) {
            fs_truncated(s, f, size);
            return;
        }
        /* It grew: it may have been cut and written past its old size
         * between two looks (before any of it was read, too), and its
         * head tells. One pread of fingerprint_len per look that found
         * it grown. */
        if (size > f->size && f->fp && fs_fingerprint_of(s, f) != f->fp) {
            fs_truncated(s, f, size);
            return;
        }
    }
    if (size != f->size)
        f->last_change = fs_now();
    f->size = size;
    if (!f->fp && !f->restart && f->copy_fd < 0 &&
        size >= s->o.fingerprint_len) {
        fs_set_fp(s, f, fs_fingerprint_of(s, f));
        /* Seen while it was being made: a copy of a file known. What
         * was read of it already (less than fingerprint_len) went out
         * twice. */
        if (f->fp && f->read < s->o.fingerprint_len && fs_same_dir_fp(s, f)) {
            f->alias = true;
            f->read = f->consumed = f->acked = size;
        }
    }
    fs_ready_update(s, f);
}

static void fs_truncated(struct fs_set *s, struct fs_file *f, uint64_t size)
{
    uint64_t csize = 0;
    int cfd;

    s->rotations++;
    f->cut_seen_rt = weir__fs_clock(CLOCK_REALTIME);
    fs_event(s, WEIR_FS_TRUNCATED, f->path, 0, f->read);
    cfd = weir__fs_find_copy(s, f, f->fp, f->read, &csize, NULL);
    if (cfd >= 0) {
        f->copy_fd = cfd;
        f->copy_size = csize;
        f->lost_mark = f->size;
        fs_set_cut(s, f, 0);
        s->nopen++;
    } else {
        fs_lost(s, f, f->size > f->read ? f->size - f->read : 0);
        f->restart = true;
    }
    f->size = size;
    f->last_change = fs_now();
    /* While its copy is read, f goes by the copy's head: what is read and
     * acknowledged are offsets in it, and the copy, when the patterns
     * name it too, is known as f's and not read again. */
    if (cfd < 0)
        fs_set_fp(s, f, 0);
    else if (size >= s->o.fingerprint_len)
        fs_set_cut(s, f, fs_fingerprint_of(s, f));
    fs_ready_update(s, f);
}

/* The copy of the cut weir just saw of f, which is in copy mode: by the
 * head f had since the cut before, or, when weir never saw that head (its
 * events came late), as the first copy named after f made after the copy
 * before it. */
static int fs_cut_copy(struct fs_set *s, struct fs_file *f, uint64_t *size,
                       uint64_t *fp, char **path)
{
    int before = f->copy_fd;
    struct stat copy;

    for (const struct fs_copy *c = f->waiting; c; c = c->next)
        before = c->fd;

    *fp = f->cut_fp;
    if (f->cut_fp)
        return weir__fs_find_copy(s, f, f->cut_fp, 0, size, path);
    if (before < 0 || fstat(before, &copy) != 0)
        return -1;
    return weir__fs_find_later_copy(s, f, &copy, f->cut_seen_rt,
                                    fs_fingerprint_of(s, f), size, fp, path);
}

static struct fs_file *fs_add(struct fs_set *s, const char *path,
                              const struct stat *st);

/* st is a file weir reads as one of its own (not as a copy of another). */
static bool fs_read_apart(struct fs_set *s, const struct stat *st)
{
    struct fs_file *g =
        fs_find_ino(s, (uint64_t)st->st_dev, (uint64_t)st->st_ino);

    return g && !g->alias;
}

/*
 * A copy of f (st, at path) that weir does not read as f's: the copies
 * waiting are FS_COPIES_WAITING already, or the patterns name this one
 * and weir found it before it knew it as a copy. It is read as a file of
 * its own, from its start, and its bytes are not lost. False when it
 * cannot be (no memory).
 */
static bool fs_copy_apart(struct fs_set *s, const struct stat *st,
                          const char *path)
{
    struct fs_file *g =
        fs_find_ino(s, (uint64_t)st->st_dev, (uint64_t)st->st_ino);

    if (g && !g->alias)
        return true; /* read as its own already */
    if (!g) {
        if (!path)
            return false;
        g = fs_add(s, path, st);
        if (!g)
            return false;
        /* Not named by the patterns, maybe: read to its end, then let go,
         * as a rotated file is. */
        g->rotated = true;
        s->rotations++;
        fs_event(s, WEIR_FS_ROTATED, g->path, 0, 0);
    }
    /* Known as f's copy until now (its head is the one f had): it is not
     * f's, and is read from its start. */
    g->alias = false;
    g->read = g->consumed = g->acked = 0;
    g->last_change = fs_now();
    fs_look(s, g);
    fs_ready_update(s, g);
    return true;
}

/*
 * While f's copy is read, f itself is watched: its head (cut_fp, once it
 * holds fingerprint_len bytes) and its size. A file that shrank or whose
 * head changed was cut again, and what it held since the cut before went
 * into a new copy: found by cut_fp (or by when it was made), queued and
 * read after the copies before it, from 0. A copy that the patterns name
 * and weir reads already, and one past FS_COPIES_WAITING, are read as
 * files of their own (fs_copy_apart). A cut whose copy cannot be found
 * loses what f held: counted as lost. True when f was cut again (f->size
 * is then the size after the cut).
 */
static bool fs_cut_again(struct fs_set *s, struct fs_file *f, uint64_t size)
{
    uint64_t len = s->o.fingerprint_len, csize = 0, next_fp = 0;
    char *path = NULL;
    struct stat st;
    bool have;
    int cfd;

    if (f->cut_fp && size > f->size && fs_fingerprint_of(s, f) != f->cut_fp) {
        /* cut and grown past its old size: its head tells */
    } else if (size >= f->size) {
        if (!f->cut_fp && size >= len)
            fs_set_cut(s, f, fs_fingerprint_of(s, f));
        return false;
    }
    s->rotations++;
    f->cut_seen_rt = weir__fs_clock(CLOCK_REALTIME);
    fs_event(s, WEIR_FS_TRUNCATED, f->path, 0, 0);
    cfd = fs_cut_copy(s, f, &csize, &next_fp, &path);
    have = cfd >= 0 && fstat(cfd, &st) == 0;
    if (have && !fs_read_apart(s, &st) &&
        weir__fs_copy_push(s, f, cfd, csize, next_fp, f->size)) {
        cfd = -1; /* f's now */
    } else if (!have || !fs_copy_apart(s, &st, path)) {
        fs_lost(s, f, f->size);
    }
    if (cfd >= 0)
        close(cfd);
    free(path);
    f->size = size;
    fs_set_cut(s, f, size >= len ? fs_fingerprint_of(s, f) : 0);
    f->last_change = fs_now();
    return true;
}

/* ---- discovery ---- */

static struct fs_file *fs_add(struct fs_set *s, const char *path,
                              const struct stat *st)
{
    struct fs_file *f = calloc(1, sizeof(*f));
    uint64_t now = fs_now(), off = 0;
    struct weir_file_set_file info;

    if (!f || !(f->path = strdup(path))) {
        free(f);
        return NULL;
    }
    f->fd = f->copy_fd = -1;
    f->dev = (uint64_t)st->st_dev;
    f->ino = (uint64_t)st->st_ino;
    f->size = (uint64_t)st->st_size;
    f->last_change = now;
    if (f->size >= s->o.fingerprint_len) {
        struct stat now_st;

        f->fp = weir__fs_fingerprint_path(path, s->o.fingerprint_len, &now_st);
    }
    f->next = s->files;
    if (s->files)
        s->files->prev = f;
    s->files = f;
    s->nfiles++;
    s->changes.files++;
    if (weir__fs_map_add(&s->path_map, &f->by_path, weir__fs_path_key(path)) ==
        0)
        f->in_path = true;
    if (weir__fs_map_add(&s->ino_map, &f->by_ino, fs_ino_key(f->dev, f->ino)) ==
        0)
        f->in_ino = true;
    if (f->fp && fs_same_dir_fp(s, f)) {
        /* A copy of a file known (a copytruncate's, where the patterns
         * name it too): its bytes were read as that file's. */
        f->alias = true;
        f->read = f->consumed = f->acked = f->size;
        fs_set_fp(s, f, f->fp);
        return f;
    }
    fs_set_fp(s, f, f->fp);
    info = (struct weir_file_set_file){
        .path = f->path,
        .dev = f->dev,
        .ino = f->ino,
        .fingerprint = f->fp,
        .fingerprint_len = s->o.fingerprint_len,
        .size = f->size,
    };
    if (s->o.resume && s->o.resume(s->o.resume_arg, &info, &off)) {
        if (off > f->size)
            off = 0; /* it was cut since: all it has is new */
    } else if ((s->o.read_from_end && !s->scanned) ||
               (s->o.ignore_older_ns &&
                weir__fs_clock(CLOCK_REALTIME) >
                    (uint64_t)st->st_mtim.tv_sec * 1000000000ull +
                        (uint64_t)st->st_mtim.tv_nsec + s->o.ignore_older_ns)) {
        off = f->size;
    }
    f->read = f->consumed = f->acked = off;
    fs_event(s, WEIR_FS_FOUND, f->path, 0, off);
    /* Held open from the start while descriptors are spare: a file
     * renamed twice before its first read (a reader behind, a new file
     * rotated at once) is followed by its descriptor, not its name. */
    if (s->nopen < s->o.max_open_files)
        fs_open(s, f);
    fs_ready_update(s, f);
    return f;
}

/* A name the patterns want: a new file, a known one renamed here, or a
 * new file under a known one's name. */
static void fs_found(struct fs_set *s, const char *path)
{
    struct fs_file *f = fs_find_path(s, path), *g;
    struct stat st;

    if (f && f->done)
        f = NULL;
    if (f && !s->no_inotify && !f->check)
        return; /* known: inotify tells what becomes of it */
    if (stat(path, &st) != 0 || !S_ISREG(st.st_mode))
        return;
    if (f && f->dev == (uint64_t)st.st_dev && f->ino == (uint64_t)st.st_ino) {
        fs_refresh(s, f);
        return;
    }
    g = fs_find_ino(s, (uint64_t)st.st_dev, (uint64_t)st.st_ino);
    if (g && !g->done) {
        /* Renamed here (back into the patterns, or within them). */
        fs_name(s, g, path);
        g->rotated = false;
        fs_look(s, g);
        fs_refresh(s, g);
        return;
    }
    if (f)
        fs_gone(s, f);
    fs_add(s, path, &st);
}

static void fs_hook_found(struct fs_set *s, const char *path)
{
    fs_found(s, path);
}

/* After a batch of events: the files moved or deleted whose name may
 * have been given back to them (a rename within the patterns). */
static void fs_gone_checks(struct fs_set *s)
{
    while (s->gone) {
        struct fs_file *f = s->gone;
        struct stat st;

        s->gone = f->gone_next;
        f->gone_next = NULL;
        f->gone_check = false;
        if (f->done || f->rotated)
            continue;
        if (!f->in_path || stat(f->path, &st) != 0 ||
            (uint64_t)st.st_ino != f->ino || (uint64_t)st.st_dev != f->dev)
            fs_gone(s, f);
    }
}

static void fs_hook_event(struct fs_set *s, struct fs_dir *d, const char *name,
                          uint32_t mask, uint32_t cookie)
{
    char full[4096];
    struct fs_file *f;

    if (snprintf(full, sizeof(full), "%s/%s",
                 strcmp(d->path, "/") ? d->path : "",
                 name) >= (int)sizeof(full))
        return;
    if (mask & IN_ISDIR) {
        if ((mask & (IN_CREATE | IN_MOVED_TO)) && weir__fs_reachable(s, full))
            weir__fs_scan_dir(s, full, true);
        return;
    }
    if (mask & (IN_CREATE | IN_MOVED_TO)) {
        if (weir__fs_wanted(s, full)) {
            fs_found(s, full);
        } else if (mask & IN_MOVED_TO) {
            struct stat st;
            struct fs_file *g;

            /* Renamed out of the patterns but within sight: follow it by
             * its new name (its growth is reported under that). */
            if (stat(full, &st) != 0 || !S_ISREG(st.st_mode))
                return;
            g = fs_find_ino(s, (uint64_t)st.st_dev, (uint64_t)st.st_ino);
            if (g && !g->done) {
                fs_moved(s, g, full);
            } else if (!g && cookie && cookie == s->moved_cookie) {
                /* Made under a name the patterns want and renamed away
                 * before weir looked at it (fast rotations): a file of
                 * the set all the same, rotated already. */
                g = fs_add(s, full, &st);
                if (g && !g->alias) {
                    g->rotated = true;
                    s->rotations++;
                }
            }
        }
    }
    if ((mask & IN_MOVED_FROM) && weir__fs_wanted(s, full))
        s->moved_cookie = cookie;
    if (mask & (IN_MOVED_FROM | IN_DELETE)) {
        f = fs_find_path(s, full);
        if (f && !f->gone_check) {
            f->gone_check = true;
            f->gone_next = s->gone;
            s->gone = f;
        }
    }
    if (mask & (IN_MODIFY | IN_CLOSE_WRITE)) {
        f = fs_find_path(s, full);
        if (f && !f->written) {
            /* A batch holds an event per write: the file is looked at
             * once, after the batch. */
            f->written = true;
            f->written_next = s->written;
            s->written = f;
        } else if (!f && weir__fs_wanted(s, full)) {
            fs_found(s, full);
        }
    }
}

static void fs_hook_events_done(struct fs_set *s)
{
    while (s->written) {
        struct fs_file *f = s->written;

        s->written = f->written_next;
        f->written_next = NULL;
        f->written = false;
        f->check = true; /* looked at now: not the walk's */
        fs_refresh(s, f);
    }
    fs_gone_checks(s);
    fs_produce(s);
}

static void fs_hook_no_inotify(struct fs_set *s, int err)
{
    if (!s->no_inotify)
        fs_event(s, WEIR_FS_NO_INOTIFY, NULL, err, 0);
    s->no_inotify = true;
    /* Events may have been lost: look again soon. */
    s->next_rescan = 0;
}

/* ---- reading ---- */

static void fs_kick_fired(struct weir_op *op, int res, uint32_t flags)
{
    struct fs_set *s = EP_CONTAINER(op, struct fs_set, kick.op);

    (void)flags;
    if (weir__ep_op_done(&s->ep) || res == -ECANCELED)
        return;
    fs_produce(s);
}

static void fs_kick(struct fs_set *s)
{
    if (s->kick.op.pending)
        return;
    s->kick.op.fn = fs_kick_fired;
    if (weir_loop_timer_start(s->ep.loop, &s->kick, FS_MS) == 0)
        ep_op_started(&s->ep);
}

/* f was truncated and what came before is out: from 0 now. */
static void fs_restart(struct fs_set *s, struct fs_file *f)
{
    if (f->rec && weir_records_pending(f->rec))
        weir__fs_flush(s, f);
    if (f->rec)
        weir_records_reset(f->rec, 0);
    f->restart = false;
    f->read = f->consumed = 0;
    fs_look(s, f);
    fs_refresh(s, f);
}

/*
 * After f's copy was read: a copy made after it and before weir saw f's
 * last cut holds what f had between two cuts weir learnt of as one (its
 * events came late). Read next, from 0. A file weir reads under a name
 * of its own is not taken: its bytes are read there.
 */
static void fs_missed_cut(struct fs_set *s, struct fs_file *f,
                          const struct stat *copy)
{
    uint64_t size = 0, fp = 0;
    struct stat st;
    int cfd;

    cfd = weir__fs_find_later_copy(s, f, copy, f->cut_seen_rt,
                                   fs_fingerprint_of(s, f), &size, &fp, NULL);
    if (cfd < 0)
        return;
    if (fstat(cfd, &st) != 0 || fs_read_apart(s, &st) ||
        !weir__fs_copy_push(s, f, cfd, size, fp, 0)) {
        close(cfd);
        return;
    }
    s->rotations++;
    fs_event(s, WEIR_FS_TRUNCATED, f->path, 0, 0);
}

static void fs_copy_done(struct fs_set *s, struct fs_file *f)
{
    struct stat copy;
    bool have_copy = fstat(f->copy_fd, &copy) == 0;

    fs_event(s, WEIR_FS_COPY_READ, f->path, 0, f->read);
    /* The file had grown past the copy before it was cut: written between
     * the copy and the truncation, those bytes are in neither. */
    if (f->lost_mark > f->read)
        fs_lost(s, f, f->lost_mark - f->read);
    f->lost_mark = 0;
    /* Cut again since (it may have been while the last bytes of the copy
     * were read): the next copy is looked for now, before f is read, and
     * while the copy read is still open (made after it, by time). */
    if (!f->waiting) {
        struct stat st;

        if (f->fd >= 0
                ? fstat(f->fd, &st) == 0
                : stat(f->path, &st) == 0 && (uint64_t)st.st_dev == f->dev &&
                      (uint64_t)st.st_ino == f->ino)
            fs_cut_again(s, f, (uint64_t)st.st_size);
    }
    if (!f->waiting && have_copy)
        fs_missed_cut(s, f, &copy);
    close(f->copy_fd);
    f->copy_fd = -1;
    s->nopen--;
    if (f->waiting) {
        struct fs_copy *c = weir__fs_copy_pop(s, f);

        if (f->rec && weir_records_pending(f->rec))
            weir__fs_flush(s, f);
        if (f->rec)
            weir_records_reset(f->rec, 0);
        f->copy_fd = c->fd;
        f->copy_size = c->size;
        f->lost_mark = c->lost_mark;
        f->read = f->consumed = 0;
        /* cut_fp stays: f's own head has not changed, and a copy of it
         * made by the next cut is known by it (fs_same_dir_fp) and found
         * by it (fs_cut_again). */
        fs_set_fp(s, f, c->fp);
        free(c);
        fs_ready_update(s, f);
        return;
    }
    fs_set_cut(s, f, 0);
    fs_set_fp(s, f, 0); /* f's own head, from its new start */
    fs_restart(s, f);
}

static void fs_read_done(struct weir_op *op, int res, uint32_t flags);

/* What fs_start_read did. */
enum fs_start { FS_WAIT, FS_STARTED, FS_AGAIN };

/* Starts a read of f: FS_STARTED; FS_AGAIN when f's state moved on (cut,
 * its copy read, nothing left) and the queue may be looked at again;
 * FS_WAIT when nothing can be read now (no buffer, no descriptor). */
static enum fs_start fs_start_read(struct fs_set *s, struct fs_file *f)
{
    struct weir_buf *b;
    uint64_t avail;
    int fd, rc;

    if (f->check || (!f->fp && f->read < s->o.fingerprint_len))
        fs_refresh(s, f); /* a fingerprint before its first bytes go */
    if (f->restart) {
        fs_restart(s, f);
        return FS_AGAIN;
    }
    if (f->copy_fd >= 0) {
        struct stat st;

        if (f->read >= f->copy_size && fstat(f->copy_fd, &st) == 0)
            f->copy_size = (uint64_t)st.st_size;
        if (f->read >= f->copy_size) {
            fs_copy_done(s, f);
            return FS_AGAIN;
        }
        fd = f->copy_fd;
        avail = f->copy_size - f->read;
    } else {
        if (!fs_has_unread(f)) {
            fs_ready_del(s, f);
            return FS_AGAIN;
        }
        if (!fs_open(s, f))
            return s->ready == f ? FS_WAIT : FS_AGAIN;
        if (f->copy_fd >= 0 || f->restart)
            return FS_AGAIN; /* fs_open found it cut */
        fd = f->fd;
        avail = f->size - f->read;
    }
    if (!weir__fs_framer(s, f, f->read)) {
        fs_kick(s);
        return FS_WAIT;
    }
    if (weir_pool_get(s->pool, &b) != 0) {
        fs_kick(s); /* every buffer is out: some come home soon */
        return FS_WAIT;
    }
    if (avail > s->o.chunk_size)
        avail = s->o.chunk_size;
    s->rd.buf = b;
    s->rd.f = f;
    s->rd.off = f->read;
    s->rd.len = (uint32_t)avail;
    s->rd.copy = fd == f->copy_fd;
    s->rd.op.fn = fs_read_done;
    rc = weir_loop_read(s->ep.loop, &s->rd.op, fd, b->data, s->rd.len,
                        s->rd.off);
    if (rc) {
        s->rd.buf = NULL;
        weir_buf_unref(b, s->ep.slot);
        fs_kick(s);
        return FS_WAIT;
    }
    ep_op_started(&s->ep);
    s->rd.busy = true;
    f->last_read = fs_now();
    if (f->fd >= 0)
        fs_open_touch(s, f);
    /* Last in the queue now: the others go first. */
    fs_ready_del(s, f);
    return FS_STARTED;
}

/*
 * Whether f was cut before the bytes just read were: its head is no longer
 * the one it had. Looked at after the read, not before it, because only
 * then does a match prove what was read: a log's head changes when it is
 * cut and never again, so a head still the same after the read was the
 * same during it. A cut found here, however late its events come, leaves
 * the bytes read unused; the copy has them (fs_truncated). One pread of
 * fingerprint_len per chunk, from the page cache.
 */
static bool fs_cut_under_read(struct fs_set *s, struct fs_file *f)
{
    uint64_t fp;
    struct stat st;

    if (!f->fp || f->fd < 0)
        return false;
    fp = weir__fs_fingerprint(f->fd, s->o.fingerprint_len);
    if (fp == f->fp || fstat(f->fd, &st) != 0)
        return false;
    if (!fp && (uint64_t)st.st_size >= s->o.fingerprint_len)
        return false; /* the head could not be read: not a sign of a cut */
    fs_truncated(s, f, (uint64_t)st.st_size);
    return true;
}

static void fs_read_done(struct weir_op *op, int res, uint32_t flags)
{
    struct fs_set *s = EP_CONTAINER(op, struct fs_set, rd.op);
    struct weir_buf *b = s->rd.buf;
    struct fs_file *f = s->rd.f;

    (void)flags;
    s->rd.busy = false;
    s->rd.buf = NULL;
    if (weir__ep_op_done(&s->ep)) {
        weir_buf_unref(b, s->ep.slot);
        return;
    }
    if (res <= 0 || s->ended) {
        weir_buf_unref(b, s->ep.slot);
        if (res < 0 && !s->ended) {
            fs_event(s, WEIR_FS_OPEN_FAIL, f->path, res, f->read);
            fs_lost(s, f, f->size > f->read ? f->size - f->read : 0);
            fs_finish(s, f);
        } else if (res == 0 && !s->rd.copy) {
            fs_look(s, f); /* shorter than it was: cut? */
        } else if (res == 0) {
            f->copy_size = f->read;
        }
        if (!s->ended && f->check)
            fs_refresh(s, f);
        fs_produce(s);
        return;
    }
    if (f->done) { /* finished while the read was out: its last bytes */
        weir_buf_unref(b, s->ep.slot);
        fs_produce(s);
        return;
    }
    if (!s->rd.copy && fs_cut_under_read(s, f)) {
        weir_buf_unref(b, s->ep.slot);
        fs_produce(s);
        return;
    }
    if ((uint32_t)res < s->rd.len && !s->rd.copy)
        fs_look(s, f);
    f->read += (uint32_t)res;
    f->last_data = fs_now();
    s->in = b;
    s->in_pos = 0;
    s->in_len = (uint32_t)res;
    s->in_f = f;
    fs_produce(s);
}

static void fs_end(struct fs_set *s)
{
    if (s->ended)
        return;
    if (!s->spill_len)
        weir__fs_seal(s);
    s->ended = true;
    weir__ep_timer_stop(&s->ep);
    weir__fs_watch_stop(s);
    if (s->ep.rs)
        weir_readable_close(s->ep.rs);
}

/* Once: every file read to the size it had; what is held goes out. */
static void fs_once_end(struct fs_set *s)
{
    for (struct fs_file *f = s->files; f; f = f->next) {
        weir__fs_flush(s, f);
        if (s->spill_len)
            return; /* the pool is dry: again when it is not */
    }
    for (struct fs_file *f = s->files, *next; f; f = next) {
        next = f->next;
        if (!f->done)
            fs_finish(s, f);
    }
    fs_end(s);
}

static void fs_produce(struct fs_set *s)
{
    if (s->producing)
        return;
    s->producing = true;
    while (!s->ep.destroyed && !s->ended) {
        struct fs_file *f;

        if (s->spill_len && !weir__fs_drain_spill(s)) {
            fs_kick(s);
            break;
        }
        if (s->in) {
            if (!weir__fs_feed(s)) {
                fs_kick(s);
                break;
            }
            if (s->ep.destroyed)
                break;
            fs_ready_update(s, s->cur_f);
            if (s->cur_f->check)
                fs_refresh(s, s->cur_f);
            continue;
        }
        if (s->rd.busy)
            break;
        if (s->ep.stopping) {
            fs_end(s);
            break;
        }
        if (!s->ep.rs || weir_readable_desired_size(s->ep.rs) <= 0)
            break;
        f = s->ready;
        if (!f) {
            if (s->o.once)
                fs_once_end(s);
            break;
        }
        if (fs_start_read(s, f) == FS_WAIT)
            break; /* a kick or the tick tries again */
    }
    s->producing = false;
}

/* ---- the tick ---- */

static void fs_tick(struct weir_endpoint *ep);

static void fs_tick_file(struct fs_set *s, struct fs_file *f, uint64_t now)
{
    bool caught;

    if (f->done || weir__fs_busy(s, f))
        return;
    if ((f->fd >= 0 && (f->rotated || s->no_inotify)) ||
        (f->rotated && f->in_path))
        fs_look(s, f);
    if (f->check)
        fs_refresh(s, f);
    if (f->done)
        return;
    caught = f->copy_fd < 0 && !f->restart && f->read >= f->size;
    if (!caught)
        return;
    if (f->rec && weir_records_pending(f->rec) &&
        now - f->last_data >= s->o.line_timeout_ns)
        weir__fs_flush(s, f);
    if (f->rotated && now - f->last_change >= s->o.rotate_wait_ns) {
        weir__fs_flush(s, f);
        if (!f->rec || weir_records_pending(f->rec) == 0)
            fs_finish(s, f);
    } else if (!f->rotated && f->fd >= 0 &&
               now - f->last_change >= s->o.idle_close_ns &&
               now - f->last_read >= s->o.idle_close_ns) {
        fs_close(s, f);
    }
}

/* Whether the walk has something to time for f when it is closed, or to
 * forget once it is finished. */
static bool fs_timed(const struct fs_file *f)
{
    return f->done || (f->fd < 0 && (f->rotated || f->check ||
                                     (f->rec && weir_records_pending(f->rec))));
}

/*
 * Every file known, or only the open ones. A file without a descriptor
 * that was not renamed away has nothing to time (inotify says when it
 * grows), so the walk of all of them, which costs as much as there are
 * idle files, comes once per FS_WALK_NS; the open ones, at most
 * max_open_files, are looked at every tick. They are taken out of the
 * open list first: what a look does may close others or open new ones.
 */
static void fs_tick_files(struct fs_set *s, uint64_t now, bool all)
{
    size_t n = 0;

    if (!all && !s->tick_open)
        s->tick_open = calloc(s->o.max_open_files, sizeof(*s->tick_open));
    if (all || !s->tick_open) {
        s->walk_due = false;
        for (struct fs_file *f = s->files; f && !s->ended; f = f->next) {
            fs_tick_file(s, f, now);
            if (fs_timed(f))
                s->walk_due = true;
        }
        return;
    }
    for (struct fs_file *f = s->opened; f && n < s->o.max_open_files;
         f = f->onext)
        s->tick_open[n++] = f;
    for (size_t i = 0; i < n && !s->ended; i++)
        fs_tick_file(s, s->tick_open[i], now);
}

static void fs_tick(struct weir_endpoint *ep)
{
    struct fs_set *s = fs_of(ep);
    uint64_t now = fs_now();
    bool all;

    if (s->ended || ep->destroyed)
        return;
    weir__fs_watch_rearm(s);
    /* The walk of every file is skipped while none of them needs it: no
     * event since the last walk, and none that it found waiting. */
    all = (now >= s->next_walk && s->walk_due) || s->no_inotify;
    if (all) {
        s->next_walk = now + FS_WALK_NS;
        fs_sweep(s);
    }
    if (now >= s->next_rescan) {
        s->next_rescan = now + s->o.rescan_ns;
        if (s->no_inotify) {
            /* Without events: every name again, and every file's size. */
            weir__fs_rescan(s);
            for (struct fs_file *f = s->files; f; f = f->next)
                fs_look(s, f);
        } else {
            weir__fs_rescan(s);
        }
    }
    fs_tick_files(s, now, all);
    fs_produce(s);
    if (!s->ended && !ep->destroyed)
        weir__ep_timer(ep, s->tick_ns, fs_tick);
}

/* ---- files the owner knew, gone from the patterns ---- */

/* Whether a file the patterns name is k: the same first bytes, or, for a
 * file too short for them, the same inode. */
static bool fs_claimed(struct fs_set *s, const struct weir_file_set_file *k)
{
    struct fs_file *f;

    if (k->fingerprint == 0)
        return fs_find_ino(s, k->dev, k->ino) != NULL;
    for (struct fs_link *l = weir__fs_map_find(&s->fp_map, k->fingerprint); l;
         l = l->next)
        if (l->key == k->fingerprint)
            return true;
    f = fs_find_ino(s, k->dev, k->ino);
    return f && f->fp == 0;
}

static void fs_known_free(struct fs_set *s)
{
    for (size_t i = 0; i < s->nknown; i++)
        free((char *)s->known[i].path);
    free(s->known);
    s->known = NULL;
    s->nknown = 0;
}

/* After the first scan: each checkpointed file no name claims is looked
 * for (file_set_adopt.c) and finished as a rotated one. */
static void fs_adopt_known(struct fs_set *s)
{
    for (size_t i = 0; i < s->nknown; i++) {
        const struct weir_file_set_file *k = &s->known[i];
        struct fs_file *f;
        struct stat st;
        char *path;

        if (fs_claimed(s, k) ||
            !(path = weir__fs_find_known(k, s->o.fingerprint_len, &st)))
            continue;
        if (!fs_find_ino(s, (uint64_t)st.st_dev, (uint64_t)st.st_ino) &&
            (f = fs_add(s, path, &st)) != NULL && !f->alias) {
            f->rotated = true;
            fs_look(s, f);
            f->last_change = fs_now();
            s->rotations++;
            fs_event(s, WEIR_FS_ROTATED, f->path, 0, f->read);
        }
        free(path);
    }
    fs_known_free(s);
}

/* ---- the stream and the endpoint ---- */

static void fs_start(struct fs_set *s)
{
    s->started = true;
    if (!s->o.once)
        weir__fs_watch_start(s);
    weir__fs_scan_all(s);
    fs_adopt_known(s);
    s->scanned = true;
    s->next_rescan = fs_now() + s->o.rescan_ns;
    if (!s->o.once)
        weir__ep_timer(&s->ep, s->tick_ns, fs_tick);
}

static int fs_pull(struct weir_readable *rs, void *ctx)
{
    struct fs_set *s = fs_of(ctx);

    (void)rs;
    if (!s->started)
        fs_start(s);
    weir__fs_seal_maybe(s);
    fs_produce(s);
    return 0;
}

static int fs_cancel(struct weir_readable *rs, void *ctx, int reason)
{
    struct fs_set *s = fs_of(ctx);

    (void)rs;
    (void)reason;
    s->ended = true;
    weir__ep_timer_stop(&s->ep);
    weir__fs_watch_stop(s);
    return 0;
}

static const struct weir_source_ops fs_stream = {
    .pull = fs_pull,
    .cancel = fs_cancel,
};

static void fs_stop(struct weir_endpoint *ep)
{
    struct fs_set *s = fs_of(ep);

    if (s->ended)
        return;
    ep->stopping = true;
    fs_produce(s);
}

static void fs_close_ep(struct weir_endpoint *ep)
{
    struct fs_set *s = fs_of(ep);

    weir_readable_destroy(ep->rs);
    ep->rs = NULL;
    s->ended = true;
    weir__ep_timer_stop(ep);
    weir__fs_watch_stop(s);
    if (s->kick.op.pending)
        weir_loop_timer_stop(ep->loop, &s->kick);
    if (s->settle.op.pending)
        weir_loop_timer_stop(ep->loop, &s->settle);
    if (s->rd.op.pending)
        weir_loop_cancel(ep->loop, &s->rd.op);
}

static void fs_release(struct weir_endpoint *ep)
{
    struct fs_set *s = fs_of(ep);

    while (s->files) {
        s->files->refs = 0;
        fs_forget(s, s->files);
    }
    if (s->in)
        weir_buf_unref(s->in, ep->slot);
    if (s->out)
        weir_buf_unref(s->out, ep->slot);
    free(s->spill);
    free(s->tick_open);
    weir__fs_ledger_free(&s->led);
    weir__fs_map_free(&s->path_map);
    weir__fs_map_free(&s->ino_map);
    weir__fs_map_free(&s->fp_map);
    weir__fs_map_free(&s->cut_map);
    weir__fs_map_free(&s->next_map);
    weir__fs_dirs_free(s);
    for (size_t i = 0; i < s->ninc; i++)
        weir__fs_pattern_free(&s->inc[i]);
    for (size_t i = 0; i < s->nexc; i++)
        weir__fs_pattern_free(&s->exc[i]);
    free(s->inc);
    free(s->exc);
    fs_known_free(s);
}

static const struct ep_ops file_set_ops = {
    .source = &fs_stream,
    .stop = fs_stop,
    .close = fs_close_ep,
    .release = fs_release,
};

static uint64_t fs_min(uint64_t a, uint64_t b)
{
    return a < b ? a : b;
}

static int fs_options(struct fs_set *s, const struct weir_file_set_options *o)
{
    struct weir_records *probe;
    int rc;

    s->o = *o;
    if (!s->o.rotate_wait_ns)
        s->o.rotate_wait_ns = 5000 * FS_MS;
    if (!s->o.line_timeout_ns)
        s->o.line_timeout_ns = 1000 * FS_MS;
    if (!s->o.idle_close_ns)
        s->o.idle_close_ns = 30000 * FS_MS;
    if (!s->o.rescan_ns)
        s->o.rescan_ns = 10000 * FS_MS;
    if (s->o.settle_ns == 0)
        s->o.settle_ns = 50 * FS_MS;
    else if (s->o.settle_ns == UINT64_MAX)
        s->o.settle_ns = 0;
    if (!s->o.max_open_files)
        s->o.max_open_files = 64;
    if (!s->o.fingerprint_len)
        s->o.fingerprint_len = 256;
    if (!s->o.chunk_size || s->o.chunk_size > s->buf_size)
        s->o.chunk_size = s->buf_size;
    /* A copy being read holds a descriptor of its own. */
    if (s->o.max_open_files < 2)
        s->o.max_open_files = 2;
    s->tick_ns = fs_min(fs_min(s->o.rotate_wait_ns, s->o.line_timeout_ns),
                        fs_min(s->o.idle_close_ns, s->o.rescan_ns)) /
                 4;
    if (s->tick_ns < 5 * FS_MS)
        s->tick_ns = 5 * FS_MS;
    if (s->tick_ns > 250 * FS_MS)
        s->tick_ns = 250 * FS_MS;
    s->o.include = NULL;
    s->o.exclude = NULL;
    s->o.known = NULL;
    if (o->nknown) {
        s->known = calloc(o->nknown, sizeof(*s->known));
        if (!s->known)
            return -ENOMEM;
        for (size_t i = 0; i < o->nknown; i++, s->nknown++) {
            s->known[i] = o->known[i];
            s->known[i].path = strdup(o->known[i].path);
            if (!s->known[i].path)
                return -ENOMEM;
        }
    }
    s->o.records.path = NULL;
    /* The framer's options are checked once here, not per file. */
    rc = weir_records_new(&probe, &s->o.records, NULL, 0);
    if (rc)
        return rc;
    weir_records_free(probe);
    s->inc = calloc(o->ninclude, sizeof(*s->inc));
    s->exc = calloc(o->nexclude ? o->nexclude : 1, sizeof(*s->exc));
    if (!s->inc || !s->exc)
        return -ENOMEM;
    for (size_t i = 0; i < o->ninclude; i++, s->ninc++)
        if ((rc = weir__fs_pattern_parse(&s->inc[i], o->include[i])) != 0)
            return rc;
    for (size_t i = 0; i < o->nexclude; i++, s->nexc++)
        if ((rc = weir__fs_pattern_parse(&s->exc[i], o->exclude[i])) != 0)
            return rc;
    return 0;
}

int weir_endpoint_file_set(struct weir_endpoint **out, struct weir_loop *loop,
                           struct weir_pool *pool,
                           const struct weir_file_set_options *o)
{
    struct fs_set *s;
    int rc;

    if (!pool || !o || !o->include || o->ninclude == 0 ||
        (o->nexclude && !o->exclude))
        return -EINVAL;
    s = weir__ep_new(sizeof(*s), &file_set_ops, loop, -1, false, o->counter,
                     NULL);
    if (!s)
        return -ENOMEM;
    s->pool = pool;
    s->inotify[FS_NAMES].fd = s->inotify[FS_WRITES].fd = -1;
    s->buf_size = (uint32_t)weir_pool_buf_size(pool);
    s->hooks.found = fs_hook_found;
    s->hooks.event = fs_hook_event;
    s->hooks.events_done = fs_hook_events_done;
    s->hooks.no_inotify = fs_hook_no_inotify;
    rc = fs_options(s, o);
    if (rc) {
        weir__ep_free_now(&s->ep);
        return rc;
    }
    rc = weir__ep_open_stream(&s->ep, 4ull * s->buf_size);
    if (rc)
        return rc;
    *out = &s->ep;
    return 0;
}

int weir_file_set_ack(struct weir_endpoint *ep, uint64_t acked)
{
    struct fs_set *s;

    if (ep->ops != &file_set_ops)
        return -EINVAL;
    s = fs_of(ep);
    if (weir__fs_ledger_ack(&s->led, acked, NULL, NULL))
        s->changes.offsets++;
    return 0;
}

static void fs_info(const struct fs_set *s, const struct fs_file *f,
                    struct weir_file_set_file *out)
{
    *out = (struct weir_file_set_file){
        .path = f->path,
        .dev = f->dev,
        .ino = f->ino,
        .fingerprint = f->fp,
        .fingerprint_len = s->o.fingerprint_len,
        .size = f->size,
        .read = f->read,
        .acked = f->acked,
        .open = f->fd >= 0,
        .rotated = f->rotated,
    };
}

int weir_file_set_foreach(struct weir_endpoint *ep,
                          int (*fn)(void *arg,
                                    const struct weir_file_set_file *f),
                          void *arg)
{
    struct weir_file_set_file info;
    struct fs_set *s;

    if (ep->ops != &file_set_ops)
        return -EINVAL;
    s = fs_of(ep);
    for (struct fs_file *f = s->files; f; f = f->next) {
        if (f->alias)
            continue;
        fs_info(s, f, &info);
        if (fn(arg, &info))
            break;
    }
    return 0;
}

int weir_file_set_changes(const struct weir_endpoint *ep,
                          struct weir_file_set_changes *c)
{
    if (ep->ops != &file_set_ops)
        return -EINVAL;
    *c = EP_CONTAINER(ep, const struct fs_set, ep)->changes;
    return 0;
}

int weir_file_set_stats(const struct weir_endpoint *ep,
                        struct weir_file_set_stats *st)
{
    const struct fs_set *s;

    if (ep->ops != &file_set_ops)
        return -EINVAL;
    s = EP_CONTAINER(ep, const struct fs_set, ep);
    memset(st, 0, sizeof(*st));
    st->watched = s->nfiles;
    st->open = s->nopen;
    st->rotations = s->rotations;
    st->lost = s->lost;
    st->records = s->rec_gone;
    for (const struct fs_file *f = s->files; f; f = f->next) {
        uint64_t end = f->copy_fd >= 0 ? f->copy_size : f->size;

        if (f->read > f->acked)
            st->behind += f->read - f->acked;
        if (end > f->read && !f->done && !f->alias)
            st->unread += end - f->read;
        for (const struct fs_copy *c = f->waiting; c; c = c->next)
            st->unread += c->size;
        if (f->rec) {
            struct weir_records_stats r;

            weir_records_stats(f->rec, &r);
            st->records.records += r.records;
            st->records.truncated += r.truncated;
            st->records.skipped += r.skipped;
        }
    }
    return 0;
}
