/*
 * listener.c - a listening socket with one accept in flight (listener.h).
 */
#include "serve/listener.h"

#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "conf/sockaddr.h"
#include "conf/value.h"
#include "sys/clock.h"
#include "sys/log.h"

/*
 * When accept fails for want of fds or memory, the connection stays in
 * the backlog and the next accept would fail at once: accepting again
 * right away spins a core and floods the log. So accepts pause for
 * PAUSE_NS (nginx pauses 500 ms too), one warning per episode, and one
 * line when accepts go through again.
 */
#define PAUSE_NS (500ull * 1000 * 1000)

/* Holds the owner while the socket is open or an accept is pending. */
static void settle(struct listener *l)
{
    bool busy = l->fd >= 0 || l->op.pending || l->pause.op.pending;

    if (busy && !l->held) {
        l->held = true;
        alive_hold(l->alive);
    } else if (!busy && l->held) {
        l->held = false;
        alive_drop(l->alive);
    }
}

static void log_listening(const struct listener *l)
{
    struct sockaddr_storage ss;
    socklen_t len = sizeof(ss);
    char name[128], lowat[32];

    if (getsockname(l->fd, (struct sockaddr *)&ss, &len) != 0)
        return;
    sockaddr_format((struct sockaddr *)&ss, len, name, sizeof(name));
    if (l->addr->kind != ADDR_TCP_LISTEN) {
        log_info("pipeline %s: listening on %s%s", l->name, name,
                 l->systemd ? " (from systemd)" : "");
        return;
    }
    if (l->notsent_lowat == 0)
        strcpy(lowat, "none");
    else
        value_size_format(l->notsent_lowat, lowat, sizeof(lowat));
    log_info("pipeline %s: listening on %s%s (%s, notsent_lowat %s)", l->name,
             name, l->systemd ? " (from systemd)" : "", l->congestion, lowat);
}

static int bind_socket(struct listener *l)
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
    return fd;
}

/*
 * notsent_lowat=auto: the bound by the congestion control the accepted
 * connections will have, which is the listening socket's (its own, or the
 * system's default). A pacing control (bbr) sends at its own rate, not as
 * fast as the window allows, so unsent bytes wait longer in each socket:
 * a thousand readers at 1 MiB pushed the machine past tcp_mem's pressure
 * mark, and the kernel dropped and resent. Under a control that sends what
 * the window allows the queues drain at once, and the larger bound saves
 * sendfile rounds (bench/results/serve.md has both).
 */
static int auto_lowat(const char *cc)
{
    return strncmp(cc, "bbr", 3) == 0 ? CONF_NOTSENT_PACED
                                      : CONF_NOTSENT_UNPACED;
}

/*
 * The options of every connection the socket accepts, set once on the
 * socket: accepted connections inherit its keepalive, TCP_USER_TIMEOUT,
 * congestion control, TCP_NOTSENT_LOWAT and (http-listen) TCP_NODELAY,
 * so a client costs no call of its own. All of them are set, zeros too,
 * so that a socket taken over by a new definition keeps nothing of the
 * old one's.
 *
 * A client's socket queues at most notsent_lowat bytes not yet sent, on
 * top of what is in flight, which the window still bounds as usual.
 * Without it the kernel grows each send buffer to megabytes, and a
 * thousand clients that do not read (their window is closed) hold
 * gigabytes of the kernel's TCP memory: past tcp_mem's pressure mark
 * every socket of the machine is throttled, the healthy ones too
 * (bench/results/hostile.md, `weir-bench hostile`).
 */
static void tune_socket(struct listener *l)
{
    socklen_t len;
    int lowat, rc;

    if (l->addr->kind != ADDR_TCP_LISTEN)
        return;
    /* The congestion control first, then read back: the system's when
     * the config names none. */
    rc = weir_tcp_apply(l->fd, &l->tcp);
    len = sizeof(l->congestion) - 1;
    memset(l->congestion, 0, sizeof(l->congestion));
    if (getsockopt(l->fd, IPPROTO_TCP, TCP_CONGESTION, l->congestion, &len))
        strcpy(l->congestion, "unknown");
    lowat = l->addr->notsent_lowat == CONF_NOTSENT_AUTO
                ? auto_lowat(l->congestion)
                : (int)l->addr->notsent_lowat;
    if (setsockopt(l->fd, IPPROTO_TCP, TCP_NOTSENT_LOWAT, &lowat,
                   sizeof(lowat)) != 0 &&
        rc == 0)
        rc = -errno;
    l->notsent_lowat = (unsigned)lowat;
    /* An HTTP answer's last segment goes out at once, not after the
     * client's acknowledgement of the one before it (Nagle): the head
     * and the first bytes of a file are joined by MSG_MORE instead. */
    if (setsockopt(l->fd, IPPROTO_TCP, TCP_NODELAY, &(int){l->addr->serve_http},
                   sizeof(int)) != 0 &&
        rc == 0)
        rc = -errno;
    /* Best effort: a kernel without one of them still serves. */
    if (rc)
        log_warnx("pipeline %s: %s: cannot set every TCP option of its "
                  "clients: %s",
                  l->name, l->addr->text, strerror(-rc));
}

int listener_open(struct listener *l, struct listenfds *lfds)
{
    int fd;

    /* A socket systemd passed comes first: before anything unlinks a
     * unix path, which would orphan the socket systemd bound there. */
    fd = lfds ? listenfds_match(lfds, l->addr) : -ENOENT;
    if (fd >= 0)
        l->systemd = true;
    else if (fd == -ENOENT)
        fd = bind_socket(l);
    if (fd < 0)
        return fd;
    l->fd = fd;
    tune_socket(l);
    settle(l);
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
    tune_socket(l);
    settle(l);
    /* Both accepts may be pending on the socket for a moment: the kernel
     * gives each connection to one of them, and a connection the old one
     * takes before its cancel lands goes to the owner of the address now
     * (on_client sees from->closing). */
    from->closing = true;
    if (from->op.pending)
        weir_loop_cancel(from->loop, &from->op);
    settle(from);
    log_info("pipeline %s: took over %s from the old definition", l->name,
             l->addr->text);
}

static bool out_of_resources(int err)
{
    return err == -EMFILE || err == -ENFILE || err == -ENOBUFS ||
           err == -ENOMEM;
}

static void pause_fire(struct weir_op *op, int res, uint32_t flags)
{
    struct listener *l = weir_container_of(op, struct listener, pause.op);

    (void)flags;
    if (res != -ECANCELED && !l->closing) {
        listener_arm(l);
        return;
    }
    settle(l);
}

/*
 * A client accepted at the fd limit would get a socket and then no fd
 * for its stream's file: it would be closed unserved. So the listener
 * accepts only while it holds a few spare fds (dups of its socket),
 * which it lets go just before handing the client on: the stream's own
 * opens find them. Taking them back fails at the limit, and accepting
 * pauses instead, leaving clients in the backlog until fds come free.
 */
#define NSPARE (sizeof(((struct listener *)0)->spare) / sizeof(int))

static int spares_take(struct listener *l)
{
    while (l->nspare < NSPARE) {
        int fd = fcntl(l->fd, F_DUPFD_CLOEXEC, 0);

        if (fd < 0)
            return -errno;
        l->spare[l->nspare++] = fd;
    }
    return 0;
}

static void spares_give(struct listener *l)
{
    while (l->nspare > 0)
        close(l->spare[--l->nspare]);
}

/* Out of fds or memory: try again after PAUSE_NS, saying so once. */
static void accept_pause(struct listener *l, int err)
{
    l->paused_refusals++;
    if (!l->paused_since) {
        l->paused_since = clock_now_ns();
        l->paused_refusals = 1;
        log_warnx("pipeline %s: cannot accept on %s: %s; pausing accepts "
                  "for %llu ms at a time until it clears",
                  l->name, l->addr->text, strerror(-err),
                  (unsigned long long)(PAUSE_NS / 1000000));
    }
    l->pause.op.fn = pause_fire;
    if (weir_loop_timer_start(l->loop, &l->pause, PAUSE_NS) != 0)
        listener_arm(l); /* no timer: accepting late beats never */
}

/* The first accept after an episode of pauses. */
static void accept_resumed(struct listener *l)
{
    int64_t ms = (clock_now_ns() - l->paused_since) / 1000000;

    log_info("pipeline %s: accepting on %s again after %lld ms (%lu "
             "attempts failed)",
             l->name, l->addr->text, (long long)ms, l->paused_refusals);
    l->paused_since = 0;
}

static void accepted(struct weir_op *op, int res, uint32_t flags)
{
    struct listener *l = weir_container_of(op, struct listener, op);
    char peer[80];

    (void)flags;
    if (res >= 0)
        sockaddr_format((const struct sockaddr *)&l->peer, l->peerlen, peer,
                        sizeof(peer));
    if (l->closing) {
        spares_give(l);
        if (res >= 0)
            l->on_client(l, res, peer);
        listener_close(l);
        return;
    }
    if (res < 0 && out_of_resources(res)) {
        accept_pause(l, res);
        return;
    }
    if (l->paused_since && res >= 0)
        accept_resumed(l);
    if (res < 0) {
        if (res != -EINTR && res != -ECONNABORTED)
            log_warnx("pipeline %s: accept on %s: %s", l->name, l->addr->text,
                      strerror(-res));
        listener_arm(l);
        return;
    }
    spares_give(l);
    l->on_client(l, res, peer);
    if (!l->closing)
        listener_arm(l);
}

void listener_arm(struct listener *l)
{
    int rc;

    rc = spares_take(l);
    if (rc && out_of_resources(rc)) {
        accept_pause(l, rc);
        return;
    }
    l->peerlen = sizeof(l->peer);
    l->op.fn = accepted;
    rc = weir_loop_accept(l->loop, &l->op, l->fd, (struct sockaddr *)&l->peer,
                          &l->peerlen, SOCK_CLOEXEC);
    if (rc)
        log_warnx("pipeline %s: cannot accept on %s: %s", l->name,
                  l->addr->text, strerror(-rc));
}

static void close_socket(struct listener *l)
{
    spares_give(l);
    if (l->fd < 0)
        return;
    close(l->fd);
    l->fd = -1;
    if (l->addr->kind == ADDR_UNIX_LISTEN && !l->systemd)
        unlink(l->addr->path);
}

void listener_close(struct listener *l)
{
    l->closing = true;
    if (l->pause.op.pending)
        weir_loop_timer_stop(l->loop, &l->pause);
    if (l->op.pending) {
        weir_loop_cancel(l->loop, &l->op);
        return; /* accepted() comes back with -ECANCELED and closes */
    }
    close_socket(l);
    settle(l);
}

void listener_free(struct listener *l)
{
    close_socket(l);
}
