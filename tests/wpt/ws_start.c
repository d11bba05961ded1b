/*
 * WPT streams/writable-streams/start.any.js, ported to weir's C API.
 */
#include "wpt.h"

#define F "writable-streams/start.any.js"

/* F: "underlying sink's write should not be called until start finishes" */
static void write_waits_for_start(void **state)
{
    struct rsink k = {.start_rc = WEIR_PENDING};
    struct weir_writable *ws = rsink_new(&k);
    struct weir_writer w;
    struct done rd = {0};

    (void)state;
    assert_int_equal(weir_writer_acquire(&w, ws), 0);
    assert_int_equal(weir_writer_desired_size(&w), 1);
    weir_writer_write(&w, S("a"), NULL, NULL);
    assert_int_equal(weir_writer_desired_size(&w), 0);
    assert_string_equal(k.ev.s, "");
    assert_int_equal(weir_writer_ready(&w, done_cb, &rd), WEIR_PENDING);
    weir_writable_start_done(ws, 0);
    assert_int_equal(rd.calls, 1);
    assert_string_equal(k.ev.s, "write:a");
    weir_writer_release(&w);
    weir_writable_destroy(ws);
}

/* F: "underlying sink's close should not be called until start finishes" */
static void close_waits_for_start(void **state)
{
    struct rsink k = {.start_rc = WEIR_PENDING};
    struct weir_writable *ws = rsink_new(&k);
    struct weir_writer w;
    struct done cd = {0};

    (void)state;
    assert_int_equal(weir_writer_acquire(&w, ws), 0);
    assert_int_equal(weir_writer_close(&w, done_cb, &cd), WEIR_PENDING);
    assert_int_equal(weir_writer_desired_size(&w), 1);
    assert_string_equal(k.ev.s, "");
    weir_writable_start_done(ws, 0);
    assert_int_equal(cd.rc, 0);
    assert_true(weir_writable_closed(ws));
    weir_writer_release(&w);
    weir_writable_destroy(ws);
}

/* F: "underlying sink's write or close should not be called if start
 * throws" */
static void start_throws(void **state)
{
    struct rsink k = {.start_rc = E1};
    struct weir_writable *ws = rsink_new(&k);
    struct weir_writer w;

    (void)state;
    assert_int_equal(ws_err(ws), E1);
    assert_int_equal(weir_writer_acquire(&w, ws), 0);
    assert_int_equal(weir_writer_write(&w, S("a"), NULL, NULL), E1);
    assert_int_equal(weir_writer_close(&w, NULL, NULL), E1);
    assert_string_equal(k.ev.s, "");
    weir_writer_release(&w);
    weir_writable_destroy(ws);
}

/* F: "underlying sink's write or close should not be invoked if the
 * promise returned by start is rejected" */
static void start_rejects(void **state)
{
    struct rsink k = {.start_rc = WEIR_PENDING};
    struct weir_writable *ws = rsink_new(&k);

    (void)state;
    weir_writable_start_done(ws, E1);
    assert_int_equal(ws_err(ws), E1);
    assert_string_equal(k.ev.s, "");
    weir_writable_destroy(ws);
}

/* F: "controller.error() during start should cause writes to fail" */
static int start_errors(struct rsink *k)
{
    weir_writable_error(k->ws, E1);
    return 0;
}

static void error_during_start(void **state)
{
    struct rsink k = {.on_start = start_errors};
    struct weir_writable *ws = rsink_new(&k);
    struct weir_writer w;

    (void)state;
    assert_int_equal(weir_writer_acquire(&w, ws), 0);
    assert_int_equal(weir_writer_write(&w, S("a"), NULL, NULL), E1);
    assert_string_equal(k.ev.s, "");
    weir_writer_release(&w);
    weir_writable_destroy(ws);
}

/* F: "controller.error() during async start should cause existing writes
 * to fail" */
static void error_during_async_start(void **state)
{
    struct rsink k = {.start_rc = WEIR_PENDING};
    struct weir_writable *ws = rsink_new(&k);
    struct weir_writer w;
    struct done wd = {0}, cd = {0};

    (void)state;
    assert_int_equal(weir_writer_acquire(&w, ws), 0);
    weir_writer_write(&w, S("a"), done_cb, &wd);
    weir_writer_close(&w, done_cb, &cd);
    weir_writable_error(ws, E1);
    weir_writable_start_done(ws, 0);
    assert_int_equal(wd.rc, E1);
    assert_int_equal(cd.rc, E1);
    assert_string_equal(k.ev.s, "");
    weir_writer_release(&w);
    weir_writable_destroy(ws);
}

/* F: "when start() rejects, writer promises should reject in standard
 * order" */
static void reject_order(void **state)
{
    struct rsink k = {.start_rc = WEIR_PENDING};
    struct weir_writable *ws = rsink_make(&k, 0);
    struct weir_writer w;
    struct done rd = {0}, wd = {0};
    int order = 0;

    (void)state;
    rd.order = wd.order = &order;
    assert_int_equal(weir_writer_acquire(&w, ws), 0);
    assert_int_equal(weir_writer_ready(&w, done_cb, &rd), WEIR_PENDING);
    weir_writer_write(&w, S("x"), done_cb, &wd);
    weir_writable_start_done(ws, E1);
    assert_int_equal(rd.rc, E1);
    assert_int_equal(wd.rc, E1);
    assert_int_equal(rd.at, 1);
    assert_int_equal(wd.at, 2);
    weir_writer_release(&w);
    weir_writable_destroy(ws);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        WPT(write_waits_for_start, "underlying sink's write should not be "
                                   "called until start finishes"),
        WPT(close_waits_for_start, "underlying sink's close should not be "
                                   "called until start finishes"),
        WPT(start_throws, "underlying sink's write or close should not be "
                          "called if start throws"),
        WPT(start_rejects, "underlying sink's write or close should not be "
                           "invoked if the promise returned by start is "
                           "rejected"),
        WPT(error_during_start,
            "controller.error() during start should cause writes to fail"),
        WPT(error_during_async_start,
            "controller.error() during async start should cause existing "
            "writes to fail"),
        WPT(reject_order, "when start() rejects, writer promises should "
                          "reject in standard order"),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
