/*
 * sock_util.c - see sock_util.h; and weir_tcp_apply (weir/endpoint.h).
 */
#include "sock_util.h"

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

/*
 * t's options onto fd. With `every`, all of them, zeros and false too
 * (weir_tcp_apply); else only what t sets, on a socket whose options are
 * the kernel's: one syscall per option given, none for the others.
 */
static int tcp_set(int fd, const struct weir_tcp_options *t, bool every)
{
    char sys[32] = "";
    int rc = 0;

    if (every || t->keepalive)
        rc = set_int(fd, SOL_SOCKET, SO_KEEPALIVE, t->keepalive, rc);
    if (t->keepalive) {
        if (t->keepalive_idle_s)
            rc = set_int(fd, IPPROTO_TCP, TCP_KEEPIDLE,
                         (int)t->keepalive_idle_s, rc);
        if (t->keepalive_intvl_s)
            rc = set_int(fd, IPPROTO_TCP, TCP_KEEPINTVL,
                         (int)t->keepalive_intvl_s, rc);
        if (t->keepalive_cnt)
            rc = set_int(fd, IPPROTO_TCP, TCP_KEEPCNT, (int)t->keepalive_cnt,
                         rc);
    }
    if (every || t->user_timeout_ms)
        rc = set_int(fd, IPPROTO_TCP, TCP_USER_TIMEOUT, (int)t->user_timeout_ms,
                     rc);
    /* The daemon checked the name when it was configured. */
    if (t->congestion[0])
        return set_congestion(fd, t->congestion, sizeof(t->congestion), rc);
    if (!every)
        return rc;
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

void weir__tcp_tune(int fd, const struct weir_tcp_options *t)
{
    (void)tcp_set(fd, t, false);
}

int weir_tcp_apply(int fd, const struct weir_tcp_options *t)
{
    return tcp_set(fd, t, true);
}

void weir__sock_reset(int fd)
{
    struct linger lg = {.l_onoff = 1, .l_linger = 0};

    (void)setsockopt(fd, SOL_SOCKET, SO_LINGER, &lg, sizeof(lg));
}
