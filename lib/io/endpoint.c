/*
 * endpoint.c - what every endpoint shares: creation, the retry timer,
 * counters, and destruction by mark and reap.
 */
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <time.h>
#include <sys/stat.h>
#include <unistd.h>

#include "endpoint_impl.h"
#include "sock_util.h"

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
    if (ep->tls)
        weir__tls_unref(ep->tls);
    if (ep->kind == EP_SOCKET_SINK && ep->so.tls)
        weir__tls_ctx_unref(ep->so.tls);
    free(ep->tls_name);
    free(ep->replay_buf);
    free(ep->rb);
    free(ep->host);
    free(ep->addrs);
    free(ep->addrlens);
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

void weir__ep_tcp_tune(struct weir_endpoint *ep, int fd, int family)
{
    if (family == AF_INET || family == AF_INET6)
        weir__tcp_tune(fd, &ep->o.tcp);
}

static int io_arm(struct weir_endpoint *ep, uint64_t ns);

/*
 * The bound of a send or connect that does not move. The timer runs while
 * one is pending; when it fires and nothing moved for the whole bound,
 * the socket is shut down, which makes the op fail at once on both
 * engines, and its callback gets -ETIMEDOUT (weir__ep_io_result).
 */
static void io_fired(struct weir_op *op, int res, uint32_t flags)
{
    struct weir_endpoint *ep =
        EP_CONTAINER(op, struct weir_endpoint, io_timer.op);
    uint64_t bound = 0;
    int64_t idle;

    (void)flags;
    /* -ECANCELED: stopped to be armed sooner (weir__ep_io_started), or
     * the endpoint's end (then op_done says so). */
    if (weir__ep_op_done(ep) || ep->fd < 0)
        return;
    (void)res;
    if (ep->conn == CONN_CONNECTING && ep->conn_op.pending)
        bound = ep->so.connect_timeout_ns;
    else if (ep->wr_op.pending)
        bound = ep->o.send_timeout_ns;
    if (bound == 0)
        return; /* nothing pending: the next op arms it again */
    idle = weir__mono_ns() - ep->io_since;
    if (idle < (int64_t)bound) {
        (void)io_arm(ep, bound - (uint64_t)idle);
        return;
    }
    if (!ep->io_err)
        ep->io_err = -ETIMEDOUT;
    /* Cut: the close resets, so what the peer has not taken stays here
     * (it is resent on a reconnect, or counted as not delivered). */
    weir__sock_reset(ep->fd);
    shutdown(ep->fd, SHUT_RDWR);
}

static int io_arm(struct weir_endpoint *ep, uint64_t ns)
{
    int rc;

    ep->io_deadline = weir__mono_ns() + (int64_t)ns;
    ep->io_timer.op.fn = io_fired;
    rc = weir_loop_timer_start(ep->loop, &ep->io_timer, ns);
    if (rc == 0)
        ep_op_started(ep);
    return rc;
}

void weir__ep_io_started(struct weir_endpoint *ep, uint64_t bound_ns)
{
    if (bound_ns == 0)
        return;
    /* Every submission is a start or follows progress. */
    ep->io_since = weir__mono_ns();
    if (!ep->io_timer.op.pending)
        (void)io_arm(ep, bound_ns); /* no timer: no bound, as before */
    else if (ep->io_deadline > ep->io_since + (int64_t)bound_ns)
        /* Armed for a longer bound (a connect's): its answer re-arms. */
        (void)weir_loop_timer_stop(ep->loop, &ep->io_timer);
}

int weir__ep_io_result(struct weir_endpoint *ep, int res)
{
    if (res > 0) {
        ep->io_since = weir__mono_ns();
        return res;
    }
    if ((res < 0 || ep->is_socket) && ep->io_err) {
        res = ep->io_err;
        ep->io_err = 0;
    }
    return res;
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
    /* The endpoint's own reference; the caller keeps its own. */
    if (ep->o.tls) {
        ep->tls = ep->o.tls;
        weir__tls_ref(ep->tls);
    }
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
    if (ep->is_socket) {
        int family = 0;
        socklen_t len = sizeof(family);

        if (getsockopt(fd, SOL_SOCKET, SO_DOMAIN, &family, &len) == 0)
            weir__ep_tcp_tune(ep, fd, family);
    }
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
    weir__ep_tls_cancel(ep);
    if (ep->io_timer.op.pending)
        weir_loop_timer_stop(ep->loop, &ep->io_timer);
    if (ep->watch_op.pending)
        weir_loop_cancel(ep->loop, &ep->watch_op);
    if (ep->kind == EP_SOCKET_SINK)
        weir__ep_lookup_drop(ep);
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
    weir__ep_tls_detach(ep);
    ep_maybe_reap(ep);
}

void weir_endpoint_stop(struct weir_endpoint *ep)
{
    if (!ep->destroyed && !ep->rs) {
        /* A sink: it closes without lingering from now on. */
        ep->stopping = true;
        weir__ep_linger_stop(ep);
        if (ep->kind == EP_SOCKET_SINK)
            weir__ep_socket_stop(ep);
        return;
    }
    if (ep->destroyed || ep->ended || !ep->rs)
        return;
    ep->stopping = true;
    if (ep->timer.op.pending)
        weir_loop_timer_stop(ep->loop, &ep->timer);
    if (ep->rd_op.pending)
        weir_loop_cancel(ep->loop, &ep->rd_op);
    weir__ep_tls_cancel(ep);
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
