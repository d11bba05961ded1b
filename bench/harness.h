/*
 * harness.h - the end-to-end suites' shared parts: a receiver thread on
 * 127.0.0.1 that reads and discards, and a child process (from an e2e.h
 * argv template) timed from its start to the receiver's end.
 */
#ifndef WEIR_BENCH_HARNESS_H
#define WEIR_BENCH_HARNESS_H

#include <stdint.h>
#include <sys/resource.h>
#include <sys/types.h>

#include "e2e.h"

/* Nothing here should take this long; a stuck child is stopped and
 * reported instead of hanging the bench. */
#define BENCH_STALL_SECONDS 120

/* A listening socket on 127.0.0.1 with a kernel-chosen port, or -1. */
int bench_listen_loopback(int backlog, int *port);

/* Waits for pid until `deadline_ns`, then kills it. Returns the wait
 * status, or -1 if it had to be killed. */
int bench_reap(pid_t pid, uint64_t deadline_ns, struct rusage *ru);

double bench_ru_cpu_s(const struct rusage *ru);

/* One run of a child into a receiver that counts what it gets. */
struct bench_run {
    uint64_t ns;       /* child start to the receiver's end of stream */
    uint64_t bytes;    /* what the receiver got */
    double cpu_s;      /* the child's */
    double recv_cpu_s; /* the receiver thread's */
    int status;        /* the child's wait status, -1 when killed */
    int missing;       /* the program cannot be run here */
    int err;           /* the receiver's errno, or 0 */
};

/*
 * Starts the template with {file} = file and {port} = a fresh receiver's
 * port, waits for both, fills *out. Returns 0 when the child ran and
 * exited 0 (check out->bytes yourself), -1 otherwise.
 */
int bench_run_to_receiver(const char *const *tmpl, const struct e2e_env *env,
                          const char *file, struct bench_run *out);

#endif /* WEIR_BENCH_HARNESS_H */
