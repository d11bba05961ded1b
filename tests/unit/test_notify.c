/*
 * test_notify.c - daemon/sys/notify.c against a real datagram socket: the
 * test plays systemd, binds the socket NOTIFY_SOCKET names and reads the
 * exact messages weir would send.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "sys/notify.h"

static char dir[] = "/tmp/weir-notify-XXXXXX";
static char sock_path[128];

/* Binds a datagram socket at `name` ("@..." for the abstract namespace, as
 * systemd writes it) and points NOTIFY_SOCKET at it. */
static int bind_notify(const char *name)
{
    struct sockaddr_un un = {.sun_family = AF_UNIX};
    socklen_t len;
    int fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);

    assert_true(fd >= 0);
    assert_true(strlen(name) < sizeof(un.sun_path));
    memcpy(un.sun_path, name, strlen(name));
    len = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + strlen(name));
    if (name[0] == '@')
        un.sun_path[0] = '\0';
    else
        len++; /* the NUL of a path */
    assert_int_equal(bind(fd, (struct sockaddr *)&un, len), 0);
    assert_int_equal(setenv("NOTIFY_SOCKET", name, 1), 0);
    return fd;
}

/* The next datagram, as a string; fails after 10 s without one. */
static void recv_msg(int fd, char *buf, size_t size)
{
    struct pollfd p = {.fd = fd, .events = POLLIN};
    ssize_t n;

    assert_int_equal(poll(&p, 1, 10000), 1);
    n = recv(fd, buf, size - 1, 0);
    assert_true(n >= 0);
    buf[n] = '\0';
}

static void assert_queue_empty(int fd)
{
    char c;

    assert_int_equal(recv(fd, &c, 1, MSG_DONTWAIT), -1);
    assert_int_equal(errno, EAGAIN);
}

static uint64_t mono_usec(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
}

static int setup(void **state)
{
    (void)state;
    snprintf(sock_path, sizeof(sock_path), "%s/notify", dir);
    unsetenv("NOTIFY_SOCKET");
    unsetenv("WATCHDOG_USEC");
    unsetenv("WATCHDOG_PID");
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    unlink(sock_path);
    unsetenv("NOTIFY_SOCKET");
    return 0;
}

static void test_without_socket_does_nothing(void **state)
{
    (void)state;
    assert_int_equal(notify_ready(), 0);
    assert_int_equal(notify_reloading(), 0);
    assert_int_equal(notify_stopping(), 0);
    assert_int_equal(notify_status("%d pipelines", 2), 0);
    assert_int_equal(notify_watchdog(), 0);
}

static void test_each_message_exactly(void **state)
{
    char msg[512];
    int fd = bind_notify(sock_path);

    (void)state;
    assert_true(notify_ready() > 0);
    recv_msg(fd, msg, sizeof(msg));
    assert_string_equal(msg, "READY=1");

    assert_true(notify_stopping() > 0);
    recv_msg(fd, msg, sizeof(msg));
    assert_string_equal(msg, "STOPPING=1");

    assert_true(notify_watchdog() > 0);
    recv_msg(fd, msg, sizeof(msg));
    assert_string_equal(msg, "WATCHDOG=1");

    assert_true(notify_status("%u pipelines, %u streams", 3u, 17u) > 0);
    recv_msg(fd, msg, sizeof(msg));
    assert_string_equal(msg, "STATUS=3 pipelines, 17 streams");

    /* The environment stays: a second READY (after a reload) still goes. */
    assert_non_null(getenv("NOTIFY_SOCKET"));
    assert_true(notify_ready() > 0);
    recv_msg(fd, msg, sizeof(msg));
    assert_string_equal(msg, "READY=1");
    assert_queue_empty(fd);
    close(fd);
}

static void test_reloading_carries_monotonic_now(void **state)
{
    char msg[512], *end;
    const char *prefix = "RELOADING=1\nMONOTONIC_USEC=";
    uint64_t before, after, stamp;
    int fd = bind_notify(sock_path);

    (void)state;
    before = mono_usec();
    assert_true(notify_reloading() > 0);
    after = mono_usec();
    recv_msg(fd, msg, sizeof(msg));
    assert_memory_equal(msg, prefix, strlen(prefix));
    errno = 0;
    stamp = strtoull(msg + strlen(prefix), &end, 10);
    assert_int_equal(errno, 0);
    assert_int_equal(*end, '\0');
    /* The same clock systemd reads: between our two readings. */
    assert_true(stamp >= before && stamp <= after);
    close(fd);
}

static void test_status_is_one_line(void **state)
{
    char msg[512], longer[600];
    int fd = bind_notify(sock_path);

    (void)state;
    assert_true(notify_status("a\nb\r\nc") > 0);
    recv_msg(fd, msg, sizeof(msg));
    assert_string_equal(msg, "STATUS=a b  c");

    memset(longer, 'x', sizeof(longer) - 1);
    longer[sizeof(longer) - 1] = '\0';
    assert_true(notify_status("%s", longer) > 0);
    recv_msg(fd, msg, sizeof(msg));
    assert_int_equal(strlen(msg), strlen("STATUS=") + 255);
    close(fd);
}

static void test_abstract_socket(void **state)
{
    char name[64], msg[64];
    int fd;

    (void)state;
    snprintf(name, sizeof(name), "@weir-notify-test-%ld", (long)getpid());
    fd = bind_notify(name);
    assert_true(notify_ready() > 0);
    recv_msg(fd, msg, sizeof(msg));
    assert_string_equal(msg, "READY=1");
    close(fd);
}

static void test_socket_gone_is_an_error(void **state)
{
    (void)state;
    assert_int_equal(setenv("NOTIFY_SOCKET", sock_path, 1), 0);
    unlink(sock_path);
    assert_true(notify_ready() < 0);
}

static void test_watchdog_usec(void **state)
{
    char pid[32];

    (void)state;
    assert_int_equal(notify_watchdog_usec(), 0);

    setenv("WATCHDOG_USEC", "3000000", 1);
    assert_int_equal(notify_watchdog_usec(), 1500000);

    snprintf(pid, sizeof(pid), "%ld", (long)getpid());
    setenv("WATCHDOG_PID", pid, 1);
    assert_int_equal(notify_watchdog_usec(), 1500000);

    /* Meant for another process (our parent): not ours to feed. */
    snprintf(pid, sizeof(pid), "%ld", (long)getppid());
    setenv("WATCHDOG_PID", pid, 1);
    assert_int_equal(notify_watchdog_usec(), 0);

    unsetenv("WATCHDOG_PID");
    setenv("WATCHDOG_USEC", "soon", 1);
    assert_int_equal(notify_watchdog_usec(), 0);
    setenv("WATCHDOG_USEC", "0", 1);
    assert_int_equal(notify_watchdog_usec(), 0);

    /* Asking does not consume the variables. */
    setenv("WATCHDOG_USEC", "1000", 1);
    assert_int_equal(notify_watchdog_usec(), 500);
    assert_int_equal(notify_watchdog_usec(), 500);
    unsetenv("WATCHDOG_USEC");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_without_socket_does_nothing, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_each_message_exactly, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_reloading_carries_monotonic_now,
                                        setup, teardown),
        cmocka_unit_test_setup_teardown(test_status_is_one_line, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_abstract_socket, setup, teardown),
        cmocka_unit_test_setup_teardown(test_socket_gone_is_an_error, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_watchdog_usec, setup, teardown),
    };
    int rc;

    if (mkdtemp(dir) == NULL)
        return 1;
    rc = cmocka_run_group_tests(tests, NULL, NULL);
    rmdir(dir);
    return rc;
}
