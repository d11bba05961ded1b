/*
 * weir/pool.h - per-thread pools of fixed-size buffers, and chunks.
 *
 * A pool belongs to one thread, its owner, which alone takes buffers from it.
 * The owner's free list is private, so taking and returning a buffer on the
 * owner thread is a few plain loads and stores. A buffer may travel to other
 * threads (a channel carries chunk references across); when the last
 * reference is dropped there, the buffer goes home through a return ring
 * kept for that thread, a lock-free SPSC ring with that thread as producer
 * and the owner as consumer. The owner drains the return rings when its free
 * list runs dry, or when asked to (weir_pool_reclaim).
 *
 * Threads are named by a small integer slot, 0 .. threads-1, that the
 * caller assigns (a worker's index). The owner is one of them.
 *
 * All buffers of a pool sit in one page-aligned region, each buffer
 * page-aligned inside it, so the region can be registered with io_uring as
 * fixed buffers (weir_pool_region). The region is reserved with mmap and
 * committed by the kernel as pages are first touched; buffers are reused
 * most recently freed first, so the pool's resident size follows the peak
 * number of buffers in use, not the pool's capacity.
 */
#ifndef WEIR_POOL_H
#define WEIR_POOL_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "weir/internal/pool.h"

#ifdef __cplusplus
extern "C" {
#endif

struct weir_pool;

#define WEIR_POOL_DEFAULT_BUF_SIZE (64u * 1024u)

struct weir_buf {
    uint8_t *data;          /* buf_size bytes, page-aligned */
    struct weir_pool *pool; /* the owning pool */
    _Atomic uint32_t refs;  /* 1 while unshared; see weir_buf_ref */
    uint32_t index;         /* position in the pool's region */
};

/*
 * A chunk is a reference to bytes: `len` bytes at `data`, inside `buf` when
 * the bytes live in a pool buffer (then the chunk owns one reference to
 * buf), or with buf == NULL for memory the producer keeps alive by other
 * means (a constant, a caller's array). Chunks are values: copying one does
 * not take a reference; weir_chunk_ref and weir_chunk_unref do.
 */
struct weir_chunk {
    struct weir_buf *buf;
    uint8_t *data;
    uint32_t len;
};

/* The chunk of the first `len` bytes of a freshly taken buffer. */
static inline struct weir_chunk weir_chunk_of(struct weir_buf *b, uint32_t len)
{
    return (struct weir_chunk){.buf = b, .data = b->data, .len = len};
}

struct weir_pool_options {
    size_t buf_size;  /* bytes per buffer; 0 means the default, 64 KiB.
                         Rounded up to the page size. */
    uint32_t count;   /* number of buffers, >= 1 */
    unsigned threads; /* thread slots that may drop references, >= 1 */
    unsigned owner;   /* the owner's slot, < threads */
};

struct weir_pool_stats {
    uint32_t allocated; /* buffers the pool holds in all */
    uint32_t in_use;    /* taken and not yet back on the free list */
    uint32_t peak;      /* highest in_use seen */
    uint64_t gets;      /* successful weir_pool_get calls */
    uint64_t empty;     /* weir_pool_get calls answered -ENOBUFS */
    uint64_t trimmed;   /* buffers whose pages weir_pool_trim gave back */
};

/* Any thread (then handed to the owner). Creates a pool. Returns 0,
 * -EINVAL for bad options, -ENOMEM. */
int weir_pool_create(struct weir_pool **out,
                     const struct weir_pool_options *opts);

/* Owner. Frees the pool. Every buffer must have come back (in_use == 0
 * after weir_pool_reclaim); otherwise returns -EBUSY and frees nothing. */
int weir_pool_destroy(struct weir_pool *p);

/*
 * Owner. Takes a buffer with one reference. Returns 0 and sets *out, or
 * -ENOBUFS when every buffer is in use (after draining the return rings).
 * An empty pool is a normal condition for backpressure, never a crash.
 */
int weir_pool_get(struct weir_pool *p, struct weir_buf **out);

/* Owner. Moves buffers that other threads returned onto the free list.
 * Returns how many came back. */
uint32_t weir_pool_reclaim(struct weir_pool *p);

/*
 * Any thread holding a reference. Adds one, for sharing the buffer (tee).
 * Unshared buffers never pay for an atomic read-modify-write; only the
 * sharing itself does.
 */
static inline void weir_buf_ref(struct weir_buf *b)
{
    /* Relaxed: the caller already holds a reference, so the buffer cannot
     * be freed concurrently; ordering with the data is the job of whatever
     * hands the new reference to another thread. */
    atomic_fetch_add_explicit(&b->refs, 1, memory_order_relaxed);
}

/*
 * Any thread holding a reference; `self` is the caller's thread slot.
 * Drops one reference; the last one returns the buffer to its pool (to the
 * free list on the owner, through self's return ring elsewhere).
 */
static inline void weir_buf_unref(struct weir_buf *b, unsigned self)
{
    /* Acquire pairs with the release half of other holders' decrements
     * below: their accesses to the data happen before the buffer is
     * reused. Seeing 1 means no one else holds a reference, and no one
     * can take one, so no read-modify-write is needed. */
    if (atomic_load_explicit(&b->refs, memory_order_acquire) == 1 ||
        atomic_fetch_sub_explicit(&b->refs, 1, memory_order_acq_rel) == 1)
        weir_pool_free_(b, self);
}

/* Any thread holding the chunk. Takes one more reference (for sharing). */
static inline void weir_chunk_ref(const struct weir_chunk *c)
{
    if (c->buf)
        weir_buf_ref(c->buf);
}

/* Any thread holding the chunk; `self` is the caller's thread slot. Drops
 * the chunk's reference, if it has one. */
static inline void weir_chunk_unref(const struct weir_chunk *c, unsigned self)
{
    if (c->buf)
        weir_buf_unref(c->buf, self);
}

/*
 * Owner. Gives the pages of idle buffers back to the kernel: the free
 * buffers that no weir_pool_get reached since the previous trim, except
 * the `keep` most recently freed. Called on a timer, it returns the pool's
 * memory beyond its working set within two periods after a burst; a later
 * get of a trimmed buffer faults in zeroed pages. Not for a region
 * registered with io_uring (the kernel pins those pages). Returns how many
 * buffers it trimmed.
 */
uint32_t weir_pool_trim(struct weir_pool *p, uint32_t keep);

/* Any thread. Reads the counters; exact on the owner after reclaim,
 * a recent snapshot elsewhere. */
void weir_pool_stats(const struct weir_pool *p, struct weir_pool_stats *st);

/* Any thread. The bytes of one buffer (page-rounded buf_size). */
size_t weir_pool_buf_size(const struct weir_pool *p);

/* Any thread. The region holding every buffer, for io_uring fixed-buffer
 * registration: buffer i starts at region + i * buf_size. */
void *weir_pool_region(const struct weir_pool *p, size_t *len);

#ifdef __cplusplus
}
#endif

#endif /* WEIR_POOL_H */
