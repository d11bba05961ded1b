/*
 * WPT streams/readable-streams/async-iterator.any.js, ported to weir's C
 * API: the loop form (weir_iter_run, each per chunk) stands for
 * for-await, and weir_iter_open/next/return for the iterator driven by
 * hand.
 */
#include "wpt.h"

#define F "readable-streams/async-iterator.any.js"

struct collect {
    char all[64];
    int calls, stop_at;
};

static int collect_each(void *ctx, struct weir_chunk c)
{
    struct collect *k = ctx;

    k->calls++;
    strncat(k->all, (const char *)c.data, c.len);
    return k->stop_at && k->calls == k->stop_at;
}

/* A loop's each and done on one context. */
struct loop_rec {
    struct collect k;
    struct done d;
};

static int loop_rec_each(void *ctx, struct weir_chunk c)
{
    return collect_each(&((struct loop_rec *)ctx)->k, c);
}

static void loop_rec_done(void *ctx, int rc)
{
    done_cb(&((struct loop_rec *)ctx)->d, rc);
}

static const char *const one23[] = {"1", "2", "3", NULL};

/* F: "Async-iterating a push source" */
static void push_source(void **state)
{
    struct rsrc s = {.on_start = start_enqueue, .user = (void *)one23, .n = 1};
    struct weir_readable *rs = rsrc_make(&s, 3, false);
    struct weir_iter it;
    struct collect k = {0};

    (void)state;
    assert_int_equal(weir_iter_run(&it, rs, collect_each, NULL, &k), 0);
    assert_string_equal(k.all, "123");
    assert_false(weir_readable_locked(rs));
    weir_readable_destroy(rs);
}

/* F: "Async-iterating a pull source" */
static int pull_123(struct rsrc *s)
{
    static const char *const v[] = {"1", "2", "3"};

    weir_readable_enqueue(s->rs, S(v[s->n]));
    if (++s->n >= 3)
        weir_readable_close(s->rs);
    return 0;
}

static void pull_source(void **state)
{
    struct rsrc s = {.on_pull = pull_123};
    struct weir_readable *rs = rsrc_new(&s);
    struct weir_iter it;
    struct collect k = {0};

    (void)state;
    weir_iter_open(&it, rs, 0);
    assert_int_equal(weir_iter_loop(&it, collect_each, done_cb, &k), 0);
    assert_string_equal(k.all, "123");
    weir_readable_destroy(rs);
}

/* F: "Async-iterating an errored stream throws" */
static void errored_throws(void **state)
{
    struct rsrc s = {.start_rc = E1};
    struct weir_readable *rs = rsrc_new(&s);
    struct weir_iter it;
    struct collect k = {0};

    (void)state;
    weir_iter_open(&it, rs, 0);
    assert_int_equal(weir_iter_loop(&it, collect_each, done_cb, &k), E1);
    assert_int_equal(k.calls, 0);
    weir_readable_destroy(rs);
}

/* F: "Async-iterating a closed stream never executes the loop body, but
 * works fine" */
static int start_close(struct rsrc *s)
{
    return weir_readable_close(s->rs);
}

static void closed_never_runs(void **state)
{
    struct rsrc s = {.on_start = start_close};
    struct weir_readable *rs = rsrc_new(&s);
    struct weir_iter it;
    struct collect k = {0};

    (void)state;
    weir_iter_open(&it, rs, 0);
    assert_int_equal(weir_iter_loop(&it, collect_each, done_cb, &k), 0);
    assert_int_equal(k.calls, 0);
    weir_readable_destroy(rs);
}

/* F: "Async-iterating an empty but not closed/errored stream never
 * executes the loop body and stalls the async function" */
static void empty_stalls(void **state)
{
    struct rsrc s = {0};
    struct weir_readable *rs = rsrc_new(&s);
    struct weir_iter it;
    struct loop_rec l = {0};

    (void)state;
    weir_iter_open(&it, rs, 0);
    assert_int_equal(weir_iter_loop(&it, loop_rec_each, loop_rec_done, &l),
                     WEIR_PENDING);
    assert_int_equal(l.k.calls + l.d.calls, 0);
    /* Ending it: a close finishes the loop. */
    weir_readable_close(rs);
    assert_int_equal(l.d.calls, 1);
    assert_int_equal(l.d.rc, 0);
    weir_readable_destroy(rs);
}

/* F: "Cancellation behavior when throwing inside loop body; preventCancel
 * = false" and the five cases beside it (throwing, breaking, returning;
 * with and without preventCancel). In C all three leave the loop the same
 * way: each returns non-zero. */
static const char *const zero[] = {"0", NULL};

static void stop_inside_loop(bool prevent)
{
    struct rsrc s = {.on_start = start_enqueue, .user = (void *)zero};
    struct weir_readable *rs = rsrc_new(&s);
    struct weir_iter it;
    struct collect k = {.stop_at = 1};

    weir_iter_open(&it, rs, prevent ? WEIR_ITER_PREVENT_CANCEL : 0);
    assert_int_equal(weir_iter_loop(&it, collect_each, done_cb, &k), 0);
    assert_string_equal(s.ev.s, prevent ? "pull" : "pull cancel:-125");
    assert_false(weir_readable_locked(rs));
    weir_readable_destroy(rs);
}

static void stop_cancels(void **state)
{
    (void)state;
    stop_inside_loop(false);
}

static void stop_prevent_cancel(void **state)
{
    (void)state;
    stop_inside_loop(true);
}

/* F: "Cancellation behavior when manually calling return(); preventCancel
 * = false", "... = true" */
static void manual_return(bool prevent)
{
    struct rsrc s = {.on_start = start_enqueue, .user = (void *)zero};
    struct weir_readable *rs = rsrc_new(&s);
    struct weir_iter it;

    weir_iter_open(&it, rs, prevent ? WEIR_ITER_PREVENT_CANCEL : 0);
    assert_int_equal(weir_iter_return(&it, E1), 0);
    assert_string_equal(s.ev.s, prevent ? "" : "cancel:-1001");
    assert_false(weir_readable_locked(rs));
    weir_readable_destroy(rs);
}

static void return_cancels(void **state)
{
    (void)state;
    manual_return(false);
}

static void return_prevent_cancel(void **state)
{
    (void)state;
    manual_return(true);
}

/* F: "return(); return()" and "return(); return() [no awaiting]": the
 * second return fulfills as well. */
static void return_twice(void **state)
{
    struct weir_readable *rs;
    struct weir_iter it;

    (void)state;
    assert_int_equal(weir_readable_create(&rs, NULL, NULL, NULL), 0);
    weir_iter_open(&it, rs, 0);
    assert_int_equal(weir_iter_return(&it, E1), 0);
    assert_int_equal(weir_iter_return(&it, E2), 0);
    weir_readable_destroy(rs);
}

/* F: "next()'s fulfillment value has the right shape" (a chunk, then
 * WEIR_DONE, after which the stream is released) */
static void next_shape(void **state)
{
    static const char *const z[] = {"0", NULL};
    struct rsrc s = {.on_start = start_enqueue, .user = (void *)z, .n = 1};
    struct weir_readable *rs = rsrc_new(&s);
    struct weir_iter it;
    struct weir_chunk c;

    (void)state;
    weir_iter_open(&it, rs, 0);
    assert_int_equal(weir_iter_next(&it, &c, read_cb, NULL), 0);
    assert_true(chunk_is(c, "0"));
    assert_int_equal(weir_iter_next(&it, &c, read_cb, NULL), WEIR_DONE);
    assert_false(weir_readable_locked(rs));
    assert_int_equal(weir_iter_next(&it, &c, read_cb, NULL), WEIR_DONE);
    weir_readable_destroy(rs);
}

/* F: "values() throws if there's already a lock" */
static void iterator_needs_unlocked(void **state)
{
    struct weir_readable *rs;
    struct weir_iter it, it2;

    (void)state;
    assert_int_equal(weir_readable_create(&rs, NULL, NULL, NULL), 0);
    assert_int_equal(weir_iter_open(&it, rs, 0), 0);
    assert_int_equal(weir_iter_open(&it2, rs, 0), -EBUSY);
    weir_iter_return(&it, E1);
    weir_readable_destroy(rs);
}

/* F: "Async-iterating a push source with undefined values" (empty
 * chunks: data, not the end) */
static const char *const empties[] = {"", "", "", NULL};

static void push_source_empty(void **state)
{
    struct rsrc s = {
        .on_start = start_enqueue, .user = (void *)empties, .n = 1};
    struct weir_readable *rs = rsrc_make(&s, 3, false);
    struct weir_iter it;
    struct collect k = {0};

    (void)state;
    assert_int_equal(weir_iter_run(&it, rs, collect_each, NULL, &k), 0);
    assert_int_equal(k.calls, 3);
    weir_readable_destroy(rs);
}

/* F: "Async-iterating a pull source with undefined values" */
static int pull_empty_3(struct rsrc *s)
{
    weir_readable_enqueue(s->rs, S(""));
    if (++s->n >= 3)
        weir_readable_close(s->rs);
    return 0;
}

static void pull_source_empty(void **state)
{
    struct rsrc s = {.on_pull = pull_empty_3};
    struct weir_readable *rs = rsrc_new(&s);
    struct weir_iter it;
    struct collect k = {0};

    (void)state;
    assert_int_equal(weir_iter_run(&it, rs, collect_each, NULL, &k), 0);
    assert_int_equal(k.calls, 3);
    weir_readable_destroy(rs);
}

/* F: "Async-iterating a pull source manually" (hwm 0: one pull per
 * next) */
static void pull_source_manually(void **state)
{
    struct rsrc s = {.on_pull = pull_123};
    struct weir_readable *rs = rsrc_make(&s, 0, false);
    struct weir_iter it;
    struct weir_chunk c;

    (void)state;
    assert_int_equal(weir_iter_open(&it, rs, 0), 0);
    assert_string_equal(s.ev.s, "");
    assert_int_equal(weir_iter_next(&it, &c, read_cb, NULL), 0);
    assert_true(chunk_is(c, "1"));
    assert_string_equal(s.ev.s, "pull");
    assert_int_equal(weir_iter_next(&it, &c, read_cb, NULL), 0);
    assert_true(chunk_is(c, "2"));
    assert_string_equal(s.ev.s, "pull pull");
    assert_int_equal(weir_iter_next(&it, &c, read_cb, NULL), 0);
    assert_true(chunk_is(c, "3"));
    assert_string_equal(s.ev.s, "pull pull pull");
    assert_int_equal(weir_iter_next(&it, &c, read_cb, NULL), WEIR_DONE);
    assert_string_equal(s.ev.s, "pull pull pull");
    weir_readable_destroy(rs);
}

/* F: "Async-iterating a partially consumed stream" */
static void partially_consumed(void **state)
{
    struct rsrc s = {.on_start = start_enqueue, .user = (void *)one23, .n = 1};
    struct weir_readable *rs = rsrc_make(&s, 3, false);
    struct weir_reader r;
    struct weir_iter it;
    struct collect k = {0};

    (void)state;
    weir_reader_acquire(&r, rs);
    assert_read(&r, "1");
    weir_reader_release(&r);
    assert_int_equal(weir_iter_run(&it, rs, collect_each, NULL, &k), 0);
    assert_string_equal(k.all, "23");
    weir_readable_destroy(rs);
}

/* The source of the next()/return() cases: the first pull enqueues "0",
 * the next ones error the stream with E1. */
static int pull_0_then_error(struct rsrc *s)
{
    if (s->pulls == 1)
        return weir_readable_enqueue(s->rs, S("0"));
    weir_readable_error(s->rs, E1);
    return 0;
}

/* F: "next() rejects if the stream errors" */
static void next_rejects_on_error(void **state)
{
    struct rsrc s = {.on_pull = pull_0_then_error};
    struct weir_readable *rs = rsrc_new(&s);
    struct weir_iter it;
    struct weir_chunk c;

    (void)state;
    weir_iter_open(&it, rs, 0);
    assert_int_equal(weir_iter_next(&it, &c, read_cb, NULL), 0);
    assert_true(chunk_is(c, "0"));
    assert_int_equal(weir_iter_next(&it, &c, read_cb, NULL), E1);
    weir_readable_destroy(rs);
}

/* F: "return() does not rejects if the stream has not errored yet" */
static void return_before_error(void **state)
{
    struct rsrc s = {.on_pull = pull_0_then_error};
    struct weir_readable *rs = rsrc_new(&s);
    struct weir_iter it;

    (void)state;
    weir_iter_open(&it, rs, 0);
    assert_int_equal(weir_iter_return(&it, E2), 0);
    assert_false(weir_readable_locked(rs));
    weir_readable_destroy(rs);
}

/* F: "return() rejects if the stream has errored" */
static int pull_error(struct rsrc *s)
{
    weir_readable_error(s->rs, E1);
    return 0;
}

static void return_after_error(void **state)
{
    struct rsrc s = {.on_pull = pull_error};
    struct weir_readable *rs = rsrc_new(&s);
    struct weir_iter it;

    (void)state;
    assert_int_equal(weir_iter_open(&it, rs, 0), 0);
    assert_int_equal(weir_iter_return(&it, E2), E1);
    assert_false(weir_readable_locked(rs));
    weir_readable_destroy(rs);
}

/* F: "next() that succeeds; next() that reports an error; next()", and
 * "... [no awaiting]" (each next here answers during its call) */
static void next_error_next(void **state)
{
    struct rsrc s = {.on_pull = pull_0_then_error};
    struct weir_readable *rs = rsrc_new(&s);
    struct weir_iter it;
    struct weir_chunk c;

    (void)state;
    weir_iter_open(&it, rs, 0);
    assert_int_equal(weir_iter_next(&it, &c, read_cb, NULL), 0);
    assert_true(chunk_is(c, "0"));
    assert_int_equal(weir_iter_next(&it, &c, read_cb, NULL), E1);
    assert_int_equal(weir_iter_next(&it, &c, read_cb, NULL), WEIR_DONE);
    weir_readable_destroy(rs);
}

/* F: "next() that succeeds; next() that reports an error(); return()",
 * and "... [no awaiting]" */
static void next_error_return(void **state)
{
    struct rsrc s = {.on_pull = pull_0_then_error};
    struct weir_readable *rs = rsrc_new(&s);
    struct weir_iter it;
    struct weir_chunk c;

    (void)state;
    weir_iter_open(&it, rs, 0);
    assert_int_equal(weir_iter_next(&it, &c, read_cb, NULL), 0);
    assert_int_equal(weir_iter_next(&it, &c, read_cb, NULL), E1);
    assert_int_equal(weir_iter_return(&it, E2), 0);
    weir_readable_destroy(rs);
}

/* F: "next() that succeeds; return()", and "... [no awaiting]" */
static int pull_count(struct rsrc *s)
{
    char *v = s->user;

    v[s->n] = (char)('0' + s->n);
    return weir_readable_enqueue(
        s->rs, (struct weir_chunk){NULL, (uint8_t *)&v[s->n++], 1});
}

static void next_then_return(void **state)
{
    char v[8];
    struct rsrc s = {.on_pull = pull_count, .user = v};
    struct weir_readable *rs = rsrc_new(&s);
    struct weir_iter it;
    struct weir_chunk c;

    (void)state;
    weir_iter_open(&it, rs, 0);
    assert_int_equal(weir_iter_next(&it, &c, read_cb, NULL), 0);
    assert_true(chunk_is(c, "0"));
    assert_int_equal(weir_iter_return(&it, E2), 0);
    assert_int_equal(s.pulls, 2);
    weir_readable_destroy(rs);
}

/* F: "return(); next()", and "... [no awaiting]" */
static void return_then_next(void **state)
{
    struct weir_readable *rs;
    struct weir_iter it;
    struct weir_chunk c;

    (void)state;
    assert_int_equal(weir_readable_create(&rs, NULL, NULL, NULL), 0);
    weir_iter_open(&it, rs, 0);
    assert_int_equal(weir_iter_return(&it, E1), 0);
    assert_int_equal(weir_iter_next(&it, &c, read_cb, NULL), WEIR_DONE);
    weir_readable_destroy(rs);
}

/* F: "Acquiring a reader after exhaustively async-iterating a stream" */
static void reader_after_exhausting(void **state)
{
    struct rsrc s = {.on_start = start_enqueue, .user = (void *)one23, .n = 1};
    struct weir_readable *rs = rsrc_make(&s, 3, false);
    struct weir_iter it;
    struct weir_reader r;
    struct collect k = {0};

    (void)state;
    assert_int_equal(weir_iter_run(&it, rs, collect_each, NULL, &k), 0);
    assert_string_equal(k.all, "123");
    assert_int_equal(weir_reader_acquire(&r, rs), 0);
    assert_int_equal(read_now(&r, NULL, 0), WEIR_DONE);
    weir_reader_release(&r);
    weir_readable_destroy(rs);
}

/* F: "Acquiring a reader after return()ing from a stream that errors" */
static void reader_after_return_errored(void **state)
{
    struct rsrc s = {.on_pull = pull_0_then_error};
    struct weir_readable *rs = rsrc_new(&s);
    struct weir_iter it;
    struct weir_reader r;
    struct weir_chunk c;

    (void)state;
    weir_iter_open(&it, rs, WEIR_ITER_PREVENT_CANCEL);
    assert_int_equal(weir_iter_next(&it, &c, read_cb, NULL), 0);
    assert_int_equal(weir_iter_next(&it, &c, read_cb, NULL), E1);
    assert_int_equal(weir_iter_return(&it, E2), 0);
    /* Not locked: the new reader sees the stream's error. */
    assert_int_equal(weir_reader_acquire(&r, rs), 0);
    assert_int_equal(read_now(&r, NULL, 0), E1);
    weir_reader_release(&r);
    weir_readable_destroy(rs);
}

/* F: "Acquiring a reader after partially async-iterating a stream" */
static void reader_after_partial(void **state)
{
    struct rsrc s = {.on_start = start_enqueue, .user = (void *)one23, .n = 1};
    struct weir_readable *rs = rsrc_make(&s, 3, false);
    struct weir_iter it;
    struct weir_reader r;
    struct collect k = {.stop_at = 2};

    (void)state;
    assert_int_equal(weir_iter_run(&it, rs, collect_each, NULL, &k), 0);
    assert_string_equal(k.all, "12");
    assert_int_equal(weir_reader_acquire(&r, rs), 0);
    assert_int_equal(read_now(&r, NULL, 0), WEIR_DONE); /* cancelled */
    weir_reader_release(&r);
    weir_readable_destroy(rs);
}

/* F: "Acquiring a reader and reading the remaining chunks after partially
 * async-iterating a stream with preventCancel = true" */
static void reader_after_partial_prevent(void **state)
{
    struct rsrc s = {.on_start = start_enqueue, .user = (void *)one23, .n = 1};
    struct weir_readable *rs = rsrc_make(&s, 3, false);
    struct weir_iter it;
    struct weir_reader r;
    struct collect k = {.stop_at = 2};

    (void)state;
    weir_iter_open(&it, rs, WEIR_ITER_PREVENT_CANCEL);
    assert_int_equal(weir_iter_loop(&it, collect_each, NULL, &k), 0);
    assert_string_equal(k.all, "12");
    assert_int_equal(weir_reader_acquire(&r, rs), 0);
    assert_read(&r, "3");
    assert_int_equal(read_now(&r, NULL, 0), WEIR_DONE);
    weir_reader_release(&r);
    weir_readable_destroy(rs);
}

/* F: "return() should unlock the stream synchronously when preventCancel
 * = false", "... = true" */
static void return_unlocks(bool prevent)
{
    struct weir_readable *rs;
    struct weir_iter it;
    struct weir_reader r;

    assert_int_equal(weir_readable_create(&rs, NULL, NULL, NULL), 0);
    weir_iter_open(&it, rs, prevent ? WEIR_ITER_PREVENT_CANCEL : 0);
    weir_iter_return(&it, E1);
    assert_int_equal(weir_reader_acquire(&r, rs), 0);
    weir_reader_release(&r);
    weir_readable_destroy(rs);
}

static void return_unlocks_cancel(void **state)
{
    (void)state;
    return_unlocks(false);
}

static void return_unlocks_prevent(void **state)
{
    (void)state;
    return_unlocks(true);
}

/* F: "close() while next() is pending": three chunks queued while start
 * is still running, then a close while the loop waits for a fourth. */
static void close_while_next_pending(void **state)
{
    struct rsrc s = {.start_rc = WEIR_PENDING};
    struct weir_readable *rs = rsrc_new(&s);
    struct weir_iter it;
    struct loop_rec l = {0};

    (void)state;
    weir_readable_enqueue(rs, S("a"));
    weir_readable_enqueue(rs, S("b"));
    weir_readable_enqueue(rs, S("c"));
    weir_iter_open(&it, rs, 0);
    assert_int_equal(weir_iter_loop(&it, loop_rec_each, loop_rec_done, &l),
                     WEIR_PENDING);
    weir_readable_start_done(rs, 0);
    assert_int_equal(l.d.calls, 0);
    weir_readable_close(rs);
    assert_int_equal(l.d.calls, 1);
    assert_int_equal(l.d.rc, 0);
    assert_string_equal(l.k.all, "abc");
    assert_false(weir_readable_locked(rs));
    weir_readable_destroy(rs);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        WPT(push_source, "Async-iterating a push source"),
        WPT(pull_source, "Async-iterating a pull source"),
        WPT(push_source_empty,
            "Async-iterating a push source with undefined values"),
        WPT(pull_source_empty,
            "Async-iterating a pull source with undefined values"),
        WPT(pull_source_manually, "Async-iterating a pull source manually"),
        WPT(errored_throws, "Async-iterating an errored stream throws"),
        WPT(closed_never_runs, "Async-iterating a closed stream never "
                               "executes the loop body, but works fine"),
        WPT(empty_stalls, "Async-iterating an empty but not closed/errored "
                          "stream never executes the loop body and stalls "
                          "the async function"),
        WPT(partially_consumed, "Async-iterating a partially consumed stream"),
        WPT(stop_cancels, "Cancellation behavior when throwing inside loop "
                          "body; preventCancel = false"),
        WPT(stop_prevent_cancel, "Cancellation behavior when throwing inside "
                                 "loop body; preventCancel = true"),
        WPT(stop_cancels, "Cancellation behavior when breaking inside loop "
                          "body; preventCancel = false"),
        WPT(stop_prevent_cancel, "Cancellation behavior when breaking inside "
                                 "loop body; preventCancel = true"),
        WPT(stop_cancels, "Cancellation behavior when returning inside loop "
                          "body; preventCancel = false"),
        WPT(stop_prevent_cancel, "Cancellation behavior when returning inside "
                                 "loop body; preventCancel = true"),
        WPT(return_cancels, "Cancellation behavior when manually calling "
                            "return(); preventCancel = false"),
        WPT(return_prevent_cancel, "Cancellation behavior when manually "
                                   "calling return(); preventCancel = true"),
        WPT(next_rejects_on_error, "next() rejects if the stream errors"),
        WPT(return_before_error, "return() does not rejects if the stream "
                                 "has not errored yet"),
        WPT(return_after_error, "return() rejects if the stream has errored"),
        WPT(next_error_next, "next() that succeeds; next() that reports an "
                             "error; next()"),
        WPT(next_error_next, "next() that succeeds; next() that reports an "
                             "error(); next() [no awaiting]"),
        WPT(next_error_return, "next() that succeeds; next() that reports an "
                               "error(); return()"),
        WPT(next_error_return, "next() that succeeds; next() that reports an "
                               "error(); return() [no awaiting]"),
        WPT(next_then_return, "next() that succeeds; return()"),
        WPT(next_then_return, "next() that succeeds; return() [no awaiting]"),
        WPT(return_then_next, "return(); next()"),
        WPT(return_then_next, "return(); next() [no awaiting]"),
        WPT(return_twice, "return(); return()"),
        WPT(return_twice, "return(); return() [no awaiting]"),
        WPT(next_shape, "next()'s fulfillment value has the right shape"),
        WPT(iterator_needs_unlocked,
            "values() throws if there's already a lock"),
        WPT(reader_after_exhausting, "Acquiring a reader after exhaustively "
                                     "async-iterating a stream"),
        WPT(reader_after_return_errored, "Acquiring a reader after "
                                         "return()ing from a stream that "
                                         "errors"),
        WPT(reader_after_partial, "Acquiring a reader after partially "
                                  "async-iterating a stream"),
        WPT(reader_after_partial_prevent,
            "Acquiring a reader and reading the remaining chunks after "
            "partially async-iterating a stream with preventCancel = true"),
        WPT(return_unlocks_cancel, "return() should unlock the stream "
                                   "synchronously when preventCancel = false"),
        WPT(return_unlocks_prevent, "return() should unlock the stream "
                                    "synchronously when preventCancel = true"),
        WPT(close_while_next_pending, "close() while next() is pending"),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
