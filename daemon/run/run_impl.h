/*
 * run_impl.h - the run: the main thread's state while pipelines run, and
 * what its files (run.c, reload.c, status.c, progress.c) share.
 *
 * The run owns the pipelines (a list, the draining ones too), the
 * workers and the main loop. It is alive while any pipeline is (an open
 * listener, a live stream); when the count falls to zero the main loop
 * stops. Main thread only.
 */
#ifndef WEIR_DAEMON_RUN_IMPL_H
#define WEIR_DAEMON_RUN_IMPL_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "conf/config.h"
#include "serve/listenfds.h"
#include "serve/pipeline.h"
#include "stream/stream.h"
#include "sys/alive.h"
#include "weir/loop.h"
#include "weir/util.h"

struct run;
struct series;
struct metrics;
struct board;
struct control;

/* What differs between the daemon and `weir pipe`: chosen once. */
struct run_mode {
    const char *name;
    bool reloads;    /* SIGHUP reads the config again */
    bool notifies;   /* sd_notify STOPPING= on a stop */
    bool activation; /* takes the sockets systemd passed */
    bool announces;  /* the startup line, and [daemon] metrics */
    /* The pipelines have started. */
    void (*started)(struct run *r);
    /* A stream ended (not one whose end its pipeline handled). */
    void (*stream_ended)(struct run *r, struct pipeline *pl, struct stream *s);
    /* Where streams' closing lines go; NULL: the log. */
    void (*report_line)(const struct stream *s, const char *line);
    /* How the pipelines behave (struct pipeline_env). */
    bool serve_once, sinks_reconnect, sources_restart, splice_connects;
    bool checkpoints; /* followed files keep checkpoints */
    /* A stop by a signal exits 128 + its number (a shell's Ctrl-C: 130),
     * not 0: the transfer did not finish (weir pipe). */
    bool signal_status;
    /* A stop by a signal cuts at once, without the drain: a person
     * pressed Ctrl-C and waits for the prompt (weir pipe). */
    bool signal_cuts;
};

struct run {
    const struct run_mode *mode;
    struct weir_config *conf; /* the current one: cref->conf */
    struct conf_ref *cref;
    const char *conffile; /* what SIGHUP reads again; NULL: nothing */
    bool verbose;         /* -v: debug whatever log_level says */
    size_t bufsz;         /* the pools' buffers: a reload's ceiling */
    struct weir_loop *main;
    struct stream_ctx cx;
    struct pipeline_env env;
    struct weir_list pls;  /* the pipelines, the draining ones too */
    struct alive alive;    /* held by each live pipeline */
    struct weir_reap reap; /* frees drained pipelines */
    bool reap_queued;
    struct listenfds *lfds; /* socket activation */
    unsigned failures;
    bool started; /* every pipeline started: /ready says so */
    bool stopping;
    bool finished;
    int exit_status;
    int stop_signal;       /* the signal that stopped the run, or 0 */
    const char *stop_name; /* its name */
    /* Signals. */
    int sigfd;
    struct weir_op sig_op;
    uint8_t siginfo[128];
    struct weir_timer drain;
    struct weir_timer cut; /* the bound on ending cut streams */
    bool cutting;
    /* systemd: STATUS= and WATCHDOG=1 (status.c). */
    struct weir_timer status;
    struct weir_timer watchdog;
    uint64_t watchdog_ns;
    uint64_t bytes_done; /* sink 0's bytes of the streams that ended */
    uint64_t status_bytes;
    int64_t status_ns;
    /* weir pipe (progress.c). */
    struct weir_timer progress;
    bool tty;
    bool summary_quiet; /* weir pipe: a success nobody asked to hear of */
    int64_t t_start_ns;
    uint64_t total;     /* source size when known, else 0 */
    struct stream *one; /* the oneshot stream, kept for the summary */
    /* [daemon] metrics (metrics.c, series.c); NULL without it. */
    struct metrics *metrics;
    struct series *series;
    /* The status board and the control socket (board.c, control.c);
     * NULL in weir pipe, or without a socket. */
    struct board *board;
    struct control *control;
    /* A worker whose loop failed (its thread has ended): the first
     * error and worker, and the main loop's task that ends the run;
     * fail_loop is the main loop once the task may be posted. */
    _Atomic int worker_err;
    _Atomic unsigned worker_failed;
    _Atomic(struct weir_loop *) fail_loop;
    struct weir_task fail_task;
    bool fail_told; /* main thread: the failure's line is in the log */
    /* A reload's lookups while it prepares (reload.c); NULL otherwise. */
    struct reload_maps *reload_maps;
};

/* run.c */
extern const struct run_mode run_mode_daemon;
extern const struct run_mode run_mode_pipe;
/* Live streams and pipelines (not draining) of the run. */
unsigned run_streams(const struct run *r);
unsigned run_pipelines(const struct run *r);
/* count.c: every pipeline started, and not stopping. */
bool run_ready(const struct run *r);
/* The pipeline env's hook: a draining pipeline is done. */
void run_pipeline_drained(struct pipeline *pl);
/* Stops accepting and lets the streams end (a signal, or weir pipe's
 * stream is over). */
void run_stop(struct run *r);

/* start.c, in the order daemon_run calls them. The pools' buffer size
 * (the largest chunk_size); the fd limit raised to its hard limit and the
 * fd table grown to it, returning the limit; socket activation's sockets
 * into r->lfds; the workers, the main loop and the streams' context (0 or
 * -errno); every pipeline prepared, then all started (0, or the first
 * error, logged). */
size_t run_buffer_size(const struct weir_config *conf);
unsigned long long run_fd_limit(void);
void run_take_listenfds(struct run *r);
int run_workers_start(struct run *r);
int run_pipelines_start(struct run *r);
/* The daemon mode's started hook: unused passed sockets are logged,
 * READY=1, and the STATUS= updates start. */
void run_daemon_started(struct run *r);
/* The system call a loop's wait failed in, for the log. */
const char *run_loop_wait_call(const struct weir_loop *loop);
/* A worker's loop that failed, logged once (main thread). */
void run_worker_fail_tell(struct run *r);

/* reload.c: SIGHUP. */
void reload(struct run *r);

/* status.c: STATUS= kept current, WATCHDOG=1, under systemd. */
void status_start(struct run *r);
void status_update(struct run *r); /* now, after a change */

/* series.c: the numbers /metrics serves. The totals keep what ended
 * streams and freed pipelines counted, by pipeline name. */
struct series *series_new(void);
void series_free(struct series *t);
/* A stream's final numbers join the totals (before it is marked ended
 * to the scan: called from the stream_ended hook). */
void series_stream_ended(struct series *t, const struct stream *s);
/* A pipeline about to be freed: its client counts join the totals. */
void series_pipeline_gone(struct series *t, const struct pipeline *pl);
/* The exposition text (malloc'd, *len bytes), or NULL out of memory. */
char *series_render(const struct run *r, size_t *len);

/* board.c: the status board (weir status, weir top, SIGUSR1), sampled
 * every second for rates and outage lengths. Returns 0 or -errno. */
int board_start(struct run *r);
void board_free(struct run *r);
/* The table (sinks in trouble first when `worst`; fitted to `width`
 * columns when not 0) or the JSON document, malloc'd (*len bytes); NULL
 * out of memory. */
char *board_render(const struct run *r, bool json, bool worst, size_t width,
                   size_t *len);
/* How long the sink has been seen down (0: not seen down yet). */
double board_down_seconds(const struct run *r, const char *pl,
                          const char *sink);
/* SIGUSR1: the table in the log, a line each. */
void board_log(const struct run *r);

/* control.c: the control socket ([daemon] control_socket). 0, or -errno
 * (logged) when a socket the config named cannot be made. */
int control_start(struct run *r);
void control_free(struct run *r);

/* metrics.c: the HTTP endpoint, when the config asks for one. Returns
 * 0 or -errno (logged). */
int metrics_start(struct run *r);
void metrics_free(struct run *r);

/* progress.c: weir pipe's progress line and summary. */
void progress_start(struct run *r);
void progress_summary(struct run *r);

#endif
