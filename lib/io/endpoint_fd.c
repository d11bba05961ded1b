/*
 * endpoint_fd.c - the sequential source: sockets, stdin, pipes. One read
 * in flight into a pool buffer; the stream ends when a read returns 0.
 */
#include <errno.h>

#include "endpoint_impl.h"

static void fdsrc_issue(struct weir_endpoint *ep);

static void fdsrc_timer(struct weir_endpoint *ep)
{
    fdsrc_issue(ep);
}

void weir__ep_fdsrc_result(struct weir_endpoint *ep, int res)
{
    struct weir_buf *b = ep->rd_buf;

    ep->reading = false;
    ep->rd_buf = NULL;
    if (weir__ep_op_done(ep) || ep->ended) {
        weir_buf_unref(b, ep->slot);
        return;
    }
    if (res > 0) {
        weir__ep_count(ep, (uint32_t)res);
        weir_readable_enqueue(ep->rs, weir_chunk_of(b, (uint32_t)res));
        if (ep->stopping && !ep->destroyed && !ep->ended) {
            ep->ended = true;
            weir_readable_close(ep->rs);
        }
    } else {
        weir_buf_unref(b, ep->slot);
        ep->ended = true;
        if (res == 0 || (res == -ECANCELED && ep->stopping))
            weir_readable_close(ep->rs);
        else
            weir_readable_error(ep->rs, res);
        return;
    }
    if (!ep->destroyed && !ep->ended && weir_readable_desired_size(ep->rs) > 0)
        fdsrc_issue(ep);
}

static void fdsrc_done(struct weir_op *op, int res, uint32_t flags)
{
    (void)flags;
    weir__ep_fdsrc_result(EP_CONTAINER(op, struct weir_endpoint, rd_op), res);
}

static void fdsrc_issue(struct weir_endpoint *ep)
{
    struct weir_buf *b;
    int rc;

    if (ep->destroyed || ep->ended || ep->reading || ep->timer.op.pending)
        return;
    if (ep->stopping) {
        ep->ended = true;
        weir_readable_close(ep->rs);
        return;
    }
    if (weir_pool_get(ep->pool, &b) != 0) {
        weir__ep_timer(ep, 1000 * 1000, fdsrc_timer);
        return;
    }
    ep->rd_op.fn = fdsrc_done;
    if (ep->tls)
        rc = weir__ep_tls_read(ep, b);
    else if (ep->is_socket)
        rc = weir_loop_recv(ep->loop, &ep->rd_op, ep->fd, b->data,
                            ep->o.chunk_size, 0);
    else
        rc = weir_loop_read(ep->loop, &ep->rd_op, ep->fd, b->data,
                            ep->o.chunk_size, (uint64_t)-1);
    if (rc) {
        weir_buf_unref(b, ep->slot);
        if (rc == -EBUSY)
            weir__ep_timer(ep, 1000 * 1000, fdsrc_timer);
        else {
            ep->ended = true;
            weir_readable_error(ep->rs, rc);
        }
        return;
    }
    ep->rd_buf = b;
    ep->reading = true;
    ep_op_started(ep);
}

static int fdsrc_pull(struct weir_readable *rs, void *ctx)
{
    (void)rs;
    fdsrc_issue(ctx);
    return 0;
}

static int fdsrc_cancel(struct weir_readable *rs, void *ctx, int reason)
{
    struct weir_endpoint *ep = ctx;

    (void)rs;
    (void)reason;
    ep->ended = true;
    if (ep->rd_op.pending)
        weir_loop_cancel(ep->loop, &ep->rd_op);
    weir__ep_tls_cancel(ep);
    if (ep->timer.op.pending)
        weir_loop_timer_stop(ep->loop, &ep->timer);
    return 0;
}

static const struct weir_source_ops fdsrc_ops = {
    .pull = fdsrc_pull,
    .cancel = fdsrc_cancel,
};

int weir_endpoint_fd_source(struct weir_endpoint **out, struct weir_loop *loop,
                            struct weir_pool *pool, int fd,
                            const struct weir_endpoint_options *o)
{
    struct weir_readable_options ro = {.strategy = {.bytes = true}};
    struct weir_endpoint *ep;
    int rc;

    if (!pool)
        return -EINVAL;
    rc = weir__ep_new(&ep, EP_FD_SOURCE, loop, pool, fd, o);
    if (rc)
        return rc;
    if (ep->tls)
        weir__tls_set_reader(ep->tls);
    ro.strategy.hwm = 2 * (size_t)ep->o.chunk_size;
    ro.slot = ep->slot;
    rc = weir_readable_create(&ep->rs, &fdsrc_ops, ep, &ro);
    if (rc) {
        weir__ep_free_now(ep);
        return rc;
    }
    *out = ep;
    return 0;
}
