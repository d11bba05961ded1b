/*
 * tcp_tune.c - weir_tcp_options onto a socket (tcp_tune.h, and
 * weir_tcp_apply in weir/endpoint.h).
 */
#include "tcp_tune.h"

#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>

static int set_int(int fd, int level, int name, int v, int rc)
{
    if (setsockopt(fd, level, name, &v, sizeof(v)) != 0 && rc == 0)
        return -errno;
    return rc;
}

/* The name into fd's TCP_CONGESTION; strnlen because a full array has no
 * NUL. */
static int set_congestion(int fd, const char *name, size_t max, int rc)
{
    if (setsockopt(fd, IPPROTO_TCP, TCP_CONGESTION, name,
                   (socklen_t)strnlen(name, max)) != 0 &&
        rc == 0)
        return -errno;
    return rc;
}

/* Only what t sets, on a socket whose options are the kernel's: one
 * syscall per option given, none for the others. */
void weir__tcp_tune(int fd, const struct weir_tcp_options *t)
{
    if (t->keepalive) {
        set_int(fd, SOL_SOCKET, SO_KEEPALIVE, 1, 0);
        if (t->keepalive_idle_s)
            set_int(fd, IPPROTO_TCP, TCP_KEEPIDLE, (int)t->keepalive_idle_s, 0);
        if (t->keepalive_intvl_s)
            set_int(fd, IPPROTO_TCP, TCP_KEEPINTVL, (int)t->keepalive_intvl_s,
                    0);
        if (t->keepalive_cnt)
            set_int(fd, IPPROTO_TCP, TCP_KEEPCNT, (int)t->keepalive_cnt, 0);
    }
    if (t->user_timeout_ms)
        set_int(fd, IPPROTO_TCP, TCP_USER_TIMEOUT, (int)t->user_timeout_ms, 0);
    /* The daemon checked the name when it was configured. */
    if (t->congestion[0])
        set_congestion(fd, t->congestion, sizeof(t->congestion), 0);
}

int weir_tcp_apply(int fd, const struct weir_tcp_options *t)
{
    char sys[32] = "";
    int rc;

    rc = set_int(fd, SOL_SOCKET, SO_KEEPALIVE, t->keepalive, 0);
    if (t->keepalive_idle_s)
        rc = set_int(fd, IPPROTO_TCP, TCP_KEEPIDLE, (int)t->keepalive_idle_s,
                     rc);
    if (t->keepalive_intvl_s)
        rc = set_int(fd, IPPROTO_TCP, TCP_KEEPINTVL, (int)t->keepalive_intvl_s,
                     rc);
    if (t->keepalive_cnt)
        rc = set_int(fd, IPPROTO_TCP, TCP_KEEPCNT, (int)t->keepalive_cnt, rc);
    rc =
        set_int(fd, IPPROTO_TCP, TCP_USER_TIMEOUT, (int)t->user_timeout_ms, rc);
    if (t->congestion[0])
        return set_congestion(fd, t->congestion, sizeof(t->congestion), rc);
    /* "" is the system's default, which a socket takes only at its
     * creation: name it, so that an earlier choice does not stay. */
    FILE *f = fopen("/proc/sys/net/ipv4/tcp_congestion_control", "r");

    if (f) {
        if (fgets(sys, sizeof(sys), f))
            sys[strcspn(sys, "\n")] = '\0';
        fclose(f);
    }
    if (sys[0])
        rc = set_congestion(fd, sys, sizeof(sys), rc);
    return rc;
}
