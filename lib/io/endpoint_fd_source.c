/*
 * endpoint_fd_source.c - the sequential source: sockets, stdin, pipes.
 * One read in flight into a pool buffer (recv on a socket, read
 * elsewhere, or a read of the fd's TLS session's plaintext); the stream
 * ends when a read returns 0.
 */
#include <errno.h>
#include <sys/socket.h>

#include "endpoint_base.h"
#include "tls_impl.h"

struct fd_source {
    struct weir_endpoint ep;
    struct weir_pool *pool;
    uint32_t chunk_size;
    struct weir_tls_session *tls; /* the session read through, or NULL */
    struct weir_op rd_op;
    struct weir_buf *rd_buf;
    bool reading;
    bool ended;
};

static struct fd_source *fd_source_of(struct weir_endpoint *ep)
{
    return EP_CONTAINER(ep, struct fd_source, ep);
}

static void fdsrc_issue(struct fd_source *f);

static void fdsrc_timer(struct weir_endpoint *ep)
{
    fdsrc_issue(fd_source_of(ep));
}

/* The read completed with res. */
static void fdsrc_result(struct fd_source *f, int res)
{
    struct weir_endpoint *ep = &f->ep;
    struct weir_buf *b = f->rd_buf;

    f->reading = false;
    f->rd_buf = NULL;
    if (weir__ep_op_done(ep) || f->ended) {
        weir_buf_unref(b, ep->slot);
        return;
    }
    if (res > 0) {
        weir__ep_count(ep, (uint32_t)res);
        weir_readable_enqueue(ep->rs, weir_chunk_of(b, (uint32_t)res));
        if (ep->stopping && !ep->destroyed && !f->ended) {
            f->ended = true;
            weir_readable_close(ep->rs);
        }
    } else {
        weir_buf_unref(b, ep->slot);
        f->ended = true;
        if (res == 0 || (res == -ECANCELED && ep->stopping))
            weir_readable_close(ep->rs);
        else
            weir_readable_error(ep->rs, res);
        return;
    }
    if (!ep->destroyed && !f->ended && weir_readable_desired_size(ep->rs) > 0)
        fdsrc_issue(f);
}

static void fdsrc_done(struct weir_op *op, int res, uint32_t flags)
{
    (void)flags;
    fdsrc_result(EP_CONTAINER(op, struct fd_source, rd_op), res);
}

static void fdsrc_tls_done(void *arg, int res)
{
    fdsrc_result(arg, res);
}

static void fdsrc_issue(struct fd_source *f)
{
    struct weir_endpoint *ep = &f->ep;
    struct weir_buf *b;
    int rc;

    if (ep->destroyed || f->ended || f->reading || ep->timer.op.pending)
        return;
    if (ep->stopping) {
        f->ended = true;
        weir_readable_close(ep->rs);
        return;
    }
    if (weir_pool_get(f->pool, &b) != 0) {
        weir__ep_timer(ep, 1000 * 1000, fdsrc_timer);
        return;
    }
    f->rd_op.fn = fdsrc_done;
    if (f->tls)
        rc = weir__tls_read(f->tls, b->data, f->chunk_size, fdsrc_tls_done, f);
    else if (ep->is_socket)
        rc = weir_loop_recv(ep->loop, &f->rd_op, ep->fd, b->data, f->chunk_size,
                            0);
    else
        rc = weir_loop_read(ep->loop, &f->rd_op, ep->fd, b->data, f->chunk_size,
                            (uint64_t)-1);
    if (rc) {
        weir_buf_unref(b, ep->slot);
        if (rc == -EBUSY)
            weir__ep_timer(ep, 1000 * 1000, fdsrc_timer);
        else {
            f->ended = true;
            weir_readable_error(ep->rs, rc);
        }
        return;
    }
    f->rd_buf = b;
    f->reading = true;
    ep_op_started(ep);
}

/* Cancels the read out (the fd's, or the session's) and the retry. */
static void fdsrc_cancel_read(struct fd_source *f)
{
    weir__ep_timer_stop(&f->ep);
    if (f->rd_op.pending)
        weir_loop_cancel(f->ep.loop, &f->rd_op);
    if (f->tls)
        weir__tls_cancel(f->tls, TLS_REQ_READ);
}

static int fdsrc_pull(struct weir_readable *rs, void *ctx)
{
    (void)rs;
    fdsrc_issue(fd_source_of(ctx));
    return 0;
}

static int fdsrc_cancel(struct weir_readable *rs, void *ctx, int reason)
{
    struct fd_source *f = fd_source_of(ctx);

    (void)rs;
    (void)reason;
    f->ended = true;
    fdsrc_cancel_read(f);
    return 0;
}

static const struct weir_source_ops fdsrc_stream = {
    .pull = fdsrc_pull,
    .cancel = fdsrc_cancel,
};

static void fdsrc_stop(struct weir_endpoint *ep)
{
    struct fd_source *f = fd_source_of(ep);

    if (f->ended)
        return;
    ep->stopping = true;
    fdsrc_cancel_read(f);
    if (!f->reading) {
        f->ended = true;
        weir_readable_close(ep->rs);
    }
}

static void fdsrc_close(struct weir_endpoint *ep)
{
    struct fd_source *f = fd_source_of(ep);
    struct weir_tls_session *t = f->tls;

    weir_readable_destroy(ep->rs);
    ep->rs = NULL;
    /* A socket's peer learns at once; the fd itself closes at the free,
     * after the kernel has let go of the read's memory. */
    if (ep->is_socket && ep->fd >= 0)
        shutdown(ep->fd, SHUT_RDWR);
    fdsrc_cancel_read(f);
    if (!t)
        return;
    /* The read ends now and the source's reference goes, so that a
     * session nobody else holds winds its own ops down at once. */
    weir__tls_abort(t, TLS_REQ_READ);
    f->tls = NULL;
    weir__tls_unref(t);
}

static void fdsrc_release(struct weir_endpoint *ep)
{
    struct fd_source *f = fd_source_of(ep);

    if (f->rd_buf)
        weir_buf_unref(f->rd_buf, ep->slot);
    if (f->tls)
        weir__tls_unref(f->tls);
}

static const struct ep_ops fd_source_ops = {
    .source = &fdsrc_stream,
    .stop = fdsrc_stop,
    .close = fdsrc_close,
    .release = fdsrc_release,
};

int weir_endpoint_fd_source(struct weir_endpoint **out, struct weir_loop *loop,
                            struct weir_pool *pool, int fd,
                            const struct weir_fd_source_options *o)
{
    static const struct weir_fd_source_options none;
    struct fd_source *f;
    int rc;

    if (!pool)
        return -EINVAL;
    if (!o)
        o = &none;
    f = weir__ep_new(sizeof(*f), &fd_source_ops, loop, fd, o->own_fd,
                     o->counter, &o->peer.tcp);
    if (!f)
        return -ENOMEM;
    f->pool = pool;
    f->chunk_size = o->chunk_size;
    if (f->chunk_size == 0 || f->chunk_size > weir_pool_buf_size(pool))
        f->chunk_size = (uint32_t)weir_pool_buf_size(pool);
    /* The source's own reference; the caller keeps its own. */
    if (o->tls) {
        f->tls = o->tls;
        weir__tls_ref(f->tls);
        weir__tls_set_reader(f->tls);
    }
    rc = weir__ep_open_stream(&f->ep, 2 * (uint64_t)f->chunk_size);
    if (rc)
        return rc;
    *out = &f->ep;
    return 0;
}
