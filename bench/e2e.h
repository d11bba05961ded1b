/*
 * e2e.h - the parts of the `e2e` suite: the sender and server tables with
 * their argv templates (e2e_senders.c), the test file and child processes
 * (e2e_util.c), and the many-clients case (e2e_clients.c).
 */
#ifndef WEIR_BENCH_E2E_H
#define WEIR_BENCH_E2E_H

#include <limits.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define E2E_DEFAULT_SIZE (UINT64_C(1) << 30)
#define E2E_MAX_SENDERS  16
#define E2E_MAX_ARGS     16

/*
 * A sender or server is an argv template. These tokens are replaced in
 * every argument: {file} the file to send, {port} the receiver's (or the
 * server's) port on 127.0.0.1, {bindir} the directory of weir-bench (where
 * sendfile-send is built), {builddir} the build directory (for daemon/weir),
 * {nodedir} bench/peers/node in the source tree. An argument that starts
 * with '<' is not passed: the rest names the child's standard input.
 */
struct e2e_sender {
    const char *name;
    const char *argv[E2E_MAX_ARGS];
};

extern const struct e2e_sender e2e_senders[];
extern const size_t e2e_nsenders;
extern const struct e2e_sender e2e_servers[];
extern const size_t e2e_nservers;

struct e2e_env {
    const char *file; /* the file being sent */
    uint64_t size;    /* its size */
    char bindir[PATH_MAX];
    char builddir[PATH_MAX];
    const char *nodedir;
};

/* Finds weir-bench's own directory. Returns 0 or -1. */
int e2e_env_init(struct e2e_env *env);

/* Starts a child from a template, stdout to /dev/null, stdin from /dev/null
 * unless the template says otherwise. Returns its pid or -1. The child
 * exits 127 when the program cannot be run. */
pid_t e2e_spawn(const char *const *tmpl, const struct e2e_env *env,
                const char *file, const char *port);

/* Reads the file once through, so every sender finds it in the page
 * cache. */
void e2e_warm(const char *path);

/* "1GiB", "256MiB", "64KiB", "4096", "1000". Returns 0 or -1. */
int e2e_parse_size(const char *s, uint64_t *out);
/* The inverse, in the largest unit that divides the size. */
void e2e_format_size(uint64_t size, char *buf, size_t len);

/* Makes `path` hold `size` pseudo-random bytes, unless it already has that
 * size, then reads it once so it sits in the page cache. Returns 0 or -1
 * (errno set). */
int e2e_make_file(const char *path, uint64_t size);

/* The many-clients case, for every server of e2e_servers. Returns 0, or 1
 * on a failure that is not a missing program. */
int e2e_run_clients(const struct e2e_env *env, int clients,
                    uint64_t client_size);

#endif /* WEIR_BENCH_E2E_H */
