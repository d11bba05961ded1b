/*
 * queue.c - storage growth for the core's lazy queues (see queue.h).
 */
#include <errno.h>
#include <string.h>

#include "alloc.h"
#include "queue.h"

int weir_q_grow(struct weir_q *q, size_t esz, uint32_t first)
{
    uint32_t len = weir_q_len(q), cap = 1;
    uint8_t *slots;

    if (q->cap && !q->borrowed) {
        if (q->cap >= (UINT32_C(1) << 31))
            return -ENOMEM;
        cap = q->cap * 2;
    } else {
        /* First storage of our own: room for `first`, and always more
         * than the small borrowed storage it replaces. */
        while ((cap < first || cap <= q->cap) && cap < (UINT32_C(1) << 16))
            cap <<= 1;
    }
    /* Not zeroed: every entry is written whole before it is read. A
     * zeroed allocation costs more than the memset it seems to be: for a
     * large block jemalloc gives recycled pages back to the kernel to get
     * zeroes, so a stream whose queue grows past a few pages faults them
     * all in again each time (bench/results/core.md). */
    slots = weir_core_alloc((size_t)cap * esz);
    if (!slots)
        return -ENOMEM;
    /* Unwrap the live entries to the start of the new storage, so the
     * indices can restart at 0 whatever they were. */
    for (uint32_t i = 0; i < len; i++)
        memcpy(slots + (size_t)i * esz, weir_q_at(q, esz, q->head + i), esz);
    if (!q->borrowed)
        weir_core_free(q->slots);
    q->borrowed = false;
    q->slots = slots;
    q->head = 0;
    q->tail = len;
    q->cap = cap;
    return 0;
}

void weir_q_fini(struct weir_q *q)
{
    if (!q->borrowed)
        weir_core_free(q->slots);
    *q = (struct weir_q){0};
}
