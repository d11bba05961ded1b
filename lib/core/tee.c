/*
 * tee.c - one source, N branches, a full-queue policy per branch.
 *
 * The tee reads the source when a branch pulls and every live block branch
 * can take a chunk (the slowest governs). A branch that pulls while another
 * block branch is full gets nothing yet; that full branch pulls in turn
 * when its consumer drains it, and that pull does the read. So the tee
 * needs no timer and no queue of its own: the branches' queues are the
 * only buffers, each bounded by its high-water mark.
 *
 * Reads of the source never nest: a read started while one is running
 * (a branch's consumer reading again from inside its callback, which runs
 * inside the distribution of the previous chunk) only sets read_again, and
 * the running loop reads once more.
 *
 * A tee made with its branches (weir_tee_create) keeps them in an array
 * in its own allocation. A live tee reaches its branches through an array
 * of pointers grown by doubling, and allocates each branch when it joins
 * and frees it when it leaves, so a broadcast of a thousand clients costs
 * a thousand branches, not a thousand slots made up front. A branch removed
 * from inside one of the tee's own callbacks (a loop over the branches may
 * still hold it) is only marked; the tee's last hold reaps it.
 */
#include <errno.h>
#include <limits.h>

#include "alloc.h"
#include "stream_impl.h"

#define CHUNK_SZ sizeof(struct weir_rs_slot_)

struct tee_branch {
    struct weir_tee *tee;
    struct weir_readable *rs;
    enum weir_tee_policy policy;
    void (*on_disconnect)(void *ctx);
    void *disconnect_ctx;
    uint64_t delivered, dropped;
    uint64_t delivered_bytes, dropped_bytes;
    bool gone; /* cancelled or disconnected */
    bool disconnected;
    bool used;    /* the slot holds a branch (added, not removed) */
    bool removed; /* removed while the tee was busy: reaped at its put */
    bool take;    /* distribute_many: takes the
                     chunk being handed out */
};

struct weir_tee {
    struct weir_reader reader;
    uint64_t produced, produced_bytes;
    /* n: slots in use or once used (the loops' bound); cap: slots there
     * may be; nb: entries of b; nused: slots in use; gone: used slots
     * whose branch left. */
    unsigned n, cap, nb, nused, gone, slot;
    uint32_t busy;
    bool reading, read_again, doomed;
    bool reap; /* some branch is marked removed */
    /* Every branch exists (and a live tee made paused was resumed): the
     * tee may read. */
    bool ready;
    /* A live tee (weir_tee_create_live): reads whenever no block branch
     * is full, whether or not a branch asks, and with no branch at all
     * drops what it reads; it never cancels the source for want of
     * branches. */
    bool live, ended;
    /* The source ended during a read of the tee's own (WEIR_DONE or its
     * error): acted on once that read's chunk is handed out. */
    int end_rc;
    /*
     * The common shape, kept cheap: a fixed tee whose branches are all
     * block branches and all still live (simple_ok). Then the block rule
     * is "every branch has room", and every branch takes every chunk, so
     * while no branch has a read parked (which a chunk would answer by
     * callback) the tee hands chunks out without asking each branch and
     * without a counter per branch: while `simple`, each branch's
     * delivered counters are its stored ones plus what the tee produced
     * since simple_base. `blocker` is the branch that last held the tee
     * back, so that another branch's pull can be turned away with one
     * look while that branch is still full.
     */
    bool simple_ok, simple;
    unsigned blocker;
    uint64_t simple_base, simple_base_bytes;
    weir_tee_end_fn *on_end;
    void *end_ctx;
    /* A live tee's branches: b[i] is slot i's, tee_vacant while free. */
    struct tee_branch **b;
    /* A fixed tee's branches, in the tee's own allocation: reached with
     * one load less than through b, which the lockstep tee benchmark
     * shows (bench/results/core.md). */
    struct tee_branch fixed[];
};

/* A live tee's free slot: a branch that is never used, so the loops over
 * the branches need no test for a missing one. Never written. */
static struct tee_branch tee_vacant;

/* Slot i's branch (i < the tee's n, or for a live tee its nb). */
/* The hot loops (the block rule, the distribution) are written once with
 * `live` a constant and made twice, always inlined into a switch on the
 * tee's kind, so that a fixed tee's reach its array as directly as before
 * live tees existed (the lockstep tee benchmark notices a test per
 * branch access). */
#define TEE_SPECIALISE __attribute__((always_inline)) inline

static TEE_SPECIALISE struct tee_branch *brk(const struct weir_tee *t,
                                             unsigned i, bool live)
{
    return live ? t->b[i] : (struct tee_branch *)&t->fixed[i];
}

static inline struct tee_branch *br(const struct weir_tee *t, unsigned i)
{
    /* The branches are the tee's to change even through a const tee (the
     * stats read them): the cast only drops the tee's const. */
    return t->live ? t->b[i] : (struct tee_branch *)&t->fixed[i];
}

static bool slot_taken(const struct weir_tee *t, unsigned i)
{
    const struct tee_branch *b = br(t, i);

    return b->used || b->removed;
}

/* Frees slot i's branch (its readable, and for a live tee the branch). */
static void slot_clear(struct weir_tee *t, unsigned i)
{
    struct tee_branch *b = br(t, i);

    if (b == &tee_vacant)
        return;
    weir_readable_destroy(b->rs);
    if (t->live) {
        weir_core_free(b);
        t->b[i] = &tee_vacant;
    } else {
        *b = (struct tee_branch){0};
    }
}

static void tee_free(struct weir_tee *t)
{
    for (unsigned i = 0; i < t->n; i++)
        slot_clear(t, i);
    if (t->reader.stream)
        t->reader.stream->watch = (struct weir_watch){0};
    weir_reader_release(&t->reader);
    if (t->live)
        weir_core_free(t->b);
    weir_core_free(t);
}

static void tee_shrink(struct weir_tee *t)
{
    while (t->n > 0 && !slot_taken(t, t->n - 1))
        t->n--;
}

/* The branches removed while the tee was busy go now. */
static void tee_reap(struct weir_tee *t)
{
    t->reap = false;
    for (unsigned i = 0; i < t->n; i++)
        if (br(t, i)->removed)
            slot_clear(t, i);
    tee_shrink(t);
}

static void tee_hold(struct weir_tee *t)
{
    t->busy++;
}

/* The last hold went with something to do: kept out of line, so that the
 * common put stays a decrement and a test. */
static void tee_last_put(struct weir_tee *t)
{
    if (t->doomed)
        tee_free(t);
    else
        tee_reap(t);
}

static inline void tee_put(struct weir_tee *t)
{
    if (--t->busy == 0 && (t->doomed || t->reap))
        tee_last_put(t);
}

static inline __attribute__((always_inline)) bool
branch_live(const struct tee_branch *b)
{
    return b->used && !b->gone && b->rs->state == RS_READABLE &&
           !b->rs->close_requested;
}

/* Whether the branch has room: desired size > 0, or a read waiting. */
static inline __attribute__((always_inline)) bool
branch_room(const struct tee_branch *b)
{
    const struct weir_readable *rs = b->rs;

    return weir_rs_read_waits(rs) || weir_rs_desired(rs) > 0;
}

/* Leaves the fast distribution: the per-branch counters take what they
 * were owed. */
static void simple_stop(struct weir_tee *t)
{
    if (!t->simple)
        return;
    t->simple = false;
    for (unsigned i = 0; i < t->n; i++) {
        struct tee_branch *b = &t->fixed[i];

        if (!b->used)
            continue;
        b->delivered += t->produced - t->simple_base;
        b->delivered_bytes += t->produced_bytes - t->simple_base_bytes;
    }
}

/* The tee's shape changed (a branch left or came, the source ended): the
 * fast paths no longer apply. */
static void simple_end(struct weir_tee *t)
{
    simple_stop(t);
    t->simple_ok = false;
}

/* The block rule for the simple shape: every branch has room. */
static bool simple_may_read(struct weir_tee *t)
{
    for (unsigned i = 0; i < t->n; i++) {
        if (!branch_room(&t->fixed[i])) {
            t->blocker = i;
            return false;
        }
    }
    return true;
}

/* The block rule: every live block branch has room, and some live branch
 * wants a chunk. */
static TEE_SPECIALISE bool may_read_k(const struct weir_tee *t, bool live)
{
    bool wanted = false;

    for (unsigned i = 0; i < t->n; i++) {
        const struct tee_branch *b = brk(t, i, live);

        if (!branch_live(b))
            continue;
        if (branch_room(b))
            wanted = true;
        else if (b->policy == WEIR_TEE_BLOCK)
            return false;
    }
    return wanted || live;
}

static bool tee_may_read(struct weir_tee *t)
{
    if (t->simple_ok)
        return simple_may_read(t);
    return t->live ? may_read_k(t, true) : may_read_k(t, false);
}

/* The branch left; the last to leave cancels the source, and gets the
 * cancel's result. */
static int branch_gone(struct weir_tee *t, struct tee_branch *b, int reason)
{
    if (b->gone)
        return 0;
    simple_end(t);
    b->gone = true;
    if (++t->gone == t->nused && !t->live)
        return weir_reader_cancel(&t->reader, reason);
    return 0;
}

/* The branch is cut loose: its reader sees -ENOBUFS, its counters say
 * disconnected, its owner hears of it. */
static void branch_disconnect(struct weir_tee *t, struct tee_branch *b)
{
    b->disconnected = true;
    weir_readable_error(b->rs, -ENOBUFS);
    branch_gone(t, b, -ENOBUFS);
    if (b->on_disconnect)
        b->on_disconnect(b->disconnect_ctx);
}

/* What branch b does with the next chunk: take it (true) or not. */
static TEE_SPECIALISE bool branch_accepts(struct weir_tee *t,
                                          struct tee_branch *b, uint32_t len)
{
    struct weir_readable *rs;

    if (!branch_live(b))
        return false;
    rs = b->rs;
    if (b->policy == WEIR_TEE_BLOCK || branch_room(b))
        return true;
    switch (b->policy) {
    case WEIR_TEE_DROP_NEWEST:
        b->dropped++;
        b->dropped_bytes += len;
        return false;
    case WEIR_TEE_DROP_OLDEST:
        if (weir_q_empty(&rs->queue)) {
            /* hwm 0 and nobody reading: the new chunk is the oldest. */
            b->dropped++;
            b->dropped_bytes += len;
            return false;
        }
        {
            struct weir_chunk *old = weir_q_pop(&rs->queue, CHUNK_SZ);

            if (rs->weigh_bytes)
                rs->queued_bytes -= old->len;
            b->dropped_bytes += old->len;
            b->delivered_bytes -= old->len;
            weir_chunk_unref(old, rs->slot);
        }
        b->dropped++;
        b->delivered--;
        return true;
    case WEIR_TEE_DISCONNECT:
        branch_disconnect(t, b);
        return false;
    default:
        return true;
    }
}

/* tee_distribute for more than 64 branches: the same steps, with each
 * branch's take flag for the bit mask. */
static void distribute_many(struct weir_tee *t, struct weir_buf *buf,
                            uint8_t *data, uint32_t len)
{
    unsigned takers = 0, last = 0;

    for (unsigned i = 0; i < t->n; i++) {
        if (branch_accepts(t, br(t, i), len)) {
            br(t, i)->take = true;
            takers++;
            last = i + 1;
        }
    }
    if (takers == 0) {
        if (buf)
            weir_buf_unref(buf, t->slot);
        return;
    }
    if (buf)
        for (unsigned i = 1; i < takers; i++)
            weir_buf_ref(buf);
    for (unsigned i = 0; i < last; i++) {
        struct tee_branch *b = br(t, i);

        if (!b->take)
            continue;
        b->take = false;
        b->delivered++;
        b->delivered_bytes += len;
        weir_readable_enqueue(b->rs, (struct weir_chunk){buf, data, len});
    }
}

static TEE_SPECIALISE void distribute_k(struct weir_tee *t,
                                        struct weir_chunk chunk, bool live)
{
    /* The chunk's fields as scalars: the chunk is rebuilt for each
     * branch from registers rather than copied from a struct in memory
     * that was just partly rewritten (a store-forwarding stall per
     * branch, measured with perf). */
    struct weir_buf *buf = chunk.buf;
    uint8_t *data = chunk.data;
    uint32_t len = chunk.len;
    uint64_t take = 0; /* bit i: branch i takes the chunk */
    unsigned takers = 0;

    t->produced++;
    t->produced_bytes += chunk.len;
    if (t->n > 64) {
        distribute_many(t, buf, data, len);
        return;
    }
    /* First who takes it (a policy may drop or disconnect), then the
     * references, then the enqueues: a branch's consumer runs inside its
     * enqueue and may read again, so every reference must exist before
     * the first one is handed out. */
    for (unsigned i = 0; i < t->n; i++) {
        if (branch_accepts(t, brk(t, i, live), chunk.len)) {
            take |= UINT64_C(1) << i;
            takers++;
        }
    }
    if (takers == 0) {
        if (buf)
            weir_buf_unref(buf, t->slot);
        return;
    }
    /* One reference per taker: the read gave us one. */
    if (buf)
        for (unsigned i = 1; i < takers; i++)
            weir_buf_ref(buf);
    /* Nothing is reaped while we are busy: a branch removed by an earlier
     * branch's callback is still here, errored, and its readable refuses
     * the chunk and drops the reference itself. */
    for (unsigned i = 0; take; i++, take >>= 1) {
        if (!(take & 1))
            continue;
        struct tee_branch *b = brk(t, i, live);

        b->delivered++;
        b->delivered_bytes += chunk.len;
        weir_readable_enqueue(b->rs, (struct weir_chunk){buf, data, len});
    }
}

/* Whether some branch has a read parked (that a chunk would answer with
 * a callback, which may change the tee under the distribution). */
static bool simple_parked(const struct weir_tee *t)
{
    for (unsigned i = 0; i < t->n; i++) {
        if (t->fixed[i].rs->parked)
            return true;
    }
    return false;
}

/* The distribution of the simple shape with no read parked: every branch
 * takes the chunk, counted once for all of them. */
static void simple_distribute(struct weir_tee *t, struct weir_chunk chunk)
{
    struct weir_buf *buf = chunk.buf;
    uint8_t *data = chunk.data;
    uint32_t len = chunk.len;

    if (!t->simple) {
        t->simple = true;
        t->simple_base = t->produced;
        t->simple_base_bytes = t->produced_bytes;
    }
    t->produced++;
    t->produced_bytes += len;
    if (buf)
        for (unsigned i = 1; i < t->n; i++)
            weir_buf_ref(buf);
    for (unsigned i = 0; i < t->n; i++)
        weir_readable_enqueue(t->fixed[i].rs,
                              (struct weir_chunk){buf, data, len});
}

static void tee_distribute(struct weir_tee *t, struct weir_chunk chunk)
{
    if (t->simple_ok) {
        if (!simple_parked(t)) {
            simple_distribute(t, chunk);
            return;
        }
        simple_stop(t);
    }
    if (t->live)
        distribute_k(t, chunk, true);
    else
        distribute_k(t, chunk, false);
}

static void tee_end(struct weir_tee *t, int rc)
{
    bool first = !t->ended;

    simple_end(t);
    t->ended = true;
    for (unsigned i = 0; i < t->n; i++) {
        struct tee_branch *b = br(t, i);

        if (!branch_live(b))
            continue;
        if (rc == WEIR_DONE)
            weir_readable_close(b->rs);
        else
            weir_readable_error(b->rs, rc);
    }
    if (first && t->on_end)
        t->on_end(t->end_ctx, rc);
}

static void tee_handle(struct weir_tee *t, int rc, struct weir_chunk chunk)
{
    if (rc == 0)
        tee_distribute(t, chunk);
    else
        tee_end(t, rc);
}

static void tee_read_cb(void *ctx, int rc, struct weir_chunk chunk);

static void tee_end(struct weir_tee *t, int rc);

/*
 * The source changed state. The tee reads only while the block rule lets
 * it, so a source that errors (or closes with nothing queued) while a
 * branch is full would otherwise go unseen until that branch drains:
 * meanwhile the branches would serve chunks of a stream that failed. An
 * error reaches the branches at once, as in the spec's tee (their queues
 * are dropped); a close, once its queue is read, unless a read in progress
 * will report it itself.
 */
static void tee_source_event(void *ctx)
{
    struct weir_tee *t = ctx;
    struct weir_readable *rs = t->reader.stream;

    if (!rs || t->ended)
        return;
    if (t->reading) {
        /* A read of ours is under way: its chunk, if it got one, was
         * read before the end and goes out first, as in the spec, where
         * the read's answer comes before the end is seen. */
        t->end_rc = rs->state == RS_ERRORED ? rs->err : WEIR_DONE;
        return;
    }
    tee_hold(t);
    tee_end(t, rs->state == RS_ERRORED ? rs->err : WEIR_DONE);
    tee_put(t);
}

/* Acts on an end the watch saw during a read (see tee_source_event). */
static void tee_end_pending(struct weir_tee *t)
{
    int rc = t->end_rc;

    t->end_rc = 0;
    if (!t->ended)
        tee_end(t, rc);
}

static void tee_read(struct weir_tee *t)
{
    /* Zeroed: tee_handle takes it by value after a failed read too. */
    struct weir_chunk chunk = {0};
    int rc;

    if (t->reading) {
        t->read_again = true;
        return;
    }
    while (t->ready && !t->ended && t->reader.stream && tee_may_read(t)) {
        t->reading = true;
        t->read_again = false;
        rc = weir_reader_read_as_(&t->reader, &chunk, tee_read_cb, t, true);
        if (rc == WEIR_PENDING)
            return;
        tee_handle(t, rc, chunk);
        t->reading = false;
        if (__builtin_expect(t->end_rc != 0, 0)) {
            tee_end_pending(t);
            return;
        }
        if (!(t->read_again || t->live) || rc != 0)
            return;
    }
}

static void tee_read_cb(void *ctx, int rc, struct weir_chunk chunk)
{
    struct weir_tee *t = ctx;

    tee_hold(t);
    tee_handle(t, rc, chunk);
    t->reading = false;
    if (t->end_rc != 0)
        tee_end_pending(t);
    else if (rc == 0 && (t->read_again || t->live))
        tee_read(t);
    tee_put(t);
}

static int tee_pull(struct weir_readable *rs, void *ctx)
{
    struct tee_branch *b = ctx;
    struct weir_tee *t = b->tee;

    (void)rs;
    /* The branch that held the tee back last time is still full: the
     * tee cannot read for this one, and that branch's own pull will come
     * when it drains. */
    if (t->simple_ok && &t->fixed[t->blocker] != b &&
        !branch_room(&t->fixed[t->blocker]))
        return 0;
    tee_hold(t);
    tee_read(t);
    tee_put(t);
    return 0;
}

static int tee_cancel(struct weir_readable *rs, void *ctx, int reason)
{
    struct tee_branch *b = ctx;
    struct weir_tee *t = b->tee;

    int rc;

    (void)rs;
    tee_hold(t);
    rc = branch_gone(t, b, reason);
    /* The branch that left may have been the one holding the others
     * back. */
    if (t->gone < t->nused || t->live)
        tee_read(t);
    tee_put(t);
    return rc;
}

static const struct weir_source_ops tee_branch_ops = {
    .pull = tee_pull,
    .cancel = tee_cancel,
};

/* Room in b for slot i: a live tee's array grows by doubling, up to
 * its cap. */
static int slots_reserve(struct weir_tee *t, unsigned i)
{
    struct tee_branch **nb;
    unsigned want;

    if (i < t->nb)
        return 0;
    want = t->nb ? t->nb : 8;
    while (want <= i)
        want = want > UINT32_MAX / 2 ? UINT32_MAX : want * 2;
    if (want > t->cap)
        want = t->cap;
    nb = weir_core_realloc(t->b, (size_t)want * sizeof(*nb));
    if (!nb)
        return -ENOMEM;
    for (unsigned k = t->nb; k < want; k++)
        nb[k] = &tee_vacant;
    t->b = nb;
    t->nb = want;
    return 0;
}

static int branch_init(struct weir_tee *t, unsigned i,
                       const struct weir_tee_branch_options *opt)
{
    struct weir_readable_options ro = {
        .strategy = {.hwm = 1},
        .byte_stream = t->reader.stream->byte_stream,
        .slot = t->slot,
    };
    struct tee_branch *b;

    if (t->live) {
        if (slots_reserve(t, i))
            return -ENOMEM;
        b = weir_core_zalloc(sizeof(*b));
        if (!b)
            return -ENOMEM;
        t->b[i] = b;
    }
    b = br(t, i);
    *b = (struct tee_branch){.tee = t, .used = true};
    if (opt) {
        ro.strategy = opt->strategy;
        b->policy = opt->policy;
        b->on_disconnect = opt->on_disconnect;
        b->disconnect_ctx = opt->disconnect_ctx;
    }
    if (weir_readable_create(&b->rs, &tee_branch_ops, b, &ro)) {
        b->rs = NULL;
        b->used = false;
        slot_clear(t, i);
        return -ENOMEM;
    }
    t->nused++;
    return 0;
}

/* A fixed tee: the tee and its cap branches in one allocation. A live
 * tee: the tee alone; branches come later. */
static struct weir_tee *tee_alloc(struct weir_readable *src, unsigned cap,
                                  bool live)
{
    size_t size = sizeof(struct weir_tee);
    struct weir_tee *t;

    if (!live)
        size += (size_t)cap * sizeof(struct tee_branch);
    t = weir_core_zalloc(size);
    if (!t)
        return NULL;
    t->cap = cap;
    t->live = live;
    t->slot = src->slot;
    if (!live)
        t->nb = cap;
    weir_reader_acquire(&t->reader, src);
    src->watch = (struct weir_watch){tee_source_event, t};
    return t;
}

int weir_tee_create(struct weir_tee **out, struct weir_readable *src,
                    unsigned n, const struct weir_tee_branch_options *opts)
{
    struct weir_tee *t;

    if (n == 0 || n > UINT32_MAX / sizeof(struct tee_branch))
        return -EINVAL;
    if (src->locked)
        return -EBUSY;
    t = tee_alloc(src, n, false);
    if (!t)
        return -ENOMEM;
    for (unsigned i = 0; i < n; i++) {
        if (branch_init(t, i, opts ? &opts[i] : NULL)) {
            tee_free(t);
            return -ENOMEM;
        }
        t->n = i + 1;
    }
    t->simple_ok = true;
    for (unsigned i = 0; i < n; i++)
        if (t->fixed[i].policy != WEIR_TEE_BLOCK)
            t->simple_ok = false;
    /* The branches pulled as they were created (their start finished at
     * once, as the spec's does), before the tee could serve them. */
    t->ready = true;
    *out = t;
    tee_hold(t);
    /* A source that has errored already: the branches start errored, as
     * the spec's do (its tee sees the source's closed promise reject),
     * not only once a branch reads. */
    if (src->state == RS_ERRORED)
        tee_end(t, src->err);
    else
        tee_read(t);
    tee_put(t);
    return 0;
}

int weir_tee_create_live(struct weir_tee **out, struct weir_readable *src,
                         const struct weir_tee_live_options *o)
{
    static const struct weir_tee_live_options defaults = {0};
    struct weir_tee *t;

    if (!o)
        o = &defaults;
    if (src->locked)
        return -EBUSY;
    t = tee_alloc(src, o->cap ? o->cap : UINT_MAX, true);
    if (!t)
        return -ENOMEM;
    t->on_end = o->on_end;
    t->end_ctx = o->ctx;
    t->ready = !o->paused;
    *out = t;
    tee_hold(t);
    tee_read(t);
    tee_put(t);
    return 0;
}

void weir_tee_resume(struct weir_tee *t)
{
    if (t->ready)
        return;
    t->ready = true;
    tee_hold(t);
    tee_read(t);
    tee_put(t);
}

int weir_tee_add_branch(struct weir_tee *t,
                        const struct weir_tee_branch_options *opt,
                        unsigned *idx)
{
    unsigned i = 0;
    bool ready;
    int rc;

    if (t->ended)
        return -EPIPE;
    while (i < t->n && slot_taken(t, i))
        i++;
    if (i == t->cap)
        return -ENOSPC;
    /* A branch added to a tee that is not live yet: the source may have
     * been cancelled already when every branch had left. */
    if (!t->live && t->gone == t->nused && t->nused > 0)
        return -EPIPE;
    simple_end(t);
    /* Its first pull waits for the slot to be counted (and a paused tee
     * stays paused). */
    ready = t->ready;
    t->ready = false;
    rc = branch_init(t, i, opt);
    t->ready = ready;
    if (rc)
        return rc;
    if (i == t->n)
        t->n++;
    *idx = i;
    tee_hold(t);
    tee_read(t);
    tee_put(t);
    return 0;
}

int weir_tee_disconnect_branch(struct weir_tee *t, unsigned i)
{
    struct tee_branch *b = i < t->n ? br(t, i) : NULL;

    if (!b || !b->used)
        return -EINVAL;
    if (!branch_live(b))
        return -EALREADY;
    tee_hold(t);
    branch_disconnect(t, b);
    /* It may have been the branch holding the others back. */
    tee_read(t);
    tee_put(t);
    return 0;
}

void weir_tee_remove_branch(struct weir_tee *t, unsigned i)
{
    struct tee_branch *b = i < t->n ? br(t, i) : NULL;
    /* Busy already: a loop over the branches may be running below us. */
    bool inside = t->busy > 0;

    if (!b || !b->used)
        return;
    simple_end(t);
    tee_hold(t);
    if (!b->gone) {
        if (b->rs->state == RS_READABLE && !b->rs->close_requested)
            weir_readable_error(b->rs, -ECANCELED);
        branch_gone(t, b, -ECANCELED);
    }
    t->gone--;
    t->nused--;
    b->used = false;
    if (inside) {
        b->removed = true;
        t->reap = true;
    } else {
        slot_clear(t, i);
        tee_shrink(t);
    }
    /* The branch that left may have been the one holding the others
     * back. */
    tee_read(t);
    tee_put(t);
}

struct weir_readable *weir_tee_branch(struct weir_tee *t, unsigned i)
{
    return i < t->n && br(t, i)->used ? br(t, i)->rs : NULL;
}

void weir_tee_stats(const struct weir_tee *t, unsigned i,
                    struct weir_tee_stats *st)
{
    const struct tee_branch *b = i < t->n ? br(t, i) : NULL;

    if (!b || !b->used) {
        *st = (struct weir_tee_stats){0};
        return;
    }
    st->delivered = b->delivered;
    st->dropped = b->dropped;
    st->delivered_bytes = b->delivered_bytes;
    if (t->simple) {
        st->delivered += t->produced - t->simple_base;
        st->delivered_bytes += t->produced_bytes - t->simple_base_bytes;
    }
    st->dropped_bytes = b->dropped_bytes;
    st->disconnected = b->disconnected;
}

unsigned weir_tee_branches(const struct weir_tee *t)
{
    return t->nused;
}

uint64_t weir_tee_produced(const struct weir_tee *t)
{
    return t->produced;
}

uint64_t weir_tee_produced_bytes(const struct weir_tee *t)
{
    return t->produced_bytes;
}

void weir_tee_destroy(struct weir_tee *t)
{
    if (!t)
        return;
    if (t->busy) {
        t->doomed = true;
        return;
    }
    tee_free(t);
}
