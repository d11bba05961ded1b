/*
 * test_stream_null.c - the optional callbacks of the stream core's public
 * headers: each one left NULL either works or is refused with -EINVAL, as
 * weir/stream_types.h says.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include "test_stream_util.h"

static void read_that_would_park_needs_a_callback(void **state)
{
    struct weir_readable *rs;
    struct weir_reader r;
    struct weir_chunk c;
    uint8_t buf[4];
    struct weir_readable_options o = {.strategy = {.hwm = 1},
                                      .byte_stream = true};

    (void)state;
    assert_int_equal(weir_readable_create(&rs, NULL, NULL, NULL), 0);
    assert_int_equal(weir_reader_acquire(&r, rs), 0);
    assert_int_equal(weir_reader_read(&r, &c, NULL, NULL), -EINVAL);
    /* Nothing parked: a chunk enqueued now stays queued, and a read
     * with no callback that finds it works. */
    weir_readable_enqueue(rs, chunk_nr(1));
    assert_int_equal(weir_reader_read(&r, &c, NULL, NULL), 0);
    assert_int_equal(c.len, chunk_nr(1).len);
    weir_reader_release(&r);
    weir_readable_destroy(rs);

    assert_int_equal(weir_readable_create(&rs, NULL, NULL, &o), 0);
    assert_int_equal(weir_reader_acquire(&r, rs), 0);
    assert_int_equal(weir_reader_read_byob(&r, buf, 4, 1, &c, NULL, NULL),
                     -EINVAL);
    weir_reader_release(&r);
    weir_readable_destroy(rs);
}

static void writer_callbacks_may_be_null(void **state)
{
    struct sink k = {.async = true, .async_close = true};
    struct weir_writable *ws;
    struct weir_writer w;

    (void)state;
    assert_int_equal(weir_writable_create(&ws, &sink_ops, &k, NULL), 0);
    k.ws = ws;
    weir_writer_acquire(&w, ws);
    assert_int_equal(weir_writer_write(&w, chunk_nr(0), NULL, NULL),
                     WEIR_PENDING);
    assert_int_equal(weir_writer_ready(&w, NULL, NULL), WEIR_PENDING);
    assert_int_equal(weir_writer_close(&w, NULL, NULL), WEIR_PENDING);
    sink_finish(&k);
    assert_int_equal(k.closes, 1);
    weir_writable_close_done(ws, 0);
    assert_true(weir_writable_closed(ws));
    weir_writer_release(&w);
    weir_writable_destroy(ws);

    k = (struct sink){.async = true};
    assert_int_equal(weir_writable_create(&ws, &sink_ops, &k, NULL), 0);
    k.ws = ws;
    weir_writer_acquire(&w, ws);
    weir_writer_write(&w, chunk_nr(0), NULL, NULL);
    assert_int_equal(weir_writer_abort(&w, -EIO, NULL, NULL), WEIR_PENDING);
    sink_finish(&k);
    assert_int_equal(k.aborts, 1);
    weir_writer_release(&w);
    weir_writable_destroy(ws);
}

static void ops_tables_may_be_null(void **state)
{
    struct weir_writable *ws;
    struct weir_transform *tf;
    struct weir_writer w;
    struct weir_reader r;
    struct weir_chunk c;

    (void)state;
    /* A sink with no ops drops what it is given. */
    assert_int_equal(weir_writable_create(&ws, NULL, NULL, NULL), 0);
    weir_writer_acquire(&w, ws);
    assert_int_equal(weir_writer_write(&w, chunk_nr(0), NULL, NULL),
                     WEIR_PENDING);
    assert_int_equal(weir_writer_close(&w, NULL, NULL), 0);
    assert_int_equal(weir_writer_abort(&w, -EIO, NULL, NULL), 0);
    weir_writer_release(&w);
    weir_writable_destroy(ws);

    /* A transformer with no ops is the identity. */
    assert_int_equal(weir_transform_create(&tf, NULL, NULL, NULL), 0);
    weir_writer_acquire(&w, weir_transform_writable(tf));
    weir_reader_acquire(&r, weir_transform_readable(tf));
    weir_writer_write(&w, chunk_nr(3), NULL, NULL);
    assert_int_equal(weir_reader_read(&r, &c, NULL, NULL), 0);
    assert_int_equal(c.len, chunk_nr(3).len);
    assert_int_equal(weir_reader_cancel(&r, -EIO), 0);
    weir_reader_release(&r);
    weir_writer_release(&w);
    weir_transform_destroy(tf);
}

static void pipe_done_may_be_null(void **state)
{
    struct src s = {.total = 10, .per_pull = 1, .async_pull = true};
    struct sink k = {0};
    struct weir_readable *rs;
    struct weir_writable *ws;

    (void)state;
    assert_int_equal(weir_readable_create(&rs, &src_ops, &s, NULL), 0);
    assert_int_equal(weir_writable_create(&ws, &sink_ops, &k, NULL), 0);
    k.ws = ws;
    assert_int_equal(weir_pipe_to(rs, ws, NULL, NULL, NULL), WEIR_PENDING);
    while (s.pull_pending)
        src_finish_pull(&s);
    assert_true(weir_writable_closed(ws));
    assert_false(weir_readable_locked(rs));
    assert_true(k.sum == s.sum);
    weir_readable_destroy(rs);
    weir_writable_destroy(ws);
}

static int count_each(void *ctx, struct weir_chunk c)
{
    (void)c;
    ++*(int *)ctx;
    return 0;
}

static void iterator_each_is_required_done_is_not(void **state)
{
    struct src s = {.total = 5, .per_pull = 1, .async_pull = true};
    struct weir_readable *rs;
    struct weir_iter it;
    int n = 0;

    (void)state;
    assert_int_equal(weir_readable_create(&rs, &src_ops, &s, NULL), 0);
    assert_int_equal(weir_iter_run(&it, rs, NULL, NULL, NULL), -EINVAL);
    assert_false(weir_readable_locked(rs));
    assert_int_equal(weir_iter_run(&it, rs, count_each, NULL, &n),
                     WEIR_PENDING);
    while (s.pull_pending)
        src_finish_pull(&s);
    assert_int_equal(n, 5);
    assert_false(weir_readable_locked(rs));
    weir_readable_destroy(rs);
}

static void live_tee_options_may_be_null(void **state)
{
    struct weir_readable *rs;
    struct weir_tee *t;

    (void)state;
    assert_int_equal(weir_readable_create(&rs, NULL, NULL, NULL), 0);
    assert_int_equal(weir_tee_create_live(&t, rs, NULL), 0);
    weir_readable_close(rs);
    weir_tee_destroy(t);
    weir_readable_destroy(rs);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(read_that_would_park_needs_a_callback),
        cmocka_unit_test(writer_callbacks_may_be_null),
        cmocka_unit_test(ops_tables_may_be_null),
        cmocka_unit_test(pipe_done_may_be_null),
        cmocka_unit_test(iterator_each_is_required_done_is_not),
        cmocka_unit_test(live_tee_options_may_be_null),
    };

    pattern_init();
    return cmocka_run_group_tests(tests, NULL, NULL);
}
