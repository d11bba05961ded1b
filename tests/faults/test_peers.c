/*
 * test_peers.c - a followed log shipped to collectors that misbehave: one
 * that restarts while the log is quiet (the loss must be seen at once and
 * the sink connect again before anything new is written), one that stops
 * reading (the send timeout cuts the connection and the sink reconnects
 * and resends), and one whose listen queue is full (the connect timeout
 * fires and the connect is retried); and a served client that stops
 * reading (the send timeout cuts it alone). Every byte is accounted for:
 * what the collector received on each connection is compared with the
 * file.
 */
#include <inttypes.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>

#include "collector.h"
#include "harness.h"

#define WAIT 20000u

struct got {
    uint8_t *p;
    size_t n, cap;
};

static void got_free(struct got *g)
{
    free(g->p);
    *g = (struct got){0};
}

/* Reads what is there into g, waiting at most ms for some; 0 at EOF,
 * -1 on timeout or error, else the bytes read. */
static ssize_t got_read(struct got *g, int fd, unsigned ms)
{
    struct pollfd p = {.fd = fd, .events = POLLIN};
    ssize_t n;

    if (poll(&p, 1, (int)ms) != 1)
        return -1;
    if (g->cap - g->n < 65536) {
        g->cap = g->cap ? g->cap * 2 : 1 << 20;
        g->p = realloc(g->p, g->cap);
        assert_non_null(g->p);
    }
    n = recv(fd, g->p + g->n, g->cap - g->n, 0);
    if (n > 0)
        g->n += (size_t)n;
    /* A sink that cut a stalled connection resets it: the end too. */
    return n < 0 && errno == ECONNRESET ? 0 : n;
}

/* Reads until g holds at least want bytes. */
static bool got_until(struct got *g, int fd, size_t want)
{
    int64_t end = h_now_ms() + WAIT;

    while (g->n < want && h_now_ms() < end)
        if (got_read(g, fd, WAIT) <= 0)
            return false;
    return g->n >= want;
}

/* Reads until EOF. */
static bool got_eof(struct got *g, int fd)
{
    int64_t end = h_now_ms() + WAIT;
    ssize_t n;

    while (h_now_ms() < end)
        if ((n = got_read(g, fd, WAIT)) <= 0)
            return n == 0;
    return false;
}

/* Reads until what g holds ends with the last `tail` bytes of data[len]. */
static bool got_tail(struct got *g, int fd, const uint8_t *data, size_t len,
                     size_t tail)
{
    int64_t end = h_now_ms() + WAIT;

    while (h_now_ms() < end) {
        if (g->n >= tail &&
            memcmp(g->p + g->n - tail, data + len - tail, tail) == 0)
            return true;
        if (got_read(g, fd, WAIT) <= 0)
            return false;
    }
    return false;
}

#define LINE_LEN FC_LOG_LINE

/*
 * The collector restarts while the log is quiet: its connection closes
 * and it listens again on the same port. The sink sees the close on its
 * idle socket and connects again before a single new line is written;
 * then the new lines arrive on the new connection, each once (the old
 * peer had acknowledged everything, so nothing is resent).
 */
static void test_idle_restart(void **state)
{
    struct h_weir w;
    struct got g1 = {0}, g2 = {0};
    char log[300];
    uint16_t port;
    int lfd = h_listen_any(&port), c1, c2;
    uint8_t *a = fc_log_lines(0, 400), *b = fc_log_lines(400, 400);
    const size_t n = 400 * LINE_LEN;

    (void)state;
    h_path(log, sizeof(log), "idle.src");
    fc_append(log, a, n);
    h_start_conf(&w, "idle", H_CONF_VERBOSE,
                 "[pipeline ship]\n"
                 "source = file:%s,follow=yes\n"
                 "sink = tcp:127.0.0.1:%u\n",
                 log, port);
    c1 = h_accept(lfd, WAIT);
    assert_true(c1 >= 0);
    assert_true(got_until(&g1, c1, n));
    assert_memory_equal(g1.p, a, n);

    close(c1);
    close(lfd);
    lfd = h_listen(false, port);
    assert_true(lfd >= 0);
    /* Nothing is written meanwhile: only the watch can notice. */
    c2 = h_accept(lfd, WAIT);
    if (c2 < 0)
        h_show_log(&w);
    assert_true(c2 >= 0);
    h_expect_log(&w, "lost tcp:127.0.0.1:", WAIT);

    fc_append(log, b, n);
    assert_true(got_until(&g2, c2, n));
    if (g2.n != n)
        fprintf(stderr, "got %.*s\n", (int)g2.n, (char *)g2.p);
    assert_int_equal(g2.n, n);
    assert_memory_equal(g2.p, b, n);
    h_expect_exit(&w, 0, true, WAIT);
    assert_true(got_eof(&g2, c2));
    assert_int_equal(g2.n, n);
    printf("idle restart: %zu + %zu bytes, as written\n", g1.n, g2.n);
    close(c2);
    close(lfd);
    got_free(&g1);
    got_free(&g2);
    free(a);
    free(b);
}

/*
 * The collector accepts and then stops reading. Once the kernel's buffers
 * are full the sink's send stays pending; after send_timeout it cuts the
 * connection, reconnects, and resends from what the old peer had
 * acknowledged. The old connection's bytes are a prefix of the log, the
 * new one's a suffix, and together they leave no gap.
 */
static void test_stall(void **state)
{
    struct h_weir w;
    struct got g1 = {0}, g2 = {0};
    char log[300];
    uint16_t port;
    int lfd = h_listen_any(&port), c1, c2;
    const unsigned lines = 640 * 1024; /* 16 MiB: past every buffer */
    const size_t n = (size_t)lines * LINE_LEN;
    uint8_t *a = fc_log_lines(0, lines);

    (void)state;
    h_path(log, sizeof(log), "stall.src");
    fc_append(log, a, n);
    h_start_conf(&w, "stall", H_CONF_VERBOSE,
                 "[pipeline ship]\n"
                 "source = file:%s,follow=yes\n"
                 "sink = tcp:127.0.0.1:%u\n"
                 "send_timeout = 1s\n",
                 log, port);
    c1 = h_accept(lfd, WAIT);
    assert_true(c1 >= 0);
    h_expect_log(&w, "(Connection timed out)", WAIT);
    c2 = h_accept(lfd, WAIT);
    assert_true(c2 >= 0);
    assert_true(got_tail(&g2, c2, a, n, LINE_LEN));
    assert_true(got_eof(&g1, c1));
    assert_true(g1.n <= n && g2.n <= n);
    assert_memory_equal(g1.p, a, g1.n);
    assert_memory_equal(g2.p, a + n - g2.n, g2.n);
    assert_true(g1.n + g2.n >= n);
    printf("stall: first connection %zu bytes, second %zu, %zu twice\n", g1.n,
           g2.n, g1.n + g2.n - n);
    h_expect_exit(&w, 0, true, WAIT);
    close(c1);
    close(c2);
    close(lfd);
    got_free(&g1);
    got_free(&g2);
    free(a);
}

/*
 * A listener whose accept queue is full drops new SYNs, so a connect to it
 * hangs. connect_timeout ends it and the sink retries; once the queue has
 * room, the retry connects and the log arrives.
 */
static void test_connect_timeout(void **state)
{
    struct h_weir w;
    struct got g = {0};
    struct sockaddr_storage ss;
    socklen_t len = sizeof(ss);
    char log[300];
    uint16_t port;
    int lfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0), filler, c;
    uint8_t *a = fc_log_lines(0, 100);
    const size_t n = 100 * LINE_LEN;

    (void)state;
    h_addr(&ss, false, 0);
    assert_int_equal(
        bind(lfd, (struct sockaddr *)&ss, sizeof(struct sockaddr_in)), 0);
    assert_int_equal(listen(lfd, 0), 0);
    assert_int_equal(getsockname(lfd, (struct sockaddr *)&ss, &len), 0);
    port = ntohs(((struct sockaddr_in *)&ss)->sin_port);
    /* One connection fills a queue of length 0 (the kernel keeps one). */
    filler = h_connect(false, port, NULL, WAIT);
    assert_true(filler >= 0);

    h_path(log, sizeof(log), "connect.src");
    fc_append(log, a, n);
    h_start_conf(&w, "connect", H_CONF_VERBOSE,
                 "[pipeline ship]\n"
                 "source = file:%s,follow=yes\n"
                 "sink = tcp:127.0.0.1:%u\n"
                 "connect_timeout = 500ms\n",
                 log, port);
    h_expect_log(&w, "Connection timed out; retrying", WAIT);
    c = h_accept(lfd, WAIT); /* the filler: the queue has room again */
    assert_true(c >= 0);
    close(c);
    close(filler);
    c = h_accept(lfd, WAIT);
    assert_true(c >= 0);
    assert_true(got_until(&g, c, n));
    assert_int_equal(g.n, n);
    assert_memory_equal(g.p, a, n);
    h_expect_log(&w, "connected to tcp:127.0.0.1:", WAIT);
    h_expect_exit(&w, 0, true, WAIT);
    close(c);
    close(lfd);
    got_free(&g);
    free(a);
}

static uint64_t log_number(const char *log, const char *after)
{
    char *t = h_slurp(log), *at = t ? strstr(t, after) : NULL;
    uint64_t v = at ? strtoull(at + strlen(after), NULL, 10) : UINT64_MAX;

    free(t);
    return v;
}

/*
 * A tee of a plain file to a collector that reads and one, on_full =
 * drop-newest, that stalls. The stalled sink is cut at its send timeout
 * (a dropping sink is not reconnected) and the stream ends: the healthy
 * sink got every byte, and the stalled one's count is what its collector
 * can still read.
 */
static void test_tee_stall(void **state)
{
    struct h_weir w;
    struct got ga = {0}, gb = {0};
    char src[300], hex[65], hex_a[65], needle[128];
    uint16_t pa, pb;
    int la = h_listen_any(&pa), lb = h_listen_any(&pb), ca, cb;
    const size_t n = 24u << 20; /* past the stalled sink's buffers */
    uint64_t delivered;
    char *text;

    (void)state;
    h_path(src, sizeof(src), "tee.src");
    h_make_file(src, n, 11, hex);
    h_start_conf(&w, "tee", H_CONF_VERBOSE,
                 "[pipeline tee]\n"
                 "source = file:%s\n"
                 "sink = tcp:127.0.0.1:%u\n"
                 "sink = tcp:127.0.0.1:%u,on_full=drop-newest\n"
                 "send_timeout = 1s\n",
                 src, pa, pb);
    ca = h_accept(la, WAIT);
    cb = h_accept(lb, WAIT);
    assert_true(ca >= 0 && cb >= 0);
    assert_true(got_eof(&ga, ca));
    assert_int_equal(ga.n, n);
    h_sha_hex(ga.p, ga.n, hex_a);
    assert_string_equal(hex_a, hex);
    /* The stream ends without anyone reading the stalled sink. */
    snprintf(needle, sizeof(needle),
             "sink tcp:127.0.0.1:%u,on_full=drop-newest: ", pb);
    h_expect_log(&w, needle, WAIT);
    delivered = log_number(w.log, needle);
    assert_true(got_eof(&gb, cb));
    assert_int_equal(gb.n, delivered);
    assert_memory_equal(gb.p, ga.p, gb.n);
    printf("tee stall: healthy sink %zu bytes, stalled sink cut at %" PRIu64
           " bytes (what its collector read)\n",
           ga.n, delivered);
    /* Cut by its own policy, the stalled sink is a warning; the healthy
     * one got every byte, so the pipeline is done and weir exits 0. */
    h_expect_log(&w, ", cut at its send timeout", WAIT);
    h_expect_exit(&w, 0, false, WAIT);
    text = h_slurp(w.log);
    assert_non_null(text);
    assert_int_equal(h_count(text, "pipeline tee: failed:"), 0);
    free(text);
    close(ca);
    close(cb);
    close(la);
    close(lb);
    got_free(&ga);
    got_free(&gb);
}

/* The file at path, whole; caller frees. */
static uint8_t *file_bytes(const char *path, size_t n)
{
    uint8_t *p = malloc(n);
    FILE *f = fopen(path, "rb");

    assert_non_null(p);
    assert_non_null(f);
    assert_int_equal(fread(p, 1, n, f), n);
    fclose(f);
    return p;
}

/* A client socket with a small receive buffer, connected to port. */
static int small_client(uint16_t port)
{
    struct sockaddr_storage ss;
    socklen_t len = h_addr(&ss, false, port);
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0), rcv = 4096;

    assert_true(fd >= 0);
    assert_int_equal(setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &rcv, sizeof(rcv)),
                     0);
    assert_int_equal(connect(fd, (struct sockaddr *)&ss, len), 0);
    return fd;
}

/*
 * A served client that stops reading, on the default send path (sendfile
 * from the file to the socket) and on the splice stage's pipe: after
 * send_timeout its connection is reset and its stream ends, named in the
 * log. A client served while the stalled one is held gets the whole file,
 * and what the stalled one received is the file's start.
 */
static void test_served_stall(void **state)
{
    static const char *const paths[] = {NULL, "splice"};
    char src[300], hex[65];
    const size_t n = 32u << 20; /* past every buffer of a closed window */
    uint8_t *want;

    (void)state;
    h_path(src, sizeof(src), "served.src");
    h_make_file(src, n, 5, hex);
    want = file_bytes(src, n);
    for (unsigned k = 0; k < 2; k++) {
        uint16_t port = h_free_port(false);
        struct got g = {0};
        struct h_weir w;
        int c;

        if (paths[k])
            setenv("WEIR_SENDPATH", paths[k], 1);
        h_start_conf(&w, "served", H_CONF_VERBOSE | H_CONF_FRESH_LOG,
                     "[pipeline serve]\n"
                     "source = file:%s\n"
                     "sink = tcp-listen:127.0.0.1:%u\n"
                     "send_timeout = 1s\n",
                     src, port);
        unsetenv("WEIR_SENDPATH");
        h_expect_log(&w, "listening on", WAIT);
        c = small_client(port);
        h_expect_fetch(&w, port, WAIT, n, hex, WAIT);
        h_expect_log(&w, "Connection timed out", WAIT);
        assert_true(got_eof(&g, c));
        assert_true(g.n < n);
        assert_memory_equal(g.p, want, g.n);
        printf("served stall (%s): the stalled client got %zu of %zu bytes, "
               "all the file's start; the one alongside got all of them\n",
               paths[k] ? paths[k] : "sendfile", g.n, n);
        h_expect_exit(&w, 0, true, WAIT);
        close(c);
        got_free(&g);
    }
    free(want);
}

/* What `ss` says of the connections from local port `port`, or NULL when
 * ss cannot be run. */
static char *ss_info(uint16_t port)
{
    char cmd[160], *out = NULL;
    size_t cap = 0, len = 0;
    FILE *p;
    int status;

    snprintf(cmd, sizeof(cmd),
             "ss -tinH state established '( sport = :%u )' 2>/dev/null", port);
    p = popen(cmd, "r");
    if (!p)
        return NULL;
    for (;;) {
        if (cap - len < 4096) {
            cap = cap ? cap * 2 : 8192;
            out = realloc(out, cap);
            assert_non_null(out);
        }
        size_t k = fread(out + len, 1, cap - len - 1, p);

        if (k == 0)
            break;
        len += k;
    }
    out[len] = '\0';
    status = pclose(p);
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
        free(out);
        return NULL;
    }
    return out;
}

/*
 * tcp_congestion on a served client's connection: ss shows the named
 * congestion control on weir's socket while the client holds it, the
 * system's default is not it, and the bytes still arrive intact.
 */
static void test_congestion(void **state)
{
    struct h_weir w;
    struct got g = {0};
    char src[300], hex[65], got_hex[65], sys[32] = "", needle[40];
    const size_t n = 8u << 20;
    uint16_t port = h_free_port(false);
    const char *want;
    char *info = NULL;
    FILE *f;
    int c;

    (void)state;
    f = fopen("/proc/sys/net/ipv4/tcp_congestion_control", "r");
    if (f) {
        if (fgets(sys, sizeof(sys), f))
            sys[strcspn(sys, "\n")] = '\0';
        fclose(f);
    }
    /* reno is always built in; cubic when reno is the default already. */
    want = strcmp(sys, "reno") != 0 ? "reno" : "cubic";
    h_path(src, sizeof(src), "cc.src");
    h_make_file(src, n, 9, hex);
    h_start_conf(&w, "cc", H_CONF_VERBOSE,
                 "[pipeline serve]\n"
                 "source = file:%s\n"
                 "sink = tcp-listen:127.0.0.1:%u\n"
                 "tcp_congestion = %s\n",
                 src, port, want);
    h_expect_log(&w, "listening on", WAIT);
    c = small_client(port);
    /* The connection is up once its first bytes are here. */
    assert_true(got_until(&g, c, 1));
    info = ss_info(port);
    if (!info) {
        printf("congestion: skipped the ss check: ss (iproute2) cannot be "
               "run here\n");
    } else {
        snprintf(needle, sizeof(needle), " %s ", want);
        if (!strstr(info, needle))
            fprintf(stderr, "ss says: %s\n", info);
        assert_non_null(strstr(info, needle));
        printf("congestion: ss shows %s on the served connection (the "
               "system's is %s)\n",
               want, sys);
    }
    assert_true(got_eof(&g, c));
    assert_int_equal(g.n, n);
    h_sha_hex(g.p, g.n, got_hex);
    assert_string_equal(got_hex, hex);
    h_expect_exit(&w, 0, true, WAIT);
    free(info);
    close(c);
    got_free(&g);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_teardown(test_idle_restart, h_teardown),
        cmocka_unit_test_teardown(test_stall, h_teardown),
        cmocka_unit_test_teardown(test_connect_timeout, h_teardown),
        cmocka_unit_test_teardown(test_tee_stall, h_teardown),
        cmocka_unit_test_teardown(test_served_stall, h_teardown),
        cmocka_unit_test_teardown(test_congestion, h_teardown),
    };
    int rc;

    if (h_begin("peers") != 0)
        return 1;
    rc = cmocka_run_group_tests(tests, NULL, NULL);
    h_end();
    return rc;
}
