/*
 * WPT streams/readable-streams/bad-underlying-sources.any.js, ported to
 * weir's C API. "Throwing" is returning an error code; the spec's
 * TypeError for a controller call on a closed or closing stream is
 * -EINVAL.
 */
#include "wpt.h"

#define F "readable-streams/bad-underlying-sources.any.js"

static int start_throws(struct rsrc *s)
{
    (void)s;
    return E1;
}

/* F: "Underlying source start: throwing method". Departure (creation does
 * not fail for start): the stream is created errored. */
static void start_throwing(void **state)
{
    struct rsrc s = {.on_start = start_throws};
    struct weir_readable *rs = rsrc_new(&s);

    (void)state;
    assert_int_equal(rs_err(rs), E1);
    weir_readable_destroy(rs);
}

/* F: "Underlying source: throwing pull method (initial pull)" */
static void pull_throwing_initial(void **state)
{
    struct rsrc s = {.pull_rc = E1};
    struct weir_readable *rs = rsrc_new(&s);

    (void)state;
    assert_int_equal(s.pulls, 1);
    assert_int_equal(rs_err(rs), E1);
    weir_readable_destroy(rs);
}

/* F: "Underlying source pull: throwing method (second pull)" */
static int pull_then_throw(struct rsrc *s)
{
    if (s->pulls == 1)
        return weir_readable_enqueue(s->rs, S("a"));
    return E1;
}

static void pull_throwing_second(void **state)
{
    struct rsrc s = {.on_pull = pull_then_throw};
    struct weir_readable *rs = rsrc_new(&s);
    struct weir_reader r;

    (void)state;
    weir_reader_acquire(&r, rs);
    assert_read(&r, "a");
    assert_int_equal(rs_err(rs), E1);
    weir_reader_release(&r);
    weir_readable_destroy(rs);
}

/* F: "Underlying source cancel: throwing method" */
static void cancel_throwing(void **state)
{
    struct rsrc s = {.cancel_rc = E1};
    struct weir_readable *rs = rsrc_new(&s);
    struct weir_reader r;

    (void)state;
    weir_reader_acquire(&r, rs);
    assert_int_equal(weir_reader_cancel(&r, E2), E1);
    assert_true(weir_readable_closed(rs));
    weir_reader_release(&r);
    weir_readable_destroy(rs);
}

/* Cancels through a short-lived reader (the spec's stream.cancel()). */
static void cancel_stream(struct weir_readable *rs)
{
    struct weir_reader r;

    assert_int_equal(weir_reader_acquire(&r, rs), 0);
    assert_int_equal(weir_reader_cancel(&r, E1), 0);
    weir_reader_release(&r);
}

static const char *const ab[] = {"a", "b", NULL};
static const char *const a[] = {"a", NULL};

/* F: "Underlying source: calling enqueue on an empty canceled stream
 * should throw" */
static void enqueue_empty_cancelled(void **state)
{
    struct rsrc s = {0};
    struct weir_readable *rs = rsrc_new(&s);

    (void)state;
    cancel_stream(rs);
    assert_int_equal(weir_readable_enqueue(rs, S("a")), -EINVAL);
    assert_true(weir_readable_closed(rs));
    weir_readable_destroy(rs);
}

/* F: "Underlying source: calling enqueue on a non-empty canceled stream
 * should throw" */
static void enqueue_nonempty_cancelled(void **state)
{
    struct rsrc s = {.on_start = start_enqueue, .user = (void *)ab};
    struct weir_readable *rs = rsrc_new(&s);

    (void)state;
    cancel_stream(rs);
    assert_int_equal(weir_readable_enqueue(rs, S("c")), -EINVAL);
    assert_true(weir_readable_closed(rs));
    weir_readable_destroy(rs);
}

/* F: "Underlying source: calling enqueue on a closed stream should
 * throw" */
static int close_then_enqueue(struct rsrc *s)
{
    weir_readable_close(s->rs);
    assert_int_equal(weir_readable_enqueue(s->rs, S("a")), -EINVAL);
    return 0;
}

static void enqueue_closed(void **state)
{
    struct rsrc s = {.on_start = close_then_enqueue};
    struct weir_readable *rs = rsrc_new(&s);

    (void)state;
    assert_true(weir_readable_closed(rs));
    weir_readable_destroy(rs);
}

/* F: "Underlying source: calling enqueue on an errored stream should
 * throw" */
static int error_then_enqueue(struct rsrc *s)
{
    weir_readable_error(s->rs, E1);
    assert_int_equal(weir_readable_enqueue(s->rs, S("a")), -EINVAL);
    return 0;
}

static void enqueue_errored(void **state)
{
    struct rsrc s = {.on_start = error_then_enqueue};
    struct weir_readable *rs = rsrc_new(&s);

    (void)state;
    assert_int_equal(rs_err(rs), E1);
    weir_readable_destroy(rs);
}

/* F: "Underlying source: calling close twice on an empty stream should
 * throw the second time" */
static int close_twice(struct rsrc *s)
{
    const char *const *v = s->user;

    for (; v && *v; v++)
        weir_readable_enqueue(s->rs, S(*v));
    assert_int_equal(weir_readable_close(s->rs), 0);
    assert_int_equal(weir_readable_close(s->rs), -EINVAL);
    return 0;
}

static void close_twice_empty(void **state)
{
    struct rsrc s = {.on_start = close_twice};
    struct weir_readable *rs = rsrc_new(&s);

    (void)state;
    assert_true(weir_readable_closed(rs));
    weir_readable_destroy(rs);
}

/* F: "Underlying source: calling close twice on a non-empty stream should
 * throw the second time" */
static void close_twice_nonempty(void **state)
{
    struct rsrc s = {.on_start = close_twice, .user = (void *)a};
    struct weir_readable *rs = rsrc_new(&s);
    struct weir_reader r;
    struct weir_chunk c;

    (void)state;
    weir_reader_acquire(&r, rs);
    assert_read(&r, "a");
    assert_int_equal(weir_reader_read(&r, &c, never_read, NULL), WEIR_DONE);
    weir_reader_release(&r);
    weir_readable_destroy(rs);
}

/* F: "Underlying source: calling close on an empty canceled stream should
 * throw" */
static void close_empty_cancelled(void **state)
{
    struct rsrc s = {0};
    struct weir_readable *rs = rsrc_new(&s);

    (void)state;
    cancel_stream(rs);
    assert_int_equal(weir_readable_close(rs), -EINVAL);
    assert_int_equal(s.starts, 1);
    weir_readable_destroy(rs);
}

/* F: "Underlying source: calling close on a non-empty canceled stream
 * should throw" */
static void close_nonempty_cancelled(void **state)
{
    struct rsrc s = {.on_start = start_enqueue, .user = (void *)a};
    struct weir_readable *rs = rsrc_new(&s);

    (void)state;
    cancel_stream(rs);
    assert_int_equal(weir_readable_close(rs), -EINVAL);
    weir_readable_destroy(rs);
}

/* F: "Underlying source: calling close after error should throw" */
static int error_then_close(struct rsrc *s)
{
    weir_readable_error(s->rs, E1);
    assert_int_equal(weir_readable_close(s->rs), -EINVAL);
    return 0;
}

static void close_after_error(void **state)
{
    struct rsrc s = {.on_start = error_then_close};
    struct weir_readable *rs = rsrc_new(&s);

    (void)state;
    assert_int_equal(rs_err(rs), E1);
    weir_readable_destroy(rs);
}

/* F: "Underlying source: calling error twice should not throw" */
static int error_twice(struct rsrc *s)
{
    weir_readable_error(s->rs, E1);
    weir_readable_error(s->rs, E2);
    return 0;
}

static void error_twice_ok(void **state)
{
    struct rsrc s = {.on_start = error_twice};
    struct weir_readable *rs = rsrc_new(&s);

    (void)state;
    assert_int_equal(rs_err(rs), E1);
    weir_readable_destroy(rs);
}

/* F: "Underlying source: calling error after close should not throw" */
static int close_then_error(struct rsrc *s)
{
    weir_readable_close(s->rs);
    weir_readable_error(s->rs, E1);
    return 0;
}

static void error_after_close(void **state)
{
    struct rsrc s = {.on_start = close_then_error};
    struct weir_readable *rs = rsrc_new(&s);

    (void)state;
    assert_true(weir_readable_closed(rs));
    weir_readable_destroy(rs);
}

/* F: "Underlying source: calling error and returning a rejected promise
 * from start should cause the stream to error with the first error" */
static int error_and_fail(struct rsrc *s)
{
    weir_readable_error(s->rs, E1);
    s->n++;
    return E2;
}

static void start_error_and_reject(void **state)
{
    struct rsrc s = {.on_start = error_and_fail};
    struct weir_readable *rs = rsrc_new(&s);

    (void)state;
    assert_int_equal(s.n, 1);
    assert_int_equal(rs_err(rs), E1);
    weir_readable_destroy(rs);
}

/* The same with the rejection later (start answers pending). */
static int error_and_pend(struct rsrc *s)
{
    weir_readable_error(s->rs, E1);
    return WEIR_PENDING;
}

static void start_error_and_reject_async(void **state)
{
    struct rsrc s = {.on_start = error_and_pend};
    struct weir_readable *rs = rsrc_new(&s);

    (void)state;
    weir_readable_start_done(rs, E2);
    assert_int_equal(rs_err(rs), E1);
    weir_readable_destroy(rs);
}

/* F: "Underlying source: calling error and returning a rejected promise
 * from pull should cause the stream to error with the first error" */
static void pull_error_and_reject(void **state)
{
    struct rsrc s = {.on_pull = error_and_fail};
    struct weir_readable *rs = rsrc_new(&s);

    (void)state;
    assert_int_equal(s.n, 1);
    assert_int_equal(rs_err(rs), E1);
    weir_readable_destroy(rs);
}

/* The same through a read's pull, which takes the inline path. */
static int pull_enqueue_or_fail(struct rsrc *s)
{
    if (s->pulls == 1)
        return weir_readable_enqueue(s->rs, S("0"));
    weir_readable_error(s->rs, E1);
    return E2;
}

static void pull_error_and_reject_on_read(void **state)
{
    struct rsrc s = {.on_pull = pull_enqueue_or_fail};
    struct weir_readable *rs = rsrc_new(&s);
    struct weir_reader r;

    (void)state;
    weir_reader_acquire(&r, rs);
    assert_read(&r, "0");
    assert_int_equal(rs_err(rs), E1);
    weir_reader_release(&r);
    weir_readable_destroy(rs);
}

/* F: "read should not error if it dequeues and pull() throws" */
static int pull_zero_or_throw(struct rsrc *s)
{
    if (s->n)
        return E1;
    return weir_readable_enqueue(s->rs, S("0"));
}

static void read_survives_pull_throw(void **state)
{
    struct rsrc s = {.on_pull = pull_zero_or_throw};
    struct weir_readable *rs = rsrc_new(&s);
    struct weir_reader r;

    (void)state;
    weir_reader_acquire(&r, rs);
    s.n = 1;
    assert_read(&r, "0");
    assert_int_equal(rs_err(rs), E1);
    weir_reader_release(&r);
    weir_readable_destroy(rs);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        WPT(start_throwing, "Underlying source start: throwing method"),
        WPT(pull_throwing_initial,
            "Underlying source: throwing pull method (initial pull)"),
        WPT(pull_throwing_second,
            "Underlying source pull: throwing method (second pull)"),
        WPT(cancel_throwing, "Underlying source cancel: throwing method"),
        WPT(enqueue_empty_cancelled, "Underlying source: calling enqueue on "
                                     "an empty canceled stream should throw"),
        WPT(enqueue_nonempty_cancelled,
            "Underlying source: calling enqueue on a non-empty canceled "
            "stream should throw"),
        WPT(enqueue_closed, "Underlying source: calling enqueue on a closed "
                            "stream should throw"),
        WPT(enqueue_errored, "Underlying source: calling enqueue on an "
                             "errored stream should throw"),
        WPT(close_twice_empty,
            "Underlying source: calling close twice on an empty stream "
            "should throw the second time"),
        WPT(close_twice_nonempty,
            "Underlying source: calling close twice on a non-empty stream "
            "should throw the second time"),
        WPT(close_empty_cancelled, "Underlying source: calling close on an "
                                   "empty canceled stream should throw"),
        WPT(close_nonempty_cancelled,
            "Underlying source: calling close on a non-empty canceled stream "
            "should throw"),
        WPT(close_after_error,
            "Underlying source: calling close after error should throw"),
        WPT(error_twice_ok,
            "Underlying source: calling error twice should not throw"),
        WPT(error_after_close,
            "Underlying source: calling error after close should not throw"),
        WPT(start_error_and_reject,
            "Underlying source: calling error and returning a rejected "
            "promise from start should cause the stream to error with the "
            "first error"),
        WPT(start_error_and_reject_async,
            "Underlying source: calling error and returning a rejected "
            "promise from start should cause the stream to error with the "
            "first error (rejected later)"),
        WPT(pull_error_and_reject,
            "Underlying source: calling error and returning a rejected "
            "promise from pull should cause the stream to error with the "
            "first error"),
        WPT(pull_error_and_reject_on_read,
            "Underlying source: calling error and returning a rejected "
            "promise from pull should cause the stream to error with the "
            "first error (pull from a read)"),
        WPT(read_survives_pull_throw,
            "read should not error if it dequeues and pull() throws"),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
