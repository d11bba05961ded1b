/*
 * WPT streams/writable-streams/bad-underlying-sinks.any.js, ported to
 * weir's C API ("throwing" is returning an error code).
 */
#include "wpt.h"

#define F "writable-streams/bad-underlying-sinks.any.js"

/* F: "start: errors in start cause WritableStream constructor to throw".
 * Departure (creation does not fail for start): the stream is created
 * errored. */
static void start_errors(void **state)
{
    struct rsink k = {.start_rc = E1};
    struct weir_writable *ws = rsink_new(&k);

    (void)state;
    assert_int_equal(ws_err(ws), E1);
    weir_writable_destroy(ws);
}

static void close_rejects(int close_rc, bool later)
{
    struct rsink k = {.close_rc = later ? WEIR_PENDING : close_rc};
    struct weir_writable *ws = rsink_new(&k);
    struct weir_writer w;
    struct done cd = {0};
    int rc;

    weir_writer_acquire(&w, ws);
    rc = weir_writer_close(&w, done_cb, &cd);
    if (later) {
        assert_int_equal(rc, WEIR_PENDING);
        weir_writable_close_done(ws, close_rc);
        rc = cd.rc;
    }
    assert_int_equal(rc, close_rc);
    assert_int_equal(weir_writer_ready(&w, NULL, NULL), close_rc);
    assert_int_equal(ws_err(ws), close_rc);
    assert_string_equal(k.ev.s, "close");
    weir_writer_release(&w);
    weir_writable_destroy(ws);
}

/* F: "close: throwing method should cause writer close() and ready to
 * reject" */
static void close_throwing(void **state)
{
    (void)state;
    close_rejects(E1, false);
}

/* F: "close: returning a rejected promise should cause writer close() and
 * ready to reject" */
static void close_rejected(void **state)
{
    (void)state;
    close_rejects(E1, true);
}

/* F: "write: throwing method should cause write() and closed to reject" */
static void write_throwing(void **state)
{
    struct rsink k = {.write_rc = E1};
    struct weir_writable *ws = rsink_new(&k);
    struct weir_writer w;

    (void)state;
    weir_writer_acquire(&w, ws);
    assert_int_equal(weir_writer_write(&w, S("a"), NULL, NULL), E1);
    assert_int_equal(ws_err(ws), E1);
    weir_writer_release(&w);
    weir_writable_destroy(ws);
}

/* F: "write: returning a promise that becomes rejected after the writer
 * write() should cause writer write() and ready to reject" */
static void write_rejected_later(void **state)
{
    struct rsink k = {.write_rc = WEIR_PENDING};
    struct weir_writable *ws = rsink_new(&k);
    struct weir_writer w;
    struct done wd = {0}, rd = {0};

    (void)state;
    weir_writer_acquire(&w, ws);
    weir_writer_write(&w, S("a"), done_cb, &wd);
    weir_writer_ready(&w, done_cb, &rd);
    weir_writable_write_done(ws, E1);
    assert_int_equal(wd.rc, E1);
    assert_int_equal(rd.rc, E1);
    assert_string_equal(k.ev.s, "write:a");
    weir_writer_release(&w);
    weir_writable_destroy(ws);
}

/* F: "write: returning a rejected promise (second write) should cause
 * writer write() and ready to reject" */
static int first_pending_then_fail(struct rsink *k, struct weir_chunk c)
{
    (void)c;
    return k->writes == 1 ? WEIR_PENDING : E1;
}

static void second_write_rejected(void **state)
{
    struct rsink k = {.on_write = first_pending_then_fail};
    struct weir_writable *ws = rsink_new(&k);
    struct weir_writer w;
    struct done w2 = {0}, rd = {0};

    (void)state;
    weir_writer_acquire(&w, ws);
    weir_writer_write(&w, S("a"), NULL, NULL);
    assert_int_equal(weir_writer_ready(&w, done_cb, &rd), WEIR_PENDING);
    weir_writer_write(&w, S("b"), done_cb, &w2);
    weir_writable_write_done(ws, 0);
    assert_int_equal(w2.rc, E1);
    /* The wait that began while the queue was full fails with it. */
    assert_int_equal(rd.rc, E1);
    assert_string_equal(k.ev.s, "write:a write:b");
    weir_writer_release(&w);
    weir_writable_destroy(ws);
}

/* F: "abort: throwing method should cause abort() and closed to reject" */
static void abort_throwing(void **state)
{
    struct rsink k = {.abort_rc = E1};
    struct weir_writable *ws = rsink_new(&k);
    struct weir_writer w;

    (void)state;
    weir_writer_acquire(&w, ws);
    assert_int_equal(weir_writer_abort(&w, E2, NULL, NULL), E1);
    assert_int_equal(ws_err(ws), E2);
    weir_writer_release(&w);
    weir_writable_destroy(ws);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        WPT(start_errors,
            "start: errors in start cause WritableStream constructor to "
            "throw"),
        WPT(close_throwing, "close: throwing method should cause writer "
                            "close() and ready to reject"),
        WPT(close_rejected, "close: returning a rejected promise should "
                            "cause writer close() and ready to reject"),
        WPT(write_throwing, "write: throwing method should cause write() and "
                            "closed to reject"),
        WPT(write_rejected_later,
            "write: returning a promise that becomes rejected after the "
            "writer write() should cause writer write() and ready to "
            "reject"),
        WPT(second_write_rejected,
            "write: returning a rejected promise (second write) should cause "
            "writer write() and ready to reject"),
        WPT(abort_throwing, "abort: throwing method should cause abort() and "
                            "closed to reject"),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
