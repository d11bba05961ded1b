/*
 * endpoint_sink.h - the plumbing the sinks on an fd share (the fd sink
 * and the socket sink embed a struct ep_sink): one batch of queued chunks
 * in flight as a writev (sendmsg on a socket) or through a TLS session,
 * short writes resumed, the bound on a send that does not move
 * (endpoint_bound.c), and the close: close_notify, shutdown, linger
 * (endpoint_sink.c). Private to lib/io.
 *
 * What differs between the kinds comes in through a struct ep_sink_hooks
 * the kind gives: a sink whose hooks are all NULL writes to its fd and
 * counts what it wrote.
 */
#ifndef WEIR_IO_ENDPOINT_SINK_H
#define WEIR_IO_ENDPOINT_SINK_H

#include <sys/socket.h>
#include <sys/uio.h>

#include "endpoint_base.h"
#include "tls_impl.h"

struct ep_sink;

struct ep_sink_hooks {
    /* A batch of len bytes came to be written: 0 sends it now;
     * WEIR_PENDING holds it, the kind sends it later
     * (weir__ep_sink_submit); -errno fails it. */
    int (*hold)(struct ep_sink *s, size_t len);
    /* A plain send completed with res: true when the send was the kind's
     * own (a resend), which it took. */
    bool (*own)(struct ep_sink *s, int res);
    /* A send failed with err: true when the kind took the batch over (a
     * reconnect). plain: it was the fd's send, not the TLS session's. */
    bool (*lost)(struct ep_sink *s, int err, bool plain);
    /* A plain send moved n bytes of the batch: the kind counts them and
     * adds them to stream_sent and conn_sent. 0, or -errno fails the
     * batch. */
    int (*moved)(struct ep_sink *s, size_t n);
    /* The bound on the op the io timer watches now (endpoint_bound.c);
     * 0: none. NULL: send_timeout_ns while a send is pending. */
    uint64_t (*bound)(const struct ep_sink *s);
};

struct ep_sink {
    struct weir_endpoint ep;
    const struct ep_sink_hooks *hooks;
    uint64_t send_timeout_ns;
    uint64_t linger_ns;

    /* The batch being written. */
    struct weir_op wr_op;
    struct weir_chunk chunks[WEIR_WRITEV_MAX];
    struct iovec iov[WEIR_WRITEV_MAX];
    unsigned niov, iov_at;
    bool writing; /* a batch is held (possibly waiting to reconnect) */
    struct msghdr msg;
    int failed; /* a write failed: later writes fail at once */
    /* Stream bytes handed to some kernel (or TLS session) so far, and of
     * them those handed to the current connection's. */
    uint64_t stream_sent, conn_sent;

    /* The session the bytes go through, or NULL. */
    struct weir_tls_session *tls;

    /* Lingering close: its read (rd_op), and what the peer sent meanwhile,
     * dropped. */
    bool lingering;
    uint64_t lingered;
    struct weir_op rd_op;

    /* The bound on a send or connect that does not move
     * (endpoint_bound.c). io_since: when it began or last moved; io_err:
     * the error a shutdown made here stands for (the timeout, or what a
     * watch saw), given to the op it makes fail. */
    struct weir_timer io_timer;
    int64_t io_since, io_deadline;
    int io_err;
};

static inline struct ep_sink *ep_sink_of(struct weir_endpoint *ep)
{
    return EP_CONTAINER(ep, struct ep_sink, ep);
}

/* Sets s up after weir__ep_new: hooks (NULL: all NULL), the peer's send
 * bound, the linger, and a TLS session (the sink takes a reference). */
void weir__ep_sink_init(struct ep_sink *s, const struct ep_sink_hooks *hooks,
                        const struct weir_peer_options *peer,
                        uint64_t linger_ns, struct weir_tls_session *tls);

/* The sink ops' write and writev: take the batch, send it (or hold it). */
int weir__ep_sink_writev(struct weir_writable *ws, void *ctx,
                         const struct weir_chunk *c, unsigned n);
int weir__ep_sink_write(struct weir_writable *ws, void *ctx,
                        struct weir_chunk c);
/* Sends the batch held, from iov_at. 0, or -errno (-EBUSY: try later). */
int weir__ep_sink_submit(struct ep_sink *s);
/* The completion of a plain send (wr_op.fn) the kind queued itself. */
void weir__ep_sink_done(struct weir_op *op, int res, uint32_t flags);
/* The batch held fails with err: nothing more is written. */
void weir__ep_sink_fail(struct ep_sink *s, int err);
void weir__ep_sink_drop_batch(struct ep_sink *s);

/* The sink's close: close_notify through its session, then shutdown.
 * 0, WEIR_PENDING (closed later), or -errno. */
int weir__ep_sink_close(struct ep_sink *s);
/* A sink's end on its socket: shut the sending side, linger when asked.
 * 0, or WEIR_PENDING when lingering ends with close_done. */
int weir__ep_sink_shut(struct ep_sink *s);
/* weir_endpoint_stop: no lingering from now on. */
void weir__ep_sink_stop(struct ep_sink *s);
/* weir_endpoint_destroy: the stream goes (after a batch still out), the
 * socket is shut down, the sink's ops and its session's are cancelled. */
void weir__ep_sink_close_down(struct ep_sink *s);
/* The free: the batch still out fails, the session goes. */
void weir__ep_sink_release(struct ep_sink *s);

/* The bound (endpoint_bound.c). started: a send (or connect, with its
 * bound) was queued: the bound starts, or goes on when one was running.
 * result: what a send's or connect's callback reports, res, or the error
 * a shutdown made here stands for; a send that moved restarts its bound.
 * cancel: at destroy. */
void weir__ep_io_started(struct ep_sink *s, uint64_t bound_ns);
int weir__ep_io_result(struct ep_sink *s, int res);
void weir__ep_io_cancel(struct ep_sink *s);

#endif
