/*
 * test_notify.c - the real binary (WEIR_BIN) under a pretend systemd: the
 * test binds the datagram socket NOTIFY_SOCKET names and reads what weir
 * tells it. READY=1 once it listens (a client then gets the whole file),
 * RELOADING=1 with MONOTONIC_USEC and then READY=1 again after SIGHUP,
 * STOPPING=1 after SIGTERM and exit 0, STATUS= lines of one line each, and
 * WATCHDOG=1 again and again when WATCHDOG_USEC is set. Every wait is
 * bounded.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>

#include "harness.h"

#define WAIT 30000 /* ms: generous for sanitizer builds on a busy box */

static char data[300], data_hex[65], notify_path[300];
static int notify_fd = -1;
static unsigned statuses; /* STATUS= messages seen */

static bool has_line(const char *msg, const char *line)
{
    size_t n = strlen(line);

    for (const char *p = msg; p != NULL; p = strchr(p, '\n')) {
        if (*p == '\n')
            p++;
        if (strncmp(p, line, n) == 0 && (p[n] == '\n' || p[n] == '\0'))
            return true;
    }
    return false;
}

/* The value of NAME=... in msg, or NULL. */
static const char *value_of(const char *msg, const char *name)
{
    size_t n = strlen(name);

    for (const char *p = msg; p != NULL; p = strchr(p, '\n')) {
        if (*p == '\n')
            p++;
        if (strncmp(p, name, n) == 0 && p[n] == '=')
            return p + n + 1;
    }
    return NULL;
}

/* Whether a notification waits, within ms. */
static bool recv_ready(int ms)
{
    struct pollfd p = {.fd = notify_fd, .events = POLLIN};

    return poll(&p, 1, ms) == 1;
}

/* Reads datagrams until one has the line `want`; copies it to out. Counts
 * and checks STATUS= messages on the way. False after WAIT ms. */
static bool wait_msg(const char *want, char *out, size_t size)
{
    int64_t end = h_now_ms() + WAIT;
    char msg[4096];

    while (h_now_ms() < end) {
        struct pollfd p = {.fd = notify_fd, .events = POLLIN};
        ssize_t n;

        if (poll(&p, 1, 100) != 1)
            continue;
        n = recv(notify_fd, msg, sizeof(msg) - 1, 0);
        if (n < 0)
            continue;
        msg[n] = '\0';
        if (value_of(msg, "STATUS") != NULL) {
            /* One line: a STATUS= message carries nothing after it. */
            assert_null(strchr(value_of(msg, "STATUS"), '\n'));
            statuses++;
        }
        if (has_line(msg, want)) {
            if (out != NULL)
                snprintf(out, size, "%s", msg);
            return true;
        }
    }
    fprintf(stderr, "no '%s' from weir within %d ms\n", want, WAIT);
    return false;
}

static uint64_t mono_usec(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
}

/* Connects once to the file server (READY=1 came first, so it listens)
 * and checks that the whole file arrives. */
static void fetch_and_check(uint16_t port)
{
    h_expect_fetch(NULL, port, 0, 3u << 20, data_hex, WAIT);
}

static void start(struct h_weir *w, const char *name, uint16_t port)
{
    h_start_conf(w, name, H_CONF_VERBOSE,
                 "[daemon]\nworkers = 2\n\n"
                 "[pipeline data]\nsource = file:%s\n"
                 "sink = tcp-listen:127.0.0.1:%u\n",
                 data, port);
}

static int setup(void **state)
{
    struct sockaddr_un un = {.sun_family = AF_UNIX};
    char msg[64];

    (void)state;
    h_path(notify_path, sizeof(notify_path), "notify");
    if (strlen(notify_path) >= sizeof(un.sun_path))
        return -1;
    strcpy(un.sun_path, notify_path);
    notify_fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    if (notify_fd < 0 ||
        bind(notify_fd, (struct sockaddr *)&un, sizeof(un)) != 0)
        return -1;
    /* Drain nothing left from an earlier test: the socket is new. */
    while (recv(notify_fd, msg, sizeof(msg), MSG_DONTWAIT) > 0)
        ;
    statuses = 0;
    setenv("NOTIFY_SOCKET", notify_path, 1);
    unsetenv("WATCHDOG_USEC");
    unsetenv("WATCHDOG_PID");
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    h_reap_all();
    unsetenv("NOTIFY_SOCKET");
    unsetenv("WATCHDOG_USEC");
    close(notify_fd);
    unlink(notify_path);
    return 0;
}

static void test_ready_reload_stop(void **state)
{
    struct h_weir w;
    uint16_t port = h_free_port(false);
    char msg[4096];
    const char *stamp;
    uint64_t before, after, usec;

    (void)state;
    start(&w, "lifecycle", port);
    if (!wait_msg("READY=1", NULL, 0)) {
        h_show_log(&w);
        fail();
    }
    fetch_and_check(port);

    /* SIGHUP: RELOADING=1 stamped with the monotonic clock between our
     * two readings, then READY=1 once the reload is done. */
    before = mono_usec();
    assert_int_equal(kill(w.pid, SIGHUP), 0);
    if (!wait_msg("RELOADING=1", msg, sizeof(msg))) {
        h_show_log(&w);
        fail();
    }
    after = mono_usec();
    stamp = value_of(msg, "MONOTONIC_USEC");
    assert_non_null(stamp);
    usec = strtoull(stamp, NULL, 10);
    assert_true(usec >= before && usec <= after);
    if (!wait_msg("READY=1", NULL, 0)) {
        h_show_log(&w);
        fail();
    }
    /* The unchanged pipeline still serves. */
    fetch_and_check(port);

    assert_int_equal(kill(w.pid, SIGTERM), 0);
    if (!wait_msg("STOPPING=1", NULL, 0)) {
        h_show_log(&w);
        fail();
    }
    assert_int_equal(h_wait(&w, WAIT), 0);
    /* A summary for `systemctl status` came at least once. */
    assert_true(statuses > 0);
}

/* A sink that cannot connect comes first in STATUS=, named with its
 * pipeline, and goes once it is up. */
static void test_status_names_a_down_sink(void **state)
{
    uint16_t port;
    char want[256], msg[4096];
    int64_t end = h_now_ms() + WAIT;
    bool seen = false, cleared = false;
    struct h_weir w;
    int lfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0), fd;
    struct sockaddr_storage ss;
    socklen_t len = h_addr(&ss, false, 0);

    (void)state;
    /* The collector's port, bound but not listening: connects to it are
     * refused, and no other socket can take it meanwhile. */
    assert_true(lfd >= 0);
    assert_int_equal(bind(lfd, (struct sockaddr *)&ss, len), 0);
    len = sizeof(ss);
    assert_int_equal(getsockname(lfd, (struct sockaddr *)&ss, &len), 0);
    port = ntohs(((struct sockaddr_in *)&ss)->sin_port);
    h_start_conf(&w, "down", H_CONF_VERBOSE,
                 "[pipeline logs]\nsource = file:%s\nfollow = yes\n"
                 "sink = tcp:127.0.0.1:%u\n",
                 data, port);
    assert_true(wait_msg("READY=1", NULL, 0));
    snprintf(want, sizeof(want),
             "1 sink connecting: logs -> tcp:127.0.0.1:%u, down ", port);
    while (!seen && h_now_ms() < end) {
        const char *v;
        ssize_t n;

        if (recv_ready(100) &&
            (n = recv(notify_fd, msg, sizeof(msg) - 1, MSG_DONTWAIT)) > 0) {
            msg[n] = '\0';
            v = value_of(msg, "STATUS");
            /* Until the outage's length has grown past its start. */
            seen = v && strncmp(v, want, strlen(want)) == 0 &&
                   atoi(v + strlen(want)) >= 2;
        }
    }
    if (!seen) {
        h_show_log(&w);
        fail_msg("no STATUS= starting '%s'", want);
    }
    /* The collector comes up: the problem leaves the line. */
    assert_int_equal(listen(lfd, 8), 0);
    fd = h_accept(lfd, WAIT);
    assert_true(fd >= 0);
    for (end = h_now_ms() + WAIT; !cleared && h_now_ms() < end;) {
        const char *v;
        ssize_t n;

        if (recv_ready(100) &&
            (n = recv(notify_fd, msg, sizeof(msg) - 1, MSG_DONTWAIT)) > 0) {
            msg[n] = '\0';
            v = value_of(msg, "STATUS");
            cleared = v && strncmp(v, "1 pipeline, 1 live stream", 25) == 0;
        }
    }
    assert_true(cleared);
    /* The log: at most one warning for the outage, however many retries
     * it took (they are debug lines), and when there was one, one line
     * when it ended. (Whether the first connect fails before the STATUS=
     * line is read depends on timing, so both counts are checked
     * together.) */
    snprintf(want, sizeof(want), "connected to tcp:127.0.0.1:%u after ", port);
    {
        int64_t until = h_now_ms() + WAIT;
        char *log = h_slurp(w.log);
        unsigned warned = h_count(log, "retrying (one line when it is up");

        while (warned == 1 && h_count(log, want) == 0 && h_now_ms() < until) {
            free(log);
            h_sleep_ms(50);
            log = h_slurp(w.log);
        }
        assert_true(warned <= 1);
        assert_int_equal(h_count(log, want), warned);
        free(log);
    }
    /* The collector takes the whole log before the stop: a sink sees a
     * collector that goes away even while idle, and would then not have
     * delivered everything. */
    assert_int_equal(h_drain(fd, NULL, 3u << 20, WAIT), 3u << 20);
    h_expect_exit(&w, 0, true, WAIT);
    close(fd);
    close(lfd);
}

static void test_watchdog(void **state)
{
    struct h_weir w;
    uint16_t port = h_free_port(false);

    (void)state;
    /* 200 ms: weir pings every 100 ms. WATCHDOG_PID stays unset, which
     * means "whoever reads this": systemd would name weir's pid. */
    setenv("WATCHDOG_USEC", "200000", 1);
    start(&w, "watchdog", port);
    if (!wait_msg("READY=1", NULL, 0) || !wait_msg("WATCHDOG=1", NULL, 0) ||
        !wait_msg("WATCHDOG=1", NULL, 0) || !wait_msg("WATCHDOG=1", NULL, 0)) {
        h_show_log(&w);
        fail();
    }
    assert_int_equal(h_stop(&w, WAIT), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_ready_reload_stop, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_watchdog, setup, teardown),
        cmocka_unit_test_setup_teardown(test_status_names_a_down_sink, setup,
                                        teardown),
    };
    int rc;

    if (h_begin("notify") != 0)
        return 1;
    h_path(data, sizeof(data), "data");
    h_make_file(data, 3u << 20, 6, data_hex);
    rc = cmocka_run_group_tests(tests, NULL, NULL);
    h_end();
    return rc;
}
