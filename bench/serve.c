/*
 * serve.c - suite `serve`: many clients of one file server, for memory
 * and scale. Each server is started fresh, then `waves` waves of `clients`
 * connections each, opened at once from one epoll loop; the first wave
 * is the one right after the start (the cold start).
 *
 *   weir-bench serve [clients=1000] [size=64MiB] [waves=3] [hold=1]
 *                    [discard=1] [cc=NAME] [server=NAME,NAME...]
 *
 * Per wave: aggregate GB/s (all bytes over first connect to last byte),
 * the slowest client, and accepts per second (clients over the time from
 * the first connect until every client has its first byte, so it counts
 * the server's accept and its start of the stream), and the CPU seconds
 * the server (with its children) used over the wave per GiB served: when
 * the clients on the same two cores set the pace, the servers' rates
 * meet at the same ceiling and this is where they still differ.
 *
 * With hold=1 the first wave's clients read nothing until the server's
 * RSS (its process and its children, as socat and nginx fork) has been
 * still for a second: the peak above the idle base, per client, is
 * weir's memory per non-reading client beyond the kernel's socket
 * buffers. Then they read the whole
 * file. `rss after` is sampled two seconds after the last wave left.
 * Every client must receive exactly the file's size (nginx's clients send
 * a GET and skip the response header).
 *
 * The clients run on the server's machine. With discard=1 (the default)
 * they take the body with MSG_TRUNC, which counts the bytes without
 * copying them to user space, so what the wave measures is the server's
 * cost rather than the receivers' copies; discard=0 copies every byte
 * out, as a real client would.
 *
 * The first lines say which TCP congestion control the connections use.
 * Under bbr every connection is paced by timers, and on loopback that
 * pacing holds each connection to a rate of its own, whatever the
 * server: cc=cubic (root) runs the whole suite, servers and clients, in
 * a network namespace whose congestion control is cubic.
 */
#include <dirent.h>
#include <errno.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/ioctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bench.h"
#include "e2e.h"
#include "serve.h"

#define STALL_NS (300 * UINT64_C(1000000000))

struct wave {
    double gbps, slowest_s, accepts_per_s;
    double cpu_s_per_gib; /* the server's, over the wave */
    int good;
};

/* Until every client has bytes queued (it was accepted and is being
 * served), then until the server's RSS has been still for a second.
 * Returns the peak RSS seen, KiB. */
static long hold_until_still(struct serve_client *cl, int n, pid_t pid)
{
    long peak = 0, last = -1;
    int still = 0;
    uint64_t deadline = bench_now_ns() + 60 * UINT64_C(1000000000);

    while (bench_now_ns() < deadline) {
        int started = 0;
        long rss = serve_rss_kib(pid);

        for (int i = 0; i < n; i++) {
            int q = 0;

            if (cl[i].fd >= 0 && ioctl(cl[i].fd, FIONREAD, &q) == 0 && q > 0)
                started++;
        }
        if (rss > peak)
            peak = rss;
        still =
            started == n && last >= 0 && labs(rss - last) < 256 ? still + 1 : 0;
        if (still >= 10)
            break;
        last = rss;
        usleep(100000);
    }
    return peak;
}

static struct wave run_wave(struct serve_client *cl, int n, int port, bool http,
                            bool discard, uint64_t size, char *scratch,
                            pid_t pid, bool hold, long *peak_kib)
{
    double cpu0 = serve_cpu_s(pid);
    int ep = epoll_create1(EPOLL_CLOEXEC);
    int left = n - serve_open_all(cl, n, port, http, ep);
    uint64_t first = UINT64_MAX, last = 0, last_first = 0;
    uint64_t slowest = 0;
    struct wave w = {0};

    if (hold)
        *peak_kib = hold_until_still(cl, n, pid);
    serve_drain_all(cl, n, left, ep, scratch, http, discard, STALL_NS);
    close(ep);
    w.cpu_s_per_gib =
        (serve_cpu_s(pid) - cpu0) / ((double)size * n / 1073741824.0);
    for (int i = 0; i < n; i++) {
        if (!cl[i].failed && cl[i].bytes == size)
            w.good++;
        if (cl[i].start_ns < first)
            first = cl[i].start_ns;
        if (cl[i].end_ns > last)
            last = cl[i].end_ns;
        if (cl[i].first_ns > last_first)
            last_first = cl[i].first_ns;
        if (cl[i].end_ns - cl[i].start_ns > slowest)
            slowest = cl[i].end_ns - cl[i].start_ns;
    }
    w.gbps = (double)size * n / (double)(last > first ? last - first : 1);
    w.slowest_s = (double)slowest / 1e9;
    w.accepts_per_s =
        hold ? 0
             : n * 1e9 / (double)(last_first > first ? last_first - first : 1);
    return w;
}

static int run_server(const struct e2e_sender *srv, const struct e2e_env *env,
                      const char *file, uint64_t size, int n, int waves,
                      bool hold, bool discard, struct serve_client *cl,
                      char *scratch)
{
    char port[16], sizestr[32];
    int p = serve_free_port(), status = 0, rc = 0;
    bool http = serve_speaks_http(srv->name);
    long base, peak = 0, after;
    pid_t pid;

    e2e_format_size(size, sizestr, sizeof(sizestr));
    snprintf(port, sizeof(port), "%d", p);
    pid = p < 0 ? -1 : e2e_spawn(srv->argv, env, file, port);
    if (pid < 0 || serve_wait_ready(pid, p, http, scratch) != 0) {
        printf("serve server=%s: missing or not listening\n", srv->name);
        fflush(stdout);
        if (pid > 0) {
            kill(pid, SIGKILL);
            waitpid(pid, &status, 0);
        }
        return 0;
    }
    base = serve_rss_kib(pid);
    for (int wv = 0; wv < waves; wv++) {
        bool h = hold && wv == 0;
        struct wave w =
            run_wave(cl, n, p, http, discard, size, scratch, pid, h, &peak);

        if (w.good != n) {
            printf("serve server=%s clients=%d size=%s wave=%d: FAILED (%d "
                   "of %d clients received the whole file)\n",
                   srv->name, n, sizestr, wv + 1, w.good, n);
            rc = 1;
            continue;
        }
        printf("serve server=%s clients=%d size=%s wave=%d%s: %.2f GB/s "
               "aggregate, slowest %.3f s",
               srv->name, n, sizestr, wv + 1, h ? " (held)" : "", w.gbps,
               w.slowest_s);
        if (!h)
            printf(", %.0f accepts/s", w.accepts_per_s);
        printf(", server %.3f cpu-s/GiB", w.cpu_s_per_gib);
        printf("\n");
        fflush(stdout);
    }
    sleep(2);
    after = serve_rss_kib(pid);
    if (hold)
        printf("serve server=%s clients=%d size=%s: rss idle %.1f MB, "
               "held %.1f MB, %.1f KiB per client; %.1f MB 2 s after\n",
               srv->name, n, sizestr, base / 1024.0, peak / 1024.0,
               (double)(peak - base) / n, after / 1024.0);
    else
        printf("serve server=%s clients=%d size=%s: rss idle %.1f MB; "
               "%.1f MB 2 s after\n",
               srv->name, n, sizestr, base / 1024.0, after / 1024.0);
    fflush(stdout);
    kill(pid, SIGTERM);
    waitpid(pid, &status, 0);
    return rc;
}

int bench_serve(int argc, char **argv)
{
    uint64_t clients = 1000, size = 64u << 20, waves = 3, hold = 1;
    uint64_t discard = 1;
    const char *only = "weir,socat-fork,nginx", *cc = NULL;
    struct e2e_env env = {0};
    char path[128], sizestr[32];
    struct serve_client *cl;
    char *scratch;
    struct rlimit rl;
    int rc = 0;

    for (int i = 1; i < argc; i++) {
        int ok = 0;

        if (strncmp(argv[i], "clients=", 8) == 0)
            ok = e2e_parse_size(argv[i] + 8, &clients) == 0 && clients > 0;
        else if (strncmp(argv[i], "size=", 5) == 0)
            ok = e2e_parse_size(argv[i] + 5, &size) == 0 && size > 0;
        else if (strncmp(argv[i], "waves=", 6) == 0)
            ok = e2e_parse_size(argv[i] + 6, &waves) == 0 && waves > 0;
        else if (strncmp(argv[i], "hold=", 5) == 0)
            ok = e2e_parse_size(argv[i] + 5, &hold) == 0;
        else if (strncmp(argv[i], "discard=", 8) == 0)
            ok = e2e_parse_size(argv[i] + 8, &discard) == 0;
        else if (strncmp(argv[i], "cc=", 3) == 0)
            ok = (cc = argv[i] + 3)[0] != '\0';
        else if (strncmp(argv[i], "server=", 7) == 0)
            ok = (only = argv[i] + 7)[0] != '\0';
        if (!ok) {
            serve_usage("weir-bench serve [clients=1000] [size=64MiB] "
                        "[waves=3] [hold=1] [discard=1] [cc=NAME] "
                        "[server=NAME,...]");
            return 2;
        }
    }
    if (serve_congestion(cc) != 0)
        return 1;
    e2e_format_size(size, sizestr, sizeof(sizestr));
    if (serve_setup(&env, size, path, sizeof(path)) != 0) {
        fprintf(stderr, "serve: cannot set up: %s\n", strerror(errno));
        return 1;
    }
    cl = calloc((size_t)clients, sizeof(*cl));
    scratch = malloc(SERVE_SCRATCH);
    if (!cl || !scratch) {
        fprintf(stderr, "serve: cannot set up: %s\n", strerror(errno));
        free(cl);
        free(scratch);
        return 1;
    }
    if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY &&
        rl.rlim_cur < (rlim_t)clients + 64)
        printf("serve: open-file limit %llu is below %llu clients\n",
               (unsigned long long)rl.rlim_cur, (unsigned long long)clients);
    printf("serve: the clients %s the body\n",
           discard ? "discard (MSG_TRUNC)" : "copy out");
    for (size_t i = 0; i < serve_nservers; i++)
        if (serve_listed(only, serve_servers[i].name))
            rc |= run_server(&serve_servers[i], &env, path, size, (int)clients,
                             (int)waves, hold != 0, discard != 0, cl, scratch);
    free(cl);
    free(scratch);
    return rc;
}
