/*
 * test_ring.c - single-threaded edges of the SPSC ring: empty and full,
 * partial bursts, wraparound of the free-running indices, peek/commit.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include "weir/ring.h"

#define CAP 8

static void *item(uintptr_t v)
{
    return (void *)(v + 1); /* never NULL */
}

static uintptr_t value(void *p)
{
    return (uintptr_t)p - 1;
}

static void init_rejects_non_power_of_two(void **state)
{
    struct weir_spsc s;

    (void)state;
    assert_int_equal(weir_spsc_init(&s, 0), -EINVAL);
    assert_int_equal(weir_spsc_init(&s, 3), -EINVAL);
    assert_int_equal(weir_spsc_init(&s, 1000), -EINVAL);
    assert_int_equal(weir_spsc_init(&s, UINT32_MAX), -EINVAL);
    assert_int_equal(weir_spsc_init(&s, 1), 0);
    assert_int_equal(weir_spsc_init(&s, 1024), 0);
    assert_int_equal(weir_spsc_init(&s, WEIR_SPSC_MAX_CAPACITY), 0);
}

static void pop_from_empty_returns_null(void **state)
{
    struct weir_ring r;
    void *slots[CAP];
    void *out[4];

    (void)state;
    assert_int_equal(weir_ring_init(&r, slots, CAP), 0);
    assert_true(weir_spsc_empty(&r.idx));
    assert_null(weir_ring_pop(&r));
    assert_int_equal(weir_ring_pop_burst(&r, out, 4), 0);
    assert_int_equal(weir_spsc_count(&r.idx), 0);
    assert_int_equal(weir_spsc_free(&r.idx), CAP);
}

static void push_to_full_fails_and_keeps_contents(void **state)
{
    struct weir_ring r;
    void *slots[CAP];

    (void)state;
    weir_ring_init(&r, slots, CAP);
    for (uintptr_t i = 0; i < CAP; i++)
        assert_int_equal(weir_ring_push(&r, item(i)), 0);
    assert_int_equal(weir_spsc_free(&r.idx), 0);
    assert_int_equal(weir_ring_push(&r, item(99)), -ENOBUFS);
    assert_int_equal(weir_spsc_count(&r.idx), CAP);
    for (uintptr_t i = 0; i < CAP; i++)
        assert_int_equal(value(weir_ring_pop(&r)), i);
    assert_null(weir_ring_pop(&r));
}

static void burst_push_partial_success(void **state)
{
    struct weir_ring r;
    void *slots[CAP];
    void *in[CAP + 4];
    void *out[CAP + 4];

    (void)state;
    weir_ring_init(&r, slots, CAP);
    for (uintptr_t i = 0; i < CAP + 4; i++)
        in[i] = item(i);
    assert_int_equal(weir_ring_push_burst(&r, in, 5), 5);
    /* 3 slots left: a burst of 7 puts in exactly the first 3. */
    assert_int_equal(weir_ring_push_burst(&r, in + 5, 7), 3);
    assert_int_equal(weir_ring_push_burst(&r, in, 1), 0);
    /* Partial pop: ask for more than is there. */
    assert_int_equal(weir_ring_pop_burst(&r, out, 3), 3);
    assert_int_equal(weir_ring_pop_burst(&r, out + 3, CAP + 4), 5);
    for (uintptr_t i = 0; i < CAP; i++)
        assert_int_equal(value(out[i]), i);
}

static void indices_wrap_around_uint32(void **state)
{
    struct weir_ring r;
    void *slots[CAP];
    void *in[3], *out[3];
    uintptr_t next_in = 0, next_out = 0;

    (void)state;
    /* Start a few slots short of the top of uint32_t, then run far past
     * it: counts, free space and order must hold across the wrap. */
    r.slots = slots;
    r.owns_slots = false;
    assert_int_equal(weir_spsc_init_at(&r.idx, CAP, UINT32_MAX - 5), 0);
    for (int round = 0; round < 100; round++) {
        for (int i = 0; i < 3; i++)
            in[i] = item(next_in++);
        assert_int_equal(weir_ring_push_burst(&r, in, 3), 3);
        assert_int_equal(weir_spsc_count(&r.idx), 3);
        assert_int_equal(weir_spsc_free(&r.idx), CAP - 3);
        assert_int_equal(weir_ring_pop_burst(&r, out, 3), 3);
        for (int i = 0; i < 3; i++)
            assert_int_equal(value(out[i]), next_out++);
    }
    /* The tail itself wrapped: it now sits below where it started. */
    assert_true(atomic_load(&r.idx.tail) < UINT32_MAX - 5);
    /* Fill to the brim across the wrap. */
    assert_int_equal(weir_spsc_init_at(&r.idx, CAP, UINT32_MAX - 2), 0);
    for (uintptr_t i = 0; i < CAP; i++)
        assert_int_equal(weir_ring_push(&r, item(i)), 0);
    assert_int_equal(weir_ring_push(&r, item(0)), -ENOBUFS);
    assert_int_equal(weir_spsc_count(&r.idx), CAP);
    for (uintptr_t i = 0; i < CAP; i++)
        assert_int_equal(value(weir_ring_pop(&r)), i);
    assert_true(weir_spsc_empty(&r.idx));
}

struct record {
    uint64_t seq;
    uint32_t len;
};

static void peek_commit_works_in_place(void **state)
{
    struct weir_spsc s;
    struct record store[CAP];
    uint32_t at, n;

    (void)state;
    /* Typed storage of the caller's own: records, not pointers. */
    assert_int_equal(weir_spsc_init_at(&s, CAP, UINT32_MAX - 1), 0);
    n = weir_spsc_reserve(&s, 6, &at);
    assert_int_equal(n, 6);
    for (uint32_t i = 0; i < n; i++)
        store[(at + i) & s.p_mask] = (struct record){i, 10 * i};
    /* Nothing is visible before publish. */
    assert_int_equal(weir_spsc_peek(&s, CAP, &at), 0);
    weir_spsc_publish(&s, n);

    /* Peek does not consume: two peeks see the same entries. */
    assert_int_equal(weir_spsc_peek(&s, 4, &at), 4);
    assert_int_equal(weir_spsc_peek(&s, 4, &at), 4);
    /* Modify in place, release two of the four. */
    for (uint32_t i = 0; i < 4; i++)
        store[(at + i) & s.c_mask].len += 1;
    weir_spsc_release(&s, 2);
    assert_int_equal(weir_spsc_count(&s), 4);

    /* The two unreleased entries keep their in-place change. */
    n = weir_spsc_peek(&s, CAP, &at);
    assert_int_equal(n, 4);
    assert_int_equal(store[at & s.c_mask].seq, 2);
    assert_int_equal(store[at & s.c_mask].len, 21);
    assert_int_equal(store[(at + 1) & s.c_mask].len, 31);
    assert_int_equal(store[(at + 2) & s.c_mask].len, 40);
    weir_spsc_release(&s, n);
    assert_true(weir_spsc_empty(&s));

    /* Reserve does not publish: reserved-but-unpublished space is reused
     * by the next reserve. */
    assert_int_equal(weir_spsc_reserve(&s, 3, &at), 3);
    assert_int_equal(weir_spsc_reserve(&s, CAP, &at), CAP);
}

static void created_ring_round_trips(void **state)
{
    struct weir_ring r;

    (void)state;
    assert_int_equal(weir_ring_create(&r, 100), -EINVAL);
    assert_int_equal(weir_ring_create(&r, 1024), 0);
    assert_int_equal(weir_spsc_capacity(&r.idx), 1024);
    for (uintptr_t i = 0; i < 1024; i++)
        assert_int_equal(weir_ring_push(&r, item(i)), 0);
    assert_int_equal(weir_ring_push(&r, item(0)), -ENOBUFS);
    for (uintptr_t i = 0; i < 1024; i++)
        assert_int_equal(value(weir_ring_pop(&r)), i);
    weir_ring_destroy(&r);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(init_rejects_non_power_of_two),
        cmocka_unit_test(pop_from_empty_returns_null),
        cmocka_unit_test(push_to_full_fails_and_keeps_contents),
        cmocka_unit_test(burst_push_partial_success),
        cmocka_unit_test(indices_wrap_around_uint32),
        cmocka_unit_test(peek_commit_works_in_place),
        cmocka_unit_test(created_ring_round_trips),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
