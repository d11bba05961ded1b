/*
 * queue.h - the stream core's growable FIFO of fixed-size entries (chunks,
 * read requests, write requests).
 *
 * One thread only (the stream's). A queue starts with no storage at all:
 * creating a stream or acquiring a reader costs no allocation, and the
 * storage materialises when the first entry parks. It then doubles when
 * full and never shrinks, so a steady flow stops allocating once the queue
 * has reached its working size. Indices run free and are masked on use;
 * the capacity is a power of two.
 *
 * A queue may also start on a few slots of storage its owner embeds
 * (borrowed): a stream that never holds more than that never allocates
 * for its queue at all.
 *
 * The entry size is a parameter of each inline helper rather than a field,
 * so each call site's constant folds into the index arithmetic.
 */
#ifndef WEIR_CORE_QUEUE_H
#define WEIR_CORE_QUEUE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "weir/internal/stream_types.h" /* struct weir_q */

/* Makes room for at least one more entry: first storage (`first` entries,
 * rounded up to a power of two) or a doubling. Returns 0 or -ENOMEM. */
int weir_q_grow(struct weir_q *q, size_t esz, uint32_t first);

/* Frees the storage; the queue must be dropped or empty of references. */
void weir_q_fini(struct weir_q *q);

static inline uint32_t weir_q_len(const struct weir_q *q)
{
    return q->tail - q->head;
}

static inline bool weir_q_empty(const struct weir_q *q)
{
    return q->tail == q->head;
}

static inline void *weir_q_at(const struct weir_q *q, size_t esz, uint32_t i)
{
    return q->slots + (size_t)(i & (q->cap - 1)) * esz;
}

/* The slot for a new last entry, or NULL when growing failed. */
static inline void *weir_q_push(struct weir_q *q, size_t esz, uint32_t first)
{
    if (weir_q_len(q) == q->cap && weir_q_grow(q, esz, first))
        return NULL;
    return weir_q_at(q, esz, q->tail++);
}

/* The slot for a new first entry (a request that must keep its place in
 * line), or NULL when growing failed. */
static inline void *weir_q_unshift(struct weir_q *q, size_t esz, uint32_t first)
{
    if (weir_q_len(q) == q->cap && weir_q_grow(q, esz, first))
        return NULL;
    return weir_q_at(q, esz, --q->head);
}

/* The first entry; the queue must not be empty. */
static inline void *weir_q_front(const struct weir_q *q, size_t esz)
{
    return weir_q_at(q, esz, q->head);
}

/* Takes the first entry off; its slot stays readable until the next
 * push. */
static inline void *weir_q_pop(struct weir_q *q, size_t esz)
{
    return weir_q_at(q, esz, q->head++);
}

#endif /* WEIR_CORE_QUEUE_H */
