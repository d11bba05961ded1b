/*
 * WPT streams/writable-streams/error.any.js, ported to weir's C API.
 */
#include "wpt.h"

/* writable-streams/error.any.js: "controller.error() should error the
 * stream" */
static int start_errors(struct rsink *k)
{
    weir_writable_error(k->ws, E1);
    return 0;
}

static void errors_stream(void **state)
{
    struct rsink k = {.on_start = start_errors};
    struct weir_writable *ws = rsink_new(&k);

    (void)state;
    assert_int_equal(ws_err(ws), E1);
    weir_writable_destroy(ws);
}

/* "controller.error() on erroring stream should not throw" */
static void on_erroring(void **state)
{
    struct rsink k = {.start_rc = WEIR_PENDING};
    struct weir_writable *ws = rsink_new(&k);
    struct weir_writer w;

    (void)state;
    assert_int_equal(weir_writer_acquire(&w, ws), 0);
    assert_int_equal(weir_writer_abort(&w, E2, NULL, NULL), WEIR_PENDING);
    weir_writable_error(ws, E1);
    assert_int_equal(ws_err(ws), E2);
    weir_writable_start_done(ws, 0);
    assert_int_equal(ws_err(ws), E2);
    weir_writer_release(&w);
    weir_writable_destroy(ws);
}

/* "surplus calls to controller.error() should be a no-op" */
static void surplus(void **state)
{
    struct rsink k = {0};
    struct weir_writable *ws = rsink_new(&k);

    (void)state;
    weir_writable_error(ws, E1);
    weir_writable_error(ws, E2);
    assert_int_equal(ws_err(ws), E1);
    weir_writable_destroy(ws);
}

/* "controller.error() on errored stream should not throw" */
static void on_errored(void **state)
{
    struct rsink k = {0};
    struct weir_writable *ws = rsink_new(&k);
    struct weir_writer w;

    (void)state;
    assert_int_equal(weir_writer_acquire(&w, ws), 0);
    assert_int_equal(weir_writer_abort(&w, E2, NULL, NULL), 0);
    weir_writable_error(ws, E1);
    assert_int_equal(ws_err(ws), E2);
    weir_writer_release(&w);
    weir_writable_destroy(ws);
}

/* "controller.error() on closed stream should not throw" */
static void on_closed(void **state)
{
    struct rsink k = {0};
    struct weir_writable *ws = rsink_new(&k);
    struct weir_writer w;

    (void)state;
    assert_int_equal(weir_writer_acquire(&w, ws), 0);
    assert_int_equal(weir_writer_close(&w, NULL, NULL), 0);
    weir_writable_error(ws, E1);
    assert_true(weir_writable_closed(ws));
    weir_writer_release(&w);
    weir_writable_destroy(ws);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        WPT(errors_stream, "controller.error() should error the stream"),
        WPT(on_erroring,
            "controller.error() on erroring stream should not throw"),
        WPT(surplus, "surplus calls to controller.error() should be a no-op"),
        WPT(on_errored,
            "controller.error() on errored stream should not throw"),
        WPT(on_closed, "controller.error() on closed stream should not throw"),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
