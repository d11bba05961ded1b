/*
 * WPT streams/readable-streams/templated.any.js, ported to weir's C API:
 * the templates of streams/resources/rs-test-templates.js run against the
 * stream states that file builds. A template here is a test function; the
 * state comes from a factory passed as the cmocka test's initial state,
 * and the title is the WPT's (label, then the template's case).
 */
#include "wpt.h"
#include "wpt_throw_after.h"

/* A stream in some state, and a reader when the factory takes one. */
struct made {
    struct rsrc s;
    struct weir_readable *rs;
    struct weir_reader r;
    bool has_reader;
};

typedef void (*factory_fn)(struct made *m);

static const char *const ab[] = {"a", "b", NULL};

static int start_close(struct rsrc *s)
{
    return weir_readable_close(s->rs);
}

static int start_error(struct rsrc *s)
{
    weir_readable_error(s->rs, E1);
    return 0;
}

static void plain(struct made *m)
{
    m->rs = rsrc_new(&m->s);
}

static void reader_of(struct made *m)
{
    assert_int_equal(weir_reader_acquire(&m->r, m->rs), 0);
    m->has_reader = true;
}

/* The factories of templated.any.js, by label. */
static void f_empty_reader(struct made *m)
{
    plain(m);
    reader_of(m);
}

static void f_closed_in_start(struct made *m)
{
    m->s.on_start = start_close;
    plain(m);
}

static void f_closed_before_reader(struct made *m)
{
    plain(m);
    weir_readable_close(m->rs);
    reader_of(m);
}

static void f_closed_after_reader(struct made *m)
{
    plain(m);
    reader_of(m);
    weir_readable_close(m->rs);
}

static void f_closed_via_cancel(struct made *m)
{
    plain(m);
    reader_of(m);
    weir_reader_cancel(&m->r, E2);
    weir_reader_release(&m->r);
    m->has_reader = false;
}

static void f_closed_cancel_after_reader(struct made *m)
{
    plain(m);
    reader_of(m);
    weir_reader_cancel(&m->r, E2);
}

static void f_errored_in_start(struct made *m)
{
    m->s.on_start = start_error;
    plain(m);
}

static void f_errored_rejected_start(struct made *m)
{
    m->s.start_rc = WEIR_PENDING;
    plain(m);
    weir_readable_start_done(m->rs, E1);
}

static void f_errored_rejected_start_reader(struct made *m)
{
    f_errored_rejected_start(m);
    reader_of(m);
}

static void f_errored_before_reader(struct made *m)
{
    plain(m);
    weir_readable_error(m->rs, E1);
    reader_of(m);
}

static void f_errored_after_reader(struct made *m)
{
    plain(m);
    reader_of(m);
    weir_readable_error(m->rs, E1);
}

static void f_two_open(struct made *m)
{
    m->s.on_start = start_enqueue;
    m->s.user = (void *)ab;
    m->rs = rsrc_make(&m->s, 2, false);
    reader_of(m);
}

static void f_two_closed(struct made *m)
{
    f_two_open(m);
    weir_readable_close(m->rs);
}

static void build(struct made *m, void **state)
{
    *m = (struct made){0};
    ((factory_fn)(uintptr_t)*state)(m);
}

static void done_with(struct made *m)
{
    if (m->has_reader)
        weir_reader_release(&m->r);
    weir_readable_destroy(m->rs);
}

/* templatedRSClosed */
static void closed_cancel_twice(void **state)
{
    struct made m;
    struct weir_reader r;

    build(&m, state);
    assert_int_equal(weir_reader_acquire(&r, m.rs), 0);
    assert_int_equal(weir_reader_cancel(&r, E1), 0);
    assert_int_equal(weir_reader_cancel(&r, E1), 0);
    weir_reader_release(&r);
    done_with(&m);
}

static void closed_not_locked(void **state)
{
    struct made m;

    build(&m, state);
    assert_false(weir_readable_locked(m.rs));
    done_with(&m);
}

static void closed_get_reader(void **state)
{
    struct made m;
    struct weir_reader r;

    build(&m, state);
    assert_int_equal(weir_reader_acquire(&r, m.rs), 0);
    weir_reader_release(&r);
    done_with(&m);
}

static void readers_in_succession(void **state)
{
    struct made m;
    struct weir_reader r;

    build(&m, state);
    for (int i = 0; i < 3; i++) {
        assert_int_equal(weir_reader_acquire(&r, m.rs), 0);
        weir_reader_release(&r);
    }
    done_with(&m);
}

static void no_second_reader(void **state)
{
    struct made m;
    struct weir_reader r, r2;

    build(&m, state);
    assert_int_equal(weir_reader_acquire(&r, m.rs), 0);
    assert_int_equal(weir_reader_acquire(&r2, m.rs), -EBUSY);
    assert_int_equal(weir_reader_acquire(&r2, m.rs), -EBUSY);
    weir_reader_release(&r);
    done_with(&m);
}

/* templatedRSErrored (and SyncOnly) */
static void errored_reader_acts_errored(void **state)
{
    struct made m;
    struct weir_reader r;

    build(&m, state);
    weir_reader_acquire(&r, m.rs);
    assert_int_equal(read_now(&r, NULL, 0), E1);
    assert_int_equal(rs_err(m.rs), E1);
    weir_reader_release(&r);
    done_with(&m);
}

static void errored_read_twice(void **state)
{
    struct made m;
    struct weir_reader r;

    build(&m, state);
    weir_reader_acquire(&r, m.rs);
    assert_int_equal(read_now(&r, NULL, 0), E1);
    assert_int_equal(read_now(&r, NULL, 0), E1);
    weir_reader_release(&r);
    done_with(&m);
}

static void errored_second_reader(void **state)
{
    struct made m;
    struct weir_reader r;

    build(&m, state);
    weir_reader_acquire(&r, m.rs);
    weir_reader_release(&r);
    assert_int_equal(weir_reader_acquire(&r, m.rs), 0);
    assert_int_equal(rs_err(m.rs), E1);
    weir_reader_release(&r);
    done_with(&m);
}

static void errored_cancel_twice(void **state)
{
    struct made m;
    struct weir_reader r;

    build(&m, state);
    weir_reader_acquire(&r, m.rs);
    assert_int_equal(weir_reader_cancel(&r, E2), E1);
    assert_int_equal(weir_reader_cancel(&r, E2), E1);
    weir_reader_release(&r);
    done_with(&m);
}

/* templatedRSEmptyReader */
static void reader_locked(void **state)
{
    struct made m;

    build(&m, state);
    assert_true(weir_readable_locked(m.rs));
    done_with(&m);
}

static void read_never_settles(void **state)
{
    struct made m;
    struct weir_chunk c;
    struct done d1 = {0}, d2 = {0};

    build(&m, state);
    assert_int_equal(weir_reader_read(&m.r, &c, read_cb, &d1), WEIR_PENDING);
    if (m.s.n)
        assert_int_equal(weir_reader_read(&m.r, &c, read_cb, &d2),
                         WEIR_PENDING);
    assert_int_equal(d1.calls + d2.calls, 0);
    /* Ended for the test's own cleanup: a release answers them. */
    weir_reader_release(&m.r);
    m.has_reader = false;
    assert_int_equal(d1.rc, -ECANCELED);
    done_with(&m);
}

static void two_reads_never_settle(void **state)
{
    struct made m;
    struct weir_chunk c;
    struct done d1 = {0}, d2 = {0};

    build(&m, state);
    weir_reader_read(&m.r, &c, read_cb, &d1);
    weir_reader_read(&m.r, &c, read_cb, &d2);
    assert_int_equal(d1.calls + d2.calls, 0);
    weir_reader_release(&m.r);
    m.has_reader = false;
    assert_int_equal(d1.rc, -ECANCELED);
    assert_int_equal(d2.rc, -ECANCELED);
    done_with(&m);
}

static void reader_again_fails(void **state)
{
    struct made m;
    struct weir_reader r2;

    build(&m, state);
    assert_int_equal(weir_reader_acquire(&r2, m.rs), -EBUSY);
    done_with(&m);
}

static void release_rejects_pending(void **state)
{
    struct made m;
    struct weir_chunk c;
    struct done d1 = {0}, d2 = {0};

    build(&m, state);
    weir_reader_read(&m.r, &c, read_cb, &d1);
    weir_reader_read(&m.r, &c, read_cb, &d2);
    weir_reader_release(&m.r);
    m.has_reader = false;
    assert_false(weir_readable_locked(m.rs));
    assert_int_equal(d1.rc, -ECANCELED);
    assert_int_equal(d2.rc, -ECANCELED);
    done_with(&m);
}

static void release_then_read_fails(void **state)
{
    struct made m;
    struct weir_chunk c;

    build(&m, state);
    weir_reader_release(&m.r);
    m.has_reader = false;
    for (int i = 0; i < (m.s.user ? 3 : 2); i++)
        assert_int_equal(weir_reader_read(&m.r, &c, read_cb, NULL), -EINVAL);
    done_with(&m);
}

static void release_unlocks(void **state)
{
    struct made m;

    build(&m, state);
    weir_reader_release(&m.r);
    m.has_reader = false;
    assert_false(weir_readable_locked(m.rs));
    done_with(&m);
}

static void cancel_via_reader_closes(void **state)
{
    struct made m;
    struct weir_chunk c;

    build(&m, state);
    weir_reader_cancel(&m.r, E1);
    assert_int_equal(weir_reader_read(&m.r, &c, never_read, NULL), WEIR_DONE);
    done_with(&m);
}

/* templatedRSClosedReader */
static void closed_read_done(void **state)
{
    struct made m;
    struct weir_chunk c;

    build(&m, state);
    assert_int_equal(weir_reader_read(&m.r, &c, never_read, NULL), WEIR_DONE);
    done_with(&m);
}

static void closed_read_many_done(void **state)
{
    struct made m;
    struct weir_chunk c;

    build(&m, state);
    assert_int_equal(weir_reader_read(&m.r, &c, never_read, NULL), WEIR_DONE);
    assert_int_equal(weir_reader_read(&m.r, &c, never_read, NULL), WEIR_DONE);
    done_with(&m);
}

static void closed_read_in_read(void **state)
{
    struct made m;
    struct weir_chunk c;

    build(&m, state);
    /* The first read's answer is at hand at once; the "callback" read
     * follows it. */
    if (weir_reader_read(&m.r, &c, never_read, NULL) == WEIR_DONE)
        assert_int_equal(weir_reader_read(&m.r, &c, never_read, NULL),
                         WEIR_DONE);
    else
        fail();
    done_with(&m);
}

static void closed_is_closed(void **state)
{
    struct made m;

    build(&m, state);
    assert_true(weir_readable_closed(m.rs));
    done_with(&m);
}

static void closed_reader_cancel_twice(void **state)
{
    struct made m;

    build(&m, state);
    assert_int_equal(weir_reader_cancel(&m.r, E1), 0);
    assert_int_equal(weir_reader_cancel(&m.r, E1), 0);
    done_with(&m);
}

/* templatedRSErroredReader */
static void errored_reader_closed(void **state)
{
    struct made m;

    build(&m, state);
    assert_int_equal(rs_err(m.rs), E1);
    done_with(&m);
}

static void errored_reader_read(void **state)
{
    struct made m;

    build(&m, state);
    assert_int_equal(read_now(&m.r, NULL, 0), E1);
    done_with(&m);
}

/* templatedRSTwoChunksOpenReader / ClosedReader */
static void two_sequential(void **state)
{
    struct made m;

    build(&m, state);
    assert_read(&m.r, "a");
    assert_read(&m.r, "b");
    if (weir_readable_closed(m.rs) || m.rs->close_requested)
        assert_int_equal(read_now(&m.r, NULL, 0), WEIR_DONE);
    done_with(&m);
}

static void two_nested(void **state)
{
    two_sequential(state);
}

static void cancel_after_read(void **state)
{
    struct made m;
    struct weir_chunk c;

    build(&m, state);
    assert_read(&m.r, "a");
    weir_reader_cancel(&m.r, E1);
    assert_int_equal(weir_reader_read(&m.r, &c, never_read, NULL), WEIR_DONE);
    assert_true(weir_readable_closed(m.rs));
    done_with(&m);
}

static void drain_closes_keeps_lock(void **state)
{
    struct made m;

    build(&m, state);
    assert_true(weir_readable_locked(m.rs));
    read_now(&m.r, NULL, 0);
    read_now(&m.r, NULL, 0);
    assert_true(weir_readable_closed(m.rs));
    assert_true(weir_readable_locked(m.rs));
    done_with(&m);
}

static void release_after_closed(void **state)
{
    struct made m;

    build(&m, state);
    read_now(&m.r, NULL, 0);
    read_now(&m.r, NULL, 0);
    assert_true(weir_readable_closed(m.rs));
    weir_reader_release(&m.r);
    m.has_reader = false;
    assert_false(weir_readable_locked(m.rs));
    done_with(&m);
}

static void new_reader_reads_on(void **state)
{
    struct made m;
    struct weir_reader r2;

    build(&m, state);
    assert_read(&m.r, "a");
    weir_reader_release(&m.r);
    m.has_reader = false;
    weir_reader_acquire(&r2, m.rs);
    assert_read(&r2, "b");
    weir_reader_release(&r2);
    done_with(&m);
}

#define TPL(fn, title, fac)                                                    \
    {                                                                          \
        title, fn, NULL, NULL, (void *)(uintptr_t)(fac)                        \
    }

#define RS_CLOSED(L, fac)                                                      \
    TPL(closed_cancel_twice,                                                   \
        L ": cancel() should return a distinct fulfilled promise each time",   \
        fac),                                                                  \
        TPL(closed_not_locked, L ": locked should be false", fac),             \
        TPL(closed_get_reader, L ": getReader() should be OK", fac),           \
        TPL(readers_in_succession,                                             \
            L ": should be able to acquire multiple readers if they are "      \
              "released in succession",                                        \
            fac),                                                              \
        TPL(no_second_reader,                                                  \
            L ": should not be able to acquire a second reader if we don't "   \
              "release the first one",                                         \
            fac)

#define RS_ERRORED(L, fac)                                                     \
    TPL(errored_reader_acts_errored,                                           \
        L ": getReader() should return a reader that acts errored", fac),      \
        TPL(errored_read_twice,                                                \
            L ": read() twice should give the error each time", fac),          \
        TPL(closed_not_locked, L ": locked should be false", fac)

#define RS_ERRORED_SYNC(L, fac)                                                \
    TPL(errored_second_reader,                                                 \
        L ": should be able to obtain a second reader, with the correct "      \
          "closed promise",                                                    \
        fac),                                                                  \
        TPL(no_second_reader,                                                  \
            L ": should not be able to obtain additional readers if we don't " \
              "release the first lock",                                        \
            fac),                                                              \
        TPL(errored_cancel_twice,                                              \
            L ": cancel() should return a distinct rejected promise each "     \
              "time",                                                          \
            fac),                                                              \
        TPL(errored_cancel_twice,                                              \
            L ": reader cancel() should return a distinct rejected promise "   \
              "each time",                                                     \
            fac)

#define RS_EMPTY_READER(L, fac)                                                \
    TPL(reader_locked, L ": locked should be true", fac),                      \
        TPL(read_never_settles, L ": read() should never settle", fac),        \
        TPL(two_reads_never_settle,                                            \
            L ": two read()s should both never settle", fac),                  \
        TPL(reader_again_fails,                                                \
            L ": getReader() again on the stream should fail", fac),           \
        TPL(release_rejects_pending,                                           \
            L ": releasing the lock should reject all pending read requests",  \
            fac),                                                              \
        TPL(release_then_read_fails,                                           \
            L ": releasing the lock should cause further read() calls to "     \
              "reject with a TypeError",                                       \
            fac),                                                              \
        TPL(release_unlocks,                                                   \
            L ": releasing the lock should cause locked to become false",      \
            fac),                                                              \
        TPL(cancel_via_reader_closes,                                          \
            L ": canceling via the reader should cause the reader to act "     \
              "closed",                                                        \
            fac)

#define RS_CLOSED_READER(L, fac)                                               \
    TPL(closed_read_done,                                                      \
        L ": read() should fulfill with { value: undefined, done: true }",     \
        fac),                                                                  \
        TPL(closed_read_many_done,                                             \
            L ": read() multiple times should fulfill with { value: "          \
              "undefined, done: true }",                                       \
            fac),                                                              \
        TPL(closed_read_in_read,                                               \
            L ": read() should work when used within another read() fulfill "  \
              "callback",                                                      \
            fac),                                                              \
        TPL(closed_is_closed, L ": closed should fulfill with undefined",      \
            fac),                                                              \
        TPL(closed_reader_cancel_twice,                                        \
            L ": cancel() should return a distinct fulfilled promise each "    \
              "time",                                                          \
            fac)

#define RS_ERRORED_READER(L, fac)                                              \
    TPL(errored_reader_closed, L ": closed should reject with the error",      \
        fac),                                                                  \
        TPL(errored_reader_read, L ": read() should reject with the error",    \
            fac)

#define L_TWO_OPEN   "ReadableStream (two chunks enqueued, still open) reader"
#define L_TWO_CLOSED "ReadableStream (two chunks enqueued, then closed) reader"

THROW_AFTER_TESTS(plain, false)

int main(void)
{
    const struct CMUnitTest tests[] = {
        RS_EMPTY_READER("ReadableStream (empty) reader", f_empty_reader),
        RS_CLOSED("ReadableStream (closed via call in start)",
                  f_closed_in_start),
        RS_CLOSED_READER("ReadableStream reader (closed before getting "
                         "reader)",
                         f_closed_before_reader),
        RS_CLOSED_READER("ReadableStream reader (closed after getting reader)",
                         f_closed_after_reader),
        RS_CLOSED("ReadableStream (closed via cancel)", f_closed_via_cancel),
        RS_CLOSED_READER("ReadableStream reader (closed via cancel after "
                         "getting reader)",
                         f_closed_cancel_after_reader),
        RS_ERRORED("ReadableStream (errored via call in start)",
                   f_errored_in_start),
        RS_ERRORED_SYNC("ReadableStream (errored via call in start)",
                        f_errored_in_start),
        RS_ERRORED("ReadableStream (errored via returning a rejected promise "
                   "in start)",
                   f_errored_rejected_start),
        RS_ERRORED_READER("ReadableStream (errored via returning a rejected "
                          "promise in start) reader",
                          f_errored_rejected_start_reader),
        RS_ERRORED_READER("ReadableStream reader (errored before getting "
                          "reader)",
                          f_errored_before_reader),
        RS_ERRORED_READER("ReadableStream reader (errored after getting "
                          "reader)",
                          f_errored_after_reader),
        TPL(two_sequential,
            L_TWO_OPEN ": calling read() twice without waiting will "
                       "eventually give both chunks (sequential)",
            f_two_open),
        TPL(two_nested,
            L_TWO_OPEN ": calling read() twice without waiting will "
                       "eventually give both chunks (nested)",
            f_two_open),
        TPL(cancel_after_read,
            L_TWO_OPEN ": cancel() after a read() should still give that "
                       "single read result",
            f_two_open),
        TPL(two_sequential,
            L_TWO_CLOSED ": third read(), without waiting, should give { "
                         "value: undefined, done: true } (sequential)",
            f_two_closed),
        TPL(two_nested,
            L_TWO_CLOSED ": third read(), without waiting, should give { "
                         "value: undefined, done: true } (nested)",
            f_two_closed),
        TPL(drain_closes_keeps_lock,
            L_TWO_CLOSED ": draining the stream via read() should cause the "
                         "reader closed promise to fulfill, but locked stays "
                         "true",
            f_two_closed),
        TPL(release_after_closed,
            L_TWO_CLOSED ": releasing the lock after the stream is closed "
                         "should cause locked to become false",
            f_two_closed),
        TPL(release_then_read_fails,
            L_TWO_CLOSED ": releasing the lock should cause further read() "
                         "calls to reject with a TypeError",
            f_two_closed),
        TPL(new_reader_reads_on,
            L_TWO_CLOSED ": reader's closed property always returns the same "
                         "promise",
            f_two_closed),
        THROW_AFTER_ENTRIES(plain, "ReadableStream"),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
