/*
 * core_read.c - suites `readable-read`, `readable-read-buffered` and
 * `readable-async-iterator`: Node's benchmark/webstreams readable-read.js,
 * readable-read-buffered.js and readable-async-iterator.js.
 *
 * Node awaits each read; here a read that finds its chunk (queued, or
 * enqueued by the pull it triggers) returns it directly, which is the
 * point of the synchronous fast path. No case parks, so no callback is
 * needed, but one is passed as the API requires and would fail the run.
 */
#include <errno.h>

#include "core_bench.h"

#define READ_N 100000u

static uint8_t one_a[1] = {'a'};

/* Built once: a chunk assembled field by field right before the call
 * would be copied through a store-forwarding stall on every enqueue. */
static const struct weir_chunk one_chunk = {NULL, one_a, 1};

static void never_cb(void *ctx, int rc, struct weir_chunk chunk)
{
    (void)ctx;
    (void)chunk;
    fprintf(stderr, "weir-bench: a read parked (rc %d)\n", rc);
    exit(1);
}

/* readable-read type=normal: an endless source, one 1-byte chunk per
 * pull; n reads. */
static int one_pull(struct weir_readable *rs, void *ctx)
{
    (void)ctx;
    return weir_readable_enqueue(rs, one_chunk);
}

static const struct weir_source_ops one_source = {.pull = one_pull};

static uint64_t read_normal(void *arg)
{
    struct weir_readable *rs;
    struct weir_reader r;
    struct weir_chunk c;
    uint64_t bytes = 0;

    (void)arg;
    core_ok(weir_readable_create(&rs, &one_source, NULL, NULL), "readable");
    core_ok(weir_reader_acquire(&r, rs), "reader");
    for (uint32_t i = 0; i < READ_N; i++) {
        core_ok(weir_reader_read(&r, &c, never_cb, NULL), "read");
        bytes += c.len;
    }
    core_check(bytes == READ_N, "readable-read normal bytes");
    weir_reader_release(&r);
    weir_readable_destroy(rs);
    return READ_N;
}

/* readable-read type=byob: a byte source answering each one-byte BYOB
 * read in place through the BYOB request (the zero-copy path, as the Node
 * peer does with controller.byobRequest); n reads into the same buffer. */
static int byob_pull(struct weir_readable *rs, void *ctx)
{
    uint8_t *buf;
    size_t len;

    (void)ctx;
    if (weir_readable_byob_request(rs, &buf, &len))
        return -EPROTO;
    buf[0] = 'a';
    return weir_readable_byob_respond(rs, 1);
}

static const struct weir_source_ops byob_source = {.pull = byob_pull};

static uint64_t read_byob(void *arg)
{
    struct weir_readable_options o = {.byte_stream = true};
    struct weir_readable *rs;
    struct weir_reader r;
    struct weir_chunk c;
    uint8_t view[1];
    uint64_t bytes = 0;

    (void)arg;
    core_ok(weir_readable_create(&rs, &byob_source, NULL, &o), "readable");
    core_ok(weir_reader_acquire(&r, rs), "reader");
    for (uint32_t i = 0; i < READ_N; i++) {
        view[0] = 0;
        core_ok(weir_reader_read_byob(&r, view, 1, 1, &c, never_cb, NULL),
                "byob read");
        bytes += view[0] == 'a' ? c.len : 0;
    }
    core_check(bytes == READ_N, "readable-read byob bytes");
    weir_reader_release(&r);
    weir_readable_destroy(rs);
    return READ_N;
}

/* readable-read-buffered: hwm B; start enqueues B chunks, each pull
 * enqueues up to B more, the source closes after n. The loops are the
 * Node peer's: the count for a pull is worked out and added once, before
 * its enqueues. */
struct buffered {
    uint32_t size, enqueued;
};

static int buf_fill(struct weir_readable *rs, struct buffered *b, uint32_t k)
{
    bool last = (b->enqueued += k) >= READ_N;

    for (; k > 0; k--) {
        int rc = weir_readable_enqueue(rs, one_chunk);

        if (rc)
            return rc;
    }
    return last ? weir_readable_close(rs) : 0;
}

static int buf_start(struct weir_readable *rs, void *ctx)
{
    struct buffered *b = ctx;

    return buf_fill(rs, b, b->size);
}

static int buf_pull(struct weir_readable *rs, void *ctx)
{
    struct buffered *b = ctx;
    uint32_t left = READ_N - b->enqueued;

    return buf_fill(rs, b, b->size < left ? b->size : left);
}

static const struct weir_source_ops buf_source = {.start = buf_start,
                                                  .pull = buf_pull};

static uint64_t read_buffered(void *arg)
{
    struct buffered *b = arg;
    struct weir_readable_options o = {.strategy = {.hwm = b->size}};
    struct weir_readable *rs;
    struct weir_reader r;
    struct weir_chunk c;
    uint32_t reads = 0;
    uint64_t bytes = 0;
    int rc;

    b->enqueued = 0;
    core_ok(weir_readable_create(&rs, &buf_source, b, &o), "readable");
    core_ok(weir_reader_acquire(&r, rs), "reader");
    while ((rc = weir_reader_read(&r, &c, never_cb, NULL)) == 0) {
        reads++;
        bytes += c.len;
    }
    core_check(rc == WEIR_DONE && reads == READ_N && bytes == READ_N,
               "buffered reads");
    weir_reader_release(&r);
    weir_readable_destroy(rs);
    return READ_N;
}

/* readable-async-iterator: the iterator loop over an endless source of
 * 1s (one-byte chunks, the length standing for the number), summing until
 * the sum passes n; breaking out cancels the stream. */
static int sum_each(void *ctx, struct weir_chunk chunk)
{
    uint64_t *sum = ctx;

    *sum += chunk.len;
    return *sum > READ_N;
}

static void iter_done(void *ctx, int rc)
{
    (void)ctx;
    fprintf(stderr, "weir-bench: the iterator parked (rc %d)\n", rc);
    exit(1);
}

static uint64_t async_iterator(void *arg)
{
    struct weir_readable *rs;
    struct weir_iter it;
    uint64_t sum = 0;

    (void)arg;
    core_ok(weir_readable_create(&rs, &one_source, NULL, NULL), "readable");
    core_ok(weir_iter_run(&it, rs, sum_each, iter_done, &sum), "iterate");
    core_check(sum == READ_N + 1, "iterator sum");
    weir_readable_destroy(rs);
    return READ_N;
}

int bench_core_readable_read(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    core_measure("readable-read", "type=normal n=100000", read_normal, NULL);
    core_measure("readable-read", "type=byob n=100000", read_byob, NULL);
    return 0;
}

int bench_core_readable_read_buffered(int argc, char **argv)
{
    static const uint32_t sizes[] = {1, 10, 100, 1000};
    char params[64];

    (void)argc;
    (void)argv;
    for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
        struct buffered b = {.size = sizes[i]};

        snprintf(params, sizeof(params), "bufferSize=%u n=%u", sizes[i],
                 READ_N);
        core_measure("readable-read-buffered", params, read_buffered, &b);
    }
    return 0;
}

int bench_core_readable_async_iterator(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    core_measure("readable-async-iterator", "n=100000", async_iterator, NULL);
    return 0;
}
