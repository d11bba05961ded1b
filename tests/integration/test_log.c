/*
 * test_log.c - the operator's log on the real binary (WEIR_BIN):
 * log_format = json writes one JSON object per line (python3's json
 * module reads every line), with the pipeline and the client's peer as
 * fields; log_target = journal sends journald's native protocol, one
 * datagram per line with PRIORITY=, MESSAGE=, PIPELINE=, PEER= and SINK=,
 * to a socket the test binds (WEIR_JOURNAL_SOCKET). Every wait is
 * bounded.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>

#include "harness.h"

#define WAIT 30000 /* ms: generous for sanitizer builds on a busy box */

static char data[300], data_hex[65];
#define DATA_SIZE (1u << 20)

static void test_json_lines(void **state)
{
    uint16_t port = h_free_port(false);
    struct h_client c = {.port = 0};
    char cmd[1024], want[64], line[256] = "";
    struct h_weir w;
    FILE *f;

    (void)state;
    h_start_conf(&w, "json", H_CONF_FRESH_LOG,
                 "[daemon]\nworkers = 2\nlog_format = json\n"
                 "control_socket = no\n\n"
                 "[pipeline files]\nsource = file:%s\n"
                 "sink = tcp-listen:127.0.0.1:%u\n",
                 data, port);
    h_expect_log(&w, "\"msg\":\"pipeline files: listening on", WAIT);
    c.port = port;
    h_client_run(&c, WAIT);
    assert_int_equal(c.got, DATA_SIZE);
    assert_string_equal(c.hex, data_hex);
    snprintf(want, sizeof(want), " done, %u bytes in ", DATA_SIZE);
    h_expect_log(&w, want, WAIT);
    h_expect_exit(&w, 0, true, WAIT);
    /* Every line an object with time, level and msg; the client's line
     * with its pipeline and peer. */
    snprintf(cmd, sizeof(cmd),
             "python3 -c 'import json,sys\n"
             "n=0\n"
             "for l in open(sys.argv[1]):\n"
             "  o=json.loads(l)\n"
             "  assert o[\"level\"] in (\"error\",\"warning\",\"info\","
             "\"debug\") and o[\"time\"] and o[\"msg\"]\n"
             "  if \" done, \" in o[\"msg\"]:\n"
             "    assert o[\"pipeline\"]==\"files\"\n"
             "    assert o[\"peer\"].startswith(\"127.0.0.1:\")\n"
             "    n+=1\n"
             "print(n)' '%s'",
             w.log);
    f = popen(cmd, "r");
    assert_non_null(f);
    if (!fgets(line, sizeof(line), f))
        line[0] = '\0';
    assert_int_equal(pclose(f), 0);
    assert_string_equal(line, "1\n");
}

/* Datagrams on fd until one holds every needle; that one, or fail. */
static void expect_datagram(int fd, const char *const *needles, size_t n,
                            char *out, size_t cap)
{
    int64_t end = h_now_ms() + WAIT;

    while (h_now_ms() < end) {
        struct pollfd p = {.fd = fd, .events = POLLIN};
        ssize_t got;
        size_t k = 0;

        if (poll(&p, 1, 100) != 1)
            continue;
        got = recv(fd, out, cap - 1, 0);
        if (got <= 0)
            continue;
        out[got] = '\0';
        while (k < n && strstr(out, needles[k]))
            k++;
        if (k == n)
            return;
    }
    fail_msg("no datagram with '%s' ...", needles[0]);
}

static void test_journal_native(void **state)
{
    uint16_t port = h_free_port(false), collector;
    struct sockaddr_un un = {.sun_family = AF_UNIX};
    int jfd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    int held;
    struct h_client c = {.port = 0};
    struct h_collector col;
    char buf[4096], peer[64], sink[64];
    struct h_weir w;

    (void)state;
    /* A collector's port bound, not listening: its sink warns. */
    held = h_hold_port(&collector);

    assert_true(jfd >= 0);
    h_path(un.sun_path, sizeof(un.sun_path), "journal");
    assert_int_equal(bind(jfd, (struct sockaddr *)&un, sizeof(un)), 0);
    assert_int_equal(setenv("WEIR_JOURNAL_SOCKET", un.sun_path, 1), 0);
    h_start_conf(&w, "journal", H_CONF_FRESH_LOG,
                 "[daemon]\nworkers = 2\nlog_target = journal\n"
                 "drain_timeout = 20s\n"
                 "control_socket = no\n\n"
                 "[pipeline files]\nsource = file:%s\n"
                 "sink = tcp-listen:127.0.0.1:%u\n\n"
                 "[pipeline logs]\nsource = file:%s\nfollow = yes\n"
                 "sink = tcp:127.0.0.1:%u\n",
                 data, port, data, collector);
    unsetenv("WEIR_JOURNAL_SOCKET");
    {
        const char *const n[] = {"PRIORITY=6\n", "SYSLOG_IDENTIFIER=weir\n",
                                 "MESSAGE=pipeline files: listening on",
                                 "PIPELINE=files\n"};

        expect_datagram(jfd, n, 4, buf, sizeof(buf));
    }
    snprintf(sink, sizeof(sink), "SINK=tcp:127.0.0.1:%u\n", collector);
    {
        const char *const n[] = {"PRIORITY=4\n", "PIPELINE=logs\n", sink,
                                 "MESSAGE=pipeline logs: cannot connect"};

        expect_datagram(jfd, n, 4, buf, sizeof(buf));
    }
    c.port = port;
    h_client_run(&c, WAIT);
    assert_int_equal(c.got, DATA_SIZE);
    snprintf(peer, sizeof(peer), "PEER=127.0.0.1:");
    {
        const char *const n[] = {"PRIORITY=6\n", "PIPELINE=files\n", peer,
                                 "MESSAGE=pipeline files: client 127.0.0.1:",
                                 " done, 1048576 bytes in "};

        expect_datagram(jfd, n, 5, buf, sizeof(buf));
    }
    h_collector_up(&col, held, WAIT);
    /* A sink in backoff gives up at a stop: let it connect first. */
    {
        const char *const n[] = {"PIPELINE=logs\n",
                                 "MESSAGE=pipeline logs: connected to"};

        expect_datagram(jfd, n, 2, buf, sizeof(buf));
    }
    h_expect_exit(&w, 0, true, WAIT);
    h_collector_join(&col);
    close(jfd);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_teardown(test_json_lines, h_teardown),
        cmocka_unit_test_teardown(test_journal_native, h_teardown),
    };
    int rc;

    if (h_begin("log") != 0)
        return 1;
    h_path(data, sizeof(data), "data");
    h_make_file(data, DATA_SIZE, 31, data_hex);
    rc = cmocka_run_group_tests(tests, NULL, NULL);
    h_end();
    return rc;
}
