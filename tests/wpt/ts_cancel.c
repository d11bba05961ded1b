/*
 * WPT streams/transform-streams/cancel.any.js, ported to weir's C API.
 */
#include "wpt.h"

#define F "transform-streams/cancel.any.js"

struct fx {
    struct rtf t;
    struct weir_transform *tf;
    struct weir_readable *rs;
    struct weir_writable *ws;
    struct weir_reader r;
    struct weir_writer w;
};

static void fx_open(struct fx *f)
{
    f->tf = rtf_make(&f->t, 1, 0);
    f->rs = weir_transform_readable(f->tf);
    f->ws = weir_transform_writable(f->tf);
    assert_int_equal(weir_reader_acquire(&f->r, f->rs), 0);
    assert_int_equal(weir_writer_acquire(&f->w, f->ws), 0);
}

static void fx_close(struct fx *f)
{
    weir_reader_release(&f->r);
    weir_writer_release(&f->w);
    weir_transform_destroy(f->tf);
}

/* F: "cancelling the readable side should call transformer.cancel()" */
static void cancel_calls_cancel(void **state)
{
    struct fx f = {0};

    (void)state;
    fx_open(&f);
    assert_int_equal(weir_reader_cancel(&f.r, E1), 0);
    assert_string_equal(f.t.ev.s, "cancel:-1001");
    fx_close(&f);
}

/* F: "cancelling the readable side should reject if transformer.cancel()
 * throws" */
static void cancel_throws(void **state)
{
    struct fx f = {.t = {.cancel_rc = E1}};

    (void)state;
    fx_open(&f);
    assert_int_equal(weir_reader_cancel(&f.r, E2), E1);
    assert_int_equal(f.t.cancel_reason, E2);
    assert_int_equal(ws_err(f.ws), E1);
    fx_close(&f);
}

/* F: "aborting the writable side should call transformer.abort()" */
static void abort_calls_cancel(void **state)
{
    struct fx f = {0};

    (void)state;
    fx_open(&f);
    assert_int_equal(weir_writer_abort(&f.w, E1, NULL, NULL), 0);
    assert_string_equal(f.t.ev.s, "cancel:-1001");
    assert_int_equal(f.t.flushes, 0);
    fx_close(&f);
}

/* F: "aborting the writable side should reject if transformer.cancel()
 * throws" */
static void abort_throws(void **state)
{
    struct fx f = {.t = {.cancel_rc = E1}};

    (void)state;
    fx_open(&f);
    assert_int_equal(weir_writer_abort(&f.w, E2, NULL, NULL), E1);
    assert_int_equal(f.t.cancel_reason, E2);
    assert_int_equal(rs_err(f.rs), E1);
    assert_int_equal(f.t.flushes, 0);
    fx_close(&f);
}

/* F: "closing the writable side should reject if a parallel
 * transformer.cancel() throws" */
static void close_after_cancel_throws(void **state)
{
    struct fx f = {.t = {.cancel_rc = E1}};

    (void)state;
    fx_open(&f);
    assert_int_equal(weir_reader_cancel(&f.r, E2), E1);
    assert_int_equal(weir_writer_close(&f.w, NULL, NULL), E1);
    assert_int_equal(f.t.flushes, 0);
    fx_close(&f);
}

/* F: "readable.cancel() and a parallel writable.close() should reject if a
 * transformer.cancel() calls controller.error()" */
static int cancel_errors(struct rtf *t, int reason)
{
    (void)reason;
    weir_transform_error(t->tf, E1);
    return 0;
}

static void cancel_then_close_error(void **state)
{
    struct fx f = {.t = {.on_cancel = cancel_errors}};

    (void)state;
    fx_open(&f);
    assert_int_equal(weir_reader_cancel(&f.r, E2), E1);
    assert_int_equal(weir_writer_close(&f.w, NULL, NULL), E1);
    assert_int_equal(f.t.flushes, 0);
    fx_close(&f);
}

/* F: "writable.abort() and readable.cancel() should reject if a
 * transformer.cancel() calls controller.error()" */
static void abort_then_cancel_error(void **state)
{
    struct fx f = {.t = {.on_cancel = cancel_errors}};

    (void)state;
    fx_open(&f);
    assert_int_equal(weir_writer_abort(&f.w, E2, NULL, NULL), E1);
    assert_int_equal(weir_reader_cancel(&f.r, -1), E1);
    assert_int_equal(f.t.cancels, 1);
    fx_close(&f);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        WPT(cancel_calls_cancel,
            "cancelling the readable side should call transformer.cancel()"),
        WPT(cancel_throws, "cancelling the readable side should reject if "
                           "transformer.cancel() throws"),
        WPT(abort_calls_cancel,
            "aborting the writable side should call transformer.abort()"),
        WPT(abort_throws, "aborting the writable side should reject if "
                          "transformer.cancel() throws"),
        WPT(close_after_cancel_throws,
            "closing the writable side should reject if a parallel "
            "transformer.cancel() throws"),
        WPT(cancel_then_close_error,
            "readable.cancel() and a parallel writable.close() should reject "
            "if a transformer.cancel() calls controller.error()"),
        WPT(abort_then_cancel_error,
            "writable.abort() and readable.cancel() should reject if a "
            "transformer.cancel() calls controller.error()"),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
