/*
 * test_channel.c - the channel between two workers: every chunk arrives in
 * order and intact, credit bounds what is queued, buffers go home, close,
 * error and cancel reach the other side.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "test_channel_harness.h"

static struct xfer x;

static struct xfer_params base(void)
{
    return (struct xfer_params){
        .workers = 2,
        .chunks = 20000,
        .len_min = 4096,
        .len_max = 4096,
        .batch_max = 8,
        .pop_max = 16,
        .capacity = 64,
        .hwm = 64 * 1024,
        .watchdog_s = 60,
    };
}

static void run_ok(const struct xfer_params *prm)
{
    int stop_res = -1;

    assert_int_equal(xfer_run(&x, prm, &stop_res), 0);
    /* Every buffer came home to its pool. */
    assert_int_equal(stop_res, 0);
    assert_int_equal(x.p_bad, 0);
    assert_int_equal(x.c_bad, 0);
}

static void test_transfer(void **state)
{
    struct xfer_params prm = base();

    (void)state;
    run_ok(&prm);
    assert_int_equal(x.sent, prm.chunks);
    assert_int_equal(x.received, prm.chunks);
    assert_true(x.recv_sum == x.sent_sum);
    assert_int_equal(x.c_result, -EPIPE);
    /* The channel's own counters agree with both sides'. */
    assert_true(x.p_stats.produced == x.sent_sum);
    assert_true(x.p_stats.producer_waits == x.p_waits);
    assert_true(x.c_stats.consumed == x.recv_sum);
    assert_true(x.c_stats.consumer_waits == x.c_waits);
    assert_true(x.c_stats.queued == 0);
    /* A push starts only with credit left (desired > 0) and adds at most
     * one batch: queued never exceeds hwm - 1 + batch_max chunks. */
    assert_true(x.min_desired > -(int64_t)(prm.batch_max * prm.len_max));
}

static void test_variable_sizes(void **state)
{
    struct xfer_params prm = base();

    (void)state;
    prm.len_min = 9;
    prm.len_max = 4096;
    prm.batch_max = 32;
    prm.pop_max = 5;
    prm.capacity = 16; /* small: the ring fills before the credit runs out */
    prm.hwm = 256 * 1024;
    run_ok(&prm);
    assert_int_equal(x.received, prm.chunks);
    assert_true(x.recv_sum == x.sent_sum);
    assert_int_equal(x.c_result, -EPIPE);
}

static void test_slow_consumer(void **state)
{
    struct xfer_params prm = base();

    (void)state;
    prm.chunks = 3000;
    prm.hwm = 16 * 1024; /* four chunks */
    prm.c_pause_pct = 30;
    prm.c_pause_ns = 20000;
    run_ok(&prm);
    assert_int_equal(x.received, prm.chunks);
    /* The producer had to stop for credit, and was woken each time. */
    assert_true(x.p_waits > 0);
    assert_true(x.min_desired > -(int64_t)(prm.batch_max * prm.len_max));
}

static void test_same_worker(void **state)
{
    struct xfer_params prm = base();

    (void)state;
    prm.workers = 1;
    prm.chunks = 5000;
    run_ok(&prm);
    assert_int_equal(x.received, prm.chunks);
    assert_true(x.recv_sum == x.sent_sum);
}

static void test_empty_stream(void **state)
{
    struct xfer_params prm = base();

    (void)state;
    prm.chunks = 0; /* closed before any chunk: the ring is never made */
    run_ok(&prm);
    assert_int_equal(x.received, 0);
    assert_int_equal(x.c_result, -EPIPE);
}

static void test_error_forward(void **state)
{
    struct xfer_params prm = base();

    (void)state;
    prm.close_after = 100;
    prm.close_err = -EIO;
    run_ok(&prm);
    assert_int_equal(x.sent, 100);
    /* An error overtakes what is queued; what arrived was in order. */
    assert_true(x.received <= 100);
    assert_int_equal(x.c_result, -EIO);
}

static void test_close_after_all(void **state)
{
    struct xfer_params prm = base();

    (void)state;
    prm.chunks = 7;
    prm.batch_max = 7;
    run_ok(&prm);
    /* A close travels behind the data: all 7 first, then the end. */
    assert_int_equal(x.received, 7);
    assert_int_equal(x.c_result, -EPIPE);
}

static void test_cancel_back(void **state)
{
    struct xfer_params prm = base();

    (void)state;
    prm.chunks = 1000000; /* would take long: the cancel ends it */
    prm.cancel_after = 500;
    run_ok(&prm);
    assert_true(x.received >= 500);
    assert_int_equal(x.c_result, -ECANCELED);
    assert_true(x.sent >= x.received);
    assert_true(x.sent < prm.chunks);
    assert_true(x.p_finished);
}

static void noop_fn(struct weir_channel *ch, void *arg)
{
    (void)ch;
    (void)arg;
}

static void test_create_errors(void **state)
{
    struct weir_loop *loop;
    struct weir_channel *ch;
    struct weir_channel_options o = {
        .capacity = 24, .on_readable = noop_fn, .on_writable = noop_fn};

    (void)state;
    assert_int_equal(weir_loop_create(&loop, NULL), 0);
    assert_int_equal(weir_channel_create(&ch, &o, loop, loop), -EINVAL);
    o.capacity = 32;
    o.on_readable = NULL;
    assert_int_equal(weir_channel_create(&ch, &o, loop, loop), -EINVAL);
    weir_loop_destroy(loop);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_transfer),
        cmocka_unit_test(test_variable_sizes),
        cmocka_unit_test(test_slow_consumer),
        cmocka_unit_test(test_same_worker),
        cmocka_unit_test(test_empty_stream),
        cmocka_unit_test(test_error_forward),
        cmocka_unit_test(test_close_after_all),
        cmocka_unit_test(test_cancel_back),
        cmocka_unit_test(test_create_errors),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
