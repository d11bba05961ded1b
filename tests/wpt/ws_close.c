/*
 * WPT streams/writable-streams/close.any.js, ported to weir's C API.
 * writer.closed has no counterpart; the stream's state stands in for it.
 * The spec's TypeError for closing a closed or closing stream is -EINVAL.
 */
#include "wpt.h"

#define F "writable-streams/close.any.js"

struct fx {
    struct rsink k;
    struct weir_writable *ws;
    struct weir_writer w;
    int order;
};

static void fx_open(struct fx *f, size_t hwm)
{
    f->ws = rsink_make(&f->k, hwm);
    assert_int_equal(weir_writer_acquire(&f->w, f->ws), 0);
}

static void fx_close(struct fx *f)
{
    weir_writer_release(&f->w);
    weir_writable_destroy(f->ws);
}

/* F: "when sink calls error asynchronously while sink close is in-flight,
 * the stream should not become errored" */
static void error_during_async_close(void **state)
{
    struct fx f = {.k = {.close_rc = WEIR_PENDING}};
    struct done cd = {0};

    (void)state;
    fx_open(&f, 1);
    assert_int_equal(weir_writer_close(&f.w, done_cb, &cd), WEIR_PENDING);
    weir_writable_error(f.ws, E1);
    assert_int_equal(cd.calls, 0);
    weir_writable_close_done(f.ws, 0);
    assert_int_equal(cd.calls, 1);
    assert_int_equal(cd.rc, 0);
    assert_true(weir_writable_closed(f.ws));
    assert_int_equal(ws_err(f.ws), 0);
    fx_close(&f);
}

/* F: "when sink calls error synchronously while closing, the stream should
 * not become errored" */
static int error_in_close(struct rsink *k)
{
    weir_writable_error(k->ws, E1);
    return 0;
}

static void error_during_sync_close(void **state)
{
    struct fx f = {.k = {.on_close = error_in_close}};

    (void)state;
    fx_open(&f, 1);
    assert_int_equal(weir_writer_close(&f.w, done_cb, NULL), 0);
    assert_true(weir_writable_closed(f.ws));
    assert_int_equal(ws_err(f.ws), 0);
    fx_close(&f);
}

/* F: "when the sink throws during close, and the close is requested while
 * a write is still in-flight, the stream should become errored during the
 * close" */
static void throws_during_close(void **state)
{
    struct fx f = {.k = {.close_rc = E1, .write_rc = WEIR_PENDING}};
    struct done wd = {0}, cd = {0};

    (void)state;
    fx_open(&f, 1);
    weir_writer_write(&f.w, S("y"), done_cb, &wd);
    assert_int_equal(weir_writer_close(&f.w, done_cb, &cd), WEIR_PENDING);
    weir_writable_write_done(f.ws, 0);
    assert_int_equal(wd.rc, 0);
    assert_int_equal(cd.rc, E1);
    assert_int_equal(ws_err(f.ws), E1);
    fx_close(&f);
}

/* F: "releaseLock on a stream with a pending write in which the stream has
 * been errored" */
static int error_and_hang(struct rsink *k, struct weir_chunk c)
{
    (void)c;
    weir_writable_error(k->ws, E1);
    return WEIR_PENDING;
}

static void release_pending_write_errored(void **state)
{
    struct fx f = {.k = {.on_write = error_and_hang}};

    (void)state;
    fx_open(&f, 1);
    weir_writer_write(&f.w, S("a"), NULL, NULL);
    weir_writer_release(&f.w);
    assert_false(weir_writable_locked(f.ws));
    weir_writable_destroy(f.ws);
}

/* F: "releaseLock on a stream with a pending close in which
 * controller.error() was called" */
static int error_and_hang_close(struct rsink *k)
{
    weir_writable_error(k->ws, E1);
    return WEIR_PENDING;
}

static void release_pending_close_errored(void **state)
{
    struct fx f = {.k = {.on_close = error_and_hang_close}};

    (void)state;
    fx_open(&f, 1);
    weir_writer_close(&f.w, NULL, NULL);
    weir_writer_release(&f.w);
    assert_false(weir_writable_locked(f.ws));
    weir_writable_destroy(f.ws);
}

/* F: "when close is called on a WritableStream in writable state, ready
 * should return a fulfilled promise" */
static void ready_after_close_writable(void **state)
{
    struct fx f = {.k = {.close_rc = WEIR_PENDING}};

    (void)state;
    fx_open(&f, 1);
    assert_int_equal(weir_writer_desired_size(&f.w), 1);
    weir_writer_close(&f.w, NULL, NULL);
    assert_int_equal(weir_writer_desired_size(&f.w), 1);
    assert_int_equal(weir_writer_ready(&f.w, NULL, NULL), 0);
    assert_string_equal(f.k.ev.s, "close");
    weir_writable_close_done(f.ws, 0);
    fx_close(&f);
}

/* F: "when close is called on a WritableStream in waiting state, ready
 * promise should be fulfilled" */
static void ready_after_close_waiting(void **state)
{
    struct fx f = {.k = {.write_rc = WEIR_PENDING}};
    struct done rd = {0};

    (void)state;
    fx_open(&f, 1);
    weir_writer_write(&f.w, S("a"), NULL, NULL);
    assert_int_equal(weir_writer_desired_size(&f.w), 0);
    assert_int_equal(weir_writer_ready(&f.w, done_cb, &rd), WEIR_PENDING);
    weir_writer_close(&f.w, NULL, NULL);
    assert_int_equal(rd.calls, 1);
    assert_int_equal(rd.rc, 0);
    assert_string_equal(f.k.ev.s, "write:a");
    weir_writable_write_done(f.ws, 0);
    fx_close(&f);
}

/* F: "when close is called on a WritableStream in waiting state, ready
 * should be fulfilled immediately even if close takes a long time" */
static void ready_before_long_close(void **state)
{
    struct fx f = {.k = {.close_rc = WEIR_PENDING}};
    struct done rd = {0};

    (void)state;
    fx_open(&f, 1);
    f.k.write_rc = WEIR_PENDING;
    weir_writer_write(&f.w, S("a"), NULL, NULL);
    weir_writer_ready(&f.w, done_cb, &rd);
    weir_writer_close(&f.w, NULL, NULL);
    assert_int_equal(rd.calls, 1);
    weir_writable_write_done(f.ws, 0);
    assert_string_equal(f.k.ev.s, "write:a close");
    weir_writable_close_done(f.ws, 0);
    fx_close(&f);
}

/* F: "releaseLock() should not change the result of sync close()" */
static void release_sync_close(void **state)
{
    struct fx f = {0};

    (void)state;
    fx_open(&f, 1);
    assert_int_equal(weir_writer_close(&f.w, NULL, NULL), 0);
    weir_writer_release(&f.w);
    assert_true(weir_writable_closed(f.ws));
    weir_writable_destroy(f.ws);
}

/* F: "releaseLock() should not change the result of async close()" */
static void release_async_close(void **state)
{
    struct fx f = {.k = {.close_rc = WEIR_PENDING}};
    struct done cd = {0};

    (void)state;
    fx_open(&f, 1);
    weir_writer_close(&f.w, done_cb, &cd);
    weir_writer_release(&f.w);
    weir_writable_close_done(f.ws, 0);
    assert_int_equal(cd.calls, 1);
    assert_int_equal(cd.rc, 0);
    weir_writable_destroy(f.ws);
}

/* F: "close() should set state to CLOSED even if writer has detached" */
static void closed_after_detach(void **state)
{
    struct fx f = {.k = {.close_rc = WEIR_PENDING}};
    struct weir_writer w2;

    (void)state;
    fx_open(&f, 1);
    weir_writer_close(&f.w, NULL, NULL);
    weir_writer_release(&f.w);
    weir_writable_close_done(f.ws, 0);
    assert_int_equal(weir_writer_acquire(&w2, f.ws), 0);
    assert_int_equal(weir_writer_desired_size(&w2), 0);
    weir_writer_release(&w2);
    weir_writable_destroy(f.ws);
}

/* F: "the promise returned by async abort during close should resolve" */
static void abort_during_close_resolves(void **state)
{
    struct fx f = {.k = {.close_rc = WEIR_PENDING}};
    struct weir_writer w2;
    struct done ad = {0};

    (void)state;
    fx_open(&f, 1);
    weir_writer_close(&f.w, NULL, NULL);
    weir_writer_release(&f.w);
    assert_int_equal(weir_writer_acquire(&w2, f.ws), 0);
    assert_int_equal(weir_writer_abort(&w2, E1, done_cb, &ad), WEIR_PENDING);
    weir_writer_release(&w2);
    weir_writable_close_done(f.ws, 0);
    assert_int_equal(ad.calls, 1);
    assert_int_equal(ad.rc, 0);
    weir_writable_destroy(f.ws);
}

/* F: "promises must fulfill/reject in the expected order on aborted
 * closure" */
static void order_aborted_closure(void **state)
{
    struct fx f = {.k = {.close_rc = WEIR_PENDING}};
    struct done cd = {0}, ad = {0};

    (void)state;
    fx_open(&f, 1);
    cd.order = ad.order = &f.order;
    weir_writer_close(&f.w, done_cb, &cd);
    weir_writer_abort(&f.w, E1, done_cb, &ad);
    weir_writable_close_done(f.ws, 0);
    assert_int_equal(cd.rc, 0);
    assert_int_equal(ad.rc, 0);
    assert_true(cd.at < ad.at);
    fx_close(&f);
}

/* F: "promises must fulfill/reject in the expected order on aborted and
 * errored closure" */
static void order_aborted_errored_closure(void **state)
{
    struct fx f = {.k = {.close_rc = WEIR_PENDING}};
    struct done cd = {0}, ad = {0};

    (void)state;
    fx_open(&f, 1);
    cd.order = ad.order = &f.order;
    weir_writer_close(&f.w, done_cb, &cd);
    weir_writer_abort(&f.w, E2, done_cb, &ad);
    weir_writable_close_done(f.ws, E1);
    assert_int_equal(cd.rc, E1);
    assert_int_equal(ad.rc, E1);
    assert_true(cd.at < ad.at);
    assert_int_equal(ws_err(f.ws), E2);
    fx_close(&f);
}

/* F: "close() should not reject until no sink methods are in flight" */
static void close_waits_for_sink(void **state)
{
    struct fx f = {.k = {.write_rc = WEIR_PENDING}};
    struct done wd = {0}, cd = {0};

    (void)state;
    fx_open(&f, 1);
    weir_writer_write(&f.w, S("c"), done_cb, &wd);
    weir_writable_error(f.ws, E1);
    assert_int_equal(weir_writer_close(&f.w, done_cb, &cd), WEIR_PENDING);
    assert_int_equal(cd.calls, 0);
    weir_writable_write_done(f.ws, 0);
    assert_int_equal(wd.rc, 0);
    assert_int_equal(cd.calls, 1);
    assert_int_equal(cd.rc, E1);
    fx_close(&f);
}

/* F: "ready promise should be initialised as fulfilled for a writer on a
 * closed stream" */
static void ready_on_closed(void **state)
{
    struct fx f = {0};
    struct weir_writer w2;

    (void)state;
    fx_open(&f, 1);
    weir_writer_close(&f.w, NULL, NULL);
    weir_writer_release(&f.w);
    assert_int_equal(weir_writer_acquire(&w2, f.ws), 0);
    assert_int_equal(weir_writer_ready(&w2, NULL, NULL), 0);
    weir_writer_release(&w2);
    weir_writable_destroy(f.ws);
}

/* F: "close() on an erroring stream should reject" */
static int start_errors(struct rsink *k)
{
    weir_writable_error(k->ws, E1);
    return 0;
}

static void close_erroring(void **state)
{
    struct fx f = {.k = {.on_start = start_errors}};

    (void)state;
    fx_open(&f, 1);
    assert_int_equal(weir_writer_close(&f.w, NULL, NULL), E1);
    fx_close(&f);
}

/* F: "close() on an errored stream should reject". Departure (errors in
 * place of TypeError): weir reports the stream's stored error, not a
 * type error. */
static void close_errored(void **state)
{
    struct fx f = {.k = {.on_start = start_errors}};

    (void)state;
    fx_open(&f, 1);
    assert_int_equal(ws_err(f.ws), E1);
    assert_int_equal(weir_writer_close(&f.w, NULL, NULL), E1);
    fx_close(&f);
}

/* F: "close() on an closed stream should reject" */
static void close_closed(void **state)
{
    struct fx f = {0};

    (void)state;
    fx_open(&f, 1);
    assert_int_equal(weir_writer_close(&f.w, NULL, NULL), 0);
    assert_int_equal(weir_writer_close(&f.w, NULL, NULL), -EINVAL);
    fx_close(&f);
}

/* F: "close() on a stream with a pending close should reject" */
static void close_pending_close(void **state)
{
    struct fx f = {.k = {.close_rc = WEIR_PENDING}};
    struct weir_writer w2;

    (void)state;
    fx_open(&f, 1);
    weir_writer_close(&f.w, NULL, NULL);
    weir_writer_release(&f.w);
    assert_int_equal(weir_writer_acquire(&w2, f.ws), 0);
    assert_int_equal(weir_writer_close(&w2, NULL, NULL), -EINVAL);
    weir_writer_release(&w2);
    weir_writable_close_done(f.ws, 0);
    weir_writable_destroy(f.ws);
}

/* F: "close() on a locked stream should reject" (through a second writer:
 * weir closes only through the writer that holds the lock) */
static void close_locked(void **state)
{
    struct fx f = {0};
    struct weir_writer w2;

    (void)state;
    fx_open(&f, 1);
    assert_int_equal(weir_writer_acquire(&w2, f.ws), -EBUSY);
    fx_close(&f);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        WPT(error_during_async_close,
            "when sink calls error asynchronously while sink close is "
            "in-flight, the stream should not become errored"),
        WPT(error_during_sync_close,
            "when sink calls error synchronously while closing, the stream "
            "should not become errored"),
        WPT(throws_during_close,
            "when the sink throws during close, and the close is requested "
            "while a write is still in-flight, the stream should become "
            "errored during the close"),
        WPT(release_pending_write_errored,
            "releaseLock on a stream with a pending write in which the "
            "stream has been errored"),
        WPT(release_pending_close_errored,
            "releaseLock on a stream with a pending close in which "
            "controller.error() was called"),
        WPT(ready_after_close_writable,
            "when close is called on a WritableStream in writable state, "
            "ready should return a fulfilled promise"),
        WPT(ready_after_close_waiting,
            "when close is called on a WritableStream in waiting state, "
            "ready promise should be fulfilled"),
        WPT(ready_before_long_close,
            "when close is called on a WritableStream in waiting state, "
            "ready should be fulfilled immediately even if close takes a "
            "long time"),
        WPT(release_sync_close,
            "releaseLock() should not change the result of sync close()"),
        WPT(release_async_close,
            "releaseLock() should not change the result of async close()"),
        WPT(closed_after_detach, "close() should set state to CLOSED even "
                                 "if writer has detached"),
        WPT(abort_during_close_resolves, "the promise returned by async "
                                         "abort during close should "
                                         "resolve"),
        WPT(order_aborted_closure, "promises must fulfill/reject in the "
                                   "expected order on aborted closure"),
        WPT(order_aborted_errored_closure,
            "promises must fulfill/reject in the expected order on aborted "
            "and errored closure"),
        WPT(close_waits_for_sink, "close() should not reject until no sink "
                                  "methods are in flight"),
        WPT(ready_on_closed, "ready promise should be initialised as "
                             "fulfilled for a writer on a closed stream"),
        WPT(close_locked, "close() on a locked stream should reject"),
        WPT(close_erroring, "close() on an erroring stream should reject"),
        WPT(close_errored, "close() on an errored stream should reject"),
        WPT(close_closed, "close() on an closed stream should reject"),
        WPT(close_pending_close,
            "close() on a stream with a pending close should reject"),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
