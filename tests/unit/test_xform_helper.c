/*
 * test_xform_helper.c - gzip and zstd with a helper loop on a second
 * thread: the members (zstd: frames) it compresses there and the ones
 * compressed here come out in order, so gzip -dc (and zlib) and zstd -dc
 * read exactly the input back; a transform destroyed while the helper
 * holds a member frees nothing under the helper's feet (ASan and TSan
 * judge); a quiet source's sync waits for the helper's member and then
 * everything so far decodes. gunzip and unzstd with a helper decode
 * members whole on both threads: weir's own members, and streams whose
 * members do not say their size (gzip(1)'s, zstd(1)'s), which they stream;
 * damage anywhere is an error, never short output.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>
#include <pthread.h>
#include <stdatomic.h>
#include <sys/wait.h>
#include <time.h>

#include "weir/loop.h"
#include "test_xform_harness.h"

#define IN_LEN (3u << 20)
/* Small members: many of them, so both threads get plenty. */
#define MEMBER (64u << 10)

/* Each case runs for both formats the member engine serves. */
static const struct codec {
    const char *chain[2]; /* specs: the fastest level, and its decoder */
    const char *def;      /* the default level */
    const char *decode;   /* the command that reads the output back */
    const char *tool;     /* the command-line compressor, "-c" implied */
} codecs[] = {
    {{"gzip:1", "gunzip"}, "gzip:6", "gzip -dc", "gzip -1"},
    {{"zstd:1", "unzstd"}, "zstd:3", "zstd -dcq", "zstd -q -1"},
};
#define NCODECS (sizeof(codecs) / sizeof(codecs[0]))

static struct weir_pool *in_pool, *out_pool;
static uint8_t *input;

/* The helper: a loop on its own thread. */
static pthread_t helper_thread;
static struct weir_loop *helper;
static _Atomic int helper_ready;

static void *helper_main(void *arg)
{
    (void)arg;
    if (weir_loop_create(&helper, &(struct weir_loop_options){.slot = 1}))
        abort();
    /* Release: publishes `helper`; pairs with the acquire in setup. */
    atomic_store_explicit(&helper_ready, 1, memory_order_release);
    weir_loop_run(helper);
    /* Destroyed after the join (teardown): a post's doorbell may still be
     * ringing while the loop stops, as with weir_workers_stop. */
    return NULL;
}

static void stop_fn(struct weir_task *t)
{
    (void)t;
    weir_loop_stop(weir_loop_current());
}

/* A task that holds the helper's thread until `gate` opens: members
 * posted meanwhile stay queued. */
static _Atomic int gate, gate_held;

static void gate_fn(struct weir_task *t)
{
    (void)t;
    /* Release/acquire: plain flags between the test and the helper; the
     * pairs are this store with the test's wait, and the test's open with
     * this wait. */
    atomic_store_explicit(&gate_held, 1, memory_order_release);
    while (!atomic_load_explicit(&gate, memory_order_acquire))
        sched_yield();
}

/* Waits until every task posted to the helper so far has run. */
static _Atomic int fenced;

static void fence_fn(struct weir_task *t)
{
    (void)t;
    /* Release: everything the helper did before is visible to the test
     * after its acquire load. */
    atomic_store_explicit(&fenced, 1, memory_order_release);
}

static void helper_fence(void)
{
    static struct weir_task t;

    atomic_store_explicit(&fenced, 0, memory_order_relaxed);
    weir_task_init(&t, fence_fn);
    weir_loop_post(helper, &t);
    while (!atomic_load_explicit(&fenced, memory_order_acquire))
        sched_yield();
}

static int setup(void **state)
{
    (void)state;
    if (xf_setup("/tmp/weir-xfh-XXXXXX", &in_pool, &out_pool, &input, IN_LEN,
                 11))
        return -1;
    if (pthread_create(&helper_thread, NULL, helper_main, NULL))
        return -1;
    while (!atomic_load_explicit(&helper_ready, memory_order_acquire))
        sched_yield();
    return 0;
}

static int teardown(void **state)
{
    static struct weir_task stop;

    (void)state;
    weir_task_init(&stop, stop_fn);
    weir_loop_post(helper, &stop);
    pthread_join(helper_thread, NULL);
    weir_loop_destroy(helper);
    return xf_teardown(in_pool, out_pool, input);
}

static struct weir_xform_options xopts(void)
{
    return (struct weir_xform_options){
        .pool = out_pool, .member_size = MEMBER, .helper = helper};
}

/* chain_drive, waiting for the helper when the only thing parked is work
 * on it: the last pipe's result, or -EDEADLK when nothing moved for 20 s
 * (the source went quiet, or a member was lost). */
static int drive(struct chain *ch)
{
    struct timespec nap = {0, 50 * 1000};
    int rc;

    for (unsigned waited = 0; waited < 400000; waited++) {
        bool away = false;

        rc = chain_drive(ch);
        if (rc != -EDEADLK)
            return rc;
        for (unsigned i = 0; i < ch->n; i++)
            away = away || weir_xform_stalled(ch->x[i]);
        if (!away)
            return -EDEADLK;
        nanosleep(&nap, NULL);
    }
    return -EDEADLK;
}

/*
 * Lengths around the member size and a few megabytes, fed as pool buffers
 * and as bigger outside chunks (whole members in one chunk), with a sink
 * that writes at once and one that holds each write: gzip -dc and zlib
 * give back exactly the input, and the helper compressed some members.
 * The same runs through the decoder too (both with the helper) give the
 * sink exactly the input, and the decoder decoded members on the helper.
 */
static void members_from_both_threads_come_out_in_order(void **state)
{
    static const size_t lens[] = {
        0, 1, MEMBER - 1, MEMBER, MEMBER + 1, 5 * MEMBER + 77, IN_LEN};
    struct weir_xform_options xo = xopts();
    char in[256], out[256];

    (void)state;
    for (unsigned c = 0; c < NCODECS; c++) {
        uint64_t helped[2] = {0, 0};

        for (unsigned n = 1; n <= 2; n++)
            for (unsigned m = 0; m < 2; m++)
                for (unsigned h = 0; h < 2; h++)
                    for (size_t k = 0; k < sizeof(lens) / sizeof(lens[0]);
                         k++) {
                        struct feed f = {.data = input,
                                         .len = lens[k],
                                         .mode = m ? FEED_EXTERNAL : FEED_POOL,
                                         .pool = in_pool};
                        struct weir_xform_stats st;
                        struct chain ch;

                        tpath(out, sizeof(out), "order.out");
                        assert_int_equal(chain_start(&ch, codecs[c].chain, n,
                                                     &f, &xo, out, h),
                                         0);
                        assert_int_equal(drive(&ch), 0);
                        assert_int_equal(ch.sink.closes, 1);
                        weir_xform_stats(ch.x[0], &st);
                        assert_int_equal(st.in_bytes, lens[k]);
                        weir_xform_stats(ch.x[n - 1], &st);
                        helped[n - 1] += st.helped;
                        chain_free(&ch);
                        if (n == 2) {
                            assert_file_is(out, input, lens[k]);
                            continue;
                        }
                        write_file(tpath(in, sizeof(in), "order.in"), input,
                                   lens[k]);
                        assert_int_equal(sh("%s %s | cmp -s - %s",
                                            codecs[c].decode, out, in),
                                         0);
                        if (c == 0)
                            assert_gzread_is(out, input, lens[k]);
                    }
        /* 3 MiB in 64 KiB members: the helper had its share, both ways. */
        assert_true(helped[0] >= 8);
        assert_true(helped[1] >= 8);
    }
}

/*
 * While the helper's owner says it is busy with its own compressing
 * (helper_busy nonzero), every member is made here; once the count drops
 * to zero, members are lent again. Both runs decode exactly.
 */
static void a_busy_helper_is_not_lent_members(void **state)
{
    static _Atomic uint32_t busy;
    struct weir_xform_options xo = xopts();
    char in[256], out[256];

    (void)state;
    xo.helper_busy = &busy;
    write_file(tpath(in, sizeof(in), "busy.in"), input, IN_LEN);
    for (unsigned c = 0; c < NCODECS; c++)
        for (int b = 1; b >= 0; b--) {
            struct feed f = {
                .data = input, .len = IN_LEN, .mode = FEED_EXTERNAL};
            struct weir_xform_stats st;
            struct chain ch;

            atomic_store_explicit(&busy, (uint32_t)b, memory_order_relaxed);
            assert_int_equal(chain_start(&ch, codecs[c].chain, 1, &f, &xo,
                                         tpath(out, sizeof(out), "busy.out"),
                                         false),
                             0);
            assert_int_equal(drive(&ch), 0);
            weir_xform_stats(ch.x[0], &st);
            chain_free(&ch);
            if (b)
                assert_int_equal(st.helped, 0);
            else
                assert_true(st.helped > 0);
            assert_int_equal(
                sh("%s %s | cmp -s - %s", codecs[c].decode, out, in), 0);
        }
}

/*
 * The helper is held busy, so the members posted to it stay queued; the
 * transform is destroyed meanwhile. When the helper runs again it finds
 * its members taken back and frees what it shared, once: ASan reports a
 * use after free or a leak, TSan a race.
 */
static void destroy_while_the_helper_holds_members(void **state)
{
    struct weir_xform_options xo = xopts();
    struct weir_task hold;
    char out[256];

    (void)state;
    for (unsigned run = 0; run < 2 * NCODECS; run++) {
        unsigned running = run % 2;
        const char *const *specs = codecs[run / 2].chain;
        struct feed f = {.data = input,
                         .len = IN_LEN,
                         .mode = FEED_EXTERNAL,
                         .pause_at = 2 * MEMBER + 5};
        struct weir_xform_stats st;
        struct chain ch;
        int rc;

        atomic_store_explicit(&gate, 0, memory_order_relaxed);
        atomic_store_explicit(&gate_held, 0, memory_order_relaxed);
        weir_task_init(&hold, gate_fn);
        weir_loop_post(helper, &hold);
        while (!atomic_load_explicit(&gate_held, memory_order_acquire))
            sched_yield();
        assert_int_equal(chain_start(&ch, specs, 1, &f, &xo,
                                     tpath(out, sizeof(out), "gone.out"),
                                     false),
                         0);
        /* The source went quiet after two members: one went to the
         * helper, which has not started it. */
        assert_int_equal(chain_drive(&ch), -EDEADLK);
        assert_true(f.paused);
        weir_xform_stats(ch.x[0], &st);
        assert_true(st.helped >= 1);
        assert_true(weir_xform_stalled(ch.x[0]));
        if (running) {
            /* Second round: the helper starts on the member first, and
             * the transform goes while it may be compressing it. */
            atomic_store_explicit(&gate, 1, memory_order_release);
        }
        /* The source fails: the pipes end, the transform is cancelled. */
        weir_readable_error(f.rs, -EIO);
        rc = chain_drive(&ch);
        assert_true(rc < 0 && rc != -EDEADLK);
        chain_free(&ch);
        atomic_store_explicit(&gate, 1, memory_order_release);
        helper_fence();
    }
}

/*
 * A quiet source with a member on the helper: sync asks for patience
 * (-EAGAIN) and parks; resumed once the helper finished, the sink has
 * every byte taken so far, decodable; the rest still makes one valid file.
 */
static void sync_waits_for_the_helper(void **state)
{
    struct weir_xform_options xo = xopts();
    char out[256], whole[256];

    (void)state;
    write_file(tpath(whole, sizeof(whole), "sync.in"), input, IN_LEN);
    for (unsigned c = 0; c < NCODECS; c++) {
        struct feed f = {.data = input,
                         .len = IN_LEN,
                         .mode = FEED_EXTERNAL,
                         .pause_at = 4 * MEMBER + 999};
        const char *dec = codecs[c].decode;
        struct weir_xform_stats st;
        struct chain ch;
        int rc;

        assert_int_equal(chain_start(&ch, &codecs[c].def, 1, &f, &xo,
                                     tpath(out, sizeof(out), "sync.out"),
                                     false),
                         0);
        assert_int_equal(drive(&ch), -EDEADLK); /* quiet source */
        assert_true(f.paused);
        rc = weir_xform_sync(ch.x[0]);
        assert_true(rc == 0 || rc == -EAGAIN);
        /* Parked on the helper: drive hands the member on once it is
         * done. */
        assert_int_equal(drive(&ch), -EDEADLK);
        assert_false(weir_xform_stalled(ch.x[0]));
        weir_xform_stats(ch.x[0], &st);
        assert_int_equal(st.in_bytes, f.off);
        assert_int_equal(sh("%s %s | cmp -s -n %zu - %s && "
                            "test $(%s %s | wc -c) -eq %zu",
                            dec, out, (size_t)st.in_bytes, whole, dec, out,
                            (size_t)st.in_bytes),
                         0);
        feed_wake(&f, 0);
        assert_int_equal(drive(&ch), 0);
        chain_free(&ch);
        assert_int_equal(sh("%s %s | cmp -s - %s", dec, out, whole), 0);
    }
}

/* Runs `spec` with the helper over the file at `in` into `out`, fed in
 * every chunk size; the pipe's result. *x_rc and *offset: the decoder's
 * error (weir_xform_error) when asked for. */
static int decode_file(const char *spec, const char *in, const char *out,
                       bool hold, int *x_rc, uint64_t *offset, uint64_t *helped)
{
    struct weir_xform_options xo = xopts();
    struct weir_xform_stats st;
    size_t len;
    uint8_t *data = read_file(in, &len);
    struct feed f = {.data = data, .len = len, .mode = FEED_EXTERNAL};
    struct chain ch;
    int rc;

    assert_non_null(data);
    assert_int_equal(chain_start(&ch, &spec, 1, &f, &xo, out, hold), 0);
    rc = drive(&ch);
    if (x_rc)
        *x_rc = weir_xform_error(ch.x[0], offset);
    weir_xform_stats(ch.x[0], &st);
    if (helped)
        *helped += st.helped;
    chain_free(&ch);
    free(data);
    return rc;
}

/*
 * Streams the decoders cannot cut whole: gzip(1)'s members carry no size;
 * zstd(1) reading a pipe writes no content size (a frame of 3 MiB), and
 * for a 6 MiB file one frame larger than any member. Alone, and after and
 * before weir's own members, each decodes to exactly its input.
 */
static void foreign_members_are_streamed(void **state)
{
    char in[256], twice[256], weir[256], tool[256], big[256], mixed[256],
        want[256], out[256];

    (void)state;
    write_file(tpath(in, sizeof(in), "foreign.in"), input, IN_LEN);
    tpath(twice, sizeof(twice), "foreign.in2");
    assert_int_equal(sh("cat %s %s > %s", in, in, twice), 0);
    for (unsigned d = 0; d < NCODECS; d++) {
        struct weir_xform_options xo = xopts();
        struct feed f = {.data = input, .len = IN_LEN, .mode = FEED_EXTERNAL};
        const char *dec = codecs[d].chain[1];
        struct chain ch;

        assert_int_equal(chain_start(&ch, codecs[d].chain, 1, &f, &xo,
                                     tpath(weir, sizeof(weir), "weir.z"),
                                     false),
                         0);
        assert_int_equal(drive(&ch), 0);
        chain_free(&ch);
        assert_int_equal(sh("%s -c < %s > %s", codecs[d].tool, in,
                            tpath(tool, sizeof(tool), "tool.z")),
                         0);
        assert_int_equal(sh("%s -c %s > %s", codecs[d].tool, twice,
                            tpath(big, sizeof(big), "big.z")),
                         0);
        tpath(out, sizeof(out), "foreign.out");
        assert_int_equal(decode_file(dec, tool, out, false, NULL, NULL, NULL),
                         0);
        assert_file_is(out, input, IN_LEN);
        assert_int_equal(decode_file(dec, big, out, true, NULL, NULL, NULL), 0);
        assert_int_equal(sh("cmp -s %s %s", out, twice), 0);
        /* weir's members, the tool's, weir's again, the big frame. */
        assert_int_equal(sh("cat %s %s %s %s > %s", weir, tool, weir, big,
                            tpath(mixed, sizeof(mixed), "mixed.z")),
                         0);
        assert_int_equal(sh("cat %s %s %s %s > %s", in, in, in, twice,
                            tpath(want, sizeof(want), "mixed.want")),
                         0);
        assert_int_equal(decode_file(dec, mixed, out, false, NULL, NULL, NULL),
                         0);
        assert_int_equal(sh("cmp -s %s %s", out, want), 0);
    }
}

/*
 * Other writers' members that say their size: bgzip's BGZF blocks (a
 * gzip member of at most 64 KiB each, with a 'B','C' subfield) are cut
 * and decoded on both threads; a zstd skippable frame between weir's
 * frames is cut too, and makes nothing.
 */
static void bgzf_blocks_and_skippable_frames_are_cut(void **state)
{
    static const uint8_t skip[] = {0x5a, 0x2a, 0x4d, 0x18, 5,   0,  0,
                                   0,    'w',  'e',  'i',  'r', '!'};
    char in[256], bgz[256], weir[256], mixed[256], out[256];
    struct weir_xform_options xo = xopts();
    struct feed f = {.data = input, .len = IN_LEN, .mode = FEED_EXTERNAL};
    struct chain ch;
    uint64_t helped = 0;

    (void)state;
    write_file(tpath(in, sizeof(in), "bgzf.in"), input, IN_LEN);
    assert_int_equal(
        sh("bgzip -c %s > %s", in, tpath(bgz, sizeof(bgz), "bgzf.gz")), 0);
    tpath(out, sizeof(out), "bgzf.out");
    assert_int_equal(
        decode_file("gunzip", bgz, out, false, NULL, NULL, &helped), 0);
    assert_file_is(out, input, IN_LEN);
    assert_true(helped >= 8);

    assert_int_equal(chain_start(&ch, codecs[1].chain, 1, &f, &xo,
                                 tpath(weir, sizeof(weir), "skip.zst"), false),
                     0);
    assert_int_equal(drive(&ch), 0);
    chain_free(&ch);
    write_file(tpath(mixed, sizeof(mixed), "skip.frame"), skip, sizeof(skip));
    assert_int_equal(sh("cat %s %s %s > %s.all", weir, mixed, weir, mixed), 0);
    assert_int_equal(sh("cat %s %s > %s.want", in, in, out), 0);
    strcat(mixed, ".all");
    assert_int_equal(decode_file("unzstd", mixed, out, true, NULL, NULL, NULL),
                     0);
    assert_int_equal(sh("cmp -s %s %s.want", out, out), 0);
}

/*
 * A decoder's quiet source: sync hands on every member decoded so far,
 * waiting for the helper's; the member only partly there stays, and the
 * rest of the stream then decodes whole.
 */
static void decoder_sync_hands_on_whole_members(void **state)
{
    char in[256], packed[256], out[256];

    (void)state;
    write_file(tpath(in, sizeof(in), "dsync.in"), input, IN_LEN);
    for (unsigned d = 0; d < NCODECS; d++) {
        struct weir_xform_options xo = xopts();
        struct feed f = {.data = input, .len = IN_LEN, .mode = FEED_EXTERNAL};
        const char *spec = codecs[d].chain[1];
        struct chain ch;
        size_t len, got_len;
        uint8_t *z, *got;
        int rc;

        assert_int_equal(chain_start(&ch, codecs[d].chain, 1, &f, &xo,
                                     tpath(packed, sizeof(packed), "dsync.z"),
                                     false),
                         0);
        assert_int_equal(drive(&ch), 0);
        chain_free(&ch);
        z = read_file(packed, &len);
        assert_non_null(z);
        f = (struct feed){.data = z,
                          .len = len,
                          .mode = FEED_EXTERNAL,
                          .pause_at = len / 2 + 1};
        assert_int_equal(chain_start(&ch, &spec, 1, &f, &xo,
                                     tpath(out, sizeof(out), "dsync.out"),
                                     false),
                         0);
        assert_int_equal(drive(&ch), -EDEADLK);
        assert_true(f.paused);
        rc = weir_xform_sync(ch.x[0]);
        assert_true(rc == 0 || rc == -EAGAIN);
        assert_int_equal(drive(&ch), -EDEADLK);
        assert_false(weir_xform_stalled(ch.x[0]));
        /* About half the members are out, whole: a prefix of the input
         * that ends where a member does. */
        got = read_file(out, &got_len);
        assert_true(got_len > 0 && got_len < IN_LEN);
        assert_int_equal(got_len % MEMBER, 0);
        assert_memory_equal(got, input, got_len);
        free(got);
        feed_wake(&f, 0);
        assert_int_equal(drive(&ch), 0);
        chain_free(&ch);
        free(z);
        assert_file_is(out, input, IN_LEN);
    }
}

/*
 * Damage to weir's members: a byte changed inside the fourth member, the
 * last bytes cut off, garbage after the end. Each is -EBADMSG from the
 * decoder, at the damaged member's first byte, at the end, or inside the
 * garbage; no case ends as if the stream were whole, and what reached
 * the sink is the input's own bytes.
 */
static void damaged_members_are_errors(void **state)
{
    char weir[256], bad[256], out[256];

    (void)state;
    for (unsigned d = 0; d < NCODECS; d++) {
        struct weir_xform_options xo = xopts();
        struct feed f = {.data = input, .len = IN_LEN, .mode = FEED_EXTERNAL};
        size_t len, at = 0;
        uint8_t *z;
        struct chain ch;

        assert_int_equal(chain_start(&ch, codecs[d].chain, 1, &f, &xo,
                                     tpath(weir, sizeof(weir), "dmg.z"), false),
                         0);
        assert_int_equal(drive(&ch), 0);
        chain_free(&ch);
        z = read_file(weir, &len);
        assert_non_null(z);
        for (int kind = 0; kind < 3; kind++) {
            uint64_t offset = 0;
            int x_rc = 0, rc;
            size_t glen;
            uint8_t *got;

            tpath(bad, sizeof(bad), "dmg.bad");
            if (kind == 0) {
                /* Past the third member's end: 3.5 members in. */
                at = len * 7 / (2 * (IN_LEN / MEMBER));
                z[at] ^= 0x5a;
                write_file(bad, z, len);
                z[at] ^= 0x5a;
            } else if (kind == 1) {
                at = len - 3;
                write_file(bad, z, at);
            } else {
                at = len;
                write_file(bad, z, len);
                assert_int_equal(sh("printf garbage >> %s", bad), 0);
            }
            rc = decode_file(codecs[d].chain[1], bad,
                             tpath(out, sizeof(out), "dmg.out"), false, &x_rc,
                             &offset, NULL);
            assert_true(rc < 0 && rc != -EDEADLK);
            assert_int_equal(x_rc, -EBADMSG);
            /* The damaged member's start, the end, inside the garbage. */
            if (kind == 0)
                assert_true(offset > 0 && offset <= at);
            else if (kind == 1)
                assert_int_equal(offset, at);
            else
                assert_true(offset >= at && offset <= at + 7);
            /* Whatever reached the sink is the input's own bytes. */
            got = read_file(out, &glen);
            assert_true(glen <= IN_LEN);
            assert_memory_equal(got, input, glen);
            free(got);
        }
        free(z);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(members_from_both_threads_come_out_in_order),
        cmocka_unit_test(a_busy_helper_is_not_lent_members),
        cmocka_unit_test(destroy_while_the_helper_holds_members),
        cmocka_unit_test(sync_waits_for_the_helper),
        cmocka_unit_test(foreign_members_are_streamed),
        cmocka_unit_test(bgzf_blocks_and_skippable_frames_are_cut),
        cmocka_unit_test(decoder_sync_hands_on_whole_members),
        cmocka_unit_test(damaged_members_are_errors),
    };

    return cmocka_run_group_tests(tests, setup, teardown);
}
