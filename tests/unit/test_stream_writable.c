/*
 * test_stream_writable.c - writable streams and transforms, one test per
 * rule: order, backpressure and ready, writev batches, close after the
 * queue, errors after close and double close, sink errors, abort after the
 * write in flight; a transform's pass-through, backpressure between its
 * sides, flush, and cancel.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include "test_stream_util.h"

static struct weir_writable *make(struct sink *k,
                                  const struct weir_sink_ops *ops, size_t hwm)
{
    struct weir_writable_options o = {.strategy = {.hwm = hwm}};
    struct weir_writable *ws = NULL;

    assert_int_equal(weir_writable_create(&ws, ops, k, &o), 0);
    k->ws = ws;
    return ws;
}

static void writes_reach_sink_in_order(void **state)
{
    struct sink k = {0};
    struct weir_writable *ws = make(&k, &sink_ops, 1);
    struct weir_writer w;
    uint64_t sum = 0;

    (void)state;
    assert_int_equal(weir_writer_acquire(&w, ws), 0);
    for (uint32_t i = 0; i < 1000; i++) {
        sum = sum_chunk(sum, chunk_nr(i));
        /* A synchronous sink finishes each write inside the call. */
        assert_int_equal(weir_writer_write(&w, chunk_nr(i), done_cb, NULL), 0);
    }
    assert_int_equal(weir_writer_close(&w, done_cb, NULL), 0);
    assert_true(k.sum == sum);
    assert_int_equal(k.closes, 1);
    assert_true(weir_writable_closed(ws));
    weir_writer_release(&w);
    weir_writable_destroy(ws);
}

static void backpressure_and_ready(void **state)
{
    struct sink k = {.async = true};
    struct weir_writable *ws = make(&k, &sink_ops, 2);
    struct weir_writer w;
    struct done d1 = {0}, d2 = {0}, ready = {0};

    (void)state;
    assert_int_equal(weir_writer_acquire(&w, ws), 0);
    assert_int_equal(weir_writer_ready(&w, done_cb, &ready), 0);
    assert_int_equal(weir_writer_write(&w, chunk_nr(0), done_cb, &d1),
                     WEIR_PENDING);
    assert_int_equal(weir_writer_desired_size(&w), 1);
    assert_int_equal(weir_writer_write(&w, chunk_nr(1), done_cb, &d2),
                     WEIR_PENDING);
    /* One in flight and one queued: both count. */
    assert_int_equal(weir_writer_desired_size(&w), 0);
    assert_int_equal(k.writes, 1);
    assert_int_equal(weir_writer_ready(&w, done_cb, &ready), WEIR_PENDING);
    sink_finish(&k);
    assert_int_equal(d1.calls, 1);
    assert_int_equal(ready.calls, 1);
    assert_int_equal(ready.rc, 0);
    /* The queued write went to the sink right after. */
    assert_int_equal(k.writes, 2);
    sink_finish(&k);
    assert_int_equal(d2.calls, 1);
    assert_int_equal(weir_writer_desired_size(&w), 2);
    weir_writer_release(&w);
    weir_writable_destroy(ws);
}

static void writev_gets_queued_chunks_as_one_batch(void **state)
{
    struct sink k = {.async = true};
    struct weir_writable *ws = make(&k, &sink_ops_v, WEIR_HWM_UNLIMITED);
    struct weir_writer w;
    uint64_t sum = 0;

    (void)state;
    assert_int_equal(weir_writer_acquire(&w, ws), 0);
    for (uint32_t i = 0; i < 6; i++) {
        sum = sum_chunk(sum, chunk_nr(i));
        weir_writer_write(&w, chunk_nr(i), NULL, NULL);
    }
    assert_int_equal(k.writes, 1);
    sink_finish(&k);
    assert_int_equal(k.writev_calls, 1);
    assert_int_equal(k.max_batch, 5);
    sink_finish(&k);
    assert_true(k.sum == sum);
    assert_int_equal(weir_writable_queued(ws), 0);
    weir_writer_release(&w);
    weir_writable_destroy(ws);
}

static void close_waits_for_queued_writes(void **state)
{
    struct sink k = {.async = true};
    struct weir_writable *ws = make(&k, &sink_ops, 4);
    struct weir_writer w;
    struct done c = {0};

    (void)state;
    assert_int_equal(weir_writer_acquire(&w, ws), 0);
    weir_writer_write(&w, chunk_nr(0), NULL, NULL);
    weir_writer_write(&w, chunk_nr(1), NULL, NULL);
    assert_int_equal(weir_writer_close(&w, done_cb, &c), WEIR_PENDING);
    assert_int_equal(k.closes, 0);
    sink_finish(&k);
    assert_int_equal(k.closes, 0);
    sink_finish(&k);
    assert_int_equal(k.closes, 1);
    assert_int_equal(c.calls, 1);
    assert_int_equal(c.rc, 0);
    assert_int_equal(k.chunks, 2);
    weir_writer_release(&w);
    weir_writable_destroy(ws);
}

static void errors_after_close_and_double_close(void **state)
{
    struct sink k = {0};
    struct weir_writable *ws = make(&k, &sink_ops, 1);
    struct weir_writer w;

    (void)state;
    assert_int_equal(weir_writer_acquire(&w, ws), 0);
    assert_int_equal(weir_writer_close(&w, done_cb, NULL), 0);
    assert_int_equal(weir_writer_close(&w, done_cb, NULL), -EINVAL);
    assert_int_equal(weir_writer_write(&w, chunk_nr(0), NULL, NULL), -EINVAL);
    assert_int_equal(weir_writer_abort(&w, -EIO, NULL, NULL), 0);
    assert_int_equal(k.aborts, 0);
    assert_int_equal(k.closes, 1);
    assert_int_equal(k.chunks, 0);
    weir_writer_release(&w);
    weir_writable_destroy(ws);
}

static void sink_error_errors_stream_without_abort(void **state)
{
    struct sink k = {.async = true, .fail_at = 2};
    struct weir_writable *ws = make(&k, &sink_ops, 8);
    struct weir_writer w;
    struct done d[4] = {0};
    int err = 0;

    (void)state;
    assert_int_equal(weir_writer_acquire(&w, ws), 0);
    for (int i = 0; i < 4; i++)
        weir_writer_write(&w, chunk_nr((uint32_t)i), done_cb, &d[i]);
    sink_finish(&k); /* write 1 ok; write 2 fails inside the sink */
    assert_int_equal(d[0].rc, 0);
    assert_int_equal(d[1].rc, -EIO);
    assert_int_equal(d[2].rc, -EIO);
    assert_int_equal(d[3].rc, -EIO);
    assert_true(weir_writable_errored(ws, &err));
    assert_int_equal(err, -EIO);
    assert_int_equal(k.aborts, 0);
    assert_int_equal(weir_writer_write(&w, chunk_nr(9), NULL, NULL), -EIO);
    weir_writer_release(&w);
    weir_writable_destroy(ws);
}

static void abort_waits_for_write_in_flight(void **state)
{
    struct sink k = {.async = true};
    struct weir_writable *ws = make(&k, &sink_ops, 8);
    struct weir_writer w;
    struct done d1 = {0}, d2 = {0}, ab = {0};

    (void)state;
    assert_int_equal(weir_writer_acquire(&w, ws), 0);
    weir_writer_write(&w, chunk_nr(0), done_cb, &d1);
    weir_writer_write(&w, chunk_nr(1), done_cb, &d2);
    assert_int_equal(weir_writer_abort(&w, -ECONNRESET, done_cb, &ab),
                     WEIR_PENDING);
    /* New writes fail now; the queued one and the sink's abort wait for
     * the write at the sink (the spec's FinishErroring). */
    assert_int_equal(weir_writer_write(&w, chunk_nr(2), NULL, NULL),
                     -ECONNRESET);
    assert_int_equal(d2.calls, 0);
    assert_int_equal(k.aborts, 0);
    sink_finish(&k);
    assert_int_equal(d2.rc, -ECONNRESET);
    assert_int_equal(ab.calls, 1);
    assert_int_equal(ab.rc, 0);
    assert_int_equal(d1.calls, 1);
    assert_int_equal(k.aborts, 1);
    assert_int_equal(k.abort_reason, -ECONNRESET);
    assert_int_equal(k.chunks, 1);
    weir_writer_release(&w);
    weir_writable_destroy(ws);
}

static int pending_start(struct weir_writable *s, void *c)
{
    (void)s;
    (void)c;
    return WEIR_PENDING;
}

static void start_pending_holds_writes(void **state)
{
    struct sink k = {0};
    struct weir_sink_ops ops = sink_ops;
    struct weir_writable *ws;
    struct weir_writer w;

    (void)state;
    ops.start = pending_start;
    ws = make(&k, &ops, 4);
    assert_int_equal(weir_writer_acquire(&w, ws), 0);
    weir_writer_write(&w, chunk_nr(0), NULL, NULL);
    assert_int_equal(k.writes, 0);
    weir_writable_start_done(ws, 0);
    assert_int_equal(k.writes, 1);
    weir_writer_release(&w);
    weir_writable_destroy(ws);
}

/* Transforms. */

static struct weir_transform *make_tf(const struct weir_transformer_ops *ops,
                                      void *ctx, size_t rhwm, size_t whwm)
{
    struct weir_transform_options o = {.readable = {.hwm = rhwm},
                                       .writable = {.hwm = whwm}};
    struct weir_transform *tf = NULL;

    assert_int_equal(weir_transform_create(&tf, ops, ctx, &o), 0);
    return tf;
}

static void identity_transform_passes_chunks_through(void **state)
{
    struct weir_transform *tf = make_tf(NULL, NULL, 0, 1);
    struct weir_writer w;
    struct weir_reader r;
    struct weir_chunk c = {0};
    struct done d[3] = {0};
    uint64_t in = 0, out = 0;

    (void)state;
    assert_int_equal(weir_writer_acquire(&w, weir_transform_writable(tf)), 0);
    assert_int_equal(weir_reader_acquire(&r, weir_transform_readable(tf)), 0);
    for (uint32_t i = 0; i < 3; i++) {
        in = sum_chunk(in, chunk_nr(i));
        /* Backpressure starts on: the write waits for a read. */
        assert_int_equal(weir_writer_write(&w, chunk_nr(i), done_cb, &d[i]),
                         WEIR_PENDING);
        assert_int_equal(weir_reader_read(&r, &c, read_cb, NULL), 0);
        assert_int_equal(d[i].calls, 1);
        out = sum_chunk(out, c);
    }
    assert_int_equal(weir_writer_close(&w, done_cb, NULL), 0);
    assert_int_equal(weir_reader_read(&r, &c, read_cb, NULL), WEIR_DONE);
    assert_true(in == out);
    weir_writer_release(&w);
    weir_reader_release(&r);
    weir_transform_destroy(tf);
}

static void transform_backpressure_reaches_the_writer(void **state)
{
    struct weir_transform *tf = make_tf(NULL, NULL, 1, 2);
    struct weir_writable *ws = weir_transform_writable(tf);
    struct weir_writer w;
    struct weir_reader r;
    struct weir_chunk c;

    (void)state;
    assert_int_equal(weir_writer_acquire(&w, ws), 0);
    /* readable hwm 1: the first chunk is taken at once (the readable
     * side pulled at start), then writes queue up to the writable side's
     * mark. */
    weir_writer_write(&w, chunk_nr(0), NULL, NULL);
    assert_int_equal(weir_readable_queued(weir_transform_readable(tf)), 1);
    weir_writer_write(&w, chunk_nr(1), NULL, NULL);
    weir_writer_write(&w, chunk_nr(2), NULL, NULL);
    assert_true(weir_writer_desired_size(&w) <= 0);
    assert_int_equal(weir_readable_queued(weir_transform_readable(tf)), 1);
    assert_int_equal(weir_reader_acquire(&r, weir_transform_readable(tf)), 0);
    assert_int_equal(weir_reader_read(&r, &c, read_cb, NULL), 0);
    assert_int_equal(c.len, chunk_nr(0).len);
    assert_int_equal(weir_reader_read(&r, &c, read_cb, NULL), 0);
    assert_int_equal(c.len, chunk_nr(1).len);
    assert_int_equal(weir_reader_read(&r, &c, read_cb, NULL), 0);
    assert_int_equal(c.len, chunk_nr(2).len);
    assert_int_equal(weir_writer_desired_size(&w), 2);
    weir_writer_release(&w);
    weir_reader_release(&r);
    weir_transform_destroy(tf);
}

static int flush_emit(struct weir_transform *tf, void *ctx)
{
    (void)ctx;
    return weir_transform_enqueue(tf, chunk_nr(42));
}

static int double_each(struct weir_transform *tf, void *ctx,
                       struct weir_chunk c)
{
    (void)ctx;
    weir_transform_enqueue(tf, c);
    return weir_transform_enqueue(tf, c);
}

static void flush_runs_on_close(void **state)
{
    const struct weir_transformer_ops ops = {.transform = double_each,
                                             .flush = flush_emit};
    struct weir_transform *tf = make_tf(&ops, NULL, 16, 16);
    struct weir_writer w;
    struct weir_reader r;
    struct weir_chunk c;
    int n = 0;

    (void)state;
    assert_int_equal(weir_writer_acquire(&w, weir_transform_writable(tf)), 0);
    assert_int_equal(weir_reader_acquire(&r, weir_transform_readable(tf)), 0);
    weir_writer_write(&w, chunk_nr(1), NULL, NULL);
    weir_writer_write(&w, chunk_nr(2), NULL, NULL);
    assert_int_equal(weir_writer_close(&w, done_cb, NULL), 0);
    while (weir_reader_read(&r, &c, read_cb, NULL) == 0)
        n++;
    assert_int_equal(n, 5);
    assert_true(weir_readable_closed(weir_transform_readable(tf)));
    weir_writer_release(&w);
    weir_reader_release(&r);
    weir_transform_destroy(tf);
}

static void cancel_readable_side_errors_writable_side(void **state)
{
    struct weir_transform *tf = make_tf(NULL, NULL, 0, 1);
    struct weir_writer w;
    struct weir_reader r;
    struct done d = {0};
    int err = 0;

    (void)state;
    assert_int_equal(weir_writer_acquire(&w, weir_transform_writable(tf)), 0);
    assert_int_equal(weir_reader_acquire(&r, weir_transform_readable(tf)), 0);
    assert_int_equal(weir_writer_write(&w, chunk_nr(0), done_cb, &d),
                     WEIR_PENDING);
    assert_int_equal(weir_reader_cancel(&r, -ECANCELED), 0);
    assert_true(weir_writable_errored(weir_transform_writable(tf), &err));
    assert_int_equal(err, -ECANCELED);
    assert_int_equal(d.calls, 1);
    assert_int_equal(d.rc, -ECANCELED);
    weir_writer_release(&w);
    weir_reader_release(&r);
    weir_transform_destroy(tf);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(writes_reach_sink_in_order),
        cmocka_unit_test(backpressure_and_ready),
        cmocka_unit_test(writev_gets_queued_chunks_as_one_batch),
        cmocka_unit_test(close_waits_for_queued_writes),
        cmocka_unit_test(errors_after_close_and_double_close),
        cmocka_unit_test(sink_error_errors_stream_without_abort),
        cmocka_unit_test(abort_waits_for_write_in_flight),
        cmocka_unit_test(start_pending_holds_writes),
        cmocka_unit_test(identity_transform_passes_chunks_through),
        cmocka_unit_test(transform_backpressure_reaches_the_writer),
        cmocka_unit_test(flush_runs_on_close),
        cmocka_unit_test(cancel_readable_side_errors_writable_side),
    };

    pattern_init();
    return cmocka_run_group_tests(tests, NULL, NULL);
}
