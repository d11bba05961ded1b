/*
 * stream.h - one stream of the daemon on the workers: a source, the
 * pipeline's transforms, and its sinks (or a last stage its maker
 * supplies), as core streams joined by core pipes.
 *
 * A stream knows its pipeline's definition (conf/) and nothing of who
 * made it: the maker describes what its streams have in common in a
 * struct stream_spec (which sinks, whether they reconnect, the last
 * stage, the hooks it hears the end through) and owns each stream it
 * made until the released hook says it is gone.
 *
 * Threads: stream_new, _start, _stop, _cut and the hooks run on the main
 * thread; the stages run on the workers (half.h). The last half to finish
 * posts the end to the main loop.
 */
#ifndef WEIR_DAEMON_STREAM_H
#define WEIR_DAEMON_STREAM_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/socket.h>
#include <sys/types.h>

#include "conf/config.h"
#include "stream/checkpoint.h"
#include "stream/half.h"
#include "stream/place.h"
#include "weir/endpoint.h"
#include "weir/loop.h"
#include "weir/util.h"
#include "weir/worker.h"

struct stream;

/* What every stream of a run shares. */
struct stream_ctx {
    struct weir_loop *main;
    struct weir_workers *workers;
    unsigned nworkers;
    unsigned next_worker; /* round-robin placement */
    /* Per worker, its streams with a gzip, zstd, gunzip or unzstd stage:
     * a stream's codec borrows a second worker only while that one has
     * none of its own. NULL: never. */
    _Atomic uint32_t *member_streams;
    struct placement place; /* chosen once at start (place.h) */
    /* Where a stream's closing lines go (stream_report); NULL: the log. */
    void (*report_line)(const struct stream *s, const char *line);
};

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

/*
 * The last stage of a stream, when it is not the pipeline's sinks (a
 * broadcast's live tee). Worker. build takes the output of the
 * transforms; teardown runs when the half ends; watch is the half's watch
 * (every ~250 ms, or when it asks) and returns when to watch next, in ns.
 */
struct stream_tail {
    void (*build)(struct half *h, struct weir_readable *rs);
    void (*teardown)(struct half *h);
    uint64_t (*watch)(struct half *h, int64_t now);
};

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
struct src_share;

struct src_file {
    int fd;
    dev_t dev;
    ino_t ino;
    unsigned refs;           /* the streams that read it */
    struct src_share *share; /* while it is the share's current file */
};

struct src_share {
    struct src_file *cur; /* what new clients get, or NULL */
};

/* Main thread. Forgets the share's current file (its streams keep it). */
void stream_share_release(struct src_share *sh);

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
    bool one_worker;  /* never split over two workers */
    bool log_connect; /* a failed source connect is logged here */
    struct src_share *share;        /* a served file: one fd for every client */
    const struct stream_tail *tail; /* NULL: the pipeline's sinks */
    /* A followed file's checkpoints (checkpoint.h), or NULL. */
    struct ckpt *ckpt;
    const struct stream_hooks *hooks;
};

/* What one sink did, for the closing lines and weir pipe's summary.
 * Written by the sinks' worker before the end is posted. */
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
    SINK_STATES,
};

/* What a sink's worker tells anyone who looks while it runs. Relaxed,
 * one writer each: statistics that order nothing. */
struct sink_live {
    _Atomic uint64_t out;        /* bytes delivered (sink 0's: bytes_out) */
    _Atomic uint64_t blocked_ns; /* sink_stats.blocked_ns so far */
    _Atomic uint64_t dropped;    /* what its tee branch dropped so far */
    _Atomic uint64_t queued;     /* bytes waiting in its queue */
    _Atomic uint32_t reconnects; /* connections made again after a loss */
    _Atomic uint32_t state;      /* enum sink_state */
};

/* A transform's bytes in and out so far, kept like struct sink_live. */
struct xf_live {
    _Atomic uint64_t in, out;
};

struct stream {
    struct stream_ctx *cx;
    const struct stream_spec *sp;
    void *owner;           /* the maker's */
    struct weir_list link; /* in the owner's list */
    uint64_t id;
    char peer[80]; /* the client, for log lines; "" when none */
    /* The listen address an accepted client came through (its TLS, if
     * any), or NULL; set before the start. */
    const struct weir_address *via;
    int src_fd;    /* handed to the source endpoint */
    int sink_fd;   /* client_sink: the client */
    int replay_fd; /* a file source, for a reconnecting sink; or -1 */
    /* When it was made (clock_now_ns): its age in the access log. */
    int64_t t_start_ns;
    bool src_regular;
    bool src_waits;      /* a followed file that does not exist yet */
    uint64_t src_size;   /* a regular file not followed: its size; else 0 */
    uint64_t src_offset; /* where reading the source file starts */
    struct ckpt_track ck_track; /* sp->ckpt: the sinks' worker's samples */
    bool zero_copy;             /* try the splice stage first */
    /* An accepted client's socket (a dup), to cut it; or, when the
     * stream owns the client's socket and the worker borrows it
     * (sink_borrowed), that socket itself. */
    int kill_fd;
    bool sink_borrowed;
    bool refused; /* its worker's pool could not cover it (budget.h) */
    struct src_file *src_file; /* src_fd is borrowed from it, or NULL */
    struct half h[2];          /* [0] source side, [1] sink side when split */
    bool split;
    _Atomic unsigned halves_left;
    struct weir_task done; /* posted to the main loop */
    struct weir_task stop_ack;
    bool done_seen, stop_posted, stop_acked; /* main thread */
    bool cut_posted;                         /* main thread */
    unsigned cuts_out; /* cut tasks not answered yet (main thread) */
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
    /* Its end is not reported (a broadcast logs once per outage, not per
     * failed attempt). */
    bool quiet;
    _Atomic uint64_t bytes_in;
    _Atomic uint64_t bytes_out; /* sink 0's */
    struct sink_live *live;     /* [nsinks] */
    struct xf_live *xf_live;    /* [p->ntransforms] */
};

/* The high-water mark of sink i's queue. */
static inline uint64_t stream_sink_hwm(const struct weir_pipeline *p,
                                       unsigned i)
{
    const struct weir_address *a = p->sinks[i];

    return a->high_water_mark ? a->high_water_mark : p->high_water_mark;
}

/* Any thread: the bytes sink i has delivered so far. Relaxed: a
 * statistic; it pairs with the sinks' relaxed adds and orders nothing. */
static inline uint64_t stream_sink_out(const struct stream *s, unsigned i)
{
    return atomic_load_explicit(i == 0 ? &s->bytes_out : &s->live[i].out,
                                memory_order_relaxed);
}

/* Where sink i's endpoint adds what it delivers. */
static inline _Atomic uint64_t *stream_sink_counter(struct stream *s,
                                                    unsigned i)
{
    return i == 0 ? &s->bytes_out : &s->live[i].out;
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
/* Places the stream on the workers (on `worker` when worker >= 0) and
 * starts it. The hooks follow once it has ended. */
void stream_start(struct stream *s, int worker);
/* Asks the stream to end: a source that does not end by itself stops;
 * what was read still goes out. */
void stream_stop(struct stream *s);
/* Shuts the stream's client connections down, so that it ends now;
 * returns 1 when it had one to cut, else 0. */
unsigned stream_cut(struct stream *s);
/* The error that ended the stream, the sinks' first, or 0. */
int stream_error(const struct stream *s);
/* Whether sink i was cut loose by its own policy: on_full=disconnect, or
 * a dropping or disconnecting sink cut at its send timeout. */
bool stream_sink_cut(const struct stream *s, unsigned i);
/* The worker its source side runs on. */
unsigned stream_worker(const struct stream *s);

/* The TCP options of the pipeline's connections (keepalive,
 * TCP_USER_TIMEOUT, the congestion control), for a listener to set on its
 * socket, or a stage on its connection (sinks.c). */
void stream_tcp_options(const struct weir_pipeline *p,
                        struct weir_tcp_options *t);

/* stream_report (report.c): the closing lines. */
void stream_report(struct stream *s);
/* What err (the stream's error) means for an operator: strerror, or what
 * the transform that failed knows better (a zstd frame's window). */
const char *stream_error_text(const struct stream *s, int err, char *buf,
                              size_t len);

#endif
