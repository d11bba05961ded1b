/*
 * alloc.h - the stream core's one door to the heap. Every allocation of
 * lib/core's streams goes through these, so weir_core_alloc_stats can tell
 * a test whether a steady flow allocates (it must not).
 */
#ifndef WEIR_CORE_ALLOC_H
#define WEIR_CORE_ALLOC_H

#include <stddef.h>

/* Uninitialised, for storage whose every byte is written before it is
 * read (queue slots). */
void *weir_core_alloc(size_t size);
void *weir_core_zalloc(size_t size);
void *weir_core_realloc(void *p, size_t size);
void weir_core_free(void *p);

#endif /* WEIR_CORE_ALLOC_H */
