/*
 * WPT streams/transform-streams/terminate.any.js, ported to weir's C API.
 * The spec's TypeError for the writable side of a terminated transform is
 * -EPIPE.
 */
#include "wpt.h"

#define F "transform-streams/terminate.any.js"

static const char *const zero[] = {"0", NULL};
static const char *const zero_one[] = {"0", "1", NULL};

/* F: "controller.terminate() should error pipeTo()" */
static void terminate_errors_pipe(void **state)
{
    struct rtf t = {0};
    struct rsrc s = {.on_start = start_enqueue, .user = (void *)zero};
    struct weir_transform *tf = rtf_make(&t, 1, 0);
    struct weir_readable *rs = rsrc_new(&s);
    struct done d = {0};

    (void)state;
    pipe_go(rs, weir_transform_writable(tf), 0, &d);
    assert_int_equal(d.calls, 0);
    assert_string_equal(t.ev.s, "");
    weir_transform_terminate(tf);
    assert_int_equal(d.calls, 1);
    assert_int_equal(d.rc, -EPIPE);
    assert_string_equal(t.ev.s, "");
    weir_readable_destroy(rs);
    weir_transform_destroy(tf);
}

/* F: "controller.terminate() should prevent remaining chunks from being
 * processed" */
static void terminate_stops_chunks(void **state)
{
    struct rtf t = {0};
    struct rsrc s = {.on_start = start_enqueue, .user = (void *)zero_one};
    struct weir_transform *tf = rtf_make(&t, 1, 1);
    struct weir_readable *rs = rsrc_make(&s, 2, false);
    struct done d = {0};

    (void)state;
    pipe_go(rs, weir_transform_writable(tf), 0, &d);
    assert_string_equal(t.ev.s, "transform:0");
    weir_transform_terminate(tf);
    assert_int_equal(d.calls, 1);
    assert_int_equal(d.rc, -EPIPE);
    assert_string_equal(t.ev.s, "transform:0");
    weir_readable_destroy(rs);
    weir_transform_destroy(tf);
}

/* F: "controller.enqueue() should throw after controller.terminate()" */
static int start_terminate_enqueue(struct rtf *t)
{
    assert_int_equal(weir_transform_enqueue(t->tf, S("0")), 0);
    weir_transform_terminate(t->tf);
    assert_int_equal(weir_transform_enqueue(t->tf, S("1")), -EINVAL);
    t->n = 1;
    return 0;
}

static void enqueue_after_terminate(void **state)
{
    struct rtf t = {.on_start = start_terminate_enqueue};
    struct weir_transform *tf = rtf_make(&t, 1, 0);

    (void)state;
    assert_int_equal(t.n, 1);
    weir_transform_destroy(tf);
}

/* The start of the next two: runs the WPT's start body, and stays
 * pending so that the abort below meets the writable side still erroring
 * (as it does in JS, where start settles a microtask later). */
static int start_terminate_error(struct rtf *t)
{
    if (t->n)
        weir_transform_enqueue(t->tf, S("0"));
    weir_transform_terminate(t->tf);
    weir_transform_error(t->tf, E1);
    return WEIR_PENDING;
}

/* F: "controller.error() after controller.terminate() with queued chunk
 * should error the readable" */
static void error_after_terminate_queued(void **state)
{
    struct rtf t = {.on_start = start_terminate_error, .n = 1};
    struct weir_transform *tf = rtf_make(&t, 1, 0);
    struct weir_readable *rs = weir_transform_readable(tf);
    struct weir_writer w;
    struct weir_reader r;
    struct done ad = {0};

    (void)state;
    assert_int_equal(weir_writer_acquire(&w, weir_transform_writable(tf)), 0);
    assert_int_equal(weir_writer_abort(&w, E2, done_cb, &ad), WEIR_PENDING);
    weir_transform_done(tf, 0);
    assert_int_equal(ad.rc, -EPIPE);
    assert_int_equal(weir_reader_acquire(&r, rs), 0);
    assert_int_equal(weir_reader_cancel(&r, E2), E1);
    assert_int_equal(rs_err(rs), E1);
    weir_reader_release(&r);
    weir_writer_release(&w);
    weir_transform_destroy(tf);
}

/* F: "controller.error() after controller.terminate() without queued chunk
 * should do nothing" */
static void error_after_terminate_empty(void **state)
{
    struct rtf t = {.on_start = start_terminate_error};
    struct weir_transform *tf = rtf_make(&t, 1, 0);
    struct weir_readable *rs = weir_transform_readable(tf);
    struct weir_writer w;
    struct weir_reader r;
    struct done ad = {0};

    (void)state;
    assert_int_equal(weir_writer_acquire(&w, weir_transform_writable(tf)), 0);
    assert_int_equal(weir_writer_abort(&w, E2, done_cb, &ad), WEIR_PENDING);
    weir_transform_done(tf, 0);
    assert_int_equal(ad.rc, -EPIPE);
    assert_int_equal(weir_reader_acquire(&r, rs), 0);
    assert_int_equal(weir_reader_cancel(&r, E2), 0);
    assert_true(weir_readable_closed(rs));
    weir_reader_release(&r);
    weir_writer_release(&w);
    weir_transform_destroy(tf);
}

/* F: "controller.terminate() inside flush() should not prevent
 * writer.close() from succeeding" */
static int flush_terminates(struct rtf *t)
{
    weir_transform_terminate(t->tf);
    return 0;
}

static void terminate_in_flush(void **state)
{
    struct rtf t = {.on_flush = flush_terminates};
    struct weir_transform *tf = rtf_make(&t, 1, 0);
    struct weir_writer w;

    (void)state;
    assert_int_equal(weir_writer_acquire(&w, weir_transform_writable(tf)), 0);
    assert_int_equal(weir_writer_close(&w, NULL, NULL), 0);
    assert_true(weir_writable_closed(weir_transform_writable(tf)));
    assert_true(weir_readable_closed(weir_transform_readable(tf)));
    weir_writer_release(&w);
    weir_transform_destroy(tf);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        WPT(terminate_errors_pipe,
            "controller.terminate() should error pipeTo()"),
        WPT(terminate_stops_chunks, "controller.terminate() should prevent "
                                    "remaining chunks from being processed"),
        WPT(enqueue_after_terminate,
            "controller.enqueue() should throw after controller.terminate()"),
        WPT(error_after_terminate_queued,
            "controller.error() after controller.terminate() with queued "
            "chunk should error the readable"),
        WPT(error_after_terminate_empty,
            "controller.error() after controller.terminate() without queued "
            "chunk should do nothing"),
        WPT(terminate_in_flush,
            "controller.terminate() inside flush() should not prevent "
            "writer.close() from succeeding"),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
