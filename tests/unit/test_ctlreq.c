/*
 * test_ctlreq.c - daemon/sys/ctlreq.c, the control socket's request
 * parser: whole and partial lines, options, and what it refuses; and
 * every prefix and every single-byte change of a valid request parsed
 * without reading past the bytes given.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "sys/ctlreq.h"

static int parse(const char *s, struct ctlreq *req)
{
    return ctlreq_parse(s, strlen(s), req);
}

static void test_valid(void **state)
{
    struct ctlreq req;

    (void)state;
    assert_int_equal(parse("status\n", &req), 7);
    assert_int_equal(req.verb, CTLREQ_STATUS);
    assert_false(req.json);
    assert_false(req.worst);
    assert_int_equal(parse("status json\n", &req), 12);
    assert_true(req.json);
    assert_int_equal(parse("  status\tworst  json \r\n", &req), 23);
    assert_true(req.json);
    assert_true(req.worst);
    /* What follows the line is not read. */
    assert_int_equal(parse("status\nbogus\n", &req), 7);
    /* weir top's terminal width. */
    assert_int_equal(parse("status worst width 80\n", &req), 22);
    assert_true(req.worst);
    assert_int_equal(req.width, 80);
    assert_int_equal(parse("status width 20 json\n", &req), 21);
    assert_int_equal(req.width, 20);
    assert_true(req.json);
}

static void test_partial(void **state)
{
    struct ctlreq req;
    char big[CTLREQ_MAX + 10];

    (void)state;
    assert_int_equal(parse("", &req), -EAGAIN);
    assert_int_equal(parse("stat", &req), -EAGAIN);
    memset(big, 's', sizeof(big));
    assert_int_equal(ctlreq_parse(big, CTLREQ_MAX - 1, &req), -EAGAIN);
    assert_int_equal(ctlreq_parse(big, CTLREQ_MAX, &req), -E2BIG);
    assert_int_equal(ctlreq_parse(big, sizeof(big), &req), -E2BIG);
    /* A newline past the bound does not count. */
    big[CTLREQ_MAX + 2] = '\n';
    assert_int_equal(ctlreq_parse(big, sizeof(big), &req), -E2BIG);
}

static void test_refused(void **state)
{
    struct ctlreq req;

    (void)state;
    assert_int_equal(parse("\n", &req), -EINVAL);
    assert_string_equal(req.err, "empty request");
    assert_int_equal(parse("   \r\n", &req), -EINVAL);
    assert_int_equal(parse("STATUS\n", &req), -EINVAL);
    assert_string_equal(req.err, "unknown request 'STATUS'");
    assert_int_equal(parse("status yaml\n", &req), -EINVAL);
    assert_string_equal(req.err, "unknown option 'yaml'");
    assert_int_equal(parse("json status\n", &req), -EINVAL);
    assert_int_equal(parse("status width\n", &req), -EINVAL);
    assert_string_equal(req.err, "width without a number");
    assert_int_equal(parse("status width 19\n", &req), -EINVAL);
    assert_string_equal(req.err, "width out of range '19'");
    assert_int_equal(parse("status width 10001\n", &req), -EINVAL);
    assert_int_equal(parse("status width 99999999999999999999999\n", &req),
                     -EINVAL);
    assert_int_equal(parse("status width 8x\n", &req), -EINVAL);
    assert_int_equal(parse("status width 80 90\n", &req), -EINVAL);
    assert_int_equal(ctlreq_parse("sta\0tus\n", 8, &req), -EINVAL);
    assert_string_equal(req.err, "a control character in the request");
    /* A word shown in the error is cut and made printable. */
    assert_int_equal(parse("status \x7f\xff"
                           "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\n",
                           &req),
                     -EINVAL);
    assert_int_equal(strlen(req.err), strlen("unknown option ''") + 32);
    assert_non_null(strstr(req.err, "'??aaa"));
}

/* Each prefix and each one-byte change of a request, in a buffer of
 * exactly its length (ASan sees a read past it). */
static void test_mutations(void **state)
{
    const char *good = "status json worst\n";
    size_t n = strlen(good);
    struct ctlreq req;

    (void)state;
    for (size_t len = 0; len <= n; len++) {
        char *b = malloc(len ? len : 1);
        int rc;

        assert_non_null(b);
        memcpy(b, good, len);
        rc = ctlreq_parse(b, len, &req);
        assert_int_equal(rc, len == n ? (int)n : -EAGAIN);
        for (size_t i = 0; i < len; i++)
            for (int v = 0; v < 256; v += 7) {
                char saved = b[i];

                b[i] = (char)v;
                rc = ctlreq_parse(b, len, &req);
                assert_true(rc == -EAGAIN || rc == -EINVAL || rc == -E2BIG ||
                            (rc > 0 && (size_t)rc <= len));
                b[i] = saved;
            }
        free(b);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_valid),
        cmocka_unit_test(test_partial),
        cmocka_unit_test(test_refused),
        cmocka_unit_test(test_mutations),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
