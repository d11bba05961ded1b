/*
 * logs_idle.c - `weir-bench logs-idle`: what a shipper costs while it
 * follows many files of which few are written.
 *
 *   weir-bench logs-idle [files=10000] [active=10] [rate=100] [secs=60]
 *                        [settle=10] [peers=weir] [keep=1]
 *
 * `files` files of one line each are made first; the shipper starts and
 * sends those lines. Then `active` of the files are appended to, `rate`
 * lines a second each (one line per file every 1/rate s, as a quiet
 * application logs), and after `settle` seconds the shipper is measured
 * for `secs`: CPU (utime + stime from /proc/PID/stat) as a share of one
 * core, open descriptors (/proc/PID/fd, the most seen at one-second
 * samples) and RSS (at the end; VmHWM the peak of the whole run). At the
 * end every line must have arrived once and in order per file.
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bench.h"
#include "logs.h"

struct idle_run {
    unsigned files, active, rate, secs, settle;
    char dir[PATH_MAX - 32], data[PATH_MAX];
    struct e2e_env env;
    /* the writer */
    pthread_t th;
    atomic_bool stop;
    atomic_uint_fast64_t written; /* lines appended, all active files */
};

static unsigned active_id(const struct idle_run *r, unsigned i)
{
    return i * (r->files / r->active);
}

static void file_path(const struct idle_run *r, unsigned id, char *out,
                      size_t len)
{
    snprintf(out, len, "%s/f%05u.log", r->data, id);
}

static void *writer(void *arg)
{
    struct idle_run *r = arg;
    int fds[1000];
    uint64_t seq = 1, next = bench_now_ns();
    uint8_t line[LG_LINE];

    for (unsigned i = 0; i < r->active; i++) {
        char path[PATH_MAX + 32];

        file_path(r, active_id(r, i), path, sizeof(path));
        fds[i] = open(path, O_WRONLY | O_APPEND | O_CLOEXEC);
        if (fds[i] < 0)
            abort();
    }
    while (!atomic_load(&r->stop)) {
        uint64_t now;

        for (unsigned i = 0; i < r->active; i++) {
            lg_line(line, active_id(r, i), seq);
            if (write(fds[i], line, LG_LINE) != LG_LINE)
                abort();
        }
        seq++;
        atomic_fetch_add(&r->written, r->active);
        /* Keeps the rate over time, whatever a write's latency. */
        next += 1000000000ull / r->rate;
        now = bench_now_ns();
        if (next > now)
            usleep((useconds_t)((next - now) / 1000));
    }
    for (unsigned i = 0; i < r->active; i++)
        close(fds[i]);
    return NULL;
}

static int make_files(struct idle_run *r)
{
    uint8_t line[LG_LINE];

    for (unsigned f = 0; f < r->files; f++) {
        char path[PATH_MAX + 32];
        int fd;

        file_path(r, f, path, sizeof(path));
        fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
        lg_line(line, f, 0);
        if (fd < 0 || write(fd, line, LG_LINE) != LG_LINE)
            return -1;
        close(fd);
    }
    return 0;
}

/* Until the collector has `bytes` or `ms` passed. */
static bool wait_bytes(struct lg_collector *c, uint64_t bytes, unsigned ms)
{
    for (uint64_t end = bench_now_ns() + ms * 1000000ull;
         atomic_load(&c->total) < bytes;) {
        if (bench_now_ns() > end)
            return false;
        usleep(10000);
    }
    return true;
}

static int run_one(struct idle_run *r, const char *name)
{
    struct lg_collector c;
    struct lg_check k = {0};
    char work[PATH_MAX + 64], params[160];
    struct lg_ship s = {.name = name,
                        .dir = r->data,
                        .work = work,
                        .max_files = r->files,
                        .env = &r->env,
                        .extra = "max_open_files = 32\n"};
    uint64_t initial = (uint64_t)r->files * LG_LINE, total;
    double cpu0, cpu1;
    long rss, hwm;
    int fds = 0, rc = 1;
    pid_t pid;

    snprintf(params, sizeof(params),
             "peer=%s files=%u active=%u rate=%u/s secs=%u", name, r->files,
             r->active, r->rate, r->secs);
    snprintf(work, sizeof(work), "%s/%s", r->dir, name);
    if (make_files(r) != 0 || lg_collector_start(&c, 1ull << 30) != 0) {
        perror("logs-idle");
        return 1;
    }
    s.port = c.port;
    pid = lg_ship_start(&s);
    if (pid <= 0) {
        printf("logs-idle %s: not run\n", params);
        lg_collector_free(&c);
        return 1;
    }
    if (!wait_bytes(&c, initial, 120000)) {
        printf("logs-idle %s: FAILED: %llu of the first %llu bytes in 120 "
               "s; see %s\n",
               params, (unsigned long long)atomic_load(&c.total),
               (unsigned long long)initial, work);
        goto out;
    }
    atomic_store(&r->stop, false);
    atomic_store(&r->written, 0);
    if (pthread_create(&r->th, NULL, writer, r) != 0)
        goto out;
    sleep(r->settle);
    cpu0 = lg_cpu_s(pid);
    for (unsigned t = 0; t < r->secs; t++) {
        int n;

        sleep(1);
        n = lg_fds(pid);
        fds = n > fds ? n : fds;
    }
    cpu1 = lg_cpu_s(pid);
    rss = lg_status_kib(pid, "VmRSS");
    hwm = lg_status_kib(pid, "VmHWM");
    atomic_store(&r->stop, true);
    pthread_join(r->th, NULL);
    total = initial + atomic_load(&r->written) * LG_LINE;
    wait_bytes(&c, total, 30000);
    lg_ship_stop(pid);
    pid = 0;
    lg_collector_stop(&c);
    k.next = calloc(r->files, sizeof(uint64_t));
    lg_check_conns(&c, r->files, &k, NULL);
    if (k.lines * LG_LINE == total && !k.bad && !k.dup && !k.gap) {
        printf("logs-idle %s: cpu %.2f %% of a core (%.2f s), open fds at "
               "most %d, RSS %.1f MiB (peak %.1f MiB); %llu lines, each "
               "once, in order\n",
               params, 100.0 * (cpu1 - cpu0) / r->secs, cpu1 - cpu0, fds,
               (double)rss / 1024, (double)hwm / 1024,
               (unsigned long long)k.lines);
        rc = 0;
    } else {
        printf("logs-idle %s: FAILED: %llu lines of %llu, %llu mangled, "
               "%llu twice, %llu missing between others; cpu %.2f s, fds "
               "%d; see %s\n",
               params, (unsigned long long)k.lines,
               (unsigned long long)(total / LG_LINE), (unsigned long long)k.bad,
               (unsigned long long)k.dup, (unsigned long long)k.gap,
               cpu1 - cpu0, fds, work);
    }
    free(k.next);
out:
    if (pid > 0)
        lg_ship_stop(pid);
    fflush(stdout);
    lg_collector_free(&c);
    return rc;
}

int bench_logs_idle(int argc, char **argv)
{
    static struct idle_run r = {
        .files = 10000, .active = 10, .rate = 100, .secs = 60, .settle = 10};
    const char *peers = "weir";
    char list[256], *save = NULL;
    bool keep = false;
    int rc = 0;

    for (int i = 1; i < argc; i++) {
        unsigned *u = NULL;
        const char *v = strchr(argv[i], '=');

        if (strncmp(argv[i], "files=", 6) == 0)
            u = &r.files;
        else if (strncmp(argv[i], "active=", 7) == 0)
            u = &r.active;
        else if (strncmp(argv[i], "rate=", 5) == 0)
            u = &r.rate;
        else if (strncmp(argv[i], "secs=", 5) == 0)
            u = &r.secs;
        else if (strncmp(argv[i], "settle=", 7) == 0)
            u = &r.settle;
        else if (strncmp(argv[i], "peers=", 6) == 0)
            peers = v + 1;
        else if (strcmp(argv[i], "keep=1") == 0)
            keep = true;
        else {
            fprintf(stderr, "logs-idle: unknown argument %s\n", argv[i]);
            return 2;
        }
        if (u)
            *u = (unsigned)strtoul(v + 1, NULL, 10);
    }
    if (r.files < 1 || r.files > LG_MAX_FILES || r.active < 1 ||
        r.active > r.files || r.active > 1000 || r.rate < 1 || r.secs < 1) {
        fprintf(stderr,
                "logs-idle: files 1..%u, active 1..files (at most "
                "1000), rate >= 1, secs >= 1\n",
                LG_MAX_FILES);
        return 2;
    }
    if (e2e_env_init(&r.env) != 0 ||
        lg_mkdtemp(r.dir, sizeof(r.dir), "logs-idle") != 0) {
        perror("logs-idle");
        return 1;
    }
    printf("# logs-idle: %u files of one line, %u of them appended at %u "
           "lines/s; %ld CPUs\n",
           r.files, r.active, r.rate, sysconf(_SC_NPROCESSORS_ONLN));
    snprintf(list, sizeof(list), "%s", peers);
    for (char *p = strtok_r(list, ",", &save); p;
         p = strtok_r(NULL, ",", &save)) {
        /* Each shipper finds the files as the first one did. */
        if (snprintf(r.data, sizeof(r.data), "%s/data-%.32s", r.dir, p) >=
                (int)sizeof(r.data) ||
            mkdir(r.data, 0755) != 0)
            return 1;
        rc |= run_one(&r, p);
    }
    if (!keep && rc == 0)
        lg_rm_tree(r.dir);
    return rc;
}
