/*
 * test_pipe.c - weir pipe stopped or cheated mid-transfer says so.
 *
 *   Ctrl-C (SIGINT): exit 130, and the summary names how much reached
 *   each sink, which is what each one really holds;
 *   Ctrl-C with a sink that takes nothing: the same, at once (not after
 *   the daemon's drain timeout), without a failure of its own;
 *   a source file that shrinks while it is sent: a warning naming the
 *   bytes cut, exit 1, and the sink got the file as it is now, whole;
 *   stdout closed by its reader (`| head -c 10`): the reader had enough,
 *   exit 0 and not a word; a transfer that went well says nothing
 *   either, unless -v asks.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>

#include "../integration/harness.h"
#include "collector.h"

#define WAIT 30000u

static bool total_is(struct fc_collector *c, void *arg)
{
    return fc_total(c) >= *(uint64_t *)arg;
}

static uint64_t file_size(const char *path)
{
    struct stat st;

    return stat(path, &st) == 0 ? (uint64_t)st.st_size : 0;
}

static void test_ctrl_c_exits_130_with_each_sinks_bytes(void **state)
{
    char fifo[256], out[256], log[256], sink_tcp[64], sink_file[300];
    char want_tcp[128], want_file[400];
    static struct fc_collector c; /* a failed check may leave its thread */
    struct h_weir w;
    uint64_t n = 3 * 1000 * 1000 + 17, sent = 0, seed = 11;
    static uint8_t buf[1 << 16];
    uint8_t *got, *all = malloc(n);
    size_t glen;
    int fd;

    (void)state;
    assert_non_null(all);
    h_path(fifo, sizeof(fifo), "in.fifo");
    h_path(out, sizeof(out), "ctrlc.out");
    h_path(log, sizeof(log), "ctrlc.log");
    unlink(fifo);
    unlink(out);
    unlink(log);
    assert_int_equal(mkfifo(fifo, 0600), 0);
    /* Held open for writing: weir's stdin never ends by itself. */
    fd = open(fifo, O_RDWR | O_CLOEXEC);
    assert_true(fd >= 0);
    fc_start(&c);
    snprintf(sink_tcp, sizeof(sink_tcp), "tcp:127.0.0.1:%u", c.port);
    snprintf(sink_file, sizeof(sink_file), "file:%s", out);
    h_spawn_io(
        &w, (char *const[]){"weir", "pipe", "stdin", sink_file, sink_tcp, NULL},
        log, fifo, NULL);
    h_fill(all, n, &seed);
    while (sent < n) {
        size_t k = n - sent < sizeof(buf) ? n - sent : sizeof(buf);

        memcpy(buf, all + sent, k);
        assert_true(h_write_all(fd, buf, k));
        sent += k;
    }
    /* Everything written has reached both sinks; the source is still
     * open: only the signal ends the transfer. */
    assert_true(fc_wait(&c, total_is, &n, WAIT));
    for (int64_t end = h_now_ms() + WAIT; file_size(out) < n;)
        assert_true(h_now_ms() < end);
    kill(w.pid, SIGINT);
    h_expect_exit(&w, 130, false, WAIT);
    h_expect_log(&w, "interrupted by SIGINT", WAIT);
    snprintf(want_file, sizeof(want_file), "sink %s: %llu bytes delivered",
             sink_file, (unsigned long long)n);
    snprintf(want_tcp, sizeof(want_tcp), "sink %s: %llu bytes delivered",
             sink_tcp, (unsigned long long)n);
    h_expect_log(&w, want_file, WAIT);
    h_expect_log(&w, want_tcp, WAIT);
    got = fc_read_file(out, &glen);
    assert_int_equal(glen, n);
    assert_memory_equal(got, all, n);
    fc_stop(&c);
    assert_int_equal(c.nconns, 1);
    assert_int_equal(c.conns[0].len, n);
    assert_memory_equal(c.conns[0].p, all, n);
    printf("Ctrl-C: exit 130; %llu bytes in the file sink and %zu at the "
           "collector, as the summary says\n",
           (unsigned long long)n, c.conns[0].len);
    free(got);
    free(all);
    fc_free(&c);
    close(fd);
}

static void test_shrinking_source_warns_and_fails(void **state)
{
    char src[256], log[256], sink[64], want[200], source[300];
    const uint64_t size = 64ull << 20, cut = 16ull << 20;
    struct h_weir w;
    char hex[65], cut_hex[65];
    uint8_t *file;
    size_t flen;
    int lfd, cfd, rcvbuf = 64 * 1024;
    uint16_t port = 0;
    struct sockaddr_in a;
    socklen_t alen = sizeof(a);
    int64_t got;

    (void)state;
    h_path(src, sizeof(src), "shrink.bin");
    h_path(log, sizeof(log), "shrink.log");
    unlink(log);
    h_make_file(src, size, 5, hex);
    lfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    assert_true(lfd >= 0);
    /* A small receive window (inherited by the accepted socket) keeps
     * what weir can have read before the cut far below 16 MiB. */
    assert_int_equal(
        setsockopt(lfd, SOL_SOCKET, SO_RCVBUF, &rcvbuf, sizeof(rcvbuf)), 0);
    memset(&a, 0, sizeof(a));
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    assert_int_equal(bind(lfd, (struct sockaddr *)&a, sizeof(a)), 0);
    assert_int_equal(listen(lfd, 4), 0);
    assert_int_equal(getsockname(lfd, (struct sockaddr *)&a, &alen), 0);
    port = ntohs(a.sin_port);
    snprintf(sink, sizeof(sink), "tcp:127.0.0.1:%u", port);
    snprintf(source, sizeof(source), "file:%s", src);
    h_spawn(&w, (char *const[]){"weir", "-v", "pipe", source, sink, NULL}, log);
    cfd = h_accept(lfd, WAIT);
    if (cfd < 0)
        h_show_log(&w);
    assert_true(cfd >= 0);
    /* weir is held back by this collector that does not read yet: it has
     * read at most its queues' and the socket buffers' worth (a few MiB)
     * when the file is cut to 16 MiB. */
    h_expect_log(&w, "engine:", WAIT);
    assert_int_equal(truncate(src, (off_t)cut), 0);
    file = fc_read_file(src, &flen);
    assert_int_equal(flen, cut);
    h_sha_hex(file, flen, cut_hex);
    got = h_drain(cfd, hex, UINT64_MAX, WAIT);
    assert_int_equal(got, (int64_t)cut);
    assert_string_equal(hex, cut_hex);
    h_expect_exit(&w, 1, false, WAIT);
    snprintf(want, sizeof(want), "shrank by %llu bytes",
             (unsigned long long)(size - cut));
    h_expect_log(&w, want, WAIT);
    printf("shrank: a %llu-byte file cut to %llu mid-transfer: the "
           "collector got the %llu bytes left, exit 1, \"%s\"\n",
           (unsigned long long)size, (unsigned long long)cut,
           (unsigned long long)got, want);
    free(file);
    close(cfd);
    close(lfd);
}

/* Ctrl-C while the only sink takes nothing: weir stops at once. Before,
 * it waited out the daemon's drain timeout ("still running after the
 * drain timeout") and then printed the cut as a failure. */
static void test_ctrl_c_with_a_stalled_sink(void **state)
{
    char src[256], log[256], sink[64], source[300], hex[65], *t;
    uint16_t port;
    int lfd = h_listen_any(&port), cfd;
    struct h_weir w;

    (void)state;
    h_path(src, sizeof(src), "stall.bin");
    h_path(log, sizeof(log), "stall.log");
    unlink(log);
    h_make_file(src, 64u << 20, 6, hex);
    snprintf(sink, sizeof(sink), "tcp:127.0.0.1:%u", port);
    snprintf(source, sizeof(source), "file:%s", src);
    h_spawn(&w, (char *const[]){"weir", "pipe", source, sink, NULL}, log);
    cfd = h_accept(lfd, WAIT);
    assert_true(cfd >= 0);
    h_sleep_ms(200); /* the socket buffers fill; weir waits on the sink */
    kill(w.pid, SIGINT);
    h_expect_exit(&w, 130, false, WAIT);
    h_expect_log(&w, "interrupted by SIGINT", WAIT);
    t = h_slurp(log);
    assert_non_null(t);
    assert_null(strstr(t, "drain timeout"));
    assert_null(strstr(t, "failed:"));
    assert_null(strstr(t, "stopping (no new connections"));
    free(t);
    close(cfd);
    close(lfd);
}

/* `weir pipe FILE - | head -c 10`: the reader closes the pipe after 10
 * bytes; weir ends with 0 and says nothing. */
static void test_closed_stdout_is_success(void **state)
{
    char src[256], log[256], source[300], fifo[256], hex[65], buf[10], *t;
    struct h_weir w;
    int fd;

    (void)state;
    h_path(src, sizeof(src), "head.bin");
    h_path(log, sizeof(log), "head.log");
    h_path(fifo, sizeof(fifo), "head.fifo");
    unlink(log);
    unlink(fifo);
    h_make_file(src, 64u << 20, 7, hex);
    assert_int_equal(mkfifo(fifo, 0600), 0);
    snprintf(source, sizeof(source), "file:%s", src);
    /* The read end first, so that weir's open of its stdout finds it. */
    fd = open(fifo, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    assert_true(fd >= 0);
    h_spawn_io(&w, (char *const[]){"weir", "pipe", source, "-", NULL}, log,
               NULL, fifo);
    assert_int_equal(fcntl(fd, F_SETFL, 0), 0);
    for (size_t got = 0; got < sizeof(buf);) {
        ssize_t n = read(fd, buf + got, sizeof(buf) - got);

        assert_true(n > 0);
        got += (size_t)n;
    }
    close(fd);
    h_expect_exit(&w, 0, false, WAIT);
    t = h_slurp(log);
    assert_non_null(t);
    if (t[0] != '\0')
        fail_msg("weir pipe said, on a success:\n%s", t);
    free(t);
}

/* A transfer that went well is silent on a pipe or file; -v tells the
 * engine and what reached each sink. */
static void test_quiet_unless_asked(void **state)
{
    char src[256], dst[256], log[256], source[300], sink[300];
    char hex[65], got_hex[65], *t;
    uint64_t size;
    struct h_weir w;

    (void)state;
    h_path(src, sizeof(src), "quiet.bin");
    h_path(dst, sizeof(dst), "quiet.out");
    h_path(log, sizeof(log), "quiet.log");
    h_make_file(src, 1u << 20, 8, hex);
    snprintf(source, sizeof(source), "file:%s", src);
    snprintf(sink, sizeof(sink), "file:%s", dst);
    for (int verbose = 0; verbose < 2; verbose++) {
        unlink(dst);
        unlink(log);
        if (verbose)
            h_spawn(&w,
                    (char *const[]){"weir", "-v", "pipe", source, sink, NULL},
                    log);
        else
            h_spawn(&w, (char *const[]){"weir", "pipe", source, sink, NULL},
                    log);
        h_expect_exit(&w, 0, false, WAIT);
        assert_true(h_file_sha(dst, got_hex, &size));
        assert_int_equal(size, 1u << 20);
        assert_string_equal(got_hex, hex);
        t = h_slurp(log);
        assert_non_null(t);
        if (!verbose && t[0] != '\0')
            fail_msg("weir pipe said, on a success:\n%s", t);
        if (verbose) {
            assert_non_null(strstr(t, "engine: "));
            assert_non_null(strstr(t, "1048576 bytes delivered"));
        }
        free(t);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_teardown(test_ctrl_c_exits_130_with_each_sinks_bytes,
                                  h_teardown),
        cmocka_unit_test_teardown(test_shrinking_source_warns_and_fails,
                                  h_teardown),
        cmocka_unit_test_teardown(test_ctrl_c_with_a_stalled_sink, h_teardown),
        cmocka_unit_test_teardown(test_closed_stdout_is_success, h_teardown),
        cmocka_unit_test_teardown(test_quiet_unless_asked, h_teardown),
    };
    int rc;

    if (h_begin("pipe") != 0)
        return 1;
    rc = cmocka_run_group_tests(tests, NULL, NULL);
    h_end();
    return rc;
}
