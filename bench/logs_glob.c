/*
 * logs_glob.c - `weir-bench logs-glob`: the same directory of log files
 * shipped to a TCP collector by weir, rsyslog and syslog-ng, one after the
 * other in one run.
 *
 *   weir-bench logs-glob [files=10] [lines=1000000] [peers=weir,rsyslog,
 *                        syslog-ng] [keep=1]
 *
 * The files (LG_LINE = 200-byte lines, each naming its file and its
 * number) are written once, before any shipper starts, so every shipper
 * reads them from the page cache from their first byte. A shipper's time
 * runs from its start to the collector's receipt of the last byte; its
 * rate is lines over that time. Then the collector's bytes are split back
 * into files and checked: each file's lines in order, none missing, none
 * twice, none mangled, and the SHA-256 of each file's received lines
 * equal to that of the file. A shipper that does not deliver every line
 * intact gets no rate. Also printed: its peak RSS (VmHWM) and its CPU
 * seconds (utime + stime), both from /proc before it is stopped.
 */
#include <fcntl.h>
#include <openssl/evp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bench.h"
#include "logs.h"

#define STALL_NS (60ull * 1000000000ull) /* nothing new this long: stuck */
#define WBUF     (5000u * LG_LINE)

struct glob_run {
    unsigned files;
    uint64_t lines; /* per file */
    char dir[PATH_MAX - 32], data[PATH_MAX];
    char want[100][65]; /* each file's SHA-256 */
    struct e2e_env env;
};

static void hex(const uint8_t *md, char out[65])
{
    for (int i = 0; i < 32; i++)
        sprintf(out + 2 * i, "%02x", md[i]);
}

/* Writes the files and notes each one's SHA-256. */
static int write_files(struct glob_run *r)
{
    uint8_t *buf = malloc(WBUF);

    if (!buf)
        return -1;
    for (unsigned f = 0; f < r->files; f++) {
        char path[PATH_MAX + 32];
        EVP_MD_CTX *md = EVP_MD_CTX_new();
        uint8_t dig[32];
        int fd;

        snprintf(path, sizeof(path), "%s/f%05u.log", r->data, f);
        fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
        if (fd < 0 || !md)
            return -1;
        EVP_DigestInit_ex(md, EVP_sha256(), NULL);
        for (uint64_t i = 0; i < r->lines;) {
            size_t n = 0;

            for (; n < WBUF / LG_LINE && i < r->lines; n++, i++)
                lg_line(buf + n * LG_LINE, f, i);
            EVP_DigestUpdate(md, buf, n * LG_LINE);
            if (write(fd, buf, n * LG_LINE) != (ssize_t)(n * LG_LINE))
                return -1;
        }
        close(fd);
        EVP_DigestFinal_ex(md, dig, NULL);
        EVP_MD_CTX_free(md);
        hex(dig, r->want[f]);
    }
    free(buf);
    return 0;
}

/* Every file whole, in order, once: the number of files that are. */
static unsigned verify(struct glob_run *r, struct lg_collector *c,
                       struct lg_check *k)
{
    EVP_MD_CTX *md[100];
    unsigned ok = 0;

    k->next = calloc(r->files, sizeof(uint64_t));
    for (unsigned f = 0; f < r->files; f++) {
        md[f] = EVP_MD_CTX_new();
        EVP_DigestInit_ex(md[f], EVP_sha256(), NULL);
    }
    lg_check_conns(c, r->files, k, (void **)md);
    for (unsigned f = 0; f < r->files; f++) {
        uint8_t dig[32];
        char got[65];

        EVP_DigestFinal_ex(md[f], dig, NULL);
        EVP_MD_CTX_free(md[f]);
        hex(dig, got);
        ok += strcmp(got, r->want[f]) == 0 && k->next[f] == r->lines;
    }
    free(k->next);
    return ok;
}

static double run_one(struct glob_run *r, const char *name)
{
    uint64_t want = (uint64_t)r->files * r->lines * LG_LINE, t0, seen = 0;
    uint64_t moved;
    struct lg_collector c;
    struct lg_check k = {0};
    char work[PATH_MAX + 64], params[128];
    struct lg_ship s = {.name = name,
                        .dir = r->data,
                        .work = work,
                        .max_files = r->files,
                        .env = &r->env};
    double cpu, rate = 0;
    long hwm;
    unsigned ok;
    pid_t pid;

    snprintf(params, sizeof(params), "peer=%s files=%u lines=%llu", name,
             r->files, (unsigned long long)r->lines);
    snprintf(work, sizeof(work), "%s/%s", r->dir, name);
    if (lg_collector_start(&c, want + want / 4 + (1u << 20)) != 0) {
        perror("logs-glob: collector");
        return 0;
    }
    s.port = c.port;
    t0 = bench_now_ns();
    pid = lg_ship_start(&s);
    if (pid <= 0) {
        printf("logs-glob %s: not run\n", params);
        lg_collector_free(&c);
        return 0;
    }
    moved = t0;
    while (atomic_load(&c.total) < want) {
        uint64_t now = bench_now_ns(), got = atomic_load(&c.total);

        if (got != seen) {
            seen = got;
            moved = now;
        } else if (now - moved > STALL_NS) {
            break;
        }
        if (waitpid(pid, NULL, WNOHANG) == pid) {
            pid = 0;
            break;
        }
        usleep(2000);
    }
    /* Peak figures before it is stopped. */
    hwm = pid > 0 ? lg_status_kib(pid, "VmHWM") : -1;
    cpu = pid > 0 ? lg_cpu_s(pid) : -1;
    if (pid > 0)
        lg_ship_stop(pid);
    lg_collector_stop(&c);
    ok = verify(r, &c, &k);
    if (ok == r->files && k.lines == r->files * r->lines && !k.bad &&
        !atomic_load(&c.overflow)) {
        uint64_t ns = atomic_load(&c.last_ns) - t0;

        rate = (double)k.lines * 1e9 / (double)ns;
        printf("logs-glob %s: %.0f lines/s, %.1f MB/s, peak RSS %.1f MiB, "
               "cpu %.2f s, collector cpu %.2f s, %u connection(s); every "
               "line of every file once, in order, sha256 equal\n",
               params, rate, rate * LG_LINE / 1e6, (double)hwm / 1024, cpu,
               c.cpu_s, atomic_load(&c.nconns));
    } else {
        printf("logs-glob %s: FAILED: %u of %u files intact; %llu lines "
               "received of %llu, %llu mangled, %llu twice, %llu missing "
               "between others; see %s\n",
               params, ok, r->files, (unsigned long long)k.lines,
               (unsigned long long)(r->files * r->lines),
               (unsigned long long)k.bad, (unsigned long long)k.dup,
               (unsigned long long)k.gap, work);
    }
    fflush(stdout);
    lg_collector_free(&c);
    return rate;
}

int bench_logs_glob(int argc, char **argv)
{
    static struct glob_run r = {.files = 10, .lines = 1000000};
    const char *peers = "weir,rsyslog,syslog-ng";
    double weir = 0, best = 0;
    char list[256], *save = NULL;
    bool keep = false, failed = false;

    for (int i = 1; i < argc; i++) {
        if (strncmp(argv[i], "files=", 6) == 0)
            r.files = (unsigned)strtoul(argv[i] + 6, NULL, 10);
        else if (strncmp(argv[i], "lines=", 6) == 0)
            r.lines = strtoull(argv[i] + 6, NULL, 10);
        else if (strncmp(argv[i], "peers=", 6) == 0)
            peers = argv[i] + 6;
        else if (strcmp(argv[i], "keep=1") == 0)
            keep = true;
        else {
            fprintf(stderr, "logs-glob: unknown argument %s\n", argv[i]);
            return 2;
        }
    }
    if (r.files < 1 || r.files > 100 || r.lines < 1) {
        fprintf(stderr, "logs-glob: files=1..100, lines>=1\n");
        return 2;
    }
    if (e2e_env_init(&r.env) != 0 ||
        lg_mkdtemp(r.dir, sizeof(r.dir), "logs-glob") != 0) {
        perror("logs-glob");
        return 1;
    }
    snprintf(r.data, sizeof(r.data), "%s/data", r.dir);
    if (mkdir(r.data, 0755) != 0 || write_files(&r) != 0) {
        perror("logs-glob: writing the files");
        return 1;
    }
    printf("# logs-glob: %u files x %llu lines of %u bytes in %s; %ld CPUs\n",
           r.files, (unsigned long long)r.lines, LG_LINE, r.data,
           sysconf(_SC_NPROCESSORS_ONLN));
    snprintf(list, sizeof(list), "%s", peers);
    for (char *p = strtok_r(list, ",", &save); p;
         p = strtok_r(NULL, ",", &save)) {
        double rate = run_one(&r, p);

        failed |= rate == 0;
        if (strcmp(p, "weir") == 0)
            weir = rate;
        else if (rate > best)
            best = rate;
    }
    if (weir > 0 && best > 0)
        printf("logs-glob weir/fastest-peer files=%u lines=%llu: %.2fx\n",
               r.files, (unsigned long long)r.lines, weir / best);
    if (!keep && !failed)
        lg_rm_tree(r.dir);
    return failed ? 1 : 0;
}
