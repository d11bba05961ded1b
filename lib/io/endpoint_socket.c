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
 *
 * The sink is the fd sink's plumbing (endpoint_sink.c) with hooks: a
 * batch waits while the connection is down, resends are its own sends,
 * a lost send reconnects, and what moved is kept and counted when the
 * peer acknowledges it. With TLS each connection gets a session of its
 * own (tls_begin), which the plumbing then writes through. The copy to
 * resume from is endpoint_resume.c's, a host name's lookup
 * endpoint_resolve.c's.
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

#include "endpoint_resolve.h"
#include "endpoint_resume.h"
#include "endpoint_sink.h"
#include "sock_util.h"

#define REPLAY_BUF (256u * 1024u)

/* A resuming sink's send buffer (the kernel doubles it): what the peer
 * has not acknowledged is kept in the copy too, so this bounds the copy
 * to about 2 MiB plus one member instead of the autotuned maximum. */
#define RESUME_SNDBUF (1 << 20)

/* Connection states. */
enum sock_conn {
    CONN_DOWN,
    CONN_CONNECTING,
    CONN_BACKOFF,
    CONN_REPLAY,
    CONN_UP,
};

struct sock_sink {
    struct ep_sink s;
    /* The options; their host and tls_name are NULL here: the copies
     * are res.host and tls_name. */
    struct weir_socket_sink_options so;
    enum sock_conn conn;
    struct weir_op conn_op;
    uint64_t backoff_ns;
    uint64_t conn_base;  /* stream offset of this connection's first byte */
    uint64_t replay_off; /* next stream byte to resend */
    uint8_t *replay_buf;
    struct iovec replay_iov;
    uint32_t replay_len, replay_at;
    bool started; /* start has completed */
    char *tls_name;
    /* The watch of an idle connection: conn_gen counts connections;
     * watch_gen is the one watched. */
    struct weir_op watch_op;
    uint32_t conn_gen, watch_gen;
    bool closing; /* the sink's close began: no more watching */
    bool cut;     /* weir_endpoint_cut: a lookup's answer fails it */
    /* What it keeps to resend (endpoint_resume.c); acked_hi: stream
     * bytes a peer acknowledged, as counted. */
    struct ep_resume copy;
    uint64_t acked_hi;
    int64_t wait_since; /* waiting for room in the copy since */
    /* With a host name (endpoint_resolve.c): its lookup, and the
     * addresses it gave, tried in turn. */
    struct ep_resolve res;
};

static struct sock_sink *sock_of(struct weir_endpoint *ep)
{
    return EP_CONTAINER(ep, struct sock_sink, s.ep);
}

static int conn_begin(struct sock_sink *sk);
static int conn_connect_at(struct sock_sink *sk);
static void conn_fail(struct sock_sink *sk, int err);
static void conn_backoff(struct sock_sink *sk);
static bool sock_lost(struct sock_sink *sk, int err);

/* Of conn_sent, the bytes the current connection's peer acknowledged. */
static uint64_t conn_acked(const struct sock_sink *sk)
{
    return weir__ep_conn_acked(sk->s.ep.fd, sk->so.addr.ss_family,
                               sk->s.conn_sent);
}

/* Counts what the peer acknowledged and lets go of what no resend
 * needs. */
static void sock_acked(struct sock_sink *sk)
{
    uint64_t acked = sk->conn_base + conn_acked(sk);

    if (acked > sk->acked_hi) {
        weir__ep_count(&sk->s.ep, acked - sk->acked_hi);
        sk->acked_hi = acked;
    }
    if (sk->conn != CONN_REPLAY)
        weir__ep_resume_release(&sk->copy, acked);
}

static void ep_event(struct sock_sink *sk, enum weir_endpoint_event ev, int err,
                     uint64_t off)
{
    if (sk->so.on_event)
        sk->so.on_event(sk->so.event_arg, ev, err, off);
}

static void conn_close(struct sock_sink *sk)
{
    if (sk->s.tls) {
        weir__tls_unref(sk->s.tls);
        sk->s.tls = NULL;
    }
    /* The watch of this connection ends with it; its answer, when it
     * comes, is recognised as stale (watch_gen). */
    if (sk->watch_op.pending)
        weir_loop_cancel(sk->s.ep.loop, &sk->watch_op);
    if (sk->s.ep.fd >= 0)
        close(sk->s.ep.fd);
    sk->s.ep.fd = -1;
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

static void watch_arm(struct sock_sink *sk);

static int watch_check(struct sock_sink *sk, int res)
{
    int soerr = 0;
    socklen_t len = sizeof(soerr);

    if (res < 0)
        return res;
    if (res & POLLIN) {
        for (int i = 0; i < 4; i++) {
            ssize_t n = recv(sk->s.ep.fd, watch_scratch, sizeof(watch_scratch),
                             MSG_DONTWAIT);

            if (n == 0)
                return -EPIPE; /* the peer closed its end */
            if (n < 0)
                return errno == EAGAIN || errno == EINTR ? 0 : -errno;
        }
        return 0;
    }
    if (res & (POLLERR | POLLHUP | POLLRDHUP)) {
        if (getsockopt(sk->s.ep.fd, SOL_SOCKET, SO_ERROR, &soerr, &len) == 0 &&
            soerr)
            return -soerr;
        return -EPIPE;
    }
    return 0;
}

static void watch_done(struct weir_op *op, int res, uint32_t flags)
{
    struct sock_sink *sk = EP_CONTAINER(op, struct sock_sink, watch_op);
    int err;

    (void)flags;
    if (weir__ep_op_done(&sk->s.ep) || sk->closing || sk->s.failed)
        return;
    if (sk->conn != CONN_UP && sk->conn != CONN_REPLAY)
        return; /* lost meanwhile; the next connection arms it again */
    if (sk->watch_gen != sk->conn_gen || res == -ECANCELED) {
        watch_arm(sk);
        return;
    }
    err = watch_check(sk, res);
    if (err == 0) {
        watch_arm(sk);
        return;
    }
    if (sk->s.wr_op.pending) {
        sk->s.io_err = err;
        shutdown(sk->s.ep.fd, SHUT_RDWR);
        return;
    }
    if (!sock_lost(sk, err))
        sk->s.failed = err; /* no reconnect: the next write fails */
}

static void watch_arm(struct sock_sink *sk)
{
    if (sk->watch_op.pending || sk->s.ep.fd < 0 || sk->closing ||
        sk->s.ep.destroyed)
        return;
    sk->watch_op.fn = watch_done;
    sk->watch_gen = sk->conn_gen;
    if (weir_loop_poll(sk->s.ep.loop, &sk->watch_op, sk->s.ep.fd,
                       POLLIN | POLLRDHUP) == 0)
        ep_op_started(&sk->s.ep);
}

static bool conn_transient(int err)
{
    return err == -EMFILE || err == -ENFILE || err == -ENOBUFS ||
           err == -ENOMEM || err == -EBUSY || err == -EAGAIN;
}

static void conn_retry(struct weir_endpoint *ep)
{
    struct sock_sink *sk = sock_of(ep);
    int rc = sk->s.ep.stopping ? -ENOTCONN : conn_begin(sk);

    if (rc == 0)
        return;
    if (sk->so.reconnect && conn_transient(rc)) {
        ep_event(sk, WEIR_EP_CONNECT_FAIL, rc, sk->replay_off);
        conn_backoff(sk);
    } else {
        conn_fail(sk, rc);
    }
}

static void conn_backoff(struct sock_sink *sk)
{
    int rc;

    sk->conn = CONN_BACKOFF;
    rc = weir__ep_timer(&sk->s.ep, sk->backoff_ns, conn_retry);
    sk->backoff_ns *= 2;
    if (sk->backoff_ns > sk->so.backoff_max_ns)
        sk->backoff_ns = sk->so.backoff_max_ns;
    if (rc) {
        sk->conn = CONN_DOWN;
        if (!sk->started)
            weir_writable_start_done(sk->s.ep.ws, rc);
        else if (sk->s.writing) {
            weir__ep_sink_drop_batch(&sk->s);
            weir_writable_write_done(sk->s.ep.ws, rc);
        }
    }
}

/* Connecting failed for good (no reconnect, or no socket at all). */
static void conn_fail(struct sock_sink *sk, int err)
{
    sk->conn = CONN_DOWN;
    if (!sk->started) {
        sk->started = true;
        weir_writable_start_done(sk->s.ep.ws, err);
    } else if (sk->s.writing) {
        weir__ep_sink_drop_batch(&sk->s);
        weir_writable_write_done(sk->s.ep.ws, err);
    }
}

static void replay_next(struct sock_sink *sk)
{
    int rc;

    if (sk->so.resume != WEIR_RESUME_OFF) {
        /* From the copy, in place: nothing is added to it meanwhile. */
        uint64_t left = sk->s.stream_sent - sk->replay_off;

        if (left == 0) {
            sk->conn = CONN_UP;
            if (sk->s.writing && (rc = weir__ep_sink_submit(&sk->s)) != 0)
                conn_fail(sk, rc);
            return;
        }
        if (left > REPLAY_BUF)
            left = REPLAY_BUF;
        sk->replay_len = (uint32_t)left;
        sk->replay_at = 0;
        sk->replay_iov = (struct iovec){sk->copy.rb + sk->copy.rb_off +
                                            (sk->replay_off - sk->copy.rb_base),
                                        left};
        sk->s.msg =
            (struct msghdr){.msg_iov = &sk->replay_iov, .msg_iovlen = 1};
        sk->s.wr_op.fn = weir__ep_sink_done;
        rc = weir_loop_sendmsg(sk->s.ep.loop, &sk->s.wr_op, sk->s.ep.fd,
                               &sk->s.msg, MSG_NOSIGNAL);
        if (rc) {
            conn_fail(sk, rc);
            return;
        }
        ep_op_started(&sk->s.ep);
        weir__ep_io_started(&sk->s, sk->s.send_timeout_ns);
        return;
    }
    if (sk->replay_at == sk->replay_len) {
        uint64_t left = sk->s.stream_sent - sk->replay_off;
        ssize_t n;

        if (left == 0) {
            sk->conn = CONN_UP;
            if (sk->s.writing && (rc = weir__ep_sink_submit(&sk->s)) != 0)
                conn_fail(sk, rc);
            return;
        }
        if (left > REPLAY_BUF)
            left = REPLAY_BUF;
        n = pread(sk->so.replay_fd, sk->replay_buf, left,
                  (off_t)(sk->so.replay_base + sk->replay_off));
        if (n <= 0) {
            conn_fail(sk, n < 0 ? -errno : -EIO);
            return;
        }
        sk->replay_len = (uint32_t)n;
        sk->replay_at = 0;
    }
    sk->s.msg = (struct msghdr){.msg_iov = &sk->replay_iov, .msg_iovlen = 1};
    sk->replay_iov = (struct iovec){sk->replay_buf + sk->replay_at,
                                    sk->replay_len - sk->replay_at};
    sk->s.wr_op.fn = weir__ep_sink_done;
    rc = weir_loop_sendmsg(sk->s.ep.loop, &sk->s.wr_op, sk->s.ep.fd, &sk->s.msg,
                           MSG_NOSIGNAL);
    if (rc) {
        conn_fail(sk, rc);
        return;
    }
    ep_op_started(&sk->s.ep);
    weir__ep_io_started(&sk->s, sk->s.send_timeout_ns);
}

/* A resend completed with res. */
static void replay_sent(struct sock_sink *sk, int res)
{
    if (res <= 0) {
        if (!sock_lost(sk, res ? res : -EPIPE))
            conn_fail(sk, res ? res : -EPIPE);
        return;
    }
    sk->s.conn_sent += (uint32_t)res;
    sk->replay_at += (uint32_t)res;
    sk->replay_off += (uint32_t)res;
    sock_acked(sk);
    replay_next(sk);
}

static void conn_up(struct sock_sink *sk)
{
    int rc;

    sk->backoff_ns = sk->so.backoff_min_ns;
    sk->conn_gen++;
    watch_arm(sk);
    ep_event(sk, WEIR_EP_CONNECTED, 0, sk->replay_off);
    if (!sk->started) {
        sk->started = true;
        sk->conn = CONN_UP;
        weir_writable_start_done(sk->s.ep.ws, 0);
        return;
    }
    if ((sk->so.replay_fd < 0 && sk->so.resume == WEIR_RESUME_OFF) ||
        sk->so.tls)
        sk->replay_off = sk->s.stream_sent;
    sk->conn_base = sk->replay_off;
    sk->s.conn_sent = 0;
    /* Said also when nothing is to be resent: where the new connection
     * begins in the stream. */
    if (sk->so.resume != WEIR_RESUME_OFF || sk->so.replay_fd >= 0)
        ep_event(sk, WEIR_EP_RESUMED, 0, sk->replay_off);
    if (sk->replay_off < sk->s.stream_sent) {
        if (sk->so.resume == WEIR_RESUME_OFF && !sk->replay_buf &&
            !(sk->replay_buf = malloc(REPLAY_BUF))) {
            conn_fail(sk, -ENOMEM);
            return;
        }
        sk->conn = CONN_REPLAY;
        sk->replay_at = sk->replay_len = 0;
        replay_next(sk);
        return;
    }
    sk->conn = CONN_UP;
    if (sk->s.writing && (rc = weir__ep_sink_submit(&sk->s)) != 0)
        conn_fail(sk, rc);
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
    struct sock_sink *sk = arg;

    if (weir__ep_op_done(&sk->s.ep))
        return;
    if (res == 0) {
        conn_up(sk);
        return;
    }
    conn_close(sk);
    if (!sk->so.reconnect) {
        conn_fail(sk, res);
        return;
    }
    ep_event(sk, WEIR_EP_CONNECT_FAIL, res, sk->replay_off);
    conn_backoff(sk);
}

static int tls_begin(struct sock_sink *sk)
{
    int rc = weir_tls_session_create(&sk->s.tls, sk->so.tls, sk->s.ep.loop,
                                     sk->s.ep.fd, sk->tls_name);

    if (rc) {
        sk->s.tls = NULL;
        return rc;
    }
    rc = weir__tls_ready(sk->s.tls, tls_ready, sk);
    if (rc)
        return rc; /* conn_close drops the session */
    ep_op_started(&sk->s.ep);
    return 0;
}

static void conn_done(struct weir_op *op, int res, uint32_t flags)
{
    struct sock_sink *sk = EP_CONTAINER(op, struct sock_sink, conn_op);

    (void)flags;
    if (weir__ep_op_done(&sk->s.ep))
        return;
    res = weir__ep_io_result(&sk->s, res);
    if (res == 0 && self_connected(sk->s.ep.fd))
        res = -ECONNREFUSED;
    if (res == 0 && sk->so.tls)
        res = tls_begin(sk);
    else if (res == 0) {
        conn_up(sk);
        return;
    }
    if (res == 0)
        return;
    conn_close(sk);
    /* A name's next address, before the attempt counts as failed. */
    while (sk->res.host && sk->res.addr_at + 1 < sk->res.naddrs) {
        sk->res.addr_at++;
        if (conn_connect_at(sk) == 0)
            return;
    }
    if (!sk->so.reconnect || sk->s.ep.stopping) {
        conn_fail(sk, res);
        return;
    }
    ep_event(sk, WEIR_EP_CONNECT_FAIL, res, sk->replay_off);
    conn_backoff(sk);
}

/* Connects to so.addr (with a host name: the address tried now). */
static int conn_connect(struct sock_sink *sk)
{
    int fd, rc;

    fd = socket(sk->so.addr.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return -errno;
    sk->s.ep.fd = fd;
    sk->s.ep.is_socket = true;
    sk->s.io_err = 0;
    weir__ep_tcp_tune(&sk->so.peer.tcp, fd, sk->so.addr.ss_family);
    if (sk->so.resume != WEIR_RESUME_OFF) {
        int sz = RESUME_SNDBUF;

        (void)setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &sz, sizeof(sz));
    }
    sk->conn = CONN_CONNECTING;
    sk->conn_op.fn = conn_done;
    rc = weir_loop_connect(sk->s.ep.loop, &sk->conn_op, fd,
                           (const struct sockaddr *)&sk->so.addr,
                           sk->so.addrlen);
    if (rc) {
        conn_close(sk);
        sk->conn = CONN_DOWN;
        return rc;
    }
    ep_op_started(&sk->s.ep);
    weir__ep_io_started(&sk->s, sk->so.connect_timeout_ns);
    return 0;
}

/* The address at addr_at of a host name's into so.addr, and a connect. */
static int conn_connect_at(struct sock_sink *sk)
{
    sk->so.addr = sk->res.addrs[sk->res.addr_at];
    sk->so.addrlen = sk->res.addrlens[sk->res.addr_at];
    return conn_connect(sk);
}

/* A connect attempt: with a host name, its lookup first (every attempt
 * asks again: the name may point elsewhere by now). */
static int conn_begin(struct sock_sink *sk)
{
    int rc;

    if (!sk->res.host)
        return conn_connect(sk);
    sk->s.ep.is_socket = true;
    sk->conn = CONN_CONNECTING;
    rc = weir__ep_lookup_start(&sk->res);
    if (rc)
        sk->conn = CONN_DOWN;
    return rc;
}

/* The host name's lookup answered (endpoint_resolve.h). */
static void sock_resolved(struct ep_resolve *r, int eai)
{
    struct sock_sink *sk = EP_CONTAINER(r, struct sock_sink, res);
    int rc;

    if (sk->cut) {
        conn_fail(sk, -ECANCELED);
        return;
    }
    if (eai == 0) {
        rc = conn_connect_at(sk);
        if (rc == 0)
            return;
        if (!sk->so.reconnect || sk->s.ep.stopping) {
            conn_fail(sk, rc);
            return;
        }
        ep_event(sk, WEIR_EP_CONNECT_FAIL, rc, sk->replay_off);
        conn_backoff(sk);
        return;
    }
    ep_event(sk, WEIR_EP_RESOLVE_FAIL, eai, sk->replay_off);
    if (!sk->so.reconnect || sk->s.ep.stopping) {
        conn_fail(sk, eai == EAI_SYSTEM ? -EIO : -EHOSTUNREACH);
        return;
    }
    conn_backoff(sk);
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

/* A send failed with err: true when a reconnect took over the batch,
 * false when the error stands. */
static bool sock_lost(struct sock_sink *sk, int err)
{
    uint64_t acked;

    if (!sk->so.reconnect || !conn_error(err) || sk->s.ep.stopping ||
        (err == -ETIMEDOUT && sk->so.cut_stalled))
        return false;
    acked = conn_acked(sk);
    if (sk->conn_base + acked > sk->acked_hi) {
        weir__ep_count(&sk->s.ep, sk->conn_base + acked - sk->acked_hi);
        sk->acked_hi = sk->conn_base + acked;
    }
    sk->replay_off = sk->conn_base + acked;
    if (sk->so.resume != WEIR_RESUME_OFF)
        sk->replay_off = weir__ep_resume_point(&sk->copy, sk->replay_off);
    /* A reset, not a close: what the old peer had not received yet must
     * not reach it later (a stalled peer that reads again), as it is
     * resent on the next connection. */
    weir__sock_reset(sk->s.ep.fd);
    conn_close(sk);
    sk->conn = CONN_DOWN;
    ep_event(sk, WEIR_EP_DISCONNECTED, err, sk->replay_off);
    conn_backoff(sk);
    return true;
}

static int sock_start(struct weir_writable *ws, void *ctx)
{
    struct sock_sink *sk = sock_of(ctx);
    int rc;

    (void)ws;
    rc = conn_begin(sk);
    if (rc && sk->so.reconnect && conn_transient(rc)) {
        ep_event(sk, WEIR_EP_CONNECT_FAIL, rc, sk->replay_off);
        conn_backoff(sk);
        return WEIR_PENDING;
    }
    return rc ? rc : WEIR_PENDING;
}

/* At a stop, how long a closing sink waits for its last acks. */
#define STOP_ACK_NS (2ull * 1000 * 1000 * 1000)

/* How often a sink waiting for acknowledgements looks again. */
#define ACK_POLL_NS (5ull * 1000 * 1000)

static size_t batch_left(const struct sock_sink *sk)
{
    size_t len = 0;

    for (unsigned i = sk->s.iov_at; i < sk->s.niov; i++)
        len += sk->s.iov[i].iov_len;
    return len;
}

/* Waited longer than a send may stall. */
static bool wait_over(const struct sock_sink *sk)
{
    uint64_t bound = sk->s.send_timeout_ns ? sk->s.send_timeout_ns
                                           : 30ull * 1000 * 1000 * 1000;

    /* A stop is itself bounded (the drain): the last acknowledgements
     * get a short while only. */
    if (sk->s.ep.stopping && bound > STOP_ACK_NS)
        bound = STOP_ACK_NS;
    return weir__mono_ns() - sk->wait_since >= (int64_t)bound;
}

/* Room in the copy for n more bytes, after counting what the peer
 * acknowledged when it looks short. */
static bool resume_room(struct sock_sink *sk, size_t n)
{
    if (weir__ep_resume_fits(&sk->copy, n))
        return true;
    sock_acked(sk);
    return weir__ep_resume_room(&sk->copy, n, sk->acked_hi);
}

static void resume_retry(struct weir_endpoint *ep)
{
    struct sock_sink *sk = sock_of(ep);
    int rc;

    if (!sk->s.writing || sk->conn != CONN_UP)
        return; /* a loss took the batch: the reconnect sends it */
    if (resume_room(sk, batch_left(sk))) {
        rc = weir__ep_sink_submit(&sk->s);
    } else if (wait_over(sk)) {
        if (sock_lost(sk, -ETIMEDOUT))
            return;
        rc = sk->s.failed = -ETIMEDOUT;
    } else {
        rc = weir__ep_timer(ep, ACK_POLL_NS, resume_retry);
    }
    if (rc) {
        weir__ep_sink_drop_batch(&sk->s);
        weir_writable_write_done(ep->ws, rc);
    }
}

/* The batch held waits for room in the copy: WEIR_PENDING or -errno. */
static int resume_wait(struct sock_sink *sk)
{
    int rc;

    sk->wait_since = weir__mono_ns();
    rc = weir__ep_timer(&sk->s.ep, ACK_POLL_NS, resume_retry);
    if (rc) {
        weir__ep_sink_drop_batch(&sk->s);
        return rc;
    }
    return WEIR_PENDING;
}

/* ---- what the sink plumbing asks of the socket (endpoint_sink.h) ---- */

static int sock_hold(struct ep_sink *s, size_t len)
{
    struct sock_sink *sk = EP_CONTAINER(s, struct sock_sink, s);

    if (sk->conn != CONN_UP)
        return WEIR_PENDING; /* the reconnect sends it */
    if (!resume_room(sk, len))
        return resume_wait(sk);
    return 0;
}

static bool sock_own(struct ep_sink *s, int res)
{
    struct sock_sink *sk = EP_CONTAINER(s, struct sock_sink, s);

    if (sk->conn != CONN_REPLAY)
        return false;
    replay_sent(sk, res);
    return true;
}

static bool sock_send_lost(struct ep_sink *s, int err, bool plain)
{
    struct sock_sink *sk = EP_CONTAINER(s, struct sock_sink, s);

    if (sock_lost(sk, err))
        return true;
    if (plain)
        sock_acked(sk); /* the last count: what the peer got */
    return false;
}

static int sock_moved(struct ep_sink *s, size_t n)
{
    struct sock_sink *sk = EP_CONTAINER(s, struct sock_sink, s);
    int rc = weir__ep_resume_keep(&sk->copy, s->iov + s->iov_at,
                                  s->niov - s->iov_at, n);

    if (rc)
        return rc;
    s->stream_sent += n;
    s->conn_sent += n;
    sock_acked(sk); /* counts what the peer acknowledged */
    return 0;
}

static uint64_t sock_bound(const struct ep_sink *s)
{
    const struct sock_sink *sk = EP_CONTAINER(s, const struct sock_sink, s);

    if (sk->conn == CONN_CONNECTING && sk->conn_op.pending)
        return sk->so.connect_timeout_ns;
    return s->wr_op.pending ? s->send_timeout_ns : 0;
}

static const struct ep_sink_hooks sock_hooks = {
    .hold = sock_hold,
    .own = sock_own,
    .lost = sock_send_lost,
    .moved = sock_moved,
    .bound = sock_bound,
};

/* ---- the stream's end ---- */

/* The close waits until the peer acknowledged everything (or a send's
 * bound passed), so that the count says delivered only what arrived. */
static void close_wait(struct weir_endpoint *ep)
{
    struct sock_sink *sk = sock_of(ep);

    sock_acked(sk);
    if (sk->acked_hi < sk->s.stream_sent && ep->fd >= 0 && !wait_over(sk) &&
        weir__ep_timer(ep, ACK_POLL_NS, close_wait) == 0)
        return;
    /* Not everything was acknowledged in time: the close says so. */
    if (ep->ws)
        weir_writable_close_done(
            ep->ws, sk->acked_hi < sk->s.stream_sent ? -ETIMEDOUT : 0);
}

static int sock_close(struct weir_writable *ws, void *ctx)
{
    struct sock_sink *sk = sock_of(ctx);
    int rc;

    (void)ws;
    /* Down, with bytes the peer never acknowledged: not delivered. */
    if (sk->s.ep.fd < 0 && sk->s.stream_sent > sk->acked_hi && sk->started)
        return -ENOTCONN;

    sk->closing = true;
    if (sk->watch_op.pending)
        weir_loop_cancel(sk->s.ep.loop, &sk->watch_op);
    rc = weir__ep_sink_close(&sk->s);
    if (rc != 0 || sk->s.ep.fd < 0)
        return rc;
    sock_acked(sk);
    if (sk->acked_hi >= sk->s.stream_sent)
        return 0;
    sk->wait_since = weir__mono_ns();
    return weir__ep_timer(&sk->s.ep, ACK_POLL_NS, close_wait) == 0
               ? WEIR_PENDING
               : 0;
}

/* Aborted (a policy cut the sink loose, or the stream failed): the
 * close that follows is graceful, and the kernel still delivers what it
 * holds to a peer that reads, so that counts as delivered: the count is
 * then what such a peer receives. */
static int sock_abort(struct weir_writable *ws, void *ctx, int reason)
{
    struct sock_sink *sk = sock_of(ctx);

    (void)ws;
    (void)reason;
    sk->closing = true;
    if (sk->watch_op.pending)
        weir_loop_cancel(sk->s.ep.loop, &sk->watch_op);
    if (sk->s.ep.fd >= 0 && sk->conn == CONN_UP &&
        sk->s.stream_sent > sk->acked_hi) {
        weir__ep_count(&sk->s.ep, sk->s.stream_sent - sk->acked_hi);
        sk->acked_hi = sk->s.stream_sent;
    }
    return 0;
}

static const struct weir_sink_ops sock_stream = {
    .start = sock_start,
    .write = weir__ep_sink_write,
    .writev = weir__ep_sink_writev,
    .close = sock_close,
    .abort = sock_abort,
};

/* ---- the endpoint's calls (its ops) ---- */

static void sock_stop(struct weir_endpoint *ep)
{
    struct sock_sink *sk = sock_of(ep);

    weir__ep_sink_stop(&sk->s);
    /* Down at a stop: no more retries; what it holds is not delivered.
     * A connect or lookup out ends the same way when it fails. */
    if (sk->conn == CONN_BACKOFF) {
        weir__ep_timer_stop(ep);
        conn_fail(sk, -ENOTCONN);
    }
}

static void sock_cut(struct weir_endpoint *ep)
{
    struct sock_sink *sk = sock_of(ep);

    /* Every path that would retry (a failed connect, a lost connection,
     * the backoff) fails the sink instead from now on. */
    sk->so.reconnect = false;
    sk->cut = true;
    switch (sk->conn) {
    case CONN_BACKOFF:
        weir__ep_timer_stop(ep);
        conn_fail(sk, -ECANCELED);
        break;
    case CONN_CONNECTING:
        /* conn_done gets -ECANCELED and fails the sink; a lookup still
         * out is failed by sock_resolved when its answer comes. */
        if (sk->conn_op.pending)
            weir_loop_cancel(ep->loop, &sk->conn_op);
        break;
    default:
        if (ep->fd >= 0)
            shutdown(ep->fd, SHUT_RDWR);
        break;
    }
}

static int sock_acked_stat(const struct weir_endpoint *ep, uint64_t *acked)
{
    const struct sock_sink *sk = EP_CONTAINER(ep, const struct sock_sink, s.ep);

    if (ep->fd < 0 || (sk->conn != CONN_UP && sk->conn != CONN_REPLAY)) {
        /* Down: what the lost connection's peer had acknowledged. */
        *acked = sk->replay_off < sk->s.stream_sent ? sk->replay_off
                                                    : sk->s.stream_sent;
        return 0;
    }
    *acked = sk->conn_base + conn_acked(sk);
    return 0;
}

static void sock_close_down(struct weir_endpoint *ep)
{
    struct sock_sink *sk = sock_of(ep);

    if (sk->conn_op.pending)
        weir_loop_cancel(ep->loop, &sk->conn_op);
    weir__ep_sink_close_down(&sk->s);
    if (sk->watch_op.pending)
        weir_loop_cancel(ep->loop, &sk->watch_op);
    weir__ep_lookup_drop(&sk->res);
}

static void sock_release(struct weir_endpoint *ep)
{
    struct sock_sink *sk = sock_of(ep);

    weir__ep_sink_release(&sk->s);
    if (sk->so.tls)
        weir__tls_ctx_unref(sk->so.tls);
    free(sk->tls_name);
    free(sk->replay_buf);
    weir__ep_resume_free(&sk->copy);
    weir__ep_resolve_free(&sk->res);
}

static const struct ep_ops sock_ops = {
    .sink = &sock_stream,
    .stop = sock_stop,
    .cut = sock_cut,
    .acked = sock_acked_stat,
    .close = sock_close_down,
    .release = sock_release,
};

int weir_endpoint_socket_sink(struct weir_endpoint **out,
                              struct weir_loop *loop,
                              const struct weir_socket_sink_options *o)
{
    struct sock_sink *sk;
    int rc;

    if (!o || (!o->host && (o->addrlen == 0 || o->addrlen > sizeof(o->addr))))
        return -EINVAL;
    sk = weir__ep_new(sizeof(*sk), &sock_ops, loop, -1, true, o->counter, NULL);
    if (!sk)
        return -ENOMEM;
    weir__ep_sink_init(&sk->s, &sock_hooks, &o->peer, 0, NULL);
    sk->so = *o;
    sk->so.host = NULL;     /* sk->res.host is the copy */
    sk->so.tls_name = NULL; /* sk->tls_name is */
    sk->copy.mode = o->resume;
    sk->res.ep = &sk->s.ep;
    sk->res.port = o->port;
    sk->res.done = sock_resolved;
    if (o->tls) {
        weir__tls_ctx_ref(o->tls);
        if (o->tls_name && !(sk->tls_name = strdup(o->tls_name))) {
            weir__ep_free_now(&sk->s.ep);
            return -ENOMEM;
        }
    }
    if (o->host && !(sk->res.host = strdup(o->host))) {
        weir__ep_free_now(&sk->s.ep);
        return -ENOMEM;
    }
    if (!sk->so.backoff_min_ns)
        sk->so.backoff_min_ns = 100 * 1000 * 1000ull;
    if (!sk->so.backoff_max_ns)
        sk->so.backoff_max_ns = 10 * 1000 * 1000 * 1000ull;
    sk->backoff_ns = sk->so.backoff_min_ns;
    sk->conn = CONN_DOWN;
    rc = weir__ep_open_stream(&sk->s.ep, o->hwm ? o->hwm : 1u << 20);
    if (rc)
        return rc;
    *out = &sk->s.ep;
    return 0;
}
