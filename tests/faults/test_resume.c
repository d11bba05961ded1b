/*
 * test_resume.c - a collector that restarts in the middle of a compressed
 * stream. A followed log grows under a writer while weir ships it through
 * gzip or zstd; the collector drops its connection mid-member, listens
 * again, and takes the rest. Each connection's bytes are decoded by the
 * real tool: the new connection's decode whole by themselves (exit 0),
 * the old one's are a prefix of the log (its last member may be cut),
 * and together they leave no gap. The bytes that arrive twice are at most
 * the member or frame the restart cut. weir's own count of delivered
 * bytes is the stream offset the new connection began at plus what it
 * carried: acknowledged bytes only.
 */
#include <inttypes.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>
#include <stdatomic.h>

#include "harness.h"

#define WAIT     20000u
#define LINE_LEN 25 /* "line 00000000 of the log\n" */
#define LINES    60000u

struct writer {
    char path[300];
    unsigned errors;
    pthread_t th;
};

/* 100 lines every 5 ms: about 500 KB/s for about 3 s. */
static void *writer_run(void *arg)
{
    struct writer *wr = arg;
    int fd = open(wr->path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    char buf[100 * LINE_LEN + 1];

    if (fd < 0) {
        wr->errors++;
        return NULL;
    }
    for (unsigned n = 0; n < LINES; n += 100) {
        for (unsigned i = 0; i < 100; i++)
            snprintf(buf + i * LINE_LEN, LINE_LEN + 1, "line %08u of the log\n",
                     n + i);
        if (!h_write_all(fd, buf, 100 * LINE_LEN))
            wr->errors++;
        h_sleep_ms(5);
    }
    close(fd);
    return NULL;
}

/* Appends what fd has (waiting at most ms) to the file out: the bytes,
 * 0 at EOF, -1 on timeout or error. */
static ssize_t save_some(int fd, int out, unsigned ms)
{
    struct pollfd p = {.fd = fd, .events = POLLIN};
    char buf[65536];
    ssize_t n;

    if (poll(&p, 1, (int)ms) != 1)
        return -1;
    n = recv(fd, buf, sizeof(buf), 0);
    if (n > 0)
        assert_true(h_write_all(out, buf, (size_t)n));
    /* weir cuts a connection it gave up with a reset: that ends it too. */
    return n < 0 && errno == ECONNRESET ? 0 : n;
}

/* tool -dc < in > out; 0 when the tool exited 0. */
static int decode(const char *tool, const char *in, const char *out)
{
    char cmd[1024];

    snprintf(cmd, sizeof(cmd), "%s -dc < '%s' > '%s' 2>/dev/null", tool, in,
             out);
    return system(cmd);
}

static uint8_t *slurp_bin(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    uint8_t *p;
    long n;

    assert_non_null(f);
    fseek(f, 0, SEEK_END);
    n = ftell(f);
    fseek(f, 0, SEEK_SET);
    p = malloc((size_t)n + 1);
    assert_non_null(p);
    assert_int_equal(fread(p, 1, (size_t)n, f), (size_t)n);
    fclose(f);
    *len = (size_t)n;
    return p;
}

static uint64_t log_number(const char *log, const char *after)
{
    char *t = h_slurp(log), *at = t ? strstr(t, after) : NULL;
    uint64_t v = at ? strtoull(at + strlen(after), NULL, 10) : UINT64_MAX;

    free(t);
    return v;
}

static void restart_mid_stream(const char *xf, const char *tool,
                               size_t cut_after, size_t dup_bound)
{
    struct h_weir w;
    struct writer wr = {0};
    char got[2][300], dec[2][300], needle[128];
    uint16_t port;
    int lfd = h_listen_any(&port), c, out, small = 1024;
    size_t first = 0, nlog, nd[2], nc2;
    uint8_t *log, *d[2];
    uint64_t from, delivered;
    ssize_t n;

    snprintf(wr.path, sizeof(wr.path), "%s/%s.src", h_dir, xf);
    for (int k = 0; k < 2; k++) {
        snprintf(got[k], sizeof(got[k]), "%s/%s.got%d", h_dir, xf, k);
        snprintf(dec[k], sizeof(dec[k]), "%s/%s.dec%d", h_dir, xf, k);
    }
    h_write_text(wr.path, "%s", "");
    h_start_conf(&w, xf, H_CONF_VERBOSE,
                 "[pipeline ship]\n"
                 "source = file:%s,follow=yes\n"
                 "transform = %s\n"
                 "sink = tcp:127.0.0.1:%u\n",
                 wr.path, xf, port);
    assert_int_equal(pthread_create(&wr.th, NULL, writer_run, &wr), 0);

    /* A small receive window spreads each member over many segments,
     * so that the restart cuts one. */
    setsockopt(lfd, SOL_SOCKET, SO_RCVBUF, &small, sizeof(small));

    /* The first collector takes some members, then restarts with the log
     * still growing: it stops listening, says goodbye (its end of the
     * connection closes), and keeps what had reached it when weir cut
     * the connection. */
    c = h_accept(lfd, WAIT);
    assert_true(c >= 0);
    out = open(got[0], O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    assert_true(out >= 0);
    while (first < cut_after && (n = save_some(c, out, WAIT)) > 0)
        first += (size_t)n;
    assert_true(first >= cut_after);
    close(lfd);
    shutdown(c, SHUT_WR);
    /* Nothing more is read until weir gave the connection up: so it is
     * cut where its window stood, inside a member. */
    h_expect_log(&w, "lost tcp:127.0.0.1:", WAIT);
    while ((n = save_some(c, out, WAIT)) > 0)
        first += (size_t)n;
    assert_int_equal(n, 0);
    close(out);
    close(c);

    /* The restarted collector. */
    lfd = h_listen(false, port);
    assert_true(lfd >= 0);
    c = h_accept(lfd, WAIT);
    assert_true(c >= 0);
    pthread_join(wr.th, NULL);
    assert_int_equal(wr.errors, 0);
    log = slurp_bin(wr.path, &nlog);
    assert_int_equal(nlog, (size_t)LINES * LINE_LEN);

    /* It receives until what it has decodes to the log's last line. */
    out = open(got[1], O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    assert_true(out >= 0);
    for (;;) {
        n = save_some(c, out, WAIT);
        assert_true(n > 0);
        if (decode(tool, got[1], dec[1]) != 0)
            continue;
        d[1] = slurp_bin(dec[1], &nd[1]);
        if (nd[1] >= LINE_LEN && memcmp(d[1] + nd[1] - LINE_LEN,
                                        log + nlog - LINE_LEN, LINE_LEN) == 0)
            break;
        free(d[1]);
    }
    h_expect_exit(&w, 0, true, WAIT);
    while ((n = save_some(c, out, WAIT)) > 0)
        ;
    assert_int_equal(n, 0);
    close(out);
    close(c);
    close(lfd);

    /* The new connection decodes whole, by itself. */
    assert_int_equal(decode(tool, got[1], dec[1]), 0);
    free(d[1]);
    d[1] = slurp_bin(dec[1], &nd[1]);
    /* The old one: a prefix of the log (its last member may be cut). */
    (void)decode(tool, got[0], dec[0]);
    d[0] = slurp_bin(dec[0], &nd[0]);
    assert_true(nd[0] <= nlog && nd[1] <= nlog);
    assert_memory_equal(d[0], log, nd[0]);
    assert_memory_equal(d[1], log + nlog - nd[1], nd[1]);
    assert_true(nd[0] + nd[1] >= nlog);
    assert_true(nd[0] + nd[1] - nlog <= dup_bound);

    /* weir counted the stream's bytes up to the last the peer
     * acknowledged: where the new connection began, plus what it
     * carried. */
    free(slurp_bin(got[1], &nc2));
    snprintf(needle, sizeof(needle), "resending from byte ");
    from = log_number(w.log, needle);
    snprintf(needle, sizeof(needle), "sink tcp:127.0.0.1:%u: ", port);
    delivered = log_number(w.log, needle);
    if (from == UINT64_MAX || delivered != from + nc2)
        h_show_log(&w);
    assert_true(from != UINT64_MAX);
    assert_int_equal(delivered, from + nc2);
    printf("%s: log %zu bytes; old connection %zu bytes (%zu decoded), new "
           "one from byte %" PRIu64 ", %zu bytes (%zu decoded, whole); %zu "
           "log bytes twice; %" PRIu64 " delivered\n",
           xf, nlog, first, nd[0], from, nc2, nd[1], nd[0] + nd[1] - nlog,
           delivered);
    free(d[0]);
    free(d[1]);
    free(log);
}

static void test_gzip(void **state)
{
    (void)state;
    /* At most one member: 256 KiB of input. */
    restart_mid_stream("gzip", "gzip", 20000, 256 * 1024);
}

static void test_zstd(void **state)
{
    (void)state;
    /* At most one frame: 4 MiB of input. */
    restart_mid_stream("zstd", "zstd -q", 3000, 4 * 1024 * 1024);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_teardown(test_gzip, h_teardown),
        cmocka_unit_test_teardown(test_zstd, h_teardown),
    };
    int rc;

    if (h_begin("resume") != 0)
        return 1;
    rc = cmocka_run_group_tests(tests, NULL, NULL);
    h_end();
    return rc;
}
