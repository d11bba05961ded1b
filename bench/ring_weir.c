/*
 * ring_weir.c - weir's own ring in the `ring` suite, through the public
 * struct weir_ring functions a channel uses: push/pop for single items,
 * push_burst/pop_burst for batches.
 */
#include <stdlib.h>

#include "ring_peer.h"
#include "weir/ring.h"

static void *weir_create(uint32_t capacity, const char **why)
{
    /* Aligned so the ring's index lines are not shared with the heap
     * neighbours of this allocation. */
    struct weir_ring *r = aligned_alloc(128, (sizeof(*r) + 127) & ~(size_t)127);

    if (!r) {
        *why = "out of memory";
        return NULL;
    }
    if (weir_ring_create(r, capacity) != 0) {
        free(r);
        *why = "weir_ring_create failed";
        return NULL;
    }
    return r;
}

static void weir_destroy(void *ring)
{
    weir_ring_destroy(ring);
    free(ring);
}

static void weir_produce(void *ring, uint64_t n, uint32_t batch)
{
    struct weir_ring *r = ring;
    void *items[RING_BENCH_MAX_BATCH];
    uint64_t next = 1;

    if (batch == 1) {
        for (; next <= n; next++)
            while (weir_ring_push(r, (void *)(uintptr_t)next) != 0)
                ring_bench_relax();
        return;
    }
    while (next <= n) {
        uint32_t want = n - next + 1 < batch ? (uint32_t)(n - next + 1) : batch;
        uint32_t done = 0;

        for (uint32_t k = 0; k < want; k++)
            items[k] = (void *)(uintptr_t)(next + k);
        while (done < want) {
            uint32_t got = weir_ring_push_burst(r, items + done, want - done);
            if (got == 0)
                ring_bench_relax();
            done += got;
        }
        next += want;
    }
}

static void weir_consume(void *ring, uint64_t n, uint32_t batch,
                         struct ring_check *out)
{
    struct weir_ring *r = ring;
    void *items[RING_BENCH_MAX_BATCH];
    struct ring_check c = {0};

    if (batch == 1) {
        while (c.count < n) {
            void *p = weir_ring_pop(r);
            if (p)
                ring_check_item(&c, (uintptr_t)p);
            else
                ring_bench_relax();
        }
    } else {
        while (c.count < n) {
            uint32_t got = weir_ring_pop_burst(r, items, batch);
            if (got == 0)
                ring_bench_relax();
            for (uint32_t k = 0; k < got; k++)
                ring_check_item(&c, (uintptr_t)items[k]);
        }
    }
    *out = c;
}

const struct ring_impl ring_impl_weir = {
    .name = "weir",
    .create = weir_create,
    .destroy = weir_destroy,
    .produce = weir_produce,
    .consume = weir_consume,
};
