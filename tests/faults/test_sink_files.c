/*
 * test_sink_files.c - file sinks are the operator's data: the daemon
 * appends to them unless told append=no, and a start or a reload that
 * does not commit leaves every one of them as it was, byte for byte.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>

#include "../integration/harness.h"

#define WAIT 10000u

static const char kept[] = "written before weir started\n";

static void expect_file(const char *path, const char *text)
{
    char *got = h_slurp(path);

    assert_non_null(got);
    assert_string_equal(got, text);
    free(got);
}

/* A port that is taken while the test holds the returned socket. */
static int taken_port(uint16_t *port)
{
    *port = h_free_port(false);
    return h_listen(false, *port);
}

/* The second pipeline cannot listen: nothing starts, and the first one's
 * sink, an existing file, is not truncated (nor created, for a new one). */
static void test_failed_start_touches_no_file(void **state)
{
    char src[256], old[256], fresh[256];
    struct h_weir w;
    uint16_t port;
    int hold = taken_port(&port);

    (void)state;
    assert_true(hold >= 0);
    h_path(src, sizeof(src), "src.txt");
    h_path(old, sizeof(old), "old.txt");
    h_path(fresh, sizeof(fresh), "fresh.txt");
    h_write_text(src, "new bytes\n");
    h_write_text(old, "%s", kept);
    unlink(fresh);
    h_start_conf(&w, "failstart", H_CONF_FRESH_LOG,
                 "[pipeline a]\nsource = file:%s\nsink = file:%s,append=no\n"
                 "sink = file:%s\n\n"
                 "[pipeline b]\nsource = file:%s\n"
                 "sink = tcp-listen:127.0.0.1:%u\n",
                 src, old, fresh, src, port);
    h_expect_exit(&w, 1, false, WAIT);
    h_expect_log(&w, "cannot listen", WAIT);
    expect_file(old, kept);
    assert_int_equal(access(fresh, F_OK), -1);
    close(hold);
}

/* A reload whose new pipeline cannot listen is rejected: the sink file
 * the new config names is left alone, and the running pipeline serves on. */
static void test_rejected_reload_touches_no_file(void **state)
{
    char src[256], conf[256], old[256], hex[65], got[65];
    struct h_weir w;
    uint16_t serve = h_free_port(false), port;
    int hold = taken_port(&port), fd;

    (void)state;
    assert_true(hold >= 0);
    h_path(src, sizeof(src), "served.bin");
    h_path(old, sizeof(old), "reload-old.txt");
    h_path(conf, sizeof(conf), "reload.conf");
    h_make_file(src, 100000, 3, hex);
    h_write_text(old, "%s", kept);
    h_start_conf(&w, "reload", H_CONF_VERBOSE | H_CONF_FRESH_LOG,
                 "[pipeline a]\nsource = file:%s\n"
                 "sink = tcp-listen:127.0.0.1:%u\n",
                 src, serve);
    h_expect_log(&w, "listening on", WAIT);
    h_write_text(conf,
                 "[daemon]\nworkers = 2\n\n"
                 "[pipeline a]\nsource = file:%s\n"
                 "sink = tcp-listen:127.0.0.1:%u\n\n"
                 "[pipeline c]\nsource = file:%s\nsink = file:%s,append=no\n\n"
                 "[pipeline d]\nsource = file:%s\n"
                 "sink = tcp-listen:127.0.0.1:%u\n",
                 src, serve, src, old, src, port);
    kill(w.pid, SIGHUP);
    h_expect_log(&w, "the running configuration stays", WAIT);
    expect_file(old, kept);
    fd = h_connect(false, serve, NULL, WAIT);
    assert_true(fd >= 0);
    assert_int_equal(h_drain(fd, got, UINT64_MAX, WAIT), 100000);
    assert_string_equal(got, hex);
    close(fd);
    h_expect_exit(&w, 0, true, WAIT);
    close(hold);
}

/* The daemon appends by default; append=no truncates when it starts. */
static void test_daemon_appends_unless_told(void **state)
{
    char src[256], app[256], trunc[256], want[256];
    struct h_weir w;

    (void)state;
    h_path(src, sizeof(src), "line.txt");
    h_path(app, sizeof(app), "append.txt");
    h_path(trunc, sizeof(trunc), "trunc.txt");
    h_write_text(src, "one line\n");
    h_write_text(app, "%s", kept);
    h_write_text(trunc, "%s", kept);
    h_start_conf(&w, "append", H_CONF_FRESH_LOG,
                 "[pipeline a]\nsource = file:%s\nsink = file:%s\n"
                 "sink = file:%s,append=no\n",
                 src, app, trunc);
    h_expect_exit(&w, 0, false, WAIT);
    snprintf(want, sizeof(want), "%sone line\n", kept);
    expect_file(app, want);
    expect_file(trunc, "one line\n");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_teardown(test_failed_start_touches_no_file,
                                  h_teardown),
        cmocka_unit_test_teardown(test_rejected_reload_touches_no_file,
                                  h_teardown),
        cmocka_unit_test_teardown(test_daemon_appends_unless_told, h_teardown),
    };
    int rc;

    if (h_begin("sinkfiles") != 0)
        return 1;
    rc = cmocka_run_group_tests(tests, NULL, NULL);
    h_end();
    return rc;
}
