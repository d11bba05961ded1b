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
#include <unistd.h>

#include "stream/budget.h"
#include "conf/address.h"
#include "stream/stream.h"
#include "sys/log.h"

/* The half the transforms run on. */
static struct half *xf_half(struct stream *s)
{
    if (s->sp->p->ntransforms == 0)
        return NULL;
    return s->split && s->cx->place.xf_side == PLACE_SINK ? &s->h[1] : &s->h[0];
}

/* What a followed file does, for the operator. */
static void source_event(void *arg, enum weir_endpoint_event ev, int err,
                         uint64_t off)
{
    struct stream *s = arg;
    const struct weir_pipeline *p = s->sp->p;

    (void)err;
    if (ev == WEIR_EP_ROTATED || ev == WEIR_EP_TRUNCATED)
        ckpt_file_left(s);
    if (ev == WEIR_EP_ROTATED)
        log_info("pipeline %s: %s was rotated: read the old file to its "
                 "end (%llu bytes), now reading the new one from its start",
                 p->name, p->source->path, (unsigned long long)off);
    else if (ev == WEIR_EP_TRUNCATED)
        log_info("pipeline %s: %s was truncated (at byte %llu of it): "
                 "reading it again from its start",
                 p->name, p->source->path, (unsigned long long)off);
    else if (ev == WEIR_EP_APPEARED)
        log_info("pipeline %s: %s exists now: reading it", p->name,
                 p->source->path);
}

static int make_source(struct half *h)
{
    struct stream *s = h->s;
    const struct weir_pipeline *p = s->sp->p;
    struct weir_file_source_options o = {
        .chunk_size = (uint32_t)p->chunk_size,
        .follow = p->follow || p->source->follow,
        .own_fd = !s->src_file, /* a shared file stays open */
        .counter = &s->bytes_in,
    };
    struct weir_fd_source_options fo = {
        .chunk_size = o.chunk_size,
        .own_fd = o.own_fd,
        .counter = o.counter,
    };
    int fd = s->src_fd;
    struct stat st;
    int rc;

    stream_peer_options(p, p->source, &fo.peer);
    if (o.follow && p->source->kind == ADDR_FILE) {
        o.follow_path = p->source->path;
        o.on_event = source_event;
        o.event_arg = s;
    }

    s->src_fd = -1;
    o.offset = s->src_offset;
    if (p->source->tls && !s->src_regular) {
        if ((rc = half_tls_open(h, p->source, fd, &h->tls_src)) != 0) {
            close(fd);
            return rc;
        }
        fo.tls = h->tls_src;
    }
    /* A live stream starts at the file's end. */
    if (s->sp->src_at_end && s->src_regular && fstat(fd, &st) == 0)
        o.offset = (uint64_t)st.st_size;
    if (s->src_regular)
        return weir_endpoint_file_source(&h->src, h->loop, weir_worker_pool(),
                                         fd, &o);
    return weir_endpoint_fd_source(&h->src, h->loop, weir_worker_pool(), fd,
                                   &fo);
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
    const struct weir_address *sink = s->sp->p->sinks[0];
    struct weir_file_send_options o = {
        .length = UINT64_MAX,
        .counter = &s->bytes_out,
        .send_timeout_ns = s->sp->p->send_timeout_ms * 1000 * 1000,
    };
    int sock = -1, rc;

    /* A served client has its listener's options (as stream_peer_options
     * says); the stage sets them on a connection of its own. */
    if (!addr_kind_listens(sink->kind))
        stream_tcp_options(s->sp->p, &o.tcp);

    if (s->sp->client_sink) {
        sock = s->sink_fd;
        o.max_length = s->cx->place.splice_serve_max;
        o.sendfile = s->cx->place.serve_sendfile;
        o.keep_fds = s->sink_borrowed;
        o.linger_ns = STREAM_LINGER_NS;
    } else {
        o.connect_addr = (const struct sockaddr *)&s->sp->res[0].addr;
        o.connect_addrlen = s->sp->res[0].addrlen;
    }
    pc->h = h;
    pc->idx = 0;
    half_hold(h);
    rc = weir_file_send_start(&h->splice, h->loop, s->src_fd, sock, &o,
                              splice_done, pc);
    if (rc == 0) {
        /* Kept fds stay the stream's: a shared file's, or its own. */
        if (!o.keep_fds)
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
    /* A client's stream promises its buffers first: a pool promised to
     * running streams refuses it rather than starve them. */
    if (s->peer[0] && h == &s->h[0] && !budget_take(h)) {
        s->refused = true;
        s->src_rc = -ENOBUFS;
        s->sink_rc[0] = -ENOBUFS;
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
        rc = weir_channel_tx_open(h->tx, &ws);
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
        rc = weir_channel_rx_open(h->rx, &rs);
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
    /* Sinks close without waiting for their peers now. */
    for (unsigned i = 0; !h->finished && h->sinks && i < s->sp->nsinks; i++)
        if (h->sinks[i])
            weir_endpoint_stop(h->sinks[i]);
    weir_loop_post(s->cx->main, &s->stop_ack);
}

/* The owner stopped waiting: the socket sinks give up (a sink still
 * connecting or waiting to retry would otherwise hold the stream). */
void half_cut_task(struct weir_task *t)
{
    struct half *h = weir_container_of(t, struct half, cut);
    struct stream *s = h->s;

    for (unsigned i = 0; !h->finished && h->sinks && i < s->sp->nsinks; i++)
        if (h->sinks[i])
            weir_endpoint_cut(h->sinks[i]);
    weir_loop_post(s->cx->main, &h->cut_ack);
}

static void connected(struct weir_op *op, int res, uint32_t flags)
{
    struct half *h = weir_container_of(op, struct half, conn_op);
    struct stream *s = h->s;
    const struct weir_pipeline *p = s->sp->p;

    (void)flags;
    s->conn_fd = -1;
    if (res == 0 && !h->stopped) {
        if (s->relay)
            log_debug("pipeline %s: client %s: connected to %s", p->name,
                      s->peer, p->sinks[0]->text);
        half_build(h);
        return;
    }
    /* Stopped while connecting: the stream ends without an error. */
    if (h->stopped)
        res = 0;
    if (s->relay) {
        /* The client's closing line names the upstream and the error. */
        if (res)
            log_debug("pipeline %s: client %s: cannot connect to %s: %s",
                      p->name, s->peer, p->sinks[0]->text, strerror(-res));
        close(s->up_fd);
        s->up_fd = -1;
        s->sink_rc[0] = res;
    } else {
        /* A maker that retries logs once per outage instead. */
        if (res && s->sp->log_connect)
            log_warnx("pipeline %s: cannot connect to source %s: %s", p->name,
                      p->source->text, strerror(-res));
        s->src_rc = res;
    }
    half_put(h);
}

bool half_connect(struct half *h)
{
    struct stream *s = h->s;
    int rc;

    if (h != &s->h[0] || s->conn_fd < 0)
        return false;
    h->conn_op.fn = connected;
    rc = weir_loop_connect(h->loop, &h->conn_op, s->conn_fd,
                           (const struct sockaddr *)&s->conn_addr,
                           s->conn_addrlen);
    if (rc)
        connected(&h->conn_op, rc, 0);
    return true;
}
