/*
 * test_suggest.c - daemon/conf/suggest.c: the distance (optimal string
 * alignment, letters without case) and which candidate is offered.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>

#include <cmocka.h>

#include "conf/suggest.h"

static unsigned dist(const char *a, const char *b)
{
    return suggest_distance(a, strlen(a), b, strlen(b));
}

static void test_distance(void **state)
{
    (void)state;
    assert_int_equal(dist("", ""), 0);
    assert_int_equal(dist("", "abc"), 3);
    assert_int_equal(dist("abc", ""), 3);
    assert_int_equal(dist("sink", "sink"), 0);
    assert_int_equal(dist("SINK", "sink"), 0);
    assert_int_equal(dist("snk", "sink"), 1);   /* insertion */
    assert_int_equal(dist("sinks", "sink"), 1); /* deletion */
    assert_int_equal(dist("sunk", "sink"), 1);  /* substitution */
    assert_int_equal(dist("tpc", "tcp"), 1);    /* swap of neighbours */
    assert_int_equal(dist("deamon", "daemon"), 1);
    assert_int_equal(dist("kitten", "sitting"), 3);
    /* Optimal string alignment, not full Damerau: a swapped pair is not
     * edited again, so "ca" -> "abc" costs 3, not 2. */
    assert_int_equal(dist("ca", "abc"), 3);
    assert_int_equal(dist("udp", "tcp"), 2);
}

static void test_too_long(void **state)
{
    char lng[SUGGEST_MAX_LEN + 2];

    (void)state;
    memset(lng, 'a', sizeof(lng) - 1);
    lng[sizeof(lng) - 1] = '\0';
    assert_true(dist(lng, "a") > 2);
    assert_null(
        suggest_word(lng, strlen(lng), (const char *const[]){"a", NULL}));
}

static void test_word(void **state)
{
    static const char *const keys[] = {
        "source",     "sink",   "transform", "high_water_mark",
        "chunk_size", "follow", NULL};

    (void)state;
    assert_string_equal(suggest_word("snk", 3, keys), "sink");
    assert_string_equal(suggest_word("Source", 6, keys), "source");
    assert_string_equal(suggest_word("sorce", 5, keys), "source");
    assert_string_equal(suggest_word("chunksize", 9, keys), "chunk_size");
    assert_string_equal(suggest_word("high_water_makr", 15, keys),
                        "high_water_mark");
    /* A word given with its length: only its first len bytes count. */
    assert_string_equal(suggest_word("folow:yes", 5, keys), "follow");
    /* An exact match has nothing to suggest. */
    assert_null(suggest_word("sink", 4, keys));
    /* Three edits, or more than a third of a short word: no offer. */
    assert_null(suggest_word("src", 3, keys));
    assert_null(suggest_word("speed", 5, keys));
    assert_null(suggest_word("sk", 2, keys));
    assert_null(suggest_word("", 0, keys));
}

int main(void)
{
    static const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_distance),
        cmocka_unit_test(test_too_long),
        cmocka_unit_test(test_word),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
