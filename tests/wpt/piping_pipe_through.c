/*
 * WPT streams/piping/pipe-through.any.js, ported to weir's C API
 * (weir_pipe_through into a weir_transform; the duck-typed pairs of the
 * WPT are a transform's two sides here).
 */
#include "wpt.h"

#define F "piping/pipe-through.any.js"

static int sequential5(struct rsrc *s)
{
    static const char *const v[] = {"1", "2", "3", "4", "5"};

    if (s->n == 5)
        return weir_readable_close(s->rs);
    return weir_readable_enqueue(s->rs, S(v[s->n++]));
}

/* F: "Piping through a duck-typed pass-through transform stream should
 * work" */
static void pass_through(void **state)
{
    struct rsrc s = {.on_pull = sequential5};
    struct weir_readable *rs = rsrc_new(&s);
    struct weir_transform *tf;
    struct weir_reader r;
    struct done d = {0};
    char all[32] = "", one[8];
    int rc;

    (void)state;
    assert_int_equal(weir_transform_create(&tf, NULL, NULL, NULL), 0);
    rc = weir_pipe_through(rs, tf, NULL, done_cb, &d);
    assert_int_equal(rc, WEIR_PENDING);
    weir_reader_acquire(&r, weir_transform_readable(tf));
    while ((rc = read_now(&r, one, sizeof(one))) == 0)
        strcat(all, one);
    assert_int_equal(rc, WEIR_DONE);
    assert_string_equal(all, "12345");
    assert_int_equal(d.calls, 1);
    assert_int_equal(d.rc, 0);
    weir_reader_release(&r);
    weir_transform_destroy(tf);
    weir_readable_destroy(rs);
}

/* F: "Piping through a transform errored on the writable end does not
 * cause an unhandled promise rejection" (the pipe reports the error and
 * cancels the source; nothing is left dangling) */
static int start_errors(struct rtf *t)
{
    weir_writable_error(weir_transform_writable(t->tf), E1);
    return 0;
}

static void errored_writable_end(void **state)
{
    struct rsrc s = {.on_pull = sequential5};
    struct weir_readable *rs = rsrc_new(&s);
    struct rtf t = {.on_start = start_errors};
    struct weir_transform *tf = rtf_make(&t, 1, 0);
    struct done d = {0};
    int rc;

    (void)state;
    rc = weir_pipe_through(rs, tf, NULL, done_cb, &d);
    if (rc != WEIR_PENDING)
        done_cb(&d, rc);
    assert_int_equal(d.calls, 1);
    assert_int_equal(d.rc, E1);
    assert_int_equal(s.cancel_reason, E1);
    assert_false(weir_readable_locked(rs));
    weir_transform_destroy(tf);
    weir_readable_destroy(rs);
}

/* F: "pipeThrough should work with no options argument" */
static void no_options(void **state)
{
    struct weir_readable *rs;
    struct weir_transform *tf;
    struct done d = {0};

    (void)state;
    assert_int_equal(weir_readable_create(&rs, NULL, NULL, NULL), 0);
    assert_int_equal(weir_transform_create(&tf, NULL, NULL, NULL), 0);
    assert_int_equal(weir_pipe_through(rs, tf, NULL, done_cb, &d),
                     WEIR_PENDING);
    assert_true(weir_readable_locked(rs));
    weir_readable_close(rs);
    assert_int_equal(d.rc, 0);
    weir_transform_destroy(tf);
    weir_readable_destroy(rs);
}

/* F: "pipeThrough should throw if |this| is locked" */
static void this_locked(void **state)
{
    struct weir_readable *rs;
    struct weir_transform *tf;
    struct weir_reader r;

    (void)state;
    assert_int_equal(weir_readable_create(&rs, NULL, NULL, NULL), 0);
    assert_int_equal(weir_transform_create(&tf, NULL, NULL, NULL), 0);
    weir_reader_acquire(&r, rs);
    assert_int_equal(weir_pipe_through(rs, tf, NULL, NULL, NULL), -EBUSY);
    assert_false(weir_writable_locked(weir_transform_writable(tf)));
    weir_reader_release(&r);
    weir_transform_destroy(tf);
    weir_readable_destroy(rs);
}

/* F: "pipeThrough should throw if writable is locked" */
static void writable_locked(void **state)
{
    struct weir_readable *rs;
    struct weir_transform *tf;
    struct weir_writer w;

    (void)state;
    assert_int_equal(weir_readable_create(&rs, NULL, NULL, NULL), 0);
    assert_int_equal(weir_transform_create(&tf, NULL, NULL, NULL), 0);
    weir_writer_acquire(&w, weir_transform_writable(tf));
    assert_int_equal(weir_pipe_through(rs, tf, NULL, NULL, NULL), -EBUSY);
    assert_false(weir_readable_locked(rs));
    weir_writer_release(&w);
    weir_transform_destroy(tf);
    weir_readable_destroy(rs);
}

/* F: "pipeThrough should not care if readable is locked" */
static void readable_locked(void **state)
{
    struct weir_readable *rs;
    struct weir_transform *tf;
    struct weir_reader r;

    (void)state;
    assert_int_equal(weir_readable_create(&rs, NULL, NULL, NULL), 0);
    assert_int_equal(weir_transform_create(&tf, NULL, NULL, NULL), 0);
    weir_reader_acquire(&r, weir_transform_readable(tf));
    assert_int_equal(weir_pipe_through(rs, tf, NULL, NULL, NULL), WEIR_PENDING);
    assert_true(weir_readable_locked(rs));
    weir_readable_close(rs);
    assert_false(weir_readable_locked(rs));
    weir_reader_release(&r);
    weir_transform_destroy(tf);
    weir_readable_destroy(rs);
}

/* F: "preventCancel should work": a transform whose writable side errors
 * at start, piped into with preventCancel; the source is not cancelled. */
static void prevent_cancel_works(void **state)
{
    struct rsrc s = {0};
    struct weir_readable *rs = rsrc_new(&s);
    struct rtf t = {.on_start = start_errors};
    struct weir_transform *tf = rtf_make(&t, 1, 0);
    struct weir_pipe_options o = {.prevent_cancel = true};
    int rc;

    (void)state;
    rc = weir_pipe_through(rs, tf, &o, NULL, NULL);
    assert_int_equal(rc, E1);
    assert_string_equal(s.ev.s, "pull");
    assert_false(weir_readable_locked(rs));
    weir_transform_destroy(tf);
    weir_readable_destroy(rs);
}

/* F: "preventClose should work": a closed source, piped with
 * preventClose; the transform's writable side is not closed (no flush). */
static int start_close_src(struct rsrc *s)
{
    return weir_readable_close(s->rs);
}

static void prevent_close_works(void **state)
{
    struct rsrc s = {.on_start = start_close_src};
    struct weir_readable *rs = rsrc_new(&s);
    struct rtf t = {0};
    struct weir_transform *tf = rtf_make(&t, 1, 0);
    struct weir_pipe_options o = {.prevent_close = true};

    (void)state;
    assert_int_equal(weir_pipe_through(rs, tf, &o, NULL, NULL), 0);
    assert_string_equal(t.ev.s, "");
    assert_false(weir_writable_closed(weir_transform_writable(tf)));
    weir_transform_destroy(tf);
    weir_readable_destroy(rs);
}

/* F: "preventAbort should work": an errored source, piped with
 * preventAbort; the transform's writable side is not aborted (its
 * transformer is not cancelled). */
static void prevent_abort_works(void **state)
{
    struct rsrc s = {.start_rc = E1};
    struct weir_readable *rs = rsrc_new(&s);
    struct rtf t = {0};
    struct weir_transform *tf = rtf_make(&t, 1, 0);
    struct weir_pipe_options o = {.prevent_abort = true};

    (void)state;
    assert_int_equal(weir_pipe_through(rs, tf, &o, NULL, NULL), E1);
    assert_string_equal(t.ev.s, "");
    assert_false(weir_writable_errored(weir_transform_writable(tf), NULL));
    weir_transform_destroy(tf);
    weir_readable_destroy(rs);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        WPT(pass_through, "Piping through a duck-typed pass-through "
                          "transform stream should work"),
        WPT(errored_writable_end,
            "Piping through a transform errored on the writable end does "
            "not cause an unhandled promise rejection"),
        WPT(no_options, "pipeThrough should work with no options argument"),
        WPT(this_locked, "pipeThrough should throw if |this| is locked"),
        WPT(writable_locked, "pipeThrough should throw if writable is locked"),
        WPT(readable_locked, "pipeThrough should not care if readable is "
                             "locked"),
        WPT(prevent_cancel_works, "preventCancel should work"),
        WPT(prevent_close_works, "preventClose should work"),
        WPT(prevent_abort_works, "preventAbort should work"),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
