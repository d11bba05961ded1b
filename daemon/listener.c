/*
 * listener.c - tcp-listen and unix-listen: a listening socket on the main
 * loop, one accept in flight; each accepted connection becomes a stream
 * placed on the workers, or is refused when max_clients are connected.
 */
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "listenfds.h"
#include "runtime.h"

static void log_listening(const struct listener *l)
{
    struct sockaddr_storage ss;
    socklen_t len = sizeof(ss);
    char name[128];

    if (getsockname(l->fd, (struct sockaddr *)&ss, &len) != 0)
        return;
    sockaddr_format((struct sockaddr *)&ss, len, name, sizeof(name));
    log_info("pipeline %s: listening on %s%s", l->pl->p->name, name,
             l->systemd ? " (from systemd)" : "");
}

int listener_open(struct listener *l)
{
    struct sockaddr_storage ss;
    socklen_t len;
    int one = 1, fd, rc;

    /* A socket systemd passed comes first: before anything unlinks a
     * unix path, which would orphan the socket systemd bound there. */
    if (l->pl->run->lfds) {
        fd = listenfds_match(l->pl->run->lfds, l->addr);
        if (fd >= 0) {
            l->fd = fd;
            l->systemd = true;
            log_listening(l);
            return 0;
        }
        if (fd != -ENOENT)
            return fd;
    }
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
    log_listening(l);
    return 0;
}

bool listener_same_addr(const struct weir_address *a,
                        const struct weir_address *b)
{
    struct sockaddr_storage sa, sb;
    socklen_t la, lb;

    if (a->kind != b->kind)
        return false;
    if (a->kind == ADDR_UNIX_LISTEN)
        return strcmp(a->path, b->path) == 0;
    if (a->port != b->port)
        return false;
    if (sockaddr_resolve(a, &sa, &la) != 0 ||
        sockaddr_resolve(b, &sb, &lb) != 0)
        return false;
    return la == lb && memcmp(&sa, &sb, la) == 0;
}

void listener_take_over(struct listener *l, struct listener *from)
{
    l->fd = from->fd;
    l->systemd = from->systemd;
    from->fd = -1;
    /* Both accepts may be pending on the socket for a moment: the kernel
     * gives each connection to one of them, and a connection the old one
     * takes before its cancel lands goes to this pipeline (accepted()). */
    from->closing = true;
    if (from->op.pending)
        weir_loop_cancel(from->pl->run->main, &from->op);
    log_info("pipeline %s: took over %s from the old definition",
             l->pl->p->name, l->addr->text);
}

/* The listener that serves a's address now, for a connection accepted by a
 * listener that has handed its socket over. */
static struct listener *successor(struct run *r, const struct weir_address *a)
{
    for (struct pipeline_rt *pl = r->pls; pl; pl = pl->next) {
        if (pl->draining)
            continue;
        for (unsigned j = 0; j < pl->nls; j++)
            if (pl->ls[j].fd >= 0 && !pl->ls[j].closing &&
                listener_same_addr(pl->ls[j].addr, a))
                return &pl->ls[j];
    }
    return NULL;
}

static void client_start(struct listener *l, int fd,
                         const struct sockaddr_storage *peer,
                         socklen_t peerlen);

/* A connection that a closing listener accepted before its cancel landed:
 * when it had handed its socket over, the connection belongs to the
 * pipeline that serves the address now. */
static void late_client(struct listener *l, int fd)
{
    struct run *r = l->pl->run;
    struct listener *next =
        l->fd < 0 && !r->stopping ? successor(r, l->addr) : NULL;

    if (next)
        client_start(next, fd, &l->peer, l->peerlen);
    else
        close(fd);
}

static void accepted(struct weir_op *op, int res, uint32_t flags)
{
    struct listener *l =
        (struct listener *)(void *)((char *)op - offsetof(struct listener, op));
    struct pipeline_rt *pl = l->pl;
    struct run *r = pl->run;
    const struct weir_address *a = l->addr;

    (void)flags;
    if (l->closing || r->stopping) {
        if (res >= 0)
            late_client(l, res);
        listener_close(l);
        pipeline_reap_later(r);
        return;
    }
    if (res < 0) {
        if (res != -EINTR && res != -ECONNABORTED)
            log_warnx("pipeline %s: accept on %s: %s", pl->p->name, a->text,
                      strerror(-res));
        listener_arm(l);
        return;
    }
    client_start(l, res, &l->peer, l->peerlen);
    /* weir pipe serves one connection. */
    if (r->conf->oneshot)
        listener_close(l);
    else
        listener_arm(l);
}

/* A new connection on l: a stream, or a refusal. */
static void client_start(struct listener *l, int res,
                         const struct sockaddr_storage *from, socklen_t fromlen)
{
    struct pipeline_rt *pl = l->pl;
    const struct weir_address *a = l->addr;
    char peer[80];
    struct stream *s;

    sockaddr_format((const struct sockaddr *)from, fromlen, peer, sizeof(peer));
    if (pl->mode == PL_BROADCAST) {
        broadcast_client(l, res, peer);
        return;
    }
    if (a->max_clients && pl->clients >= a->max_clients) {
        log_warnx("pipeline %s: refused %s: max_clients=%u reached",
                  pl->p->name, peer, a->max_clients);
        close(res);
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
        /* A dup the main thread keeps, so that a drain timeout can shut
         * the connection down while a worker owns the stream's fd. */
        s->kill_fd = fcntl(res, F_DUPFD_CLOEXEC, 0);
        stream_start(s);
    }
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
        if (l->addr->kind == ADDR_UNIX_LISTEN && !l->systemd)
            unlink(l->addr->path);
        run_check_finished(l->pl->run);
    }
}
