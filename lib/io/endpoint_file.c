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
 * collector does not need sub-period latency. A size below the offset
 * read so far means the file was truncated (logrotate's copytruncate):
 * reading starts again from 0.
 */
#include <errno.h>
#include <stdlib.h>
#include <sys/stat.h>

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

static bool fsrc_refresh_size(struct weir_endpoint *ep)
{
    struct stat st;

    if (fstat(ep->fd, &st) != 0)
        return false;
    if ((uint64_t)st.st_size < ep->next_off && ep->o.follow &&
        ep->head == ep->tail) {
        /* Truncated: what is there now is new data, from the start. */
        ep->next_off = 0;
        ep->gen++;
    }
    ep->size = (uint64_t)st.st_size;
    return ep->next_off < ep->size;
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
            if (!ep->o.follow)
                fsrc_end(ep);
            else
                ep_timer(ep, ep->o.poll_ns, fsrc_timer);
            return;
        }
        if (weir_pool_get(ep->pool, &b) != 0) {
            /* Every buffer is out: some come home soon. */
            ep_timer(ep, 1000 * 1000, fsrc_timer);
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
                ep_timer(ep, 1000 * 1000, fsrc_timer);
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
        ep_count(ep, (uint32_t)r->res);
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
    if (ep_op_done(ep))
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

    if (!pool || (o && o->depth > 64))
        return -EINVAL;
    rc = ep_new(&ep, EP_FILE_SOURCE, loop, pool, fd, o);
    if (rc)
        return rc;
    if (ep->o.depth < 2)
        ep->o.depth = 2;
    ep->next_off = ep->o.offset;
    ep->reads = calloc(ep->o.depth, sizeof(*ep->reads));
    if (!ep->reads) {
        ep_free_now(ep);
        return -ENOMEM;
    }
    /* The source's own queue only smooths the reads: depth chunks. */
    ro.strategy.hwm = (size_t)ep->o.depth * ep->o.chunk_size;
    ro.slot = ep->slot;
    rc = weir_readable_create(&ep->rs, &fsrc_ops, ep, &ro);
    if (rc) {
        ep_free_now(ep);
        return rc;
    }
    *out = ep;
    return 0;
}
