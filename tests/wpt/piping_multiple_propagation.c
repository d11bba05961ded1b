/*
 * WPT streams/piping/multiple-propagation.any.js, ported to weir's C API.
 * An "erroring" writable is one whose start has not finished when it
 * errored (its start answers pending here, as a JS start settles a
 * microtask later).
 */
#include "wpt.h"

#define F "piping/multiple-propagation.any.js"

static int start_error(struct rsrc *s)
{
    weir_readable_error(s->rs, E1);
    return 0;
}

static int start_close(struct rsrc *s)
{
    return weir_readable_close(s->rs);
}

static int sink_error_pending(struct rsink *k)
{
    weir_writable_error(k->ws, E2);
    return WEIR_PENDING;
}

static int sink_error(struct rsink *k)
{
    weir_writable_error(k->ws, E2);
    return 0;
}

/* F: "Piping from an errored readable stream to an erroring writable
 * stream" */
static void errored_to_erroring(unsigned prevent, int want)
{
    struct rsrc s = {.on_start = start_error};
    struct rsink k = {.on_start = sink_error_pending};
    struct weir_readable *rs = rsrc_new(&s);
    struct weir_writable *ws = rsink_new(&k);
    struct done d = {0};

    pipe_go(rs, ws, prevent, &d);
    weir_writable_start_done(ws, 0);
    assert_int_equal(d.calls, 1);
    assert_int_equal(d.rc, want);
    assert_string_equal(s.ev.s, "");
    assert_string_equal(k.ev.s, "");
    assert_int_equal(rs_err(rs), E1);
    assert_int_equal(ws_err(ws), E2);
    weir_readable_destroy(rs);
    weir_writable_destroy(ws);
}

static void errored_to_erroring_abort(void **state)
{
    (void)state;
    errored_to_erroring(0, E2);
}

/* F: "Piping from an errored readable stream to an erroring writable
 * stream; preventAbort = true" */
static void errored_to_erroring_prevent(void **state)
{
    (void)state;
    errored_to_erroring(P_ABORT, E1);
}

/* F: "Piping from an errored readable stream to an errored writable
 * stream" */
static void errored_to_errored(unsigned prevent)
{
    struct rsrc s = {.on_start = start_error};
    struct rsink k = {.on_start = sink_error};
    struct weir_readable *rs = rsrc_new(&s);
    struct weir_writable *ws = rsink_new(&k);
    struct done d = {0};

    assert_int_equal(ws_err(ws), E2);
    pipe_go(rs, ws, prevent, &d);
    assert_int_equal(d.calls, 1);
    assert_int_equal(d.rc, E1);
    assert_string_equal(s.ev.s, "");
    assert_int_equal(rs_err(rs), E1);
    weir_readable_destroy(rs);
    weir_writable_destroy(ws);
}

static void errored_to_errored_abort(void **state)
{
    (void)state;
    errored_to_errored(0);
}

/* F: "Piping from an errored readable stream to an errored writable
 * stream; preventAbort = true" */
static void errored_to_errored_prevent(void **state)
{
    (void)state;
    errored_to_errored(P_ABORT);
}

/* F: "Piping from an errored readable stream to a closing writable
 * stream" */
static void errored_to_closing(void **state)
{
    struct rsrc s = {.on_start = start_error};
    struct rsink k = {.start_rc = WEIR_PENDING};
    struct weir_readable *rs = rsrc_new(&s);
    struct weir_writable *ws = rsink_new(&k);
    struct weir_writer w;
    struct done d = {0}, cd = {0};

    (void)state;
    weir_writer_acquire(&w, ws);
    assert_int_equal(weir_writer_close(&w, done_cb, &cd), WEIR_PENDING);
    weir_writer_release(&w);
    pipe_go(rs, ws, 0, &d);
    weir_writable_start_done(ws, 0);
    assert_int_equal(d.rc, E1);
    assert_string_equal(k.ev.s, "abort:-1001");
    assert_int_equal(cd.rc, E1);
    assert_int_equal(ws_err(ws), E1);
    weir_readable_destroy(rs);
    weir_writable_destroy(ws);
}

/* F: "Piping from an errored readable stream to a closed writable
 * stream" */
static void errored_to_closed(void **state)
{
    struct rsrc s = {.on_start = start_error};
    struct rsink k = {0};
    struct weir_readable *rs = rsrc_new(&s);
    struct weir_writable *ws = rsink_new(&k);
    struct weir_writer w;
    struct done d = {0};

    (void)state;
    weir_writer_acquire(&w, ws);
    assert_int_equal(weir_writer_close(&w, NULL, NULL), 0);
    weir_writer_release(&w);
    pipe_go(rs, ws, 0, &d);
    assert_int_equal(d.rc, E1);
    assert_string_equal(k.ev.s, "close");
    assert_true(weir_writable_closed(ws));
    weir_readable_destroy(rs);
    weir_writable_destroy(ws);
}

/* F: "Piping from a closed readable stream to an erroring writable
 * stream" */
static void closed_to_erroring(void **state)
{
    struct rsrc s = {.on_start = start_close};
    struct rsink k = {.on_start = sink_error_pending};
    struct weir_readable *rs = rsrc_new(&s);
    struct weir_writable *ws = rsink_new(&k);
    struct done d = {0};

    (void)state;
    pipe_go(rs, ws, 0, &d);
    weir_writable_start_done(ws, 0);
    assert_int_equal(d.calls, 1);
    assert_int_equal(d.rc, E2);
    assert_string_equal(k.ev.s, "");
    assert_true(weir_readable_closed(rs));
    assert_int_equal(ws_err(ws), E2);
    weir_readable_destroy(rs);
    weir_writable_destroy(ws);
}

/* F: "Piping from a closed readable stream to an errored writable
 * stream" */
static void closed_to_errored(void **state)
{
    struct rsrc s = {.on_start = start_close};
    struct rsink k = {.on_start = sink_error};
    struct weir_readable *rs = rsrc_new(&s);
    struct weir_writable *ws = rsink_new(&k);
    struct done d = {0};

    (void)state;
    pipe_go(rs, ws, 0, &d);
    assert_int_equal(d.rc, E2);
    assert_true(weir_readable_closed(rs));
    weir_readable_destroy(rs);
    weir_writable_destroy(ws);
}

/* F: "Piping from a closed readable stream to a closed writable stream" */
static void closed_to_closed(void **state)
{
    struct rsrc s = {.on_start = start_close};
    struct rsink k = {0};
    struct weir_readable *rs = rsrc_new(&s);
    struct weir_writable *ws = rsink_new(&k);
    struct weir_writer w;
    struct done d = {0};

    (void)state;
    weir_writer_acquire(&w, ws);
    weir_writer_close(&w, NULL, NULL);
    weir_writer_release(&w);
    pipe_go(rs, ws, 0, &d);
    assert_int_equal(d.rc, 0);
    assert_string_equal(k.ev.s, "close");
    assert_string_equal(s.ev.s, "");
    weir_readable_destroy(rs);
    weir_writable_destroy(ws);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        WPT(errored_to_erroring_abort, "Piping from an errored readable "
                                       "stream to an erroring writable "
                                       "stream"),
        WPT(errored_to_errored_abort, "Piping from an errored readable stream "
                                      "to an errored writable stream"),
        WPT(errored_to_erroring_prevent,
            "Piping from an errored readable stream to an erroring writable "
            "stream; preventAbort = true"),
        WPT(errored_to_errored_prevent,
            "Piping from an errored readable stream to an errored writable "
            "stream; preventAbort = true"),
        WPT(errored_to_closing, "Piping from an errored readable stream to a "
                                "closing writable stream"),
        WPT(errored_to_closed, "Piping from an errored readable stream to a "
                               "closed writable stream"),
        WPT(closed_to_erroring, "Piping from a closed readable stream to an "
                                "erroring writable stream"),
        WPT(closed_to_errored, "Piping from a closed readable stream to an "
                               "errored writable stream"),
        WPT(closed_to_closed, "Piping from a closed readable stream to a "
                              "closed writable stream"),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
