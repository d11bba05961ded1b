/*
 * stream.h - one stream of the daemon on a worker: a source, the
 * pipeline's transforms, and its sinks (or a last stage its maker
 * supplies, stream/tail.h), as core streams joined by core pipes. This is
 * what a stream's maker (serve/, run/) sees of it: make one, start it,
 * stop or cut it, read its results and live counters, hear its end.
 *
 * A stream knows its pipeline's definition (conf/) and nothing of who
 * made it: the maker describes what its streams have in common in a
 * struct stream_spec (which sinks, whether they reconnect, the last
 * stage, the hooks it hears the end through) and owns each stream it
 * made until the released hook says it is gone.
 *
 * Threads: everything here runs on the main thread, except what says
 * "any thread" (the live counters). The stream runs on one worker, which
 * posts its end to the main loop.
 */
#ifndef WEIR_DAEMON_STREAM_H
#define WEIR_DAEMON_STREAM_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/socket.h>
#include <sys/types.h>

#include "conf/config.h"
#include "httpd/http_conn.h"
#include "stream/sendpath.h"
#include "weir/endpoint.h"
#include "weir/loop.h"
#include "weir/util.h"
#include "weir/worker.h"

struct stream;
struct stream_sched;
struct stream_tail;
struct ckpt;
struct ckpt_set;
struct alive;

/* What every stream of a run shares; the run fills it in, then
 * stream_ctx_init. */
struct stream_ctx {
    struct weir_loop *main;
    struct weir_workers *workers;
    unsigned nworkers;
    struct sendpath paths; /* chosen once at start (sendpath.h) */
    /* Where a stream's closing lines go; NULL: the log. */
    void (*report_line)(const struct stream *s, const char *line);
    struct stream_sched *sched; /* the streams' own (stream_impl.h) */
};

/* Readies cx once its fields are set: 0, or -ENOMEM. stream_ctx_fini
 * frees what it made, once no stream is left. */
int stream_ctx_init(struct stream_ctx *cx);
void stream_ctx_fini(struct stream_ctx *cx);

/* A sink of the pipeline as its maker resolved it: the socket address of
 * a tcp/unix sink, the open fd of a file sink (-1 elsewhere). */
struct stream_sink_res {
    struct sockaddr_storage addr;
    socklen_t addrlen;
    int file_fd;
    /* A tcp sink named by a host name that the sink itself looks up at
     * every connect (addr unused), or NULL. */
    const char *host;
    uint16_t port;
};

/* A followed file's checkpoints (checkpoint.c has the story): made by
 * the pipeline, named in its streams' spec. `dir` is the state directory,
 * the followed file is p's source. The file's checkpoint, when there is
 * one, is read now (a damaged one is logged and ignored). hold is kept
 * alive while a timer of the checkpoint is pending. NULL when out of
 * memory. ckpt_free writes what is newer than the file and stops the
 * timer; the object goes once its timer is back. Main thread. */
struct ckpt *ckpt_new(struct weir_loop *main, struct alive *hold,
                      const struct weir_pipeline *p, const char *dir,
                      uint64_t interval_ms, const struct stream_sink_res *res);
void ckpt_free(struct ckpt *ck);
/* The same for a glob source's files (checkpoint_set.h): one file
 * of every file's checkpoint, pipeline-NAME.files. */
struct ckpt_set *ckpt_set_new(struct weir_loop *main, struct alive *hold,
                              const struct weir_pipeline *p, const char *dir,
                              uint64_t interval_ms,
                              const struct stream_sink_res *res);
void ckpt_set_free(struct ckpt_set *cs);
/* Main thread. Checkpoint writes that failed since the start, of every
 * pipeline (a warning says the first of a run of them). */
uint64_t ckpt_write_failures(void);

/* Main thread. ended: the stream's results are final (and reported);
 * released: it is about to be freed, the owner unlinks it. */
struct stream_hooks {
    void (*ended)(struct stream *s);
    void (*released)(struct stream *s);
};

/* One open file that the streams of a served pipeline share: each
 * borrows its fd, so a client costs no fd of its own for the file. A
 * file replaced under the path is opened anew for the next clients; a
 * file closes with the last stream that reads it, so an idle server holds
 * nothing open. Main thread only. */
struct src_file;
struct src_share {
    struct src_file *cur; /* what new clients get, or NULL */
};

/* Main thread. Forgets the share's current file (its streams keep it). */
void stream_share_release(struct src_share *sh);

/* A connection handed to the park: its listen address, when its next
 * request is due (CLOCK_MONOTONIC ns), and for the stream it gets next,
 * when it came, the bytes sent it and the requests answered so far. */
struct http_parked {
    const struct weir_address *via;
    int64_t deadline;
    int64_t started_ns;
    uint64_t bytes;
    int64_t idle_since; /* when its last answer was sent (http_conn.h) */
    uint32_t requests;
    int fd; /* the client's socket: a dup, the park's from then on */
};

/* A pipeline whose sinks are http-listen: what its clients' connections
 * share (httpd/http_conn.h). The maker opens and frees it. */
struct stream_http {
    int root_fd;            /* a dir source (O_PATH); -1: a file */
    struct http_mime *mime; /* Content-Type by extension */
    /* Each sink's access log (access_log=), or NULL; [p->nsinks]. */
    struct access_log **logs;
    struct http_counts counts;
    /* Where a connection idle park_after_ns goes instead of keeping its
     * stream: park(park_arg, ...) on the stream's worker takes a dup of
     * the client's socket; NULL: never parked. */
    void (*park)(void *park_arg, struct weir_loop *loop,
                 const struct http_parked *pc);
    void *park_arg;
    uint64_t park_after_ns;
    /* Each worker's open files, kept between requests; [nworkers], each
     * made by its worker at its first client and used by it alone; NULL:
     * none kept. The maker frees them once no client is left. */
    struct http_file_cache **files;
    unsigned nworkers;
    /* What each sink's connections share, made by stream_http_prepare
     * once the fields above are set; [p->nsinks]. */
    struct http_conn_options *conn_opts;
};

/* Main thread, before the first client: site->conn_opts from p's
 * http-listen sinks. 0 or -ENOMEM; the maker frees conn_opts. */
int stream_http_prepare(struct stream_http *site,
                        const struct weir_pipeline *p);

/* What the streams of one maker have in common; outlives them. */
struct stream_spec {
    const struct weir_pipeline *p;
    const struct stream_sink_res *res; /* [p->nsinks] */
    unsigned nsinks;  /* the stream's sinks: 1 for a served client */
    bool client_sink; /* sink 0 is the accepted connection (sink_fd) */
    bool reconnect;   /* tcp/unix sinks reconnect and resend */
    bool replay;      /* a regular file source can be resent from */
    bool zero_copy;   /* may take the splice stage (file -> one socket) */
    bool relay;       /* an accepted source's replies come back (relay.c) */
    bool src_at_end;  /* a regular file source starts at its end (live) */
    bool log_connect; /* a failed source connect is logged here */
    struct src_share *share;        /* a served file: one fd for every client */
    const struct stream_tail *tail; /* NULL: the pipeline's sinks */
    /* Each client is an HTTP connection served from the source (no
     * copy of it is streamed); NULL: not an http-listen pipeline. */
    struct stream_http *http;
    /* A followed file's checkpoints (checkpoint.h), or NULL. */
    struct ckpt *ckpt;
    /* A glob source's files' checkpoints (checkpoint_set.h), or NULL. */
    struct ckpt_set *ckset;
    const struct stream_hooks *hooks;
};

/* What one sink did, for the closing lines and weir pipe's summary.
 * Written by the stream's worker before the end is posted. */
struct sink_stats {
    uint64_t dropped;    /* bytes its on_full policy dropped */
    uint64_t produced;   /* bytes offered to it (tee'd sinks only) */
    uint64_t blocked_ns; /* its full queue held the source back */
    bool teed;           /* it had a tee branch (counters valid) */
    bool disconnected;   /* on_full=disconnect cut it loose */
    int64_t down_since;  /* an outage's start (sinks.c); 0: none */
};

/* Where a sink's connection stands. */
enum sink_state {
    SINK_UP,         /* connected, or a kind that does not connect */
    SINK_CONNECTING, /* not connected yet */
    SINK_RETRYING,   /* lost its connection, connecting again */
    SINK_CUT,        /* cut loose by its on_full policy (disconnect) */
    SINK_STATES,
};

/* What a sink's worker tells anyone who looks while it runs. Relaxed,
 * one writer each: statistics that order nothing. */
struct sink_live {
    _Atomic uint64_t out;           /* bytes delivered (sink 0's: bytes_out) */
    _Atomic uint64_t blocked_ns;    /* sink_stats.blocked_ns so far */
    _Atomic uint64_t dropped;       /* what its tee branch dropped so far */
    _Atomic uint64_t queued;        /* bytes waiting in its queue */
    _Atomic uint32_t reconnects;    /* connections made again after a loss */
    _Atomic uint32_t state;         /* enum sink_state */
    struct weir_http_counters http; /* an http sink's (its endpoint adds) */
    struct weir_kafka_counters kafka;         /* a kafka sink's (the same) */
    struct weir_jetstream_counters jetstream; /* a jetstream sink's */
};

/* A transform's bytes in and out so far, kept like struct sink_live. */
struct xf_live {
    _Atomic uint64_t in, out;
};

/* The high-water mark of sink i's queue. */
static inline uint64_t stream_sink_hwm(const struct weir_pipeline *p,
                                       unsigned i)
{
    const struct weir_address *a = p->sinks[i];

    return a->high_water_mark ? a->high_water_mark : p->high_water_mark;
}

/*
 * A stream of sp's pipeline. src_fd: an accepted connection as the
 * source, or -1 to open the pipeline's source; sink_fd: the client of a
 * client_sink spec, else -1; peer names the client in log lines (NULL:
 * none). A source that cannot be opened is not an error here: the stream
 * ends at once with it as its result. NULL when out of memory (the fds
 * are then the caller's still).
 */
struct stream *stream_new(struct stream_ctx *cx, const struct stream_spec *sp,
                          void *owner, int src_fd, int sink_fd,
                          const char *peer);
/* Before the start: the listen address an accepted client came through
 * (its TLS, if any); and a stream whose end is not reported (a broadcast
 * logs once per outage, not per failed attempt). */
void stream_set_via(struct stream *s, const struct weir_address *via);
void stream_set_quiet(struct stream *s);
/* Whether its end goes unreported: set so, or an HTTP client's stream
 * that ended as its connection was parked (the connection goes on). */
bool stream_quiet(const struct stream *s);
/* Before the start: the stream of a parked HTTP client that asks again
 * goes on from its earlier ones: when the client came, the bytes sent
 * it and the requests it made before this stream. */
void stream_set_carried(struct stream *s, const struct http_parked *pc);
uint64_t stream_carried_bytes(const struct stream *s);
/* Places the stream on a worker (on `worker` when worker >= 0, else the
 * next in turn) and starts it. The hooks follow once it has ended. */
void stream_start(struct stream *s, int worker);
/* Asks the stream to end: a source that does not end by itself stops;
 * what was read still goes out. */
void stream_stop(struct stream *s);
/* Shuts the stream's client connections down, so that it ends now;
 * returns 1 when it had one to cut, else 0. */
unsigned stream_cut(struct stream *s);
/* The worker it runs on. */
unsigned stream_worker(const struct stream *s);

/* The maker's list of its streams: the node each stream has for it, and
 * the stream of a node. */
struct weir_list *stream_link(struct stream *s);
struct stream *stream_of_link(const struct weir_list *node);

/* What the stream is (stats.c). */
void *stream_owner(const struct stream *s);
struct stream_ctx *stream_ctx_of(const struct stream *s); /* stream_new's */
const struct stream_spec *stream_spec(const struct stream *s);
const char *stream_peer(const struct stream *s);   /* "" when none */
int64_t stream_started_ns(const struct stream *s); /* clock_now_ns */
bool stream_relays(const struct stream *s);        /* a proxy (relay.c) */
bool stream_zero_copy(const struct stream *s);     /* tries the splice stage */
/* A regular file source not followed: its size; else 0. Known once the
 * stream is made. */
uint64_t stream_src_size(const struct stream *s);
/* Its end reached the main thread (the ended hook has run or runs). */
bool stream_done(const struct stream *s);

/* Its results, final once it has ended. */
int stream_src_rc(const struct stream *s);              /* the source's pipe */
int stream_sink_rc(const struct stream *s, unsigned i); /* sink i's */
uint64_t stream_sink_bytes(const struct stream *s, unsigned i);
const struct sink_stats *stream_sink_stats(const struct stream *s, unsigned i);
int stream_xf_err(const struct stream *s); /* the first transform error */
/* Its worker's pool could not cover it (budget.h). */
bool stream_refused(const struct stream *s);
/* The error that ended the stream, the sinks' first, or 0. */
int stream_error(const struct stream *s);
/* What err (the stream's error) means for an operator: strerror, or what
 * the transform that failed knows better (a zstd frame's window). */
const char *stream_error_text(const struct stream *s, int err, char *buf,
                              size_t len);

/* Any thread, while it runs: the bytes read from the source and those
 * sink i has delivered so far, sink i's and transform k's live counters. */
uint64_t stream_bytes_in(const struct stream *s);
uint64_t stream_sink_out(const struct stream *s, unsigned i);
struct sink_live *stream_sink_live(const struct stream *s, unsigned i);
/* A jetstream source's figures (its endpoint adds to them). */
const struct weir_jetstream_source_counters *
stream_src_js(const struct stream *s);
struct xf_live *stream_xf_live(const struct stream *s, unsigned k);

/* A glob source's files as its worker last sampled them (~250 ms ago):
 * the totals, and the files most behind (read, not yet acknowledged by
 * every sink), most first. */
#define STREAM_FS_TOP 10
struct stream_fs_file {
    uint64_t behind;
    char path[256]; /* cut at its end when longer */
};
struct stream_fs_view {
    uint64_t watched, open; /* files known, descriptors held */
    uint64_t read;          /* bytes of records delivered to the sinks */
    uint64_t behind, unread, lost;
    uint64_t truncated, skipped, rotations;
    unsigned ntop;
    struct stream_fs_file top[STREAM_FS_TOP];
};
/* Main thread. False when the source is not a glob, or before the first
 * sample (fileset_live.c). */
bool stream_fs_view(const struct stream *s, struct stream_fs_view *v);

/* The TCP options of the pipeline's connections (keepalive,
 * TCP_USER_TIMEOUT, the congestion control), for a listener to set on its
 * socket, or a stage on its connection (sinks.c). */
void stream_tcp_options(const struct weir_pipeline *p,
                        struct weir_tcp_options *t);

#endif
