/*
 * WPT streams/piping/error-propagation-backward.any.js, ported to weir's
 * C API: a destination error cancels the source unless prevent_cancel.
 *
 * The WPT loops over falsy and truthy option values collapse to false and
 * true here (a bool option); one case of each is kept (LEFT-OUT.md).
 */
#include "wpt.h"

static const char *const abc[] = {"a", "b", "c", NULL};
static const char *const hello[] = {"Hello", NULL};

static void finish(struct weir_readable *rs, struct weir_writable *ws)
{
    assert_false(weir_readable_locked(rs));
    assert_false(weir_writable_locked(ws));
    weir_readable_destroy(rs);
    weir_writable_destroy(ws);
}

/* error-propagation-backward.any.js: "Errors must be propagated backward:
 * starts errored; preventCancel omitted; fulfilled cancel promise" */
static void starts_errored(void **state)
{
    struct rsrc s = {0};
    struct rsink k = {.start_rc = E1};
    struct weir_readable *rs = rsrc_new(&s);
    struct weir_writable *ws = rsink_new(&k);
    struct done d = {0};

    (void)state;
    pipe_go(rs, ws, 0, &d);
    assert_int_equal(d.calls, 1);
    assert_int_equal(d.rc, E1);
    assert_string_equal(s.nopull.s, "cancel:-1001");
    assert_string_equal(k.ev.s, "");
    finish(rs, ws);
}

/* The destination errored before the pipe by a failed write. */
static void before_by_write(bool cancel_fails, unsigned prevent)
{
    struct rsrc s = {.cancel_rc = cancel_fails ? E2 : 0};
    struct rsink k = {.write_rc = E1};
    struct weir_readable *rs = rsrc_new(&s);
    struct weir_writable *ws = rsink_new(&k);
    struct weir_writer w;
    struct done d = {0};
    bool cancels = !(prevent & P_CANCEL);

    assert_int_equal(weir_writer_acquire(&w, ws), 0);
    assert_int_equal(weir_writer_write(&w, S("Hello"), done_cb, NULL), E1);
    assert_int_equal(ws_err(ws), E1);
    weir_writer_release(&w);
    pipe_go(rs, ws, prevent, &d);
    assert_int_equal(d.calls, 1);
    assert_int_equal(d.rc, cancels && cancel_fails ? E2 : E1);
    assert_string_equal(s.nopull.s, cancels ? "cancel:-1001" : "");
    assert_string_equal(k.ev.s, "write:Hello");
    finish(rs, ws);
}

/* "... becomes errored before piping due to write; preventCancel omitted;
 * fulfilled cancel promise" */
static void before_write(void **state)
{
    (void)state;
    before_by_write(false, 0);
}

/* "... becomes errored before piping due to write; preventCancel omitted;
 * rejected cancel promise" */
static void before_write_rejected(void **state)
{
    (void)state;
    before_by_write(true, 0);
}

/* "... becomes errored before piping due to write; preventCancel = false
 * (falsy); fulfilled cancel promise" */
static void before_write_falsy(void **state)
{
    (void)state;
    before_by_write(false, 0);
}

/* "... becomes errored before piping due to write; preventCancel = true
 * (truthy)" */
static void before_write_truthy(void **state)
{
    (void)state;
    before_by_write(false, P_CANCEL);
}

/* "... becomes errored before piping due to write, preventCancel = true;
 * preventAbort = true" */
static void before_write_prevent2(void **state)
{
    (void)state;
    before_by_write(false, P_CANCEL | P_ABORT);
}

/* "... becomes errored before piping due to write; preventCancel = true,
 * preventAbort = true, preventClose = true" */
static void before_write_prevent3(void **state)
{
    (void)state;
    before_by_write(false, P_CANCEL | P_ABORT | P_CLOSE);
}

/* The destination errors during the pipe: its first write fails. */
static void during_by_write(bool cancel_fails, unsigned prevent)
{
    struct rsrc s = {.on_start = start_enqueue,
                     .user = (void *)hello,
                     .cancel_rc = cancel_fails ? E2 : 0};
    struct rsink k = {.write_rc = E1};
    struct weir_readable *rs = rsrc_new(&s);
    struct weir_writable *ws = rsink_new(&k);
    struct done d = {0};
    bool cancels = !(prevent & P_CANCEL);

    pipe_go(rs, ws, prevent, &d);
    assert_int_equal(d.calls, 1);
    assert_int_equal(d.rc, cancels && cancel_fails ? E2 : E1);
    assert_string_equal(s.nopull.s, cancels ? "cancel:-1001" : "");
    assert_string_equal(k.ev.s, "write:Hello");
    finish(rs, ws);
}

/* "... becomes errored during piping due to write; preventCancel omitted;
 * fulfilled cancel promise" */
static void during_write(void **state)
{
    (void)state;
    during_by_write(false, 0);
}

/* "... becomes errored during piping due to write; preventCancel omitted;
 * rejected cancel promise" */
static void during_write_rejected(void **state)
{
    (void)state;
    during_by_write(true, 0);
}

/* "... becomes errored during piping due to write; preventCancel = true" */
static void during_write_prevent(void **state)
{
    (void)state;
    during_by_write(false, P_CANCEL);
}

/* The second write fails later (the WPT's delay before the rejection). */
static int write_second_pending(struct rsink *k, struct weir_chunk c)
{
    (void)c;
    return k->writes >= 2 ? WEIR_PENDING : 0;
}

static void during_async(bool cancel_fails, unsigned prevent)
{
    struct rsrc s = {.on_start = start_enqueue,
                     .user = (void *)abc,
                     .cancel_rc = cancel_fails ? E2 : 0};
    struct rsink k = {.on_write = write_second_pending};
    struct weir_readable *rs = rsrc_make(&s, 3, false);
    struct weir_writable *ws = rsink_new(&k);
    struct done d = {0};
    bool cancels = !(prevent & P_CANCEL);

    pipe_go(rs, ws, prevent, &d);
    assert_int_equal(d.calls, 0);
    assert_string_equal(k.ev.s, "write:a write:b");
    weir_writable_write_done(ws, E1);
    assert_int_equal(d.calls, 1);
    assert_int_equal(d.rc, cancels && cancel_fails ? E2 : E1);
    assert_string_equal(s.nopull.s, cancels ? "cancel:-1001" : "");
    assert_string_equal(k.ev.s, "write:a write:b");
    finish(rs, ws);
}

/* "... becomes errored during piping due to write, but async;
 * preventCancel = false; fulfilled cancel promise" */
static void async_write(void **state)
{
    (void)state;
    during_async(false, 0);
}

/* "... becomes errored during piping due to write, but async;
 * preventCancel = false; rejected cancel promise" */
static void async_write_rejected(void **state)
{
    (void)state;
    during_async(true, 0);
}

/* "... becomes errored during piping due to write, but async;
 * preventCancel = true" */
static void async_write_prevent(void **state)
{
    (void)state;
    during_async(false, P_CANCEL);
}

/* The destination errors through its controller after the pipe started,
 * while the pipe waits on an idle source (or, with hwm 0, on the
 * destination). */
static void after_piping(size_t hwm, bool cancel_fails, unsigned prevent)
{
    struct rsrc s = {.cancel_rc = cancel_fails ? E2 : 0};
    struct rsink k = {0};
    struct weir_readable *rs = rsrc_new(&s);
    struct weir_writable *ws = rsink_make(&k, hwm);
    struct done d = {0};
    bool cancels = !(prevent & P_CANCEL);

    pipe_go(rs, ws, prevent, &d);
    assert_int_equal(d.calls, 0);
    weir_writable_error(ws, E1);
    assert_int_equal(d.calls, 1);
    assert_int_equal(d.rc, cancels && cancel_fails ? E2 : E1);
    assert_string_equal(s.nopull.s, cancels ? "cancel:-1001" : "");
    assert_string_equal(k.ev.s, "");
    finish(rs, ws);
}

/* "... becomes errored after piping; preventCancel omitted; fulfilled
 * cancel promise" */
static void after(void **state)
{
    (void)state;
    after_piping(1, false, 0);
}

/* "... becomes errored after piping; preventCancel omitted; rejected cancel
 * promise" */
static void after_rejected(void **state)
{
    (void)state;
    after_piping(1, true, 0);
}

/* "... becomes errored after piping; preventCancel = true" */
static void after_prevent(void **state)
{
    (void)state;
    after_piping(1, false, P_CANCEL);
}

/* "... becomes errored after piping; dest never desires chunks;
 * preventCancel = false; fulfilled cancel promise" */
static void after_hwm0(void **state)
{
    (void)state;
    after_piping(0, false, 0);
}

/* "... becomes errored after piping; dest never desires chunks;
 * preventCancel = false; rejected cancel promise" */
static void after_hwm0_rejected(void **state)
{
    (void)state;
    after_piping(0, true, 0);
}

/* "... becomes errored after piping; dest never desires chunks;
 * preventCancel = true" */
static void after_hwm0_prevent(void **state)
{
    (void)state;
    after_piping(0, false, P_CANCEL);
}

/* The last write fails after the source closed. */
static int write_c_fails(struct rsink *k, struct weir_chunk c)
{
    (void)k;
    return chunk_is(c, "c") ? E1 : 0;
}

static void last_write(unsigned prevent)
{
    struct rsrc s = {.on_start = start_enqueue, .user = (void *)abc, .n = 1};
    struct rsink k = {.on_write = write_c_fails};
    struct weir_readable *rs = rsrc_make(&s, 3, false);
    struct weir_writable *ws = rsink_new(&k);
    struct done d = {0};

    pipe_go(rs, ws, prevent, &d);
    assert_int_equal(d.calls, 1);
    assert_int_equal(d.rc, E1);
    assert_string_equal(s.nopull.s, "");
    assert_string_equal(k.ev.s, "write:a write:b write:c");
    assert_int_equal(ws_err(ws), E1);
    finish(rs, ws);
}

/* "... becomes errored after piping due to last write; source is closed;
 * preventCancel omitted (but cancel is never called)" */
static void last_write_closed(void **state)
{
    (void)state;
    last_write(0);
}

/* "... becomes errored after piping due to last write; source is closed;
 * preventCancel = true" */
static void last_write_closed_prevent(void **state)
{
    (void)state;
    last_write(P_CANCEL);
}

/* The same with the last write failing later: the pipe is draining its
 * writes before closing when the failure comes, and must report it
 * rather than close the sink. */
static int write_c_pending(struct rsink *k, struct weir_chunk c)
{
    (void)k;
    return chunk_is(c, "c") ? WEIR_PENDING : 0;
}

static void last_write_later(void **state)
{
    struct rsrc s = {.on_start = start_enqueue, .user = (void *)abc, .n = 1};
    struct rsink k = {.on_write = write_c_pending};
    struct weir_readable *rs = rsrc_make(&s, 3, false);
    struct weir_writable *ws = rsink_new(&k);
    struct done d = {0};

    (void)state;
    pipe_go(rs, ws, 0, &d);
    assert_int_equal(d.calls, 0);
    weir_writable_write_done(ws, E1);
    assert_int_equal(d.calls, 1);
    assert_int_equal(d.rc, E1);
    assert_string_equal(s.nopull.s, "");
    assert_string_equal(k.ev.s, "write:a write:b write:c");
    assert_int_equal(ws_err(ws), E1);
    finish(rs, ws);
}

/* The destination was aborted before the pipe. */
static void before_abort(bool cancel_fails, unsigned prevent)
{
    struct rsrc s = {.cancel_rc = cancel_fails ? E2 : 0};
    struct rsink k = {0};
    struct weir_readable *rs = rsrc_new(&s);
    struct weir_writable *ws = rsink_new(&k);
    struct weir_writer w;
    struct done d = {0};
    bool cancels = !(prevent & P_CANCEL);

    assert_int_equal(weir_writer_acquire(&w, ws), 0);
    assert_int_equal(weir_writer_abort(&w, E1, NULL, NULL), 0);
    weir_writer_release(&w);
    pipe_go(rs, ws, prevent, &d);
    assert_int_equal(d.calls, 1);
    assert_int_equal(d.rc, cancels && cancel_fails ? E2 : E1);
    assert_string_equal(s.nopull.s, cancels ? "cancel:-1001" : "");
    assert_string_equal(k.ev.s, "abort:-1001");
    assert_int_equal(ws_err(ws), E1);
    finish(rs, ws);
}

/* "... becomes errored before piping via abort; preventCancel omitted;
 * fulfilled cancel promise" */
static void abort_before(void **state)
{
    (void)state;
    before_abort(false, 0);
}

/* "... becomes errored before piping via abort; preventCancel omitted;
 * rejected cancel promise" */
static void abort_before_rejected(void **state)
{
    (void)state;
    before_abort(true, 0);
}

/* "... becomes errored before piping via abort; preventCancel = true" */
static void abort_before_prevent(void **state)
{
    (void)state;
    before_abort(false, P_CANCEL);
}

/* "Errors must be propagated backward: erroring via the controller errors
 * once pending write completes" */
static void controller_after_write(void **state)
{
    struct rsrc s = {0};
    struct rsink k = {.write_rc = WEIR_PENDING};
    struct weir_readable *rs = rsrc_new(&s);
    struct weir_writable *ws = rsink_new(&k);
    struct done d = {0};

    (void)state;
    pipe_go(rs, ws, 0, &d);
    weir_readable_enqueue(rs, S("a"));
    assert_string_equal(k.ev.s, "write:a");
    weir_writable_error(ws, E1);
    /* Erroring: settles when the write at the sink does. */
    assert_int_equal(d.calls, 0);
    weir_writable_write_done(ws, 0);
    assert_int_equal(d.calls, 1);
    assert_int_equal(d.rc, E1);
    assert_string_equal(s.nopull.s, "cancel:-1001");
    assert_string_equal(k.ev.s, "write:a");
    finish(rs, ws);
}

/* "Errors must be propagated backward: becomes errored immediately before
 * source receives a chunk; preventCancel = true": the pipe waits on the
 * source for its second chunk when the destination errors; a chunk
 * enqueued after that is not the pipe's, and stays for the next reader. */
static void before_source_chunk(void **state)
{
    struct rsrc s = {0};
    struct rsink k = {.write_rc = WEIR_PENDING};
    struct weir_readable *rs = rsrc_make(&s, 0, false);
    struct weir_writable *ws = rsink_make(&k, WEIR_HWM_UNLIMITED);
    struct weir_reader r;
    struct done d = {0};

    (void)state;
    weir_readable_enqueue(rs, S("a"));
    assert_string_equal(s.ev.s, "");
    pipe_go(rs, ws, P_CANCEL, &d);
    /* The pipe wrote the first chunk and, the destination wanting more,
     * asked the source for the next one. */
    assert_string_equal(k.ev.s, "write:a");
    assert_string_equal(s.ev.s, "pull");
    weir_writable_error(ws, E1);
    weir_readable_enqueue(rs, S("b"));
    weir_writable_write_done(ws, 0);
    assert_int_equal(d.calls, 1);
    assert_int_equal(d.rc, E1);
    assert_string_equal(s.ev.s, "pull");
    assert_string_equal(k.ev.s, "write:a");
    weir_readable_close(rs);
    assert_int_equal(weir_reader_acquire(&r, rs), 0);
    assert_read(&r, "b");
    weir_reader_release(&r);
    finish(rs, ws);
}

#define T(fn, rest) WPT(fn, "Errors must be propagated backward: " rest)

int main(void)
{
    const struct CMUnitTest tests[] = {
        T(starts_errored, "starts errored; preventCancel omitted; fulfilled "
                          "cancel promise"),
        T(before_write, "becomes errored before piping due to write; "
                        "preventCancel omitted; fulfilled cancel promise"),
        T(before_write_rejected,
          "becomes errored before piping due to write; preventCancel "
          "omitted; rejected cancel promise"),
        T(before_write_falsy,
          "becomes errored before piping due to write; preventCancel = "
          "false (falsy); fulfilled cancel promise"),
        T(before_write_truthy, "becomes errored before piping due to write; "
                               "preventCancel = true (truthy)"),
        T(before_write_prevent2, "becomes errored before piping due to "
                                 "write, preventCancel = true; preventAbort "
                                 "= true"),
        T(before_write_prevent3,
          "becomes errored before piping due to write; preventCancel = "
          "true, preventAbort = true, preventClose = true"),
        T(during_write, "becomes errored during piping due to write; "
                        "preventCancel omitted; fulfilled cancel promise"),
        T(during_write_rejected,
          "becomes errored during piping due to write; preventCancel "
          "omitted; rejected cancel promise"),
        T(during_write_prevent, "becomes errored during piping due to "
                                "write; preventCancel = true"),
        T(async_write, "becomes errored during piping due to write, but "
                       "async; preventCancel = false; fulfilled cancel "
                       "promise"),
        T(async_write_rejected,
          "becomes errored during piping due to write, but async; "
          "preventCancel = false; rejected cancel promise"),
        T(async_write_prevent, "becomes errored during piping due to write, "
                               "but async; preventCancel = true"),
        T(after, "becomes errored after piping; preventCancel omitted; "
                 "fulfilled cancel promise"),
        T(after_rejected, "becomes errored after piping; preventCancel "
                          "omitted; rejected cancel promise"),
        T(after_prevent, "becomes errored after piping; preventCancel = "
                         "true"),
        T(last_write_closed,
          "becomes errored after piping due to last write; source is "
          "closed; preventCancel omitted (but cancel is never called)"),
        T(last_write_later,
          "becomes errored after piping due to last write; source is "
          "closed; preventCancel omitted (but cancel is never called) (the "
          "write fails later)"),
        T(last_write_closed_prevent,
          "becomes errored after piping due to last write; source is "
          "closed; preventCancel = true"),
        T(after_hwm0, "becomes errored after piping; dest never desires "
                      "chunks; preventCancel = false; fulfilled cancel "
                      "promise"),
        T(after_hwm0_rejected,
          "becomes errored after piping; dest never desires chunks; "
          "preventCancel = false; rejected cancel promise"),
        T(after_hwm0_prevent, "becomes errored after piping; dest never "
                              "desires chunks; preventCancel = true"),
        T(abort_before, "becomes errored before piping via abort; "
                        "preventCancel omitted; fulfilled cancel promise"),
        T(abort_before_rejected,
          "becomes errored before piping via abort; preventCancel omitted; "
          "rejected cancel promise"),
        T(abort_before_prevent, "becomes errored before piping via abort; "
                                "preventCancel = true"),
        T(controller_after_write,
          "erroring via the controller errors once pending write completes"),
        T(before_source_chunk, "becomes errored immediately before source "
                               "receives a chunk; preventCancel = true"),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
