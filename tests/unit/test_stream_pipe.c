/*
 * test_stream_pipe.c - pipeTo, one test per rule of the spec's pipe loop:
 * everything arrives and the destination closes; each of the four state
 * rules with and without its prevent_* option; the order of the rules; no
 * read while the destination has no room; writes already read finish
 * before the shutdown action; pipeThrough; locked streams.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include "test_stream_util.h"

static struct weir_readable *make_src(struct src *s, size_t hwm)
{
    struct weir_readable_options o = {.strategy = {.hwm = hwm}};
    struct weir_readable *rs = NULL;

    assert_int_equal(weir_readable_create(&rs, &src_ops, s, &o), 0);
    return rs;
}

static struct weir_writable *make_dst(struct sink *k, size_t hwm)
{
    struct weir_writable_options o = {.strategy = {.hwm = hwm}};
    struct weir_writable *ws = NULL;

    assert_int_equal(weir_writable_create(&ws, &sink_ops_v, k, &o), 0);
    k->ws = ws;
    return ws;
}

/* Runs the event loop the test stands in for: completes parked pulls
 * first (so writes pile up behind the one in flight and go out as writev
 * batches), then in-flight writes, until nothing moves. */
static void drive(struct src *s, struct sink *k)
{
    for (;;) {
        if (s->pull_pending)
            src_finish_pull(s);
        else if (k->in_flight)
            sink_finish(k);
        else
            return;
    }
}

static void pipe_delivers_everything_then_closes(void **state)
{
    struct src s = {.total = 10000, .per_pull = 3};
    struct sink k = {0};
    struct weir_readable *rs = make_src(&s, 16);
    struct weir_writable *ws = make_dst(&k, 16);

    (void)state;
    assert_int_equal(weir_pipe_to(rs, ws, NULL, done_cb, NULL), 0);
    assert_int_equal(k.chunks, 10000);
    assert_true(k.sum == s.sum);
    assert_int_equal(k.closes, 1);
    assert_false(weir_readable_locked(rs));
    assert_false(weir_writable_locked(ws));
    weir_readable_destroy(rs);
    weir_writable_destroy(ws);
}

static void pipe_with_async_ends_reports_through_callback(void **state)
{
    struct src s = {.total = 5000, .per_pull = 2, .async_pull = true};
    struct sink k = {.async = true};
    struct weir_readable *rs = make_src(&s, 4);
    struct weir_writable *ws = make_dst(&k, 8);
    struct done d = {0};

    (void)state;
    assert_int_equal(weir_pipe_to(rs, ws, NULL, done_cb, &d), WEIR_PENDING);
    drive(&s, &k);
    assert_int_equal(d.calls, 1);
    assert_int_equal(d.rc, 0);
    assert_int_equal(k.chunks, 5000);
    assert_true(k.sum == s.sum);
    assert_int_equal(k.closes, 1);
    /* Batches went through writev, and the destination never held more
     * than its high-water mark. */
    assert_true(k.writev_calls > 0);
    assert_true(k.max_queued <= 8);
    weir_readable_destroy(rs);
    weir_writable_destroy(ws);
}

static void never_reads_while_destination_is_full(void **state)
{
    struct src s = {.endless = true, .per_pull = 1};
    struct sink k = {.async = true};
    struct weir_readable *rs = make_src(&s, 1);
    struct weir_writable *ws = make_dst(&k, 3);
    struct done d = {0};

    (void)state;
    assert_int_equal(weir_pipe_to(rs, ws, NULL, done_cb, &d), WEIR_PENDING);
    /* 3 chunks fill the destination (one in flight, two queued); the
     * source holds its own one: 4 produced, no more. */
    assert_int_equal(weir_writable_queued(ws), 3);
    assert_int_equal(s.next, 4);
    for (int round = 0; round < 100; round++) {
        sink_finish(&k);
        assert_true(weir_writable_queued(ws) <= 3);
    }
    assert_true(s.next <= 4 + 100 * WEIR_WRITEV_MAX);
    assert_int_equal(d.calls, 0);
    /* Stop: cancel through a destination error. */
    weir_writable_error(ws, -EIO);
    while (k.in_flight)
        sink_finish(&k);
    assert_int_equal(d.calls, 1);
    assert_int_equal(d.rc, -EIO);
    assert_int_equal(s.cancels, 1);
    weir_readable_destroy(rs);
    weir_writable_destroy(ws);
}

static void source_error_aborts_destination(void **state)
{
    struct src s = {
        .total = 5, .per_pull = 1, .error_at_end = true, .error = -EPROTO};
    struct sink k = {0};
    struct weir_readable *rs = make_src(&s, 1);
    struct weir_writable *ws = make_dst(&k, 1);

    (void)state;
    assert_int_equal(weir_pipe_to(rs, ws, NULL, done_cb, NULL), -EPROTO);
    assert_int_equal(k.chunks, 5);
    assert_int_equal(k.aborts, 1);
    assert_int_equal(k.abort_reason, -EPROTO);
    assert_true(weir_writable_errored(ws, NULL));
    weir_readable_destroy(rs);
    weir_writable_destroy(ws);
}

static void source_error_with_prevent_abort_leaves_destination(void **state)
{
    struct src s = {
        .total = 5, .per_pull = 1, .error_at_end = true, .error = -EPROTO};
    struct sink k = {0};
    struct weir_readable *rs = make_src(&s, 1);
    struct weir_writable *ws = make_dst(&k, 1);
    struct weir_pipe_options o = {.prevent_abort = true};
    struct weir_writer w;

    (void)state;
    assert_int_equal(weir_pipe_to(rs, ws, &o, done_cb, NULL), -EPROTO);
    assert_int_equal(k.aborts, 0);
    assert_false(weir_writable_errored(ws, NULL));
    /* Unlocked and still usable. */
    assert_int_equal(weir_writer_acquire(&w, ws), 0);
    assert_int_equal(weir_writer_write(&w, chunk_nr(0), NULL, NULL), 0);
    weir_writer_release(&w);
    weir_readable_destroy(rs);
    weir_writable_destroy(ws);
}

static void destination_error_cancels_source(void **state)
{
    struct src s = {.endless = true, .per_pull = 1};
    struct sink k = {.fail_at = 7};
    struct weir_readable *rs = make_src(&s, 1);
    struct weir_writable *ws = make_dst(&k, 1);

    (void)state;
    assert_int_equal(weir_pipe_to(rs, ws, NULL, done_cb, NULL), -EIO);
    assert_int_equal(k.chunks, 7);
    assert_int_equal(s.cancels, 1);
    assert_int_equal(s.cancel_reason, -EIO);
    weir_readable_destroy(rs);
    weir_writable_destroy(ws);
}

static void destination_error_with_prevent_cancel_leaves_source(void **state)
{
    struct src s = {.endless = true, .per_pull = 1};
    struct sink k = {.fail_at = 7};
    struct weir_readable *rs = make_src(&s, 1);
    struct weir_writable *ws = make_dst(&k, 1);
    struct weir_pipe_options o = {.prevent_cancel = true};
    struct weir_reader r;
    struct weir_chunk c;

    (void)state;
    assert_int_equal(weir_pipe_to(rs, ws, &o, done_cb, NULL), -EIO);
    assert_int_equal(s.cancels, 0);
    assert_int_equal(weir_reader_acquire(&r, rs), 0);
    assert_int_equal(weir_reader_read(&r, &c, read_cb, NULL), 0);
    weir_reader_release(&r);
    weir_readable_destroy(rs);
    weir_writable_destroy(ws);
}

static void source_close_closes_destination(void **state)
{
    struct src s = {.total = 3, .per_pull = 1};
    struct sink k = {.async_close = true};
    struct weir_readable *rs = make_src(&s, 1);
    struct weir_writable *ws = make_dst(&k, 1);
    struct done d = {0};

    (void)state;
    assert_int_equal(weir_pipe_to(rs, ws, NULL, done_cb, &d), WEIR_PENDING);
    assert_int_equal(k.closes, 1);
    weir_writable_close_done(ws, 0);
    assert_int_equal(d.calls, 1);
    assert_int_equal(d.rc, 0);
    assert_true(weir_writable_closed(ws));
    weir_readable_destroy(rs);
    weir_writable_destroy(ws);
}

static void source_close_with_prevent_close_leaves_destination(void **state)
{
    struct src s = {.total = 3, .per_pull = 1};
    struct sink k = {0};
    struct weir_readable *rs = make_src(&s, 1);
    struct weir_writable *ws = make_dst(&k, 1);
    struct weir_pipe_options o = {.prevent_close = true};

    (void)state;
    assert_int_equal(weir_pipe_to(rs, ws, &o, done_cb, NULL), 0);
    assert_int_equal(k.chunks, 3);
    assert_int_equal(k.closes, 0);
    assert_false(weir_writable_closed(ws));
    weir_readable_destroy(rs);
    weir_writable_destroy(ws);
}

static void closed_destination_cancels_source(void **state)
{
    struct src s = {.endless = true, .per_pull = 1};
    struct sink k = {0};
    struct weir_readable *rs = make_src(&s, 1);
    struct weir_writable *ws = make_dst(&k, 1);
    struct weir_writer w;

    (void)state;
    assert_int_equal(weir_writer_acquire(&w, ws), 0);
    assert_int_equal(weir_writer_close(&w, NULL, NULL), 0);
    weir_writer_release(&w);
    assert_int_equal(weir_pipe_to(rs, ws, NULL, done_cb, NULL), -EPIPE);
    assert_int_equal(s.cancels, 1);
    assert_int_equal(s.cancel_reason, -EPIPE);
    assert_int_equal(k.chunks, 0);
    weir_readable_destroy(rs);
    weir_writable_destroy(ws);
}

static void closed_destination_with_prevent_cancel(void **state)
{
    struct src s = {.endless = true, .per_pull = 1};
    struct sink k = {0};
    struct weir_readable *rs = make_src(&s, 1);
    struct weir_writable *ws = make_dst(&k, 1);
    struct weir_pipe_options o = {.prevent_cancel = true};
    struct weir_writer w;

    (void)state;
    assert_int_equal(weir_writer_acquire(&w, ws), 0);
    assert_int_equal(weir_writer_close(&w, NULL, NULL), 0);
    weir_writer_release(&w);
    assert_int_equal(weir_pipe_to(rs, ws, &o, done_cb, NULL), -EPIPE);
    assert_int_equal(s.cancels, 0);
    weir_readable_destroy(rs);
    weir_writable_destroy(ws);
}

static void source_error_rule_comes_before_destination_error(void **state)
{
    struct src s = {.no_close = true};
    struct sink k = {0};
    struct weir_readable *rs = make_src(&s, 1);
    struct weir_writable *ws = make_dst(&k, 1);

    (void)state;
    weir_readable_error(rs, -EPROTO);
    weir_writable_error(ws, -EIO);
    /* Rule 1 (abort the destination with the source's error) wins over
     * rule 2 (cancel the source with the destination's). */
    assert_int_equal(weir_pipe_to(rs, ws, NULL, done_cb, NULL), -EPROTO);
    assert_int_equal(s.cancels, 0);
    weir_readable_destroy(rs);
    weir_writable_destroy(ws);
}

static void destination_error_rule_comes_before_source_close(void **state)
{
    struct src s = {.no_close = true};
    struct sink k = {0};
    struct weir_readable *rs = make_src(&s, 1);
    struct weir_writable *ws = make_dst(&k, 1);

    (void)state;
    weir_readable_close(rs);
    weir_writable_error(ws, -EIO);
    assert_int_equal(weir_pipe_to(rs, ws, NULL, done_cb, NULL), -EIO);
    assert_int_equal(k.closes, 0);
    weir_readable_destroy(rs);
    weir_writable_destroy(ws);
}

static void source_close_rule_comes_before_closed_destination(void **state)
{
    struct src s = {.no_close = true};
    struct sink k = {0};
    struct weir_readable *rs = make_src(&s, 1);
    struct weir_writable *ws = make_dst(&k, 1);
    struct weir_writer w;

    (void)state;
    weir_readable_close(rs);
    assert_int_equal(weir_writer_acquire(&w, ws), 0);
    assert_int_equal(weir_writer_close(&w, NULL, NULL), 0);
    weir_writer_release(&w);
    /* Rule 3 applies first; closing an already closed destination is
     * fine, so the pipe ends cleanly rather than with -EPIPE. */
    assert_int_equal(weir_pipe_to(rs, ws, NULL, done_cb, NULL), 0);
    assert_int_equal(k.closes, 1);
    weir_readable_destroy(rs);
    weir_writable_destroy(ws);
}

static void writes_already_read_finish_before_abort(void **state)
{
    struct src s = {.total = 3,
                    .per_pull = 1,
                    .error_at_end = true,
                    .error = -EPROTO,
                    .async_pull = true};
    struct sink k = {.async = true};
    struct weir_readable *rs = make_src(&s, 8);
    struct weir_writable *ws = make_dst(&k, 8);
    struct done d = {0};

    (void)state;
    assert_int_equal(weir_pipe_to(rs, ws, NULL, done_cb, &d), WEIR_PENDING);
    /* Three chunks then the error, while the first write is in flight. */
    src_finish_pull(&s);
    src_finish_pull(&s);
    src_finish_pull(&s);
    src_finish_pull(&s);
    assert_true(weir_readable_errored(rs, NULL));
    assert_int_equal(k.aborts, 0);
    drive(&s, &k);
    assert_int_equal(k.chunks, 3);
    assert_int_equal(k.aborts, 1);
    /* Every write had finished when the sink's abort ran. */
    assert_int_equal(k.writes_done_at_abort, k.writes + k.writev_calls);
    assert_int_equal(d.calls, 1);
    assert_int_equal(d.rc, -EPROTO);
    weir_readable_destroy(rs);
    weir_writable_destroy(ws);
}

static void pipe_through_identity_transform(void **state)
{
    struct src s = {.total = 1000, .per_pull = 1};
    struct weir_readable *rs = make_src(&s, 1);
    struct weir_transform *tf;
    struct weir_reader r;
    struct weir_chunk c;
    struct done d = {0};
    uint64_t sum = 0;
    int rc;

    (void)state;
    assert_int_equal(weir_transform_create(&tf, NULL, NULL, NULL), 0);
    /* Readable side hwm 0: the pipe waits for a reader. */
    assert_int_equal(weir_pipe_through(rs, tf, NULL, done_cb, &d),
                     WEIR_PENDING);
    assert_int_equal(weir_reader_acquire(&r, weir_transform_readable(tf)), 0);
    while ((rc = weir_reader_read(&r, &c, read_cb, NULL)) == 0)
        sum = sum_chunk(sum, c);
    assert_int_equal(rc, WEIR_DONE);
    assert_true(sum == s.sum);
    assert_int_equal(d.calls, 1);
    assert_int_equal(d.rc, 0);
    weir_reader_release(&r);
    weir_transform_destroy(tf);
    weir_readable_destroy(rs);
}

static void locked_streams_cannot_be_piped(void **state)
{
    struct src s = {.no_close = true};
    struct sink k = {0};
    struct weir_readable *rs = make_src(&s, 1);
    struct weir_writable *ws = make_dst(&k, 1);
    struct weir_reader r;

    (void)state;
    assert_int_equal(weir_reader_acquire(&r, rs), 0);
    assert_int_equal(weir_pipe_to(rs, ws, NULL, done_cb, NULL), -EBUSY);
    weir_reader_release(&r);
    weir_readable_destroy(rs);
    weir_writable_destroy(ws);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(pipe_delivers_everything_then_closes),
        cmocka_unit_test(pipe_with_async_ends_reports_through_callback),
        cmocka_unit_test(never_reads_while_destination_is_full),
        cmocka_unit_test(source_error_aborts_destination),
        cmocka_unit_test(source_error_with_prevent_abort_leaves_destination),
        cmocka_unit_test(destination_error_cancels_source),
        cmocka_unit_test(destination_error_with_prevent_cancel_leaves_source),
        cmocka_unit_test(source_close_closes_destination),
        cmocka_unit_test(source_close_with_prevent_close_leaves_destination),
        cmocka_unit_test(closed_destination_cancels_source),
        cmocka_unit_test(closed_destination_with_prevent_cancel),
        cmocka_unit_test(source_error_rule_comes_before_destination_error),
        cmocka_unit_test(destination_error_rule_comes_before_source_close),
        cmocka_unit_test(source_close_rule_comes_before_closed_destination),
        cmocka_unit_test(writes_already_read_finish_before_abort),
        cmocka_unit_test(pipe_through_identity_transform),
        cmocka_unit_test(locked_streams_cannot_be_piped),
    };

    pattern_init();
    return cmocka_run_group_tests(tests, NULL, NULL);
}
