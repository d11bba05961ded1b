/*
 * core_tee.c - suites `tee` (Node's benchmark/webstreams readable-tee
 * workload: n chunks, both branches read in lockstep) and `tee-memory`
 * (one fast and one slow branch: the slow branch's peak queue, in bytes,
 * under the block policy).
 */
#include <errno.h>

#include "core_bench.h"

#define TEE_N 100000u

struct tee_case {
    bool bytes;
    uint32_t pulled;
};

static uint8_t sixteen[16] = "aaaaaaaaaaaaaaa";
static const struct weir_chunk chunk_a = {NULL, sixteen, 1};
static const struct weir_chunk chunk_16 = {NULL, sixteen, 16};

static int tee_pull(struct weir_readable *rs, void *ctx)
{
    struct tee_case *c = ctx;

    if (c->pulled++ >= TEE_N)
        return weir_readable_close(rs);
    return weir_readable_enqueue(rs, c->bytes ? chunk_16 : chunk_a);
}

static const struct weir_source_ops tee_source = {.pull = tee_pull};

static void never_cb(void *ctx, int rc, struct weir_chunk chunk)
{
    (void)ctx;
    (void)chunk;
    fprintf(stderr, "weir-bench: a tee read parked (rc %d)\n", rc);
    exit(1);
}

static uint64_t tee_once(void *arg)
{
    struct tee_case *c = arg;
    struct weir_readable_options o = {.byte_stream = c->bytes};
    struct weir_readable *rs;
    struct weir_tee *t;
    struct weir_reader r1, r2;
    struct weir_chunk x, y;
    uint32_t reads = 0;
    int rc1, rc2;

    c->pulled = 0;
    if (!c->bytes)
        o.strategy.hwm = 1;
    core_ok(weir_readable_create(&rs, &tee_source, c, &o), "readable");
    core_ok(weir_tee_create(&t, rs, 2, NULL), "tee");
    core_ok(weir_reader_acquire(&r1, weir_tee_branch(t, 0)), "reader 1");
    core_ok(weir_reader_acquire(&r2, weir_tee_branch(t, 1)), "reader 2");
    for (;;) {
        rc1 = weir_reader_read(&r1, &x, never_cb, NULL);
        rc2 = weir_reader_read(&r2, &y, never_cb, NULL);
        if (rc1 || rc2)
            break;
        reads++;
    }
    core_check(rc1 == WEIR_DONE && rc2 == WEIR_DONE && reads == TEE_N,
               "tee lockstep reads");
    weir_reader_release(&r1);
    weir_reader_release(&r2);
    weir_tee_destroy(t);
    weir_readable_destroy(rs);
    return TEE_N;
}

int bench_core_tee(int argc, char **argv)
{
    struct tee_case normal = {.bytes = false}, bytes = {.bytes = true};

    (void)argc;
    (void)argv;
    core_measure("tee", "type=normal n=100000", tee_once, &normal);
    core_measure("tee", "type=bytes n=100000", tee_once, &bytes);
    return 0;
}

/*
 * tee-memory: the same workload as the Node peer's: n chunks of 1 KiB, a
 * fast branch reading every chunk and a slow one reading one chunk per
 * `every` the fast one read, then draining. Node's tee enqueues into both
 * branches as fast as the fast one reads, so its slow branch grows to
 * nearly n KiB. Under the block policy the fast branch waits for the slow
 * one instead (its read parks, and the slow branch's next read releases
 * it), so the slow branch never holds more than its high-water mark: here
 * the spec's default for tee branches, one chunk, in bytes.
 */
#define MEM_N     100000u
#define MEM_SIZE  1024u
#define MEM_EVERY 100u

static uint8_t mem_bytes[MEM_SIZE];
static const struct weir_chunk mem_chunk = {NULL, mem_bytes, MEM_SIZE};

struct mem_case {
    uint32_t pulled, nf, ns;
    bool fast_parked, fast_done;
};

static int mem_pull(struct weir_readable *rs, void *ctx)
{
    struct mem_case *m = ctx;

    if (m->pulled++ >= MEM_N)
        return weir_readable_close(rs);
    return weir_readable_enqueue(rs, mem_chunk);
}

static const struct weir_source_ops mem_source = {.pull = mem_pull};

static void fast_cb(void *ctx, int rc, struct weir_chunk chunk)
{
    struct mem_case *m = ctx;

    (void)chunk;
    m->fast_parked = false;
    if (rc == 0)
        m->nf++;
    else
        m->fast_done = true;
}

static int slow_read(struct mem_case *m, struct weir_reader *r)
{
    struct weir_chunk c;
    int rc = weir_reader_read(r, &c, never_cb, NULL);

    if (rc == 0)
        m->ns++;
    return rc;
}

int bench_core_tee_memory(int argc, char **argv)
{
    const struct weir_tee_branch_options bo[2] = {
        {.strategy = {.hwm = MEM_SIZE, .bytes = true},
         .policy = WEIR_TEE_BLOCK},
        {.strategy = {.hwm = MEM_SIZE, .bytes = true},
         .policy = WEIR_TEE_BLOCK},
    };
    struct mem_case m = {0};
    struct weir_readable *rs, *slow;
    struct weir_tee *t;
    struct weir_reader rf, rsl;
    struct weir_chunk c;
    size_t peak = 0;

    (void)argc;
    (void)argv;
    core_ok(weir_readable_create(&rs, &mem_source, &m, NULL), "readable");
    core_ok(weir_tee_create(&t, rs, 2, bo), "tee");
    slow = weir_tee_branch(t, 1);
    core_ok(weir_reader_acquire(&rf, weir_tee_branch(t, 0)), "reader fast");
    core_ok(weir_reader_acquire(&rsl, slow), "reader slow");
    while (!m.fast_done) {
        uint32_t before = m.nf;
        int rc = weir_reader_read(&rf, &c, fast_cb, &m);

        if (rc == 0)
            m.nf++;
        else if (rc == WEIR_PENDING)
            m.fast_parked = true;
        else
            m.fast_done = true;
        if (weir_readable_queued(slow) > peak)
            peak = weir_readable_queued(slow);
        /* The slow branch's turn: one read per `every` fast reads, or
         * whenever the fast branch is held back waiting for it. */
        if ((m.nf != before && m.nf % MEM_EVERY == 0) || m.fast_parked)
            core_check(slow_read(&m, &rsl) == 0, "slow read");
        core_check(!m.fast_parked, "the slow read released the fast one");
    }
    while (slow_read(&m, &rsl) == 0)
        ;
    core_check(m.nf == MEM_N && m.ns == MEM_N, "tee-memory chunk counts");
    printf("tee-memory n=%u chunkSize=%u slowEvery=%u: %zu\n", MEM_N, MEM_SIZE,
           MEM_EVERY, peak);
    fflush(stdout);
    weir_reader_release(&rf);
    weir_reader_release(&rsl);
    weir_tee_destroy(t);
    weir_readable_destroy(rs);
    return 0;
}
