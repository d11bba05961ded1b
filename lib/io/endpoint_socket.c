/*
 * endpoint_socket.c - the socket sink that owns its connection: connect,
 * retry with exponential backoff while the peer is down, and after a loss
 * reconnect and resend from the last byte the old peer acknowledged.
 *
 * Offsets are stream offsets (bytes of this sink's stream from its first).
 * stream_sent: bytes handed to some connection's kernel; conn_base: the
 * offset of the current connection's first byte; conn_sent: bytes handed to
 * it. After a loss, TCP_INFO's tcpi_bytes_acked (which counts the SYN as
 * one byte) says how many of conn_sent the peer's TCP acknowledged; the new
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
#include <string.h>
#include <linux/tcp.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <unistd.h>

#include "endpoint_impl.h"

#define REPLAY_BUF (256u * 1024u)

static int conn_begin(struct weir_endpoint *ep);
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
    if (ep->fd >= 0)
        close(ep->fd);
    ep->fd = -1;
}

static bool conn_transient(int err)
{
    return err == -EMFILE || err == -ENFILE || err == -ENOBUFS ||
           err == -ENOMEM || err == -EBUSY;
}

static void conn_retry(struct weir_endpoint *ep)
{
    int rc = conn_begin(ep);

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
    replay_next(ep);
}

static void conn_up(struct weir_endpoint *ep)
{
    int rc;

    ep->backoff_ns = ep->so.backoff_min_ns;
    ep_event(ep, WEIR_EP_CONNECTED, 0, ep->replay_off);
    if (!ep->started) {
        ep->started = true;
        ep->conn = CONN_UP;
        weir_writable_start_done(ep->ws, 0);
        return;
    }
    if (ep->so.replay_fd < 0)
        ep->replay_off = ep->stream_sent;
    ep->conn_base = ep->replay_off;
    ep->conn_sent = 0;
    if (ep->replay_off < ep->stream_sent) {
        if (!ep->replay_buf && !(ep->replay_buf = malloc(REPLAY_BUF))) {
            conn_fail(ep, -ENOMEM);
            return;
        }
        ep_event(ep, WEIR_EP_RESUMED, 0, ep->replay_off);
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

static void conn_done(struct weir_op *op, int res, uint32_t flags)
{
    struct weir_endpoint *ep = EP_CONTAINER(op, struct weir_endpoint, conn_op);

    (void)flags;
    if (weir__ep_op_done(ep))
        return;
    if (res == 0 && self_connected(ep->fd))
        res = -ECONNREFUSED;
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

static int conn_begin(struct weir_endpoint *ep)
{
    int fd, rc;

    fd = socket(ep->so.addr.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return -errno;
    ep->fd = fd;
    ep->is_socket = true;
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
    return 0;
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
    uint64_t acked = ep->conn_sent;

    if (!ep->so.reconnect || !conn_error(err))
        return 0;
    if (ep->so.addr.ss_family != AF_UNIX) {
        struct tcp_info ti;
        socklen_t len = sizeof(ti);

        if (getsockopt(ep->fd, IPPROTO_TCP, TCP_INFO, &ti, &len) == 0 &&
            len >= offsetof(struct tcp_info, tcpi_bytes_acked) +
                       sizeof(ti.tcpi_bytes_acked)) {
            /* The SYN counts as the first acknowledged byte. */
            acked = ti.tcpi_bytes_acked ? ti.tcpi_bytes_acked - 1 : 0;
            if (acked > ep->conn_sent)
                acked = ep->conn_sent; /* the FIN's byte */
        } else {
            acked = 0;
        }
    }
    ep->replay_off = ep->conn_base + acked;
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

static int sock_close(struct weir_writable *ws, void *ctx)
{
    return weir__ep_fd_sink_ops.close(ws, ctx);
}

static const struct weir_sink_ops sock_ops = {
    .start = sock_start,
    .write = weir__ep_sink_write,
    .writev = weir__ep_sink_writev,
    .close = sock_close,
};

int weir_endpoint_socket_sink(struct weir_endpoint **out,
                              struct weir_loop *loop,
                              const struct weir_endpoint_options *o,
                              const struct weir_socket_sink_options *so)
{
    struct weir_writable_options wo;
    struct weir_endpoint *ep;
    int rc;

    if (!so || so->addrlen == 0 || so->addrlen > sizeof(so->addr))
        return -EINVAL;
    rc = weir__ep_new(&ep, EP_SOCKET_SINK, loop, NULL, -1, o);
    if (rc)
        return rc;
    ep->o.own_fd = true;
    ep->so = *so;
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
    switch (ep->conn) {
    case CONN_BACKOFF:
        if (ep->timer.op.pending)
            weir_loop_timer_stop(ep->loop, &ep->timer);
        conn_fail(ep, -ECANCELED);
        break;
    case CONN_CONNECTING:
        /* conn_done gets -ECANCELED and fails the sink. */
        if (ep->conn_op.pending)
            weir_loop_cancel(ep->loop, &ep->conn_op);
        break;
    default:
        if (ep->fd >= 0)
            shutdown(ep->fd, SHUT_RDWR);
        break;
    }
}
