/*
 * test_stream_readable.c - readable streams, one test per rule: when pull
 * is called, strategies and desired sizes, close and error, cancel,
 * readers, BYOB fills, the iterator loop, lazy queues, mark and reap.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include "test_stream_util.h"

static struct weir_readable *make(struct src *s, size_t hwm, bool bytes)
{
    struct weir_readable_options o = {.strategy = {.hwm = hwm, .bytes = bytes}};
    struct weir_readable *rs = NULL;

    assert_int_equal(weir_readable_create(&rs, &src_ops, s, &o), 0);
    return rs;
}

static void pull_waits_for_start_to_finish(void **state)
{
    struct src s = {.total = 10, .per_pull = 1, .async_start = true};
    struct weir_readable *rs;

    (void)state;
    rs = make(&s, 4, false);
    assert_int_equal(s.starts, 1);
    assert_int_equal(s.pulls, 0);
    weir_readable_start_done(rs, 0);
    /* Now pull fills up to the high-water mark, one chunk per pull. */
    assert_int_equal(s.pulls, 4);
    assert_int_equal(weir_readable_queued(rs), 4);
    weir_readable_destroy(rs);
}

static void pull_only_while_desired_size_positive(void **state)
{
    struct src s = {.endless = true, .per_pull = 2};
    struct weir_readable *rs;
    struct weir_reader r;
    struct weir_chunk c;

    (void)state;
    rs = make(&s, 5, false);
    /* 2 + 2 + 2: the third pull overshoots, as enqueue may. */
    assert_int_equal(s.pulls, 3);
    assert_int_equal(weir_readable_desired_size(rs), -1);
    assert_int_equal(weir_reader_acquire(&r, rs), 0);
    assert_int_equal(weir_reader_read(&r, &c, read_cb, NULL), 0);
    /* desired 0: still no pull. */
    assert_int_equal(s.pulls, 3);
    assert_int_equal(weir_reader_read(&r, &c, read_cb, NULL), 0);
    assert_int_equal(s.pulls, 4);
    weir_reader_release(&r);
    weir_readable_destroy(rs);
}

static void pull_when_read_waits_even_at_hwm_zero(void **state)
{
    struct src s = {.total = 3, .per_pull = 1};
    struct weir_readable *rs;
    struct weir_reader r;
    struct weir_chunk c = {0};
    uint64_t sum = 0;

    (void)state;
    rs = make(&s, 0, false);
    assert_int_equal(s.pulls, 0);
    assert_int_equal(weir_reader_acquire(&r, rs), 0);
    for (uint32_t i = 0; i < 3; i++) {
        /* The source enqueues inside pull: the read answers at once. */
        assert_int_equal(weir_reader_read(&r, &c, read_cb, NULL), 0);
        sum = sum_chunk(sum, c);
        assert_int_equal(weir_readable_queued(rs), 0);
    }
    assert_int_equal(s.pulls, 3);
    assert_int_equal(weir_reader_read(&r, &c, read_cb, NULL), WEIR_DONE);
    assert_true(sum == s.sum);
    weir_reader_release(&r);
    weir_readable_destroy(rs);
}

static void pull_never_runs_twice_at_once(void **state)
{
    struct src s = {.endless = true, .per_pull = 1, .async_pull = true};
    struct weir_readable *rs;
    struct weir_reader r;
    struct weir_chunk c;
    struct done d1 = {0}, d2 = {0};

    (void)state;
    rs = make(&s, 0, false);
    assert_int_equal(weir_reader_acquire(&r, rs), 0);
    assert_int_equal(weir_reader_read(&r, &c, read_cb, &d1), WEIR_PENDING);
    assert_int_equal(s.pulls, 1);
    /* A second request during the pull only sets pull-again. */
    assert_int_equal(weir_reader_read(&r, &c, read_cb, &d2), WEIR_PENDING);
    assert_int_equal(s.pulls, 1);
    src_finish_pull(&s);
    assert_int_equal(d1.calls, 1);
    assert_int_equal(d1.chunk.len, chunk_nr(0).len);
    /* The pull-again ran when the first pull finished. */
    assert_int_equal(s.pulls, 2);
    assert_int_equal(d2.calls, 0);
    src_finish_pull(&s);
    assert_int_equal(d2.calls, 1);
    assert_int_equal(d2.chunk.len, chunk_nr(1).len);
    /* Nobody waits and hwm is 0: no third pull. */
    assert_int_equal(s.pulls, 2);
    weir_reader_release(&r);
    weir_readable_destroy(rs);
}

/* The consumer reads again from inside its callback, the source enqueues
 * inside pull: a million rounds must not grow the stack. */
struct chain {
    struct weir_reader r;
    uint32_t got, want;
    struct done d;
};

static void chain_cb(void *ctx, int rc, struct weir_chunk c)
{
    struct chain *ch = ctx;
    int r;

    assert_int_equal(rc, 0);
    (void)c;
    while (++ch->got < ch->want) {
        r = weir_reader_read(&ch->r, &c, chain_cb, ch);
        if (r == WEIR_PENDING)
            return;
        assert_int_equal(r, 0);
    }
}

static void sync_pull_inside_read_does_not_recurse(void **state)
{
    struct src s = {.endless = true, .per_pull = 1, .async_pull = true};
    struct weir_readable *rs;
    struct chain ch = {.want = 1000000};
    struct weir_chunk c;

    (void)state;
    rs = make(&s, 0, false);
    assert_int_equal(weir_reader_acquire(&ch.r, rs), 0);
    assert_int_equal(weir_reader_read(&ch.r, &c, chain_cb, &ch), WEIR_PENDING);
    /* From now on the source answers synchronously. */
    s.async_pull = false;
    src_finish_pull(&s);
    assert_int_equal(ch.got, 1000000);
    weir_reader_release(&ch.r);
    weir_readable_destroy(rs);
}

static void byte_length_strategy_weighs_bytes(void **state)
{
    struct src s = {.no_close = true};
    struct weir_readable *rs;
    struct weir_reader r;
    struct weir_chunk c;

    (void)state;
    rs = make(&s, 100, true);
    assert_int_equal(weir_readable_desired_size(rs), 100);
    weir_readable_enqueue(rs, (struct weir_chunk){NULL, pattern, 30});
    weir_readable_enqueue(rs, (struct weir_chunk){NULL, pattern, 30});
    assert_int_equal(weir_readable_desired_size(rs), 40);
    weir_readable_enqueue(rs, (struct weir_chunk){NULL, pattern, 50});
    assert_int_equal(weir_readable_desired_size(rs), -10);
    assert_int_equal(weir_readable_queued(rs), 110);
    assert_int_equal(weir_reader_acquire(&r, rs), 0);
    assert_int_equal(weir_reader_read(&r, &c, read_cb, NULL), 0);
    assert_int_equal(weir_readable_desired_size(rs), 20);
    weir_reader_release(&r);
    weir_readable_destroy(rs);
}

static void unlimited_hwm_queues_everything_in_order(void **state)
{
    struct src s = {.no_close = true};
    struct weir_readable *rs;
    struct weir_reader r;
    struct weir_chunk c;
    uint64_t in = 0, out = 0;

    (void)state;
    rs = make(&s, WEIR_HWM_UNLIMITED, false);
    for (uint32_t i = 0; i < 100000; i++) {
        in = sum_chunk(in, chunk_nr(i));
        assert_int_equal(weir_readable_enqueue(rs, chunk_nr(i)), 0);
        assert_true(weir_readable_desired_size(rs) == INT64_MAX);
    }
    assert_int_equal(weir_readable_close(rs), 0);
    assert_int_equal(weir_reader_acquire(&r, rs), 0);
    while (weir_reader_read(&r, &c, read_cb, NULL) == 0)
        out = sum_chunk(out, c);
    assert_true(in == out);
    assert_true(weir_readable_closed(rs));
    weir_reader_release(&r);
    weir_readable_destroy(rs);
}

static void close_lets_queue_drain_then_done(void **state)
{
    struct src s = {.no_close = true};
    struct weir_readable *rs;
    struct weir_reader r;
    struct weir_chunk c;
    struct done d = {0};

    (void)state;
    rs = make(&s, 4, false);
    weir_readable_enqueue(rs, chunk_nr(0));
    weir_readable_enqueue(rs, chunk_nr(1));
    assert_int_equal(weir_readable_close(rs), 0);
    assert_false(weir_readable_closed(rs));
    assert_int_equal(weir_reader_acquire(&r, rs), 0);
    assert_int_equal(weir_reader_read(&r, &c, read_cb, NULL), 0);
    assert_int_equal(weir_reader_read(&r, &c, read_cb, NULL), 0);
    assert_true(weir_readable_closed(rs));
    assert_int_equal(weir_reader_read(&r, &c, read_cb, &d), WEIR_DONE);
    assert_int_equal(d.calls, 0);
    assert_int_equal(weir_readable_desired_size(rs), 0);
    weir_reader_release(&r);
    weir_readable_destroy(rs);
}

static void errors_after_close_and_double_close(void **state)
{
    struct src s = {.no_close = true};
    struct weir_readable *rs;

    (void)state;
    rs = make(&s, 4, false);
    assert_int_equal(weir_readable_close(rs), 0);
    assert_int_equal(weir_readable_close(rs), -EINVAL);
    assert_int_equal(weir_readable_enqueue(rs, chunk_nr(0)), -EINVAL);
    /* Error after close changes nothing. */
    weir_readable_error(rs, -EIO);
    assert_false(weir_readable_errored(rs, NULL));
    assert_true(weir_readable_closed(rs));
    weir_readable_destroy(rs);
}

static void error_fails_waiting_reads_and_frees_queued_buffers(void **state)
{
    struct weir_pool_options po = {.buf_size = 4096, .count = 8, .threads = 1};
    struct weir_pool *pool;
    struct weir_pool_stats st;
    struct src s = {.no_close = true};
    struct weir_readable *rs, *rs2;
    struct weir_reader r;
    struct weir_chunk c;
    struct done d = {0};
    int err = 0;

    (void)state;
    assert_int_equal(weir_pool_create(&pool, &po), 0);
    rs = make(&s, 8, false);
    for (int i = 0; i < 3; i++) {
        struct weir_buf *b;

        assert_int_equal(weir_pool_get(pool, &b), 0);
        weir_readable_enqueue(rs, weir_chunk_of(b, 100));
    }
    weir_pool_stats(pool, &st);
    assert_int_equal(st.in_use, 3);
    weir_readable_error(rs, -EIO);
    weir_pool_stats(pool, &st);
    assert_int_equal(st.in_use, 0);
    assert_true(weir_readable_errored(rs, &err));
    assert_int_equal(err, -EIO);
    assert_true(weir_readable_desired_size(rs) == WEIR_DESIRED_NONE);
    assert_int_equal(weir_reader_acquire(&r, rs), 0);
    assert_int_equal(weir_reader_read(&r, &c, read_cb, NULL), -EIO);
    weir_reader_release(&r);
    weir_readable_destroy(rs);

    /* A parked read fails with the error. */
    rs2 = make(&s, 0, false);
    assert_int_equal(weir_reader_acquire(&r, rs2), 0);
    s.async_pull = true;
    assert_int_equal(weir_reader_read(&r, &c, read_cb, &d), WEIR_PENDING);
    weir_readable_error(rs2, -EPROTO);
    assert_int_equal(d.calls, 1);
    assert_int_equal(d.rc, -EPROTO);
    weir_reader_release(&r);
    weir_readable_destroy(rs2);
    assert_int_equal(weir_pool_destroy(pool), 0);
}

static void cancel_closes_drops_queue_and_tells_source(void **state)
{
    struct weir_pool_options po = {.buf_size = 4096, .count = 4, .threads = 1};
    struct weir_pool *pool;
    struct src s = {.no_close = true};
    struct weir_readable *rs;
    struct weir_reader r;
    struct weir_chunk c;
    struct weir_buf *b;

    (void)state;
    assert_int_equal(weir_pool_create(&pool, &po), 0);
    rs = make(&s, 4, false);
    assert_int_equal(weir_pool_get(pool, &b), 0);
    weir_readable_enqueue(rs, weir_chunk_of(b, 10));
    assert_int_equal(weir_reader_acquire(&r, rs), 0);
    assert_int_equal(weir_reader_cancel(&r, -ECANCELED), 0);
    assert_int_equal(s.cancels, 1);
    assert_int_equal(s.cancel_reason, -ECANCELED);
    assert_true(weir_readable_closed(rs));
    assert_int_equal(weir_reader_read(&r, &c, read_cb, NULL), WEIR_DONE);
    /* Cancelling again is a no-op. */
    assert_int_equal(weir_reader_cancel(&r, -EIO), 0);
    assert_int_equal(s.cancels, 1);
    weir_reader_release(&r);
    weir_readable_destroy(rs);
    assert_int_equal(weir_pool_destroy(pool), 0);
}

static void reader_lock_is_exclusive(void **state)
{
    struct src s = {.no_close = true};
    struct weir_readable *rs;
    struct weir_reader r1, r2;

    (void)state;
    rs = make(&s, 1, false);
    assert_int_equal(weir_reader_acquire(&r1, rs), 0);
    assert_true(weir_readable_locked(rs));
    assert_int_equal(weir_reader_acquire(&r2, rs), -EBUSY);
    weir_reader_release(&r1);
    assert_int_equal(weir_reader_acquire(&r2, rs), 0);
    weir_reader_release(&r2);
    weir_readable_destroy(rs);
}

static void release_fails_parked_reads(void **state)
{
    struct src s = {.no_close = true};
    struct weir_readable *rs;
    struct weir_reader r;
    struct weir_chunk c;
    struct done d = {0};

    (void)state;
    rs = make(&s, 0, false);
    assert_int_equal(weir_reader_acquire(&r, rs), 0);
    assert_int_equal(weir_reader_read(&r, &c, read_cb, &d), WEIR_PENDING);
    weir_reader_release(&r);
    assert_int_equal(d.calls, 1);
    assert_int_equal(d.rc, -ECANCELED);
    assert_int_equal(weir_reader_read(&r, &c, read_cb, &d), -EINVAL);
    weir_readable_destroy(rs);
}

static struct weir_readable *make_bytes(struct src *s)
{
    struct weir_readable_options o = {.byte_stream = true};
    struct weir_readable *rs = NULL;

    assert_int_equal(weir_readable_create(&rs, &src_ops, s, &o), 0);
    return rs;
}

static void byob_fills_to_at_least_min(void **state)
{
    /* Each pull enqueues one chunk; chunk i is 1 + i bytes long. */
    struct src s = {.endless = true, .per_pull = 1};
    struct weir_readable *rs;
    struct weir_reader r;
    struct weir_chunk c;
    uint8_t buf[64];
    uint64_t want = 0, got = 0;

    (void)state;
    rs = make_bytes(&s);
    assert_int_equal(weir_reader_acquire(&r, rs), 0);
    assert_int_equal(weir_reader_read_byob(&r, buf, 64, 0, &c, read_cb, NULL),
                     -EINVAL);
    assert_int_equal(weir_reader_read_byob(&r, buf, 64, 65, &c, read_cb, NULL),
                     -EINVAL);
    assert_int_equal(weir_reader_read_byob(&r, buf, 64, 40, &c, read_cb, NULL),
                     0);
    /* chunk 0 is 1 byte, chunk 1 two, ... : 1+..+9 = 45 >= 40, and the
     * ninth chunk's bytes all fit. */
    assert_true(c.data == buf);
    assert_int_equal(c.len, 45);
    for (uint32_t i = 0; i < 9; i++)
        for (uint32_t k = 0; k < chunk_nr(i).len; k++)
            want = (want ^ chunk_nr(i).data[k]) * 1099511628211u;
    for (uint32_t k = 0; k < c.len; k++)
        got = (got ^ buf[k]) * 1099511628211u;
    assert_true(want == got);
    weir_reader_release(&r);
    weir_readable_destroy(rs);
}

static void byob_leftover_bytes_stay_queued(void **state)
{
    struct src s = {.no_close = true};
    struct weir_readable *rs;
    struct weir_reader r;
    struct weir_chunk c;
    uint8_t buf[4];

    (void)state;
    rs = make_bytes(&s);
    weir_readable_enqueue(rs, (struct weir_chunk){NULL, pattern, 10});
    assert_int_equal(weir_readable_queued(rs), 10);
    assert_int_equal(weir_reader_acquire(&r, rs), 0);
    assert_int_equal(weir_reader_read_byob(&r, buf, 4, 1, &c, read_cb, NULL),
                     0);
    assert_int_equal(c.len, 4);
    assert_memory_equal(buf, pattern, 4);
    assert_int_equal(weir_readable_queued(rs), 6);
    assert_int_equal(weir_reader_read_byob(&r, buf, 4, 1, &c, read_cb, NULL),
                     0);
    assert_memory_equal(buf, pattern + 4, 4);
    weir_readable_close(rs);
    assert_int_equal(weir_reader_read_byob(&r, buf, 4, 1, &c, read_cb, NULL),
                     0);
    assert_int_equal(c.len, 2);
    assert_memory_equal(buf, pattern + 8, 2);
    assert_int_equal(weir_reader_read_byob(&r, buf, 4, 1, &c, read_cb, NULL),
                     WEIR_DONE);
    assert_int_equal(c.len, 0);
    weir_reader_release(&r);
    weir_readable_destroy(rs);
}

static void byob_partial_fill_ends_with_close(void **state)
{
    struct src s = {.no_close = true};
    struct weir_readable *rs;
    struct weir_reader r;
    struct weir_chunk c;
    struct done d = {0};
    uint8_t buf[16];

    (void)state;
    rs = make_bytes(&s);
    assert_int_equal(weir_reader_acquire(&r, rs), 0);
    assert_int_equal(weir_reader_read_byob(&r, buf, 16, 8, &c, read_cb, &d),
                     WEIR_PENDING);
    weir_readable_enqueue(rs, (struct weir_chunk){NULL, pattern, 5});
    /* 5 < min: still waiting, the bytes are in the caller's buffer. */
    assert_int_equal(d.calls, 0);
    assert_int_equal(weir_readable_queued(rs), 0);
    weir_readable_close(rs);
    assert_int_equal(d.calls, 1);
    assert_int_equal(d.rc, WEIR_DONE);
    assert_int_equal(d.chunk.len, 5);
    assert_memory_equal(buf, pattern, 5);
    weir_reader_release(&r);
    weir_readable_destroy(rs);
}

static void byob_needs_a_byte_stream(void **state)
{
    struct src s = {.no_close = true};
    struct weir_readable *rs;
    struct weir_reader r;
    struct weir_chunk c;
    uint8_t buf[4];

    (void)state;
    rs = make(&s, 1, false);
    assert_int_equal(weir_reader_acquire(&r, rs), 0);
    assert_int_equal(weir_reader_read_byob(&r, buf, 4, 1, &c, read_cb, NULL),
                     -EINVAL);
    weir_reader_release(&r);
    weir_readable_destroy(rs);
}

/* A byte source answering BYOB reads in place, 3 bytes per pull. */
static int respond_pull(struct weir_readable *rs, void *ctx)
{
    int *pulls = ctx;
    uint8_t *buf;
    size_t len, n;

    ++*pulls;
    if (weir_readable_byob_request(rs, &buf, &len))
        return weir_readable_enqueue(rs, (struct weir_chunk){NULL, pattern, 3});
    n = len < 3 ? len : 3;
    memcpy(buf, pattern, n);
    return weir_readable_byob_respond(rs, n);
}

static void byob_request_fills_the_readers_buffer_in_place(void **state)
{
    const struct weir_source_ops ops = {.pull = respond_pull};
    struct weir_readable_options o = {.byte_stream = true};
    struct weir_readable *rs;
    struct weir_reader r;
    struct weir_chunk c;
    uint8_t buf[8];
    uint8_t *p;
    size_t len;
    int pulls = 0;

    (void)state;
    assert_int_equal(weir_readable_create(&rs, &ops, &pulls, &o), 0);
    assert_int_equal(weir_readable_byob_request(rs, &p, &len), -ENOENT);
    assert_int_equal(weir_readable_byob_respond(rs, 1), -EINVAL);
    assert_int_equal(weir_reader_acquire(&r, rs), 0);
    /* min 7: three pulls of 3, 3 and 1 byte (the room left). */
    assert_int_equal(weir_reader_read_byob(&r, buf, 7, 7, &c, read_cb, NULL),
                     0);
    assert_int_equal(c.len, 7);
    assert_int_equal(pulls, 3);
    assert_memory_equal(buf, pattern, 3);
    assert_memory_equal(buf + 3, pattern, 3);
    assert_memory_equal(buf + 6, pattern, 1);
    /* Nothing was queued: every byte went straight into buf. */
    assert_int_equal(weir_readable_queued(rs), 0);
    weir_reader_release(&r);
    weir_readable_destroy(rs);
}

struct summer {
    uint64_t sum, limit;
    int done_calls, done_rc;
};

static int sum_each(void *ctx, struct weir_chunk c)
{
    struct summer *sm = ctx;

    sm->sum += c.len;
    return sm->sum > sm->limit;
}

static void sum_done(void *ctx, int rc)
{
    struct summer *sm = ctx;

    sm->done_calls++;
    sm->done_rc = rc;
}

static void iterator_loop_visits_all_and_break_cancels(void **state)
{
    struct src s = {.total = 1000, .per_pull = 1};
    struct src e = {.endless = true, .per_pull = 1};
    struct weir_readable *rs;
    struct weir_iter it;
    struct summer sm = {.limit = UINT64_MAX};
    uint64_t want = 0;

    (void)state;
    for (uint32_t i = 0; i < 1000; i++)
        want += chunk_nr(i).len;
    rs = make(&s, 1, false);
    assert_int_equal(weir_iter_run(&it, rs, sum_each, sum_done, &sm), 0);
    assert_true(sm.sum == want);
    assert_false(weir_readable_locked(rs));
    weir_readable_destroy(rs);

    /* Breaking out of an endless stream cancels it. */
    sm = (struct summer){.limit = 5000};
    rs = make(&e, 1, false);
    assert_int_equal(weir_iter_run(&it, rs, sum_each, sum_done, &sm), 0);
    assert_true(sm.sum > 5000);
    assert_int_equal(e.cancels, 1);
    assert_int_equal(sm.done_calls, 0);
    weir_readable_destroy(rs);

    /* Asynchronous source: the loop resumes from callbacks. */
    sm = (struct summer){.limit = UINT64_MAX};
    s = (struct src){.total = 50, .per_pull = 1, .async_pull = true};
    rs = make(&s, 1, false);
    assert_int_equal(weir_iter_run(&it, rs, sum_each, sum_done, &sm),
                     WEIR_PENDING);
    while (s.pull_pending)
        src_finish_pull(&s);
    assert_int_equal(sm.done_calls, 1);
    assert_int_equal(sm.done_rc, 0);
    want = 0;
    for (uint32_t i = 0; i < 50; i++)
        want += chunk_nr(i).len;
    assert_true(sm.sum == want);
    weir_readable_destroy(rs);
}

static void queues_materialise_lazily(void **state)
{
    struct weir_core_alloc_stats a0, a1, a2, a3;
    struct done d = {0};
    struct src s = {.no_close = true};
    struct weir_readable *rs;
    struct weir_reader r;
    struct weir_chunk c;

    (void)state;
    weir_core_alloc_stats(&a0);
    rs = make(&s, 0, false);
    weir_core_alloc_stats(&a1);
    /* The stream itself, nothing else. */
    assert_true(a1.allocs - a0.allocs == 1);
    assert_int_equal(weir_reader_acquire(&r, rs), 0);
    weir_core_alloc_stats(&a2);
    assert_true(a2.allocs == a1.allocs);
    /* The first parked read materialises the request queue. */
    assert_int_equal(weir_reader_read(&r, &c, read_cb, &d), WEIR_PENDING);
    weir_core_alloc_stats(&a3);
    assert_true(a3.allocs - a2.allocs == 1);
    weir_reader_release(&r);
    weir_readable_destroy(rs);
}

/* Destroying the stream from inside its own read callback. */
struct killer {
    struct weir_readable *rs;
    int calls;
};

static void kill_cb(void *ctx, int rc, struct weir_chunk c)
{
    struct killer *k = ctx;

    (void)rc;
    (void)c;
    k->calls++;
    weir_readable_destroy(k->rs);
}

static void destroy_inside_callback_is_deferred(void **state)
{
    struct src s = {.no_close = true};
    struct killer k = {0};
    struct weir_reader r;
    struct weir_chunk c;

    (void)state;
    k.rs = make(&s, 0, false);
    assert_int_equal(weir_reader_acquire(&r, k.rs), 0);
    assert_int_equal(weir_reader_read(&r, &c, kill_cb, &k), WEIR_PENDING);
    /* The enqueue answers the read, whose callback frees the stream: the
     * stream must survive until enqueue returns (ASan checks). */
    assert_int_equal(weir_readable_enqueue(k.rs, chunk_nr(0)), 0);
    assert_int_equal(k.calls, 1);
}

/* A source that destroys its stream from inside pull, after enqueueing. */
static int suicidal_pull(struct weir_readable *rs, void *ctx)
{
    int *pulls = ctx;

    if (++*pulls == 3) {
        weir_readable_enqueue(rs, chunk_nr(0));
        weir_readable_destroy(rs);
        return 0;
    }
    return weir_readable_enqueue(rs, chunk_nr(0));
}

static void destroy_inside_pull_is_deferred(void **state)
{
    const struct weir_source_ops ops = {.pull = suicidal_pull};
    struct weir_readable *rs;
    struct weir_reader r;
    struct weir_chunk c;
    int pulls = 0;

    (void)state;
    assert_int_equal(weir_readable_create(&rs, &ops, &pulls, NULL), 0);
    assert_int_equal(weir_reader_acquire(&r, rs), 0);
    assert_int_equal(weir_reader_read(&r, &c, read_cb, NULL), 0);
    /* This read's pull frees the stream on the way out (ASan checks that
     * nothing touches it after). */
    assert_int_equal(weir_reader_read(&r, &c, read_cb, NULL), 0);
    assert_int_equal(pulls, 3);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(pull_waits_for_start_to_finish),
        cmocka_unit_test(pull_only_while_desired_size_positive),
        cmocka_unit_test(pull_when_read_waits_even_at_hwm_zero),
        cmocka_unit_test(pull_never_runs_twice_at_once),
        cmocka_unit_test(sync_pull_inside_read_does_not_recurse),
        cmocka_unit_test(byte_length_strategy_weighs_bytes),
        cmocka_unit_test(unlimited_hwm_queues_everything_in_order),
        cmocka_unit_test(close_lets_queue_drain_then_done),
        cmocka_unit_test(errors_after_close_and_double_close),
        cmocka_unit_test(error_fails_waiting_reads_and_frees_queued_buffers),
        cmocka_unit_test(cancel_closes_drops_queue_and_tells_source),
        cmocka_unit_test(reader_lock_is_exclusive),
        cmocka_unit_test(release_fails_parked_reads),
        cmocka_unit_test(byob_fills_to_at_least_min),
        cmocka_unit_test(byob_leftover_bytes_stay_queued),
        cmocka_unit_test(byob_partial_fill_ends_with_close),
        cmocka_unit_test(byob_needs_a_byte_stream),
        cmocka_unit_test(byob_request_fills_the_readers_buffer_in_place),
        cmocka_unit_test(iterator_loop_visits_all_and_break_cancels),
        cmocka_unit_test(queues_materialise_lazily),
        cmocka_unit_test(destroy_inside_callback_is_deferred),
        cmocka_unit_test(destroy_inside_pull_is_deferred),
    };

    pattern_init();
    return cmocka_run_group_tests(tests, NULL, NULL);
}
