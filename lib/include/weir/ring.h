/*
 * weir/ring.h - single-producer single-consumer lock-free ring.
 *
 * Locking rule, stated once: exactly one thread may act as the producer and
 * exactly one thread as the consumer at any time. Functions marked
 * "producer" may only be called by the producer, those marked "consumer"
 * only by the consumer; the two sides may run concurrently. Moving a side to
 * another thread needs a happens-before edge the caller provides (a mutex,
 * thread creation, a channel handoff).
 *
 * The ring is split in two layers:
 *
 *   struct weir_spsc   the indices only. The producer reserves a run of slot
 *                      indices, fills them in storage it owns, and publishes
 *                      them; the consumer peeks a run, works on the entries
 *                      in place, and releases them. Any element type works:
 *                      the storage is the caller's array, indexed with
 *                      (index & mask).
 *   struct weir_ring   a ring of pointers built on weir_spsc, with push/pop
 *                      of one item and of bursts.
 *
 * Indices are free-running uint32_t counters: they are never reduced modulo
 * the capacity, only masked when a slot is addressed, and unsigned
 * subtraction gives the distance between them across wraparound. So the
 * capacity must be a power of two no larger than 2^31.
 *
 * Each side keeps a private copy of the other side's index and reloads the
 * shared one only when its copy says the ring is full (producer) or empty
 * (consumer). In steady state the two threads touch each other's cache line
 * once per lap instead of once per operation.
 *
 * No read-modify-write atomics are used: every shared index has one writer,
 * which stores it with release order after the slot accesses it covers; the
 * other side loads it with acquire order before touching those slots.
 */
#ifndef WEIR_RING_H
#define WEIR_RING_H

#include <errno.h>
#include <stdalign.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "weir/internal/ring.h"

#ifdef __cplusplus
extern "C" {
#endif

#define WEIR_CACHELINE 64

/* Largest capacity: distances between free-running uint32_t indices stay
 * unambiguous up to half the index space. */
#define WEIR_SPSC_MAX_CAPACITY (UINT32_C(1) << 31)

/*
 * Layout: producer's line, an empty guard line, consumer's line, another
 * guard. Many x86 cores fetch lines in aligned 128-byte pairs (the
 * adjacent-line prefetcher), so two lines that are merely distinct can
 * still bounce between cores as a pair. With a guard after each side's
 * line, the two sides never fall in one pair, whatever the struct's
 * 64-byte-aligned address, and neither does whatever follows the struct.
 * The guards are lines rather than alignas(128) so that storage aligned to
 * WEIR_CACHELINE stays enough for a struct holding a ring. The guards
 * pay off on single items; bursts do not notice them (weir-bench ring,
 * bench/results/ring.md).
 */
struct weir_spsc {
    /* Producer's line: written by the producer only. */
    alignas(WEIR_CACHELINE) _Atomic uint32_t tail; /* next index to publish */
    uint32_t p_head_cache; /* producer's last view of head */
    uint32_t p_mask;       /* capacity - 1, a private copy */
    alignas(WEIR_CACHELINE) char p_guard[WEIR_CACHELINE];

    /* Consumer's line: written by the consumer only. */
    alignas(WEIR_CACHELINE) _Atomic uint32_t head; /* next index to consume */
    uint32_t c_tail_cache; /* consumer's last view of tail */
    uint32_t c_mask;       /* capacity - 1, a private copy */
    alignas(WEIR_CACHELINE) char c_guard[WEIR_CACHELINE];
};

_Static_assert(sizeof(struct weir_spsc) == 4 * WEIR_CACHELINE,
               "each side's line must be followed by a guard line");

/*
 * Sets up the indices of a ring of `capacity` slots, all indices starting at
 * `start` (0 in normal use; tests start near UINT32_MAX to cross the
 * wraparound). Returns 0, or -EINVAL when capacity is not a power of two in
 * [1, WEIR_SPSC_MAX_CAPACITY]. Call before either side uses the ring.
 */
static inline int weir_spsc_init_at(struct weir_spsc *r, uint32_t capacity,
                                    uint32_t start)
{
    if (capacity == 0 || capacity > WEIR_SPSC_MAX_CAPACITY ||
        (capacity & (capacity - 1)) != 0)
        return -EINVAL;
    atomic_init(&r->tail, start);
    atomic_init(&r->head, start);
    r->p_head_cache = start;
    r->c_tail_cache = start;
    r->p_mask = capacity - 1;
    r->c_mask = capacity - 1;
    return 0;
}

static inline int weir_spsc_init(struct weir_spsc *r, uint32_t capacity)
{
    return weir_spsc_init_at(r, capacity, 0);
}

static inline uint32_t weir_spsc_capacity(const struct weir_spsc *r)
{
    return r->p_mask + 1;
}

/*
 * Producer. Finds up to `want` free slots. Returns how many (0 when full)
 * and sets *index to the first; slot i of the run is storage[(*index + i) &
 * mask]. Nothing is visible to the consumer until weir_spsc_publish.
 */
static inline uint32_t weir_spsc_reserve(struct weir_spsc *r, uint32_t want,
                                         uint32_t *index)
{
    /* Relaxed: the producer is the only writer of tail. */
    uint32_t tail = atomic_load_explicit(&r->tail, memory_order_relaxed);
    uint32_t cap = r->p_mask + 1;
    uint32_t free_slots = cap - (tail - r->p_head_cache);

    if (free_slots < want) {
        /* Acquire pairs with the release store of head in
         * weir_spsc_release: the consumer has finished reading every slot
         * below head, so the producer may overwrite them. */
        r->p_head_cache = atomic_load_explicit(&r->head, memory_order_acquire);
        free_slots = cap - (tail - r->p_head_cache);
    }
    *index = tail;
    return free_slots < want ? free_slots : want;
}

/*
 * Producer. Makes the next `n` reserved slots visible to the consumer, all
 * with one release store. n must not exceed what weir_spsc_reserve gave.
 */
static inline void weir_spsc_publish(struct weir_spsc *r, uint32_t n)
{
    uint32_t tail = atomic_load_explicit(&r->tail, memory_order_relaxed);

    /* Release pairs with the acquire load of tail in weir_spsc_peek: the
     * slot contents written before this store are visible to the consumer
     * once it sees the new tail. */
    atomic_store_explicit(&r->tail, tail + n, memory_order_release);
}

/*
 * Consumer. Finds up to `want` published entries. Returns how many (0 when
 * empty) and sets *index to the first. The entries stay in the ring, and
 * may be read or modified in place, until weir_spsc_release.
 */
static inline uint32_t weir_spsc_peek(struct weir_spsc *r, uint32_t want,
                                      uint32_t *index)
{
    /* Relaxed: the consumer is the only writer of head. */
    uint32_t head = atomic_load_explicit(&r->head, memory_order_relaxed);
    uint32_t avail = r->c_tail_cache - head;

    if (avail < want) {
        /* Acquire pairs with the release store of tail in
         * weir_spsc_publish: the producer's writes to every slot below
         * tail are visible from here on. */
        r->c_tail_cache = atomic_load_explicit(&r->tail, memory_order_acquire);
        avail = r->c_tail_cache - head;
    }
    *index = head;
    return avail < want ? avail : want;
}

/*
 * Consumer. Hands the next `n` peeked slots back to the producer with one
 * release store. n must not exceed what weir_spsc_peek gave.
 */
static inline void weir_spsc_release(struct weir_spsc *r, uint32_t n)
{
    uint32_t head = atomic_load_explicit(&r->head, memory_order_relaxed);

    /* Release pairs with the acquire load of head in weir_spsc_reserve:
     * the consumer's reads of these slots happen before the producer may
     * reuse them. */
    atomic_store_explicit(&r->head, head + n, memory_order_release);
}

/*
 * Any thread. Number of published, unreleased entries. Exact when called by
 * either side about its own index: the consumer never sees fewer than are
 * there, the producer never sees more. Another thread gets a snapshot.
 */
static inline uint32_t weir_spsc_count(const struct weir_spsc *r)
{
    /* Acquire on both: pairs with the release stores in publish and
     * release, so a caller that goes on to act on the count (a consumer
     * reading slots, a producer filling them) sees the slots' state. */
    uint32_t head = atomic_load_explicit(&r->head, memory_order_acquire);
    uint32_t tail = atomic_load_explicit(&r->tail, memory_order_acquire);
    uint32_t n = tail - head;

    /* head is read first, so a third thread's stale head can make n
     * overshoot; it never undershoots, since tail only grows. */
    return n > r->p_mask + 1 ? r->p_mask + 1 : n;
}

static inline bool weir_spsc_empty(const struct weir_spsc *r)
{
    return weir_spsc_count(r) == 0;
}

/* Any thread. Free slots, with the same exactness rule as count. */
static inline uint32_t weir_spsc_free(const struct weir_spsc *r)
{
    return weir_spsc_capacity(r) - weir_spsc_count(r);
}

/*
 * struct weir_ring: a ring of pointers. The slot array belongs to the
 * caller (weir_ring_init) or to the ring (weir_ring_create).
 */
struct weir_ring {
    struct weir_spsc idx;
    void **slots;
    bool owns_slots;
};

/* Owner. Allocates a ring of `capacity` pointers (a power of two). Returns
 * 0, -EINVAL for a bad capacity, -ENOMEM. */
int weir_ring_create(struct weir_ring *r, uint32_t capacity);

/* Owner. Frees what weir_ring_create allocated; the ring must be idle. */
void weir_ring_destroy(struct weir_ring *r);

/* Owner. Sets up a ring over caller-owned storage of `capacity` slots.
 * Returns 0 or -EINVAL. */
static inline int weir_ring_init(struct weir_ring *r, void **slots,
                                 uint32_t capacity)
{
    r->slots = slots;
    r->owns_slots = false;
    return weir_spsc_init(&r->idx, capacity);
}

/* Producer. Enqueues one pointer. Returns 0, or -ENOBUFS when full. */
static inline int weir_ring_push(struct weir_ring *r, void *item)
{
    uint32_t at;

    if (weir_spsc_reserve(&r->idx, 1, &at) == 0)
        return -ENOBUFS;
    r->slots[at & r->idx.p_mask] = item;
    weir_spsc_publish(&r->idx, 1);
    return 0;
}

/* Consumer. Dequeues one pointer. Returns it, or NULL when empty (so NULL
 * itself should not be enqueued). */
static inline void *weir_ring_pop(struct weir_ring *r)
{
    uint32_t at;
    void *item;

    if (weir_spsc_peek(&r->idx, 1, &at) == 0)
        return NULL;
    item = r->slots[at & r->idx.c_mask];
    weir_spsc_release(&r->idx, 1);
    return item;
}

/*
 * Producer. Enqueues as many of items[0..n) as fit, in order, published
 * with one release store. Returns how many went in (0 when full): partial
 * success is the normal answer of a nearly full ring.
 */
static inline uint32_t weir_ring_push_burst(struct weir_ring *r,
                                            void *const *items, uint32_t n)
{
    uint32_t at;
    uint32_t got = weir_spsc_reserve(&r->idx, n, &at);
    uint32_t first = at & r->idx.p_mask;
    uint32_t run = r->idx.p_mask + 1 - first;

    if (got == 0)
        return 0;
    /* Two contiguous copies (up to the end of the array, then from its
     * start) instead of masking every index. */
    if (run > got)
        run = got;
    weir_ring_copy_(&r->slots[first], items, run);
    if (got > run)
        weir_ring_copy_(r->slots, items + run, got - run);
    weir_spsc_publish(&r->idx, got);
    return got;
}

/* Consumer. Dequeues up to n pointers into items, in order. Returns how
 * many (0 when empty). */
static inline uint32_t weir_ring_pop_burst(struct weir_ring *r, void **items,
                                           uint32_t n)
{
    uint32_t at;
    uint32_t got = weir_spsc_peek(&r->idx, n, &at);
    uint32_t first = at & r->idx.c_mask;
    uint32_t run = r->idx.c_mask + 1 - first;

    if (got == 0)
        return 0;
    /* Two contiguous copies, as in weir_ring_push_burst. */
    if (run > got)
        run = got;
    weir_ring_copy_(items, &r->slots[first], run);
    if (got > run)
        weir_ring_copy_(items + run, r->slots, got - run);
    weir_spsc_release(&r->idx, got);
    return got;
}

#ifdef __cplusplus
}
#endif

#endif /* WEIR_RING_H */
