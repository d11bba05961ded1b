/*
 * stream.c - one stream of a pipeline on the workers.
 *
 * A stream is core streams joined by core pipes: the source endpoint's
 * readable, the transforms (core transforms from lib/xform), then either
 * the sinks on the same worker (through a tee when there are several, or
 * when a sink's on_full policy is not block), or a channel whose writable
 * is on the source's worker and whose readable feeds the rest on another
 * worker. Each half finishes when its pipes have; the last half posts
 * `done` to the main loop, which logs the outcome and frees the stream.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "runtime.h"

#define CONTAINER(ptr, type, member)                                           \
    ((type *)(void *)((char *)(ptr)-offsetof(type, member)))

static unsigned stream_nsinks(const struct stream *s)
{
    return s->pl->mode == PL_SERVE ? 1 : (unsigned)s->pl->p->nsinks;
}

/*
 * Placement of a pipeline with transforms: PLACE_SAME runs the whole
 * stream on one worker; PLACE_SOURCE splits it after the transforms (read
 * and transform on one worker, the sinks on another: the channel carries
 * the transformed bytes); PLACE_SINK splits it before them (the read on
 * one worker, transforms and sinks on another). WEIR_PLACEMENT=same|split
 * (split: the sink side) and WEIR_XFORM_SIDE=source|sink override it.
 *
 * Measured on the development machine (2 vCPUs shared with other work,
 * load average ~6), a 256 MiB file of 'abcdefghij' through uppercase and
 * gzip:1 to `nc -l` on 127.0.0.1, weir pipe with 2 workers, 9 interleaved
 * rounds, wall seconds from start to the receiver's end:
 *
 *   same worker           0.40 0.44 0.46 0.48 0.54 0.58 0.60 0.74 0.82
 *   split, source side    0.36 0.39 0.39 0.49 0.54 0.55 0.61 0.62 0.71
 *   split, sink side      0.55 0.59 0.64 0.68 0.68 0.71 0.73 1.02 1.07
 *
 * (median ~500 MB/s for the first two.) Splitting before the transforms
 * hands every raw buffer across cores and loses; splitting after them is
 * on par with one worker (the compressed stream is small, so the channel
 * costs little, but the gzip stage is the bottleneck either way and the
 * second core is busy with the receiver). One worker per stream keeps the
 * other worker free for the next stream, so it stays the default.
 */
enum xf_place { PLACE_SAME, PLACE_SOURCE, PLACE_SINK };

#ifndef XFORM_PLACEMENT
#define XFORM_PLACEMENT PLACE_SAME
#endif

static enum xf_place xf_placement(void)
{
    const char *pl = getenv("WEIR_PLACEMENT");
    const char *side = getenv("WEIR_XFORM_SIDE");

    if (pl && strcmp(pl, "same") == 0)
        return PLACE_SAME;
    if (side && strcmp(side, "source") == 0)
        return PLACE_SOURCE;
    if (side && strcmp(side, "sink") == 0)
        return PLACE_SINK;
    if (pl && strcmp(pl, "split") == 0)
        return XFORM_PLACEMENT == PLACE_SAME ? PLACE_SINK : XFORM_PLACEMENT;
    return XFORM_PLACEMENT;
}

/* The half the transforms run on. */
static struct half *xf_half(struct stream *s)
{
    if (s->pl->p->ntransforms == 0)
        return NULL;
    return s->split && xf_placement() == PLACE_SINK ? &s->h[1] : &s->h[0];
}

/* idx -1: the source's pipe; 0..n-1: sink idx's; -2-k: transform k's. */
static struct pipe_ctx *pipe_ctx_of(struct stream *s, int idx)
{
    if (idx >= -1)
        return &s->pc[idx + 1];
    return &s->pc[stream_nsinks(s) + 1 + (unsigned)(-2 - idx)];
}

static void done_task(struct weir_task *t)
{
    struct stream *s = CONTAINER(t, struct stream, done);

    s->done_seen = true;
    run_stream_ended(s);
    stream_report(s);
    if (!s->stop_posted || s->stop_acked)
        stream_free(s);
}

static void stop_ack_task(struct weir_task *t)
{
    struct stream *s = CONTAINER(t, struct stream, stop_ack);

    s->stop_acked = true;
    if (s->done_seen)
        stream_free(s);
}

/* Keeps the first transform error of the stream for its log line. */
static void xforms_destroy(struct half *h)
{
    struct stream *s = h->s;

    if (h->compressing) {
        h->compressing = false;
        /* Relaxed: only steers the next streams' choice (xf_helper). */
        atomic_fetch_sub_explicit(&s->run->compressing[h->worker], 1,
                                  memory_order_relaxed);
    }

    for (unsigned i = 0; i < h->nxf; i++) {
        uint64_t off = 0;
        int err;

        if (!h->xf[i])
            continue;
        err = weir_xform_error(h->xf[i], &off);
        if (err && !s->xf_err) {
            s->xf_err = err;
            s->xf_off = off;
            snprintf(s->xf_name, sizeof(s->xf_name), "%s",
                     weir_xform_name(h->xf[i]));
        }
        weir_xform_destroy(h->xf[i]);
    }
    free(h->xf);
    h->xf = NULL;
    h->nxf = 0;
}

/*
 * The sinks' watch. Every WATCH_NS the sinks' worker looks at each block
 * sink's queue: a full queue is the sink holding the source back, and the
 * interval counts as blocked time. A sink full for WARN_NS on end gets one
 * warning line, again at most every WARN_EVERY_NS while it stays so, when
 * it is stuck (it delivered less than a chunk meanwhile) or slower than
 * another sink of the stream (the others wait for it); a lone sink that is
 * simply the slowest stage of a busy stream is not news.
 */
static void half_try_reap(struct half *h);

#define WATCH_NS      (250ull * 1000 * 1000)
#define WARN_NS       (5ll * 1000 * 1000 * 1000)
#define WARN_EVERY_NS (60ll * 1000 * 1000 * 1000)

static bool sink_full(struct half *h, unsigned i)
{
    return h->sinks[i] &&
           weir_writable_desired_size(weir_endpoint_writable(h->sinks[i])) <= 0;
}

int64_t sink_watch_step(struct sink_watch *w, bool full, uint64_t bytes,
                        int64_t now, bool others, uint64_t chunk,
                        uint64_t *blocked_ns)
{
    if (!full) {
        w->full_since = 0;
        return 0;
    }
    if (w->full_since == 0) {
        w->full_since = now;
        w->full_bytes = bytes;
        return 0;
    }
    *blocked_ns += WATCH_NS;
    if (now - w->full_since < WARN_NS ||
        (w->warned && now - w->warned < WARN_EVERY_NS))
        return 0;
    if (!others && bytes - w->full_bytes >= chunk)
        return 0;
    w->warned = now;
    return now - w->full_since;
}

static void watch_sink(struct half *h, unsigned i, int64_t now, bool others)
{
    struct stream *s = h->s;
    const struct weir_address *a = s->pl->p->sinks[i];
    int64_t held = sink_watch_step(
        &h->sw[i], sink_full(h, i), weir_endpoint_bytes(h->sinks[i]), now,
        others, s->pl->p->chunk_size, &s->ss[i].blocked_ns);

    if (held)
        log_warnx("pipeline %s: sink %s has held the source back for %.0f s "
                  "(its queue is full; on_full=block)",
                  s->pl->p->name, s->peer[0] ? s->peer : a->text,
                  (double)held / 1e9);
}

/*
 * A followed file that stopped growing: the compressors' held-back output
 * (a partial gzip member, a zstd block) goes out, so a reader can decode
 * everything written so far. The source idle for two watches in a row
 * (~0.5 s) syncs every transform, twice: the second sync pushes out what
 * the first one's output gave the next transform of the chain. Only where
 * the transforms run with the sinks (not with PLACE_SOURCE).
 */
void half_sync_idle(struct half *h)
{
    struct stream *s = h->s;
    /* Relaxed: a statistic added by the source; only compared here. */
    uint64_t in = atomic_load_explicit(&s->bytes_in, memory_order_relaxed);

    if (in != h->idle_bytes) {
        h->idle_bytes = in;
        h->idle_ticks = 0;
        return;
    }
    if (in == h->synced_bytes || ++h->idle_ticks < 2)
        return;
    for (unsigned i = 0; i < h->nxf; i++)
        (void)weir_xform_sync(h->xf[i]);
    if (h->idle_ticks >= 3)
        h->synced_bytes = in;
}

static void watch_fire(struct weir_op *op, int res, uint32_t flags)
{
    struct half *h = CONTAINER(op, struct half, watch.op);
    struct stream *s = h->s;
    unsigned n = stream_nsinks(s), full = 0;
    int64_t now = run_now_ns();

    (void)res;
    (void)flags;
    if (h->reap) {
        half_try_reap(h);
        return;
    }
    if (h->finished)
        return;
    /* A broadcast's sinks are its clients (broadcast.c). */
    if (s->pl->mode == PL_BROADCAST) {
        weir_loop_timer_start(h->loop, &h->watch, broadcast_watch(h, now));
        return;
    }
    for (unsigned i = 0; i < n; i++)
        full += sink_full(h, i);
    for (unsigned i = 0; i < n; i++)
        if (s->pl->p->sinks[i]->on_full == ON_FULL_BLOCK && h->sinks[i])
            watch_sink(h, i, now, full < n);
    if (h->nxf && (s->pl->p->follow || s->pl->p->source->follow))
        half_sync_idle(h);
    weir_loop_timer_start(h->loop, &h->watch, WATCH_NS);
}

void half_watch_start(struct half *h)
{
    h->sw = calloc(stream_nsinks(h->s), sizeof(*h->sw));
    if (!h->sw)
        return; /* no counters; the stream runs on */
    h->watch.op.fn = watch_fire;
    weir_loop_timer_start(h->loop, &h->watch, WATCH_NS);
}

static void tee_collect(struct half *h)
{
    struct stream *s = h->s;
    struct weir_tee_stats st;

    for (unsigned i = 0; i < stream_nsinks(s); i++) {
        weir_tee_stats(h->tee, i, &st);
        s->ss[i].teed = true;
        s->ss[i].dropped = st.dropped_bytes;
        s->ss[i].produced = weir_tee_produced_bytes(h->tee);
        s->ss[i].disconnected = st.disconnected;
    }
}

static void half_teardown(struct half *h);

/* The kick timer may still be pending, or its callback running: then the
 * teardown waits for it (mark and reap). */
static void half_finish(struct half *h)
{
    h->finished = true;
    if (h->kicking || h->kick.op.pending || h->watch.op.pending) {
        h->reap = true;
        if (h->kick.op.pending)
            weir_loop_timer_stop(h->loop, &h->kick);
        if (h->watch.op.pending)
            weir_loop_timer_stop(h->loop, &h->watch);
        return;
    }
    half_teardown(h);
}

/* A half marked for reaping goes once none of its timers is pending. */
static void half_try_reap(struct half *h)
{
    if (!h->kicking && !h->kick.op.pending && !h->watch.op.pending)
        half_teardown(h);
}

static void half_teardown(struct half *h)
{
    struct stream *s = h->s;

    if (s->pl->mode == PL_BROADCAST)
        broadcast_teardown(h);
    if (h->tee) {
        tee_collect(h);
        weir_tee_destroy(h->tee);
    }
    if (h->splice) {
        s->sink_bytes[0] = weir_splice_bytes(h->splice);
        weir_splice_destroy(h->splice);
        h->splice = NULL;
    }
    for (unsigned i = 0; h->sinks && i < stream_nsinks(s); i++) {
        if (!h->sinks[i])
            continue;
        s->sink_bytes[i] = weir_endpoint_bytes(h->sinks[i]);
        weir_endpoint_destroy(h->sinks[i]);
    }
    xforms_destroy(h);
    relay_teardown(h);
    if (h->src)
        weir_endpoint_destroy(h->src);
    if (h->tx)
        weir_chan_tx_destroy(h->tx);
    if (h->rx)
        weir_chan_rx_destroy(h->rx);
    h->tee = NULL;
    h->src = NULL;
    h->tx = NULL;
    h->rx = NULL;
    /* Acq_rel: the release half publishes this half's results (sink_rc,
     * sink_bytes, src_rc) to the thread that makes the last decrement;
     * the acquire half, on that thread, makes the other half's results
     * visible before `done` is posted (and the post orders them for the
     * main loop). */
    if (atomic_fetch_sub_explicit(&s->halves_left, 1, memory_order_acq_rel) ==
        1)
        weir_loop_post(s->run->main, &s->done);
}

void half_put(struct half *h)
{
    if (--h->pipes == 0)
        half_finish(h);
}

static void pipe_done(void *ctx, int rc)
{
    struct pipe_ctx *pc = ctx;
    struct stream *s = pc->h->s;

    if (pc->idx == -1)
        s->src_rc = rc;
    else if (pc->idx < -1) {
        if (rc < 0 && s->src_rc == 0)
            s->src_rc = rc;
    } else
        s->sink_rc[pc->idx] = rc;
    if (rc < 0 && s->relay)
        relay_cut(pc->h);
    half_put(pc->h);
}

static void start_pipe(struct half *h, struct weir_readable *rs,
                       struct weir_writable *ws, int idx)
{
    struct pipe_ctx *pc = pipe_ctx_of(h->s, idx);
    int rc;

    pc->h = h;
    pc->idx = idx;
    h->pipes++;
    rc = weir_pipe_to(rs, ws, NULL, pipe_done, pc);
    if (rc != WEIR_PENDING)
        pipe_done(pc, rc);
}

static void sink_event(void *arg, enum weir_endpoint_event ev, int err,
                       uint64_t off)
{
    struct pipe_ctx *pc = arg;
    struct stream *s = pc->h->s;
    const struct weir_address *a = s->pl->p->sinks[pc->idx];
    const char *name = s->pl->p->name;

    switch (ev) {
    case WEIR_EP_CONNECTED:
        log_debug("pipeline %s: connected to %s", name, a->text);
        break;
    case WEIR_EP_CONNECT_FAIL:
        log_warnx("pipeline %s: cannot connect to %s: %s; retrying", name,
                  a->text, strerror(-err));
        break;
    case WEIR_EP_DISCONNECTED:
        log_warnx("pipeline %s: lost %s (%s); the peer acknowledged %llu "
                  "bytes; reconnecting",
                  name, a->text, strerror(-err), (unsigned long long)off);
        break;
    case WEIR_EP_RESUMED:
        log_info("pipeline %s: reconnected to %s, resending from byte %llu",
                 name, a->text, (unsigned long long)off);
        break;
    }
}

static int make_sink(struct half *h, unsigned i, struct weir_endpoint **out)
{
    struct stream *s = h->s;
    const struct weir_pipeline *p = s->pl->p;
    struct weir_pool *pool = weir_worker_pool();
    const struct weir_address *a = p->sinks[i];
    struct weir_endpoint_options o = {
        .chunk_size = (uint32_t)p->chunk_size,
        .hwm = a->high_water_mark ? a->high_water_mark : p->high_water_mark,
        .own_fd = true,
        .counter = i == 0 ? &s->bytes_out : NULL,
    };
    int fd;

    (void)pool;
    if (s->pl->mode == PL_SERVE) {
        fd = s->sink_fd;
        s->sink_fd = -1;
        return weir_endpoint_fd_sink(out, h->loop, fd, &o);
    }
    if (s->relay) {
        /* The upstream this stream's worker connected (relay.c). */
        fd = s->up_fd;
        s->up_fd = -1;
        return weir_endpoint_fd_sink(out, h->loop, fd, &o);
    }
    switch (a->kind) {
    case ADDR_FILE:
        fd = fcntl(s->pl->sink_file_fd[i], F_DUPFD_CLOEXEC, 0);
        if (fd < 0)
            return -errno;
        return weir_endpoint_fd_sink(out, h->loop, fd, &o);
    case ADDR_STDOUT:
        fd = fcntl(1, F_DUPFD_CLOEXEC, 0);
        if (fd < 0)
            return -errno;
        return weir_endpoint_fd_sink(out, h->loop, fd, &o);
    case ADDR_NULL:
        return weir_endpoint_null_sink(out, h->loop, &o);
    case ADDR_TCP:
    case ADDR_UNIX: {
        struct weir_socket_sink_options so = {
            .addr = s->pl->sink_addr[i],
            .addrlen = s->pl->sink_addrlen[i],
            /* A per-client proxy stream fails with its upstream; a
             * pipeline's one stream keeps trying; weir pipe reports
             * the failure instead. */
            .reconnect = s->pl->mode == PL_ONCE && !s->run->conf->oneshot,
            /* The file's bytes are not the stream's once transformed. */
            .replay_fd = s->pl->p->ntransforms ? -1 : s->replay_fd,
            .on_event = sink_event,
            .event_arg = pipe_ctx_of(s, (int)i),
        };
        return weir_endpoint_socket_sink(out, h->loop, &o, &so);
    }
    default:
        return -EINVAL;
    }
}

static enum weir_tee_policy tee_policy(enum on_full f)
{
    switch (f) {
    case ON_FULL_DROP_NEWEST:
        return WEIR_TEE_DROP_NEWEST;
    case ON_FULL_DROP_OLDEST:
        return WEIR_TEE_DROP_OLDEST;
    case ON_FULL_DISCONNECT:
        return WEIR_TEE_DISCONNECT;
    default:
        return WEIR_TEE_BLOCK;
    }
}

/* A readable that earlier stages feed but nothing will read (a later
 * stage could not be built): cancelling it ends those stages' pipes. */
static void cancel_unread(struct half *h, struct weir_readable *rs, int rc)
{
    if (weir_readable_locked(rs) || weir_reader_acquire(&h->dead, rs) != 0)
        return;
    weir_reader_cancel(&h->dead, rc);
    weir_reader_release(&h->dead);
}

/* The sinks of the stream, fed by rs. */
static void build_sinks(struct half *h, struct weir_readable *rs)
{
    struct stream *s = h->s;
    unsigned n = stream_nsinks(s);
    struct weir_tee_branch_options bo[CONF_MAX_SINKS] = {0};
    int rc = 0;

    h->sinks = calloc(n, sizeof(*h->sinks));
    if (!h->sinks) {
        s->sink_rc[0] = -ENOMEM;
        cancel_unread(h, rs, -ENOMEM);
        return;
    }
    for (unsigned i = 0; i < n; i++) {
        pipe_ctx_of(s, (int)i)->h = h;
        pipe_ctx_of(s, (int)i)->idx = (int)i;
        rc = make_sink(h, i, &h->sinks[i]);
        if (rc) {
            s->sink_rc[i] = rc;
            h->sinks[i] = NULL;
            break;
        }
    }
    if (rc) {
        cancel_unread(h, rs, rc);
        return;
    }
    half_watch_start(h);
    if (n == 1 && s->pl->p->sinks[0]->on_full == ON_FULL_BLOCK) {
        start_pipe(h, rs, weir_endpoint_writable(h->sinks[0]), 0);
        return;
    }
    /* Several sinks, or a policy other than block: the core's tee, one
     * branch per sink with the sink's on_full policy. The branch holds at
     * most one chunk past what the sink's own queue (its high_water_mark)
     * holds, so a sink's memory is its hwm + one chunk whatever its
     * policy; a drop policy acts when both are full. */
    for (unsigned i = 0; i < n; i++)
        bo[i] = (struct weir_tee_branch_options){
            .strategy = {.hwm = s->pl->p->chunk_size, .bytes = true},
            .policy = tee_policy(s->pl->p->sinks[i]->on_full),
        };
    rc = weir_tee_create(&h->tee, rs, n, bo);
    if (rc) {
        s->sink_rc[0] = rc;
        cancel_unread(h, rs, rc);
        return;
    }
    for (unsigned i = 0; i < n; i++)
        start_pipe(h, weir_tee_branch(h->tee, i),
                   weir_endpoint_writable(h->sinks[i]), (int)i);
}

static int make_source(struct half *h)
{
    struct stream *s = h->s;
    const struct weir_pipeline *p = s->pl->p;
    struct weir_endpoint_options o = {
        .chunk_size = (uint32_t)p->chunk_size,
        .follow = p->follow || p->source->follow,
        .own_fd = true,
        .counter = &s->bytes_in,
    };
    int fd = s->src_fd;
    struct stat st;

    s->src_fd = -1;
    /* A broadcast is live: it starts at the file's end. */
    if (s->pl->mode == PL_BROADCAST && s->src_regular && fstat(fd, &st) == 0)
        o.offset = (uint64_t)st.st_size;
    if (s->src_regular)
        return weir_endpoint_file_source(&h->src, h->loop, weir_worker_pool(),
                                         fd, &o);
    return weir_endpoint_fd_source(&h->src, h->loop, weir_worker_pool(), fd,
                                   &o);
}

/*
 * Parked transforms. A transform parks when its pool is empty or its
 * readable side is full past its burst, and wants weir_xform_resume once
 * that may have changed; the loop has no per-turn hook, so a timer on the
 * transforms' worker retries them: first after KICK_MIN_NS, doubling up to
 * KICK_MAX_NS while nothing moves (a sink stuck behind a slow peer costs a
 * few hundred wakeups a second, not a spinning core), back to the minimum
 * as soon as one resume went through. A resume that finds no room yet
 * only compares two numbers.
 */
#define KICK_MIN_NS (20ull * 1000)
#define KICK_MAX_NS (2ull * 1000 * 1000)

static void kick_arm(struct half *h)
{
    if (h->kicking || h->kick.op.pending || h->finished)
        return;
    if (weir_loop_timer_start(h->loop, &h->kick, h->kick_ns) != 0)
        log_debug("pipeline %s: cannot arm the transform timer",
                  h->s->pl->p->name);
}

static void xf_on_stall(void *ctx, struct weir_xform *x)
{
    (void)x;
    kick_arm(ctx);
}

static void kick_fire(struct weir_op *op, int res, uint32_t flags)
{
    struct half *h = CONTAINER(op, struct half, kick.op);
    bool moved = false, parked = false;

    (void)res;
    (void)flags;
    if (h->reap) {
        half_try_reap(h);
        return;
    }
    h->kicking = true;
    /* A resume may finish the stream's pipes (half_finish marks reap);
     * the transforms stay until the loop is over. */
    for (unsigned i = 0; i < h->nxf && !h->reap; i++)
        if (weir_xform_stalled(h->xf[i]) &&
            weir_xform_resume(h->xf[i]) != WEIR_PENDING)
            moved = true;
    h->kicking = false;
    if (h->reap) {
        half_try_reap(h);
        return;
    }
    for (unsigned i = 0; i < h->nxf; i++)
        parked = parked || weir_xform_stalled(h->xf[i]);
    if (moved || !parked)
        h->kick_ns = KICK_MIN_NS;
    else if (h->kick_ns < KICK_MAX_NS)
        h->kick_ns *= 2;
    if (parked)
        kick_arm(h);
}

/*
 * The loop that may compress gzip members beside this half's: the other
 * worker's, with two workers or more. One stream's gzip on one worker ran
 * at the speed of one core; with members also compressed on a second
 * worker (lib/xform/gzip.c) it ran 1.5-1.8x faster (README has the
 * figures). While that worker has gzip streams of its own, lending it
 * members only queues them behind its work: two streams through uppercase
 * and gzip:1, one per worker, took 0.48 s (median of 8) when one lent to
 * the other and 0.42 s without lending. So the stream counts itself in
 * run->compressing, and its gzip reads the other worker's count before
 * each member (weir_xform_options.helper_busy). WEIR_XFORM_HELPER=off
 * turns lending off, for measuring.
 */
static bool spec_is_gzip(const char *spec)
{
    return strncmp(spec, "gzip", 4) == 0;
}

static struct weir_loop *xf_helper(struct half *h,
                                   const _Atomic uint32_t **busy)
{
    struct stream *s = h->s;
    struct run *r = s->run;
    const struct weir_pipeline *p = s->pl->p;
    const char *env = getenv("WEIR_XFORM_HELPER");
    struct half *other = h == &s->h[0] ? &s->h[1] : &s->h[0];
    bool gzip = false;

    for (size_t k = 0; k < p->ntransforms; k++)
        gzip = gzip || spec_is_gzip(p->transforms[k].spec);
    if (!gzip || !r->compressing)
        return NULL;
    h->compressing = true;
    /* Relaxed: a hint for the other worker's gzip streams, read relaxed
     * there; nothing is published with it. */
    atomic_fetch_add_explicit(&r->compressing[h->worker], 1,
                              memory_order_relaxed);
    if (r->nworkers < 2 || (env && strcmp(env, "off") == 0))
        return NULL;
    *busy = &r->compressing[other->worker];
    return other->loop;
}

/* The pipeline's transforms on this half, fed by rs: the readable their
 * output comes out of, or NULL when one could not be made (then the
 * stream errors). */
static struct weir_readable *build_xforms(struct half *h,
                                          struct weir_readable *rs)
{
    struct stream *s = h->s;
    const struct weir_pipeline *p = s->pl->p;
    struct weir_xform_options o = {
        .pool = weir_worker_pool(),
        .slot = weir_loop_slot(h->loop),
        /* One chunk in, one chunk out: the stage's share of the memory
         * formula. */
        .writable = {.hwm = p->chunk_size, .bytes = true},
        .readable = {.hwm = p->chunk_size, .bytes = true},
        .on_stall = xf_on_stall,
        .stall_ctx = h,
    };
    int rc;

    o.helper = xf_helper(h, &o.helper_busy);
    h->kick.op.fn = kick_fire;
    h->kick_ns = KICK_MIN_NS;
    h->xf = calloc(p->ntransforms, sizeof(*h->xf));
    if (!h->xf) {
        s->src_rc = -ENOMEM;
        cancel_unread(h, rs, -ENOMEM);
        return NULL;
    }
    for (size_t k = 0; k < p->ntransforms; k++) {
        rc = weir_xform_create(&h->xf[k], p->transforms[k].spec, &o);
        if (rc) {
            h->xf[k] = NULL;
            s->src_rc = rc;
            cancel_unread(h, rs, rc);
            return NULL;
        }
        h->nxf = (unsigned)k + 1;
        start_pipe(h, rs,
                   weir_transform_writable(weir_xform_transform(h->xf[k])),
                   -2 - (int)k);
        rs = weir_transform_readable(weir_xform_transform(h->xf[k]));
    }
    return rs;
}

static void splice_done(void *ctx, int rc)
{
    struct pipe_ctx *pc = ctx;

    pc->h->s->sink_rc[0] = rc;
    half_put(pc->h);
}

/* The zero-copy stage, when it can be had: true when it took the stream
 * (then it owns the fds), false to take the stream path. */
static bool try_splice(struct half *h)
{
    struct stream *s = h->s;
    struct pipe_ctx *pc = pipe_ctx_of(s, 0);
    struct weir_splice_options o = {
        .length = UINT64_MAX,
        .counter = &s->bytes_out,
    };
    int sock = -1, rc;

    if (s->pl->mode == PL_SERVE) {
        sock = s->sink_fd;
        o.max_length = s->run->splice_serve_max;
    } else {
        o.connect_addr = (const struct sockaddr *)&s->pl->sink_addr[0];
        o.connect_addrlen = s->pl->sink_addrlen[0];
    }
    pc->h = h;
    pc->idx = 0;
    h->pipes++;
    rc = weir_splice_start(&h->splice, h->loop, s->src_fd, sock, &o,
                           splice_done, pc);
    if (rc == 0) {
        s->src_fd = -1;
        s->sink_fd = -1;
        return true;
    }
    h->pipes--;
    h->splice = NULL;
    if (rc != -EMFILE && rc != -ENFILE && rc != -EPERM && rc != -ENOMEM &&
        rc != -EFBIG)
        log_debug("pipeline %s: splice: %s; taking the stream path",
                  s->pl->p->name, strerror(-rc));
    return false;
}

static void half_start(struct weir_task *t)
{
    struct half *h = CONTAINER(t, struct half, start);
    struct stream *s = h->s;

    h->pipes = 1; /* held while building */
    if (s->zero_copy && try_splice(h)) {
        half_put(h);
        return;
    }
    /* A socket to connect first: half_build follows its completion. */
    if (!stream_connect(h))
        half_build(h);
}

void half_build(struct half *h)
{
    struct stream *s = h->s;
    struct weir_readable *rs = NULL;
    struct weir_writable *ws;
    int rc;

    if (h == &s->h[0]) {
        if (s->relay)
            relay_prepare(h);
        rc = make_source(h);
        if (rc) {
            s->src_rc = rc;
            half_put(h);
            return;
        }
        rs = weir_endpoint_readable(h->src);
        if (xf_half(s) == h)
            rs = build_xforms(h, rs);
        if (!rs) {
            /* The source's readable was cancelled; nothing to pipe. */
        } else if (s->pl->mode == PL_BROADCAST) {
            broadcast_build(h, rs);
        } else if (s->split) {
            rc = weir_chan_tx_open(h->tx, &ws);
            if (rc)
                s->src_rc = rc;
            else
                start_pipe(h, rs, ws, -1);
        } else {
            build_sinks(h, rs);
        }
        if (s->relay)
            relay_start(h);
    } else {
        rc = weir_chan_rx_open(h->rx, &rs);
        if (rc) {
            s->sink_rc[0] = rc;
        } else {
            if (xf_half(s) == h)
                rs = build_xforms(h, rs);
            if (rs)
                build_sinks(h, rs);
        }
    }
    half_put(h);
}

static void half_stop(struct weir_task *t)
{
    struct half *h = CONTAINER(t, struct half, stop);
    struct stream *s = h->s;

    h->stopped = true;
    /* A connect still in flight ends now (relay.c: no error). */
    if (h->conn_op.pending)
        weir_loop_cancel(h->loop, &h->conn_op);
    /* A file that does not follow ends by itself: let it. */
    if (!h->finished && h->src &&
        !(s->src_regular && !(s->pl->p->follow || s->pl->p->source->follow)))
        weir_endpoint_stop(h->src);
    weir_loop_post(s->run->main, &s->stop_ack);
}

/* Main thread: the source's fd for a stream that is not an accepted
 * client. */
static int open_source(struct stream *s)
{
    const struct weir_address *a = s->pl->p->source;
    struct stat st;
    int fd, rc;

    switch (a->kind) {
    case ADDR_FILE:
        fd = open(a->path, O_RDONLY | O_CLOEXEC);
        if (fd < 0)
            return -errno;
        s->src_regular = fstat(fd, &st) == 0 && S_ISREG(st.st_mode);
        if (s->src_regular && s->pl->mode == PL_ONCE)
            s->replay_fd = fcntl(fd, F_DUPFD_CLOEXEC, 0);
        if (s->src_regular && s->run->conf->oneshot &&
            !(s->pl->p->follow || a->follow))
            s->run->total = (uint64_t)st.st_size;
        return fd;
    case ADDR_STDIN:
        fd = fcntl(0, F_DUPFD_CLOEXEC, 0);
        return fd < 0 ? -errno : fd;
    case ADDR_TCP:
    case ADDR_UNIX:
        /* A connecting source connects once, on its worker's loop
         * (relay.c): a peer that is slow to answer holds up nothing
         * else. */
        rc = sockaddr_resolve(a, &s->conn_addr, &s->conn_addrlen);
        if (rc)
            return rc;
        fd = socket(s->conn_addr.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
        if (fd < 0)
            return -errno;
        s->conn_fd = fd;
        return fd;
    default:
        return -EINVAL;
    }
}

struct stream *stream_new(struct pipeline_rt *pl, int src_fd, int sink_fd,
                          const char *peer)
{
    struct run *r = pl->run;
    unsigned n = pl->mode == PL_SERVE ? 1 : (unsigned)pl->p->nsinks;
    struct stream *s = calloc(1, sizeof(*s));
    unsigned w;

    if (!s)
        return NULL;
    s->sink_rc = calloc(n, sizeof(int));
    s->sink_bytes = calloc(n, sizeof(uint64_t));
    s->ss = calloc(n, sizeof(*s->ss));
    s->pc = calloc(n + 1 + pl->p->ntransforms, sizeof(*s->pc));
    if (!s->sink_rc || !s->sink_bytes || !s->ss || !s->pc) {
        free(s->sink_rc);
        free(s->sink_bytes);
        free(s->ss);
        free(s->pc);
        free(s);
        return NULL;
    }
    s->run = r;
    s->pl = pl;
    s->id = ++pl->streams;
    s->replay_fd = -1;
    s->kill_fd = -1;
    s->conn_fd = -1;
    s->up_fd = -1;
    s->kill_up_fd = -1;
    s->sink_fd = sink_fd;
    snprintf(s->peer, sizeof(s->peer), "%s", peer ? peer : "");
    if (src_fd >= 0) {
        s->src_fd = src_fd;
    } else {
        int fd = open_source(s);

        if (fd < 0) {
            s->src_fd = -1;
            s->src_rc = fd;
        } else {
            s->src_fd = fd;
        }
    }
    /* A plain file into one socket: the splice stage, on one worker. The
     * daemon's own connecting sink reconnects and resumes, which the
     * splice stage does not: only weir pipe's connects take it. */
    s->zero_copy =
        (pl->mode == PL_SERVE ? r->zero_copy_serve : r->zero_copy) &&
        s->src_regular && pl->p->nsinks == 1 && pl->p->ntransforms == 0 &&
        pl->p->sinks[0]->on_full == ON_FULL_BLOCK &&
        !(pl->p->follow || pl->p->source->follow) &&
        (pl->mode == PL_SERVE || (pl->mode == PL_ONCE && r->conf->oneshot &&
                                  (pl->p->sinks[0]->kind == ADDR_TCP ||
                                   pl->p->sinks[0]->kind == ADDR_UNIX)));
    if (pl->p->ntransforms)
        s->split = xf_placement() != PLACE_SAME && r->nworkers >= 2;
    else
        s->split = r->split && r->nworkers >= 2 && !s->zero_copy;
    /* A proxy relays replies on the worker that carries the requests; a
     * broadcast's tee takes its clients on one worker. */
    if ((s->src_fd >= 0 && relay_wanted(pl) && relay_open(s) == 0) ||
        pl->mode == PL_BROADCAST)
        s->split = false;
    w = r->next_worker++ % r->nworkers;
    for (unsigned i = 0; i < 2; i++) {
        s->h[i].s = s;
        s->h[i].worker = (w + i) % r->nworkers;
        s->h[i].loop = weir_workers_loop(r->workers, s->h[i].worker);
        weir_task_init(&s->h[i].start, half_start);
        weir_task_init(&s->h[i].stop, half_stop);
    }
    weir_task_init(&s->done, done_task);
    weir_task_init(&s->stop_ack, stop_ack_task);
    atomic_init(&s->halves_left, s->split ? 2 : 1);
    atomic_init(&s->bytes_in, 0);
    atomic_init(&s->bytes_out, 0);
    return s;
}

void stream_start(struct stream *s)
{
    struct run *r = s->run;
    int rc;

    s->pl->clients++;
    r->nlive++;
    if (r->conf->oneshot && !r->one)
        r->one = s;
    s->next = r->live;
    if (r->live)
        r->live->prev = s;
    r->live = s;
    if (s->src_fd < 0) {
        /* The source could not be opened: the stream ends at once.
         * Relaxed: no worker has the stream yet; the post publishes. */
        atomic_store_explicit(&s->halves_left, 1, memory_order_relaxed);
        weir_loop_post(r->main, &s->done);
        return;
    }
    if (s->split) {
        rc = weir_chan_pair(&s->h[0].tx, &s->h[1].rx, s->h[0].loop,
                            s->h[1].loop, s->pl->p->high_water_mark);
        if (rc) {
            s->split = false;
            /* Relaxed: before the post below, which publishes it. */
            atomic_store_explicit(&s->halves_left, 1, memory_order_relaxed);
        }
    }
    weir_workers_post(r->workers, s->h[0].worker, &s->h[0].start);
    if (s->split)
        weir_workers_post(r->workers, s->h[1].worker, &s->h[1].start);
}

void stream_stop(struct stream *s)
{
    if (s->stop_posted || s->done_seen)
        return;
    s->stop_posted = true;
    weir_workers_post(s->run->workers, s->h[0].worker, &s->h[0].stop);
}

void stream_free(struct stream *s)
{
    struct run *r = s->run;

    if (s->prev)
        s->prev->next = s->next;
    else
        r->live = s->next;
    if (s->next)
        s->next->prev = s->prev;
    r->nlive--;
    s->pl->clients--;
    if (s->src_fd >= 0)
        close(s->src_fd);
    if (s->sink_fd >= 0)
        close(s->sink_fd);
    if (s->replay_fd >= 0)
        close(s->replay_fd);
    if (s->kill_fd >= 0)
        close(s->kill_fd);
    relay_free(s);
    for (unsigned i = 0; i < 2; i++) {
        free(s->h[i].sinks);
        free(s->h[i].sw);
    }
    free(s->sink_rc);
    free(s->sink_bytes);
    free(s->ss);
    free(s->pc);
    free(s);
    run_check_finished(r);
}
