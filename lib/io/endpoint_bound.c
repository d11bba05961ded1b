/*
 * endpoint_bound.c - the bound on a sink's send (or a socket sink's
 * connect) that does not move. The io timer runs while one is pending;
 * when it fires and nothing moved for the whole bound, the socket is shut
 * down, which makes the op fail at once on both engines, and its callback
 * gets -ETIMEDOUT (weir__ep_io_result).
 */
#include <errno.h>
#include <sys/socket.h>

#include "endpoint_sink.h"
#include "sock_util.h"

static int io_arm(struct ep_sink *s, uint64_t ns);

/* The bound of what is pending now: the kind's, or a send's. */
static uint64_t io_bound(const struct ep_sink *s)
{
    if (s->hooks->bound)
        return s->hooks->bound(s);
    return s->wr_op.pending ? s->send_timeout_ns : 0;
}

static void io_fired(struct weir_op *op, int res, uint32_t flags)
{
    struct ep_sink *s = EP_CONTAINER(op, struct ep_sink, io_timer.op);
    uint64_t bound;
    int64_t idle;

    (void)flags;
    /* -ECANCELED: stopped to be armed sooner (weir__ep_io_started), or
     * the endpoint's end (then op_done says so). */
    if (weir__ep_op_done(&s->ep) || s->ep.fd < 0)
        return;
    (void)res;
    bound = io_bound(s);
    if (bound == 0)
        return; /* nothing pending: the next op arms it again */
    idle = weir__mono_ns() - s->io_since;
    if (idle < (int64_t)bound) {
        (void)io_arm(s, bound - (uint64_t)idle);
        return;
    }
    if (!s->io_err)
        s->io_err = -ETIMEDOUT;
    /* Cut: the close resets, so what the peer has not taken stays here
     * (it is resent on a reconnect, or counted as not delivered). */
    weir__sock_reset(s->ep.fd);
    shutdown(s->ep.fd, SHUT_RDWR);
}

static int io_arm(struct ep_sink *s, uint64_t ns)
{
    int rc;

    s->io_deadline = weir__mono_ns() + (int64_t)ns;
    s->io_timer.op.fn = io_fired;
    rc = weir_loop_timer_start(s->ep.loop, &s->io_timer, ns);
    if (rc == 0)
        ep_op_started(&s->ep);
    return rc;
}

void weir__ep_io_started(struct ep_sink *s, uint64_t bound_ns)
{
    if (bound_ns == 0)
        return;
    /* Every submission is a start or follows progress. */
    s->io_since = weir__mono_ns();
    if (!s->io_timer.op.pending)
        (void)io_arm(s, bound_ns); /* no timer: no bound, as before */
    else if (s->io_deadline > s->io_since + (int64_t)bound_ns)
        /* Armed for a longer bound (a connect's): its answer re-arms. */
        (void)weir_loop_timer_stop(s->ep.loop, &s->io_timer);
}

int weir__ep_io_result(struct ep_sink *s, int res)
{
    if (res > 0) {
        s->io_since = weir__mono_ns();
        return res;
    }
    if ((res < 0 || s->ep.is_socket) && s->io_err) {
        res = s->io_err;
        s->io_err = 0;
    }
    return res;
}

void weir__ep_io_cancel(struct ep_sink *s)
{
    if (s->io_timer.op.pending)
        weir_loop_timer_stop(s->ep.loop, &s->io_timer);
}
