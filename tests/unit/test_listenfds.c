/*
 * test_listenfds.c - daemon/serve/listenfds.c as systemd would drive it: a
 * child process binds real listening sockets, moves them to fds 3.., sets
 * LISTEN_FDS/LISTEN_PID/LISTEN_FDNAMES for itself and checks which config
 * address each one matches. A child, so the fds and the environment of
 * the test runner stay as they were; it reports through its exit status.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "serve/listenfds.h"

/* systemd passes its sockets from fd 3 on. */
#define FIRST_FD 3

static char dir[] = "/tmp/weir-listenfds-XXXXXX";

/* In the child: report and leave; cmocka's state belongs to the parent. */
#define CHECK(cond)                                                            \
    do {                                                                       \
        if (!(cond)) {                                                         \
            fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__,   \
                    #cond);                                                    \
            _exit(1);                                                          \
        }                                                                      \
    } while (0)

/* A listening (or, with listening false, only bound) TCP socket on `host`
 * at a port the kernel picks; v6only applies to IPv6 sockets. */
static int tcp_socket(const char *host, bool listening, int v6only,
                      uint16_t *port)
{
    struct sockaddr_storage ss = {0};
    socklen_t len;
    int fd;

    if (strchr(host, ':') != NULL) {
        struct sockaddr_in6 *in6 = (struct sockaddr_in6 *)&ss;

        in6->sin6_family = AF_INET6;
        CHECK(inet_pton(AF_INET6, host, &in6->sin6_addr) == 1);
        len = sizeof(*in6);
    } else {
        struct sockaddr_in *in = (struct sockaddr_in *)&ss;

        in->sin_family = AF_INET;
        CHECK(inet_pton(AF_INET, host, &in->sin_addr) == 1);
        len = sizeof(*in);
    }
    fd = socket(ss.ss_family, SOCK_STREAM, 0);
    CHECK(fd >= 0);
    if (ss.ss_family == AF_INET6)
        CHECK(setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &v6only,
                         sizeof(v6only)) == 0);
    CHECK(bind(fd, (struct sockaddr *)&ss, len) == 0);
    if (listening)
        CHECK(listen(fd, 16) == 0);
    len = sizeof(ss);
    CHECK(getsockname(fd, (struct sockaddr *)&ss, &len) == 0);
    *port = ntohs(ss.ss_family == AF_INET
                      ? ((struct sockaddr_in *)&ss)->sin_port
                      : ((struct sockaddr_in6 *)&ss)->sin6_port);
    return fd;
}

static int unix_socket(const char *path)
{
    struct sockaddr_un un = {.sun_family = AF_UNIX};
    int fd = socket(AF_UNIX, SOCK_STREAM, 0);

    CHECK(fd >= 0);
    CHECK(strlen(path) < sizeof(un.sun_path));
    strcpy(un.sun_path, path);
    CHECK(bind(fd, (struct sockaddr *)&un, sizeof(un)) == 0);
    CHECK(listen(fd, 16) == 0);
    return fd;
}

/* Puts fds[0..n) at 3..3+n, as systemd passes them. */
static void move_to_listen_fds(int *fds, int n)
{
    int high[16];

    CHECK(n <= 16);
    for (int i = 0; i < n; i++) {
        high[i] = fcntl(fds[i], F_DUPFD, 100);
        CHECK(high[i] >= 100);
        close(fds[i]);
    }
    for (int i = 0; i < n; i++) {
        CHECK(dup2(high[i], FIRST_FD + i) == FIRST_FD + i);
        close(high[i]);
        fds[i] = FIRST_FD + i;
    }
}

static void set_listen_env(int n, pid_t pid, const char *names)
{
    char v[32];

    snprintf(v, sizeof(v), "%d", n);
    CHECK(setenv("LISTEN_FDS", v, 1) == 0);
    snprintf(v, sizeof(v), "%ld", (long)pid);
    CHECK(setenv("LISTEN_PID", v, 1) == 0);
    if (names != NULL)
        CHECK(setenv("LISTEN_FDNAMES", names, 1) == 0);
    else
        unsetenv("LISTEN_FDNAMES");
}

static int match(struct listenfds *set, enum addr_kind kind, const char *host,
                 uint16_t port, const char *path)
{
    struct weir_address a = {
        .kind = kind,
        .role = ADDR_SINK,
        .host = (char *)host,
        .port = port,
        .path = (char *)path,
    };

    return listenfds_match(set, &a);
}

/* fd is a duplicate of the passed socket at `passed`: the same socket. */
static bool same_socket(int fd, int passed)
{
    struct stat a, b;

    return fd >= 0 && fd != passed && fstat(fd, &a) == 0 &&
           fstat(passed, &b) == 0 && a.st_ino == b.st_ino &&
           (fcntl(fd, F_GETFD) & FD_CLOEXEC);
}

static bool match_is(struct listenfds *set, enum addr_kind kind,
                     const char *host, uint16_t port, const char *path,
                     int passed)
{
    int fd = match(set, kind, host, port, path);
    bool ok = same_socket(fd, passed);

    if (fd >= 0)
        close(fd);
    return ok;
}

/* A client reaches the service through the duplicate a match handed out. */
static void accept_through(struct listenfds *set, uint16_t port)
{
    struct sockaddr_in to = {.sin_family = AF_INET, .sin_port = htons(port)};
    int lfd = match(set, ADDR_TCP_LISTEN, "127.0.0.1", port, NULL);
    int c = socket(AF_INET, SOCK_STREAM, 0), s;
    char buf[8] = {0};

    CHECK(lfd >= 0 && c >= 0);
    inet_pton(AF_INET, "127.0.0.1", &to.sin_addr);
    CHECK(connect(c, (struct sockaddr *)&to, sizeof(to)) == 0);
    s = accept(lfd, NULL, NULL);
    CHECK(s >= 0);
    CHECK(write(s, "weir", 4) == 4);
    CHECK(read(c, buf, sizeof(buf)) == 4);
    CHECK(memcmp(buf, "weir", 4) == 0);
    close(s);
    close(c);
    close(lfd);
}

enum { A_LO4, B_ANY4, C_LO6, D_UNIX, E_ANY6, F_SPARE, G_BOUND, NFDS };

static void child_match(void)
{
    uint16_t port[NFDS] = {0};
    char path[128];
    int fds[NFDS];
    struct listenfds *set = NULL;
    struct listenfd_info info[4];

    snprintf(path, sizeof(path), "%s/weir.sock", dir);
    fds[A_LO4] = tcp_socket("127.0.0.1", true, 0, &port[A_LO4]);
    fds[B_ANY4] = tcp_socket("0.0.0.0", true, 0, &port[B_ANY4]);
    fds[C_LO6] = tcp_socket("::1", true, 1, &port[C_LO6]);
    fds[D_UNIX] = unix_socket(path);
    /* systemd's ListenStream=PORT: [::], serving IPv4 too. */
    fds[E_ANY6] = tcp_socket("::", true, 0, &port[E_ANY6]);
    fds[F_SPARE] = tcp_socket("127.0.0.1", true, 0, &port[F_SPARE]);
    fds[G_BOUND] = tcp_socket("127.0.0.1", false, 0, &port[G_BOUND]);
    move_to_listen_fds(fds, NFDS);
    set_listen_env(NFDS, getpid(), "a:b:c:d:e:spare:bound");

    CHECK(listenfds_take(&set) == 0);
    CHECK(listenfds_count(set) == NFDS);
    /* Taken once: the variables are gone for anything started later. */
    CHECK(getenv("LISTEN_FDS") == NULL && getenv("LISTEN_PID") == NULL);
    CHECK(getenv("LISTEN_FDNAMES") == NULL);

    CHECK(match_is(set, ADDR_TCP_LISTEN, "127.0.0.1", port[A_LO4], NULL,
                   fds[A_LO4]));
    CHECK(match_is(set, ADDR_TCP_LISTEN, "0.0.0.0", port[B_ANY4], NULL,
                   fds[B_ANY4]));
    CHECK(match_is(set, ADDR_TCP_LISTEN, "::1", port[C_LO6], NULL, fds[C_LO6]));
    CHECK(match_is(set, ADDR_UNIX_LISTEN, NULL, 0, path, fds[D_UNIX]));
    CHECK(
        match_is(set, ADDR_TCP_LISTEN, "::", port[E_ANY6], NULL, fds[E_ANY6]));
    CHECK(match_is(set, ADDR_TCP_LISTEN, "0.0.0.0", port[E_ANY6], NULL,
                   fds[E_ANY6]));
    /* A second match (a reload) finds the same socket again. */
    CHECK(match_is(set, ADDR_TCP_LISTEN, "127.0.0.1", port[A_LO4], NULL,
                   fds[A_LO4]));
    accept_through(set, port[A_LO4]);

    /* Near misses match nothing. */
    CHECK(match(set, ADDR_TCP_LISTEN, "127.0.0.1", port[B_ANY4], NULL) ==
          -ENOENT);
    CHECK(match(set, ADDR_TCP_LISTEN, "::", port[B_ANY4], NULL) == -ENOENT);
    CHECK(match(set, ADDR_TCP_LISTEN, "127.0.0.1", port[C_LO6], NULL) ==
          -ENOENT);
    CHECK(match(set, ADDR_TCP_LISTEN, "127.0.0.1", port[E_ANY6], NULL) ==
          -ENOENT);
    CHECK(match(set, ADDR_TCP_LISTEN, "::1", port[A_LO4], NULL) == -ENOENT);
    CHECK(match(set, ADDR_TCP_LISTEN, "127.0.0.1", port[G_BOUND], NULL) ==
          -ENOENT);
    CHECK(match(set, ADDR_UNIX_LISTEN, NULL, 0, "/nonexistent/weir.sock") ==
          -ENOENT);
    CHECK(match(set, ADDR_TCP, "127.0.0.1", port[A_LO4], NULL) == -ENOENT);

    /* What nothing used: the spare listener and the unlistening one. */
    CHECK(listenfds_unused(set, info, 1) == 2);
    CHECK(listenfds_unused(set, info, 4) == 2);
    CHECK(info[0].fd == fds[F_SPARE] && strcmp(info[0].name, "spare") == 0);
    char want[64];
    snprintf(want, sizeof(want), "127.0.0.1:%u", port[F_SPARE]);
    CHECK(strcmp(info[0].addr, want) == 0);
    CHECK(info[1].fd == fds[G_BOUND] && strcmp(info[1].name, "bound") == 0);

    /* The set closes the originals. */
    listenfds_free(set);
    for (int i = 0; i < NFDS; i++)
        CHECK(fcntl(fds[i], F_GETFD) == -1 && errno == EBADF);
    unlink(path);
    _exit(0);
}

static void child_not_ours(void)
{
    uint16_t port;
    int fd = tcp_socket("127.0.0.1", true, 0, &port);
    struct listenfds *set = NULL;

    move_to_listen_fds(&fd, 1);
    /* Meant for our parent: not ours, and left open. */
    set_listen_env(1, getppid(), NULL);
    CHECK(listenfds_take(&set) == 0);
    CHECK(listenfds_count(set) == 0);
    CHECK(match(set, ADDR_TCP_LISTEN, "127.0.0.1", port, NULL) == -ENOENT);
    CHECK(listenfds_unused(set, NULL, 0) == 0);
    listenfds_free(set);
    CHECK(fcntl(fd, F_GETFD) != -1);

    /* No variables at all: an empty set. */
    unsetenv("LISTEN_FDS");
    unsetenv("LISTEN_PID");
    CHECK(listenfds_take(&set) == 0);
    CHECK(listenfds_count(set) == 0);
    listenfds_free(set);

    /* Ours, without LISTEN_FDNAMES: the socket is named "unknown". */
    set_listen_env(1, getpid(), NULL);
    CHECK(listenfds_take(&set) == 0);
    CHECK(listenfds_count(set) == 1);
    struct listenfd_info info;
    CHECK(listenfds_unused(set, &info, 1) == 1);
    CHECK(strcmp(info.name, "unknown") == 0);
    listenfds_free(set);
    _exit(0);
}

static void run_child(void (*body)(void))
{
    int status;
    pid_t pid;

    fflush(NULL);
    pid = fork();
    assert_true(pid >= 0);
    if (pid == 0)
        body();
    assert_int_equal(waitpid(pid, &status, 0), pid);
    assert_true(WIFEXITED(status));
    assert_int_equal(WEXITSTATUS(status), 0);
}

static void test_match_and_unused(void **state)
{
    (void)state;
    run_child(child_match);
}

static void test_not_ours_or_absent(void **state)
{
    (void)state;
    run_child(child_not_ours);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_match_and_unused),
        cmocka_unit_test(test_not_ours_or_absent),
    };
    int rc;

    if (mkdtemp(dir) == NULL)
        return 1;
    rc = cmocka_run_group_tests(tests, NULL, NULL);
    rmdir(dir);
    return rc;
}
