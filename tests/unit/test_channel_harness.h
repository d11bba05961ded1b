/*
 * test_channel_harness.h - one stream of numbered chunks through a channel
 * between two workers, for test_channel.c and test_doorbell.c.
 *
 * The producer (on worker p) takes buffers from its pool, writes the
 * chunk's sequence number and a pattern into each, and pushes them in
 * batches, in bursts separated by idle gaps when asked. The consumer (on
 * worker c) checks order and contents, drops the references (sending the
 * buffers home), and pauses now and then when asked. The main thread waits
 * for both sides with a watchdog that fails the test rather than hanging.
 */
#ifndef TEST_CHANNEL_HARNESS_H
#define TEST_CHANNEL_HARNESS_H

#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "weir/channel.h"
#include "weir/loop.h"
#include "weir/pool.h"
#include "weir/worker.h"

#define XFER_MAX_BATCH 64

struct xfer_params {
    unsigned workers; /* 1: producer and consumer share a worker */
    enum weir_doorbell bell;
    enum weir_engine engine; /* 0: AUTO (WEIR_ENGINE) */
    uint64_t chunks;         /* how many to send */
    uint32_t len_min;        /* chunk length range, bytes, >= 9 */
    uint32_t len_max;
    uint32_t batch_max;  /* chunks per push, 1..XFER_MAX_BATCH */
    uint32_t pop_max;    /* chunks per pop, 1..XFER_MAX_BATCH */
    uint32_t capacity;   /* ring slots */
    uint64_t hwm;        /* bytes */
    uint32_t burst_max;  /* chunks per burst; 0: no bursts */
    uint64_t gap_max_ns; /* idle gap after a burst, 0..gap_max_ns */
    /* Lockstep bursts: the consumer acknowledges the first chunk of each
     * burst (a task posted back), and the producer sends no next burst
     * before that. A lost wakeup then stalls the run for good instead of
     * being covered by the next burst, so the watchdog sees it; and the
     * next burst goes out while the consumer is still busy with the
     * previous one, racing its last look before it sleeps. */
    bool lockstep;
    unsigned c_pause_pct; /* chance the consumer pauses after a pop */
    uint64_t c_pause_ns;
    int close_err;         /* producer closes with this error ... */
    uint64_t close_after;  /* ... after this many chunks (0: at the end) */
    uint64_t cancel_after; /* consumer cancels after this many (0: never) */
    unsigned watchdog_s;
};

struct xfer {
    struct xfer_params prm;
    struct weir_workers *w;
    struct weir_channel *ch;
    unsigned p, c;

    /* Producer side, worker p only. */
    struct weir_task p_start;
    struct weir_timer p_gap;
    struct weir_task p_ack; /* posted by the consumer, lockstep mode */
    uint64_t rng_p;
    uint64_t sent;
    uint64_t sent_sum;
    uint32_t burst_left;
    uint64_t bursts;  /* bursts started */
    bool burst_fresh; /* no chunk of the current burst pushed yet */
    bool p_wait_ack;
    _Atomic uint64_t acked; /* written by the consumer */
    int64_t min_desired;
    uint64_t p_bad;
    int p_result;
    bool p_finished;
    bool p_in_gap;
    uint64_t p_waits;                  /* times ready() said stop */
    struct weir_channel_stats p_stats; /* taken before the close */

    /* Consumer side, worker c only. */
    struct weir_task c_start;
    struct weir_timer c_pause;
    uint64_t rng_c;
    uint64_t received;
    uint64_t recv_sum;
    uint64_t c_bad;
    int c_result;
    bool c_finished;
    bool c_in_pause;
    uint64_t c_waits;                  /* times pop() said empty */
    struct weir_channel_stats c_stats; /* taken before the cancel */

    /* Progress, read by the watchdog. */
    _Atomic uint64_t progress;

    pthread_mutex_t lock;
    pthread_cond_t cond;
    int finished;
};

static inline uint64_t xfer_rand(uint64_t *s)
{
    /* xorshift64*: deterministic per seed. */
    *s ^= *s >> 12;
    *s ^= *s << 25;
    *s ^= *s >> 27;
    return *s * 2685821657736338717ull;
}

static inline uint64_t xfer_range(uint64_t *s, uint64_t lo, uint64_t hi)
{
    return hi <= lo ? lo : lo + xfer_rand(s) % (hi - lo + 1);
}

static void xfer_side_done(struct xfer *x)
{
    pthread_mutex_lock(&x->lock);
    x->finished++;
    pthread_cond_broadcast(&x->cond);
    pthread_mutex_unlock(&x->lock);
}

static inline uint8_t xfer_pattern(uint64_t seq, uint32_t i)
{
    return (uint8_t)(seq * 31 + i * 7);
}

static void xfer_fill(struct weir_buf *b, uint64_t seq, uint32_t len,
                      bool first_of_burst)
{
    /* The number, the end-of-burst mark, the pattern in the last byte. */
    memcpy(b->data, &seq, 8);
    b->data[8] = first_of_burst;
    b->data[len - 1] = xfer_pattern(seq, len);
}

static bool xfer_check(const struct weir_chunk *c, uint64_t seq)
{
    uint64_t got;

    if (c->len < 9)
        return false;
    memcpy(&got, c->data, 8);
    return got == seq && c->data[c->len - 1] == xfer_pattern(seq, c->len);
}

static void xfer_produce(struct xfer *x);

static void xfer_p_finish(struct xfer *x, int err)
{
    weir_channel_stats(x->ch, &x->p_stats);
    x->p_finished = true;
    x->p_result = err;
    weir_channel_close(x->ch, err);
    xfer_side_done(x);
}

/* Producer, between bursts: true when an idle gap started (the timer goes
 * on), false to go on at once. Half the gaps are none at all. */
static bool xfer_gap(struct xfer *x)
{
    uint64_t gap = xfer_rand(&x->rng_p) & 1
                       ? 0
                       : xfer_range(&x->rng_p, 0, x->prm.gap_max_ns);

    if (!gap)
        return false;
    x->p_in_gap = true;
    weir_loop_timer_start(weir_loop_current(), &x->p_gap, gap);
    return true;
}

static void xfer_produce(struct xfer *x)
{
    struct weir_pool *pool = weir_worker_pool();
    struct weir_chunk batch[XFER_MAX_BATCH];
    uint64_t limit = x->prm.close_after ? x->prm.close_after : x->prm.chunks;
    int r;

    if (x->p_finished || x->p_in_gap)
        return;
    while ((r = weir_channel_ready(x->ch)) == 1) {
        uint32_t n = (uint32_t)xfer_range(&x->rng_p, 1, x->prm.batch_max);
        int pushed;

        if (x->sent == limit)
            break;
        if (n > limit - x->sent)
            n = (uint32_t)(limit - x->sent);
        if (x->prm.burst_max && n > x->burst_left)
            n = x->burst_left;
        for (uint32_t i = 0; i < n; i++) {
            struct weir_buf *b;
            uint32_t len =
                (uint32_t)xfer_range(&x->rng_p, x->prm.len_min, x->prm.len_max);

            if (weir_pool_get(pool, &b) != 0) {
                /* Every buffer is in flight: the channel holds at most
                 * hwm, so the test is sized to never get here. */
                fprintf(stderr, "xfer: producer pool empty\n");
                x->p_bad++;
                n = i;
                break;
            }
            xfer_fill(b, x->sent + i, len,
                      x->prm.lockstep && i == 0 && x->burst_fresh);
            batch[i] = weir_chunk_of(b, len);
        }
        pushed = weir_channel_push(x->ch, batch, n);
        if (pushed < 0) {
            for (uint32_t i = 0; i < n; i++)
                weir_chunk_unref(&batch[i],
                                 weir_loop_slot(weir_loop_current()));
            xfer_p_finish(x, 0);
            return;
        }
        /* ready() promised one slot; more may not fit. What did not fit
         * goes back to the pool and is made again (same numbers). */
        for (uint32_t i = (uint32_t)pushed; i < n; i++)
            weir_chunk_unref(&batch[i], weir_loop_slot(weir_loop_current()));
        for (int i = 0; i < pushed; i++)
            x->sent_sum += batch[i].len;
        x->sent += (uint64_t)pushed;
        atomic_store_explicit(&x->progress, x->sent, memory_order_relaxed);
        if (weir_channel_desired(x->ch) < x->min_desired)
            x->min_desired = weir_channel_desired(x->ch);
        if (x->prm.burst_max && pushed > 0) {
            if (x->burst_fresh)
                x->bursts++;
            x->burst_fresh = false;
            x->burst_left -= (uint32_t)pushed;
            if (x->burst_left == 0) {
                x->burst_left =
                    (uint32_t)xfer_range(&x->rng_p, 1, x->prm.burst_max);
                x->burst_fresh = true;
                /* Acquire pairs with the consumer's release store. */
                if (x->prm.lockstep &&
                    atomic_load_explicit(&x->acked, memory_order_acquire) <
                        x->bursts) {
                    /* xfer_p_acked goes on. */
                    x->p_wait_ack = true;
                    x->p_in_gap = true;
                    return;
                }
                if (xfer_gap(x))
                    return;
            }
        }
    }
    if (r < 0) {
        xfer_p_finish(x, 0);
        return;
    }
    /* The channel counts every "no credit", the one after the last push
     * too. */
    if (r == 0)
        x->p_waits++;
    if (x->sent == limit)
        xfer_p_finish(x, x->prm.close_after ? x->prm.close_err : 0);
}

static void xfer_p_gap_done(struct weir_op *op, int res, uint32_t flags)
{
    struct xfer *x =
        (struct xfer *)((char *)op - offsetof(struct xfer, p_gap.op));

    (void)res;
    (void)flags;
    x->p_in_gap = false;
    xfer_produce(x);
}

static void xfer_p_acked(struct weir_task *t)
{
    struct xfer *x = (struct xfer *)((char *)t - offsetof(struct xfer, p_ack));

    /* Acquire pairs with the consumer's release store of acked. The task
     * may run for an acknowledgement nobody waits for yet. */
    if (x->p_finished || !x->p_wait_ack ||
        atomic_load_explicit(&x->acked, memory_order_acquire) < x->bursts)
        return;
    x->p_wait_ack = false;
    x->p_in_gap = false;
    if (!xfer_gap(x))
        xfer_produce(x);
}

static void xfer_writable(struct weir_channel *ch, void *arg)
{
    (void)ch;
    xfer_produce(arg);
}

static void xfer_p_start(struct weir_task *t)
{
    xfer_produce((struct xfer *)((char *)t - offsetof(struct xfer, p_start)));
}

static void xfer_c_finish(struct xfer *x, int res)
{
    weir_channel_stats(x->ch, &x->c_stats);
    x->c_finished = true;
    x->c_result = res;
    weir_channel_cancel(x->ch);
    xfer_side_done(x);
}

static void xfer_consume(struct xfer *x)
{
    struct weir_chunk got[XFER_MAX_BATCH];
    unsigned self = weir_loop_slot(weir_loop_current());
    int n;

    if (x->c_finished || x->c_in_pause)
        return;
    while ((n = weir_channel_pop(x->ch, got, x->prm.pop_max)) > 0) {
        for (int i = 0; i < n; i++) {
            if (!xfer_check(&got[i], x->received))
                x->c_bad++;
            x->recv_sum += got[i].len;
            x->received++;
            if (x->prm.lockstep && got[i].len >= 10 && got[i].data[8]) {
                /* Release pairs with the producer's acquire loads. */
                atomic_store_explicit(
                    &x->acked,
                    atomic_load_explicit(&x->acked, memory_order_relaxed) + 1,
                    memory_order_release);
                weir_workers_post(x->w, x->p, &x->p_ack);
            }
            weir_chunk_unref(&got[i], self);
        }
        if (x->prm.cancel_after && x->received >= x->prm.cancel_after) {
            xfer_c_finish(x, -ECANCELED);
            return;
        }
        if (x->prm.c_pause_pct &&
            xfer_range(&x->rng_c, 1, 100) <= x->prm.c_pause_pct) {
            x->c_in_pause = true;
            weir_loop_timer_start(weir_loop_current(), &x->c_pause,
                                  xfer_range(&x->rng_c, 1, x->prm.c_pause_ns));
            return;
        }
    }
    if (n < 0) {
        xfer_c_finish(x, n);
        return;
    }
    x->c_waits++;
}

static void xfer_c_pause_done(struct weir_op *op, int res, uint32_t flags)
{
    struct xfer *x =
        (struct xfer *)((char *)op - offsetof(struct xfer, c_pause.op));

    (void)res;
    (void)flags;
    x->c_in_pause = false;
    xfer_consume(x);
}

static void xfer_readable(struct weir_channel *ch, void *arg)
{
    (void)ch;
    xfer_consume(arg);
}

static void xfer_c_start(struct weir_task *t)
{
    xfer_consume((struct xfer *)((char *)t - offsetof(struct xfer, c_start)));
}

/* Runs the transfer to its end; fails the test on a hang. Returns 0 when
 * both sides finished, after stopping the workers (their return value in
 * *stop_res: -EBUSY if a buffer did not come home). */
static int xfer_run(struct xfer *x, const struct xfer_params *prm,
                    int *stop_res)
{
    struct weir_workers_options wo = {
        .count = prm->workers ? prm->workers : 2,
        .pool_buffers = 512,
        .buf_size = 4096,
        .bell = prm->bell,
        .engine = prm->engine,
    };
    struct weir_channel_options co = {
        .capacity = prm->capacity,
        .hwm = prm->hwm,
        .on_readable = xfer_readable,
        .on_writable = xfer_writable,
    };
    struct timespec deadline;
    uint64_t last = 0;
    int err;

    memset(x, 0, sizeof(*x));
    x->prm = *prm;
    x->rng_p = 0x9e3779b97f4a7c15ull;
    x->rng_c = 0xd1b54a32d192ed03ull;
    x->min_desired = INT64_MAX;
    x->burst_left = prm->burst_max ? prm->burst_max : 0;
    x->burst_fresh = true;
    atomic_init(&x->acked, 0);
    atomic_init(&x->progress, 0);
    pthread_mutex_init(&x->lock, NULL);
    pthread_cond_init(&x->cond, NULL);
    err = weir_workers_start(&x->w, &wo);
    if (err) {
        fprintf(stderr, "workers: %s\n", weir_loop_strerror(err));
        return err;
    }
    x->p = 0;
    x->c = wo.count > 1 ? 1 : 0;
    co.readable_arg = x;
    co.writable_arg = x;
    err = weir_channel_create(&x->ch, &co, weir_workers_loop(x->w, x->p),
                              weir_workers_loop(x->w, x->c));
    if (err)
        return err;
    x->p_gap.op.fn = xfer_p_gap_done;
    x->c_pause.op.fn = xfer_c_pause_done;
    weir_task_init(&x->p_start, xfer_p_start);
    weir_task_init(&x->c_start, xfer_c_start);
    weir_task_init(&x->p_ack, xfer_p_acked);
    /* The posts order the setup above before either side runs. */
    weir_workers_post(x->w, x->c, &x->c_start);
    weir_workers_post(x->w, x->p, &x->p_start);

    /* Watchdog: fail only when nothing moved for a whole period. */
    pthread_mutex_lock(&x->lock);
    while (x->finished < 2) {
        clock_gettime(CLOCK_REALTIME, &deadline);
        deadline.tv_sec += prm->watchdog_s ? prm->watchdog_s : 60;
        if (pthread_cond_timedwait(&x->cond, &x->lock, &deadline) ==
                ETIMEDOUT &&
            x->finished < 2) {
            uint64_t now =
                atomic_load_explicit(&x->progress, memory_order_relaxed);

            if (now == last) {
                pthread_mutex_unlock(&x->lock);
                fprintf(stderr,
                        "watchdog: no progress for %us at %llu chunks "
                        "sent; a wakeup was lost\n",
                        prm->watchdog_s ? prm->watchdog_s : 60,
                        (unsigned long long)now);
                return -ETIMEDOUT;
            }
            last = now;
        }
    }
    pthread_mutex_unlock(&x->lock);
    *stop_res = weir_workers_stop(x->w);
    pthread_mutex_destroy(&x->lock);
    pthread_cond_destroy(&x->cond);
    return 0;
}

#endif /* TEST_CHANNEL_HARNESS_H */
