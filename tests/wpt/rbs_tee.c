/*
 * WPT streams/readable-byte-streams/tee.any.js, ported to weir's C API.
 */
#include "wpt.h"

/* readable-byte-streams/tee.any.js: "ReadableStream teeing with byte
 * source: rs.tee() returns an array of two ReadableStreams" (byte-stream
 * branches, which serve BYOB reads) */
static void two_byte_branches(void **state)
{
    struct weir_readable_options o = {.byte_stream = true};
    struct weir_readable *rs;
    struct weir_tee *t;
    struct weir_reader r;
    struct weir_chunk c;
    struct done d = {0};
    uint8_t b[4];

    (void)state;
    assert_int_equal(weir_readable_create(&rs, NULL, NULL, &o), 0);
    assert_int_equal(weir_tee_create(&t, rs, 2, NULL), 0);
    assert_int_equal(weir_tee_branches(t), 2);
    for (unsigned i = 0; i < 2; i++) {
        assert_int_equal(weir_reader_acquire(&r, weir_tee_branch(t, i)), 0);
        assert_int_equal(
            weir_reader_read_byob(&r, b, sizeof(b), 1, &c, read_cb, &d),
            WEIR_PENDING);
        weir_reader_release(&r);
    }
    weir_tee_destroy(t);
    weir_readable_destroy(rs);
}

/* A byte source and its tee into two default branches, with readers. */
struct fx {
    struct rsrc s;
    struct weir_readable *rs;
    struct weir_tee *t;
    struct weir_readable *b1, *b2;
    struct weir_reader r1, r2;
};

static void fx_open(struct fx *f)
{
    f->rs = rsrc_make(&f->s, 0, true);
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

static uint8_t one[1] = {0x01}, two[1] = {0x02};

static struct weir_chunk bytes(uint8_t *p, uint32_t n)
{
    return (struct weir_chunk){NULL, p, n};
}

/* start: enqueue 0x01 and 0x02, then close when s->n is set. */
static int start_01_02(struct rsrc *s)
{
    weir_readable_enqueue(s->rs, bytes(one, 1));
    weir_readable_enqueue(s->rs, bytes(two, 1));
    if (s->n)
        weir_readable_close(s->rs);
    return 0;
}

/* A one-byte BYOB read that answers now: its byte, or -1 for done. */
static int byob_now(struct weir_reader *r)
{
    uint8_t b[1] = {0};
    struct weir_chunk c;
    int rc = weir_reader_read_byob(r, b, 1, 1, &c, never_read, NULL);

    if (rc == WEIR_DONE) {
        assert_int_equal(c.len, 0);
        return -1;
    }
    assert_int_equal(rc, 0);
    assert_int_equal(c.len, 1);
    return b[0];
}

/* A one-byte BYOB read into b that may wait: 0 when it answered now,
 * WEIR_PENDING when d will get the answer. */
static int byob_into(struct weir_reader *r, uint8_t *b, struct done *d)
{
    struct weir_chunk c;
    int rc = weir_reader_read_byob(r, b, 1, 1, &c, read_cb, d);

    assert_true(rc == 0 || rc == WEIR_PENDING);
    return rc;
}

/* F: "ReadableStream teeing with byte source: should be able to read one
 * branch to the end without affecting the other". Departure (tee block
 * policy): branch1 gets 0x02 only once branch2 has taken 0x01. */
static void one_branch_to_the_end(void **state)
{
    struct fx f = {.s = {.on_start = start_01_02, .n = 1}};
    struct done d = {0};
    uint8_t b[1];

    (void)state;
    fx_open(&f);
    assert_int_equal(byob_now(&f.r1), 0x01);
    assert_int_equal(byob_into(&f.r1, b, &d), WEIR_PENDING);
    assert_int_equal(byob_now(&f.r2), 0x01);
    assert_int_equal(d.rc, 0);
    assert_int_equal(d.chunk.len, 1);
    assert_int_equal(b[0], 0x02);
    assert_int_equal(byob_now(&f.r1), -1);
    assert_true(weir_readable_closed(f.b1));
    /* branch2 still holds 0x02. */
    assert_false(weir_readable_closed(f.b2));
    fx_close(&f);
}

/* F: "ReadableStream teeing with byte source: chunks for BYOB requests
 * from branch 1 should be cloned to branch 2": the source answers
 * branch1's BYOB read in its request when it has one. */
static int pull_respond_01(struct rsrc *s)
{
    uint8_t *p;
    size_t n;

    if (s->pulls != 1)
        return 0;
    if (weir_readable_byob_request(s->rs, &p, &n) == 0) {
        p[0] = 0x01;
        return weir_readable_byob_respond(s->rs, 1);
    }
    return weir_readable_enqueue(s->rs, bytes(one, 1));
}

static void byob_cloned_to_branch2(void **state)
{
    struct fx f = {.s = {.on_pull = pull_respond_01}};
    uint8_t b[3] = {42, 42, 42};
    struct weir_chunk c = {0};
    struct done d = {0};

    (void)state;
    fx_open(&f);
    if (byob_into(&f.r1, b, &d) == WEIR_PENDING)
        assert_int_equal(d.rc, 0);
    assert_int_equal(b[0], 0x01);
    assert_int_equal(b[1], 42);
    assert_int_equal(weir_reader_read(&f.r2, &c, never_read, NULL), 0);
    assert_int_equal(c.len, 1);
    assert_int_equal(c.data[0], 0x01);
    fx_close(&f);
}

/* F: "ReadableStream teeing with byte source: errors in the source should
 * propagate to both branches" */
static void errors_propagate(void **state)
{
    struct fx f = {.s = {.on_start = start_01_02, .pull_rc = E1}};
    struct weir_chunk c;
    struct done d = {0}, d2 = {0};
    uint8_t b[1];

    (void)state;
    fx_open(&f);
    assert_int_equal(byob_now(&f.r1), 0x01);
    /* Block policy: 0x02 comes once branch2 has taken 0x01. */
    assert_int_equal(byob_into(&f.r1, b, &d), WEIR_PENDING);
    assert_int_equal(byob_now(&f.r2), 0x01);
    assert_int_equal(d.rc, 0);
    assert_int_equal(b[0], 0x02);
    /* branch1's next read waits for branch2 to take 0x02; then the tee
     * reads the empty source, whose pull fails. */
    assert_int_equal(byob_into(&f.r1, b, &d2), WEIR_PENDING);
    assert_int_equal(byob_now(&f.r2), 0x02);
    assert_int_equal(d2.rc, E1);
    assert_int_equal(weir_reader_read_byob(&f.r2, b, 1, 1, &c, NULL, NULL), E1);
    assert_int_equal(rs_err(f.b1), E1);
    assert_int_equal(rs_err(f.b2), E1);
    fx_close(&f);
}

/* F: "ReadableStream teeing with byte source: canceling branch1 should not
 * impact branch2", "... canceling branch2 should not impact branch1" */
static void cancel_one(bool first)
{
    struct fx f = {.s = {.on_start = start_01_02, .n = 1}};
    struct weir_reader *gone, *kept;

    fx_open(&f);
    gone = first ? &f.r1 : &f.r2;
    kept = first ? &f.r2 : &f.r1;
    assert_int_equal(weir_reader_cancel(gone, E1), 0);
    assert_int_equal(byob_now(gone), -1);
    assert_int_equal(byob_now(kept), 0x01);
    assert_int_equal(byob_now(kept), 0x02);
    assert_int_equal(byob_now(kept), -1);
    assert_int_equal(f.s.cancels, 0);
    fx_close(&f);
}

static void cancel_branch1(void **state)
{
    (void)state;
    cancel_one(true);
}

static void cancel_branch2(void **state)
{
    (void)state;
    cancel_one(false);
}

/* F: "ReadableStream teeing with byte source: closing the original should
 * close the branches" */
static void close_closes_branches(void **state)
{
    struct fx f = {0};

    (void)state;
    fx_open(&f);
    weir_readable_close(f.rs);
    assert_int_equal(byob_now(&f.r1), -1);
    assert_true(weir_readable_closed(f.b1));
    assert_true(weir_readable_closed(f.b2));
    fx_close(&f);
}

/* F: "ReadableStream teeing with byte source: erroring the original
 * should immediately error the branches" */
static void error_errors_branches(void **state)
{
    struct fx f = {0};

    (void)state;
    fx_open(&f);
    weir_readable_error(f.rs, E1);
    assert_int_equal(rs_err(f.b1), E1);
    assert_int_equal(rs_err(f.b2), E1);
    fx_close(&f);
}

/* Pending reads on both branches, default or BYOB, when the source
 * errors. */
static void error_fails_pending(bool byob)
{
    struct fx f = {0};
    struct done d1 = {0}, d2 = {0};
    struct weir_chunk c;
    uint8_t b1[1], b2[1];

    fx_open(&f);
    if (byob) {
        assert_int_equal(
            weir_reader_read_byob(&f.r1, b1, 1, 1, &c, read_cb, &d1),
            WEIR_PENDING);
        assert_int_equal(
            weir_reader_read_byob(&f.r2, b2, 1, 1, &c, read_cb, &d2),
            WEIR_PENDING);
    } else {
        assert_int_equal(weir_reader_read(&f.r1, &c, read_cb, &d1),
                         WEIR_PENDING);
        assert_int_equal(weir_reader_read(&f.r2, &c, read_cb, &d2),
                         WEIR_PENDING);
    }
    weir_readable_error(f.rs, E1);
    assert_int_equal(d1.calls, 1);
    assert_int_equal(d1.rc, E1);
    assert_int_equal(d2.calls, 1);
    assert_int_equal(d2.rc, E1);
    fx_close(&f);
}

/* F: "ReadableStream teeing with byte source: erroring the original
 * should error pending reads from default reader" */
static void error_fails_default_reads(void **state)
{
    (void)state;
    error_fails_pending(false);
}

/* F: "ReadableStream teeing with byte source: erroring the original
 * should error pending reads from BYOB reader" */
static void error_fails_byob_reads(void **state)
{
    (void)state;
    error_fails_pending(true);
}

/* F: "ReadableStream teeing with byte source: canceling branch1 should
 * finish when branch2 reads until end of stream" (the second branch
 * cancels, the first reads) */
static void cancel_one_other_reads_to_end(void **state)
{
    struct fx f = {0};
    struct weir_chunk c;
    struct done d = {0};
    uint8_t b[1];

    (void)state;
    fx_open(&f);
    assert_int_equal(weir_reader_cancel(&f.r2, E2), 0);
    weir_readable_enqueue(f.rs, bytes(one, 1));
    assert_int_equal(byob_now(&f.r1), 0x01);
    assert_int_equal(weir_reader_read_byob(&f.r1, b, 1, 1, &c, read_cb, &d),
                     WEIR_PENDING);
    weir_readable_close(f.rs);
    assert_int_equal(d.rc, WEIR_DONE);
    assert_true(weir_readable_closed(f.b1));
    assert_int_equal(f.s.cancels, 0);
    fx_close(&f);
}

/* F: "ReadableStream teeing with byte source: canceling branch1 should
 * finish when original stream errors" */
static void cancel_one_then_source_errors(void **state)
{
    struct fx f = {0};
    struct weir_chunk c;
    struct done d = {0};
    uint8_t b[1];

    (void)state;
    fx_open(&f);
    assert_int_equal(weir_reader_cancel(&f.r2, E2), 0);
    assert_int_equal(weir_reader_read_byob(&f.r1, b, 1, 1, &c, read_cb, &d),
                     WEIR_PENDING);
    weir_readable_error(f.rs, E1);
    assert_int_equal(d.rc, E1);
    assert_int_equal(f.s.cancels, 0);
    fx_close(&f);
}

/* F: "ReadableStream teeing with byte source: should not pull any chunks
 * if no branches are reading". Departure (tee block policy): a byte
 * stream's default branches hold one chunk (hwm 1, where the spec's hold
 * none), so the tee asks the source once to fill them. */
static void no_pull_without_reads(void **state)
{
    struct fx f = {0};

    (void)state;
    fx_open(&f);
    assert_string_equal(f.s.ev.s, "pull");
    fx_close(&f);
}

/* F: "ReadableStream teeing with byte source: should only pull enough to
 * fill the emptiest queue". Departure (tee block policy): the branches
 * hold one chunk by default, so once both have taken the first chunk the
 * tee reads the next one ahead: two pulls where the spec makes one. */
static int pull_enqueue_01(struct rsrc *s)
{
    return weir_readable_enqueue(s->rs, bytes(one, 1));
}

static void pull_for_emptiest(void **state)
{
    struct fx f = {.s = {.on_pull = pull_enqueue_01}};
    struct weir_chunk c;
    struct done d1 = {0}, d2 = {0};
    uint8_t b1[1], b2[1];
    int rc1, rc2;

    (void)state;
    fx_open(&f);
    rc1 = weir_reader_read_byob(&f.r1, b1, 1, 1, &c, read_cb, &d1);
    rc2 = weir_reader_read_byob(&f.r2, b2, 1, 1, &c, read_cb, &d2);
    assert_true(rc1 == 0 || (rc1 == WEIR_PENDING && d1.rc == 0));
    assert_true(rc2 == 0 || (rc2 == WEIR_PENDING && d2.rc == 0));
    assert_int_equal(b1[0], 0x01);
    assert_int_equal(b2[0], 0x01);
    assert_string_equal(f.s.ev.s, "pull pull");
    fx_close(&f);
}

/* F: "ReadableStream teeing with byte source: should not pull when
 * original is already errored" */
static void no_pull_when_errored(void **state)
{
    struct rsrc s = {0};
    struct weir_readable *rs = rsrc_make(&s, 0, true);
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

/* F: "ReadableStream teeing with byte source: stops pulling when original
 * stream errors while branch 1 is reading", "... branch 2 ...", "... both
 * branches are reading". The one pull is the tee's, made at creation to
 * fill the branches (see "should not pull any chunks ..."), and still
 * waiting when the branches read. */
static void stop_pulling_on_error(bool read1, bool read2)
{
    struct fx f = {0};
    struct weir_chunk c;
    struct done d1 = {0}, d2 = {0};
    uint8_t b1[1], b2[1];

    fx_open(&f);
    assert_string_equal(f.s.ev.s, "pull");
    if (read1)
        assert_int_equal(
            weir_reader_read_byob(&f.r1, b1, 1, 1, &c, read_cb, &d1),
            WEIR_PENDING);
    if (read2)
        assert_int_equal(
            weir_reader_read_byob(&f.r2, b2, 1, 1, &c, read_cb, &d2),
            WEIR_PENDING);
    assert_string_equal(f.s.ev.s, "pull");
    weir_readable_error(f.rs, E1);
    if (read1)
        assert_int_equal(d1.rc, E1);
    if (read2)
        assert_int_equal(d2.rc, E1);
    assert_int_equal(rs_err(f.b1), E1);
    assert_int_equal(rs_err(f.b2), E1);
    assert_string_equal(f.s.ev.s, "pull");
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

/* F: "ReadableStream teeing with byte source: canceling both branches in
 * sequence with delay": each pending BYOB read ends done with no bytes. */
static void cancel_both_in_sequence(void **state)
{
    struct fx f = {0};
    struct weir_chunk c;
    struct done d1 = {0}, d2 = {0};
    uint8_t b1[1] = {0x11}, b2[1] = {0x22};

    (void)state;
    fx_open(&f);
    assert_int_equal(weir_reader_read_byob(&f.r1, b1, 1, 1, &c, read_cb, &d1),
                     WEIR_PENDING);
    assert_int_equal(weir_reader_read_byob(&f.r2, b2, 1, 1, &c, read_cb, &d2),
                     WEIR_PENDING);
    assert_int_equal(weir_reader_cancel(&f.r1, E1), 0);
    assert_int_equal(weir_reader_cancel(&f.r2, E2), 0);
    assert_int_equal(d1.rc, WEIR_DONE);
    assert_int_equal(d1.chunk.len, 0);
    assert_int_equal(d2.rc, WEIR_DONE);
    assert_int_equal(d2.chunk.len, 0);
    assert_int_equal(f.s.cancels, 1);
    fx_close(&f);
}

/* F: "ReadableStream teeing with byte source: failing to cancel when
 * canceling both branches in sequence with delay". Departure (tee cancel
 * reason): only the last branch's cancel reports the source cancel's
 * failure. */
static void cancel_both_fails(void **state)
{
    struct fx f = {.s = {.cancel_rc = E1}};
    struct weir_chunk c;
    struct done d1 = {0}, d2 = {0};
    uint8_t b1[1] = {0x11}, b2[1] = {0x22};

    (void)state;
    fx_open(&f);
    assert_int_equal(weir_reader_read_byob(&f.r1, b1, 1, 1, &c, read_cb, &d1),
                     WEIR_PENDING);
    assert_int_equal(weir_reader_read_byob(&f.r2, b2, 1, 1, &c, read_cb, &d2),
                     WEIR_PENDING);
    assert_int_equal(weir_reader_cancel(&f.r1, E2), 0);
    assert_int_equal(weir_reader_cancel(&f.r2, E2), E1);
    assert_int_equal(d1.rc, WEIR_DONE);
    assert_int_equal(d1.chunk.len, 0);
    assert_int_equal(d2.rc, WEIR_DONE);
    assert_int_equal(d2.chunk.len, 0);
    fx_close(&f);
}

/* F: "ReadableStream teeing with byte source: read from branch1 with
 * default reader, then close while branch2 has pending BYOB read", and
 * the same with the branches swapped: the default read ends done, the
 * BYOB read done with its buffer and no bytes. */
static void close_with_mixed_reads(bool byob_on_2)
{
    struct fx f = {0};
    struct weir_reader *rd = byob_on_2 ? &f.r1 : &f.r2;
    struct weir_reader *rb = byob_on_2 ? &f.r2 : &f.r1;
    struct weir_chunk c;
    struct done dd = {0}, db = {0};
    uint8_t b[1] = {0x22};

    fx_open(&f);
    assert_int_equal(weir_reader_read(rd, &c, read_cb, &dd), WEIR_PENDING);
    assert_int_equal(weir_reader_read_byob(rb, b, 1, 1, &c, read_cb, &db),
                     WEIR_PENDING);
    weir_readable_close(f.rs);
    assert_int_equal(dd.calls, 1);
    assert_int_equal(dd.rc, WEIR_DONE);
    assert_int_equal(db.calls, 1);
    assert_int_equal(db.rc, WEIR_DONE);
    assert_ptr_equal(db.chunk.data, b);
    assert_int_equal(db.chunk.len, 0);
    fx_close(&f);
}

static void close_default_then_byob(void **state)
{
    (void)state;
    close_with_mixed_reads(true);
}

static void close_byob_then_default(void **state)
{
    (void)state;
    close_with_mixed_reads(false);
}

/* F: "ReadableStream teeing with byte source: enqueue() and close() while
 * both branches are pulling" */
static uint8_t x11[1] = {0x11};

static void enqueue_close_while_pulling(void **state)
{
    struct fx f = {0};
    struct weir_chunk c;
    struct done a1 = {0}, a2 = {0}, b1 = {0}, b2 = {0};

    (void)state;
    fx_open(&f);
    assert_int_equal(weir_reader_read(&f.r1, &c, read_cb, &a1), WEIR_PENDING);
    assert_int_equal(weir_reader_read(&f.r1, &c, read_cb, &a2), WEIR_PENDING);
    assert_int_equal(weir_reader_read(&f.r2, &c, read_cb, &b1), WEIR_PENDING);
    assert_int_equal(weir_reader_read(&f.r2, &c, read_cb, &b2), WEIR_PENDING);
    weir_readable_enqueue(f.rs, bytes(x11, 1));
    weir_readable_close(f.rs);
    assert_int_equal(a1.rc, 0);
    assert_int_equal(a1.chunk.len, 1);
    assert_int_equal(a1.chunk.data[0], 0x11);
    assert_int_equal(b1.rc, 0);
    assert_int_equal(b1.chunk.len, 1);
    assert_int_equal(b1.chunk.data[0], 0x11);
    assert_int_equal(a2.calls, 1);
    assert_int_equal(a2.rc, WEIR_DONE);
    assert_int_equal(b2.calls, 1);
    assert_int_equal(b2.rc, WEIR_DONE);
    weir_chunk_unref(&a1.chunk, 0);
    weir_chunk_unref(&b1.chunk, 0);
    fx_close(&f);
}

/* templatedRSTeeCancel of rs-test-templates.js, with a byte source. */

/* "...: canceling both branches should aggregate the cancel reasons into
 * an array", "... in reverse order ...". Departure (tee cancel reason):
 * the source is cancelled once, with the last branch's reason. */
static void cancel_both_order(bool reverse)
{
    struct fx f = {0};

    fx_open(&f);
    assert_int_equal(weir_reader_cancel(reverse ? &f.r2 : &f.r1, E1), 0);
    assert_int_equal(f.s.cancels, 0);
    assert_int_equal(weir_reader_cancel(reverse ? &f.r1 : &f.r2, E2), 0);
    assert_int_equal(f.s.cancels, 1);
    assert_int_equal(f.s.cancel_reason, E2);
    fx_close(&f);
}

static void cancel_both(void **state)
{
    (void)state;
    cancel_both_order(false);
}

static void cancel_both_reverse(void **state)
{
    (void)state;
    cancel_both_order(true);
}

/* "...: failing to cancel the original stream should cause cancel() to
 * reject on branches". Departure (tee cancel reason): only the last
 * branch's cancel sees the failure. */
static void cancel_fails(void **state)
{
    struct fx f = {.s = {.cancel_rc = E1}};

    (void)state;
    fx_open(&f);
    assert_int_equal(weir_reader_cancel(&f.r1, E2), 0);
    assert_int_equal(weir_reader_cancel(&f.r2, E2), E1);
    fx_close(&f);
}

/* "...: erroring a teed stream should properly handle canceled
 * branches" */
static void error_then_cancel(void **state)
{
    struct fx f = {0};

    (void)state;
    fx_open(&f);
    weir_readable_error(f.rs, E1);
    assert_int_equal(weir_reader_cancel(&f.r1, E2), E1);
    assert_int_equal(weir_reader_cancel(&f.r2, E2), E1);
    fx_close(&f);
}

#define T(fn, rest) WPT(fn, "ReadableStream teeing with byte source: " rest)

int main(void)
{
    const struct CMUnitTest tests[] = {
        WPT(two_byte_branches, "ReadableStream teeing with byte source: "
                               "rs.tee() returns an array of two "
                               "ReadableStreams"),
        T(one_branch_to_the_end, "should be able to read one branch to the "
                                 "end without affecting the other"),
        T(byob_cloned_to_branch2, "chunks for BYOB requests from branch 1 "
                                  "should be cloned to branch 2"),
        T(errors_propagate,
          "errors in the source should propagate to both branches"),
        T(cancel_branch1, "canceling branch1 should not impact branch2"),
        T(cancel_branch2, "canceling branch2 should not impact branch1"),
        T(cancel_both, "canceling both branches should aggregate the cancel "
                       "reasons into an array"),
        T(cancel_both_reverse, "canceling both branches in reverse order "
                               "should aggregate the cancel reasons into an "
                               "array"),
        T(cancel_fails, "failing to cancel the original stream should cause "
                        "cancel() to reject on branches"),
        T(error_then_cancel, "erroring a teed stream should properly handle "
                             "canceled branches"),
        T(close_closes_branches,
          "closing the original should close the branches"),
        T(error_errors_branches,
          "erroring the original should immediately error the branches"),
        T(error_fails_default_reads, "erroring the original should error "
                                     "pending reads from default reader"),
        T(error_fails_byob_reads, "erroring the original should error "
                                  "pending reads from BYOB reader"),
        T(cancel_one_other_reads_to_end, "canceling branch1 should finish "
                                         "when branch2 reads until end of "
                                         "stream"),
        T(cancel_one_then_source_errors,
          "canceling branch1 should finish when original stream errors"),
        T(no_pull_without_reads,
          "should not pull any chunks if no branches are reading"),
        T(pull_for_emptiest,
          "should only pull enough to fill the emptiest queue"),
        T(no_pull_when_errored,
          "should not pull when original is already errored"),
        T(stop_pulling_branch1, "stops pulling when original stream errors "
                                "while branch 1 is reading"),
        T(stop_pulling_branch2, "stops pulling when original stream errors "
                                "while branch 2 is reading"),
        T(stop_pulling_both, "stops pulling when original stream errors "
                             "while both branches are reading"),
        T(cancel_both_in_sequence,
          "canceling both branches in sequence with delay"),
        T(cancel_both_fails, "failing to cancel when canceling both "
                             "branches in sequence with delay"),
        T(close_default_then_byob,
          "read from branch1 with default reader, then close while branch2 "
          "has pending BYOB read"),
        T(close_byob_then_default,
          "read from branch2 with default reader, then close while branch1 "
          "has pending BYOB read"),
        T(enqueue_close_while_pulling,
          "enqueue() and close() while both branches are pulling"),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
