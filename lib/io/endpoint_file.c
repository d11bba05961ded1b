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

#include "endpoint_impl.h"

static void fsrc_issue(struct weir_endpoint *ep);

static void fsrc_end(struct weir_endpoint *ep)
{
    ep->ended = true;
    weir_readable_close(ep->rs);
}

static void fsrc_timer(struct weir_endpoint *ep)
{
    fsrc_issue(ep);
}

static void fsrc_event(struct weir_endpoint *ep, enum weir_endpoint_event ev,
                       uint64_t off)
{
    if (ep->o.on_event)
        ep->o.on_event(ep->o.event_arg, ev, 0, off);
}

/* What is there now is new data, from the start. */
static void fsrc_restart(struct weir_endpoint *ep)
{
    ep->next_off = 0;
    ep->fp_len = 0;
    ep->gen++;
    /* Called with nothing in flight: every byte read so far was the old
     * file's. */
    ep->file_start = (int64_t)ep->bytes;
}

/* Whether the file's first bytes are still the ones read there. */
static bool fsrc_same_head(struct weir_endpoint *ep, uint64_t size)
{
    uint8_t now[sizeof(ep->fp)];

    if (ep->fp_len == 0 || size < ep->fp_len)
        return size >= ep->fp_len;
    return pread(ep->fd, now, ep->fp_len, 0) == (ssize_t)ep->fp_len &&
           memcmp(now, ep->fp, ep->fp_len) == 0;
}

static bool fsrc_refresh_size(struct weir_endpoint *ep)
{
    struct stat st;

    if (ep->fd < 0 || fstat(ep->fd, &st) != 0)
        return false;
    if (ep->o.follow && ep->head == ep->tail && ep->next_off > 0 &&
        ((uint64_t)st.st_size < ep->next_off ||
         !fsrc_same_head(ep, (uint64_t)st.st_size))) {
        fsrc_event(ep, WEIR_EP_TRUNCATED, ep->next_off);
        fsrc_restart(ep);
    }
    ep->size = (uint64_t)st.st_size;
    return ep->next_off < ep->size;
}

/* Keeps the file's first bytes as they are read, for fsrc_same_head. */
static void fsrc_fingerprint(struct weir_endpoint *ep, uint64_t off,
                             const uint8_t *p, uint32_t len)
{
    if (!ep->path || off > ep->fp_len || off >= sizeof(ep->fp))
        return;
    if (len > sizeof(ep->fp) - off)
        len = (uint32_t)(sizeof(ep->fp) - off);
    if (off + len > ep->fp_len) {
        memcpy(ep->fp + off, p, len);
        ep->fp_len = (uint32_t)(off + len);
    }
}

/*
 * Caught up with nothing in flight: has the path moved on to another
 * file? True when reading goes on now (from a new file).
 */
static bool fsrc_follow_path(struct weir_endpoint *ep)
{
    struct stat now, mine;
    int fd;

    if (!ep->path || stat(ep->path, &now) != 0)
        return false; /* gone, not yet replaced: this file is all there is */
    if (ep->fd >= 0) {
        if (fstat(ep->fd, &mine) != 0 ||
            (now.st_dev == mine.st_dev && now.st_ino == mine.st_ino)) {
            ep->rotating = false;
            return false;
        }
        /* Another file, and this one read to its end. Once the new one
         * has bytes its writer has moved on; until then a writer may
         * still append here, so this one must first stay still for a
         * period. */
        if (now.st_size == 0 && (!ep->rotating || ep->size != ep->rot_size)) {
            ep->rotating = true;
            ep->rot_size = ep->size;
            return false;
        }
    }
    fd = open(ep->path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0)
        return false;
    fsrc_event(ep, ep->fd >= 0 ? WEIR_EP_ROTATED : WEIR_EP_APPEARED,
               ep->next_off);
    if (ep->fd >= 0)
        close(ep->fd);
    ep->fd = fd;
    ep->rotating = false;
    ep->size = 0;
    fsrc_restart(ep);
    return true;
}

static void fsrc_read_done(struct weir_op *op, int res, uint32_t flags);

static void fsrc_issue(struct weir_endpoint *ep)
{
    while (!ep->destroyed && !ep->ended && !ep->timer.op.pending &&
           ep->tail - ep->head < ep->o.depth) {
        struct ep_read *r;
        struct weir_buf *b;
        uint64_t len;
        int rc;

        if (ep->stopping) {
            if (ep->head == ep->tail)
                fsrc_end(ep);
            return;
        }
        /* Bytes in flight count against the stream's room, so queue and
         * reads together stay near the high-water mark. */
        if (ep->head != ep->tail &&
            (int64_t)ep->inflight_bytes >= weir_readable_desired_size(ep->rs))
            return;
        if (ep->next_off >= ep->size && !fsrc_refresh_size(ep)) {
            if (ep->head != ep->tail)
                return;
            if (!ep->o.follow) {
                fsrc_end(ep);
                return;
            }
            if (fsrc_follow_path(ep))
                continue; /* a new file: read it */
            weir__ep_timer(ep, ep->o.poll_ns, fsrc_timer);
            return;
        }
        if (weir_pool_get(ep->pool, &b) != 0) {
            /* Every buffer is out: some come home soon. */
            weir__ep_timer(ep, 1000 * 1000, fsrc_timer);
            return;
        }
        len = ep->size - ep->next_off;
        if (len > ep->o.chunk_size)
            len = ep->o.chunk_size;
        r = &ep->reads[ep->tail % ep->o.depth];
        *r = (struct ep_read){.ep = ep,
                              .buf = b,
                              .off = ep->next_off,
                              .len = (uint32_t)len,
                              .gen = ep->gen};
        r->op.fn = fsrc_read_done;
        rc = weir_loop_read(ep->loop, &r->op, ep->fd, b->data, r->len, r->off);
        if (rc) {
            r->buf = NULL;
            weir_buf_unref(b, ep->slot);
            if (rc == -EBUSY)
                weir__ep_timer(ep, 1000 * 1000, fsrc_timer);
            else {
                ep->ended = true;
                weir_readable_error(ep->rs, rc);
            }
            return;
        }
        ep_op_started(ep);
        ep->tail++;
        ep->next_off += len;
        ep->inflight_bytes += len;
    }
}

/* Hands completed reads to the stream in file order. */
static void fsrc_deliver(struct weir_endpoint *ep)
{
    while (ep->head != ep->tail && !ep->destroyed) {
        struct ep_read *r = &ep->reads[ep->head % ep->o.depth];
        struct weir_buf *b = r->buf;

        if (!r->done)
            return;
        ep->head++;
        ep->inflight_bytes -= r->len;
        r->buf = NULL;
        r->done = false;
        if (r->gen != ep->gen || ep->ended || r->res <= 0) {
            weir_buf_unref(b, ep->slot);
            if (r->gen == ep->gen && !ep->ended && r->res < 0) {
                ep->ended = true;
                weir_readable_error(ep->rs, r->res);
                return;
            }
            if (r->gen == ep->gen && r->res == 0) {
                /* Shrank to exactly this offset. */
                ep->gen++;
                ep->next_off = r->off;
                ep->size = r->off;
            }
            continue;
        }
        if ((uint32_t)r->res < r->len) {
            ep->gen++;
            ep->next_off = r->off + (uint32_t)r->res;
            ep->size = ep->next_off;
        }
        weir__ep_count(ep, (uint32_t)r->res);
        fsrc_fingerprint(ep, r->off, b->data, (uint32_t)r->res);
        weir_readable_enqueue(ep->rs, weir_chunk_of(b, (uint32_t)r->res));
    }
}

static void fsrc_read_done(struct weir_op *op, int res, uint32_t flags)
{
    struct ep_read *r = EP_CONTAINER(op, struct ep_read, op);
    struct weir_endpoint *ep = r->ep;

    (void)flags;
    r->res = res;
    r->done = true;
    if (weir__ep_op_done(ep))
        return;
    fsrc_deliver(ep);
    if (!ep->destroyed && !ep->ended && weir_readable_desired_size(ep->rs) > 0)
        fsrc_issue(ep);
}

static int fsrc_pull(struct weir_readable *rs, void *ctx)
{
    (void)rs;
    fsrc_issue(ctx);
    return 0;
}

static int fsrc_cancel(struct weir_readable *rs, void *ctx, int reason)
{
    struct weir_endpoint *ep = ctx;

    (void)rs;
    (void)reason;
    ep->ended = true;
    if (ep->timer.op.pending)
        weir_loop_timer_stop(ep->loop, &ep->timer);
    return 0;
}

int weir_endpoint_file_position(const struct weir_endpoint *ep,
                                struct weir_file_position *pos)
{
    struct stat st;

    if (ep->kind != EP_FILE_SOURCE)
        return -EINVAL;
    if (ep->fd < 0)
        return -ENOENT;
    if (fstat(ep->fd, &st) != 0)
        return -errno;
    pos->dev = (uint64_t)st.st_dev;
    pos->ino = (uint64_t)st.st_ino;
    pos->start = ep->file_start;
    pos->head_len = ep->fp_len;
    memcpy(pos->head, ep->fp, ep->fp_len);
    return 0;
}

static const struct weir_source_ops fsrc_ops = {
    .pull = fsrc_pull,
    .cancel = fsrc_cancel,
};

int weir_endpoint_file_source(struct weir_endpoint **out,
                              struct weir_loop *loop, struct weir_pool *pool,
                              int fd, const struct weir_endpoint_options *o)
{
    struct weir_readable_options ro = {.strategy = {.bytes = true}};
    struct weir_endpoint *ep;
    int rc;

    if (!pool || (o && o->depth > 64) ||
        (fd < 0 && !(o && o->follow && o->follow_path && o->own_fd)))
        return -EINVAL;
    rc = weir__ep_new(&ep, EP_FILE_SOURCE, loop, pool, fd, o);
    if (rc)
        return rc;
    if (ep->o.follow && ep->o.follow_path && ep->o.own_fd) {
        ep->path = strdup(ep->o.follow_path);
        if (!ep->path) {
            weir__ep_free_now(ep);
            return -ENOMEM;
        }
        /* Reading starts past the head: take its fingerprint now. */
        if (fd >= 0 && ep->o.offset > 0) {
            ssize_t n = pread(fd, ep->fp, sizeof(ep->fp), 0);

            ep->fp_len = n > 0 ? (uint32_t)n : 0;
        }
    }
    if (ep->o.depth < 2)
        ep->o.depth = 2;
    ep->next_off = ep->o.offset;
    ep->file_start = -(int64_t)ep->o.offset;
    ep->reads = calloc(ep->o.depth, sizeof(*ep->reads));
    if (!ep->reads) {
        weir__ep_free_now(ep);
        return -ENOMEM;
    }
    /* The source's own queue only smooths the reads: depth chunks. */
    ro.strategy.hwm = (size_t)ep->o.depth * ep->o.chunk_size;
    ro.slot = ep->slot;
    rc = weir_readable_create(&ep->rs, &fsrc_ops, ep, &ro);
    if (rc) {
        weir__ep_free_now(ep);
        return rc;
    }
    *out = ep;
    return 0;
}
