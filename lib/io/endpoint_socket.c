/*
 * endpoint_socket.c - the socket sink that owns its connection: connect,
 * retry with exponential backoff while the peer is down, and after a loss
 * reconnect and resend from the last byte the old peer acknowledged.
 *
 * Offsets are stream offsets (bytes of this sink's stream from its first).
 * stream_sent: bytes handed to some connection's kernel; conn_base: the
 * offset of the current connection's first byte; conn_sent: bytes handed to
 * it. After a loss, TCP_INFO's tcpi_bytes_acked (weir__ep_conn_acked)
 * says how many of conn_sent the peer's TCP acknowledged; the new
 * connection starts there, resending [acked, stream_sent) from the replay
 * file, then goes on with the batch that was being written. Bytes the peer
 * received but whose acknowledgement had not come back are sent again: the
 * only bytes that may arrive twice. Without a replay file (a socket source)
 * the unacknowledged bytes are lost instead, and the new connection starts
 * at stream_sent.
 *
 * The resend reads the file with pread on the loop's thread: reconnects
 * are rare, the bytes are recent (in the page cache), and a synchronous
 * read keeps this path short.
 */
#include <errno.h>
#include <netdb.h>
#include <string.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "endpoint_impl.h"
#include "sock_util.h"

#define REPLAY_BUF (256u * 1024u)

/* A resuming sink's send buffer (the kernel doubles it): what the peer
 * has not acknowledged is kept in the copy too, so this bounds the copy
 * to about 2 MiB plus one member instead of the autotuned maximum. */
#define RESUME_SNDBUF (1 << 20)

static int conn_begin(struct weir_endpoint *ep);
static int conn_connect_at(struct weir_endpoint *ep);
static void conn_fail(struct weir_endpoint *ep, int err);
static void conn_backoff(struct weir_endpoint *ep);

static void ep_event(struct weir_endpoint *ep, enum weir_endpoint_event ev,
                     int err, uint64_t off)
{
    if (ep->so.on_event)
        ep->so.on_event(ep->so.event_arg, ev, err, off);
}

static void conn_close(struct weir_endpoint *ep)
{
    if (ep->tls) {
        weir__tls_unref(ep->tls);
        ep->tls = NULL;
    }
    /* The watch of this connection ends with it; its answer, when it
     * comes, is recognised as stale (watch_gen). */
    if (ep->watch_op.pending)
        weir_loop_cancel(ep->loop, &ep->watch_op);
    if (ep->fd >= 0)
        close(ep->fd);
    ep->fd = -1;
}

/*
 * The watch. A connected sink usually has nothing to read: a collector
 * does not answer. So a poll for input on its socket, kept armed while it
 * is up, fires only when the peer closes or resets (or fails), and the
 * loss is taken then, not at the next write, which on a quiet log may be
 * minutes later and would first be accepted by the kernel into a dead
 * connection. Whatever the peer does send is read and dropped. A loss
 * seen while a send is pending is handed to that send: the socket is shut
 * down, the send fails, and its callback takes the loss as usual.
 */
static _Thread_local uint8_t watch_scratch[16384];

static void watch_arm(struct weir_endpoint *ep);

static int watch_check(struct weir_endpoint *ep, int res)
{
    int soerr = 0;
    socklen_t len = sizeof(soerr);

    if (res < 0)
        return res;
    if (res & POLLIN) {
        for (int k = 0; k < 4; k++) {
            ssize_t n = recv(ep->fd, watch_scratch, sizeof(watch_scratch),
                             MSG_DONTWAIT);

            if (n == 0)
                return -EPIPE; /* the peer closed its end */
            if (n < 0)
                return errno == EAGAIN || errno == EINTR ? 0 : -errno;
        }
        return 0;
    }
    if (res & (POLLERR | POLLHUP | POLLRDHUP)) {
        if (getsockopt(ep->fd, SOL_SOCKET, SO_ERROR, &soerr, &len) == 0 &&
            soerr)
            return -soerr;
        return -EPIPE;
    }
    return 0;
}

static void watch_done(struct weir_op *op, int res, uint32_t flags)
{
    struct weir_endpoint *ep = EP_CONTAINER(op, struct weir_endpoint, watch_op);
    int err;

    (void)flags;
    if (weir__ep_op_done(ep) || ep->closing || ep->failed)
        return;
    if (ep->conn != CONN_UP && ep->conn != CONN_REPLAY)
        return; /* lost meanwhile; the next connection arms it again */
    if (ep->watch_gen != ep->conn_gen || res == -ECANCELED) {
        watch_arm(ep);
        return;
    }
    err = watch_check(ep, res);
    if (err == 0) {
        watch_arm(ep);
        return;
    }
    if (ep->wr_op.pending) {
        ep->io_err = err;
        shutdown(ep->fd, SHUT_RDWR);
        return;
    }
    if (!weir__ep_socket_lost(ep, err))
        ep->failed = err; /* no reconnect: the next write fails */
}

static void watch_arm(struct weir_endpoint *ep)
{
    if (ep->watch_op.pending || ep->fd < 0 || ep->closing || ep->destroyed)
        return;
    ep->watch_op.fn = watch_done;
    ep->watch_gen = ep->conn_gen;
    if (weir_loop_poll(ep->loop, &ep->watch_op, ep->fd, POLLIN | POLLRDHUP) ==
        0)
        ep_op_started(ep);
}

static bool conn_transient(int err)
{
    return err == -EMFILE || err == -ENFILE || err == -ENOBUFS ||
           err == -ENOMEM || err == -EBUSY || err == -EAGAIN;
}

static void conn_retry(struct weir_endpoint *ep)
{
    int rc = ep->stopping ? -ENOTCONN : conn_begin(ep);

    if (rc == 0)
        return;
    if (ep->so.reconnect && conn_transient(rc)) {
        ep_event(ep, WEIR_EP_CONNECT_FAIL, rc, ep->replay_off);
        conn_backoff(ep);
    } else {
        conn_fail(ep, rc);
    }
}

static void conn_backoff(struct weir_endpoint *ep)
{
    int rc;

    ep->conn = CONN_BACKOFF;
    rc = weir__ep_timer(ep, ep->backoff_ns, conn_retry);
    ep->backoff_ns *= 2;
    if (ep->backoff_ns > ep->so.backoff_max_ns)
        ep->backoff_ns = ep->so.backoff_max_ns;
    if (rc) {
        ep->conn = CONN_DOWN;
        if (!ep->started)
            weir_writable_start_done(ep->ws, rc);
        else if (ep->writing) {
            weir__ep_drop_batch(ep);
            weir_writable_write_done(ep->ws, rc);
        }
    }
}

/* Connecting failed for good (no reconnect, or no socket at all). */
static void conn_fail(struct weir_endpoint *ep, int err)
{
    ep->conn = CONN_DOWN;
    if (!ep->started) {
        ep->started = true;
        weir_writable_start_done(ep->ws, err);
    } else if (ep->writing) {
        weir__ep_drop_batch(ep);
        weir_writable_write_done(ep->ws, err);
    }
}

static void replay_next(struct weir_endpoint *ep)
{
    int rc;

    if (ep->so.resume != WEIR_RESUME_OFF) {
        /* From the copy, in place: nothing is added to it meanwhile. */
        uint64_t left = ep->stream_sent - ep->replay_off;

        if (left == 0) {
            ep->conn = CONN_UP;
            if (ep->writing && (rc = weir__ep_sink_submit(ep)) != 0)
                conn_fail(ep, rc);
            return;
        }
        if (left > REPLAY_BUF)
            left = REPLAY_BUF;
        ep->replay_len = (uint32_t)left;
        ep->replay_at = 0;
        ep->replay_iov = (struct iovec){
            ep->rb + ep->rb_off + (ep->replay_off - ep->rb_base), left};
        ep->msg = (struct msghdr){.msg_iov = &ep->replay_iov, .msg_iovlen = 1};
        ep->wr_op.fn = weir__ep_sink_done;
        rc = weir_loop_sendmsg(ep->loop, &ep->wr_op, ep->fd, &ep->msg,
                               MSG_NOSIGNAL);
        if (rc) {
            conn_fail(ep, rc);
            return;
        }
        ep_op_started(ep);
        weir__ep_io_started(ep, ep->o.send_timeout_ns);
        return;
    }
    if (ep->replay_at == ep->replay_len) {
        uint64_t left = ep->stream_sent - ep->replay_off;
        ssize_t n;

        if (left == 0) {
            ep->conn = CONN_UP;
            if (ep->writing && (rc = weir__ep_sink_submit(ep)) != 0)
                conn_fail(ep, rc);
            return;
        }
        if (left > REPLAY_BUF)
            left = REPLAY_BUF;
        n = pread(ep->so.replay_fd, ep->replay_buf, left,
                  (off_t)(ep->so.replay_base + ep->replay_off));
        if (n <= 0) {
            conn_fail(ep, n < 0 ? -errno : -EIO);
            return;
        }
        ep->replay_len = (uint32_t)n;
        ep->replay_at = 0;
    }
    ep->msg = (struct msghdr){.msg_iov = &ep->replay_iov, .msg_iovlen = 1};
    ep->replay_iov = (struct iovec){ep->replay_buf + ep->replay_at,
                                    ep->replay_len - ep->replay_at};
    ep->wr_op.fn = weir__ep_sink_done;
    rc =
        weir_loop_sendmsg(ep->loop, &ep->wr_op, ep->fd, &ep->msg, MSG_NOSIGNAL);
    if (rc) {
        conn_fail(ep, rc);
        return;
    }
    ep_op_started(ep);
    weir__ep_io_started(ep, ep->o.send_timeout_ns);
}

void weir__ep_replay_sent(struct weir_endpoint *ep, int res)
{
    if (res <= 0) {
        if (!weir__ep_socket_lost(ep, res ? res : -EPIPE))
            conn_fail(ep, res ? res : -EPIPE);
        return;
    }
    ep->conn_sent += (uint32_t)res;
    ep->replay_at += (uint32_t)res;
    ep->replay_off += (uint32_t)res;
    weir__ep_resume_acked(ep);
    replay_next(ep);
}

static void conn_up(struct weir_endpoint *ep)
{
    int rc;

    ep->backoff_ns = ep->so.backoff_min_ns;
    ep->conn_gen++;
    watch_arm(ep);
    ep_event(ep, WEIR_EP_CONNECTED, 0, ep->replay_off);
    if (!ep->started) {
        ep->started = true;
        ep->conn = CONN_UP;
        weir_writable_start_done(ep->ws, 0);
        return;
    }
    if ((ep->so.replay_fd < 0 && ep->so.resume == WEIR_RESUME_OFF) ||
        ep->so.tls)
        ep->replay_off = ep->stream_sent;
    ep->conn_base = ep->replay_off;
    ep->conn_sent = 0;
    /* Said also when nothing is to be resent: where the new connection
     * begins in the stream. */
    if (ep->so.resume != WEIR_RESUME_OFF || ep->so.replay_fd >= 0)
        ep_event(ep, WEIR_EP_RESUMED, 0, ep->replay_off);
    if (ep->replay_off < ep->stream_sent) {
        if (ep->so.resume == WEIR_RESUME_OFF && !ep->replay_buf &&
            !(ep->replay_buf = malloc(REPLAY_BUF))) {
            conn_fail(ep, -ENOMEM);
            return;
        }
        ep->conn = CONN_REPLAY;
        ep->replay_at = ep->replay_len = 0;
        replay_next(ep);
        return;
    }
    ep->conn = CONN_UP;
    if (ep->writing && (rc = weir__ep_sink_submit(ep)) != 0)
        conn_fail(ep, rc);
}

/*
 * A connect to a local port nobody listens on can meet itself: when the
 * kernel picks that very port as the source (it is in the ephemeral
 * range), the two ends are one socket, a "simultaneous open" that
 * succeeds and would swallow the stream. Retried connects make it likely
 * in the end, so it counts as refused.
 */
static bool self_connected(int fd)
{
    struct sockaddr_storage me, peer;
    socklen_t ml = sizeof(me), pl = sizeof(peer);

    return getsockname(fd, (struct sockaddr *)&me, &ml) == 0 &&
           getpeername(fd, (struct sockaddr *)&peer, &pl) == 0 && ml == pl &&
           memcmp(&me, &peer, ml) == 0;
}

/* TLS: the connection is up once its handshake is. */
static void tls_ready(void *arg, int res)
{
    struct weir_endpoint *ep = arg;

    if (weir__ep_op_done(ep))
        return;
    if (res == 0) {
        conn_up(ep);
        return;
    }
    conn_close(ep);
    if (!ep->so.reconnect) {
        conn_fail(ep, res);
        return;
    }
    ep_event(ep, WEIR_EP_CONNECT_FAIL, res, ep->replay_off);
    conn_backoff(ep);
}

static int tls_begin(struct weir_endpoint *ep)
{
    int rc = weir_tls_session_create(&ep->tls, ep->so.tls, ep->loop, ep->fd,
                                     ep->tls_name);

    if (rc) {
        ep->tls = NULL;
        return rc;
    }
    rc = weir__tls_ready(ep->tls, tls_ready, ep);
    if (rc)
        return rc; /* conn_close drops the session */
    ep_op_started(ep);
    return 0;
}

static void conn_done(struct weir_op *op, int res, uint32_t flags)
{
    struct weir_endpoint *ep = EP_CONTAINER(op, struct weir_endpoint, conn_op);

    (void)flags;
    if (weir__ep_op_done(ep))
        return;
    res = weir__ep_io_result(ep, res);
    if (res == 0 && self_connected(ep->fd))
        res = -ECONNREFUSED;
    if (res == 0 && ep->so.tls)
        res = tls_begin(ep);
    else if (res == 0) {
        conn_up(ep);
        return;
    }
    if (res == 0)
        return;
    conn_close(ep);
    /* A name's next address, before the attempt counts as failed. */
    while (ep->host && ep->addr_at + 1 < ep->naddrs) {
        ep->addr_at++;
        if (conn_connect_at(ep) == 0)
            return;
    }
    if (!ep->so.reconnect || ep->stopping) {
        conn_fail(ep, res);
        return;
    }
    ep_event(ep, WEIR_EP_CONNECT_FAIL, res, ep->replay_off);
    conn_backoff(ep);
}

/* Connects to so.addr (with a host name: the address tried now). */
static int conn_connect(struct weir_endpoint *ep)
{
    int fd, rc;

    fd = socket(ep->so.addr.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return -errno;
    ep->fd = fd;
    ep->is_socket = true;
    ep->io_err = 0;
    weir__ep_tcp_tune(ep, fd, ep->so.addr.ss_family);
    if (ep->so.resume != WEIR_RESUME_OFF) {
        int sz = RESUME_SNDBUF;

        (void)setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &sz, sizeof(sz));
    }
    ep->conn = CONN_CONNECTING;
    ep->conn_op.fn = conn_done;
    rc = weir_loop_connect(ep->loop, &ep->conn_op, fd,
                           (const struct sockaddr *)&ep->so.addr,
                           ep->so.addrlen);
    if (rc) {
        conn_close(ep);
        ep->conn = CONN_DOWN;
        return rc;
    }
    ep_op_started(ep);
    weir__ep_io_started(ep, ep->so.connect_timeout_ns);
    return 0;
}

/* The address at addr_at of a host name's into so.addr, and a connect. */
static int conn_connect_at(struct weir_endpoint *ep)
{
    ep->so.addr = ep->addrs[ep->addr_at];
    ep->so.addrlen = ep->addrlens[ep->addr_at];
    return conn_connect(ep);
}

/* A connect attempt: with a host name, its lookup first (every attempt
 * asks again: the name may point elsewhere by now). */
static int conn_begin(struct weir_endpoint *ep)
{
    int rc;

    if (!ep->host)
        return conn_connect(ep);
    ep->is_socket = true;
    ep->conn = CONN_CONNECTING;
    rc = weir__ep_lookup_start(ep);
    if (rc)
        ep->conn = CONN_DOWN;
    return rc;
}

void weir__ep_resolved(struct weir_endpoint *ep, int eai)
{
    int rc;

    if (ep->cut) {
        conn_fail(ep, -ECANCELED);
        return;
    }
    if (eai == 0) {
        rc = conn_connect_at(ep);
        if (rc == 0)
            return;
        if (!ep->so.reconnect || ep->stopping) {
            conn_fail(ep, rc);
            return;
        }
        ep_event(ep, WEIR_EP_CONNECT_FAIL, rc, ep->replay_off);
        conn_backoff(ep);
        return;
    }
    ep_event(ep, WEIR_EP_RESOLVE_FAIL, eai, ep->replay_off);
    if (!ep->so.reconnect || ep->stopping) {
        conn_fail(ep, eai == EAI_SYSTEM ? -EIO : -EHOSTUNREACH);
        return;
    }
    conn_backoff(ep);
}

static bool conn_error(int err)
{
    switch (err) {
    case -EPIPE:
    case -ECONNRESET:
    case -ECONNABORTED:
    case -ETIMEDOUT:
    case -ENOTCONN:
    case -EHOSTUNREACH:
    case -ENETUNREACH:
    case -ENETDOWN:
        return true;
    default:
        return false;
    }
}

int weir__ep_socket_lost(struct weir_endpoint *ep, int err)
{
    uint64_t acked;

    if (!ep->so.reconnect || !conn_error(err) || ep->stopping ||
        (err == -ETIMEDOUT && ep->so.cut_stalled))
        return 0;
    acked = weir__ep_conn_acked(ep);
    if (ep->conn_base + acked > ep->acked_hi) {
        weir__ep_count(ep, ep->conn_base + acked - ep->acked_hi);
        ep->acked_hi = ep->conn_base + acked;
    }
    ep->replay_off = ep->conn_base + acked;
    if (ep->so.resume != WEIR_RESUME_OFF)
        ep->replay_off = weir__ep_resume_point(ep, ep->replay_off);
    /* A reset, not a close: what the old peer had not received yet must
     * not reach it later (a stalled peer that reads again), as it is
     * resent on the next connection. */
    weir__sock_reset(ep->fd);
    conn_close(ep);
    ep->conn = CONN_DOWN;
    ep_event(ep, WEIR_EP_DISCONNECTED, err, ep->replay_off);
    conn_backoff(ep);
    return 1;
}

static int sock_start(struct weir_writable *ws, void *ctx)
{
    struct weir_endpoint *ep = ctx;
    int rc;

    (void)ws;
    rc = conn_begin(ep);
    if (rc && ep->so.reconnect && conn_transient(rc)) {
        ep_event(ep, WEIR_EP_CONNECT_FAIL, rc, ep->replay_off);
        conn_backoff(ep);
        return WEIR_PENDING;
    }
    return rc ? rc : WEIR_PENDING;
}

/* At a stop, how long a closing sink waits for its last acks. */
#define STOP_ACK_NS (2ull * 1000 * 1000 * 1000)

/* How often a sink waiting for acknowledgements looks again. */
#define ACK_POLL_NS (5ull * 1000 * 1000)

static size_t batch_left(const struct weir_endpoint *ep)
{
    size_t len = 0;

    for (unsigned i = ep->iov_at; i < ep->niov; i++)
        len += ep->iov[i].iov_len;
    return len;
}

/* Waited longer than a send may stall. */
static bool wait_over(const struct weir_endpoint *ep)
{
    uint64_t bound = ep->o.send_timeout_ns ? ep->o.send_timeout_ns
                                           : 30ull * 1000 * 1000 * 1000;

    /* A stop is itself bounded (the drain): the last acknowledgements
     * get a short while only. */
    if (ep->stopping && bound > STOP_ACK_NS)
        bound = STOP_ACK_NS;
    return weir__mono_ns() - ep->wait_since >= (int64_t)bound;
}

static void resume_retry(struct weir_endpoint *ep)
{
    int rc;

    if (!ep->writing || ep->conn != CONN_UP)
        return; /* a loss took the batch: the reconnect sends it */
    if (weir__ep_resume_room(ep, batch_left(ep))) {
        rc = weir__ep_sink_submit(ep);
    } else if (wait_over(ep)) {
        if (weir__ep_socket_lost(ep, -ETIMEDOUT))
            return;
        rc = ep->failed = -ETIMEDOUT;
    } else {
        rc = weir__ep_timer(ep, ACK_POLL_NS, resume_retry);
    }
    if (rc) {
        weir__ep_drop_batch(ep);
        weir_writable_write_done(ep->ws, rc);
    }
}

int weir__ep_resume_wait(struct weir_endpoint *ep)
{
    int rc;

    ep->wait_since = weir__mono_ns();
    rc = weir__ep_timer(ep, ACK_POLL_NS, resume_retry);
    if (rc) {
        weir__ep_drop_batch(ep);
        return rc;
    }
    return WEIR_PENDING;
}

/* The close waits until the peer acknowledged everything (or a send's
 * bound passed), so that the count says delivered only what arrived. */
static void close_wait(struct weir_endpoint *ep)
{
    weir__ep_resume_acked(ep);
    if (ep->acked_hi < ep->stream_sent && ep->fd >= 0 && !wait_over(ep) &&
        weir__ep_timer(ep, ACK_POLL_NS, close_wait) == 0)
        return;
    /* Not everything was acknowledged in time: the close says so. */
    if (ep->ws)
        weir_writable_close_done(
            ep->ws, ep->acked_hi < ep->stream_sent ? -ETIMEDOUT : 0);
}

void weir__ep_socket_stop(struct weir_endpoint *ep)
{
    /* Down at a stop: no more retries; what it holds is not delivered.
     * A connect or lookup out ends the same way when it fails. */
    if (ep->conn == CONN_BACKOFF) {
        if (ep->timer.op.pending)
            weir_loop_timer_stop(ep->loop, &ep->timer);
        conn_fail(ep, -ENOTCONN);
    }
}

static int sock_close(struct weir_writable *ws, void *ctx)
{
    struct weir_endpoint *ep = ctx;
    int rc;

    /* Down, with bytes the peer never acknowledged: not delivered. */
    if (ep->fd < 0 && ep->stream_sent > ep->acked_hi && ep->started)
        return -ENOTCONN;

    ep->closing = true;
    if (ep->watch_op.pending)
        weir_loop_cancel(ep->loop, &ep->watch_op);
    rc = weir__ep_fd_sink_ops.close(ws, ctx);
    if (rc != 0 || ep->fd < 0)
        return rc;
    weir__ep_resume_acked(ep);
    if (ep->acked_hi >= ep->stream_sent)
        return 0;
    ep->wait_since = weir__mono_ns();
    return weir__ep_timer(ep, ACK_POLL_NS, close_wait) == 0 ? WEIR_PENDING : 0;
}

/* Aborted (a policy cut the sink loose, or the stream failed): the
 * close that follows is graceful, and the kernel still delivers what it
 * holds to a peer that reads, so that counts as delivered: the count is
 * then what such a peer receives. */
static int sock_abort(struct weir_writable *ws, void *ctx, int reason)
{
    struct weir_endpoint *ep = ctx;

    (void)ws;
    (void)reason;
    ep->closing = true;
    if (ep->watch_op.pending)
        weir_loop_cancel(ep->loop, &ep->watch_op);
    if (ep->fd >= 0 && ep->conn == CONN_UP && ep->stream_sent > ep->acked_hi) {
        weir__ep_count(ep, ep->stream_sent - ep->acked_hi);
        ep->acked_hi = ep->stream_sent;
    }
    return 0;
}

static const struct weir_sink_ops sock_ops = {
    .start = sock_start,
    .write = weir__ep_sink_write,
    .writev = weir__ep_sink_writev,
    .close = sock_close,
    .abort = sock_abort,
};

int weir_endpoint_socket_sink(struct weir_endpoint **out,
                              struct weir_loop *loop,
                              const struct weir_endpoint_options *o,
                              const struct weir_socket_sink_options *so)
{
    struct weir_writable_options wo;
    struct weir_endpoint *ep;
    int rc;

    if (!so ||
        (!so->host && (so->addrlen == 0 || so->addrlen > sizeof(so->addr))))
        return -EINVAL;
    rc = weir__ep_new(&ep, EP_SOCKET_SINK, loop, NULL, -1, o);
    if (rc)
        return rc;
    ep->o.own_fd = true;
    ep->so = *so;
    if (so->tls) {
        weir__tls_ctx_ref(so->tls);
        if (so->tls_name && !(ep->tls_name = strdup(so->tls_name))) {
            weir__ep_free_now(ep);
            return -ENOMEM;
        }
    }
    ep->so.host = NULL;
    if (so->host && !(ep->host = strdup(so->host))) {
        weir__ep_free_now(ep);
        return -ENOMEM;
    }
    if (!ep->so.backoff_min_ns)
        ep->so.backoff_min_ns = 100 * 1000 * 1000ull;
    if (!ep->so.backoff_max_ns)
        ep->so.backoff_max_ns = 10 * 1000 * 1000 * 1000ull;
    ep->backoff_ns = ep->so.backoff_min_ns;
    ep->conn = CONN_DOWN;
    wo = (struct weir_writable_options){
        .strategy = {.hwm = ep->o.hwm, .bytes = true}, .slot = ep->slot};
    rc = weir_writable_create(&ep->ws, &sock_ops, ep, &wo);
    if (rc) {
        weir__ep_free_now(ep);
        return rc;
    }
    *out = ep;
    return 0;
}

void weir__ep_socket_cut(struct weir_endpoint *ep)
{
    /* Every path that would retry (a failed connect, a lost connection,
     * the backoff) fails the sink instead from now on. */
    ep->so.reconnect = false;
    ep->cut = true;
    switch (ep->conn) {
    case CONN_BACKOFF:
        if (ep->timer.op.pending)
            weir_loop_timer_stop(ep->loop, &ep->timer);
        conn_fail(ep, -ECANCELED);
        break;
    case CONN_CONNECTING:
        /* conn_done gets -ECANCELED and fails the sink; a lookup still
         * out is failed by weir__ep_resolved when its answer comes. */
        if (ep->conn_op.pending)
            weir_loop_cancel(ep->loop, &ep->conn_op);
        break;
    default:
        if (ep->fd >= 0)
            shutdown(ep->fd, SHUT_RDWR);
        break;
    }
}
