/*
 * http_curl.c - libcurl's multi-socket interface driven by a weir loop.
 *
 * curl says which sockets it wants watched (CURLMOPT_SOCKETFUNCTION) and
 * when it wants to be called without one (CURLMOPT_TIMERFUNCTION); the
 * loop's one-shot polls and timers answer, and each answer is handed back
 * with curl_multi_socket_action. So curl never blocks the worker and
 * never runs a thread: it reads and writes its sockets only when the loop
 * said they were ready.
 *
 * A watched socket is a struct hsock with one poll pending at a time.
 * When curl changes what it wants, a poll out for the old mask is
 * canceled and the new one starts from its completion. When curl lets a
 * socket go (CURL_POLL_REMOVE, before it closes it), the hsock is
 * detached and freed by its poll's completion: its memory stays valid as
 * long as the loop may name it (mark and reap). Every pending op is
 * counted in the endpoint, so the endpoint too outlives them.
 */
#include <errno.h>
#include <poll.h>
#include <stdlib.h>

#include "../io/sock_util.h"
#include "http_impl.h"

struct hsock {
    struct weir_op op;
    struct hcurl *hc; /* NULL: curl let it go; freed when the poll ends */
    struct weir_endpoint *ep;
    bool in_action; /* its completion is calling curl: it frees it */
    int fd;
    unsigned want;  /* POLLIN | POLLOUT, 0: nothing */
    unsigned armed; /* the mask of the poll out */
};

struct hcurl {
    CURLM *multi;
    struct weir_endpoint *ep;
    struct htimer timer;
    hcurl_done_fn done;
    void *arg;
};

/* ---- timers ---- */

static void htimer_fired(struct weir_op *op, int res, uint32_t flags)
{
    struct htimer *t = EP_CONTAINER(op, struct htimer, t.op);

    (void)res;
    (void)flags;
    t->armed = 0;
    if (weir__ep_op_done(t->ep))
        return;
    if (t->due == 0)
        return;
    if (t->due > weir__mono_ns()) {
        weir__htimer_at(t, t->due); /* canceled for an earlier time */
        return;
    }
    t->due = 0;
    t->fn(t);
}

void weir__htimer_at(struct htimer *t, int64_t due)
{
    int64_t now = weir__mono_ns();

    t->due = due;
    if (t->t.op.pending) {
        /* Its completion re-arms for the new time. */
        if (due < t->armed)
            weir_loop_timer_stop(t->ep->loop, &t->t);
        return;
    }
    t->t.op.fn = htimer_fired;
    if (weir_loop_timer_start(t->ep->loop, &t->t,
                              due > now ? (uint64_t)(due - now) : 0) == 0) {
        t->armed = due;
        ep_op_started(t->ep);
    }
}

void weir__htimer_stop(struct htimer *t)
{
    t->due = 0;
    if (t->t.op.pending)
        weir_loop_timer_stop(t->ep->loop, &t->t);
}

/* ---- sockets ---- */

static void check_done(struct hcurl *hc)
{
    CURLMsg *m;
    int left;

    while ((m = curl_multi_info_read(hc->multi, &left)))
        if (m->msg == CURLMSG_DONE)
            hc->done(hc->arg, m->easy_handle, m->data.result);
}

static void sock_arm(struct hsock *hs);

static void sock_polled(struct weir_op *op, int res, uint32_t flags)
{
    struct hsock *hs = EP_CONTAINER(op, struct hsock, op);
    struct hcurl *hc = hs->hc;
    int running, ev = 0;

    (void)flags;
    hs->armed = 0;
    if (!hc) {
        /* Let go by curl while the poll was out. */
        struct weir_endpoint *ep = hs->ep;

        free(hs);
        weir__ep_op_done(ep);
        return;
    }
    if (weir__ep_op_done(hc->ep))
        return;
    if (res == -ECANCELED) {
        sock_arm(hs); /* for the mask curl wants now */
        return;
    }
    if (res < 0)
        ev = CURL_CSELECT_ERR;
    else {
        if (res & (POLLIN | POLLHUP | POLLRDHUP))
            ev |= CURL_CSELECT_IN;
        if (res & POLLOUT)
            ev |= CURL_CSELECT_OUT;
        if (res & POLLERR)
            ev |= CURL_CSELECT_ERR;
    }
    hs->in_action = true;
    curl_multi_socket_action(hc->multi, hs->fd, ev, &running);
    hs->in_action = false;
    /* curl may have let the socket go, or changed its mask, meanwhile. */
    if (hs->hc)
        sock_arm(hs);
    else if (!hs->op.pending)
        free(hs);
    check_done(hc);
}

static void sock_arm(struct hsock *hs)
{
    struct weir_endpoint *ep = hs->hc->ep;

    if (hs->op.pending || !hs->want)
        return;
    hs->op.fn = sock_polled;
    if (weir_loop_poll(ep->loop, &hs->op, hs->fd, hs->want) == 0) {
        hs->armed = hs->want;
        ep_op_started(ep);
    }
}

static int on_socket(CURL *easy, curl_socket_t fd, int what, void *arg,
                     void *sockp)
{
    struct hcurl *hc = arg;
    struct hsock *hs = sockp;

    (void)easy;
    if (what == CURL_POLL_REMOVE) {
        if (!hs)
            return 0;
        curl_multi_assign(hc->multi, fd, NULL);
        hs->hc = NULL;
        hs->want = 0;
        /* Canceled now, before curl closes the fd; freed when it ends. */
        if (hs->op.pending)
            weir_loop_cancel(hc->ep->loop, &hs->op);
        else if (!hs->in_action)
            free(hs);
        return 0;
    }
    if (!hs) {
        hs = calloc(1, sizeof(*hs));
        if (!hs)
            return -1;
        hs->hc = hc;
        hs->ep = hc->ep;
        hs->fd = fd;
        curl_multi_assign(hc->multi, fd, hs);
    }
    hs->want = (what & CURL_POLL_IN ? POLLIN : 0) |
               (what & CURL_POLL_OUT ? POLLOUT : 0);
    if (hs->op.pending && hs->armed != hs->want)
        weir_loop_cancel(hc->ep->loop, &hs->op);
    else
        sock_arm(hs);
    return 0;
}

/* ---- curl's timer ---- */

static void curl_timeout(struct htimer *t)
{
    struct hcurl *hc = EP_CONTAINER(t, struct hcurl, timer);
    int running;

    curl_multi_socket_action(hc->multi, CURL_SOCKET_TIMEOUT, 0, &running);
    check_done(hc);
}

static int on_timer(CURLM *multi, long ms, void *arg)
{
    struct hcurl *hc = arg;

    (void)multi;
    if (ms < 0)
        weir__htimer_stop(&hc->timer);
    else
        weir__htimer_at(&hc->timer, weir__mono_ns() + ms * 1000000);
    return 0;
}

int weir__hcurl_new(struct hcurl **out, struct weir_endpoint *ep,
                    hcurl_done_fn done, void *arg)
{
    struct hcurl *hc = calloc(1, sizeof(*hc));

    if (!hc)
        return -ENOMEM;
    hc->multi = curl_multi_init();
    if (!hc->multi) {
        free(hc);
        return -ENOMEM;
    }
    hc->ep = ep;
    hc->done = done;
    hc->arg = arg;
    hc->timer.ep = ep;
    hc->timer.fn = curl_timeout;
    curl_multi_setopt(hc->multi, CURLMOPT_SOCKETFUNCTION, on_socket);
    curl_multi_setopt(hc->multi, CURLMOPT_SOCKETDATA, hc);
    curl_multi_setopt(hc->multi, CURLMOPT_TIMERFUNCTION, on_timer);
    curl_multi_setopt(hc->multi, CURLMOPT_TIMERDATA, hc);
    *out = hc;
    return 0;
}

int weir__hcurl_add(struct hcurl *hc, CURL *easy)
{
    return curl_multi_add_handle(hc->multi, easy) == CURLM_OK ? 0 : -ENOMEM;
}

void weir__hcurl_remove(struct hcurl *hc, CURL *easy)
{
    curl_multi_remove_handle(hc->multi, easy);
}

void weir__hcurl_close(struct hcurl *hc)
{
    if (!hc || !hc->multi)
        return;
    /* Every socket comes back through on_socket's REMOVE. */
    curl_multi_cleanup(hc->multi);
    hc->multi = NULL;
    weir__htimer_stop(&hc->timer);
}

void weir__hcurl_free(struct hcurl *hc)
{
    free(hc);
}
