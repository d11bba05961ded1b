/*
 * http_park.c - see http_park.h. A parked connection goes back and forth
 * between two threads, one task at a time each way:
 *
 *   worker  http_lot_park: made, `task` posted to main (arrive)
 *   main    arrive: counted and held, or closed if the lot is; `task`
 *           posted back (watch)
 *   worker  watch: a poll for the request, a timer for the deadline;
 *           the first of them to come back cancels the other, and once
 *           neither is pending `task` goes to main (left)
 *   main    left: a wake makes a stream of the socket, a deadline closes
 *           it; freed once any stop it was sent is answered
 *
 * A close (http_lot_close) posts `stop` to the worker, which ends the
 * watch and answers with the same task; main frees the struct only when
 * both `left` and that answer are in, so no task of it is left queued.
 */
#include "serve/http_park.h"

#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

struct http_park {
    struct http_lot *lot;
    struct weir_list link; /* main: in lot->parked */
    struct weir_loop *loop;
    struct http_parked pc;   /* pc.fd: the socket watched */
    struct weir_op poll_op;  /* worker */
    struct weir_timer timer; /* worker */
    struct weir_task task;   /* arrive, watch, left (above) */
    struct weir_task stop;   /* a close, and its answer */
    bool woke, expired;      /* worker: why it left */
    bool leaving, left_posted;
    bool left_seen, stop_posted, stop_acked; /* main */
};

static int64_t now_ns(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

void http_lot_init(struct http_lot *lot, struct weir_loop *main,
                   struct alive *alive, struct http_counts *counts,
                   void (*wake)(void *, int, const struct http_parked *),
                   void *owner)
{
    *lot = (struct http_lot){
        .main = main,
        .alive = alive,
        .counts = counts,
        .wake = wake,
        .owner = owner,
    };
    weir_list_init(&lot->parked);
}

/* ---- main thread ---- */

static void maybe_free(struct http_park *p)
{
    if (!p->left_seen || (p->stop_posted && !p->stop_acked))
        return;
    alive_drop(p->lot->alive);
    free(p);
}

static void left_main(struct weir_task *t)
{
    struct http_park *p = weir_container_of(t, struct http_park, task);
    struct http_lot *lot = p->lot;

    weir_list_remove(&p->link);
    lot->nparked--;
    p->left_seen = true;
    if (p->woke && !lot->closed) {
        lot->wake(lot->owner, p->pc.fd, &p->pc);
    } else {
        if (p->expired && lot->counts)
            /* Relaxed: a statistic; it orders nothing. */
            atomic_fetch_add_explicit(&lot->counts->timeouts, 1,
                                      memory_order_relaxed);
        close(p->pc.fd);
    }
    p->pc.fd = -1;
    maybe_free(p);
}

static void stop_acked(struct weir_task *t)
{
    struct http_park *p = weir_container_of(t, struct http_park, stop);

    p->stop_acked = true;
    maybe_free(p);
}

static void watch_worker(struct weir_task *t);

static void arrive_main(struct weir_task *t)
{
    struct http_park *p = weir_container_of(t, struct http_park, task);
    struct http_lot *lot = p->lot;

    if (lot->closed) {
        close(p->pc.fd);
        free(p);
        return;
    }
    weir_list_push_tail(&lot->parked, &p->link);
    lot->nparked++;
    alive_hold(lot->alive);
    weir_task_init(&p->task, watch_worker);
    weir_loop_post(p->loop, &p->task);
}

/* ---- the worker ---- */

static void maybe_left(struct http_park *p)
{
    if (!p->leaving || p->left_posted || p->poll_op.pending ||
        p->timer.op.pending)
        return;
    p->left_posted = true;
    weir_task_init(&p->task, left_main);
    weir_loop_post(p->lot->main, &p->task);
}

static void leave(struct http_park *p)
{
    if (!p->leaving) {
        p->leaving = true;
        if (p->poll_op.pending)
            weir_loop_cancel(p->loop, &p->poll_op);
        if (p->timer.op.pending)
            weir_loop_timer_stop(p->loop, &p->timer);
    }
    maybe_left(p);
}

static void poll_back(struct weir_op *op, int res, uint32_t flags)
{
    struct http_park *p = weir_container_of(op, struct http_park, poll_op);

    (void)flags;
    /* Bytes, an end or an error: the stream's connection tells which. */
    if (!p->leaving && res != -ECANCELED)
        p->woke = true;
    leave(p);
}

static void timer_back(struct weir_op *op, int res, uint32_t flags)
{
    struct http_park *p = weir_container_of(op, struct http_park, timer.op);

    (void)flags;
    if (!p->leaving && res != -ECANCELED)
        p->expired = true;
    leave(p);
}

static void watch_worker(struct weir_task *t)
{
    struct http_park *p = weir_container_of(t, struct http_park, task);
    int64_t left = p->pc.deadline - now_ns();

    p->poll_op.fn = poll_back;
    p->timer.op.fn = timer_back;
    if (left <= 0) {
        p->expired = true;
    } else if (weir_loop_poll(p->loop, &p->poll_op, p->pc.fd, POLLIN) == 0 &&
               weir_loop_timer_start(p->loop, &p->timer, (uint64_t)left) == 0) {
        return;
    }
    leave(p);
}

static void stop_worker(struct weir_task *t)
{
    struct http_park *p = weir_container_of(t, struct http_park, stop);

    leave(p);
    weir_task_init(&p->stop, stop_acked);
    weir_loop_post(p->lot->main, &p->stop);
}

void http_lot_park(void *arg, struct weir_loop *loop,
                   const struct http_parked *pc)
{
    struct http_lot *lot = arg;
    struct http_park *p = calloc(1, sizeof(*p));

    if (!p) {
        close(pc->fd);
        return;
    }
    p->lot = lot;
    p->loop = loop;
    p->pc = *pc;
    weir_list_init(&p->link);
    weir_task_init(&p->task, arrive_main);
    weir_loop_post(lot->main, &p->task);
}

/* ---- main thread ---- */

void http_lot_close(struct http_lot *lot)
{
    struct weir_list *pos, *tmp;

    lot->closed = true;
    weir_list_for_each(pos, tmp, &lot->parked)
    {
        struct http_park *p = weir_list_entry(pos, struct http_park, link);

        if (p->stop_posted)
            continue;
        p->stop_posted = true;
        weir_task_init(&p->stop, stop_worker);
        weir_loop_post(p->loop, &p->stop);
    }
}
