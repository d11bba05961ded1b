/*
 * endpoint_tls.c - fd sinks, socket sinks and fd sources whose bytes go
 * through a TLS session (tls.c) instead of straight to the socket. The
 * session owns the socket's I/O; these are the endpoints' ends of its
 * requests, shaped like the completions of the plain paths they replace.
 */
#include <errno.h>

#include "endpoint_impl.h"

/* A TLS sink with no source on its session reads after close_notify for
 * this long when its options give no linger. */
#define TLS_LINGER_NS (2ull * 1000 * 1000 * 1000)

static void tls_written(void *arg, int res)
{
    struct weir_endpoint *ep = arg;

    if (weir__ep_op_done(ep))
        return;
    if (res < 0) {
        if (ep->kind == EP_SOCKET_SINK && weir__ep_socket_lost(ep, res))
            return;
        ep->failed = res;
        weir__ep_drop_batch(ep);
        weir_writable_write_done(ep->ws, res);
        return;
    }
    weir__ep_count(ep, (uint32_t)res);
    ep->stream_sent += (uint32_t)res;
    ep->conn_sent += (uint32_t)res;
    weir__ep_drop_batch(ep);
    weir_writable_write_done(ep->ws, 0);
}

int weir__ep_tls_submit(struct weir_endpoint *ep)
{
    int rc = weir__tls_write(ep->tls, ep->iov + ep->iov_at,
                             ep->niov - ep->iov_at, tls_written, ep);

    if (rc == 0)
        ep_op_started(ep);
    return rc;
}

static void tls_closed(void *arg, int res)
{
    struct weir_endpoint *ep = arg;

    if (weir__ep_op_done(ep) || !ep->ws)
        return;
    if (res < 0) {
        weir_writable_close_done(ep->ws, res);
        return;
    }
    if (ep->o.linger_ns == 0 && !weir__tls_has_reader(ep->tls))
        ep->o.linger_ns = TLS_LINGER_NS;
    res = weir__ep_sink_shut(ep);
    if (res != WEIR_PENDING)
        weir_writable_close_done(ep->ws, res);
}

int weir__ep_tls_close(struct weir_endpoint *ep)
{
    int rc = weir__tls_shutdown(ep->tls, tls_closed, ep);

    if (rc)
        return rc;
    ep_op_started(ep);
    return WEIR_PENDING;
}

static void tls_read_done(void *arg, int res)
{
    weir__ep_fdsrc_result(arg, res);
}

int weir__ep_tls_read(struct weir_endpoint *ep, struct weir_buf *b)
{
    return weir__tls_read(ep->tls, b->data, ep->o.chunk_size, tls_read_done,
                          ep);
}

void weir__ep_tls_detach(struct weir_endpoint *ep)
{
    struct weir_tls_session *t = ep->tls;

    if (!t)
        return;
    if (ep->kind == EP_FD_SOURCE) {
        weir__tls_abort(t, TLS_REQ_READ);
    } else {
        weir__tls_abort(t, TLS_REQ_READY);
        weir__tls_abort(t, TLS_REQ_WRITE);
        weir__tls_abort(t, TLS_REQ_SHUTDOWN);
    }
    ep->tls = NULL;
    weir__tls_unref(t);
}

void weir__ep_tls_cancel(struct weir_endpoint *ep)
{
    if (!ep->tls)
        return;
    if (ep->kind == EP_FD_SOURCE) {
        weir__tls_cancel(ep->tls, TLS_REQ_READ);
        return;
    }
    weir__tls_cancel(ep->tls, TLS_REQ_READY);
    weir__tls_cancel(ep->tls, TLS_REQ_WRITE);
    weir__tls_cancel(ep->tls, TLS_REQ_SHUTDOWN);
}
