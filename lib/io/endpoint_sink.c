/*
 * endpoint_sink.c - the plumbing of the sinks on an fd (endpoint_sink.h):
 * each batch of queued chunks is one writev (sendmsg on a socket), or one
 * write into the sink's TLS session, with one batch in flight; a short
 * write is resumed from where it stopped before the batch completes. And
 * the sink's end: close_notify, shutdown, and a lingering close.
 */
#include <errno.h>
#include <sys/socket.h>

#include "endpoint_sink.h"

/* A TLS sink with no source on its session reads after close_notify for
 * this long when its options give no linger. */
#define TLS_LINGER_NS (2ull * 1000 * 1000 * 1000)

static const struct ep_sink_hooks plain_hooks;

void weir__ep_sink_init(struct ep_sink *s, const struct ep_sink_hooks *hooks,
                        const struct weir_peer_options *peer,
                        uint64_t linger_ns, struct weir_tls_session *tls)
{
    s->hooks = hooks ? hooks : &plain_hooks;
    s->send_timeout_ns = peer ? peer->send_timeout_ns : 0;
    s->linger_ns = linger_ns;
    /* The sink's own reference; the caller keeps its own. */
    if (tls) {
        s->tls = tls;
        weir__tls_ref(tls);
    }
}

void weir__ep_sink_drop_batch(struct ep_sink *s)
{
    for (unsigned i = 0; i < s->niov; i++)
        weir_chunk_unref(&s->chunks[i], s->ep.slot);
    s->niov = 0;
    s->iov_at = 0;
    s->writing = false;
}

void weir__ep_sink_fail(struct ep_sink *s, int err)
{
    s->failed = err;
    weir__ep_sink_drop_batch(s);
    weir_writable_write_done(s->ep.ws, err);
}

/* ---- through a TLS session ---- */

static void tls_written(void *arg, int res)
{
    struct ep_sink *s = arg;

    if (weir__ep_op_done(&s->ep))
        return;
    if (res < 0) {
        if (s->hooks->lost && s->hooks->lost(s, res, false))
            return;
        weir__ep_sink_fail(s, res);
        return;
    }
    weir__ep_count(&s->ep, (uint32_t)res);
    s->stream_sent += (uint32_t)res;
    s->conn_sent += (uint32_t)res;
    weir__ep_sink_drop_batch(s);
    weir_writable_write_done(s->ep.ws, 0);
}

static int tls_submit(struct ep_sink *s)
{
    int rc = weir__tls_write(s->tls, s->iov + s->iov_at, s->niov - s->iov_at,
                             tls_written, s);

    if (rc == 0)
        ep_op_started(&s->ep);
    return rc;
}

static void tls_closed(void *arg, int res)
{
    struct ep_sink *s = arg;

    if (weir__ep_op_done(&s->ep) || !s->ep.ws)
        return;
    if (res < 0) {
        weir_writable_close_done(s->ep.ws, res);
        return;
    }
    if (s->linger_ns == 0 && !weir__tls_has_reader(s->tls))
        s->linger_ns = TLS_LINGER_NS;
    res = weir__ep_sink_shut(s);
    if (res != WEIR_PENDING)
        weir_writable_close_done(s->ep.ws, res);
}

static int tls_close(struct ep_sink *s)
{
    int rc = weir__tls_shutdown(s->tls, tls_closed, s);

    if (rc)
        return rc;
    ep_op_started(&s->ep);
    return WEIR_PENDING;
}

/* ---- plain ---- */

int weir__ep_sink_submit(struct ep_sink *s)
{
    struct iovec *iov = s->iov + s->iov_at;
    unsigned n = s->niov - s->iov_at;
    int rc;

    if (s->tls)
        return tls_submit(s);
    s->wr_op.fn = weir__ep_sink_done;
    if (s->ep.is_socket) {
        s->msg = (struct msghdr){.msg_iov = iov, .msg_iovlen = n};
        rc = weir_loop_sendmsg(s->ep.loop, &s->wr_op, s->ep.fd, &s->msg,
                               MSG_NOSIGNAL);
    } else {
        rc = weir_loop_writev(s->ep.loop, &s->wr_op, s->ep.fd, iov, n,
                              (uint64_t)-1);
    }
    if (rc == 0) {
        ep_op_started(&s->ep);
        if (s->ep.is_socket)
            weir__ep_io_started(s, s->send_timeout_ns);
    }
    return rc;
}

static void sink_retry(struct weir_endpoint *ep)
{
    struct ep_sink *s = ep_sink_of(ep);
    int rc = weir__ep_sink_submit(s);

    if (rc == -EBUSY)
        rc = weir__ep_timer(ep, 1000 * 1000, sink_retry);
    if (rc) {
        weir__ep_sink_drop_batch(s);
        weir_writable_write_done(ep->ws, rc);
    }
}

/* Skips n bytes of the batch; true when all of it went out. */
static bool sink_advance(struct ep_sink *s, size_t n)
{
    while (s->iov_at < s->niov && n >= s->iov[s->iov_at].iov_len) {
        n -= s->iov[s->iov_at].iov_len;
        s->iov_at++;
    }
    if (s->iov_at == s->niov)
        return true;
    s->iov[s->iov_at].iov_base = (char *)s->iov[s->iov_at].iov_base + n;
    s->iov[s->iov_at].iov_len -= n;
    return false;
}

void weir__ep_sink_done(struct weir_op *op, int res, uint32_t flags)
{
    struct ep_sink *s = EP_CONTAINER(op, struct ep_sink, wr_op);
    int rc;

    (void)flags;
    if (weir__ep_op_done(&s->ep))
        return;
    if (s->ep.is_socket)
        res = weir__ep_io_result(s, res);
    if (s->hooks->own && s->hooks->own(s, res))
        return;
    if (res == -EINTR || res == -EAGAIN) {
        sink_retry(&s->ep);
        return;
    }
    if (res < 0 || (res == 0 && s->ep.is_socket)) {
        if (res == 0)
            res = -EPIPE;
        if (s->hooks->lost && s->hooks->lost(s, res, true))
            return;
        weir__ep_sink_fail(s, res);
        return;
    }
    if (s->hooks->moved) {
        rc = s->hooks->moved(s, (uint32_t)res);
        if (rc) {
            weir__ep_sink_fail(s, rc);
            return;
        }
    } else {
        weir__ep_count(&s->ep, (uint32_t)res);
        s->stream_sent += (uint32_t)res;
        s->conn_sent += (uint32_t)res;
    }
    if (!sink_advance(s, (uint32_t)res)) {
        sink_retry(&s->ep);
        return;
    }
    weir__ep_sink_drop_batch(s);
    weir_writable_write_done(s->ep.ws, 0);
}

int weir__ep_sink_writev(struct weir_writable *ws, void *ctx,
                         const struct weir_chunk *c, unsigned n)
{
    struct ep_sink *s = ep_sink_of(ctx);
    size_t len = 0;
    int rc;

    (void)ws;
    if (s->failed) {
        /* Asked again from inside the failed write's callbacks, before
         * the stream has errored: fail at once, nothing in flight. */
        for (unsigned i = 0; i < n; i++)
            weir_chunk_unref(&c[i], s->ep.slot);
        return s->failed;
    }
    for (unsigned i = 0; i < n; i++) {
        s->chunks[i] = c[i];
        s->iov[i] = (struct iovec){c[i].data, c[i].len};
        len += c[i].len;
    }
    s->niov = n;
    s->iov_at = 0;
    s->writing = true;
    if (s->hooks->hold && (rc = s->hooks->hold(s, len)) != 0)
        return rc; /* held (the kind sends it), or dropped with its error */
    rc = weir__ep_sink_submit(s);
    if (rc == -EBUSY)
        rc = weir__ep_timer(&s->ep, 1000 * 1000, sink_retry);
    if (rc) {
        weir__ep_sink_drop_batch(s);
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

static void linger_end(struct ep_sink *s)
{
    if (!s->lingering)
        return;
    s->lingering = false;
    weir__ep_timer_stop(&s->ep);
    if (s->rd_op.pending)
        weir_loop_cancel(s->ep.loop, &s->rd_op);
    if (s->ep.ws)
        weir_writable_close_done(s->ep.ws, 0);
}

static int linger_recv(struct ep_sink *s);

static void linger_read_done(struct weir_op *op, int res, uint32_t flags)
{
    struct ep_sink *s = EP_CONTAINER(op, struct ep_sink, rd_op);

    (void)flags;
    if (weir__ep_op_done(&s->ep) || !s->lingering)
        return;
    if (res > 0 && (s->lingered += (uint64_t)res) < LINGER_MAX &&
        linger_recv(s) == 0)
        return;
    linger_end(s); /* the peer closed, failed or sent too much */
}

static int linger_recv(struct ep_sink *s)
{
    int rc;

    s->rd_op.fn = linger_read_done;
    rc = weir_loop_recv(s->ep.loop, &s->rd_op, s->ep.fd, linger_scratch,
                        sizeof(linger_scratch), 0);
    if (rc == 0)
        ep_op_started(&s->ep);
    return rc;
}

static void linger_timeout(struct weir_endpoint *ep)
{
    linger_end(ep_sink_of(ep));
}

void weir__ep_sink_stop(struct ep_sink *s)
{
    s->ep.stopping = true;
    linger_end(s);
}

int weir__ep_sink_shut(struct ep_sink *s)
{
    /* The peer sees the end after the data; the fd closes on destroy. */
    if (!s->ep.is_socket || s->ep.fd < 0)
        return 0;
    shutdown(s->ep.fd, SHUT_WR);
    if (s->linger_ns == 0 || s->ep.stopping || linger_recv(s) != 0)
        return 0;
    s->lingering = true;
    if (weir__ep_timer(&s->ep, s->linger_ns, linger_timeout) != 0)
        weir_loop_cancel(s->ep.loop, &s->rd_op); /* no bound: no linger */
    return WEIR_PENDING;
}

int weir__ep_sink_close(struct ep_sink *s)
{
    if (s->tls)
        return tls_close(s);
    return weir__ep_sink_shut(s);
}

/* ---- the end ---- */

void weir__ep_sink_close_down(struct ep_sink *s)
{
    struct weir_tls_session *t = s->tls;

    /* A batch still out stays with the kernel (and the writable waits for
     * its answer) until the free. */
    if (s->ep.ws && !s->writing) {
        weir_writable_destroy(s->ep.ws);
        s->ep.ws = NULL;
    }
    /* A socket's peer learns at once; the fd itself closes at the free,
     * after the kernel has let go of the ops' memory. */
    if (s->ep.is_socket && s->ep.fd >= 0)
        shutdown(s->ep.fd, SHUT_RDWR);
    if (s->rd_op.pending)
        weir_loop_cancel(s->ep.loop, &s->rd_op);
    if (s->wr_op.pending)
        weir_loop_cancel(s->ep.loop, &s->wr_op);
    weir__ep_io_cancel(s);
    if (!t)
        return;
    weir__tls_cancel(t, TLS_REQ_READY);
    weir__tls_cancel(t, TLS_REQ_WRITE);
    weir__tls_cancel(t, TLS_REQ_SHUTDOWN);
    /* The requests end now and the sink's reference goes, so that a
     * session nobody else holds winds its own ops down at once. */
    weir__tls_abort(t, TLS_REQ_READY);
    weir__tls_abort(t, TLS_REQ_WRITE);
    weir__tls_abort(t, TLS_REQ_SHUTDOWN);
    s->tls = NULL;
    weir__tls_unref(t);
}

void weir__ep_sink_release(struct ep_sink *s)
{
    if (s->ep.ws) {
        /* A write was in flight at destroy: its writer (a finished pipe)
         * still waits for the answer before it frees itself. */
        struct weir_writable *ws = s->ep.ws;

        s->ep.ws = NULL;
        weir__ep_sink_drop_batch(s);
        weir_writable_write_done(ws, -ECANCELED);
        weir_writable_destroy(ws);
    }
    if (s->tls)
        weir__tls_unref(s->tls);
}
