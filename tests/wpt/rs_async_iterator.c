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
    struct collect k = {0};
    struct done d = {0};

    (void)state;
    weir_iter_open(&it, rs, 0);
    assert_int_equal(weir_iter_loop(&it, collect_each, done_cb, &d),
                     WEIR_PENDING);
    assert_int_equal(k.calls + d.calls, 0);
    /* Ending it: a close finishes the loop. */
    weir_readable_close(rs);
    assert_int_equal(d.calls, 1);
    assert_int_equal(d.rc, 0);
    weir_readable_destroy(rs);
}

/* F: "Cancellation behavior" (each leaving the loop early, with and
 * without preventCancel) */
static const char *const zero[] = {"0", NULL};

static void cancellation(void **state)
{
    (void)state;
    for (int prevent = 0; prevent < 2; prevent++) {
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
}

/* F: "Cancellation behavior when manually calling return()" */
static void cancellation_return(void **state)
{
    (void)state;
    for (int prevent = 0; prevent < 2; prevent++) {
        struct rsrc s = {.on_start = start_enqueue, .user = (void *)zero};
        struct weir_readable *rs = rsrc_new(&s);
        struct weir_iter it;

        weir_iter_open(&it, rs, prevent ? WEIR_ITER_PREVENT_CANCEL : 0);
        assert_int_equal(weir_iter_return(&it, E1), 0);
        assert_string_equal(s.ev.s, prevent ? "" : "cancel:-1001");
        assert_false(weir_readable_locked(rs));
        weir_readable_destroy(rs);
    }
}

/* F: "Calling return() twice rejects". Departure (iterator return): the
 * iteration has ended, and a second return reports 0. */
static void return_twice(void **state)
{
    struct weir_readable *rs;
    struct weir_iter it;

    (void)state;
    assert_int_equal(weir_readable_create(&rs, NULL, NULL, NULL), 0);
    weir_iter_open(&it, rs, 0);
    assert_int_equal(weir_iter_return(&it, E1), 0);
    assert_int_equal(weir_iter_return(&it, E1), 0);
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

/* F: "getIterator() throws if there's already a lock" */
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

int main(void)
{
    const struct CMUnitTest tests[] = {
        WPT(push_source, "Async-iterating a push source"),
        WPT(pull_source, "Async-iterating a pull source"),
        WPT(errored_throws, "Async-iterating an errored stream throws"),
        WPT(closed_never_runs, "Async-iterating a closed stream never "
                               "executes the loop body, but works fine"),
        WPT(empty_stalls, "Async-iterating an empty but not closed/errored "
                          "stream never executes the loop body and stalls "
                          "the async function"),
        WPT(cancellation, "Cancellation behavior"),
        WPT(cancellation_return,
            "Cancellation behavior when manually calling return()"),
        WPT(return_twice, "Calling return() twice rejects"),
        WPT(next_shape, "next()'s fulfillment value has the right shape"),
        WPT(iterator_needs_unlocked,
            "getIterator() throws if there's already a lock"),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
