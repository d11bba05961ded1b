/*
 * run.c - the data path's main thread: start the workers, turn pipelines
 * into listeners and streams, watch signals, and exit when the work is
 * done or a signal has stopped it.
 */
#include "run.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sysexits.h>
#include <time.h>
#include <unistd.h>

#include "address.h"
#include "listenfds.h"
#include "notify.h"
#include "runtime.h"
#include "signals.h"

/*
 * Measured on the development machine (2 vCPUs, shared with other work,
 * load average 2-5, so single runs vary), `weir-bench e2e size=1GiB reps=3`:
 * a 1 GiB file in the page cache into its in-process receiver on
 * 127.0.0.1, best of 3 per sender, four rounds interleaved, GB/s:
 *
 *   weir pipe, stream path (default)        3.06 2.82 2.69 3.05
 *   weir pipe, splice stage (1 MiB pipe)    2.36 2.46 3.03 2.07
 *   socat -u -b 65536 FILE: TCP:            1.71 1.63 1.56 1.76
 *
 * CPU per GiB: the stream path 0.24-0.39 s in weir and 0.07-0.11 s in the
 * receiver; the splice stage 0.29-0.42 s and 0.16-0.29 s. Earlier figures
 * (to socat's receiver): two workers joined by a channel 0.56-1.00 against
 * 2.26-2.53 for one; 64 KiB chunks ~1.4x less than 256 KiB.
 *
 * Placement: the whole stream on one worker is 2.5-4x faster than its
 * source and its sink on two workers joined by a channel. On two cores the
 * receiver (or the next stream) needs the other core, and the channel adds
 * a cross-core hand-off of every buffer plus the wakeups, where one worker
 * keeps the buffers in one core's cache. So streams are spread over the
 * workers whole, round-robin, one worker each.
 *
 * Send path: the stream path (reads at explicit offsets into pool buffers,
 * one sendmsg per batch) stays ahead of the splice stage on loopback, and
 * the profile (perf record -a) says why the bare splice loop of `weir-bench
 * sendpath` looks faster than it is here. io_uring runs every SPLICE in an
 * io-wq thread, so each pair is two hand-offs to kernel threads that share
 * the two cores with the receiver; on loopback the sending side also runs
 * the receiver's TCP input (tcp_v4_rcv under tcp_write_xmit), so its CPU
 * hardly drops; and the copy the sender saves moves to the receiver, which
 * then copies out of cold page-cache pages instead of the sender's fresh,
 * cache-hot skb pages (its CPU per GiB doubles). Deeper links did not help
 * (a trial build linking N pairs per round): 1 MiB x 1 pair
 * 2.54 2.55 2.74 1.93 1.83, 1 MiB x 2 2.45 2.64 2.44 1.58 1.91, 1 MiB x 4
 * 2.10 2.11 2.48 1.70 1.94, 256 KiB x 4 2.33 2.57 2.20 1.81 2.22, against
 * the stream path's 3.00 2.67 2.80 2.12 1.82 in the same rounds. The bare
 * bench's read-send compares splice with one 256 KiB send at a time;
 * its read-sendmsg (batched, as here) is the fair one. SEND_ZC copies on
 * loopback anyway and lost (read-send-zc 0.9-1.6 GB/s there). Over a real
 * NIC the receiver is another machine and splice may win: re-measure there.
 * The stream path also needs no pipe per connection and is the path that
 * reconnects and resumes. So it is the default for one stream.
 *
 * Served clients are another matter: many streams at once, each with its
 * own pool buffers in the stream path (RSS ~950 MB for 1,000 clients of a
 * 1 MiB file, against ~7 MB with splice, which holds page-cache pages
 * only). `weir-bench e2e clients=N client-size=S`, aggregate GB/s, splice
 * stage / stream path, interleaved rounds:
 *
 *   1000 x 1 MiB    0.75/0.34 2.47/1.60 1.77/1.62 2.21/1.18 1.87/1.60
 *   1000 x 4 MiB    1.99/1.01 1.94/1.05
 *    300 x 2 MiB    5.12/1.71 4.16/2.16
 *    100 x 1 MiB    2.28/1.59 7.02/1.55
 *    300 x 8 MiB    2.03/2.82 1.49/2.92
 *    100 x 16 MiB   1.52/2.73 1.57/2.44 1.37/3.38
 *
 * (socat's fork mode: 1.3-1.7 in the same runs.) So a served file of at
 * most SPLICE_SERVE_MAX takes the splice stage; bigger ones, and every
 * client once no pipe can be had (unprivileged users get 64 pipes of 1 MiB
 * before fs.pipe-user-pages-soft stops them; 1,000 clients as `nobody`
 * were all served whole), take streams. For 1,000 clients, 64 KiB pipes
 * did as well as 1 MiB ones (2.50 2.21 2.37 against 1.90 1.85 2.19) but
 * one big file through them ran at 0.7-0.9 GB/s, so pipes stay 1 MiB.
 *
 * WEIR_PLACEMENT=split|same and WEIR_SENDPATH=splice|stream override the
 * defaults, for measuring (WEIR_SENDPATH=splice lifts SPLICE_SERVE_MAX).
 */
#ifndef PLACEMENT_SPLIT_DEFAULT
#define PLACEMENT_SPLIT_DEFAULT false
#endif
#ifndef SENDPATH_SPLICE_DEFAULT
#define SENDPATH_SPLICE_DEFAULT false
#endif
#ifndef SENDPATH_SPLICE_SERVE_DEFAULT
#define SENDPATH_SPLICE_SERVE_DEFAULT true
#endif
#ifndef SPLICE_SERVE_MAX
#define SPLICE_SERVE_MAX (4ull << 20)
#endif

int64_t run_now_ns(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static bool listeners_open(const struct run *r)
{
    for (const struct pipeline_rt *pl = r->pls; pl; pl = pl->next)
        for (unsigned j = 0; j < pl->nls; j++)
            if (pl->ls[j].fd >= 0)
                return true;
    return false;
}

static void close_listeners(struct run *r)
{
    for (struct pipeline_rt *pl = r->pls; pl; pl = pl->next)
        for (unsigned j = 0; j < pl->nls; j++)
            listener_close(&pl->ls[j]);
}

void run_check_finished(struct run *r)
{
    for (const struct pipeline_rt *pl = r->pls; pl; pl = pl->next)
        if (pl->draining) {
            pipeline_reap_later(r);
            break;
        }
    if (r->finished || r->nlive > 0 || listeners_open(r))
        return;
    r->finished = true;
    weir_loop_stop(r->main);
}

static void run_stop(struct run *r)
{
    if (r->stopping)
        return;
    r->stopping = true;
    close_listeners(r);
    for (struct stream *s = r->live; s; s = s->next)
        stream_stop(s);
    for (struct pipeline_rt *pl = r->pls; pl; pl = pl->next)
        broadcast_stop(pl);
    if (r->nlive > 0)
        weir_loop_timer_start(r->main, &r->drain,
                              r->conf->daemon.drain_timeout_ms * 1000000ull);
    run_check_finished(r);
}

/* How long streams whose connections were shut down get to end before
 * weir exits anyway: a worker sees the shutdown at its next send or
 * receive, so this is a bound, not a wait. */
#define CUT_GRACE_NS (500ull * 1000 * 1000)

unsigned run_cut_streams(struct run *r, const struct pipeline_rt *pl)
{
    unsigned cut = 0;

    /* Through the stream's own dup of the client's socket: the worker's
     * pending send or receive fails, and the stream ends through its
     * usual path, freeing what it holds. */
    for (struct stream *s = r->live; s; s = s->next)
        if ((!pl || s->pl == pl) && s->kill_fd >= 0) {
            shutdown(s->kill_fd, SHUT_RDWR);
            /* A relayed stream's upstream too: an idle one would keep
             * the reverse direction waiting. */
            if (s->kill_up_fd >= 0)
                shutdown(s->kill_up_fd, SHUT_RDWR);
            cut++;
        }
    for (const struct pipeline_rt *p = r->pls; p; p = p->next)
        if (!pl || p == pl)
            cut += broadcast_cut(p);
    return cut;
}

static void cut_expired(struct weir_op *op, int res, uint32_t flags)
{
    struct run *r =
        (struct run *)(void *)((char *)op - offsetof(struct run, cut.op));

    (void)flags;
    if (res == -ECANCELED || r->finished)
        return;
    log_warnx("%u stream%s did not end; exiting", r->nlive,
              r->nlive == 1 ? "" : "s");
    r->finished = true;
    weir_loop_stop(r->main);
}

/* Stopping, and no more waiting: every client connection is shut down;
 * the loop stops when the last stream has ended, or after the grace. */
static void run_cut(struct run *r)
{
    if (r->cutting)
        return;
    r->cutting = true;
    if (r->drain.op.pending)
        weir_loop_timer_stop(r->main, &r->drain);
    run_cut_streams(r, NULL);
    r->cut.op.fn = cut_expired;
    if (r->nlive > 0)
        weir_loop_timer_start(r->main, &r->cut, CUT_GRACE_NS);
    run_check_finished(r);
}

static void drain_expired(struct weir_op *op, int res, uint32_t flags)
{
    struct run *r =
        (struct run *)(void *)((char *)op - offsetof(struct run, drain.op));

    (void)flags;
    if (res == -ECANCELED || r->finished)
        return;
    log_warnx("%u stream%s still running after the drain timeout; closing "
              "them",
              r->nlive, r->nlive == 1 ? "" : "s");
    run_cut(r);
}

static void sig_arm(struct run *r);

static void sig_read(struct weir_op *op, int res, uint32_t flags)
{
    struct run *r =
        (struct run *)(void *)((char *)op - offsetof(struct run, sig_op));

    (void)flags;
    if (res <= 0) {
        if (res != -ECANCELED)
            sig_arm(r);
        return;
    }
    if (signals_is_reload(r->siginfo) && !r->conf->oneshot) {
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
    log_info("%s: stopping (no new connections; running streams finish)",
             signals_name(r->siginfo));
    if (!r->conf->oneshot)
        notify_stopping();
    r->exit_status = 0;
    sig_arm(r);
    run_stop(r);
    status_update(r);
}

static void sig_arm(struct run *r)
{
    r->sig_op.fn = sig_read;
    weir_loop_read(r->main, &r->sig_op, r->sigfd, r->siginfo,
                   (uint32_t)signals_info_size(), (uint64_t)-1);
}

/* The error that ended a stream, the sinks' first. */
static int stream_error(const struct stream *s, unsigned nsinks)
{
    for (unsigned i = 0; i < nsinks; i++)
        if (s->sink_rc[i] < 0)
            return s->sink_rc[i];
    return s->src_rc < 0 ? s->src_rc : 0;
}

void run_stream_ended(struct stream *s)
{
    struct run *r = s->run;
    const struct weir_pipeline *p = s->pl->p;
    unsigned n = s->pl->mode == PL_SERVE ? 1 : (unsigned)p->nsinks;
    int err = stream_error(s, n);
    /* Relaxed: the workers' last adds were ordered before `done` by the
     * post that brought us here; this pairs with nothing else. */
    unsigned long long out =
        atomic_load_explicit(&s->bytes_out, memory_order_relaxed);

    r->bytes_done += out;
    if (s->pl->mode == PL_BROADCAST && broadcast_stream_ended(s))
        return;
    if (r->conf->oneshot) {
        progress_summary(r);
        r->one = NULL;
        if (err) {
            fprintf(stderr, "weir pipe: failed: %s\n", strerror(-err));
            r->exit_status = 1;
        }
        if (!r->stopping) {
            r->stopping = true;
            close_listeners(r);
        }
        return;
    }
    if (s->peer[0]) {
        if (err)
            log_warnx("pipeline %s: client %s: %s after %llu bytes", p->name,
                      s->peer, strerror(-err), out);
        else
            log_debug("pipeline %s: client %s done, %llu bytes", p->name,
                      s->peer, out);
        return;
    }
    if (err) {
        log_warnx("pipeline %s: failed: %s after %llu bytes", p->name,
                  strerror(-err), out);
        r->failures++;
    } else {
        log_info("pipeline %s: done, %llu bytes", p->name, out);
    }
}

static bool uring_unavailable(int err)
{
    return err == -EPERM || err == -ENOSYS || err == -ENOMEM ||
           err == -EOPNOTSUPP;
}

static unsigned worker_count(const struct weir_config *conf)
{
    long n = conf->daemon.workers ? (long)conf->daemon.workers
                                  : sysconf(_SC_NPROCESSORS_ONLN);

    return n < 1 ? 1 : (unsigned)n;
}

static size_t buffer_size(const struct weir_config *conf)
{
    uint64_t sz = CONF_DEFAULT_CHUNK;

    for (size_t i = 0; i < conf->npipelines; i++)
        if (conf->pipelines[i]->chunk_size > sz)
            sz = conf->pipelines[i]->chunk_size;
    return (size_t)sz;
}

static bool sendpath_splice(bool serve)
{
    const char *e = getenv("WEIR_SENDPATH");

    if (e && strcmp(e, "splice") == 0)
        return true;
    if (e && strcmp(e, "stream") == 0)
        return false;
    return serve ? SENDPATH_SPLICE_SERVE_DEFAULT : SENDPATH_SPLICE_DEFAULT;
}

static bool placement_split(void)
{
    const char *e = getenv("WEIR_PLACEMENT");

    if (e && strcmp(e, "split") == 0)
        return true;
    if (e && strcmp(e, "same") == 0)
        return false;
    return PLACEMENT_SPLIT_DEFAULT;
}

/* A file server holds two fds per client (the socket, the file): take the
 * hard limit rather than the usual soft 1024. */
static void raise_fd_limit(void)
{
    struct rlimit rl;

    if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
        rl.rlim_cur = rl.rlim_max;
        setrlimit(RLIMIT_NOFILE, &rl);
    }
}

/* Socket activation: the passed sockets, taken before anything else
 * opens an fd. A malformed LISTEN_FDS is logged and ignored. */
static void take_listenfds(struct run *r)
{
    int rc = listenfds_take(&r->lfds);

    if (rc) {
        log_errx("socket activation: %s", strerror(-rc));
        r->lfds = NULL;
    } else if (listenfds_count(r->lfds) > 0) {
        log_debug("socket activation: %zu socket%s passed",
                  listenfds_count(r->lfds),
                  listenfds_count(r->lfds) == 1 ? "" : "s");
    }
}

static void report_unused_listenfds(const struct run *r)
{
    struct listenfd_info info[16];
    size_t n;

    if (!r->lfds)
        return;
    n = listenfds_unused(r->lfds, info, 16);
    for (size_t i = 0; i < n && i < 16; i++)
        log_errx("socket activation: fd %d (%s, %s) matches no listen "
                 "address in the config",
                 info[i].fd, info[i].name, info[i].addr);
    if (n > 16)
        log_errx("socket activation: %zu more unused sockets", n - 16);
}

/* Every pipeline prepared first, then all started: READY=1 follows only
 * when each one listens. */
static int pipelines_start(struct run *r)
{
    struct pipeline_rt **tail = &r->pls;
    int rc = 0;

    for (size_t i = 0; rc == 0 && i < r->conf->npipelines; i++) {
        struct pipeline_rt *pl = calloc(1, sizeof(*pl));

        if (!pl)
            return -ENOMEM;
        pl->p = r->conf->pipelines[i];
        pl->cref = r->cref;
        r->cref->refs++;
        *tail = pl;
        tail = &pl->next;
        rc = pipeline_prepare(r, pl, NULL);
    }
    if (rc)
        return rc;
    for (struct pipeline_rt *pl = r->pls; pl; pl = pl->next)
        pipeline_start(pl);
    return 0;
}

int daemon_run(struct weir_config *conf, const char *conffile, bool verbose)
{
    struct run r = {.conf = conf, .sigfd = -1};
    struct weir_workers_options wo = {0};
    struct weir_loop_options lo = {0};
    size_t bufsz = buffer_size(conf);
    int rc;

    if (!conf->oneshot)
        take_listenfds(&r);
    r.conffile = conffile;
    r.verbose = verbose;
    r.bufsz = bufsz;
    r.cref = calloc(1, sizeof(*r.cref));
    if (!r.cref) {
        log_errx("out of memory");
        listenfds_free(r.lfds);
        config_free(conf);
        return 1;
    }
    *r.cref = (struct conf_ref){.conf = conf, .refs = 1};
    raise_fd_limit();
    r.sigfd = signals_block();
    if (r.sigfd < 0) {
        log_errx("cannot watch signals: %s", strerror(-r.sigfd));
        listenfds_free(r.lfds);
        conf_ref_put(r.cref);
        return 1;
    }
    r.nworkers = worker_count(conf);
    wo.count = r.nworkers;
    wo.buf_size = bufsz;
    /* Up to 1 GiB of buffer address space per worker; pages are committed
     * only as buffers are first used. */
    wo.pool_buffers = (uint32_t)((1ull << 30) / bufsz);
    if (wo.pool_buffers > 4096)
        wo.pool_buffers = 4096;
    rc = weir_workers_start(&r.workers, &wo);
    if (rc == 0) {
        lo.slot = r.nworkers;
        rc = weir_loop_create(&r.main, &lo);
        if (rc) {
            weir_workers_stop(r.workers);
            r.workers = NULL;
        }
    }
    if (rc) {
        log_errx("%s", weir_loop_strerror(rc));
        close(r.sigfd);
        listenfds_free(r.lfds);
        conf_ref_put(r.cref);
        return uring_unavailable(rc) ? EX_UNAVAILABLE : 1;
    }
    r.compressing = calloc(r.nworkers, sizeof(*r.compressing));
    r.split = placement_split();
    r.zero_copy = sendpath_splice(false);
    r.zero_copy_serve = sendpath_splice(true);
    r.splice_serve_max = getenv("WEIR_SENDPATH") ? 0 : SPLICE_SERVE_MAX;
    r.t_start_ns = run_now_ns();
    /* Which engine runs and why (a fallback names what refused io_uring). */
    log_info("engine: %s (%s)", weir_engine_name(weir_loop_engine(r.main)),
             weir_loop_engine_reason(r.main));
    log_debug("%u worker%s, %s placement", r.nworkers,
              r.nworkers == 1 ? "" : "s", r.split ? "split" : "same-worker");
    sig_arm(&r);
    r.drain.op.fn = drain_expired;
    rc = pipelines_start(&r);
    if (rc) {
        r.exit_status = 1;
        run_stop(&r);
    } else if (conf->oneshot) {
        progress_start(&r);
    } else {
        report_unused_listenfds(&r);
        notify_ready();
        status_start(&r);
    }
    run_check_finished(&r);
    if (!r.finished)
        weir_loop_run(r.main);

    /* Workers first: after this nothing posts to the main loop. */
    if (weir_workers_stop(r.workers) != 0)
        log_debug("buffers were still in use at exit");
    while (r.pls) {
        struct pipeline_rt *pl = r.pls;

        r.pls = pl->next;
        pipeline_free(pl);
    }
    weir_loop_destroy(r.main);
    free(r.compressing);
    close(r.sigfd);
    listenfds_free(r.lfds);
    if (r.failures)
        r.exit_status = 1;
    conf_ref_put(r.cref);
    return r.exit_status;
}
