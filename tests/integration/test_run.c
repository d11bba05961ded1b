/*
 * test_run.c - the run path of the real binary (WEIR_BIN): files, tcp on
 * 127.0.0.1 and ::1, unix sockets, the file server, the proxy, follow,
 * reconnects, a client that leaves, and `weir pipe`. Every byte is checked
 * by SHA-256 and every wait is bounded.
 */
#include <ftw.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>

#include "harness.h"

#define BIG                   (64u << 20)
#define SMALL                 (4u << 20)
#define WAIT                  30000 /* ms: generous for sanitizer builds on a busy box */
#define expect_log(w, needle) h_expect_log(w, needle, WAIT)
#define start_conf(w, name, ...)                                               \
    h_start_conf(w, dir, name, H_CONF_VERBOSE, __VA_ARGS__)

static char dir[] = "/tmp/weir-run-XXXXXX";
static char big[600], small[600];
static char big_hex[65], small_hex[65];

static void path(char *out, size_t len, const char *name)
{
    snprintf(out, len, "%s/%s", dir, name);
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

/* ---- a client on a thread: connect, drain, hash ---- */

struct client {
    pthread_t th;
    bool v6;
    uint16_t port;
    const char *unix_path;
    int64_t got;
    char hex[65];
};

static void *client_run(void *arg)
{
    struct client *c = arg;
    int fd = h_connect(c->v6, c->port, c->unix_path, WAIT);

    c->got = -1;
    if (fd < 0)
        return NULL;
    c->got = h_drain(fd, c->hex, UINT64_MAX, WAIT);
    close(fd);
    return NULL;
}

/* ---- a sender on a thread: send a file, then end the stream ---- */

struct sender {
    pthread_t th;
    int fd;
    const char *file;
    bool ok;
};

static void *sender_run(void *arg)
{
    struct sender *s = arg;

    s->ok = h_send_file(s->fd, s->file);
    shutdown(s->fd, SHUT_WR);
    return NULL;
}

static void test_file_to_tcp(void **state)
{
    uint16_t port = h_free_port(false);
    int lfd = h_listen(false, port), fd;
    struct h_weir w;
    char hex[65];

    (void)state;
    assert_true(lfd >= 0);
    start_conf(&w, "file_to_tcp",
               "[pipeline p]\nsource = file:%s\n"
               "sink = tcp:127.0.0.1:%u\n",
               big, port);
    fd = h_accept(lfd, WAIT);
    assert_true(fd >= 0);
    assert_int_equal(h_drain(fd, hex, UINT64_MAX, WAIT), BIG);
    assert_string_equal(hex, big_hex);
    close(fd);
    close(lfd);
    expect_exit(&w, 0, false);
}

static void test_serve_50_clients(void **state)
{
    enum { N = 50 };
    uint16_t port = h_free_port(false);
    /* Static: a failed assertion leaves this frame while threads run. */
    static struct client c[N];
    struct h_weir w;

    (void)state;
    start_conf(&w, "serve",
               "[pipeline p]\nsource = file:%s\n"
               "sink = tcp-listen:127.0.0.1:%u\n",
               small, port);
    expect_log(&w, "listening on");
    for (int i = 0; i < N; i++) {
        c[i] = (struct client){.port = port};
        assert_int_equal(pthread_create(&c[i].th, NULL, client_run, &c[i]), 0);
    }
    for (int i = 0; i < N; i++) {
        pthread_join(c[i].th, NULL);
        assert_int_equal(c[i].got, SMALL);
        assert_string_equal(c[i].hex, small_hex);
    }
    expect_exit(&w, 0, true);
}

static void test_listen_source_to_file(void **state)
{
    uint16_t port = h_free_port(false);
    char out[600], hex[65];
    uint64_t size;
    struct h_weir w;
    int fd;

    (void)state;
    path(out, sizeof(out), "received.bin");
    start_conf(&w, "to_file",
               "[pipeline p]\nsource = tcp-listen:127.0.0.1:%u\n"
               "sink = file:%s\n",
               port, out);
    fd = h_connect(false, port, NULL, WAIT);
    assert_true(fd >= 0);
    assert_true(h_send_file(fd, small));
    close(fd);
    expect_log(&w, "done, 4194304 bytes");
    expect_exit(&w, 0, true);
    assert_true(h_file_sha(out, hex, &size));
    assert_int_equal(size, SMALL);
    assert_string_equal(hex, small_hex);
}

static void test_proxy(void **state)
{
    uint16_t front = h_free_port(false), back = h_free_port(false);
    int lfd = h_listen(false, back), up;
    static struct sender s;
    struct h_weir w;
    char hex[65];

    (void)state;
    assert_true(lfd >= 0);
    s = (struct sender){.file = small};
    start_conf(&w, "proxy",
               "[pipeline p]\nsource = tcp-listen:127.0.0.1:%u\n"
               "sink = tcp:127.0.0.1:%u\n",
               front, back);
    s.fd = h_connect(false, front, NULL, WAIT);
    assert_true(s.fd >= 0);
    assert_int_equal(pthread_create(&s.th, NULL, sender_run, &s), 0);
    up = h_accept(lfd, WAIT);
    assert_true(up >= 0);
    assert_int_equal(h_drain(up, hex, UINT64_MAX, WAIT), SMALL);
    assert_string_equal(hex, small_hex);
    pthread_join(s.th, NULL);
    assert_true(s.ok);
    close(s.fd);
    close(up);
    close(lfd);
    expect_exit(&w, 0, true);
}

static void test_unix_socket(void **state)
{
    char sock[600];
    struct client c = {0};
    struct h_weir w;

    (void)state;
    path(sock, sizeof(sock), "serve.sock");
    start_conf(&w, "unix",
               "[pipeline p]\nsource = file:%s\n"
               "sink = unix-listen:%s\n",
               small, sock);
    c.unix_path = sock;
    client_run(&c);
    assert_int_equal(c.got, SMALL);
    assert_string_equal(c.hex, small_hex);
    expect_exit(&w, 0, true);
}

static void test_ipv6(void **state)
{
    int probe = h_listen(true, 0);
    struct client c = {.v6 = true};
    struct h_weir w;

    (void)state;
    if (probe < 0)
        skip(); /* no ::1 here */
    close(probe);
    c.port = h_free_port(true);
    start_conf(&w, "ipv6",
               "[pipeline p]\nsource = file:%s\n"
               "sink = tcp-listen:[::1]:%u\n",
               small, c.port);
    client_run(&c);
    assert_int_equal(c.got, SMALL);
    assert_string_equal(c.hex, small_hex);
    expect_exit(&w, 0, true);
}

/* Copies bytes [off, off + len) of src to the end of dst. */
static void append_range(const char *dst, const char *src, long off, long len)
{
    FILE *in = fopen(src, "r"), *out = fopen(dst, "a");
    char buf[65536];

    assert_non_null(in);
    assert_non_null(out);
    fseek(in, off, SEEK_SET);
    while (len > 0) {
        size_t n = fread(buf, 1, len < 65536 ? (size_t)len : 65536, in);
        assert_true(n > 0);
        assert_int_equal(fwrite(buf, 1, n, out), n);
        len -= (long)n;
    }
    fclose(in);
    fclose(out);
}

static void test_follow(void **state)
{
    uint16_t port = h_free_port(false);
    int lfd = h_listen(false, port), fd;
    char all[600], logf[600], all_hex[65], hex[65];
    struct sha256 s;
    uint8_t buf[65536];
    uint64_t got = 0;
    struct h_weir w;

    (void)state;
    path(all, sizeof(all), "follow_all.bin");
    path(logf, sizeof(logf), "follow.log.bin");
    h_make_file(all, 2u << 20, 7, all_hex);
    unlink(logf);
    append_range(logf, all, 0, 1 << 20);
    start_conf(&w, "follow",
               "[pipeline p]\nsource = file:%s\nfollow = yes\n"
               "sink = tcp:127.0.0.1:%u\n",
               logf, port);
    fd = h_accept(lfd, WAIT);
    assert_true(fd >= 0);
    sha256_init(&s);
    /* The first half, then what is appended after it was read. */
    while (got < (2u << 20)) {
        struct pollfd p = {.fd = fd, .events = POLLIN};
        size_t want;
        ssize_t n;

        if (got == (1u << 20))
            append_range(logf, all, 1 << 20, 1 << 20);
        assert_int_equal(poll(&p, 1, WAIT), 1);
        want = sizeof(buf);
        if (got < (1u << 20) && (1u << 20) - got < want)
            want = (1u << 20) - got;
        n = read(fd, buf, want);
        assert_true(n > 0);
        sha256_update(&s, buf, (size_t)n);
        got += (uint64_t)n;
    }
    sha256_hex(&s, hex);
    assert_string_equal(hex, all_hex);
    expect_exit(&w, 0, true);
    /* The stop ended the stream cleanly: the peer sees the end. */
    assert_int_equal(h_drain(fd, NULL, UINT64_MAX, WAIT), 0);
    close(fd);
    close(lfd);
}

/* Two sinks: the stream is teed, each gets every byte. */
static void test_two_sinks(void **state)
{
    uint16_t port = h_free_port(false);
    int lfd = h_listen(false, port), fd;
    char out[600], hex[65];
    uint64_t size;
    struct h_weir w;

    (void)state;
    assert_true(lfd >= 0);
    path(out, sizeof(out), "tee_copy.bin");
    start_conf(&w, "two_sinks",
               "[pipeline p]\nsource = file:%s\n"
               "sink = tcp:127.0.0.1:%u\nsink = file:%s\n",
               big, port, out);
    fd = h_accept(lfd, WAIT);
    assert_true(fd >= 0);
    assert_int_equal(h_drain(fd, hex, UINT64_MAX, WAIT), BIG);
    assert_string_equal(hex, big_hex);
    close(fd);
    close(lfd);
    expect_exit(&w, 0, false);
    assert_true(h_file_sha(out, hex, &size));
    assert_int_equal(size, BIG);
    assert_string_equal(hex, big_hex);
}

/* A followed file truncated and rewritten: the new content arrives. */
static void test_follow_truncation(void **state)
{
    uint16_t port = h_free_port(false);
    int lfd = h_listen(false, port), fd;
    char f[600], a_hex[65], b_hex[65], hex[65];
    struct h_weir w;

    (void)state;
    assert_true(lfd >= 0);
    path(f, sizeof(f), "rotated.bin");
    h_make_file(f, 1u << 20, 11, a_hex);
    start_conf(&w, "truncation",
               "[pipeline p]\nsource = file:%s,follow=yes\n"
               "sink = tcp:127.0.0.1:%u\n",
               f, port);
    fd = h_accept(lfd, WAIT);
    assert_true(fd >= 0);
    assert_int_equal(h_drain(fd, hex, 1u << 20, WAIT), 1u << 20);
    assert_string_equal(hex, a_hex);
    /* copytruncate's way: same file, shorter, new bytes. */
    h_make_file(f, 256u << 10, 12, b_hex);
    assert_int_equal(h_drain(fd, hex, 256u << 10, WAIT), 256u << 10);
    assert_string_equal(hex, b_hex);
    expect_exit(&w, 0, true);
    close(fd);
    close(lfd);
}

static void test_peer_down_at_start(void **state)
{
    uint16_t port = h_free_port(false);
    struct h_weir w;
    char hex[65];
    int lfd, fd;

    (void)state;
    start_conf(&w, "down_at_start",
               "[pipeline p]\nsource = file:%s\n"
               "sink = tcp:127.0.0.1:%u\n",
               small, port);
    expect_log(&w, "cannot connect");
    lfd = h_listen(false, port);
    assert_true(lfd >= 0);
    fd = h_accept(lfd, WAIT);
    assert_true(fd >= 0);
    assert_int_equal(h_drain(fd, hex, UINT64_MAX, WAIT), SMALL);
    assert_string_equal(hex, small_hex);
    close(fd);
    close(lfd);
    expect_exit(&w, 0, false);
}

/* The peer goes away after part of the file: the new connection carries
 * the file from the offset the log names, which is no later than what the
 * first connection received. */
static void test_peer_goes_away(void **state)
{
    uint16_t port = h_free_port(false);
    int lfd = h_listen(false, port), fd;
    struct linger lg = {1, 0};
    unsigned long long resume = 0;
    struct h_weir w;
    char *t, *p;
    int64_t first, second;
    char hex[65], want[65];
    struct sha256 s;
    FILE *f;
    static uint8_t rest[BIG];

    (void)state;
    assert_true(lfd >= 0);
    start_conf(&w, "goes_away",
               "[pipeline p]\nsource = file:%s\n"
               "sink = tcp:127.0.0.1:%u\n",
               big, port);
    fd = h_accept(lfd, WAIT);
    assert_true(fd >= 0);
    first = h_drain(fd, NULL, 3u << 20, WAIT);
    assert_int_equal(first, 3u << 20);
    setsockopt(fd, SOL_SOCKET, SO_LINGER, &lg, sizeof(lg));
    close(fd); /* a reset */
    fd = h_accept(lfd, WAIT);
    assert_true(fd >= 0);
    expect_log(&w, "resending from byte ");
    t = h_slurp(w.log);
    p = strstr(t, "resending from byte ");
    resume = strtoull(p + strlen("resending from byte "), NULL, 10);
    free(t);
    /* What the first peer's kernel acknowledged, which may be more than
     * it handed to this test before the reset (its receive buffer) or,
     * with a delayed ack, a little less. */
    assert_true(resume > 0 && resume < BIG);
    second = h_drain(fd, hex, UINT64_MAX, WAIT);
    assert_int_equal((uint64_t)second, BIG - resume);
    f = fopen(big, "r");
    fseek(f, (long)resume, SEEK_SET);
    assert_int_equal(fread(rest, 1, (size_t)second, f), (size_t)second);
    fclose(f);
    sha256_init(&s);
    sha256_update(&s, rest, (size_t)second);
    sha256_hex(&s, want);
    assert_string_equal(hex, want);
    close(fd);
    close(lfd);
    expect_exit(&w, 0, false);
}

static void test_client_disconnects(void **state)
{
    uint16_t port = h_free_port(false);
    static struct client c[3];
    struct linger lg = {1, 0};
    struct sockaddr_in me;
    socklen_t len = sizeof(me);
    char needle[64];
    struct h_weir w;
    char *t;
    int fd;

    (void)state;
    start_conf(&w, "disconnect",
               "[daemon]\nlog_level = info\n"
               "[pipeline p]\nsource = file:%s\n"
               "sink = tcp-listen:127.0.0.1:%u\n",
               big, port);
    fd = h_connect(false, port, NULL, WAIT);
    assert_true(fd >= 0);
    for (int i = 0; i < 3; i++) {
        c[i] = (struct client){.port = port};
        assert_int_equal(pthread_create(&c[i].th, NULL, client_run, &c[i]), 0);
    }
    assert_int_equal(h_drain(fd, NULL, 1u << 20, WAIT), 1u << 20);
    getsockname(fd, (struct sockaddr *)&me, &len);
    setsockopt(fd, SOL_SOCKET, SO_LINGER, &lg, sizeof(lg));
    close(fd);
    snprintf(needle, sizeof(needle), "client 127.0.0.1:%u", ntohs(me.sin_port));
    for (int i = 0; i < 3; i++) {
        pthread_join(c[i].th, NULL);
        assert_int_equal(c[i].got, BIG);
        assert_string_equal(c[i].hex, big_hex);
    }
    expect_log(&w, needle);
    expect_exit(&w, 0, true);
    t = h_slurp(w.log);
    if (h_count(t, needle) != 1)
        fprintf(stderr, "expected one line for %s:\n%s\n", needle, t);
    assert_int_equal(h_count(t, needle), 1);
    free(t);
}

static void test_max_clients(void **state)
{
    uint16_t port = h_free_port(false);
    struct h_weir w;
    int a, b;

    (void)state;
    start_conf(&w, "max_clients",
               "[pipeline p]\nsource = file:%s\n"
               "sink = tcp-listen:127.0.0.1:%u,"
               "max_clients=1\n",
               big, port);
    a = h_connect(false, port, NULL, WAIT);
    assert_true(a >= 0);
    expect_log(&w, "connected");
    b = h_connect(false, port, NULL, WAIT);
    assert_true(b >= 0);
    assert_int_equal(h_drain(b, NULL, UINT64_MAX, WAIT), 0);
    expect_log(&w, "max_clients=1 reached");
    close(b);
    assert_int_equal(h_drain(a, NULL, UINT64_MAX, WAIT), BIG);
    close(a);
    expect_exit(&w, 0, true);
}

static void test_pipe_file_to_tcp(void **state)
{
    uint16_t port = h_free_port(false);
    int lfd = h_listen(false, port), fd;
    char src[620], sink[64], log[600], hex[65];
    struct h_weir w;

    (void)state;
    assert_true(lfd >= 0);
    snprintf(src, sizeof(src), "file:%s", big);
    snprintf(sink, sizeof(sink), "tcp:127.0.0.1:%u", port);
    path(log, sizeof(log), "pipe_out.log");
    h_spawn(&w, (char *const[]){"weir", "pipe", src, sink, NULL}, log);
    fd = h_accept(lfd, WAIT);
    assert_true(fd >= 0);
    assert_int_equal(h_drain(fd, hex, UINT64_MAX, WAIT), BIG);
    assert_string_equal(hex, big_hex);
    close(fd);
    close(lfd);
    expect_exit(&w, 0, false);
    expect_log(&w, "weir pipe: 67108864 bytes in ");
}

static void test_pipe_tcp_to_file(void **state)
{
    uint16_t port = h_free_port(false);
    char src[64], sink[620], out[600], log[600], hex[65];
    uint64_t size;
    struct h_weir w;
    int fd;

    (void)state;
    path(out, sizeof(out), "pipe_in.bin");
    path(log, sizeof(log), "pipe_in.log");
    snprintf(src, sizeof(src), "tcp-listen:127.0.0.1:%u", port);
    snprintf(sink, sizeof(sink), "file:%s", out);
    h_spawn(&w, (char *const[]){"weir", "pipe", src, sink, NULL}, log);
    fd = h_connect(false, port, NULL, WAIT);
    assert_true(fd >= 0);
    assert_true(h_send_file(fd, small));
    close(fd);
    expect_exit(&w, 0, false);
    expect_log(&w, "weir pipe: 4194304 bytes in ");
    assert_true(h_file_sha(out, hex, &size));
    assert_int_equal(size, SMALL);
    assert_string_equal(hex, small_hex);
}

static void test_pipe_fails(void **state)
{
    uint16_t port = h_free_port(false);
    char src[620], sink[64], log[600];
    struct h_weir w;

    (void)state;
    path(log, sizeof(log), "pipe_fail.log");
    snprintf(src, sizeof(src), "file:%s", small);
    snprintf(sink, sizeof(sink), "tcp:127.0.0.1:%u", port);
    h_spawn(&w, (char *const[]){"weir", "pipe", src, sink, NULL}, log);
    expect_exit(&w, 1, false);
    expect_log(&w, "weir pipe: failed: Connection refused");
}

/* The splice stage (WEIR_SENDPATH=splice): served clients and weir pipe's
 * tcp sink, every byte right. */
static void test_splice_stage(void **state)
{
    enum { N = 8 };
    uint16_t port = h_free_port(false), port2 = h_free_port(false);
    static struct client c[N];
    char src[620], sink[64], log[600], hex[65];
    struct h_weir w, p;
    int lfd, fd;

    (void)state;
    setenv("WEIR_SENDPATH", "splice", 1);
    start_conf(&w, "splice",
               "[pipeline p]\nsource = file:%s\n"
               "sink = tcp-listen:127.0.0.1:%u\n",
               big, port);
    lfd = h_listen(false, port2);
    snprintf(src, sizeof(src), "file:%s", big);
    snprintf(sink, sizeof(sink), "tcp:127.0.0.1:%u", port2);
    path(log, sizeof(log), "splice_pipe.log");
    h_spawn(&p, (char *const[]){"weir", "pipe", src, sink, NULL}, log);
    unsetenv("WEIR_SENDPATH");
    for (int i = 0; i < N; i++) {
        c[i] = (struct client){.port = port};
        assert_int_equal(pthread_create(&c[i].th, NULL, client_run, &c[i]), 0);
    }
    fd = h_accept(lfd, WAIT);
    assert_true(fd >= 0);
    assert_int_equal(h_drain(fd, hex, UINT64_MAX, WAIT), BIG);
    assert_string_equal(hex, big_hex);
    close(fd);
    close(lfd);
    expect_exit(&p, 0, false);
    expect_log(&p, "weir pipe: 67108864 bytes in ");
    for (int i = 0; i < N; i++) {
        pthread_join(c[i].th, NULL);
        assert_int_equal(c[i].got, BIG);
        assert_string_equal(c[i].hex, big_hex);
    }
    expect_exit(&w, 0, true);
}

/* stdin and stdout: weir pipe stdin stdout copies its input whole. */
static void test_pipe_stdio(void **state)
{
    char out[600], log[600], hex[65];
    uint64_t size;
    struct h_weir w;

    (void)state;
    path(out, sizeof(out), "stdout.bin");
    path(log, sizeof(log), "stdio.log");
    h_spawn_io(&w, (char *const[]){"weir", "pipe", "stdin", "stdout", NULL},
               log, small, out);
    expect_exit(&w, 0, false);
    assert_true(h_file_sha(out, hex, &size));
    assert_int_equal(size, SMALL);
    assert_string_equal(hex, small_hex);
}

/* A listen address already taken: weir says so and exits 1. */
static void test_listen_in_use(void **state)
{
    uint16_t port = h_free_port(false);
    int lfd = h_listen(false, port);
    struct h_weir w;

    (void)state;
    assert_true(lfd >= 0);
    start_conf(&w, "in_use",
               "[pipeline p]\nsource = file:%s\n"
               "sink = tcp-listen:127.0.0.1:%u\n",
               small, port);
    expect_exit(&w, 1, false);
    expect_log(&w, "cannot listen on tcp-listen:127.0.0.1:");
    close(lfd);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_teardown(test_file_to_tcp, h_teardown),
        cmocka_unit_test_teardown(test_serve_50_clients, h_teardown),
        cmocka_unit_test_teardown(test_listen_source_to_file, h_teardown),
        cmocka_unit_test_teardown(test_proxy, h_teardown),
        cmocka_unit_test_teardown(test_unix_socket, h_teardown),
        cmocka_unit_test_teardown(test_ipv6, h_teardown),
        cmocka_unit_test_teardown(test_follow, h_teardown),
        cmocka_unit_test_teardown(test_follow_truncation, h_teardown),
        cmocka_unit_test_teardown(test_two_sinks, h_teardown),
        cmocka_unit_test_teardown(test_peer_down_at_start, h_teardown),
        cmocka_unit_test_teardown(test_peer_goes_away, h_teardown),
        cmocka_unit_test_teardown(test_client_disconnects, h_teardown),
        cmocka_unit_test_teardown(test_max_clients, h_teardown),
        cmocka_unit_test_teardown(test_pipe_file_to_tcp, h_teardown),
        cmocka_unit_test_teardown(test_pipe_tcp_to_file, h_teardown),
        cmocka_unit_test_teardown(test_pipe_fails, h_teardown),
        cmocka_unit_test_teardown(test_splice_stage, h_teardown),
        cmocka_unit_test_teardown(test_pipe_stdio, h_teardown),
        cmocka_unit_test_teardown(test_listen_in_use, h_teardown),
    };
    int rc;

    signal(SIGPIPE, SIG_IGN);
    if (!mkdtemp(dir)) {
        perror("mkdtemp");
        return 1;
    }
    path(big, sizeof(big), "big.bin");
    path(small, sizeof(small), "small.bin");
    h_make_file(big, BIG, 1, big_hex);
    h_make_file(small, SMALL, 2, small_hex);
    if (getenv("TEST_FILTER"))
        cmocka_set_test_filter(getenv("TEST_FILTER"));
    rc = cmocka_run_group_tests(tests, NULL, NULL);
    h_rm_tree(dir);
    return rc;
}
