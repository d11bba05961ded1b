/*
 * fuzz_decode.c - libFuzzer target: bytes from the network or a file
 * through a decompressing transform (FUZZ_SPEC: "gunzip" or "unzstd"),
 * driven with the stream core the way a pipeline drives it, with a small
 * output pool so the transform parks and resumes. The first byte of the
 * input picks how the rest is cut into chunks and whether the transform
 * has a helper loop (another thread), which makes it cut and decode whole
 * members there and here.
 *
 * What must hold: the run ends (no stall for good: a parked transform
 * moves at once, or once the helper is done), a failure is -EBADMSG,
 * -EMSGSIZE or the sink's own cap, the counters agree with what the sink
 * got, and every pool buffer comes back.
 */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "weir/loop.h"
#include "weir/pipe.h"
#include "weir/pool.h"
#include "weir/readable.h"
#include "weir/transform.h"
#include "weir/writable.h"
#include "weir/xform.h"

/* A bomb is cut here rather than decoded whole: an input of a few KiB
 * can stand for gigabytes. */
#define OUT_CAP  (8u << 20)
#define OUT_BUFS 8

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Resumes of a transform waiting for its helper before the run counts
 * as stuck: far more than any member's decoding takes. */
#define HELPER_SPINS 50000000u

static struct weir_pool *pool;
static struct weir_loop *helper;
static _Atomic int helper_ready;

/* The helper: a loop on its own thread, for the whole process. */
static void *helper_main(void *arg)
{
    (void)arg;
    if (weir_loop_create(&helper, &(struct weir_loop_options){.slot = 1}))
        abort();
    /* Release: publishes `helper`; pairs with the acquire below. */
    atomic_store_explicit(&helper_ready, 1, memory_order_release);
    weir_loop_run(helper);
    return NULL;
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    struct weir_pool_options o = {.count = OUT_BUFS, .threads = 1};
    pthread_t t;

    (void)argc;
    (void)argv;
    if (weir_pool_create(&pool, &o) != 0 ||
        pthread_create(&t, NULL, helper_main, NULL) != 0)
        abort();
    pthread_detach(t);
    while (!atomic_load_explicit(&helper_ready, memory_order_acquire))
        sched_yield();
    return 0;
}

struct feed {
    const uint8_t *data;
    size_t len, off;
    uint32_t cut; /* 0: sizes from the table below */
    unsigned step;
};

static const uint32_t cuts[] = {1, 7, 512, 3, 4096, 64, 2, 33333};

static int feed_pull(struct weir_readable *rs, void *ctx)
{
    struct feed *f = ctx;
    size_t n = f->cut ? f->cut : cuts[f->step++ % (sizeof(cuts) / 4)];

    if (f->off == f->len) {
        weir_readable_close(rs);
        return 0;
    }
    if (n > f->len - f->off)
        n = f->len - f->off;
    f->off += n;
    return weir_readable_enqueue(
        rs, (struct weir_chunk){NULL, (uint8_t *)f->data + f->off - n,
                                (uint32_t)n});
}

static const struct weir_source_ops feed_ops = {.pull = feed_pull};

struct sink {
    uint64_t bytes;
    int closes;
};

static int sink_write(struct weir_writable *ws, void *ctx, struct weir_chunk c)
{
    struct sink *k = ctx;

    (void)ws;
    k->bytes += c.len;
    weir_chunk_unref(&c, 0);
    return k->bytes > OUT_CAP ? -EFBIG : 0;
}

static int sink_close(struct weir_writable *ws, void *ctx)
{
    (void)ws;
    ((struct sink *)ctx)->closes++;
    return 0;
}

static const struct weir_sink_ops sink_ops = {.write = sink_write,
                                              .close = sink_close};

struct end {
    bool done;
    int rc;
};

static void end_cb(void *ctx, int rc)
{
    struct end *e = ctx;

    e->done = true;
    e->rc = rc;
}

static void end_set(struct end *e, int rc)
{
    if (rc != WEIR_PENDING)
        end_cb(e, rc);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct weir_xform_options xo = {.pool = pool, .burst = 2};
    struct weir_readable_options ro = {.strategy = {.hwm = 1}};
    struct feed f = {0};
    struct sink k = {0};
    struct end in = {0}, out = {0};
    struct weir_readable *src = NULL;
    struct weir_writable *dst = NULL;
    struct weir_xform *x = NULL;
    struct weir_transform *tf;
    struct weir_xform_stats st;
    struct weir_pool_stats ps;

    if (size == 0)
        return 0;
    /* 0-127: chunks of that size (0: the table's); 128 and up: the
     * table's, and from 192 with the helper. */
    f.cut = data[0] < 128 ? data[0] : 0;
    if (data[0] >= 192)
        xo.helper = helper;
    f.data = data + 1;
    f.len = size - 1;
    if (weir_xform_create(&x, FUZZ_SPEC, &xo) != 0 ||
        weir_readable_create(&src, &feed_ops, &f, &ro) != 0 ||
        weir_writable_create(&dst, &sink_ops, &k, NULL) != 0)
        abort();
    tf = weir_xform_transform(x);
    end_set(&in, weir_pipe_through(src, tf, NULL, end_cb, &in));
    end_set(&out,
            weir_pipe_to(weir_transform_readable(tf), dst, NULL, end_cb, &out));
    for (unsigned spins = 0; !out.done; spins++) {
        /* Nothing else holds a buffer: a parked transform must move, at
         * once without a helper. */
        if (!weir_xform_stalled(x))
            abort();
        if (weir_xform_resume(x) != WEIR_PENDING)
            spins = 0;
        else if (!xo.helper || spins > HELPER_SPINS)
            abort();
        else
            sched_yield();
    }
    if (out.rc != 0 && out.rc != -EBADMSG && out.rc != -EMSGSIZE &&
        out.rc != -EFBIG)
        abort();
    weir_xform_stats(x, &st);
    if (st.out_bytes < k.bytes || (out.rc == 0 && st.out_bytes != k.bytes) ||
        (out.rc == 0 && (k.closes != 1 || st.in_bytes != f.len)))
        abort();
    weir_xform_destroy(x);
    weir_readable_destroy(src);
    weir_writable_destroy(dst);
    weir_pool_reclaim(pool);
    weir_pool_stats(pool, &ps);
    if (ps.in_use != 0)
        abort();
    return 0;
}
