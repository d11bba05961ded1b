/*
 * ring.c - allocation for struct weir_ring. Everything on the hot path is
 * inline in weir/ring.h.
 */
#include <stdlib.h>

#include "weir/ring.h"

int weir_ring_create(struct weir_ring *r, uint32_t capacity)
{
    int err = weir_spsc_init(&r->idx, capacity);

    if (err)
        return err;
    /* The slot array on whole lines of its own, so no other object shares
     * a line with its first or last entries. aligned_alloc wants the size
     * to be a multiple of the alignment. */
    size_t bytes = (size_t)capacity * sizeof(void *);
    size_t lines = (bytes + WEIR_CACHELINE - 1) / WEIR_CACHELINE;

    r->slots = aligned_alloc(WEIR_CACHELINE, lines * WEIR_CACHELINE);
    if (!r->slots)
        return -ENOMEM;
    r->owns_slots = true;
    return 0;
}

void weir_ring_destroy(struct weir_ring *r)
{
    if (r->owns_slots)
        free(r->slots);
    r->slots = NULL;
    r->owns_slots = false;
}
