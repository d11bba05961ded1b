/*
 * channel.c - chunks forward, credit back, wakeups only for a side that
 * announced it is waiting.
 *
 * The waiting handshake (Dekker-style, one flag per direction):
 *
 *   consumer (empty)                     producer (after a push)
 *   xchg(c_waiting, 1)      seq_cst      publish tail          release
 *   peek tail again         acquire      xchg(c_waiting, 0)    seq_cst
 *   nothing: wait for the task           was 1: post the consumer's task
 *
 * and the same shape backwards with p_waiting, the consumer publishing
 * `consumed` and the producer re-reading it. Both flag operations are
 * read-modify-writes of the same word, so they are ordered in that word's
 * modification order. If the consumer's exchange comes first, the
 * producer's exchange reads its 1 and posts the task. If the producer's
 * comes first, the consumer's exchange reads the value the producer's wrote
 * and, both being seq_cst (hence release and acquire), synchronises with
 * it: the tail the producer published before its exchange is visible to the
 * consumer's re-check. Either way no wakeup is lost. A plain load of the
 * flag on the publishing side would not do: a release store followed by a
 * load may be reordered (store-load), which is exactly the lost wakeup. The
 * price is one uncontended atomic exchange per batch on each side; the
 * flag's line is written by the waiting side only when it waits.
 * ThreadSanitizer checks this pairing directly, as it involves no fences.
 *
 * Lifetime: references, one per side until its close or cancel, and one per
 * task queued on a loop (taken before the post, dropped after the task
 * ran). Whoever drops the last frees, dropping any chunk still queued.
 */
#include <errno.h>
#include <stdlib.h>

#include "weir/channel.h"
#include "weir/ring.h"

#define ST_CLOSED   (1u << 0) /* producer closed; error says how */
#define ST_CANCELED (1u << 1) /* consumer canceled */

struct weir_channel {
    struct weir_spsc idx; /* its own two lines: producer's and consumer's */

    /* Read-only after create, except slots: see weir_channel_push. */
    alignas(WEIR_CACHELINE) struct weir_chunk *slots;
    int64_t hwm;
    struct weir_loop *p_loop;
    struct weir_loop *c_loop;
    weir_channel_fn on_readable;
    void *readable_arg;
    weir_channel_fn on_writable;
    void *writable_arg;

    /* Producer's own. */
    alignas(WEIR_CACHELINE) uint64_t produced;
    _Atomic uint64_t p_produced; /* produced, for weir_channel_stats */
    _Atomic uint64_t p_waits;
    bool p_done;
    struct weir_task p_task; /* posted by the consumer to p_loop */

    /* Consumer's own, and the credit it publishes. */
    alignas(WEIR_CACHELINE) _Atomic uint64_t consumed;
    uint64_t c_consumed;
    _Atomic uint64_t c_waits;
    bool c_done;
    struct weir_task c_task; /* posted by the producer to c_loop */

    /* Flags written by both sides, rarely in steady state. */
    alignas(WEIR_CACHELINE) _Atomic uint32_t c_waiting;
    _Atomic uint32_t p_waiting;
    _Atomic uint32_t state;
    _Atomic int error;
    _Atomic uint32_t refs;
};

/* Single writer: a load and a store, not an atomic increment. */
static void counter_inc(_Atomic uint64_t *c)
{
    atomic_store_explicit(c, atomic_load_explicit(c, memory_order_relaxed) + 1,
                          memory_order_relaxed);
}

static void channel_free(struct weir_channel *ch, unsigned self)
{
    uint32_t at, n;

    /* Whatever the producer pushed after the consumer's last look. */
    n = weir_spsc_peek(&ch->idx, UINT32_MAX, &at);
    for (uint32_t i = 0; i < n; i++)
        weir_chunk_unref(&ch->slots[(at + i) & ch->idx.c_mask], self);
    free(ch->slots);
    free(ch);
}

static void channel_unref(struct weir_channel *ch, unsigned self)
{
    /* Acq_rel: the release half orders this side's last accesses before
     * the free; the acquire half, on the last reference, makes the other
     * side's accesses (its release decrement) happen before the free. */
    if (atomic_fetch_sub_explicit(&ch->refs, 1, memory_order_acq_rel) == 1)
        channel_free(ch, self);
}

/* Either side. Runs the other side's callback on its loop. */
static void channel_notify(struct weir_channel *ch, struct weir_loop *to,
                           struct weir_task *t)
{
    /* Relaxed: the caller holds a side's reference, so refs cannot reach
     * zero meanwhile; the post orders the rest. */
    atomic_fetch_add_explicit(&ch->refs, 1, memory_order_relaxed);
    if (!weir_loop_post(to, t))
        atomic_fetch_sub_explicit(&ch->refs, 1, memory_order_relaxed);
}

static void c_task_run(struct weir_task *t)
{
    struct weir_channel *ch =
        (struct weir_channel *)((char *)t -
                                offsetof(struct weir_channel, c_task));

    if (!ch->c_done)
        ch->on_readable(ch, ch->readable_arg);
    channel_unref(ch, weir_loop_slot(ch->c_loop));
}

static void p_task_run(struct weir_task *t)
{
    struct weir_channel *ch =
        (struct weir_channel *)((char *)t -
                                offsetof(struct weir_channel, p_task));

    if (!ch->p_done)
        ch->on_writable(ch, ch->writable_arg);
    channel_unref(ch, weir_loop_slot(ch->p_loop));
}

int weir_channel_create(struct weir_channel **out,
                        const struct weir_channel_options *opts,
                        struct weir_loop *producer, struct weir_loop *consumer)
{
    uint32_t cap = opts->capacity ? opts->capacity : 256;
    struct weir_channel *ch;

    if (!opts->on_readable || !opts->on_writable || !producer || !consumer ||
        opts->hwm > INT64_MAX)
        return -EINVAL;
    ch = aligned_alloc(WEIR_CACHELINE, sizeof(*ch));
    if (!ch)
        return -ENOMEM;
    *ch = (struct weir_channel){0};
    if (weir_spsc_init(&ch->idx, cap)) {
        free(ch);
        return -EINVAL;
    }
    ch->hwm = opts->hwm ? (int64_t)opts->hwm : 1 << 20;
    ch->p_loop = producer;
    ch->c_loop = consumer;
    ch->on_readable = opts->on_readable;
    ch->readable_arg = opts->readable_arg;
    ch->on_writable = opts->on_writable;
    ch->writable_arg = opts->writable_arg;
    weir_task_init(&ch->p_task, p_task_run);
    weir_task_init(&ch->c_task, c_task_run);
    atomic_init(&ch->consumed, 0);
    atomic_init(&ch->p_produced, 0);
    atomic_init(&ch->p_waits, 0);
    atomic_init(&ch->c_waits, 0);
    atomic_init(&ch->c_waiting, 0);
    atomic_init(&ch->p_waiting, 0);
    atomic_init(&ch->state, 0);
    atomic_init(&ch->error, 0);
    atomic_init(&ch->refs, 2);
    *out = ch;
    return 0;
}

/* ---- producer ---- */

int64_t weir_channel_desired(struct weir_channel *ch)
{
    /* Acquire pairs with the release store of consumed in
     * weir_channel_pop. Strictly only a number is read; acquire keeps the
     * credit and the slots the consumer freed before it in step. */
    uint64_t consumed =
        atomic_load_explicit(&ch->consumed, memory_order_acquire);

    return ch->hwm - (int64_t)(ch->produced - consumed);
}

static bool can_produce(struct weir_channel *ch)
{
    uint32_t at;

    return weir_channel_desired(ch) > 0 &&
           weir_spsc_reserve(&ch->idx, 1, &at) == 1;
}

static bool canceled(struct weir_channel *ch)
{
    /* Relaxed: cancel only asks the producer to stop; nothing is read
     * on the strength of it. */
    return atomic_load_explicit(&ch->state, memory_order_relaxed) & ST_CANCELED;
}

int weir_channel_ready(struct weir_channel *ch)
{
    if (canceled(ch))
        return -ECANCELED;
    if (can_produce(ch))
        return 1;
    /* Announce, then re-check (the handshake at the top of this file).
     * Seq_cst exchange pairs with the exchange of p_waiting in
     * weir_channel_pop. */
    atomic_exchange_explicit(&ch->p_waiting, 1, memory_order_seq_cst);
    if (can_produce(ch)) {
        /* Credit came meanwhile. If the consumer also saw the flag, its
         * task runs once more for nothing, which is harmless. */
        atomic_exchange_explicit(&ch->p_waiting, 0, memory_order_seq_cst);
        return 1;
    }
    if (canceled(ch))
        return -ECANCELED;
    counter_inc(&ch->p_waits);
    return 0;
}

int weir_channel_push(struct weir_channel *ch, const struct weir_chunk *c,
                      uint32_t n)
{
    uint32_t at, got;
    uint64_t bytes = 0;

    if (canceled(ch))
        return -ECANCELED;
    if (!ch->slots) {
        /* The slot array materialises with the first chunk: a stream
         * that never sends costs no ring. The
         * consumer reads the pointer only after the acquire load of a tail
         * published below, which orders this store before its reads. */
        ch->slots = calloc(weir_spsc_capacity(&ch->idx), sizeof(*ch->slots));
        if (!ch->slots)
            return -ENOMEM;
    }
    got = weir_spsc_reserve(&ch->idx, n, &at);
    if (got == 0)
        return 0;
    for (uint32_t i = 0; i < got; i++) {
        ch->slots[(at + i) & ch->idx.p_mask] = c[i];
        bytes += c[i].len;
    }
    ch->produced += bytes;
    /* Relaxed: a statistic; the single writer's store, read by anyone. */
    atomic_store_explicit(&ch->p_produced, ch->produced, memory_order_relaxed);
    /* One release store for the whole batch (weir_spsc_publish). */
    weir_spsc_publish(&ch->idx, got);
    /* Seq_cst exchange pairs with the exchange of c_waiting in
     * weir_channel_pop: the consumer either sees this batch on its
     * re-check or has announced and gets the task. */
    if (atomic_exchange_explicit(&ch->c_waiting, 0, memory_order_seq_cst))
        channel_notify(ch, ch->c_loop, &ch->c_task);
    return (int)got;
}

void weir_channel_close(struct weir_channel *ch, int err)
{
    /* Relaxed: the release or-ing of state below publishes it. */
    atomic_store_explicit(&ch->error, err < 0 ? err : 0, memory_order_relaxed);
    /* Release pairs with the acquire loads of state in weir_channel_pop:
     * every chunk published before the close, and the error, are visible
     * to a consumer that sees ST_CLOSED. */
    atomic_fetch_or_explicit(&ch->state, ST_CLOSED, memory_order_release);
    ch->p_done = true;
    /* Always: the consumer may be busy rather than waiting, but a task
     * costs nothing then, and an end must never wait for a next push. */
    channel_notify(ch, ch->c_loop, &ch->c_task);
    channel_unref(ch, weir_loop_slot(ch->p_loop));
}

/* ---- consumer ---- */

static uint32_t take(struct weir_channel *ch, struct weir_chunk *out,
                     uint32_t max)
{
    uint32_t at;
    uint32_t n = weir_spsc_peek(&ch->idx, max, &at);
    uint64_t bytes = 0;

    if (n == 0)
        return 0;
    for (uint32_t i = 0; i < n; i++) {
        out[i] = ch->slots[(at + i) & ch->idx.c_mask];
        bytes += out[i].len;
    }
    weir_spsc_release(&ch->idx, n);
    ch->c_consumed += bytes;
    /* Release pairs with the acquire load in weir_channel_desired: the
     * slots freed just above are reusable by the time the producer sees
     * the credit. */
    atomic_store_explicit(&ch->consumed, ch->c_consumed, memory_order_release);
    /* Seq_cst exchange pairs with the exchange of p_waiting in
     * weir_channel_ready. */
    if (atomic_exchange_explicit(&ch->p_waiting, 0, memory_order_seq_cst))
        channel_notify(ch, ch->p_loop, &ch->p_task);
    return n;
}

static int closed_result(struct weir_channel *ch)
{
    int err = atomic_load_explicit(&ch->error, memory_order_relaxed);

    return err ? err : -EPIPE;
}

int weir_channel_pop(struct weir_channel *ch, struct weir_chunk *out,
                     uint32_t max)
{
    /* Acquire pairs with the release in weir_channel_close. */
    uint32_t st = atomic_load_explicit(&ch->state, memory_order_acquire);
    uint32_t n;

    if ((st & ST_CLOSED) &&
        atomic_load_explicit(&ch->error, memory_order_relaxed))
        return closed_result(ch);
    n = take(ch, out, max);
    if (n)
        return (int)n;
    if (st & ST_CLOSED)
        return closed_result(ch);
    /* Announce, then re-check (the handshake at the top of this file).
     * Seq_cst exchange pairs with the exchange of c_waiting in
     * weir_channel_push. */
    atomic_exchange_explicit(&ch->c_waiting, 1, memory_order_seq_cst);
    n = take(ch, out, max);
    if (n) {
        /* A spurious task may follow; harmless. */
        atomic_exchange_explicit(&ch->c_waiting, 0, memory_order_seq_cst);
        return (int)n;
    }
    /* A close that raced with the announce posts the task anyway. */
    counter_inc(&ch->c_waits);
    return 0;
}

void weir_channel_cancel(struct weir_channel *ch)
{
    unsigned self = weir_loop_slot(ch->c_loop);
    struct weir_chunk batch[64];
    uint32_t n, at;

    /* Release, pairing with nothing in particular: the producer only
     * reads the bit (relaxed) to stop. */
    atomic_fetch_or_explicit(&ch->state, ST_CANCELED, memory_order_release);
    ch->c_done = true;
    while ((n = weir_spsc_peek(&ch->idx, 64, &at)) > 0) {
        for (uint32_t i = 0; i < n; i++)
            batch[i] = ch->slots[(at + i) & ch->idx.c_mask];
        weir_spsc_release(&ch->idx, n);
        for (uint32_t i = 0; i < n; i++)
            weir_chunk_unref(&batch[i], self);
    }
    /* Always: the producer may be blocked on credit or idle on its
     * source; either way it must hear of the cancel. */
    channel_notify(ch, ch->p_loop, &ch->p_task);
    channel_unref(ch, self);
}

void weir_channel_stats(struct weir_channel *ch, struct weir_channel_stats *st)
{
    /* Relaxed: counters, each with one writer; a snapshot. */
    st->produced = atomic_load_explicit(&ch->p_produced, memory_order_relaxed);
    st->consumed = atomic_load_explicit(&ch->consumed, memory_order_relaxed);
    st->queued = st->produced > st->consumed ? st->produced - st->consumed : 0;
    st->producer_waits =
        atomic_load_explicit(&ch->p_waits, memory_order_relaxed);
    st->consumer_waits =
        atomic_load_explicit(&ch->c_waits, memory_order_relaxed);
}
