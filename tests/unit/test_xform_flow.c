/*
 * test_xform_flow.c - the transforms as stream stages: specs are checked
 * with clear sentences; corrupt gzip and zstd input errors its own stream
 * with -EBADMSG and the offset, and the next stream works; an empty pool
 * parks a transform until buffers come back, and the output is still
 * exact; a decompressor stops at `burst` buffers when nobody reads; a
 * stream cancelled while its transform is parked lets every buffer go;
 * weir_xform_sync makes what a quiet source gave decodable.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>
#include <sys/wait.h>
#include <zstd.h>

#include "test_xform_harness.h"

#define IN_LEN (1u << 20)

static struct weir_pool *in_pool, *out_pool;
static uint8_t *input;

static int setup(void **state)
{
    (void)state;
    if (xf_setup("/tmp/weir-xflow-XXXXXX", &in_pool, &out_pool, &input, IN_LEN,
                 11))
        return -1;
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    return xf_teardown(in_pool, out_pool, input);
}

static void check_names_levels_with_a_sentence(void **state)
{
    static const struct {
        const char *spec;
        int rc;
        const char *why;
    } cases[] = {
        {"uppercase", 0, NULL},
        {"gzip", 0, NULL},
        {"gzip:1", 0, NULL},
        {"gzip:9", 0, NULL},
        {"gunzip", 0, NULL},
        {"zstd:19", 0, NULL},
        {"unzstd", 0, NULL},
        {"gzip:0", -EINVAL, "gzip level '0' is out of range 1-9"},
        {"gzip:10", -EINVAL, "gzip level '10' is out of range 1-9"},
        {"zstd:20", -EINVAL, "zstd level '20' is out of range 1-19"},
        {"zstd:-1", -EINVAL, "zstd level '-1' is out of range 1-19"},
        {"gzip:", -EINVAL, "gzip level '' is out of range 1-9"},
        {"gzip:6x", -EINVAL, "gzip level '6x' is out of range 1-9"},
        {"gzip:00006", -EINVAL, "out of range"},
        {"gunzip:3", -EINVAL, "transform 'gunzip' takes no level"},
        {"uppercase:1", -EINVAL, "takes no level"},
        {"brotli", -EINVAL, "unknown transform 'brotli'"},
        {"", -EINVAL, "unknown transform ''"},
        {"GZIP", -EINVAL, "unknown transform 'GZIP'"},
    };
    char why[160];

    (void)state;
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        why[0] = 0;
        assert_int_equal(weir_xform_check(cases[i].spec, why, sizeof(why)),
                         cases[i].rc);
        if (cases[i].why && !strstr(why, cases[i].why))
            fail_msg("'%s': '%s' lacks '%s'", cases[i].spec, why, cases[i].why);
    }
    /* A tiny or absent message buffer is fine. */
    assert_int_equal(weir_xform_check("gzip:99", NULL, 0), -EINVAL);
    assert_int_equal(weir_xform_check("gzip:99", why, 4), -EINVAL);
    assert_int_equal(strlen(why), 3);
}

/* The kinds that split into members say so; the rest, and bad specs,
 * do not. */
static void uses_helper_names_the_member_kinds(void **state)
{
    static const char *const yes[] = {"gzip", "gzip:1", "zstd:19", "gunzip",
                                      "unzstd"};
    static const char *const no[] = {"uppercase", "gzip:12", "brotli",
                                     "",          "GZIP",    "gunzip:3"};

    (void)state;
    for (size_t i = 0; i < sizeof(yes) / sizeof(yes[0]); i++)
        if (!weir_xform_uses_helper(yes[i]))
            fail_msg("'%s' says it uses no helper", yes[i]);
    for (size_t i = 0; i < sizeof(no) / sizeof(no[0]); i++)
        if (weir_xform_uses_helper(no[i]))
            fail_msg("'%s' says it uses a helper", no[i]);
    assert_false(weir_xform_uses_helper(NULL));
}

static void create_checks_its_options(void **state)
{
    struct weir_xform_options xo = {.pool = out_pool};
    struct weir_xform_options none = {0};
    struct weir_xform *x;

    (void)state;
    assert_int_equal(weir_xform_create(&x, "gzip:12", &xo), -EINVAL);
    assert_int_equal(weir_xform_create(&x, "gzip", &none), -EINVAL);
    assert_int_equal(weir_xform_create(&x, "gzip", NULL), -EINVAL);
    xo.member_size = 100;
    assert_int_equal(weir_xform_create(&x, "gzip", &xo), -EINVAL);
    xo.member_size = 0;
    assert_int_equal(weir_xform_create(&x, "zstd:7", &xo), 0);
    assert_string_equal(weir_xform_name(x), "zstd");
    assert_int_equal(weir_xform_level(x), 7);
    assert_false(weir_xform_stalled(x));
    assert_int_equal(weir_xform_error(x, NULL), 0);
    weir_xform_destroy(x);
    assert_int_equal(weir_xform_create(&x, "gunzip", &xo), 0);
    assert_int_equal(weir_xform_level(x), 0);
    weir_xform_destroy(x);
}

/* Runs data through one decompressor; returns the pipe's result and the
 * transform's error offset in *off. */
static int run_decoder(const char *spec, const uint8_t *data, size_t len,
                       uint64_t *off, const char *out)
{
    struct weir_xform_options xo = {.pool = out_pool};
    struct feed f = {
        .data = data, .len = len, .mode = FEED_POOL, .pool = in_pool};
    const char *specs[] = {spec};
    struct chain ch;
    int rc = chain_run(&ch, specs, 1, &f, &xo, out, false);
    int err = weir_xform_error(ch.x[0], off);

    assert_true(rc == 0 || rc == err);
    chain_free(&ch);
    return rc;
}

/* A compressed copy of `input` made by the command `tool` (gzip or zstd). */
static uint8_t *tool_compress(const char *tool, size_t *len)
{
    char in[256], out[256];
    uint8_t *d;

    write_file(tpath(in, sizeof(in), "tool.in"), input, IN_LEN);
    assert_int_equal(
        sh("%s -c %s > %s", tool, in, tpath(out, sizeof(out), "tool.z")), 0);
    d = read_file(out, len);
    assert_non_null(d);
    return d;
}

static void corrupt_gzip_errors_that_stream_with_its_offset(void **state)
{
    size_t len;
    uint8_t *gz = tool_compress("gzip -6", &len);
    uint8_t *bad = malloc(len + 4);
    char out[256];
    uint64_t off;

    (void)state;
    tpath(out, sizeof(out), "gunzip.out");
    /* A flipped byte in the compressed data, then in the header. */
    memcpy(bad, gz, len);
    bad[len / 2] ^= 0x55;
    assert_int_equal(run_decoder("gunzip", bad, len, &off, out), -EBADMSG);
    assert_true(off > 10 && off <= len);
    bad[len / 2] = gz[len / 2];
    bad[0] = 0;
    assert_int_equal(run_decoder("gunzip", bad, len, &off, out), -EBADMSG);
    assert_true(off <= 2);
    bad[0] = gz[0];
    /* Truncated: the stream ends inside the member. */
    assert_int_equal(run_decoder("gunzip", bad, len - 5, &off, out), -EBADMSG);
    assert_int_equal(off, len - 5);
    /* Garbage after a complete member. */
    memcpy(bad + len, "junk", 4);
    assert_int_equal(run_decoder("gunzip", bad, len + 4, &off, out), -EBADMSG);
    assert_true(off >= len && off <= len + 4);
    /* The failures stayed in their streams: the next one works. */
    assert_int_equal(run_decoder("gunzip", gz, len, &off, out), 0);
    assert_int_equal(sh("cmp -s %s %s/tool.in", out, tdir), 0);
    free(bad);
    free(gz);
}

static void corrupt_zstd_errors_that_stream_with_its_offset(void **state)
{
    size_t len;
    uint8_t *zs = tool_compress("zstd -q -3", &len);
    uint8_t *bad = malloc(len);
    char out[256];
    uint64_t off;

    (void)state;
    tpath(out, sizeof(out), "unzstd.out");
    memcpy(bad, zs, len);
    bad[0] ^= 0xff; /* the frame's magic */
    assert_int_equal(run_decoder("unzstd", bad, len, &off, out), -EBADMSG);
    assert_true(off <= 4);
    bad[0] = zs[0];
    assert_int_equal(run_decoder("unzstd", bad, len - 3, &off, out), -EBADMSG);
    assert_int_equal(off, len - 3);
    assert_int_equal(run_decoder("unzstd", zs, len, &off, out), 0);
    assert_int_equal(sh("cmp -s %s %s/tool.in", out, tdir), 0);
    free(bad);
    free(zs);
    /* A 128 MiB window (--long=27 from a pipe, size unknown) is refused
     * rather than allocated. */
    assert_int_equal(
        sh("cat %s/tool.in | zstd -q --long=27 -c > %s/long.zst", tdir, tdir),
        0);
    tpath(out, sizeof(out), "long.zst");
    zs = read_file(out, &len);
    assert_non_null(zs);
    tpath(out, sizeof(out), "unzstd.out");
    assert_int_equal(run_decoder("unzstd", zs, len, &off, out), -EMSGSIZE);
    free(zs);
}

/*
 * Three 4 KiB output buffers, and a sink that keeps each write in flight
 * until the driver finishes it: the transform runs out of buffers again
 * and again, parks, and resumes when one comes back. The output is still
 * exactly right.
 */
static void empty_pool_parks_and_resumes_with_exact_output(void **state)
{
    static const char *const encoders[] = {"uppercase", "gzip:1", "zstd:1"};
    struct weir_pool *tiny = make_pool(3, 4096);
    struct weir_xform_options xo = {.pool = tiny, .member_size = 16384};
    char out[256], dec[256];

    (void)state;
    tpath(out, sizeof(out), "tiny.out");
    write_file(tpath(dec, sizeof(dec), "tool.in"), input, IN_LEN);
    for (unsigned i = 0; i < 3; i++) {
        struct feed f = {.data = input, .len = IN_LEN, .mode = FEED_EXTERNAL};
        struct weir_xform_stats st;
        struct chain ch;

        assert_int_equal(chain_run(&ch, &encoders[i], 1, &f, &xo, out, true),
                         0);
        weir_xform_stats(ch.x[0], &st);
        assert_true(st.stalls > 0);
        assert_int_equal(st.in_bytes, IN_LEN);
        assert_int_equal(st.out_bytes, ch.sink.bytes);
        chain_free(&ch);
        if (i == 0)
            assert_int_equal(
                sh("tr a-z A-Z < %s/tool.in | cmp -s - %s", tdir, out), 0);
        else
            assert_int_equal(sh("%s -dc %s | cmp -s - %s/tool.in",
                                i == 1 ? "gzip" : "zstd -q", out, tdir),
                             0);
    }
    /* The decoders, fed the tools' output. */
    for (unsigned i = 0; i < 2; i++) {
        const char *spec = i ? "unzstd" : "gunzip";
        size_t len;
        uint8_t *z = tool_compress(i ? "zstd -q -1" : "gzip -1", &len);
        struct feed f = {.data = z, .len = len, .mode = FEED_EXTERNAL};
        struct weir_xform_stats st;
        struct chain ch;

        assert_int_equal(chain_run(&ch, &spec, 1, &f, &xo, out, true), 0);
        weir_xform_stats(ch.x[0], &st);
        assert_true(st.stalls > 0);
        chain_free(&ch);
        assert_int_equal(sh("cmp -s %s %s/tool.in", out, tdir), 0);
        free(z);
    }
    weir_pool_reclaim(tiny);
    assert_int_equal(weir_pool_destroy(tiny), 0);
}

/*
 * 32 MiB of repeated text gzips to a few hundred KiB; gunzip turns each
 * input chunk into hundreds of buffers. While the sink holds its write,
 * the decompressor parks after `burst` buffers instead of taking the
 * pool, so the buffers out at once stay near burst.
 */
static void decompressor_output_is_bounded_by_burst(void **state)
{
    const size_t big = 32u << 20;
    uint8_t *text = malloc(big);
    char in[256], gzp[256], out[256];
    struct weir_xform_options xo = {.pool = out_pool, .burst = 8};
    struct weir_pool_stats ps;
    struct weir_xform_stats st;
    const char *spec = "gunzip";
    struct chain ch;
    struct feed f = {.mode = FEED_EXTERNAL};
    size_t len = 0;
    uint8_t *z;

    (void)state;
    for (size_t i = 0; i < big; i++)
        text[i] = (uint8_t) "abcdefghij"[i % 10];
    write_file(tpath(in, sizeof(in), "big.in"), text, big);
    assert_int_equal(
        sh("gzip -1 -c %s > %s", in, tpath(gzp, sizeof(gzp), "big.gz")), 0);
    z = read_file(gzp, &len);
    assert_non_null(z);
    f.data = z;
    f.len = len;
    weir_pool_reclaim(out_pool);
    weir_pool_stats(out_pool, &ps);
    assert_int_equal(ps.in_use, 0);
    assert_int_equal(chain_run(&ch, &spec, 1, &f, &xo,
                               tpath(out, sizeof(out), "big.out"), true),
                     0);
    weir_xform_stats(ch.x[0], &st);
    assert_true(st.stalls > 0);
    assert_int_equal(st.out_bytes, big);
    chain_free(&ch);
    weir_pool_stats(out_pool, &ps);
    /* burst queued + the one the sink holds + the one being filled + the
     * queue's own mark. */
    assert_true(ps.peak <= 8 + 3);
    assert_int_equal(sh("cmp -s %s %s", out, in), 0);
    free(z);
    free(text);
}

/* The sink fails while the transform is parked on an empty pool: the
 * failure reaches the source, and every buffer comes home. */
static void failure_while_parked_releases_everything(void **state)
{
    static const char *const specs[] = {"uppercase", "gzip:1", "zstd:1"};
    struct weir_pool *tiny = make_pool(2, 4096);
    struct weir_xform_options xo = {.pool = tiny, .member_size = 8192};
    char out[256];

    (void)state;
    for (unsigned i = 0; i < 3; i++) {
        struct feed f = {.data = input, .len = IN_LEN, .mode = FEED_EXTERNAL};
        struct weir_pool_stats ps;
        struct chain ch;

        assert_int_equal(chain_start(&ch, &specs[i], 1, &f, &xo,
                                     tpath(out, sizeof(out), "fail.out"), true),
                         0);
        /* Nothing finished the held write yet: the transform is parked
         * or about to be. */
        assert_false(ch.ends[1].finished);
        ch.sink.fail_rc = -EIO;
        assert_int_equal(chain_drive(&ch), -EIO);
        assert_true(ch.ends[0].finished);
        assert_true(ch.ends[0].rc < 0);
        assert_false(weir_xform_stalled(ch.x[0]));
        assert_true(f.off < f.len);
        chain_free(&ch);
        weir_pool_reclaim(tiny);
        weir_pool_stats(tiny, &ps);
        assert_int_equal(ps.in_use, 0);
    }
    assert_int_equal(weir_pool_destroy(tiny), 0);
}

/* Decodes a zstd frame that has not ended: how much came out. */
static size_t zstd_partial(const uint8_t *z, size_t len, uint8_t *out,
                           size_t cap)
{
    ZSTD_DCtx *d = ZSTD_createDCtx();
    ZSTD_inBuffer in = {z, len, 0};
    ZSTD_outBuffer o = {out, cap, 0};
    size_t r = 1;

    while (in.pos < in.size && !ZSTD_isError(r))
        r = ZSTD_decompressStream(d, &o, &in);
    assert_false(ZSTD_isError(r));
    ZSTD_freeDCtx(d);
    return o.pos;
}

/*
 * The source goes quiet in the middle (a followed file at its end). The
 * compressors hold their member or block back until weir_xform_sync; after
 * it, what the sink has decodes to exactly the input taken so far. Then
 * the source wakes and the whole output is still one valid file.
 */
static void sync_pushes_out_what_a_quiet_source_gave(void **state)
{
    static const char *const specs[] = {"gzip:6", "zstd:3", "uppercase"};
    struct weir_xform_options xo = {.pool = out_pool};
    char out[256], whole[256];

    (void)state;
    write_file(tpath(whole, sizeof(whole), "sync.in"), input, IN_LEN);
    for (unsigned i = 0; i < 3; i++) {
        struct feed f = {.data = input,
                         .len = IN_LEN,
                         .mode = FEED_EXTERNAL,
                         .pause_at = 300001};
        struct weir_xform_stats st;
        struct chain ch;
        uint8_t *got, *dec = malloc(IN_LEN);
        size_t got_len, n;

        assert_int_equal(chain_start(&ch, &specs[i], 1, &f, &xo,
                                     tpath(out, sizeof(out), "sync.out"),
                                     false),
                         0);
        assert_int_equal(chain_drive(&ch), -EDEADLK); /* quiet source */
        assert_true(f.paused);
        weir_xform_stats(ch.x[0], &st);
        assert_int_equal(st.in_bytes, f.off);
        assert_int_equal(weir_xform_sync(ch.x[0]), 0);
        got = read_file(out, &got_len);
        assert_non_null(got);
        if (i == 0) {
            assert_int_equal(sh("gzip -dc %s | cmp -s -n %zu - %s && "
                                "test $(gzip -dc %s | wc -c) -eq %zu",
                                out, (size_t)st.in_bytes, whole, out,
                                (size_t)st.in_bytes),
                             0);
        } else if (i == 1) {
            n = zstd_partial(got, got_len, dec, IN_LEN);
            assert_int_equal(n, st.in_bytes);
            assert_memory_equal(dec, input, n);
        } else {
            assert_int_equal(got_len, st.in_bytes);
        }
        free(got);
        free(dec);
        /* Nothing held back: a second sync has nothing to add. */
        assert_int_equal(weir_xform_sync(ch.x[0]), 0);
        feed_wake(&f, 0);
        assert_int_equal(chain_drive(&ch), 0);
        chain_free(&ch);
        if (i == 0)
            assert_int_equal(sh("gzip -dc %s | cmp -s - %s", out, whole), 0);
        else if (i == 1)
            assert_int_equal(sh("zstd -q -dc %s | cmp -s - %s", out, whole), 0);
        else
            assert_int_equal(sh("tr a-z A-Z < %s | cmp -s - %s", whole, out),
                             0);
    }
}

/*
 * Steady state allocates nothing: once a stream is flowing, the core's
 * allocation counter does not move while the next megabytes go through
 * (the transforms' own state is made on the first chunk; buffers come from
 * the pool).
 */
static void steady_flow_allocates_nothing(void **state)
{
    static const char *const specs[] = {"uppercase", "gzip:1", "zstd:1"};
    const size_t big = 8u << 20;
    uint8_t *data = make_input(big, 5);
    struct weir_xform_options xo = {.pool = out_pool};
    char out[256];

    (void)state;
    for (unsigned i = 0; i < 3; i++) {
        struct feed f = {.data = data,
                         .len = big,
                         .mode = FEED_POOL,
                         .pool = in_pool,
                         .pause_at = 1u << 20};
        struct weir_core_alloc_stats a, b;
        struct chain ch;

        assert_int_equal(chain_start(&ch, &specs[i], 1, &f, &xo,
                                     tpath(out, sizeof(out), "steady.out"),
                                     false),
                         0);
        assert_int_equal(chain_drive(&ch), -EDEADLK);
        assert_true(f.paused);
        weir_core_alloc_stats(&a);
        feed_wake(&f, big - 1); /* pause again just before the end */
        assert_int_equal(chain_drive(&ch), -EDEADLK);
        assert_true(f.paused);
        assert_true(f.off >= big - 1);
        weir_core_alloc_stats(&b);
        assert_true(b.allocs == a.allocs);
        feed_wake(&f, 0);
        assert_int_equal(chain_drive(&ch), 0);
        chain_free(&ch);
    }
    free(data);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(check_names_levels_with_a_sentence),
        cmocka_unit_test(uses_helper_names_the_member_kinds),
        cmocka_unit_test(create_checks_its_options),
        cmocka_unit_test(corrupt_gzip_errors_that_stream_with_its_offset),
        cmocka_unit_test(corrupt_zstd_errors_that_stream_with_its_offset),
        cmocka_unit_test(empty_pool_parks_and_resumes_with_exact_output),
        cmocka_unit_test(decompressor_output_is_bounded_by_burst),
        cmocka_unit_test(failure_while_parked_releases_everything),
        cmocka_unit_test(sync_pushes_out_what_a_quiet_source_gave),
        cmocka_unit_test(steady_flow_allocates_nothing),
    };

    return cmocka_run_group_tests(tests, setup, teardown);
}
