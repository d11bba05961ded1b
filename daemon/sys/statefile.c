/*
 * statefile.c - see statefile.h. The order is what makes it atomic: the
 * new text is on disk (fsync) before the rename makes it the file, and
 * the directory's fsync makes the rename itself survive a power loss.
 */
#include "sys/statefile.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <sys/stat.h>
#include <unistd.h>

static int write_all(int fd, const char *p, size_t len)
{
    while (len > 0) {
        ssize_t n = write(fd, p, len);

        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0)
            return -errno;
        p += n;
        len -= (size_t)n;
    }
    return 0;
}

int statefile_write(const char *dir, const char *name, const char *text,
                    size_t len)
{
    char tmp[4096], dst[4096];
    int fd, dfd, rc;

    if (snprintf(tmp, sizeof(tmp), "%s/%s.tmp", dir, name) >= (int)sizeof(tmp))
        return -ENAMETOOLONG;
    snprintf(dst, sizeof(dst), "%s/%s", dir, name);
    dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dfd < 0 && errno == ENOENT && mkdir(dir, 0750) == 0)
        dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dfd < 0)
        return -errno;
    fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0640);
    if (fd < 0) {
        rc = -errno;
        close(dfd);
        return rc;
    }
    rc = write_all(fd, text, len);
    if (rc == 0 && fsync(fd) != 0)
        rc = -errno;
    if (close(fd) != 0 && rc == 0)
        rc = -errno;
    if (rc == 0 && rename(tmp, dst) != 0)
        rc = -errno;
    if (rc == 0 && fsync(dfd) != 0)
        rc = -errno;
    if (rc != 0)
        unlink(tmp);
    close(dfd);
    return rc;
}

int statefile_read(const char *dir, const char *name, char *buf, size_t size)
{
    char path[4096];
    size_t got = 0;
    int fd, rc = 0;

    snprintf(path, sizeof(path), "%s/%s", dir, name);
    fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -errno;
    while (got + 1 < size) {
        ssize_t n = read(fd, buf + got, size - 1 - got);

        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0) {
            rc = -errno;
            break;
        }
        if (n == 0)
            break;
        got += (size_t)n;
    }
    close(fd);
    buf[got] = '\0';
    return rc ? rc : (int)got;
}
