/*
 * WPT streams/transform-streams/flush.any.js, ported to weir's C API.
 */
#include "wpt_tf.h"

#define F "transform-streams/flush.any.js"

static int swallow(struct rtf *t, struct weir_chunk c)
{
    (void)t;
    (void)c;
    return 0;
}

/* F: "TransformStream flush is called immediately when the writable is
 * closed, if no writes are queued" */
static void flush_at_once(void **state)
{
    struct fx f = {.t = {.on_transform = swallow}};

    (void)state;
    fx_open(&f, 0);
    assert_int_equal(weir_writer_close(&f.w, NULL, NULL), 0);
    assert_int_equal(f.t.flushes, 1);
    fx_close(&f);
}

/* F: "TransformStream flush is called after all queued writes finish, once
 * the writable is closed" */
static int pending_transform(struct rtf *t, struct weir_chunk c)
{
    (void)t;
    (void)c;
    return WEIR_PENDING;
}

static void flush_after_writes(void **state)
{
    struct fx f = {
        .t = {.on_transform = pending_transform, .flush_rc = WEIR_PENDING}};

    (void)state;
    fx_open(&f, 1);
    weir_writer_write(&f.w, S("a"), NULL, NULL);
    weir_writer_close(&f.w, NULL, NULL);
    assert_int_equal(f.t.flushes, 0);
    weir_transform_done(f.tf, 0);
    assert_int_equal(f.t.flushes, 1);
    assert_false(weir_readable_closed(f.rs));
    fx_close(&f);
}

/* F: "TransformStream flush gets a chance to enqueue more into the
 * readable" */
static int flush_xy(struct rtf *t)
{
    weir_transform_enqueue(t->tf, S("x"));
    weir_transform_enqueue(t->tf, S("y"));
    return t->n ? WEIR_PENDING : 0;
}

static void flush_enqueues(void **state)
{
    struct fx f = {.t = {.on_transform = swallow, .on_flush = flush_xy}};

    (void)state;
    fx_open(&f, 0);
    weir_writer_write(&f.w, S("a"), NULL, NULL);
    weir_writer_close(&f.w, NULL, NULL);
    assert_read(&f.r, "x");
    assert_read(&f.r, "y");
    fx_close(&f);
}

/* F: "TransformStream flush gets a chance to enqueue more into the
 * readable, and can then async close" */
static void flush_enqueues_async_close(void **state)
{
    struct fx f = {
        .t = {.on_transform = swallow, .on_flush = flush_xy, .n = 1}};
    struct done rd = {0}, cd = {0};
    struct weir_chunk c;

    (void)state;
    fx_open(&f, 0);
    weir_writer_write(&f.w, S("a"), NULL, NULL);
    weir_writer_close(&f.w, done_cb, &cd);
    assert_read(&f.r, "x");
    assert_read(&f.r, "y");
    assert_int_equal(weir_reader_read(&f.r, &c, read_cb, &rd), WEIR_PENDING);
    weir_transform_done(f.tf, 0);
    assert_int_equal(rd.rc, WEIR_DONE);
    assert_int_equal(cd.rc, 0);
    assert_true(weir_readable_closed(f.rs));
    fx_close(&f);
}

/* F: "error() during flush should cause writer.close() to reject" */
static int flush_errors(struct rtf *t)
{
    weir_transform_error(t->tf, E1);
    return 0;
}

static void error_in_flush(void **state)
{
    struct fx f = {.t = {.on_flush = flush_errors}};

    (void)state;
    fx_open(&f, 0);
    assert_int_equal(weir_writer_close(&f.w, NULL, NULL), E1);
    assert_int_equal(ws_err(f.ws), E1);
    assert_int_equal(rs_err(f.rs), E1);
    fx_close(&f);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        WPT(flush_at_once, "TransformStream flush is called immediately when "
                           "the writable is closed, if no writes are queued"),
        WPT(flush_after_writes,
            "TransformStream flush is called after all queued writes "
            "finish, once the writable is closed"),
        WPT(flush_enqueues, "TransformStream flush gets a chance to enqueue "
                            "more into the readable"),
        WPT(flush_enqueues_async_close,
            "TransformStream flush gets a chance to enqueue more into the "
            "readable, and can then async close"),
        WPT(error_in_flush,
            "error() during flush should cause writer.close() to reject"),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
