/*
 * serve.c - suite `serve`: many clients of one file server, for memory
 * and scale. Each server is started fresh, then `waves` waves of `clients`
 * connections each, opened at once from one epoll loop; the first wave
 * is the one right after the start (the cold start).
 *
 *   weir-bench serve [clients=1000] [size=64MiB] [waves=3] [hold=1]
 *                    [server=NAME,NAME...]
 *
 * Per wave: aggregate GB/s (all bytes over first connect to last byte),
 * the slowest client, and accepts per second (clients over the time from
 * the first connect until every client has its first byte, so it counts
 * the server's accept and its start of the stream). With hold=1 the first
 * wave's clients read nothing until the server's RSS (its process and its
 * children, as socat and nginx fork) has been still for a second: the
 * peak above the idle base, per client, is weir's memory per non-reading
 * client beyond the kernel's socket buffers. Then they read the whole
 * file. `rss after` is sampled two seconds after the last wave left.
 * Every client must receive exactly the file's size (nginx's clients send
 * a GET and skip the response header).
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

#define SCRATCH     (1u << 20)
#define STALL_NS    (300 * UINT64_C(1000000000))
#define READY_TRIES 250 /* x 20 ms */

/* The weir servers differ in the environment (the send path), a
 * [daemon] section and the listen address's options. */
#define WEIR_SERVER(name, daemon, opts, envset)                                \
    {                                                                          \
        name,                                                                  \
        {                                                                      \
            "sh", "-c",                                                        \
                "printf '" daemon "[pipeline serve]\\nsource = file:%s\\n"     \
                "sink = tcp-listen:127.0.0.1:%s" opts "\\n' \"$1\" \"$2\" "    \
                ">\"$1.serve.conf\" && " envset                                \
                " exec \"$3\" -c \"$1.serve.conf\"",                           \
                "sh", "{file}", "{port}", "{builddir}/daemon/weir"             \
        }                                                                      \
    }

static const struct e2e_sender servers[] = {
    WEIR_SERVER("weir", "", "", ""),
    WEIR_SERVER("weir-splice", "", "", "WEIR_SENDPATH=splice"),
    /* The stream path, with a pool that holds every client's budget. */
    WEIR_SERVER("weir-stream", "[daemon]\\npool_size = 4GiB\\n", "",
                "WEIR_SENDPATH=stream"),
    WEIR_SERVER("weir-epoll", "", "", "WEIR_ENGINE=epoll"),
    WEIR_SERVER("weir-b128", "", ",backlog=128", ""),
    WEIR_SERVER("weir-b1024", "", ",backlog=1024", ""),
    WEIR_SERVER("weir-b4096", "", ",backlog=4096", ""),
    {"socat-fork",
     {"socat", "-U", "-b", "65536",
      "TCP-LISTEN:{port},bind=127.0.0.1,fork,reuseaddr,backlog=511",
      "OPEN:{file},rdonly"}},
    /* Debian's nginx-light, sendfile on, as many workers as cores. */
    {"nginx",
     {"sh", "-c",
      "d=$1.nginx; mkdir -p $d && ln -sf \"$1\" $d/f && printf '"
      "daemon off; worker_processes auto; pid %s/pid; error_log stderr;"
      "worker_rlimit_nofile 65536; events { worker_connections 65536; }"
      "http { access_log off; sendfile on; tcp_nopush on; "
      "client_body_temp_path %s; proxy_temp_path %s; "
      "server { listen 127.0.0.1:%s backlog=511; root %s; } }' "
      "$d $d $d \"$2\" $d >$d/conf && exec nginx -p $d -c $d/conf",
      "sh", "{file}", "{port}"}},
};
#define NSERVERS (sizeof(servers) / sizeof(servers[0]))

static const char http_get[] = "GET /f HTTP/1.0\r\n\r\n";

struct client {
    int fd;
    uint64_t bytes; /* of the body */
    uint64_t start_ns, first_ns, end_ns;
    unsigned hdr; /* "\r\n\r\n" matched so far; 4 when in the body */
    int failed;
};

struct wave {
    double gbps, slowest_s, accepts_per_s;
    int good;
};

static struct sockaddr_in loopback(int port)
{
    struct sockaddr_in sin = {.sin_family = AF_INET};

    sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    sin.sin_port = htons((uint16_t)port);
    return sin;
}

static int free_port(void)
{
    struct sockaddr_in sin = loopback(0);
    socklen_t len = sizeof(sin);
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    int port = -1;

    if (fd >= 0 && bind(fd, (struct sockaddr *)&sin, sizeof(sin)) == 0 &&
        getsockname(fd, (struct sockaddr *)&sin, &len) == 0)
        port = ntohs(sin.sin_port);
    if (fd >= 0)
        close(fd);
    return port;
}

static long rss_kib_of(pid_t pid)
{
    char path[64], line[256];
    long kib = 0;
    FILE *f;

    snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
    f = fopen(path, "r");
    if (!f)
        return 0;
    while (fgets(line, sizeof(line), f))
        if (sscanf(line, "VmRSS: %ld", &kib) == 1)
            break;
    fclose(f);
    return kib;
}

/* The RSS of pid and its children (socat's forks, nginx's workers). */
static long rss_tree_kib(pid_t pid)
{
    long kib = rss_kib_of(pid);
    DIR *d = opendir("/proc");
    struct dirent *e;

    while (d && (e = readdir(d))) {
        char path[300], buf[512], *p;
        int ppid = 0;
        FILE *f;

        if (e->d_name[0] < '0' || e->d_name[0] > '9')
            continue;
        snprintf(path, sizeof(path), "/proc/%s/stat", e->d_name);
        f = fopen(path, "r");
        if (!f)
            continue;
        if (fgets(buf, sizeof(buf), f) && (p = strrchr(buf, ')')) &&
            sscanf(p + 1, " %*c %d", &ppid) == 1 && ppid == pid)
            kib += rss_kib_of((pid_t)atoi(e->d_name));
        fclose(f);
    }
    if (d)
        closedir(d);
    return kib;
}

static int connect_one(int port, bool http)
{
    struct sockaddr_in sin = loopback(port);
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

    if (fd < 0)
        return -1;
    if (connect(fd, (struct sockaddr *)&sin, sizeof(sin)) != 0 ||
        (http && send(fd, http_get, sizeof(http_get) - 1, 0) < 0)) {
        close(fd);
        return -1;
    }
    return fd;
}

static int wait_ready(pid_t pid, int port, bool http, char *scratch)
{
    int status;

    for (int i = 0; i < READY_TRIES; i++) {
        int fd = connect_one(port, http);

        if (fd >= 0) {
            while (recv(fd, scratch, SCRATCH, 0) > 0)
                ;
            close(fd);
            return 0;
        }
        if (waitpid(pid, &status, WNOHANG) == pid)
            return -1;
        usleep(20000);
    }
    return -1;
}

/* Counts n received bytes, skipping an HTTP header first when asked. */
static void count(struct client *c, const char *buf, size_t n, bool http)
{
    static const char end[] = "\r\n\r\n";
    size_t i = 0;

    while (http && c->hdr < 4 && i < n) {
        c->hdr = buf[i] == end[c->hdr] ? c->hdr + 1 : (buf[i] == '\r');
        i++;
    }
    c->bytes += n - i;
}

static void drain(struct client *c, char *scratch, bool http, uint64_t now)
{
    for (;;) {
        ssize_t n = recv(c->fd, scratch, SCRATCH, 0);

        if (n > 0) {
            if (!c->first_ns)
                c->first_ns = now;
            count(c, scratch, (size_t)n, http);
            continue;
        }
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
            return;
        c->end_ns = now;
        c->failed = n < 0;
        close(c->fd);
        c->fd = -1;
        return;
    }
}

/* Opens every client's connection (non-blocking) into ep. Returns how
 * many could not even start. */
static int open_all(struct client *cl, int n, int port, bool http, int ep)
{
    struct sockaddr_in sin = loopback(port);
    int bad = 0;

    for (int i = 0; i < n; i++) {
        struct epoll_event ev = {.events = EPOLLIN | EPOLLRDHUP};

        cl[i] = (struct client){.start_ns = bench_now_ns()};
        cl[i].fd =
            socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
        ev.data.u32 = (uint32_t)i;
        if (cl[i].fd < 0 ||
            (connect(cl[i].fd, (struct sockaddr *)&sin, sizeof(sin)) != 0 &&
             errno != EINPROGRESS)) {
            if (cl[i].fd >= 0)
                close(cl[i].fd);
            cl[i].fd = -1;
            cl[i].failed = 1;
            bad++;
            continue;
        }
        if (http) {
            /* A connect in progress cannot send yet: wait for it. */
            struct epoll_event w = {.events = EPOLLOUT};
            int one = epoll_create1(EPOLL_CLOEXEC);

            epoll_ctl(one, EPOLL_CTL_ADD, cl[i].fd, &w);
            epoll_wait(one, &w, 1, 10000);
            close(one);
            (void)!send(cl[i].fd, http_get, sizeof(http_get) - 1, 0);
        }
        epoll_ctl(ep, EPOLL_CTL_ADD, cl[i].fd, &ev);
    }
    return bad;
}

/* Until every client has bytes queued (it was accepted and is being
 * served), then until the server's RSS has been still for a second.
 * Returns the peak RSS seen, KiB. */
static long hold_until_still(struct client *cl, int n, pid_t pid)
{
    long peak = 0, last = -1;
    int still = 0;
    uint64_t deadline = bench_now_ns() + 60 * UINT64_C(1000000000);

    while (bench_now_ns() < deadline) {
        int started = 0;
        long rss = rss_tree_kib(pid);

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

static struct wave run_wave(struct client *cl, int n, int port, bool http,
                            uint64_t size, char *scratch, pid_t pid, bool hold,
                            long *peak_kib)
{
    struct epoll_event evs[256];
    int ep = epoll_create1(EPOLL_CLOEXEC);
    int left = n - open_all(cl, n, port, http, ep);
    uint64_t deadline, first = UINT64_MAX, last = 0, last_first = 0;
    uint64_t slowest = 0;
    struct wave w = {0};

    if (hold)
        *peak_kib = hold_until_still(cl, n, pid);
    deadline = bench_now_ns() + STALL_NS;
    while (left > 0 && bench_now_ns() < deadline) {
        int k = epoll_wait(ep, evs, 256, 1000);
        uint64_t now = bench_now_ns();

        for (int j = 0; j < k; j++) {
            struct client *c = &cl[evs[j].data.u32];

            if (c->fd < 0)
                continue;
            drain(c, scratch, http, now);
            if (c->fd < 0)
                left--;
        }
    }
    close(ep);
    for (int i = 0; i < n; i++) {
        if (cl[i].fd >= 0) {
            close(cl[i].fd);
            cl[i].failed = 1;
        }
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
                      bool hold, struct client *cl, char *scratch)
{
    char port[16], sizestr[32];
    int p = free_port(), status = 0, rc = 0;
    bool http = strcmp(srv->name, "nginx") == 0;
    long base, peak = 0, after;
    pid_t pid;

    e2e_format_size(size, sizestr, sizeof(sizestr));
    snprintf(port, sizeof(port), "%d", p);
    pid = p < 0 ? -1 : e2e_spawn(srv->argv, env, file, port);
    if (pid < 0 || wait_ready(pid, p, http, scratch) != 0) {
        printf("serve server=%s: missing or not listening\n", srv->name);
        fflush(stdout);
        if (pid > 0) {
            kill(pid, SIGKILL);
            waitpid(pid, &status, 0);
        }
        return 0;
    }
    base = rss_tree_kib(pid);
    for (int wv = 0; wv < waves; wv++) {
        bool h = hold && wv == 0;
        struct wave w = run_wave(cl, n, p, http, size, scratch, pid, h, &peak);

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
        printf("\n");
        fflush(stdout);
    }
    sleep(2);
    after = rss_tree_kib(pid);
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

static bool listed(const char *list, const char *name)
{
    size_t len = strlen(name);

    for (const char *p = list; p && *p;) {
        const char *comma = strchr(p, ',');
        size_t n = comma ? (size_t)(comma - p) : strlen(p);

        if (n == len && strncmp(p, name, len) == 0)
            return true;
        p = comma ? comma + 1 : NULL;
    }
    return false;
}

int bench_serve(int argc, char **argv)
{
    uint64_t clients = 1000, size = 64u << 20, waves = 3, hold = 1;
    const char *only = "weir,socat-fork,nginx";
    struct e2e_env env = {0};
    char path[128], sizestr[32];
    struct client *cl;
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
        else if (strncmp(argv[i], "server=", 7) == 0)
            ok = (only = argv[i] + 7)[0] != '\0';
        if (!ok) {
            fprintf(stderr, "usage: weir-bench serve [clients=1000] "
                            "[size=64MiB] [waves=3] [hold=1] "
                            "[server=NAME,...]\nservers:");
            for (size_t k = 0; k < NSERVERS; k++)
                fprintf(stderr, " %s", servers[k].name);
            fprintf(stderr, "\n");
            return 2;
        }
    }
    if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
        rl.rlim_cur = rl.rlim_max;
        setrlimit(RLIMIT_NOFILE, &rl);
    }
    signal(SIGPIPE, SIG_IGN);
    if (e2e_env_init(&env) != 0)
        return 1;
    e2e_format_size(size, sizestr, sizeof(sizestr));
    snprintf(path, sizeof(path), "/tmp/weir-bench-serve-%s.bin", sizestr);
    cl = calloc((size_t)clients, sizeof(*cl));
    scratch = malloc(SCRATCH);
    if (!cl || !scratch || e2e_make_file(path, size) != 0) {
        fprintf(stderr, "serve: cannot set up: %s\n", strerror(errno));
        free(cl);
        free(scratch);
        return 1;
    }
    if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY &&
        rl.rlim_cur < (rlim_t)clients + 64)
        printf("serve: open-file limit %llu is below %llu clients\n",
               (unsigned long long)rl.rlim_cur, (unsigned long long)clients);
    for (size_t i = 0; i < NSERVERS; i++)
        if (listed(only, servers[i].name))
            rc |= run_server(&servers[i], &env, path, size, (int)clients,
                             (int)waves, hold != 0, cl, scratch);
    free(cl);
    free(scratch);
    return rc;
}
