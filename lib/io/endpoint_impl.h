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

/* Socket sink: a send failed with err; 1 when a reconnect took over the
 * batch, 0 when the error stands. */
int weir__ep_socket_lost(struct weir_endpoint *ep, int err);

/* Socket sink: weir_endpoint_cut. */
void weir__ep_socket_cut(struct weir_endpoint *ep);
/* Socket sink: a resend of acknowledged-offset bytes completed. */
void weir__ep_replay_sent(struct weir_endpoint *ep, int res);

#endif
