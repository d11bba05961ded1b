/*
 * run.c - the data path's main thread: start the workers and the
 * pipelines (start.c), hear the streams' ends, watch signals, and exit
 * when nothing is left alive or a signal has stopped it.
 */
#include "run/run.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sysexits.h>
#include <unistd.h>

#include "conf/tls.h"
#include "run/run_impl.h"
#include "sys/clock.h"
#include "sys/notify.h"
#include "sys/signals.h"

static struct pipeline *pipeline_of(struct weir_list *node)
{
    return weir_list_entry(node, struct pipeline, link);
}

/* Nothing alive: the loop ends. */
static void run_idle(struct alive *a)
{
    struct run *r = weir_container_of(a, struct run, alive);

    if (r->finished)
        return;
    r->finished = true;
    weir_loop_stop(r->main);
}

void run_stop(struct run *r)
{
    struct weir_list *pos, *tmp;

    if (r->stopping)
        return;
    r->stopping = true;
    alive_hold(&r->alive);
    weir_list_for_each(pos, tmp, &r->pls) pipeline_stop(pipeline_of(pos));
    if (run_streams(r) > 0)
        weir_loop_timer_start(r->main, &r->drain,
                              r->conf->daemon.drain_timeout_ms * 1000000ull);
    alive_drop(&r->alive);
}

/* How long streams whose connections were shut down get to end before
 * weir exits anyway: a worker sees the shutdown at its next send or
 * receive, so this is a bound, not a wait. */
#define CUT_GRACE_NS (500ull * 1000 * 1000)

static void cut_expired(struct weir_op *op, int res, uint32_t flags)
{
    struct run *r = weir_container_of(op, struct run, cut.op);
    unsigned n = run_streams(r);

    (void)flags;
    if (res == -ECANCELED || r->finished)
        return;
    log_warnx("%u stream%s did not end; exiting", n, n == 1 ? "" : "s");
    r->finished = true;
    weir_loop_stop(r->main);
}

/* Stopping, and no more waiting: every client connection is shut down;
 * the loop stops when the last stream has ended, or after the grace. */
static void run_cut(struct run *r)
{
    struct weir_list *pos, *tmp;

    if (r->cutting)
        return;
    r->cutting = true;
    if (r->drain.op.pending)
        weir_loop_timer_stop(r->main, &r->drain);
    weir_list_for_each(pos, tmp, &r->pls) pipeline_cut(pipeline_of(pos));
    r->cut.op.fn = cut_expired;
    if (run_streams(r) > 0)
        weir_loop_timer_start(r->main, &r->cut, CUT_GRACE_NS);
}

static void drain_expired(struct weir_op *op, int res, uint32_t flags)
{
    struct run *r = weir_container_of(op, struct run, drain.op);
    unsigned n = run_streams(r);

    (void)flags;
    if (res == -ECANCELED || r->finished)
        return;
    log_warnx("%u stream%s still running after the drain timeout; closing "
              "them",
              n, n == 1 ? "" : "s");
    run_cut(r);
}

static void sig_arm(struct run *r);

static void sig_read(struct weir_op *op, int res, uint32_t flags)
{
    struct run *r = weir_container_of(op, struct run, sig_op);

    (void)flags;
    if (res <= 0) {
        if (res != -ECANCELED)
            sig_arm(r);
        return;
    }
    if (signals_is_status(r->siginfo)) {
        board_log(r);
        sig_arm(r);
        return;
    }
    if (signals_is_reload(r->siginfo) && r->mode->reloads) {
        if (r->stopping)
            log_info("SIGHUP while stopping: no reload");
        else
            reload(r);
        sig_arm(r);
        return;
    }
    if (r->stopping) {
        log_warnx("%s again: exiting now", signals_name(r->siginfo));
        run_cut(r);
        return;
    }
    if (!r->mode->signal_cuts)
        log_info("%s: stopping (no new connections; running streams "
                 "finish)",
                 signals_name(r->siginfo));
    if (r->mode->notifies)
        notify_stopping();
    r->stop_signal = signals_number(r->siginfo);
    r->stop_name = signals_name(r->siginfo);
    r->exit_status = r->mode->signal_status ? 128 + r->stop_signal : 0;
    sig_arm(r);
    run_stop(r);
    if (r->mode->signal_cuts)
        run_cut(r);
    status_update(r);
}

static void sig_arm(struct run *r)
{
    r->sig_op.fn = sig_read;
    weir_loop_read(r->main, &r->sig_op, r->sigfd, r->siginfo,
                   (uint32_t)signals_info_size(), (uint64_t)-1);
}

/* The pipelines' hooks. */

static void stream_started(struct pipeline *pl, struct stream *s)
{
    struct run *r = pl->env->owner;

    if (!r->one) {
        r->one = s;
        r->total = stream_src_size(s);
    }
}

static void stream_ended(struct pipeline *pl, struct stream *s, bool handled)
{
    struct run *r = pl->env->owner;

    /* Relaxed: the workers' last adds were ordered before the end by the
     * post that brought it here; this pairs with nothing else. */
    r->bytes_done += stream_sink_out(s, 0);
    if (r->series)
        series_stream_ended(r->series, s);
    if (!handled)
        r->mode->stream_ended(r, pl, s);
    if (r->one == s)
        r->one = NULL;
}

/* The pipeline that serves a's address now takes a connection a listener
 * accepted after handing its socket over. */
static void late_client(struct pipeline *from, const struct weir_address *a,
                        int fd, const char *peer)
{
    struct run *r = from->env->owner;
    struct weir_list *pos, *tmp;

    if (!r->stopping)
        weir_list_for_each(pos, tmp, &r->pls)
        {
            struct pipeline *pl = pipeline_of(pos);
            struct listener *l = pl->draining ? NULL : pipeline_listener(pl, a);

            if (l) {
                pipeline_client(pl, l, fd, peer);
                return;
            }
        }
    close(fd);
}

static void reap(struct weir_reap *rp)
{
    struct run *r = weir_container_of(rp, struct run, reap);
    struct weir_list *pos, *tmp;

    r->reap_queued = false;
    weir_list_for_each(pos, tmp, &r->pls)
    {
        struct pipeline *pl = pipeline_of(pos);

        if (!pl->gone)
            continue;
        weir_list_remove(&pl->link);
        log_debug("pipeline %s: drained", pl->p->name);
        if (r->series)
            series_pipeline_gone(r->series, pl);
        pipeline_free(pl);
    }
}

/* Deferred to the end of the loop's batch: a completion later in the same
 * batch may still name a listener of the pipeline. At a stop, what is
 * left is freed at exit. */
void run_pipeline_drained(struct pipeline *pl)
{
    struct run *r = pl->env->owner;

    if (r->reap_queued || r->stopping)
        return;
    r->reap_queued = true;
    r->reap.fn = reap;
    weir_loop_defer(r->main, &r->reap);
}

static const struct pipeline_hooks run_pipeline_hooks = {
    .stream_started = stream_started,
    .stream_ended = stream_ended,
    .late_client = late_client,
    .drained = run_pipeline_drained,
};

/* The two modes. */

/* A served client left first (its connection reset or closed under a
 * send): the usual end of a download cut short, not the operator's
 * trouble. A proxied client's end is not told apart from its upstream's
 * (the relay reads both), so it stays a warning. */
static bool client_hung_up(const struct stream *s, int err)
{
    return stream_spec(s)->client_sink && stream_sink_rc(s, 0) == err &&
           (err == -EPIPE || err == -ECONNRESET);
}

/* The access log: one line per client served, as nginx's. A client that
 * hung up is info (debug without the access log); any other failure is
 * a warning either way. */
static void client_line(const struct run *r, const struct pipeline *pl,
                        const struct stream *s, int err, unsigned long long out)
{
    bool on = r->conf->daemon.access_log;
    const char *peer = stream_peer(s);
    char text[128];
    double secs = (double)(clock_now_ns() - stream_started_ns(s)) / 1e9;

    if (err && r->cutting)
        log_info("pipeline %s: client %s cut at the drain timeout after %llu "
                 "bytes in %.3f s",
                 pl->p->name, peer, out, secs);
    else if (err && stream_relays(s) && stream_sink_rc(s, 0) == err)
        /* The proxy's upstream failed (its connect or a send to it),
         * not the client. */
        log_warnx("pipeline %s: client %s: upstream %s: %s after %llu bytes "
                  "in %.3f s",
                  pl->p->name, peer, pl->p->sinks[0]->text,
                  stream_error_text(s, err, text, sizeof(text)), out, secs);
    else if (err && !client_hung_up(s, err))
        log_warnx("pipeline %s: client %s: %s after %llu bytes in %.3f s",
                  pl->p->name, peer,
                  stream_error_text(s, err, text, sizeof(text)), out, secs);
    else if (err && on)
        log_info("pipeline %s: client %s hung up (%s) after %llu bytes in "
                 "%.3f s",
                 pl->p->name, peer, strerror(-err), out, secs);
    else if (on)
        log_info("pipeline %s: client %s done, %llu bytes in %.3f s",
                 pl->p->name, peer, out, secs);
    else
        log_debug("pipeline %s: client %s %s, %llu bytes in %.3f s",
                  pl->p->name, peer, err ? "hung up" : "done", out, secs);
}

/*
 * A plain file that ended shorter than it was when opened: it shrank while
 * it was read, and what was cut never went out (GNU tar's "file shrank by
 * N bytes"). Not after a stop, which ends a transfer early on purpose.
 */
static uint64_t source_shrank(const struct run *r, const struct stream *s)
{
    /* The worker's adds were ordered before the end's post. */
    uint64_t in = stream_bytes_in(s);
    uint64_t size = stream_src_size(s);

    /* The splice stage counts only what it sent, which is what it read. */
    if (stream_spec(s)->p->ntransforms == 0 && stream_sink_bytes(s, 0) > in)
        in = stream_sink_bytes(s, 0);
    if (r->stopping || !size || in >= size || stream_error(s))
        return 0;
    return size - in;
}

static void daemon_stream_ended(struct run *r, struct pipeline *pl,
                                struct stream *s)
{
    uint64_t cut = source_shrank(r, s);
    const char *peer = stream_peer(s);

    if (cut) {
        log_warnx("pipeline %s: %s shrank by %llu bytes while it was read: "
                  "they were not sent%s%s",
                  pl->p->name, pl->p->source->text, (unsigned long long)cut,
                  peer[0] ? " to client " : "", peer);
        if (!peer[0])
            r->failures++;
    }
    int err = stream_error(s);
    unsigned long long out = stream_sink_out(s, 0);
    char text[128];

    if (stream_refused(s)) {
        /* Its worker said so, once a second at most: no line per client. */
        pl->clients.refused++;
        return;
    }
    if (peer[0]) {
        if (!stream_quiet(s))
            client_line(r, pl, s, err, out + stream_carried_bytes(s));
    } else if (err && r->cutting) {
        /* A stop the operator asked for is not an error (exit 0); what
         * was cut is said, and the next start resumes from the
         * checkpoint. */
        log_warnx("pipeline %s: cut at the drain timeout after %llu bytes",
                  pl->p->name, out);
    } else if (err == -ENOTCONN && r->stopping) {
        /* A sink still waiting to reconnect when the stop came. */
        log_warnx("pipeline %s: cut at the stop after %llu bytes: a sink "
                  "was not connected",
                  pl->p->name, out);
    } else if (err) {
        log_warnx("pipeline %s: failed: %s after %llu bytes", pl->p->name,
                  stream_error_text(s, err, text, sizeof(text)), out);
        r->failures++;
    } else {
        log_info("pipeline %s: done, %llu bytes", pl->p->name, out);
    }
}

/* The stream failed only because stdout was closed: the reader had
 * enough (`weir pipe ... - | head`), which is how a filter ends. */
static bool stdout_closed(const struct stream *s, int err)
{
    const struct stream_spec *sp = stream_spec(s);

    if (err != -EPIPE)
        return false;
    for (unsigned i = 0; i < sp->nsinks; i++)
        if (stream_sink_rc(s, i) == -EPIPE &&
            sp->p->sinks[i]->kind == ADDR_STDOUT)
            return true;
    return false;
}

/*
 * weir pipe runs its one stream and is done. Like any filter it says
 * nothing when all went well, unless asked (-v) or on a terminal (where
 * the progress line was); a failure, a cut or an interruption is always
 * said, with what reached each sink.
 */
/* Records an http sink's collector (a kafka sink's cluster) refused for
 * good: handled (the dead letters have them), but not delivered, so weir
 * pipe says so and fails. */
static uint64_t pipe_refused(const struct pipeline *pl, const struct stream *s)
{
    uint64_t n, all = 0;

    for (unsigned i = 0; i < pl->p->nsinks; i++) {
        const struct sink_live *sl = stream_sink_live(s, i);

        /* Relaxed: the stream is over; a statistic. */
        if (pl->p->sinks[i]->kind == ADDR_HTTP)
            n = atomic_load_explicit(&sl->http.dead_letter,
                                     memory_order_relaxed);
        else if (pl->p->sinks[i]->kind == ADDR_KAFKA)
            n = atomic_load_explicit(&sl->kafka.err_rejected,
                                     memory_order_relaxed);
        else if (pl->p->sinks[i]->kind == ADDR_JETSTREAM)
            n = atomic_load_explicit(&sl->jetstream.dead_letter,
                                     memory_order_relaxed);
        else
            continue;
        if (n)
            fprintf(stderr,
                    "weir pipe: %s: %llu records not delivered (refused "
                    "for good, or given up after retries)%s\n",
                    pl->p->sinks[i]->label, (unsigned long long)n,
                    pl->p->sinks[i]->dead_letter ? " (see its dead_letter file)"
                                                 : "");
        all += n;
    }
    return all;
}

static void pipe_stream_ended(struct run *r, struct pipeline *pl,
                              struct stream *s)
{
    int err = stream_error(s);
    uint64_t cut = source_shrank(r, s);
    char text[128];

    if (stdout_closed(s, err))
        err = 0;
    r->summary_quiet =
        !r->verbose && !r->tty && !err && !cut && !r->stop_signal;
    if (!r->summary_quiet)
        progress_summary(r);
    if (cut) {
        fprintf(stderr,
                "weir pipe: warning: %s shrank by %llu bytes while it was "
                "read: they were not sent\n",
                pl->p->source->text, (unsigned long long)cut);
        r->exit_status = 1;
    }
    if (pipe_refused(pl, s))
        r->exit_status = 1;
    /* After an interruption the cut is ours: its error is no news. */
    if (err && !r->stop_signal) {
        fprintf(stderr, "weir pipe: failed: %s\n",
                stream_error_text(s, err, text, sizeof(text)));
        r->exit_status = 1;
    }
    /* The exit status is 128 + the signal already (sig_read). */
    if (r->stop_signal)
        fprintf(stderr,
                "weir pipe: interrupted by %s: stopped early; what reached "
                "each sink:\n",
                r->stop_name);
    run_stop(r);
}

static void pipe_report_line(const struct stream *s, const char *line)
{
    const struct run *r = weir_container_of(stream_ctx_of(s), struct run, cx);

    if (!r->summary_quiet)
        fprintf(stderr, "weir pipe: %s\n", line);
}

const struct run_mode run_mode_daemon = {
    .name = "daemon",
    .reloads = true,
    .notifies = true,
    .activation = true,
    .announces = true,
    .started = run_daemon_started,
    .stream_ended = daemon_stream_ended,
    .sinks_reconnect = true,
    .sources_restart = true,
    .checkpoints = true,
};

const struct run_mode run_mode_pipe = {
    .name = "pipe",
    .started = progress_start,
    .stream_ended = pipe_stream_ended,
    .report_line = pipe_report_line,
    .signal_status = true,
    .signal_cuts = true,
    .serve_once = true,
    .splice_connects = true,
};

/* Start. */

static bool uring_unavailable(int err)
{
    return err == -EPERM || err == -ENOSYS || err == -ENOMEM ||
           err == -EOPNOTSUPP;
}

static void run_init(struct run *r, struct conf_ref *cref, const char *conffile,
                     bool verbose)
{
    const struct run_mode *m =
        cref->conf->oneshot ? &run_mode_pipe : &run_mode_daemon;

    *r = (struct run){
        .mode = m,
        .conf = cref->conf,
        .cref = cref,
        .conffile = conffile,
        .verbose = verbose,
        .bufsz = run_buffer_size(cref->conf),
        .sigfd = -1,
    };
    r->env = (struct pipeline_env){
        .cx = &r->cx,
        .alive = &r->alive,
        .hooks = &run_pipeline_hooks,
        .owner = r,
        .serve_once = m->serve_once,
        .sinks_reconnect = m->sinks_reconnect,
        .sources_restart = m->sources_restart,
        .splice_connects = m->splice_connects,
        .checkpoints = m->checkpoints,
    };
    weir_list_init(&r->pls);
    alive_init(&r->alive, NULL, run_idle);
}

static void run_free(struct run *r)
{
    struct weir_list *pos, *tmp;

    weir_list_for_each(pos, tmp, &r->pls)
    {
        weir_list_remove(pos);
        pipeline_free(pipeline_of(pos));
    }
    if (r->main)
        weir_loop_destroy(r->main);
    /* After the loop: its ops named the endpoint's fds. */
    metrics_free(r);
    control_free(r);
    board_free(r);
    series_free(r->series);
    stream_ctx_fini(&r->cx);
    if (r->sigfd >= 0)
        close(r->sigfd);
    listenfds_free(r->lfds);
    conf_ref_put(r->cref);
}

int daemon_run(struct weir_config *conf, const char *conffile, bool verbose)
{
    struct conf_ref *cref = conf_ref_new(conf);
    unsigned long long fd_limit;
    struct run r;
    int rc, main_err = 0;

    if (!cref) {
        log_errx("out of memory");
        return 1;
    }
    run_init(&r, cref, conffile, verbose);
    if (r.mode->activation)
        run_take_listenfds(&r);
    r.env.lfds = r.lfds;
    fd_limit = run_fd_limit();
    r.sigfd = signals_block();
    if (r.sigfd < 0) {
        log_errx("cannot watch signals: %s", strerror(-r.sigfd));
        run_free(&r);
        return 1;
    }
    rc = run_workers_start(&r);
    if (rc) {
        log_errx("%s", weir_loop_strerror(rc));
        run_free(&r);
        return uring_unavailable(rc) ? EX_UNAVAILABLE : 1;
    }
    r.t_start_ns = clock_now_ns();
    /* Which engine runs and why (a fallback names what refused io_uring);
     * weir pipe says it only when asked (-v). */
    (r.mode->announces ? log_info : log_debug)(
        "engine: %s (%s)", weir_engine_name(weir_loop_engine(r.main)),
        weir_loop_engine_reason(r.main));
    if (r.mode->announces)
        log_info("weir %s: %u worker%s, engine %s, fd limit %llu, "
                 "config %s",
                 WEIR_VERSION, r.cx.nworkers, r.cx.nworkers == 1 ? "" : "s",
                 weir_engine_name(weir_loop_engine(r.main)), fd_limit,
                 r.conf->file ? r.conf->file : "(none)");
    if (r.mode->announces) {
        r.series = series_new();
        if (!r.series || board_start(&r) != 0 || control_start(&r) != 0 ||
            metrics_start(&r) != 0) {
            weir_workers_stop(r.cx.workers);
            run_free(&r);
            return 1;
        }
    }
    sig_arm(&r);
    r.drain.op.fn = drain_expired;
    /* Held while starting: nothing alive afterwards ends the run. */
    alive_hold(&r.alive);
    if (run_pipelines_start(&r) != 0) {
        r.exit_status = 1;
        run_stop(&r);
    } else {
        r.started = r.failures == 0;
        r.mode->started(&r);
    }
    alive_drop(&r.alive);
    if (!r.finished && (rc = weir_loop_run(r.main)) < 0) {
        main_err = rc;
        /* The kernel refused the loop's wait: nothing can go on. */
        log_errx("main loop: %s failed: %s (errno %d); exiting",
                 run_loop_wait_call(r.main), strerror(-rc), -rc);
        r.exit_status = EX_OSERR;
    }

    /* Workers first: after this nothing posts to the main loop. */
    if (weir_workers_stop(r.cx.workers) != 0)
        log_debug("buffers were still in use at exit");
    /* A jetstream source's last acknowledgements leave on its thread,
     * after its stream ended: they go out before weir does. */
    if (!weir_jetstream_sources_wait(5ull * 1000 * 1000 * 1000))
        log_warnx("a jetstream source's last acknowledgements may not have "
                  "reached the server: its consumer delivers those "
                  "messages again");
    /* A worker whose wait failed while the main loop was stopping: its
     * task came too late to run, so its line is written here. */
    run_worker_fail_tell(&r);
    /* What ran on a failed loop cannot be taken apart: the teardown of
     * a stream needs both the main loop and its worker's. Exit with it
     * all still in place. */
    if (main_err != 0 || atomic_load(&r.worker_err) != 0)
        exit(EX_OSERR);
    if (r.failures)
        r.exit_status = 1;
    rc = r.exit_status;
    conf_tls_flush_suppressed();
    run_free(&r);
    return rc;
}
