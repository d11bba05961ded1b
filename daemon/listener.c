/*
 * listener.c - tcp-listen and unix-listen: a listening socket on the main
 * loop, one accept in flight; each accepted connection becomes a stream
 * placed on the workers, or is refused when max_clients are connected.
 */
#include <errno.h>
#include <netinet/in.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "runtime.h"

int listener_open(struct listener *l)
{
    struct sockaddr_storage ss;
    socklen_t len;
    int one = 1, fd, rc;

    rc = sockaddr_resolve(l->addr, &ss, &len);
    if (rc)
        return rc;
    fd = socket(ss.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return -errno;
    if (ss.ss_family == AF_UNIX) {
        struct stat st;

        /* A socket left by an earlier run; anything else stays. */
        if (lstat(l->addr->path, &st) == 0 && S_ISSOCK(st.st_mode))
            unlink(l->addr->path);
    } else {
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    }
    if (bind(fd, (struct sockaddr *)&ss, len) != 0 ||
        listen(fd, (int)l->addr->backlog) != 0) {
        rc = -errno;
        close(fd);
        return rc;
    }
    l->fd = fd;
    len = sizeof(ss);
    if (getsockname(fd, (struct sockaddr *)&ss, &len) == 0) {
        char name[128];

        sockaddr_format((struct sockaddr *)&ss, len, name, sizeof(name));
        log_info("pipeline %s: listening on %s", l->pl->p->name, name);
    }
    return 0;
}

static void accepted(struct weir_op *op, int res, uint32_t flags)
{
    struct listener *l =
        (struct listener *)(void *)((char *)op - offsetof(struct listener, op));
    struct pipeline_rt *pl = l->pl;
    struct run *r = pl->run;
    const struct weir_address *a = l->addr;
    char peer[80];
    struct stream *s;

    (void)flags;
    if (l->closing || r->stopping) {
        if (res >= 0)
            close(res);
        listener_close(l);
        return;
    }
    if (res < 0) {
        if (res != -EINTR && res != -ECONNABORTED)
            log_warnx("pipeline %s: accept on %s: %s", pl->p->name, a->text,
                      strerror(-res));
        listener_arm(l);
        return;
    }
    sockaddr_format((struct sockaddr *)&l->peer, l->peerlen, peer,
                    sizeof(peer));
    if (a->max_clients && pl->clients >= a->max_clients) {
        log_warnx("pipeline %s: refused %s: max_clients=%u reached",
                  pl->p->name, peer, a->max_clients);
        close(res);
        listener_arm(l);
        return;
    }
    if (pl->mode == PL_SERVE)
        s = stream_new(pl, -1, res, peer);
    else
        s = stream_new(pl, res, -1, peer);
    if (!s) {
        log_warnx("pipeline %s: dropped %s: out of memory", pl->p->name, peer);
        close(res);
    } else {
        log_debug("pipeline %s: client %s connected", pl->p->name, peer);
        stream_start(s);
    }
    /* weir pipe serves one connection. */
    if (r->conf->oneshot)
        listener_close(l);
    else
        listener_arm(l);
}

void listener_arm(struct listener *l)
{
    int rc;

    l->peerlen = sizeof(l->peer);
    l->op.fn = accepted;
    rc = weir_loop_accept(l->pl->run->main, &l->op, l->fd,
                          (struct sockaddr *)&l->peer, &l->peerlen,
                          SOCK_CLOEXEC);
    if (rc)
        log_warnx("pipeline %s: cannot accept on %s: %s", l->pl->p->name,
                  l->addr->text, strerror(-rc));
}

void listener_close(struct listener *l)
{
    l->closing = true;
    if (l->op.pending) {
        weir_loop_cancel(l->pl->run->main, &l->op);
        return; /* accepted() comes back with -ECANCELED and closes */
    }
    if (l->fd >= 0) {
        close(l->fd);
        l->fd = -1;
        if (l->addr->kind == ADDR_UNIX_LISTEN)
            unlink(l->addr->path);
        run_check_finished(l->pl->run);
    }
}
