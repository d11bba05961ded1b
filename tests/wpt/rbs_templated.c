/*
 * WPT streams/readable-byte-streams/templated.any.js, ported to weir's C
 * API: templatedRSThrowAfterCloseOrError on a byte stream.
 */
#include "wpt_throw_after.h"

THROW_AFTER_TESTS(bytes, true)

int main(void)
{
    const struct CMUnitTest tests[] = {
        THROW_AFTER_ENTRIES(bytes, "ReadableStream with byte source"),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
