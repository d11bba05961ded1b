/*
 * WPT streams/piping/close-propagation-backward.any.js, ported to weir's C
 * API: a destination that is closed (or closing) cancels the source with
 * -EPIPE (the spec's TypeError) unless prevent_cancel, and the pipe fails
 * with -EPIPE.
 */
#include "wpt.h"

static void backward(bool cancel_fails, unsigned prevent)
{
    struct rsrc s = {.cancel_rc = cancel_fails ? E1 : 0};
    struct rsink k = {0};
    struct weir_readable *rs = rsrc_new(&s);
    struct weir_writable *ws = rsink_new(&k);
    struct weir_writer w;
    struct done d = {0};
    bool cancels = !(prevent & P_CANCEL);

    assert_int_equal(weir_writer_acquire(&w, ws), 0);
    assert_int_equal(weir_writer_close(&w, NULL, NULL), 0);
    weir_writer_release(&w);
    pipe_go(rs, ws, prevent, &d);
    assert_int_equal(d.calls, 1);
    assert_int_equal(d.rc, cancels && cancel_fails ? E1 : -EPIPE);
    if (cancels)
        assert_int_equal(s.cancel_reason, -EPIPE);
    assert_int_equal(s.cancels, cancels);
    assert_string_equal(k.ev.s, "close");
    assert_true(weir_writable_closed(ws));
    assert_true(weir_readable_closed(rs) == cancels);
    weir_readable_destroy(rs);
    weir_writable_destroy(ws);
}

#define CASE(fn, ...)                                                          \
    static void fn(void **state)                                               \
    {                                                                          \
        (void)state;                                                           \
        backward(__VA_ARGS__);                                                 \
    }

/* close-propagation-backward.any.js: "Closing must be propagated backward:
 * starts closed; preventCancel omitted; fulfilled cancel promise" */
CASE(fulfilled, false, 0)
/* "... starts closed; preventCancel omitted; rejected cancel promise" */
CASE(rejected, true, 0)
/* "... starts closed; preventCancel = false (falsy); fulfilled cancel
 * promise" */
CASE(falsy, false, 0)
/* "... starts closed; preventCancel = true (truthy)" */
CASE(truthy, false, P_CANCEL)
/* "... starts closed; preventCancel = true, preventAbort = true" */
CASE(prevent2, false, P_CANCEL | P_ABORT)
/* "... starts closed; preventCancel = true, preventAbort = true,
 * preventClose = true" */
CASE(prevent3, false, P_CANCEL | P_ABORT | P_CLOSE)

#define T(fn, rest) WPT(fn, "Closing must be propagated backward: " rest)

int main(void)
{
    const struct CMUnitTest tests[] = {
        T(fulfilled,
          "starts closed; preventCancel omitted; fulfilled cancel promise"),
        T(rejected,
          "starts closed; preventCancel omitted; rejected cancel promise"),
        T(falsy, "starts closed; preventCancel = false (falsy); fulfilled "
                 "cancel promise"),
        T(truthy, "starts closed; preventCancel = true (truthy)"),
        T(prevent2, "starts closed; preventCancel = true, preventAbort = true"),
        T(prevent3, "starts closed; preventCancel = true, preventAbort = "
                    "true, preventClose = true"),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
