/*
 * WPT streams/piping/general.any.js, ported to weir's C API.
 */
#include "wpt.h"

/* piping/general.any.js: "Piping must lock both the ReadableStream and
 * WritableStream" */
static void lock_both(void **state)
{
    struct weir_readable *rs;
    struct weir_writable *ws;
    struct done d = {0};

    (void)state;
    assert_int_equal(weir_readable_create(&rs, NULL, NULL, NULL), 0);
    assert_int_equal(weir_writable_create(&ws, NULL, NULL, NULL), 0);
    assert_false(weir_readable_locked(rs));
    assert_false(weir_writable_locked(ws));
    pipe_go(rs, ws, 0, &d);
    assert_int_equal(d.calls, 0);
    assert_true(weir_readable_locked(rs));
    assert_true(weir_writable_locked(ws));
    /* End it: closing the source closes the destination. */
    assert_int_equal(weir_readable_close(rs), 0);
    assert_int_equal(d.calls, 1);
    weir_readable_destroy(rs);
    weir_writable_destroy(ws);
}

/* piping/general.any.js: "Piping finishing must unlock both the
 * ReadableStream and WritableStream" */
static void finishing_unlocks(void **state)
{
    struct rsrc s = {.n = 1, .on_start = start_enqueue};
    struct rsink k = {0};
    struct weir_readable *rs = rsrc_new(&s);
    struct weir_writable *ws = rsink_new(&k);
    struct done d = {0};

    (void)state;
    pipe_go(rs, ws, 0, &d);
    assert_int_equal(d.calls, 1);
    assert_int_equal(d.rc, 0);
    assert_false(weir_readable_locked(rs));
    assert_false(weir_writable_locked(ws));
    weir_readable_destroy(rs);
    weir_writable_destroy(ws);
}

/* piping/general.any.js: "pipeTo must fail if the ReadableStream is
 * locked, and not lock the WritableStream" */
static void fail_rs_locked(void **state)
{
    struct weir_readable *rs;
    struct weir_writable *ws;
    struct weir_reader r;

    (void)state;
    assert_int_equal(weir_readable_create(&rs, NULL, NULL, NULL), 0);
    assert_int_equal(weir_writable_create(&ws, NULL, NULL, NULL), 0);
    assert_int_equal(weir_reader_acquire(&r, rs), 0);
    assert_int_equal(weir_pipe_to(rs, ws, NULL, done_cb, NULL), -EBUSY);
    assert_false(weir_writable_locked(ws));
    weir_reader_release(&r);
    weir_readable_destroy(rs);
    weir_writable_destroy(ws);
}

/* piping/general.any.js: "pipeTo must fail if the WritableStream is
 * locked, and not lock the ReadableStream" */
static void fail_ws_locked(void **state)
{
    struct weir_readable *rs;
    struct weir_writable *ws;
    struct weir_writer w;

    (void)state;
    assert_int_equal(weir_readable_create(&rs, NULL, NULL, NULL), 0);
    assert_int_equal(weir_writable_create(&ws, NULL, NULL, NULL), 0);
    assert_int_equal(weir_writer_acquire(&w, ws), 0);
    assert_int_equal(weir_pipe_to(rs, ws, NULL, done_cb, NULL), -EBUSY);
    assert_false(weir_readable_locked(rs));
    weir_writer_release(&w);
    weir_readable_destroy(rs);
    weir_writable_destroy(ws);
}

/* piping/general.any.js: "Piping from a ReadableStream from which lots of
 * chunks are synchronously readable" */
static const char *const ten[] = {"0", "1", "2", "3", "4", "5",
                                  "6", "7", "8", "9", NULL};

static void lots_sync(void **state)
{
    struct rsrc s = {.n = 1, .on_start = start_enqueue, .user = (void *)ten};
    struct rsink k = {0};
    struct weir_readable *rs = rsrc_make(&s, 10, false);
    struct weir_writable *ws = rsink_make(&k, 10);
    struct done d = {0};

    (void)state;
    pipe_go(rs, ws, 0, &d);
    assert_int_equal(d.calls, 1);
    assert_int_equal(d.rc, 0);
    assert_string_equal(k.ev.s, "write:0 write:1 write:2 write:3 write:4 "
                                "write:5 write:6 write:7 write:8 write:9 "
                                "close");
    assert_true(weir_readable_closed(rs));
    assert_true(weir_writable_closed(ws));
    weir_readable_destroy(rs);
    weir_writable_destroy(ws);
}

/* piping/general.any.js: "Piping from a ReadableStream for which a chunk
 * becomes asynchronously readable after the pipeTo" */
static void async_chunk(void **state)
{
    struct rsrc s = {0};
    struct rsink k = {0};
    struct weir_readable *rs = rsrc_new(&s);
    struct weir_writable *ws = rsink_new(&k);
    struct done d = {0};

    (void)state;
    pipe_go(rs, ws, 0, &d);
    assert_int_equal(d.calls, 0);
    weir_readable_enqueue(rs, S("Hello"));
    weir_readable_close(rs);
    assert_int_equal(d.calls, 1);
    assert_int_equal(d.rc, 0);
    assert_string_equal(k.ev.s, "write:Hello close");
    weir_readable_destroy(rs);
    weir_writable_destroy(ws);
}

/* piping/general.any.js: "an undefined rejection from pull should cause
 * pipeTo() to reject when preventAbort is true" (the rejection is an
 * error code here: C has no undefined) */
static void pull_rejects(unsigned prevent)
{
    struct rsrc s = {.pull_rc = E1};
    struct rsink k = {0};
    struct weir_readable *rs = rsrc_new(&s);
    struct weir_writable *ws = rsink_new(&k);
    struct done d = {0};

    pipe_go(rs, ws, prevent, &d);
    assert_int_equal(d.calls, 1);
    assert_int_equal(d.rc, E1);
    assert_string_equal(k.ev.s, prevent & P_ABORT ? "" : "abort:-1001");
    weir_readable_destroy(rs);
    weir_writable_destroy(ws);
}

static void pull_rejects_prevent_abort(void **state)
{
    (void)state;
    pull_rejects(P_ABORT);
}

/* piping/general.any.js: "an undefined rejection from pull should cause
 * pipeTo() to reject when preventAbort is false" */
static void pull_rejects_abort(void **state)
{
    (void)state;
    pull_rejects(0);
}

/* piping/general.any.js: "an undefined rejection from write should cause
 * pipeTo() to reject when preventCancel is true" */
static int pull_zero(struct rsrc *s)
{
    return weir_readable_enqueue(s->rs, S("0"));
}

static void write_rejects(unsigned prevent)
{
    struct rsrc s = {.on_pull = pull_zero};
    struct rsink k = {.write_rc = E1};
    struct weir_readable *rs = rsrc_new(&s);
    struct weir_writable *ws = rsink_new(&k);
    struct done d = {0};

    pipe_go(rs, ws, prevent, &d);
    assert_int_equal(d.calls, 1);
    assert_int_equal(d.rc, E1);
    assert_int_equal(s.cancels, prevent & P_CANCEL ? 0 : 1);
    weir_readable_destroy(rs);
    weir_writable_destroy(ws);
}

static void write_rejects_prevent_cancel(void **state)
{
    (void)state;
    write_rejects(P_CANCEL);
}

/* piping/general.any.js: "an undefined rejection from write should cause
 * pipeTo() to reject when preventCancel is false" */
static void write_rejects_cancel(void **state)
{
    (void)state;
    write_rejects(0);
}

/* F: "pipeTo() promise should resolve if null is passed" (no options) */
static int start_close_src(struct rsrc *s)
{
    return weir_readable_close(s->rs);
}

static void null_options(void **state)
{
    struct rsrc s = {.on_start = start_close_src};
    struct rsink k = {0};
    struct weir_readable *rs = rsrc_new(&s);
    struct weir_writable *ws = rsink_new(&k);

    (void)state;
    assert_int_equal(weir_pipe_to(rs, ws, NULL, NULL, NULL), 0);
    assert_string_equal(k.ev.s, "close");
    assert_false(weir_readable_locked(rs));
    assert_false(weir_writable_locked(ws));
    weir_readable_destroy(rs);
    weir_writable_destroy(ws);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        WPT(lock_both,
            "Piping must lock both the ReadableStream and WritableStream"),
        WPT(finishing_unlocks, "Piping finishing must unlock both the "
                               "ReadableStream and WritableStream"),
        WPT(fail_rs_locked, "pipeTo must fail if the ReadableStream is "
                            "locked, and not lock the WritableStream"),
        WPT(fail_ws_locked, "pipeTo must fail if the WritableStream is "
                            "locked, and not lock the ReadableStream"),
        WPT(lots_sync, "Piping from a ReadableStream from which lots of "
                       "chunks are synchronously readable"),
        WPT(async_chunk, "Piping from a ReadableStream for which a chunk "
                         "becomes asynchronously readable after the pipeTo"),
        WPT(pull_rejects_prevent_abort,
            "an undefined rejection from pull should cause pipeTo() to "
            "reject when preventAbort is true"),
        WPT(pull_rejects_abort, "an undefined rejection from pull should "
                                "cause pipeTo() to reject when preventAbort "
                                "is false"),
        WPT(write_rejects_prevent_cancel,
            "an undefined rejection from write should cause pipeTo() to "
            "reject when preventCancel is true"),
        WPT(write_rejects_cancel,
            "an undefined rejection from write should cause pipeTo() to "
            "reject when preventCancel is false"),
        WPT(null_options, "pipeTo() promise should resolve if null is "
                          "passed"),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
