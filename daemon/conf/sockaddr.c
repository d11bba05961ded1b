/*
 * sockaddr.c - addresses of the config as socket addresses.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netdb.h>
#include <stdio.h>
#include <string.h>
#include <sys/un.h>

#include "conf/sockaddr.h"

int sockaddr_resolve(const struct weir_address *a, struct sockaddr_storage *ss,
                     socklen_t *len)
{
    struct addrinfo hints = {.ai_socktype = SOCK_STREAM}, *res;
    char port[8];
    int rc;

    memset(ss, 0, sizeof(*ss));
    if (a->kind == ADDR_UNIX || a->kind == ADDR_UNIX_LISTEN) {
        struct sockaddr_un *un = (struct sockaddr_un *)ss;

        if (strlen(a->path) >= sizeof(un->sun_path))
            return -ENAMETOOLONG;
        un->sun_family = AF_UNIX;
        strcpy(un->sun_path, a->path);
        *len = sizeof(*un);
        return 0;
    }
    snprintf(port, sizeof(port), "%u", a->port);
    if (a->kind == ADDR_TCP_LISTEN)
        hints.ai_flags = AI_PASSIVE;
    rc = getaddrinfo(a->host, port, &hints, &res);
    if (rc != 0)
        return rc == EAI_SYSTEM ? -errno : -EHOSTUNREACH;
    memcpy(ss, res->ai_addr, res->ai_addrlen);
    *len = res->ai_addrlen;
    freeaddrinfo(res);
    return 0;
}

static void check_name(const struct weir_address *a, const char *what,
                       struct conf_diag *diag)
{
    struct addrinfo hints = {.ai_socktype = SOCK_STREAM}, *res;
    char port[8];
    int rc;

    if (a == NULL || a->kind != ADDR_TCP)
        return;
    snprintf(port, sizeof(port), "%u", a->port);
    rc = getaddrinfo(a->host, port, &hints, &res);
    if (rc == 0) {
        freeaddrinfo(res);
        return;
    }
    config_warning(diag, &a->loc,
                   "%s %s: cannot resolve %s now (%s); weir retries it at "
                   "run time",
                   what, a->text, a->host, gai_strerror(rc));
}

void sockaddr_check_names(const struct weir_config *conf,
                          struct conf_diag *diag)
{
    for (size_t i = 0; i < conf->npipelines; i++) {
        const struct weir_pipeline *p = conf->pipelines[i];

        check_name(p->source, "source", diag);
        for (size_t j = 0; j < p->nsinks; j++)
            check_name(p->sinks[j], "sink", diag);
    }
}

void sockaddr_format(const struct sockaddr *sa, socklen_t len, char *buf,
                     size_t size)
{
    char host[INET6_ADDRSTRLEN];

    if (sa->sa_family == AF_INET) {
        const struct sockaddr_in *in = (const struct sockaddr_in *)sa;

        inet_ntop(AF_INET, &in->sin_addr, host, sizeof(host));
        snprintf(buf, size, "%s:%u", host, ntohs(in->sin_port));
    } else if (sa->sa_family == AF_INET6) {
        const struct sockaddr_in6 *in6 = (const struct sockaddr_in6 *)sa;

        inet_ntop(AF_INET6, &in6->sin6_addr, host, sizeof(host));
        snprintf(buf, size, "[%s]:%u", host, ntohs(in6->sin6_port));
    } else if (sa->sa_family == AF_UNIX && len > sizeof(sa_family_t) &&
               ((const struct sockaddr_un *)sa)->sun_path[0]) {
        snprintf(buf, size, "unix:%s",
                 ((const struct sockaddr_un *)sa)->sun_path);
    } else {
        snprintf(buf, size, "unix peer");
    }
}
