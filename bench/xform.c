/*
 * xform.c - suite `xform`: the workload of Node's
 * bench-filehandle-pull-vs-webstream end to end. A file of repeated
 * 'abcdefghij' is uppercased, gzip-compressed at level 1 and sent to a TCP
 * receiver on 127.0.0.1, by weir pipe (1 worker; 2 workers, the stream on
 * one worker as the daemon places it, its gzip members lent to the other;
 * the same on the epoll engine), by the shell pipeline
 * `cat | tr a-z A-Z | gzip -1 | nc`, and by Node's classic streams
 * (peers/node/xform.mjs), interleaved, best of `reps`.
 * Then the tee: the file into 1, 2 and 4 null sinks.
 *
 *   weir-bench xform [size=1MiB,16MiB,64MiB] [reps=3]
 *
 * size takes a comma-separated list (size=1GiB for the large case). MB/s
 * is the input's size over the time from the sender's start to the
 * receiver's end of stream; ratios are weir's (2 workers) to each peer's.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bench.h"
#include "e2e.h"
#include "harness.h"

#define MAX_SIZES 8

/* weir's summary and counters go to stderr: the senders run under sh so it
 * can be set aside (the shell pipeline pays the same sh). */
#define WEIR_XF "exec {builddir}/daemon/weir pipe -t uppercase -t gzip:1 "
#define TO_RX   " file:{file} tcp:127.0.0.1:{port} 2>/dev/null"

static const struct e2e_sender senders[] = {
    /* The first is the reference of the ratios. */
    {"weir-2w", {"sh", "-c", WEIR_XF "-w 2" TO_RX}},
    {"weir-1w", {"sh", "-c", WEIR_XF "-w 1" TO_RX}},
    /* On the epoll engine, as where io_uring is refused. */
    {"weir-2w-epoll", {"sh", "-c", "WEIR_ENGINE=epoll " WEIR_XF "-w 2" TO_RX}},
    {"shell",
     {"sh", "-c",
      "cat {file} | tr a-z A-Z | gzip -1 | nc -N 127.0.0.1 {port}"}},
    {"node", {"node", "{nodedir}/xform.mjs", "{file}", "{port}"}},
};
#define NSENDERS (sizeof(senders) / sizeof(senders[0]))

/* The input: 'abcdefghij' repeated to `size` bytes, made once. */
static int make_input(const char *path, uint64_t size)
{
    static char block[1 << 20];
    struct stat st;
    FILE *f;

    if (stat(path, &st) == 0 && (uint64_t)st.st_size == size)
        return 0;
    for (size_t i = 0; i < sizeof(block); i++)
        block[i] = (char)('a' + (i % 10));
    f = fopen(path, "w");
    if (!f)
        return -1;
    /* 1 MiB is not a multiple of 10: each block starts where the last
     * one left off, so the pattern runs on unbroken. */
    for (uint64_t done = 0; done < size;) {
        size_t off = (size_t)(done % 10);
        size_t n = sizeof(block) - 10;

        if (n > size - done)
            n = (size_t)(size - done);
        fwrite(block + off, 1, n, f);
        done += n;
    }
    return fclose(f) == 0 ? 0 : -1;
}

static void run_size(const struct e2e_env *env, const char *path,
                     const char *sizestr, uint64_t reps)
{
    double best[NSENDERS] = {0};
    int gone[NSENDERS] = {0};

    for (uint64_t r = 0; r < reps; r++)
        for (size_t i = 0; i < NSENDERS; i++) {
            struct bench_run run;

            if (gone[i])
                continue;
            bench_run_to_receiver(senders[i].argv, env, path, &run);
            if (run.missing || run.status != 0 || run.bytes == 0) {
                printf("xform sender=%s size=%s: %s\n", senders[i].name,
                       sizestr,
                       run.missing ? "missing (cannot be run here)" : "FAILED");
                gone[i] = 1;
                continue;
            }
            if (env->size * 1e3 / (double)run.ns > best[i])
                best[i] = env->size * 1e3 / (double)run.ns;
        }
    for (size_t i = 0; i < NSENDERS; i++)
        if (best[i] > 0)
            printf("xform sender=%s size=%s: %.0f MB/s\n", senders[i].name,
                   sizestr, best[i]);
    for (size_t i = 1; i < NSENDERS && best[0] > 0; i++)
        if (best[i] > 0)
            printf("xform ratio=%s/%s size=%s: %.2f\n", senders[0].name,
                   senders[i].name, sizestr, best[0] / best[i]);
    fflush(stdout);
}

/* The file into n null sinks (weir pipe, 1 worker): MB/s of the input. */
static void run_tee(const struct e2e_env *env, const char *path,
                    const char *sizestr, uint64_t reps)
{
    for (unsigned n = 1; n <= 4; n *= 2) {
        static const char *const cmd[] = {
            "exec {builddir}/daemon/weir pipe -w 1 file:{file} null "
            "2>/dev/null",
            "exec {builddir}/daemon/weir pipe -w 1 file:{file} null null "
            "2>/dev/null",
            NULL,
            "exec {builddir}/daemon/weir pipe -w 1 file:{file} null null "
            "null null 2>/dev/null",
        };
        const char *tmpl[E2E_MAX_ARGS] = {"sh", "-c", cmd[n - 1]};
        double best = 0;

        for (uint64_t r = 0; r < reps; r++) {
            uint64_t t0 = bench_now_ns();
            struct rusage ru;
            pid_t pid = e2e_spawn(tmpl, env, path, "0");
            int st =
                pid < 0
                    ? -1
                    : bench_reap(pid, t0 + BENCH_STALL_SECONDS * 1000000000ull,
                                 &ru);
            uint64_t ns = bench_now_ns() - t0;

            if (st != 0) {
                printf("xform tee sinks=%u size=%s: FAILED\n", n, sizestr);
                best = 0;
                break;
            }
            if (env->size * 1e3 / (double)ns > best)
                best = env->size * 1e3 / (double)ns;
        }
        if (best > 0)
            printf("xform tee sinks=%u size=%s: %.0f MB/s\n", n, sizestr, best);
        fflush(stdout);
    }
}

int bench_xform(int argc, char **argv)
{
    uint64_t sizes[MAX_SIZES] = {1u << 20, 16u << 20, 64u << 20};
    unsigned nsizes = 3;
    uint64_t reps = 3;
    struct e2e_env env = {0};

    for (int i = 1; i < argc; i++) {
        int ok = 0;

        if (strncmp(argv[i], "size=", 5) == 0) {
            char list[256], *save = NULL;

            snprintf(list, sizeof(list), "%s", argv[i] + 5);
            nsizes = 0;
            ok = 1;
            for (char *t = strtok_r(list, ",", &save); t && ok;
                 t = strtok_r(NULL, ",", &save))
                ok = nsizes < MAX_SIZES &&
                     e2e_parse_size(t, &sizes[nsizes++]) == 0 &&
                     sizes[nsizes - 1] > 0;
            ok = ok && nsizes > 0;
        } else if (strncmp(argv[i], "reps=", 5) == 0) {
            ok = e2e_parse_size(argv[i] + 5, &reps) == 0 && reps > 0;
        }
        if (!ok) {
            fprintf(stderr, "usage: weir-bench xform "
                            "[size=1MiB,16MiB,64MiB] [reps=3]\n");
            return 2;
        }
    }
    signal(SIGPIPE, SIG_IGN);
    if (e2e_env_init(&env) != 0) {
        fprintf(stderr, "xform: cannot find weir-bench's own directory\n");
        return 1;
    }
    printf("xform: 'abcdefghij' repeated -> uppercase -> gzip -1 -> TCP "
           "receiver on 127.0.0.1; MB/s of input; best of %llu\n",
           (unsigned long long)reps);
    for (unsigned k = 0; k < nsizes; k++) {
        char sizestr[32], path[128];

        e2e_format_size(sizes[k], sizestr, sizeof(sizestr));
        snprintf(path, sizeof(path), "/tmp/weir-bench-xform-%s.txt", sizestr);
        if (make_input(path, sizes[k]) != 0) {
            fprintf(stderr, "xform: cannot make %s: %s\n", path,
                    strerror(errno));
            return 1;
        }
        e2e_warm(path);
        env.file = path;
        env.size = sizes[k];
        run_size(&env, path, sizestr, reps);
        run_tee(&env, path, sizestr, reps);
    }
    return 0;
}
