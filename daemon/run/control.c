/*
 * control.c - the control socket: a unix stream socket (by default
 * /run/weir/control, in the unit's RuntimeDirectory) that answers one
 * request per connection (sys/ctlreq.h) with the status board and then
 * closes. `weir status` and `weir top` are its clients.
 *
 * It lives on the main loop, like the metrics endpoint: the board is
 * read on the thread that owns the run. Its mode is 0600 and its owner
 * the user weir runs as; the socket is bound under a temporary name,
 * given its mode, then renamed into place, so no one else can connect
 * in between (and a stale socket of an earlier run is replaced; a file
 * that is not a socket is never replaced: a control_socket that names
 * the config by mistake must not destroy it).
 *
 * Bounds: CONN_MAX connections at once (the rest wait in a backlog of
 * SOMAXCONN), a request of CTLREQ_MAX bytes, CONN_TIMEOUT_NS for the
 * whole exchange. Local clients that connect and say nothing cannot
 * lock `weir status` out: when every slot is taken, the oldest client
 * still silent is cut to make room.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "run/run_impl.h"
#include "sys/ctlreq.h"

#define CONN_MAX        64
#define CONN_TIMEOUT_NS (2ull * 1000 * 1000 * 1000)

struct control;

struct conn {
    struct control *c;
    bool used, ending;
    int fd;
    uint64_t serial; /* the order of accepts: the lowest is the oldest */
    char req[CTLREQ_MAX];
    size_t got;
    char *reply;
    size_t len, sent;
    struct weir_op io; /* the recv, then the sends */
    struct weir_timer timer;
};

struct control {
    struct run *r;
    int lfd;
    char *path;
    struct stat st; /* the socket file's, to remove only our own */
    struct weir_op accept_op;
    struct conn conns[CONN_MAX];
    unsigned nconns;
    uint64_t accepts;
};

static void accept_arm(struct control *c);

static void conn_done(struct conn *k)
{
    struct control *c = k->c;

    if (k->io.pending || k->timer.op.pending)
        return; /* the last callback comes back here */
    close(k->fd);
    free(k->reply);
    k->reply = NULL;
    k->used = false;
    if (c->nconns-- == CONN_MAX)
        accept_arm(c);
}

static void conn_end(struct conn *k)
{
    struct weir_loop *main = k->c->r->main;

    k->ending = true;
    if (k->timer.op.pending)
        weir_loop_timer_stop(main, &k->timer);
    if (k->io.pending)
        weir_loop_cancel(main, &k->io);
    conn_done(k);
}

static void sent(struct weir_op *op, int res, uint32_t flags);

static void send_more(struct conn *k)
{
    size_t n = k->len - k->sent;

    k->io.fn = sent;
    if (n > (1u << 30))
        n = 1u << 30;
    if (weir_loop_send(k->c->r->main, &k->io, k->fd, k->reply + k->sent,
                       (uint32_t)n, MSG_NOSIGNAL) != 0)
        conn_end(k);
}

static void sent(struct weir_op *op, int res, uint32_t flags)
{
    struct conn *k = weir_container_of(op, struct conn, io);

    (void)flags;
    if (k->ending || res <= 0) {
        conn_end(k);
        return;
    }
    k->sent += (size_t)res;
    if (k->sent < k->len)
        send_more(k);
    else
        conn_end(k);
}

static void reply_error(struct conn *k, const char *what)
{
    size_t n = strlen(what) + 9;

    k->reply = malloc(n);
    if (!k->reply) {
        conn_end(k);
        return;
    }
    k->len = (size_t)snprintf(k->reply, n, "error: %s\n", what);
}

static void answer(struct conn *k)
{
    struct ctlreq req;
    int rc = ctlreq_parse(k->req, k->got, &req);

    if (rc == -E2BIG) {
        reply_error(k, "request too long");
    } else if (rc < 0) {
        reply_error(k, req.err);
    } else {
        k->reply =
            board_render(k->c->r, req.json, req.worst, req.width, &k->len);
        if (!k->reply)
            reply_error(k, "out of memory");
    }
    if (!k->ending && k->reply) {
        k->sent = 0;
        send_more(k);
    }
}

static void recv_more(struct conn *k);

static void received(struct weir_op *op, int res, uint32_t flags)
{
    struct conn *k = weir_container_of(op, struct conn, io);
    struct ctlreq req;

    (void)flags;
    if (k->ending || res <= 0) {
        conn_end(k);
        return;
    }
    k->got += (size_t)res;
    if (ctlreq_parse(k->req, k->got, &req) == -EAGAIN)
        recv_more(k);
    else
        answer(k);
}

static void recv_more(struct conn *k)
{
    k->io.fn = received;
    if (weir_loop_recv(k->c->r->main, &k->io, k->fd, k->req + k->got,
                       (uint32_t)(sizeof(k->req) - k->got), 0) != 0)
        conn_end(k);
}

static void timed_out(struct weir_op *op, int res, uint32_t flags)
{
    struct conn *k = weir_container_of(op, struct conn, timer.op);

    (void)flags;
    if (res == -ECANCELED || k->ending) {
        conn_done(k);
        return;
    }
    log_debug("control: a client took too long; closing it");
    conn_end(k);
}

/* Every slot is taken: the oldest client that has not sent its request
 * goes, so that the next one in the backlog is served. */
static void push_out_idle(struct control *c)
{
    struct conn *old = NULL;

    for (unsigned i = 0; i < CONN_MAX; i++) {
        struct conn *k = &c->conns[i];

        if (k->used && !k->ending && !k->reply &&
            (!old || k->serial < old->serial))
            old = k;
    }
    if (old) {
        log_debug("control: %u clients at once; closing the oldest silent "
                  "one",
                  CONN_MAX);
        conn_end(old);
    }
}

static void conn_start(struct control *c, int fd)
{
    struct conn *k = NULL;

    for (unsigned i = 0; i < CONN_MAX && !k; i++)
        if (!c->conns[i].used)
            k = &c->conns[i];
    if (!k) {
        close(fd);
        return;
    }
    *k = (struct conn){.c = c, .used = true, .fd = fd, .serial = c->accepts++};
    c->nconns++;
    k->timer.op.fn = timed_out;
    weir_loop_timer_start(c->r->main, &k->timer, CONN_TIMEOUT_NS);
    recv_more(k);
    if (c->nconns == CONN_MAX)
        push_out_idle(c);
}

static void accepted(struct weir_op *op, int res, uint32_t flags)
{
    struct control *c = weir_container_of(op, struct control, accept_op);

    (void)flags;
    if (res == -ECANCELED)
        return;
    if (res >= 0)
        conn_start(c, res);
    else if (res != -EAGAIN && res != -EINTR && res != -ECONNABORTED)
        log_debug("control: accept: %s", strerror(-res));
    if (c->nconns < CONN_MAX)
        accept_arm(c);
}

static void accept_arm(struct control *c)
{
    c->accept_op.fn = accepted;
    if (weir_loop_accept(c->r->main, &c->accept_op, c->lfd, NULL, NULL,
                         SOCK_CLOEXEC) != 0)
        log_warnx("control: cannot accept on %s; it stops answering", c->path);
}

/* Another weir answers at path: connecting succeeds. */
static bool in_use(const struct sockaddr_un *un)
{
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    bool yes;

    if (fd < 0)
        return false;
    yes = connect(fd, (const struct sockaddr *)un, sizeof(*un)) == 0;
    close(fd);
    return yes;
}

/* 0 when nothing, or a socket, is at path: what the rename may replace. */
static int replaceable(const char *path)
{
    struct stat st;

    if (lstat(path, &st) != 0)
        return errno == ENOENT ? 0 : -errno;
    return S_ISSOCK(st.st_mode) ? 0 : -EEXIST;
}

/* The listening socket at path, 0600 from its first moment there.
 * Returns the fd or -errno (-EEXIST: a file that is not a socket is
 * there). */
static int listen_at(const char *path)
{
    struct sockaddr_un un = {.sun_family = AF_UNIX}, tmp = un;
    int fd, rc;

    if (strlen(path) >= sizeof(un.sun_path) ||
        snprintf(tmp.sun_path, sizeof(tmp.sun_path), "%s.%ld", path,
                 (long)getpid()) >= (int)sizeof(tmp.sun_path))
        return -ENAMETOOLONG;
    memcpy(un.sun_path, path, strlen(path) + 1);
    if (in_use(&un))
        return -EADDRINUSE;
    if ((rc = replaceable(path)) != 0)
        return rc;
    fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return -errno;
    unlink(tmp.sun_path);
    if (bind(fd, (struct sockaddr *)&tmp, sizeof(tmp)) != 0) {
        rc = -errno;
        close(fd);
        return rc;
    }
    if (chmod(tmp.sun_path, 0600) != 0 || listen(fd, SOMAXCONN) != 0 ||
        (rc = replaceable(path)) != 0 || rename(tmp.sun_path, path) != 0) {
        rc = rc ? rc : -errno;
        unlink(tmp.sun_path);
        close(fd);
        return rc;
    }
    return fd;
}

/* Why path cannot be the control socket, for the log. */
static const char *why_not(int err)
{
    if (err == -EADDRINUSE)
        return "another weir answers there";
    if (err == -EEXIST)
        return "a file that is not a socket is there; it is left as it is";
    return strerror(-err);
}

/* The default socket's directory (/run/weir, $XDG_RUNTIME_DIR/weir) is
 * made when missing: under systemd the unit's RuntimeDirectory is, but
 * run by hand it is not, and `weir status` looks there. */
static void make_parent(const char *path)
{
    char dir[CONF_MAX_CONTROL + 1];
    const char *slash = strrchr(path, '/');

    if (!slash || slash == path || (size_t)(slash - path) >= sizeof(dir))
        return;
    memcpy(dir, path, (size_t)(slash - path));
    dir[slash - path] = '\0';
    if (mkdir(dir, geteuid() == 0 ? 0755 : 0700) == 0)
        log_debug("control socket: made %s", dir);
}

int control_start(struct run *r)
{
    const char *path = r->conf->daemon.control_socket;
    bool asked = r->conf->daemon.control_socket_set;
    struct control *c;
    int fd;

    if (!path)
        return 0;
    if (!asked)
        make_parent(path);
    fd = listen_at(path);
    if (fd < 0) {
        if (asked) {
            log_errx("control socket %s: %s", path, why_not(fd));
            return fd;
        }
        /* The default, where it cannot be made: go on without. */
        log_info("control socket %s: %s; weir status needs "
                 "[daemon] control_socket",
                 path, why_not(fd));
        return 0;
    }
    c = calloc(1, sizeof(*c));
    if (!c || !(c->path = strdup(path))) {
        free(c);
        unlink(path);
        close(fd);
        log_errx("control socket: out of memory");
        return -ENOMEM;
    }
    c->r = r;
    c->lfd = fd;
    if (stat(path, &c->st) != 0)
        c->st.st_ino = 0;
    r->control = c;
    accept_arm(c);
    log_debug("control socket: %s", path);
    return 0;
}

void control_free(struct run *r)
{
    struct control *c = r->control;
    struct stat st;

    if (!c)
        return;
    for (unsigned i = 0; i < CONN_MAX; i++)
        if (c->conns[i].used) {
            close(c->conns[i].fd);
            free(c->conns[i].reply);
        }
    /* A later weir may have taken the name already. */
    if (stat(c->path, &st) == 0 && st.st_ino == c->st.st_ino &&
        st.st_dev == c->st.st_dev)
        unlink(c->path);
    close(c->lfd);
    free(c->path);
    free(c);
    r->control = NULL;
}
