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
    /* Slots on their own lines: neither side's index line is shared with
     * the slot array's first or last entries. */
    r->slots = aligned_alloc(WEIR_CACHELINE,
                             ((size_t)capacity * sizeof(void *) +
                              WEIR_CACHELINE - 1) &
                                 ~(size_t)(WEIR_CACHELINE - 1));
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
