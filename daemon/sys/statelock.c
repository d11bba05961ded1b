/*
 * statelock.c - see statelock.h.
 */
#include "sys/statelock.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "sys/statefile.h"

static pid_t read_pid(int fd)
{
    char buf[32];
    ssize_t n = pread(fd, buf, sizeof(buf) - 1, 0);
    long v;

    if (n <= 0)
        return 0;
    buf[n] = '\0';
    v = strtol(buf, NULL, 10);
    return v > 0 ? (pid_t)v : 0;
}

static int take(const char *dir, pid_t *holder)
{
    char pid[32];
    struct stat st;
    int dfd, fd, rc, n;

    if ((dfd = statefile_dir(dir, true)) < 0)
        return dfd;
    /* O_NONBLOCK and O_NOFOLLOW: a FIFO or a link put at the name is
     * refused below, never waited on or followed. */
    fd = openat(dfd, "lock",
                O_RDWR | O_CREAT | O_NONBLOCK | O_NOFOLLOW | O_CLOEXEC, 0640);
    rc = fd < 0 ? -errno : 0;
    close(dfd);
    if (rc != 0)
        return rc;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        close(fd);
        return -EINVAL;
    }
    if (flock(fd, LOCK_EX | LOCK_NB) != 0) {
        rc = -errno;
        if (rc == -EWOULDBLOCK)
            *holder = read_pid(fd);
        close(fd);
        return rc;
    }
    n = snprintf(pid, sizeof(pid), "%ld\n", (long)getpid());
    if (ftruncate(fd, 0) != 0 || pwrite(fd, pid, (size_t)n, 0) != n) {
        rc = -errno;
        close(fd);
        return rc;
    }
    return fd;
}

/* The directories this process holds: their lock fds stay open until
 * exit (a reload may name another one; the first stays held). */
#define HELD_MAX 8
static char *held[HELD_MAX];

int statelock_take(const char *dir, pid_t *holder)
{
    int fd;

    *holder = 0;
    for (int i = 0; i < HELD_MAX; i++)
        if (held[i] && strcmp(held[i], dir) == 0)
            return 0;
    fd = take(dir, holder);
    if (fd < 0)
        return fd;
    for (int i = 0; i < HELD_MAX; i++)
        if (!held[i]) {
            held[i] = strdup(dir);
            break;
        }
    return 0;
}
