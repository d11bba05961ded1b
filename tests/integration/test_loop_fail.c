/*
 * test_loop_fail.c - weir whose event loops' waits fail with an errno no
 * engine expects (fail-wait, FAIL_BIN: a seccomp filter makes
 * io_uring_enter and the epoll waits return ENOTRECOVERABLE). weir pipe
 * and the daemon must each end with EX_OSERR (71) and a line naming the
 * call and the errno, never exit 0 or hang: when every loop fails, and
 * when only the workers' loops do (the main loop hears of it and names
 * the worker).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "harness.h"

#define WAIT 30000 /* ms: generous for sanitizer builds on a busy box */

static const char *weir_bin;
static char src[200];

/* The call the engine of this run waits in. */
static const char *wait_call(void)
{
    const char *e = getenv("WEIR_ENGINE");

    return e && strcmp(e, "epoll") == 0 ? "epoll_wait failed"
                                        : "io_uring_enter failed";
}

static void run_failing(const char *name, bool workers, char *const args[])
{
    char log[300];
    char *argv[16] = {"fail-wait"};
    struct h_weir w;
    int i = 1, j;

    if (workers)
        argv[i++] = "--threads";
    argv[i++] = (char *)weir_bin;
    for (j = 0; args[j] && i < 15; j++)
        argv[i++] = args[j];
    argv[i] = NULL;
    h_path(log, sizeof(log), name);
    unlink(log);
    setenv("WEIR_BIN", getenv("FAIL_BIN"), 1);
    h_spawn(&w, argv, log);
    setenv("WEIR_BIN", weir_bin, 1);
    h_expect_exit(&w, 71, false, WAIT);
    /* With every loop failing, the main loop or a worker tells first. */
    if (workers)
        h_expect_log(&w, "worker ", 0);
    h_expect_log(&w, wait_call(), 0);
    h_expect_log(&w, "State not recoverable (errno 131); exiting", 0);
}

static void pipe_case(bool workers)
{
    char arg[300];

    /* Followed, so that a worker must wait whatever the engine: 1 MiB
     * read at once into null could end before any worker waited. */
    snprintf(arg, sizeof(arg), "file:%s", src);
    run_failing("pipe.log", workers,
                (char *const[]){"pipe", "-f", arg, "null", NULL});
}

static void daemon_case(bool workers)
{
    char conf[300];

    h_path(conf, sizeof(conf), "serve.conf");
    h_write_text(conf,
                 "[daemon]\nworkers = 2\n[pipeline serve]\nsource = "
                 "file:%s\nsink = tcp-listen:127.0.0.1:%u\n",
                 src, h_free_port(false));
    run_failing("serve.log", workers, (char *const[]){"-c", conf, NULL});
}

static void test_pipe(void **state)
{
    (void)state;
    pipe_case(false);
}

static void test_pipe_workers(void **state)
{
    (void)state;
    pipe_case(true);
}

static void test_daemon(void **state)
{
    (void)state;
    daemon_case(false);
}

static void test_daemon_workers(void **state)
{
    (void)state;
    daemon_case(true);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_teardown(test_pipe, h_teardown),
        cmocka_unit_test_teardown(test_pipe_workers, h_teardown),
        cmocka_unit_test_teardown(test_daemon, h_teardown),
        cmocka_unit_test_teardown(test_daemon_workers, h_teardown),
    };
    char hex[65];
    int rc;

    weir_bin = h_bin();
    if (h_begin("loopfail") != 0)
        return 1;
    h_path(src, sizeof(src), "src.bin");
    h_make_file(src, 1 << 20, 7, hex);
    rc = cmocka_run_group_tests(tests, NULL, NULL);
    h_end();
    return rc;
}
