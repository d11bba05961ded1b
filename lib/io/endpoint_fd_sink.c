/*
 * endpoint_fd_sink.c - the fd sink: the sink plumbing (endpoint_sink.c)
 * on an fd the caller opened: a file (written at its position), a pipe,
 * a terminal, or a connected socket, with or without a TLS session.
 */
#include <errno.h>

#include "endpoint_sink.h"

static int fd_sink_close(struct weir_writable *ws, void *ctx)
{
    (void)ws;
    return weir__ep_sink_close(ep_sink_of(ctx));
}

static const struct weir_sink_ops fd_sink_stream = {
    .write = weir__ep_sink_write,
    .writev = weir__ep_sink_writev,
    .close = fd_sink_close,
};

static void fd_sink_stop(struct weir_endpoint *ep)
{
    weir__ep_sink_stop(ep_sink_of(ep));
}

static int fd_sink_acked(const struct weir_endpoint *ep, uint64_t *acked)
{
    *acked = ep->is_socket && ep->fd >= 0
                 ? weir__ep_queue_acked(ep->fd, ep->bytes)
                 : ep->bytes;
    return 0;
}

static void fd_sink_close_down(struct weir_endpoint *ep)
{
    weir__ep_sink_close_down(ep_sink_of(ep));
}

static void fd_sink_release(struct weir_endpoint *ep)
{
    weir__ep_sink_release(ep_sink_of(ep));
}

static const struct ep_ops fd_sink_ops = {
    .sink = &fd_sink_stream,
    .stop = fd_sink_stop,
    .acked = fd_sink_acked,
    .close = fd_sink_close_down,
    .release = fd_sink_release,
};

int weir_endpoint_fd_sink(struct weir_endpoint **out, struct weir_loop *loop,
                          int fd, const struct weir_fd_sink_options *o)
{
    static const struct weir_fd_sink_options none;
    struct ep_sink *s;
    int rc;

    if (!o)
        o = &none;
    s = weir__ep_new(sizeof(*s), &fd_sink_ops, loop, fd, o->own_fd, o->counter,
                     &o->peer.tcp);
    if (!s)
        return -ENOMEM;
    weir__ep_sink_init(s, NULL, &o->peer, o->linger_ns, o->tls);
    rc = weir__ep_open_stream(&s->ep, o->hwm ? o->hwm : 1u << 20);
    if (rc)
        return rc;
    *out = &s->ep;
    return 0;
}
