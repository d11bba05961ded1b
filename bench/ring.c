/*
 * ring.c - suite `ring`: two threads, pinned to two different CPUs, move
 * pointer-sized items through a 1024-slot SPSC ring, one item at a time and
 * in batches of 16 and 64, through weir's ring and through its peers
 * (Concurrency Kit's ck_ring, DPDK's rte_ring in SP/SC mode).
 *
 *   weir-bench ring [items=N] [reps=N] [batch=B] [impl=weir|ck|rte]
 *
 * One line per case, `ring impl=I batch=B items=N: <items per second>`, the
 * best of `reps` runs (3 by default: the machine is shared, and the best run
 * is the one least disturbed by others), then the ratio of weir to each peer
 * per batch size.
 */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"
#include "ring_peer.h"

#define RING_SLOTS    1024u
#define DEFAULT_ITEMS 100000000ull
#define DEFAULT_REPS  3

static const struct ring_impl *const impls[] = {
    &ring_impl_weir,
    &ring_impl_ck,
    &ring_impl_rte,
};
#define NIMPLS (sizeof(impls) / sizeof(impls[0]))

static const uint32_t batches[] = {1, 16, 64};
#define NBATCHES (sizeof(batches) / sizeof(batches[0]))

struct run {
    const struct ring_impl *impl;
    void *ring;
    uint64_t n;
    uint32_t batch;
    int cpu[2]; /* producer's and consumer's CPU, -1 = not pinned */
    atomic_int ready;
    atomic_int go;
    struct ring_check check;
};

struct side {
    struct run *run;
    int consumer;
};

static void pin(int cpu)
{
    cpu_set_t set;

    if (cpu < 0)
        return;
    CPU_ZERO(&set);
    CPU_SET(cpu, &set);
    /* Best effort: an unpinned run is still a valid, noisier, run. */
    (void)pthread_setaffinity_np(pthread_self(), sizeof(set), &set);
}

static void *side_main(void *arg)
{
    struct side *s = arg;
    struct run *r = s->run;

    pin(r->cpu[s->consumer]);
    /* Relaxed: only a count; the go flag below is what orders the start. */
    atomic_fetch_add_explicit(&r->ready, 1, memory_order_relaxed);
    /* Acquire pairs with the release store of go in run_once: the ring's
     * setup by the main thread is visible before either side touches it. */
    while (!atomic_load_explicit(&r->go, memory_order_acquire))
        ring_bench_relax();
    if (s->consumer)
        r->impl->consume(r->ring, r->n, r->batch, &r->check);
    else
        r->impl->produce(r->ring, r->n, r->batch);
    return NULL;
}

/* Chooses two distinct CPUs this process may run on, or -1s. */
static void pick_cpus(int cpu[2])
{
    cpu_set_t set;
    int found = 0;

    cpu[0] = cpu[1] = -1;
    if (sched_getaffinity(0, sizeof(set), &set) != 0)
        return;
    for (int c = 0; c < CPU_SETSIZE && found < 2; c++)
        if (CPU_ISSET(c, &set))
            cpu[found++] = c;
    if (found < 2)
        cpu[0] = cpu[1] = -1;
}

/* One timed transfer. Returns the rate; -1 when the ring cannot be set up
 * here, -2 when the items did not arrive intact (reason in *why). */
static double run_once(const struct ring_impl *impl, uint64_t n, uint32_t batch,
                       const char **why)
{
    struct run r = {.impl = impl, .n = n, .batch = batch};
    struct side sides[2] = {{&r, 0}, {&r, 1}};
    pthread_t th[2];
    uint64_t t0, t1;

    r.ring = impl->create(RING_SLOTS, why);
    if (!r.ring)
        return -1.0;
    pick_cpus(r.cpu);
    atomic_init(&r.ready, 0);
    atomic_init(&r.go, 0);
    for (int i = 0; i < 2; i++)
        if (pthread_create(&th[i], NULL, side_main, &sides[i]) != 0) {
            *why = "pthread_create failed";
            /* The first thread, if any, is waiting for go: let it run a
             * zero-length transfer. */
            r.n = 0;
            atomic_store_explicit(&r.go, 1, memory_order_release);
            if (i == 1)
                pthread_join(th[0], NULL);
            impl->destroy(r.ring);
            return -1.0;
        }
    while (atomic_load_explicit(&r.ready, memory_order_relaxed) < 2)
        sched_yield();
    t0 = bench_now_ns();
    /* Release pairs with the acquire loads of go in side_main. */
    atomic_store_explicit(&r.go, 1, memory_order_release);
    pthread_join(th[0], NULL);
    pthread_join(th[1], NULL);
    t1 = bench_now_ns();
    impl->destroy(r.ring);

    if (r.check.count != n || r.check.misplaced != 0 ||
        r.check.sum != n * (n + 1) / 2) {
        *why = "FAILED: items lost, duplicated or reordered";
        fprintf(stderr,
                "ring impl=%s batch=%u: received %llu items, sum %llu, "
                "%llu out of place\n",
                impl->name, batch, (unsigned long long)r.check.count,
                (unsigned long long)r.check.sum,
                (unsigned long long)r.check.misplaced);
        return -2.0;
    }
    return t1 > t0 ? (double)n * 1e9 / (double)(t1 - t0) : 0.0;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;

    return (x > y) - (x < y);
}

/* Sorts v in place; 0 for an empty set. */
static double median(double *v, size_t n)
{
    if (n == 0)
        return 0.0;
    qsort(v, n, sizeof(*v), cmp_double);
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

static int parse_u64(const char *arg, const char *key, uint64_t *out)
{
    size_t k = strlen(key);
    char *end;

    if (strncmp(arg, key, k) != 0 || arg[k] != '=')
        return 0;
    errno = 0;
    *out = strtoull(arg + k + 1, &end, 10);
    if (errno || *end || end == arg + k + 1)
        return -1;
    return 1;
}

int bench_ring(int argc, char **argv)
{
    uint64_t items = DEFAULT_ITEMS, reps = DEFAULT_REPS, only_batch = 0;
    const char *only_impl = NULL;
    double rate[NIMPLS][NBATCHES] = {{0}};
    /* Per round, weir's rate over each peer's: the two ran seconds apart,
     * so the ratio of one round is little moved by load that comes and
     * goes, which the best-of rates can be. */
    double *paired = NULL;
    size_t npaired[NIMPLS][NBATCHES] = {{0}};
    int rc = 0;

    for (int i = 1; i < argc; i++) {
        int a = parse_u64(argv[i], "items", &items);
        if (a == 0)
            a = parse_u64(argv[i], "reps", &reps);
        if (a == 0)
            a = parse_u64(argv[i], "batch", &only_batch);
        if (a == 0 && strncmp(argv[i], "impl=", 5) == 0) {
            only_impl = argv[i] + 5;
            a = 1;
        }
        if (a != 1 || items == 0 || reps == 0) {
            fprintf(stderr,
                    "usage: weir-bench ring [items=N] [reps=N] [batch=B] "
                    "[impl=weir|ck|rte]\n");
            return 2;
        }
    }

    paired = calloc(NIMPLS * NBATCHES * reps, sizeof(*paired));
    if (!paired) {
        fprintf(stderr, "ring: out of memory\n");
        return 1;
    }
    /* Runs are interleaved (weir, ck, rte, then ck, rte, weir, ...) rather
     * than grouped per implementation, so a burst of load from elsewhere on
     * the machine lands on every implementation alike instead of on one of
     * them. */
    for (size_t b = 0; b < NBATCHES; b++) {
        const char *why[NIMPLS];

        if (only_batch && batches[b] != only_batch)
            continue;
        for (size_t i = 0; i < NIMPLS; i++)
            why[i] = impls[i]->missing;
        for (uint64_t k = 0; k < reps; k++) {
            double round_rate[NIMPLS] = {0};

            for (size_t j = 0; j < NIMPLS; j++) {
                /* Each round starts one implementation later: the same
                 * code measured first or last in a round differed by
                 * more than the implementations did, so every
                 * implementation takes every place in turn. */
                size_t i = (j + k) % NIMPLS;
                double r;

                if (why[i] || (only_impl && strcmp(only_impl, impls[i]->name)))
                    continue;
                r = run_once(impls[i], items, batches[b], &why[i]);
                round_rate[i] = r;
                if (r > rate[i][b])
                    rate[i][b] = r;
                /* Wrong items fail the suite; a ring that cannot be set
                 * up here is a note, unless it is weir's own. */
                if (r == -2.0 || (r < 0 && i == 0))
                    rc = 1;
            }
            for (size_t i = 1; i < NIMPLS; i++)
                if (round_rate[0] > 0 && round_rate[i] > 0)
                    paired[(i * NBATCHES + b) * reps + npaired[i][b]++] =
                        round_rate[0] / round_rate[i];
        }
        for (size_t i = 0; i < NIMPLS; i++) {
            if (only_impl && strcmp(only_impl, impls[i]->name) != 0)
                continue;
            printf("ring impl=%s batch=%u items=%llu: ", impls[i]->name,
                   batches[b], (unsigned long long)items);
            if (why[i])
                printf("missing (%s)\n", why[i]);
            else
                printf("%.0f\n", rate[i][b]);
            /* A failed run leaves no rate: no ratio for it below. */
            if (why[i])
                rate[i][b] = 0;
        }
        fflush(stdout);
    }

    for (size_t b = 0; b < NBATCHES; b++)
        for (size_t i = 1; i < NIMPLS; i++)
            if (rate[0][b] > 0 && rate[i][b] > 0)
                printf(
                    "ring ratio=weir/%s batch=%u: %.2f (median of the "
                    "rounds' own ratios: %.2f)\n",
                    impls[i]->name, batches[b], rate[0][b] / rate[i][b],
                    median(&paired[(i * NBATCHES + b) * reps], npaired[i][b]));
    printf("ring note: best of %llu interleaved runs per case; ck_ring has "
           "no SPSC burst functions, so its batches loop single "
           "enqueues/dequeues; rte_ring runs on rte_ring_init'd memory "
           "without EAL initialisation\n",
           (unsigned long long)reps);
    fflush(stdout);
    free(paired);
    return rc;
}
