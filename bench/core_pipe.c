/*
 * core_pipe.c - suite `pipe-to`: Node's benchmark/webstreams/pipe-to.js. A
 * source enqueues the same 1 KiB buffer n times and closes, piped into a
 * sink whose write does nothing; count strategy, hwm H on both sides.
 */
#include "core_bench.h"

#define PIPE_N 500000u

struct pipe_case {
    size_t hwm;
    uint32_t pulled, written;
};

static uint8_t kib[1024];
static const struct weir_chunk kib_chunk = {NULL, kib, sizeof(kib)};

static int pt_pull(struct weir_readable *rs, void *ctx)
{
    struct pipe_case *c = ctx;

    if (c->pulled++ < PIPE_N)
        return weir_readable_enqueue(rs, kib_chunk);
    return weir_readable_close(rs);
}

static int pt_write(struct weir_writable *ws, void *ctx,
                    struct weir_chunk chunk)
{
    struct pipe_case *c = ctx;

    (void)ws;
    (void)chunk;
    c->written++;
    return 0;
}

static const struct weir_source_ops pt_source = {.pull = pt_pull};
static const struct weir_sink_ops pt_sink = {.write = pt_write};

static uint64_t pipe_to_once(void *arg)
{
    struct pipe_case *c = arg;
    struct weir_readable_options ro = {.strategy = {.hwm = c->hwm}};
    struct weir_writable_options wo = {.strategy = {.hwm = c->hwm}};
    struct weir_readable *rs;
    struct weir_writable *ws;

    c->pulled = c->written = 0;
    core_ok(weir_readable_create(&rs, &pt_source, c, &ro), "readable");
    core_ok(weir_writable_create(&ws, &pt_sink, c, &wo), "writable");
    core_ok(weir_pipe_to(rs, ws, NULL, NULL, NULL), "pipe");
    core_check(c->written == PIPE_N, "pipe-to wrote every chunk");
    weir_readable_destroy(rs);
    weir_writable_destroy(ws);
    return PIPE_N;
}

int bench_core_pipe_to(int argc, char **argv)
{
    static const size_t hwms[] = {1, 1024, 4096};
    char params[96];

    (void)argc;
    (void)argv;
    for (size_t i = 0; i < sizeof(hwms) / sizeof(hwms[0]); i++) {
        struct pipe_case c = {.hwm = hwms[i]};

        snprintf(params, sizeof(params),
                 "highWaterMarkR=%zu highWaterMarkW=%zu n=%u", hwms[i], hwms[i],
                 PIPE_N);
        core_measure("pipe-to", params, pipe_to_once, &c);
    }
    return 0;
}
