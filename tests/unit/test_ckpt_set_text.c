/*
 * test_ckpt_set_text.c - a glob source's checkpoint file as text: what
 * is written reads back the same, whatever the paths hold (spaces, a
 * newline, backslashes, thousands of bytes), and a file damaged or not
 * weir's is refused whole.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "sys/ckpt_set_text.h"

static void test_round_trip(void **state)
{
    char *long_path = malloc(5001), *text;
    struct ckpt_set_entry in[4] =
        {
            {0x0123456789abcdefull, 256, 2049, 131, 4096, 1796558400,
             "/var/log/a.log"},
            {0, 256, 64769, 7, 0, 0, "/var/log/with space\nand newline\\x.log"},
            {UINT64_MAX, 64, UINT64_MAX, UINT64_MAX, UINT64_MAX, 4102444799,
             "/\x01\x7f\xff"},
            {42, 256, 1, 2, 3, 1796558400, long_path},
        },
                          *out = NULL;
    size_t size = CKPT_SET_HEADER_MAX(3), len;
    int n;

    (void)state;
    assert_non_null(long_path);
    memset(long_path, 'p', 5000);
    long_path[0] = '/';
    long_path[5000] = '\0';
    for (int i = 0; i < 4; i++)
        size += CKPT_SET_LINE_MAX(strlen(in[i].path));
    text = malloc(size);
    assert_non_null(text);
    len = ckpt_set_text_header("app", 1796558400, text, size);
    assert_string_equal(text, "# weir file checkpoints for pipeline app, "
                              "written 2026-12-06T12:00:00Z\n");
    for (int i = 0; i < 4; i++)
        len += ckpt_set_text_line(&in[i], text + len, size - len);
    assert_true(len < size);
    /* One line a file: a newline in a name does not end its line. */
    assert_int_equal(strchr(text + len - 1, '\n') - text, (long)len - 1);
    n = ckpt_set_text_parse(text, &out);
    assert_int_equal(n, 4);
    for (int i = 0; i < 4; i++) {
        assert_int_equal(out[i].fp, in[i].fp);
        assert_int_equal(out[i].fplen, in[i].fplen);
        assert_int_equal(out[i].dev, in[i].dev);
        assert_int_equal(out[i].ino, in[i].ino);
        assert_int_equal(out[i].offset, in[i].offset);
        assert_int_equal(out[i].written, in[i].written);
        assert_string_equal(out[i].path, in[i].path);
    }
    ckpt_set_text_free(out, (size_t)n);
    free(text);
    free(long_path);
}

static void test_empty(void **state)
{
    struct ckpt_set_entry *out = NULL;

    (void)state;
    assert_int_equal(ckpt_set_text_parse("", &out), 0);
    assert_int_equal(ckpt_set_text_parse("# only a comment\n\n", &out), 0);
    ckpt_set_text_free(out, 0);
}

static void test_refused(void **state)
{
    static const char *const bad[] = {
        "hello\n",
        /* a field missing, misspelt, out of order */
        "file fp=0000000000000001 fplen=256 dev=1 ino=2 "
        "written=2026-12-06T12:00:00Z path=/a\n",
        "file fp=0000000000000001 fplen=256 dev=1 inode=2 offset=3 "
        "written=2026-12-06T12:00:00Z path=/a\n",
        "file fplen=256 fp=0000000000000001 dev=1 ino=2 offset=3 "
        "written=2026-12-06T12:00:00Z path=/a\n",
        /* numbers that are not */
        "file fp=00000000000000001 fplen=256 dev=1 ino=2 offset=3 "
        "written=2026-12-06T12:00:00Z path=/a\n",
        "file fp=000000000000000g fplen=256 dev=1 ino=2 offset=3 "
        "written=2026-12-06T12:00:00Z path=/a\n",
        "file fp=0000000000000001 fplen=256 dev=1 ino=2 "
        "offset=18446744073709551616 written=2026-12-06T12:00:00Z path=/a\n",
        "file fp=0000000000000001 fplen=-1 dev=1 ino=2 offset=3 "
        "written=2026-12-06T12:00:00Z path=/a\n",
        "file fp=0000000000000001 fplen=256 dev=1 ino=2 offset=3 "
        "written=yesterday path=/a\n",
        /* a path empty, or with an escape that is not one (\x00 would
         * cut the name short) */
        "file fp=0000000000000001 fplen=256 dev=1 ino=2 offset=3 "
        "written=2026-12-06T12:00:00Z path=\n",
        "file fp=0000000000000001 fplen=256 dev=1 ino=2 offset=3 "
        "written=2026-12-06T12:00:00Z path=/a\\x00b\n",
        "file fp=0000000000000001 fplen=256 dev=1 ino=2 offset=3 "
        "written=2026-12-06T12:00:00Z path=/a\\x4\n",
        "file fp=0000000000000001 fplen=256 dev=1 ino=2 offset=3 "
        "written=2026-12-06T12:00:00Z path=/a\\\n",
        /* one good line does not save a bad one */
        "file fp=0000000000000001 fplen=256 dev=1 ino=2 offset=3 "
        "written=2026-12-06T12:00:00Z path=/a\nfile\n",
    };
    struct ckpt_set_entry *out = NULL;

    (void)state;
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
        if (ckpt_set_text_parse(bad[i], &out) != -EINVAL)
            fail_msg("taken: %s", bad[i]);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_round_trip),
        cmocka_unit_test(test_empty),
        cmocka_unit_test(test_refused),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
