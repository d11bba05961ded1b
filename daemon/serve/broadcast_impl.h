/*
 * broadcast_impl.h - what the two sides of a broadcast share: the
 * clients, the hub of each source stream on the worker, and the
 * broadcast itself. broadcast.c is the main thread's side, broadcast_hub.c
 * the worker's.
 */
#ifndef WEIR_DAEMON_BROADCAST_IMPL_H
#define WEIR_DAEMON_BROADCAST_IMPL_H

#include "serve/broadcast.h"
#include "stream/tail.h"

/* The clients' watch keeps the sinks' pace (sink_watch_step counts in
 * SINK_WATCH_NS steps); joins waiting for a sync point retry faster. */
#define WATCH_NS      SINK_WATCH_NS
#define JOIN_RETRY_NS (20ull * 1000 * 1000)
/* How long an on_full=disconnect client may hold the source back while
 * other clients have room before it is cut: long enough that a reader
 * which drains in bursts (a pager, a busy collector) is not cut for one
 * pause, short enough that the others wait at most this for a stalled
 * one. */
#define BCAST_LAG_NS (2ll * 1000 * 1000 * 1000)

struct bclient {
    struct bcast *bc;
    const struct weir_address *addr; /* the listen sink it came through */
    unsigned sink;                   /* that sink's index in the pipeline */
    char peer[80];
    int fd;      /* handed to the sink endpoint on the worker */
    int kill_fd; /* main: a dup, to cut the connection */
    struct weir_task join;
    struct weir_task done;
    bool held;             /* main: waiting for a source */
    struct weir_list link; /* main: in bc->clients */
    /* Worker. */
    struct bhub *hub; /* the stream it joined */
    struct weir_endpoint *ep;
    int cut_fd; /* a dup, to cut the connection at an eviction */
    unsigned branch;
    struct sink_watch sw;   /* held the source back? */
    int64_t lag_since;      /* on_full=disconnect: full while others were
                             * not, since; 0: keeping up */
    struct weir_list wlink; /* in bc->joined or bc->waiting */
    /* Written by the worker before `done` is posted. */
    int rc;
    uint64_t bytes, lost, blocked_ns;
    bool evicted, refused;
    bool bounced; /* no source was up: the main thread holds it again */
};

/* Worker: one stream's tee and its clients' way in. */
struct bhub {
    struct bcast *bc;
    struct stream *s; /* the source stream whose last stage it is */
    struct weir_tee *tee;
    struct weir_xform *zx; /* the compressor joins sync, or NULL */
    int64_t watched;       /* the clients' last watch */
    bool going;            /* go_task resumed the tee */
    bool ended;            /* the source ended */
};

struct bcast {
    struct bcast_env env;
    struct stream_spec spec; /* its streams' */
    struct weir_list
        streams; /* main: every stream of the source still running */
    unsigned nstreams;
    unsigned worker; /* every stream's */
    bool placed;     /* worker is chosen */
    unsigned nclients;
    struct weir_list clients; /* main: connected or held */
    /* Main. */
    struct stream *s; /* the current source's stream; NULL between two */
    bool up;          /* its tee takes clients */
    bool stopped;     /* drained or stopping: no more sources */
    bool dead;        /* the source ended for good: clients are refused */
    bool outage;      /* the source is down, and that was logged */
    uint64_t backoff_ns;
    struct weir_timer retry;
    struct weir_task up_task;   /* worker -> main: the source is up */
    struct weir_task down_task; /* worker -> main: the source ended */
    struct weir_task go_task;   /* main -> worker: held clients are in */
    /* Worker. */
    struct bhub *hub;         /* the current stream's, while its source runs */
    struct weir_list joined;  /* clients with a branch, of every stream */
    struct weir_list waiting; /* clients waiting for a sync point, in order */
    int down_rc;              /* written before down_task is posted */
};

/* broadcast_hub.c, worker: the source stream's last stage, and the tasks
 * the main thread posts (a client to join, the tee to start reading). */
extern const struct stream_tail bcast_tail;
void bcast_client_join(struct weir_task *t);
void bcast_go_task(struct weir_task *t);

#endif
