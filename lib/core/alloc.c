/*
 * alloc.c - counting wrappers around the process allocator.
 *
 * The counters are statistics only: nothing is published through them and
 * no decision on another thread reads them, so every access is relaxed. A
 * read-modify-write is needed because streams on different threads allocate
 * concurrently.
 */
#include <stdatomic.h>
#include <stdlib.h>

#include "alloc.h"
#include "weir/stream_types.h"

static _Atomic uint64_t n_allocs;
static _Atomic uint64_t n_frees;
static _Atomic uint64_t n_bytes;

static void count_alloc(size_t size)
{
    /* Relaxed: a statistic, ordered with nothing (see the file comment). */
    atomic_fetch_add_explicit(&n_allocs, 1, memory_order_relaxed);
    atomic_fetch_add_explicit(&n_bytes, size, memory_order_relaxed);
}

void *weir_core_alloc(size_t size)
{
    void *p = malloc(size);

    if (p)
        count_alloc(size);
    return p;
}

void *weir_core_zalloc(size_t size)
{
    void *p = calloc(1, size);

    if (p)
        count_alloc(size);
    return p;
}

void *weir_core_realloc(void *p, size_t size)
{
    void *q = realloc(p, size);

    if (q)
        count_alloc(size);
    return q;
}

void weir_core_free(void *p)
{
    if (!p)
        return;
    /* Relaxed: a statistic (see the file comment). */
    atomic_fetch_add_explicit(&n_frees, 1, memory_order_relaxed);
    free(p);
}

void weir_core_alloc_stats(struct weir_core_alloc_stats *st)
{
    /* Relaxed: a snapshot of statistics (see the file comment). */
    st->allocs = atomic_load_explicit(&n_allocs, memory_order_relaxed);
    st->frees = atomic_load_explicit(&n_frees, memory_order_relaxed);
    st->bytes = atomic_load_explicit(&n_bytes, memory_order_relaxed);
}
