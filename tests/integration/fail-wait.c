/*
 * fail-wait - runs a program whose event loops cannot wait: io_uring_enter
 * and the epoll waits fail with ENOTRECOVERABLE, an errno no engine
 * expects; everything else (io_uring_setup included) is allowed, so a
 * loop is created and fails at its first wait.
 *
 *   fail-wait PROGRAM [ARG...]            every thread's waits fail
 *   fail-wait --threads PROGRAM [ARG...]  only the threads the program
 *                                         starts (not its main thread)
 *
 * With --threads the waits go to this process (a seccomp user
 * notification), which fails them for every thread but the first and
 * lets the first's through; it exits with the program's status.
 * Exits 125 when the filter cannot be installed, 127 when PROGRAM cannot
 * be run.
 */
#include <errno.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <poll.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#if defined(__x86_64__)
#define NATIVE_ARCH AUDIT_ARCH_X86_64
#elif defined(__aarch64__)
#define NATIVE_ARCH AUDIT_ARCH_AARCH64
#endif

#define TRAP(nr, ret)                                                          \
    BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, (nr), 0, 1),                           \
        BPF_STMT(BPF_RET | BPF_K, (ret))

static int install(unsigned ret, unsigned flags)
{
    struct sock_filter filter[] = {
#ifdef NATIVE_ARCH
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch)),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, NATIVE_ARCH, 1, 0),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
#endif
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
        TRAP(__NR_io_uring_enter, ret),
#ifdef __NR_epoll_wait
        TRAP(__NR_epoll_wait, ret),
#endif
        TRAP(__NR_epoll_pwait, ret),
#ifdef __NR_epoll_pwait2
        TRAP(__NR_epoll_pwait2, ret),
#endif
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
    };
    struct sock_fprog prog = {.len = sizeof(filter) / sizeof(filter[0]),
                              .filter = filter};

    if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0)
        return -1;
    return (int)syscall(__NR_seccomp, SECCOMP_SET_MODE_FILTER, flags, &prog);
}

static int send_fd(int sock, int fd)
{
    char data = 'f', ctl[CMSG_SPACE(sizeof(int))] = {0};
    struct iovec iov = {&data, 1};
    struct msghdr m = {.msg_iov = &iov,
                       .msg_iovlen = 1,
                       .msg_control = ctl,
                       .msg_controllen = sizeof(ctl)};
    struct cmsghdr *c = CMSG_FIRSTHDR(&m);

    c->cmsg_level = SOL_SOCKET;
    c->cmsg_type = SCM_RIGHTS;
    c->cmsg_len = CMSG_LEN(sizeof(int));
    memcpy(CMSG_DATA(c), &fd, sizeof(int));
    return sendmsg(sock, &m, 0) == 1 ? 0 : -1;
}

static int recv_fd(int sock)
{
    char data, ctl[CMSG_SPACE(sizeof(int))];
    struct iovec iov = {&data, 1};
    struct msghdr m = {.msg_iov = &iov,
                       .msg_iovlen = 1,
                       .msg_control = ctl,
                       .msg_controllen = sizeof(ctl)};
    struct cmsghdr *c;
    int fd;

    if (recvmsg(sock, &m, 0) != 1 || !(c = CMSG_FIRSTHDR(&m)))
        return -1;
    memcpy(&fd, CMSG_DATA(c), sizeof(int));
    return fd;
}

static pid_t child;

static void forward(int sig)
{
    kill(child, sig);
}

/* Answers the child's waits until it exits; its exit status. */
static int supervise(int nfd)
{
    struct seccomp_notif req;
    struct seccomp_notif_resp resp;
    int status;

    signal(SIGTERM, forward);
    signal(SIGINT, forward);
    for (;;) {
        struct pollfd p = {nfd, POLLIN, 0};

        if (waitpid(child, &status, WNOHANG) == child)
            break;
        if (poll(&p, 1, 100) <= 0 || !(p.revents & POLLIN))
            continue;
        memset(&req, 0, sizeof(req));
        if (ioctl(nfd, SECCOMP_IOCTL_NOTIF_RECV, &req) != 0)
            continue;
        memset(&resp, 0, sizeof(resp));
        resp.id = req.id;
        if ((pid_t)req.pid == child)
            resp.flags = SECCOMP_USER_NOTIF_FLAG_CONTINUE;
        else
            resp.error = -ENOTRECOVERABLE;
        ioctl(nfd, SECCOMP_IOCTL_NOTIF_SEND, &resp);
    }
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

int main(int argc, char **argv)
{
    int sv[2], nfd;

    if (argc < 2 || (strcmp(argv[1], "--threads") == 0 && argc < 3)) {
        fprintf(stderr, "usage: fail-wait [--threads] PROGRAM [ARG...]\n");
        return 125;
    }
    if (strcmp(argv[1], "--threads") != 0) {
        if (install(SECCOMP_RET_ERRNO | ENOTRECOVERABLE, 0) != 0) {
            fprintf(stderr, "fail-wait: seccomp: %s\n", strerror(errno));
            return 125;
        }
        execvp(argv[1], argv + 1);
        fprintf(stderr, "fail-wait: %s: %s\n", argv[1], strerror(errno));
        return 127;
    }
    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0)
        return 125;
    child = fork();
    if (child < 0)
        return 125;
    if (child == 0) {
        nfd = install(SECCOMP_RET_USER_NOTIF, SECCOMP_FILTER_FLAG_NEW_LISTENER);
        if (nfd < 0 || send_fd(sv[1], nfd) != 0) {
            fprintf(stderr, "fail-wait: seccomp: %s\n", strerror(errno));
            _exit(125);
        }
        close(nfd);
        execvp(argv[2], argv + 2);
        fprintf(stderr, "fail-wait: %s: %s\n", argv[2], strerror(errno));
        _exit(127);
    }
    close(sv[1]);
    nfd = recv_fd(sv[0]);
    if (nfd < 0) {
        waitpid(child, NULL, 0);
        return 125;
    }
    return supervise(nfd);
}
