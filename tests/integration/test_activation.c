/*
 * test_activation.c - socket activation of the real binary (WEIR_BIN), as
 * systemd does it: the test binds and listens on a socket, then starts
 * weir with that socket as fd 3 and LISTEN_FDS=1, LISTEN_PID=weir's pid,
 * LISTEN_FDNAMES. The test keeps no copy of the socket, and the address is
 * taken, so weir can only serve through the socket it was given: a
 * client that receives the whole file proves it. A second passed socket
 * that matches no listen address of the config is logged as an error.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>

#include "harness.h"

#define WAIT 30000 /* ms: generous for sanitizer builds on a busy box */

static char data[300], data_hex[65];

/* A listening socket on 127.0.0.1 at a port the kernel picks. */
static int listen_any_port(uint16_t *port)
{
    struct sockaddr_storage ss;
    socklen_t len = h_addr(&ss, false, 0);
    int fd = socket(AF_INET, SOCK_STREAM, 0);

    assert_true(fd >= 0);
    assert_int_equal(bind(fd, (struct sockaddr *)&ss, len), 0);
    assert_int_equal(listen(fd, 64), 0);
    len = sizeof(ss);
    assert_int_equal(getsockname(fd, (struct sockaddr *)&ss, &len), 0);
    *port = ntohs(((struct sockaddr_in *)&ss)->sin_port);
    return fd;
}

/*
 * Starts weir -c conf with fds[0..n) as fds 3.., the way systemd passes
 * them, stdout and stderr to log. fork and exec rather than posix_spawn:
 * LISTEN_PID must name the child, known only after the fork.
 */
static void spawn_activated(struct h_weir *w, const char *conf, const char *log,
                            const int *fds, int n)
{
    const char *bin = h_bin();
    pid_t pid;

    snprintf(w->log, sizeof(w->log), "%s", log);
    fflush(NULL);
    pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        int high[8], out = open(log, O_WRONLY | O_CREAT | O_APPEND, 0644);
        int in = open("/dev/null", O_RDONLY);
        char v[32];

        /* Out of the way first: a target fd may be one of the sources. */
        for (int i = 0; i < n; i++)
            high[i] = fcntl(fds[i], F_DUPFD, 100);
        for (int i = 0; i < n; i++) {
            dup2(high[i], 3 + i);
            close(high[i]);
        }
        dup2(in, 0);
        dup2(out, 1);
        dup2(out, 2);
        snprintf(v, sizeof(v), "%d", n);
        setenv("LISTEN_FDS", v, 1);
        snprintf(v, sizeof(v), "%ld", (long)getpid());
        setenv("LISTEN_PID", v, 1);
        setenv("LISTEN_FDNAMES", n == 1 ? "weir" : "weir:stray", 1);
        execl(bin, bin, "-v", "-c", conf, (char *)NULL);
        _exit(127);
    }
    w->pid = pid;
    h_track(pid, true);
}

static void fetch_and_check(struct h_weir *w, uint16_t port)
{
    h_expect_fetch(w, port, WAIT, 2u << 20, data_hex, WAIT);
}

static void write_conf(const char *conf, uint16_t port)
{
    h_write_text(conf,
                 "[daemon]\nworkers = 2\n\n"
                 "[pipeline data]\nsource = file:%s\n"
                 "sink = tcp-listen:127.0.0.1:%u\n",
                 data, port);
}

static void test_serves_through_passed_socket(void **state)
{
    struct h_weir w;
    char conf[400], log[400];
    uint16_t port;
    int lfd = listen_any_port(&port);

    (void)state;
    h_path(conf, sizeof(conf), "one.conf");
    h_path(log, sizeof(log), "one.log");
    write_conf(conf, port);
    spawn_activated(&w, conf, log, &lfd, 1);
    /* From now on only weir holds the socket: the connections queue on
     * it until weir accepts them, and nothing else could listen there. */
    close(lfd);
    fetch_and_check(&w, port);
    fetch_and_check(&w, port);
    assert_int_equal(h_stop(&w, WAIT), 0);
}

static void test_stray_socket_is_an_error(void **state)
{
    struct h_weir w;
    char conf[400], log[400], *text;
    uint16_t port, stray_port;
    int fds[2];

    (void)state;
    fds[0] = listen_any_port(&port);
    fds[1] = listen_any_port(&stray_port);
    h_path(conf, sizeof(conf), "two.conf");
    h_path(log, sizeof(log), "two.log");
    write_conf(conf, port);
    spawn_activated(&w, conf, log, fds, 2);
    close(fds[0]);
    close(fds[1]);
    /* The matching socket serves; the other is reported. */
    fetch_and_check(&w, port);
    assert_int_equal(h_stop(&w, WAIT), 0);
    text = h_slurp(log);
    if (strstr(text, "matches no listen address") == NULL) {
        fprintf(stderr, "no error about the stray socket:\n%s\n", text);
        free(text);
        fail();
    }
    free(text);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_teardown(test_serves_through_passed_socket,
                                  h_teardown),
        cmocka_unit_test_teardown(test_stray_socket_is_an_error, h_teardown),
    };
    int rc;

    if (h_begin("activation") != 0)
        return 1;
    h_path(data, sizeof(data), "data");
    h_make_file(data, 2u << 20, 7, data_hex);
    rc = cmocka_run_group_tests(tests, NULL, NULL);
    h_end();
    return rc;
}
