/*
 * test_names.c - a collector named by a host name that stops resolving
 * and comes back. weir runs in a mount namespace of its own (unshare -rm)
 * where /etc/hosts is a file of the test's, rewritten in place as the
 * test goes: glibc reads it at every lookup, so the names change for
 * weir alone, through the real resolver. The name does not resolve when
 * weir starts (it must start anyway, warn once, and connect once the name
 * is back), then stops resolving again while the collector restarts.
 * Every byte of the followed log arrives once; each outage is one warning
 * and one line at recovery. The name gives two addresses, ::1 first, where
 * nothing listens: the sink must try the next one.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>

#include "collector.h"
#include "harness.h"

#define WAIT     20000u
#define LINE_LEN FC_LOG_LINE

struct got {
    uint8_t *p;
    size_t n, cap;
};

static bool got_until(struct got *g, int fd, size_t want)
{
    int64_t end = h_now_ms() + WAIT;

    while (g->n < want && h_now_ms() < end) {
        struct pollfd p = {.fd = fd, .events = POLLIN};
        ssize_t n;

        if (poll(&p, 1, (int)WAIT) != 1)
            return false;
        if (g->cap - g->n < 65536) {
            g->cap = g->cap ? g->cap * 2 : 1 << 16;
            g->p = realloc(g->p, g->cap);
            assert_non_null(g->p);
        }
        n = recv(fd, g->p + g->n, g->cap - g->n, 0);
        if (n <= 0)
            return false;
        g->n += (size_t)n;
    }
    return g->n >= want;
}

/* Rewrites the hosts file in place (the bind mount holds its inode). */
static void set_hosts(const char *path, bool resolves)
{
    h_write_text(path, "%s",
                 resolves ? "::1 collector\n127.0.0.1 collector\n" : "");
}

/* A port free on 127.0.0.1, with [::1] on the same port held bound (not
 * listening): a connect there is refused, not answered by someone else. */
static int hold_v6(uint16_t port)
{
    struct sockaddr_storage ss;
    socklen_t len = h_addr(&ss, true, port);
    int fd = socket(AF_INET6, SOCK_STREAM | SOCK_CLOEXEC, 0);

    if (fd >= 0 && bind(fd, (struct sockaddr *)&ss, len) != 0) {
        close(fd);
        fd = -1;
    }
    return fd;
}

static void test_name_outages(void **state)
{
    struct h_weir w;
    struct got g1 = {0}, g2 = {0};
    char src[300], hosts[300], wrap[300], bin[600];
    uint16_t port;
    int lfd, v6, c1, c2;
    uint8_t *a = fc_log_lines(0, 200), *b = fc_log_lines(200, 200);
    const size_t n = 200 * LINE_LEN;
    char *log;

    (void)state;
    if (system("unshare -rm true 2>/dev/null") != 0)
        skip(); /* no user and mount namespaces here: cannot swap hosts */
    lfd = h_listen_any(&port);
    v6 = hold_v6(port);

    h_path(src, sizeof(src), "names.src");
    h_path(hosts, sizeof(hosts), "hosts");
    h_path(wrap, sizeof(wrap), "weir-ns.sh");
    set_hosts(hosts, false);
    snprintf(bin, sizeof(bin), "%s", h_bin());
    h_write_text(wrap,
                 "#!/bin/sh\n"
                 "exec unshare -rm sh -c 'mount --bind \"$0\" /etc/hosts && "
                 "exec \"$@\"' '%s' '%s' \"$@\"\n",
                 hosts, bin);
    assert_int_equal(chmod(wrap, 0755), 0);
    fc_append(src, a, n);

    /* The name does not resolve at start: weir runs and says so once. */
    setenv("WEIR_BIN", wrap, 1);
    h_start_conf(&w, "names", H_CONF_VERBOSE,
                 "[pipeline ship]\n"
                 "source = file:%s,follow=yes\n"
                 "sink = tcp:collector:%u\n",
                 src, port);
    setenv("WEIR_BIN", bin, 1);
    h_expect_log(&w, "cannot resolve tcp:collector:", WAIT);
    h_expect_log(&w, "still cannot resolve", WAIT);
    assert_int_equal(kill(w.pid, 0), 0);

    set_hosts(hosts, true);
    c1 = h_accept(lfd, WAIT);
    if (c1 < 0)
        h_show_log(&w);
    assert_true(c1 >= 0);
    assert_true(got_until(&g1, c1, n));
    assert_memory_equal(g1.p, a, n);

    /* The name goes away while the collector restarts. */
    set_hosts(hosts, false);
    close(c1);
    close(lfd);
    h_expect_log(&w, "lost tcp:collector:", WAIT);
    h_expect_log_count(&w, "still cannot resolve", 2, WAIT);
    fc_append(src, b, n);
    lfd = h_listen(false, port);
    assert_true(lfd >= 0);
    set_hosts(hosts, true);
    c2 = h_accept(lfd, WAIT);
    if (c2 < 0)
        h_show_log(&w);
    assert_true(c2 >= 0);
    assert_true(got_until(&g2, c2, n));
    assert_int_equal(g2.n, n);
    assert_memory_equal(g2.p, b, n);
    h_expect_log_count(&w, "connected to tcp:collector:", 2, WAIT);
    h_expect_exit(&w, 0, true, WAIT);

    /* One warning and one recovery line per outage: the first is the
     * name, the second the lost connection (its lookups are the retries
     * of that outage). */
    log = h_slurp(w.log);
    assert_int_equal(h_count(log, "warning: pipeline ship: cannot resolve"), 1);
    assert_int_equal(h_count(log, "warning: pipeline ship: lost"), 1);
    assert_int_equal(h_count(log, "s down"), 2);
    printf("names: 2 outages, 2 warnings, %zu + %zu bytes, as written; "
           "%u lookups failed in all\n",
           g1.n, g2.n, h_count(log, "still cannot resolve") + 1);
    free(log);
    close(c2);
    close(lfd);
    if (v6 >= 0)
        close(v6);
    free(g1.p);
    free(g2.p);
    free(a);
    free(b);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_teardown(test_name_outages, h_teardown),
    };
    int rc;

    if (h_begin("names") != 0)
        return 1;
    rc = cmocka_run_group_tests(tests, NULL, NULL);
    h_end();
    return rc;
}
