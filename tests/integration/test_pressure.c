/*
 * test_pressure.c - a file server that runs out of file descriptors: the
 * connections it cannot accept wait in the backlog while accepts pause
 * (one warning for the episode, not one per failed accept, and no core
 * spinning on the failures), and once fds are free again the waiting
 * and the new clients are served whole. And a client that sends
 * something is never reset out of the tail it has not read.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>
#include <sys/resource.h>

#include "harness.h"

#define WAIT      10000u
#define FILE_SIZE (32u << 20) /* past what socket buffers hold */
#define HOLDERS   48          /* one fd each in weir: past the limit of 40 */

static void test_accepts_pause_when_fds_run_out(void **state)
{
    struct rlimit low = {.rlim_cur = 40, .rlim_max = 40};
    char file[256], hex[65], got[65];
    int holders[HOLDERS];
    struct h_weir w;
    uint16_t port = h_free_port(false);
    double cpu0, cpu1;
    int fd;

    (void)state;
    h_path(file, sizeof(file), "served.bin");
    h_make_file(file, FILE_SIZE, 7, hex);
    /* The holders are read one after another, so the last of those
     * accepted first waits with a closed window for as long as the others
     * take (20 s and more under TSan): no timeout may end it meanwhile
     * (TCP_USER_TIMEOUT aborts a window closed past it). */
    h_start_conf(&w, "pressure", H_CONF_VERBOSE | H_CONF_FRESH_LOG,
                 "[pipeline files]\n"
                 "source = file:%s\n"
                 "sink = tcp-listen:127.0.0.1:%u\n"
                 "tcp_user_timeout = 0\n"
                 "send_timeout = 0\n",
                 file, port);
    h_expect_log(&w, "listening on", WAIT);

    /* A limit weir cannot raise: fds run out after a few clients. */
    assert_int_equal(prlimit(w.pid, RLIMIT_NOFILE, &low, NULL), 0);
    for (int i = 0; i < HOLDERS; i++) {
        holders[i] = h_connect(false, port, NULL, WAIT);
        assert_true(holders[i] >= 0);
    }
    h_expect_log(&w, "pausing accepts", WAIT);

    /* Paused, not spinning: a few timer wakeups in a second and a half. */
    cpu0 = h_cpu_seconds(w.pid);
    h_sleep_ms(1500);
    cpu1 = h_cpu_seconds(w.pid);
    assert_true(cpu0 >= 0 && cpu1 >= 0);
    assert_true(cpu1 - cpu0 < 0.5);
    {
        char *log = h_slurp(w.log);

        assert_int_equal(h_count(log, "pausing accepts"), 1);
        free(log);
    }

    /* Every holder is served whole once the others free their fds: read
     * them all, the waiting ones are accepted as fds come back. */
    for (int i = 0; i < HOLDERS; i++) {
        assert_int_equal(h_drain(holders[i], got, UINT64_MAX, WAIT), FILE_SIZE);
        assert_string_equal(got, hex);
        close(holders[i]);
    }
    h_expect_log(&w, "accepting on", WAIT);

    fd = h_connect(false, port, NULL, WAIT);
    assert_true(fd >= 0);
    assert_int_equal(h_drain(fd, got, UINT64_MAX, WAIT), FILE_SIZE);
    assert_string_equal(got, hex);
    close(fd);
    h_expect_exit(&w, 0, true, WAIT);
}

/* A client that sends a request (as curl or a health check does) and
 * reads only later: weir's close must not reset the connection and throw
 * away the tail the client has not read yet. Both send paths: the splice
 * stage (a small file) and the stream path (a big one). */
static void talking_client(size_t size)
{
    static const char req[] = "GET / HTTP/1.0\r\nHost: weir\r\n\r\n";
    char file[256], hex[65], got[65];
    struct h_weir w;
    uint16_t port = h_free_port(false);
    int fd;

    h_path(file, sizeof(file), "talked.bin");
    h_make_file(file, size, 11, hex);
    h_start_conf(&w, "talk", H_CONF_FRESH_LOG,
                 "[pipeline files]\nsource = file:%s\n"
                 "sink = tcp-listen:127.0.0.1:%u\n",
                 file, port);
    for (int i = 0; i < 4; i++) {
        fd = h_connect(false, port, NULL, WAIT);
        assert_true(fd >= 0);
        assert_true(h_write_all(fd, req, sizeof(req) - 1));
        /* Long enough for weir to have written its last byte. */
        h_sleep_ms(300);
        assert_int_equal(h_drain(fd, got, UINT64_MAX, WAIT), (int64_t)size);
        assert_string_equal(got, hex);
        close(fd);
    }
    h_expect_exit(&w, 0, true, WAIT);
}

static void test_talking_client_small(void **state)
{
    (void)state;
    talking_client(1u << 20);
}

static void test_talking_client_big(void **state)
{
    (void)state;
    talking_client(FILE_SIZE);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_teardown(test_accepts_pause_when_fds_run_out,
                                  h_teardown),
        cmocka_unit_test_teardown(test_talking_client_small, h_teardown),
        cmocka_unit_test_teardown(test_talking_client_big, h_teardown),
    };
    int rc;

    if (h_begin("pressure") != 0)
        return 1;
    rc = cmocka_run_group_tests(tests, NULL, NULL);
    h_end();
    return rc;
}
