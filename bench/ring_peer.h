/*
 * ring_peer.h - what the `ring` suite asks of each ring implementation it
 * measures (weir, ck_ring, rte_ring). An implementation runs whole loops,
 * not single operations, so no indirect call sits on the per-item path: the
 * harness calls produce() on one thread and consume() on the other, once.
 *
 * Items are the integers 1..n cast to pointers (never NULL). The producer
 * sends them in order; the consumer checks order and sums them, so a ring
 * that dropped, duplicated or reordered an item is caught at the cost of a
 * compare and an add per item, the same for every implementation.
 */
#ifndef WEIR_BENCH_RING_PEER_H
#define WEIR_BENCH_RING_PEER_H

#include <stdint.h>

/* Largest batch any case uses; loops keep a stack array of this size. */
#define RING_BENCH_MAX_BATCH 64

struct ring_check {
    uint64_t count;     /* items received */
    uint64_t sum;       /* their sum */
    uint64_t misplaced; /* items that were not the next expected one */
};

struct ring_impl {
    const char *name; /* impl=NAME in the output */
    /* Why the implementation cannot run here, or NULL when it can. */
    const char *missing;
    /* Sets up a ring of `capacity` slots; returns an opaque handle, or NULL
     * and a reason in *why. */
    void *(*create)(uint32_t capacity, const char **why);
    void (*destroy)(void *ring);
    /* Sends 1..n, `batch` at a time (1 = the single-item functions). */
    void (*produce)(void *ring, uint64_t n, uint32_t batch);
    /* Receives n items, up to `batch` per call, and checks them. */
    void (*consume)(void *ring, uint64_t n, uint32_t batch,
                    struct ring_check *out);
};

extern const struct ring_impl ring_impl_weir;
extern const struct ring_impl ring_impl_ck;
extern const struct ring_impl ring_impl_rte;

/* Both sides spin on full/empty with the same pause, so the rings are
 * compared on their own costs, not on different waiting strategies. */
static inline void ring_bench_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    __asm__ volatile("yield");
#endif
}

/* The consumer's per-item check, shared by every implementation. */
static inline void ring_check_item(struct ring_check *c, uintptr_t v)
{
    c->misplaced += v != c->count + 1;
    c->count++;
    c->sum += v;
}

#endif /* WEIR_BENCH_RING_PEER_H */
