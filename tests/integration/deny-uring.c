/*
 * deny-uring - runs a program the way a container runtime's default
 * seccomp profile would: io_uring_setup, io_uring_enter and
 * io_uring_register fail with EPERM, every other system call is allowed.
 *
 *   deny-uring PROGRAM [ARG...]
 *
 * Exits 125 when the filter cannot be installed or io_uring_setup still
 * works under it, 127 when PROGRAM cannot be run.
 */
#include <errno.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#if defined(__x86_64__)
#define NATIVE_ARCH AUDIT_ARCH_X86_64
#elif defined(__aarch64__)
#define NATIVE_ARCH AUDIT_ARCH_AARCH64
#endif

#define DENY(nr)                                                               \
    BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, (nr), 0, 1),                           \
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | EPERM)

int main(int argc, char **argv)
{
    struct sock_filter filter[] = {
#ifdef NATIVE_ARCH
        /* Another architecture's numbers mean other calls: allow them. */
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch)),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, NATIVE_ARCH, 1, 0),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
#endif
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
        DENY(__NR_io_uring_setup),
        DENY(__NR_io_uring_enter),
        DENY(__NR_io_uring_register),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
    };
    struct sock_fprog prog = {.len = sizeof(filter) / sizeof(filter[0]),
                              .filter = filter};
    char params[120] = {0};

    if (argc < 2) {
        fprintf(stderr, "usage: deny-uring PROGRAM [ARG...]\n");
        return 125;
    }
    if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0 ||
        prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog) != 0) {
        fprintf(stderr, "deny-uring: seccomp: %s\n", strerror(errno));
        return 125;
    }
    /* The filter must hold, or a test of the fallback proves nothing. */
    if (syscall(__NR_io_uring_setup, 4, params) >= 0 || errno != EPERM) {
        fprintf(stderr, "deny-uring: io_uring_setup was not refused\n");
        return 125;
    }
    execvp(argv[1], argv + 1);
    fprintf(stderr, "deny-uring: %s: %s\n", argv[1], strerror(errno));
    return 127;
}
