/*
 * WPT streams/readable-streams/default-reader.any.js, ported to weir's C
 * API. reader.closed has no counterpart: the stream's state and the reads'
 * results stand in for it.
 */
#include "wpt.h"

#define F "readable-streams/default-reader.any.js"

/* F: "Constructing a ReadableStreamDefaultReader directly should fail if
 * the stream is already locked (via direct construction)" */
static void second_reader_fails(void **state)
{
    struct weir_readable *rs;
    struct weir_reader r1, r2;

    (void)state;
    assert_int_equal(weir_readable_create(&rs, NULL, NULL, NULL), 0);
    assert_int_equal(weir_reader_acquire(&r1, rs), 0);
    assert_int_equal(weir_reader_acquire(&r2, rs), -EBUSY);
    assert_true(weir_readable_locked(rs));
    weir_reader_release(&r1);
    weir_readable_destroy(rs);
}

/* F: "Constructing a ReadableStreamDefaultReader directly should be OK if
 * the stream is closed" */
static int start_close(struct rsrc *s)
{
    return weir_readable_close(s->rs);
}

static void reader_on_closed(void **state)
{
    struct rsrc s = {.on_start = start_close};
    struct weir_readable *rs = rsrc_new(&s);
    struct weir_reader r;
    struct weir_chunk c;

    (void)state;
    assert_int_equal(weir_reader_acquire(&r, rs), 0);
    assert_int_equal(weir_reader_read(&r, &c, never_read, NULL), WEIR_DONE);
    weir_reader_release(&r);
    weir_readable_destroy(rs);
}

/* F: "Constructing a ReadableStreamDefaultReader directly should be OK if
 * the stream is errored" */
static void reader_on_errored(void **state)
{
    struct rsrc s = {.start_rc = E1};
    struct weir_readable *rs = rsrc_new(&s);
    struct weir_reader r;

    (void)state;
    assert_int_equal(weir_reader_acquire(&r, rs), 0);
    assert_int_equal(read_now(&r, NULL, 0), E1);
    weir_reader_release(&r);
    weir_readable_destroy(rs);
}

/* F: "Reading from a reader for an empty stream will wait until a chunk is
 * available" */
static void read_waits(void **state)
{
    struct rsrc s = {0};
    struct weir_readable *rs = rsrc_new(&s);
    struct weir_reader r;
    struct done d = {0};
    struct weir_chunk c;

    (void)state;
    weir_reader_acquire(&r, rs);
    assert_int_equal(weir_reader_read(&r, &c, read_cb, &d), WEIR_PENDING);
    weir_readable_enqueue(rs, S("a"));
    assert_int_equal(d.rc, 0);
    assert_string_equal(d.text, "a");
    weir_reader_release(&r);
    weir_readable_destroy(rs);
}

/* F: "cancel() on a reader does not release the reader" */
static int cancel_checks_lock(struct rsrc *s, int reason)
{
    struct weir_reader r2;

    assert_true(weir_readable_locked(s->rs));
    assert_int_equal(weir_reader_acquire(&r2, s->rs), -EBUSY);
    assert_int_equal(reason, E1);
    return 0;
}

static void cancel_keeps_lock(void **state)
{
    struct rsrc s = {.on_cancel = cancel_checks_lock};
    struct weir_readable *rs = rsrc_new(&s);
    struct weir_reader r;

    (void)state;
    weir_reader_acquire(&r, rs);
    assert_int_equal(weir_reader_cancel(&r, E1), 0);
    assert_int_equal(s.cancels, 1);
    assert_true(weir_readable_locked(rs));
    weir_reader_release(&r);
    weir_readable_destroy(rs);
}

/* F: "closed should be fulfilled after stream is closed (.closed access
 * before acquiring)" */
static void closed_after_close(void **state)
{
    struct rsrc s = {0};
    struct weir_readable *rs = rsrc_new(&s);
    struct weir_reader r;

    (void)state;
    weir_reader_acquire(&r, rs);
    weir_readable_close(rs);
    assert_true(weir_readable_closed(rs));
    weir_reader_release(&r);
    weir_readable_destroy(rs);
}

/* F: "closed should be rejected after reader releases its lock (multiple
 * stream locks)" (a released reader's read fails; the new one sees the
 * close) */
static void released_reader_rejects(void **state)
{
    struct rsrc s = {0};
    struct weir_readable *rs = rsrc_new(&s);
    struct weir_reader r1, r2;
    struct weir_chunk c;

    (void)state;
    weir_reader_acquire(&r1, rs);
    weir_reader_release(&r1);
    assert_int_equal(weir_reader_acquire(&r2, rs), 0);
    weir_readable_close(rs);
    assert_int_equal(weir_reader_read(&r1, &c, never_read, NULL), -EINVAL);
    assert_int_equal(weir_reader_read(&r2, &c, never_read, NULL), WEIR_DONE);
    weir_reader_release(&r2);
    weir_readable_destroy(rs);
}

/* F: "Multiple readers can access the stream in sequence" */
static const char *const ab[] = {"a", "b", NULL};
static const char *const a[] = {"a", NULL};

static void readers_in_sequence(void **state)
{
    struct rsrc s = {.on_start = start_enqueue, .user = (void *)ab, .n = 1};
    struct weir_readable *rs = rsrc_new(&s);
    struct weir_reader r;

    (void)state;
    weir_reader_acquire(&r, rs);
    assert_read(&r, "a");
    weir_reader_release(&r);
    weir_reader_acquire(&r, rs);
    assert_read(&r, "b");
    weir_reader_release(&r);
    weir_readable_destroy(rs);
}

/* F: "Cannot use an already-released reader to unlock a stream again" */
static void released_cannot_unlock(void **state)
{
    struct rsrc s = {.on_start = start_enqueue, .user = (void *)a};
    struct weir_readable *rs = rsrc_new(&s);
    struct weir_reader r1, r2;

    (void)state;
    weir_reader_acquire(&r1, rs);
    weir_reader_release(&r1);
    weir_reader_acquire(&r2, rs);
    weir_reader_release(&r1); /* a no-op */
    assert_true(weir_readable_locked(rs));
    assert_read(&r2, "a");
    weir_reader_release(&r2);
    weir_readable_destroy(rs);
}

/* F: "cancel() on a released reader is a no-op and does not pass
 * through" */
static void cancel_released_noop(void **state)
{
    struct rsrc s = {.on_start = start_enqueue, .user = (void *)a};
    struct weir_readable *rs = rsrc_new(&s);
    struct weir_reader r, r2;

    (void)state;
    weir_reader_acquire(&r, rs);
    weir_reader_release(&r);
    assert_int_equal(weir_reader_cancel(&r, E1), -EINVAL);
    assert_int_equal(s.cancels, 0);
    weir_reader_acquire(&r2, rs);
    assert_read(&r2, "a");
    weir_reader_release(&r2);
    weir_readable_destroy(rs);
}

/* F: "Getting a second reader after erroring the stream and releasing the
 * reader should succeed" */
static void second_reader_after_error(void **state)
{
    struct rsrc s = {0};
    struct weir_readable *rs = rsrc_new(&s);
    struct weir_reader r1, r2;
    struct done d = {0};
    struct weir_chunk c;

    (void)state;
    weir_reader_acquire(&r1, rs);
    assert_int_equal(weir_reader_read(&r1, &c, read_cb, &d), WEIR_PENDING);
    assert_int_equal(weir_reader_acquire(&r2, rs), -EBUSY);
    weir_readable_error(rs, E1);
    assert_int_equal(d.rc, E1);
    weir_reader_release(&r1);
    assert_int_equal(weir_reader_acquire(&r2, rs), 0);
    assert_int_equal(read_now(&r2, NULL, 0), E1);
    weir_reader_release(&r2);
    weir_readable_destroy(rs);
}

/* F: "Erroring a ReadableStream after checking closed should reject
 * ReadableStreamDefaultReader closed promise" */
static void error_after_reader(void **state)
{
    struct rsrc s = {0};
    struct weir_readable *rs = rsrc_new(&s);
    struct weir_reader r;

    (void)state;
    weir_reader_acquire(&r, rs);
    weir_readable_error(rs, E1);
    assert_int_equal(rs_err(rs), E1);
    weir_reader_release(&r);
    weir_readable_destroy(rs);
}

/* F: "Erroring a ReadableStream before checking closed should reject
 * ReadableStreamDefaultReader closed promise" */
static void error_before_reader(void **state)
{
    struct rsrc s = {0};
    struct weir_readable *rs = rsrc_new(&s);
    struct weir_reader r;

    (void)state;
    weir_readable_error(rs, E1);
    weir_reader_acquire(&r, rs);
    weir_reader_release(&r);
    weir_reader_acquire(&r, rs);
    assert_int_equal(read_now(&r, NULL, 0), E1);
    weir_reader_release(&r);
    weir_readable_destroy(rs);
}

/* F: "Reading twice on a stream that gets closed" */
static void twice_then_closed(void **state)
{
    struct rsrc s = {0};
    struct weir_readable *rs = rsrc_new(&s);
    struct weir_reader r;
    struct done d1 = {0}, d2 = {0};
    struct weir_chunk c;

    (void)state;
    weir_reader_acquire(&r, rs);
    assert_int_equal(weir_reader_read(&r, &c, read_cb, &d1), WEIR_PENDING);
    assert_int_equal(weir_reader_read(&r, &c, read_cb, &d2), WEIR_PENDING);
    weir_readable_close(rs);
    assert_int_equal(d1.rc, WEIR_DONE);
    assert_int_equal(d2.rc, WEIR_DONE);
    weir_reader_release(&r);
    weir_readable_destroy(rs);
}

/* F: "Reading twice on a closed stream" */
static void twice_on_closed(void **state)
{
    struct rsrc s = {0};
    struct weir_readable *rs = rsrc_new(&s);
    struct weir_reader r;
    struct weir_chunk c;

    (void)state;
    weir_readable_close(rs);
    weir_reader_acquire(&r, rs);
    assert_int_equal(weir_reader_read(&r, &c, never_read, NULL), WEIR_DONE);
    assert_int_equal(weir_reader_read(&r, &c, never_read, NULL), WEIR_DONE);
    weir_reader_release(&r);
    weir_readable_destroy(rs);
}

/* F: "Reading twice on an errored stream" */
static void twice_on_errored(void **state)
{
    struct rsrc s = {0};
    struct weir_readable *rs = rsrc_new(&s);
    struct weir_reader r;

    (void)state;
    weir_readable_error(rs, E1);
    weir_reader_acquire(&r, rs);
    assert_int_equal(read_now(&r, NULL, 0), E1);
    assert_int_equal(read_now(&r, NULL, 0), E1);
    weir_reader_release(&r);
    weir_readable_destroy(rs);
}

/* F: "Reading twice on a stream that gets errored" */
static void twice_then_errored(void **state)
{
    struct rsrc s = {0};
    struct weir_readable *rs = rsrc_new(&s);
    struct weir_reader r;
    struct done d1 = {0}, d2 = {0};
    struct weir_chunk c;

    (void)state;
    weir_reader_acquire(&r, rs);
    weir_reader_read(&r, &c, read_cb, &d1);
    weir_reader_read(&r, &c, read_cb, &d2);
    weir_readable_error(rs, E1);
    assert_int_equal(d1.rc, E1);
    assert_int_equal(d2.rc, E1);
    weir_reader_release(&r);
    weir_readable_destroy(rs);
}

/* F: "controller.close() should clear the list of pending read
 * requests" */
static int pull_close(struct rsrc *s)
{
    return weir_readable_close(s->rs);
}

static void close_clears_reads(void **state)
{
    struct rsrc s = {.on_pull = pull_close};
    struct weir_readable *rs;
    struct weir_reader r;
    struct weir_chunk c;

    (void)state;
    /* hwm 0: the read, not the creation, asks the source. */
    rs = rsrc_make(&s, 0, false);
    weir_reader_acquire(&r, rs);
    assert_int_equal(weir_reader_read(&r, &c, never_read, NULL), WEIR_DONE);
    /* Nothing is left waiting: the release fails no read. */
    weir_reader_release(&r);
    assert_false(weir_readable_locked(rs));
    weir_readable_destroy(rs);
}

/* F: "Second reader can read chunks after first reader was released with
 * pending read requests" */
static void second_reader_after_pending(void **state)
{
    struct weir_readable *rs;
    struct weir_reader r1, r2;
    struct weir_chunk c;
    struct done d = {0};

    (void)state;
    assert_int_equal(weir_readable_create(&rs, NULL, NULL, NULL), 0);
    weir_reader_acquire(&r1, rs);
    assert_int_equal(weir_reader_read(&r1, &c, read_cb, &d), WEIR_PENDING);
    weir_reader_release(&r1);
    /* The spec's TypeError for a read failed by the release. */
    assert_int_equal(d.calls, 1);
    assert_int_equal(d.rc, -ECANCELED);
    weir_readable_enqueue(rs, S("a"));
    assert_int_equal(weir_reader_acquire(&r2, rs), 0);
    assert_read(&r2, "a");
    weir_reader_release(&r2);
    assert_int_equal(d.calls, 1);
    weir_readable_destroy(rs);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        WPT(second_reader_fails,
            "Constructing a ReadableStreamDefaultReader directly should fail "
            "if the stream is already locked (via direct construction)"),
        WPT(reader_on_closed, "Constructing a ReadableStreamDefaultReader "
                              "directly should be OK if the stream is "
                              "closed"),
        WPT(reader_on_errored, "Constructing a ReadableStreamDefaultReader "
                               "directly should be OK if the stream is "
                               "errored"),
        WPT(read_waits, "Reading from a reader for an empty stream will wait "
                        "until a chunk is available"),
        WPT(cancel_keeps_lock,
            "cancel() on a reader does not release the reader"),
        WPT(closed_after_close, "closed should be fulfilled after stream is "
                                "closed (.closed access before acquiring)"),
        WPT(released_reader_rejects,
            "closed should be rejected after reader releases its lock "
            "(multiple stream locks)"),
        WPT(readers_in_sequence,
            "Multiple readers can access the stream in sequence"),
        WPT(released_cannot_unlock, "Cannot use an already-released reader "
                                    "to unlock a stream again"),
        WPT(cancel_released_noop, "cancel() on a released reader is a no-op "
                                  "and does not pass through"),
        WPT(second_reader_after_error,
            "Getting a second reader after erroring the stream and releasing "
            "the reader should succeed"),
        WPT(error_after_reader,
            "Erroring a ReadableStream after checking closed should reject "
            "ReadableStreamDefaultReader closed promise"),
        WPT(error_before_reader,
            "Erroring a ReadableStream before checking closed should reject "
            "ReadableStreamDefaultReader closed promise"),
        WPT(twice_then_closed, "Reading twice on a stream that gets closed"),
        WPT(twice_on_closed, "Reading twice on a closed stream"),
        WPT(twice_on_errored, "Reading twice on an errored stream"),
        WPT(twice_then_errored, "Reading twice on a stream that gets errored"),
        WPT(close_clears_reads, "controller.close() should clear the list of "
                                "pending read requests"),
        WPT(second_reader_after_pending,
            "Second reader can read chunks after first reader was released "
            "with pending read requests"),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
