/*
 * build.c - a half on its worker: built from the start task (after a
 * connect, when it needs one), its pipes started, and torn down once they
 * have all ended. The last half of the stream to go posts the end to the
 * main loop.
 *
 * A stream is core streams joined by core pipes: the source endpoint's
 * readable, the transforms (core transforms from lib/xform), then the
 * sinks on the same worker (sinks.c), a channel whose writable is on this
 * worker and whose readable feeds the rest on another, or the last stage
 * the stream's maker supplied (stream_tail).
 */
#include <errno.h>
#include <string.h>
#include <sys/stat.h>

#include "stream/stream.h"
#include "sys/log.h"

struct pipe_ctx *stream_pipe_ctx(struct stream *s, int idx)
{
    if (idx >= -1)
        return &s->pc[idx + 1];
    return &s->pc[s->sp->nsinks + 1 + (unsigned)(-2 - idx)];
}

/* The half the transforms run on. */
static struct half *xf_half(struct stream *s)
{
    if (s->sp->p->ntransforms == 0)
        return NULL;
    return s->split && s->cx->place.xf_side == PLACE_SINK ? &s->h[1] : &s->h[0];
}

static void tee_collect(struct half *h)
{
    struct stream *s = h->s;
    struct weir_tee_stats st;

    for (unsigned i = 0; i < s->sp->nsinks; i++) {
        weir_tee_stats(h->tee, i, &st);
        s->ss[i].teed = true;
        s->ss[i].dropped = st.dropped_bytes;
        s->ss[i].produced = weir_tee_produced_bytes(h->tee);
        s->ss[i].disconnected = st.disconnected;
    }
}

void half_teardown(struct half *h)
{
    struct stream *s = h->s;

    if (s->sp->tail && h == &s->h[0])
        s->sp->tail->teardown(h);
    if (h->tee) {
        tee_collect(h);
        weir_tee_destroy(h->tee);
    }
    if (h->splice) {
        s->sink_bytes[0] = weir_splice_bytes(h->splice);
        weir_splice_destroy(h->splice);
        h->splice = NULL;
    }
    for (unsigned i = 0; h->sinks && i < s->sp->nsinks; i++) {
        if (!h->sinks[i])
            continue;
        s->sink_bytes[i] = weir_endpoint_bytes(h->sinks[i]);
        weir_endpoint_destroy(h->sinks[i]);
    }
    half_xforms_destroy(h);
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
        weir_loop_post(s->cx->main, &s->done);
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

void half_pipe(struct half *h, struct weir_readable *rs,
               struct weir_writable *ws, int idx)
{
    struct pipe_ctx *pc = stream_pipe_ctx(h->s, idx);
    int rc;

    pc->h = h;
    pc->idx = idx;
    half_hold(h);
    rc = weir_pipe_to(rs, ws, NULL, pipe_done, pc);
    if (rc != WEIR_PENDING)
        pipe_done(pc, rc);
}

static int make_source(struct half *h)
{
    struct stream *s = h->s;
    const struct weir_pipeline *p = s->sp->p;
    struct weir_endpoint_options o = {
        .chunk_size = (uint32_t)p->chunk_size,
        .follow = p->follow || p->source->follow,
        .own_fd = true,
        .counter = &s->bytes_in,
    };
    int fd = s->src_fd;
    struct stat st;

    s->src_fd = -1;
    /* A live stream starts at the file's end. */
    if (s->sp->src_at_end && s->src_regular && fstat(fd, &st) == 0)
        o.offset = (uint64_t)st.st_size;
    if (s->src_regular)
        return weir_endpoint_file_source(&h->src, h->loop, weir_worker_pool(),
                                         fd, &o);
    return weir_endpoint_fd_source(&h->src, h->loop, weir_worker_pool(), fd,
                                   &o);
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
    struct pipe_ctx *pc = stream_pipe_ctx(s, 0);
    struct weir_splice_options o = {
        .length = UINT64_MAX,
        .counter = &s->bytes_out,
    };
    int sock = -1, rc;

    if (s->sp->client_sink) {
        sock = s->sink_fd;
        o.max_length = s->cx->place.splice_serve_max;
    } else {
        o.connect_addr = (const struct sockaddr *)&s->sp->res[0].addr;
        o.connect_addrlen = s->sp->res[0].addrlen;
    }
    pc->h = h;
    pc->idx = 0;
    half_hold(h);
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
                  s->sp->p->name, strerror(-rc));
    return false;
}

void half_start_task(struct weir_task *t)
{
    struct half *h = weir_container_of(t, struct half, start);
    struct stream *s = h->s;

    h->pipes = 1; /* held while building */
    if (s->zero_copy && try_splice(h)) {
        half_put(h);
        return;
    }
    /* A socket to connect first: half_build follows its completion. */
    if (!half_connect(h))
        half_build(h);
}

/* The source side: the source, the transforms when they run here, then
 * the sinks, the channel to the other half, or the maker's last stage. */
static void build_source_side(struct half *h)
{
    struct stream *s = h->s;
    struct weir_readable *rs;
    struct weir_writable *ws;
    int rc;

    if (s->relay)
        relay_prepare(h);
    rc = make_source(h);
    if (rc) {
        s->src_rc = rc;
        return;
    }
    rs = weir_endpoint_readable(h->src);
    if (xf_half(s) == h)
        rs = half_xforms_build(h, rs);
    if (!rs) {
        /* The source's readable was cancelled; nothing to pipe. */
    } else if (s->sp->tail) {
        s->sp->tail->build(h, rs);
    } else if (s->split) {
        rc = weir_chan_tx_open(h->tx, &ws);
        if (rc)
            s->src_rc = rc;
        else
            half_pipe(h, rs, ws, -1);
    } else {
        half_sinks_build(h, rs);
    }
    if (s->relay)
        relay_start(h);
}

void half_build(struct half *h)
{
    struct stream *s = h->s;
    struct weir_readable *rs = NULL;
    int rc;

    if (h == &s->h[0]) {
        build_source_side(h);
    } else {
        rc = weir_chan_rx_open(h->rx, &rs);
        if (rc) {
            s->sink_rc[0] = rc;
        } else {
            if (xf_half(s) == h)
                rs = half_xforms_build(h, rs);
            if (rs)
                half_sinks_build(h, rs);
        }
    }
    half_put(h);
}

void half_stop_task(struct weir_task *t)
{
    struct half *h = weir_container_of(t, struct half, stop);
    struct stream *s = h->s;
    const struct weir_pipeline *p = s->sp->p;

    h->stopped = true;
    /* A connect still in flight ends now (relay.c: no error). */
    if (h->conn_op.pending)
        weir_loop_cancel(h->loop, &h->conn_op);
    /* A file that does not follow ends by itself: let it. */
    if (!h->finished && h->src &&
        !(s->src_regular && !(p->follow || p->source->follow)))
        weir_endpoint_stop(h->src);
    weir_loop_post(s->cx->main, &s->stop_ack);
}
