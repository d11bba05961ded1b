/*
 * WPT streams/writable-streams/general.any.js, ported to weir's C API.
 */
#include "wpt.h"

#define F "writable-streams/general.any.js"

/* F: "desiredSize on a released writer" */
static void desired_released(void **state)
{
    struct weir_writable *ws;
    struct weir_writer w;

    (void)state;
    assert_int_equal(weir_writable_create(&ws, NULL, NULL, NULL), 0);
    weir_writer_acquire(&w, ws);
    weir_writer_release(&w);
    assert_true(weir_writer_desired_size(&w) == WEIR_DESIRED_NONE);
    weir_writable_destroy(ws);
}

/* F: "desiredSize initial value" */
static void desired_initial(void **state)
{
    struct weir_writable *ws;
    struct weir_writer w;

    (void)state;
    assert_int_equal(weir_writable_create(&ws, NULL, NULL, NULL), 0);
    weir_writer_acquire(&w, ws);
    assert_int_equal(weir_writer_desired_size(&w), 1);
    weir_writer_release(&w);
    weir_writable_destroy(ws);
}

/* F: "desiredSize on a writer for a closed stream" */
static void desired_closed(void **state)
{
    struct weir_writable *ws;
    struct weir_writer w;

    (void)state;
    assert_int_equal(weir_writable_create(&ws, NULL, NULL, NULL), 0);
    weir_writer_acquire(&w, ws);
    assert_int_equal(weir_writer_close(&w, NULL, NULL), 0);
    assert_int_equal(weir_writer_desired_size(&w), 0);
    weir_writer_release(&w);
    weir_writable_destroy(ws);
}

/* F: "desiredSize on a writer for an errored stream" */
static void desired_errored(void **state)
{
    struct rsink k = {.start_rc = E1};
    struct weir_writable *ws = rsink_new(&k);
    struct weir_writer w;

    (void)state;
    weir_writer_acquire(&w, ws);
    assert_true(weir_writer_desired_size(&w) == WEIR_DESIRED_NONE);
    weir_writer_release(&w);
    weir_writable_destroy(ws);
}

/* A second writer after the first did something and let go. */
static void second_writer_after(int what)
{
    struct rsink k = {.start_rc = what == 3 ? E1 : 0};
    struct weir_writable *ws = rsink_new(&k);
    struct weir_writer w, w2;

    weir_writer_acquire(&w, ws);
    if (what == 0 || what == 1)
        weir_writer_close(&w, NULL, NULL);
    else if (what == 2)
        weir_writer_abort(&w, E1, NULL, NULL);
    weir_writer_release(&w);
    assert_int_equal(weir_writer_acquire(&w2, ws), 0);
    weir_writer_release(&w2);
    weir_writable_destroy(ws);
}

/* F: "ws.getWriter() on a closing WritableStream" */
static void writer_on_closing(void **state)
{
    (void)state;
    second_writer_after(0);
}

/* F: "ws.getWriter() on a closed WritableStream" */
static void writer_on_closed(void **state)
{
    (void)state;
    second_writer_after(1);
}

/* F: "ws.getWriter() on an aborted WritableStream" */
static void writer_on_aborted(void **state)
{
    (void)state;
    second_writer_after(2);
}

/* F: "ws.getWriter() on an errored WritableStream" */
static void writer_on_errored(void **state)
{
    (void)state;
    second_writer_after(3);
}

/* F: "closed and ready on a released writer" (a released writer's calls
 * fail with -EINVAL) */
static void released_writer_calls(void **state)
{
    struct weir_writable *ws;
    struct weir_writer w;

    (void)state;
    assert_int_equal(weir_writable_create(&ws, NULL, NULL, NULL), 0);
    weir_writer_acquire(&w, ws);
    weir_writer_release(&w);
    assert_int_equal(weir_writer_ready(&w, done_cb, NULL), -EINVAL);
    assert_int_equal(weir_writer_close(&w, done_cb, NULL), -EINVAL);
    assert_int_equal(weir_writer_write(&w, S("a"), NULL, NULL), -EINVAL);
    weir_writable_destroy(ws);
}

/* F: "WritableStream should call underlying sink methods as methods" (the
 * sink's context reaches every call, for two streams on one sink) */
static void methods_as_methods(void **state)
{
    struct rsink k = {0};
    struct weir_writable *ws = rsink_new(&k), *ws2;
    struct weir_writer w, w2;

    (void)state;
    weir_writer_acquire(&w, ws);
    weir_writer_write(&w, S("a"), NULL, NULL);
    assert_int_equal(weir_writer_close(&w, NULL, NULL), 0);
    assert_int_equal(weir_writable_create(&ws2, &rsink_ops, &k, NULL), 0);
    weir_writer_acquire(&w2, ws2);
    assert_int_equal(weir_writer_abort(&w2, E1, NULL, NULL), 0);
    assert_string_equal(k.ev.s, "write:a close abort:-1001");
    weir_writer_release(&w);
    weir_writer_release(&w2);
    weir_writable_destroy(ws);
    weir_writable_destroy(ws2);
}

/* F: "redundant releaseLock() is no-op" */
static void redundant_release(void **state)
{
    struct weir_writable *ws;
    struct weir_writer w1, w2;

    (void)state;
    assert_int_equal(weir_writable_create(&ws, NULL, NULL, NULL), 0);
    weir_writer_acquire(&w1, ws);
    weir_writer_release(&w1);
    weir_writer_acquire(&w2, ws);
    weir_writer_release(&w1);
    assert_true(weir_writable_locked(ws));
    assert_int_equal(weir_writer_ready(&w2, NULL, NULL), 0);
    weir_writer_release(&w2);
    weir_writable_destroy(ws);
}

/* F: "ready promise should fire before closed on releaseLock" (the ready
 * wait of a released writer ends then, with -ECANCELED, and does not fire
 * later for the writer that is gone) */
static void ready_ends_on_release(void **state)
{
    struct rsink k = {.write_rc = WEIR_PENDING};
    struct weir_writable *ws = rsink_new(&k);
    struct weir_writer w, w2;
    struct done rd = {0}, r2 = {0};

    (void)state;
    weir_writer_acquire(&w, ws);
    weir_writer_write(&w, S("dummy"), NULL, NULL);
    assert_int_equal(weir_writer_ready(&w, done_cb, &rd), WEIR_PENDING);
    weir_writer_release(&w);
    assert_int_equal(rd.calls, 1);
    assert_int_equal(rd.rc, -ECANCELED);
    /* A new writer's wait is its own, and the old one stays quiet. */
    weir_writer_acquire(&w2, ws);
    assert_int_equal(weir_writer_ready(&w2, done_cb, &r2), WEIR_PENDING);
    weir_writable_write_done(ws, 0);
    assert_int_equal(rd.calls, 1);
    assert_int_equal(r2.calls, 1);
    assert_int_equal(r2.rc, 0);
    weir_writer_release(&w2);
    weir_writable_destroy(ws);
}

/* The same with the stream left alone after the release: nothing fires
 * when room comes back. */
static void ready_ends_on_release_quiet(void **state)
{
    struct rsink k = {.write_rc = WEIR_PENDING};
    struct weir_writable *ws = rsink_new(&k);
    struct weir_writer w;
    struct done rd = {0};

    (void)state;
    weir_writer_acquire(&w, ws);
    weir_writer_write(&w, S("dummy"), NULL, NULL);
    weir_writer_ready(&w, done_cb, &rd);
    weir_writer_release(&w);
    weir_writable_write_done(ws, 0);
    assert_int_equal(rd.calls, 1);
    assert_int_equal(rd.rc, -ECANCELED);
    weir_writable_destroy(ws);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        WPT(desired_released, "desiredSize on a released writer"),
        WPT(desired_initial, "desiredSize initial value"),
        WPT(desired_closed, "desiredSize on a writer for a closed stream"),
        WPT(desired_errored, "desiredSize on a writer for an errored stream"),
        WPT(writer_on_closing, "ws.getWriter() on a closing WritableStream"),
        WPT(writer_on_closed, "ws.getWriter() on a closed WritableStream"),
        WPT(writer_on_aborted, "ws.getWriter() on an aborted WritableStream"),
        WPT(writer_on_errored, "ws.getWriter() on an errored WritableStream"),
        WPT(released_writer_calls, "closed and ready on a released writer"),
        WPT(methods_as_methods,
            "WritableStream should call underlying sink methods as methods"),
        WPT(redundant_release, "redundant releaseLock() is no-op"),
        WPT(ready_ends_on_release,
            "ready promise should fire before closed on releaseLock"),
        WPT(ready_ends_on_release_quiet,
            "ready promise should fire before closed on releaseLock (no new "
            "writer)"),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
