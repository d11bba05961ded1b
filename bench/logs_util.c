/*
 * logs_util.c - the log suites' lines, collector and /proc figures
 * (logs.h).
 */
#include <dirent.h>
#include <ftw.h>
#include <netinet/in.h>
#include <openssl/evp.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "bench.h"
#include "harness.h"
#include "logs.h"

void lg_line(uint8_t *out, unsigned id, uint64_t seq)
{
    static const char fill[] = "the quick brown fox jumps over the lazy "
                               "dog while the collector counts every line ";
    char head[LG_PREFIX + 1];

    snprintf(head, sizeof(head), "f%05u %010llu ", id % 100000u,
             (unsigned long long)(seq % 10000000000ull));
    memcpy(out, head, LG_PREFIX);
    /* The filler starts at a place that moves with the line, so no two
     * neighbouring lines are the same past their prefix. */
    for (size_t i = LG_PREFIX, j = (size_t)(seq % (sizeof(fill) - 1));
         i < LG_LINE - 1; i++, j = (j + 1) % (sizeof(fill) - 1))
        out[i] = (uint8_t)fill[j];
    out[LG_LINE - 1] = '\n';
}

static bool digits(const uint8_t *p, size_t n, uint64_t *v)
{
    *v = 0;
    for (size_t i = 0; i < n; i++) {
        if (p[i] < '0' || p[i] > '9')
            return false;
        *v = *v * 10 + (uint64_t)(p[i] - '0');
    }
    return true;
}

bool lg_parse(const uint8_t *line, size_t len, unsigned *id, uint64_t *seq)
{
    uint8_t want[LG_LINE];
    uint64_t f;

    if (len != LG_LINE || line[0] != 'f' || !digits(line + 1, 5, &f) ||
        line[6] != ' ' || !digits(line + 7, 10, seq))
        return false;
    *id = (unsigned)f;
    lg_line(want, *id, *seq);
    return memcmp(want, line, LG_LINE) == 0;
}

/* ---- the collector ---- */

static void *collect(void *arg)
{
    struct lg_collector *c = arg;
    struct pollfd pf[1 + LG_MAX_CONNS];
    int fds[LG_MAX_CONNS];
    unsigned n = 0;
    static uint8_t scratch[1 << 16];
    struct timespec cpu;

    while (!atomic_load(&c->stop)) {
        pf[0] = (struct pollfd){.fd = c->lfd, .events = POLLIN};
        for (unsigned k = 0; k < n; k++)
            pf[1 + k] = (struct pollfd){.fd = fds[k], .events = POLLIN};
        if (poll(pf, 1 + n, 50) <= 0)
            continue;
        if (pf[0].revents & POLLIN) {
            int fd = accept4(c->lfd, NULL, NULL, SOCK_CLOEXEC);

            if (fd >= 0 && n < LG_MAX_CONNS) {
                fds[n++] = fd;
                atomic_store(&c->nconns, n);
            } else if (fd >= 0) {
                /* More reconnects than a run should need: refused, and
                 * the run fails its check. */
                close(fd);
                atomic_store(&c->overflow, true);
            }
        }
        for (unsigned k = 0; k < n; k++) {
            struct lg_conn *cn = &c->conns[k];
            ssize_t got;

            if (fds[k] < 0 || !(pf[1 + k].revents & (POLLIN | POLLHUP)))
                continue;
            /* Straight into the connection's own region: the bytes are
             * copied once, by the kernel, and checked after the clock
             * stopped. */
            if (cn->len < c->cap)
                got = recv(fds[k], cn->p + cn->len, c->cap - cn->len, 0);
            else
                got = recv(fds[k], scratch, sizeof(scratch), 0);
            if (got <= 0) {
                close(fds[k]);
                fds[k] = -1;
                continue;
            }
            if (cn->len < c->cap)
                cn->len += (size_t)got;
            else
                atomic_store(&c->overflow, true);
            atomic_fetch_add(&c->total, (uint64_t)got);
            atomic_store(&c->last_ns, bench_now_ns());
        }
    }
    for (unsigned k = 0; k < n; k++)
        if (fds[k] >= 0)
            close(fds[k]);
    /* What receiving cost, to tell a slow shipper from a slow collector. */
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &cpu);
    c->cpu_s = (double)cpu.tv_sec + (double)cpu.tv_nsec / 1e9;
    return NULL;
}

int lg_collector_start(struct lg_collector *c, size_t cap)
{
    memset(c, 0, sizeof(*c));
    c->cap = cap;
    for (unsigned k = 0; k < LG_MAX_CONNS; k++) {
        /* Reserved, not committed: only what arrives takes memory. */
        void *p = mmap(NULL, cap, PROT_READ | PROT_WRITE,
                       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);

        if (p == MAP_FAILED)
            return -1;
        c->conns[k].p = p;
        /* The first connection, the one a shipper that never reconnects
         * uses, is faulted in before the clock starts, in huge pages
         * where the kernel has them: otherwise a page fault and a page
         * of zeroes per 4 KiB made the collector, not the shipper, set
         * the pace (1.66 s of its CPU for 600 MB). */
        if (k == 0) {
            madvise(p, cap, MADV_HUGEPAGE);
            for (size_t at = 0; at < cap; at += 4096)
                ((volatile uint8_t *)p)[at] = 0;
        }
    }
    c->lfd = bench_listen_loopback(16, &c->port);
    if (c->lfd < 0)
        return -1;
    return pthread_create(&c->th, NULL, collect, c) == 0 ? 0 : -1;
}

void lg_collector_stop(struct lg_collector *c)
{
    if (c->lfd < 0)
        return;
    atomic_store(&c->stop, true);
    pthread_join(c->th, NULL);
    close(c->lfd);
    c->lfd = -1;
}

void lg_collector_free(struct lg_collector *c)
{
    lg_collector_stop(c);
    for (unsigned k = 0; k < LG_MAX_CONNS; k++)
        if (c->conns[k].p)
            munmap(c->conns[k].p, c->cap);
}

void lg_check_conns(struct lg_collector *c, unsigned nfiles, struct lg_check *k,
                    void **sha)
{
    unsigned n = atomic_load(&c->nconns);

    for (unsigned i = 0; i < n; i++) {
        const uint8_t *p = c->conns[i].p, *end = p + c->conns[i].len;
        const uint8_t *run = p;
        unsigned run_id = UINT32_MAX;

        while (p < end) {
            const uint8_t *nl = memchr(p, '\n', (size_t)(end - p));
            size_t len = nl ? (size_t)(nl - p) + 1 : (size_t)(end - p);
            unsigned id;
            uint64_t seq;

            if (!lg_parse(p, len, &id, &seq) || id >= nfiles) {
                k->bad++;
                id = UINT32_MAX;
            } else if (seq < k->next[id]) {
                k->dup++;
            } else {
                k->gap += seq - k->next[id];
                k->next[id] = seq + 1;
            }
            k->lines++;
            /* A file's lines come in runs: one digest update per run. */
            if (sha && id != run_id) {
                if (run_id != UINT32_MAX)
                    EVP_DigestUpdate(sha[run_id], run, (size_t)(p - run));
                run = p;
                run_id = id;
            }
            p += len;
        }
        if (sha && run_id != UINT32_MAX)
            EVP_DigestUpdate(sha[run_id], run, (size_t)(p - run));
    }
}

/* ---- /proc ---- */

double lg_cpu_s(pid_t pid)
{
    char path[64], buf[1024];
    unsigned long long ut, st;
    FILE *f;
    char *rp;
    size_t n;

    snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
    f = fopen(path, "r");
    if (!f)
        return -1;
    n = fread(buf, 1, sizeof(buf) - 1, f);
    fclose(f);
    buf[n] = '\0';
    /* The name may hold spaces and parentheses: fields count from the
     * last ')'. utime and stime are fields 14 and 15. */
    rp = strrchr(buf, ')');
    if (!rp ||
        sscanf(rp + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu",
               &ut, &st) != 2)
        return -1;
    return (double)(ut + st) / (double)sysconf(_SC_CLK_TCK);
}

long lg_status_kib(pid_t pid, const char *key)
{
    char path[64], line[256];
    size_t klen = strlen(key);
    long v = -1;
    FILE *f;

    snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
    f = fopen(path, "r");
    if (!f)
        return -1;
    while (fgets(line, sizeof(line), f))
        if (strncmp(line, key, klen) == 0 && line[klen] == ':') {
            v = strtol(line + klen + 1, NULL, 10);
            break;
        }
    fclose(f);
    return v;
}

int lg_fds(pid_t pid)
{
    char path[64];
    struct dirent *de;
    int n = 0;
    DIR *d;

    snprintf(path, sizeof(path), "/proc/%d/fd", (int)pid);
    d = opendir(path);
    if (!d)
        return -1;
    while ((de = readdir(d)))
        n += de->d_name[0] != '.';
    closedir(d);
    return n;
}

/* ---- the work directory ---- */

int lg_mkdtemp(char *out, size_t len, const char *tag)
{
    const char *base = getenv("WEIR_BENCH_DIR");

    if (snprintf(out, len, "%s/weir-%s-XXXXXX", base ? base : "/tmp", tag) >=
        (int)len)
        return -1;
    return mkdtemp(out) ? 0 : -1;
}

static int rm_one(const char *path, const struct stat *st, int flag,
                  struct FTW *ftw)
{
    (void)st;
    (void)flag;
    (void)ftw;
    remove(path);
    return 0;
}

void lg_rm_tree(const char *dir)
{
    nftw(dir, rm_one, 64, FTW_DEPTH | FTW_PHYS);
}
