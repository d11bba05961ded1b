/*
 * e2e_tls.c - suite `e2e-tls`: the TLS rows of the end-to-end comparison,
 * side by side in one run.
 *
 *   weir-bench e2e-tls [size=1GiB] [reps=2] [clients=1000]
 *                      [client-size=1MiB]
 *
 * One file into one TLS connection on 127.0.0.1: an in-process receiver
 * thread accepts one connection, completes the handshake as the server
 * (an ECDSA P-256 certificate made with the openssl command), reads into
 * 1 MiB and discards, and checks the byte count. Senders: weir pipe (both
 * engines), socat's OPENSSL: address, and nginx's stream module
 * (proxy_ssl), which a plain sendfile sender feeds on 127.0.0.1. Each
 * row names the protocol, cipher and key exchange the receiver
 * negotiated; CPU is the sender's (for nginx: nginx's and its feeder's).
 *
 * Then `clients` TLS clients at once of a tls-listen file server (weir,
 * both engines) and of socat's OPENSSL-LISTEN,fork, each receiving a
 * `client-size` file from one epoll loop of non-blocking SSL objects:
 * aggregate throughput and the slowest client; every client must get
 * every byte.
 */
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <openssl/err.h>
#include <openssl/ssl.h>

#include "bench.h"
#include "e2e.h"
#include "harness.h"

#define TLS_DIR  "/tmp/weir-bench-tls"
#define TLS_CERT TLS_DIR "/cert.pem"
#define TLS_KEY  TLS_DIR "/key.pem"
#define SCRATCH  (1u << 20)
#define GiB      (1024.0 * 1024.0 * 1024.0)
#define STALL_NS (120 * UINT64_C(1000000000))

/* nginx: a stream server on {port}+1 that originates TLS to {port}; the
 * file comes in plain from sendfile-send. QUIT lets it finish the copy. */
#define NGINX_SCRIPT                                                           \
    "P1=$(( $2 + 1 )); D=" TLS_DIR "; "                                        \
    "printf 'load_module /usr/lib/nginx/modules/ngx_stream_module.so;\\n"      \
    "worker_processes 1;\\nerror_log %s/ngx.err;\\npid %s/ngx.pid;\\n"         \
    "events {}\\nstream { server { listen 127.0.0.1:%s; "                      \
    "proxy_pass 127.0.0.1:%s; proxy_ssl on; proxy_ssl_protocols TLSv1.2 "      \
    "TLSv1.3; proxy_buffer_size 64k; } }\\n' "                                 \
    "\"$D\" \"$D\" \"$P1\" \"$2\" > \"$D/ngx.conf\" && "                       \
    "{ nginx -c \"$D/ngx.conf\" -g 'daemon off;' & N=$!; } && "                \
    "H=$(printf ':%04X 00000000:0000 0A' \"$P1\"); "                           \
    "until grep -q \"$H\" /proc/net/tcp; do "                                  \
    "kill -0 $N 2>/dev/null || exit 1; sleep 0.02; done; "                     \
    "\"$3/sendfile-send\" \"$1\" \"$P1\"; R=$?; kill -QUIT $N; wait $N; "      \
    "exit $R"

static const struct e2e_sender tls_senders[] = {
    {"weir-pipe",
     {"{builddir}/daemon/weir", "pipe", "file:{file}",
      "tls:127.0.0.1:{port},verify=no"}},
    {"weir-pipe-epoll",
     {"env", "WEIR_ENGINE=epoll", "{builddir}/daemon/weir", "pipe",
      "file:{file}", "tls:127.0.0.1:{port},verify=no"}},
    {"socat",
     {"socat", "-u", "-b", "65536", "FILE:{file}",
      "OPENSSL:127.0.0.1:{port},verify=0"}},
    {"nginx-stream",
     {"sh", "-c", NGINX_SCRIPT, "sh", "{file}", "{port}", "{bindir}"}},
};
#define NSENDERS (sizeof(tls_senders) / sizeof(tls_senders[0]))

#define WEIR_TLS_SERVER(env)                                                   \
    {                                                                          \
        "sh", "-c",                                                            \
            "printf '[daemon]\\naccess_log = no\\n"                            \
            "[pipeline e2e]\\nsource = file:%s\\nsink = "                      \
            "tls-listen:127.0.0.1:%s,backlog=1024,cert=" TLS_CERT              \
            ",key=" TLS_KEY "\\n' \"$1\" \"$2\" >\"$1.tls.conf\" && " env      \
            "exec \"$3\" -c "                                                  \
            "\"$1.tls.conf\"",                                                 \
            "sh", "{file}", "{port}", "{builddir}/daemon/weir"                 \
    }

static const struct e2e_sender tls_servers[] = {
    {"weir", WEIR_TLS_SERVER("")},
    {"weir-epoll", WEIR_TLS_SERVER("WEIR_ENGINE=epoll ")},
    {"socat-fork",
     {"socat", "-U", "-b", "65536",
      "OPENSSL-LISTEN:{port},bind=127.0.0.1,fork,reuseaddr,backlog=1024,"
      "cert=" TLS_CERT ",key=" TLS_KEY ",verify=0",
      "OPEN:{file},rdonly"}},
};
#define NSERVERS (sizeof(tls_servers) / sizeof(tls_servers[0]))

static int make_cert(void)
{
    struct stat st;

    if (stat(TLS_CERT, &st) == 0 && stat(TLS_KEY, &st) == 0)
        return 0;
    mkdir(TLS_DIR, 0700);
    return system("openssl req -x509 -newkey ec -pkeyopt "
                  "ec_paramgen_curve:prime256v1 -nodes -keyout " TLS_KEY
                  " -out " TLS_CERT " -days 30 -subj /CN=localhost "
                  "-addext subjectAltName=IP:127.0.0.1 2>/dev/null") == 0
               ? 0
               : -1;
}

/* ---- one file into one TLS receiver ---- */

struct tls_rx {
    int lfd;
    SSL_CTX *ctx;
    uint64_t bytes, cpu_ns;
    int failed;
    char what[96]; /* protocol, cipher, key exchange */
};

static uint64_t thread_cpu_ns(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void *tls_rx_main(void *arg)
{
    struct tls_rx *rx = arg;
    uint64_t c0 = thread_cpu_ns();
    char *buf = malloc(SCRATCH);
    int fd = accept(rx->lfd, NULL, NULL);
    SSL *s = NULL;
    size_t n;

    if (fd < 0 || !buf || !(s = SSL_new(rx->ctx)) || !SSL_set_fd(s, fd) ||
        SSL_accept(s) != 1) {
        rx->failed = 1;
        goto out;
    }
    snprintf(rx->what, sizeof(rx->what), "%s %s %s", SSL_get_version(s),
             SSL_get_cipher_name(s),
             OBJ_nid2sn(SSL_get_negotiated_group(s) & ~TLSEXT_nid_unknown));
    while (SSL_read_ex(s, buf, SCRATCH, &n))
        rx->bytes += n;
out:
    ERR_clear_error();
    SSL_free(s);
    if (fd >= 0)
        close(fd);
    free(buf);
    rx->cpu_ns = thread_cpu_ns() - c0;
    return NULL;
}

struct tls_result {
    double gbps, cpu_per_gib, recv_cpu_per_gib;
    int ok, done;
    char what[96];
};

static struct tls_result run_sender(const struct e2e_sender *s,
                                    const struct e2e_env *env, SSL_CTX *ctx,
                                    const char *sizestr)
{
    struct tls_result res = {0};
    struct tls_rx rx = {.ctx = ctx};
    struct rusage ru = {0};
    pthread_t th;
    char port[16];
    uint64_t t0, ns;
    int p, status;
    pid_t pid;

    rx.lfd = bench_listen_loopback(1, &p);
    if (rx.lfd < 0 || pthread_create(&th, NULL, tls_rx_main, &rx) != 0) {
        res.done = 1;
        return res;
    }
    snprintf(port, sizeof(port), "%d", p);
    t0 = bench_now_ns();
    pid = e2e_spawn(s->argv, env, env->file, port);
    status = pid < 0 ? -1 : bench_reap(pid, t0 + STALL_NS, &ru);
    if (status != 0)
        shutdown(rx.lfd, SHUT_RDWR);
    pthread_join(th, NULL);
    ns = bench_now_ns() - t0;
    close(rx.lfd);
    if (pid < 0 ||
        (status != -1 && WIFEXITED(status) && WEXITSTATUS(status) == 127)) {
        printf("e2e-tls sender=%s size=%s: missing (%s cannot be run here)\n",
               s->name, sizestr, s->argv[0]);
        res.done = 1;
    } else if (status != 0 || rx.failed || rx.bytes != env->size) {
        printf("e2e-tls sender=%s size=%s: FAILED (exit status %d, received "
               "%llu of %llu bytes)\n",
               s->name, sizestr, status, (unsigned long long)rx.bytes,
               (unsigned long long)env->size);
        res.done = 1;
    } else {
        res.ok = 1;
        res.gbps = (double)env->size / (double)ns;
        res.cpu_per_gib = bench_ru_cpu_s(&ru) / (env->size / GiB);
        res.recv_cpu_per_gib = (double)rx.cpu_ns / 1e9 / (env->size / GiB);
        snprintf(res.what, sizeof(res.what), "%s", rx.what);
    }
    fflush(stdout);
    return res;
}

/* ---- many TLS clients ---- */

struct tclient {
    int fd;
    SSL *ssl;
    bool up;
    uint64_t bytes, start_ns, end_ns;
    int failed;
};

static int tcp_connect_nb(int port)
{
    struct sockaddr_in sin = {.sin_family = AF_INET,
                              .sin_port = htons((uint16_t)port),
                              .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);

    if (fd >= 0 && connect(fd, (struct sockaddr *)&sin, sizeof(sin)) != 0 &&
        errno != EINPROGRESS) {
        close(fd);
        return -1;
    }
    return fd;
}

static void tclient_end(struct tclient *c, uint64_t now, int failed)
{
    c->end_ns = now;
    c->failed = failed;
    SSL_free(c->ssl);
    c->ssl = NULL;
    close(c->fd);
    c->fd = -1;
    ERR_clear_error();
}

/* Moves one client on; returns the events it waits for, 0 when done. */
static uint32_t tclient_step(struct tclient *c, char *scratch, uint64_t now)
{
    size_t n;
    int r, e;

    if (!c->up) {
        r = SSL_do_handshake(c->ssl);
        if (r != 1) {
            e = SSL_get_error(c->ssl, r);
            if (e == SSL_ERROR_WANT_READ)
                return EPOLLIN;
            if (e == SSL_ERROR_WANT_WRITE)
                return EPOLLOUT;
            tclient_end(c, now, 1);
            return 0;
        }
        c->up = true;
    }
    while (SSL_read_ex(c->ssl, scratch, SCRATCH, &n))
        c->bytes += n;
    e = SSL_get_error(c->ssl, 0);
    if (e == SSL_ERROR_WANT_READ)
        return EPOLLIN;
    if (e == SSL_ERROR_WANT_WRITE)
        return EPOLLOUT;
    tclient_end(c, now, e != SSL_ERROR_ZERO_RETURN);
    return 0;
}

static void run_clients(struct tclient *cl, int n, int port, SSL_CTX *cctx,
                        char *scratch)
{
    struct epoll_event evs[256];
    int ep = epoll_create1(EPOLL_CLOEXEC), left = n;
    uint64_t deadline;

    for (int i = 0; i < n; i++) {
        struct epoll_event ev = {.events = EPOLLOUT, .data.u32 = (uint32_t)i};

        cl[i].start_ns = bench_now_ns();
        cl[i].fd = tcp_connect_nb(port);
        if (cl[i].fd < 0 || !(cl[i].ssl = SSL_new(cctx)) ||
            !SSL_set_fd(cl[i].ssl, cl[i].fd) ||
            epoll_ctl(ep, EPOLL_CTL_ADD, cl[i].fd, &ev) != 0) {
            if (cl[i].fd >= 0)
                tclient_end(&cl[i], cl[i].start_ns, 1);
            cl[i].failed = 1;
            left--;
            continue;
        }
        SSL_set_connect_state(cl[i].ssl);
    }
    deadline = bench_now_ns() + STALL_NS;
    while (left > 0 && bench_now_ns() < deadline) {
        int k = epoll_wait(ep, evs, 256, 1000);
        uint64_t now = bench_now_ns();

        for (int j = 0; j < k; j++) {
            struct tclient *c = &cl[evs[j].data.u32];
            struct epoll_event ev = {.data.u32 = evs[j].data.u32};

            if (c->fd < 0)
                continue;
            ev.events = tclient_step(c, scratch, now);
            if (ev.events == 0)
                left--;
            else
                epoll_ctl(ep, EPOLL_CTL_MOD, c->fd, &ev);
        }
    }
    for (int i = 0; i < n; i++)
        if (cl[i].fd >= 0)
            tclient_end(&cl[i], bench_now_ns(), 1);
    close(ep);
}

/* One client that reads the whole file, until the server answers. */
static int wait_ready(pid_t pid, int port, SSL_CTX *cctx, char *scratch)
{
    for (int i = 0; i < 250; i++) {
        struct tclient c = {.fd = tcp_connect_nb(port)};
        int status;

        if (c.fd >= 0 && (c.ssl = SSL_new(cctx)) && SSL_set_fd(c.ssl, c.fd)) {
            uint64_t end = bench_now_ns() + 10 * UINT64_C(1000000000);
            int ep = epoll_create1(EPOLL_CLOEXEC);
            struct epoll_event ev = {.events = EPOLLOUT};

            SSL_set_connect_state(c.ssl);
            epoll_ctl(ep, EPOLL_CTL_ADD, c.fd, &ev);
            while (c.fd >= 0 && bench_now_ns() < end) {
                if (epoll_wait(ep, &ev, 1, 100) <= 0)
                    continue;
                ev.events = tclient_step(&c, scratch, bench_now_ns());
                if (ev.events)
                    epoll_ctl(ep, EPOLL_CTL_MOD, c.fd, &ev);
            }
            close(ep);
            if (c.fd >= 0)
                tclient_end(&c, 0, 1);
            if (!c.failed && c.bytes > 0)
                return 0;
        } else if (c.fd >= 0) {
            tclient_end(&c, 0, 1);
        }
        if (waitpid(pid, &status, WNOHANG) == pid)
            return -1;
        usleep(20000);
    }
    return -1;
}

static int free_port(void)
{
    int p, fd = bench_listen_loopback(1, &p);

    if (fd < 0)
        return -1;
    close(fd);
    return p;
}

static int run_server(const struct e2e_sender *srv, const struct e2e_env *env,
                      const char *file, uint64_t size, const char *sizestr,
                      int n, struct tclient *cl, SSL_CTX *cctx, char *scratch)
{
    int p = free_port(), status = 0, good = 0;
    uint64_t first = UINT64_MAX, last = 0, slowest = 0;
    char port[16];
    pid_t pid;

    snprintf(port, sizeof(port), "%d", p);
    pid = p < 0 ? -1 : e2e_spawn(srv->argv, env, file, port);
    if (pid < 0 || wait_ready(pid, p, cctx, scratch) != 0) {
        if (pid > 0) {
            kill(pid, SIGKILL);
            waitpid(pid, &status, 0);
        }
        printf("e2e-tls server=%s clients=%d size=%s: FAILED or missing "
               "(did not serve on 127.0.0.1:%d)\n",
               srv->name, n, sizestr, p);
        fflush(stdout);
        return 1;
    }
    memset(cl, 0, sizeof(*cl) * (size_t)n);
    run_clients(cl, n, p, cctx, scratch);
    kill(pid, SIGTERM);
    waitpid(pid, &status, 0);
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
        printf("e2e-tls server=%s clients=%d size=%s: FAILED (%d of %d "
               "clients received the whole file)\n",
               srv->name, n, sizestr, good, n);
        fflush(stdout);
        return 1;
    }
    printf("e2e-tls server=%s clients=%d size=%s: %.2f GB/s aggregate, "
           "slowest client %.3f s\n",
           srv->name, n, sizestr,
           (double)size * n / (double)(last > first ? last - first : 1),
           (double)slowest / 1e9);
    fflush(stdout);
    return 0;
}

static void raise_nofile(void)
{
    struct rlimit rl;

    if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
        rl.rlim_cur = rl.rlim_max;
        setrlimit(RLIMIT_NOFILE, &rl);
    }
}

static int run_all_clients(const struct e2e_env *env, int clients,
                           uint64_t client_size)
{
    char sizestr[32], path[128];
    struct tclient *cl = calloc((size_t)clients, sizeof(*cl));
    char *scratch = malloc(SCRATCH);
    SSL_CTX *cctx = SSL_CTX_new(TLS_client_method());
    int rc = 0;

    e2e_format_size(client_size, sizestr, sizeof(sizestr));
    snprintf(path, sizeof(path), "/tmp/weir-bench-e2e-%s.bin", sizestr);
    if (!cl || !scratch || !cctx || e2e_make_file(path, client_size) != 0) {
        fprintf(stderr, "e2e-tls: cannot set up the clients case\n");
        rc = 1;
        goto out;
    }
    /* The clients trust anything: the servers still make every handshake
     * in full; this side's verification is not what is measured. */
    SSL_CTX_set_verify(cctx, SSL_VERIFY_NONE, NULL);
    for (size_t i = 0; i < NSERVERS; i++)
        rc |= run_server(&tls_servers[i], env, path, client_size, sizestr,
                         clients, cl, cctx, scratch);
out:
    SSL_CTX_free(cctx);
    free(cl);
    free(scratch);
    return rc;
}

int bench_e2e_tls(int argc, char **argv)
{
    struct e2e_env env = {0};
    uint64_t size = E2E_DEFAULT_SIZE, client_size = 1u << 20;
    uint64_t clients = 1000, reps = 2;
    struct tls_result results[NSENDERS] = {0};
    char sizestr[32], path[128];
    SSL_CTX *ctx;
    int rc = 0, first = -1;

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
        if (!ok) {
            fprintf(stderr, "usage: weir-bench e2e-tls [size=1GiB] [reps=2] "
                            "[clients=1000] [client-size=1MiB]\n");
            return 2;
        }
    }
    raise_nofile();
    signal(SIGPIPE, SIG_IGN);
    if (e2e_env_init(&env) != 0 || make_cert() != 0) {
        fprintf(stderr, "e2e-tls: cannot find weir-bench's directory or "
                        "make a certificate with openssl\n");
        return 1;
    }
    ctx = SSL_CTX_new(TLS_server_method());
    if (!ctx || !SSL_CTX_use_certificate_chain_file(ctx, TLS_CERT) ||
        !SSL_CTX_use_PrivateKey_file(ctx, TLS_KEY, SSL_FILETYPE_PEM)) {
        fprintf(stderr, "e2e-tls: cannot load %s\n", TLS_CERT);
        SSL_CTX_free(ctx);
        return 1;
    }
    e2e_format_size(size, sizestr, sizeof(sizestr));
    snprintf(path, sizeof(path), "/tmp/weir-bench-e2e-%s.bin", sizestr);
    if (e2e_make_file(path, size) != 0) {
        fprintf(stderr, "e2e-tls: cannot make %s: %s\n", path, strerror(errno));
        SSL_CTX_free(ctx);
        return 1;
    }
    env.file = path;
    env.size = size;
    printf("e2e-tls file=%s size=%s: page cache warm, TLS receiver on "
           "127.0.0.1 (ECDSA P-256 certificate, OpenSSL defaults) reads "
           "into 1 MiB and discards\n",
           path, sizestr);
    /* Interleaved runs, the best of each, as in e2e. */
    for (uint64_t r = 0; r < reps; r++)
        for (size_t i = 0; i < NSENDERS; i++) {
            struct tls_result one;

            if (results[i].done)
                continue;
            one = run_sender(&tls_senders[i], &env, ctx, sizestr);
            if (one.done) {
                results[i].ok = 0;
                results[i].done = 1;
            } else if (one.gbps > results[i].gbps) {
                results[i] = one;
            }
        }
    for (size_t i = 0; i < NSENDERS; i++) {
        if (!results[i].ok)
            continue;
        printf("e2e-tls sender=%s size=%s: %.2f GB/s, %.3f cpu-s/GiB "
               "(receiver: %.3f cpu-s/GiB) [%s]\n",
               tls_senders[i].name, sizestr, results[i].gbps,
               results[i].cpu_per_gib, results[i].recv_cpu_per_gib,
               results[i].what);
        if (first < 0)
            first = (int)i;
    }
    for (size_t i = 0; first >= 0 && i < NSENDERS; i++)
        if (results[i].ok && (int)i != first)
            printf("e2e-tls ratio=%s/%s size=%s: %.2f\n",
                   tls_senders[first].name, tls_senders[i].name, sizestr,
                   results[first].gbps / results[i].gbps);
    fflush(stdout);
    SSL_CTX_free(ctx);
    if (clients > 0)
        rc |= run_all_clients(&env, (int)clients, client_size);
    return rc;
}
