/*
 * endpoint.c - the base every endpoint kind embeds: creation, the retry
 * timer, counters, destruction by mark and reap, and the public calls,
 * which reach the kind through its ops (endpoint_base.h).
 */
#include <errno.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "endpoint_base.h"
#include "sock_util.h"

static void ep_reap(struct weir_reap *r)
{
    weir__ep_free_now(EP_CONTAINER(r, struct weir_endpoint, reap));
}

void weir__ep_free_now(struct weir_endpoint *ep)
{
    if (ep->ops->release)
        ep->ops->release(ep);
    if (ep->own_fd && ep->fd >= 0)
        close(ep->fd);
    free(ep); /* the kind's struct: the base is its first member */
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

void weir__ep_timer_stop(struct weir_endpoint *ep)
{
    if (ep->timer.op.pending)
        weir_loop_timer_stop(ep->loop, &ep->timer);
}

void weir__ep_count(struct weir_endpoint *ep, uint64_t n)
{
    ep->bytes += n;
    if (ep->counter)
        /* Relaxed: a statistic sampled by another thread; it orders
         * nothing and pairs with nothing. */
        atomic_fetch_add_explicit(ep->counter, n, memory_order_relaxed);
}

void weir__ep_tcp_tune(const struct weir_tcp_options *t, int fd, int family)
{
    if (t && (family == AF_INET || family == AF_INET6))
        weir__tcp_tune(fd, t);
}

void *weir__ep_new(size_t size, const struct ep_ops *ops,
                   struct weir_loop *loop, int fd, bool own_fd,
                   _Atomic uint64_t *counter,
                   const struct weir_tcp_options *tcp)
{
    struct weir_endpoint *ep = calloc(1, size);
    struct stat st;

    if (!ep) {
        if (own_fd && fd >= 0)
            close(fd);
        return NULL;
    }
    ep->ops = ops;
    ep->loop = loop;
    ep->slot = weir_loop_slot(loop);
    ep->fd = fd;
    ep->own_fd = own_fd;
    ep->counter = counter;
    ep->is_socket = fd >= 0 && fstat(fd, &st) == 0 && S_ISSOCK(st.st_mode);
    if (ep->is_socket) {
        int family = 0;
        socklen_t len = sizeof(family);

        if (getsockopt(fd, SOL_SOCKET, SO_DOMAIN, &family, &len) == 0)
            weir__ep_tcp_tune(tcp, fd, family);
    }
    return ep;
}

int weir__ep_open_stream(struct weir_endpoint *ep, uint64_t hwm)
{
    int rc;

    if (ep->ops->source) {
        struct weir_readable_options ro = {
            .strategy = {.hwm = hwm, .bytes = true}, .slot = ep->slot};

        rc = weir_readable_create(&ep->rs, ep->ops->source, ep, &ro);
    } else {
        struct weir_writable_options wo = {
            .strategy = {.hwm = hwm, .bytes = true}, .slot = ep->slot};

        rc = weir_writable_create(&ep->ws, ep->ops->sink, ep, &wo);
    }
    if (rc)
        weir__ep_free_now(ep);
    return rc;
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

int weir_endpoint_acked(const struct weir_endpoint *ep, uint64_t *acked)
{
    return ep->ops->acked ? ep->ops->acked(ep, acked) : -EINVAL;
}

int weir_endpoint_file_position(const struct weir_endpoint *ep,
                                struct weir_file_position *pos)
{
    return ep->ops->position ? ep->ops->position(ep, pos) : -EINVAL;
}

void weir_endpoint_destroy(struct weir_endpoint *ep)
{
    if (ep->destroyed)
        return;
    ep->destroyed = true;
    ep->ops->close(ep);
    weir__ep_timer_stop(ep);
    ep_maybe_reap(ep);
}

void weir_endpoint_stop(struct weir_endpoint *ep)
{
    if (!ep->destroyed && ep->ops->stop)
        ep->ops->stop(ep);
}

void weir_endpoint_cut(struct weir_endpoint *ep)
{
    if (!ep->destroyed && ep->ops->cut)
        ep->ops->cut(ep);
}
