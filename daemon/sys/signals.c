/*
 * signals.c - SIGTERM, SIGINT, SIGHUP and SIGUSR1 reach the main loop through a
 * signalfd: they are blocked in every thread (the workers inherit the mask) and
 * read as data, so no handler ever runs in signal context.
 */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <string.h>
#include <sys/signalfd.h>

#include "sys/signals.h"

int signals_block(void)
{
    sigset_t set;
    int fd;

    /* Writes to a vanished peer fail with EPIPE instead of killing us. */
    signal(SIGPIPE, SIG_IGN);
    sigemptyset(&set);
    sigaddset(&set, SIGTERM);
    sigaddset(&set, SIGINT);
    sigaddset(&set, SIGHUP);
    sigaddset(&set, SIGUSR1);
    if (pthread_sigmask(SIG_BLOCK, &set, NULL) != 0)
        return -EINVAL;
    fd = signalfd(-1, &set, SFD_CLOEXEC);
    return fd < 0 ? -errno : fd;
}

const char *signals_name(const void *siginfo)
{
    const struct signalfd_siginfo *si = siginfo;

    switch (si->ssi_signo) {
    case SIGINT:
        return "SIGINT";
    case SIGHUP:
        return "SIGHUP";
    case SIGUSR1:
        return "SIGUSR1";
    default:
        return "SIGTERM";
    }
}

bool signals_is_reload(const void *siginfo)
{
    const struct signalfd_siginfo *si = siginfo;

    return si->ssi_signo == SIGHUP;
}

int signals_number(const void *siginfo)
{
    const struct signalfd_siginfo *si = siginfo;

    return (int)si->ssi_signo;
}

size_t signals_info_size(void)
{
    return sizeof(struct signalfd_siginfo);
}

bool signals_is_status(const void *siginfo)
{
    const struct signalfd_siginfo *si = siginfo;

    return si->ssi_signo == SIGUSR1;
}
