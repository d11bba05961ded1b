/*
 * half.h - the part of a stream on one worker: its stages, their pipes,
 * the timers that watch them. A stream has one half, or two joined by a
 * channel when it is split. Everything here runs on the half's worker.
 *
 * A half is held while it builds and by each running pipe; the last
 * half_put finishes it, and once no timer of it is pending it is torn
 * down and tells the stream (mark and reap: a timer callback may still
 * name it).
 */
#ifndef WEIR_DAEMON_HALF_H
#define WEIR_DAEMON_HALF_H

#include <stdbool.h>
#include <stdint.h>

#include "conf/config.h"
#include "weir/channel_stream.h"
#include "weir/endpoint.h"
#include "weir/loop.h"
#include "weir/pipe.h"
#include "weir/file_send.h"
#include "weir/tee.h"
#include "weir/xform.h"

struct stream;
struct half;

/* Which pipe of a stream finished: idx -1 is the source's pipe into the
 * channel (or the transforms), i >= 0 the pipe into sink i, -2-k the pipe
 * into transform k. */
struct pipe_ctx {
    struct half *h;
    int idx;
};

/* The watch of one block sink's queue (sink_watch_step). */
struct sink_watch {
    int64_t full_since;  /* when its queue was first seen full; 0: not */
    int64_t room_since;  /* when it was first seen with room; 0: full */
    int64_t warned;      /* when it was last warned about */
    uint64_t full_bytes; /* its bytes when it filled */
};

struct half {
    struct stream *s;
    unsigned worker;
    struct weir_loop *loop;
    struct weir_task start;
    struct weir_task stop;
    struct weir_task cut, cut_ack; /* stream_cut, and its answer */
    struct weir_endpoint *src;     /* the source half only */
    struct weir_channel_tx *tx;    /* the source half of a split stream */
    struct weir_channel_rx *rx;    /* the sink half of a split stream */
    struct weir_tee *tee;          /* several sinks */
    struct weir_file_send *splice; /* the zero-copy stage instead */
    struct weir_endpoint **sinks;  /* the sink half (or the whole stream) */
    struct weir_xform **xf;        /* the transform stages, when here */
    unsigned nxf;
    /* Counted in cx->member_streams: a stage here splits into members
     * (weir_xform_uses_helper). */
    bool member_stream;
    /* Parked transforms are retried from this timer (watch.c). */
    struct weir_timer kick;
    uint64_t kick_ns;
    bool kicking;            /* inside the timer's callback */
    bool reap;               /* finished while a timer was pending or running */
    int64_t ack_until;       /* finished: waiting for peers' acks until then */
    struct weir_reader dead; /* cancels a readable nobody will read */
    /* Samples the block sinks' queues: time blocked, the warning for a
     * sink that holds the pipeline back, the idle sync (watch.c). */
    struct weir_timer watch;
    struct sink_watch *sw; /* per sink */
    /* A followed source's idle time, for syncing the transforms. */
    uint64_t idle_bytes, synced_bytes;
    unsigned idle_ticks;
    uint32_t budget; /* pool buffers promised for it (budget.h) */
    /* ... and while it keeps growing: the last flush_interval sync, and
     * the second pass a chain of transforms wants after it. */
    int64_t flushed_at;
    bool reflush;
    unsigned pipes; /* holds: the build, and each pipe still running */
    bool finished;
    bool stopped; /* stop arrived (a connect may still be in flight) */
    /* A connect on the worker before the stages are built (relay.c). */
    struct weir_op conn_op;
    /* The reverse direction of a relayed proxy stream (relay.c): the
     * upstream's replies back to the client, on this worker. */
    struct weir_endpoint *rsrc, *rsink;
    struct pipe_ctx rpc;
    int rfd_up, rfd_cli; /* their fds: cutting the pair shuts both down */
    /* TLS sessions of the source's socket and of the proxy's upstream,
     * shared by both directions; the creator's references (tls.c). */
    struct weir_tls_session *tls_src, *tls_up;
    void *tail; /* the last stage's own state (stream_tail) */
};

/* half.c. half_hold and half_put take and release a hold (the last put
 * finishes the half); half_finish marks the half finished and tears it
 * down now or, through half_try_reap, once its timers are back. */
static inline void half_hold(struct half *h)
{
    h->pipes++;
}
void half_put(struct half *h);
void half_finish(struct half *h);
void half_try_reap(struct half *h);
void half_teardown(struct half *h);
/* The pipe context of pipe idx (see struct pipe_ctx). */
struct pipe_ctx *stream_pipe_ctx(struct stream *s, int idx);
/* Pipes rs into ws as pipe idx; the half is held until the pipe ends. */
void half_pipe(struct half *h, struct weir_readable *rs,
               struct weir_writable *ws, int idx);
/* Cancels a readable that earlier stages feed but nothing will read (a
 * later stage could not be built), which ends those stages' pipes. */
void half_cancel_unread(struct half *h, struct weir_readable *rs, int rc);
/* Destroys the transforms, keeping the first error for the stream;
 * half_xforms_count copies their counters to the stream's xf_live. */
void half_xforms_destroy(struct half *h);
void half_xforms_count(struct half *h);
/* The proxy's pair: an error on either side ends both; teardown. */
void relay_cut(struct half *h);
void relay_teardown(struct half *h);

/* build.c. The start and stop tasks; half_build builds the stages, after
 * the connect half_connect starts when the stream needs one (true: the
 * build follows its completion, or the stream ends). */
void half_start_task(struct weir_task *t);
void half_stop_task(struct weir_task *t);
void half_cut_task(struct weir_task *t);
void half_build(struct half *h);
bool half_connect(struct half *h);

/* sinks.c. half_sinks_build makes the stream's sinks, fed by rs;
 * stream_tee_policy is the tee's name for an on_full. */
void half_sinks_build(struct half *h, struct weir_readable *rs);
enum weir_tee_policy stream_tee_policy(enum on_full f);
/* The pipeline's peer settings (keepalive, TCP_USER_TIMEOUT, the
 * congestion control, the send bound) into the options of an endpoint on
 * a connection of address a. A connection a listener accepted (a
 * listens) has its listener's TCP options already (serve/listener.c), so
 * it is given none: a client costs no setsockopt. */
void stream_peer_options(const struct weir_pipeline *p,
                         const struct weir_address *a,
                         struct weir_peer_options *o);

/* xforms.c. The pipeline's transforms on this half, fed by rs: the
 * readable their output comes out of, or NULL when one could not be made
 * (then the stream errors). */
struct weir_readable *half_xforms_build(struct half *h,
                                        struct weir_readable *rs);

/* watch.c. half_watch_start starts the half's watch timer (blocked time,
 * the held-back warning, the idle sync); half_sync_idle is one watch's
 * idle sync of the half's transforms (they are synced once the source
 * has read nothing for two watches running). half_kick_init readies the
 * retry of parked transforms (half_xforms_build). */
void half_watch_start(struct half *h);
void half_sync_idle(struct half *h);
void half_kick_init(struct half *h);
void half_xf_stalled(void *ctx, struct weir_xform *x);

/*
 * One watch of a block sink: adds the interval to *blocked_ns while its
 * queue is full, and returns how long it has been full when a "held the
 * source back" warning is due (full for 5 s, and stuck or slower than
 * others: `others` says some other sink is not full), else 0.
 */
int64_t sink_watch_step(struct sink_watch *w, bool full, uint64_t bytes,
                        int64_t now, bool others, uint64_t chunk,
                        uint64_t *blocked_ns);
#define SINK_WATCH_NS (250ull * 1000 * 1000)

/* How long a served client's connection may stay after the last byte, for
 * the client to read it before weir closes (weir_fd_sink_options's
 * linger_ns; nginx's lingering_timeout is the same). */
#define STREAM_LINGER_NS (5ull * 1000 * 1000 * 1000)

/* tls.c: a TLS session on fd for address a (server for tls-listen,
 * client for tls), or *out NULL when a is not TLS. 0 or -errno. */
int half_tls_open(struct half *h, const struct weir_address *a, int fd,
                  struct weir_tls_session **out);

/* relay.c: the proxy's reverse direction. */
int relay_open(struct stream *s);   /* main thread */
void relay_free(struct stream *s);  /* main thread */
void relay_prepare(struct half *h); /* before the client's fd is consumed */
void relay_start(struct half *h);   /* after the forward sink is built */

#endif
