/*
 * hostile.c - suite `hostile`: does one healthy client of a file server
 * keep its speed while hostile clients hold the server? Per server,
 * started fresh: a healthy client fetches the file `fetches` times alone
 * (quiet), then `idle` clients connect and read nothing (their receive
 * buffers are 4 KiB) while another thread opens `resets` connections a
 * second that take their first byte and reset (SO_LINGER 0), and the
 * healthy client fetches the file `fetches` times again (hostile); the
 * hostile clients leave, and the two phases repeat, `rounds` times in all.
 *
 *   weir-bench hostile [size=256MiB] [rounds=3] [fetches=5] [idle=1000]
 *                      [resets=200] [server=NAME,NAME...]
 *
 * Prints the median fetch of each phase in GB/s (and the slowest and
 * fastest) and hostile over quiet,
 * the server's RSS idle and at its peak under the hostile clients, and
 * how many resets were made. Every healthy fetch must get exactly the
 * file's size, or the row says FAILED.
 */
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "bench.h"
#include "e2e.h"
#include "serve.h"

#define MAX_FETCHES 64
#define IDLE_RCVBUF 4096

struct hostiles {
    int port;
    bool http;
    unsigned idle, resets; /* clients; per second */
    int *fds;              /* the idle ones */
    unsigned connected;    /* of them */
    atomic_bool stop;
    atomic_ulong done; /* resets made */
    uint64_t start_ns, stop_ns;
    pthread_t churn;
};

/* One healthy fetch of the whole file; GB/s, or -1 when it was short. */
static double fetch(int port, bool http, uint64_t size, char *scratch)
{
    uint64_t t0 = bench_now_ns(), got = 0;
    int fd = serve_connect(port, http);
    unsigned hdr = 0;
    ssize_t n;

    if (fd < 0)
        return -1;
    while ((n = recv(fd, scratch, SERVE_SCRATCH, 0)) > 0 ||
           (n < 0 && errno == EINTR))
        if (n > 0)
            got += serve_body(&hdr, scratch, (size_t)n, http);
    close(fd);
    if (n < 0 || got != size)
        return -1;
    return (double)size / (double)(bench_now_ns() - t0);
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;

    return (x > y) - (x < y);
}

/* `fetches` fetches appended to gbps[*n]; -1 when one of them failed.
 * With pid, *peak_kib is raised to the server's RSS seen between them. */
static int fetches_run(int port, bool http, uint64_t size, int fetches,
                       char *scratch, double *gbps, int *n, pid_t pid,
                       long *peak_kib)
{
    for (int i = 0; i < fetches; i++) {
        if ((gbps[(*n)++] = fetch(port, http, size, scratch)) < 0)
            return -1;
        if (peak_kib) {
            long kib = serve_rss_kib(pid);

            if (kib > *peak_kib)
                *peak_kib = kib;
        }
    }
    return 0;
}

static double median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof(v[0]), cmp_double);
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/* A non-blocking connect with a small receive buffer, set before the
 * handshake so the window the server sees is small from the start. */
static int idle_open(int port)
{
    struct sockaddr_in sin = serve_loopback(port);
    int buf = IDLE_RCVBUF;
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);

    if (fd < 0)
        return -1;
    setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &buf, sizeof(buf));
    if (connect(fd, (struct sockaddr *)&sin, sizeof(sin)) != 0 &&
        errno != EINPROGRESS) {
        close(fd);
        return -1;
    }
    return fd;
}

/* Until every idle client's connect is done (and its GET sent, for
 * nginx) or 30 s pass. Returns how many are connected. */
static unsigned idle_settle(struct hostiles *h)
{
    uint64_t end = bench_now_ns() + 30 * UINT64_C(1000000000);
    unsigned n = 0;

    for (unsigned i = 0; i < h->idle && bench_now_ns() < end; i++) {
        struct pollfd p = {.fd = h->fds[i], .events = POLLOUT};
        int err = 0;
        socklen_t len = sizeof(err);

        if (h->fds[i] < 0 || poll(&p, 1, 10000) != 1 ||
            getsockopt(h->fds[i], SOL_SOCKET, SO_ERROR, &err, &len) != 0 ||
            err != 0)
            continue;
        if (h->http &&
            send(h->fds[i], serve_http_get, serve_http_get_len, 0) < 0)
            continue;
        n++;
    }
    return n;
}

/* Connect, take the first byte, reset: `resets` a second until stop. */
static void *churn(void *arg)
{
    struct hostiles *h = arg;
    uint64_t gap = UINT64_C(1000000000) / (h->resets ? h->resets : 1);
    uint64_t next = bench_now_ns();
    struct timeval tv = {.tv_sec = 1};
    struct linger rst = {.l_onoff = 1, .l_linger = 0};

    while (h->resets && !atomic_load_explicit(&h->stop, memory_order_relaxed)) {
        uint64_t now = bench_now_ns();
        char byte;
        int fd;

        if (now < next) {
            struct timespec ts = {0, (long)(next - now)};

            nanosleep(&ts, NULL);
            continue;
        }
        next += gap;
        if (next < now)
            next = now; /* behind: no burst to catch up */
        if ((fd = serve_connect(h->port, h->http)) < 0)
            continue;
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
        if (recv(fd, &byte, 1, 0) == 1)
            atomic_fetch_add_explicit(&h->done, 1, memory_order_relaxed);
        setsockopt(fd, SOL_SOCKET, SO_LINGER, &rst, sizeof(rst));
        close(fd);
    }
    return NULL;
}

static int hostiles_start(struct hostiles *h)
{
    h->fds = malloc(sizeof(int) * (h->idle ? h->idle : 1));
    if (!h->fds)
        return -1;
    for (unsigned i = 0; i < h->idle; i++)
        h->fds[i] = idle_open(h->port);
    h->connected = idle_settle(h);
    atomic_store(&h->stop, false);
    atomic_store(&h->done, 0);
    h->start_ns = bench_now_ns();
    if (pthread_create(&h->churn, NULL, churn, h) != 0) {
        free(h->fds);
        return -1;
    }
    /* A second for the server to fill the idle clients' buffers and
     * for the churn to be under way. */
    sleep(1);
    return 0;
}

static void hostiles_stop(struct hostiles *h)
{
    atomic_store(&h->stop, true);
    pthread_join(h->churn, NULL);
    h->stop_ns = bench_now_ns();
    for (unsigned i = 0; i < h->idle; i++)
        if (h->fds[i] >= 0)
            close(h->fds[i]);
    free(h->fds);
}

static int run_server(const struct e2e_sender *srv, const struct e2e_env *env,
                      const char *file, uint64_t size, int rounds, int fetches,
                      unsigned idle, unsigned resets, char *scratch)
{
    struct hostiles h = {.idle = idle, .resets = resets};
    double quiet[MAX_FETCHES], loud[MAX_FETCHES], mq, ml;
    char port[16], sizestr[32];
    uint64_t made = 0, made_ns = 0;
    int status = 0, rc = 0, nq = 0, nl = 0;
    long base, peak;
    pid_t pid;

    e2e_format_size(size, sizestr, sizeof(sizestr));
    h.port = serve_free_port();
    h.http = serve_speaks_http(srv->name);
    snprintf(port, sizeof(port), "%d", h.port);
    pid = h.port < 0 ? -1 : e2e_spawn(srv->argv, env, file, port);
    if (pid < 0 || serve_wait_ready(pid, h.port, h.http, scratch) != 0) {
        printf("hostile server=%s: missing or not listening\n", srv->name);
        fflush(stdout);
        if (pid > 0) {
            kill(pid, SIGKILL);
            waitpid(pid, &status, 0);
        }
        return 0;
    }
    base = peak = serve_rss_kib(pid);
    /* Alone, then among the hostile clients, `rounds` times over: each
     * fetch lands on whichever worker and core it lands on, and the
     * rounds spread that over both phases alike. */
    for (int r = 0; r < rounds && rc == 0; r++) {
        rc = fetches_run(h.port, h.http, size, fetches, scratch, quiet, &nq, 0,
                         NULL);
        if (rc == 0 && hostiles_start(&h) != 0) {
            fprintf(stderr, "hostile: cannot start the hostile clients\n");
            rc = 1;
            goto out;
        }
        if (rc == 0) {
            rc = fetches_run(h.port, h.http, size, fetches, scratch, loud, &nl,
                             pid, &peak);
            hostiles_stop(&h);
            made += atomic_load(&h.done);
            made_ns += h.stop_ns - h.start_ns;
        }
    }
    if (rc) {
        printf("hostile server=%s size=%s idle=%u resets=%u: FAILED (a "
               "healthy fetch was short)\n",
               srv->name, sizestr, idle, resets);
        goto out;
    }
    mq = median(quiet, nq);
    ml = median(loud, nl);
    printf("hostile server=%s size=%s idle=%u resets=%u: quiet %.2f GB/s "
           "(%.2f-%.2f), hostile %.2f GB/s (%.2f-%.2f), %.2f of quiet; rss "
           "idle %.1f MB, hostile %.1f MB; %u idle connected, %.0f resets/s "
           "made\n",
           srv->name, sizestr, idle, resets, mq, quiet[0], quiet[nq - 1], ml,
           loud[0], loud[nl - 1], ml / mq, base / 1024.0, peak / 1024.0,
           h.connected, (double)made * 1e9 / (double)(made_ns ? made_ns : 1));
    fflush(stdout);
out:
    kill(pid, SIGTERM);
    waitpid(pid, &status, 0);
    return rc;
}

int bench_hostile(int argc, char **argv)
{
    uint64_t size = 256u << 20, rounds = 3, fetches = 5, idle = 1000;
    uint64_t resets = 200;
    const char *only = "weir,weir-stream,socat-fork,nginx";
    struct e2e_env env = {0};
    char path[128];
    char *scratch;
    int rc = 0;

    for (int i = 1; i < argc; i++) {
        int ok = 0;

        if (strncmp(argv[i], "size=", 5) == 0)
            ok = e2e_parse_size(argv[i] + 5, &size) == 0 && size > 0;
        else if (strncmp(argv[i], "rounds=", 7) == 0)
            ok = e2e_parse_size(argv[i] + 7, &rounds) == 0 && rounds > 0 &&
                 rounds <= MAX_FETCHES;
        else if (strncmp(argv[i], "fetches=", 8) == 0)
            ok = e2e_parse_size(argv[i] + 8, &fetches) == 0 && fetches > 0 &&
                 fetches <= MAX_FETCHES;
        else if (strncmp(argv[i], "idle=", 5) == 0)
            ok = e2e_parse_size(argv[i] + 5, &idle) == 0 && idle < 1000000;
        else if (strncmp(argv[i], "resets=", 7) == 0)
            ok = e2e_parse_size(argv[i] + 7, &resets) == 0 && resets < 100000;
        else if (strncmp(argv[i], "server=", 7) == 0)
            ok = (only = argv[i] + 7)[0] != '\0';
        if (ok && rounds * fetches > MAX_FETCHES)
            ok = 0;
        if (!ok) {
            serve_usage("weir-bench hostile [size=256MiB] [rounds=3] "
                        "[fetches=5] [idle=1000] [resets=200] "
                        "[server=NAME,...]");
            return 2;
        }
    }
    scratch = malloc(SERVE_SCRATCH);
    if (!scratch || serve_setup(&env, size, path, sizeof(path)) != 0) {
        fprintf(stderr, "hostile: cannot set up: %s\n", strerror(errno));
        free(scratch);
        return 1;
    }
    for (size_t i = 0; i < serve_nservers; i++)
        if (serve_listed(only, serve_servers[i].name))
            rc |= run_server(&serve_servers[i], &env, path, size, (int)rounds,
                             (int)fetches, (unsigned)idle, (unsigned)resets,
                             scratch);
    free(scratch);
    return rc;
}
