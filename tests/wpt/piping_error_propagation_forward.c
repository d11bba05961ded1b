/*
 * WPT streams/piping/error-propagation-forward.any.js, ported to weir's C
 * API: a source error aborts the destination unless prevent_abort.
 *
 * The WPT loops over falsy and truthy option values collapse to false and
 * true here (a bool option); one case of each is kept (LEFT-OUT.md).
 */
#include "wpt.h"

#define F "error-propagation-forward.any.js"

/* The cases that share a shape: when the source errors (at start, while
 * the pipe waits on it, or after one chunk), whether the destination has
 * room (hwm 1, or hwm 0: "dest never desires chunks"), whether the sink's
 * abort fails, and what the pipe prevents. */
enum when { AT_START, WHILE_EMPTY, AFTER_ONE };

static void forward(enum when when, size_t dst_hwm, bool abort_fails,
                    unsigned prevent)
{
    struct rsrc s = {.start_rc = when == AT_START ? E1 : 0};
    struct rsink k = {.abort_rc = abort_fails ? E2 : 0};
    struct weir_readable *rs = rsrc_new(&s);
    struct weir_writable *ws = rsink_make(&k, dst_hwm);
    struct done d = {0};
    char want[64] = "";
    bool aborts = !(prevent & P_ABORT);

    pipe_go(rs, ws, prevent, &d);
    if (when != AT_START) {
        assert_int_equal(d.calls, 0);
        if (when == AFTER_ONE)
            weir_readable_enqueue(rs, S("Hello"));
        weir_readable_error(rs, E1);
    }
    assert_int_equal(d.calls, 1);
    assert_int_equal(d.rc, aborts && abort_fails ? E2 : E1);
    if (when == AFTER_ONE && dst_hwm > 0)
        strcpy(want, "write:Hello");
    if (aborts)
        ev_add((struct evlog *)want, "abort:%d", E1);
    assert_string_equal(k.ev.s, want);
    assert_string_equal(s.nopull.s, "");
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

/* F: "Errors must be propagated forward: starts errored; preventAbort =
 * false; fulfilled abort promise" */
CASE(start_fulfilled, AT_START, 1, false, 0)
/* F: "... starts errored; preventAbort = false; rejected abort promise" */
CASE(start_rejected, AT_START, 1, true, 0)
/* F: "... starts errored; preventAbort = true (truthy)" */
CASE(start_prevent, AT_START, 1, false, P_ABORT)
/* F: "... starts errored; preventAbort = false (falsy); fulfilled abort
 * promise" */
CASE(start_falsy, AT_START, 1, false, 0)
/* F: "... starts errored; preventAbort = true, preventCancel = true" */
CASE(start_prevent2, AT_START, 1, false, P_ABORT | P_CANCEL)
/* F: "... starts errored; preventAbort = true, preventCancel = true,
 * preventClose = true" */
CASE(start_prevent3, AT_START, 1, false, P_ABORT | P_CANCEL | P_CLOSE)
/* F: "... becomes errored while empty; preventAbort = false; fulfilled
 * abort promise" */
CASE(empty_fulfilled, WHILE_EMPTY, 1, false, 0)
/* F: "... becomes errored while empty; preventAbort = false; rejected abort
 * promise" */
CASE(empty_rejected, WHILE_EMPTY, 1, true, 0)
/* F: "... becomes errored while empty; preventAbort = true" */
CASE(empty_prevent, WHILE_EMPTY, 1, false, P_ABORT)
/* F: "... becomes errored while empty; dest never desires chunks;
 * preventAbort = false; fulfilled abort promise" */
CASE(empty_hwm0_fulfilled, WHILE_EMPTY, 0, false, 0)
/* F: "... becomes errored while empty; dest never desires chunks;
 * preventAbort = false; rejected abort promise" */
CASE(empty_hwm0_rejected, WHILE_EMPTY, 0, true, 0)
/* F: "... becomes errored while empty; dest never desires chunks;
 * preventAbort = true" */
CASE(empty_hwm0_prevent, WHILE_EMPTY, 0, false, P_ABORT)
/* F: "... becomes errored after one chunk; preventAbort = false; fulfilled
 * abort promise" */
CASE(one_fulfilled, AFTER_ONE, 1, false, 0)
/* F: "... becomes errored after one chunk; preventAbort = false; rejected
 * abort promise" */
CASE(one_rejected, AFTER_ONE, 1, true, 0)
/* F: "... becomes errored after one chunk; preventAbort = true" */
CASE(one_prevent, AFTER_ONE, 1, false, P_ABORT)
/* F: "... becomes errored after one chunk; dest never desires chunks;
 * preventAbort = false; fulfilled abort promise" */
CASE(one_hwm0_fulfilled, AFTER_ONE, 0, false, 0)
/* F: "... becomes errored after one chunk; dest never desires chunks;
 * preventAbort = false; rejected abort promise" */
CASE(one_hwm0_rejected, AFTER_ONE, 0, true, 0)
/* F: "... becomes errored after one chunk; dest never desires chunks;
 * preventAbort = true" */
CASE(one_hwm0_prevent, AFTER_ONE, 0, false, P_ABORT)

/* The shutdown cases: the sink's writes stay pending until the test
 * finishes them. */
static void final_write(bool after_first, unsigned prevent)
{
    struct rsrc s = {0};
    struct rsink k = {.write_rc = WEIR_PENDING};
    struct weir_readable *rs = rsrc_new(&s);
    struct weir_writable *ws = rsink_make(&k, after_first ? 2 : 1);
    struct done d = {0};
    const char *abort = prevent & P_ABORT ? "" : " abort:-1001";
    char want[64];

    pipe_go(rs, ws, prevent, &d);
    weir_readable_enqueue(rs, S("a"));
    if (after_first) {
        weir_readable_enqueue(rs, S("b"));
        assert_string_equal(k.ev.s, "write:a");
        weir_readable_error(rs, E1);
        weir_writable_write_done(ws, 0);
        assert_string_equal(k.ev.s, "write:a write:b");
    } else {
        assert_string_equal(k.ev.s, "write:a");
        weir_readable_error(rs, E1);
        /* No shutdown while the write is at the sink. */
        assert_string_equal(k.ev.s, "write:a");
    }
    assert_int_equal(d.calls, 0);
    weir_writable_write_done(ws, 0);
    assert_int_equal(d.calls, 1);
    assert_int_equal(d.rc, E1);
    snprintf(want, sizeof(want), "%s%s",
             after_first ? "write:a write:b" : "write:a", abort);
    assert_string_equal(k.ev.s, want);
    weir_readable_destroy(rs);
    weir_writable_destroy(ws);
}

/* F: "Errors must be propagated forward: shutdown must not occur until the
 * final write completes" */
static void final_write_abort(void **state)
{
    (void)state;
    final_write(false, 0);
}

/* F: "... shutdown must not occur until the final write completes;
 * preventAbort = true" */
static void final_write_prevent(void **state)
{
    (void)state;
    final_write(false, P_ABORT);
}

/* F: "... shutdown must not occur until the final write completes; becomes
 * errored after first write" */
static void final_write_after_first(void **state)
{
    (void)state;
    final_write(true, 0);
}

/* F: "... shutdown must not occur until the final write completes; becomes
 * errored after first write; preventAbort = true" */
static void final_write_after_first_prevent(void **state)
{
    (void)state;
    final_write(true, P_ABORT);
}

#define T(fn, rest) WPT(fn, "Errors must be propagated forward: " rest)

int main(void)
{
    const struct CMUnitTest tests[] = {
        T(start_fulfilled,
          "starts errored; preventAbort = false; fulfilled abort promise"),
        T(start_rejected,
          "starts errored; preventAbort = false; rejected abort promise"),
        T(start_falsy, "starts errored; preventAbort = false (falsy); "
                       "fulfilled abort promise"),
        T(start_prevent, "starts errored; preventAbort = true (truthy)"),
        T(start_prevent2,
          "starts errored; preventAbort = true, preventCancel = true"),
        T(start_prevent3, "starts errored; preventAbort = true, "
                          "preventCancel = true, preventClose = true"),
        T(empty_fulfilled, "becomes errored while empty; preventAbort = "
                           "false; fulfilled abort promise"),
        T(empty_rejected, "becomes errored while empty; preventAbort = "
                          "false; rejected abort promise"),
        T(empty_prevent, "becomes errored while empty; preventAbort = true"),
        T(empty_hwm0_fulfilled,
          "becomes errored while empty; dest never desires chunks; "
          "preventAbort = false; fulfilled abort promise"),
        T(empty_hwm0_rejected,
          "becomes errored while empty; dest never desires chunks; "
          "preventAbort = false; rejected abort promise"),
        T(empty_hwm0_prevent, "becomes errored while empty; dest never "
                              "desires chunks; preventAbort = true"),
        T(one_fulfilled, "becomes errored after one chunk; preventAbort = "
                         "false; fulfilled abort promise"),
        T(one_rejected, "becomes errored after one chunk; preventAbort = "
                        "false; rejected abort promise"),
        T(one_prevent, "becomes errored after one chunk; preventAbort = true"),
        T(one_hwm0_fulfilled,
          "becomes errored after one chunk; dest never desires chunks; "
          "preventAbort = false; fulfilled abort promise"),
        T(one_hwm0_rejected,
          "becomes errored after one chunk; dest never desires chunks; "
          "preventAbort = false; rejected abort promise"),
        T(one_hwm0_prevent, "becomes errored after one chunk; dest never "
                            "desires chunks; preventAbort = true"),
        T(final_write_abort,
          "shutdown must not occur until the final write completes"),
        T(final_write_prevent, "shutdown must not occur until the final "
                               "write completes; preventAbort = true"),
        T(final_write_after_first,
          "shutdown must not occur until the final write completes; "
          "becomes errored after first write"),
        T(final_write_after_first_prevent,
          "shutdown must not occur until the final write completes; "
          "becomes errored after first write; preventAbort = true"),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
