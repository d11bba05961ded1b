/*
 * ring_ck.c - Concurrency Kit's ck_ring in the `ring` suite, through its
 * SPSC functions. ck_ring has no SPSC burst functions, so a batch is a loop
 * of single enqueues (or dequeues) until the batch is done or the ring is
 * full (empty), which is what a ck user writes.
 */
#include "ring_peer.h"

#ifdef WEIR_HAVE_CK
#include <stdlib.h>

#include <ck_ring.h>

struct ck_bench_ring {
    struct ck_ring ring;
    struct ck_ring_buffer *buf;
};

static void *ck_create(uint32_t capacity, const char **why)
{
    struct ck_bench_ring *r =
        aligned_alloc(128, (sizeof(*r) + 127) & ~(size_t)127);

    if (!r) {
        *why = "out of memory";
        return NULL;
    }
    r->buf = aligned_alloc(128, capacity * sizeof(*r->buf));
    if (!r->buf) {
        free(r);
        *why = "out of memory";
        return NULL;
    }
    ck_ring_init(&r->ring, capacity);
    return r;
}

static void ck_destroy(void *ring)
{
    struct ck_bench_ring *r = ring;

    free(r->buf);
    free(r);
}

static void ck_produce(void *ring, uint64_t n, uint32_t batch)
{
    struct ck_bench_ring *r = ring;
    void *items[RING_BENCH_MAX_BATCH];
    uint64_t next = 1;

    if (batch == 1) {
        for (; next <= n; next++)
            while (!ck_ring_enqueue_spsc(&r->ring, r->buf,
                                         (void *)(uintptr_t)next))
                ring_bench_relax();
        return;
    }
    while (next <= n) {
        uint32_t want = n - next + 1 < batch ? (uint32_t)(n - next + 1) : batch;
        uint32_t done = 0;

        /* The same staging array as the burst rings, so every
         * implementation pays for it alike. */
        for (uint32_t k = 0; k < want; k++)
            items[k] = (void *)(uintptr_t)(next + k);
        while (done < want) {
            uint32_t got = 0;
            while (done + got < want &&
                   ck_ring_enqueue_spsc(&r->ring, r->buf, items[done + got]))
                got++;
            if (got == 0)
                ring_bench_relax();
            done += got;
        }
        next += want;
    }
}

static void ck_consume(void *ring, uint64_t n, uint32_t batch,
                       struct ring_check *out)
{
    struct ck_bench_ring *r = ring;
    void *items[RING_BENCH_MAX_BATCH];
    struct ring_check c = {0};

    if (batch == 1) {
        while (c.count < n) {
            void *p;
            if (ck_ring_dequeue_spsc(&r->ring, r->buf, &p))
                ring_check_item(&c, (uintptr_t)p);
            else
                ring_bench_relax();
        }
    } else {
        while (c.count < n) {
            uint32_t got = 0;
            while (got < batch &&
                   ck_ring_dequeue_spsc(&r->ring, r->buf, &items[got]))
                got++;
            if (got == 0)
                ring_bench_relax();
            for (uint32_t k = 0; k < got; k++)
                ring_check_item(&c, (uintptr_t)items[k]);
        }
    }
    *out = c;
}

const struct ring_impl ring_impl_ck = {
    .name = "ck",
    .create = ck_create,
    .destroy = ck_destroy,
    .produce = ck_produce,
    .consume = ck_consume,
};
#else
const struct ring_impl ring_impl_ck = {
    .name = "ck",
    .missing = "built without Concurrency Kit: install libck-dev",
};
#endif
