/*
 * test_stream_tee.c - tee into N branches: branches read in lockstep get
 * the same data; the source is cancelled only when every branch cancelled;
 * block never drops and bounds every branch by its high-water mark; the
 * drop policies account for every chunk (dropped + delivered = produced);
 * disconnect errors only the full branch; shared pool buffers come home.
 */
#include <limits.h>
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdlib.h>
#include <cmocka.h>

#include "test_stream_util.h"

static struct weir_readable *make_src(struct src *s, size_t hwm)
{
    struct weir_readable_options o = {.strategy = {.hwm = hwm}};
    struct weir_readable *rs = NULL;

    assert_int_equal(weir_readable_create(&rs, &src_ops, s, &o), 0);
    return rs;
}

static struct weir_tee *make_tee(struct weir_readable *rs, unsigned n,
                                 enum weir_tee_policy p0,
                                 enum weir_tee_policy p1, size_t hwm)
{
    struct weir_tee_branch_options o[4] = {
        {.strategy = {.hwm = hwm}, .policy = p0},
        {.strategy = {.hwm = hwm}, .policy = p1},
        {.strategy = {.hwm = hwm}, .policy = p1},
        {.strategy = {.hwm = hwm}, .policy = p1},
    };
    struct weir_tee *t = NULL;

    assert_int_equal(weir_tee_create(&t, rs, n, o), 0);
    return t;
}

static void branches_in_lockstep_see_the_same_chunks(void **state)
{
    struct src s = {.total = 10000, .per_pull = 1};
    struct weir_readable *rs = make_src(&s, 1);
    struct weir_tee *t;
    struct weir_reader r[3];
    struct weir_chunk c;
    uint64_t sum[3] = {0};
    int rc = 0;

    (void)state;
    assert_int_equal(weir_tee_create(&t, rs, 3, NULL), 0);
    assert_true(weir_readable_locked(rs));
    for (unsigned i = 0; i < 3; i++)
        assert_int_equal(weir_reader_acquire(&r[i], weir_tee_branch(t, i)), 0);
    for (;;) {
        for (unsigned i = 0; i < 3; i++) {
            rc = weir_reader_read(&r[i], &c, read_cb, NULL);
            if (rc != 0)
                break;
            sum[i] = sum_chunk(sum[i], c);
        }
        if (rc != 0)
            break;
    }
    assert_int_equal(rc, WEIR_DONE);
    for (unsigned i = 0; i < 3; i++) {
        assert_true(sum[i] == s.sum);
        weir_reader_release(&r[i]);
    }
    assert_true(weir_tee_produced(t) == 10000);
    weir_tee_destroy(t);
    assert_false(weir_readable_locked(rs));
    weir_readable_destroy(rs);
}

static void source_cancelled_only_when_every_branch_cancelled(void **state)
{
    struct src s = {.endless = true, .per_pull = 1};
    struct weir_readable *rs = make_src(&s, 1);
    struct weir_tee *t = make_tee(rs, 3, WEIR_TEE_BLOCK, WEIR_TEE_BLOCK, 2);
    struct weir_reader r[3];
    struct weir_chunk c;

    (void)state;
    for (unsigned i = 0; i < 3; i++)
        assert_int_equal(weir_reader_acquire(&r[i], weir_tee_branch(t, i)), 0);
    assert_int_equal(weir_reader_cancel(&r[0], -ECANCELED), 0);
    assert_int_equal(s.cancels, 0);
    /* The others go on, no longer held back by branch 0. */
    for (int k = 0; k < 10; k++) {
        assert_int_equal(weir_reader_read(&r[1], &c, read_cb, NULL), 0);
        assert_int_equal(weir_reader_read(&r[2], &c, read_cb, NULL), 0);
    }
    assert_int_equal(weir_reader_cancel(&r[1], -ECANCELED), 0);
    assert_int_equal(s.cancels, 0);
    assert_int_equal(weir_reader_cancel(&r[2], -ETIMEDOUT), 0);
    assert_int_equal(s.cancels, 1);
    assert_int_equal(s.cancel_reason, -ETIMEDOUT);
    for (unsigned i = 0; i < 3; i++)
        weir_reader_release(&r[i]);
    weir_tee_destroy(t);
    weir_readable_destroy(rs);
}

/* One fast branch reading whenever it can, one slow branch reading one
 * chunk per `every` fast reads. Reads that park finish through side_cb. */
struct side {
    struct weir_reader r;
    uint64_t sum;
    uint32_t got;
    bool parked, done;
};

static void side_take(struct side *sd, int rc, struct weir_chunk c)
{
    if (rc == 0) {
        sd->sum = sum_chunk(sd->sum, c);
        sd->got++;
    } else if (rc != WEIR_PENDING) {
        sd->done = true;
    }
    sd->parked = rc == WEIR_PENDING;
}

static void side_cb(void *ctx, int rc, struct weir_chunk c)
{
    side_take(ctx, rc, c);
}

static void side_read(struct side *sd)
{
    struct weir_chunk c;

    side_take(sd, weir_reader_read(&sd->r, &c, side_cb, sd), c);
}

/* Returns the slow branch's peak queue. */
static size_t run_fast_slow(struct weir_tee *t, int every, struct side *fast,
                            struct side *slow)
{
    struct weir_readable *sb = weir_tee_branch(t, 1);
    size_t peak = 0;

    assert_int_equal(weir_reader_acquire(&fast->r, weir_tee_branch(t, 0)), 0);
    assert_int_equal(weir_reader_acquire(&slow->r, sb), 0);
    while (!fast->done || !slow->done) {
        for (int k = 0; k < every && !fast->done && !fast->parked; k++) {
            side_read(fast);
            if (weir_readable_queued(sb) > peak)
                peak = weir_readable_queued(sb);
        }
        if (!slow->done && !slow->parked)
            side_read(slow);
        /* Both waiting on each other would be a deadlock. */
        assert_false(fast->parked && slow->parked);
    }
    weir_reader_release(&fast->r);
    weir_reader_release(&slow->r);
    return peak;
}

static void block_never_drops_and_bounds_every_branch(void **state)
{
    struct src s = {.total = 20000, .per_pull = 1};
    struct weir_readable *rs = make_src(&s, 0);
    struct weir_tee *t = make_tee(rs, 2, WEIR_TEE_BLOCK, WEIR_TEE_BLOCK, 16);
    struct weir_tee_stats st0, st1;
    struct side fast = {0}, slow = {0};
    size_t peak;

    (void)state;
    peak = run_fast_slow(t, 10, &fast, &slow);
    assert_true(peak <= 16);
    assert_int_equal(fast.got, 20000);
    assert_int_equal(slow.got, 20000);
    assert_true(fast.sum == s.sum && slow.sum == s.sum);
    weir_tee_stats(t, 0, &st0);
    weir_tee_stats(t, 1, &st1);
    assert_true(st0.dropped == 0 && st1.dropped == 0);
    assert_true(st0.delivered == 20000 && st1.delivered == 20000);
    weir_tee_destroy(t);
    weir_readable_destroy(rs);
}

/* The counters of a block tee in lockstep (the tee's fast path, which
 * counts a chunk once for every branch) stay exact when a branch leaves
 * midway and the tee goes back to counting per branch. */
static void lockstep_counters_survive_a_branch_leaving(void **state)
{
    struct src s = {.total = 100, .per_pull = 1};
    struct weir_readable *rs = make_src(&s, 1);
    struct weir_tee *t = make_tee(rs, 2, WEIR_TEE_BLOCK, WEIR_TEE_BLOCK, 1);
    struct weir_reader r0, r1;
    struct weir_tee_stats st0, st1;
    struct weir_chunk c;
    uint32_t got = 0;

    (void)state;
    assert_int_equal(weir_reader_acquire(&r0, weir_tee_branch(t, 0)), 0);
    assert_int_equal(weir_reader_acquire(&r1, weir_tee_branch(t, 1)), 0);
    for (int i = 0; i < 40; i++) {
        assert_int_equal(weir_reader_read(&r0, &c, read_cb, NULL), 0);
        assert_int_equal(weir_reader_read(&r1, &c, read_cb, NULL), 0);
        got++;
    }
    /* Both branches hold chunk 41: counted while the fast path ran. */
    weir_tee_stats(t, 0, &st0);
    assert_int_equal(st0.delivered, 41);
    assert_int_equal(weir_reader_cancel(&r0, -ECANCELED), 0);
    while (weir_reader_read(&r1, &c, read_cb, NULL) == 0)
        got++;
    assert_int_equal(got, 100);
    weir_tee_stats(t, 0, &st0);
    weir_tee_stats(t, 1, &st1);
    assert_int_equal(st0.delivered, 41);
    assert_int_equal(st1.delivered, 100);
    assert_int_equal(st0.dropped + st1.dropped, 0);
    assert_int_equal(weir_tee_produced(t), 100);
    weir_reader_release(&r0);
    weir_reader_release(&r1);
    weir_tee_destroy(t);
    weir_readable_destroy(rs);
}

static void drop_policy_accounts_for_every_chunk(void **state,
                                                 enum weir_tee_policy p)
{
    struct src s = {.total = 20000, .per_pull = 1};
    struct weir_readable *rs = make_src(&s, 0);
    /* Branch 0 blocks and reads fast; branch 1 drops and reads slowly. */
    struct weir_tee *t = make_tee(rs, 2, WEIR_TEE_BLOCK, p, 16);
    struct weir_tee_stats st;
    struct side fast = {0}, slow = {0};
    size_t peak;

    (void)state;
    peak = run_fast_slow(t, 10, &fast, &slow);
    assert_true(peak <= 16);
    assert_int_equal(fast.got, 20000);
    assert_true(fast.sum == s.sum);
    weir_tee_stats(t, 1, &st);
    assert_true(st.dropped > 0);
    assert_true(st.delivered == slow.got);
    assert_true(st.dropped + st.delivered == weir_tee_produced(t));
    assert_true(weir_tee_produced(t) == 20000);
    /* The same in bytes, for the daemon's per-sink counters. */
    assert_true(st.dropped_bytes > 0);
    assert_true(st.dropped_bytes + st.delivered_bytes ==
                weir_tee_produced_bytes(t));
    weir_tee_stats(t, 0, &st);
    assert_true(st.dropped_bytes == 0);
    assert_true(st.delivered_bytes == weir_tee_produced_bytes(t));
    weir_tee_destroy(t);
    weir_readable_destroy(rs);
}

static void drop_newest_accounts_for_every_chunk(void **state)
{
    drop_policy_accounts_for_every_chunk(state, WEIR_TEE_DROP_NEWEST);
}

static void drop_oldest_accounts_for_every_chunk(void **state)
{
    drop_policy_accounts_for_every_chunk(state, WEIR_TEE_DROP_OLDEST);
}

static void drop_oldest_keeps_the_newest(void **state)
{
    struct src s = {.total = 100, .per_pull = 1};
    struct weir_readable *rs = make_src(&s, 0);
    struct weir_tee *t =
        make_tee(rs, 2, WEIR_TEE_BLOCK, WEIR_TEE_DROP_OLDEST, 4);
    struct weir_reader r0, r1;
    struct weir_chunk c;
    uint32_t last = 0;

    (void)state;
    assert_int_equal(weir_reader_acquire(&r0, weir_tee_branch(t, 0)), 0);
    assert_int_equal(weir_reader_acquire(&r1, weir_tee_branch(t, 1)), 0);
    while (weir_reader_read(&r0, &c, NULL, NULL) == 0)
        ;
    /* Branch 1 holds the last four chunks. */
    for (uint32_t i = 96; i < 100; i++) {
        assert_int_equal(weir_reader_read(&r1, &c, NULL, NULL), 0);
        assert_true(c.data == chunk_nr(i).data);
        assert_int_equal(c.len, chunk_nr(i).len);
        last = i;
    }
    assert_int_equal(last, 99);
    assert_int_equal(weir_reader_read(&r1, &c, NULL, NULL), WEIR_DONE);
    weir_reader_release(&r0);
    weir_reader_release(&r1);
    weir_tee_destroy(t);
    weir_readable_destroy(rs);
}

static void disconnect_errors_only_the_full_branch(void **state)
{
    struct src s = {.total = 100, .per_pull = 1};
    struct weir_readable *rs = make_src(&s, 0);
    struct weir_tee *t =
        make_tee(rs, 2, WEIR_TEE_BLOCK, WEIR_TEE_DISCONNECT, 4);
    struct weir_reader r0, r1;
    struct weir_chunk c;
    struct weir_tee_stats st;
    uint64_t sum = 0;
    int n = 0;

    (void)state;
    assert_int_equal(weir_reader_acquire(&r0, weir_tee_branch(t, 0)), 0);
    assert_int_equal(weir_reader_acquire(&r1, weir_tee_branch(t, 1)), 0);
    while (weir_reader_read(&r0, &c, NULL, NULL) == 0) {
        sum = sum_chunk(sum, c);
        n++;
    }
    assert_int_equal(n, 100);
    assert_true(sum == s.sum);
    assert_int_equal(weir_reader_read(&r1, &c, NULL, NULL), -ENOBUFS);
    weir_tee_stats(t, 1, &st);
    assert_true(st.disconnected);
    assert_int_equal(s.cancels, 0);
    weir_reader_release(&r0);
    weir_reader_release(&r1);
    weir_tee_destroy(t);
    weir_readable_destroy(rs);
}

/* A source of pool buffers: the tee shares them by reference count. */
struct pool_src {
    struct weir_pool *pool;
    uint32_t left;
};

static int pool_pull(struct weir_readable *rs, void *ctx)
{
    struct pool_src *p = ctx;
    struct weir_buf *b;

    if (p->left == 0)
        return weir_readable_close(rs);
    if (weir_pool_get(p->pool, &b))
        return -ENOBUFS;
    p->left--;
    b->data[0] = (uint8_t)p->left;
    return weir_readable_enqueue(rs, weir_chunk_of(b, 1));
}

static void shared_buffers_come_home(void **state)
{
    const struct weir_source_ops ops = {.pull = pool_pull};
    struct weir_pool_options po = {.buf_size = 4096, .count = 64, .threads = 1};
    struct pool_src ps = {.left = 1000};
    struct weir_readable *rs;
    struct weir_tee *t;
    struct weir_reader r[2];
    struct weir_chunk c = {0};
    struct weir_pool_stats st;

    (void)state;
    assert_int_equal(weir_pool_create(&ps.pool, &po), 0);
    assert_int_equal(weir_readable_create(&rs, &ops, &ps, NULL), 0);
    assert_int_equal(weir_tee_create(&t, rs, 2, NULL), 0);
    for (unsigned i = 0; i < 2; i++)
        assert_int_equal(weir_reader_acquire(&r[i], weir_tee_branch(t, i)), 0);
    for (uint32_t k = 0; k < 1000; k++) {
        for (unsigned i = 0; i < 2; i++) {
            assert_int_equal(weir_reader_read(&r[i], &c, NULL, NULL), 0);
            assert_int_equal(c.data[0], (uint8_t)(999 - k));
            weir_chunk_unref(&c, 0);
        }
    }
    weir_pool_stats(ps.pool, &st);
    assert_int_equal(st.in_use, 0);
    assert_true(st.peak <= 4);
    for (unsigned i = 0; i < 2; i++)
        weir_reader_release(&r[i]);
    weir_tee_destroy(t);
    weir_readable_destroy(rs);
    assert_int_equal(weir_pool_destroy(ps.pool), 0);
}

/* A branch reader for the byte-stream test: BYOB reads of 5 bytes, or
 * default reads; both hash what they get, parked reads included. */
struct bside {
    struct weir_reader r;
    uint8_t buf[5];
    uint64_t h;
    bool byob, parked, done;
};

static void bside_take(struct bside *b, int rc, struct weir_chunk c)
{
    assert_true(rc == 0 || rc == WEIR_DONE);
    for (uint32_t i = 0; i < c.len; i++)
        b->h = (b->h ^ c.data[i]) * 1099511628211u;
    b->done = rc == WEIR_DONE;
}

static void bside_cb(void *ctx, int rc, struct weir_chunk c)
{
    struct bside *b = ctx;

    b->parked = false;
    bside_take(b, rc, c);
}

static void bside_step(struct bside *b)
{
    struct weir_chunk c = {0};
    int rc;

    if (b->parked || b->done)
        return;
    rc = b->byob ? weir_reader_read_byob(&b->r, b->buf, sizeof(b->buf), 1, &c,
                                         bside_cb, b)
                 : weir_reader_read(&b->r, &c, bside_cb, b);
    if (rc == WEIR_PENDING)
        b->parked = true;
    else
        bside_take(b, rc, c);
}

static void byte_stream_branches_serve_byob_reads(void **state)
{
    struct src s = {.total = 200, .per_pull = 1};
    struct weir_readable_options o = {.byte_stream = true};
    struct weir_readable *rs;
    struct weir_tee *t;
    struct bside a = {.byob = true}, b = {.byob = false};

    (void)state;
    assert_int_equal(weir_readable_create(&rs, &src_ops, &s, &o), 0);
    assert_int_equal(weir_tee_create(&t, rs, 2, NULL), 0);
    assert_int_equal(weir_reader_acquire(&a.r, weir_tee_branch(t, 0)), 0);
    assert_int_equal(weir_reader_acquire(&b.r, weir_tee_branch(t, 1)), 0);
    /* Branch 0 copies 5 bytes at a time into its own buffer, branch 1
     * takes whole chunks: both see the same bytes, so the shared chunks
     * were never modified by the BYOB reads. */
    while (!a.done || !b.done) {
        bside_step(&a);
        bside_step(&b);
        assert_false(a.parked && b.parked);
    }
    assert_true(a.h == b.h);
    assert_true(weir_tee_produced(t) == 200);
    weir_reader_release(&a.r);
    weir_reader_release(&b.r);
    weir_tee_destroy(t);
    weir_readable_destroy(rs);
}

/* Completes the source's parked pull (one chunk). */
static void step(struct src *s, unsigned times)
{
    for (unsigned k = 0; k < times; k++) {
        assert_true(s->pull_pending);
        src_finish_pull(s);
    }
}

static uint64_t sum_range(uint32_t from, uint32_t to)
{
    uint64_t h = 0;

    for (uint32_t i = from; i < to; i++)
        h = sum_chunk(h, chunk_nr(i));
    return h;
}

/* Reads what the branch holds now, and what the read it left parked last
 * time got meanwhile: returns the count, sums into *sum. */
static unsigned drain_branch(struct weir_reader *r, struct done *parked,
                             uint64_t *sum, int *end)
{
    struct weir_chunk c;
    unsigned got = 0;
    int rc;

    if (parked->calls > 0) {
        *end = parked->rc;
        if (parked->rc != 0)
            return 0;
        *sum = sum_chunk(*sum, parked->chunk);
        got++;
    }
    *parked = (struct done){0};
    while ((rc = weir_reader_read(r, &c, read_cb, parked)) == 0) {
        *sum = sum_chunk(*sum, c);
        got++;
    }
    *end = rc;
    return got;
}

static void live_end(void *ctx, int rc)
{
    *(int *)ctx = rc;
}

static void live_tee_branches_see_only_what_follows_their_joining(void **state)
{
    struct src s = {.total = 30, .per_pull = 1, .async_pull = true};
    struct weir_readable *rs = make_src(&s, 1);
    struct weir_tee_branch_options o = {.strategy = {.hwm = 100}};
    struct weir_tee *t = NULL;
    struct weir_reader ra, rb;
    uint64_t sa = 0, sb = 0;
    struct done pa = {0}, pb = {0};
    unsigned a, b;
    int end = 0, ended = 0;

    (void)state;
    assert_int_equal(
        weir_tee_create_live(&t, rs,
                             &(struct weir_tee_live_options){
                                 .cap = 2, .on_end = live_end, .ctx = &ended}),
        0);
    /* No branch: the tee reads on and drops. */
    step(&s, 5);
    assert_true(weir_tee_produced(t) == 5);
    assert_int_equal(weir_tee_add_branch(t, &o, &a), 0);
    assert_int_equal(a, 0u);
    step(&s, 5);
    assert_int_equal(weir_tee_add_branch(t, &o, &b), 0);
    assert_int_equal(b, 1u);
    assert_int_equal(weir_tee_add_branch(t, &o, &b), -ENOSPC);
    step(&s, 5);
    assert_int_equal(weir_reader_acquire(&ra, weir_tee_branch(t, a)), 0);
    assert_int_equal(weir_reader_acquire(&rb, weir_tee_branch(t, b)), 0);
    assert_int_equal(drain_branch(&ra, &pa, &sa, &end), 10u);
    assert_int_equal(end, WEIR_PENDING);
    assert_true(sa == sum_range(5, 15));
    assert_int_equal(drain_branch(&rb, &pb, &sb, &end), 5u);
    assert_true(sb == sum_range(10, 15));
    /* A leaves; the source goes on for B, then for nobody. */
    weir_reader_release(&ra);
    weir_tee_remove_branch(t, a);
    assert_null(weir_tee_branch(t, a));
    step(&s, 5);
    assert_int_equal(s.cancels, 0);
    assert_int_equal(drain_branch(&rb, &pb, &sb, &end), 5u);
    assert_true(sb == sum_range(10, 20));
    weir_reader_release(&rb);
    weir_tee_remove_branch(t, b);
    step(&s, 5);
    assert_int_equal(s.cancels, 0);
    assert_true(weir_tee_produced(t) == 25);
    /* A slot comes back; the new branch sees the end of the source. */
    assert_int_equal(weir_tee_add_branch(t, &o, &a), 0);
    assert_int_equal(a, 0u);
    step(&s, 5);
    assert_true(s.pull_pending);
    src_finish_pull(&s); /* past total: closes */
    assert_int_equal(ended, WEIR_DONE);
    sa = 0;
    pa = (struct done){0};
    assert_int_equal(weir_reader_acquire(&ra, weir_tee_branch(t, a)), 0);
    assert_int_equal(drain_branch(&ra, &pa, &sa, &end), 5u);
    assert_int_equal(end, WEIR_DONE);
    assert_true(sa == sum_range(25, 30));
    assert_int_equal(weir_tee_add_branch(t, &o, &b), -EPIPE);
    weir_reader_release(&ra);
    weir_tee_destroy(t);
    weir_readable_destroy(rs);
}

static void
live_tee_block_branch_holds_the_source_drop_branch_does_not(void **state)
{
    struct src s = {.endless = true, .per_pull = 1, .async_pull = true};
    struct weir_readable *rs = make_src(&s, 1);
    struct weir_tee_branch_options drop = {.strategy = {.hwm = 2},
                                           .policy = WEIR_TEE_DROP_NEWEST};
    struct weir_tee_branch_options block = {.strategy = {.hwm = 2}};
    struct weir_tee_stats st;
    struct weir_tee *t = NULL;
    unsigned a, b;

    (void)state;
    assert_int_equal(
        weir_tee_create_live(&t, rs, &(struct weir_tee_live_options){.cap = 4}),
        0);
    assert_int_equal(weir_tee_add_branch(t, &drop, &a), 0);
    step(&s, 10); /* nobody reads the drop branch: it keeps the first 2 */
    weir_tee_stats(t, a, &st);
    assert_true(st.delivered == 2 && st.dropped == 8);
    assert_int_equal(weir_tee_add_branch(t, &block, &b), 0);
    step(&s, 2);
    /* The block branch is full: the tee has stopped reading. */
    assert_false(s.pull_pending && weir_tee_produced(t) > 12);
    assert_true(weir_tee_produced(t) <= 13);
    weir_tee_remove_branch(t, b);
    assert_true(s.pull_pending);
    step(&s, 3);
    weir_tee_stats(t, a, &st);
    assert_true(st.delivered + st.dropped == weir_tee_produced(t));
    weir_tee_remove_branch(t, a);
    assert_int_equal(s.cancels, 0);
    weir_tee_destroy(t);
    weir_readable_destroy(rs);
}

static void count_disconnect(void *ctx)
{
    (*(int *)ctx)++;
}

static void live_tee_disconnect_tells_and_the_source_goes_on(void **state)
{
    struct src s = {.endless = true, .per_pull = 1, .async_pull = true};
    struct weir_readable *rs = make_src(&s, 1);
    int told = 0;
    struct weir_tee_branch_options o = {.strategy = {.hwm = 2},
                                        .policy = WEIR_TEE_DISCONNECT,
                                        .on_disconnect = count_disconnect,
                                        .disconnect_ctx = &told};
    struct weir_tee_stats st;
    struct weir_tee *t = NULL;
    unsigned a;

    (void)state;
    assert_int_equal(
        weir_tee_create_live(&t, rs, &(struct weir_tee_live_options){.cap = 1}),
        0);
    assert_int_equal(weir_tee_add_branch(t, &o, &a), 0);
    step(&s, 5); /* nobody reads: the third chunk cuts it loose */
    assert_int_equal(told, 1);
    weir_tee_stats(t, a, &st);
    assert_true(st.disconnected);
    assert_int_equal(s.cancels, 0);
    assert_true(s.pull_pending);
    weir_tee_remove_branch(t, a);
    step(&s, 2);
    assert_int_equal(told, 1);
    weir_tee_destroy(t);
    weir_readable_destroy(rs);
}

static void removing_a_branch_keeps_the_source_while_others_remain(void **state)
{
    struct src s = {.endless = true, .per_pull = 1};
    struct weir_readable *rs = make_src(&s, 1);
    struct weir_tee *t = make_tee(rs, 2, WEIR_TEE_BLOCK, WEIR_TEE_BLOCK, 2);
    struct weir_tee_branch_options o = {.strategy = {.hwm = 2}};
    struct weir_reader r;
    struct weir_chunk c;
    unsigned idx = 9;

    (void)state;
    assert_int_equal(weir_tee_add_branch(t, &o, &idx), -ENOSPC);
    /* Branch 0 never reads; removing it frees branch 1. */
    weir_tee_remove_branch(t, 0);
    assert_int_equal(s.cancels, 0);
    assert_int_equal(weir_reader_acquire(&r, weir_tee_branch(t, 1)), 0);
    for (int k = 0; k < 20; k++)
        assert_int_equal(weir_reader_read(&r, &c, read_cb, NULL), 0);
    assert_int_equal(weir_tee_add_branch(t, &o, &idx), 0);
    assert_int_equal(idx, 0u);
    weir_tee_remove_branch(t, 0);
    weir_reader_release(&r);
    weir_tee_remove_branch(t, 1);
    assert_int_equal(s.cancels, 1);
    weir_tee_destroy(t);
    weir_readable_destroy(rs);
}

/* Far past 64 branches: 300 join in three waves, each sees exactly the
 * chunks read after its joining; then they leave. */
#define MANY 300u

static void live_tee_takes_hundreds_of_branches(void **state)
{
    struct src s = {.total = 1000, .per_pull = 1, .async_pull = true};
    struct weir_readable *rs = make_src(&s, 1);
    struct weir_tee_branch_options o = {.strategy = {.hwm = 100}};
    struct weir_tee *t = NULL;
    struct weir_reader *r = calloc(MANY, sizeof(*r));
    struct done *pd = calloc(MANY, sizeof(*pd));
    unsigned idx;
    int end = 0;

    (void)state;
    assert_non_null(r);
    assert_non_null(pd);
    assert_int_equal(
        weir_tee_create_live(&t, rs, &(struct weir_tee_live_options){0}), 0);
    step(&s, 2);
    for (unsigned w = 0; w < 3; w++) {
        for (unsigned i = w * 100; i < (w + 1) * 100; i++) {
            assert_int_equal(weir_tee_add_branch(t, &o, &idx), 0);
            assert_int_equal(idx, i);
        }
        step(&s, 3);
    }
    assert_int_equal(weir_tee_branches(t), MANY);
    for (unsigned i = 0; i < MANY; i++) {
        unsigned w = i / 100;
        uint64_t sum = 0;

        assert_int_equal(weir_reader_acquire(&r[i], weir_tee_branch(t, i)), 0);
        assert_int_equal(drain_branch(&r[i], &pd[i], &sum, &end), 3 * (3 - w));
        assert_true(sum == sum_range(2 + 3 * w, 11));
    }
    /* Every reader has a read parked: the next chunk reaches them all
     * inside its distribution. */
    step(&s, 1);
    for (unsigned i = 0; i < MANY; i++) {
        assert_int_equal(pd[i].calls, 1);
        weir_reader_release(&r[i]);
        weir_tee_remove_branch(t, i);
    }
    assert_int_equal(weir_tee_branches(t), 0u);
    assert_null(weir_tee_branch(t, 0));
    step(&s, 1);
    assert_int_equal(s.cancels, 0);
    weir_tee_destroy(t);
    weir_readable_destroy(rs);
    free(r);
    free(pd);
}

/* A branch removed by another branch's callback while a chunk is being
 * handed out (a later taker, past the first 64) is reaped after the
 * distribution, and its slot is free again. */
struct remover {
    struct weir_tee *t;
    unsigned victim;
    struct done d;
};

static void remove_on_read(void *ctx, int rc, struct weir_chunk c)
{
    struct remover *m = ctx;

    read_cb(&m->d, rc, c);
    weir_tee_remove_branch(m->t, m->victim);
}

static void live_tee_branch_removed_inside_a_callback(void **state)
{
    struct src s = {.endless = true, .per_pull = 1, .async_pull = true};
    struct weir_readable *rs = make_src(&s, 1);
    struct weir_tee_branch_options o = {.strategy = {.hwm = 100}};
    struct weir_tee *t = NULL;
    struct weir_reader r0, rv;
    struct weir_chunk c;
    struct remover m = {.victim = 99};
    unsigned idx;

    (void)state;
    assert_int_equal(weir_tee_create_live(
                         &t, rs, &(struct weir_tee_live_options){.cap = 200}),
                     0);
    m.t = t;
    for (unsigned i = 0; i < 100; i++)
        assert_int_equal(weir_tee_add_branch(t, &o, &idx), 0);
    assert_int_equal(weir_reader_acquire(&r0, weir_tee_branch(t, 0)), 0);
    assert_int_equal(weir_reader_acquire(&rv, weir_tee_branch(t, 99)), 0);
    assert_int_equal(weir_reader_read(&r0, &c, remove_on_read, &m),
                     WEIR_PENDING);
    weir_reader_release(&rv);
    step(&s, 1);
    assert_int_equal(m.d.calls, 1);
    assert_null(weir_tee_branch(t, 99));
    assert_int_equal(weir_tee_branches(t), 99u);
    assert_int_equal(weir_tee_add_branch(t, &o, &idx), 0);
    assert_int_equal(idx, 99u);
    step(&s, 2);
    weir_reader_release(&r0);
    weir_tee_destroy(t);
    weir_readable_destroy(rs);
}

/* A paused live tee reads nothing: a branch added before weir_tee_resume
 * gets the first chunk the source had. */
static void live_tee_paused_keeps_the_first_chunk_for_its_branches(void **state)
{
    struct src s = {.endless = true, .per_pull = 1, .async_pull = true};
    struct weir_readable *rs = make_src(&s, 1);
    struct weir_tee_branch_options o = {.strategy = {.hwm = 100}};
    struct weir_tee *t = NULL;
    struct weir_reader r;
    struct done pd = {0};
    uint64_t sum = 0;
    unsigned a;
    int end = 0;

    (void)state;
    assert_int_equal(
        weir_tee_create_live(&t, rs,
                             &(struct weir_tee_live_options){.paused = true}),
        0);
    step(&s, 1); /* chunk 0 waits in the source's queue */
    assert_false(s.pull_pending);
    assert_true(weir_tee_produced(t) == 0);
    assert_int_equal(weir_tee_add_branch(t, &o, &a), 0);
    weir_tee_resume(t);
    step(&s, 2);
    assert_int_equal(weir_reader_acquire(&r, weir_tee_branch(t, a)), 0);
    assert_int_equal(drain_branch(&r, &pd, &sum, &end), 3u);
    assert_true(sum == sum_range(0, 3));
    weir_reader_release(&r);
    weir_tee_destroy(t);
    weir_readable_destroy(rs);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(branches_in_lockstep_see_the_same_chunks),
        cmocka_unit_test(source_cancelled_only_when_every_branch_cancelled),
        cmocka_unit_test(block_never_drops_and_bounds_every_branch),
        cmocka_unit_test(drop_newest_accounts_for_every_chunk),
        cmocka_unit_test(drop_oldest_accounts_for_every_chunk),
        cmocka_unit_test(drop_oldest_keeps_the_newest),
        cmocka_unit_test(disconnect_errors_only_the_full_branch),
        cmocka_unit_test(shared_buffers_come_home),
        cmocka_unit_test(byte_stream_branches_serve_byob_reads),
        cmocka_unit_test(live_tee_branches_see_only_what_follows_their_joining),
        cmocka_unit_test(
            live_tee_block_branch_holds_the_source_drop_branch_does_not),
        cmocka_unit_test(live_tee_disconnect_tells_and_the_source_goes_on),
        cmocka_unit_test(
            removing_a_branch_keeps_the_source_while_others_remain),
        cmocka_unit_test(live_tee_takes_hundreds_of_branches),
        cmocka_unit_test(live_tee_branch_removed_inside_a_callback),
        cmocka_unit_test(
            live_tee_paused_keeps_the_first_chunk_for_its_branches),
        cmocka_unit_test(lockstep_counters_survive_a_branch_leaving),
    };

    pattern_init();
    return cmocka_run_group_tests(tests, NULL, NULL);
}
