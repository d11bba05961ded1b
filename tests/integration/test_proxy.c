/*
 * test_proxy.c - the proxy carries both directions: a listen source with
 * one tcp/unix sink relays what the upstream sends back to its client,
 * with half-closes passed along and an error on either side ending both.
 * The upstreams are small servers on threads of this test (echo, a
 * greeting, one that closes first, one that resets); every byte is checked
 * by SHA-256 and every wait is bounded.
 */
#include <ftw.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>

#include <cmocka.h>

#include "harness.h"

#define WAIT                  30000 /* ms: generous for sanitizer builds on a busy box */
#define expect_log(w, needle) h_expect_log(w, needle, WAIT)
#define start_conf(w, name, ...)                                               \
    h_start_conf(w, dir, name, H_CONF_VERBOSE, __VA_ARGS__)
#define MAX_CONN 64

static char dir[] = "/tmp/weir-proxy-XXXXXX";

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

/* Deterministic bytes: the same seed gives the same stream, so both ends
 * can hash it without sharing a buffer. */
static void fill(uint8_t *p, size_t n, uint64_t *seed)
{
    for (size_t i = 0; i < n; i++) {
        *seed ^= *seed << 13;
        *seed ^= *seed >> 7;
        *seed ^= *seed << 17;
        p[i] = (uint8_t)*seed;
    }
}

static bool write_all(int fd, const uint8_t *p, size_t n)
{
    while (n > 0) {
        ssize_t w = write(fd, p, n);

        if (w <= 0)
            return false;
        p += w;
        n -= (size_t)w;
    }
    return true;
}

/* Sends len seeded bytes; their sha256 in hex when asked. */
static bool send_seeded(int fd, size_t len, uint64_t seed, char hex[65])
{
    static _Thread_local uint8_t buf[1 << 16];
    struct sha256 s;

    sha256_init(&s);
    while (len > 0) {
        size_t n = len < sizeof(buf) ? len : sizeof(buf);

        fill(buf, n, &seed);
        sha256_update(&s, buf, n);
        if (!write_all(fd, buf, n))
            return false;
        len -= n;
    }
    if (hex)
        sha256_hex(&s, hex);
    return true;
}

static void seeded_hex(size_t len, uint64_t seed, char hex[65])
{
    static _Thread_local uint8_t buf[1 << 16];
    struct sha256 s;

    sha256_init(&s);
    while (len > 0) {
        size_t n = len < sizeof(buf) ? len : sizeof(buf);

        fill(buf, n, &seed);
        sha256_update(&s, buf, n);
        len -= n;
    }
    sha256_hex(&s, hex);
}

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
            if (!write_all(fd, buf, (size_t)n))
                break;
        shutdown(fd, SHUT_WR);
        break;
    case UP_GREET:
        if (!send_seeded(fd, GREETING_LEN, 7, NULL))
            break;
        while ((n = read(fd, buf, sizeof(buf))) > 0)
            atomic_fetch_add(&u->got, (unsigned long long)n);
        shutdown(fd, SHUT_WR);
        break;
    case UP_CLOSE_FIRST:
        send_seeded(fd, FIRST_LEN, 9, NULL);
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

static int unix_listen(const char *p)
{
    struct sockaddr_un un = {.sun_family = AF_UNIX};
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);

    snprintf(un.sun_path, sizeof(un.sun_path), "%s", p);
    unlink(p);
    if (bind(fd, (struct sockaddr *)&un, sizeof(un)) != 0 ||
        listen(fd, 64) != 0) {
        close(fd);
        return -1;
    }
    return fd;
}

/* Starts a server: on loopback:port (v4 or v6), or on a unix path. */
static void up_start(struct upstream *u, enum up_mode mode, bool v6,
                     uint16_t port, const char *unix_path)
{
    memset(u, 0, sizeof(*u));
    u->mode = mode;
    u->lfd = unix_path ? unix_listen(unix_path) : h_listen(v6, port);
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

/* ---- weir ---- */

static void expect_exit(struct h_weir *w, int rc)
{
    int got = h_stop(w, WAIT);
    char *t = h_slurp(w->log);
    bool bad =
        got != rc || strstr(t, "runtime error:") || strstr(t, "Sanitizer");

    if (bad)
        fprintf(stderr, "weir exited %d, expected %d; log:\n%s\n", got, rc, t);
    free(t);
    if (bad)
        fail();
}

/* ---- clients ---- */

struct client {
    pthread_t th, tx;
    bool v6;
    uint16_t port;
    const char *unix_path;
    size_t len;
    uint64_t seed;
    int fd;
    bool sent;
    char sent_hex[65];
    int64_t got;
    char got_hex[65];
};

static void *client_send(void *arg)
{
    struct client *c = arg;

    c->sent = send_seeded(c->fd, c->len, c->seed, c->sent_hex);
    shutdown(c->fd, SHUT_WR);
    return NULL;
}

/* Sends len bytes and half-closes (on a second thread), while reading
 * what comes back until EOF. */
static void *client_run(void *arg)
{
    struct client *c = arg;

    c->got = -1;
    c->fd = h_connect(c->v6, c->port, c->unix_path, WAIT);
    if (c->fd < 0)
        return NULL;
    if (pthread_create(&c->tx, NULL, client_send, c) != 0) {
        close(c->fd);
        return NULL;
    }
    c->got = h_drain(c->fd, c->got_hex, UINT64_MAX, WAIT);
    pthread_join(c->tx, NULL);
    close(c->fd);
    return NULL;
}

static void run_echo_clients(unsigned n, bool v6, uint16_t port,
                             const char *unix_path, size_t len)
{
    /* Static: a failed assertion leaves this frame while threads run. */
    static struct client c[32];

    assert_true(n <= 32);
    for (unsigned i = 0; i < n; i++) {
        c[i] = (struct client){.v6 = v6,
                               .port = port,
                               .unix_path = unix_path,
                               .len = len + i * 4099,
                               .seed = 1000 + i};
        assert_int_equal(pthread_create(&c[i].th, NULL, client_run, &c[i]), 0);
    }
    for (unsigned i = 0; i < n; i++)
        pthread_join(c[i].th, NULL);
    for (unsigned i = 0; i < n; i++) {
        assert_true(c[i].sent);
        assert_int_equal(c[i].got, (int64_t)c[i].len);
        assert_string_equal(c[i].got_hex, c[i].sent_hex);
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
    start_conf(&w, "echo",
               "[pipeline p]\nsource = tcp-listen:127.0.0.1:%u\n"
               "sink = tcp:127.0.0.1:%u\nhigh_water_mark = 256KiB\n",
               front, back);
    expect_log(&w, "listening on");
    run_echo_clients(20, false, front, NULL, 1u << 20);
    assert_int_equal(atomic_load(&u.accepted), 20);
    expect_exit(&w, 0);
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
    seeded_hex(GREETING_LEN, 7, want);
    up_start(&u, UP_GREET, false, back, NULL);
    start_conf(&w, "greet",
               "[pipeline p]\nsource = tcp-listen:127.0.0.1:%u\n"
               "sink = tcp:127.0.0.1:%u\n",
               front, back);
    fd = h_connect(false, front, NULL, WAIT);
    assert_true(fd >= 0);
    assert_int_equal(h_drain(fd, hex, GREETING_LEN, WAIT), GREETING_LEN);
    assert_string_equal(hex, want);
    assert_true(send_seeded(fd, 12345, 3, NULL));
    shutdown(fd, SHUT_WR);
    /* The server reads to EOF and closes: the client sees the end. */
    assert_int_equal(h_drain(fd, NULL, UINT64_MAX, WAIT), 0);
    close(fd);
    assert_int_equal(atomic_load(&u.got), 12345);
    expect_log(&w, "done, 12345 bytes");
    expect_exit(&w, 0);
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
    seeded_hex(FIRST_LEN, 9, want);
    up_start(&u, UP_CLOSE_FIRST, false, back, NULL);
    start_conf(&w, "first",
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
    expect_log(&w, "done, 0 bytes");
    expect_exit(&w, 0);
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
    start_conf(&w, "reset",
               "[pipeline p]\nsource = tcp-listen:127.0.0.1:%u\n"
               "sink = tcp:127.0.0.1:%u\n",
               front, back);
    fd = h_connect(false, front, NULL, WAIT);
    assert_true(fd >= 0);
    assert_true(write_all(fd, (const uint8_t *)"x", 1));
    /* Read until the end or an error; never past the bound. */
    end = h_now_ms() + WAIT;
    do {
        struct pollfd p = {.fd = fd, .events = POLLIN};

        assert_int_equal(poll(&p, 1, WAIT), 1);
        n = read(fd, b, sizeof(b));
    } while (n > 0 && h_now_ms() < end);
    assert_true(n <= 0);
    close(fd);
    expect_log(&w, "Connection reset by peer");
    expect_exit(&w, 0);
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
    start_conf(&w, "xform",
               "[pipeline p]\nsource = tcp-listen:127.0.0.1:%u\n"
               "transform = uppercase\nsink = tcp:127.0.0.1:%u\n",
               front, back);
    fd = h_connect(false, front, NULL, WAIT);
    assert_true(fd >= 0);
    /* Small enough for the socket buffers: sent whole before reading. */
    for (int i = 0; i < REPEAT; i++)
        assert_true(write_all(fd, (const uint8_t *)line, sizeof(line) - 1));
    shutdown(fd, SHUT_WR);
    assert_int_equal(h_drain(fd, hex, UINT64_MAX, WAIT),
                     REPEAT * (sizeof(line) - 1));
    assert_string_equal(hex, want);
    close(fd);
    expect_exit(&w, 0);
    up_stop(&u);
}

/* Unix sockets on both sides. */
static void test_unix(void **state)
{
    char front[600], back[600];
    static struct upstream u;
    struct h_weir w;

    (void)state;
    snprintf(front, sizeof(front), "%s/front.sock", dir);
    snprintf(back, sizeof(back), "%s/back.sock", dir);
    up_start(&u, UP_ECHO, false, 0, back);
    start_conf(&w, "unix",
               "[pipeline p]\nsource = unix-listen:%s\nsink = unix:%s\n", front,
               back);
    expect_log(&w, "listening on");
    run_echo_clients(6, false, 0, front, 700000);
    expect_exit(&w, 0);
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
    start_conf(&w, "ipv6",
               "[pipeline p]\nsource = tcp-listen:[::1]:%u\n"
               "sink = tcp:[::1]:%u\n",
               front, back);
    expect_log(&w, "listening on");
    run_echo_clients(6, true, front, NULL, 700000);
    expect_exit(&w, 0);
    up_stop(&u);
}

/* No upstream: the client is closed, and the log names the upstream. */
static void test_upstream_refused(void **state)
{
    uint16_t front = h_free_port(false), back = h_free_port(false);
    struct h_weir w;
    int fd;

    (void)state;
    start_conf(&w, "refused",
               "[pipeline p]\nsource = tcp-listen:127.0.0.1:%u\n"
               "sink = tcp:127.0.0.1:%u\n",
               front, back);
    fd = h_connect(false, front, NULL, WAIT);
    assert_true(fd >= 0);
    assert_int_equal(h_drain(fd, NULL, UINT64_MAX, WAIT), 0);
    close(fd);
    expect_log(&w, "cannot connect to tcp:127.0.0.1:");
    expect_exit(&w, 0);
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
    seeded_hex(1u << 20, 5, want);
    snprintf(out, sizeof(out), "%s/from_source.bin", dir);
    start_conf(&w, "source",
               "[pipeline dead]\nsource = tcp:127.0.0.1:%u\nsink = null\n"
               "[pipeline live]\nsource = tcp:127.0.0.1:%u\nsink = file:%s\n",
               dead, src, out);
    up = h_accept(lfd, WAIT);
    assert_true(up >= 0);
    assert_true(send_seeded(up, 1u << 20, 5, NULL));
    close(up);
    expect_log(&w, "pipeline dead: cannot connect to source "
                   "tcp:127.0.0.1:");
    expect_log(&w, "pipeline live: done, 1048576 bytes");
    assert_true(h_file_sha(out, hex, &size));
    assert_int_equal(size, 1u << 20);
    assert_string_equal(hex, want);
    /* One of two pipelines failed. */
    expect_exit(&w, 1);
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
    seeded_hex(1u << 16, 11, want);
    snprintf(out, sizeof(out), "%s/while_connecting.bin", dir);
    start_conf(&w, "waits",
               "[pipeline slow]\nsource = tcp:127.0.0.1:%u\nsink = null\n"
               "[pipeline live]\nsource = tcp-listen:127.0.0.1:%u\n"
               "sink = file:%s\n",
               slow, front, out);
    fd = h_connect(false, front, NULL, WAIT);
    assert_true(fd >= 0);
    assert_true(send_seeded(fd, 1u << 16, 11, NULL));
    close(fd);
    expect_log(&w, "done, 65536 bytes");
    assert_true(h_file_sha(out, hex, &size));
    assert_int_equal(size, 1u << 16);
    assert_string_equal(hex, want);
    expect_exit(&w, 0);
    expect_log(&w, "pipeline slow: done, 0 bytes");
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
        cmocka_unit_test_teardown(test_source_connect, h_teardown),
        cmocka_unit_test_teardown(test_source_connect_waits, h_teardown),
    };
    int rc;

    /* The shared harness's file functions, unused here. */
    (void)h_make_file;
    (void)h_send_file;
    signal(SIGPIPE, SIG_IGN);
    if (!mkdtemp(dir)) {
        perror("mkdtemp");
        return 1;
    }
    if (getenv("TEST_FILTER"))
        cmocka_set_test_filter(getenv("TEST_FILTER"));
    rc = cmocka_run_group_tests(tests, NULL, NULL);
    h_rm_tree(dir);
    return rc;
}
