/*
 * e2e.c - suite `e2e`: one file into one TCP socket on 127.0.0.1, through
 * each sender in turn, and 1,000 clients of a file server.
 *
 *   weir-bench e2e [size=1GiB] [reps=3] [sender=NAME] [clients=1000]
 *                  [client-size=1MiB]
 *
 * The file is made once in /tmp (pseudo-random bytes, so nothing on the way
 * can compress it) and read once before timing, so every sender reads it
 * from the page cache. An in-process receiver thread accepts one connection,
 * reads into a 1 MiB buffer, discards, and checks the byte count. Each
 * sender runs as a child process from an argv template (e2e_senders.c); its
 * CPU time is the child's rusage, and the receiver's CPU time is printed
 * beside it, apart, since it is the same for every sender. Each sender
 * reports the best of `reps` runs.
 *
 * Then the many-clients case: `clients` connections at once to a file
 * server (socat's fork mode for now), each receiving a `client-size` file;
 * aggregate throughput and the slowest client's time. clients=0 skips it.
 */
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bench.h"
#include "e2e.h"
#include "harness.h"

#define GiB (1024.0 * 1024.0 * 1024.0)

struct sender_result {
    double gbps;
    double cpu_per_gib;      /* the sender's, from its rusage */
    double recv_cpu_per_gib; /* the receiver thread's */
    int ok;                  /* ran, and delivered every byte */
    int done;                /* missing or failed: no more runs */
};

static struct sender_result run_sender(const struct e2e_sender *s,
                                       const struct e2e_env *env,
                                       const char *sizestr)
{
    struct sender_result res = {0};
    struct bench_run run;

    bench_run_to_receiver(s->argv, env, env->file, &run);
    if (run.missing) {
        printf("e2e sender=%s size=%s: missing (%s cannot be run here)\n",
               s->name, sizestr, s->argv[0]);
        fflush(stdout);
        res.done = 1;
        return res;
    }
    if (run.status != 0 || run.bytes != env->size) {
        printf("e2e sender=%s size=%s: FAILED (exit status %d, received "
               "%llu of %llu bytes%s%s)\n",
               s->name, sizestr, run.status, (unsigned long long)run.bytes,
               (unsigned long long)env->size, run.err ? ", " : "",
               run.err ? strerror(run.err) : "");
        fflush(stdout);
        res.done = 1;
        return res;
    }
    res.ok = 1;
    res.gbps = (double)env->size / (double)run.ns;
    res.cpu_per_gib = run.cpu_s / (env->size / GiB);
    res.recv_cpu_per_gib = run.recv_cpu_s / (env->size / GiB);
    return res;
}

/* Raises the open-file soft limit to the hard limit: a thousand clients
 * need a thousand descriptors, more than the usual soft limit of 1024. */
static void raise_nofile(void)
{
    struct rlimit rl;

    if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
        rl.rlim_cur = rl.rlim_max;
        setrlimit(RLIMIT_NOFILE, &rl);
    }
}

int bench_e2e(int argc, char **argv)
{
    struct e2e_env env = {0};
    uint64_t size = E2E_DEFAULT_SIZE, client_size = 1u << 20;
    uint64_t clients = 1000, reps = 3;
    const char *only = NULL;
    char sizestr[32], path[128];
    struct sender_result first = {0};
    const char *first_name = NULL;
    struct sender_result results[E2E_MAX_SENDERS];
    int rc = 0;

    for (int i = 1; i < argc; i++) {
        int ok = 0;
        if (strncmp(argv[i], "size=", 5) == 0)
            ok = e2e_parse_size(argv[i] + 5, &size) == 0 && size > 0;
        else if (strncmp(argv[i], "client-size=", 12) == 0)
            ok = e2e_parse_size(argv[i] + 12, &client_size) == 0 &&
                 client_size > 0;
        else if (strncmp(argv[i], "clients=", 8) == 0)
            ok = e2e_parse_size(argv[i] + 8, &clients) == 0;
        else if (strncmp(argv[i], "reps=", 5) == 0)
            ok = e2e_parse_size(argv[i] + 5, &reps) == 0 && reps > 0;
        else if (strncmp(argv[i], "sender=", 7) == 0)
            ok = (only = argv[i] + 7)[0] != '\0';
        if (!ok) {
            fprintf(stderr, "usage: weir-bench e2e [size=1GiB] [reps=3] "
                            "[sender=NAME] [clients=1000] "
                            "[client-size=1MiB]\n");
            return 2;
        }
    }
    if (e2e_nsenders > E2E_MAX_SENDERS) {
        fprintf(stderr, "e2e: raise E2E_MAX_SENDERS\n");
        return 1;
    }
    raise_nofile();
    /* A sender killed mid-transfer must not take the bench with it. */
    signal(SIGPIPE, SIG_IGN);
    if (e2e_env_init(&env) != 0) {
        fprintf(stderr, "e2e: cannot find weir-bench's own directory\n");
        return 1;
    }

    e2e_format_size(size, sizestr, sizeof(sizestr));
    snprintf(path, sizeof(path), "/tmp/weir-bench-e2e-%s.bin", sizestr);
    if (e2e_make_file(path, size) != 0) {
        fprintf(stderr, "e2e: cannot make %s: %s\n", path, strerror(errno));
        return 1;
    }
    env.file = path;
    env.size = size;
    printf("e2e file=%s size=%s: page cache warm, receiver on 127.0.0.1 "
           "reads into 1 MiB and discards\n",
           path, sizestr);
    /* Runs are interleaved (each sender once, then again) so a burst of
     * load from elsewhere lands on every sender alike; each reports its
     * best run. */
    memset(results, 0, sizeof(results));
    for (uint64_t r = 0; r < reps; r++)
        for (size_t i = 0; i < e2e_nsenders; i++) {
            const struct e2e_sender *s = &e2e_senders[i];
            struct sender_result one;

            if (results[i].done || (only && strcmp(only, s->name) != 0))
                continue;
            one = run_sender(s, &env, sizestr);
            if (one.done) {
                results[i].ok = 0;
                results[i].done = 1;
                /* Our own sendfile sender must work; a missing peer (or
                 * a weir not built yet) is a note. */
                if (strstr(s->argv[0], "{bindir}"))
                    rc = 1;
            } else if (one.gbps > results[i].gbps) {
                results[i] = one;
            }
        }
    for (size_t i = 0; i < e2e_nsenders; i++) {
        if (!results[i].ok)
            continue;
        printf("e2e sender=%s size=%s: %.2f GB/s, %.3f cpu-s/GiB "
               "(receiver: %.3f cpu-s/GiB)\n",
               e2e_senders[i].name, sizestr, results[i].gbps,
               results[i].cpu_per_gib, results[i].recv_cpu_per_gib);
        if (!first_name) {
            first = results[i];
            first_name = e2e_senders[i].name;
        }
    }
    /* Ratios of the reference (the first sender of the table that ran) to
     * each other sender: "weir is N times socat". */
    for (size_t i = 0; i < e2e_nsenders; i++)
        if (results[i].ok && first_name &&
            strcmp(e2e_senders[i].name, first_name) != 0)
            printf("e2e ratio=%s/%s size=%s: %.2f\n", first_name,
                   e2e_senders[i].name, sizestr, first.gbps / results[i].gbps);
    fflush(stdout);

    if (clients > 0 && !only)
        rc |= e2e_run_clients(&env, (int)clients, client_size);
    return rc;
}
