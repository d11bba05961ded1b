/*
 * test_drain.c - a stop whose drain times out, with a sink that never
 * connected: weir exits within the bound, with status 0 (the operator
 * asked for the stop; what was cut is said in the log, not in a failed
 * unit), and everything the stream held is freed before it does (the
 * ASan build's LeakSanitizer report would show in the log).
 */
#include <arpa/inet.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>

#include "harness.h"

#define WAIT 60000 /* ms: generous for sanitizer builds */

/* The sink retries a refused port until the stop; the drain (300 ms)
 * may time out on it, and then it is cut. */
static void test_refused_sink(void **state)
{
    char src[600], hex[65];
    uint16_t port;
    int held = h_hold_port(&port);
    struct h_weir w;

    (void)state;
    h_path(src, sizeof(src), "src.bin");
    h_make_file(src, 1u << 20, 7, hex);
    h_start_conf(&w, "refused", 0,
                 "[daemon]\nworkers = 2\ndrain_timeout = 300ms\n"
                 "[pipeline ship]\nsource = file:%s\n"
                 "sink = tcp:127.0.0.1:%u\n",
                 src, port);
    h_expect_log(&w, "pipeline ship: cannot connect to tcp:127.0.0.1:", WAIT);
    h_expect_exit(&w, 0, true, WAIT);
    h_expect_log(&w, "pipeline ship: cut at the", WAIT);
    h_expect_log(&w, "pipeline ship: sink tcp:127.0.0.1:", WAIT);
    h_expect_log(&w, ": 0 bytes delivered", WAIT);
    close(held);
}

/* A connect that never completes: a listener whose accept queue is full
 * drops the SYN, and the connect waits for its own timeout (10 s), far
 * past the drain's. The cut at the drain timeout ends it. */
static void test_connecting_sink(void **state)
{
    char src[600], hex[65], *t;
    struct sockaddr_storage ss;
    socklen_t len = h_addr(&ss, false, 0);
    int lfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0), fill[3];
    uint16_t port;
    struct h_weir w;

    (void)state;
    assert_true(lfd >= 0);
    assert_int_equal(bind(lfd, (struct sockaddr *)&ss, len), 0);
    assert_int_equal(listen(lfd, 0), 0);
    len = sizeof(ss);
    assert_int_equal(getsockname(lfd, (struct sockaddr *)&ss, &len), 0);
    port = ntohs(((struct sockaddr_in *)&ss)->sin_port);
    /* Never accepted: they fill the queue (the later ones wait too). */
    for (int i = 0; i < 3; i++) {
        fill[i] =
            socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
        assert_true(fill[i] >= 0);
        (void)connect(fill[i], (struct sockaddr *)&ss, len);
    }
    h_path(src, sizeof(src), "src.bin");
    h_make_file(src, 1u << 20, 8, hex);
    h_start_conf(&w, "connecting", 0,
                 "[daemon]\nworkers = 2\ndrain_timeout = 300ms\n"
                 "[pipeline ship]\nsource = file:%s\n"
                 "sink = tcp:127.0.0.1:%u\n",
                 src, port);
    h_expect_log(&w, "config ", WAIT); /* the startup line */
    h_expect_exit(&w, 0, true, WAIT);
    h_expect_log(&w, "1 stream still running after the drain timeout", WAIT);
    h_expect_log(&w, "pipeline ship: cut at the drain timeout after", WAIT);
    t = h_slurp(w.log);
    assert_non_null(t);
    assert_null(strstr(t, "did not end; exiting"));
    free(t);
    for (int i = 0; i < 3; i++)
        close(fill[i]);
    close(lfd);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_teardown(test_refused_sink, h_teardown),
        cmocka_unit_test_teardown(test_connecting_sink, h_teardown),
    };
    int rc;

    if (h_begin("drain") != 0)
        return 1;
    rc = cmocka_run_group_tests(tests, NULL, NULL);
    h_end();
    return rc;
}
