/*
 * test_endpoint_ledger.c - the kafka and jetstream sinks' records and
 * ledger (lib/io/endpoint_ledger.c): lines cut whatever the feeds' sizes,
 * a long line cut at max, a refused record held and offered again with
 * nothing after it taken; reports in any order moving the acknowledged
 * offset over the done prefix only, across the ring's growth and wrap;
 * records found by offset.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "endpoint_ledger.h"

struct got {
    char buf[4096];
    size_t len;
    uint64_t in; /* input bytes the records stood for */
    unsigned n;
    unsigned refuse; /* refuse the next this many offers */
};

static int take(void *arg, const uint8_t *p, size_t n, uint64_t in_len)
{
    struct got *g = arg;

    if (g->refuse) {
        g->refuse--;
        return -EAGAIN;
    }
    memcpy(g->buf + g->len, p, n);
    g->len += n;
    g->buf[g->len++] = '|';
    g->in += in_len;
    g->n++;
    return 0;
}

/* Every split of the input gives the same records. */
static void test_cut_any_feeds(void **state)
{
    const char *in = "alpha\nbe\n\ngamma delta\nlast";

    (void)state;
    for (size_t step = 1; step <= strlen(in); step++) {
        struct lcut c = {.max = 64};
        struct got g = {0};
        size_t used;

        for (size_t off = 0; off < strlen(in); off += step) {
            size_t n = strlen(in) - off < step ? strlen(in) - off : step;

            assert_int_equal(weir__lcut_feed(&c, (const uint8_t *)in + off, n,
                                             take, &g, &used),
                             0);
            assert_int_equal(used, n);
        }
        assert_int_equal(weir__lcut_finish(&c, take, &g), 0);
        g.buf[g.len] = '\0';
        assert_string_equal(g.buf, "alpha|be||gamma delta|last|");
        assert_int_equal(g.in, strlen(in));
        weir__lcut_free(&c);
    }
}

static void test_cut_long_line(void **state)
{
    struct lcut c = {.max = 4};
    struct got g = {0};
    size_t used;

    (void)state;
    assert_int_equal(weir__lcut_feed(&c, (const uint8_t *)"abcdefghij\nk\n", 13,
                                     take, &g, &used),
                     0);
    g.buf[g.len] = '\0';
    assert_string_equal(g.buf, "abcd|efgh|ij|k|");
    assert_int_equal(g.in, 13);
    weir__lcut_free(&c);
}

/* A refused record is held whole; what follows it is not taken until it
 * is, so the order holds. */
static void test_cut_hold(void **state)
{
    struct lcut c = {.max = 64};
    struct got g = {.refuse = 1};
    const char *in = "one\ntwo\nthree\n";
    size_t used;

    (void)state;
    assert_int_equal(
        weir__lcut_feed(&c, (const uint8_t *)in, strlen(in), take, &g, &used),
        -EAGAIN);
    assert_int_equal(used, 4); /* "one\n", held */
    assert_true(c.held);
    g.refuse = 1;
    assert_int_equal(weir__lcut_retry(&c, take, &g), -EAGAIN);
    assert_int_equal(weir__lcut_retry(&c, take, &g), 0);
    assert_false(c.held);
    assert_int_equal(weir__lcut_feed(&c, (const uint8_t *)in + used,
                                     strlen(in) - used, take, &g, &used),
                     0);
    g.buf[g.len] = '\0';
    assert_string_equal(g.buf, "one|two|three|");
    assert_int_equal(g.in, strlen(in));
    weir__lcut_free(&c);
}

/* Reports in reverse and shuffled: the offset moves only when the
 * oldest is done, through growth and wrap of the ring. */
static void test_ledger_order(void **state)
{
    struct ledger l = {0};
    uint64_t seq, end = 0, acked = 0;
    enum { N = 5000 };
    uint64_t *seqs = malloc(N * sizeof(*seqs));

    (void)state;
    for (int round = 0; round < 3; round++) {
        for (int i = 0; i < N; i++) {
            end += 10 + (uint64_t)(i % 7);
            assert_int_equal(weir__ledger_push(&l, end, false, &seqs[i]), 0);
        }
        /* Every record but the first, from the last back. */
        for (int i = N - 1; i >= 1; i--)
            assert_int_equal(weir__ledger_done(&l, seqs[i]), 0);
        assert_int_equal(l.acked, acked);
        assert_int_equal(ledger_out(&l), N);
        assert_int_equal(weir__ledger_done(&l, seqs[0]), end - acked);
        acked = end;
        assert_int_equal(l.acked, end);
        assert_int_equal(ledger_out(&l), 0);
    }
    /* A record already done, or unknown: nothing moves. */
    assert_int_equal(weir__ledger_done(&l, seqs[0]), 0);
    assert_int_equal(weir__ledger_push(&l, end + 5, true, &seq), 0);
    assert_int_equal(weir__ledger_done(&l, seq), 5);
    free(seqs);
    weir__ledger_free(&l);
}

static void test_ledger_find(void **state)
{
    struct ledger l = {0};
    uint64_t s[4], got;

    (void)state;
    assert_int_equal(weir__ledger_push(&l, 10, false, &s[0]), 0);
    assert_int_equal(weir__ledger_push(&l, 25, false, &s[1]), 0);
    assert_int_equal(weir__ledger_push(&l, 26, false, &s[2]), 0);
    assert_int_equal(weir__ledger_push(&l, 40, false, &s[3]), 0);
    assert_true(weir__ledger_find(&l, 0, &got));
    assert_int_equal(got, s[0]);
    assert_true(weir__ledger_find(&l, 10, &got));
    assert_int_equal(got, s[1]);
    assert_true(weir__ledger_find(&l, 25, &got));
    assert_int_equal(got, s[2]);
    assert_true(weir__ledger_find(&l, 39, &got));
    assert_int_equal(got, s[3]);
    assert_false(weir__ledger_find(&l, 40, &got));
    weir__ledger_done(&l, s[1]);
    assert_false(weir__ledger_find(&l, 10, &got)); /* done already */
    weir__ledger_done(&l, s[0]);
    assert_int_equal(l.acked, 25);
    assert_false(weir__ledger_find(&l, 0, &got)); /* acknowledged */
    weir__ledger_free(&l);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_cut_any_feeds),
        cmocka_unit_test(test_cut_long_line),
        cmocka_unit_test(test_cut_hold),
        cmocka_unit_test(test_ledger_order),
        cmocka_unit_test(test_ledger_find),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
