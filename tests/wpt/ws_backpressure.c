/*
 * WPT streams/writable-streams/backpressure.any.js, ported to weir's C
 * API: the controller's releaseBackpressure() is
 * weir_writable_release_backpressure, and writer.ready is
 * weir_writer_ready.
 */
#include "wpt.h"

#define F "writable-streams/backpressure.any.js"

/* F: "releaseBackpressure() resolves ready promise on a stream with HWM
 * 0" */
static void release_resolves_ready(void **state)
{
    struct rsink k = {0};
    struct weir_writable *ws = rsink_make(&k, 0);
    struct weir_writer w;
    struct done r1 = {0}, r2 = {0};

    (void)state;
    weir_writer_acquire(&w, ws);
    assert_int_equal(weir_writer_desired_size(&w), 0);
    assert_int_equal(weir_writer_ready(&w, done_cb, &r1), WEIR_PENDING);
    assert_int_equal(r1.calls, 0);
    weir_writable_release_backpressure(ws);
    assert_int_equal(r1.calls, 1);
    assert_int_equal(r1.rc, 0);
    assert_int_equal(weir_writer_desired_size(&w), 0);
    /* A write puts the backpressure back. */
    assert_int_equal(weir_writer_write(&w, S("a"), NULL, NULL), 0);
    assert_int_equal(weir_writer_ready(&w, done_cb, &r2), WEIR_PENDING);
    assert_int_equal(r2.calls, 0);
    assert_int_equal(weir_writer_desired_size(&w), 0);
    weir_writable_release_backpressure(ws);
    assert_int_equal(r2.calls, 1);
    assert_int_equal(r2.rc, 0);
    assert_int_equal(weir_writer_desired_size(&w), 0);
    assert_string_equal(k.ev.s, "write:a");
    weir_writer_release(&w);
    weir_writable_destroy(ws);
}

/* F: "releaseBackpressure() does nothing while there are queued chunks" */
static void release_needs_empty_queue(void **state)
{
    struct rsink k = {.write_rc = WEIR_PENDING};
    struct weir_writable *ws = rsink_make(&k, 0);
    struct weir_writer w;
    struct done r1 = {0};

    (void)state;
    weir_writer_acquire(&w, ws);
    weir_writer_write(&w, S("a"), NULL, NULL);
    weir_writer_write(&w, S("b"), NULL, NULL);
    assert_int_equal(weir_writer_desired_size(&w), -2);
    assert_int_equal(weir_writer_ready(&w, done_cb, &r1), WEIR_PENDING);
    weir_writable_release_backpressure(ws);
    weir_writable_write_done(ws, 0);
    assert_int_equal(weir_writer_desired_size(&w), -1);
    assert_int_equal(r1.calls, 0);
    weir_writable_write_done(ws, 0);
    assert_int_equal(weir_writer_desired_size(&w), 0);
    assert_int_equal(r1.calls, 0);
    weir_writable_release_backpressure(ws);
    assert_int_equal(weir_writer_desired_size(&w), 0);
    assert_int_equal(r1.calls, 1);
    assert_int_equal(r1.rc, 0);
    weir_writer_release(&w);
    weir_writable_destroy(ws);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        WPT(release_resolves_ready, "releaseBackpressure() resolves ready "
                                    "promise on a stream with HWM 0"),
        WPT(release_needs_empty_queue, "releaseBackpressure() does nothing "
                                       "while there are queued chunks"),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
