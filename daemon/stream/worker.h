/*
 * worker.h - a stream's state on its worker (struct stream_home, in
 * struct stream): its stages, their pipes, the timers that watch them,
 * and their life (worker.c). Everything here runs on the stream's worker.
 *
 * A stream is held while it builds and by each running pipe; the last
 * stream_put finishes it, and once no timer of it is pending its stages
 * are torn down and its end is posted to the main loop (mark and reap: a
 * timer callback may still name it).
 */
#ifndef WEIR_DAEMON_WORKER_H
#define WEIR_DAEMON_WORKER_H

#include <stdbool.h>
#include <stdint.h>

#include "weir/endpoint.h"
#include "weir/file_send.h"
#include "weir/loop.h"
#include "weir/pipe.h"
#include "weir/tee.h"
#include "weir/xform.h"

struct stream;
struct sink_watch;

/* Which pipe of a stream finished: idx -1 is the source's pipe (into the
 * transforms or the sinks), i >= 0 the pipe into sink i, -2-k the pipe
 * into transform k. */
struct pipe_ctx {
    struct stream *s;
    int idx;
};

struct stream_home {
    unsigned worker;
    struct weir_loop *loop;
    struct weir_task start;
    struct weir_task stop;
    struct weir_task cut, cut_ack; /* stream_cut, and its answer */
    struct weir_endpoint *src;
    struct weir_tee *tee;          /* several sinks */
    struct weir_file_send *splice; /* the zero-copy stage instead */
    struct http_conn *http;        /* or an HTTP client's connection */
    struct weir_endpoint **sinks;
    struct weir_xform **xf; /* the transform stages */
    unsigned nxf;
    /* Counted in the run's member streams: a stage here splits into
     * members (weir_xform_uses_helper; xforms.c). */
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
    /* A glob source found, rotated or cut a file: its checkpoint text is
     * made at once, not at the next watch (checkpoint_set.c). */
    struct weir_timer ck_soon;
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
    bool cutting; /* the owner cut the stream: its sinks' ends are no news */
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

/* stream_hold and stream_put (tail.h) take and release a hold;
 * stream_finish marks the stream finished and tears it down now or,
 * through stream_try_reap, once its timers are back. */
void stream_finish(struct stream *s);
void stream_try_reap(struct stream *s);
/* The pipe context of pipe idx (see struct pipe_ctx). */
struct pipe_ctx *stream_pipe_ctx(struct stream *s, int idx);
/* Pipes rs into ws as pipe idx; the stream is held until the pipe ends. */
void stream_pipe(struct stream *s, struct weir_readable *rs,
                 struct weir_writable *ws, int idx);
/* Cancels a readable that earlier stages feed but nothing will read (a
 * later stage could not be built), which ends those stages' pipes. */
void stream_cancel_unread(struct stream *s, struct weir_readable *rs, int rc);
/* Destroys the transforms, keeping the first error for the stream;
 * stream_xforms_count copies their counters to the stream's xf_live.
 * Here rather than in xforms.c, which builds on this file. */
void stream_xforms_destroy(struct stream *s);
void stream_xforms_count(struct stream *s);
/* The proxy's pair: an error on either side ends both; teardown. Here
 * rather than in relay.c, which builds on this file. */
void relay_cut(struct stream *s);
void relay_teardown(struct stream *s);

#endif
