/*
 * build.c - a stream on its worker: built from the start task (after a
 * connect, when it needs one) and its pipes started; asked to stop, or
 * its sockets cut, from the main thread's tasks. It is torn down once
 * its pipes have all ended (worker.c).
 *
 * A stream is core streams joined by core pipes on one worker: the
 * source endpoint's readable, the transforms (core transforms from
 * lib/xform), then the sinks (sinks.c) or the last stage the stream's
 * maker supplied (stream_tail).
 */
#include "stream/build.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "conf/address.h"
#include "stream/budget.h"
#include "stream/checkpoint_set.h"
#include "stream/http_serve.h"
#include "stream/relay.h"
#include "stream/sinks.h"
#include "stream/stream_impl.h"
#include "stream/watch.h"
#include "stream/xforms.h"
#include "sys/log.h"

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

/* What the files of a glob source do, for the operator: one line each.
 * A file found is news only when debugging (a directory of thousands
 * would flood the log at a start). */
static void set_event(void *arg, enum weir_file_set_event ev, const char *path,
                      int err, uint64_t off)
{
    struct stream *s = arg;
    const struct weir_pipeline *p = s->sp->p;

    if (ev == WEIR_FS_FOUND || ev == WEIR_FS_ROTATED ||
        ev == WEIR_FS_TRUNCATED || ev == WEIR_FS_COPY_READ)
        stream_ckpt_soon(s);
    switch (ev) {
    case WEIR_FS_FOUND:
        log_debug("pipeline %s: found %s: reading it from byte %llu", p->name,
                  path, (unsigned long long)off);
        break;
    case WEIR_FS_ROTATED:
        log_info("pipeline %s: %s was rotated: reading it to its end, and "
                 "until it has been quiet for rotate_wait",
                 p->name, path);
        break;
    case WEIR_FS_TRUNCATED:
        log_info("pipeline %s: %s was truncated (at byte %llu): its copy, "
                 "if one is found, is read first, then it from its start",
                 p->name, path, (unsigned long long)off);
        break;
    case WEIR_FS_COPY_READ:
        log_info("pipeline %s: %s: the copy of a truncated file read to "
                 "its end",
                 p->name, path);
        break;
    case WEIR_FS_DONE:
        /* An import (follow = no) finishes every file: that is no news. */
        if (p->follow || p->source->follow)
            log_info("pipeline %s: %s read to its end and closed", p->name,
                     path);
        else
            log_debug("pipeline %s: %s read to its end", p->name, path);
        break;
    case WEIR_FS_LOST:
        log_warnx("pipeline %s: %s: %llu bytes could not be read (deleted "
                  "or truncated before weir read them, and no copy found)",
                  p->name, path, (unsigned long long)off);
        break;
    case WEIR_FS_NO_INOTIFY:
        log_warnx("pipeline %s: no inotify (%s): new files are found by "
                  "looking again every %llu ms (rescan_interval)",
                  p->name, strerror(err),
                  (unsigned long long)p->rescan_interval_ms);
        break;
    case WEIR_FS_OPEN_FAIL:
        log_warnx("pipeline %s: cannot open %s: %s", p->name, path,
                  strerror(err));
        break;
    }
}

/* A glob source (weir/file_set.h) with the pipeline's keys. */
static int make_file_set(struct stream *s)
{
    const struct weir_pipeline *p = s->sp->p;
    const uint64_t ms = 1000 * 1000;
    struct weir_file_set_options o = {
        .include = (const char *const *)&p->source->path,
        .ninclude = 1,
        .exclude = (const char *const *)p->exclude,
        .nexclude = p->nexclude,
        .read_from_end = p->read_from_end,
        .once = !(p->follow || p->source->follow),
        .ignore_older_ns = p->ignore_older_ms * ms,
        /* The options' 0 is their default (5 s); the operator's 0 is no
         * wait at all, the shortest the set can be given. */
        .rotate_wait_ns = p->rotate_wait_ms ? p->rotate_wait_ms * ms : 1,
        .line_timeout_ns = p->line_timeout_ms * ms,
        .rescan_ns = p->rescan_interval_ms * ms,
        .max_open_files = p->max_open_files,
        .chunk_size = (uint32_t)p->chunk_size,
        .records =
            {
                .max_record = (uint32_t)p->max_record,
                .on_long =
                    p->on_long_skip ? WEIR_RECORDS_SKIP : WEIR_RECORDS_TRUNCATE,
                .multiline_start = p->multiline_start,
                .format = p->format_json ? WEIR_RECORDS_JSON : WEIR_RECORDS_RAW,
            },
        .resume = s->sp->ckset ? ckpt_set_resume : NULL,
        .resume_arg = s->sp->ckset,
        .on_event = set_event,
        .event_arg = s,
        .counter = &s->bytes_in,
    };
    struct weir_file_set_file *known = NULL;
    int rc;

    /* Renamed or copied while weir was down: found by the file set. */
    o.nknown = ckpt_set_known(s->sp->ckset, &known);
    o.known = known;
    rc = weir_endpoint_file_set(&s->home.src, s->home.loop, weir_worker_pool(),
                                &o);
    free(known);

    if (rc)
        log_warnx("pipeline %s: cannot follow %s: %s", p->name, p->source->path,
                  strerror(-rc));
    return rc;
}

/* What a jetstream source's consumer does, for the operator: one line
 * per change. */
static void js_event(void *arg, enum weir_endpoint_event ev, int err,
                     uint64_t off)
{
    struct stream *s = arg;
    const struct weir_pipeline *p = s->sp->p;

    (void)off;
    if (ev == WEIR_EP_JETSTREAM_READ)
        stream_ckpt_soon(s); /* what the sinks took, acknowledged soon */
    else if (ev == WEIR_EP_JETSTREAM_FAILING)
        log_warnx("pipeline %s: source %s: cannot read its consumer: %s; "
                  "trying again",
                  p->name, p->source->text, weir_jetstream_strerror(err));
    else if (ev == WEIR_EP_CONNECTED)
        log_info("pipeline %s: source %s: reading stream %s through "
                 "consumer %s",
                 p->name, p->source->text, p->source->js_stream,
                 p->source->consumer);
}

/* A jetstream source: its thread fdatasyncs the file sinks before each
 * acknowledgement it sends. */
static int make_jetstream_source(struct stream *s)
{
    const struct weir_pipeline *p = s->sp->p;
    const struct weir_address *a = p->source;
    int *fds = calloc(s->sp->nsinks + 1, sizeof(int));
    struct weir_jetstream_source_options o = {
        .hwm = p->high_water_mark,
        .ack_wait_ns = a->ack_wait_ms * 1000 * 1000,
        .counter = &s->bytes_in,
        .stats = &s->src_js,
        .servers = a->servers,
        .stream = a->js_stream,
        .consumer = a->consumer,
        .filter = a->subject,
        .creds = a->creds,
        .ca = a->ca,
        .sync_fds = fds,
        .on_event = js_event,
        .event_arg = s,
    };
    int rc;

    if (!fds)
        return -ENOMEM;
    for (unsigned i = 0; i < s->sp->nsinks; i++)
        if (p->sinks[i]->kind == ADDR_FILE && s->sp->res &&
            s->sp->res[i].file_fd >= 0)
            fds[o.nsync_fds++] = s->sp->res[i].file_fd;
    rc = weir_endpoint_jetstream_source(&s->home.src, s->home.loop,
                                        weir_worker_pool(), &o);
    free(fds);
    if (rc)
        log_warnx("pipeline %s: cannot read %s: %s", p->name, a->text,
                  strerror(-rc));
    return rc;
}

static int make_source(struct stream *s)
{
    struct stream_home *h = &s->home;
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

    if (s->src_set)
        return make_file_set(s);
    if (s->src_remote)
        return make_jetstream_source(s);
    stream_peer_options(p, p->source, &fo.peer);
    if (o.follow && p->source->kind == ADDR_FILE) {
        o.follow_path = p->source->path;
        o.on_event = source_event;
        o.event_arg = s;
    }

    s->src_fd = -1;
    o.offset = s->src_offset;
    if (p->source->tls && !s->src_regular) {
        if ((rc = stream_tls_open(s, p->source, fd, &h->tls_src)) != 0) {
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

    pc->s->sink_rc[0] = rc;
    stream_put(pc->s);
}

/* The zero-copy stage, when it can be had: true when it took the stream
 * (then it owns the fds), false to take the stream path. */
static bool try_splice(struct stream *s)
{
    struct stream_home *h = &s->home;
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
        o.max_length = s->cx->paths.splice_serve_max;
        o.sendfile = s->cx->paths.serve_sendfile;
        o.keep_fds = s->sink_borrowed;
        o.linger_ns = STREAM_LINGER_NS;
    } else {
        o.connect_addr = (const struct sockaddr *)&s->sp->res[0].addr;
        o.connect_addrlen = s->sp->res[0].addrlen;
    }
    pc->s = s;
    pc->idx = 0;
    stream_hold(s);
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

/* The source, the transforms, then the sinks or the maker's last stage;
 * the build's hold goes once they are started. */
static void build(struct stream *s)
{
    struct stream_home *h = &s->home;
    struct weir_readable *rs;
    int rc;

    if (s->relay)
        relay_prepare(s);
    rc = make_source(s);
    if (rc) {
        s->src_rc = rc;
        stream_put(s);
        return;
    }
    rs = weir_endpoint_readable(h->src);
    if (s->sp->p->ntransforms)
        rs = stream_xforms_build(s, rs);
    if (!rs) {
        /* The source's readable was cancelled; nothing to pipe. */
    } else if (s->sp->tail) {
        s->sp->tail->build(s, rs);
    } else {
        stream_sinks_build(s, rs);
    }
    if (s->relay)
        relay_start(s);
    stream_put(s);
}

static void connected(struct weir_op *op, int res, uint32_t flags)
{
    struct stream *s = weir_container_of(op, struct stream, home.conn_op);
    struct stream_home *h = &s->home;
    const struct weir_pipeline *p = s->sp->p;

    (void)flags;
    s->conn_fd = -1;
    if (res == 0 && !h->stopped) {
        if (s->relay)
            log_debug("pipeline %s: client %s: connected to %s", p->name,
                      s->peer, p->sinks[0]->text);
        build(s);
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
    stream_put(s);
}

/* A socket to connect first (the upstream of a relayed stream, or a
 * connecting source): true when the build follows its completion, or the
 * stream ends. */
static bool connect_first(struct stream *s)
{
    struct stream_home *h = &s->home;
    int rc;

    if (s->conn_fd < 0)
        return false;
    h->conn_op.fn = connected;
    rc = weir_loop_connect(h->loop, &h->conn_op, s->conn_fd,
                           (const struct sockaddr *)&s->conn_addr,
                           s->conn_addrlen);
    if (rc)
        connected(&h->conn_op, rc, 0);
    return true;
}

void stream_start_task(struct weir_task *t)
{
    struct stream *s = weir_container_of(t, struct stream, home.start);

    s->home.pipes = 1; /* held while building */
    if (s->sp->http) {
        http_serve_start(s);
        stream_put(s);
        return;
    }
    if (s->zero_copy && try_splice(s)) {
        stream_put(s);
        return;
    }
    /* A client's stream promises its buffers first: a pool promised to
     * running streams refuses it rather than starve them. */
    if (s->peer[0] && !budget_take(s)) {
        s->refused = true;
        s->src_rc = -ENOBUFS;
        s->sink_rc[0] = -ENOBUFS;
        stream_put(s);
        return;
    }
    /* A socket to connect first: build follows its completion. */
    if (!connect_first(s))
        build(s);
}

void stream_stop_task(struct weir_task *t)
{
    struct stream *s = weir_container_of(t, struct stream, home.stop);
    struct stream_home *h = &s->home;
    const struct weir_pipeline *p = s->sp->p;

    h->stopped = true;
    if (h->http)
        http_conn_stop(h->http);
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
void stream_cut_task(struct weir_task *t)
{
    struct stream *s = weir_container_of(t, struct stream, home.cut);
    struct stream_home *h = &s->home;

    h->cutting = true;
    for (unsigned i = 0; !h->finished && h->sinks && i < s->sp->nsinks; i++)
        if (h->sinks[i])
            weir_endpoint_cut(h->sinks[i]);
    weir_loop_post(s->cx->main, &h->cut_ack);
}
