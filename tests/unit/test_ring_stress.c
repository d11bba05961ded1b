/*
 * test_ring_stress.c - two threads move 10 million items through a 64-slot
 * ring with mixed single, burst and peek/commit operations; the consumer
 * checks that every item arrives exactly once and in order. Run under
 * ThreadSanitizer in CI, where a missing acquire/release pairing is a
 * report even if this machine's memory model would hide it.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>
#include <pthread.h>
#include <sched.h>

#include "weir/ring.h"

#define ITEMS 10000000u
#define SLOTS 64u

struct shared {
    struct weir_ring ring;
    uint64_t received;
    uint64_t out_of_order;
};

/* xorshift32: a cheap, deterministic stream of burst sizes. */
static uint32_t next_rand(uint32_t *s)
{
    *s ^= *s << 13;
    *s ^= *s >> 17;
    *s ^= *s << 5;
    return *s;
}

static void *producer(void *arg)
{
    struct shared *sh = arg;
    void *batch[32];
    uint32_t rnd = 0x9e3779b9u;
    uintptr_t next = 1; /* items are 1..ITEMS, never NULL */

    while (next <= ITEMS) {
        uint32_t want = next_rand(&rnd) % 32 + 1;

        if (want > ITEMS - next + 1)
            want = (uint32_t)(ITEMS - next + 1);
        if (want == 1) {
            if (weir_ring_push(&sh->ring, (void *)next) == 0)
                next++;
            else
                sched_yield();
            continue;
        }
        for (uint32_t i = 0; i < want; i++)
            batch[i] = (void *)(next + i);
        uint32_t put = weir_ring_push_burst(&sh->ring, batch, want);
        next += put;
        if (put == 0)
            sched_yield();
    }
    return NULL;
}

static void *consumer(void *arg)
{
    struct shared *sh = arg;
    void *batch[32];
    uint32_t rnd = 0x2545f491u;
    uintptr_t expect = 1;

    while (expect <= ITEMS) {
        uint32_t mode = next_rand(&rnd) % 3;
        uint32_t got = 0;

        if (mode == 0) {
            void *p = weir_ring_pop(&sh->ring);
            if (p) {
                batch[0] = p;
                got = 1;
            }
        } else if (mode == 1) {
            got =
                weir_ring_pop_burst(&sh->ring, batch, next_rand(&rnd) % 32 + 1);
        } else {
            /* Peek/commit: read in place, release afterwards. */
            uint32_t at;
            struct weir_spsc *s = &sh->ring.idx;
            got = weir_spsc_peek(s, next_rand(&rnd) % 32 + 1, &at);
            for (uint32_t i = 0; i < got; i++)
                batch[i] = sh->ring.slots[(at + i) & s->c_mask];
            if (got)
                weir_spsc_release(s, got);
        }
        if (got == 0) {
            sched_yield();
            continue;
        }
        for (uint32_t i = 0; i < got; i++) {
            if ((uintptr_t)batch[i] != expect)
                sh->out_of_order++;
            expect = (uintptr_t)batch[i] + 1;
        }
        sh->received += got;
    }
    return NULL;
}

static void ten_million_items_arrive_once_in_order(void **state)
{
    struct shared sh = {0};
    pthread_t p, c;

    (void)state;
    assert_int_equal(weir_ring_create(&sh.ring, SLOTS), 0);
    assert_int_equal(pthread_create(&c, NULL, consumer, &sh), 0);
    assert_int_equal(pthread_create(&p, NULL, producer, &sh), 0);
    pthread_join(p, NULL);
    pthread_join(c, NULL);
    assert_int_equal(sh.out_of_order, 0);
    assert_int_equal(sh.received, ITEMS);
    assert_true(weir_spsc_empty(&sh.ring.idx));
    weir_ring_destroy(&sh.ring);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(ten_million_items_arrive_once_in_order),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
