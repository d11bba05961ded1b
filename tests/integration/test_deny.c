/*
 * test_deny.c - weir where io_uring is refused, as under a container
 * runtime's default seccomp profile: deny-uring (DENY_BIN) makes
 * io_uring_setup fail with EPERM and runs the real binary (WEIR_BIN). weir
 * pipe and the daemon's file server must come up on epoll, say why in the
 * log, and deliver every byte (SHA-256); asked for io_uring, weir exits 69
 * with the operator's message.
 */
#include <ftw.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>

#include "harness.h"

#define BIG   (16u << 20)
#define SMALL (1u << 20)
#define WAIT  30000 /* ms: generous for sanitizer builds on a busy box */

static char dir[] = "/tmp/weir-deny-XXXXXX";
static char big[200], small[200];
static char big_hex[65], small_hex[65];
static const char *weir_bin;

#define FALLBACK "engine: epoll (io_uring_setup failed with EPERM"

/* Starts `weir ARGS...` under deny-uring, logging to DIR/NAME.log. */
static void spawn_denied(struct h_weir *w, const char *name, char *const args[])
{
    char log[300];
    char *argv[16] = {"deny-uring", (char *)weir_bin};
    int i;

    for (i = 0; args[i] && i < 13; i++)
        argv[i + 2] = args[i];
    argv[i + 2] = NULL;
    snprintf(log, sizeof(log), "%s/%s.log", dir, name);
    unlink(log);
    /* h_spawn runs WEIR_BIN with argv[1...]: point it at the helper. */
    setenv("WEIR_BIN", getenv("DENY_BIN"), 1);
    h_spawn(w, argv, log);
    setenv("WEIR_BIN", weir_bin, 1);
}

static void expect_exit(struct h_weir *w, int rc, bool stop)
{
    int got = stop ? h_stop(w, WAIT) : h_wait(w, WAIT);
    char *t = h_slurp(w->log);
    bool bad =
        got != rc || strstr(t, "runtime error:") || strstr(t, "Sanitizer");

    if (bad)
        fprintf(stderr, "weir exited %d, expected %d; log:\n%s\n", got, rc, t);
    free(t);
    if (bad)
        fail();
}

static void test_pipe_on_epoll(void **state)
{
    uint16_t port = h_free_port(false);
    int lfd = h_listen(false, port), fd;
    char src[300], dst[64], hex[65];
    struct h_weir w;

    (void)state;
    assert_true(lfd >= 0);
    /* AUTO: what an operator gets without asking for an engine. */
    unsetenv("WEIR_ENGINE");
    snprintf(src, sizeof(src), "file:%s", big);
    snprintf(dst, sizeof(dst), "tcp:127.0.0.1:%u", port);
    spawn_denied(&w, "pipe", (char *const[]){"-v", "pipe", src, dst, NULL});
    fd = h_accept(lfd, WAIT);
    assert_true(fd >= 0);
    assert_int_equal(h_drain(fd, hex, UINT64_MAX, WAIT), BIG);
    assert_string_equal(hex, big_hex);
    close(fd);
    close(lfd);
    expect_exit(&w, 0, false);
    h_expect_log(&w, FALLBACK, WAIT);
}

struct client {
    pthread_t th;
    uint16_t port;
    int64_t got;
    char hex[65];
};

static void *client_run(void *arg)
{
    struct client *c = arg;
    int fd = h_connect(false, c->port, NULL, WAIT);

    c->got = -1;
    if (fd < 0)
        return NULL;
    c->got = h_drain(fd, c->hex, UINT64_MAX, WAIT);
    close(fd);
    return NULL;
}

/* The file server: a small file (the splice stage) and a big one (the
 * stream path), several clients each. */
static void test_daemon_on_epoll(void **state)
{
    enum { N = 8 };
    uint16_t ps = h_free_port(false), pb = h_free_port(false);
    static struct client c[2 * N];
    char conf[300];
    struct h_weir w;
    char *log;

    (void)state;
    unsetenv("WEIR_ENGINE");
    snprintf(conf, sizeof(conf), "%s/serve.conf", dir);
    h_write_text(conf,
                 "[daemon]\nworkers = 2\n"
                 "[pipeline small]\nsource = file:%s\n"
                 "sink = tcp-listen:127.0.0.1:%u\n"
                 "[pipeline big]\nsource = file:%s\n"
                 "sink = tcp-listen:127.0.0.1:%u\n",
                 small, ps, big, pb);
    spawn_denied(&w, "serve", (char *const[]){"-c", conf, NULL});
    h_expect_log(&w, FALLBACK, WAIT);
    h_expect_log(&w, "listening on", WAIT);
    for (int i = 0; i < 2 * N; i++) {
        c[i] = (struct client){.port = i < N ? ps : pb};
        assert_int_equal(pthread_create(&c[i].th, NULL, client_run, &c[i]), 0);
    }
    for (int i = 0; i < 2 * N; i++) {
        pthread_join(c[i].th, NULL);
        assert_int_equal(c[i].got, i < N ? SMALL : BIG);
        assert_string_equal(c[i].hex, i < N ? small_hex : big_hex);
    }
    expect_exit(&w, 0, true);
    /* One line at start, not one per worker or per client. */
    log = h_slurp(w.log);
    assert_int_equal(h_count(log, "engine: "), 1);
    free(log);
}

/* The other direction: a socket source received into a file. */
static void test_pipe_tcp_to_file_on_epoll(void **state)
{
    uint16_t port = h_free_port(false);
    char src[64], sink[300], out[250], hex[65];
    uint64_t size;
    struct h_weir w;
    int fd;

    (void)state;
    unsetenv("WEIR_ENGINE");
    snprintf(out, sizeof(out), "%s/received.bin", dir);
    snprintf(src, sizeof(src), "tcp-listen:127.0.0.1:%u", port);
    snprintf(sink, sizeof(sink), "file:%s", out);
    spawn_denied(&w, "pipe_in", (char *const[]){"-v", "pipe", src, sink, NULL});
    fd = h_connect(false, port, NULL, WAIT);
    assert_true(fd >= 0);
    assert_true(h_send_file(fd, big));
    close(fd);
    expect_exit(&w, 0, false);
    h_expect_log(&w, FALLBACK, WAIT);
    assert_true(h_file_sha(out, hex, &size));
    assert_int_equal(size, BIG);
    assert_string_equal(hex, big_hex);
}

/* The filter holds for weir too: asked for io_uring, it cannot have it. */
static void test_io_uring_asked_for(void **state)
{
    char src[300];
    struct h_weir w;

    (void)state;
    setenv("WEIR_ENGINE", "io_uring", 1);
    snprintf(src, sizeof(src), "file:%s", small);
    spawn_denied(&w, "asked", (char *const[]){"-v", "pipe", src, "null", NULL});
    unsetenv("WEIR_ENGINE");
    expect_exit(&w, 69, false);
    h_expect_log(&w, "seccomp", WAIT);
}

/* The engine a config or the command line asks for is the one that runs,
 * and the startup line says so; io_uring asked for where it is refused
 * is an exit 69, not some other engine. */
static void test_engine_chosen(void **state)
{
    uint16_t port = h_free_port(false);
    char conf[300], log[300], src[300], hex[65];
    struct h_weir w;
    int fd;

    (void)state;
    unsetenv("WEIR_ENGINE");
    snprintf(conf, sizeof(conf), "%s/chosen.conf", dir);
    h_write_text(conf,
                 "[daemon]\nworkers = 2\nengine = epoll\n"
                 "[pipeline big]\nsource = file:%s\n"
                 "sink = tcp-listen:127.0.0.1:%u\n",
                 big, port);
    snprintf(log, sizeof(log), "%s/chosen.log", dir);
    unlink(log);
    h_spawn(&w, (char *const[]){"weir", "-c", conf, NULL}, log);
    h_expect_log(&w, "engine: epoll (asked for)", WAIT);
    fd = h_connect(false, port, NULL, WAIT);
    assert_true(fd >= 0);
    assert_int_equal(h_drain(fd, hex, UINT64_MAX, WAIT), BIG);
    assert_string_equal(hex, big_hex);
    close(fd);
    expect_exit(&w, 0, true);

    snprintf(src, sizeof(src), "file:%s", small);
    spawn_denied(&w, "pipe_asked",
                 (char *const[]){"-v", "pipe", "--engine", "io_uring", src,
                                 "null", NULL});
    expect_exit(&w, 69, false);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_teardown(test_pipe_on_epoll, h_teardown),
        cmocka_unit_test_teardown(test_daemon_on_epoll, h_teardown),
        cmocka_unit_test_teardown(test_pipe_tcp_to_file_on_epoll, h_teardown),
        cmocka_unit_test_teardown(test_io_uring_asked_for, h_teardown),
        cmocka_unit_test_teardown(test_engine_chosen, h_teardown),
    };
    int rc;

    signal(SIGPIPE, SIG_IGN);
    weir_bin = getenv("WEIR_BIN");
    if (!weir_bin || !getenv("DENY_BIN")) {
        fprintf(stderr, "WEIR_BIN and DENY_BIN must be set\n");
        return 1;
    }
    if (!mkdtemp(dir)) {
        perror("mkdtemp");
        return 1;
    }
    snprintf(big, sizeof(big), "%s/big.bin", dir);
    snprintf(small, sizeof(small), "%s/small.bin", dir);
    h_make_file(big, BIG, 0x5eed, big_hex);
    h_make_file(small, SMALL, 0xfeed, small_hex);
    rc = cmocka_run_group_tests(tests, NULL, NULL);
    h_rm_tree(dir);
    return rc;
}
