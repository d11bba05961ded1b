/*
 * endpoint_impl.h - what the endpoint files share: the endpoint object and
 * its lifetime helpers. Private to lib/io.
 *
 * Every operation an endpoint starts is counted in `inflight` when queued
 * and uncounted first thing in its callback. After weir_endpoint_destroy,
 * callbacks only release what they held; the last one schedules the free
 * with weir_loop_defer (the loop's mark and reap), so no completion later
 * in the same batch can touch freed memory.
 */
#ifndef WEIR_IO_ENDPOINT_IMPL_H
#define WEIR_IO_ENDPOINT_IMPL_H

#include <stddef.h>
#include <sys/uio.h>

#include "weir/endpoint.h"
#include "tls_impl.h"

#define EP_CONTAINER(ptr, type, member)                                        \
    ((type *)(void *)((char *)(ptr)-offsetof(type, member)))

enum ep_kind {
    EP_FILE_SOURCE,
    EP_FD_SOURCE,
    EP_FD_SINK,
    EP_SOCKET_SINK,
    EP_NULL_SINK,
};

/* One positional read of the file source. */
struct ep_read {
    struct weir_op op;
    struct weir_endpoint *ep;
    struct weir_buf *buf;
    uint64_t off;
    uint32_t len;
    uint32_t gen; /* the source's generation when it was issued */
    int res;
    bool done;
};

/* Socket sink connection states. */
enum ep_conn {
    CONN_DOWN,
    CONN_CONNECTING,
    CONN_BACKOFF,
    CONN_REPLAY,
    CONN_UP,
};

struct weir_endpoint {
    enum ep_kind kind;
    struct weir_loop *loop;
    struct weir_pool *pool;
    unsigned slot;
    int fd;
    bool is_socket;
    struct weir_endpoint_options o;
    struct weir_readable *rs;
    struct weir_writable *ws;
    uint64_t bytes;

    uint32_t inflight;
    bool destroyed, reaping, stopping, ended;
    bool lingering;    /* fd sink: its close waits for the peer's end */
    uint64_t lingered; /* bytes the peer sent meanwhile, dropped */
    struct weir_reap reap;
    struct weir_timer timer; /* retries, follow polls, backoff */
    void (*on_timer)(struct weir_endpoint *ep);

    /* Sources. */
    struct ep_read *reads; /* file: depth slots, ring by sequence */
    uint32_t head, tail;   /* file: sequence numbers */
    uint32_t gen;
    uint64_t next_off, size;
    uint64_t inflight_bytes;
    /* A followed file's rotation and truncation (endpoint_file.c). */
    char *path;     /* o.follow_path, owned */
    uint8_t fp[64]; /* the file's first bytes, as read */
    uint32_t fp_len;
    bool rotating;        /* the path names another file: finishing this one */
    uint64_t rot_size;    /* this file's size when that was seen */
    int64_t file_start;   /* bytes at this file's byte 0 (file position) */
    struct weir_op rd_op; /* fd source */
    struct weir_buf *rd_buf;
    bool reading;

    /* Sinks: the batch being written. */
    struct weir_op wr_op;
    struct weir_chunk chunks[WEIR_WRITEV_MAX];
    struct iovec iov[WEIR_WRITEV_MAX];
    unsigned niov, iov_at;
    bool writing; /* a batch is held (possibly waiting to reconnect) */
    struct msghdr msg;

    /* Socket sink. */
    struct weir_socket_sink_options so;
    enum ep_conn conn;
    struct weir_op conn_op;
    uint64_t backoff_ns;
    uint64_t conn_base;   /* stream offset of this connection's first byte */
    uint64_t stream_sent; /* stream bytes handed to a kernel so far */
    uint64_t conn_sent;   /* bytes handed to this connection's kernel */
    uint64_t replay_off;  /* next stream byte to resend */
    uint8_t *replay_buf;
    struct iovec replay_iov;
    uint32_t replay_len, replay_at;
    bool started; /* start has completed */
    int failed;   /* a sink write failed: later writes fail at once */

    /* TLS (endpoint_tls.c): the session the bytes go through, and the
     * socket sink's server name for the sessions it makes. */
    struct weir_tls_session *tls;
    char *tls_name;
    /* Sockets: the bound on a send or connect that does not move
     * (endpoint.c). io_since: when it began or last moved; io_err: the
     * error a shutdown made here stands for (the timeout, or what the
     * watch saw), given to the op it makes fail. */
    struct weir_timer io_timer;
    int64_t io_since, io_deadline;
    int io_err;
    /* Socket sink: the watch of an idle connection (endpoint_socket.c).
     * conn_gen counts connections; watch_gen is the one watched. */
    struct weir_op watch_op;
    uint32_t conn_gen, watch_gen;
    bool closing; /* the sink's close began: no more watching */
    bool cut;     /* weir_endpoint_cut: a lookup's answer fails it */

    /* Socket sink: what it keeps to resend (endpoint_resume.c). rb holds
     * stream bytes [rb_base, stream_sent) from rb + rb_off; bounds are
     * the member boundaries after rb_base, ascending. acked_hi: stream
     * bytes a peer acknowledged, as counted. */
    uint8_t *rb;
    size_t rb_off, rb_len, rb_cap;
    uint64_t rb_base;
    uint64_t bounds[32];
    unsigned nbounds;
    struct ep_framer {
        uint8_t st, hn, hwant;
        uint8_t hb[20];
        bool checksum, lost;
        uint64_t skip, at;
    } fr;
    uint64_t acked_hi;
    int64_t wait_since; /* waiting for room in rb since */

    /* Socket sink with a host name (endpoint_resolve.c): the lookup out,
     * and the addresses it gave, tried in turn. */
    char *host;
    struct ep_lookup *lookup;
    struct sockaddr_storage *addrs;
    socklen_t *addrlens;
    unsigned naddrs, addr_at;
};

int weir__ep_new(struct weir_endpoint **out, enum ep_kind kind,
                 struct weir_loop *loop, struct weir_pool *pool, int fd,
                 const struct weir_endpoint_options *o);
void weir__ep_free_now(struct weir_endpoint *ep);

/* Counts a queued op; uncounts one in its callback. weir__ep_op_done returns
 * true when the endpoint was destroyed: the callback releases and returns. */
static inline void ep_op_started(struct weir_endpoint *ep)
{
    ep->inflight++;
}
bool weir__ep_op_done(struct weir_endpoint *ep);

/* Arms the endpoint's timer to call fn after ns. */
int weir__ep_timer(struct weir_endpoint *ep, uint64_t ns,
                   void (*fn)(struct weir_endpoint *ep));

void weir__ep_count(struct weir_endpoint *ep, uint64_t n);

/* Sockets. Sets o.tcp on a TCP socket (nothing on others). */
void weir__ep_tcp_tune(struct weir_endpoint *ep, int fd, int family);
/* A send (or connect, with its bound) was queued: the bound starts, or
 * goes on when one was running. */
void weir__ep_io_started(struct weir_endpoint *ep, uint64_t bound_ns);
/* What a send's or connect's callback reports: res, or the error a
 * shutdown made here stands for. A send that moved restarts its bound. */
int weir__ep_io_result(struct weir_endpoint *ep, int res);
void weir__ep_drop_batch(struct weir_endpoint *ep);

/* Sink helpers shared by the fd and socket sinks (endpoint_sink.c). */
extern const struct weir_sink_ops weir__ep_fd_sink_ops;
int weir__ep_sink_writev(struct weir_writable *ws, void *ctx,
                         const struct weir_chunk *c, unsigned n);
int weir__ep_sink_write(struct weir_writable *ws, void *ctx,
                        struct weir_chunk c);
int weir__ep_sink_submit(struct weir_endpoint *ep);
void weir__ep_sink_done(struct weir_op *op, int res, uint32_t flags);
/* An fd sink's lingering close ends now (weir_endpoint_stop). */
void weir__ep_linger_stop(struct weir_endpoint *ep);

/* A sink's end on its socket: shut the sending side, linger when asked.
 * 0, or WEIR_PENDING when lingering ends with close_done. */
int weir__ep_sink_shut(struct weir_endpoint *ep);
/* The fd source's read completed with res (endpoint_fd.c). */
void weir__ep_fdsrc_result(struct weir_endpoint *ep, int res);

/* TLS endpoints (endpoint_tls.c): the batch's plaintext to the session;
 * a sink's close (close_notify, then weir__ep_sink_shut); a source's read
 * into b; cancels of what the endpoint asked of the session. */
int weir__ep_tls_submit(struct weir_endpoint *ep);
int weir__ep_tls_close(struct weir_endpoint *ep);
int weir__ep_tls_read(struct weir_endpoint *ep, struct weir_buf *b);
void weir__ep_tls_cancel(struct weir_endpoint *ep);
/* At destroy: the endpoint's requests end now and its reference goes, so
 * that a session nobody else holds winds its own ops down at once. */
void weir__ep_tls_detach(struct weir_endpoint *ep);
/* Socket sink, resuming (endpoint_resume.c). sent: n bytes of the batch
 * (from iov_at) went out, kept. acked: counts what the peer acknowledged
 * and lets go of what no resend needs. point: where a new connection
 * starts after the old peer acknowledged up to `acked`. room: whether a
 * batch of n bytes fits in the copy now. */
int weir__ep_resume_sent(struct weir_endpoint *ep, size_t n);
void weir__ep_resume_acked(struct weir_endpoint *ep);
/* Bytes of the current connection (of conn_sent) its peer acknowledged
 * (endpoint_ack.c); 0 when it cannot tell. */
uint64_t weir__ep_conn_acked(const struct weir_endpoint *ep);
uint64_t weir__ep_resume_point(struct weir_endpoint *ep, uint64_t acked);
bool weir__ep_resume_room(struct weir_endpoint *ep, size_t n);
/* The batch held waits for room (endpoint_socket.c): WEIR_PENDING or
 * -errno. */
int weir__ep_resume_wait(struct weir_endpoint *ep);

/* Socket sink with a host name (endpoint_resolve.c). lookup_start asks
 * for the name's addresses; the answer comes to weir__ep_resolved on the
 * loop's thread: 0 with ep->addrs filled, or an EAI_* code. lookup_drop
 * (at destroy) lets go of a lookup still out. */
int weir__ep_lookup_start(struct weir_endpoint *ep);
void weir__ep_resolved(struct weir_endpoint *ep, int eai);
void weir__ep_lookup_drop(struct weir_endpoint *ep);

/* Socket sink: weir_endpoint_stop (no retries from now on). */
void weir__ep_socket_stop(struct weir_endpoint *ep);

/* Socket sink: a send failed with err; 1 when a reconnect took over the
 * batch, 0 when the error stands. */
int weir__ep_socket_lost(struct weir_endpoint *ep, int err);

/* Socket sink: weir_endpoint_cut. */
void weir__ep_socket_cut(struct weir_endpoint *ep);
/* Socket sink: a resend of acknowledged-offset bytes completed. */
void weir__ep_replay_sent(struct weir_endpoint *ep, int res);

#endif
