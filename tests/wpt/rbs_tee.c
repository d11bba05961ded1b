/*
 * WPT streams/readable-byte-streams/tee.any.js, ported to weir's C API.
 */
#include "wpt.h"

/* readable-byte-streams/tee.any.js: "ReadableStream teeing with byte
 * source: rs.tee() returns an array of two ReadableStreams" (byte-stream
 * branches, which serve BYOB reads) */
static void two_byte_branches(void **state)
{
    struct weir_readable_options o = {.byte_stream = true};
    struct weir_readable *rs;
    struct weir_tee *t;
    struct weir_reader r;
    struct weir_chunk c;
    struct done d = {0};
    uint8_t b[4];

    (void)state;
    assert_int_equal(weir_readable_create(&rs, NULL, NULL, &o), 0);
    assert_int_equal(weir_tee_create(&t, rs, 2, NULL), 0);
    assert_int_equal(weir_tee_branches(t), 2);
    for (unsigned i = 0; i < 2; i++) {
        assert_int_equal(weir_reader_acquire(&r, weir_tee_branch(t, i)), 0);
        assert_int_equal(
            weir_reader_read_byob(&r, b, sizeof(b), 1, &c, read_cb, &d),
            WEIR_PENDING);
        weir_reader_release(&r);
    }
    weir_tee_destroy(t);
    weir_readable_destroy(rs);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        WPT(two_byte_branches, "ReadableStream teeing with byte source: "
                               "rs.tee() returns an array of two "
                               "ReadableStreams"),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
