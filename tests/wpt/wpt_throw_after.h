/*
 * wpt_throw_after.h - templatedRSThrowAfterCloseOrError of WPT's
 * streams/resources/rs-test-templates.js, which both templated.any.js
 * files (readable-streams/ and readable-byte-streams/) run: the
 * controller's enqueue() and close() fail once the stream is closing or
 * errored. A failed enqueue or close is -EINVAL here (departure "errors
 * in place of TypeError").
 */
#ifndef WEIR_TESTS_WPT_THROW_AFTER_H
#define WEIR_TESTS_WPT_THROW_AFTER_H

#include "wpt.h"

enum throw_after {
    ENQUEUE_AFTER_CLOSE,
    ENQUEUE_AFTER_ENQUEUE_CLOSE,
    ENQUEUE_AFTER_ERROR,
    CLOSE_AFTER_ERROR,
};

static inline void throw_after_close_or_error(enum throw_after which,
                                              bool bytes)
{
    static uint8_t one[1] = {1}, two[1] = {2};
    struct weir_readable_options o = {.byte_stream = bytes};
    struct weir_readable *rs;

    assert_int_equal(weir_readable_create(&rs, NULL, NULL, &o), 0);
    switch (which) {
    case ENQUEUE_AFTER_CLOSE:
        assert_int_equal(weir_readable_close(rs), 0);
        assert_int_equal(
            weir_readable_enqueue(rs, (struct weir_chunk){NULL, one, 1}),
            -EINVAL);
        break;
    case ENQUEUE_AFTER_ENQUEUE_CLOSE:
        assert_int_equal(
            weir_readable_enqueue(rs, (struct weir_chunk){NULL, one, 1}), 0);
        assert_int_equal(weir_readable_close(rs), 0);
        assert_int_equal(
            weir_readable_enqueue(rs, (struct weir_chunk){NULL, two, 1}),
            -EINVAL);
        break;
    case ENQUEUE_AFTER_ERROR:
        weir_readable_error(rs, E1);
        assert_int_equal(
            weir_readable_enqueue(rs, (struct weir_chunk){NULL, one, 1}),
            -EINVAL);
        break;
    case CLOSE_AFTER_ERROR:
        weir_readable_error(rs, E1);
        assert_int_equal(weir_readable_close(rs), -EINVAL);
        break;
    }
    weir_readable_destroy(rs);
}

/* The four cases as cmocka tests, for a plain (bytes false) or byte
 * stream. */
#define THROW_AFTER_TESTS(prefix, bytes)                                       \
    static void prefix##_enqueue_after_close(void **state)                     \
    {                                                                          \
        (void)state;                                                           \
        throw_after_close_or_error(ENQUEUE_AFTER_CLOSE, bytes);                \
    }                                                                          \
    static void prefix##_enqueue_after_enqueue_close(void **state)             \
    {                                                                          \
        (void)state;                                                           \
        throw_after_close_or_error(ENQUEUE_AFTER_ENQUEUE_CLOSE, bytes);        \
    }                                                                          \
    static void prefix##_enqueue_after_error(void **state)                     \
    {                                                                          \
        (void)state;                                                           \
        throw_after_close_or_error(ENQUEUE_AFTER_ERROR, bytes);                \
    }                                                                          \
    static void prefix##_close_after_error(void **state)                       \
    {                                                                          \
        (void)state;                                                           \
        throw_after_close_or_error(CLOSE_AFTER_ERROR, bytes);                  \
    }

/* Their table entries, titled as the WPT's. */
#define THROW_AFTER_ENTRIES(prefix, label)                                     \
    WPT(prefix##_enqueue_after_close,                                          \
        label ": enqueue() throws after close()"),                             \
        WPT(prefix##_enqueue_after_enqueue_close,                              \
            label ": enqueue() throws after enqueue() and close()"),           \
        WPT(prefix##_enqueue_after_error,                                      \
            label ": enqueue() throws after error()"),                         \
        WPT(prefix##_close_after_error,                                        \
            label ": close() throws after error()")

#endif /* WEIR_TESTS_WPT_THROW_AFTER_H */
