/*
 * listenfds.c - see listenfds.h.
 */
#include "serve/listenfds.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <systemd/sd-daemon.h>
#include <unistd.h>

struct passed {
    int fd;
    bool used;
    char *name;
};

struct listenfds {
    struct passed *fds;
    size_t n;
};

int listenfds_take(struct listenfds **out)
{
    struct listenfds *set = calloc(1, sizeof(*set));
    char **names = NULL;
    int n;

    if (set == NULL)
        return -ENOMEM;
    /* 1: unset the variables, so nothing started later mistakes them for
     * its own, and set FD_CLOEXEC on the fds. */
    n = sd_listen_fds_with_names(1, &names);
    if (n < 0) {
        free(set);
        return n;
    }
    if (n > 0) {
        set->fds = calloc((size_t)n, sizeof(*set->fds));
        if (set->fds == NULL) {
            for (int i = 0; names != NULL && i < n; i++)
                free(names[i]);
            free(names);
            free(set);
            return -ENOMEM;
        }
    }
    for (int i = 0; i < n; i++) {
        set->fds[i].fd = SD_LISTEN_FDS_START + i;
        set->fds[i].name = names ? names[i] : NULL;
    }
    set->n = (size_t)n;
    free(names); /* the strings now belong to the set */
    *out = set;
    return 0;
}

size_t listenfds_count(const struct listenfds *set)
{
    return set->n;
}

/* The bound address of fd, or -errno. */
static int bound(int fd, struct sockaddr_storage *ss, socklen_t *len)
{
    *len = sizeof(*ss);
    memset(ss, 0, sizeof(*ss));
    if (getsockname(fd, (struct sockaddr *)ss, len) != 0)
        return -errno;
    return 0;
}

/* Whether a passed socket bound at `b` serves `want`, a resolution of the
 * config's HOST:PORT. Ports were already compared. */
static bool inet_serves(int fd, const struct sockaddr_storage *b,
                        const struct sockaddr *want)
{
    if (want->sa_family == AF_INET6 && b->ss_family == AF_INET6)
        return memcmp(&((const struct sockaddr_in6 *)want)->sin6_addr,
                      &((const struct sockaddr_in6 *)b)->sin6_addr,
                      sizeof(struct in6_addr)) == 0;
    if (want->sa_family != AF_INET)
        return false;
    const struct in_addr *w = &((const struct sockaddr_in *)want)->sin_addr;
    if (b->ss_family == AF_INET)
        return w->s_addr == ((const struct sockaddr_in *)b)->sin_addr.s_addr;
    if (b->ss_family != AF_INET6)
        return false;

    /* An IPv6 socket serves IPv4 clients only when it is not v6-only:
     * [::] then stands for 0.0.0.0 as well, and ::ffff:a.b.c.d for
     * a.b.c.d. */
    const struct in6_addr *a6 = &((const struct sockaddr_in6 *)b)->sin6_addr;
    int v6only = 1;
    socklen_t optlen = sizeof(v6only);

    if (getsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &v6only, &optlen) != 0 ||
        v6only)
        return false;
    if (w->s_addr == htonl(INADDR_ANY))
        return IN6_IS_ADDR_UNSPECIFIED(a6);
    return IN6_IS_ADDR_V4MAPPED(a6) && memcmp(&a6->s6_addr[12], w, 4) == 0;
}

/* The index of the passed socket bound to a tcp-listen address, or
 * -ENOENT, or -errno from resolving the host. */
static int find_inet(const struct listenfds *set, const struct weir_address *a)
{
    struct addrinfo hints = {
        .ai_socktype = SOCK_STREAM,
        .ai_flags = AI_PASSIVE | AI_NUMERICSERV,
    };
    struct addrinfo *res;
    char port[8];
    int rc, found = -ENOENT;

    snprintf(port, sizeof(port), "%u", a->port);
    rc = getaddrinfo(a->host, port, &hints, &res);
    if (rc != 0)
        return rc == EAI_SYSTEM ? -errno : -EHOSTUNREACH;
    for (size_t i = 0; i < set->n && found < 0; i++) {
        struct sockaddr_storage b;
        socklen_t len;
        int fd = set->fds[i].fd;

        /* Family 0: any; listening: 1; the port as written. */
        if (sd_is_socket_inet(fd, 0, SOCK_STREAM, 1, a->port) <= 0 ||
            bound(fd, &b, &len) != 0)
            continue;
        for (struct addrinfo *ai = res; ai != NULL; ai = ai->ai_next)
            if (inet_serves(fd, &b, ai->ai_addr)) {
                found = (int)i;
                break;
            }
    }
    freeaddrinfo(res);
    return found;
}

static int find_unix(const struct listenfds *set, const struct weir_address *a)
{
    for (size_t i = 0; i < set->n; i++)
        /* A path socket (length 0: NUL-terminated), listening. */
        if (sd_is_socket_unix(set->fds[i].fd, SOCK_STREAM, 1, a->path, 0) > 0)
            return (int)i;
    return -ENOENT;
}

int listenfds_match(struct listenfds *set, const struct weir_address *addr)
{
    int i, fd;

    if (addr->kind == ADDR_TCP_LISTEN && addr->host != NULL)
        i = find_inet(set, addr);
    else if (addr->kind == ADDR_UNIX_LISTEN && addr->path != NULL)
        i = find_unix(set, addr);
    else
        return -ENOENT;
    if (i < 0)
        return i;
    /* The original stays in the set, so a reload can match it again after
     * the caller has closed its copy. */
    fd = fcntl(set->fds[i].fd, F_DUPFD_CLOEXEC, SD_LISTEN_FDS_START);
    if (fd < 0)
        return -errno;
    set->fds[i].used = true;
    return fd;
}

static void describe(const struct passed *p, struct listenfd_info *info)
{
    struct sockaddr_storage ss;
    socklen_t len;
    char host[INET6_ADDRSTRLEN];

    info->fd = p->fd;
    snprintf(info->name, sizeof(info->name), "%s",
             p->name ? p->name : "unknown");
    if (bound(p->fd, &ss, &len) != 0) {
        snprintf(info->addr, sizeof(info->addr), "not a socket");
    } else if (ss.ss_family == AF_INET) {
        const struct sockaddr_in *in = (const struct sockaddr_in *)&ss;

        inet_ntop(AF_INET, &in->sin_addr, host, sizeof(host));
        snprintf(info->addr, sizeof(info->addr), "%s:%u", host,
                 ntohs(in->sin_port));
    } else if (ss.ss_family == AF_INET6) {
        const struct sockaddr_in6 *in6 = (const struct sockaddr_in6 *)&ss;

        inet_ntop(AF_INET6, &in6->sin6_addr, host, sizeof(host));
        snprintf(info->addr, sizeof(info->addr), "[%s]:%u", host,
                 ntohs(in6->sin6_port));
    } else if (ss.ss_family == AF_UNIX &&
               len > offsetof(struct sockaddr_un, sun_path)) {
        const struct sockaddr_un *un = (const struct sockaddr_un *)&ss;
        size_t n = len - offsetof(struct sockaddr_un, sun_path);

        /* An abstract name starts with a NUL and runs to len; show it
         * with '@', as systemd does. */
        if (un->sun_path[0] != '\0')
            snprintf(info->addr, sizeof(info->addr), "unix:%.*s",
                     (int)strnlen(un->sun_path, n), un->sun_path);
        else
            snprintf(info->addr, sizeof(info->addr), "unix:@%.*s", (int)(n - 1),
                     un->sun_path + 1);
    } else {
        snprintf(info->addr, sizeof(info->addr), "socket family %d",
                 ss.ss_family);
    }
}

size_t listenfds_unused(const struct listenfds *set, struct listenfd_info *out,
                        size_t max)
{
    size_t count = 0;

    for (size_t i = 0; i < set->n; i++) {
        if (set->fds[i].used)
            continue;
        if (count < max)
            describe(&set->fds[i], &out[count]);
        count++;
    }
    return count;
}

void listenfds_free(struct listenfds *set)
{
    if (set == NULL)
        return;
    for (size_t i = 0; i < set->n; i++) {
        close(set->fds[i].fd);
        free(set->fds[i].name);
    }
    free(set->fds);
    free(set);
}
