/*
 * e2e_util.c - the `e2e` suite's plumbing: sizes, the test file, and
 * children started from argv templates.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "e2e.h"

#ifndef WEIR_BENCH_NODE_DIR
#define WEIR_BENCH_NODE_DIR "bench/peers/node"
#endif

#define CHUNK (1u << 20)

static void dirname_in_place(char *path)
{
    char *slash = strrchr(path, '/');

    if (slash && slash != path)
        *slash = '\0';
}

int e2e_env_init(struct e2e_env *env)
{
    ssize_t n =
        readlink("/proc/self/exe", env->bindir, sizeof(env->bindir) - 1);

    if (n <= 0)
        return -1;
    env->bindir[n] = '\0';
    dirname_in_place(env->bindir);
    memcpy(env->builddir, env->bindir, sizeof(env->builddir));
    dirname_in_place(env->builddir);
    env->nodedir = WEIR_BENCH_NODE_DIR;
    return 0;
}

/* Copies `tmpl` into out with the tokens replaced. Returns 0, or -1 when
 * it does not fit. */
static int expand(const char *tmpl, const struct e2e_env *env, const char *file,
                  const char *port, char *out, size_t len)
{
    static const char *const names[] = {"{file}", "{port}", "{bindir}",
                                        "{builddir}", "{nodedir}"};
    const char *values[] = {file, port, env->bindir, env->builddir,
                            env->nodedir};
    size_t used = 0;

    while (*tmpl) {
        size_t k, add = 1;
        const char *from = tmpl;

        for (k = 0; k < sizeof(names) / sizeof(names[0]); k++)
            if (strncmp(tmpl, names[k], strlen(names[k])) == 0)
                break;
        if (k < sizeof(names) / sizeof(names[0])) {
            from = values[k];
            add = strlen(from);
            tmpl += strlen(names[k]);
        } else {
            tmpl++;
        }
        if (used + add >= len)
            return -1;
        memcpy(out + used, from, add);
        used += add;
    }
    out[used] = '\0';
    return 0;
}

pid_t e2e_spawn(const char *const *tmpl, const struct e2e_env *env,
                const char *file, const char *port)
{
    /* Everything is prepared before fork: the bench has other threads, so
     * the child may only call async-signal-safe functions. */
    static char bufs[E2E_MAX_ARGS][PATH_MAX + 64];
    char *argv[E2E_MAX_ARGS + 1];
    const char *in = "/dev/null";
    int argc = 0;
    pid_t pid;

    for (int i = 0; i < E2E_MAX_ARGS && tmpl[i]; i++) {
        if (expand(tmpl[i], env, file, port, bufs[i], sizeof(bufs[i])))
            return -1;
        if (bufs[i][0] == '<')
            in = bufs[i] + 1;
        else
            argv[argc++] = bufs[i];
    }
    argv[argc] = NULL;
    if (argc == 0)
        return -1;
    fflush(stdout);
    pid = fork();
    if (pid == 0) {
        int fd0 = open(in, O_RDONLY);
        int fd1 = open("/dev/null", O_WRONLY);

        if (fd0 < 0 || fd1 < 0 || dup2(fd0, 0) < 0 || dup2(fd1, 1) < 0)
            _exit(126);
        execvp(argv[0], argv);
        _exit(127);
    }
    return pid;
}

int e2e_parse_size(const char *s, uint64_t *out)
{
    static const struct {
        const char *suffix;
        uint64_t mult;
    } units[] = {{"", 1},
                 {"KiB", UINT64_C(1) << 10},
                 {"MiB", UINT64_C(1) << 20},
                 {"GiB", UINT64_C(1) << 30}};
    char *end;
    unsigned long long v;

    if (*s < '0' || *s > '9')
        return -1;
    errno = 0;
    v = strtoull(s, &end, 10);
    if (errno)
        return -1;
    for (size_t i = 0; i < sizeof(units) / sizeof(units[0]); i++)
        if (strcmp(end, units[i].suffix) == 0) {
            if (v > UINT64_MAX / units[i].mult)
                return -1;
            *out = v * units[i].mult;
            return 0;
        }
    return -1;
}

void e2e_format_size(uint64_t size, char *buf, size_t len)
{
    if (size % (UINT64_C(1) << 30) == 0)
        snprintf(buf, len, "%lluGiB", (unsigned long long)(size >> 30));
    else if (size % (UINT64_C(1) << 20) == 0)
        snprintf(buf, len, "%lluMiB", (unsigned long long)(size >> 20));
    else if (size % (UINT64_C(1) << 10) == 0)
        snprintf(buf, len, "%lluKiB", (unsigned long long)(size >> 10));
    else
        snprintf(buf, len, "%llu", (unsigned long long)size);
}

static int write_file(const char *path, uint64_t size, char *buf)
{
    char tmp[PATH_MAX];
    uint64_t x = 0x9e3779b97f4a7c15u, left = size;
    int fd, err = 0;

    snprintf(tmp, sizeof(tmp), "%s.%d.tmp", path, (int)getpid());
    fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0)
        return -1;
    while (left > 0 && !err) {
        size_t n = left < CHUNK ? (size_t)left : CHUNK;

        /* xorshift64: incompressible enough that no sender can gain by
         * compressing, and cheap to make. */
        for (size_t i = 0; i + 8 <= CHUNK; i += 8) {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            memcpy(buf + i, &x, 8);
        }
        for (size_t off = 0; off < n && !err;) {
            ssize_t w = write(fd, buf + off, n - off);
            if (w < 0 && errno != EINTR)
                err = errno;
            else if (w > 0)
                off += (size_t)w;
        }
        left -= n;
    }
    if (close(fd) != 0 && !err)
        err = errno;
    if (!err && rename(tmp, path) != 0)
        err = errno;
    if (err) {
        unlink(tmp);
        errno = err;
        return -1;
    }
    return 0;
}

void e2e_warm(const char *path)
{
    static char buf[CHUNK];
    int fd = open(path, O_RDONLY | O_CLOEXEC);

    if (fd < 0)
        return;
    while (read(fd, buf, sizeof(buf)) > 0)
        ;
    close(fd);
}

int e2e_make_file(const char *path, uint64_t size)
{
    struct stat st;
    char *buf = malloc(CHUNK);
    int rc = 0;

    if (!buf) {
        errno = ENOMEM;
        return -1;
    }
    if ((stat(path, &st) != 0 || (uint64_t)st.st_size != size) &&
        write_file(path, size, buf) != 0)
        rc = -1;
    free(buf);
    if (rc == 0)
        e2e_warm(path);
    return rc;
}
