/*
 * e2e_clients.c - the many-clients case of the `e2e` suite: a file server
 * from e2e_servers, `clients` connections opened at once from one epoll
 * loop, each reading the whole file into a shared scratch buffer. Reports
 * the aggregate throughput (all bytes over the time from the first connect
 * to the last byte) and the slowest client's connect-to-last-byte time;
 * every client must receive exactly the file's size.
 */
#include <errno.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bench.h"
#include "e2e.h"
#include "serve.h"

#define STALL_NS    (120 * UINT64_C(1000000000))
#define READY_TRIES 250 /* x 20 ms */

/* Waits until the server serves: a first client connects and reads the
 * whole file (which also warms the server up). Reading it to the end,
 * rather than hanging up at once, spares the server a broken pipe. */
static int wait_ready(pid_t pid, int port, char *scratch, int *status)
{
    struct sockaddr_in sin = serve_loopback(port);

    for (int i = 0; i < READY_TRIES; i++) {
        int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
        int ok =
            fd >= 0 && connect(fd, (struct sockaddr *)&sin, sizeof(sin)) == 0;

        while (ok && recv(fd, scratch, SERVE_SCRATCH, 0) > 0)
            ;
        if (fd >= 0)
            close(fd);
        if (ok)
            return 0;
        if (waitpid(pid, status, WNOHANG) == pid)
            return -1;
        usleep(20000);
    }
    *status = -1;
    return -1;
}

/* Runs the clients against 127.0.0.1:port. */
static void run_clients(struct serve_client *cl, int n, int port, char *scratch)
{
    int ep = epoll_create1(EPOLL_CLOEXEC);

    if (ep < 0) {
        for (int i = 0; i < n; i++)
            cl[i].failed = 1;
        return;
    }
    serve_drain_all(cl, n, n - serve_open_all(cl, n, port, false, ep), ep,
                    scratch, false, false, STALL_NS);
    close(ep);
}

static int run_server(const struct e2e_sender *srv, const struct e2e_env *env,
                      const char *file, uint64_t size, const char *sizestr,
                      int n, struct serve_client *cl, char *scratch)
{
    char port[16];
    int p = serve_free_port(), status = 0, good = 0;
    uint64_t first = UINT64_MAX, last = 0, slowest = 0;
    struct rusage ru = {0};
    pid_t pid;

    snprintf(port, sizeof(port), "%d", p);
    pid = p < 0 ? -1 : e2e_spawn(srv->argv, env, file, port);
    if (pid < 0 || wait_ready(pid, p, scratch, &status) != 0) {
        if (pid > 0 && status == -1) {
            kill(pid, SIGKILL);
            waitpid(pid, &status, 0);
            status = -1;
        }
        if (pid < 0 || (WIFEXITED(status) && WEXITSTATUS(status) == 127))
            printf("e2e server=%s clients=%d size=%s: missing (%s cannot "
                   "be run here)\n",
                   srv->name, n, sizestr, srv->argv[0]);
        else
            printf("e2e server=%s clients=%d size=%s: FAILED (server did "
                   "not listen on 127.0.0.1:%d)\n",
                   srv->name, n, sizestr, p);
        fflush(stdout);
        return pid < 0 || (WIFEXITED(status) && WEXITSTATUS(status) == 127) ? 0
                                                                            : 1;
    }

    memset(cl, 0, sizeof(*cl) * (size_t)n);
    run_clients(cl, n, p, scratch);
    kill(pid, SIGTERM);
    /* The server's peak RSS: for a forking server (socat) the largest
     * single process, not their sum. */
    wait4(pid, &status, 0, &ru);

    for (int i = 0; i < n; i++) {
        if (!cl[i].failed && cl[i].bytes == size)
            good++;
        if (cl[i].start_ns < first)
            first = cl[i].start_ns;
        if (cl[i].end_ns > last)
            last = cl[i].end_ns;
        if (cl[i].end_ns - cl[i].start_ns > slowest)
            slowest = cl[i].end_ns - cl[i].start_ns;
    }
    if (good != n) {
        printf("e2e server=%s clients=%d size=%s: FAILED (%d of %d clients "
               "received the whole file)\n",
               srv->name, n, sizestr, good, n);
        fflush(stdout);
        return 1;
    }
    printf("e2e server=%s clients=%d size=%s: %.2f GB/s aggregate, "
           "slowest client %.3f s, peak RSS %.1f MiB\n",
           srv->name, n, sizestr,
           (double)size * n / (double)(last > first ? last - first : 1),
           (double)slowest / 1e9, (double)ru.ru_maxrss / 1024.0);
    fflush(stdout);
    return 0;
}

int e2e_run_clients(const struct e2e_env *env, int clients,
                    uint64_t client_size)
{
    char sizestr[32], path[128];
    struct serve_client *cl = calloc((size_t)clients, sizeof(*cl));
    char *scratch = malloc(SERVE_SCRATCH);
    struct rlimit rl;
    int rc = 0;

    e2e_format_size(client_size, sizestr, sizeof(sizestr));
    snprintf(path, sizeof(path), "/tmp/weir-bench-e2e-%s.bin", sizestr);
    if (!cl || !scratch || e2e_make_file(path, client_size) != 0) {
        fprintf(stderr, "e2e: cannot set up the clients case: %s\n",
                strerror(errno));
        free(cl);
        free(scratch);
        return 1;
    }
    /* bench_e2e raised the soft limit to the hard one; past that, say so
     * rather than fail a thousand connects. The margin covers the bench's
     * own descriptors. */
    if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY &&
        rl.rlim_cur < (rlim_t)clients + 64) {
        printf("e2e clients=%d: skipped (open-file limit %llu is too low; "
               "raise the hard limit: ulimit -Hn)\n",
               clients, (unsigned long long)rl.rlim_cur);
        free(cl);
        free(scratch);
        return 0;
    }
    for (size_t i = 0; i < e2e_nservers; i++)
        rc |= run_server(&e2e_servers[i], env, path, client_size, sizestr,
                         clients, cl, scratch);
    free(cl);
    free(scratch);
    return rc;
}
