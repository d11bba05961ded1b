/*
 * WPT streams/transform-streams/errors.any.js, ported to weir's C API.
 */
#include "wpt_tf.h"

#define F "transform-streams/errors.any.js"

static int swallow(struct rtf *t, struct weir_chunk c)
{
    (void)t;
    (void)c;
    return 0;
}

static int throw_e1(struct rtf *t, struct weir_chunk c)
{
    (void)t;
    (void)c;
    return E1;
}

/* F: "TransformStream errors thrown in transform put the writable and
 * readable in an errored state" */
static void thrown_in_transform(void **state)
{
    struct fx f = {.t = {.on_transform = throw_e1}};
    struct done wd = {0};

    (void)state;
    fx_open(&f, 0);
    assert_int_equal(weir_writer_write(&f.w, S("a"), done_cb, &wd),
                     WEIR_PENDING);
    assert_int_equal(read_now(&f.r, NULL, 0), E1);
    assert_int_equal(wd.rc, E1);
    assert_int_equal(rs_err(f.rs), E1);
    assert_int_equal(ws_err(f.ws), E1);
    fx_close(&f);
}

/* F: "TransformStream errors thrown in flush put the writable and readable
 * in an errored state" */
static void thrown_in_flush(void **state)
{
    struct fx f = {.t = {.on_transform = swallow, .flush_rc = E1}};
    struct done wd = {0}, cd = {0};

    (void)state;
    fx_open(&f, 0);
    weir_writer_write(&f.w, S("a"), done_cb, &wd);
    weir_writer_close(&f.w, done_cb, &cd);
    assert_int_equal(read_now(&f.r, NULL, 0), E1);
    assert_int_equal(wd.rc, 0);
    assert_int_equal(cd.rc, E1);
    assert_int_equal(rs_err(f.rs), E1);
    assert_int_equal(ws_err(f.ws), E1);
    fx_close(&f);
}

/* F: "errored TransformStream should not enqueue new chunks" */
static int start_enqueue_error(struct rtf *t)
{
    assert_int_equal(weir_transform_enqueue(t->tf, S("a")), 0);
    weir_transform_error(t->tf, E1);
    assert_int_equal(weir_transform_enqueue(t->tf, S("b")), -EINVAL);
    t->n = 1;
    return 0;
}

static void no_enqueue_after_error(void **state)
{
    struct fx f = {.t = {.on_start = start_enqueue_error}};

    (void)state;
    fx_open(&f, 0);
    assert_int_equal(f.t.n, 1);
    fx_close(&f);
}

/* F: "TransformStream transformer.start() rejected promise should error
 * the stream" */
static void start_rejects(void **state)
{
    struct fx f = {.t = {.start_rc = WEIR_PENDING}};
    struct done wd = {0}, cd = {0}, rd = {0};
    struct weir_chunk c;

    (void)state;
    fx_open(&f, 0);
    weir_writer_write(&f.w, S("a"), done_cb, &wd);
    weir_writer_close(&f.w, done_cb, &cd);
    assert_int_equal(weir_reader_read(&f.r, &c, read_cb, &rd), WEIR_PENDING);
    weir_transform_done(f.tf, E1);
    assert_int_equal(wd.rc, E1);
    assert_int_equal(cd.rc, E1);
    assert_int_equal(rd.rc, E1);
    assert_int_equal(f.t.transforms + f.t.flushes, 0);
    fx_close(&f);
}

/* F: "when controller.error is followed by a rejection, the error reason
 * should come from controller.error" */
static void controller_error_first(void **state)
{
    struct fx f = {.t = {.start_rc = WEIR_PENDING}};
    struct done wd = {0}, cd = {0}, rd = {0};
    struct weir_chunk c;

    (void)state;
    fx_open(&f, 0);
    weir_writer_write(&f.w, S("a"), done_cb, &wd);
    weir_writer_close(&f.w, done_cb, &cd);
    weir_reader_read(&f.r, &c, read_cb, &rd);
    weir_transform_error(f.tf, E1);
    weir_transform_done(f.tf, E2);
    assert_int_equal(wd.rc, E1);
    assert_int_equal(cd.rc, E1);
    assert_int_equal(rd.rc, E1);
    assert_int_equal(f.t.transforms + f.t.flushes, 0);
    fx_close(&f);
}

/* F: "TransformStream constructor should throw when start does".
 * Departure (creation does not fail for start): weir_transform_create
 * succeeds and both sides are errored with start's error. */
static void start_throws(void **state)
{
    struct fx f = {.t = {.start_rc = E1}};

    (void)state;
    fx_open(&f, 0);
    assert_int_equal(rs_err(f.rs), E1);
    assert_int_equal(ws_err(f.ws), E1);
    fx_close(&f);
}

/* F: "cancelling the readable side should error the writable" */
static void cancel_errors_writable(void **state)
{
    struct fx f = {0};

    (void)state;
    fx_open(&f, 0);
    assert_int_equal(weir_reader_cancel(&f.r, E1), 0);
    assert_int_equal(ws_err(f.ws), E1);
    fx_close(&f);
}

/* F: "it should be possible to error the readable between close requested
 * and complete" */
static void error_between_close_and_complete(void **state)
{
    struct fx f = {0};
    struct done wd = {0}, cd = {0};

    (void)state;
    fx_open(&f, 0);
    weir_writer_write(&f.w, S("a"), done_cb, &wd);
    weir_writer_close(&f.w, done_cb, &cd);
    weir_transform_error(f.tf, E1);
    assert_int_equal(rs_err(f.rs), E1);
    assert_int_equal(wd.rc, E1);
    assert_int_equal(cd.rc, E1);
    fx_close(&f);
}

/* F: "an exception from transform() should error the stream if terminate
 * has been requested but not completed" */
static int enqueue_terminate_throw(struct rtf *t, struct weir_chunk c)
{
    weir_transform_enqueue(t->tf, c);
    weir_transform_terminate(t->tf);
    return E1;
}

static void throw_after_terminate(void **state)
{
    struct fx f = {.t = {.on_transform = enqueue_terminate_throw}};

    (void)state;
    fx_open(&f, 1);
    assert_int_equal(weir_writer_write(&f.w, S("a"), done_cb, NULL), E1);
    assert_int_equal(rs_err(f.rs), E1);
    fx_close(&f);
}

/* F: "abort should set the close reason for the writable when it happens
 * before cancel during start, but cancel should still succeed" */
static void abort_before_cancel_during_start(void **state)
{
    struct fx f = {.t = {.start_rc = WEIR_PENDING}};
    struct done ad = {0};

    (void)state;
    fx_open(&f, 0);
    assert_int_equal(weir_writer_abort(&f.w, E1, done_cb, &ad), WEIR_PENDING);
    assert_int_equal(weir_reader_cancel(&f.r, E2), 0);
    weir_transform_done(f.tf, 0);
    assert_int_equal(ad.calls, 1);
    assert_int_equal(ad.rc, 0);
    assert_int_equal(ws_err(f.ws), E1);
    fx_close(&f);
}

/* F: "abort should set the close reason for the writable when it happens
 * before cancel during underlying sink write, but cancel should still
 * succeed" */
static int pending_transform(struct rtf *t, struct weir_chunk c)
{
    (void)t;
    (void)c;
    return WEIR_PENDING;
}

static void abort_before_cancel_during_write(void **state)
{
    struct fx f = {.t = {.on_transform = pending_transform}};
    struct done wd = {0}, ad = {0};

    (void)state;
    fx_open(&f, 2);
    weir_writer_write(&f.w, S("x"), done_cb, &wd);
    assert_int_equal(f.t.transforms, 1);
    assert_int_equal(weir_writer_abort(&f.w, E1, done_cb, &ad), WEIR_PENDING);
    assert_int_equal(weir_reader_cancel(&f.r, E2), 0);
    weir_transform_done(f.tf, 0);
    assert_int_equal(wd.rc, 0);
    assert_int_equal(ad.rc, 0);
    assert_int_equal(ws_err(f.ws), E1);
    fx_close(&f);
}

/* F: "controller.error() should do nothing the second time it is
 * called" */
static int start_error_twice(struct rtf *t)
{
    weir_transform_error(t->tf, E1);
    weir_transform_error(t->tf, E2);
    return WEIR_PENDING;
}

static void error_twice(void **state)
{
    struct fx f = {.t = {.on_start = start_error_twice}};
    struct done ad = {0};

    (void)state;
    fx_open(&f, 0);
    assert_int_equal(weir_writer_abort(&f.w, E2, done_cb, &ad), WEIR_PENDING);
    weir_transform_done(f.tf, 0);
    assert_int_equal(ad.rc, E1);
    assert_int_equal(rs_err(f.rs), E1);
    fx_close(&f);
}

/* F: "controller.error() should do nothing after readable.cancel()" */
static void error_after_cancel(void **state)
{
    struct fx f = {0};

    (void)state;
    fx_open(&f, 0);
    assert_int_equal(weir_reader_cancel(&f.r, E1), 0);
    weir_transform_error(f.tf, E2);
    assert_int_equal(ws_err(f.ws), E1);
    assert_true(weir_readable_closed(f.rs));
    fx_close(&f);
}

/* F: "controller.error() should do nothing after writable.abort() has
 * completed" */
static void error_after_abort(void **state)
{
    struct fx f = {0};

    (void)state;
    fx_open(&f, 0);
    assert_int_equal(weir_writer_abort(&f.w, E1, NULL, NULL), 0);
    weir_transform_error(f.tf, E2);
    assert_int_equal(ws_err(f.ws), E1);
    assert_int_equal(rs_err(f.rs), E1);
    fx_close(&f);
}

/* F: "controller.error() should do nothing after a transformer method has
 * thrown an exception" */
static void error_after_throw(void **state)
{
    struct fx f = {.t = {.transform_rc = E1}};

    (void)state;
    fx_open(&f, WEIR_HWM_UNLIMITED);
    assert_int_equal(weir_writer_write(&f.w, S("a"), NULL, NULL), E1);
    weir_transform_error(f.tf, E2);
    assert_int_equal(ws_err(f.ws), E1);
    fx_close(&f);
}

/* F: "erroring during write with backpressure should result in the write
 * failing" */
static void error_with_backpressure(void **state)
{
    struct fx f = {0};
    struct done wd = {0};

    (void)state;
    fx_open(&f, 1);
    assert_int_equal(weir_transform_enqueue(f.tf, S("a")), 0);
    assert_int_equal(weir_writer_write(&f.w, S("b"), done_cb, &wd),
                     WEIR_PENDING);
    assert_int_equal(f.t.transforms, 0);
    weir_transform_error(f.tf, E1);
    assert_int_equal(wd.calls, 1);
    assert_int_equal(wd.rc, E1);
    assert_int_equal(f.t.transforms, 0);
    fx_close(&f);
}

/* F: "a write() that was waiting for backpressure should reject if the
 * writable is aborted" */
static void held_write_aborted(void **state)
{
    struct fx f = {0};
    struct done wd = {0}, ad = {0};

    (void)state;
    fx_open(&f, 0);
    assert_int_equal(weir_writer_write(&f.w, S("0"), done_cb, &wd),
                     WEIR_PENDING);
    assert_int_equal(weir_writer_abort(&f.w, E1, done_cb, &ad), WEIR_PENDING);
    assert_int_equal(read_now(&f.r, NULL, 0), E1);
    assert_int_equal(wd.rc, E1);
    assert_int_equal(ad.calls, 1);
    assert_int_equal(ad.rc, 0);
    /* The held chunk never reached the transformer. */
    assert_int_equal(f.t.transforms, 0);
    fx_close(&f);
}

/* F: "the readable should be errored with the reason passed to the
 * writable abort() method" */
static void abort_errors_readable(void **state)
{
    struct fx f = {0};

    (void)state;
    fx_open(&f, 0);
    weir_writer_abort(&f.w, E1, NULL, NULL);
    assert_int_equal(read_now(&f.r, NULL, 0), E1);
    fx_close(&f);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        WPT(thrown_in_transform,
            "TransformStream errors thrown in transform put the writable "
            "and readable in an errored state"),
        WPT(thrown_in_flush, "TransformStream errors thrown in flush put the "
                             "writable and readable in an errored state"),
        WPT(no_enqueue_after_error,
            "errored TransformStream should not enqueue new chunks"),
        WPT(start_rejects, "TransformStream transformer.start() rejected "
                           "promise should error the stream"),
        WPT(controller_error_first,
            "when controller.error is followed by a rejection, the error "
            "reason should come from controller.error"),
        WPT(start_throws,
            "TransformStream constructor should throw when start does"),
        WPT(cancel_errors_writable,
            "cancelling the readable side should error the writable"),
        WPT(error_between_close_and_complete,
            "it should be possible to error the readable between close "
            "requested and complete"),
        WPT(throw_after_terminate,
            "an exception from transform() should error the stream if "
            "terminate has been requested but not completed"),
        WPT(abort_before_cancel_during_start,
            "abort should set the close reason for the writable when it "
            "happens before cancel during start, but cancel should still "
            "succeed"),
        WPT(abort_before_cancel_during_write,
            "abort should set the close reason for the writable when it "
            "happens before cancel during underlying sink write, but cancel "
            "should still succeed"),
        WPT(error_twice,
            "controller.error() should do nothing the second time it is "
            "called"),
        WPT(error_after_cancel,
            "controller.error() should do nothing after readable.cancel()"),
        WPT(error_after_abort, "controller.error() should do nothing after "
                               "writable.abort() has completed"),
        WPT(error_after_throw, "controller.error() should do nothing after a "
                               "transformer method has thrown an exception"),
        WPT(error_with_backpressure, "erroring during write with "
                                     "backpressure should result in the "
                                     "write failing"),
        WPT(held_write_aborted, "a write() that was waiting for backpressure "
                                "should reject if the writable is aborted"),
        WPT(abort_errors_readable,
            "the readable should be errored with the reason passed to the "
            "writable abort() method"),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
