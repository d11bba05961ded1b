/*
 * core_lifecycle.c - suites `lifecycle` (per iteration a new stream emits
 * four 1 KiB chunks and closes, consumed by a reader, the iterator loop, a
 * pipe into a counting sink, or a pipe through an identity transform) and
 * `creation` (construction cost of each stream kind). Unlike Node's
 * numbers, which leave the objects to the garbage collector, these include
 * freeing every object.
 */
#include <string.h>

#include "core_bench.h"

#define LIFE_N 50000u

static uint8_t kib[1024];
static const struct weir_chunk kib_chunk = {NULL, kib, sizeof(kib)};

struct four {
    uint32_t i;
    uint64_t chunks;
};

static int four_pull(struct weir_readable *rs, void *ctx)
{
    struct four *f = ctx;

    if (f->i++ < 4)
        return weir_readable_enqueue(rs, kib_chunk);
    return weir_readable_close(rs);
}

static const struct weir_source_ops four_source = {.pull = four_pull};

static void never_cb(void *ctx, int rc, struct weir_chunk chunk)
{
    (void)ctx;
    (void)chunk;
    fprintf(stderr, "weir-bench: a lifecycle read parked (rc %d)\n", rc);
    exit(1);
}

static void never_done(void *ctx, int rc)
{
    (void)ctx;
    fprintf(stderr, "weir-bench: a lifecycle operation parked (rc %d)\n", rc);
    exit(1);
}

/* pipeThrough finishes inside the reads that drain the transform, so its
 * completion arrives through the callback. */
static void count_done(void *ctx, int rc)
{
    int *done = ctx;

    core_ok(rc, "pipe through result");
    ++*done;
}

static int count_each(void *ctx, struct weir_chunk chunk)
{
    struct four *f = ctx;

    f->chunks += chunk.len == sizeof(kib);
    return 0;
}

static int count_write(struct weir_writable *ws, void *ctx,
                       struct weir_chunk chunk)
{
    struct four *f = ctx;

    (void)ws;
    (void)chunk;
    f->chunks++;
    return 0;
}

static const struct weir_sink_ops count_sink = {.write = count_write};

static void drain(struct weir_readable *rs, struct four *f)
{
    struct weir_reader r;
    struct weir_chunk c;
    int rc;

    core_ok(weir_reader_acquire(&r, rs), "reader");
    while ((rc = weir_reader_read(&r, &c, never_cb, NULL)) == 0)
        f->chunks++;
    core_check(rc == WEIR_DONE, "read to the end");
    weir_reader_release(&r);
}

enum life_kind { LIFE_READABLE, LIFE_ITER, LIFE_PIPE_TO, LIFE_PIPE_THROUGH };

static uint64_t lifecycle_once(void *arg)
{
    enum life_kind kind = *(enum life_kind *)arg;
    struct four f = {0};

    for (uint32_t n = 0; n < LIFE_N; n++) {
        struct weir_readable *rs;

        f.i = 0;
        core_ok(weir_readable_create(&rs, &four_source, &f, NULL), "readable");
        switch (kind) {
        case LIFE_READABLE:
            drain(rs, &f);
            break;
        case LIFE_ITER: {
            struct weir_iter it;

            core_ok(weir_iter_run(&it, rs, count_each, never_done, &f),
                    "iterate");
            break;
        }
        case LIFE_PIPE_TO: {
            struct weir_writable *ws;

            core_ok(weir_writable_create(&ws, &count_sink, &f, NULL),
                    "writable");
            core_ok(weir_pipe_to(rs, ws, NULL, never_done, NULL), "pipe");
            weir_writable_destroy(ws);
            break;
        }
        case LIFE_PIPE_THROUGH: {
            struct weir_transform *tf;
            int rc, done = 0;

            core_ok(weir_transform_create(&tf, NULL, NULL, NULL), "transform");
            /* Parks until the reader below pulls: hwm 0 on the way out. */
            rc = weir_pipe_through(rs, tf, NULL, count_done, &done);
            core_check(rc == WEIR_PENDING, "pipe through parks");
            drain(weir_transform_readable(tf), &f);
            core_check(done == 1, "pipe through finished");
            weir_transform_destroy(tf);
            break;
        }
        }
        weir_readable_destroy(rs);
    }
    core_check(f.chunks == 4ull * LIFE_N, "lifecycle chunk count");
    return LIFE_N;
}

int bench_core_lifecycle(int argc, char **argv)
{
    static const struct {
        enum life_kind kind;
        const char *name;
    } kinds[] = {
        {LIFE_READABLE, "readable"},
        {LIFE_ITER, "async-iterator"},
        {LIFE_PIPE_TO, "pipe-to"},
        {LIFE_PIPE_THROUGH, "pipe-through"},
    };
    char params[64];

    (void)argc;
    (void)argv;
    for (size_t i = 0; i < sizeof(kinds) / sizeof(kinds[0]); i++) {
        enum life_kind k = kinds[i].kind;

        snprintf(params, sizeof(params), "kind=%s n=%u", kinds[i].name, LIFE_N);
        core_measure("lifecycle", params, lifecycle_once, &k);
    }
    return 0;
}

enum make_kind { MAKE_READABLE, MAKE_WRITABLE, MAKE_TRANSFORM };

static uint64_t creation_once(void *arg)
{
    enum make_kind kind = *(enum make_kind *)arg;

    for (uint32_t n = 0; n < LIFE_N; n++) {
        switch (kind) {
        case MAKE_READABLE: {
            struct weir_readable *rs;

            core_ok(weir_readable_create(&rs, NULL, NULL, NULL), "create");
            weir_readable_destroy(rs);
            break;
        }
        case MAKE_WRITABLE: {
            struct weir_writable *ws;

            core_ok(weir_writable_create(&ws, NULL, NULL, NULL), "create");
            weir_writable_destroy(ws);
            break;
        }
        case MAKE_TRANSFORM: {
            struct weir_transform *tf;

            core_ok(weir_transform_create(&tf, NULL, NULL, NULL), "create");
            weir_transform_destroy(tf);
            break;
        }
        }
    }
    return LIFE_N;
}

int bench_core_creation(int argc, char **argv)
{
    static const struct {
        enum make_kind kind;
        const char *name;
    } kinds[] = {
        {MAKE_READABLE, "ReadableStream"},
        {MAKE_WRITABLE, "WritableStream"},
        {MAKE_TRANSFORM, "TransformStream"},
    };
    char params[64];

    (void)argc;
    (void)argv;
    for (size_t i = 0; i < sizeof(kinds) / sizeof(kinds[0]); i++) {
        enum make_kind k = kinds[i].kind;

        snprintf(params, sizeof(params), "kind=%s n=%u", kinds[i].name, LIFE_N);
        core_measure("creation", params, creation_once, &k);
    }
    return 0;
}
