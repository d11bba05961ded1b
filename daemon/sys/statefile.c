/*
 * statefile.c - see statefile.h. The order is what makes it atomic: the
 * new text is on disk (fsync) before the rename makes it the file, and
 * the directory's fsync makes the rename itself survive a power loss.
 */
#include "sys/statefile.h"

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

/* 0 when nothing, or a regular file, is at dfd/name. */
static int regular_or_none(int dfd, const char *name)
{
    struct stat st;

    if (fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW) != 0)
        return errno == ENOENT ? 0 : -errno;
    return S_ISREG(st.st_mode) ? 0 : -EFTYPE_STATE;
}

int statefile_dir(const char *dir, bool create)
{
    int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);

    if (dfd < 0 && errno == ENOENT && create && mkdir(dir, 0750) == 0)
        dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    return dfd < 0 ? -errno : dfd;
}

int statefile_write(const char *dir, const char *name, const char *text,
                    size_t len)
{
    char tmp[512];
    int fd, dfd, rc;

    if (snprintf(tmp, sizeof(tmp), "%s.tmp", name) >= (int)sizeof(tmp))
        return -ENAMETOOLONG;
    if ((dfd = statefile_dir(dir, true)) < 0)
        return dfd;
    /* The rename would replace whatever is at the name: refuse what weir
     * did not write. A stale temporary file of a crash goes first, and
     * O_EXCL then makes sure the one written is a new regular file. */
    if ((rc = regular_or_none(dfd, name)) != 0 ||
        (rc = regular_or_none(dfd, tmp)) != 0) {
        close(dfd);
        return rc;
    }
    unlinkat(dfd, tmp, 0);
    fd = openat(dfd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0640);
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
    if (rc == 0 && renameat(dfd, tmp, dfd, name) != 0)
        rc = -errno;
    if (rc == 0 && fsync(dfd) != 0)
        rc = -errno;
    if (rc != 0)
        unlinkat(dfd, tmp, 0);
    close(dfd);
    return rc;
}

int statefile_read(const char *dir, const char *name, char *buf, size_t size)
{
    struct stat st;
    size_t got = 0;
    int fd, dfd, rc = 0;

    if ((dfd = statefile_dir(dir, false)) < 0)
        return dfd;
    /* O_NONBLOCK: a FIFO at the name must not hold the start up; it is
     * refused by the fstat below. */
    fd = openat(dfd, name, O_RDONLY | O_NONBLOCK | O_NOFOLLOW | O_CLOEXEC);
    rc = fd < 0 ? -errno : 0;
    close(dfd);
    if (rc == -ELOOP)
        return -EFTYPE_STATE; /* a symbolic link */
    if (rc != 0)
        return rc;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        close(fd);
        return -EFTYPE_STATE;
    }
    while (rc == 0) {
        ssize_t n = read(fd, buf + got, size - 1 - got);

        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0)
            rc = -errno;
        else if (n == 0)
            break;
        else if ((got += (size_t)n) == size - 1)
            rc = read(fd, &(char){0}, 1) > 0 ? -EFBIG : 0;
        if (got == size - 1)
            break;
    }
    close(fd);
    buf[got] = '\0';
    return rc ? rc : (int)got;
}
