/*
 * stream_impl.h - a stream as the files of daemon/stream see it: the
 * whole struct stream, its main thread's part and its worker's (struct
 * stream_home, worker.h), and what the streams of a run share. Not for
 * the stream's makers: they have stream.h (and a last stage tail.h).
 *
 * Each file of daemon/stream declares its own functions in a header of
 * its name (build.h, relay.h, report.h, sinks.h, watch.h, worker.h,
 * xforms.h, budget.h, checkpoint.h, sendpath.h).
 */
#ifndef WEIR_DAEMON_STREAM_IMPL_H
#define WEIR_DAEMON_STREAM_IMPL_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/socket.h>
#include <sys/types.h>

#include "stream/checkpoint.h"
#include "stream/stream.h"
#include "stream/tail.h"
#include "stream/worker.h"

/* What the streams of a run share beyond struct stream_ctx. */
struct stream_sched {
    unsigned next_worker; /* round-robin placement */
    /* Per worker, its streams with a gzip, zstd, gunzip or unzstd stage:
     * a stream's codec borrows a second worker only while that one has
     * none of its own (xforms.c). */
    _Atomic uint32_t member_streams[];
};

/* A file of a struct src_share (stream.c). */
struct src_file {
    int fd;
    dev_t dev;
    ino_t ino;
    unsigned refs;           /* the streams that read it */
    struct src_share *share; /* while it is the share's current file */
};

struct stream {
    struct stream_ctx *cx;
    const struct stream_spec *sp;
    void *owner;           /* the maker's */
    struct weir_list link; /* in the owner's list */
    char peer[80];         /* the client, for log lines; "" when none */
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
    bool src_set;        /* a glob source (weir/file_set.h): opens nothing */
    bool src_remote;     /* a jetstream source: made on the worker */
    uint64_t src_size;   /* a regular file not followed: its size; else 0 */
    uint64_t src_offset; /* where reading the source file starts */
    struct ckpt_track ck_track; /* sp->ckpt: the worker's samples */
    bool zero_copy;             /* try the splice stage first */
    /* An accepted client's socket (a dup), to cut it; or, when the
     * stream owns the client's socket and the worker borrows it
     * (sink_borrowed), that socket itself. */
    int kill_fd;
    bool sink_borrowed;
    bool refused; /* its worker's pool could not cover it (budget.h) */
    struct src_file *src_file; /* src_fd is borrowed from it, or NULL */
    struct stream_home home;   /* on its worker (worker.h) */
    struct weir_task done;     /* posted to the main loop */
    struct weir_task stop_ack;
    /* Posted to the main loop before `done` (tasks run in the order
     * posted): a checkpoint text that names a file the last one did not,
     * written now rather than at the next checkpoint_interval. */
    struct weir_task ck_save;
    bool done_seen, stop_posted, stop_acked; /* main thread */
    bool cut_posted;                         /* main thread */
    unsigned cuts_out; /* cut tasks not answered yet (main thread) */
    /* Results, written by the worker before `done` is posted. */
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
    /* Its end is not reported (stream_set_quiet). */
    bool quiet;
    uint64_t carried_bytes, carried_requests; /* stream_set_carried */
    int64_t carried_idle_since;
    _Atomic uint64_t bytes_in;
    struct weir_jetstream_source_counters src_js; /* a jetstream source's */
    _Atomic uint64_t bytes_out;                   /* sink 0's */
    struct sink_live *live;                       /* [nsinks] */
    struct xf_live *xf_live;                      /* [p->ntransforms] */
    /* A glob source's figures: the worker's newest, left in a one-slot
     * mailbox, and what the main thread took last (fileset_live.c). */
    _Atomic(struct stream_fs_view *) fs_mail;
    struct stream_fs_view *fs_seen;
    int64_t fs_sampled; /* clock_now_ns of the worker's last sample */
};

#endif
