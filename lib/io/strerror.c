/*
 * strerror.c - what to tell an operator when io_uring cannot be set up.
 *
 * Only a loop asked for io_uring explicitly fails this way (AUTO runs on
 * epoll instead). The daemon prints this and exits; the texts name the
 * knob to turn, because "Operation not permitted" alone sends people
 * searching.
 */
#include <errno.h>

#include "weir/loop.h"

const char *weir_loop_strerror(int err)
{
    switch (err) {
    case 0:
        return "no error";
    case -EPERM:
    case -EACCES:
        return "io_uring is not permitted for this process (EPERM): "
               "either the kernel disables it (sysctl "
               "kernel.io_uring_disabled is 2, or 1 and this user is not in "
               "kernel.io_uring_group; enable it with "
               "`sysctl -w kernel.io_uring_disabled=0`), or a seccomp "
               "profile blocks io_uring_setup (container runtimes' default "
               "profiles often do: run the container with a profile that "
               "allows io_uring_setup, io_uring_enter and io_uring_register, "
               "e.g. docker run --security-opt seccomp=PROFILE.json); or "
               "let weir run on its epoll engine (engine auto or epoll)";
    case -ENOSYS:
        return "this kernel has no io_uring (ENOSYS): it needs Linux 5.19 "
               "or later built with CONFIG_IO_URING=y";
    case -ENOMEM:
        return "io_uring could not allocate its rings (ENOMEM): the "
               "locked-memory limit is too low for kernels before 5.12; "
               "raise it (ulimit -l, or LimitMEMLOCK= in the systemd unit) "
               "or use a newer kernel";
    case -EMFILE:
    case -ENFILE:
        return "io_uring setup ran out of file descriptors (EMFILE): "
               "raise the open-files limit (ulimit -n, or LimitNOFILE= in "
               "the systemd unit)";
    case -EINVAL:
        return "the kernel rejected the io_uring setup (EINVAL): the kernel "
               "is too old for weir; Linux 5.19 or later is needed";
    default:
        return "io_uring setup failed with an unexpected error";
    }
}
