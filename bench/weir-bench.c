/*
 * weir-bench - runs one benchmark suite, or all of them.
 *
 *   weir-bench SUITE [ARGS...]
 *   weir-bench all
 *   weir-bench --csv FILE SUITE|all ...   also writes the rows to FILE as CSV
 */
#include <stdio.h>
#include <string.h>

#include "bench.h"

static const struct {
    const char *name;
    bench_suite_fn run;
    const char *what;
} suites[] = {
    {"ring", bench_ring, "SPSC ring transfer vs ck_ring and rte_ring"},
    {"e2e", bench_e2e, "file to TCP socket vs socat, nc, sendfile, Node"},
    {"e2e-tls", bench_e2e_tls,
     "file to TLS socket, many TLS clients: vs socat, nginx stream"},
    {"serve", bench_serve,
     "many clients of a file server: waves, RSS per client, accepts/s"},
    {"hostile", bench_hostile,
     "a healthy client's speed alone and among hostile clients"},
    {"heavy", bench_heavy,
     "one CPU-bound stream (gzip:6, zstd:9): 1 worker against 2"},
    {"sendpath", bench_sendpath, "file to TCP: sendfile, read+send, splice"},
    {"channel", bench_channel,
     "io engine: setup flags, doorbell round trip, channel throughput"},
    {"fileio", bench_fileio,
     "epoll engine: regular-file reads inline, on threads, blocking"},
    {"pipe-to", bench_core_pipe_to, "chunk core: pipeTo"},
    {"readable-read", bench_core_readable_read, "chunk core: normal, BYOB"},
    {"readable-read-buffered", bench_core_readable_read_buffered,
     "chunk core: reads from a filled queue"},
    {"tee", bench_core_tee, "chunk core: tee, branches in lockstep"},
    {"readable-async-iterator", bench_core_readable_async_iterator,
     "chunk core: the iterator loop"},
    {"lifecycle", bench_core_lifecycle, "chunk core: a short stream's life"},
    {"creation", bench_core_creation, "chunk core: constructing streams"},
    {"tee-memory", bench_core_tee_memory,
     "chunk core: slow tee branch's peak queue"},
    {"xform-core", bench_xform_core, "transforms in process: MB/s, ratio"},
    {"xform", bench_xform,
     "file -> uppercase -> gzip -1 -> TCP vs tr | gzip | nc, Node; tee"},
    {"logs-glob", bench_logs_glob,
     "10 log files to a TCP collector: vs rsyslog, syslog-ng"},
    {"logs-idle", bench_logs_idle,
     "10,000 followed files, 10 written: CPU, fds, RSS"},
};

#define NSUITES (sizeof(suites) / sizeof(suites[0]))

static void usage(FILE *to)
{
    fprintf(to, "usage: weir-bench [--csv FILE] SUITE [ARGS...] | all\n\n"
                "suites:\n");
    for (size_t i = 0; i < NSUITES; i++)
        fprintf(to, "  %-24s %s\n", suites[i].name, suites[i].what);
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        usage(stderr);
        return 2;
    }
    if (strcmp(argv[1], "-h") == 0 || strcmp(argv[1], "--help") == 0) {
        usage(stdout);
        return 0;
    }
    if (strcmp(argv[1], "--csv") == 0) {
        if (argc < 4) {
            usage(stderr);
            return 2;
        }
        if (bench_csv_start(argv[2]) != 0) {
            fprintf(stderr, "weir-bench: cannot write %s\n", argv[2]);
            return 1;
        }
        argv += 2;
        argc -= 2;
    }
    if (strcmp(argv[1], "all") == 0) {
        int rc = 0;

        for (size_t i = 0; i < NSUITES; i++) {
            char *args[] = {(char *)suites[i].name, NULL};
            rc |= suites[i].run(1, args);
        }
        return rc;
    }
    for (size_t i = 0; i < NSUITES; i++)
        if (strcmp(argv[1], suites[i].name) == 0)
            return suites[i].run(argc - 1, argv + 1);
    fprintf(stderr, "weir-bench: unknown suite '%s'\n", argv[1]);
    usage(stderr);
    return 2;
}
