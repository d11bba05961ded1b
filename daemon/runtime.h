/*
 * runtime.h - the daemon's run-time objects: the run, its pipelines, their
 * listeners and streams. Shared by run.c (the main thread), listener.c,
 * stream.c (the workers) and progress.c.
 *
 * Threads: the main thread runs its own loop (signals, accepts, stream
 * bookkeeping); each stream's stages run on workers. A stream is created
 * and freed by the main thread; its halves live on workers, and the last
 * half to finish posts `done` back to the main loop.
 */
#ifndef WEIR_DAEMON_RUNTIME_H
#define WEIR_DAEMON_RUNTIME_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/socket.h>

#include "config.h"
#include "weir/channel_stream.h"
#include "weir/endpoint.h"
#include "weir/loop.h"
#include "weir/pipe.h"
#include "weir/splice.h"
#include "weir/tee.h"
#include "weir/worker.h"
#include "weir/xform.h"

struct listenfds;
struct run;
struct stream;

/* A config shared by the pipelines built from it: an unchanged pipeline
 * keeps its definition across reloads, so a config lives until the last
 * pipeline that points into it is gone. */
struct conf_ref {
    struct weir_config *conf;
    unsigned refs;
};

/* How a pipeline becomes streams. */
enum pl_mode {
    PL_ONCE,      /* one stream, started with the daemon */
    PL_SERVE,     /* a listen sink: one stream per client, from the file */
    PL_ACCEPT,    /* a listen source: one stream per accepted connection */
    PL_BROADCAST, /* a live source, listen sinks: one stream, every client
                     a branch of its tee (broadcast.c) */
};

struct listener {
    struct pipeline_rt *pl;
    const struct weir_address *addr;
    int fd;
    struct weir_op op;
    struct sockaddr_storage peer;
    socklen_t peerlen;
    bool closing;
    bool systemd; /* passed by systemd: its path is not ours to unlink */
    /* While a reload is prepared: the listener of a pipeline being replaced
     * whose socket this one takes over at the commit. */
    struct listener *from;
};

struct pipeline_rt {
    struct run *run;
    const struct weir_pipeline *p;
    enum pl_mode mode;
    struct listener *ls; /* one per listen address */
    unsigned nls;
    /* Resolved connect addresses: [i] for sink i, and the source's. */
    struct sockaddr_storage *sink_addr;
    socklen_t *sink_addrlen;
    int *sink_file_fd;        /* file sinks, opened once; -1 elsewhere */
    unsigned clients;         /* live streams (main thread) */
    uint64_t streams;         /* started so far */
    struct conf_ref *cref;    /* the config p belongs to */
    struct pipeline_rt *next; /* the run's list */
    bool draining;            /* removed or replaced by a reload */
    bool replaced;            /* while a reload is prepared: to drain */
    struct weir_timer drain;  /* its drain timeout */
    struct bcast *bc;         /* PL_BROADCAST (broadcast.c) */
};

/* Which pipe of a stream finished: idx -1 is the source's pipe into the
 * channel, i >= 0 the pipe into sink i. */
struct pipe_ctx {
    struct half *h;
    int idx;
};

/* The watch of one block sink's queue (stream.c's sink_watch_step). */
struct sink_watch {
    int64_t full_since;  /* when its queue was first seen full; 0: not */
    int64_t warned;      /* when it was last warned about */
    uint64_t full_bytes; /* its bytes when it filled */
};

struct bhub;

/* One stage group on one worker. */
struct half {
    struct stream *s;
    unsigned worker;
    struct weir_loop *loop;
    struct weir_task start;
    struct weir_task stop;
    struct weir_endpoint *src;    /* the source half only */
    struct weir_chan_tx *tx;      /* the source half of a split stream */
    struct weir_chan_rx *rx;      /* the sink half of a split stream */
    struct weir_tee *tee;         /* several sinks */
    struct weir_splice *splice;   /* the zero-copy stage instead */
    struct weir_endpoint **sinks; /* the sink half (or the whole stream) */
    struct weir_xform **xf;       /* the transform stages, when here */
    bool compressing; /* counted in run->compressing (a gzip stage here) */
    unsigned nxf;
    /* Parked transforms are retried from this timer (stream.c). */
    struct weir_timer kick;
    uint64_t kick_ns;
    bool kicking; /* inside the timer's callback */
    bool reap;    /* finished while the timer was pending or running */
    struct weir_reader dead; /* cancels a readable nobody will read */
    /* Samples the block sinks' queues: time blocked, and the warning for
     * a sink that holds the pipeline back (stream.c). */
    struct weir_timer watch;
    struct sink_watch *sw; /* per sink */
    /* A followed source's idle time, for syncing the transforms. */
    uint64_t idle_bytes, synced_bytes;
    unsigned idle_ticks;
    unsigned pipes; /* pipes still running */
    bool finished;
    bool stopped; /* stop arrived (a connect may still be in flight) */
    /* A connect on the worker before the stages are built (relay.c). */
    struct weir_op conn_op;
    /* The reverse direction of a relayed proxy stream (relay.c): the
     * upstream's replies back to the client, on this worker. */
    struct weir_endpoint *rsrc, *rsink;
    struct pipe_ctx rpc;
    int rfd_up, rfd_cli; /* their fds: cutting the pair shuts both down */
    struct bhub *bhub;   /* PL_BROADCAST: the shared stream's hub */
};

/* What one sink did, for the log line at the end of a stream and weir
 * pipe's summary. Written by the sinks' worker before `done`. */
struct sink_stats {
    uint64_t dropped;    /* bytes its on_full policy dropped */
    uint64_t produced;   /* bytes offered to it (tee'd sinks only) */
    uint64_t blocked_ns; /* its full queue held the source back */
    bool teed;           /* it had a tee branch (counters valid) */
    bool disconnected;   /* on_full=disconnect cut it loose */
};

struct stream {
    struct run *run;
    struct pipeline_rt *pl;
    uint64_t id;
    char peer[80]; /* the client, for log lines; "" for PL_ONCE */
    int src_fd;    /* handed to the source endpoint */
    int sink_fd;   /* PL_SERVE: the client */
    int replay_fd; /* a file source, for a reconnecting sink; or -1 */
    bool src_regular;
    bool zero_copy;   /* try the splice stage first */
    int kill_fd;      /* an accepted client's socket (a dup), to cut it */
    struct half h[2]; /* [0] source side, [1] sink side when split */
    bool split;
    _Atomic unsigned halves_left;
    struct weir_task done; /* posted to the main loop */
    struct weir_task stop_ack;
    bool done_seen, stop_posted, stop_acked; /* main thread */
    /* Results, written by the workers before `done` is posted. */
    int src_rc;   /* the source's pipe */
    int *sink_rc; /* each sink's pipe */
    uint64_t *sink_bytes;
    struct sink_stats *ss;
    /* The first transform error: the code, the input offset (corrupt
     * input) and the transform's name. */
    int xf_err;
    uint64_t xf_off;
    char xf_name[16];
    /* nsinks + 1 + ntransforms: the source's pipe, the sinks', then the
     * pipes into the transforms. */
    struct pipe_ctx *pc;
    /* A socket to connect on the worker first (the upstream of a relayed
     * stream, or a connecting source), or -1; not owned here. */
    int conn_fd;
    struct sockaddr_storage conn_addr;
    socklen_t conn_addrlen;
    /* Relayed proxy stream (relay.c): up_fd is the upstream socket until
     * the worker's endpoints own it; kill_up_fd a dup the main thread
     * keeps to cut it, like kill_fd. */
    bool relay;
    int up_fd, kill_up_fd;
    uint64_t rev_bytes; /* bytes relayed back to the client */
    /* A broadcast's source attempt that never came up: its end is not
     * logged (broadcast.c logs once per outage, not per attempt). */
    bool quiet;
    _Atomic uint64_t bytes_in;
    _Atomic uint64_t bytes_out; /* sink 0's */
    struct stream *next, *prev; /* the run's live list */
};

struct run {
    struct weir_config *conf; /* the current one: cref->conf */
    struct conf_ref *cref;
    const char *conffile; /* what SIGHUP reads again; NULL: nothing */
    bool verbose;         /* -v: debug whatever log_level says */
    size_t bufsz;         /* the pools' buffers: a reload's ceiling */
    struct weir_workers *workers;
    unsigned nworkers;
    /* Per worker, its streams with a gzip stage: a stream's gzip borrows
     * a second worker only when that one has none of its own (stream.c).
     * NULL: never. */
    _Atomic uint32_t *compressing;
    struct weir_loop *main;
    bool split;           /* placement: source and sinks on different workers */
    bool zero_copy;       /* file -> socket streams take the splice stage */
    bool zero_copy_serve; /* the same, for a listen sink's clients */
    uint64_t splice_serve_max; /* bigger served files take streams; 0: any */
    unsigned next_worker;
    struct pipeline_rt *pls; /* a list, the draining ones too */
    struct weir_reap reap;   /* frees drained pipelines */
    bool reap_queued;
    struct listenfds *lfds; /* socket activation */
    struct stream *live;
    unsigned nlive;
    unsigned failures;
    bool stopping;
    bool finished;
    int exit_status;
    /* Signals. */
    int sigfd;
    struct weir_op sig_op;
    uint8_t siginfo[128];
    struct weir_timer drain;
    struct weir_timer cut; /* the bound on ending cut streams */
    bool cutting;
    /* systemd: STATUS= and WATCHDOG=1. */
    struct weir_timer status;
    struct weir_timer watchdog;
    uint64_t watchdog_ns;
    uint64_t bytes_done; /* sink 0's bytes of the streams that ended */
    uint64_t status_bytes;
    int64_t status_ns;
    /* weir pipe. */
    struct weir_timer progress;
    bool tty;
    int64_t t_start_ns;
    uint64_t total;     /* source size when known, else 0 */
    struct stream *one; /* the oneshot stream, kept for the summary */
};

/* stream.c */
struct stream *stream_new(struct pipeline_rt *pl, int src_fd, int sink_fd,
                          const char *peer);
void stream_start(struct stream *s);
void stream_stop(struct stream *s);
void stream_free(struct stream *s);

/* stream.c, worker: builds the half's stages once its connect is done;
 * half_put releases a hold on the half (the last one finishes it). */
void half_build(struct half *h);
void half_put(struct half *h);
/* stream.c, worker. half_watch_start starts the half's watch timer (every
 * ~250 ms: blocked time, the held-back warning, the idle sync);
 * half_sync_idle is one watch's idle sync of the half's transforms (they
 * are synced once the source has read nothing for two watches running).
 * sink_watch_step is one watch of a block sink: adds the interval to
 * *blocked_ns while its queue is full, and returns how long it has been
 * full when a "held the source back" warning is due (full for 5 s, and
 * stuck or slower than others: `others` says some other sink is not
 * full), else 0. */
void half_watch_start(struct half *h);
void half_sync_idle(struct half *h);
int64_t sink_watch_step(struct sink_watch *w, bool full, uint64_t bytes,
                        int64_t now, bool others, uint64_t chunk,
                        uint64_t *blocked_ns);

/* relay.c: the proxy's reverse direction, and connects on the worker. */
bool relay_wanted(const struct pipeline_rt *pl); /* main thread */
int relay_open(struct stream *s);                /* main thread */
void relay_free(struct stream *s);               /* main thread */
/* Worker. stream_connect starts h's connect when it needs one (true:
 * half_build follows its completion, or the stream ends). */
bool stream_connect(struct half *h);
void relay_prepare(struct half *h); /* before the client's fd is consumed */
void relay_start(struct half *h);   /* after the forward sink is built */
void relay_cut(struct half *h);     /* an error on either side ends both */
void relay_teardown(struct half *h);

/* broadcast.c. Main thread: broadcast_start makes the shared stream (a
 * new one each time a tcp/unix source is connected again),
 * broadcast_client adds an accepted client, broadcast_cut shuts the
 * clients' connections down (returns how many), broadcast_free at the
 * pipeline's end. Worker: broadcast_build is the shared stream's last
 * stage, fed by rs; broadcast_teardown when its half ends. */
int broadcast_start(struct pipeline_rt *pl);
void broadcast_client(struct listener *l, int fd, const char *peer);
unsigned broadcast_cut(const struct pipeline_rt *pl);
void broadcast_free(struct pipeline_rt *pl);
void broadcast_build(struct half *h, struct weir_readable *rs);
void broadcast_teardown(struct half *h);
/* Worker: one watch of the shared stream's half (its clients, their
 * joins, the idle sync); returns when to watch next, in ns. */
uint64_t broadcast_watch(struct half *h, int64_t now);
/* Main thread: a stream of a broadcast pipeline ended; true when
 * broadcast.c took over its logging (the source restarts). */
bool broadcast_stream_ended(struct stream *s);
/* Main thread: the pipeline drains or weir stops: no more restarts, held
 * clients are closed. */
void broadcast_stop(struct pipeline_rt *pl);

/* stream_report.c: main thread, when the stream ended. */
void stream_report(struct stream *s);

/* listener.c */
int listener_open(struct listener *l);
void listener_arm(struct listener *l);
void listener_close(struct listener *l);
/* Whether a and b name the same socket (kind, path, resolved address). */
bool listener_same_addr(const struct weir_address *a,
                        const struct weir_address *b);
/* Takes over from->fd at a reload's commit; from stops accepting. */
void listener_take_over(struct listener *l, struct listener *from);

/* pipeline.c */
/* Builds pl (pl->p, pl->cref set) up to open listeners, not yet armed;
 * with `old`, a listen address of a draining-to-be pipeline is taken over
 * rather than bound. On failure pipeline_free undoes it. */
int pipeline_prepare(struct run *r, struct pipeline_rt *pl,
                     struct pipeline_rt *old);
void pipeline_start(struct pipeline_rt *pl);
/* Stops accepting, lets the streams finish up to the drain timeout. */
void pipeline_drain(struct pipeline_rt *pl);
void pipeline_free(struct pipeline_rt *pl);
/* Frees the draining pipelines that have nothing left (deferred). */
void pipeline_reap_later(struct run *r);
unsigned pipeline_count(const struct run *r); /* not draining */

/* reload.c */
void reload(struct run *r);
void conf_ref_put(struct conf_ref *c);

/* sockaddr.c */
int sockaddr_resolve(const struct weir_address *a, struct sockaddr_storage *ss,
                     socklen_t *len);
void sockaddr_format(const struct sockaddr *sa, socklen_t len, char *buf,
                     size_t size);

/* run.c: called on the main thread when a stream ended. */
void run_stream_ended(struct stream *s);
void run_check_finished(struct run *r);
/* Shuts down the client connections of pl's streams (NULL: all streams);
 * returns how many. */
unsigned run_cut_streams(struct run *r, const struct pipeline_rt *pl);
int64_t run_now_ns(void);

/* status.c: STATUS= kept current, WATCHDOG=1, under systemd. */
void status_start(struct run *r);
void status_update(struct run *r); /* now, after a change */

/* progress.c */
void progress_start(struct run *r);
void progress_summary(struct run *r);

#endif
