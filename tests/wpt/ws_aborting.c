/*
 * WPT streams/writable-streams/aborting.any.js, ported to weir's C API.
 * A writer's abort takes a completion callback; writer.closed has no
 * counterpart (the stream's state, weir_writable_errored, stands in).
 */
#include "wpt.h"

#define F "writable-streams/aborting.any.js"

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

static int write(struct fx *f, const char *s, struct done *d)
{
    if (d)
        d->order = &f->order;
    return weir_writer_write(&f->w, S(s), d ? done_cb : NULL, d);
}

/* F: "Aborting a WritableStream before it starts should cause the writer's
 * unsettled ready promise to reject" */
static void before_start_ready(void **state)
{
    struct fx f = {.k = {.start_rc = WEIR_PENDING}};
    struct done wd = {0}, rd = {0}, ad = {0};

    (void)state;
    fx_open(&f, 1);
    assert_int_equal(write(&f, "a", &wd), WEIR_PENDING);
    assert_int_equal(weir_writer_ready(&f.w, done_cb, &rd), WEIR_PENDING);
    assert_int_equal(weir_writer_abort(&f.w, E1, done_cb, &ad), WEIR_PENDING);
    assert_int_equal(rd.calls, 1);
    assert_int_equal(rd.rc, E1);
    weir_writable_start_done(f.ws, 0);
    assert_int_equal(wd.rc, E1);
    assert_int_equal(ad.calls, 1);
    assert_int_equal(ad.rc, 0);
    assert_string_equal(f.k.ev.s, "abort:-1001");
    fx_close(&f);
}

/* F: "Aborting a WritableStream should cause the writer's fulfilled ready
 * promise to reset to a rejected one" */
static void ready_resets(void **state)
{
    struct fx f = {0};

    (void)state;
    fx_open(&f, 1);
    assert_int_equal(write(&f, "a", NULL), 0);
    assert_int_equal(weir_writer_ready(&f.w, done_cb, NULL), 0);
    assert_int_equal(weir_writer_abort(&f.w, E1, NULL, NULL), 0);
    assert_int_equal(weir_writer_ready(&f.w, done_cb, NULL), E1);
    fx_close(&f);
}

/* F: "abort() on a released writer rejects" */
static void released_writer(void **state)
{
    struct fx f = {0};

    (void)state;
    fx_open(&f, 1);
    weir_writer_release(&f.w);
    assert_int_equal(weir_writer_abort(&f.w, E1, NULL, NULL), -EINVAL);
    weir_writable_destroy(f.ws);
}

/* F: "Aborting a WritableStream immediately prevents future writes" */
static void prevents_future_writes(void **state)
{
    struct fx f = {0};

    (void)state;
    fx_open(&f, 1);
    assert_int_equal(weir_writer_abort(&f.w, E1, NULL, NULL), 0);
    assert_int_equal(write(&f, "1", NULL), E1);
    assert_int_equal(write(&f, "2", NULL), E1);
    assert_string_equal(f.k.ev.s, "abort:-1001");
    fx_close(&f);
}

/* F: "Aborting a WritableStream prevents further writes after any that are
 * in progress" */
static void after_in_progress(void **state)
{
    struct fx f = {.k = {.write_rc = WEIR_PENDING}};
    struct done d[5] = {0}, ad = {0};

    (void)state;
    fx_open(&f, 8);
    write(&f, "1", &d[0]);
    write(&f, "2", &d[1]);
    write(&f, "3", &d[2]);
    assert_int_equal(weir_writer_abort(&f.w, E1, done_cb, &ad), WEIR_PENDING);
    assert_int_equal(write(&f, "4", &d[3]), E1);
    assert_int_equal(write(&f, "5", &d[4]), E1);
    weir_writable_write_done(f.ws, 0);
    assert_int_equal(d[0].rc, 0);
    assert_int_equal(d[1].rc, E1);
    assert_int_equal(d[2].rc, E1);
    assert_int_equal(ad.rc, 0);
    assert_string_equal(f.k.ev.s, "write:1 abort:-1001");
    fx_close(&f);
}

/* F: "WritableStream if sink's abort throws, the promise returned by
 * writer.abort() rejects" */
static void sink_abort_throws(void **state)
{
    struct fx f = {.k = {.abort_rc = E1}};

    (void)state;
    fx_open(&f, 1);
    assert_int_equal(weir_writer_abort(&f.w, E2, NULL, NULL), E1);
    fx_close(&f);
}

/* F: "WritableStream if sink's abort throws, the promise returned by
 * multiple writer.abort()s is the same and rejects". Departure (one abort
 * completion): a second abort after the first settled finds the stream
 * errored and reports 0; one made while the first is pending gets
 * -EALREADY. */
static void multiple_aborts(void **state)
{
    struct fx f = {.k = {.abort_rc = E1, .write_rc = WEIR_PENDING}};
    struct done ad = {0};

    (void)state;
    fx_open(&f, 1);
    write(&f, "a", NULL);
    assert_int_equal(weir_writer_abort(&f.w, E2, done_cb, &ad), WEIR_PENDING);
    assert_int_equal(weir_writer_abort(&f.w, E2, NULL, NULL), -EALREADY);
    weir_writable_write_done(f.ws, 0);
    assert_int_equal(ad.rc, E1);
    assert_int_equal(weir_writer_abort(&f.w, E2, NULL, NULL), 0);
    assert_int_equal(f.k.aborts, 1);
    fx_close(&f);
}

/* F: "WritableStream if sink's abort throws, for an abort performed during
 * a write, the promise returned by ws.abort() rejects" */
static void abort_throws_during_write(void **state)
{
    struct fx f = {.k = {.abort_rc = E1, .write_rc = WEIR_PENDING}};
    struct done ad = {0};

    (void)state;
    fx_open(&f, 1);
    write(&f, "a", NULL);
    assert_int_equal(weir_writer_abort(&f.w, E2, done_cb, &ad), WEIR_PENDING);
    weir_writable_write_done(f.ws, 0);
    assert_int_equal(ad.calls, 1);
    assert_int_equal(ad.rc, E1);
    fx_close(&f);
}

/* F: "Aborting a WritableStream passes through the given reason" */
static void passes_reason(void **state)
{
    struct fx f = {0};

    (void)state;
    fx_open(&f, 1);
    assert_int_equal(weir_writer_abort(&f.w, E1, NULL, NULL), 0);
    assert_string_equal(f.k.ev.s, "abort:-1001");
    assert_int_equal(f.k.abort_reason, E1);
    fx_close(&f);
}

/* F: "Aborting a WritableStream puts it in an errored state with the error
 * passed to abort()" */
static void errored_state(void **state)
{
    struct fx f = {0};

    (void)state;
    fx_open(&f, 1);
    assert_int_equal(weir_writer_abort(&f.w, E1, NULL, NULL), 0);
    assert_int_equal(write(&f, "a", NULL), E1);
    assert_int_equal(weir_writer_close(&f.w, NULL, NULL), E1);
    assert_int_equal(weir_writer_ready(&f.w, NULL, NULL), E1);
    assert_int_equal(ws_err(f.ws), E1);
    assert_true(weir_writer_desired_size(&f.w) == WEIR_DESIRED_NONE);
    fx_close(&f);
}

/* F: "Aborting a WritableStream causes any outstanding write() promises to
 * be rejected with the reason supplied" */
static void outstanding_writes(void **state)
{
    struct fx f = {.k = {.start_rc = WEIR_PENDING}};
    struct done wd = {0};

    (void)state;
    fx_open(&f, 1);
    write(&f, "a", &wd);
    weir_writer_abort(&f.w, E1, NULL, NULL);
    weir_writable_start_done(f.ws, 0);
    assert_int_equal(wd.calls, 1);
    assert_int_equal(wd.rc, E1);
    assert_string_equal(f.k.ev.s, "abort:-1001");
    fx_close(&f);
}

/* F: "Closing but then immediately aborting a WritableStream causes the
 * stream to error" */
static void close_then_abort(void **state)
{
    struct fx f = {.k = {.start_rc = WEIR_PENDING}};
    struct done cd = {0}, ad = {0};

    (void)state;
    fx_open(&f, 1);
    assert_int_equal(weir_writer_close(&f.w, done_cb, &cd), WEIR_PENDING);
    assert_int_equal(weir_writer_abort(&f.w, E1, done_cb, &ad), WEIR_PENDING);
    weir_writable_start_done(f.ws, 0);
    assert_int_equal(cd.rc, E1);
    assert_int_equal(ad.calls, 1);
    assert_int_equal(ad.rc, 0);
    assert_int_equal(ws_err(f.ws), E1);
    assert_string_equal(f.k.ev.s, "abort:-1001");
    fx_close(&f);
}

/* F: "Closing a WritableStream and aborting it while it closes causes the
 * stream to ignore the abort attempt" */
static void abort_while_closing(void **state)
{
    struct fx f = {.k = {.close_rc = WEIR_PENDING}};
    struct done cd = {0}, ad = {0};

    (void)state;
    fx_open(&f, 1);
    assert_int_equal(weir_writer_close(&f.w, done_cb, &cd), WEIR_PENDING);
    assert_int_equal(weir_writer_abort(&f.w, E1, done_cb, &ad), WEIR_PENDING);
    weir_writable_close_done(f.ws, 0);
    assert_int_equal(cd.calls, 1);
    assert_int_equal(cd.rc, 0);
    assert_int_equal(ad.calls, 1);
    assert_int_equal(ad.rc, 0);
    assert_true(weir_writable_closed(f.ws));
    assert_string_equal(f.k.ev.s, "close");
    fx_close(&f);
}

/* F: "Aborting a WritableStream after it is closed is a no-op" */
static void after_closed(void **state)
{
    struct fx f = {0};

    (void)state;
    fx_open(&f, 1);
    assert_int_equal(weir_writer_close(&f.w, NULL, NULL), 0);
    assert_int_equal(weir_writer_abort(&f.w, E1, NULL, NULL), 0);
    assert_true(weir_writable_closed(f.ws));
    assert_string_equal(f.k.ev.s, "close");
    fx_close(&f);
}

/* F: "WritableStream should NOT call underlying sink's close if no abort is
 * supplied (historical)" */
static int closes;
static int count_close(struct weir_writable *ws, void *ctx)
{
    (void)ws;
    (void)ctx;
    closes++;
    return 0;
}

static void no_close_fallback(void **state)
{
    static const struct weir_sink_ops ops = {.close = count_close};
    struct weir_writable *ws;
    struct weir_writer w;

    (void)state;
    assert_int_equal(weir_writable_create(&ws, &ops, NULL, NULL), 0);
    assert_int_equal(weir_writer_acquire(&w, ws), 0);
    assert_int_equal(weir_writer_abort(&w, E1, NULL, NULL), 0);
    assert_int_equal(ws_err(ws), E1);
    assert_int_equal(closes, 0);
    weir_writer_release(&w);
    weir_writable_destroy(ws);
}

/* F: ".closed should not resolve before fulfilled write()" */
static void write_before_abort_settles(void **state)
{
    struct fx f = {.k = {.write_rc = WEIR_PENDING}};
    struct done wd = {0}, ad = {0};

    (void)state;
    fx_open(&f, 1);
    write(&f, "a", &wd);
    ad.order = &f.order;
    weir_writer_abort(&f.w, E1, done_cb, &ad);
    assert_int_equal(wd.calls, 0);
    weir_writable_write_done(f.ws, 0);
    assert_int_equal(wd.rc, 0);
    assert_true(wd.at < ad.at);
    assert_int_equal(ws_err(f.ws), E1);
    fx_close(&f);
}

/* F: ".closed should not resolve before rejected write(); write() error
 * should not overwrite abort() error" */
static void rejected_write_keeps_abort_error(void **state)
{
    struct fx f = {.k = {.write_rc = WEIR_PENDING}};
    struct done wd = {0}, ad = {0};

    (void)state;
    fx_open(&f, 1);
    write(&f, "a", &wd);
    ad.order = &f.order;
    weir_writer_abort(&f.w, E2, done_cb, &ad);
    weir_writable_write_done(f.ws, E1);
    assert_int_equal(wd.rc, E1);
    assert_int_equal(ad.rc, 0);
    assert_true(wd.at < ad.at);
    assert_int_equal(ws_err(f.ws), E2);
    fx_close(&f);
}

/* F: "writes should be satisfied in order when aborting" */
static void order_when_aborting(int first_rc, int want_rest)
{
    struct fx f = {.k = {.write_rc = WEIR_PENDING}};
    struct done d[3] = {0};

    fx_open(&f, 4);
    write(&f, "1", &d[0]);
    write(&f, "2", &d[1]);
    write(&f, "3", &d[2]);
    weir_writer_abort(&f.w, want_rest, NULL, NULL);
    weir_writable_write_done(f.ws, first_rc);
    assert_int_equal(d[0].rc, first_rc);
    assert_int_equal(d[1].rc, want_rest);
    assert_int_equal(d[2].rc, want_rest);
    assert_true(d[0].at == 1 && d[1].at == 2 && d[2].at == 3);
    fx_close(&f);
}

static void in_order(void **state)
{
    (void)state;
    order_when_aborting(0, E1);
}

/* F: "writes should be satisfied in order after rejected write when
 * aborting" */
static void in_order_after_rejected(void **state)
{
    (void)state;
    order_when_aborting(E1, E2);
}

/* F: "close() should reject with abort reason why abort() is first
 * error" */
static void close_gets_abort_reason(void **state)
{
    struct fx f = {.k = {.write_rc = WEIR_PENDING}};
    struct done wd = {0}, cd = {0};

    (void)state;
    fx_open(&f, 1);
    write(&f, "a", &wd);
    weir_writer_close(&f.w, done_cb, &cd);
    weir_writer_abort(&f.w, E2, NULL, NULL);
    weir_writable_write_done(f.ws, E1);
    assert_int_equal(wd.rc, E1);
    assert_int_equal(cd.rc, E2);
    fx_close(&f);
}

/* F: "underlying abort() should not be called until underlying write()
 * completes" */
static void abort_after_write(void **state)
{
    struct fx f = {.k = {.write_rc = WEIR_PENDING}};
    struct done ad = {0};

    (void)state;
    fx_open(&f, 1);
    write(&f, "a", NULL);
    weir_writer_abort(&f.w, E2, done_cb, &ad);
    assert_string_equal(f.k.ev.s, "write:a");
    weir_writable_write_done(f.ws, 0);
    assert_int_equal(ad.calls, 1);
    assert_string_equal(f.k.ev.s, "write:a abort:-1002");
    fx_close(&f);
}

/* F: "underlying abort() should not be called if underlying close() has
 * started" */
static void no_abort_after_close_started(void **state)
{
    struct fx f = {.k = {.close_rc = WEIR_PENDING}};
    struct done ad = {0};

    (void)state;
    fx_open(&f, 1);
    weir_writer_close(&f.w, NULL, NULL);
    assert_int_equal(weir_writer_abort(&f.w, E1, done_cb, &ad), WEIR_PENDING);
    assert_string_equal(f.k.ev.s, "close");
    weir_writable_close_done(f.ws, 0);
    assert_int_equal(ad.calls, 1);
    assert_int_equal(ad.rc, 0);
    assert_string_equal(f.k.ev.s, "close");
    fx_close(&f);
}

/* F: "if underlying close() has started and then rejects, the abort() and
 * close() promises should reject with the underlying close rejection
 * reason" */
static void close_rejects_after_abort(void **state)
{
    struct fx f = {.k = {.close_rc = WEIR_PENDING}};
    struct done cd = {0}, ad = {0};

    (void)state;
    fx_open(&f, 1);
    weir_writer_close(&f.w, done_cb, &cd);
    weir_writer_abort(&f.w, E2, done_cb, &ad);
    weir_writable_close_done(f.ws, E1);
    assert_int_equal(ad.rc, E1);
    assert_int_equal(cd.rc, E1);
    assert_int_equal(f.k.aborts, 0);
    fx_close(&f);
}

/* F: "an abort() that happens during a write() should trigger the
 * underlying abort() even with a close() queued" */
static void abort_with_close_queued(void **state)
{
    struct fx f = {.k = {.write_rc = WEIR_PENDING}};
    struct done cd = {0}, ad = {0};

    (void)state;
    fx_open(&f, 1);
    write(&f, "a", NULL);
    weir_writer_close(&f.w, done_cb, &cd);
    weir_writer_abort(&f.w, E1, done_cb, &ad);
    assert_string_equal(f.k.ev.s, "write:a");
    weir_writable_write_done(f.ws, 0);
    assert_string_equal(f.k.ev.s, "write:a abort:-1001");
    assert_int_equal(ad.rc, 0);
    assert_int_equal(cd.rc, E1);
    fx_close(&f);
}

/* F: "if a writer is created for a stream with a pending abort, its ready
 * should be rejected with the abort error" */
static void new_writer_pending_abort(void **state)
{
    struct fx f = {.k = {.write_rc = WEIR_PENDING}};
    struct weir_writer w2;

    (void)state;
    fx_open(&f, 1);
    write(&f, "a", NULL);
    weir_writer_abort(&f.w, E1, NULL, NULL);
    weir_writer_release(&f.w);
    assert_int_equal(weir_writer_acquire(&w2, f.ws), 0);
    assert_int_equal(weir_writer_ready(&w2, done_cb, NULL), E1);
    weir_writer_release(&w2);
    weir_writable_destroy(f.ws);
}

/* F: "writer close() promise should resolve before abort() promise" */
static void close_before_abort(void **state)
{
    struct fx f = {.k = {.close_rc = WEIR_PENDING}};
    struct done cd = {0}, ad = {0};

    (void)state;
    fx_open(&f, 1);
    cd.order = ad.order = &f.order;
    weir_writer_close(&f.w, done_cb, &cd);
    weir_writer_abort(&f.w, E1, done_cb, &ad);
    weir_writable_close_done(f.ws, 0);
    assert_int_equal(cd.at, 1);
    assert_int_equal(ad.at, 2);
    fx_close(&f);
}

/* F: "writer.ready should reject on controller error without waiting for
 * underlying write" */
static int error_in_write(struct rsink *k, struct weir_chunk c)
{
    (void)c;
    weir_writable_error(k->ws, E1);
    return WEIR_PENDING;
}

static void ready_rejects_on_controller_error(void **state)
{
    struct fx f = {.k = {.on_write = error_in_write}};

    (void)state;
    fx_open(&f, 1);
    write(&f, "a", NULL);
    assert_int_equal(weir_writer_ready(&f.w, NULL, NULL), E1);
    weir_writable_write_done(f.ws, 0);
    fx_close(&f);
}

/* F: "writer.abort() while there is an in-flight write, and then finish
 * the write with rejection" */
static void abort_inflight_write_rejects(void **state)
{
    struct fx f = {.k = {.write_rc = WEIR_PENDING}};
    struct done wd = {0}, ad = {0};

    (void)state;
    fx_open(&f, 1);
    write(&f, "a", &wd);
    weir_writer_abort(&f.w, E1, done_cb, &ad);
    assert_int_equal(write(&f, "a", NULL), E1);
    assert_int_equal(weir_writer_ready(&f.w, NULL, NULL), E1);
    assert_int_equal(wd.calls + ad.calls, 0);
    weir_writable_write_done(f.ws, E2);
    assert_int_equal(wd.rc, E2);
    assert_int_equal(ad.rc, 0);
    assert_int_equal(ws_err(f.ws), E1);
    assert_int_equal(write(&f, "a", NULL), E1);
    fx_close(&f);
}

/* F: "writer.abort(), controller.error() while there is an in-flight
 * write, and then finish the write" */
static void abort_then_error_inflight_write(void **state)
{
    struct fx f = {.k = {.write_rc = WEIR_PENDING}};
    struct done wd = {0}, ad = {0};

    (void)state;
    fx_open(&f, 1);
    write(&f, "a", &wd);
    weir_writer_abort(&f.w, E1, done_cb, &ad);
    weir_writable_error(f.ws, E2); /* too late: erroring already */
    assert_int_equal(write(&f, "a", NULL), E1);
    weir_writable_write_done(f.ws, 0);
    assert_int_equal(wd.rc, 0);
    assert_int_equal(ad.rc, 0);
    assert_int_equal(ws_err(f.ws), E1);
    fx_close(&f);
}

/* F: "writer.abort(), controller.error() while there is an in-flight
 * close, and then finish the close" */
static void abort_then_error_inflight_close(void **state)
{
    struct fx f = {.k = {.close_rc = WEIR_PENDING}};
    struct done cd = {0}, ad = {0};

    (void)state;
    fx_open(&f, 1);
    cd.order = ad.order = &f.order;
    weir_writer_close(&f.w, done_cb, &cd);
    weir_writer_abort(&f.w, E1, done_cb, &ad);
    assert_int_equal(weir_writer_close(&f.w, NULL, NULL), -EINVAL);
    assert_int_equal(weir_writer_ready(&f.w, NULL, NULL), E1);
    weir_writable_error(f.ws, E2);
    assert_int_equal(cd.calls + ad.calls, 0);
    weir_writable_close_done(f.ws, 0);
    assert_int_equal(cd.rc, 0);
    assert_int_equal(ad.rc, 0);
    assert_true(cd.at < ad.at);
    assert_true(weir_writable_closed(f.ws));
    fx_close(&f);
}

/* F: "controller.error(), writer.abort() while there is an in-flight
 * write, and then finish the write" */
static void error_then_abort_inflight_write(void **state)
{
    struct fx f = {.k = {.write_rc = WEIR_PENDING}};
    struct done wd = {0}, ad = {0};

    (void)state;
    fx_open(&f, 1);
    write(&f, "a", &wd);
    weir_writable_error(f.ws, E2);
    assert_int_equal(write(&f, "a", NULL), E2);
    assert_int_equal(weir_writer_ready(&f.w, NULL, NULL), E2);
    assert_int_equal(weir_writer_abort(&f.w, E1, done_cb, &ad), WEIR_PENDING);
    assert_int_equal(write(&f, "a", NULL), E2);
    weir_writable_write_done(f.ws, 0);
    assert_int_equal(wd.rc, 0);
    assert_int_equal(ad.rc, E2);
    assert_int_equal(ws_err(f.ws), E2);
    assert_string_equal(f.k.ev.s, "write:a");
    fx_close(&f);
}

/* F: "controller.error(), writer.abort() while there is an in-flight
 * close, and then finish the close" */
static void error_then_abort_inflight_close(void **state)
{
    struct fx f = {.k = {.close_rc = WEIR_PENDING}};
    struct done cd = {0}, ad = {0};

    (void)state;
    fx_open(&f, 1);
    weir_writer_close(&f.w, done_cb, &cd);
    weir_writable_error(f.ws, E2);
    assert_int_equal(weir_writer_abort(&f.w, E1, done_cb, &ad), WEIR_PENDING);
    assert_int_equal(weir_writer_ready(&f.w, NULL, NULL), E2);
    weir_writable_close_done(f.ws, 0);
    assert_int_equal(cd.rc, 0);
    assert_int_equal(ad.rc, 0);
    assert_true(weir_writable_closed(f.ws));
    fx_close(&f);
}

/* F: "releaseLock() while aborting should reject the original closed
 * promise" */
static void release_while_aborting(void **state)
{
    struct fx f = {.k = {.write_rc = WEIR_PENDING}};
    struct done wd = {0}, ad = {0};

    (void)state;
    fx_open(&f, 1);
    write(&f, "a", &wd);
    weir_writer_abort(&f.w, E1, done_cb, &ad);
    weir_writer_release(&f.w);
    weir_writable_write_done(f.ws, 0);
    assert_int_equal(wd.rc, 0);
    assert_int_equal(ad.calls, 1);
    assert_int_equal(ad.rc, 0);
    weir_writable_destroy(f.ws);
}

/* F: "sink abort() should not be called until sink start() is done" */
static void abort_waits_for_start(void **state)
{
    struct fx f = {.k = {.start_rc = WEIR_PENDING}};
    struct done ad = {0};

    (void)state;
    fx_open(&f, 1);
    assert_int_equal(weir_writer_abort(&f.w, E1, done_cb, &ad), WEIR_PENDING);
    assert_string_equal(f.k.ev.s, "");
    weir_writable_start_done(f.ws, 0);
    assert_int_equal(ad.rc, 0);
    assert_string_equal(f.k.ev.s, "abort:-1001");
    fx_close(&f);
}

/* F: "if start attempts to error the controller after abort() has been
 * called, then it should lose" */
static void start_error_loses(void **state)
{
    struct fx f = {.k = {.start_rc = WEIR_PENDING}};
    struct done ad = {0};

    (void)state;
    fx_open(&f, 1);
    weir_writer_abort(&f.w, E1, done_cb, &ad);
    weir_writable_error(f.ws, E2);
    weir_writable_start_done(f.ws, 0);
    assert_int_equal(ad.rc, 0);
    assert_string_equal(f.k.ev.s, "abort:-1001");
    assert_int_equal(ws_err(f.ws), E1);
    fx_close(&f);
}

/* F: "stream abort() promise should still resolve if sink start()
 * rejects" */
static void abort_resolves_start_rejects(void **state)
{
    struct fx f = {.k = {.start_rc = WEIR_PENDING}};
    struct done ad = {0};

    (void)state;
    fx_open(&f, 1);
    weir_writer_abort(&f.w, E1, done_cb, &ad);
    weir_writable_start_done(f.ws, E2);
    assert_int_equal(ad.calls, 1);
    assert_int_equal(ad.rc, 0);
    assert_string_equal(f.k.ev.s, "abort:-1001");
    fx_close(&f);
}

/* F: "writer abort() during sink start() should replace the writer.ready
 * promise synchronously" */
static void abort_replaces_ready(void **state)
{
    struct fx f = {.k = {.start_rc = WEIR_PENDING}};

    (void)state;
    fx_open(&f, 1);
    assert_int_equal(weir_writer_ready(&f.w, NULL, NULL), 0);
    weir_writer_abort(&f.w, E1, NULL, NULL);
    assert_int_equal(weir_writer_ready(&f.w, NULL, NULL), E1);
    weir_writable_start_done(f.ws, 0);
    fx_close(&f);
}

/* F: "promises returned from other writer methods should be rejected when
 * writer abort() happens during sink start()" */
static void others_rejected_during_start(void **state)
{
    struct fx f = {.k = {.start_rc = WEIR_PENDING}};
    struct done w1 = {0}, w2 = {0}, ad = {0}, cd = {0};

    (void)state;
    fx_open(&f, 1);
    w1.order = w2.order = ad.order = cd.order = &f.order;
    write(&f, "1", &w1);
    weir_writer_abort(&f.w, E1, done_cb, &ad);
    assert_int_equal(write(&f, "2", &w2), E1);
    done_cb(&w2, E1); /* its result, in the order it came */
    assert_int_equal(weir_writer_close(&f.w, done_cb, &cd), WEIR_PENDING);
    weir_writable_start_done(f.ws, 0);
    assert_int_equal(w1.rc, E1);
    assert_int_equal(ad.rc, 0);
    assert_int_equal(cd.rc, E1);
    /* write2, write1, abort, close */
    assert_true(w2.at < w1.at && w1.at < ad.at && ad.at < cd.at);
    assert_string_equal(f.k.ev.s, "abort:-1001");
    fx_close(&f);
}

/* F: "abort() should succeed despite rejection from write" */
static void abort_despite_write_rejection(void **state)
{
    struct fx f = {.k = {.write_rc = WEIR_PENDING}};
    struct done wd = {0}, ad = {0};

    (void)state;
    fx_open(&f, 1);
    write(&f, "a", &wd);
    weir_writer_abort(&f.w, E1, done_cb, &ad);
    weir_writable_error(f.ws, E1);
    weir_writable_write_done(f.ws, E2);
    assert_int_equal(wd.rc, E2);
    assert_int_equal(ad.rc, 0);
    fx_close(&f);
}

/* F: "abort() should be rejected with the rejection returned from
 * close()" */
static void abort_rejected_by_close(void **state)
{
    struct fx f = {.k = {.close_rc = WEIR_PENDING}};
    struct done cd = {0}, ad = {0};

    (void)state;
    fx_open(&f, 1);
    weir_writer_close(&f.w, done_cb, &cd);
    weir_writer_abort(&f.w, E1, done_cb, &ad);
    weir_writable_error(f.ws, E1);
    weir_writable_close_done(f.ws, E2);
    assert_int_equal(cd.rc, E2);
    assert_int_equal(ad.rc, E2);
    fx_close(&f);
}

/* F: "a rejecting sink.write() should not prevent sink.abort() from being
 * called" */
static void rejecting_write_then_abort(void **state)
{
    struct fx f = {.k = {.write_rc = WEIR_PENDING}};
    struct done wd = {0}, ad = {0};

    (void)state;
    fx_open(&f, 1);
    write(&f, "1", &wd);
    weir_writer_abort(&f.w, E2, done_cb, &ad);
    weir_writable_write_done(f.ws, E1);
    assert_int_equal(wd.rc, E1);
    assert_int_equal(ad.rc, 0);
    assert_int_equal(ws_err(f.ws), E2);
    assert_string_equal(f.k.ev.s, "write:1 abort:-1002");
    fx_close(&f);
}

/* F: "when start errors after stream abort(), underlying sink abort()
 * should be called anyway" */
static void start_errors_after_abort(void **state)
{
    struct fx f = {.k = {.start_rc = WEIR_PENDING}};

    (void)state;
    fx_open(&f, 1);
    weir_writer_abort(&f.w, E2, NULL, NULL);
    weir_writable_start_done(f.ws, E1);
    assert_string_equal(f.k.ev.s, "abort:-1002");
    fx_close(&f);
}

/* F: "when calling abort() twice on the same stream, both should give the
 * same promise that fulfills with undefined". Departure (one abort
 * completion): the first finished at once, and the second finds the
 * stream errored; both report 0. */
static void abort_twice(void **state)
{
    struct fx f = {0};

    (void)state;
    fx_open(&f, 1);
    assert_int_equal(weir_writer_abort(&f.w, E1, NULL, NULL), 0);
    assert_int_equal(weir_writer_abort(&f.w, E1, NULL, NULL), 0);
    assert_int_equal(f.k.aborts, 1);
    fx_close(&f);
}

/* F: "when calling abort() twice on the same stream, but sequentially so
 * so there's no pending abort the second time, both should fulfill with
 * undefined" */
static void abort_twice_sequentially(void **state)
{
    struct fx f = {.k = {.write_rc = WEIR_PENDING}};
    struct done ad = {0};

    (void)state;
    fx_open(&f, 1);
    write(&f, "a", NULL);
    weir_writer_abort(&f.w, E1, done_cb, &ad);
    weir_writable_write_done(f.ws, 0);
    assert_int_equal(ad.rc, 0);
    assert_int_equal(weir_writer_abort(&f.w, E1, NULL, NULL), 0);
    fx_close(&f);
}

/* F: "calling abort() on an errored stream should fulfill with
 * undefined" */
static int start_errors(struct rsink *k)
{
    weir_writable_error(k->ws, E1);
    return 0;
}

static void abort_errored(void **state)
{
    struct fx f = {.k = {.on_start = start_errors}};

    (void)state;
    fx_open(&f, 1);
    assert_int_equal(weir_writer_abort(&f.w, E2, NULL, NULL), 0);
    assert_int_equal(f.k.aborts, 0);
    fx_close(&f);
}

/* F: "sink abort() should not be called if stream was erroring due to
 * controller.error() before abort() was called" */
static void no_sink_abort_when_erroring(void **state)
{
    struct fx f = {.k = {.write_rc = WEIR_PENDING}};
    struct done wd = {0}, ad = {0};

    (void)state;
    fx_open(&f, 1);
    write(&f, "chunk", &wd);
    weir_writable_error(f.ws, E1);
    assert_int_equal(weir_writer_abort(&f.w, E2, done_cb, &ad), WEIR_PENDING);
    weir_writable_write_done(f.ws, 0);
    assert_int_equal(wd.rc, 0);
    assert_int_equal(ad.rc, E1);
    assert_string_equal(f.k.ev.s, "write:chunk");
    fx_close(&f);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        WPT(before_start_ready,
            "Aborting a WritableStream before it starts should cause the "
            "writer's unsettled ready promise to reject"),
        WPT(ready_resets, "Aborting a WritableStream should cause the "
                          "writer's fulfilled ready promise to reset to a "
                          "rejected one"),
        WPT(released_writer, "abort() on a released writer rejects"),
        WPT(prevents_future_writes,
            "Aborting a WritableStream immediately prevents future writes"),
        WPT(after_in_progress, "Aborting a WritableStream prevents further "
                               "writes after any that are in progress"),
        WPT(sink_abort_throws, "WritableStream if sink's abort throws, the "
                               "promise returned by writer.abort() rejects"),
        WPT(multiple_aborts,
            "WritableStream if sink's abort throws, the promise returned by "
            "multiple writer.abort()s is the same and rejects"),
        WPT(abort_throws_during_write,
            "WritableStream if sink's abort throws, for an abort performed "
            "during a write, the promise returned by ws.abort() rejects"),
        WPT(passes_reason,
            "Aborting a WritableStream passes through the given reason"),
        WPT(errored_state, "Aborting a WritableStream puts it in an errored "
                           "state with the error passed to abort()"),
        WPT(outstanding_writes,
            "Aborting a WritableStream causes any outstanding write() "
            "promises to be rejected with the reason supplied"),
        WPT(close_then_abort, "Closing but then immediately aborting a "
                              "WritableStream causes the stream to error"),
        WPT(abort_while_closing,
            "Closing a WritableStream and aborting it while it closes "
            "causes the stream to ignore the abort attempt"),
        WPT(after_closed,
            "Aborting a WritableStream after it is closed is a no-op"),
        WPT(no_close_fallback, "WritableStream should NOT call underlying "
                               "sink's close if no abort is supplied "
                               "(historical)"),
        WPT(write_before_abort_settles,
            ".closed should not resolve before fulfilled write()"),
        WPT(rejected_write_keeps_abort_error,
            ".closed should not resolve before rejected write(); write() "
            "error should not overwrite abort() error"),
        WPT(in_order, "writes should be satisfied in order when aborting"),
        WPT(in_order_after_rejected, "writes should be satisfied in order "
                                     "after rejected write when aborting"),
        WPT(close_gets_abort_reason, "close() should reject with abort "
                                     "reason why abort() is first error"),
        WPT(abort_after_write, "underlying abort() should not be called "
                               "until underlying write() completes"),
        WPT(no_abort_after_close_started,
            "underlying abort() should not be called if underlying close() "
            "has started"),
        WPT(close_rejects_after_abort,
            "if underlying close() has started and then rejects, the "
            "abort() and close() promises should reject with the "
            "underlying close rejection reason"),
        WPT(abort_with_close_queued,
            "an abort() that happens during a write() should trigger the "
            "underlying abort() even with a close() queued"),
        WPT(new_writer_pending_abort,
            "if a writer is created for a stream with a pending abort, its "
            "ready should be rejected with the abort error"),
        WPT(close_before_abort,
            "writer close() promise should resolve before abort() promise"),
        WPT(ready_rejects_on_controller_error,
            "writer.ready should reject on controller error without "
            "waiting for underlying write"),
        WPT(abort_inflight_write_rejects,
            "writer.abort() while there is an in-flight write, and then "
            "finish the write with rejection"),
        WPT(abort_then_error_inflight_write,
            "writer.abort(), controller.error() while there is an in-flight "
            "write, and then finish the write"),
        WPT(abort_then_error_inflight_close,
            "writer.abort(), controller.error() while there is an in-flight "
            "close, and then finish the close"),
        WPT(error_then_abort_inflight_write,
            "controller.error(), writer.abort() while there is an in-flight "
            "write, and then finish the write"),
        WPT(error_then_abort_inflight_close,
            "controller.error(), writer.abort() while there is an in-flight "
            "close, and then finish the close"),
        WPT(release_while_aborting, "releaseLock() while aborting should "
                                    "reject the original closed promise"),
        WPT(abort_waits_for_start, "sink abort() should not be called until "
                                   "sink start() is done"),
        WPT(start_error_loses,
            "if start attempts to error the controller after abort() has "
            "been called, then it should lose"),
        WPT(abort_resolves_start_rejects, "stream abort() promise should "
                                          "still resolve if sink start() "
                                          "rejects"),
        WPT(abort_replaces_ready,
            "writer abort() during sink start() should replace the "
            "writer.ready promise synchronously"),
        WPT(others_rejected_during_start,
            "promises returned from other writer methods should be rejected "
            "when writer abort() happens during sink start()"),
        WPT(abort_despite_write_rejection,
            "abort() should succeed despite rejection from write"),
        WPT(abort_rejected_by_close, "abort() should be rejected with the "
                                     "rejection returned from close()"),
        WPT(rejecting_write_then_abort,
            "a rejecting sink.write() should not prevent sink.abort() from "
            "being called"),
        WPT(start_errors_after_abort,
            "when start errors after stream abort(), underlying sink abort() "
            "should be called anyway"),
        WPT(abort_twice, "when calling abort() twice on the same stream, "
                         "both should give the same promise that fulfills "
                         "with undefined"),
        WPT(abort_twice_sequentially,
            "when calling abort() twice on the same stream, but "
            "sequentially so so there's no pending abort the second time, "
            "both should fulfill with undefined"),
        WPT(abort_errored, "calling abort() on an errored stream should "
                           "fulfill with undefined"),
        WPT(no_sink_abort_when_erroring,
            "sink abort() should not be called if stream was erroring due "
            "to controller.error() before abort() was called"),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
