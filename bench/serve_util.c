/*
 * serve_util.c - what the suites of file servers share (`serve` and
 * `hostile`): the servers, each an argv template, and a client's parts:
 * the connect, the readiness probe, the HTTP header skip, the server's RSS.
 */
#include <dirent.h>
#include <errno.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <net/if.h>
#include <sched.h>
#include <sys/epoll.h>
#include <sys/ioctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bench.h"
#include "serve.h"

#define READY_TRIES 250 /* x 20 ms */

/* The weir servers differ in the environment (the send path), keys of
 * the [daemon] section and the listen address's options. Like nginx's
 * below, they keep no access log unless the name says so: a line per
 * client is the operator's choice, not the server's speed. */
#define WEIR_SERVER(name, daemon, opts, envset)                                \
    {                                                                          \
        name,                                                                  \
        {                                                                      \
            "sh", "-c",                                                        \
                "printf '[daemon]\\n" daemon                                   \
                "[pipeline serve]\\nsource = file:%s\\n"                       \
                "sink = tcp-listen:127.0.0.1:%s" opts "\\n' \"$1\" \"$2\" "    \
                ">\"$1.serve.conf\" && " envset                                \
                " exec \"$3\" -c \"$1.serve.conf\"",                           \
                "sh", "{file}", "{port}", "{builddir}/daemon/weir"             \
        }                                                                      \
    }

#define NO_ACCESS_LOG "access_log = no\\n"

/* weir's HTTP file server: the file at /f, as nginx serves it below. */
#define WEIR_HTTP_SERVER(name, opts, envset)                                   \
    {                                                                          \
        name,                                                                  \
        {                                                                      \
            "sh", "-c",                                                        \
                "printf '[daemon]\\n" NO_ACCESS_LOG                            \
                "[pipeline serve]\\nsource = file:%s\\n"                       \
                "sink = http-listen:127.0.0.1:%s,path=/f" opts "\\n' \"$1\" "  \
                "\"$2\" "                                                      \
                ">\"$1.serve.conf\" && " envset                                \
                " exec \"$3\" -c \"$1.serve.conf\"",                           \
                "sh", "{file}", "{port}", "{builddir}/daemon/weir"             \
        }                                                                      \
    }

/* Debian's nginx serving the file at /f; listen_opts follow the
 * listen directive's backlog. */
#define NGINX_SERVER(name, listen_opts)                                        \
    {                                                                          \
        name,                                                                  \
        {                                                                      \
            "sh", "-c",                                                        \
                "d=$1.nginx; mkdir -p $d && ln -sf \"$1\" $d/f && printf '"    \
                "daemon off; worker_processes auto; pid %s/pid; "              \
                "error_log stderr; worker_rlimit_nofile 65536; "               \
                "events { worker_connections 65536; }"                         \
                "http { access_log off; sendfile on; tcp_nopush on; "          \
                "client_body_temp_path %s; proxy_temp_path %s; "               \
                "server { listen 127.0.0.1:%s backlog=511" listen_opts         \
                "; root %s; } }' "                                             \
                "$d $d $d \"$2\" $d >$d/conf && exec nginx -p $d -c $d/conf",  \
                "sh", "{file}", "{port}"                                       \
        }                                                                      \
    }

const struct e2e_sender serve_servers[] = {
    WEIR_SERVER("weir", NO_ACCESS_LOG, "", ""),
    WEIR_SERVER("weir-accesslog", "access_log = yes\\n", "", ""),
    WEIR_SERVER("weir-splice", NO_ACCESS_LOG, "", "WEIR_SENDPATH=splice"),
    /* The stream path, with a pool that holds every client's budget. */
    WEIR_SERVER("weir-stream", NO_ACCESS_LOG "pool_size = 4GiB\\n", "",
                "WEIR_SENDPATH=stream"),
    WEIR_SERVER("weir-epoll", NO_ACCESS_LOG, "", "WEIR_ENGINE=epoll"),
    WEIR_SERVER("weir-b128", NO_ACCESS_LOG, ",backlog=128", ""),
    WEIR_SERVER("weir-b511", NO_ACCESS_LOG, ",backlog=511", ""),
    /* notsent_lowat other than its default (auto: 128 KiB under bbr,
     * 1 MiB otherwise); 0: the kernel's send buffers, unbounded. */
    WEIR_SERVER("weir-lowat0", NO_ACCESS_LOG, ",notsent_lowat=0", ""),
    WEIR_SERVER("weir-lowat128k", NO_ACCESS_LOG, ",notsent_lowat=128KiB", ""),
    WEIR_SERVER("weir-lowat256k", NO_ACCESS_LOG, ",notsent_lowat=256KiB", ""),
    WEIR_SERVER("weir-lowat512k", NO_ACCESS_LOG, ",notsent_lowat=512KiB", ""),
    WEIR_SERVER("weir-lowat1m", NO_ACCESS_LOG, ",notsent_lowat=1MiB", ""),
    WEIR_SERVER("weir-stream-lowat0", NO_ACCESS_LOG "pool_size = 4GiB\\n",
                ",notsent_lowat=0", "WEIR_SENDPATH=stream"),
    WEIR_SERVER("weir-b1024", NO_ACCESS_LOG, ",backlog=1024", ""),
    WEIR_SERVER("weir-b4096", NO_ACCESS_LOG, ",backlog=4096", ""),
    WEIR_HTTP_SERVER("weir-http", "", ""),
    WEIR_HTTP_SERVER("weir-http-epoll", "", "WEIR_ENGINE=epoll"),
    WEIR_HTTP_SERVER("weir-http-lowat0", ",notsent_lowat=0", ""),
    {"socat-fork",
     {"socat", "-U", "-b", "65536",
      "TCP-LISTEN:{port},bind=127.0.0.1,fork,reuseaddr,backlog=511",
      "OPEN:{file},rdonly"}},
    /* Debian's nginx-light, sendfile on, as many workers as cores. */
    NGINX_SERVER("nginx", ""),
    /* The same with a listening socket per worker (SO_REUSEPORT): the
     * kernel spreads the connections instead of the workers racing. */
    NGINX_SERVER("nginx-reuseport", " reuseport"),
};
const size_t serve_nservers = sizeof(serve_servers) / sizeof(serve_servers[0]);

const char serve_http_get[] = "GET /f HTTP/1.0\r\n\r\n";

bool serve_speaks_http(const char *name)
{
    return strncmp(name, "nginx", 5) == 0 || strncmp(name, "weir-http", 9) == 0;
}
const size_t serve_http_get_len = sizeof(serve_http_get) - 1;

struct sockaddr_in serve_loopback(int port)
{
    struct sockaddr_in sin = {.sin_family = AF_INET};

    sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    sin.sin_port = htons((uint16_t)port);
    return sin;
}

int serve_free_port(void)
{
    struct sockaddr_in sin = serve_loopback(0);
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

/* /proc/PID/stat's text after the command's closing parenthesis, which
 * may itself hold spaces and parentheses; false when pid is gone. */
static bool stat_fields(pid_t pid, char *buf, size_t len, char **rest)
{
    char path[64];
    FILE *f;
    bool ok;

    snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
    f = fopen(path, "r");
    if (!f)
        return false;
    ok = fgets(buf, (int)len, f) && (*rest = strrchr(buf, ')'));
    fclose(f);
    return ok;
}

/* CPU seconds pid has used: its threads' time on a CPU (schedstat, in
 * ns, where /proc/PID/stat counts in clock ticks of 10 ms, too coarse
 * for a wave that costs the server a few of them), and the children it
 * has reaped (socat's finished forks), which stat alone keeps. */
static double cpu_s_of(pid_t pid)
{
    unsigned long long cut = 0, cst = 0, ns = 0;
    char path[300], buf[1024], *p;
    struct dirent *e;
    DIR *d;

    if (stat_fields(pid, buf, sizeof(buf), &p))
        (void)sscanf(p + 1,
                     " %*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %*u %*u "
                     "%llu %llu",
                     &cut, &cst);
    snprintf(path, sizeof(path), "/proc/%d/task", (int)pid);
    d = opendir(path);
    while (d && (e = readdir(d))) {
        unsigned long long t;
        FILE *f;

        if (e->d_name[0] < '0' || e->d_name[0] > '9')
            continue;
        snprintf(path, sizeof(path), "/proc/%d/task/%s/schedstat", (int)pid,
                 e->d_name);
        f = fopen(path, "r");
        if (!f)
            continue;
        if (fscanf(f, "%llu", &t) == 1)
            ns += t;
        fclose(f);
    }
    if (d)
        closedir(d);
    return (double)ns / 1e9 +
           (double)(cut + cst) / (double)sysconf(_SC_CLK_TCK);
}

/* f(child) summed over pid's live children. */
static double sum_children(pid_t pid, double (*f)(pid_t))
{
    DIR *d = opendir("/proc");
    struct dirent *e;
    double sum = 0;

    while (d && (e = readdir(d))) {
        char buf[1024], *p;
        int ppid = 0;

        if (e->d_name[0] < '0' || e->d_name[0] > '9')
            continue;
        if (stat_fields((pid_t)atoi(e->d_name), buf, sizeof(buf), &p) &&
            sscanf(p + 1, " %*c %d", &ppid) == 1 && ppid == pid)
            sum += f((pid_t)atoi(e->d_name));
    }
    if (d)
        closedir(d);
    return sum;
}

static double rss_of(pid_t pid)
{
    return (double)rss_kib_of(pid);
}

long serve_rss_kib(pid_t pid)
{
    return rss_kib_of(pid) + (long)sum_children(pid, rss_of);
}

double serve_cpu_s(pid_t pid)
{
    return cpu_s_of(pid) + sum_children(pid, cpu_s_of);
}

int serve_connect(int port, bool http)
{
    struct sockaddr_in sin = serve_loopback(port);
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

    if (fd < 0)
        return -1;
    if (connect(fd, (struct sockaddr *)&sin, sizeof(sin)) != 0 ||
        (http && send(fd, serve_http_get, serve_http_get_len, 0) < 0)) {
        close(fd);
        return -1;
    }
    return fd;
}

int serve_wait_ready(pid_t pid, int port, bool http, char *scratch)
{
    int status;

    for (int i = 0; i < READY_TRIES; i++) {
        int fd = serve_connect(port, http);

        if (fd >= 0) {
            while (recv(fd, scratch, SERVE_SCRATCH, 0) > 0)
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

size_t serve_body(unsigned *hdr, const char *buf, size_t n, bool http)
{
    static const char end[] = "\r\n\r\n";
    size_t i = 0;

    while (http && *hdr < 4 && i < n) {
        *hdr = buf[i] == end[*hdr] ? *hdr + 1 : (buf[i] == '\r');
        i++;
    }
    return n - i;
}

bool serve_listed(const char *list, const char *name)
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

void serve_usage(const char *usage)
{
    fprintf(stderr, "usage: %s\nservers:", usage);
    for (size_t k = 0; k < serve_nservers; k++)
        fprintf(stderr, " %s", serve_servers[k].name);
    fprintf(stderr, "\n");
}

int serve_setup(struct e2e_env *env, uint64_t size, char *path, size_t len)
{
    struct rlimit rl;
    char sizestr[32];

    if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
        rl.rlim_cur = rl.rlim_max;
        setrlimit(RLIMIT_NOFILE, &rl);
    }
    signal(SIGPIPE, SIG_IGN);
    if (e2e_env_init(env) != 0)
        return -1;
    e2e_format_size(size, sizestr, sizeof(sizestr));
    snprintf(path, len, "/tmp/weir-bench-serve-%s.bin", sizestr);
    return e2e_make_file(path, size);
}

#define CC_PATH      "/proc/sys/net/ipv4/tcp_congestion_control"
#define ALLOWED_PATH "/proc/sys/net/ipv4/tcp_allowed_congestion_control"

static int read_line(const char *path, char *buf, size_t len)
{
    FILE *f = fopen(path, "r");
    bool ok = f && fgets(buf, (int)len, f);

    if (f)
        fclose(f);
    if (!ok)
        return -1;
    buf[strcspn(buf, "\n")] = '\0';
    return 0;
}

/* A network namespace of the suite's own, with its loopback up: what is
 * set in it (the congestion control) leaves the machine's untouched, and
 * every server and client started after it shares it. */
static int own_netns(void)
{
    struct ifreq ifr = {0};
    int fd, rc;

    if (unshare(CLONE_NEWNET) != 0)
        return -1;
    fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return -1;
    snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), "lo");
    rc = ioctl(fd, SIOCGIFFLAGS, &ifr);
    if (rc == 0) {
        ifr.ifr_flags |= IFF_UP;
        rc = ioctl(fd, SIOCSIFFLAGS, &ifr);
    }
    close(fd);
    return rc;
}

/*
 * A namespace other than the first may only default to a congestion
 * control in net.ipv4.tcp_allowed_congestion_control (the kernel's
 * "non-restricted" ones; EPERM otherwise). That list is the machine's,
 * shared by every namespace: cc is added to it, before the namespace is
 * made, and the bench says so.
 */
static int allow_congestion(const char *cc)
{
    char list[256] = "", want[300], *tok, *save, copy[256];
    FILE *f;

    if (read_line(ALLOWED_PATH, list, sizeof(list)) != 0)
        return -1;
    memcpy(copy, list, sizeof(copy));
    for (tok = strtok_r(copy, " ", &save); tok;
         tok = strtok_r(NULL, " ", &save))
        if (strcmp(tok, cc) == 0)
            return 0;
    snprintf(want, sizeof(want), "%s %s", list, cc);
    f = fopen(ALLOWED_PATH, "w");
    if (!f || fprintf(f, "%s\n", want) < 0 || fclose(f) != 0)
        return -1;
    printf("serve: added %s to the machine's "
           "net.ipv4.tcp_allowed_congestion_control (was: %s)\n",
           cc, list);
    return 0;
}

int serve_congestion(const char *cc)
{
    char now[64] = "?";
    FILE *f;

    if (cc) {
        if (allow_congestion(cc) != 0) {
            fprintf(stderr, "serve: cannot allow congestion control %s: %s\n",
                    cc, strerror(errno));
            return -1;
        }
        if (own_netns() != 0) {
            fprintf(stderr,
                    "serve: cc=%s needs a network namespace of its own, "
                    "which needs root (CAP_SYS_ADMIN): %s\n",
                    cc, strerror(errno));
            return -1;
        }
        f = fopen(CC_PATH, "w");
        if (!f || fprintf(f, "%s\n", cc) < 0 || fclose(f) != 0) {
            fprintf(stderr, "serve: cannot set congestion control %s: %s\n", cc,
                    strerror(errno));
            return -1;
        }
    }
    read_line(CC_PATH, now, sizeof(now));
    printf("serve: TCP congestion control %s (%s)\n", now,
           cc ? "in a network namespace of the suite's own" : "the machine's");
    if (strcmp(now, "bbr") == 0)
        printf("serve: bbr paces every connection with timers; on loopback "
               "the pacing, not the server, sets the rate (cc=cubic runs "
               "the suite without it)\n");
    return 0;
}

/* With discard, the body is received with MSG_TRUNC: TCP drops the bytes
 * in the kernel and returns their count, so the receivers do not copy
 * every byte on the cores the server under test also runs on. */
static void drain(struct serve_client *c, char *scratch, bool http,
                  bool discard, uint64_t now)
{
    for (;;) {
        bool body = discard && (!http || c->hdr == 4);
        ssize_t n = body ? recv(c->fd, scratch, SERVE_DISCARD, MSG_TRUNC)
                         : recv(c->fd, scratch, SERVE_SCRATCH, 0);

        if (n > 0) {
            if (!c->first_ns)
                c->first_ns = now;
            c->bytes += body ? (size_t)n
                             : serve_body(&c->hdr, scratch, (size_t)n, http);
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

int serve_open_all(struct serve_client *cl, int n, int port, bool http, int ep)
{
    struct sockaddr_in sin = serve_loopback(port);
    int bad = 0;

    for (int i = 0; i < n; i++) {
        struct epoll_event ev = {.events = EPOLLIN | EPOLLRDHUP};

        cl[i] = (struct serve_client){.start_ns = bench_now_ns()};
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
            cl[i].end_ns = cl[i].start_ns;
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
            (void)!send(cl[i].fd, serve_http_get, serve_http_get_len, 0);
        }
        epoll_ctl(ep, EPOLL_CTL_ADD, cl[i].fd, &ev);
    }
    return bad;
}

void serve_drain_all(struct serve_client *cl, int n, int left, int ep,
                     char *scratch, bool http, bool discard, uint64_t stall_ns)
{
    struct epoll_event evs[256];
    uint64_t deadline = bench_now_ns() + stall_ns;

    while (left > 0 && bench_now_ns() < deadline) {
        int k = epoll_wait(ep, evs, 256, 1000);
        uint64_t now = bench_now_ns();

        for (int j = 0; j < k; j++) {
            struct serve_client *c = &cl[evs[j].data.u32];

            if (c->fd < 0)
                continue;
            drain(c, scratch, http, discard, now);
            if (c->fd < 0)
                left--;
        }
    }
    for (int i = 0; i < n; i++)
        if (cl[i].fd >= 0) {
            close(cl[i].fd);
            cl[i].fd = -1;
            cl[i].failed = 1;
        }
}
