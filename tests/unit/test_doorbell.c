/*
 * test_doorbell.c - the sleep/wake handshake must never lose a wakeup.
 *
 * Many short bursts with idle gaps between them, over a long run, so that
 * each side goes to sleep over and over and must be woken by the other at
 * the moment it announced it. A lost wakeup shows as a stall: the watchdog
 * fails the test when nothing moved for a whole period (generous, never a
 * timing assertion). Both doorbells are covered: the eventfd, and
 * IORING_OP_MSG_RING sent from the other worker's ring, and the epoll
 * engine's eventfd whatever WEIR_ENGINE says. Runs under ThreadSanitizer
 * in CI (suite 'concurrency').
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include <cmocka.h>

#include "test_channel_harness.h"

static struct xfer x;

/* WEIR_STRESS_SCALE=N multiplies the run lengths, for a soak by hand;
 * CI runs the default, 1. */
static uint64_t scale(void)
{
    const char *v = getenv("WEIR_STRESS_SCALE");
    uint64_t n = v ? strtoull(v, NULL, 10) : 1;

    return n ? n : 1;
}

static struct xfer_params bursts(enum weir_doorbell bell,
                                 enum weir_engine engine)
{
    return (struct xfer_params){
        .workers = 2,
        .bell = bell,
        .engine = engine,
        .chunks = 150000 * scale(),
        .len_min = 16,
        .len_max = 1024,
        .batch_max = 8,
        .pop_max = 8,
        .capacity = 64,
        .hwm = 8 * 1024, /* small, so the producer waits for credit too */
        .burst_max = 24,
        .gap_max_ns = 40000,
        .lockstep = true,
        .c_pause_pct = 5,
        .c_pause_ns = 30000,
        .watchdog_s = 30,
    };
}

static void run_bursts(enum weir_doorbell bell, enum weir_engine engine)
{
    struct xfer_params prm = bursts(bell, engine);
    int stop_res = -1;

    assert_int_equal(xfer_run(&x, &prm, &stop_res), 0);
    assert_int_equal(stop_res, 0);
    assert_int_equal(x.p_bad, 0);
    assert_int_equal(x.c_bad, 0);
    assert_int_equal(x.sent, prm.chunks);
    assert_int_equal(x.received, prm.chunks);
    assert_true(x.recv_sum == x.sent_sum);
    assert_int_equal(x.c_result, -EPIPE);
    print_message("%llu chunks; consumer found it empty %llu times, "
                  "producer out of credit %llu times\n",
                  (unsigned long long)x.received, (unsigned long long)x.c_waits,
                  (unsigned long long)x.p_waits);
    /* The run exercised the handshake both ways: the consumer found the
     * channel empty and the producer ran out of credit, many times. */
    assert_true(x.c_waits > 1000);
    assert_true(x.p_waits > 100);
}

static void test_bursts_msg_ring(void **state)
{
    (void)state;
    run_bursts(WEIR_DOORBELL_MSG_RING, WEIR_ENGINE_AUTO);
}

static void test_bursts_eventfd(void **state)
{
    (void)state;
    run_bursts(WEIR_DOORBELL_EVENTFD, WEIR_ENGINE_AUTO);
}

static void test_bursts_epoll(void **state)
{
    (void)state;
    run_bursts(WEIR_DOORBELL_DEFAULT, WEIR_ENGINE_EPOLL);
}

/* ---- tasks posted back and forth, with gaps ---- */

#define ROUNDS_BASE 20000

static uint64_t rounds;

struct pingpong {
    struct weir_workers *w;
    struct weir_task task[2]; /* task[i] runs on worker i */
    struct weir_timer gap[2]; /* worker i's gap before replying */
    uint64_t rng[2];
    uint64_t runs[2];
    _Atomic uint64_t progress;
    pthread_mutex_t lock;
    pthread_cond_t cond;
    bool done;
};

static struct pingpong pp;

static void pp_send(int from)
{
    weir_workers_post(pp.w, (unsigned)(1 - from), &pp.task[1 - from]);
}

static void pp_gap_done(struct weir_op *op, int res, uint32_t flags)
{
    int i = op == &pp.gap[0].op ? 0 : 1;

    (void)res;
    (void)flags;
    pp_send(i);
}

static void pp_ran(struct weir_task *t)
{
    int i = t == &pp.task[0] ? 0 : 1;
    uint64_t gap;

    pp.runs[i]++;
    atomic_fetch_add_explicit(&pp.progress, 1, memory_order_relaxed);
    if (i == 0 && pp.runs[0] == rounds) {
        pthread_mutex_lock(&pp.lock);
        pp.done = true;
        pthread_cond_broadcast(&pp.cond);
        pthread_mutex_unlock(&pp.lock);
        return;
    }
    /* Reply at once half the time (the other side may not be asleep
     * yet), after a short idle gap otherwise (it is). */
    gap = xfer_range(&pp.rng[i], 0, 60000);
    if (gap < 30000)
        pp_send(i);
    else
        weir_loop_timer_start(weir_loop_current(), &pp.gap[i], gap);
}

static void run_pingpong(enum weir_doorbell bell, enum weir_engine engine)
{
    struct weir_workers_options wo = {.count = 2,
                                      .pool_buffers = 8,
                                      .buf_size = 4096,
                                      .bell = bell,
                                      .engine = engine};
    struct timespec deadline;
    uint64_t last = 0;

    memset(&pp, 0, sizeof(pp));
    rounds = ROUNDS_BASE * scale();
    pp.rng[0] = 1234567;
    pp.rng[1] = 7654321;
    atomic_init(&pp.progress, 0);
    pthread_mutex_init(&pp.lock, NULL);
    pthread_cond_init(&pp.cond, NULL);
    for (int i = 0; i < 2; i++) {
        weir_task_init(&pp.task[i], pp_ran);
        pp.gap[i].op.fn = pp_gap_done;
    }
    assert_int_equal(weir_workers_start(&pp.w, &wo), 0);
    weir_workers_post(pp.w, 0, &pp.task[0]);
    pthread_mutex_lock(&pp.lock);
    while (!pp.done) {
        clock_gettime(CLOCK_REALTIME, &deadline);
        deadline.tv_sec += 30;
        if (pthread_cond_timedwait(&pp.cond, &pp.lock, &deadline) ==
                ETIMEDOUT &&
            !pp.done) {
            uint64_t now =
                atomic_load_explicit(&pp.progress, memory_order_relaxed);

            if (now == last)
                fail_msg("watchdog: no task ran for 30s after %llu; a "
                         "wakeup was lost",
                         (unsigned long long)now);
            last = now;
        }
    }
    pthread_mutex_unlock(&pp.lock);
    assert_int_equal(weir_workers_stop(pp.w), 0);
    /* One message in flight at a time: nothing coalesced, nothing lost. */
    assert_int_equal(pp.runs[0], rounds);
    assert_int_equal(pp.runs[1], rounds - 1);
    pthread_mutex_destroy(&pp.lock);
    pthread_cond_destroy(&pp.cond);
}

static void test_pingpong_msg_ring(void **state)
{
    (void)state;
    run_pingpong(WEIR_DOORBELL_MSG_RING, WEIR_ENGINE_AUTO);
}

static void test_pingpong_eventfd(void **state)
{
    (void)state;
    run_pingpong(WEIR_DOORBELL_EVENTFD, WEIR_ENGINE_AUTO);
}

static void test_pingpong_epoll(void **state)
{
    (void)state;
    run_pingpong(WEIR_DOORBELL_DEFAULT, WEIR_ENGINE_EPOLL);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_bursts_msg_ring),
        cmocka_unit_test(test_bursts_eventfd),
        cmocka_unit_test(test_pingpong_msg_ring),
        cmocka_unit_test(test_pingpong_eventfd),
        cmocka_unit_test(test_bursts_epoll),
        cmocka_unit_test(test_pingpong_epoll),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
