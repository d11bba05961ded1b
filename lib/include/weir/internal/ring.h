/*
 * weir/internal/ring.h - a helper of the inline functions of weir/ring.h.
 * Not API: included by weir/ring.h, never by a program.
 */
#ifndef WEIR_INTERNAL_RING_H
#define WEIR_INTERNAL_RING_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/*
 * Copies n pointers between a caller's array and a contiguous run of slots.
 * Open-coded four at a time so it stays inline: a burst of tens of
 * pointers is a handful of moves, where the masked per-item loop it
 * replaces cost a good part of the rate on large bursts (weir-bench ring,
 * bench/results/ring.md).
 */
static inline void weir_ring_copy_(void **dst, void *const *src, uint32_t n)
{
    uint32_t i = 0;

    for (; i + 4 <= n; i += 4) {
        dst[i] = src[i];
        dst[i + 1] = src[i + 1];
        dst[i + 2] = src[i + 2];
        dst[i + 3] = src[i + 3];
    }
    switch (n - i) {
    case 3:
        dst[i + 2] = src[i + 2];
        /* fall through */
    case 2:
        dst[i + 1] = src[i + 1];
        /* fall through */
    case 1:
        dst[i] = src[i];
    }
}

#ifdef __cplusplus
}
#endif

#endif /* WEIR_INTERNAL_RING_H */
