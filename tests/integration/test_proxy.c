/*
 * test_proxy.c - the proxy carries both directions: a listen source with
 * one tcp/unix sink relays what the upstream sends back to its client,
 * with half-closes passed along and an error on either side ending both.
 * The upstreams are small servers on threads of this test (echo, a
 * greeting, one that closes first, one that resets); every byte is checked
 * by SHA-256 and every wait is bounded.
 */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>

#include <cmocka.h>

#include "harness.h"

#define WAIT     30000 /* ms: generous for sanitizer builds on a busy box */
#define MAX_CONN 64

/* ---- upstream servers on threads ---- */

enum up_mode {
    UP_ECHO,        /* sends back what it reads; at EOF shuts down its side */
    UP_GREET,       /* speaks first, then reads to EOF and closes */
    UP_CLOSE_FIRST, /* sends its data and closes without reading */
    UP_RESET,       /* reads a little, then resets the connection */
};

#define GREETING_LEN (300u * 1024)
#define FIRST_LEN    (2u << 20)

struct upstream {
    enum up_mode mode;
    int lfd;
    pthread_t th;
    atomic_bool stop;
    pthread_t conn[MAX_CONN];
    int conn_fd[MAX_CONN];
    unsigned nconn;
    atomic_uint accepted;
    atomic_ullong got; /* bytes read from clients (UP_GREET) */
};

struct up_conn {
    struct upstream *u;
    int fd;
};

static void *up_conn_run(void *arg)
{
    struct up_conn *c = arg;
    struct upstream *u = c->u;
    static _Thread_local uint8_t buf[1 << 16];
    int fd = c->fd;
    ssize_t n;

    free(c);
    switch (u->mode) {
    case UP_ECHO:
        while ((n = read(fd, buf, sizeof(buf))) > 0)
            if (!h_write_all(fd, buf, (size_t)n))
                break;
        shutdown(fd, SHUT_WR);
        break;
    case UP_GREET:
        if (!h_send_seeded(fd, GREETING_LEN, 7, NULL))
            break;
        while ((n = read(fd, buf, sizeof(buf))) > 0)
            atomic_fetch_add(&u->got, (unsigned long long)n);
        shutdown(fd, SHUT_WR);
        break;
    case UP_CLOSE_FIRST:
        h_send_seeded(fd, FIRST_LEN, 9, NULL);
        break;
    case UP_RESET: {
        struct linger l = {.l_onoff = 1, .l_linger = 0};

        (void)read(fd, buf, 1);
        setsockopt(fd, SOL_SOCKET, SO_LINGER, &l, sizeof(l));
        break;
    }
    }
    /* The fd closes when the test stops the server, after the client saw
     * the end: closing it here could reset what is still unread. */
    return NULL;
}

static void *up_accept_run(void *arg)
{
    struct upstream *u = arg;

    while (!atomic_load(&u->stop)) {
        struct pollfd p = {.fd = u->lfd, .events = POLLIN};
        struct up_conn *c;
        int fd;

        if (poll(&p, 1, 50) != 1)
            continue;
        fd = accept4(u->lfd, NULL, NULL, SOCK_CLOEXEC);
        if (fd < 0)
            continue;
        if (u->nconn == MAX_CONN || !(c = malloc(sizeof(*c)))) {
            close(fd);
            continue;
        }
        *c = (struct up_conn){.u = u, .fd = fd};
        u->conn_fd[u->nconn] = fd;
        if (pthread_create(&u->conn[u->nconn], NULL, up_conn_run, c) != 0) {
            free(c);
            close(fd);
            continue;
        }
        if (u->mode == UP_RESET || u->mode == UP_CLOSE_FIRST) {
            /* These close the connection as soon as they are done (a
             * reset, or the end after the data). */
            pthread_join(u->conn[u->nconn], NULL);
            close(fd);
            atomic_fetch_add(&u->accepted, 1);
            continue;
        }
        u->nconn++;
        atomic_fetch_add(&u->accepted, 1);
    }
    return NULL;
}

/* Starts a server: on loopback:port (v4 or v6), or on a unix path. */
static void up_start(struct upstream *u, enum up_mode mode, bool v6,
                     uint16_t port, const char *unix_path)
{
    memset(u, 0, sizeof(*u));
    u->mode = mode;
    u->lfd = unix_path ? h_listen_unix(unix_path) : h_listen(v6, port);
    assert_true(u->lfd >= 0);
    assert_int_equal(pthread_create(&u->th, NULL, up_accept_run, u), 0);
}

static void up_stop(struct upstream *u)
{
    atomic_store(&u->stop, true);
    pthread_join(u->th, NULL);
    for (unsigned i = 0; i < u->nconn; i++) {
        /* A reader still blocked sees EOF. */
        shutdown(u->conn_fd[i], SHUT_RDWR);
        pthread_join(u->conn[i], NULL);
        close(u->conn_fd[i]);
    }
    close(u->lfd);
}

/* ---- clients ---- */

static void run_echo_clients(unsigned n, bool v6, uint16_t port,
                             const char *unix_path, size_t len)
{
    /* Static: a failed assertion leaves this frame while threads run. */
    static struct h_client c[32];

    assert_true(n <= 32);
    for (unsigned i = 0; i < n; i++) {
        c[i] = (struct h_client){.v6 = v6,
                                 .port = port,
                                 .unix_path = unix_path,
                                 .send = true,
                                 .send_len = len + i * 4099,
                                 .seed = 1000 + i};
        h_client_start(&c[i], WAIT);
    }
    for (unsigned i = 0; i < n; i++)
        h_client_join(&c[i]);
    for (unsigned i = 0; i < n; i++) {
        assert_true(c[i].sent);
        assert_int_equal(c[i].got, (int64_t)c[i].send_len);
        assert_string_equal(c[i].hex, c[i].sent_hex);
    }
}

/* ---- tests ---- */

/* 20 clients each send their own bytes through weir to an echo server,
 * half-close, and get exactly those bytes back. */
static void test_echo_20_clients(void **state)
{
    uint16_t front = h_free_port(false), back = h_free_port(false);
    static struct upstream u;
    struct h_weir w;

    (void)state;
    up_start(&u, UP_ECHO, false, back, NULL);
    h_start_conf(&w, "echo", H_CONF_VERBOSE,
                 "[pipeline p]\nsource = tcp-listen:127.0.0.1:%u\n"
                 "sink = tcp:127.0.0.1:%u\nhigh_water_mark = 256KiB\n",
                 front, back);
    h_expect_log(&w, "listening on", WAIT);
    run_echo_clients(20, false, front, NULL, 1u << 20);
    assert_int_equal(atomic_load(&u.accepted), 20);
    h_expect_exit(&w, 0, true, WAIT);
    up_stop(&u);
}

/* The server speaks first: its greeting reaches a client that has sent
 * nothing yet; then the client's bytes reach the server. */
static void test_server_speaks_first(void **state)
{
    uint16_t front = h_free_port(false), back = h_free_port(false);
    static struct upstream u;
    char want[65], hex[65];
    struct h_weir w;
    int fd;

    (void)state;
    h_seeded_hex(GREETING_LEN, 7, want);
    up_start(&u, UP_GREET, false, back, NULL);
    h_start_conf(&w, "greet", H_CONF_VERBOSE,
                 "[pipeline p]\nsource = tcp-listen:127.0.0.1:%u\n"
                 "sink = tcp:127.0.0.1:%u\n",
                 front, back);
    fd = h_connect(false, front, NULL, WAIT);
    assert_true(fd >= 0);
    assert_int_equal(h_drain(fd, hex, GREETING_LEN, WAIT), GREETING_LEN);
    assert_string_equal(hex, want);
    assert_true(h_send_seeded(fd, 12345, 3, NULL));
    shutdown(fd, SHUT_WR);
    /* The server reads to EOF and closes: the client sees the end. */
    assert_int_equal(h_drain(fd, NULL, UINT64_MAX, WAIT), 0);
    close(fd);
    assert_int_equal(atomic_load(&u.got), 12345);
    h_expect_log(&w, "done, 12345 bytes", WAIT);
    h_expect_exit(&w, 0, true, WAIT);
    up_stop(&u);
}

/* The upstream sends its data and closes before the client has said
 * anything: the client gets all of it, then the end. */
static void test_upstream_closes_first(void **state)
{
    uint16_t front = h_free_port(false), back = h_free_port(false);
    static struct upstream u;
    char want[65], hex[65];
    struct h_weir w;
    int fd;

    (void)state;
    h_seeded_hex(FIRST_LEN, 9, want);
    up_start(&u, UP_CLOSE_FIRST, false, back, NULL);
    h_start_conf(&w, "first", H_CONF_VERBOSE,
                 "[pipeline p]\nsource = tcp-listen:127.0.0.1:%u\n"
                 "sink = tcp:127.0.0.1:%u\nhigh_water_mark = 64KiB\n",
                 front, back);
    fd = h_connect(false, front, NULL, WAIT);
    assert_true(fd >= 0);
    /* Give the upstream a moment to send and close before reading a
     * byte (it may not get that far: the socket buffers and weir's
     * high-water mark hold less than its data on some machines, and then
     * it closes while this reads). Either way the client gets the data,
     * then the end. */
    for (int64_t end = h_now_ms() + 2000;
         atomic_load(&u.accepted) < 1 && h_now_ms() < end;)
        h_sleep_ms(10);
    assert_int_equal(h_drain(fd, hex, UINT64_MAX, WAIT), FIRST_LEN);
    assert_string_equal(hex, want);
    close(fd);
    h_expect_log(&w, "done, 0 bytes", WAIT);
    h_expect_exit(&w, 0, true, WAIT);
    up_stop(&u);
}

/* An upstream that resets: the client's connection ends too (no hang),
 * with one warning line for it. */
static void test_upstream_resets(void **state)
{
    uint16_t front = h_free_port(false), back = h_free_port(false);
    static struct upstream u;
    struct h_weir w;
    uint8_t b[4096];
    int64_t end;
    ssize_t n;
    char *t;
    int fd;

    (void)state;
    up_start(&u, UP_RESET, false, back, NULL);
    h_start_conf(&w, "reset", H_CONF_VERBOSE,
                 "[pipeline p]\nsource = tcp-listen:127.0.0.1:%u\n"
                 "sink = tcp:127.0.0.1:%u\n",
                 front, back);
    fd = h_connect(false, front, NULL, WAIT);
    assert_true(fd >= 0);
    assert_true(h_write_all(fd, "x", 1));
    /* Read until the end or an error; never past the bound. */
    end = h_now_ms() + WAIT;
    do {
        struct pollfd p = {.fd = fd, .events = POLLIN};

        assert_int_equal(poll(&p, 1, WAIT), 1);
        n = read(fd, b, sizeof(b));
    } while (n > 0 && h_now_ms() < end);
    assert_true(n <= 0);
    close(fd);
    h_expect_log(&w, "Connection reset by peer", WAIT);
    h_expect_exit(&w, 0, true, WAIT);
    t = h_slurp(w.log);
    assert_int_equal(h_count(t, "warning: pipeline p: client"), 1);
    free(t);
    up_stop(&u);
}

/* A transform applies to what the client sends only: through an echo
 * upstream, lowercase text comes back uppercased once, not twice
 * transformed or left as it was. */
static void test_transform_forward_only(void **state)
{
    enum { REPEAT = 8000 };
    static const char line[] = "the quick brown fox, 0123456789\n";
    uint16_t front = h_free_port(false), back = h_free_port(false);
    static struct upstream u;
    char want[65], hex[65], upper[sizeof(line)];
    struct sha256 s;
    struct h_weir w;
    int fd;

    (void)state;
    for (size_t i = 0; i < sizeof(line); i++)
        upper[i] = line[i] >= 'a' && line[i] <= 'z' ? line[i] - 32 : line[i];
    sha256_init(&s);
    for (int i = 0; i < REPEAT; i++)
        sha256_update(&s, upper, sizeof(line) - 1);
    sha256_hex(&s, want);
    up_start(&u, UP_ECHO, false, back, NULL);
    h_start_conf(&w, "xform", H_CONF_VERBOSE,
                 "[pipeline p]\nsource = tcp-listen:127.0.0.1:%u\n"
                 "transform = uppercase\nsink = tcp:127.0.0.1:%u\n",
                 front, back);
    fd = h_connect(false, front, NULL, WAIT);
    assert_true(fd >= 0);
    /* Small enough for the socket buffers: sent whole before reading. */
    for (int i = 0; i < REPEAT; i++)
        assert_true(h_write_all(fd, line, sizeof(line) - 1));
    shutdown(fd, SHUT_WR);
    assert_int_equal(h_drain(fd, hex, UINT64_MAX, WAIT),
                     REPEAT * (sizeof(line) - 1));
    assert_string_equal(hex, want);
    close(fd);
    h_expect_exit(&w, 0, true, WAIT);
    up_stop(&u);
}

/* Unix sockets on both sides. */
static void test_unix(void **state)
{
    char front[600], back[600];
    static struct upstream u;
    struct h_weir w;

    (void)state;
    h_path(front, sizeof(front), "front.sock");
    h_path(back, sizeof(back), "back.sock");
    up_start(&u, UP_ECHO, false, 0, back);
    h_start_conf(&w, "unix", H_CONF_VERBOSE,
                 "[pipeline p]\nsource = unix-listen:%s\nsink = unix:%s\n",
                 front, back);
    h_expect_log(&w, "listening on", WAIT);
    run_echo_clients(6, false, 0, front, 700000);
    h_expect_exit(&w, 0, true, WAIT);
    up_stop(&u);
}

/* IPv6 on ::1 on both sides. */
static void test_ipv6(void **state)
{
    int probe = h_listen(true, 0);
    static struct upstream u;
    uint16_t front, back;
    struct h_weir w;

    (void)state;
    if (probe < 0)
        skip(); /* no ::1 here */
    close(probe);
    front = h_free_port(true);
    back = h_free_port(true);
    up_start(&u, UP_ECHO, true, back, NULL);
    h_start_conf(&w, "ipv6", H_CONF_VERBOSE,
                 "[pipeline p]\nsource = tcp-listen:[::1]:%u\n"
                 "sink = tcp:[::1]:%u\n",
                 front, back);
    h_expect_log(&w, "listening on", WAIT);
    run_echo_clients(6, true, front, NULL, 700000);
    h_expect_exit(&w, 0, true, WAIT);
    up_stop(&u);
}

/* No upstream: the client is closed, and the log names the upstream. */
static void test_upstream_refused(void **state)
{
    uint16_t front = h_free_port(false), back = h_free_port(false);
    struct h_weir w;
    int fd;

    (void)state;
    h_start_conf(&w, "refused", H_CONF_VERBOSE,
                 "[pipeline p]\nsource = tcp-listen:127.0.0.1:%u\n"
                 "sink = tcp:127.0.0.1:%u\n",
                 front, back);
    fd = h_connect(false, front, NULL, WAIT);
    assert_true(fd >= 0);
    assert_int_equal(h_drain(fd, NULL, UINT64_MAX, WAIT), 0);
    close(fd);
    h_expect_log(&w, "cannot connect to tcp:127.0.0.1:", WAIT);
    h_expect_exit(&w, 0, true, WAIT);
}

/* An upstream that is down: the one warning names the upstream's
 * address and the errno, and the client only as whose connection it
 * was; the client's connection ends. */
static void test_upstream_down_named(void **state)
{
    uint16_t front = h_free_port(false), back;
    int held = h_hold_port(&back), fd;
    struct sockaddr_in me;
    socklen_t len = sizeof(me);
    char want[200], bare[200], *t;
    struct h_weir w;

    (void)state;
    h_start_conf(&w, "down", 0,
                 "[pipeline p]\nsource = tcp-listen:127.0.0.1:%u\n"
                 "sink = tcp:127.0.0.1:%u\n",
                 front, back);
    fd = h_connect(false, front, NULL, WAIT);
    assert_true(fd >= 0);
    assert_int_equal(getsockname(fd, (struct sockaddr *)&me, &len), 0);
    assert_int_equal(h_drain(fd, NULL, UINT64_MAX, WAIT), 0);
    close(fd);
    snprintf(want, sizeof(want),
             "warning: pipeline p: client 127.0.0.1:%u: upstream "
             "tcp:127.0.0.1:%u: Connection refused after 0 bytes",
             ntohs(me.sin_port), back);
    snprintf(bare, sizeof(bare), "client 127.0.0.1:%u: Connection refused",
             ntohs(me.sin_port));
    h_expect_log(&w, want, WAIT);
    h_expect_exit(&w, 0, true, WAIT);
    t = h_slurp(w.log);
    assert_non_null(t);
    assert_int_equal(h_count(t, "warning: pipeline p: client"), 1);
    assert_null(strstr(t, bare));
    free(t);
    close(held);
}

/* A connecting source connects on its worker: refused, it says so; and a
 * listen pipeline of the same daemon keeps serving meanwhile. */
static void test_source_connect(void **state)
{
    uint16_t dead = h_free_port(false), src = h_free_port(false);
    int lfd = h_listen(false, src), up;
    char out[600], hex[65], want[65];
    uint64_t size;
    struct h_weir w;

    (void)state;
    assert_true(lfd >= 0);
    h_seeded_hex(1u << 20, 5, want);
    h_path(out, sizeof(out), "from_source.bin");
    h_start_conf(&w, "source", H_CONF_VERBOSE,
                 "[pipeline dead]\nsource = tcp:127.0.0.1:%u\nsink = null\n"
                 "[pipeline live]\nsource = tcp:127.0.0.1:%u\nsink = file:%s\n",
                 dead, src, out);
    up = h_accept(lfd, WAIT);
    assert_true(up >= 0);
    assert_true(h_send_seeded(up, 1u << 20, 5, NULL));
    close(up);
    h_expect_log(&w,
                 "pipeline dead: cannot connect to source "
                 "tcp:127.0.0.1:",
                 WAIT);
    h_expect_log(&w, "pipeline live: done, 1048576 bytes", WAIT);
    assert_true(h_file_sha(out, hex, &size));
    assert_int_equal(size, 1u << 20);
    assert_string_equal(hex, want);
    /* One of two pipelines failed. */
    h_expect_exit(&w, 1, true, WAIT);
    close(lfd);
}

/* A source whose connect hangs (its peer's accept queue is full, so the
 * SYNs go unanswered) holds up nothing: another pipeline of the same
 * daemon serves its clients meanwhile, and SIGTERM ends the connect. */
static void test_source_connect_waits(void **state)
{
    uint16_t slow = h_free_port(false), front = h_free_port(false);
    int lfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0), fill[4];
    struct sockaddr_storage ss;
    socklen_t len = h_addr(&ss, false, slow);
    char out[600], hex[65], want[65];
    uint64_t size;
    struct h_weir w;
    int fd;

    (void)state;
    assert_true(lfd >= 0);
    assert_int_equal(bind(lfd, (struct sockaddr *)&ss, len), 0);
    assert_int_equal(listen(lfd, 0), 0);
    for (int i = 0; i < 4; i++) {
        fill[i] =
            socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
        assert_true(fill[i] >= 0);
        (void)connect(fill[i], (struct sockaddr *)&ss, len);
    }
    h_seeded_hex(1u << 16, 11, want);
    h_path(out, sizeof(out), "while_connecting.bin");
    h_start_conf(&w, "waits", H_CONF_VERBOSE,
                 "[pipeline slow]\nsource = tcp:127.0.0.1:%u\nsink = null\n"
                 "[pipeline live]\nsource = tcp-listen:127.0.0.1:%u\n"
                 "sink = file:%s\n",
                 slow, front, out);
    fd = h_connect(false, front, NULL, WAIT);
    assert_true(fd >= 0);
    assert_true(h_send_seeded(fd, 1u << 16, 11, NULL));
    close(fd);
    h_expect_log(&w, "done, 65536 bytes", WAIT);
    assert_true(h_file_sha(out, hex, &size));
    assert_int_equal(size, 1u << 16);
    assert_string_equal(hex, want);
    h_expect_exit(&w, 0, true, WAIT);
    h_expect_log(&w, "pipeline slow: done, 0 bytes", WAIT);
    for (int i = 0; i < 4; i++)
        close(fill[i]);
    close(lfd);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_teardown(test_echo_20_clients, h_teardown),
        cmocka_unit_test_teardown(test_server_speaks_first, h_teardown),
        cmocka_unit_test_teardown(test_upstream_closes_first, h_teardown),
        cmocka_unit_test_teardown(test_upstream_resets, h_teardown),
        cmocka_unit_test_teardown(test_transform_forward_only, h_teardown),
        cmocka_unit_test_teardown(test_unix, h_teardown),
        cmocka_unit_test_teardown(test_ipv6, h_teardown),
        cmocka_unit_test_teardown(test_upstream_refused, h_teardown),
        cmocka_unit_test_teardown(test_upstream_down_named, h_teardown),
        cmocka_unit_test_teardown(test_source_connect, h_teardown),
        cmocka_unit_test_teardown(test_source_connect_waits, h_teardown),
    };
    int rc;

    if (h_begin("proxy") != 0)
        return 1;
    rc = cmocka_run_group_tests(tests, NULL, NULL);
    h_end();
    return rc;
}
