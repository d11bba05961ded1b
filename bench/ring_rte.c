/*
 * ring_rte.c - DPDK's rte_ring in the `ring` suite, single-producer and
 * single-consumer (RING_F_SP_ENQ | RING_F_SC_DEQ), set up with
 * rte_ring_init on memory of our own. rte_ring_init and the inline
 * enqueue/dequeue functions need no EAL initialisation (no hugepages, no
 * rte_eal_init), so the peer runs as a plain process.
 *
 * This file is compiled on its own with DPDK's flags (they carry -march and
 * a forced include that must not reach weir's code).
 */
#include "ring_peer.h"

#ifdef WEIR_HAVE_RTE
#include <stdlib.h>

#include <rte_ring.h>

static void *rte_create(uint32_t capacity, const char **why)
{
    ssize_t size = rte_ring_get_memsize(capacity);
    struct rte_ring *r;

    if (size < 0) {
        *why = "rte_ring_get_memsize failed";
        return NULL;
    }
    r = aligned_alloc(128, ((size_t)size + 127) & ~(size_t)127);
    if (!r) {
        *why = "out of memory";
        return NULL;
    }
    if (rte_ring_init(r, "weir-bench", capacity,
                      RING_F_SP_ENQ | RING_F_SC_DEQ) != 0) {
        free(r);
        *why = "rte_ring_init failed without EAL initialisation";
        return NULL;
    }
    return r;
}

static void rte_destroy(void *ring)
{
    free(ring);
}

static void rte_produce(void *ring, uint64_t n, uint32_t batch)
{
    struct rte_ring *r = ring;
    void *items[RING_BENCH_MAX_BATCH];
    uint64_t next = 1;

    if (batch == 1) {
        for (; next <= n; next++)
            while (rte_ring_sp_enqueue(r, (void *)(uintptr_t)next) != 0)
                ring_bench_relax();
        return;
    }
    while (next <= n) {
        uint32_t want = n - next + 1 < batch ? (uint32_t)(n - next + 1) : batch;
        uint32_t done = 0;

        for (uint32_t k = 0; k < want; k++)
            items[k] = (void *)(uintptr_t)(next + k);
        while (done < want) {
            uint32_t got =
                rte_ring_sp_enqueue_burst(r, items + done, want - done, NULL);
            if (got == 0)
                ring_bench_relax();
            done += got;
        }
        next += want;
    }
}

static void rte_consume(void *ring, uint64_t n, uint32_t batch,
                        struct ring_check *out)
{
    struct rte_ring *r = ring;
    void *items[RING_BENCH_MAX_BATCH];
    struct ring_check c = {0};

    if (batch == 1) {
        while (c.count < n) {
            void *p;
            if (rte_ring_sc_dequeue(r, &p) == 0)
                ring_check_item(&c, (uintptr_t)p);
            else
                ring_bench_relax();
        }
    } else {
        while (c.count < n) {
            uint32_t got = rte_ring_sc_dequeue_burst(r, items, batch, NULL);
            if (got == 0)
                ring_bench_relax();
            for (uint32_t k = 0; k < got; k++)
                ring_check_item(&c, (uintptr_t)items[k]);
        }
    }
    *out = c;
}

const struct ring_impl ring_impl_rte = {
    .name = "rte",
    .create = rte_create,
    .destroy = rte_destroy,
    .produce = rte_produce,
    .consume = rte_consume,
};
#else
const struct ring_impl ring_impl_rte = {
    .name = "rte",
    .missing = "built without DPDK: install libdpdk-dev",
};
#endif
