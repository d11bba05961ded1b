/*
 * pipeline.c - a pipeline at run time (pipeline.h), and its modes: how a
 * pipeline becomes streams, one const table each, chosen once when the
 * pipeline is prepared.
 *
 *   once       one stream, started with the pipeline
 *   serve      a listen sink: one stream per client, from the file
 *   accept     a listen source: one stream per accepted connection (a
 *              proxy when its one sink connects: replies come back)
 *   broadcast  a live source, listen sinks: one stream, every client a
 *              branch of its tee (broadcast.c)
 *   http       http-listen sinks: one stream per client, an HTTP
 *              connection answered from the file or directory source
 */
#include "serve/pipeline.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "conf/address.h"
#include "conf/sockaddr.h"
#include "httpd/access_log.h"
#include "httpd/http_file_cache.h"
#include "httpd/http_mime.h"
#include "sys/log.h"
#include "sys/port_holder.h"

struct pl_mode {
    const char *name;
    bool listen_sinks; /* every sink is a listen address */
    bool listen_source;
    /* Checks what the mode needs of the definition; 0 or -errno, logged. */
    int (*check)(const struct pipeline *pl);
    /* Fills pl->spec for the pipeline's streams. */
    void (*spec)(struct pipeline *pl);
    /* Opens what its streams share, at the prepare; 0 or -errno, logged.
     * pipeline_free closes it. */
    int (*open)(struct pipeline *pl);
    /* Starts what runs without a client; 0 or -ENOMEM. */
    int (*start)(struct pipeline *pl);
    /* A connection accepted on l. */
    void (*client)(struct pipeline *pl, struct listener *l, int fd,
                   const char *peer);
};

/* The pipeline's own streams. */

static void stream_ended(struct stream *s)
{
    struct pipeline *pl = stream_owner(s);

    pl->env->hooks->stream_ended(pl, s, false);
}

static void stream_released(struct stream *s)
{
    struct pipeline *pl = stream_owner(s);

    weir_list_remove(stream_link(s));
    pl->nstreams--;
    alive_drop(&pl->alive);
}

static const struct stream_hooks pipeline_stream_hooks = {
    .ended = stream_ended,
    .released = stream_released,
};

/* A stream of pl's spec; fds as stream_new. Returns 0 or -ENOMEM. */
static int spawn(struct pipeline *pl, int src_fd, int sink_fd, const char *peer,
                 const struct weir_address *via, const struct http_parked *pc)
{
    struct stream *s =
        stream_new(pl->env->cx, &pl->spec, pl, src_fd, sink_fd, peer);

    if (!s)
        return -ENOMEM;
    stream_set_via(s, via);
    if (pc)
        stream_set_carried(s, pc);
    weir_list_push_tail(&pl->streams, stream_link(s));
    pl->nstreams++;
    alive_hold(&pl->alive);
    stream_start(s, -1);
    if (pl->env->hooks->stream_started)
        pl->env->hooks->stream_started(pl, s);
    return 0;
}

/* A client for a stream of its own, unless max_clients are connected. */
static void client_stream(struct pipeline *pl, struct listener *l, int fd,
                          bool as_sink, const char *peer)
{
    const struct weir_address *a = l->addr;

    if (a->max_clients && pl->nstreams + pl->lot.nparked >= a->max_clients) {
        log_warnx("pipeline %s: refused %s: max_clients=%u reached",
                  pl->p->name, peer, a->max_clients);
        pl->clients.refused++;
        close(fd);
        return;
    }
    log_debug("pipeline %s: client %s connected", pl->p->name, peer);
    if (spawn(pl, as_sink ? -1 : fd, as_sink ? fd : -1, peer, a, NULL) != 0) {
        log_warnx("pipeline %s: dropped %s: out of memory", pl->p->name, peer);
        pl->clients.refused++;
        close(fd);
        return;
    }
    pl->clients.accepted++;
}

static bool sink_connects(const struct weir_address *a)
{
    return a->kind == ADDR_TCP || a->kind == ADDR_UNIX;
}

/* Mode "once". */

static void once_spec(struct pipeline *pl)
{
    const struct weir_pipeline *p = pl->p;
    const struct pipeline_env *env = pl->env;

    pl->spec.reconnect = env->sinks_reconnect;
    /* A file source is kept open twice only for a sink that can resend
     * from it after a reconnect. */
    for (size_t i = 0; i < p->nsinks; i++)
        pl->spec.replay = pl->spec.replay || sink_connects(p->sinks[i]);
    /* The daemon's own connecting sink reconnects and resumes, which the
     * splice stage does not: only a run that does not reconnect may. */
    pl->spec.zero_copy = env->cx->paths.zero_copy && env->splice_connects &&
                         p->nsinks == 1 && sink_connects(p->sinks[0]);
}

static int once_start(struct pipeline *pl)
{
    return spawn(pl, -1, -1, NULL, NULL, NULL);
}

/* "FILE:LINE: " of the line that wrote a (or "argument N: "), so a start
 * error points where --check would. */
static const char *at(const struct weir_address *a, char *buf, size_t len)
{
    if (a->loc.file)
        snprintf(buf, len, "%s:%u: ", a->loc.file, a->loc.line);
    else if (a->loc.line)
        snprintf(buf, len, "argument %u: ", a->loc.line);
    else
        buf[0] = '\0';
    return buf;
}

/* Mode "serve". */

static int serve_check(const struct pipeline *pl)
{
    char w[320];

    if (pl->p->source->kind == ADDR_FILE)
        return 0;
    log_errx("%spipeline %s: a listen sink serves a file source; %s is not "
             "one",
             at(pl->p->source, w, sizeof(w)), pl->p->name, pl->p->source->text);
    return -ENOTSUP;
}

static void serve_spec(struct pipeline *pl)
{
    pl->spec.nsinks = 1;
    pl->spec.client_sink = true;
    pl->spec.zero_copy = pl->env->cx->paths.zero_copy_serve;
    pl->spec.share = &pl->share;
}

static void serve_client(struct pipeline *pl, struct listener *l, int fd,
                         const char *peer)
{
    client_stream(pl, l, fd, true, peer);
}

/* Mode "http". */

static void http_spec(struct pipeline *pl)
{
    pl->spec.nsinks = 1;
    pl->spec.client_sink = true;
    pl->spec.http = &pl->http;
}

/* The directory's fd, which every request opens beneath, and the types
 * of the system's mime.types. */
static int http_open(struct pipeline *pl)
{
    const struct weir_address *src = pl->p->source;
    char w[320];
    int rc;

    pl->http.mime = http_mime_load("/etc/mime.types");
    pl->http.logs = calloc(pl->p->nsinks, sizeof(*pl->http.logs));
    if (!pl->http.mime || !pl->http.logs) {
        log_errx("pipeline %s: out of memory", pl->p->name);
        return -ENOMEM;
    }
    for (size_t i = 0; i < pl->p->nsinks; i++) {
        const struct weir_address *a = pl->p->sinks[i];

        if (!a->access_log)
            continue;
        rc = access_log_open(&pl->http.logs[i], a->access_log,
                             a->access_json ? ACCESS_LOG_JSON : ACCESS_LOG_CLF);
        if (rc) {
            log_errx("%spipeline %s: access_log %s: %s", at(a, w, sizeof(w)),
                     pl->p->name, a->access_log, strerror(-rc));
            return rc;
        }
    }
    if (src->kind == ADDR_DIR &&
        (pl->http.root_fd = open(src->path, O_PATH | O_DIRECTORY | O_CLOEXEC)) <
            0) {
        rc = -errno;
        log_errx("%spipeline %s: %s: %s", at(src, w, sizeof(w)), pl->p->name,
                 src->path, strerror(-rc));
        return rc;
    }
    /* Best effort: without them each request opens its file. */
    pl->http.files = calloc(pl->env->cx->nworkers, sizeof(*pl->http.files));
    pl->http.nworkers = pl->http.files ? pl->env->cx->nworkers : 0;
    pl->http.park = http_lot_park;
    pl->http.park_arg = &pl->lot;
    pl->http.park_after_ns = HTTP_PARK_AFTER_NS;
    rc = stream_http_prepare(&pl->http, pl->p);
    if (rc)
        log_errx("pipeline %s: out of memory", pl->p->name);
    return rc;
}

static void http_client(struct pipeline *pl, struct listener *l, int fd,
                        const char *peer)
{
    client_stream(pl, l, fd, true, peer);
}

/* A parked client (serve/http_park.h) is asking again: a stream of its
 * own, as at its accept, already counted against max_clients. */
static void http_wake(void *owner, int fd, const struct http_parked *pc)
{
    struct pipeline *pl = owner;
    struct sockaddr_storage ss;
    socklen_t len = sizeof(ss);
    char peer[80] = "";

    if (getpeername(fd, (struct sockaddr *)&ss, &len) == 0)
        sockaddr_format((const struct sockaddr *)&ss, len, peer, sizeof(peer));
    if (spawn(pl, -1, fd, peer, pc->via, pc) != 0) {
        log_warnx("pipeline %s: dropped %s: out of memory", pl->p->name, peer);
        close(fd);
    }
}

/* Mode "accept". */

static void accept_spec(struct pipeline *pl)
{
    const struct weir_pipeline *p = pl->p;

    /* One connecting sink: a proxy, each client with its own upstream,
     * and what the upstream sends comes back (stream/relay.c). */
    pl->spec.relay = p->nsinks == 1 && sink_connects(p->sinks[0]);
}

static void accept_client(struct pipeline *pl, struct listener *l, int fd,
                          const char *peer)
{
    client_stream(pl, l, fd, false, peer);
}

/* Mode "broadcast". */

static void broadcast_ended(void *owner, struct stream *s, bool handled)
{
    struct pipeline *pl = owner;

    pl->env->hooks->stream_ended(pl, s, handled);
}

static int broadcast_begin(struct pipeline *pl)
{
    struct bcast_env env = {
        .cx = pl->env->cx,
        .p = pl->p,
        .alive = &pl->alive,
        .restarts = pl->env->sources_restart,
        .stream_ended = broadcast_ended,
        .owner = pl,
        .counts = &pl->clients,
    };

    return broadcast_start(&pl->bc, &env);
}

static void broadcast_accepted(struct pipeline *pl, struct listener *l, int fd,
                               const char *peer)
{
    broadcast_client(pl->bc, l->addr, fd, peer);
}

static const struct pl_mode mode_once = {
    .name = "once",
    .spec = once_spec,
    .start = once_start,
};

static const struct pl_mode mode_serve = {
    .name = "serve",
    .listen_sinks = true,
    .check = serve_check,
    .spec = serve_spec,
    .client = serve_client,
};

static const struct pl_mode mode_http = {
    .name = "http",
    .listen_sinks = true,
    .spec = http_spec,
    .open = http_open,
    .client = http_client,
};

static const struct pl_mode mode_accept = {
    .name = "accept",
    .listen_source = true,
    .spec = accept_spec,
    .client = accept_client,
};

static const struct pl_mode mode_broadcast = {
    .name = "broadcast",
    .listen_sinks = true,
    .start = broadcast_begin,
    .client = broadcast_accepted,
};

/* Whether path is a FIFO now. Every open of a FIFO shares one stream of
 * bytes: opened once per client, it would hand each byte to one client
 * only. A device (fifo=yes names both) is opened per client, since an
 * open of /dev/urandom or /dev/kmsg gives that reader a stream of its
 * own, and a broadcast of an endless device would read it with nobody
 * there. */
static bool path_is_fifo(const char *path)
{
    struct stat st;

    return stat(path, &st) == 0 && S_ISFIFO(st.st_mode);
}

/* A source that has no beginning to serve from: a followed file, a FIFO,
 * a connection, a jetstream consumer (one for every client). */
static bool source_live(const struct weir_pipeline *p)
{
    const struct weir_address *a = p->source;

    if (a->kind == ADDR_FILE)
        return p->follow || a->follow || (a->fifo && path_is_fifo(a->path));
    return a->kind == ADDR_TCP || a->kind == ADDR_UNIX ||
           a->kind == ADDR_JETSTREAM;
}

static const struct pl_mode *mode_of(const struct weir_pipeline *p)
{
    if (addr_kind_listens(p->source->kind))
        return &mode_accept;
    for (size_t i = 0; i < p->nsinks; i++)
        if (p->sinks[i]->serve_http)
            return &mode_http;
    for (size_t i = 0; i < p->nsinks; i++)
        if (addr_kind_listens(p->sinks[i]->kind))
            return source_live(p) ? &mode_broadcast : &mode_serve;
    return &mode_once;
}

/* The life of the pipeline. */

static void drained_maybe(struct pipeline *pl)
{
    if (!pl->draining || pl->gone || alive_held(&pl->alive))
        return;
    if (pl->drain.op.pending) {
        weir_loop_timer_stop(pl->env->cx->main, &pl->drain);
        return; /* its -ECANCELED comes back to drain_expired */
    }
    pl->gone = true;
    pl->env->hooks->drained(pl);
}

static void on_idle(struct alive *a)
{
    drained_maybe(weir_container_of(a, struct pipeline, alive));
}

static void on_client(struct listener *l, int fd, const char *peer)
{
    struct pipeline *pl = l->owner;

    if (l->closing) {
        /* Accepted before its cancel landed; the socket went to another
         * pipeline (a reload), or weir is stopping. */
        if (l->fd < 0)
            pl->env->hooks->late_client(pl, l->addr, fd, peer);
        else
            close(fd);
        return;
    }
    pipeline_client(pl, l, fd, peer);
}

/* Whether a file sink can be written, touching nothing: the file is
 * created (or truncated) only when the pipeline starts, so that a start
 * or reload that does not commit leaves every file as it was. */
static int check_file_sink(const struct weir_pipeline *p,
                           const struct weir_address *a)
{
    char *copy = strdup(a->path), w[320];
    int rc = 0;

    if (!copy)
        return -ENOMEM;
    if (access(a->path, W_OK) != 0 &&
        (errno != ENOENT || access(dirname(copy), W_OK | X_OK) != 0)) {
        rc = -errno;
        log_errx("%spipeline %s: cannot write %s: %s", at(a, w, sizeof(w)),
                 p->name, a->path, strerror(errno));
    }
    free(copy);
    return rc;
}

/* At the start: the file sinks are opened (created, truncated when
 * append=no), and an http sink's dead letters (appended to, never
 * truncated: they are the operator's to read). Returns 0 or -errno,
 * logged. */
static int open_file_sinks(struct pipeline *pl)
{
    const struct weir_pipeline *p = pl->p;

    for (size_t i = 0; i < p->nsinks; i++) {
        const struct weir_address *a = p->sinks[i];
        const char *path = a->kind == ADDR_FILE ? a->path : a->dead_letter;
        bool dead = a->kind == ADDR_HTTP || a->kind == ADDR_KAFKA ||
                    a->kind == ADDR_JETSTREAM;
        int fd;

        if ((a->kind != ADDR_FILE && !(dead && path)) ||
            pl->res[i].file_fd >= 0)
            continue;
        /* O_NONBLOCK: a path that is a FIFO with no reader fails here
         * (ENXIO) rather than holding the main thread in open(2). */
        fd = open(path,
                  O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC | O_NONBLOCK |
                      (a->append || dead ? 0 : O_TRUNC),
                  dead ? 0600 : 0644);
        if (fd < 0 && errno == ENXIO) {
            log_errx("pipeline %s: %s is a FIFO with no reader", p->name, path);
            return -ENXIO;
        }
        if (fd < 0) {
            char w[320];
            int err = errno;

            log_errx("%spipeline %s: %s: %s", at(a, w, sizeof(w)), p->name,
                     path, strerror(err));
            return -err;
        }
        /* Writes go through the loop, which waits for room itself. */
        if (fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK) != 0) {
            int rc = -errno;

            log_err("pipeline %s: %s", p->name, path);
            close(fd);
            return rc;
        }
        pl->res[i].file_fd = fd;
    }
    return 0;
}

/* A host name (not an address literal) of a sink of a pipeline's one
 * reconnecting stream: its socket sink resolves it (stream/sinks.c). The
 * other connecting sinks (a proxy's upstream, weir pipe's sink, the
 * splice stage) are resolved here, once. */
static bool names_deferred(const struct pipeline *pl,
                           const struct weir_address *a)
{
    unsigned char buf[sizeof(struct in6_addr)];

    return a->kind == ADDR_TCP && pl->mode == &mode_once &&
           pl->spec.reconnect && !pl->spec.zero_copy &&
           inet_pton(AF_INET, a->host, buf) != 1 &&
           inet_pton(AF_INET6, a->host, buf) != 1;
}

static int open_sink(struct pipeline *pl, size_t i)
{
    const struct weir_pipeline *p = pl->p;
    const struct weir_address *a = p->sinks[i];
    int rc;

    if (a->kind == ADDR_FILE) {
        return check_file_sink(p, a);
    } else if (names_deferred(pl, a)) {
        /* The sink looks the name up itself, at every connect and off
         * this thread: a name that does not resolve now is an outage
         * that the sink rides out, not a failed start. */
        pl->res[i].host = a->host;
        pl->res[i].port = a->port;
    } else if (sink_connects(a)) {
        rc = sockaddr_resolve(a, &pl->res[i].addr, &pl->res[i].addrlen);
        if (rc) {
            char w[320];

            log_errx("%spipeline %s: cannot resolve %s: %s",
                     at(a, w, sizeof(w)), p->name, a->text, strerror(-rc));
            return rc;
        }
    }
    return 0;
}

static void listener_add(struct pipeline *pl, const struct weir_address *a)
{
    pl->ls[pl->nls++] = (struct listener){
        .addr = a,
        .name = pl->p->name,
        .loop = pl->env->cx->main,
        .alive = &pl->alive,
        .on_client = on_client,
        .owner = pl,
        .fd = -1,
    };
    stream_tcp_options(pl->p, &pl->ls[pl->nls - 1].tcp);
}

static int prepare_sinks(struct pipeline *pl)
{
    const struct weir_pipeline *p = pl->p;
    int rc, first = 0;
    char w[320];

    /* Every sink is tried, so that a start reports all its errors. */
    for (size_t i = 0; i < p->nsinks; i++) {
        const struct weir_address *a = p->sinks[i];

        if (addr_kind_listens(a->kind)) {
            listener_add(pl, a);
            continue;
        }
        if (pl->mode->listen_sinks) {
            log_errx("%spipeline %s: a listen sink must be the pipeline's "
                     "only kind of sink (%s)",
                     at(a, w, sizeof(w)), p->name, a->text);
            rc = -ENOTSUP;
        } else {
            rc = open_sink(pl, i);
        }
        if (rc && !first)
            first = rc;
    }
    return first;
}

int pipeline_prepare(struct pipeline **out, const struct pipeline_env *env,
                     const struct weir_pipeline *p, struct conf_ref *cref,
                     struct listener *(*taken)(void *owner,
                                               const struct weir_address *a))
{
    struct pipeline *pl = calloc(1, sizeof(*pl));
    size_t n = p->nsinks;
    int rc;

    *out = pl;
    if (!pl)
        return -ENOMEM;
    pl->env = env;
    pl->p = p;
    pl->cref = conf_ref_get(cref);
    pl->mode = mode_of(p);
    weir_list_init(&pl->streams);
    weir_list_init(&pl->link);
    alive_init(&pl->alive, env->alive, on_idle);
    pl->res = calloc(n, sizeof(*pl->res));
    pl->ls = calloc(n + 1, sizeof(*pl->ls));
    if (!pl->res || !pl->ls)
        return -ENOMEM;
    for (size_t i = 0; i < n; i++)
        pl->res[i].file_fd = -1;
    pl->http.root_fd = -1;
    http_lot_init(&pl->lot, env->cx->main, &pl->alive, &pl->http.counts,
                  http_wake, pl);
    pl->spec = (struct stream_spec){
        .p = p,
        .res = pl->res,
        .nsinks = (unsigned)n,
        .log_connect = true,
        .hooks = &pipeline_stream_hooks,
    };
    if (pl->mode->spec)
        pl->mode->spec(pl);
    if (env->checkpoints && pl->mode == &mode_once &&
        p->source->kind == ADDR_FILE && (p->follow || p->source->follow)) {
        const struct weir_daemon_conf *d = &cref->conf->daemon;

        pl->spec.ckpt =
            ckpt_new(env->cx->main, &pl->alive, p, d->state_directory,
                     d->checkpoint_interval_ms, pl->res);
        if (!pl->spec.ckpt)
            return -ENOMEM;
    }
    if (env->checkpoints && pl->mode == &mode_once &&
        p->source->kind == ADDR_FILE_SET) {
        const struct weir_daemon_conf *d = &cref->conf->daemon;

        pl->spec.ckset =
            ckpt_set_new(env->cx->main, &pl->alive, p, d->state_directory,
                         d->checkpoint_interval_ms, pl->res);
        if (!pl->spec.ckset)
            return -ENOMEM;
    }
    if (pl->mode->check && (rc = pl->mode->check(pl)) != 0)
        return rc;
    if (pl->mode->open && (rc = pl->mode->open(pl)) != 0)
        return rc;
    /* On: the listeners' errors are reported with the sinks'. */
    rc = prepare_sinks(pl);
    if (pl->mode->listen_source)
        listener_add(pl, p->source);
    for (unsigned j = 0; j < pl->nls; j++) {
        struct listener *l = &pl->ls[j];
        char w[320], comm[64];
        pid_t holder;
        int err;

        l->from = taken ? taken(env->owner, l->addr) : NULL;
        if (l->from)
            continue;
        err = listener_open(l, env->lfds);
        if (err == -EADDRINUSE && l->addr->kind == ADDR_TCP_LISTEN &&
            (holder = port_holder(l->addr->port, comm, sizeof(comm))) > 0)
            log_errx("%spipeline %s: cannot listen on %s: it is in use by "
                     "pid %ld (%s)",
                     at(l->addr, w, sizeof(w)), p->name, l->addr->text,
                     (long)holder, comm);
        else if (err)
            log_errx("%spipeline %s: cannot listen on %s: %s",
                     at(l->addr, w, sizeof(w)), p->name, l->addr->text,
                     strerror(-err));
        if (err && !rc)
            rc = err;
    }
    return rc;
}

int pipeline_start(struct pipeline *pl)
{
    int rc = 0;

    /* Held while starting: a pipeline that ends at once (a once stream
     * whose source cannot be opened) is idle only after this. */
    alive_hold(&pl->alive);
    rc = open_file_sinks(pl);
    for (unsigned j = 0; j < pl->nls; j++) {
        struct listener *l = &pl->ls[j];

        if (l->from) {
            listener_take_over(l, l->from);
            l->from = NULL;
        }
        listener_arm(l);
    }
    if (rc == 0 && pl->mode->start && (rc = pl->mode->start(pl)) != 0)
        log_errx("pipeline %s: out of memory", pl->p->name);
    alive_drop(&pl->alive);
    return rc;
}

void pipeline_client(struct pipeline *pl, struct listener *l, int fd,
                     const char *peer)
{
    pl->mode->client(pl, l, fd, peer);
    if (pl->env->serve_once)
        listener_close(l);
}

unsigned pipeline_cut(struct pipeline *pl)
{
    struct weir_list *pos, *tmp;
    unsigned cut = 0;

    weir_list_for_each(pos, tmp, &pl->streams) cut +=
        stream_cut(stream_of_link(pos));
    cut += pl->lot.nparked;
    http_lot_close(&pl->lot);
    return cut + broadcast_cut(pl->bc);
}

static void drain_expired(struct weir_op *op, int res, uint32_t flags)
{
    struct pipeline *pl = weir_container_of(op, struct pipeline, drain.op);
    unsigned left = pipeline_streams(pl) + broadcast_clients(pl->bc);

    (void)flags;
    if (res != -ECANCELED && left > 0)
        log_warnx("pipeline %s: %u stream%s still running after the drain "
                  "timeout; closed %u",
                  pl->p->name, left, left == 1 ? "" : "s", pipeline_cut(pl));
    drained_maybe(pl);
}

void pipeline_stop(struct pipeline *pl)
{
    struct weir_list *pos, *tmp;

    for (unsigned j = 0; j < pl->nls; j++)
        listener_close(&pl->ls[j]);
    weir_list_for_each(pos, tmp, &pl->streams) stream_stop(stream_of_link(pos));
    http_lot_close(&pl->lot);
    broadcast_stop(pl->bc);
}

void pipeline_drain(struct pipeline *pl, uint64_t timeout_ms)
{
    /* Held meanwhile, so that a pipeline with nothing left is drained
     * by the drop below. */
    alive_hold(&pl->alive);
    pl->draining = true;
    pipeline_stop(pl);
    if (pipeline_streams(pl) + broadcast_clients(pl->bc) > 0) {
        pl->drain.op.fn = drain_expired;
        weir_loop_timer_start(pl->env->cx->main, &pl->drain,
                              timeout_ms * 1000000ull);
    }
    alive_drop(&pl->alive);
}

struct listener *pipeline_listener(struct pipeline *pl,
                                   const struct weir_address *a)
{
    for (unsigned j = 0; j < pl->nls; j++)
        if (pl->ls[j].fd >= 0 && !pl->ls[j].closing &&
            listener_same_addr(pl->ls[j].addr, a))
            return &pl->ls[j];
    return NULL;
}

unsigned pipeline_streams(const struct pipeline *pl)
{
    return pl->nstreams + pl->lot.nparked + broadcast_streams(pl->bc);
}

uint64_t pipeline_bytes_live(const struct pipeline *pl)
{
    const struct weir_list *pos;
    uint64_t b = broadcast_bytes_live(pl->bc);

    for (pos = pl->streams.next; pos != &pl->streams; pos = pos->next)
        b += stream_sink_out(stream_of_link(pos), 0);
    return b;
}

void pipeline_each_stream(const struct pipeline *pl,
                          void (*fn)(void *arg, const struct stream *s),
                          void *arg)
{
    const struct weir_list *pos;

    for (pos = pl->streams.next; pos != &pl->streams; pos = pos->next)
        fn(arg, stream_of_link(pos));
    broadcast_each_stream(pl->bc, fn, arg);
}

unsigned pipeline_clients(const struct pipeline *pl)
{
    const struct weir_list *pos;
    unsigned n = broadcast_clients(pl->bc);

    /* In the modes that take clients, each stream of its own is one. */
    for (pos = pl->streams.next; pos != &pl->streams; pos = pos->next) {
        const struct stream *s = stream_of_link(pos);

        n += stream_peer(s)[0] && !stream_done(s);
    }
    return n;
}

void pipeline_free(struct pipeline *pl)
{
    if (!pl)
        return;
    for (unsigned j = 0; pl->ls && j < pl->nls; j++)
        listener_free(&pl->ls[j]);
    for (size_t i = 0; pl->res && i < pl->p->nsinks; i++)
        if (pl->res[i].file_fd >= 0)
            close(pl->res[i].file_fd);
    if (pl->http.root_fd >= 0)
        close(pl->http.root_fd);
    http_mime_free(pl->http.mime);
    for (size_t i = 0; pl->http.logs && i < pl->p->nsinks; i++)
        access_log_close(pl->http.logs[i]);
    free(pl->http.logs);
    free(pl->http.conn_opts);
    for (unsigned w = 0; w < pl->http.nworkers; w++)
        http_file_cache_free(pl->http.files[w]);
    free(pl->http.files);
    free(pl->res);
    free(pl->ls);
    broadcast_free(pl->bc);
    stream_share_release(&pl->share);
    ckpt_free(pl->spec.ckpt);
    ckpt_set_free(pl->spec.ckset);
    conf_ref_put(pl->cref);
    free(pl);
}
