/*
 * WPT streams/readable-streams/tee.any.js, ported to weir's C API
 * (weir_tee_create with two branches and the default block policy).
 */
#include "wpt.h"

#define F "readable-streams/tee.any.js"

struct fx {
    struct rsrc s;
    struct weir_readable *rs;
    struct weir_tee *t;
    struct weir_readable *b1, *b2;
    struct weir_reader r1, r2;
};

static void fx_open(struct fx *f, size_t src_hwm)
{
    f->rs = rsrc_make(&f->s, src_hwm, false);
    assert_int_equal(weir_tee_create(&f->t, f->rs, 2, NULL), 0);
    f->b1 = weir_tee_branch(f->t, 0);
    f->b2 = weir_tee_branch(f->t, 1);
    assert_int_equal(weir_reader_acquire(&f->r1, f->b1), 0);
    assert_int_equal(weir_reader_acquire(&f->r2, f->b2), 0);
}

static void fx_close(struct fx *f)
{
    weir_reader_release(&f->r1);
    weir_reader_release(&f->r2);
    weir_tee_destroy(f->t);
    weir_readable_destroy(f->rs);
}

static const char *const ab[] = {"a", "b", NULL};

/* F: "ReadableStream teeing: rs.tee() returns an array of two
 * ReadableStreams" */
static void two_branches(void **state)
{
    struct weir_readable *rs;
    struct weir_tee *t;

    (void)state;
    assert_int_equal(weir_readable_create(&rs, NULL, NULL, NULL), 0);
    assert_int_equal(weir_tee_create(&t, rs, 2, NULL), 0);
    assert_int_equal(weir_tee_branches(t), 2);
    assert_non_null(weir_tee_branch(t, 0));
    assert_non_null(weir_tee_branch(t, 1));
    assert_true(weir_tee_branch(t, 0) != weir_tee_branch(t, 1));
    assert_true(weir_readable_locked(rs));
    weir_tee_destroy(t);
    weir_readable_destroy(rs);
}

/* F: "ReadableStream teeing: should be able to read one branch to the end
 * without affecting the other". Departure (tee block policy): the slower
 * branch governs, so branch1 gets "b" only once branch2 has taken "a";
 * the spec's tee would run ahead and queue without bound in branch2. */
static void one_branch_to_the_end(void **state)
{
    struct fx f = {
        .s = {.on_start = start_enqueue, .user = (void *)ab, .n = 1}};
    struct done d = {0};
    struct weir_chunk c;

    (void)state;
    fx_open(&f, 2);
    assert_read(&f.r1, "a");
    assert_int_equal(weir_reader_read(&f.r1, &c, read_cb, &d), WEIR_PENDING);
    assert_read(&f.r2, "a");
    assert_int_equal(d.rc, 0);
    assert_string_equal(d.text, "b");
    assert_int_equal(weir_reader_read(&f.r1, &c, never_read, NULL), WEIR_DONE);
    /* branch2 still has its "b", then ends too. */
    assert_false(weir_readable_closed(f.b2));
    assert_read(&f.r2, "b");
    fx_close(&f);
}

/* F: "ReadableStream teeing: values should be equal across each branch" */
static void equal_values(void **state)
{
    static const char *const obj[] = {"{the: test object}", NULL};
    struct fx f = {.s = {.on_start = start_enqueue, .user = (void *)obj}};
    struct weir_chunk c1, c2;

    (void)state;
    fx_open(&f, 1);
    assert_int_equal(weir_reader_read(&f.r1, &c1, never_read, NULL), 0);
    assert_int_equal(weir_reader_read(&f.r2, &c2, never_read, NULL), 0);
    /* Shared, not copied. */
    assert_ptr_equal(c1.data, c2.data);
    assert_int_equal(c1.len, c2.len);
    fx_close(&f);
}

/* F: "ReadableStream teeing: errors in the source should propagate to both
 * branches" */
static void errors_propagate(void **state)
{
    struct fx f = {
        .s = {.on_start = start_enqueue, .user = (void *)ab, .pull_rc = E1}};

    struct done d = {0};
    struct weir_chunk c;

    (void)state;
    fx_open(&f, 1);
    assert_read(&f.r1, "a");
    /* Block policy: "b" comes once branch2 has taken "a". */
    assert_int_equal(weir_reader_read(&f.r1, &c, read_cb, &d), WEIR_PENDING);
    assert_read(&f.r2, "a");
    /* Reading "b" emptied the source, whose pull then failed: "b" still
     * reaches the read that waited, then the error both branches. */
    assert_int_equal(d.rc, 0);
    assert_string_equal(d.text, "b");
    assert_int_equal(rs_err(f.rs), E1);
    assert_int_equal(read_now(&f.r2, NULL, 0), E1);
    assert_int_equal(read_now(&f.r1, NULL, 0), E1);
    fx_close(&f);
}

static void cancel_one(bool first)
{
    struct fx f = {
        .s = {.on_start = start_enqueue, .user = (void *)ab, .n = 1}};
    struct weir_reader *gone, *kept;
    struct weir_chunk c;

    fx_open(&f, 2);
    gone = first ? &f.r1 : &f.r2;
    kept = first ? &f.r2 : &f.r1;
    assert_int_equal(weir_reader_cancel(gone, E1), 0);
    assert_int_equal(weir_reader_read(gone, &c, never_read, NULL), WEIR_DONE);
    assert_read(kept, "a");
    assert_read(kept, "b");
    assert_int_equal(weir_reader_read(kept, &c, never_read, NULL), WEIR_DONE);
    assert_int_equal(f.s.cancels, 0);
    fx_close(&f);
}

/* F: "ReadableStream teeing: canceling branch1 should not impact
 * branch2" */
static void cancel_branch1(void **state)
{
    (void)state;
    cancel_one(true);
}

/* F: "ReadableStream teeing: canceling branch2 should not impact
 * branch1" */
static void cancel_branch2(void **state)
{
    (void)state;
    cancel_one(false);
}

/* F: "ReadableStream teeing: canceling both branches should aggregate the
 * cancel reasons into an array". Departure (tee cancel reason): C has no
 * array of reasons; the source is cancelled once, with the last branch's
 * reason. */
static void cancel_both(void **state)
{
    struct fx f = {0};

    (void)state;
    fx_open(&f, 1);
    weir_reader_cancel(&f.r1, E1);
    assert_int_equal(f.s.cancels, 0);
    weir_reader_cancel(&f.r2, E2);
    assert_int_equal(f.s.cancels, 1);
    assert_int_equal(f.s.cancel_reason, E2);
    fx_close(&f);
}

/* F: "ReadableStream teeing: failing to cancel the original stream should
 * cause cancel() to reject on branches". Departure (tee cancel reason):
 * the source is cancelled by the last branch to leave, and only that
 * branch's cancel sees the failure. */
static void cancel_fails(void **state)
{
    struct fx f = {.s = {.cancel_rc = E1}};

    (void)state;
    fx_open(&f, 1);
    assert_int_equal(weir_reader_cancel(&f.r1, E2), 0);
    assert_int_equal(weir_reader_cancel(&f.r2, E2), E1);
    fx_close(&f);
}

/* F: "ReadableStream teeing: erroring a teed stream should properly handle
 * canceled branches" */
static void error_then_cancel(void **state)
{
    struct fx f = {0};

    (void)state;
    fx_open(&f, 1);
    weir_readable_error(f.rs, E1);
    assert_int_equal(weir_reader_cancel(&f.r1, E2), E1);
    assert_int_equal(weir_reader_cancel(&f.r2, E2), E1);
    fx_close(&f);
}

/* F: "ReadableStream teeing: closing the original should immediately close
 * the branches" */
static void close_closes_branches(void **state)
{
    struct fx f = {0};

    (void)state;
    fx_open(&f, 1);
    weir_readable_close(f.rs);
    assert_true(weir_readable_closed(f.b1));
    assert_true(weir_readable_closed(f.b2));
    fx_close(&f);
}

/* F: "ReadableStream teeing: erroring the original should immediately
 * error the branches" */
static void error_errors_branches(void **state)
{
    struct fx f = {0};

    (void)state;
    fx_open(&f, 1);
    weir_readable_error(f.rs, E1);
    assert_int_equal(rs_err(f.b1), E1);
    assert_int_equal(rs_err(f.b2), E1);
    fx_close(&f);
}

/* The same while a branch is full: under the block rule the tee is not
 * reading then, and sees the source's error through its watch. */
static void error_errors_full_branches(void **state)
{
    struct fx f = {.s = {.on_start = start_enqueue, .user = (void *)ab}};

    (void)state;
    fx_open(&f, 2);
    /* Both branches hold "a", full; the tee waits. */
    assert_int_equal(weir_readable_queued(f.b1), 1);
    weir_readable_error(f.rs, E1);
    assert_int_equal(rs_err(f.b1), E1);
    assert_int_equal(rs_err(f.b2), E1);
    assert_int_equal(read_now(&f.r1, NULL, 0), E1);
    fx_close(&f);
}

/* And a close with the branches full and nothing queued at the source. */
static const char *const a[] = {"a", NULL};

static void close_closes_full_branches(void **state)
{
    struct fx f = {.s = {.on_start = start_enqueue, .user = (void *)a}};
    struct weir_chunk c;

    (void)state;
    fx_open(&f, 1);
    assert_int_equal(weir_readable_queued(f.b1), 1);
    weir_readable_close(f.rs);
    assert_read(&f.r1, "a");
    assert_int_equal(weir_reader_read(&f.r1, &c, never_read, NULL), WEIR_DONE);
    assert_read(&f.r2, "a");
    assert_int_equal(weir_reader_read(&f.r2, &c, never_read, NULL), WEIR_DONE);
    fx_close(&f);
}

/* F: "ReadableStreamTee should not pull more chunks than can fit in the
 * branch queue" */
static void no_overpull(void **state)
{
    struct rsrc s = {0};
    struct weir_readable *rs = rsrc_make(&s, 0, false);
    struct weir_tee *t;

    (void)state;
    assert_int_equal(weir_tee_create(&t, rs, 2, NULL), 0);
    assert_string_equal(s.ev.s, "pull");
    weir_tee_destroy(t);
    weir_readable_destroy(rs);
}

/* F: "ReadableStreamTee should only pull enough to fill the emptiest
 * queue" */
static int pull_a(struct rsrc *s)
{
    return weir_readable_enqueue(s->rs, S("a"));
}

static void pull_for_emptiest(void **state)
{
    struct fx f = {.s = {.on_pull = pull_a}};

    (void)state;
    fx_open(&f, 0);
    assert_read(&f.r1, "a");
    assert_read(&f.r2, "a");
    assert_string_equal(f.s.ev.s, "pull pull");
    fx_close(&f);
}

/* F: "ReadableStream teeing: canceling both branches in reverse order
 * should aggregate the cancel reasons into an array". Departure (tee
 * cancel reason): the source is cancelled once, with the reason of the
 * last branch to cancel, here branch1's. */
static void cancel_both_reverse(void **state)
{
    struct fx f = {0};

    (void)state;
    fx_open(&f, 1);
    assert_int_equal(weir_reader_cancel(&f.r2, E2), 0);
    assert_int_equal(f.s.cancels, 0);
    assert_int_equal(weir_reader_cancel(&f.r1, E1), 0);
    assert_int_equal(f.s.cancels, 1);
    assert_int_equal(f.s.cancel_reason, E1);
    fx_close(&f);
}

/* F: "ReadableStream teeing: erroring a teed stream should error both
 * branches": with two chunks enqueued, so that no branch is waiting for
 * one, the error still reaches both branches, whose readers come after
 * it. */
static void error_errors_both_branches(void **state)
{
    struct weir_readable *rs;
    struct weir_tee *t;
    struct weir_reader r1, r2;

    (void)state;
    assert_int_equal(weir_readable_create(&rs, NULL, NULL, NULL), 0);
    assert_int_equal(weir_tee_create(&t, rs, 2, NULL), 0);
    weir_readable_enqueue(rs, S("x"));
    weir_readable_enqueue(rs, S("y"));
    weir_readable_error(rs, E1);
    assert_int_equal(weir_reader_acquire(&r1, weir_tee_branch(t, 0)), 0);
    assert_int_equal(weir_reader_acquire(&r2, weir_tee_branch(t, 1)), 0);
    assert_int_equal(rs_err(weir_tee_branch(t, 0)), E1);
    assert_int_equal(rs_err(weir_tee_branch(t, 1)), E1);
    assert_int_equal(read_now(&r1, NULL, 0), E1);
    assert_int_equal(read_now(&r2, NULL, 0), E1);
    weir_reader_release(&r1);
    weir_reader_release(&r2);
    weir_tee_destroy(t);
    weir_readable_destroy(rs);
}

/* F: "ReadableStream teeing: canceling branch1 should finish when branch2
 * reads until end of stream" (the WPT cancels the second branch and reads
 * the first). weir's branch cancel finishes at once; the other branch
 * goes on to the end and the source is never cancelled. */
static void cancel_one_other_reads_to_end(void **state)
{
    struct fx f = {0};
    struct weir_chunk c;

    (void)state;
    fx_open(&f, 1);
    assert_int_equal(weir_reader_cancel(&f.r2, E2), 0);
    weir_readable_enqueue(f.rs, S("a"));
    assert_read(&f.r1, "a");
    weir_readable_close(f.rs);
    assert_int_equal(weir_reader_read(&f.r1, &c, never_read, NULL), WEIR_DONE);
    assert_true(weir_readable_closed(f.b1));
    assert_int_equal(f.s.cancels, 0);
    fx_close(&f);
}

/* F: "ReadableStream teeing: canceling branch1 should finish when original
 * stream errors" (again the second branch cancels) */
static void cancel_one_then_source_errors(void **state)
{
    struct fx f = {0};
    struct done d = {0};
    struct weir_chunk c;

    (void)state;
    fx_open(&f, 1);
    assert_int_equal(weir_reader_cancel(&f.r2, E2), 0);
    assert_int_equal(weir_reader_read(&f.r1, &c, read_cb, &d), WEIR_PENDING);
    weir_readable_error(f.rs, E1);
    assert_int_equal(d.calls, 1);
    assert_int_equal(d.rc, E1);
    assert_int_equal(f.s.cancels, 0);
    fx_close(&f);
}

/* F: "ReadableStream teeing: canceling both branches in sequence with
 * delay" */
static void cancel_both_in_sequence(void **state)
{
    struct fx f = {0};

    (void)state;
    fx_open(&f, 1);
    assert_int_equal(weir_reader_cancel(&f.r1, E1), 0);
    assert_int_equal(f.s.cancels, 0);
    assert_int_equal(weir_reader_cancel(&f.r2, E2), 0);
    assert_int_equal(f.s.cancels, 1);
    fx_close(&f);
}

/* F: "ReadableStreamTee should not pull when original is already
 * errored" */
static void no_pull_when_errored(void **state)
{
    struct rsrc s = {0};
    struct weir_readable *rs = rsrc_make(&s, 0, false);
    struct weir_tee *t;

    (void)state;
    weir_readable_error(rs, E1);
    assert_int_equal(weir_tee_create(&t, rs, 2, NULL), 0);
    assert_string_equal(s.ev.s, "");
    assert_int_equal(rs_err(weir_tee_branch(t, 0)), E1);
    assert_int_equal(rs_err(weir_tee_branch(t, 1)), E1);
    weir_tee_destroy(t);
    weir_readable_destroy(rs);
}

/* F: "ReadableStreamTee stops pulling when original stream errors while
 * branch 1 is reading", "... branch 2 ...", "... both branches are
 * reading". Departure (tee block policy): after one branch has read "a",
 * the other still holds it and is full, so the tee does not pull again
 * until both have read it; the spec's tee pulls at once. */
static void stop_pulling_on_error(bool read1, bool read2)
{
    struct fx f = {0};

    fx_open(&f, 0);
    assert_string_equal(f.s.ev.s, "pull");
    weir_readable_enqueue(f.rs, S("a"));
    if (read1)
        assert_read(&f.r1, "a");
    if (read2)
        assert_read(&f.r2, "a");
    assert_string_equal(f.s.ev.s, read1 && read2 ? "pull pull" : "pull");
    weir_readable_error(f.rs, E1);
    assert_int_equal(rs_err(f.b1), E1);
    assert_int_equal(rs_err(f.b2), E1);
    assert_string_equal(f.s.ev.s, read1 && read2 ? "pull pull" : "pull");
    fx_close(&f);
}

static void stop_pulling_branch1(void **state)
{
    (void)state;
    stop_pulling_on_error(true, false);
}

static void stop_pulling_branch2(void **state)
{
    (void)state;
    stop_pulling_on_error(false, true);
}

static void stop_pulling_both(void **state)
{
    (void)state;
    stop_pulling_on_error(true, true);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        WPT(two_branches, "ReadableStream teeing: rs.tee() returns an array "
                          "of two ReadableStreams"),
        WPT(one_branch_to_the_end,
            "ReadableStream teeing: should be able to read one branch to "
            "the end without affecting the other"),
        WPT(equal_values, "ReadableStream teeing: values should be equal "
                          "across each branch"),
        WPT(errors_propagate, "ReadableStream teeing: errors in the source "
                              "should propagate to both branches"),
        WPT(cancel_branch1, "ReadableStream teeing: canceling branch1 should "
                            "not impact branch2"),
        WPT(cancel_branch2, "ReadableStream teeing: canceling branch2 should "
                            "not impact branch1"),
        WPT(cancel_both, "ReadableStream teeing: canceling both branches "
                         "should aggregate the cancel reasons into an "
                         "array"),
        WPT(cancel_both_reverse,
            "ReadableStream teeing: canceling both branches in reverse order "
            "should aggregate the cancel reasons into an array"),
        WPT(cancel_fails, "ReadableStream teeing: failing to cancel the "
                          "original stream should cause cancel() to reject "
                          "on branches"),
        WPT(error_then_cancel, "ReadableStream teeing: erroring a teed "
                               "stream should properly handle canceled "
                               "branches"),
        WPT(error_errors_both_branches, "ReadableStream teeing: erroring a "
                                        "teed stream should error both "
                                        "branches"),
        WPT(close_closes_branches, "ReadableStream teeing: closing the "
                                   "original should immediately close the "
                                   "branches"),
        WPT(error_errors_branches, "ReadableStream teeing: erroring the "
                                   "original should immediately error the "
                                   "branches"),
        WPT(error_errors_full_branches,
            "ReadableStream teeing: erroring the original should immediately "
            "error the branches (branches full)"),
        WPT(close_closes_full_branches,
            "ReadableStream teeing: closing the original should immediately "
            "close the branches (branches full)"),
        WPT(cancel_one_other_reads_to_end,
            "ReadableStream teeing: canceling branch1 should finish when "
            "branch2 reads until end of stream"),
        WPT(cancel_one_then_source_errors,
            "ReadableStream teeing: canceling branch1 should finish when "
            "original stream errors"),
        WPT(cancel_both_in_sequence, "ReadableStream teeing: canceling both "
                                     "branches in sequence with delay"),
        WPT(no_overpull, "ReadableStreamTee should not pull more chunks than "
                         "can fit in the branch queue"),
        WPT(pull_for_emptiest, "ReadableStreamTee should only pull enough to "
                               "fill the emptiest queue"),
        WPT(no_pull_when_errored, "ReadableStreamTee should not pull when "
                                  "original is already errored"),
        WPT(stop_pulling_branch1,
            "ReadableStreamTee stops pulling when original stream errors "
            "while branch 1 is reading"),
        WPT(stop_pulling_branch2,
            "ReadableStreamTee stops pulling when original stream errors "
            "while branch 2 is reading"),
        WPT(stop_pulling_both,
            "ReadableStreamTee stops pulling when original stream errors "
            "while both branches are reading"),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
