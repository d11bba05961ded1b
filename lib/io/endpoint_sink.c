/*
 * endpoint_sink.c - the fd sink: each batch of queued chunks is one
 * writev (sendmsg on a socket), with one batch in flight; a short write is
 * resumed from where it stopped before the batch completes.
 */
#include <errno.h>
#include <sys/socket.h>

#include "endpoint_impl.h"

int weir__ep_sink_submit(struct weir_endpoint *ep)
{
    struct iovec *iov = ep->iov + ep->iov_at;
    unsigned n = ep->niov - ep->iov_at;
    int rc;

    if (ep->tls)
        return weir__ep_tls_submit(ep);
    ep->wr_op.fn = weir__ep_sink_done;
    if (ep->is_socket) {
        ep->msg = (struct msghdr){.msg_iov = iov, .msg_iovlen = n};
        rc = weir_loop_sendmsg(ep->loop, &ep->wr_op, ep->fd, &ep->msg,
                               MSG_NOSIGNAL);
    } else {
        rc = weir_loop_writev(ep->loop, &ep->wr_op, ep->fd, iov, n,
                              (uint64_t)-1);
    }
    if (rc == 0) {
        ep_op_started(ep);
        if (ep->is_socket)
            weir__ep_io_started(ep, ep->o.send_timeout_ns);
    }
    return rc;
}

static void sink_retry(struct weir_endpoint *ep)
{
    int rc = weir__ep_sink_submit(ep);

    if (rc == -EBUSY)
        rc = weir__ep_timer(ep, 1000 * 1000, sink_retry);
    if (rc) {
        weir__ep_drop_batch(ep);
        weir_writable_write_done(ep->ws, rc);
    }
}

/* Skips n bytes of the batch; true when all of it went out. */
static bool sink_advance(struct weir_endpoint *ep, size_t n)
{
    while (ep->iov_at < ep->niov && n >= ep->iov[ep->iov_at].iov_len) {
        n -= ep->iov[ep->iov_at].iov_len;
        ep->iov_at++;
    }
    if (ep->iov_at == ep->niov)
        return true;
    ep->iov[ep->iov_at].iov_base = (char *)ep->iov[ep->iov_at].iov_base + n;
    ep->iov[ep->iov_at].iov_len -= n;
    return false;
}

void weir__ep_sink_done(struct weir_op *op, int res, uint32_t flags)
{
    struct weir_endpoint *ep = EP_CONTAINER(op, struct weir_endpoint, wr_op);

    (void)flags;
    if (weir__ep_op_done(ep))
        return;
    if (ep->is_socket)
        res = weir__ep_io_result(ep, res);
    if (ep->conn == CONN_REPLAY) {
        weir__ep_replay_sent(ep, res);
        return;
    }
    if (res == -EINTR || res == -EAGAIN) {
        sink_retry(ep);
        return;
    }
    if (res < 0 || (res == 0 && ep->is_socket)) {
        if (res == 0)
            res = -EPIPE;
        if (ep->kind == EP_SOCKET_SINK && weir__ep_socket_lost(ep, res))
            return;
        if (ep->kind == EP_SOCKET_SINK)
            weir__ep_resume_acked(ep); /* the last count: what the peer got */
        ep->failed = res;
        weir__ep_drop_batch(ep);
        weir_writable_write_done(ep->ws, res);
        return;
    }
    if (ep->kind == EP_SOCKET_SINK) {
        int rc = weir__ep_resume_sent(ep, (uint32_t)res);

        if (rc) {
            ep->failed = rc;
            weir__ep_drop_batch(ep);
            weir_writable_write_done(ep->ws, rc);
            return;
        }
    } else {
        weir__ep_count(ep, (uint32_t)res);
    }
    ep->stream_sent += (uint32_t)res;
    ep->conn_sent += (uint32_t)res;
    if (ep->kind == EP_SOCKET_SINK)
        weir__ep_resume_acked(ep); /* counts what the peer acknowledged */
    if (!sink_advance(ep, (uint32_t)res)) {
        sink_retry(ep);
        return;
    }
    weir__ep_drop_batch(ep);
    weir_writable_write_done(ep->ws, 0);
}

int weir__ep_sink_writev(struct weir_writable *ws, void *ctx,
                         const struct weir_chunk *c, unsigned n)
{
    struct weir_endpoint *ep = ctx;
    int rc;

    (void)ws;
    if (ep->failed) {
        /* Asked again from inside the failed write's callbacks, before
         * the stream has errored: fail at once, nothing in flight. */
        for (unsigned i = 0; i < n; i++)
            weir_chunk_unref(&c[i], ep->slot);
        return ep->failed;
    }
    for (unsigned i = 0; i < n; i++) {
        ep->chunks[i] = c[i];
        ep->iov[i] = (struct iovec){c[i].data, c[i].len};
    }
    ep->niov = n;
    ep->iov_at = 0;
    ep->writing = true;
    if (ep->kind == EP_SOCKET_SINK && ep->conn != CONN_UP)
        return WEIR_PENDING; /* the reconnect sends it */
    if (ep->kind == EP_SOCKET_SINK) {
        size_t len = 0;

        for (unsigned i = 0; i < n; i++)
            len += c[i].len;
        if (!weir__ep_resume_room(ep, len))
            return weir__ep_resume_wait(ep);
    }
    rc = weir__ep_sink_submit(ep);
    if (rc == -EBUSY)
        rc = weir__ep_timer(ep, 1000 * 1000, sink_retry);
    if (rc) {
        weir__ep_drop_batch(ep);
        return rc;
    }
    return WEIR_PENDING;
}

int weir__ep_sink_write(struct weir_writable *ws, void *ctx,
                        struct weir_chunk c)
{
    return weir__ep_sink_writev(ws, ctx, &c, 1);
}

/*
 * Lingering close. Closing a socket whose receive queue holds bytes the
 * peer sent makes the kernel reset the connection, and a reset throws away
 * what the peer has not read yet: a client that sent a request (curl, a
 * health check) would lose the tail of the file. So after the last byte
 * the sending side is shut down and what the peer still sends is read and
 * dropped (at most LINGER_MAX) until it closes, or linger_ns have passed.
 */
#define LINGER_MAX (1u << 20)

/* What lingering reads: nobody looks at it, so one per worker does. */
static _Thread_local uint8_t linger_scratch[16384];

static void linger_end(struct weir_endpoint *ep)
{
    if (!ep->lingering)
        return;
    ep->lingering = false;
    if (ep->timer.op.pending)
        weir_loop_timer_stop(ep->loop, &ep->timer);
    if (ep->rd_op.pending)
        weir_loop_cancel(ep->loop, &ep->rd_op);
    if (ep->ws)
        weir_writable_close_done(ep->ws, 0);
}

static int linger_recv(struct weir_endpoint *ep);

static void linger_read_done(struct weir_op *op, int res, uint32_t flags)
{
    struct weir_endpoint *ep = EP_CONTAINER(op, struct weir_endpoint, rd_op);

    (void)flags;
    if (weir__ep_op_done(ep) || !ep->lingering)
        return;
    if (res > 0 && (ep->lingered += (uint64_t)res) < LINGER_MAX &&
        linger_recv(ep) == 0)
        return;
    linger_end(ep); /* the peer closed, failed or sent too much */
}

static int linger_recv(struct weir_endpoint *ep)
{
    int rc;

    ep->rd_op.fn = linger_read_done;
    rc = weir_loop_recv(ep->loop, &ep->rd_op, ep->fd, linger_scratch,
                        sizeof(linger_scratch), 0);
    if (rc == 0)
        ep_op_started(ep);
    return rc;
}

static void linger_timeout(struct weir_endpoint *ep)
{
    linger_end(ep);
}

void weir__ep_linger_stop(struct weir_endpoint *ep)
{
    linger_end(ep);
}

int weir__ep_sink_shut(struct weir_endpoint *ep)
{
    /* The peer sees the end after the data; the fd closes on destroy. */
    if (!ep->is_socket || ep->fd < 0)
        return 0;
    shutdown(ep->fd, SHUT_WR);
    if (ep->o.linger_ns == 0 || ep->stopping || linger_recv(ep) != 0)
        return 0;
    ep->lingering = true;
    if (weir__ep_timer(ep, ep->o.linger_ns, linger_timeout) != 0)
        weir_loop_cancel(ep->loop, &ep->rd_op); /* no bound: no linger */
    return WEIR_PENDING;
}

static int sink_close(struct weir_writable *ws, void *ctx)
{
    struct weir_endpoint *ep = ctx;

    (void)ws;
    if (ep->tls)
        return weir__ep_tls_close(ep);
    return weir__ep_sink_shut(ep);
}

const struct weir_sink_ops weir__ep_fd_sink_ops = {
    .write = weir__ep_sink_write,
    .writev = weir__ep_sink_writev,
    .close = sink_close,
};

int weir_endpoint_fd_sink(struct weir_endpoint **out, struct weir_loop *loop,
                          int fd, const struct weir_endpoint_options *o)
{
    struct weir_writable_options wo;
    struct weir_endpoint *ep;
    int rc = weir__ep_new(&ep, EP_FD_SINK, loop, NULL, fd, o);

    if (rc)
        return rc;
    ep->conn = CONN_UP;
    wo = (struct weir_writable_options){
        .strategy = {.hwm = ep->o.hwm, .bytes = true}, .slot = ep->slot};
    rc = weir_writable_create(&ep->ws, &weir__ep_fd_sink_ops, ep, &wo);
    if (rc) {
        weir__ep_free_now(ep);
        return rc;
    }
    *out = ep;
    return 0;
}
