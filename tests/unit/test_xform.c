/*
 * test_xform.c - the transforms' output, judged by the system's own tools:
 * gzip output decompresses with gzip -dc, Python's gzip module and zlib's
 * gzread to exactly the input; zstd output with zstd -dc; uppercase equals
 * tr a-z A-Z; gzip then gunzip and zstd then unzstd round-trip; gunzip
 * reads a file made by cat a.gz b.gz; empty input gives valid empty
 * output.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>
#include <sys/wait.h>

#include "test_xform_harness.h"

#define IN_LEN (3u << 20)

static struct weir_pool *in_pool, *out_pool;
static uint8_t *input;

static int setup(void **state)
{
    (void)state;
    if (xf_setup("/tmp/weir-xform-XXXXXX", &in_pool, &out_pool, &input, IN_LEN,
                 7))
        return -1;
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    return xf_teardown(in_pool, out_pool, input);
}

static struct weir_xform_options xopts(void)
{
    return (struct weir_xform_options){.pool = out_pool};
}

/* Runs input[0..len) through specs into `out`, fed in `mode`; asserts
 * that the run ended well. */
static void run_ok(const char *const *specs, unsigned n, const uint8_t *data,
                   size_t len, enum feed_mode mode,
                   const struct weir_xform_options *xo, const char *out)
{
    struct feed f = {.data = data, .len = len, .mode = mode, .pool = in_pool};
    struct chain ch;

    assert_int_equal(chain_run(&ch, specs, n, &f, xo, out, false), 0);
    assert_int_equal(ch.sink.closes, 1);
    chain_free(&ch);
}

static void uppercase_equals_tr(void **state)
{
    static const enum feed_mode modes[] = {FEED_POOL, FEED_EXTERNAL};
    const char *specs[] = {"uppercase"};
    struct weir_xform_options xo = xopts();
    char in[256], out[256], want[256];

    (void)state;
    write_file(tpath(in, sizeof(in), "upper.in"), input, IN_LEN);
    assert_int_equal(
        sh("tr a-z A-Z < %s > %s", in, tpath(want, sizeof(want), "upper.want")),
        0);
    for (unsigned m = 0; m < 2; m++) {
        tpath(out, sizeof(out), "upper.out");
        run_ok(specs, 1, input, IN_LEN, modes[m], &xo, out);
        assert_int_equal(sh("cmp -s %s %s", out, want), 0);
    }
}

/* A buffer the source holds alone is converted where it lies: the output
 * pool is never asked for a buffer. */
static void uppercase_converts_unshared_buffers_in_place(void **state)
{
    const char *specs[] = {"uppercase"};
    struct weir_xform_options xo = xopts();
    struct weir_pool_stats before, after;
    char out[256];

    (void)state;
    weir_pool_stats(out_pool, &before);
    run_ok(specs, 1, input, 1u << 20, FEED_POOL, &xo,
           tpath(out, sizeof(out), "inplace.out"));
    weir_pool_stats(out_pool, &after);
    assert_true(after.gets == before.gets);
}

/* A buffer someone else also references (a tee's other branch) keeps its
 * bytes: the uppercase copy goes to new buffers. */
static void uppercase_leaves_shared_buffers_alone(void **state)
{
    const char *specs[] = {"uppercase"};
    struct weir_xform_options xo = xopts();
    struct feed f = {.data = input + 50000, /* the mixed-case text */
                     .len = 40000,
                     .mode = FEED_SHARED,
                     .pool = in_pool};
    struct chain ch;
    char out[256];
    size_t off = 0;
    uint8_t *want;

    (void)state;
    assert_int_equal(chain_run(&ch, specs, 1, &f, &xo,
                               tpath(out, sizeof(out), "shared.out"), false),
                     0);
    for (uint32_t i = 0; i < f.nkept; i++) {
        assert_memory_equal(f.kept[i].data, f.data + off, f.kept[i].len);
        off += f.kept[i].len;
        weir_chunk_unref(&f.kept[i], 0);
    }
    assert_int_equal(off, f.len);
    chain_free(&ch);
    want = malloc(f.len);
    for (size_t i = 0; i < f.len; i++)
        want[i] =
            f.data[i] >= 'a' && f.data[i] <= 'z' ? f.data[i] - 32 : f.data[i];
    assert_file_is(out, want, f.len);
    free(want);
}

static void gzip_output_reads_with_gzip_python_and_zlib(void **state)
{
    static const char *const levels[] = {"gzip:1", "gzip", "gzip:9"};
    struct weir_xform_options xo = xopts();
    char out[256], dec[256];

    (void)state;
    for (unsigned l = 0; l < 3; l++) {
        /* The default member size, and a small one for many members. */
        for (unsigned m = 0; m < 2; m++) {
            xo.member_size = m ? 4096 : 0;
            run_ok(&levels[l], 1, input, IN_LEN, m ? FEED_POOL : FEED_EXTERNAL,
                   &xo, tpath(out, sizeof(out), "out.gz"));
            assert_int_equal(sh("gzip -dc %s > %s", out,
                                tpath(dec, sizeof(dec), "gzip.dec")),
                             0);
            assert_file_is(dec, input, IN_LEN);
            assert_int_equal(
                sh("python3 -c 'import gzip,sys; "
                   "sys.stdout.buffer.write(gzip.open(sys.argv[1]).read())' "
                   "%s > %s",
                   out, dec),
                0);
            assert_file_is(dec, input, IN_LEN);
            assert_gzread_is(out, input, IN_LEN);
        }
    }
}

static void zstd_output_reads_with_zstd(void **state)
{
    static const char *const levels[] = {"zstd:1", "zstd", "zstd:19"};
    struct weir_xform_options xo = xopts();
    char out[256], dec[256];

    (void)state;
    for (unsigned l = 0; l < 3; l++) {
        /* Level 19 is slow: a smaller input keeps sanitizer runs short. */
        size_t len = l == 2 ? IN_LEN / 8 : IN_LEN;

        run_ok(&levels[l], 1, input, len, l == 1 ? FEED_POOL : FEED_EXTERNAL,
               &xo, tpath(out, sizeof(out), "out.zst"));
        assert_int_equal(
            sh("zstd -q -dc %s > %s", out, tpath(dec, sizeof(dec), "zstd.dec")),
            0);
        assert_file_is(dec, input, len);
    }
}

static void compress_then_decompress_round_trips(void **state)
{
    const char *gz[] = {"uppercase", "gzip:1", "gunzip"};
    const char *zs[] = {"zstd:1", "unzstd"};
    char out[256], want[256];
    struct weir_xform_options xo = xopts();

    (void)state;
    run_ok(gz, 3, input, IN_LEN, FEED_EXTERNAL, &xo,
           tpath(out, sizeof(out), "gz.round"));
    write_file(tpath(want, sizeof(want), "round.in"), input, IN_LEN);
    assert_int_equal(sh("tr a-z A-Z < %s | cmp -s - %s", want, out), 0);
    run_ok(zs, 2, input, IN_LEN, FEED_POOL, &xo,
           tpath(out, sizeof(out), "zs.round"));
    assert_file_is(out, input, IN_LEN);
}

/* gzip(1)'s own multi-member file: cat a.gz b.gz. */
static void gunzip_reads_concatenated_members(void **state)
{
    const char *specs[] = {"gunzip"};
    struct weir_xform_options xo = xopts();
    char a[256], b[256], ab[256], out[256];
    uint8_t *gz;
    size_t gz_len;

    (void)state;
    write_file(tpath(a, sizeof(a), "a"), input, 700000);
    write_file(tpath(b, sizeof(b), "b"), input + 700000, 900000);
    assert_int_equal(sh("gzip -c %s > %s.gz && gzip -1 -c %s > %s.gz && "
                        "cat %s.gz %s.gz > %s",
                        a, a, b, b, a, b, tpath(ab, sizeof(ab), "ab.gz")),
                     0);
    gz = read_file(ab, &gz_len);
    assert_non_null(gz);
    run_ok(specs, 1, gz, gz_len, FEED_POOL, &xo,
           tpath(out, sizeof(out), "ab.out"));
    assert_file_is(out, input, 1600000);
    free(gz);
}

static void empty_input_gives_valid_empty_output(void **state)
{
    struct weir_xform_options xo = xopts();
    const char *gz[] = {"gzip"}, *zs[] = {"zstd"}, *ungz[] = {"gunzip"},
               *unzs[] = {"unzstd"}, *up[] = {"uppercase"};
    char out[256], dec[256];
    uint8_t none = 0;

    (void)state;
    run_ok(gz, 1, &none, 0, FEED_POOL, &xo,
           tpath(out, sizeof(out), "empty.gz"));
    assert_int_equal(
        sh("gzip -dc %s > %s", out, tpath(dec, sizeof(dec), "empty.dec")), 0);
    assert_file_is(dec, &none, 0);
    assert_gzread_is(out, &none, 0);
    run_ok(zs, 1, &none, 0, FEED_POOL, &xo, out);
    assert_int_equal(sh("zstd -q -dc %s > %s", out, dec), 0);
    assert_file_is(dec, &none, 0);
    run_ok(ungz, 1, &none, 0, FEED_POOL, &xo, out);
    assert_file_is(out, &none, 0);
    run_ok(unzs, 1, &none, 0, FEED_POOL, &xo, out);
    assert_file_is(out, &none, 0);
    run_ok(up, 1, &none, 0, FEED_POOL, &xo, out);
    assert_file_is(out, &none, 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(uppercase_equals_tr),
        cmocka_unit_test(uppercase_converts_unshared_buffers_in_place),
        cmocka_unit_test(uppercase_leaves_shared_buffers_alone),
        cmocka_unit_test(gzip_output_reads_with_gzip_python_and_zlib),
        cmocka_unit_test(zstd_output_reads_with_zstd),
        cmocka_unit_test(compress_then_decompress_round_trips),
        cmocka_unit_test(gunzip_reads_concatenated_members),
        cmocka_unit_test(empty_input_gives_valid_empty_output),
    };

    return cmocka_run_group_tests(tests, setup, teardown);
}
