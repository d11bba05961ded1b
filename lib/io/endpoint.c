/*
 * endpoint.c - what every endpoint shares: creation, the retry timer,
 * counters, and destruction by mark and reap.
 */
#include <errno.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "endpoint_impl.h"

static void ep_reap(struct weir_reap *r)
{
    weir__ep_free_now(EP_CONTAINER(r, struct weir_endpoint, reap));
}

void weir__ep_free_now(struct weir_endpoint *ep)
{
    if (ep->ws) {
        /* A write was in flight at destroy: its writer (a finished pipe)
         * still waits for the answer before it frees itself. */
        struct weir_writable *ws = ep->ws;

        ep->ws = NULL;
        weir__ep_drop_batch(ep);
        weir_writable_write_done(ws, -ECANCELED);
        weir_writable_destroy(ws);
    }
    if (ep->o.own_fd && ep->fd >= 0)
        close(ep->fd);
    if (ep->reads) {
        for (uint32_t i = 0; i < ep->o.depth; i++)
            if (ep->reads[i].buf)
                weir_buf_unref(ep->reads[i].buf, ep->slot);
        free(ep->reads);
    }
    if (ep->rd_buf)
        weir_buf_unref(ep->rd_buf, ep->slot);
    free(ep->replay_buf);
    free(ep->path);
    free(ep);
}

static void ep_maybe_reap(struct weir_endpoint *ep)
{
    if (ep->destroyed && ep->inflight == 0 && !ep->reaping) {
        ep->reaping = true;
        ep->reap.fn = ep_reap;
        weir_loop_defer(ep->loop, &ep->reap);
    }
}

bool weir__ep_op_done(struct weir_endpoint *ep)
{
    ep->inflight--;
    if (!ep->destroyed)
        return false;
    ep_maybe_reap(ep);
    return true;
}

static void ep_timer_fired(struct weir_op *op, int res, uint32_t flags)
{
    struct weir_endpoint *ep = EP_CONTAINER(op, struct weir_endpoint, timer.op);

    (void)flags;
    if (weir__ep_op_done(ep) || res == -ECANCELED)
        return;
    ep->on_timer(ep);
}

int weir__ep_timer(struct weir_endpoint *ep, uint64_t ns,
                   void (*fn)(struct weir_endpoint *ep))
{
    int rc;

    if (ep->timer.op.pending)
        return 0;
    ep->on_timer = fn;
    ep->timer.op.fn = ep_timer_fired;
    rc = weir_loop_timer_start(ep->loop, &ep->timer, ns);
    if (rc == 0)
        ep_op_started(ep);
    return rc;
}

void weir__ep_count(struct weir_endpoint *ep, uint64_t n)
{
    ep->bytes += n;
    if (ep->o.counter)
        /* Relaxed: a statistic sampled by another thread; it orders
         * nothing and pairs with nothing. */
        atomic_fetch_add_explicit(ep->o.counter, n, memory_order_relaxed);
}

void weir__ep_drop_batch(struct weir_endpoint *ep)
{
    for (unsigned i = 0; i < ep->niov; i++)
        weir_chunk_unref(&ep->chunks[i], ep->slot);
    ep->niov = 0;
    ep->iov_at = 0;
    ep->writing = false;
}

int weir__ep_new(struct weir_endpoint **out, enum ep_kind kind,
                 struct weir_loop *loop, struct weir_pool *pool, int fd,
                 const struct weir_endpoint_options *o)
{
    struct weir_endpoint *ep = calloc(1, sizeof(*ep));
    struct stat st;

    if (!ep) {
        if (o && o->own_fd && fd >= 0)
            close(fd);
        return -ENOMEM;
    }
    ep->kind = kind;
    ep->loop = loop;
    ep->pool = pool;
    ep->slot = weir_loop_slot(loop);
    ep->fd = fd;
    if (o)
        ep->o = *o;
    if (ep->o.hwm == 0)
        ep->o.hwm = 1u << 20;
    if (ep->o.depth == 0)
        ep->o.depth = 4;
    if (ep->o.poll_ns == 0)
        ep->o.poll_ns = 100 * 1000 * 1000ull;
    if (pool &&
        (ep->o.chunk_size == 0 || ep->o.chunk_size > weir_pool_buf_size(pool)))
        ep->o.chunk_size = (uint32_t)weir_pool_buf_size(pool);
    ep->is_socket = fd >= 0 && fstat(fd, &st) == 0 && S_ISSOCK(st.st_mode);
    *out = ep;
    return 0;
}

struct weir_readable *weir_endpoint_readable(struct weir_endpoint *ep)
{
    return ep->rs;
}

struct weir_writable *weir_endpoint_writable(struct weir_endpoint *ep)
{
    return ep->ws;
}

uint64_t weir_endpoint_bytes(const struct weir_endpoint *ep)
{
    return ep->bytes;
}

static void ep_cancel_ops(struct weir_endpoint *ep)
{
    if (ep->timer.op.pending)
        weir_loop_timer_stop(ep->loop, &ep->timer);
    if (ep->rd_op.pending)
        weir_loop_cancel(ep->loop, &ep->rd_op);
    if (ep->wr_op.pending)
        weir_loop_cancel(ep->loop, &ep->wr_op);
    if (ep->conn_op.pending)
        weir_loop_cancel(ep->loop, &ep->conn_op);
    for (uint32_t s = ep->head; ep->reads && s != ep->tail; s++) {
        struct ep_read *r = &ep->reads[s % ep->o.depth];

        if (r->op.pending)
            weir_loop_cancel(ep->loop, &r->op);
    }
}

void weir_endpoint_destroy(struct weir_endpoint *ep)
{
    if (ep->destroyed)
        return;
    ep->destroyed = true;
    if (ep->rs)
        weir_readable_destroy(ep->rs);
    ep->rs = NULL;
    /* A batch still out stays with the kernel (and the writable waits for
     * its answer) until the free. */
    if (ep->ws && !ep->writing) {
        weir_writable_destroy(ep->ws);
        ep->ws = NULL;
    }
    /* A socket's peer learns at once; the fd itself closes at the free,
     * after the kernel has let go of the ops' memory. */
    if (ep->is_socket && ep->fd >= 0)
        shutdown(ep->fd, SHUT_RDWR);
    ep_cancel_ops(ep);
    ep_maybe_reap(ep);
}

void weir_endpoint_stop(struct weir_endpoint *ep)
{
    if (!ep->destroyed && !ep->rs) {
        /* A sink: it closes without lingering from now on. */
        ep->stopping = true;
        weir__ep_linger_stop(ep);
        return;
    }
    if (ep->destroyed || ep->ended || !ep->rs)
        return;
    ep->stopping = true;
    if (ep->timer.op.pending)
        weir_loop_timer_stop(ep->loop, &ep->timer);
    if (ep->rd_op.pending)
        weir_loop_cancel(ep->loop, &ep->rd_op);
    if ((ep->kind == EP_FILE_SOURCE && ep->head == ep->tail) ||
        (ep->kind == EP_FD_SOURCE && !ep->reading)) {
        ep->ended = true;
        weir_readable_close(ep->rs);
    }
}

/* ---- null sink ---- */

static int null_write(struct weir_writable *ws, void *ctx, struct weir_chunk c)
{
    struct weir_endpoint *ep = ctx;

    (void)ws;
    weir__ep_count(ep, c.len);
    weir_chunk_unref(&c, ep->slot);
    return 0;
}

static const struct weir_sink_ops null_ops = {.write = null_write};

int weir_endpoint_null_sink(struct weir_endpoint **out, struct weir_loop *loop,
                            const struct weir_endpoint_options *o)
{
    struct weir_endpoint *ep;
    struct weir_writable_options wo;
    int rc = weir__ep_new(&ep, EP_NULL_SINK, loop, NULL, -1, o);

    if (rc)
        return rc;
    wo = (struct weir_writable_options){
        .strategy = {.hwm = ep->o.hwm, .bytes = true}, .slot = ep->slot};
    rc = weir_writable_create(&ep->ws, &null_ops, ep, &wo);
    if (rc) {
        weir__ep_free_now(ep);
        return rc;
    }
    *out = ep;
    return 0;
}

void weir_endpoint_cut(struct weir_endpoint *ep)
{
    if (!ep->destroyed && ep->kind == EP_SOCKET_SINK)
        weir__ep_socket_cut(ep);
}
