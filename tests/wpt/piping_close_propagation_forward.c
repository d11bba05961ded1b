/*
 * WPT streams/piping/close-propagation-forward.any.js, ported to weir's C
 * API: a source that closes closes the destination unless prevent_close.
 *
 * The WPT loops over falsy and truthy option values collapse to false and
 * true here (a bool option); one case of each is kept (LEFT-OUT.md).
 */
#include "wpt.h"

static const char *const ab[] = {"a", "b", NULL};

enum when { AT_START, LATER, AFTER_ONE };

/* The source closes at start, later while the pipe waits on it, or after
 * one chunk; the destination has room (hwm 1) or never desires chunks
 * (hwm 0); the sink's close fails or not. */
static void forward(enum when when, size_t hwm, bool close_fails,
                    unsigned prevent)
{
    struct rsrc s = {.n = when == AT_START, .on_start = start_enqueue};
    struct rsink k = {.close_rc = close_fails ? E1 : 0};
    struct weir_readable *rs = rsrc_new(&s);
    struct weir_writable *ws = rsink_make(&k, hwm);
    struct done d = {0};
    bool closes = !(prevent & P_CLOSE);
    char want[64] = "";

    pipe_go(rs, ws, prevent, &d);
    if (when != AT_START) {
        assert_int_equal(d.calls, 0);
        if (when == AFTER_ONE)
            weir_readable_enqueue(rs, S("Hello"));
        weir_readable_close(rs);
    }
    assert_int_equal(d.calls, 1);
    assert_int_equal(d.rc, closes && close_fails ? E1 : 0);
    if (when == AFTER_ONE)
        strcpy(want, "write:Hello");
    if (closes)
        ev_add((struct evlog *)want, "close");
    assert_string_equal(k.ev.s, want);
    assert_string_equal(s.nopull.s, "");
    assert_true(weir_readable_closed(rs));
    if (closes && close_fails)
        assert_int_equal(ws_err(ws), E1);
    else
        assert_true(weir_writable_closed(ws) == closes);
    assert_false(weir_readable_locked(rs));
    assert_false(weir_writable_locked(ws));
    weir_readable_destroy(rs);
    weir_writable_destroy(ws);
}

#define CASE(fn, ...)                                                          \
    static void fn(void **state)                                               \
    {                                                                          \
        (void)state;                                                           \
        forward(__VA_ARGS__);                                                  \
    }

/* close-propagation-forward.any.js: "Closing must be propagated forward:
 * starts closed; preventClose omitted; fulfilled close promise" */
CASE(start_fulfilled, AT_START, 1, false, 0)
/* "... starts closed; preventClose omitted; rejected close promise" */
CASE(start_rejected, AT_START, 1, true, 0)
/* "... starts closed; preventClose = false (falsy); fulfilled close
 * promise" */
CASE(start_falsy, AT_START, 1, false, 0)
/* "... starts closed; preventClose = true (truthy)" */
CASE(start_truthy, AT_START, 1, false, P_CLOSE)
/* "... starts closed; preventClose = true, preventAbort = true" */
CASE(start_prevent2, AT_START, 1, false, P_CLOSE | P_ABORT)
/* "... starts closed; preventClose = true, preventAbort = true,
 * preventCancel = true" */
CASE(start_prevent3, AT_START, 1, false, P_CLOSE | P_ABORT | P_CANCEL)
/* "... becomes closed asynchronously; preventClose omitted; fulfilled close
 * promise" */
CASE(later_fulfilled, LATER, 1, false, 0)
/* "... becomes closed asynchronously; preventClose omitted; rejected close
 * promise" */
CASE(later_rejected, LATER, 1, true, 0)
/* "... becomes closed asynchronously; preventClose = true" */
CASE(later_prevent, LATER, 1, false, P_CLOSE)
/* "... becomes closed asynchronously; dest never desires chunks;
 * preventClose omitted; fulfilled close promise" */
CASE(later_hwm0_fulfilled, LATER, 0, false, 0)
/* "... becomes closed asynchronously; dest never desires chunks;
 * preventClose omitted; rejected close promise" */
CASE(later_hwm0_rejected, LATER, 0, true, 0)
/* "... becomes closed asynchronously; dest never desires chunks;
 * preventClose = true" */
CASE(later_hwm0_prevent, LATER, 0, false, P_CLOSE)
/* "... becomes closed after one chunk; preventClose omitted; fulfilled
 * close promise" */
CASE(one_fulfilled, AFTER_ONE, 1, false, 0)
/* "... becomes closed after one chunk; preventClose omitted; rejected close
 * promise" */
CASE(one_rejected, AFTER_ONE, 1, true, 0)
/* "... becomes closed after one chunk; preventClose = true" */
CASE(one_prevent, AFTER_ONE, 1, false, P_CLOSE)

static void final_write(bool after_first, unsigned prevent)
{
    struct rsrc s = {0};
    struct rsink k = {.write_rc = WEIR_PENDING};
    struct weir_readable *rs = rsrc_new(&s);
    struct weir_writable *ws = rsink_make(&k, after_first ? 2 : 1);
    struct done d = {0};
    bool closes = !(prevent & P_CLOSE);
    char want[64];

    pipe_go(rs, ws, prevent, &d);
    weir_readable_enqueue(rs, S("a"));
    if (after_first) {
        weir_readable_enqueue(rs, S("b"));
        assert_string_equal(k.ev.s, "write:a");
        weir_readable_close(rs);
        weir_writable_write_done(ws, 0);
        assert_string_equal(k.ev.s, "write:a write:b");
    } else {
        weir_readable_close(rs);
        assert_string_equal(k.ev.s, "write:a");
    }
    assert_int_equal(d.calls, 0);
    weir_writable_write_done(ws, 0);
    assert_int_equal(d.calls, 1);
    assert_int_equal(d.rc, 0);
    snprintf(want, sizeof(want), "%s%s",
             after_first ? "write:a write:b" : "write:a",
             closes ? " close" : "");
    assert_string_equal(k.ev.s, want);
    weir_readable_destroy(rs);
    weir_writable_destroy(ws);
}

/* "Closing must be propagated forward: shutdown must not occur until the
 * final write completes" */
static void final_close(void **state)
{
    (void)state;
    final_write(false, 0);
}

/* "... shutdown must not occur until the final write completes;
 * preventClose = true" */
static void final_prevent(void **state)
{
    (void)state;
    final_write(false, P_CLOSE);
}

/* "... shutdown must not occur until the final write completes; becomes
 * closed after first write" */
static void final_after_first(void **state)
{
    (void)state;
    final_write(true, 0);
}

/* "... shutdown must not occur until the final write completes; becomes
 * closed after first write; preventClose = true" */
static void final_after_first_prevent(void **state)
{
    (void)state;
    final_write(true, P_CLOSE);
}

/* "Closing must be propagated forward: erroring the writable while
 * flushing pending writes should error pipeTo" */
static void error_while_flushing(void **state)
{
    struct rsrc s = {.on_start = start_enqueue, .user = (void *)ab, .n = 1};
    struct rsink k = {.write_rc = WEIR_PENDING};
    struct weir_readable *rs = rsrc_make(&s, 2, false);
    struct weir_writable *ws = rsink_make(&k, 3);
    struct done d = {0};

    (void)state;
    pipe_go(rs, ws, 0, &d);
    assert_int_equal(d.calls, 0);
    weir_writable_write_done(ws, E1);
    assert_int_equal(d.calls, 1);
    assert_int_equal(d.rc, E1);
    assert_string_equal(s.nopull.s, "");
    assert_string_equal(k.ev.s, "write:a");
    assert_true(weir_readable_closed(rs));
    assert_int_equal(ws_err(ws), E1);
    weir_readable_destroy(rs);
    weir_writable_destroy(ws);
}

#define T(fn, rest) WPT(fn, "Closing must be propagated forward: " rest)

int main(void)
{
    const struct CMUnitTest tests[] = {
        T(start_fulfilled,
          "starts closed; preventClose omitted; fulfilled close promise"),
        T(start_rejected,
          "starts closed; preventClose omitted; rejected close promise"),
        T(start_falsy, "starts closed; preventClose = false (falsy); "
                       "fulfilled close promise"),
        T(start_truthy, "starts closed; preventClose = true (truthy)"),
        T(start_prevent2,
          "starts closed; preventClose = true, preventAbort = true"),
        T(start_prevent3, "starts closed; preventClose = true, preventAbort "
                          "= true, preventCancel = true"),
        T(later_fulfilled, "becomes closed asynchronously; preventClose "
                           "omitted; fulfilled close promise"),
        T(later_rejected, "becomes closed asynchronously; preventClose "
                          "omitted; rejected close promise"),
        T(later_prevent, "becomes closed asynchronously; preventClose = true"),
        T(later_hwm0_fulfilled,
          "becomes closed asynchronously; dest never desires chunks; "
          "preventClose omitted; fulfilled close promise"),
        T(later_hwm0_rejected,
          "becomes closed asynchronously; dest never desires chunks; "
          "preventClose omitted; rejected close promise"),
        T(later_hwm0_prevent, "becomes closed asynchronously; dest never "
                              "desires chunks; preventClose = true"),
        T(one_fulfilled, "becomes closed after one chunk; preventClose "
                         "omitted; fulfilled close promise"),
        T(one_rejected, "becomes closed after one chunk; preventClose "
                        "omitted; rejected close promise"),
        T(one_prevent, "becomes closed after one chunk; preventClose = true"),
        T(final_close,
          "shutdown must not occur until the final write completes"),
        T(final_prevent, "shutdown must not occur until the final write "
                         "completes; preventClose = true"),
        T(final_after_first, "shutdown must not occur until the final write "
                             "completes; becomes closed after first write"),
        T(final_after_first_prevent,
          "shutdown must not occur until the final write completes; "
          "becomes closed after first write; preventClose = true"),
        T(error_while_flushing,
          "erroring the writable while flushing pending writes should "
          "error pipeTo"),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
