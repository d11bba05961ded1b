/*
 * bench.h - what every weir-bench suite shares: the clock and the output
 * line. A suite prints one line per case, `<suite> <params>: <rate>`, so
 * runs of weir and of its peers can be lined up by their text.
 */
#ifndef WEIR_BENCH_H
#define WEIR_BENCH_H

#include <stdint.h>
#include <stdio.h>
#include <time.h>

static inline uint64_t bench_now_ns(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* Prints `<suite> <params>: <ops per second>` and returns the rate. */
static inline double bench_report(const char *suite, const char *params,
                                  uint64_t ops, uint64_t ns)
{
    double rate = ns ? (double)ops * 1e9 / (double)ns : 0.0;

    printf("%s %s: %.0f\n", suite, params, rate);
    fflush(stdout);
    return rate;
}

/*
 * weir-bench --csv FILE: from here on every row printed on stdout is also
 * written to FILE as CSV records `suite,params,label,value,unit`, one per
 * number in the row (harness.c says how a row is split). 0 or -1.
 */
int bench_csv_start(const char *path);

/* One CSV record, for a suite that wants to name a figure itself; nothing
 * unless --csv was given. */
void bench_csv_row(const char *suite, const char *params, const char *label,
                   double value, const char *unit);

/* One entry point per suite; argv[0] is the suite name. Returns an exit
 * status. */
typedef int (*bench_suite_fn)(int argc, char **argv);

int bench_ring(int argc, char **argv);
int bench_e2e(int argc, char **argv);
int bench_e2e_tls(int argc, char **argv);
int bench_sendpath(int argc, char **argv);
int bench_serve(int argc, char **argv);
int bench_hostile(int argc, char **argv);
int bench_heavy(int argc, char **argv);
int bench_channel(int argc, char **argv);
int bench_fileio(int argc, char **argv);
int bench_core_pipe_to(int argc, char **argv);
int bench_core_readable_read(int argc, char **argv);
int bench_core_readable_read_buffered(int argc, char **argv);
int bench_core_tee(int argc, char **argv);
int bench_core_readable_async_iterator(int argc, char **argv);
int bench_core_lifecycle(int argc, char **argv);
int bench_core_creation(int argc, char **argv);
int bench_core_tee_memory(int argc, char **argv);
int bench_xform_core(int argc, char **argv);
int bench_xform(int argc, char **argv);
int bench_logs_glob(int argc, char **argv);
int bench_logs_idle(int argc, char **argv);

#endif /* WEIR_BENCH_H */
