/*
 * heavy.c - suite `heavy`: one CPU-bound stream, a log compressed on its
 * way to a TCP receiver, with one worker and with two. The input is
 * made-up access-log lines (timestamps, hosts, paths, status codes,
 * sizes, user ids drawn from a seeded generator), which gzip -6 takes to
 * about a fifth: the compressor is the bottleneck, not the copy.
 *
 *   weir-bench heavy [size=64MiB] [reps=3] [xform=gzip:6,zstd:9]
 *
 * Per transform, interleaved, best of `reps`: weir pipe with -w 1 and
 * -w 2, and the command-line tool into nc (gzip, zstd, and zstd -T2 with
 * two threads). Prints MB/s of input, the output's size as a fraction of
 * the input, and weir's 2 workers over 1.
 *
 * gunzip and unzstd read the log as weir compressed it with two workers
 * (weir pipe -w 2 -t gzip:6, or zstd:3: members of 256 KiB of input,
 * frames of 1 MiB), and the peers are gzip -dc and zstd -dc; their MB/s
 * are of output, the log's own bytes.
 */
#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "bench.h"
#include "e2e.h"
#include "harness.h"

static uint64_t rng_next(uint64_t *s)
{
    /* xorshift64*: a fixed seed gives the same file on every machine. */
    *s ^= *s >> 12;
    *s ^= *s << 25;
    *s ^= *s >> 27;
    return *s * UINT64_C(2685821657736338717);
}

static int make_log(const char *path, uint64_t size)
{
    static const char *const verbs[] = {"GET",  "GET", "GET",
                                        "POST", "PUT", "DELETE"};
    static const char *const paths[] = {"/api/v1/items",  "/api/v1/users",
                                        "/static/app.js", "/login",
                                        "/api/v2/search", "/health"};
    static const int codes[] = {200, 200, 200, 200, 304, 404, 500, 201};
    uint64_t seed = 0x9e3779b97f4a7c15u, done = 0, t = 1764600000000u;
    struct stat st;
    char line[256];
    FILE *f;

    if (stat(path, &st) == 0 && (uint64_t)st.st_size == size)
        return 0;
    f = fopen(path, "w");
    if (!f)
        return -1;
    while (done < size) {
        uint64_t r = rng_next(&seed);
        int n;

        t += r % 97;
        n = snprintf(line, sizeof(line),
                     "%llu.%03llu host-%02u app[%u]: %s %s/%u %d %u %u.%03us "
                     "user=u%u req=%016llx\n",
                     (unsigned long long)(t / 1000),
                     (unsigned long long)(t % 1000), (unsigned)(r >> 8) % 40,
                     1000 + (unsigned)(r >> 16) % 9000, verbs[(r >> 24) % 6],
                     paths[(r >> 28) % 6], (unsigned)(r >> 32) % 100000,
                     codes[(r >> 40) % 8], (unsigned)(r >> 44) % 65536,
                     (unsigned)(r >> 50) % 3, (unsigned)(r >> 52) % 1000,
                     (unsigned)(r >> 20) % 5000,
                     (unsigned long long)rng_next(&seed));
        if (n > (int)(size - done))
            n = (int)(size - done);
        fwrite(line, 1, (size_t)n, f);
        done += (uint64_t)n;
    }
    return fclose(f) == 0 ? 0 : -1;
}

struct sender {
    char name[64];
    char cmd[512];
};

/* weir with 1 and 2 workers, then the tool that does the same. */
static unsigned senders_for(const char *xf, struct sender *s)
{
    const char *level = strchr(xf, ':');
    unsigned n = 0;

    for (unsigned w = 1; w <= 2; w++, n++) {
        snprintf(s[n].name, sizeof(s[n].name), "weir-%uw", w);
        snprintf(s[n].cmd, sizeof(s[n].cmd),
                 "exec {builddir}/daemon/weir pipe -w %u -t %s file:{file} "
                 "tcp:127.0.0.1:{port} 2>/dev/null",
                 w, xf);
    }
    if (strcmp(xf, "gunzip") == 0) {
        snprintf(s[n].name, sizeof(s[n].name), "gzip-d");
        snprintf(s[n++].cmd, sizeof(s[0].cmd),
                 "gzip -dc {file} | nc -N 127.0.0.1 {port}");
    } else if (strcmp(xf, "unzstd") == 0) {
        snprintf(s[n].name, sizeof(s[n].name), "zstd-d");
        snprintf(s[n++].cmd, sizeof(s[0].cmd),
                 "zstd -dcq {file} | nc -N 127.0.0.1 {port}");
    } else if (strncmp(xf, "gzip", 4) == 0) {
        snprintf(s[n].name, sizeof(s[n].name), "gzip");
        snprintf(s[n++].cmd, sizeof(s[0].cmd),
                 "gzip -%s -c {file} | nc -N 127.0.0.1 {port}",
                 level ? level + 1 : "6");
    } else if (strncmp(xf, "zstd", 4) == 0) {
        for (unsigned th = 1; th <= 2; th++, n++) {
            snprintf(s[n].name, sizeof(s[n].name), "zstd-T%u", th);
            snprintf(s[n].cmd, sizeof(s[n].cmd),
                     "zstd -q -%s -T%u -c {file} | nc -N 127.0.0.1 {port}",
                     level ? level + 1 : "3", th);
        }
    }
    return n;
}

static bool decodes(const char *xf)
{
    return strcmp(xf, "gunzip") == 0 || strcmp(xf, "unzstd") == 0;
}

/* The log as weir compresses it, for a decoder to read: path.w2.gz or
 * path.w2.zst beside it (made once). 0, or -1 when weir pipe failed. */
static int make_compressed(const struct e2e_env *env, const char *log,
                           const char *xf, char *out, size_t len)
{
    bool gz = strcmp(xf, "gunzip") == 0;
    char cmd[PATH_MAX * 3];
    struct stat st;

    snprintf(out, len, "%s.w2.%s", log, gz ? "gz" : "zst");
    if (stat(out, &st) == 0 && st.st_size > 0)
        return 0;
    if (snprintf(cmd, sizeof(cmd),
                 "%s/daemon/weir pipe -w 2 -t %s file:%s file:%s.zpart && "
                 "mv %s.zpart %s",
                 env->builddir, gz ? "gzip:6" : "zstd:3", log, out, out,
                 out) >= (int)sizeof(cmd))
        return -1;
    return system(cmd) == 0 ? 0 : -1;
}

static void run_xform(const struct e2e_env *env, const char *xf,
                      const char *sizestr, uint64_t reps)
{
    struct sender s[4];
    unsigned n = senders_for(xf, s);
    double best[4] = {0}, frac[4] = {0};
    int gone[4] = {0};

    for (uint64_t r = 0; r < reps; r++)
        for (unsigned i = 0; i < n; i++) {
            const char *tmpl[E2E_MAX_ARGS] = {"sh", "-c", s[i].cmd};
            struct bench_run run;
            double mbps;

            if (gone[i])
                continue;
            bench_run_to_receiver(tmpl, env, env->file, &run);
            if (run.missing || run.status != 0 || run.bytes == 0) {
                printf("heavy xform=%s sender=%s size=%s: %s\n", xf, s[i].name,
                       sizestr,
                       run.missing ? "missing (cannot be run here)" : "FAILED");
                gone[i] = 1;
                continue;
            }
            mbps = env->size * 1e3 / (double)run.ns;
            if (mbps > best[i])
                best[i] = mbps;
            frac[i] = (double)run.bytes / (double)env->size;
        }
    for (unsigned i = 0; i < n; i++)
        if (best[i] > 0 && decodes(xf))
            printf("heavy xform=%s sender=%s size=%s: %.0f MB/s of output, "
                   "output %.4f of the log\n",
                   xf, s[i].name, sizestr, best[i], frac[i]);
        else if (best[i] > 0)
            printf("heavy xform=%s sender=%s size=%s: %.0f MB/s, output "
                   "%.4f of input\n",
                   xf, s[i].name, sizestr, best[i], frac[i]);
    if (best[0] > 0 && best[1] > 0)
        printf("heavy xform=%s ratio=weir-2w/weir-1w size=%s: %.2f\n", xf,
               sizestr, best[1] / best[0]);
    fflush(stdout);
}

int bench_heavy(int argc, char **argv)
{
    uint64_t size = 64u << 20, reps = 3;
    char list[256] = "gzip:6,zstd:9", *save = NULL, path[128], sizestr[32];
    struct e2e_env env = {0};

    for (int i = 1; i < argc; i++) {
        int ok = 0;

        if (strncmp(argv[i], "size=", 5) == 0)
            ok = e2e_parse_size(argv[i] + 5, &size) == 0 && size > 0;
        else if (strncmp(argv[i], "reps=", 5) == 0)
            ok = e2e_parse_size(argv[i] + 5, &reps) == 0 && reps > 0;
        else if (strncmp(argv[i], "xform=", 6) == 0)
            ok = snprintf(list, sizeof(list), "%s", argv[i] + 6) > 0;
        if (!ok) {
            fprintf(stderr, "usage: weir-bench heavy [size=64MiB] [reps=3] "
                            "[xform=gzip:6,zstd:9]\n");
            return 2;
        }
    }
    signal(SIGPIPE, SIG_IGN);
    if (e2e_env_init(&env) != 0) {
        fprintf(stderr, "heavy: cannot find weir-bench's own directory\n");
        return 1;
    }
    e2e_format_size(size, sizestr, sizeof(sizestr));
    snprintf(path, sizeof(path), "/tmp/weir-bench-heavy-%s.log", sizestr);
    if (make_log(path, size) != 0) {
        fprintf(stderr, "heavy: cannot make %s: %s\n", path, strerror(errno));
        return 1;
    }
    e2e_warm(path);
    env.file = path;
    env.size = size;
    printf("heavy: made-up access log -> transform -> TCP receiver on "
           "127.0.0.1; MB/s of input; best of %llu\n",
           (unsigned long long)reps);
    for (char *t = strtok_r(list, ",", &save); t;
         t = strtok_r(NULL, ",", &save)) {
        char packed[PATH_MAX];

        env.file = path;
        if (decodes(t) &&
            make_compressed(&env, path, t, packed, sizeof(packed)) != 0) {
            printf("heavy xform=%s: FAILED to compress the log\n", t);
            continue;
        }
        if (decodes(t)) {
            e2e_warm(packed);
            env.file = packed;
        }
        run_xform(&env, t, sizestr, reps);
    }
    return 0;
}
