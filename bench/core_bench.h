/*
 * core_bench.h - what the chunk-core suites (core_*.c) share: timing a case
 * the way Node's benchmark/webstreams reports it, and failing loudly when a
 * case moved the wrong data.
 *
 * A case function does its whole workload once (n chunks, reads,
 * iterations or constructions) and returns n. core_measure runs it
 * back to back until at least CORE_MIN_NS have passed, so that even a
 * case lasting a few hundred microseconds is timed over many runs, and
 * reports operations per second of the whole elapsed time. It does that
 * CORE_TRIALS times and prints the best trial.
 *
 * The clock is wall time, as Node's benchmarks use. On a shared machine,
 * WEIR_BENCH_CLOCK=cpu times the thread's CPU time instead, which other
 * processes cannot inflate: useful to compare two builds of weir, not to
 * compare with Node.
 */
#ifndef WEIR_BENCH_CORE_H
#define WEIR_BENCH_CORE_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "bench.h"
#include "weir/stream.h"

#define CORE_TRIALS 3
#define CORE_MIN_NS 200000000ull /* 0.2 s per trial */

typedef uint64_t (*core_case_fn)(void *arg);

static inline uint64_t core_now_ns(void)
{
    static int cpu = -1;
    struct timespec ts;

    if (cpu < 0) {
        const char *c = getenv("WEIR_BENCH_CLOCK");

        cpu = c && c[0] == 'c';
    }
    if (!cpu)
        return bench_now_ns();
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static inline double core_measure(const char *suite, const char *params,
                                  core_case_fn fn, void *arg)
{
    double best = 0;

    for (int t = 0; t < CORE_TRIALS; t++) {
        uint64_t ops = 0, t0 = core_now_ns(), ns;

        do {
            ops += fn(arg);
            ns = core_now_ns() - t0;
        } while (ns < CORE_MIN_NS);
        if ((double)ops * 1e9 / (double)ns > best)
            best = (double)ops * 1e9 / (double)ns;
    }
    printf("%s %s: %.0f\n", suite, params, best);
    fflush(stdout);
    return best;
}

/* A case that moved the wrong data is a bug, not a slow run. */
static inline void core_check(int ok, const char *what)
{
    if (!ok) {
        fprintf(stderr, "weir-bench: check failed: %s\n", what);
        exit(1);
    }
}

/* Checks an operation the workload expects to succeed. */
static inline void core_ok(int rc, const char *what)
{
    if (rc != 0) {
        fprintf(stderr, "weir-bench: %s: %d\n", what, rc);
        exit(1);
    }
}

#endif /* WEIR_BENCH_CORE_H */
