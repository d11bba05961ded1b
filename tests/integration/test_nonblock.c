/*
 * test_nonblock.c - nothing weir opens holds up its main loop, with the
 * real binary (WEIR_BIN):
 *   - a FIFO or device source without fifo=yes is a config error naming
 *     FILE:LINE (--check and weir pipe, exit 78);
 *   - a config path that is a FIFO with no writer, or a file over 16 MiB,
 *     is refused at once with its name (exit 78), at start and at a reload
 *     (which leaves the running config alone);
 *   - a fifo=yes source with no writer: weir starts, and SIGTERM ends it
 *     with exit 0; writers that come and go each get their bytes through,
 *     byte for byte;
 *   - a device source with fifo=yes (/dev/null) ends at its end;
 *   - a file sink that is a FIFO with no reader fails its pipeline's
 *     start, named, at once; with a reader the bytes go through.
 * Every wait is for an event (a log line, an exit, a file's size).
 */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "harness.h"

#define WAIT 30000 /* ms: generous for sanitizer builds on a busy box */

static char fifo[200];

static void spawn(struct h_weir *w, const char *name, char *const argv[])
{
    char log[300];

    h_path(log, sizeof(log), name);
    unlink(log);
    h_spawn(w, argv, log);
}

static void test_check_refuses_fifo(void **state)
{
    char conf[300], want[800];
    struct h_weir w;

    (void)state;
    h_path(conf, sizeof(conf), "plain.conf");
    h_write_text(conf, "[pipeline p]\nsource = file:%s\nsink = null\n", fifo);
    spawn(&w, "check.log",
          (char *const[]){"weir", "--check", "-c", conf, NULL});
    h_expect_exit(&w, 78, false, WAIT);
    snprintf(want, sizeof(want),
             "%s:2: source: '%s' is not a regular file (a FIFO or a device "
             "is read with fifo=yes)",
             conf, fifo);
    h_expect_log(&w, want, 0);

    spawn(&w, "pipe.log",
          (char *const[]){"weir", "pipe", "file:/dev/zero", "null", NULL});
    h_expect_exit(&w, 78, false, WAIT);
    h_expect_log(&w, "'/dev/zero' is not a regular file", 0);
}

static void test_config_is_fifo(void **state)
{
    char want[300];
    struct h_weir w;

    (void)state;
    spawn(&w, "conffifo.log", (char *const[]){"weir", "-c", fifo, NULL});
    h_expect_exit(&w, 78, false, WAIT);
    snprintf(want, sizeof(want), "%s: not a regular file", fifo);
    h_expect_log(&w, want, 0);
}

static void test_config_too_big(void **state)
{
    char conf[300], want[800];
    struct h_weir w;
    int fd;

    (void)state;
    h_path(conf, sizeof(conf), "big.conf");
    fd = open(conf, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    assert_true(fd >= 0);
    assert_int_equal(ftruncate(fd, (16 << 20) + 1), 0);
    close(fd);
    spawn(&w, "big.log", (char *const[]){"weir", "--check", "-c", conf, NULL});
    h_expect_exit(&w, 78, false, WAIT);
    snprintf(want, sizeof(want),
             "%s: 16777217 bytes is larger than a config may be (16 MiB)",
             conf);
    h_expect_log(&w, want, 0);
}

/* The file's size reaches n; false after WAIT. */
static bool wait_size(const char *path, off_t n)
{
    int64_t end = h_now_ms() + WAIT;
    struct stat st;

    do {
        if (stat(path, &st) == 0 && st.st_size >= n)
            return st.st_size == n;
        h_sleep_ms(10);
    } while (h_now_ms() < end);
    return false;
}

static void write_fifo(const uint8_t *p, size_t n)
{
    int fd = open(fifo, O_WRONLY);

    assert_true(fd >= 0);
    assert_int_equal(write(fd, p, n), (ssize_t)n);
    close(fd);
}

static void test_fifo_source(void **state)
{
    char out[300], hex[65], want[65];
    static uint8_t data[3 * 65536 + 11];
    uint64_t seed = 5, size;
    struct h_weir w;

    (void)state;
    h_fill(data, sizeof(data), &seed);
    h_path(out, sizeof(out), "fifo.out");
    h_start_conf(&w, "fifo", H_CONF_FRESH_LOG,
                 "[pipeline f]\nsource = file:%s,fifo=yes\n"
                 "sink = file:%s,append=no\n",
                 fifo, out);
    h_expect_log(&w, "weir 0.1.0:", WAIT);
    /* No writer yet: SIGTERM is honoured at once (below). Two writers,
     * one after the other, each get through. */
    write_fifo(data, 65536);
    assert_true(wait_size(out, 65536));
    write_fifo(data + 65536, sizeof(data) - 65536);
    assert_true(wait_size(out, sizeof(data)));
    h_expect_exit(&w, 0, true, WAIT);
    h_seeded_hex(sizeof(data), 5, want);
    assert_true(h_file_sha(out, hex, &size));
    assert_int_equal(size, sizeof(data));
    assert_string_equal(hex, want);
}

static void test_fifo_no_writer_sigterm(void **state)
{
    struct h_weir w;

    (void)state;
    h_start_conf(&w, "idle", H_CONF_FRESH_LOG,
                 "[pipeline f]\nsource = file:%s,fifo=yes\nsink = null\n",
                 fifo);
    h_expect_log(&w, "weir 0.1.0:", WAIT);
    h_expect_exit(&w, 0, true, WAIT);
}

static void test_reload_config_became_fifo(void **state)
{
    char conf[300];
    struct h_weir w;

    (void)state;
    h_path(conf, sizeof(conf), "swap.conf");
    h_write_text(conf, "[pipeline n]\nsource = file:%s,fifo=yes\nsink = null\n",
                 fifo);
    spawn(&w, "swap.log", (char *const[]){"weir", "-c", conf, NULL});
    h_expect_log(&w, "weir 0.1.0:", WAIT);
    unlink(conf);
    assert_int_equal(mkfifo(conf, 0600), 0);
    assert_int_equal(kill(w.pid, SIGHUP), 0);
    h_expect_log(&w, "not a regular file", WAIT);
    h_expect_log(&w, "the running configuration stays", WAIT);
    h_expect_exit(&w, 0, true, WAIT);
    unlink(conf);
}

static void test_device_source(void **state)
{
    char out[300], arg[320];
    struct h_weir w;
    struct stat st;

    (void)state;
    h_path(out, sizeof(out), "null.out");
    snprintf(arg, sizeof(arg), "file:%s", out);
    spawn(
        &w, "dev.log",
        (char *const[]){"weir", "pipe", "file:/dev/null,fifo=yes", arg, NULL});
    h_expect_exit(&w, 0, false, WAIT);
    assert_int_equal(stat(out, &st), 0);
    assert_int_equal(st.st_size, 0);
}

/* A file sink that is a FIFO: with no reader the pipeline cannot start
 * (exit 1, named), rather than weir waiting in open(2); with one, the
 * bytes go through. */
static void test_fifo_sink(void **state)
{
    char sink[200], arg[820], want[800], hex[65], expect[65];
    struct h_weir w;
    int rfd;

    (void)state;
    h_path(sink, sizeof(sink), "out.fifo");
    assert_int_equal(mkfifo(sink, 0600), 0);
    snprintf(arg, sizeof(arg), "file:%s", sink);
    h_start_conf(&w, "sinkfifo", H_CONF_FRESH_LOG,
                 "[pipeline s]\nsource = file:/dev/null,fifo=yes\n"
                 "sink = %s\n",
                 arg);
    h_expect_exit(&w, 1, false, WAIT);
    snprintf(want, sizeof(want), "pipeline s: %s is a FIFO with no reader",
             sink);
    h_expect_log(&w, want, 0);

    rfd = open(sink, O_RDONLY | O_NONBLOCK);
    assert_true(rfd >= 0);
    assert_int_equal(fcntl(rfd, F_SETFL, 0), 0);
    h_path(want, sizeof(want), "src.bin");
    h_make_file(want, 300000, 9, expect);
    snprintf(arg, sizeof(arg), "file:%s", want);
    {
        char dst[220];

        snprintf(dst, sizeof(dst), "file:%s", sink);
        spawn(&w, "sinkpipe.log",
              (char *const[]){"weir", "pipe", arg, dst, NULL});
    }
    assert_int_equal(h_drain(rfd, hex, UINT64_MAX, WAIT), 300000);
    assert_string_equal(hex, expect);
    close(rfd);
    h_expect_exit(&w, 0, false, WAIT);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_teardown(test_check_refuses_fifo, h_teardown),
        cmocka_unit_test_teardown(test_config_is_fifo, h_teardown),
        cmocka_unit_test_teardown(test_config_too_big, h_teardown),
        cmocka_unit_test_teardown(test_fifo_source, h_teardown),
        cmocka_unit_test_teardown(test_fifo_no_writer_sigterm, h_teardown),
        cmocka_unit_test_teardown(test_reload_config_became_fifo, h_teardown),
        cmocka_unit_test_teardown(test_device_source, h_teardown),
        cmocka_unit_test_teardown(test_fifo_sink, h_teardown),
    };
    int rc;

    h_bin();
    if (h_begin("nonblock") != 0)
        return 1;
    h_path(fifo, sizeof(fifo), "in.fifo");
    if (mkfifo(fifo, 0600) != 0)
        return 1;
    rc = cmocka_run_group_tests(tests, NULL, NULL);
    h_end();
    return rc;
}
