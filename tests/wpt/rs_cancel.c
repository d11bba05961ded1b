/*
 * WPT streams/readable-streams/cancel.any.js, ported to weir's C API.
 * weir cancels through a reader; the source's cancel reports its result
 * synchronously.
 */
#include "wpt.h"

#define F "readable-streams/cancel.any.js"

/* F: "ReadableStream cancellation: integration test on an infinite stream
 * derived from a random push source" (a push source that enqueues 128-byte
 * chunks whenever it is pulled, cancelled midway) */
static uint8_t bytes128[128];

static int push_some(struct rsrc *s)
{
    for (int i = 0; i < 3; i++)
        weir_readable_enqueue(
            s->rs, (struct weir_chunk){NULL, bytes128, sizeof(bytes128)});
    return 0;
}

static void push_source_integration(void **state)
{
    struct rsrc s = {.on_pull = push_some};
    struct weir_readable *rs = rsrc_make(&s, 4, false);
    struct weir_reader r;
    struct weir_chunk c;
    int n = 0;

    (void)state;
    weir_reader_acquire(&r, rs);
    while (n < 20 && weir_reader_read(&r, &c, never_read, NULL) == 0) {
        assert_int_equal(c.len, 128);
        n++;
    }
    assert_int_equal(n, 20);
    assert_int_equal(weir_reader_cancel(&r, E1), 0);
    assert_int_equal(s.cancels, 1);
    assert_int_equal(weir_reader_read(&r, &c, never_read, NULL), WEIR_DONE);
    weir_reader_release(&r);
    weir_readable_destroy(rs);
}

/* F: "ReadableStream cancellation: cancel(reason) should pass through the
 * given reason to the underlying source" */
static void passes_reason(void **state)
{
    struct rsrc s = {0};
    struct weir_readable *rs = rsrc_new(&s);
    struct weir_reader r;

    (void)state;
    weir_reader_acquire(&r, rs);
    weir_reader_cancel(&r, E1);
    assert_int_equal(s.cancel_reason, E1);
    weir_reader_release(&r);
    weir_readable_destroy(rs);
}

/* F: "ReadableStream cancellation: cancel() on a locked stream should fail
 * and not call the underlying source cancel" (a second reader cannot be
 * had, so it cannot cancel) */
static const char *const a[] = {"a", NULL};

static void locked_cancel_fails(void **state)
{
    struct rsrc s = {.on_start = start_enqueue, .user = (void *)a, .n = 1};
    struct weir_readable *rs = rsrc_new(&s);
    struct weir_reader r, r2;
    struct weir_chunk c;

    (void)state;
    weir_reader_acquire(&r, rs);
    assert_int_equal(weir_reader_acquire(&r2, rs), -EBUSY);
    assert_int_equal(s.cancels, 0);
    assert_read(&r, "a");
    assert_int_equal(weir_reader_read(&r, &c, never_read, NULL), WEIR_DONE);
    weir_reader_release(&r);
    weir_readable_destroy(rs);
}

/* F: "ReadableStream cancellation: should fulfill promise when cancel
 * callback went fine" */
static void fulfills(void **state)
{
    struct rsrc s = {0};
    struct weir_readable *rs = rsrc_new(&s);
    struct weir_reader r;

    (void)state;
    weir_reader_acquire(&r, rs);
    assert_int_equal(weir_reader_cancel(&r, E1), 0);
    assert_int_equal(s.cancels, 1);
    weir_reader_release(&r);
    weir_readable_destroy(rs);
}

/* F: "ReadableStream cancellation: should reject promise when cancel
 * callback raises an exception" */
static void rejects(void **state)
{
    struct rsrc s = {.cancel_rc = E2};
    struct weir_readable *rs = rsrc_new(&s);
    struct weir_reader r;

    (void)state;
    weir_reader_acquire(&r, rs);
    assert_int_equal(weir_reader_cancel(&r, E1), E2);
    assert_int_equal(s.cancels, 1);
    weir_reader_release(&r);
    weir_readable_destroy(rs);
}

/* F: "ReadableStream cancellation: cancelling before start finishes should
 * prevent pull() from being called" */
static void cancel_before_start(void **state)
{
    struct rsrc s = {.start_rc = WEIR_PENDING};
    struct weir_readable *rs = rsrc_new(&s);
    struct weir_reader r;

    (void)state;
    weir_reader_acquire(&r, rs);
    assert_int_equal(weir_reader_cancel(&r, E1), 0);
    weir_readable_start_done(rs, 0);
    assert_int_equal(s.pulls, 0);
    assert_true(weir_readable_closed(rs));
    weir_reader_release(&r);
    weir_readable_destroy(rs);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        WPT(push_source_integration,
            "ReadableStream cancellation: integration test on an infinite "
            "stream derived from a random push source"),
        WPT(passes_reason, "ReadableStream cancellation: cancel(reason) "
                           "should pass through the given reason to the "
                           "underlying source"),
        WPT(locked_cancel_fails,
            "ReadableStream cancellation: cancel() on a locked stream should "
            "fail and not call the underlying source cancel"),
        WPT(fulfills, "ReadableStream cancellation: should fulfill promise "
                      "when cancel callback went fine"),
        WPT(rejects, "ReadableStream cancellation: should reject promise "
                     "when cancel callback raises an exception"),
        WPT(cancel_before_start,
            "ReadableStream cancellation: cancelling before start finishes "
            "should prevent pull() from being called"),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
