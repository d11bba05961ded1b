/*
 * harness.c - the receiver and the timed child of the end-to-end suites
 * (`e2e`, `xform`).
 */
#include "harness.h"

#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bench.h"

#define RECV_BUF (1u << 20)

struct receiver {
    int listen_fd;
    uint64_t bytes;
    uint64_t cpu_ns;
    int err; /* 0, or an errno from accept/recv */
};

static uint64_t thread_cpu_ns(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void *receiver_main(void *arg)
{
    struct receiver *rx = arg;
    struct timeval tv = {.tv_sec = BENCH_STALL_SECONDS};
    struct pollfd pfd = {.fd = rx->listen_fd, .events = POLLIN};
    char *buf = malloc(RECV_BUF);
    uint64_t cpu0;
    int ready, fd;

    if (!buf) {
        rx->err = ENOMEM;
        return NULL;
    }
    /* Bounded wait: a sender that never connects is reported, not waited
     * for forever. */
    ready = poll(&pfd, 1, BENCH_STALL_SECONDS * 1000);
    fd = ready > 0 ? accept4(rx->listen_fd, NULL, NULL, SOCK_CLOEXEC) : -1;
    if (fd < 0) {
        rx->err = ready == 0 ? ETIMEDOUT : errno;
        free(buf);
        return NULL;
    }
    cpu0 = thread_cpu_ns();
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
    for (;;) {
        ssize_t n = recv(fd, buf, RECV_BUF, 0);
        if (n > 0) {
            rx->bytes += (uint64_t)n;
            continue;
        }
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0)
            rx->err = errno;
        break;
    }
    rx->cpu_ns = thread_cpu_ns() - cpu0;
    close(fd);
    free(buf);
    return NULL;
}

int bench_listen_loopback(int backlog, int *port)
{
    struct sockaddr_in sin = {.sin_family = AF_INET};
    socklen_t len = sizeof(sin);
    int one = 1;
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

    if (fd < 0)
        return -1;
    sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    if (bind(fd, (struct sockaddr *)&sin, sizeof(sin)) != 0 ||
        listen(fd, backlog) != 0 ||
        getsockname(fd, (struct sockaddr *)&sin, &len) != 0) {
        close(fd);
        return -1;
    }
    *port = ntohs(sin.sin_port);
    return fd;
}

int bench_reap(pid_t pid, uint64_t deadline_ns, struct rusage *ru)
{
    int status;

    for (;;) {
        pid_t got = wait4(pid, &status, WNOHANG, ru);
        if (got == pid)
            return status;
        if (got < 0 && errno != EINTR)
            return -1;
        if (bench_now_ns() > deadline_ns) {
            kill(pid, SIGKILL);
            wait4(pid, &status, 0, ru);
            return -1;
        }
        usleep(1000);
    }
}

double bench_ru_cpu_s(const struct rusage *ru)
{
    return (double)ru->ru_utime.tv_sec + ru->ru_utime.tv_usec / 1e6 +
           (double)ru->ru_stime.tv_sec + ru->ru_stime.tv_usec / 1e6;
}

int bench_run_to_receiver(const char *const *tmpl, const struct e2e_env *env,
                          const char *file, struct bench_run *out)
{
    struct receiver rx = {0};
    struct rusage ru = {0};
    pthread_t th;
    char port[16];
    uint64_t t0;
    int p;
    pid_t pid;

    memset(out, 0, sizeof(*out));
    out->status = -1;
    rx.listen_fd = bench_listen_loopback(1, &p);
    if (rx.listen_fd < 0) {
        out->err = errno;
        return -1;
    }
    snprintf(port, sizeof(port), "%d", p);
    if (pthread_create(&th, NULL, receiver_main, &rx) != 0) {
        close(rx.listen_fd);
        out->err = EAGAIN;
        return -1;
    }
    t0 = bench_now_ns();
    pid = e2e_spawn(tmpl, env, file, port);
    out->status =
        pid < 0
            ? -1
            : bench_reap(pid, t0 + BENCH_STALL_SECONDS * 1000000000ull, &ru);
    /* A child that failed may have died before connecting, leaving the
     * receiver waiting to accept: shutting the listener down wakes it. A
     * child that succeeded did connect, so its connection is left alone
     * even if the receiver has not accepted it yet. */
    if (out->status != 0)
        shutdown(rx.listen_fd, SHUT_RDWR);
    pthread_join(th, NULL);
    out->ns = bench_now_ns() - t0;
    close(rx.listen_fd);
    out->bytes = rx.bytes;
    out->err = rx.err;
    out->cpu_s = bench_ru_cpu_s(&ru);
    out->recv_cpu_s = (double)rx.cpu_ns / 1e9;
    out->missing = pid < 0 || (out->status != -1 && WIFEXITED(out->status) &&
                               WEXITSTATUS(out->status) == 127);
    return out->status == 0 ? 0 : -1;
}

/*
 * The CSV copy of the rows (weir-bench --csv FILE). stdout is replaced by
 * a stream that writes through to fd 1 and hands every complete line to
 * csv_parse, so each suite's rows, whoever wrote them, reach the CSV
 * without the suite knowing: a row `<suite> <params>: <text>` gives one
 * CSV record per number in its text, with the words before the number
 * (since the last comma or parenthesis) as its label and the word after
 * it as its unit.
 */
static FILE *csv_out;
static char csv_line[4096];
static size_t csv_len;

static void csv_field(const char *s, size_t n, int last)
{
    fputc('"', csv_out);
    for (size_t i = 0; i < n; i++) {
        if (s[i] == '"')
            fputc('"', csv_out);
        fputc(s[i], csv_out);
    }
    fputc('"', csv_out);
    fputc(last ? '\n' : ',', csv_out);
}

void bench_csv_row(const char *suite, const char *params, const char *label,
                   double value, const char *unit)
{
    if (!csv_out)
        return;
    csv_field(suite, strlen(suite), 0);
    csv_field(params, strlen(params), 0);
    csv_field(label, strlen(label), 0);
    fprintf(csv_out, "%.17g,", value);
    csv_field(unit, strlen(unit), 1);
}

static int is_num_start(const char *p)
{
    return (p[0] >= '0' && p[0] <= '9') ||
           ((p[0] == '-' || p[0] == '.') && p[1] >= '0' && p[1] <= '9');
}

/* Copies s[0..n) trimmed of blanks and of ':' '(' at the ends. */
static void csv_trim(char *to, size_t cap, const char *s, size_t n)
{
    while (n && (*s == ' ' || *s == '(' || *s == ':'))
        s++, n--;
    while (n && (s[n - 1] == ' ' || s[n - 1] == ':' || s[n - 1] == '('))
        n--;
    if (n >= cap)
        n = cap - 1;
    memcpy(to, s, n);
    to[n] = '\0';
}

static void csv_parse(char *line)
{
    char *colon = strstr(line, ": "), *sp, *p, *seg;
    char label[256], unit[64];

    if (!colon || line[0] == ' ')
        return;
    *colon = '\0';
    p = colon + 2;
    sp = strchr(line, ' ');
    if (sp)
        *sp = '\0';
    seg = p;
    while (*p) {
        if (*p == ',' || *p == '(' || *p == ')') {
            seg = ++p;
            continue;
        }
        if (is_num_start(p) && (p == seg || p[-1] == ' ')) {
            char *end;
            double v = strtod(p, &end);
            size_t u = 0;

            /* A number must end at a word's end: not 127 of 127.0.0.1,
             * nor a size written as 64MiB. */
            if (end == p || (*end && !strchr(" ,)%", *end))) {
                while (*p && *p != ' ' && *p != ',')
                    p++;
                continue;
            }
            csv_trim(label, sizeof(label), seg, (size_t)(p - seg));
            while (*end == ' ')
                end++;
            while (end[u] && end[u] != ' ' && end[u] != ',' && end[u] != ')')
                u++;
            csv_trim(unit, sizeof(unit), end, u);
            bench_csv_row(line, sp ? sp + 1 : "", label, v, unit);
            p = end + u;
            seg = p;
            continue;
        }
        p++;
    }
}

static ssize_t csv_stdout_write(void *cookie, const char *buf, size_t n)
{
    size_t done = 0;

    (void)cookie;
    while (done < n) {
        ssize_t w = write(STDOUT_FILENO, buf + done, n - done);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return done ? (ssize_t)done : -1;
        done += (size_t)w;
    }
    for (size_t i = 0; i < n; i++) {
        if (buf[i] == '\n') {
            csv_line[csv_len] = '\0';
            csv_parse(csv_line);
            csv_len = 0;
        } else if (csv_len + 1 < sizeof(csv_line)) {
            csv_line[csv_len++] = buf[i];
        }
    }
    return (ssize_t)n;
}

static void csv_finish(void)
{
    fflush(stdout);
    if (csv_out)
        fclose(csv_out);
    csv_out = NULL;
}

int bench_csv_start(const char *path)
{
    static const cookie_io_functions_t io = {.write = csv_stdout_write};
    FILE *tee;

    csv_out = fopen(path, "w");
    if (!csv_out)
        return -1;
    fputs("suite,params,label,value,unit\n", csv_out);
    fflush(stdout);
    tee = fopencookie(NULL, "w", io);
    if (!tee) {
        fclose(csv_out);
        csv_out = NULL;
        return -1;
    }
    setvbuf(tee, NULL, _IOLBF, 0);
    stdout = tee;
    atexit(csv_finish);
    return 0;
}
