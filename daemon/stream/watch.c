/*
 * watch.c - a stream's timers on its worker: the watch of its sinks and
 * the retry of its parked transforms.
 */
#include "stream/watch.h"

#include <errno.h>
#include <stdlib.h>

#include "stream/checkpoint_set.h"
#include "stream/fileset_live.h"
#include "stream/source_ack.h"
#include "stream/stream_impl.h"
#include "sys/clock.h"
#include "sys/log.h"

/*
 * The sinks' watch. Every SINK_WATCH_NS the stream's worker looks at each
 * block sink's queue: a full queue is the sink holding the source back,
 * and the interval counts as blocked time. A sink full for WARN_NS on end
 * gets one warning line, again at most every WARN_EVERY_NS while it stays
 * so, when it is stuck (it delivered less than a chunk meanwhile) or
 * slower than another sink of the stream (the others wait for it); a lone
 * sink that is simply the slowest stage of a busy stream is not news.
 * "Another waits" means another sink has had room for STARVED_NS: a slow
 * sink's own queue has room for a moment each time it drains, and one
 * sample of that must not make the busy sink look like the culprit.
 */
#define STARVED_NS    (1000ll * 1000 * 1000)
#define WARN_NS       (5ll * 1000 * 1000 * 1000)
#define WARN_EVERY_NS (60ll * 1000 * 1000 * 1000)
#define FS_SAMPLE_NS  (1000ll * 1000 * 1000)

/* Sink i's desired size, while it can still take bytes: false when it
 * has no endpoint or has finished (closed: desired size 0; errored:
 * "none"). A finished sink holds nothing back and nothing queued, or a
 * tee's finished file sink would be shown at 100 % and blamed for the
 * time another sink held the source. */
static bool sink_desired(struct stream *s, unsigned i, int64_t *desired)
{
    const struct weir_writable *ws;

    if (!s->home.sinks[i])
        return false;
    ws = weir_endpoint_writable(s->home.sinks[i]);
    if (weir_writable_closed(ws) || weir_writable_errored(ws, NULL))
        return false;
    *desired = weir_writable_desired_size(ws);
    return true;
}

static bool sink_full(struct stream *s, unsigned i)
{
    int64_t desired;

    return sink_desired(s, i, &desired) && desired <= 0;
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
    *blocked_ns += SINK_WATCH_NS;
    if (now - w->full_since < WARN_NS ||
        (w->warned && now - w->warned < WARN_EVERY_NS))
        return 0;
    if (!others && bytes - w->full_bytes >= chunk)
        return 0;
    w->warned = now;
    return now - w->full_since;
}

static void watch_sink(struct stream *s, unsigned i, int64_t now, bool others)
{
    struct stream_home *h = &s->home;
    const struct weir_pipeline *p = s->sp->p;
    int64_t held = sink_watch_step(&h->sw[i], sink_full(s, i),
                                   weir_endpoint_bytes(h->sinks[i]), now,
                                   others, p->chunk_size, &s->ss[i].blocked_ns);

    /* Relaxed: a statistic (struct sink_live). */
    atomic_store_explicit(&s->live[i].blocked_ns, s->ss[i].blocked_ns,
                          memory_order_relaxed);

    if (held)
        log_warnx("pipeline %s: sink %s has held the source back for %.0f s "
                  "(its queue is full; on_full=block)",
                  p->name, s->peer[0] ? s->peer : p->sinks[i]->text,
                  (double)held / 1e9);
}

/* What a scrape of /metrics sees of sink i (struct sink_live). Relaxed:
 * statistics, written here only. */
static void watch_live(struct stream *s, unsigned i)
{
    struct stream_home *h = &s->home;
    struct weir_tee_stats st;
    int64_t desired, hwm = (int64_t)stream_sink_hwm(s->sp->p, i);

    if (h->tee) {
        uint64_t dropped;

        weir_tee_stats(h->tee, i, &st);
        dropped = st.dropped_bytes;
        /* A branch cut loose by on_full=disconnect loses every byte the
         * tee reads from then on: counted now, not when the stream ends
         * (report.c's closing line counts the same way). */
        if (st.disconnected) {
            uint64_t made = weir_tee_produced_bytes(h->tee);
            uint64_t got = h->sinks[i] ? weir_endpoint_bytes(h->sinks[i]) : 0;

            dropped = made > got ? made - got : dropped;
            atomic_store_explicit(&s->live[i].state, SINK_CUT,
                                  memory_order_relaxed);
        }
        atomic_store_explicit(&s->live[i].dropped, dropped,
                              memory_order_relaxed);
    }
    atomic_store_explicit(&s->live[i].queued,
                          sink_desired(s, i, &desired) && desired < hwm
                              ? (uint64_t)(hwm - desired)
                              : 0,
                          memory_order_relaxed);
}

/* Syncs every transform; false when one was busy (try again later). */
static bool sync_all(struct stream *s)
{
    struct stream_home *h = &s->home;
    bool busy = false;

    for (unsigned i = 0; i < h->nxf; i++)
        busy = weir_xform_sync(h->xf[i]) == -EBUSY || busy;
    return !busy;
}

/*
 * A followed file that stopped growing: the compressors' held-back output
 * (a partial gzip member, a zstd block) goes out, so a reader can decode
 * everything written so far. The source idle for two watches in a row
 * (~0.5 s) syncs every transform, twice: the second sync pushes out what
 * the first one's output gave the next transform of the chain.
 *
 * A file that never stops growing would never be idle, and its output
 * would wait for a full member (256 KiB of input) or the end: so while
 * bytes come in, every flush_interval ends the member or frame too, and
 * a steady log reaches the peer within about that interval.
 */
void stream_sync_idle(struct stream *s)
{
    struct stream_home *h = &s->home;
    /* Relaxed: a statistic added by the source; only compared here. */
    uint64_t in = atomic_load_explicit(&s->bytes_in, memory_order_relaxed);
    int64_t every = (int64_t)s->sp->p->flush_interval_ms * 1000 * 1000;
    int64_t now = clock_now_ns();

    if (h->nxf == 0)
        return;
    if (h->reflush) {
        h->reflush = false;
        (void)sync_all(s);
    }
    if (in != h->idle_bytes) {
        h->idle_bytes = in;
        h->idle_ticks = 0;
        if (every == 0)
            return;
        if (h->flushed_at == 0) {
            h->flushed_at = now; /* the first bytes start the interval */
        } else if (now - h->flushed_at >= every && sync_all(s)) {
            h->flushed_at = now;
            h->reflush = h->nxf > 1;
        }
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
    struct stream *s = weir_container_of(op, struct stream, home.watch.op);
    struct stream_home *h = &s->home;
    const struct weir_pipeline *p = s->sp->p;
    unsigned n = s->sp->nsinks;
    int64_t now = clock_now_ns();
    bool starved = false;

    (void)res;
    (void)flags;
    if (h->reap) {
        stream_try_reap(s);
        return;
    }
    if (h->finished)
        return;
    /* A last stage of the maker's watches its own sinks. */
    if (s->sp->tail) {
        weir_loop_timer_start(h->loop, &h->watch, s->sp->tail->watch(s, now));
        return;
    }
    for (unsigned i = 0; i < n; i++) {
        struct sink_watch *sw = &h->sw[i];

        if (!h->sinks[i] || sink_full(s, i))
            sw->room_since = 0;
        else if (!sw->room_since)
            sw->room_since = now;
        else if (now - sw->room_since >= STARVED_NS)
            starved = true;
    }
    for (unsigned i = 0; i < n; i++)
        if (p->sinks[i]->on_full == ON_FULL_BLOCK && h->sinks[i] &&
            s->sink_rc[i] == 0)
            watch_sink(s, i, now, starved);
    for (unsigned i = 0; i < n; i++)
        watch_live(s, i);
    stream_xforms_count(s);
    if (p->follow || p->source->follow)
        stream_sync_idle(s);
    ckpt_sample(s, false);
    ckpt_set_sample(s, false);
    source_ack_sample(s, false);
    /* A glob source's figures walk every file it knows: once a second is
     * what status and /metrics show. */
    if (now - s->fs_sampled >= FS_SAMPLE_NS) {
        s->fs_sampled = now;
        stream_fs_sample(s);
    }
    weir_loop_timer_start(h->loop, &h->watch, SINK_WATCH_NS);
}

void stream_watch_start(struct stream *s)
{
    struct stream_home *h = &s->home;

    h->sw = calloc(s->sp->nsinks, sizeof(*h->sw));
    if (!h->sw)
        return; /* no counters; the stream runs on */
    h->watch.op.fn = watch_fire;
    weir_loop_timer_start(h->loop, &h->watch, SINK_WATCH_NS);
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

static void kick_arm(struct stream *s)
{
    struct stream_home *h = &s->home;

    if (h->kicking || h->kick.op.pending || h->finished)
        return;
    if (weir_loop_timer_start(h->loop, &h->kick, h->kick_ns) != 0)
        log_debug("pipeline %s: cannot arm the transform timer",
                  s->sp->p->name);
}

void stream_xf_stalled(void *ctx, struct weir_xform *x)
{
    (void)x;
    kick_arm(ctx);
}

static void kick_fire(struct weir_op *op, int res, uint32_t flags)
{
    struct stream *s = weir_container_of(op, struct stream, home.kick.op);
    struct stream_home *h = &s->home;
    bool moved = false, parked = false;

    (void)res;
    (void)flags;
    if (h->reap) {
        stream_try_reap(s);
        return;
    }
    h->kicking = true;
    /* A resume may finish the stream's pipes (stream_finish marks reap);
     * the transforms stay until the loop is over. */
    for (unsigned i = 0; i < h->nxf && !h->reap; i++)
        if (weir_xform_stalled(h->xf[i]) &&
            weir_xform_resume(h->xf[i]) != WEIR_PENDING)
            moved = true;
    h->kicking = false;
    if (h->reap) {
        stream_try_reap(s);
        return;
    }
    for (unsigned i = 0; i < h->nxf; i++)
        parked = parked || weir_xform_stalled(h->xf[i]);
    if (moved || !parked)
        h->kick_ns = KICK_MIN_NS;
    else if (h->kick_ns < KICK_MAX_NS)
        h->kick_ns *= 2;
    if (parked)
        kick_arm(s);
}

void stream_kick_init(struct stream *s)
{
    struct stream_home *h = &s->home;

    h->kick.op.fn = kick_fire;
    h->kick_ns = KICK_MIN_NS;
}

static void ckpt_soon_fire(struct weir_op *op, int res, uint32_t flags)
{
    struct stream *s = weir_container_of(op, struct stream, home.ck_soon.op);
    struct stream_home *h = &s->home;

    (void)res;
    (void)flags;
    if (h->reap) {
        stream_try_reap(s);
        return;
    }
    if (!h->finished) {
        ckpt_set_sample(s, false);
        source_ack_sample(s, false);
    }
}

void stream_ckpt_soon(struct stream *s)
{
    struct stream_home *h = &s->home;

    /* A jetstream source without transforms too: its sinks' bytes are
     * its messages, told at once (with transforms only a stream at
     * rest tells, which the watch's pace judges). */
    if ((!s->sp->ckset &&
         !(s->src_remote && s->sp->p->ntransforms == 0 && h->sinks)) ||
        h->finished || h->reap || h->ck_soon.op.pending)
        return;
    h->ck_soon.op.fn = ckpt_soon_fire;
    weir_loop_timer_start(h->loop, &h->ck_soon, 1000 * 1000);
}
