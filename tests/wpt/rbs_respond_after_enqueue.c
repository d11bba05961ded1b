/*
 * WPT streams/readable-byte-streams/respond-after-enqueue.any.js, ported
 * to weir's C API. The WPT's default reads of an autoAllocateChunkSize
 * stream are BYOB reads of 10 bytes here (weir has no auto-allocation):
 * the source enqueues, which answers the read, and then responds to a
 * request that is no longer there.
 */
#include "wpt.h"

#define F "readable-byte-streams/respond-after-enqueue.any.js"

static uint8_t x123[] = {1, 2, 3};

/* The pull of both cases; s->n set: take the request before enqueueing
 * (the WPT's cached byobRequest). s->user records respond's result. */
static int enqueue_then_respond(struct rsrc *s)
{
    uint8_t *p;
    size_t n;

    if (s->n)
        assert_int_equal(weir_readable_byob_request(s->rs, &p, &n), 0);
    assert_int_equal(
        weir_readable_enqueue(s->rs, (struct weir_chunk){NULL, x123, 3}), 0);
    /* The enqueue answered the read: nothing is left to respond to. */
    *(int *)s->user = weir_readable_byob_respond(s->rs, 10);
    return 0;
}

static void respond_after_enqueue(bool cached)
{
    int respond_rc = 0;
    struct rsrc s = {
        .on_pull = enqueue_then_respond, .n = cached, .user = &respond_rc};
    struct weir_readable *rs = rsrc_make(&s, 0, true);
    struct weir_reader r;
    struct weir_chunk c;
    uint8_t b[10] = {0};

    weir_reader_acquire(&r, rs);
    assert_int_equal(weir_reader_read_byob(&r, b, 10, 1, &c, read_cb, NULL), 0);
    assert_int_equal(c.len, 3);
    assert_memory_equal(b, x123, 3);
    assert_int_equal(respond_rc, -EINVAL);
    assert_false(weir_readable_errored(rs, NULL));
    weir_reader_release(&r);
    weir_readable_destroy(rs);
}

/* F: "byobRequest.respond() after enqueue() should not crash" */
static void respond_after(void **state)
{
    (void)state;
    respond_after_enqueue(false);
}

/* F: "byobRequest.respond() with cached byobRequest after enqueue() should
 * not crash" */
static void respond_cached_after(void **state)
{
    (void)state;
    respond_after_enqueue(true);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        WPT(respond_after,
            "byobRequest.respond() after enqueue() should not crash"),
        WPT(respond_cached_after, "byobRequest.respond() with cached "
                                  "byobRequest after enqueue() should not "
                                  "crash"),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
