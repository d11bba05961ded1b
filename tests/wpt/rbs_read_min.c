/*
 * WPT streams/readable-byte-streams/read-min.any.js, ported to weir's C
 * API: weir_reader_read_byob's min. Views are byte ranges here (weir has
 * no element types), so a Uint16Array of 2 is 4 bytes with min 4.
 */
#include "wpt.h"

#define F "readable-byte-streams/read-min.any.js"

struct fx {
    struct rsrc s;
    struct weir_readable *rs;
    struct weir_reader r;
};

static void fx_open(struct fx *f)
{
    f->rs = rsrc_make(&f->s, 0, true);
    assert_int_equal(weir_reader_acquire(&f->r, f->rs), 0);
}

static void fx_close(struct fx *f)
{
    weir_reader_release(&f->r);
    weir_readable_destroy(f->rs);
}

static int no_pull(struct rsrc *s)
{
    (void)s;
    fail_msg("pull() should not be called");
    return 0;
}

/* F: "ReadableStream with byte source: read({ min }) rejects if min is
 * 0" */
static void min_zero(void **state)
{
    struct fx f = {.s = {.on_pull = no_pull}};
    uint8_t buf[1];
    struct weir_chunk c;

    (void)state;
    fx_open(&f);
    assert_int_equal(weir_reader_read_byob(&f.r, buf, 1, 0, &c, read_cb, NULL),
                     -EINVAL);
    fx_close(&f);
}

/* F: "ReadableStream with byte source: read({ min }) rejects if min is
 * larger than view's length (Uint8Array)" */
static void min_too_large(void **state)
{
    struct fx f = {.s = {.on_pull = no_pull}};
    uint8_t buf[1];
    struct weir_chunk c;

    (void)state;
    fx_open(&f);
    assert_int_equal(weir_reader_read_byob(&f.r, buf, 1, 2, &c, read_cb, NULL),
                     -EINVAL);
    fx_close(&f);
}

/* The respond-driven pulls of the next cases. */
static int respond_script(struct rsrc *s)
{
    uint8_t *p;
    size_t n;

    if (weir_readable_byob_request(s->rs, &p, &n))
        return 0;
    switch (s->n * 10 + s->pulls) {
    case 11: /* read({min: 3}), then read() */
        p[0] = 1, p[1] = 2;
        assert_int_equal(n, 3);
        return weir_readable_byob_respond(s->rs, 2);
    case 12:
        assert_int_equal(n, 1);
        p[0] = 3;
        return weir_readable_byob_respond(s->rs, 1);
    case 13:
        assert_int_equal(n, 1);
        p[0] = 4;
        return weir_readable_byob_respond(s->rs, 1);
    case 21: /* enqueue(), then read({min}) */
        assert_int_equal(n, 2);
        p[0] = 2, p[1] = 3;
        return weir_readable_byob_respond(s->rs, 2);
    case 41: /* closed before the view is filled */
        p[0] = 1;
        return weir_readable_byob_respond(s->rs, 1);
    case 42:
        return weir_readable_close(s->rs);
    case 51: /* closed right after the view is filled */
        p[0] = 1, p[1] = 2;
        return weir_readable_byob_respond(s->rs, 2);
    case 52:
        p[0] = 3;
        weir_readable_byob_respond(s->rs, 1);
        return weir_readable_close(s->rs);
    default:
        return 0;
    }
}

/* F: "ReadableStream with byte source: read({ min }), then read()" */
static void min_then_read(void **state)
{
    struct fx f = {.s = {.on_pull = respond_script, .n = 1}};
    uint8_t b1[3], b2[1];
    struct done d1 = {0}, d2 = {0};
    struct weir_chunk c;

    (void)state;
    fx_open(&f);
    assert_int_equal(weir_reader_read_byob(&f.r, b1, 3, 3, &c, read_cb, &d1),
                     0);
    assert_int_equal(c.len, 3);
    assert_memory_equal(b1, "\x01\x02\x03", 3);
    assert_int_equal(weir_reader_read_byob(&f.r, b2, 1, 1, &c, read_cb, &d2),
                     0);
    assert_int_equal(c.len, 1);
    assert_int_equal(b2[0], 4);
    assert_int_equal(f.s.pulls, 3);
    fx_close(&f);
}

/* F: "ReadableStream with byte source: enqueue(), then read({ min })" */
static uint8_t one[] = {1};

static int start_enqueue_one(struct rsrc *s)
{
    return weir_readable_enqueue(s->rs, (struct weir_chunk){NULL, one, 1});
}

static void enqueue_then_min(void **state)
{
    struct fx f = {.s = {.on_pull = respond_script,
                         .on_start = start_enqueue_one,
                         .n = 2}};
    uint8_t b[3];
    struct weir_chunk c;

    (void)state;
    fx_open(&f);
    assert_int_equal(weir_reader_read_byob(&f.r, b, 3, 3, &c, read_cb, NULL),
                     0);
    assert_int_equal(c.len, 3);
    assert_memory_equal(b, "\x01\x02\x03", 3);
    assert_int_equal(f.s.pulls, 1);
    fx_close(&f);
}

/* F: "ReadableStream with byte source: read({ min }), then multiple
 * enqueue()" */
static uint8_t b12[] = {1, 2}, b3[] = {3};

static int pull_enqueue_parts(struct rsrc *s)
{
    if (s->pulls == 1)
        return weir_readable_enqueue(s->rs, (struct weir_chunk){NULL, b12, 2});
    if (s->pulls == 2)
        return weir_readable_enqueue(s->rs, (struct weir_chunk){NULL, b3, 1});
    return 0;
}

static void min_then_enqueues(void **state)
{
    struct fx f = {.s = {.on_pull = pull_enqueue_parts}};
    uint8_t b[3];
    struct weir_chunk c;

    (void)state;
    fx_open(&f);
    assert_int_equal(weir_reader_read_byob(&f.r, b, 3, 3, &c, read_cb, NULL),
                     0);
    assert_memory_equal(b, "\x01\x02\x03", 3);
    assert_int_equal(f.s.pulls, 2);
    fx_close(&f);
}

/* F: "ReadableStream with byte source: enqueue(), read({ min }) partially,
 * then read()" */
static uint8_t sixteen[16] = {[0] = 1, [8] = 2, [7] = 7, [15] = 15};

static int start_enqueue16(struct rsrc *s)
{
    return weir_readable_enqueue(s->rs, (struct weir_chunk){NULL, sixteen, 16});
}

static void min_partially_then_read(void **state)
{
    struct fx f = {.s = {.on_start = start_enqueue16, .on_pull = no_pull}};
    uint8_t b[8];
    struct weir_chunk c;

    (void)state;
    fx_open(&f);
    f.s.on_pull = NULL;
    assert_int_equal(weir_reader_read_byob(&f.r, b, 8, 8, &c, read_cb, NULL),
                     0);
    assert_int_equal(c.len, 8);
    assert_int_equal(b[0], 1);
    weir_reader_release(&f.r);
    weir_reader_acquire(&f.r, f.rs);
    assert_int_equal(weir_reader_read(&f.r, &c, never_read, NULL), 0);
    assert_int_equal(c.len, 8);
    assert_ptr_equal(c.data, sixteen + 8);
    assert_int_equal(c.data[0], 2);
    fx_close(&f);
}

/* F: "ReadableStream with byte source: read({ min }) on a closed stream" */
static void min_on_closed(void **state)
{
    struct fx f = {.s = {.on_pull = no_pull}};
    uint8_t b[1] = {1};
    struct weir_chunk c;

    (void)state;
    fx_open(&f);
    weir_readable_close(f.rs);
    assert_int_equal(weir_reader_read_byob(&f.r, b, 1, 1, &c, read_cb, NULL),
                     WEIR_DONE);
    assert_int_equal(c.len, 0);
    fx_close(&f);
}

/* F: "ReadableStream with byte source: read({ min }) when closed before
 * view is filled" */
static void closed_before_filled(void **state)
{
    struct fx f = {.s = {.on_pull = respond_script, .n = 4}};
    uint8_t b[3] = {0};
    struct weir_chunk c;

    (void)state;
    fx_open(&f);
    assert_int_equal(weir_reader_read_byob(&f.r, b, 3, 3, &c, read_cb, NULL),
                     WEIR_DONE);
    assert_int_equal(c.len, 1);
    assert_int_equal(b[0], 1);
    assert_int_equal(f.s.pulls, 2);
    assert_true(weir_readable_closed(f.rs));
    fx_close(&f);
}

/* F: "ReadableStream with byte source: read({ min }) when closed
 * immediately after view is filled" */
static void closed_after_filled(void **state)
{
    struct fx f = {.s = {.on_pull = respond_script, .n = 5}};
    uint8_t b[3];
    struct weir_chunk c;

    (void)state;
    fx_open(&f);
    assert_int_equal(weir_reader_read_byob(&f.r, b, 3, 3, &c, read_cb, NULL),
                     0);
    assert_int_equal(c.len, 3);
    assert_memory_equal(b, "\x01\x02\x03", 3);
    assert_int_equal(f.s.pulls, 2);
    assert_true(weir_readable_closed(f.rs));
    fx_close(&f);
}

/* F: "ReadableStream with byte source: read({ min }) on an errored
 * stream" */
static void min_on_errored(void **state)
{
    struct fx f = {.s = {.start_rc = E1}};
    uint8_t b[1];
    struct weir_chunk c;

    (void)state;
    fx_open(&f);
    assert_int_equal(weir_reader_read_byob(&f.r, b, 1, 1, &c, read_cb, NULL),
                     E1);
    fx_close(&f);
}

/* F: "ReadableStream with byte source: read({ min }), then error()" */
static void min_then_error(void **state)
{
    struct fx f = {0};
    uint8_t b[1];
    struct weir_chunk c;
    struct done d = {0};

    (void)state;
    fx_open(&f);
    assert_int_equal(weir_reader_read_byob(&f.r, b, 1, 1, &c, read_cb, &d),
                     WEIR_PENDING);
    weir_readable_error(f.rs, E1);
    assert_int_equal(d.rc, E1);
    fx_close(&f);
}

/* F: "ReadableStream with byte source: getReader(), read({ min }), then
 * cancel()" */
static void min_then_cancel(void **state)
{
    struct fx f = {0};
    uint8_t b[1];
    struct weir_chunk c;
    struct done d = {0};

    (void)state;
    fx_open(&f);
    assert_int_equal(weir_reader_read_byob(&f.r, b, 1, 1, &c, read_cb, &d),
                     WEIR_PENDING);
    assert_int_equal(weir_reader_cancel(&f.r, E1), 0);
    assert_int_equal(d.rc, WEIR_DONE);
    assert_int_equal(f.s.cancels, 1);
    assert_int_equal(f.s.cancel_reason, E1);
    fx_close(&f);
}

/* F: "ReadableStream with byte source: cancel() with partially filled
 * pending read({ min }) request" */
static int respond_one(struct rsrc *s)
{
    uint8_t *p;
    size_t n;

    if (weir_readable_byob_request(s->rs, &p, &n) == 0) {
        assert_int_equal(n, 3);
        p[0] = 1;
        weir_readable_byob_respond(s->rs, 1);
        assert_int_equal(weir_readable_byob_request(s->rs, &p, &n), 0);
        assert_int_equal(n, 2);
    }
    return WEIR_PENDING;
}

static void cancel_partial(void **state)
{
    struct fx f = {.s = {.on_pull = respond_one}};
    uint8_t b[3];
    struct weir_chunk c;
    struct done d = {0};

    (void)state;
    fx_open(&f);
    assert_int_equal(f.s.pulls, 0);
    assert_int_equal(weir_reader_read_byob(&f.r, b, 3, 3, &c, read_cb, &d),
                     WEIR_PENDING);
    assert_int_equal(f.s.pulls, 1);
    assert_int_equal(weir_reader_cancel(&f.r, E1), 0);
    assert_int_equal(d.rc, WEIR_DONE);
    assert_int_equal(f.s.pulls, 1);
    fx_close(&f);
}

/* F: "ReadableStream with byte source: enqueue(), then read({ min }) with
 * smaller views" */
static void smaller_views(void **state)
{
    struct fx f = {.s = {.on_start = start_enqueue16}};
    uint8_t b[8];
    struct weir_chunk c;

    (void)state;
    fx_open(&f);
    assert_int_equal(weir_reader_read_byob(&f.r, b, 8, 8, &c, read_cb, NULL),
                     0);
    assert_int_equal(b[7], 7);
    assert_int_equal(weir_reader_read_byob(&f.r, b, 8, 8, &c, read_cb, NULL),
                     0);
    assert_int_equal(b[0], 2);
    assert_int_equal(b[7], 15);
    assert_int_equal(f.s.pulls, 0);
    fx_close(&f);
}

/* F: "ReadableStream with byte source: 3 byte enqueue(), then close(), then
 * read({ min }) with 2-element Uint16Array must fail" */
static uint8_t aabbcc[] = {0xaa, 0xbb, 0xcc};

static int start_three_close(struct rsrc *s)
{
    weir_readable_enqueue(s->rs, (struct weir_chunk){NULL, aabbcc, 3});
    return weir_readable_close(s->rs);
}

static void short_closing_queue_fails(void **state)
{
    struct fx f = {.s = {.on_start = start_three_close}};
    uint8_t b[4];
    struct weir_chunk c;

    (void)state;
    fx_open(&f);
    assert_int_equal(weir_reader_read_byob(&f.r, b, 4, 4, &c, read_cb, NULL),
                     -EINVAL);
    assert_int_equal(rs_err(f.rs), -EINVAL);
    fx_close(&f);
}

/* F: "ReadableStream with byte source: tee() with read({ min }) from
 * branch1 and read() from branch2" (the branches are byte streams; the
 * tee reads the source's chunks and shares them, so the source sees
 * default reads rather than BYOB requests) */
static uint8_t x123[] = {1, 2, 3};

static void tee_min(void **state)
{
    struct rsrc s = {0};
    struct weir_readable *rs = rsrc_make(&s, 0, true);
    struct weir_tee *t;
    struct weir_reader r1, r2;
    uint8_t b1[3], b2[2];
    struct weir_chunk c;
    struct done d1 = {0};

    (void)state;
    assert_int_equal(weir_tee_create(&t, rs, 2, NULL), 0);
    weir_reader_acquire(&r1, weir_tee_branch(t, 0));
    weir_reader_acquire(&r2, weir_tee_branch(t, 1));
    assert_int_equal(weir_reader_read_byob(&r1, b1, 3, 3, &c, read_cb, &d1),
                     WEIR_PENDING);
    weir_readable_enqueue(rs, (struct weir_chunk){NULL, x123, 1});
    assert_int_equal(weir_reader_read_byob(&r2, b2, 1, 1, &c, read_cb, NULL),
                     0);
    assert_int_equal(b2[0], 1);
    weir_readable_enqueue(rs, (struct weir_chunk){NULL, x123 + 1, 2});
    assert_int_equal(d1.rc, 0);
    assert_int_equal(d1.chunk.len, 3);
    assert_memory_equal(b1, x123, 3);
    assert_int_equal(weir_reader_read_byob(&r2, b2, 2, 1, &c, read_cb, NULL),
                     0);
    assert_memory_equal(b2, x123 + 1, 2);
    weir_reader_release(&r1);
    weir_reader_release(&r2);
    weir_tee_destroy(t);
    weir_readable_destroy(rs);
}

#define T(fn, rest) WPT(fn, "ReadableStream with byte source: " rest)

int main(void)
{
    const struct CMUnitTest tests[] = {
        T(min_zero, "read({ min }) rejects if min is 0"),
        T(min_too_large,
          "read({ min }) rejects if min is larger than view's length "
          "(Uint8Array)"),
        T(min_then_read, "read({ min }), then read()"),
        T(enqueue_then_min, "enqueue(), then read({ min })"),
        T(min_then_enqueues, "read({ min }), then multiple enqueue()"),
        T(min_partially_then_read,
          "enqueue(), read({ min }) partially, then read()"),
        T(min_on_closed, "read({ min }) on a closed stream"),
        T(closed_before_filled,
          "read({ min }) when closed before view is filled"),
        T(closed_after_filled,
          "read({ min }) when closed immediately after view is filled"),
        T(min_on_errored, "read({ min }) on an errored stream"),
        T(min_then_error, "read({ min }), then error()"),
        T(min_then_cancel, "getReader(), read({ min }), then cancel()"),
        T(cancel_partial,
          "cancel() with partially filled pending read({ min }) request"),
        T(smaller_views, "enqueue(), then read({ min }) with smaller views"),
        T(short_closing_queue_fails,
          "3 byte enqueue(), then close(), then read({ min }) with "
          "2-element Uint16Array must fail"),
        T(tee_min, "tee() with read({ min }) from branch1 and read() from "
                   "branch2"),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
