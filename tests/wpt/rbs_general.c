/*
 * WPT streams/readable-byte-streams/general.any.js, ported to weir's C
 * API (byte streams: weir_readable_options.byte_stream). Views are byte
 * ranges; a default read returns a chunk.
 */
#include "wpt.h"

#define F "readable-byte-streams/general.any.js"

static uint8_t buf16[16], buf1[1];

static struct weir_chunk bytes(uint8_t *p, uint32_t n)
{
    return (struct weir_chunk){NULL, p, n};
}

static int no_pull(struct rsrc *s)
{
    (void)s;
    fail_msg("pull() should not be called");
    return 0;
}

/* F: "getReader({mode: \"byob\"}) throws on non-bytes streams" */
static void byob_needs_bytes(void **state)
{
    struct weir_readable *rs;
    struct weir_reader r;
    struct weir_chunk c;
    uint8_t b[1];

    (void)state;
    assert_int_equal(weir_readable_create(&rs, NULL, NULL, NULL), 0);
    weir_reader_acquire(&r, rs);
    assert_int_equal(weir_reader_read_byob(&r, b, 1, 1, &c, read_cb, NULL),
                     -EINVAL);
    weir_reader_release(&r);
    weir_readable_destroy(rs);
}

/* F: "ReadableStream with byte source can be constructed with no
 * errors" */
static void construct(void **state)
{
    struct weir_readable_options o = {.byte_stream = true};
    struct weir_readable *rs;
    struct weir_reader r;

    (void)state;
    assert_int_equal(weir_readable_create(&rs, NULL, NULL, &o), 0);
    assert_int_equal(weir_reader_acquire(&r, rs), 0);
    weir_reader_release(&r);
    weir_readable_destroy(rs);
}

/* F: "ReadableStream with byte source: Construct and expect start and pull
 * being called" */
static int record_desired(struct rsrc *s)
{
    s->n = (int)weir_readable_desired_size(s->rs);
    assert_int_equal(s->starts, 1);
    return 0;
}

static void start_then_pull(void **state)
{
    struct rsrc s = {.on_pull = record_desired};
    struct weir_readable *rs = rsrc_make(&s, 256, true);

    (void)state;
    assert_int_equal(s.pulls, 1);
    assert_int_equal(s.n, 256);
    weir_readable_destroy(rs);
}

/* F: "ReadableStream with byte source: No automatic pull call if start
 * doesn't finish" */
static void no_pull_before_start(void **state)
{
    struct rsrc s = {.start_rc = WEIR_PENDING};
    struct weir_readable *rs = rsrc_make(&s, 256, true);

    (void)state;
    assert_int_equal(s.pulls, 0);
    weir_readable_start_done(rs, 0);
    assert_int_equal(s.pulls, 1);
    weir_readable_destroy(rs);
}

/* F: "ReadableStream with byte source: start() throws an exception".
 * Departure (creation does not fail for start). */
static void start_throws(void **state)
{
    struct rsrc s = {.start_rc = E1};
    struct weir_readable *rs = rsrc_make(&s, 0, true);

    (void)state;
    assert_int_equal(rs_err(rs), E1);
    weir_readable_destroy(rs);
}

/* F: "ReadableStream with byte source: Construct with highWaterMark of
 * 0" */
static void hwm0_no_pull(void **state)
{
    struct rsrc s = {.on_pull = no_pull};
    struct weir_readable *rs = rsrc_make(&s, 0, true);

    (void)state;
    assert_int_equal(s.pulls, 0);
    weir_readable_destroy(rs);
}

/* F: "ReadableStream with byte source: desiredSize when closed" */
static int desired_close(struct rsrc *s)
{
    assert_int_equal(weir_readable_desired_size(s->rs), 10);
    weir_readable_close(s->rs);
    assert_int_equal(weir_readable_desired_size(s->rs), 0);
    s->n = 1;
    return 0;
}

static void desired_closed(void **state)
{
    struct rsrc s = {.on_start = desired_close};
    struct weir_readable *rs = rsrc_make(&s, 10, true);

    (void)state;
    assert_int_equal(s.n, 1);
    weir_readable_destroy(rs);
}

/* F: "ReadableStream with byte source: desiredSize when errored" */
static int desired_error(struct rsrc *s)
{
    assert_int_equal(weir_readable_desired_size(s->rs), 10);
    weir_readable_error(s->rs, E1);
    assert_true(weir_readable_desired_size(s->rs) == WEIR_DESIRED_NONE);
    s->n = 1;
    return 0;
}

static void desired_errored(void **state)
{
    struct rsrc s = {.on_start = desired_error};
    struct weir_readable *rs = rsrc_make(&s, 10, true);

    (void)state;
    assert_int_equal(s.n, 1);
    weir_readable_destroy(rs);
}

/* F: "ReadableStream with byte source: getReader(), then releaseLock()" */
static void release_default(void **state)
{
    struct rsrc s = {0};
    struct weir_readable *rs = rsrc_make(&s, 0, true);
    struct weir_reader r;
    struct weir_chunk c;

    (void)state;
    weir_reader_acquire(&r, rs);
    weir_reader_release(&r);
    assert_int_equal(weir_reader_read(&r, &c, read_cb, NULL), -EINVAL);
    weir_readable_destroy(rs);
}

/* F: "ReadableStream with byte source: getReader() with mode set to byob,
 * then releaseLock()" */
static void release_byob(void **state)
{
    struct rsrc s = {0};
    struct weir_readable *rs = rsrc_make(&s, 0, true);
    struct weir_reader r;
    struct weir_chunk c;
    uint8_t b[1];

    (void)state;
    weir_reader_acquire(&r, rs);
    weir_reader_release(&r);
    assert_int_equal(weir_reader_read_byob(&r, b, 1, 1, &c, read_cb, NULL),
                     -EINVAL);
    weir_readable_destroy(rs);
}

static int start_close(struct rsrc *s)
{
    return weir_readable_close(s->rs);
}

static int start_error(struct rsrc *s)
{
    weir_readable_error(s->rs, E1);
    return 0;
}

/* The stream closes or errors and the reader keeps its lock. */
static void end_keeps_lock(bool error, bool byob)
{
    struct rsrc s = {.on_start = error ? start_error : start_close,
                     .on_pull = no_pull};
    struct weir_readable *rs = rsrc_make(&s, 0, true);
    struct weir_reader r, r2;
    struct weir_chunk c;
    uint8_t b[1];
    int rc;

    weir_reader_acquire(&r, rs);
    rc = byob ? weir_reader_read_byob(&r, b, 1, 1, &c, read_cb, NULL)
              : weir_reader_read(&r, &c, read_cb, NULL);
    assert_int_equal(rc, error ? E1 : WEIR_DONE);
    assert_int_equal(weir_reader_acquire(&r2, rs), -EBUSY);
    weir_reader_release(&r);
    weir_readable_destroy(rs);
}

/* F: "ReadableStream with byte source: Test that closing a stream does not
 * release a reader automatically" */
static void close_keeps_reader(void **state)
{
    (void)state;
    end_keeps_lock(false, false);
}

/* F: "ReadableStream with byte source: Test that closing a stream does not
 * release a BYOB reader automatically" */
static void close_keeps_byob_reader(void **state)
{
    (void)state;
    end_keeps_lock(false, true);
}

/* F: "ReadableStream with byte source: Test that erroring a stream does not
 * release a reader automatically" */
static void error_keeps_reader(void **state)
{
    (void)state;
    end_keeps_lock(true, false);
}

/* F: "ReadableStream with byte source: Test that erroring a stream does not
 * release a BYOB reader automatically" */
static void error_keeps_byob_reader(void **state)
{
    (void)state;
    end_keeps_lock(true, true);
}

/* F: "ReadableStream with byte source: Automatic pull() after start()" */
static void auto_pull(void **state)
{
    struct rsrc s = {0};
    struct weir_readable *rs = rsrc_make(&s, 8, true);

    (void)state;
    assert_int_equal(s.pulls, 1);
    weir_readable_destroy(rs);
}

/* F: "ReadableStream with byte source: Automatic pull() after start() and
 * read()" */
static void auto_pull_read(void **state)
{
    struct rsrc s = {0};
    struct weir_readable *rs = rsrc_make(&s, 0, true);
    struct weir_reader r;
    struct weir_chunk c;
    struct done d = {0};

    (void)state;
    weir_reader_acquire(&r, rs);
    assert_int_equal(s.pulls, 0);
    assert_int_equal(weir_reader_read(&r, &c, read_cb, &d), WEIR_PENDING);
    assert_int_equal(s.pulls, 1);
    weir_reader_release(&r);
    weir_readable_destroy(rs);
}

/* F: "ReadableStream with byte source: Automatic pull() after start() and
 * read(view)" */
static void auto_pull_read_view(void **state)
{
    struct rsrc s = {0};
    struct weir_readable *rs = rsrc_make(&s, 0, true);
    struct weir_reader r;
    struct weir_chunk c;
    struct done d = {0};
    uint8_t b[8];

    (void)state;
    weir_reader_acquire(&r, rs);
    assert_int_equal(weir_reader_read_byob(&r, b, 8, 1, &c, read_cb, &d),
                     WEIR_PENDING);
    assert_int_equal(s.pulls, 1);
    weir_reader_release(&r);
    weir_readable_destroy(rs);
}

/* F: "ReadableStream with byte source: enqueue(), getReader(), then
 * read()" */
static int enqueue16(struct rsrc *s)
{
    weir_readable_enqueue(s->rs, bytes(buf16, 16));
    s->n = (int)weir_readable_desired_size(s->rs);
    return 0;
}

static int pull_desired(struct rsrc *s)
{
    if (s->pulls == 1)
        s->user = (void *)(intptr_t)weir_readable_desired_size(s->rs);
    return 0;
}

static void enqueue_then_read(void **state)
{
    struct rsrc s = {.on_start = enqueue16, .on_pull = pull_desired};
    struct weir_readable *rs = rsrc_make(&s, 8, true);
    struct weir_reader r;
    struct weir_chunk c;

    (void)state;
    assert_int_equal(s.pulls, 0);
    assert_int_equal(s.n, -8);
    weir_reader_acquire(&r, rs);
    assert_int_equal(weir_reader_read(&r, &c, never_read, NULL), 0);
    assert_int_equal(c.len, 16);
    assert_int_equal(s.pulls, 1);
    assert_int_equal((intptr_t)s.user, 8);
    weir_reader_release(&r);
    weir_readable_destroy(rs);
}

/* F: "ReadableStream with byte source: Push source that doesn't understand
 * pull signal" */
static void push_source(void **state)
{
    struct weir_readable_options o = {.byte_stream = true};
    struct weir_readable *rs;
    struct weir_reader r;
    struct weir_chunk c;
    struct done d = {0};

    (void)state;
    assert_int_equal(weir_readable_create(&rs, NULL, NULL, &o), 0);
    weir_reader_acquire(&r, rs);
    assert_int_equal(weir_reader_read(&r, &c, read_cb, &d), WEIR_PENDING);
    weir_readable_enqueue(rs, bytes(buf1, 1));
    assert_int_equal(d.rc, 0);
    assert_int_equal(d.chunk.len, 1);
    weir_reader_release(&r);
    weir_readable_destroy(rs);
}

/* F: "ReadableStream with byte source: enqueue(), read(view) partially,
 * then read()" */
static uint8_t mark16[16] = {[0] = 1, [8] = 2};

static int enqueue_marked(struct rsrc *s)
{
    return weir_readable_enqueue(s->rs, bytes(mark16, 16));
}

static void view_partially_then_read(void **state)
{
    struct rsrc s = {.on_start = enqueue_marked, .on_pull = no_pull};
    struct weir_readable *rs = rsrc_make(&s, 0, true);
    struct weir_reader r;
    struct weir_chunk c;
    uint8_t b[8];

    (void)state;
    weir_reader_acquire(&r, rs);
    assert_int_equal(weir_reader_read_byob(&r, b, 8, 1, &c, read_cb, NULL), 0);
    assert_int_equal(c.len, 8);
    assert_int_equal(b[0], 1);
    weir_reader_release(&r);
    weir_reader_acquire(&r, rs);
    assert_int_equal(weir_reader_read(&r, &c, never_read, NULL), 0);
    assert_int_equal(c.len, 8);
    assert_ptr_equal(c.data, mark16 + 8);
    assert_int_equal(c.data[0], 2);
    weir_reader_release(&r);
    weir_readable_destroy(rs);
}

/* F: "ReadableStream with byte source: getReader(), enqueue(), close(),
 * then read()" */
static void reader_enqueue_close_read(void **state)
{
    struct rsrc s = {.on_pull = no_pull};
    struct weir_readable *rs = rsrc_make(&s, 0, true);
    struct weir_reader r;
    struct weir_chunk c;

    (void)state;
    weir_reader_acquire(&r, rs);
    weir_readable_enqueue(rs, bytes(buf16, 16));
    weir_readable_close(rs);
    assert_int_equal(weir_reader_read(&r, &c, never_read, NULL), 0);
    assert_int_equal(c.len, 16);
    assert_int_equal(weir_reader_read(&r, &c, never_read, NULL), WEIR_DONE);
    weir_reader_release(&r);
    weir_readable_destroy(rs);
}

/* F: "ReadableStream with byte source: enqueue(), close(), getReader(),
 * then read()" */
static int enqueue_close(struct rsrc *s)
{
    weir_readable_enqueue(s->rs, bytes(buf16, 16));
    return weir_readable_close(s->rs);
}

static void enqueue_close_reader_read(void **state)
{
    struct rsrc s = {.on_start = enqueue_close, .on_pull = no_pull};
    struct weir_readable *rs = rsrc_make(&s, 0, true);
    struct weir_reader r;
    struct weir_chunk c;

    (void)state;
    weir_reader_acquire(&r, rs);
    assert_int_equal(weir_reader_read(&r, &c, never_read, NULL), 0);
    assert_int_equal(c.len, 16);
    assert_int_equal(weir_reader_read(&r, &c, never_read, NULL), WEIR_DONE);
    weir_reader_release(&r);
    weir_readable_destroy(rs);
}

/* F: "ReadableStream with byte source: Respond to pull() by enqueue()" */
static int pull_enqueue16(struct rsrc *s)
{
    uint8_t *p;
    size_t n;

    weir_readable_enqueue(s->rs, bytes(buf16, 16));
    s->n = weir_readable_byob_request(s->rs, &p, &n);
    return 0;
}

static void respond_by_enqueue(void **state)
{
    struct rsrc s = {.on_pull = pull_enqueue16};
    struct weir_readable *rs = rsrc_make(&s, 0, true);
    struct weir_reader r;
    struct weir_chunk c;

    (void)state;
    weir_reader_acquire(&r, rs);
    assert_int_equal(weir_reader_read(&r, &c, never_read, NULL), 0);
    assert_int_equal(c.len, 16);
    assert_int_equal(s.n, -ENOENT); /* no BYOB request for a default read */
    weir_reader_release(&r);
    weir_readable_destroy(rs);
}

/* F: "ReadableStream with byte source: Respond to pull() by enqueue()
 * asynchronously" */
static int pull_sees_pending(struct rsrc *s)
{
    uint8_t *p;
    size_t n;

    s->n = weir_readable_byob_request(s->rs, &p, &n);
    assert_int_equal(weir_readable_desired_size(s->rs), 0);
    return WEIR_PENDING;
}

static void respond_by_enqueue_async(void **state)
{
    struct rsrc s = {.on_pull = pull_sees_pending};
    struct weir_readable *rs = rsrc_make(&s, 0, true);
    struct weir_reader r;
    struct weir_chunk c;
    struct done d[3] = {0};

    (void)state;
    weir_reader_acquire(&r, rs);
    for (int i = 0; i < 3; i++)
        assert_int_equal(weir_reader_read(&r, &c, read_cb, &d[i]),
                         WEIR_PENDING);
    weir_readable_enqueue(rs, bytes(buf1, 1));
    assert_int_equal(s.pulls, 1);
    assert_int_equal(weir_readable_desired_size(rs), 0);
    weir_readable_enqueue(rs, bytes(buf1, 1));
    assert_int_equal(weir_readable_desired_size(rs), 0);
    weir_readable_enqueue(rs, bytes(buf1, 1));
    assert_int_equal(weir_readable_desired_size(rs), 0);
    weir_readable_pull_done(rs, 0);
    for (int i = 0; i < 3; i++) {
        assert_int_equal(d[i].rc, 0);
        assert_int_equal(d[i].chunk.len, 1);
    }
    assert_int_equal(s.pulls, 1);
    assert_int_equal(s.n, -ENOENT); /* no BYOB request for default reads */
    weir_reader_release(&r);
    weir_readable_destroy(rs);
}

/* F: "ReadableStream with byte source: Respond to multiple pull() by
 * separate enqueue()" */
static int pull_three_then_close(struct rsrc *s)
{
    uint8_t *p;
    size_t n;

    assert_int_equal(weir_readable_byob_request(s->rs, &p, &n), -ENOENT);
    assert_int_equal(weir_readable_desired_size(s->rs), 256);
    if (s->pulls <= 3) {
        weir_readable_enqueue(s->rs, bytes(buf1, 1));
        assert_int_equal(weir_readable_desired_size(s->rs), 256);
        return 0;
    }
    return weir_readable_close(s->rs);
}

static void multiple_pulls(void **state)
{
    struct rsrc s = {.start_rc = WEIR_PENDING,
                     .on_pull = pull_three_then_close};
    struct weir_readable *rs = rsrc_make(&s, 256, true);
    struct weir_reader r;
    struct weir_chunk c;
    struct done d[3] = {0};

    (void)state;
    weir_reader_acquire(&r, rs);
    for (int i = 0; i < 3; i++)
        weir_reader_read(&r, &c, read_cb, &d[i]);
    assert_int_equal(s.pulls, 0);
    weir_readable_start_done(rs, 0);
    assert_int_equal(s.pulls, 4);
    for (int i = 0; i < 3; i++) {
        assert_int_equal(d[i].rc, 0);
        assert_int_equal(d[i].chunk.len, 1);
    }
    weir_reader_release(&r);
    weir_readable_destroy(rs);
}

/* F: "ReadableStream with byte source: read(view), then respond()" */
static int respond_01(struct rsrc *s)
{
    uint8_t *p;
    size_t n;

    assert_int_equal(weir_readable_byob_request(s->rs, &p, &n), 0);
    p[0] = 1;
    weir_readable_byob_respond(s->rs, 1);
    s->n = weir_readable_byob_request(s->rs, &p, &n);
    return 0;
}

static void view_then_respond(void **state)
{
    struct rsrc s = {.on_pull = respond_01};
    struct weir_readable *rs = rsrc_make(&s, 0, true);
    struct weir_reader r;
    struct weir_chunk c;
    uint8_t b[1] = {0};

    (void)state;
    weir_reader_acquire(&r, rs);
    assert_int_equal(weir_reader_read_byob(&r, b, 1, 1, &c, read_cb, NULL), 0);
    assert_int_equal(c.len, 1);
    assert_int_equal(b[0], 1);
    assert_int_equal(s.pulls, 1);
    assert_int_equal(s.n, -ENOENT); /* no request once answered */
    weir_reader_release(&r);
    weir_readable_destroy(rs);
}

/* F: "ReadableStream with byte source: read(view), then respond() with too
 * big value" */
static int respond_too_big(struct rsrc *s)
{
    uint8_t *p;
    size_t n;

    assert_int_equal(weir_readable_byob_request(s->rs, &p, &n), 0);
    s->n = weir_readable_byob_respond(s->rs, 2);
    return weir_readable_byob_respond(s->rs, 1);
}

static void respond_too_big_value(void **state)
{
    struct rsrc s = {.on_pull = respond_too_big};
    struct weir_readable *rs = rsrc_make(&s, 0, true);
    struct weir_reader r;
    struct weir_chunk c;
    uint8_t b[1];

    (void)state;
    weir_reader_acquire(&r, rs);
    assert_int_equal(weir_reader_read_byob(&r, b, 1, 1, &c, read_cb, NULL), 0);
    assert_int_equal(s.n, -EINVAL);
    weir_reader_release(&r);
    weir_readable_destroy(rs);
}

static uint8_t last1[16] = {[15] = 1};

static int enqueue_last1(struct rsrc *s)
{
    return weir_readable_enqueue(s->rs, bytes(last1, 16));
}

/* F: "ReadableStream with byte source: enqueue(), getReader(), then
 * read(view)" */
static void enqueue_then_view(void **state)
{
    struct rsrc s = {.on_start = enqueue_last1};
    struct weir_readable *rs = rsrc_make(&s, 0, true);
    struct weir_reader r;
    struct weir_chunk c;
    uint8_t b[16];

    (void)state;
    weir_reader_acquire(&r, rs);
    assert_int_equal(weir_reader_read_byob(&r, b, 16, 1, &c, read_cb, NULL), 0);
    assert_int_equal(c.len, 16);
    assert_int_equal(b[15], 1);
    weir_reader_release(&r);
    weir_readable_destroy(rs);
}

static void enqueue_then_cancel(bool byob)
{
    struct rsrc s = {.on_start = enqueue_last1, .on_pull = no_pull};
    struct weir_readable *rs = rsrc_make(&s, 0, true);
    struct weir_reader r;

    (void)byob; /* one kind of reader serves both reads in weir */
    weir_reader_acquire(&r, rs);
    assert_int_equal(weir_reader_cancel(&r, E1), 0);
    assert_int_equal(s.cancels, 1);
    assert_int_equal(s.cancel_reason, E1);
    weir_reader_release(&r);
    weir_readable_destroy(rs);
}

/* F: "ReadableStream with byte source: enqueue(), getReader(), then
 * cancel() (mode = not BYOB)" */
static void cancel_default(void **state)
{
    (void)state;
    enqueue_then_cancel(false);
}

/* F: "ReadableStream with byte source: enqueue(), getReader(), then
 * cancel() (mode = BYOB)" */
static void cancel_byob(void **state)
{
    (void)state;
    enqueue_then_cancel(true);
}

/* F: "ReadableStream with byte source: getReader(), read(view), then
 * cancel()" */
static void view_then_cancel(void **state)
{
    struct weir_readable_options o = {.byte_stream = true};
    struct rsrc s = {0};
    struct weir_readable *rs;
    struct weir_reader r;
    struct weir_chunk c;
    struct done d = {0};
    uint8_t b[1];

    (void)state;
    assert_int_equal(weir_readable_create(&rs, &rsrc_ops, &s, &o), 0);
    weir_reader_acquire(&r, rs);
    s.pull_rc = WEIR_PENDING;
    assert_int_equal(weir_reader_read_byob(&r, b, 1, 1, &c, read_cb, &d),
                     WEIR_PENDING);
    assert_int_equal(weir_reader_cancel(&r, E1), 0);
    /* done, and no bytes (the spec's undefined value) */
    assert_int_equal(d.calls, 1);
    assert_int_equal(d.rc, WEIR_DONE);
    assert_int_equal(d.chunk.len, 0);
    assert_int_equal(s.cancels, 1);
    assert_int_equal(s.cancel_reason, E1);
    weir_reader_release(&r);
    weir_readable_destroy(rs);
}

/* F: "ReadableStream with byte source: cancel() with partially filled
 * pending pull() request" (a 2-byte view answered 1 byte by enqueue, the
 * pull still pending) */
static size_t view_lens[2];

static int pull_one_byte_pending(struct rsrc *s)
{
    uint8_t *p;

    assert_int_equal(weir_readable_byob_request(s->rs, &p, &view_lens[0]), 0);
    weir_readable_enqueue(s->rs, bytes(buf1, 1));
    assert_int_equal(weir_readable_byob_request(s->rs, &p, &view_lens[1]), 0);
    return WEIR_PENDING;
}

static void cancel_partial_pull(void **state)
{
    struct rsrc s = {.on_pull = pull_one_byte_pending};
    struct weir_readable *rs = rsrc_make(&s, 0, true);
    struct weir_reader r;
    struct weir_chunk c;
    struct done d = {0};
    uint8_t b[2];

    (void)state;
    assert_int_equal(s.pulls, 0);
    weir_reader_acquire(&r, rs);
    assert_int_equal(weir_reader_read_byob(&r, b, 2, 2, &c, read_cb, &d),
                     WEIR_PENDING);
    assert_int_equal(s.pulls, 1);
    assert_int_equal(view_lens[0], 2); /* before the enqueue */
    assert_int_equal(view_lens[1], 1); /* after it */
    assert_int_equal(d.calls, 0);
    weir_reader_cancel(&r, E1);
    /* done, and the byte the enqueue filled is not handed back (the
     * spec's undefined value) */
    assert_int_equal(d.calls, 1);
    assert_int_equal(d.rc, WEIR_DONE);
    assert_int_equal(d.chunk.len, 0);
    assert_int_equal(s.pulls, 1);
    weir_reader_release(&r);
    weir_readable_destroy(rs);
}

/* F: "ReadableStream with byte source: Multiple enqueue(), getReader(),
 * then read(view)" */
static uint8_t v16[16] = {[15] = 123}, v8[8] = {[7] = 111};

static int enqueue_two(struct rsrc *s)
{
    weir_readable_enqueue(s->rs, bytes(v16, 16));
    return weir_readable_enqueue(s->rs, bytes(v8, 8));
}

static void multiple_enqueue_view(void **state)
{
    struct rsrc s = {.on_start = enqueue_two};
    struct weir_readable *rs = rsrc_make(&s, 0, true);
    struct weir_reader r;
    struct weir_chunk c;
    uint8_t b[24];

    (void)state;
    weir_reader_acquire(&r, rs);
    assert_int_equal(weir_reader_read_byob(&r, b, 24, 1, &c, read_cb, NULL), 0);
    assert_int_equal(c.len, 24);
    assert_int_equal(b[15], 123);
    assert_int_equal(b[23], 111);
    assert_int_equal(s.pulls, 0);
    weir_reader_release(&r);
    weir_readable_destroy(rs);
}

/* F: "ReadableStream with byte source: enqueue(), getReader(), then
 * read(view) with a bigger view" */
static void bigger_view(void **state)
{
    struct rsrc s = {.on_start = enqueue_last1};
    struct weir_readable *rs = rsrc_make(&s, 0, true);
    struct weir_reader r;
    struct weir_chunk c;
    uint8_t b[24];

    (void)state;
    weir_reader_acquire(&r, rs);
    assert_int_equal(weir_reader_read_byob(&r, b, 24, 1, &c, read_cb, NULL), 0);
    assert_int_equal(c.len, 16);
    assert_int_equal(b[15], 1);
    assert_int_equal(s.pulls, 0);
    weir_reader_release(&r);
    weir_readable_destroy(rs);
}

/* F: "ReadableStream with byte source: enqueue(), getReader(), then
 * read(view) with smaller views" */
static uint8_t two_marks[16] = {[7] = 1, [15] = 2};

static int enqueue_marks(struct rsrc *s)
{
    return weir_readable_enqueue(s->rs, bytes(two_marks, 16));
}

static void smaller_views(void **state)
{
    struct rsrc s = {.on_start = enqueue_marks};
    struct weir_readable *rs = rsrc_make(&s, 0, true);
    struct weir_reader r;
    struct weir_chunk c;
    uint8_t b[8];

    (void)state;
    weir_reader_acquire(&r, rs);
    assert_int_equal(weir_reader_read_byob(&r, b, 8, 1, &c, read_cb, NULL), 0);
    assert_int_equal(c.len, 8);
    assert_int_equal(b[7], 1);
    assert_int_equal(weir_reader_read_byob(&r, b, 8, 1, &c, read_cb, NULL), 0);
    assert_int_equal(c.len, 8);
    assert_int_equal(b[7], 2);
    assert_int_equal(s.pulls, 0);
    weir_reader_release(&r);
    weir_readable_destroy(rs);
}

/* F: "ReadableStream with byte source: enqueue() 1 byte, getReader(), then
 * read(view) with Uint16Array" (a 2-byte view, min 2) */
static uint8_t ff[1] = {0xff};

static int enqueue_ff(struct rsrc *s)
{
    return weir_readable_enqueue(s->rs, bytes(ff, 1));
}

static int respond_aa(struct rsrc *s)
{
    uint8_t *p;
    size_t n;

    if (weir_readable_byob_request(s->rs, &p, &n))
        return 0;
    assert_int_equal(n, 1);
    p[0] = 0xaa;
    return weir_readable_byob_respond(s->rs, 1);
}

static void one_byte_then_u16(void **state)
{
    struct rsrc s = {.on_start = enqueue_ff, .on_pull = respond_aa};
    struct weir_readable *rs = rsrc_make(&s, 0, true);
    struct weir_reader r;
    struct weir_chunk c;
    uint8_t b[2];

    (void)state;
    weir_reader_acquire(&r, rs);
    assert_int_equal(weir_reader_read_byob(&r, b, 2, 2, &c, read_cb, NULL), 0);
    assert_int_equal(c.len, 2);
    assert_int_equal(b[0], 0xff);
    assert_int_equal(b[1], 0xaa);
    weir_reader_release(&r);
    weir_readable_destroy(rs);
}

/* F: "ReadableStream with byte source: read(view) with Uint16Array on
 * close()-d stream with 1 byte enqueue()-d must fail" */
static int enqueue_ff_close(struct rsrc *s)
{
    weir_readable_enqueue(s->rs, bytes(ff, 1));
    return weir_readable_close(s->rs);
}

static void u16_on_closed_one_byte(void **state)
{
    struct rsrc s = {.on_start = enqueue_ff_close, .on_pull = no_pull};
    struct weir_readable *rs = rsrc_make(&s, 0, true);
    struct weir_reader r;
    struct weir_chunk c;
    uint8_t b[2];

    (void)state;
    weir_reader_acquire(&r, rs);
    assert_int_equal(weir_reader_read_byob(&r, b, 2, 2, &c, read_cb, NULL),
                     -EINVAL);
    assert_int_equal(rs_err(rs), -EINVAL);
    weir_reader_release(&r);
    weir_readable_destroy(rs);
}

/* F: "ReadableStream with byte source: Throw if close()-ed more than
 * once" */
static void close_twice(void **state)
{
    struct weir_readable_options o = {.byte_stream = true};
    struct weir_readable *rs;

    (void)state;
    assert_int_equal(weir_readable_create(&rs, NULL, NULL, &o), 0);
    weir_readable_enqueue(rs, bytes(buf1, 1));
    assert_int_equal(weir_readable_close(rs), 0);
    assert_int_equal(weir_readable_close(rs), -EINVAL);
    weir_readable_destroy(rs);
}

/* F: "ReadableStream with byte source: Throw on enqueue() after close()" */
static void enqueue_after_close(void **state)
{
    struct weir_readable_options o = {.byte_stream = true};
    struct weir_readable *rs;

    (void)state;
    assert_int_equal(weir_readable_create(&rs, NULL, NULL, &o), 0);
    weir_readable_enqueue(rs, bytes(buf1, 1));
    weir_readable_close(rs);
    assert_int_equal(weir_readable_enqueue(rs, bytes(buf1, 1)), -EINVAL);
    weir_readable_destroy(rs);
}

/* F: "ReadableStream with byte source: read(view), then respond() and
 * close() in pull()" */
static int respond16_close(struct rsrc *s)
{
    uint8_t *p;
    size_t n;

    if (weir_readable_byob_request(s->rs, &p, &n))
        return 0;
    assert_int_equal(n, 16);
    p[15] = 1;
    weir_readable_byob_respond(s->rs, 16);
    return weir_readable_close(s->rs);
}

static void respond_and_close(void **state)
{
    struct rsrc s = {.on_pull = respond16_close};
    struct weir_readable *rs = rsrc_make(&s, 0, true);
    struct weir_reader r;
    struct weir_chunk c;
    uint8_t b[16];

    (void)state;
    weir_reader_acquire(&r, rs);
    assert_int_equal(weir_reader_read_byob(&r, b, 16, 1, &c, read_cb, NULL), 0);
    assert_int_equal(c.len, 16);
    assert_int_equal(b[15], 1);
    assert_int_equal(weir_reader_read_byob(&r, b, 16, 1, &c, read_cb, NULL),
                     WEIR_DONE);
    assert_int_equal(c.len, 0);
    weir_reader_release(&r);
    weir_readable_destroy(rs);
}

/* F: "ReadableStream with byte source: read(view) with Uint32Array, then
 * fill it by multiple respond() calls" (a 4-byte view, min 4) */
static uint8_t *view_at[4];
static size_t view_len[4];

static int respond_four_times(struct rsrc *s)
{
    for (int i = 0; i < 4; i++) {
        assert_int_equal(
            weir_readable_byob_request(s->rs, &view_at[i], &view_len[i]), 0);
        view_at[i][0] = 0x01;
        assert_int_equal(weir_readable_byob_respond(s->rs, 1), 0);
    }
    return 0;
}

static int enqueue_four_times(struct rsrc *s)
{
    static uint8_t one[1] = {0x01};

    for (int i = 0; i < 4; i++) {
        assert_int_equal(
            weir_readable_byob_request(s->rs, &view_at[i], &view_len[i]), 0);
        assert_int_equal(weir_readable_enqueue(s->rs, bytes(one, 1)), 0);
    }
    return 0;
}

static void fill_u32_by_four(int (*on_pull)(struct rsrc *s))
{
    struct rsrc s = {.on_pull = on_pull};
    struct weir_readable *rs = rsrc_make(&s, 0, true);
    struct weir_reader r;
    struct weir_chunk c;
    uint8_t b[4] = {0};

    weir_reader_acquire(&r, rs);
    assert_int_equal(weir_reader_read_byob(&r, b, 4, 4, &c, read_cb, NULL), 0);
    assert_int_equal(c.len, 4);
    assert_ptr_equal(c.data, b);
    for (int i = 0; i < 4; i++) {
        assert_int_equal(b[i], 0x01);
        assert_ptr_equal(view_at[i], b + i);
        assert_int_equal(view_len[i], 4 - i);
    }
    assert_int_equal(s.pulls, 1);
    weir_reader_release(&r);
    weir_readable_destroy(rs);
}

static void u32_by_respond(void **state)
{
    (void)state;
    fill_u32_by_four(respond_four_times);
}

/* F: "ReadableStream with byte source: read(view) with Uint32Array, then
 * fill it by multiple enqueue() calls" */
static void u32_by_enqueue(void **state)
{
    (void)state;
    fill_u32_by_four(enqueue_four_times);
}

/* F: "ReadableStream with byte source: read() twice, then enqueue()
 * twice". The WPT's start settles a microtask later; here start stays
 * pending until the test finishes it, which keeps pull away as long. */
static uint8_t buf2[2];

static int pull_no_request(struct rsrc *s)
{
    uint8_t *p;
    size_t n;

    s->n = weir_readable_byob_request(s->rs, &p, &n);
    return 0;
}

static void read_twice_enqueue_twice(void **state)
{
    struct rsrc s = {.start_rc = WEIR_PENDING, .on_pull = pull_no_request};
    struct weir_readable *rs = rsrc_make(&s, 0, true);
    struct weir_reader r;
    struct weir_chunk c;
    struct done d0 = {0}, d1 = {0};

    (void)state;
    weir_reader_acquire(&r, rs);
    assert_int_equal(weir_reader_read(&r, &c, read_cb, &d0), WEIR_PENDING);
    assert_int_equal(s.pulls, 0);
    assert_int_equal(weir_reader_read(&r, &c, read_cb, &d1), WEIR_PENDING);
    assert_int_equal(s.pulls, 0);
    weir_readable_enqueue(rs, bytes(buf1, 1));
    assert_int_equal(s.pulls, 0);
    assert_int_equal(d0.calls, 1);
    assert_int_equal(d0.rc, 0);
    assert_ptr_equal(d0.chunk.data, buf1);
    assert_int_equal(d0.chunk.len, 1);
    weir_readable_start_done(rs, 0);
    assert_int_equal(s.pulls, 1); /* for the read still waiting */
    weir_readable_enqueue(rs, bytes(buf2, 2));
    /* Nothing waits and the queue is at its mark: no more pull. */
    assert_int_equal(s.pulls, 1);
    assert_int_equal(d1.calls, 1);
    assert_int_equal(d1.rc, 0);
    assert_ptr_equal(d1.chunk.data, buf2);
    assert_int_equal(d1.chunk.len, 2);
    assert_int_equal(s.n, -ENOENT);
    weir_reader_release(&r);
    weir_readable_destroy(rs);
}

/* F: "ReadableStream with byte source: Multiple read(view), close() and
 * respond()". Departure (close answers BYOB reads): the close itself ends
 * both reads, done with no bytes, and leaves no request to respond(0) to. */
static void views_close_respond(void **state)
{
    struct rsrc s = {.start_rc = WEIR_PENDING, .on_pull = no_pull};
    struct weir_readable *rs = rsrc_make(&s, 0, true);
    struct weir_reader r;
    struct weir_chunk c;
    struct done d0 = {0}, d1 = {0};
    uint8_t b0[16], b1[32];

    (void)state;
    weir_reader_acquire(&r, rs);
    assert_int_equal(weir_reader_read_byob(&r, b0, 16, 1, &c, read_cb, &d0),
                     WEIR_PENDING);
    assert_int_equal(weir_reader_read_byob(&r, b1, 32, 1, &c, read_cb, &d1),
                     WEIR_PENDING);
    assert_int_equal(weir_readable_close(rs), 0);
    assert_int_equal(weir_readable_byob_respond(rs, 0), -EINVAL);
    assert_int_equal(d0.rc, WEIR_DONE);
    assert_ptr_equal(d0.chunk.data, b0);
    assert_int_equal(d0.chunk.len, 0);
    assert_int_equal(d1.rc, WEIR_DONE);
    assert_ptr_equal(d1.chunk.data, b1);
    assert_int_equal(d1.chunk.len, 0);
    weir_reader_release(&r);
    weir_readable_destroy(rs);
}

/* F: "ReadableStream with byte source: Multiple read(view), big
 * enqueue()" */
static uint8_t big24[24];

static void views_big_enqueue(void **state)
{
    struct rsrc s = {.start_rc = WEIR_PENDING, .on_pull = no_pull};
    struct weir_readable *rs = rsrc_make(&s, 0, true);
    struct weir_reader r;
    struct weir_chunk c;
    struct done d0 = {0}, d1 = {0};
    uint8_t b0[16], b1[16];

    (void)state;
    weir_reader_acquire(&r, rs);
    assert_int_equal(weir_reader_read_byob(&r, b0, 16, 1, &c, read_cb, &d0),
                     WEIR_PENDING);
    assert_int_equal(weir_reader_read_byob(&r, b1, 16, 1, &c, read_cb, &d1),
                     WEIR_PENDING);
    assert_int_equal(weir_readable_enqueue(rs, bytes(big24, 24)), 0);
    assert_int_equal(d0.rc, 0);
    assert_ptr_equal(d0.chunk.data, b0);
    assert_int_equal(d0.chunk.len, 16);
    assert_int_equal(d1.rc, 0);
    assert_ptr_equal(d1.chunk.data, b1);
    assert_int_equal(d1.chunk.len, 8);
    weir_reader_release(&r);
    weir_readable_destroy(rs);
}

/* F: "ReadableStream with byte source: Multiple read(view) and multiple
 * enqueue()": a pump of 7-byte reads, each read from the last one's
 * callback. */
static uint8_t half_kib[512];

struct pump {
    struct weir_reader r;
    uint8_t b[7];
    size_t total;
    int done_rc, reads;
};

static void pump_read(struct pump *p);

static void pump_cb(void *ctx, int rc, struct weir_chunk c)
{
    struct pump *p = ctx;

    if (rc != 0) {
        p->done_rc = rc;
        return;
    }
    p->total += c.len;
    pump_read(p);
}

static void pump_read(struct pump *p)
{
    struct weir_chunk c;
    int rc;

    for (;;) {
        p->reads++;
        rc = weir_reader_read_byob(&p->r, p->b, 7, 1, &c, pump_cb, p);
        if (rc != 0)
            break;
        p->total += c.len;
    }
    if (rc != WEIR_PENDING)
        p->done_rc = rc;
}

static void views_many_enqueues(void **state)
{
    struct rsrc s = {.start_rc = WEIR_PENDING, .on_pull = no_pull};
    struct weir_readable *rs = rsrc_make(&s, 0, true);
    struct pump p = {.done_rc = 0};

    (void)state;
    weir_reader_acquire(&p.r, rs);
    pump_read(&p);
    assert_int_equal(p.done_rc, 0);
    weir_readable_enqueue(rs, bytes(half_kib, 512));
    weir_readable_enqueue(rs, bytes(half_kib, 512));
    weir_readable_close(rs);
    assert_int_equal(p.done_rc, WEIR_DONE);
    assert_int_equal(p.total, 1024);
    weir_reader_release(&p.r);
    weir_readable_destroy(rs);
}

/* F: "ReadableStream with byte source: read(view) with passing undefined
 * as view must fail" (no buffer) */
static void view_undefined(void **state)
{
    struct rsrc s = {.on_pull = no_pull};
    struct weir_readable *rs = rsrc_make(&s, 0, true);
    struct weir_reader r;
    struct weir_chunk c;

    (void)state;
    weir_reader_acquire(&r, rs);
    assert_int_equal(weir_reader_read_byob(&r, NULL, 0, 1, &c, read_cb, NULL),
                     -EINVAL);
    assert_int_equal(s.pulls, 0);
    weir_reader_release(&r);
    weir_readable_destroy(rs);
}

/* A read or BYOB read on a stream errored before it, or while it
 * waits. */
static void read_and_error(bool byob, bool error_first)
{
    struct rsrc s = {.on_start = error_first ? start_error : NULL,
                     .pull_rc = 0};
    struct weir_readable *rs = rsrc_make(&s, 0, true);
    struct weir_reader r;
    struct weir_chunk c;
    struct done d = {0};
    uint8_t b[1];
    int rc;

    weir_reader_acquire(&r, rs);
    rc = byob ? weir_reader_read_byob(&r, b, 1, 1, &c, read_cb, &d)
              : weir_reader_read(&r, &c, read_cb, &d);
    if (error_first) {
        assert_int_equal(rc, E1);
        assert_int_equal(s.pulls, 0);
    } else {
        assert_int_equal(rc, WEIR_PENDING);
        weir_readable_error(rs, E1);
        assert_int_equal(d.calls, 1);
        assert_int_equal(d.rc, E1);
    }
    weir_reader_release(&r);
    weir_readable_destroy(rs);
}

/* F: "ReadableStream with byte source: read() on an errored stream" */
static void read_errored(void **state)
{
    (void)state;
    read_and_error(false, true);
}

/* F: "ReadableStream with byte source: read(), then error()" */
static void read_then_error(void **state)
{
    (void)state;
    read_and_error(false, false);
}

/* F: "ReadableStream with byte source: read(view) on an errored stream" */
static void view_errored(void **state)
{
    (void)state;
    read_and_error(true, true);
}

/* F: "ReadableStream with byte source: read(view), then error()" */
static void view_then_error(void **state)
{
    (void)state;
    read_and_error(true, false);
}

/* A pull that fails (E2), after erroring the stream itself (E1) when
 * s->user is set; s->n records whether it saw a BYOB request. */
static int pull_throws(struct rsrc *s)
{
    uint8_t *p;
    size_t n;

    s->n = weir_readable_byob_request(s->rs, &p, &n);
    if (s->user)
        weir_readable_error(s->rs, E1);
    return E2;
}

static void pull_throws_case(bool byob, bool errored_in_pull)
{
    struct rsrc s = {.on_pull = pull_throws,
                     .user = errored_in_pull ? &s : NULL};
    struct weir_readable *rs = rsrc_make(&s, 0, true);
    struct weir_reader r;
    struct weir_chunk c;
    uint8_t b[1];
    int want = errored_in_pull ? E1 : E2, rc;

    weir_reader_acquire(&r, rs);
    rc = byob ? weir_reader_read_byob(&r, b, 1, 1, &c, read_cb, NULL)
              : weir_reader_read(&r, &c, read_cb, NULL);
    assert_int_equal(rc, want);
    assert_int_equal(rs_err(rs), want); /* the reader's closed */
    assert_int_equal(s.n, byob ? 0 : -ENOENT);
    weir_reader_release(&r);
    weir_readable_destroy(rs);
}

/* F: "ReadableStream with byte source: Throwing in pull function must
 * error the stream" */
static void pull_throws_read(void **state)
{
    (void)state;
    pull_throws_case(false, false);
}

/* F: "ReadableStream with byte source: Throwing in pull in response to
 * read() must be ignored if the stream is errored in it" */
static void pull_errors_throws_read(void **state)
{
    (void)state;
    pull_throws_case(false, true);
}

/* F: "ReadableStream with byte source: Throwing in pull in response to
 * read(view) function must error the stream" */
static void pull_throws_view(void **state)
{
    (void)state;
    pull_throws_case(true, false);
}

/* F: "ReadableStream with byte source: Throwing in pull in response to
 * read(view) must be ignored if the stream is errored in it" */
static void pull_errors_throws_view(void **state)
{
    (void)state;
    pull_throws_case(true, true);
}

/* F: "calling respond() twice on the same byobRequest should throw" */
static int respond4(struct rsrc *s)
{
    uint8_t *p;
    size_t n;

    assert_int_equal(weir_readable_byob_request(s->rs, &p, &n), 0);
    return weir_readable_byob_respond(s->rs, 4);
}

static void respond_twice(void **state)
{
    struct rsrc s = {.on_pull = respond4};
    struct weir_readable *rs = rsrc_make(&s, 0, true);
    struct weir_reader r;
    struct weir_chunk c;
    uint8_t b[16];

    (void)state;
    weir_reader_acquire(&r, rs);
    assert_int_equal(weir_reader_read_byob(&r, b, 16, 1, &c, read_cb, NULL), 0);
    assert_int_equal(c.len, 4);
    assert_int_equal(weir_readable_byob_respond(rs, 4), -EINVAL);
    weir_reader_release(&r);
    weir_readable_destroy(rs);
}

/* F: "calling respond(0) twice on the same byobRequest should throw even
 * when closed". Departure (close answers BYOB reads): the close ends the
 * read, so the first respond(0) already finds no request. */
static void respond0_twice_closed(void **state)
{
    struct rsrc s = {.pull_rc = WEIR_PENDING};
    struct weir_readable *rs = rsrc_make(&s, 0, true);
    struct weir_reader r;
    struct weir_chunk c;
    struct done d = {0};
    uint8_t b[16];

    (void)state;
    weir_reader_acquire(&r, rs);
    assert_int_equal(weir_reader_read_byob(&r, b, 16, 1, &c, read_cb, &d),
                     WEIR_PENDING);
    assert_int_equal(s.pulls, 1);
    assert_int_equal(weir_readable_close(rs), 0);
    assert_int_equal(weir_readable_byob_respond(rs, 0), -EINVAL);
    weir_readable_pull_done(rs, 0);
    assert_int_equal(d.rc, WEIR_DONE);
    assert_int_equal(d.chunk.len, 0);
    assert_int_equal(weir_readable_byob_respond(rs, 0), -EINVAL);
    weir_reader_release(&r);
    weir_readable_destroy(rs);
}

/* F: "calling respond() should throw when canceled" */
static void respond_after_cancel(void **state)
{
    struct rsrc s = {.pull_rc = WEIR_PENDING};
    struct weir_readable *rs = rsrc_make(&s, 0, true);
    struct weir_reader r;
    struct weir_chunk c;
    struct done d = {0};
    uint8_t b[16];

    (void)state;
    weir_reader_acquire(&r, rs);
    assert_int_equal(weir_reader_read_byob(&r, b, 16, 1, &c, read_cb, &d),
                     WEIR_PENDING);
    assert_int_equal(weir_reader_cancel(&r, E1), 0);
    assert_int_equal(weir_readable_byob_respond(rs, 0), -EINVAL);
    weir_readable_pull_done(rs, 0);
    assert_int_equal(d.rc, WEIR_DONE);
    assert_int_equal(d.chunk.len, 0);
    weir_reader_release(&r);
    weir_readable_destroy(rs);
}

/* F: "ReadableStreamBYOBReader constructor requires an unlocked
 * ReadableStream" */
static void byob_reader_needs_unlocked(void **state)
{
    struct weir_readable_options o = {.byte_stream = true};
    struct weir_readable *rs;
    struct weir_reader r, r2;

    (void)state;
    assert_int_equal(weir_readable_create(&rs, NULL, NULL, &o), 0);
    assert_int_equal(weir_reader_acquire(&r, rs), 0);
    assert_int_equal(weir_reader_acquire(&r2, rs), -EBUSY);
    weir_reader_release(&r);
    weir_readable_destroy(rs);
}

/* The releaseLock() cases: a BYOB read waits on a pull that is still
 * running; its reader is released, which fails it (-ECANCELED, the spec's
 * TypeError), and a second reader's BYOB read takes its place. The
 * source's request then describes the second read's buffer: weir's
 * request is the waiting read's own memory, and the first read's buffer
 * went back to its caller with the release (the spec keeps answering
 * into the first buffer and copies over). */
struct released {
    struct rsrc s;
    struct weir_readable *rs;
    struct weir_reader r2;
    struct done d1, d2;
};

static void release_then_second_read(struct released *x, uint8_t *b2,
                                     size_t len2, size_t min2)
{
    static uint8_t b1[3] = {1, 2, 3};
    struct weir_reader r1;
    struct weir_chunk c;
    uint8_t *p;
    size_t n;

    x->s.pull_rc = WEIR_PENDING;
    x->rs = rsrc_make(&x->s, 0, true);
    weir_reader_acquire(&r1, x->rs);
    assert_int_equal(weir_reader_read_byob(&r1, b1, 3, 1, &c, read_cb, &x->d1),
                     WEIR_PENDING);
    assert_int_equal(weir_readable_byob_request(x->rs, &p, &n), 0);
    assert_ptr_equal(p, b1);
    assert_int_equal(n, 3);
    weir_reader_release(&r1);
    assert_int_equal(x->d1.calls, 1);
    assert_int_equal(x->d1.rc, -ECANCELED);
    weir_reader_acquire(&x->r2, x->rs);
    assert_int_equal(
        weir_reader_read_byob(&x->r2, b2, len2, min2, &c, read_cb, &x->d2),
        WEIR_PENDING);
    assert_int_equal(x->s.pulls, 1);
}

static void released_done(struct released *x)
{
    weir_reader_release(&x->r2);
    weir_readable_destroy(x->rs);
}

/* F: "ReadableStream with byte source: releaseLock() with pending
 * read(view), read(view) on second reader, respond()" */
static void release_then_respond(void **state)
{
    struct released x = {0};
    uint8_t b2[3] = {4, 5, 6}, *p;
    size_t n;

    (void)state;
    release_then_second_read(&x, b2, 3, 1);
    assert_int_equal(weir_readable_byob_request(x.rs, &p, &n), 0);
    assert_ptr_equal(p, b2);
    assert_int_equal(n, 3);
    p[0] = 11;
    assert_int_equal(weir_readable_byob_respond(x.rs, 1), 0);
    assert_int_equal(weir_readable_byob_request(x.rs, &p, &n), -ENOENT);
    assert_int_equal(x.d2.rc, 0);
    assert_ptr_equal(x.d2.chunk.data, b2);
    assert_int_equal(x.d2.chunk.len, 1);
    assert_int_equal(b2[0], 11);
    assert_int_equal(b2[1], 5);
    released_done(&x);
}

/* F: "ReadableStream with byte source: releaseLock() with pending
 * read(view), read(view) on second reader with 1 element Uint16Array,
 * respond(1)" (a 2-byte read with min 2) */
static void release_then_respond_partial(void **state)
{
    struct released x = {0};
    uint8_t b2[2] = {0}, *p;
    size_t n;

    (void)state;
    release_then_second_read(&x, b2, 2, 2);
    assert_int_equal(weir_readable_byob_request(x.rs, &p, &n), 0);
    assert_ptr_equal(p, b2);
    assert_int_equal(n, 2);
    p[0] = 0x11;
    assert_int_equal(weir_readable_byob_respond(x.rs, 1), 0);
    /* Short of min: the request goes on, over the rest of the buffer. */
    assert_int_equal(x.d2.calls, 0);
    assert_int_equal(weir_readable_byob_request(x.rs, &p, &n), 0);
    assert_ptr_equal(p, b2 + 1);
    assert_int_equal(n, 1);
    p[0] = 0x22;
    assert_int_equal(weir_readable_byob_respond(x.rs, 1), 0);
    assert_int_equal(x.d2.rc, 0);
    assert_int_equal(x.d2.chunk.len, 2);
    assert_int_equal(b2[0], 0x11);
    assert_int_equal(b2[1], 0x22);
    released_done(&x);
}

/* F: "ReadableStream with byte source: releaseLock() with pending
 * read(view), read(view) on second reader, enqueue()" */
static uint8_t x1112[2] = {11, 12};

static void release_then_enqueue(void **state)
{
    struct released x = {0};
    uint8_t b2[3] = {4, 5, 6}, *p;
    size_t n;

    (void)state;
    release_then_second_read(&x, b2, 3, 1);
    assert_int_equal(weir_readable_enqueue(x.rs, bytes(x1112, 2)), 0);
    assert_int_equal(weir_readable_byob_request(x.rs, &p, &n), -ENOENT);
    assert_int_equal(x.d2.rc, 0);
    assert_int_equal(x.d2.chunk.len, 2);
    assert_int_equal(b2[0], 11);
    assert_int_equal(b2[1], 12);
    assert_int_equal(b2[2], 6);
    released_done(&x);
}

/* F: "ReadableStream with byte source: releaseLock() with pending
 * read(view), read(view) on second reader, close(), respond(0)".
 * Departure (close answers BYOB reads): the close ends the second read,
 * done with no bytes, and leaves no request for respond(0). */
static void release_then_close(void **state)
{
    struct released x = {0};
    uint8_t b2[3] = {4, 5, 6};

    (void)state;
    release_then_second_read(&x, b2, 3, 1);
    assert_int_equal(weir_readable_close(x.rs), 0);
    assert_int_equal(weir_readable_byob_respond(x.rs, 0), -EINVAL);
    assert_int_equal(x.d2.rc, WEIR_DONE);
    assert_ptr_equal(x.d2.chunk.data, b2);
    assert_int_equal(x.d2.chunk.len, 0);
    released_done(&x);
}

#define T(fn, rest) WPT(fn, "ReadableStream with byte source: " rest)

int main(void)
{
    const struct CMUnitTest tests[] = {
        WPT(byob_needs_bytes,
            "getReader({mode: \"byob\"}) throws on non-bytes streams"),
        WPT(construct,
            "ReadableStream with byte source can be constructed with no "
            "errors"),
        T(start_then_pull, "Construct and expect start and pull being "
                           "called"),
        T(no_pull_before_start,
          "No automatic pull call if start doesn't finish"),
        T(start_throws, "start() throws an exception"),
        T(hwm0_no_pull, "Construct with highWaterMark of 0"),
        T(desired_closed, "desiredSize when closed"),
        T(desired_errored, "desiredSize when errored"),
        T(release_default, "getReader(), then releaseLock()"),
        T(release_byob, "getReader() with mode set to byob, then "
                        "releaseLock()"),
        T(close_keeps_reader, "Test that closing a stream does not release a "
                              "reader automatically"),
        T(close_keeps_byob_reader, "Test that closing a stream does not "
                                   "release a BYOB reader automatically"),
        T(error_keeps_reader, "Test that erroring a stream does not release "
                              "a reader automatically"),
        T(error_keeps_byob_reader, "Test that erroring a stream does not "
                                   "release a BYOB reader automatically"),
        T(auto_pull, "Automatic pull() after start()"),
        T(auto_pull_read, "Automatic pull() after start() and read()"),
        T(auto_pull_read_view, "Automatic pull() after start() and read(view)"),
        T(enqueue_then_read, "enqueue(), getReader(), then read()"),
        T(push_source, "Push source that doesn't understand pull signal"),
        T(view_partially_then_read,
          "enqueue(), read(view) partially, then read()"),
        T(reader_enqueue_close_read,
          "getReader(), enqueue(), close(), then read()"),
        T(enqueue_close_reader_read,
          "enqueue(), close(), getReader(), then read()"),
        T(respond_by_enqueue, "Respond to pull() by enqueue()"),
        T(respond_by_enqueue_async,
          "Respond to pull() by enqueue() asynchronously"),
        T(multiple_pulls, "Respond to multiple pull() by separate enqueue()"),
        T(view_then_respond, "read(view), then respond()"),
        T(respond_too_big_value,
          "read(view), then respond() with too big value"),
        T(enqueue_then_view, "enqueue(), getReader(), then read(view)"),
        T(cancel_default,
          "enqueue(), getReader(), then cancel() (mode = not BYOB)"),
        T(cancel_byob, "enqueue(), getReader(), then cancel() (mode = BYOB)"),
        T(view_then_cancel, "getReader(), read(view), then cancel()"),
        T(cancel_partial_pull,
          "cancel() with partially filled pending pull() request"),
        T(multiple_enqueue_view,
          "Multiple enqueue(), getReader(), then read(view)"),
        T(bigger_view,
          "enqueue(), getReader(), then read(view) with a bigger view"),
        T(smaller_views,
          "enqueue(), getReader(), then read(view) with smaller views"),
        T(one_byte_then_u16,
          "enqueue() 1 byte, getReader(), then read(view) with Uint16Array"),
        T(u16_on_closed_one_byte,
          "read(view) with Uint16Array on close()-d stream with 1 byte "
          "enqueue()-d must fail"),
        T(close_twice, "Throw if close()-ed more than once"),
        T(enqueue_after_close, "Throw on enqueue() after close()"),
        T(respond_and_close,
          "read(view), then respond() and close() in pull()"),
        T(u32_by_respond, "read(view) with Uint32Array, then fill it by "
                          "multiple respond() calls"),
        T(u32_by_enqueue, "read(view) with Uint32Array, then fill it by "
                          "multiple enqueue() calls"),
        T(read_twice_enqueue_twice, "read() twice, then enqueue() twice"),
        T(views_close_respond, "Multiple read(view), close() and respond()"),
        T(views_big_enqueue, "Multiple read(view), big enqueue()"),
        T(views_many_enqueues, "Multiple read(view) and multiple enqueue()"),
        T(view_undefined,
          "read(view) with passing undefined as view must fail"),
        T(read_errored, "read() on an errored stream"),
        T(read_then_error, "read(), then error()"),
        T(view_errored, "read(view) on an errored stream"),
        T(view_then_error, "read(view), then error()"),
        T(pull_throws_read, "Throwing in pull function must error the stream"),
        T(pull_errors_throws_read,
          "Throwing in pull in response to read() must be ignored if the "
          "stream is errored in it"),
        T(pull_throws_view, "Throwing in pull in response to read(view) "
                            "function must error the stream"),
        T(pull_errors_throws_view,
          "Throwing in pull in response to read(view) must be ignored if the "
          "stream is errored in it"),
        WPT(respond_twice,
            "calling respond() twice on the same byobRequest should throw"),
        WPT(respond0_twice_closed, "calling respond(0) twice on the same "
                                   "byobRequest should throw even when closed"),
        WPT(respond_after_cancel,
            "calling respond() should throw when canceled"),
        T(release_then_respond, "releaseLock() with pending read(view), "
                                "read(view) on second reader, respond()"),
        T(release_then_respond_partial,
          "releaseLock() with pending read(view), read(view) on second "
          "reader with 1 element Uint16Array, respond(1)"),
        T(release_then_enqueue, "releaseLock() with pending read(view), "
                                "read(view) on second reader, enqueue()"),
        T(release_then_close, "releaseLock() with pending read(view), "
                              "read(view) on second reader, close(), "
                              "respond(0)"),
        WPT(byob_reader_needs_unlocked, "ReadableStreamBYOBReader constructor "
                                        "requires an unlocked ReadableStream"),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
