/*
 * pool.c - fixed-size buffer pools with lock-free return from other threads.
 *
 * The owner's free list is a plain LIFO stack: the most recently freed
 * buffer is the next one handed out, so its pages are the ones already
 * resident and warm in cache. Other threads never touch the stack; each has
 * its own return ring, sized to hold every buffer of the pool so a return
 * can never fail or block.
 */
#include <errno.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

#include "weir/pool.h"
#include "weir/ring.h"

struct weir_pool {
    unsigned owner;
    unsigned threads;
    uint32_t count;
    size_t buf_size;

    uint8_t *region;
    size_t region_len;
    struct weir_buf *bufs;

    struct weir_buf **free_stack; /* owner only */
    uint32_t free_top;
    /* Trimming (owner only): free_stack[0 .. clean_top) hold no pages;
     * no get has reached below idle_top since the last trim. */
    uint32_t clean_top;
    uint32_t idle_top;

    /* One return ring per thread slot; the owner's slot is unused. */
    struct weir_ring *returns;

    /* Written by the owner only, read by anyone (stats): relaxed. */
    _Atomic uint32_t in_use;
    _Atomic uint32_t peak;
    _Atomic uint64_t gets;
    _Atomic uint64_t empty;
    _Atomic uint64_t trimmed;
};

static uint32_t round_up_pow2(uint32_t v)
{
    uint32_t p = 1;

    while (p < v)
        p <<= 1;
    return p;
}

static void counter_set32(_Atomic uint32_t *c, uint32_t v)
{
    atomic_store_explicit(c, v, memory_order_relaxed);
}

static uint32_t counter_get32(const _Atomic uint32_t *c)
{
    return atomic_load_explicit(c, memory_order_relaxed);
}

static void counter_inc64(_Atomic uint64_t *c)
{
    /* Single writer: a load and a store, not an atomic increment. */
    atomic_store_explicit(c, atomic_load_explicit(c, memory_order_relaxed) + 1,
                          memory_order_relaxed);
}

static void pool_release_memory(struct weir_pool *p)
{
    if (p->returns) {
        for (unsigned t = 0; t < p->threads; t++)
            weir_ring_destroy(&p->returns[t]);
        free(p->returns);
    }
    if (p->region)
        munmap(p->region, p->region_len);
    free(p->bufs);
    free(p->free_stack);
    free(p);
}

int weir_pool_create(struct weir_pool **out,
                     const struct weir_pool_options *opts)
{
    size_t page = (size_t)sysconf(_SC_PAGESIZE);
    size_t buf_size =
        opts->buf_size ? opts->buf_size : WEIR_POOL_DEFAULT_BUF_SIZE;
    struct weir_pool *p;

    if (opts->count == 0 || opts->threads == 0 ||
        opts->owner >= opts->threads || opts->count > WEIR_SPSC_MAX_CAPACITY ||
        buf_size > UINT32_MAX)
        return -EINVAL;
    buf_size = (buf_size + page - 1) & ~(page - 1);

    p = calloc(1, sizeof(*p));
    if (!p)
        return -ENOMEM;
    p->owner = opts->owner;
    p->threads = opts->threads;
    p->count = opts->count;
    p->buf_size = buf_size;
    p->region_len = buf_size * opts->count;
    p->region = mmap(NULL, p->region_len, PROT_READ | PROT_WRITE,
                     MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p->region == MAP_FAILED) {
        p->region = NULL;
        pool_release_memory(p);
        return -ENOMEM;
    }
    p->bufs = calloc(opts->count, sizeof(*p->bufs));
    p->free_stack = calloc(opts->count, sizeof(*p->free_stack));
    p->returns = calloc(opts->threads, sizeof(*p->returns));
    if (!p->bufs || !p->free_stack || !p->returns) {
        pool_release_memory(p);
        return -ENOMEM;
    }
    for (unsigned t = 0; t < opts->threads; t++) {
        if (t == opts->owner)
            continue;
        if (weir_ring_create(&p->returns[t], round_up_pow2(opts->count))) {
            pool_release_memory(p);
            return -ENOMEM;
        }
    }
    /* Stack the buffers so the first get hands out buffer 0. */
    for (uint32_t i = 0; i < opts->count; i++) {
        struct weir_buf *b = &p->bufs[i];

        b->data = p->region + (size_t)i * buf_size;
        b->pool = p;
        b->index = i;
        atomic_init(&b->refs, 0);
        p->free_stack[opts->count - 1 - i] = b;
    }
    p->free_top = opts->count;
    p->clean_top = opts->count; /* never touched: nothing resident */
    p->idle_top = opts->count;
    *out = p;
    return 0;
}

int weir_pool_destroy(struct weir_pool *p)
{
    weir_pool_reclaim(p);
    if (counter_get32(&p->in_use) != 0)
        return -EBUSY;
    pool_release_memory(p);
    return 0;
}

static void pool_put_local(struct weir_pool *p, struct weir_buf *b)
{
    p->free_stack[p->free_top++] = b;
    counter_set32(&p->in_use, counter_get32(&p->in_use) - 1);
}

uint32_t weir_pool_reclaim(struct weir_pool *p)
{
    uint32_t total = 0;
    void *batch[64];

    for (unsigned t = 0; t < p->threads; t++) {
        uint32_t n;

        if (t == p->owner)
            continue;
        while ((n = weir_ring_pop_burst(&p->returns[t], batch, 64)) > 0) {
            for (uint32_t i = 0; i < n; i++)
                pool_put_local(p, batch[i]);
            total += n;
        }
    }
    return total;
}

int weir_pool_get(struct weir_pool *p, struct weir_buf **out)
{
    struct weir_buf *b;
    uint32_t in_use;

    if (p->free_top == 0 && weir_pool_reclaim(p) == 0) {
        counter_inc64(&p->empty);
        return -ENOBUFS;
    }
    b = p->free_stack[--p->free_top];
    if (p->free_top < p->clean_top)
        p->clean_top = p->free_top;
    if (p->free_top < p->idle_top)
        p->idle_top = p->free_top;
    /* Relaxed: the buffer is private to the owner until it is handed on,
     * and that handoff orders it. */
    atomic_store_explicit(&b->refs, 1, memory_order_relaxed);
    in_use = counter_get32(&p->in_use) + 1;
    counter_set32(&p->in_use, in_use);
    if (in_use > counter_get32(&p->peak))
        counter_set32(&p->peak, in_use);
    counter_inc64(&p->gets);
    *out = b;
    return 0;
}

void weir_pool_free_(struct weir_buf *b, unsigned self)
{
    struct weir_pool *p = b->pool;

    if (self == p->owner) {
        pool_put_local(p, b);
        return;
    }
    /* Cannot fail: the ring holds as many slots as the pool has buffers,
     * and a buffer is in at most one place at a time. */
    (void)weir_ring_push(&p->returns[self], b);
}

uint32_t weir_pool_trim(struct weir_pool *p, uint32_t keep)
{
    uint32_t end = p->idle_top, n = 0;

    weir_pool_reclaim(p);
    if (end + keep > p->free_top)
        end = p->free_top > keep ? p->free_top - keep : 0;
    for (uint32_t i = p->clean_top; i < end; i++) {
        /* DONTNEED, not FREE: the pages leave the RSS now, and a later
         * get finds zeroed pages, which is all a fresh buffer promises. */
        if (madvise(p->free_stack[i]->data, p->buf_size, MADV_DONTNEED) == 0)
            n++;
    }
    if (end > p->clean_top)
        p->clean_top = end;
    p->idle_top = p->free_top;
    if (n)
        atomic_store_explicit(
            &p->trimmed,
            atomic_load_explicit(&p->trimmed, memory_order_relaxed) + n,
            memory_order_relaxed);
    return n;
}

void weir_pool_stats(const struct weir_pool *p, struct weir_pool_stats *st)
{
    st->allocated = p->count;
    st->in_use = counter_get32(&p->in_use);
    st->peak = counter_get32(&p->peak);
    st->gets = atomic_load_explicit(&p->gets, memory_order_relaxed);
    st->empty = atomic_load_explicit(&p->empty, memory_order_relaxed);
    st->trimmed = atomic_load_explicit(&p->trimmed, memory_order_relaxed);
}

size_t weir_pool_buf_size(const struct weir_pool *p)
{
    return p->buf_size;
}

void *weir_pool_region(const struct weir_pool *p, size_t *len)
{
    *len = p->region_len;
    return p->region;
}
