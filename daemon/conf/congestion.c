/*
 * congestion.c - see congestion.h.
 *
 * The name is tried on a socket of our own, as the connections will take
 * it: the kernel's answer is the only complete one (a root process may
 * load a module that is not in the available list yet; any other user may
 * set only the names in tcp_allowed_congestion_control). The lists are
 * read for the message alone.
 */
#include "conf/congestion.h"

#include <errno.h>
#include <stdbool.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#define SYSCTL_DIR "/proc/sys/net/ipv4/"

static void read_list(const char *name, char *buf, size_t len)
{
    char path[96];
    FILE *f;

    snprintf(path, sizeof(path), SYSCTL_DIR "%s", name);
    f = fopen(path, "r");
    if (!f || !fgets(buf, (int)len, f))
        snprintf(buf, len, "?");
    if (f)
        fclose(f);
    buf[strcspn(buf, "\n")] = '\0';
}

int congestion_check(const char *name, char *out, size_t len, char *err,
                     size_t errlen)
{
    char list[256];
    int fd, rc = 0;

    if (strcmp(name, "system") == 0) {
        out[0] = '\0';
        return 0;
    }
    /* 15 characters and the NUL: the kernel's TCP_CA_NAME_MAX. */
    if (name[0] == '\0' || strlen(name) >= 16 || strlen(name) >= len) {
        snprintf(err, errlen,
                 "'%s' is not a congestion control name (1 to 15 "
                 "characters, such as cubic or bbr; system: the system's)",
                 name);
        return -EINVAL;
    }
    fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) {
        snprintf(err, errlen, "cannot try '%s' on a socket: %s", name,
                 strerror(errno));
        return -EINVAL;
    }
    if (setsockopt(fd, IPPROTO_TCP, TCP_CONGESTION, name,
                   (socklen_t)strlen(name)) != 0)
        rc = -errno;
    close(fd);
    if (rc) {
        /* EPERM: the kernel has it, this user may not set it. */
        bool perm = rc == -EPERM;

        read_list(perm ? "tcp_allowed_congestion_control"
                       : "tcp_available_congestion_control",
                  list, sizeof(list));
        snprintf(err, errlen,
                 perm ? "'%s' may not be set by this user (allowed: %s; "
                        "net.ipv4.tcp_allowed_congestion_control)"
                      : "'%s' is not a congestion control this kernel has "
                        "(available: %s)",
                 name, list);
        return -EINVAL;
    }
    snprintf(out, len, "%s", name);
    return 0;
}
