/*
 * test_run.c - the run path of the real binary (WEIR_BIN): files, tcp on
 * 127.0.0.1 and ::1, unix sockets, the file server, the proxy, follow,
 * reconnects, a client that leaves, and `weir pipe`. Every byte is checked
 * by SHA-256 and every wait is bounded.
 */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>

#include "harness.h"

#define BIG   (64u << 20)
#define SMALL (4u << 20)
#define WAIT  30000 /* ms: generous for sanitizer builds on a busy box */

static char big[600], small[600];
static char big_hex[65], small_hex[65];

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
    h_start_conf(&w, "file_to_tcp", H_CONF_VERBOSE,
                 "[pipeline p]\nsource = file:%s\n"
                 "sink = tcp:127.0.0.1:%u\n",
                 big, port);
    fd = h_accept(lfd, WAIT);
    assert_true(fd >= 0);
    assert_int_equal(h_drain(fd, hex, UINT64_MAX, WAIT), BIG);
    assert_string_equal(hex, big_hex);
    close(fd);
    close(lfd);
    h_expect_exit(&w, 0, false, WAIT);
}

static void test_serve_50_clients(void **state)
{
    enum { N = 50 };
    uint16_t port = h_free_port(false);
    /* Static: a failed assertion leaves this frame while threads run. */
    static struct h_client c[N];
    struct h_weir w;

    (void)state;
    h_start_conf(&w, "serve", H_CONF_VERBOSE,
                 "[pipeline p]\nsource = file:%s\n"
                 "sink = tcp-listen:127.0.0.1:%u\n",
                 small, port);
    h_expect_log(&w, "listening on", WAIT);
    for (int i = 0; i < N; i++) {
        c[i] = (struct h_client){.port = port};
        h_client_start(&c[i], WAIT);
    }
    for (int i = 0; i < N; i++) {
        h_client_join(&c[i]);
        assert_int_equal(c[i].got, SMALL);
        assert_string_equal(c[i].hex, small_hex);
    }
    h_expect_exit(&w, 0, true, WAIT);
}

static void test_listen_source_to_file(void **state)
{
    uint16_t port = h_free_port(false);
    char out[600], hex[65];
    uint64_t size;
    struct h_weir w;
    int fd;

    (void)state;
    h_path(out, sizeof(out), "received.bin");
    h_start_conf(&w, "to_file", H_CONF_VERBOSE,
                 "[pipeline p]\nsource = tcp-listen:127.0.0.1:%u\n"
                 "sink = file:%s\n",
                 port, out);
    fd = h_connect(false, port, NULL, WAIT);
    assert_true(fd >= 0);
    assert_true(h_send_file(fd, small));
    close(fd);
    h_expect_log(&w, "done, 4194304 bytes", WAIT);
    h_expect_exit(&w, 0, true, WAIT);
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
    h_start_conf(&w, "proxy", H_CONF_VERBOSE,
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
    h_expect_exit(&w, 0, true, WAIT);
}

static void test_unix_socket(void **state)
{
    char sock[600];
    struct h_client c = {0};
    struct h_weir w;

    (void)state;
    h_path(sock, sizeof(sock), "serve.sock");
    h_start_conf(&w, "unix", H_CONF_VERBOSE,
                 "[pipeline p]\nsource = file:%s\n"
                 "sink = unix-listen:%s\n",
                 small, sock);
    c.unix_path = sock;
    h_client_run(&c, WAIT);
    assert_int_equal(c.got, SMALL);
    assert_string_equal(c.hex, small_hex);
    h_expect_exit(&w, 0, true, WAIT);
}

static void test_ipv6(void **state)
{
    int probe = h_listen(true, 0);
    struct h_client c = {.v6 = true};
    struct h_weir w;

    (void)state;
    if (probe < 0)
        skip(); /* no ::1 here */
    close(probe);
    c.port = h_free_port(true);
    h_start_conf(&w, "ipv6", H_CONF_VERBOSE,
                 "[pipeline p]\nsource = file:%s\n"
                 "sink = tcp-listen:[::1]:%u\n",
                 small, c.port);
    h_client_run(&c, WAIT);
    assert_int_equal(c.got, SMALL);
    assert_string_equal(c.hex, small_hex);
    h_expect_exit(&w, 0, true, WAIT);
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
    h_path(all, sizeof(all), "follow_all.bin");
    h_path(logf, sizeof(logf), "follow.log.bin");
    h_make_file(all, 2u << 20, 7, all_hex);
    unlink(logf);
    append_range(logf, all, 0, 1 << 20);
    h_start_conf(&w, "follow", H_CONF_VERBOSE,
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
    h_expect_exit(&w, 0, true, WAIT);
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
    h_path(out, sizeof(out), "tee_copy.bin");
    h_start_conf(&w, "two_sinks", H_CONF_VERBOSE,
                 "[pipeline p]\nsource = file:%s\n"
                 "sink = tcp:127.0.0.1:%u\nsink = file:%s\n",
                 big, port, out);
    fd = h_accept(lfd, WAIT);
    assert_true(fd >= 0);
    assert_int_equal(h_drain(fd, hex, UINT64_MAX, WAIT), BIG);
    assert_string_equal(hex, big_hex);
    close(fd);
    close(lfd);
    h_expect_exit(&w, 0, false, WAIT);
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
    h_path(f, sizeof(f), "rotated.bin");
    h_make_file(f, 1u << 20, 11, a_hex);
    h_start_conf(&w, "truncation", H_CONF_VERBOSE,
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
    h_expect_exit(&w, 0, true, WAIT);
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
    h_start_conf(&w, "down_at_start", H_CONF_VERBOSE,
                 "[pipeline p]\nsource = file:%s\n"
                 "sink = tcp:127.0.0.1:%u\n",
                 small, port);
    h_expect_log(&w, "cannot connect", WAIT);
    lfd = h_listen(false, port);
    assert_true(lfd >= 0);
    fd = h_accept(lfd, WAIT);
    assert_true(fd >= 0);
    assert_int_equal(h_drain(fd, hex, UINT64_MAX, WAIT), SMALL);
    assert_string_equal(hex, small_hex);
    close(fd);
    close(lfd);
    h_expect_exit(&w, 0, false, WAIT);
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
    h_start_conf(&w, "goes_away", H_CONF_VERBOSE,
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
    h_expect_log(&w, "resending from byte ", WAIT);
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
    h_expect_exit(&w, 0, false, WAIT);
}

static void test_client_disconnects(void **state)
{
    uint16_t port = h_free_port(false);
    static struct h_client c[3];
    struct linger lg = {1, 0};
    struct sockaddr_in me;
    socklen_t len = sizeof(me);
    char needle[64];
    struct h_weir w;
    char *t;
    int fd;

    (void)state;
    h_start_conf(&w, "disconnect", H_CONF_VERBOSE,
                 "[daemon]\nlog_level = info\n"
                 "[pipeline p]\nsource = file:%s\n"
                 "sink = tcp-listen:127.0.0.1:%u\n",
                 big, port);
    fd = h_connect(false, port, NULL, WAIT);
    assert_true(fd >= 0);
    for (int i = 0; i < 3; i++) {
        c[i] = (struct h_client){.port = port};
        h_client_start(&c[i], WAIT);
    }
    assert_int_equal(h_drain(fd, NULL, 1u << 20, WAIT), 1u << 20);
    getsockname(fd, (struct sockaddr *)&me, &len);
    setsockopt(fd, SOL_SOCKET, SO_LINGER, &lg, sizeof(lg));
    close(fd);
    snprintf(needle, sizeof(needle), "client 127.0.0.1:%u", ntohs(me.sin_port));
    for (int i = 0; i < 3; i++) {
        h_client_join(&c[i]);
        assert_int_equal(c[i].got, BIG);
        assert_string_equal(c[i].hex, big_hex);
    }
    h_expect_log(&w, needle, WAIT);
    h_expect_exit(&w, 0, true, WAIT);
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
    h_start_conf(&w, "max_clients", H_CONF_VERBOSE,
                 "[pipeline p]\nsource = file:%s\n"
                 "sink = tcp-listen:127.0.0.1:%u,"
                 "max_clients=1\n",
                 big, port);
    a = h_connect(false, port, NULL, WAIT);
    assert_true(a >= 0);
    h_expect_log(&w, "connected", WAIT);
    b = h_connect(false, port, NULL, WAIT);
    assert_true(b >= 0);
    assert_int_equal(h_drain(b, NULL, UINT64_MAX, WAIT), 0);
    h_expect_log(&w, "max_clients=1 reached", WAIT);
    close(b);
    assert_int_equal(h_drain(a, NULL, UINT64_MAX, WAIT), BIG);
    close(a);
    h_expect_exit(&w, 0, true, WAIT);
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
    h_path(log, sizeof(log), "pipe_out.log");
    h_spawn(&w, (char *const[]){"weir", "-v", "pipe", src, sink, NULL}, log);
    fd = h_accept(lfd, WAIT);
    assert_true(fd >= 0);
    assert_int_equal(h_drain(fd, hex, UINT64_MAX, WAIT), BIG);
    assert_string_equal(hex, big_hex);
    close(fd);
    close(lfd);
    h_expect_exit(&w, 0, false, WAIT);
    h_expect_log(&w, "weir pipe: 67108864 bytes in ", WAIT);
}

static void test_pipe_tcp_to_file(void **state)
{
    uint16_t port = h_free_port(false);
    char src[64], sink[620], out[600], log[600], hex[65];
    uint64_t size;
    struct h_weir w;
    int fd;

    (void)state;
    h_path(out, sizeof(out), "pipe_in.bin");
    h_path(log, sizeof(log), "pipe_in.log");
    snprintf(src, sizeof(src), "tcp-listen:127.0.0.1:%u", port);
    snprintf(sink, sizeof(sink), "file:%s", out);
    h_spawn(&w, (char *const[]){"weir", "-v", "pipe", src, sink, NULL}, log);
    fd = h_connect(false, port, NULL, WAIT);
    assert_true(fd >= 0);
    assert_true(h_send_file(fd, small));
    close(fd);
    h_expect_exit(&w, 0, false, WAIT);
    h_expect_log(&w, "weir pipe: 4194304 bytes in ", WAIT);
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
    h_path(log, sizeof(log), "pipe_fail.log");
    snprintf(src, sizeof(src), "file:%s", small);
    snprintf(sink, sizeof(sink), "tcp:127.0.0.1:%u", port);
    h_spawn(&w, (char *const[]){"weir", "-v", "pipe", src, sink, NULL}, log);
    h_expect_exit(&w, 1, false, WAIT);
    h_expect_log(&w, "weir pipe: failed: Connection refused", WAIT);
}

/* The splice stage (WEIR_SENDPATH=splice): served clients and weir pipe's
 * tcp sink, every byte right. */
static void test_splice_stage(void **state)
{
    enum { N = 8 };
    uint16_t port = h_free_port(false), port2 = h_free_port(false);
    static struct h_client c[N];
    char src[620], sink[64], log[600], hex[65];
    struct h_weir w, p;
    int lfd, fd;

    (void)state;
    setenv("WEIR_SENDPATH", "splice", 1);
    h_start_conf(&w, "splice", H_CONF_VERBOSE,
                 "[pipeline p]\nsource = file:%s\n"
                 "sink = tcp-listen:127.0.0.1:%u\n",
                 big, port);
    lfd = h_listen(false, port2);
    snprintf(src, sizeof(src), "file:%s", big);
    snprintf(sink, sizeof(sink), "tcp:127.0.0.1:%u", port2);
    h_path(log, sizeof(log), "splice_pipe.log");
    h_spawn(&p, (char *const[]){"weir", "-v", "pipe", src, sink, NULL}, log);
    unsetenv("WEIR_SENDPATH");
    for (int i = 0; i < N; i++) {
        c[i] = (struct h_client){.port = port};
        h_client_start(&c[i], WAIT);
    }
    fd = h_accept(lfd, WAIT);
    assert_true(fd >= 0);
    assert_int_equal(h_drain(fd, hex, UINT64_MAX, WAIT), BIG);
    assert_string_equal(hex, big_hex);
    close(fd);
    close(lfd);
    h_expect_exit(&p, 0, false, WAIT);
    h_expect_log(&p, "weir pipe: 67108864 bytes in ", WAIT);
    for (int i = 0; i < N; i++) {
        h_client_join(&c[i]);
        assert_int_equal(c[i].got, BIG);
        assert_string_equal(c[i].hex, big_hex);
    }
    h_expect_exit(&w, 0, true, WAIT);
}

/* stdin and stdout: weir pipe stdin stdout copies its input whole. */
static void test_pipe_stdio(void **state)
{
    char out[600], log[600], hex[65];
    uint64_t size;
    struct h_weir w;

    (void)state;
    h_path(out, sizeof(out), "stdout.bin");
    h_path(log, sizeof(log), "stdio.log");
    h_spawn_io(&w,
               (char *const[]){"weir", "-v", "pipe", "stdin", "stdout", NULL},
               log, small, out);
    h_expect_exit(&w, 0, false, WAIT);
    assert_true(h_file_sha(out, hex, &size));
    assert_int_equal(size, SMALL);
    assert_string_equal(hex, small_hex);
}

/* A listen address already taken: weir says so, names the process that
 * holds it (this test), as --check does, and exits 1. */
static void test_listen_in_use(void **state)
{
    uint16_t port = h_free_port(false);
    int lfd = h_listen(false, port);
    struct h_weir w;
    char want[128];

    (void)state;
    assert_true(lfd >= 0);
    h_start_conf(&w, "in_use", H_CONF_VERBOSE,
                 "[pipeline p]\nsource = file:%s\n"
                 "sink = tcp-listen:127.0.0.1:%u\n",
                 small, port);
    h_expect_exit(&w, 1, false, WAIT);
    snprintf(want, sizeof(want),
             "cannot listen on tcp-listen:127.0.0.1:%u: it is in use by pid "
             "%ld (",
             port, (long)getpid());
    h_expect_log(&w, want, WAIT);
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

    if (h_begin("run") != 0)
        return 1;
    h_path(big, sizeof(big), "big.bin");
    h_path(small, sizeof(small), "small.bin");
    h_make_file(big, BIG, 1, big_hex);
    h_make_file(small, SMALL, 2, small_hex);
    rc = cmocka_run_group_tests(tests, NULL, NULL);
    h_end();
    return rc;
}
