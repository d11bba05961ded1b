/*
 * test_pool.c - the buffer pool: exhaustion answers -ENOBUFS, shared
 * references release once, buffers dropped on another thread come home
 * through the return ring, no buffer is ever lost, and trimming gives
 * idle buffers' pages back to the kernel.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>
#include <pthread.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "weir/pool.h"
#include "weir/ring.h"

static struct weir_pool *make_pool(uint32_t count, unsigned threads)
{
    struct weir_pool_options o = {
        .buf_size = 0, .count = count, .threads = threads, .owner = 0};
    struct weir_pool *p = NULL;

    assert_int_equal(weir_pool_create(&p, &o), 0);
    return p;
}

static void assert_all_home(struct weir_pool *p, uint32_t count)
{
    struct weir_pool_stats st;

    weir_pool_reclaim(p);
    weir_pool_stats(p, &st);
    assert_int_equal(st.allocated, count);
    assert_int_equal(st.in_use, 0);
}

static void options_are_checked(void **state)
{
    struct weir_pool *p;
    struct weir_pool_options o = {.count = 0, .threads = 1};

    (void)state;
    assert_int_equal(weir_pool_create(&p, &o), -EINVAL);
    o = (struct weir_pool_options){.count = 4, .threads = 2, .owner = 2};
    assert_int_equal(weir_pool_create(&p, &o), -EINVAL);
    o = (struct weir_pool_options){.count = 4, .threads = 0};
    assert_int_equal(weir_pool_create(&p, &o), -EINVAL);
}

static void buffers_are_page_aligned_and_sized(void **state)
{
    struct weir_pool_options o = {.buf_size = 1000, .count = 3, .threads = 1};
    struct weir_pool *p;
    struct weir_buf *b[3];
    size_t page = (size_t)sysconf(_SC_PAGESIZE), len;
    uint8_t *region;

    (void)state;
    assert_int_equal(weir_pool_create(&p, &o), 0);
    assert_int_equal(weir_pool_buf_size(p), page);
    region = weir_pool_region(p, &len);
    assert_int_equal(len, 3 * page);
    assert_int_equal((uintptr_t)region % page, 0);
    for (int i = 0; i < 3; i++) {
        assert_int_equal(weir_pool_get(p, &b[i]), 0);
        assert_int_equal((uintptr_t)b[i]->data % page, 0);
        assert_ptr_equal(b[i]->data, region + b[i]->index * page);
        memset(b[i]->data, 0xa5, page); /* the whole buffer is writable */
    }
    for (int i = 0; i < 3; i++)
        weir_buf_unref(b[i], 0);
    assert_int_equal(weir_pool_destroy(p), 0);
}

static void empty_pool_answers_enobufs(void **state)
{
    struct weir_pool *p = make_pool(4, 1);
    struct weir_buf *b[4], *extra = NULL;
    struct weir_pool_stats st;

    (void)state;
    for (int i = 0; i < 4; i++)
        assert_int_equal(weir_pool_get(p, &b[i]), 0);
    assert_int_equal(weir_pool_get(p, &extra), -ENOBUFS);
    assert_null(extra);
    assert_int_equal(weir_pool_get(p, &extra), -ENOBUFS);
    weir_pool_stats(p, &st);
    assert_int_equal(st.in_use, 4);
    assert_int_equal(st.peak, 4);
    assert_int_equal(st.gets, 4);
    assert_int_equal(st.empty, 2);
    /* One back, one more out. */
    weir_buf_unref(b[2], 0);
    assert_int_equal(weir_pool_get(p, &extra), 0);
    assert_ptr_equal(extra, b[2]); /* most recently freed goes out first */
    b[2] = extra;
    for (int i = 0; i < 4; i++)
        weir_buf_unref(b[i], 0);
    assert_all_home(p, 4);
    weir_pool_stats(p, &st);
    assert_int_equal(st.peak, 4);
    assert_int_equal(weir_pool_destroy(p), 0);
}

static void shared_buffer_returns_after_last_reference(void **state)
{
    struct weir_pool *p = make_pool(2, 1);
    struct weir_buf *b;
    struct weir_pool_stats st;

    (void)state;
    assert_int_equal(weir_pool_get(p, &b), 0);
    assert_int_equal(atomic_load(&b->refs), 1);
    weir_buf_ref(b); /* a tee of three branches */
    weir_buf_ref(b);
    assert_int_equal(atomic_load(&b->refs), 3);
    weir_buf_unref(b, 0);
    weir_buf_unref(b, 0);
    weir_pool_stats(p, &st);
    assert_int_equal(st.in_use, 1); /* one holder left */
    weir_buf_unref(b, 0);
    weir_pool_stats(p, &st);
    assert_int_equal(st.in_use, 0);
    assert_int_equal(weir_pool_destroy(p), 0);
}

static void destroy_refuses_while_buffers_are_out(void **state)
{
    struct weir_pool *p = make_pool(2, 1);
    struct weir_buf *b;

    (void)state;
    assert_int_equal(weir_pool_get(p, &b), 0);
    assert_int_equal(weir_pool_destroy(p), -EBUSY);
    weir_buf_unref(b, 0);
    assert_int_equal(weir_pool_destroy(p), 0);
}

/*
 * Cross-thread: the owner (slot 0) fills buffers and hands chunk
 * references to a worker (slot 1) through a ring; half of them are shared,
 * the owner keeping a reference too. The worker checks the bytes and drops
 * its references. Buffers must keep coming back through the return ring,
 * since the pool is far smaller than the number of handoffs.
 */
#define HANDOFFS  200000u
#define POOL_BUFS 16u

struct handoff {
    struct weir_ring to_worker;
    uint64_t bad;
};

static void *worker(void *arg)
{
    struct handoff *h = arg;
    uint32_t seen = 0;

    while (seen < HANDOFFS) {
        struct weir_buf *b = weir_ring_pop(&h->to_worker);

        if (!b) {
            sched_yield();
            continue;
        }
        uint32_t v;
        memcpy(&v, b->data, sizeof(v));
        if (v != seen)
            h->bad++;
        seen++;
        weir_buf_unref(b, 1);
    }
    return NULL;
}

static void buffers_come_home_from_another_thread(void **state)
{
    struct weir_pool *p = make_pool(POOL_BUFS, 2);
    struct handoff h = {0};
    struct weir_buf *shared[POOL_BUFS];
    uint32_t nshared = 0;
    pthread_t t;

    (void)state;
    assert_int_equal(weir_ring_create(&h.to_worker, 8), 0);
    assert_int_equal(pthread_create(&t, NULL, worker, &h), 0);
    for (uint32_t i = 0; i < HANDOFFS;) {
        struct weir_buf *b;

        if (weir_pool_get(p, &b) != 0) {
            /* Pool dry: drop the owner's shared references, wait for
             * the worker's to come back. */
            for (uint32_t k = 0; k < nshared; k++)
                weir_buf_unref(shared[k], 0);
            nshared = 0;
            sched_yield();
            continue;
        }
        memcpy(b->data, &i, sizeof(i));
        if (i % 2 == 0 && nshared < POOL_BUFS / 2) {
            weir_buf_ref(b);
            shared[nshared++] = b;
        }
        while (weir_ring_push(&h.to_worker, b) != 0)
            sched_yield();
        i++;
    }
    pthread_join(t, NULL);
    for (uint32_t k = 0; k < nshared; k++)
        weir_buf_unref(shared[k], 0);
    assert_int_equal(h.bad, 0);
    assert_all_home(p, POOL_BUFS);
    weir_ring_destroy(&h.to_worker);
    assert_int_equal(weir_pool_destroy(p), 0);
}

/* Buffers of p whose first page is resident. */
static uint32_t resident(struct weir_pool *p, uint32_t count)
{
    size_t len, bs = weir_pool_buf_size(p), page = (size_t)getpagesize();
    uint8_t *region = weir_pool_region(p, &len);
    unsigned char *vec = calloc(len / page, 1);
    uint32_t n = 0;

    assert_non_null(vec);
    assert_int_equal(mincore(region, len, vec), 0);
    for (uint32_t i = 0; i < count; i++)
        n += vec[i * bs / page] & 1;
    free(vec);
    return n;
}

static void trim_returns_idle_pages_and_keeps_the_hot_ones(void **state)
{
    struct weir_pool *p = make_pool(64, 1);
    struct weir_buf *b[64];
    struct weir_pool_stats st;

    (void)state;
    for (uint32_t i = 0; i < 64; i++) {
        assert_int_equal(weir_pool_get(p, &b[i]), 0);
        memset(b[i]->data, 0xa5, weir_pool_buf_size(p));
    }
    for (uint32_t i = 0; i < 64; i++)
        weir_buf_unref(b[i], 0);
    assert_int_equal(resident(p, 64), 64);
    /* Every buffer was in use since the pool began: none is idle yet. */
    assert_int_equal(weir_pool_trim(p, 4), 0);
    /* A whole period without a get: all but the 4 kept go back. */
    assert_int_equal(weir_pool_trim(p, 4), 60);
    assert_int_equal(resident(p, 64), 4);
    assert_int_equal(weir_pool_trim(p, 4), 0);
    /* The next gets take the kept ones first, then trimmed (zeroed) ones. */
    for (uint32_t i = 0; i < 10; i++) {
        assert_int_equal(weir_pool_get(p, &b[i]), 0);
        assert_int_equal(b[i]->data[0], i < 4 ? 0xa5 : 0);
        b[i]->data[0] = 1;
    }
    for (uint32_t i = 0; i < 10; i++)
        weir_buf_unref(b[i], 0);
    assert_int_equal(resident(p, 64), 10);
    assert_int_equal(weir_pool_trim(p, 4), 0); /* they were used */
    assert_int_equal(weir_pool_trim(p, 4), 6);
    assert_int_equal(resident(p, 64), 4);
    weir_pool_stats(p, &st);
    assert_int_equal(st.trimmed, 66);
    assert_int_equal(weir_pool_destroy(p), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(options_are_checked),
        cmocka_unit_test(buffers_are_page_aligned_and_sized),
        cmocka_unit_test(empty_pool_answers_enobufs),
        cmocka_unit_test(shared_buffer_returns_after_last_reference),
        cmocka_unit_test(destroy_refuses_while_buffers_are_out),
        cmocka_unit_test(buffers_come_home_from_another_thread),
        cmocka_unit_test(trim_returns_idle_pages_and_keeps_the_hot_ones),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
