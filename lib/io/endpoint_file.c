/*
 * endpoint_file.c - the file source: positional reads, several in flight,
 * delivered in file order; optionally following the file as it grows.
 *
 * Reads never go past the size last seen with fstat, so a short read means
 * the file shrank under us. Then every read issued after it is stale: the
 * generation counter moves on, stale results are dropped when they come
 * back, and reading resumes where the short read ended.
 *
 * Following polls the size with a timer rather than inotify: a poll costs
 * one fstat per period and no extra fd or pending op per file, it sees
 * appends on filesystems inotify does not report (NFS, FUSE), and a
 * collector does not need sub-period latency.
 *
 * Truncation (logrotate's copytruncate): a size below the offset read so
 * far, or, since a writer may have written past the old size within one
 * period, a file whose first bytes are no longer the ones read there (a
 * fingerprint of up to 64 bytes, checked when the reads have caught up).
 * Either way reading starts again from 0.
 *
 * Rotation (rename and create, delete and create): with follow_path, each
 * poll that finds nothing new also stats the path. When it names another
 * file, this one is read to its end, and the new file is opened and read
 * from its start as soon as it has bytes (its writer has moved on) or this
 * one has stayed still for a period (a writer that has not reopened yet
 * still appends here). A file that is renamed away again before a poll
 * saw it is not found: rotations must be slower than the poll period
 * (100 ms by default). A path that does not exist yet is opened as soon
 * as it does.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "endpoint_base.h"

/* One positional read. */
struct fsrc_read {
    struct weir_op op;
    struct file_source *f;
    struct weir_buf *buf;
    uint64_t off;
    uint32_t len;
    uint32_t gen; /* the source's generation when it was issued */
    int res;
    bool done;
};

struct file_source {
    struct weir_endpoint ep;
    struct weir_file_source_options o; /* defaults filled in */
    struct weir_pool *pool;
    bool ended;
    struct fsrc_read *reads; /* depth slots, ring by sequence */
    uint32_t head, tail;     /* sequence numbers */
    uint32_t gen;
    uint64_t next_off, size;
    uint64_t inflight_bytes;
    /* A followed file's rotation and truncation. */
    char *path;     /* o.follow_path, owned */
    uint8_t fp[64]; /* the file's first bytes, as read */
    uint32_t fp_len;
    bool rotating;      /* the path names another file: finishing this one */
    uint64_t rot_size;  /* this file's size when that was seen */
    int64_t file_start; /* bytes at this file's byte 0 (file position) */
};

static struct file_source *file_source_of(struct weir_endpoint *ep)
{
    return EP_CONTAINER(ep, struct file_source, ep);
}

static void fsrc_issue(struct file_source *f);

static void fsrc_end(struct file_source *f)
{
    f->ended = true;
    weir_readable_close(f->ep.rs);
}

static void fsrc_timer(struct weir_endpoint *ep)
{
    fsrc_issue(file_source_of(ep));
}

static void fsrc_event(struct file_source *f, enum weir_endpoint_event ev,
                       uint64_t off)
{
    if (f->o.on_event)
        f->o.on_event(f->o.event_arg, ev, 0, off);
}

/* What is there now is new data, from the start. */
static void fsrc_restart(struct file_source *f)
{
    f->next_off = 0;
    f->fp_len = 0;
    f->gen++;
    /* Called with nothing in flight: every byte read so far was the old
     * file's. */
    f->file_start = (int64_t)f->ep.bytes;
}

/* Whether the file's first bytes are still the ones read there. */
static bool fsrc_same_head(struct file_source *f, uint64_t size)
{
    uint8_t now[sizeof(f->fp)];

    if (f->fp_len == 0 || size < f->fp_len)
        return size >= f->fp_len;
    return pread(f->ep.fd, now, f->fp_len, 0) == (ssize_t)f->fp_len &&
           memcmp(now, f->fp, f->fp_len) == 0;
}

static bool fsrc_refresh_size(struct file_source *f)
{
    struct stat st;

    if (f->ep.fd < 0 || fstat(f->ep.fd, &st) != 0)
        return false;
    if (f->o.follow && f->head == f->tail && f->next_off > 0 &&
        ((uint64_t)st.st_size < f->next_off ||
         !fsrc_same_head(f, (uint64_t)st.st_size))) {
        fsrc_event(f, WEIR_EP_TRUNCATED, f->next_off);
        fsrc_restart(f);
    }
    f->size = (uint64_t)st.st_size;
    return f->next_off < f->size;
}

/* Keeps the file's first bytes as they are read, for fsrc_same_head. */
static void fsrc_fingerprint(struct file_source *f, uint64_t off,
                             const uint8_t *p, uint32_t len)
{
    if (!f->path || off > f->fp_len || off >= sizeof(f->fp))
        return;
    if (len > sizeof(f->fp) - off)
        len = (uint32_t)(sizeof(f->fp) - off);
    if (off + len > f->fp_len) {
        memcpy(f->fp + off, p, len);
        f->fp_len = (uint32_t)(off + len);
    }
}

/*
 * Caught up with nothing in flight: has the path moved on to another
 * file? True when reading goes on now (from a new file).
 */
static bool fsrc_follow_path(struct file_source *f)
{
    struct stat now, mine;
    int fd;

    if (!f->path || stat(f->path, &now) != 0)
        return false; /* gone, not yet replaced: this file is all there is */
    if (f->ep.fd >= 0) {
        if (fstat(f->ep.fd, &mine) != 0 ||
            (now.st_dev == mine.st_dev && now.st_ino == mine.st_ino)) {
            f->rotating = false;
            return false;
        }
        /* Another file, and this one read to its end. Once the new one
         * has bytes its writer has moved on; until then a writer may
         * still append here, so this one must first stay still for a
         * period. */
        if (now.st_size == 0 && (!f->rotating || f->size != f->rot_size)) {
            f->rotating = true;
            f->rot_size = f->size;
            return false;
        }
    }
    fd = open(f->path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0)
        return false;
    fsrc_event(f, f->ep.fd >= 0 ? WEIR_EP_ROTATED : WEIR_EP_APPEARED,
               f->next_off);
    if (f->ep.fd >= 0)
        close(f->ep.fd);
    f->ep.fd = fd;
    f->rotating = false;
    f->size = 0;
    fsrc_restart(f);
    return true;
}

static void fsrc_read_done(struct weir_op *op, int res, uint32_t flags);

static void fsrc_issue(struct file_source *f)
{
    while (!f->ep.destroyed && !f->ended && !f->ep.timer.op.pending &&
           f->tail - f->head < f->o.depth) {
        struct fsrc_read *r;
        struct weir_buf *b;
        uint64_t len;
        int rc;

        if (f->ep.stopping) {
            if (f->head == f->tail)
                fsrc_end(f);
            return;
        }
        /* Bytes in flight count against the stream's room, so queue and
         * reads together stay near the high-water mark. */
        if (f->head != f->tail &&
            (int64_t)f->inflight_bytes >= weir_readable_desired_size(f->ep.rs))
            return;
        if (f->next_off >= f->size && !fsrc_refresh_size(f)) {
            if (f->head != f->tail)
                return;
            if (!f->o.follow) {
                fsrc_end(f);
                return;
            }
            if (fsrc_follow_path(f))
                continue; /* a new file: read it */
            weir__ep_timer(&f->ep, f->o.poll_ns, fsrc_timer);
            return;
        }
        if (weir_pool_get(f->pool, &b) != 0) {
            /* Every buffer is out: some come home soon. */
            weir__ep_timer(&f->ep, 1000 * 1000, fsrc_timer);
            return;
        }
        len = f->size - f->next_off;
        if (len > f->o.chunk_size)
            len = f->o.chunk_size;
        r = &f->reads[f->tail % f->o.depth];
        *r = (struct fsrc_read){.f = f,
                                .buf = b,
                                .off = f->next_off,
                                .len = (uint32_t)len,
                                .gen = f->gen};
        r->op.fn = fsrc_read_done;
        rc = weir_loop_read(f->ep.loop, &r->op, f->ep.fd, b->data, r->len,
                            r->off);
        if (rc) {
            r->buf = NULL;
            weir_buf_unref(b, f->ep.slot);
            if (rc == -EBUSY)
                weir__ep_timer(&f->ep, 1000 * 1000, fsrc_timer);
            else {
                f->ended = true;
                weir_readable_error(f->ep.rs, rc);
            }
            return;
        }
        ep_op_started(&f->ep);
        f->tail++;
        f->next_off += len;
        f->inflight_bytes += len;
    }
}

/* Hands completed reads to the stream in file order. */
static void fsrc_deliver(struct file_source *f)
{
    while (f->head != f->tail && !f->ep.destroyed) {
        struct fsrc_read *r = &f->reads[f->head % f->o.depth];
        struct weir_buf *b = r->buf;

        if (!r->done)
            return;
        f->head++;
        f->inflight_bytes -= r->len;
        r->buf = NULL;
        r->done = false;
        if (r->gen != f->gen || f->ended || r->res <= 0) {
            weir_buf_unref(b, f->ep.slot);
            if (r->gen == f->gen && !f->ended && r->res < 0) {
                f->ended = true;
                weir_readable_error(f->ep.rs, r->res);
                return;
            }
            if (r->gen == f->gen && r->res == 0) {
                /* Shrank to exactly this offset. */
                f->gen++;
                f->next_off = r->off;
                f->size = r->off;
            }
            continue;
        }
        if ((uint32_t)r->res < r->len) {
            f->gen++;
            f->next_off = r->off + (uint32_t)r->res;
            f->size = f->next_off;
        }
        weir__ep_count(&f->ep, (uint32_t)r->res);
        fsrc_fingerprint(f, r->off, b->data, (uint32_t)r->res);
        weir_readable_enqueue(f->ep.rs, weir_chunk_of(b, (uint32_t)r->res));
    }
}

static void fsrc_read_done(struct weir_op *op, int res, uint32_t flags)
{
    struct fsrc_read *r = EP_CONTAINER(op, struct fsrc_read, op);
    struct file_source *f = r->f;

    (void)flags;
    r->res = res;
    r->done = true;
    if (weir__ep_op_done(&f->ep))
        return;
    fsrc_deliver(f);
    if (!f->ep.destroyed && !f->ended &&
        weir_readable_desired_size(f->ep.rs) > 0)
        fsrc_issue(f);
}

static int fsrc_pull(struct weir_readable *rs, void *ctx)
{
    (void)rs;
    fsrc_issue(file_source_of(ctx));
    return 0;
}

static int fsrc_cancel(struct weir_readable *rs, void *ctx, int reason)
{
    struct file_source *f = file_source_of(ctx);

    (void)rs;
    (void)reason;
    f->ended = true;
    weir__ep_timer_stop(&f->ep);
    return 0;
}

static const struct weir_source_ops fsrc_stream = {
    .pull = fsrc_pull,
    .cancel = fsrc_cancel,
};

static int fsrc_position(const struct weir_endpoint *ep,
                         struct weir_file_position *pos)
{
    const struct file_source *f =
        EP_CONTAINER(ep, const struct file_source, ep);
    struct stat st;

    if (ep->fd < 0)
        return -ENOENT;
    if (fstat(ep->fd, &st) != 0)
        return -errno;
    pos->dev = (uint64_t)st.st_dev;
    pos->ino = (uint64_t)st.st_ino;
    pos->start = f->file_start;
    pos->head_len = f->fp_len;
    memcpy(pos->head, f->fp, f->fp_len);
    return 0;
}

static void fsrc_stop(struct weir_endpoint *ep)
{
    struct file_source *f = file_source_of(ep);

    if (f->ended)
        return;
    ep->stopping = true;
    weir__ep_timer_stop(ep);
    if (f->head == f->tail)
        fsrc_end(f);
}

static void fsrc_close(struct weir_endpoint *ep)
{
    struct file_source *f = file_source_of(ep);

    weir_readable_destroy(ep->rs);
    ep->rs = NULL;
    weir__ep_timer_stop(ep);
    for (uint32_t s = f->head; s != f->tail; s++) {
        struct fsrc_read *r = &f->reads[s % f->o.depth];

        if (r->op.pending)
            weir_loop_cancel(ep->loop, &r->op);
    }
}

static void fsrc_release(struct weir_endpoint *ep)
{
    struct file_source *f = file_source_of(ep);

    if (f->reads) {
        for (uint32_t i = 0; i < f->o.depth; i++)
            if (f->reads[i].buf)
                weir_buf_unref(f->reads[i].buf, ep->slot);
        free(f->reads);
    }
    free(f->path);
}

static const struct ep_ops file_source_ops = {
    .source = &fsrc_stream,
    .stop = fsrc_stop,
    .position = fsrc_position,
    .close = fsrc_close,
    .release = fsrc_release,
};

int weir_endpoint_file_source(struct weir_endpoint **out,
                              struct weir_loop *loop, struct weir_pool *pool,
                              int fd, const struct weir_file_source_options *o)
{
    static const struct weir_file_source_options none;
    struct file_source *f;
    int rc;

    if (!o)
        o = &none;
    if (!pool || o->depth > 64 ||
        (fd < 0 && !(o->follow && o->follow_path && o->own_fd)))
        return -EINVAL;
    f = weir__ep_new(sizeof(*f), &file_source_ops, loop, fd, o->own_fd,
                     o->counter, NULL);
    if (!f)
        return -ENOMEM;
    f->o = *o;
    f->pool = pool;
    if (f->o.depth == 0)
        f->o.depth = 4;
    if (f->o.depth < 2)
        f->o.depth = 2;
    if (f->o.poll_ns == 0)
        f->o.poll_ns = 100 * 1000 * 1000ull;
    if (f->o.chunk_size == 0 || f->o.chunk_size > weir_pool_buf_size(pool))
        f->o.chunk_size = (uint32_t)weir_pool_buf_size(pool);
    if (f->o.follow && f->o.follow_path && f->o.own_fd) {
        f->path = strdup(f->o.follow_path);
        if (!f->path) {
            weir__ep_free_now(&f->ep);
            return -ENOMEM;
        }
        /* Reading starts past the head: take its fingerprint now. */
        if (fd >= 0 && f->o.offset > 0) {
            ssize_t n = pread(fd, f->fp, sizeof(f->fp), 0);

            f->fp_len = n > 0 ? (uint32_t)n : 0;
        }
    }
    f->o.follow_path = NULL; /* the caller's: f->path is the copy */
    f->next_off = f->o.offset;
    f->file_start = -(int64_t)f->o.offset;
    f->reads = calloc(f->o.depth, sizeof(*f->reads));
    if (!f->reads) {
        weir__ep_free_now(&f->ep);
        return -ENOMEM;
    }
    /* The source's own queue only smooths the reads: depth chunks. */
    rc = weir__ep_open_stream(&f->ep, (uint64_t)f->o.depth * f->o.chunk_size);
    if (rc)
        return rc;
    *out = &f->ep;
    return 0;
}
