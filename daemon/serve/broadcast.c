/*
 * broadcast.c - a live source (a followed file, a connecting tcp or unix
 * source) with listen sinks: one shared stream whose last stage is a live
 * tee (lib/core/tee.c); each accepted client becomes a branch of that tee
 * and a socket sink on the stream's worker, and sees what the source reads
 * from then on. A client that leaves takes its branch away; with no client
 * the tee reads on and drops, since a broadcast keeps no backlog. A client
 * too slow for its queue meets its listen address's on_full policy: block
 * holds the source (and so every other client) back, drop-newest and
 * drop-oldest lose data for that client only, disconnect evicts it with
 * one log line.
 *
 * The source comes and goes. When a tcp or unix source's peer closes or
 * fails, the tee ends its clients cleanly and the main thread starts a
 * new stream after a backoff (100 ms, doubling up to 10 s while attempts
 * fail, back to 100 ms once one came up), with one log line per outage.
 * A client that arrives while no source is up (at start too) is held on
 * the main thread and joins when the next one comes up, however long that
 * takes; a drain or stop closes the held ones. Every stream of one
 * broadcast runs on the same worker, so the worker's side of struct bcast
 * passes from one stream to the next on one thread, and a stream whose
 * source ended can finish its clients while the next one runs.
 *
 * Compressed output: when the last transform compresses (gzip, zstd), a
 * client joins at a sync point, or it could not decode what it gets.
 * weir_xform_sync ends the gzip member or zstd frame; once it answered 0
 * and everything the compressor gave has gone through the tee, the branch
 * is added, and its first byte opens a member or frame. A sync that cannot
 * finish now (the compressor is on a chunk or parked, or a block client
 * holds the tee back) is retried from the stream's watch timer every
 * JOIN_RETRY_NS: never a spin.
 *
 * Threads: struct bcast and the clients' list are the main thread's,
 * except the fields marked "worker", which only the broadcast's worker
 * touches (joins are posted there; a join that finds no source up goes
 * back to the main thread, which holds it again).
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "serve/broadcast.h"
#include "sys/log.h"

#define BACKOFF_MIN_NS (100ull * 1000 * 1000)
#define BACKOFF_MAX_NS (10ull * 1000 * 1000 * 1000)
/* The clients' watch keeps the sinks' pace (sink_watch_step counts in
 * SINK_WATCH_NS steps); joins waiting for a sync point retry faster. */
#define WATCH_NS      SINK_WATCH_NS
#define JOIN_RETRY_NS (20ull * 1000 * 1000)

struct bclient {
    struct bcast *bc;
    const struct weir_address *addr; /* the listen sink it came through */
    unsigned sink;                   /* that sink's index in the pipeline */
    char peer[80];
    int fd;      /* handed to the sink endpoint on the worker */
    int kill_fd; /* main: a dup, to cut the connection */
    struct weir_task join;
    struct weir_task done;
    bool held;                   /* main: waiting for a source */
    struct bclient *next, *prev; /* main: bc's list */
    /* Worker. */
    struct bhub *hub; /* the stream it joined */
    struct weir_endpoint *ep;
    int cut_fd; /* a dup, to cut the connection at an eviction */
    unsigned branch;
    struct sink_watch sw;          /* on_full=block: held the source? */
    struct bclient *wnext, *wprev; /* bc's joined or waiting list */
    /* Written by the worker before `done` is posted. */
    int rc;
    uint64_t bytes, lost, blocked_ns;
    bool evicted, refused;
    bool bounced; /* no source was up: the main thread holds it again */
};

/* Worker: one stream's tee and its clients' way in. */
struct bhub {
    struct bcast *bc;
    struct half *h;
    struct weir_tee *tee;
    struct weir_xform *zx; /* the compressor joins sync, or NULL */
    int64_t watched;       /* the clients' last watch */
    bool going;            /* go_task resumed the tee */
    bool ended;            /* the source ended */
};

struct bcast {
    struct bcast_env env;
    struct stream_spec spec; /* its streams' */
    struct weir_list
        streams; /* main: every stream of the source still running */
    unsigned nstreams;
    unsigned worker; /* every stream's */
    bool placed;     /* worker is chosen */
    unsigned nclients;
    struct bclient *clients;
    /* Main. */
    struct stream *s; /* the current source's stream; NULL between two */
    bool up;          /* its tee takes clients */
    bool stopped;     /* drained or stopping: no more sources */
    bool dead;        /* the source ended for good: clients are refused */
    bool outage;      /* the source is down, and that was logged */
    uint64_t backoff_ns;
    struct weir_timer retry;
    struct weir_task up_task;   /* worker -> main: the source is up */
    struct weir_task down_task; /* worker -> main: the source ended */
    struct weir_task go_task;   /* main -> worker: held clients are in */
    /* Worker. */
    struct bhub *hub;        /* the current stream's, while its source runs */
    struct bclient *joined;  /* clients with a branch, of every stream */
    struct bclient *waiting; /* clients waiting for a sync point, in order */
    int down_rc;             /* written before down_task is posted */
};

/* At most this many clients at once: the tee's branches. */
static unsigned bcast_cap(const struct weir_pipeline *p)
{
    unsigned cap = UINT_MAX;

    for (size_t i = 0; i < p->nsinks; i++) {
        unsigned m = p->sinks[i]->max_clients;

        if (m && m < cap)
            cap = m;
    }
    return cap;
}

/* A source the broadcast starts again when it ends. */
static bool source_restarts(const struct bcast *bc)
{
    enum addr_kind k = bc->env.p->source->kind;

    return (k == ADDR_TCP || k == ADDR_UNIX) && bc->env.restarts;
}

/* Worker lists: `joined` is doubly linked (clients leave in any order),
 * `waiting` is a queue (they join in the order they came). */
static void joined_add(struct bcast *bc, struct bclient *c)
{
    c->wprev = NULL;
    c->wnext = bc->joined;
    if (bc->joined)
        bc->joined->wprev = c;
    bc->joined = c;
}

static void joined_remove(struct bcast *bc, struct bclient *c)
{
    if (c->wprev)
        c->wprev->wnext = c->wnext;
    else
        bc->joined = c->wnext;
    if (c->wnext)
        c->wnext->wprev = c->wprev;
    c->wnext = c->wprev = NULL;
}

static void waiting_push(struct bcast *bc, struct bclient *c)
{
    struct bclient **p = &bc->waiting;

    while (*p)
        p = &(*p)->wnext;
    c->wnext = NULL;
    *p = c;
}

static struct bclient *waiting_pop(struct bcast *bc)
{
    struct bclient *c = bc->waiting;

    if (c)
        bc->waiting = c->wnext;
    return c;
}

/* Worker: no source is up; the main thread holds the client again. */
static void client_bounce(struct bclient *c)
{
    c->bounced = true;
    weir_loop_post(c->bc->env.cx->main, &c->done);
}

/* The transform a client must join at a sync point of: the last one,
 * when it compresses (a compressed stream cannot be entered midway). */
static struct weir_xform *join_xform(const struct half *h)
{
    const char *name;

    if (h->nxf == 0 || !h->xf[h->nxf - 1])
        return NULL;
    name = weir_xform_name(h->xf[h->nxf - 1]);
    return strcmp(name, "gzip") == 0 || strcmp(name, "zstd") == 0
               ? h->xf[h->nxf - 1]
               : NULL;
}

/* Worker: the source ended (closed, failed, or stopped by a drain); the
 * tee has ended the clients' branches. The clients waiting for a sync
 * point go back to be held for the next source. */
static void hub_ended(void *ctx, int rc)
{
    struct bhub *hub = ctx;
    struct bcast *bc = hub->bc;
    struct half *h = hub->h;
    struct bclient *c;

    hub->ended = true;
    if (rc != WEIR_DONE && h->s->src_rc == 0)
        h->s->src_rc = rc;
    if (bc->hub == hub) {
        bc->hub = NULL;
        while ((c = waiting_pop(bc)))
            client_bounce(c);
        bc->down_rc = rc == WEIR_DONE ? 0 : rc;
        weir_loop_post(bc->env.cx->main, &bc->down_task);
    }
    half_put(h); /* the hold taken in broadcast_build; may free hub */
}

/*
 * Worker: the stream's last stage. The tee starts paused: the main thread
 * is told the source is up, posts the clients it held, then go_task, and
 * the tee reads once they are branches, so they get the new source's
 * bytes from its first one.
 */
static void tail_build(struct half *h, struct weir_readable *rs)
{
    struct bcast *bc = h->s->owner;
    struct bhub *hub = calloc(1, sizeof(*hub));
    struct weir_reader r;
    int rc = -ENOMEM;

    if (hub) {
        struct weir_tee_live_options o = {
            .cap = bcast_cap(bc->env.p),
            .on_end = hub_ended,
            .ctx = hub,
            .paused = true,
        };

        hub->bc = bc;
        hub->h = h;
        hub->zx = join_xform(h);
        h->tail = hub;
        rc = weir_tee_create_live(&hub->tee, rs, &o);
        if (rc == 0) {
            bc->hub = hub;
            half_hold(h); /* until the source ends */
            half_watch_start(h);
            weir_loop_post(bc->env.cx->main, &bc->up_task);
            return;
        }
        hub->tee = NULL;
        hub->ended = true;
    }
    /* Nothing will read the source: cancel it, and end. */
    h->s->src_rc = rc;
    if (weir_reader_acquire(&r, rs) == 0) {
        weir_reader_cancel(&r, rc);
        weir_reader_release(&r);
    }
}

static void tail_teardown(struct half *h)
{
    struct bhub *hub = h->tail;
    struct bcast *bc = h->s->owner;
    struct bclient *c;

    if (!hub)
        return;
    if (bc->hub == hub) {
        bc->hub = NULL;
        while ((c = waiting_pop(bc)))
            client_bounce(c);
    }
    weir_tee_destroy(hub->tee);
    h->tail = NULL;
    free(hub);
}

/* Worker: the client's pipe ended; its branch and sink go, and the
 * shared stream's sink counters add its share. */
static void client_piped(void *ctx, int rc)
{
    struct bclient *c = ctx;
    struct bhub *hub = c->hub;
    struct half *h = hub->h;
    struct stream *s = h->s;
    struct weir_tee_stats st;
    uint64_t offered;

    joined_remove(c->bc, c);
    weir_tee_stats(hub->tee, c->branch, &st);
    weir_tee_remove_branch(hub->tee, c->branch);
    c->bytes = weir_endpoint_bytes(c->ep);
    weir_endpoint_destroy(c->ep);
    c->ep = NULL;
    c->rc = rc;
    c->evicted = st.disconnected;
    /* An evicted client lost whatever it had not sent yet. */
    offered = st.delivered_bytes + st.dropped_bytes;
    c->lost = st.disconnected && offered > c->bytes ? offered - c->bytes
                                                    : st.dropped_bytes;
    s->sink_bytes[c->sink] += c->bytes;
    s->ss[c->sink].dropped += c->lost;
    s->ss[c->sink].blocked_ns += c->blocked_ns;
    s->ss[c->sink].teed = true;
    if (c->cut_fd >= 0)
        close(c->cut_fd);
    c->cut_fd = -1;
    c->hub = NULL;
    weir_loop_post(c->bc->env.cx->main, &c->done);
    half_put(h);
}

/* Worker: the tee cut the client loose. Its sink may be waiting on a
 * send the peer will never take: shutting the socket down ends it. */
static void client_evicted(void *ctx)
{
    struct bclient *c = ctx;
    const struct weir_pipeline *p = c->bc->env.p;

    log_warnx("pipeline %s: evicted client %s: its queue passed "
              "high_water_mark=%llu (on_full=disconnect)",
              p->name, c->peer,
              (unsigned long long)(c->addr->high_water_mark
                                       ? c->addr->high_water_mark
                                       : p->high_water_mark));
    if (c->cut_fd >= 0)
        shutdown(c->cut_fd, SHUT_RDWR);
}

/* Worker: the client becomes a branch of hub's tee and a socket sink; on
 * failure it is refused. */
static void client_attach(struct bhub *hub, struct bclient *c)
{
    struct half *h = hub->h;
    const struct weir_pipeline *p = c->bc->env.p;
    struct weir_endpoint_options o = {
        .chunk_size = (uint32_t)p->chunk_size,
        .hwm = c->addr->high_water_mark ? c->addr->high_water_mark
                                        : p->high_water_mark,
        .own_fd = true,
        .counter = &h->s->bytes_out, /* every client's, for the status */
    };
    /* The branch holds one chunk past the sink's own queue, as a tee'd
     * sink of any other pipeline does. */
    struct weir_tee_branch_options bo = {
        .strategy = {.hwm = p->chunk_size, .bytes = true},
        .policy = stream_tee_policy(c->addr->on_full),
        .on_disconnect = client_evicted,
        .disconnect_ctx = c,
    };
    int rc;

    c->cut_fd = fcntl(c->fd, F_DUPFD_CLOEXEC, 0);
    rc = weir_tee_add_branch(hub->tee, &bo, &c->branch);
    if (rc == 0) {
        rc = weir_endpoint_fd_sink(&c->ep, h->loop, c->fd, &o);
        c->fd = -1; /* own_fd: the endpoint has it, or closed it */
        if (rc)
            weir_tee_remove_branch(hub->tee, c->branch);
    }
    if (rc) {
        if (c->fd >= 0)
            close(c->fd);
        c->fd = -1;
        if (c->cut_fd >= 0)
            close(c->cut_fd);
        c->cut_fd = -1;
        c->rc = rc;
        c->refused = true;
        weir_loop_post(c->bc->env.cx->main, &c->done);
        return;
    }
    c->hub = hub;
    c->sw = (struct sink_watch){0};
    joined_add(c->bc, c);
    log_debug("pipeline %s: client %s is a branch of the broadcast", p->name,
              c->peer);
    half_hold(h);
    rc = weir_pipe_to(weir_tee_branch(hub->tee, c->branch),
                      weir_endpoint_writable(c->ep), NULL, client_piped, c);
    if (rc != WEIR_PENDING)
        client_piped(c, rc);
}

/*
 * Worker: the clients waiting for a sync point join if one is here now:
 * the compressor's sync finished (its member or frame is out) and the tee
 * has taken all of it (nothing left queued before the tee). Only from a
 * task or a timer, never inside the core's callbacks (weir_xform_sync's
 * rule).
 */
static void joins_try(struct bhub *hub)
{
    struct bcast *bc = hub->bc;
    struct weir_readable *out;
    struct bclient *c;

    if (!bc->waiting || hub->ended || !hub->going)
        return;
    if (hub->zx) {
        if (weir_xform_sync(hub->zx) != 0)
            return; /* busy, or output still to place: the watch retries */
        out = weir_transform_readable(weir_xform_transform(hub->zx));
        if (weir_readable_queued(out) > 0)
            return; /* a block client holds the tee back */
    }
    while (bc->hub == hub && (c = waiting_pop(bc)))
        client_attach(hub, c);
}

/* Worker: the clients held for this source are branches (or waiting for
 * a sync point): the tee starts reading. */
static void go_task(struct weir_task *t)
{
    struct bcast *bc = weir_container_of(t, struct bcast, go_task);
    struct bhub *hub = bc->hub;

    if (!hub || hub->going)
        return;
    hub->going = true;
    joins_try(hub);
    weir_tee_resume(hub->tee);
}

/* Worker: a client posted by the main thread once a source was up. */
static void client_join(struct weir_task *t)
{
    struct bclient *c = weir_container_of(t, struct bclient, join);
    struct bhub *hub = c->bc->hub;

    if (!hub || hub->ended) {
        client_bounce(c);
        return;
    }
    if (hub->going && !hub->zx) {
        client_attach(hub, c);
        return;
    }
    waiting_push(c->bc, c);
    joins_try(hub);
}

/* Worker: whether the client's branch is full: its pipe is not reading
 * (the sink's queue is full, or a send to a slow peer is in flight) and
 * its queue reached its mark. For a block client, that holds the tee. */
static bool client_full(const struct bhub *hub, const struct bclient *c)
{
    return weir_readable_desired_size(weir_tee_branch(hub->tee, c->branch)) <=
           0;
}

/* Worker: the block clients of h's hub that have held the source back
 * for long get a warning line, as a stream's sinks do. */
static void watch_clients(struct bhub *hub, int64_t now)
{
    const struct weir_pipeline *p = hub->bc->env.p;
    bool others = false;

    for (struct bclient *c = hub->bc->joined; c && !others; c = c->wnext)
        others = c->hub == hub && !client_full(hub, c);
    for (struct bclient *c = hub->bc->joined; c; c = c->wnext) {
        int64_t held;

        if (c->hub != hub || c->addr->on_full != ON_FULL_BLOCK)
            continue;
        held = sink_watch_step(&c->sw, client_full(hub, c),
                               weir_endpoint_bytes(c->ep), now, others,
                               p->chunk_size, &c->blocked_ns);
        if (held)
            log_warnx("pipeline %s: client %s has held the source back for "
                      "%.0f s (its queue is full; on_full=block)",
                      p->name, c->peer, (double)held / 1e9);
    }
}

static uint64_t tail_watch(struct half *h, int64_t now)
{
    struct bhub *hub = h->tail;
    bool current;

    if (!hub)
        return WATCH_NS;
    current = hub->bc->hub == hub;
    if (current)
        joins_try(hub);
    /* The retries of joins come every JOIN_RETRY_NS; the rest keeps the
     * sinks' pace (a little early is close enough). */
    if (now - hub->watched >= (int64_t)(WATCH_NS - JOIN_RETRY_NS / 2)) {
        hub->watched = now;
        watch_clients(hub, now);
        /* A live source gone quiet: the compressor's held-back output
         * goes out to the clients, as for a followed file's stream. */
        if (h->nxf && !hub->ended)
            half_sync_idle(h);
    }
    return current && hub->bc->waiting ? JOIN_RETRY_NS : WATCH_NS;
}

/* Main thread: unlinks and frees the client. */
static void client_free(struct bclient *c)
{
    struct bcast *bc = c->bc;

    if (c->prev)
        c->prev->next = c->next;
    else
        bc->clients = c->next;
    if (c->next)
        c->next->prev = c->prev;
    bc->nclients--;
    alive_drop(bc->env.alive);
    if (c->fd >= 0)
        close(c->fd);
    if (c->kill_fd >= 0)
        close(c->kill_fd);
    free(c);
}

/* Main thread: a client that never joined is closed. */
static void client_drop(struct bclient *c, const char *why)
{
    const char *name = c->bc->env.p->name;

    if (why)
        log_warnx("pipeline %s: refused %s: %s", name, c->peer, why);
    else
        log_debug("pipeline %s: closed %s: it was waiting for the source", name,
                  c->peer);
    client_free(c);
}

/* Main thread: a client to join now, or to hold until a source is up. */
static void client_place(struct bclient *c)
{
    struct bcast *bc = c->bc;

    if (bc->dead) {
        client_drop(c, "the broadcast's source has ended");
    } else if (bc->stopped) {
        client_drop(c, NULL);
    } else if (bc->up) {
        c->held = false;
        weir_workers_post(bc->env.cx->workers, bc->worker, &c->join);
    } else {
        c->held = true;
    }
}

/* Main thread: the client is gone (or came back unjoined). */
static void client_done(struct weir_task *t)
{
    struct bclient *c = weir_container_of(t, struct bclient, done);
    struct bcast *bc = c->bc;
    const char *name = bc->env.p->name;

    if (c->bounced) {
        c->bounced = false;
        client_place(c);
        return;
    }
    if (c->refused)
        log_warnx("pipeline %s: refused %s: %s", name, c->peer,
                  c->rc == -ENOSPC ? "too many clients" : strerror(-c->rc));
    else
        log_debug("pipeline %s: sink %s: %llu bytes delivered, %llu dropped%s",
                  name, c->peer, (unsigned long long)c->bytes,
                  (unsigned long long)c->lost,
                  c->evicted ? ", disconnected (queue full)" : "");
    client_free(c);
}

void broadcast_client(struct bcast *bc, const struct weir_address *addr, int fd,
                      const char *peer)
{
    const struct weir_pipeline *p = bc->env.p;
    struct bclient *c;

    if (addr->max_clients && bc->nclients >= addr->max_clients) {
        log_warnx("pipeline %s: refused %s: max_clients=%u reached", p->name,
                  peer, addr->max_clients);
        close(fd);
        return;
    }
    c = calloc(1, sizeof(*c));
    if (!c) {
        log_warnx("pipeline %s: dropped %s: out of memory", p->name, peer);
        close(fd);
        return;
    }
    c->bc = bc;
    c->addr = addr;
    for (size_t i = 0; i < p->nsinks; i++)
        if (p->sinks[i] == addr)
            c->sink = (unsigned)i;
    snprintf(c->peer, sizeof(c->peer), "%s", peer);
    c->fd = fd;
    c->cut_fd = -1;
    /* A dup the main thread keeps, so that a drain timeout can shut the
     * connection down while the worker owns fd. */
    c->kill_fd = fcntl(fd, F_DUPFD_CLOEXEC, 0);
    weir_task_init(&c->join, client_join);
    weir_task_init(&c->done, client_done);
    c->next = bc->clients;
    if (bc->clients)
        bc->clients->prev = c;
    bc->clients = c;
    bc->nclients++;
    alive_hold(bc->env.alive);
    log_debug("pipeline %s: client %s joined the broadcast%s", p->name, peer,
              bc->up ? "" : " (held until the source is up)");
    client_place(c);
}

static void source_spawn(struct bcast *bc);

/* Main thread: the retry timer; it holds the pipeline while pending, so
 * that a drain does not free bc under it. */
static void retry_fire(struct weir_op *op, int res, uint32_t flags)
{
    struct bcast *bc = weir_container_of(op, struct bcast, retry.op);

    (void)flags;
    if (res != -ECANCELED && !bc->stopped)
        source_spawn(bc);
    alive_drop(bc->env.alive);
}

/* Main thread: the current source is down (rc: why; 0 when its peer
 * closed). Restarts it after the backoff, logging once per outage. */
static void source_down(struct bcast *bc, int rc)
{
    const char *name = bc->env.p->name, *src = bc->env.p->source->text;
    bool was_up = bc->up;

    bc->s = NULL;
    bc->up = false;
    if (bc->stopped)
        return;
    if (was_up) {
        log_warnx("pipeline %s: source %s %s; reconnecting (clients that "
                  "connect meanwhile wait for it)",
                  name, src, rc ? strerror(-rc) : "closed the connection");
        bc->outage = true;
        bc->backoff_ns = BACKOFF_MIN_NS;
    } else if (!bc->outage) {
        log_warnx("pipeline %s: cannot connect to source %s: %s; retrying",
                  name, src, rc ? strerror(-rc) : "closed at once");
        bc->outage = true;
    } else {
        log_debug("pipeline %s: source %s: %s; retrying in %llu ms", name, src,
                  rc ? strerror(-rc) : "closed at once",
                  (unsigned long long)(bc->backoff_ns / 1000000));
    }
    if (weir_loop_timer_start(bc->env.cx->main, &bc->retry, bc->backoff_ns) ==
        0)
        alive_hold(bc->env.alive);
    else
        source_spawn(bc); /* no timer: try now rather than never */
    bc->backoff_ns *= 2;
    if (bc->backoff_ns > BACKOFF_MAX_NS)
        bc->backoff_ns = BACKOFF_MAX_NS;
}

/* Main thread: the source ended for good (a followed file that failed,
 * or weir pipe): the held clients are refused, and later ones too. */
static void source_gone(struct bcast *bc)
{
    bc->s = NULL;
    bc->up = false;
    if (bc->stopped || bc->dead)
        return;
    bc->dead = true;
    for (struct bclient *c = bc->clients, *next; c; c = next) {
        next = c->next;
        if (c->held)
            client_drop(c, "the broadcast's source has ended");
    }
}

/* Main thread: a stream for the source, on the broadcast's worker (the
 * first one's, for all). */
static void source_spawn(struct bcast *bc)
{
    struct stream *s = stream_new(bc->env.cx, &bc->spec, bc, -1, -1, NULL);

    if (!s) {
        if (source_restarts(bc))
            source_down(bc, -ENOMEM);
        else
            source_gone(bc);
        return;
    }
    weir_list_push_tail(&bc->streams, &s->link);
    bc->nstreams++;
    alive_hold(bc->env.alive);
    bc->s = s;
    stream_start(s, bc->placed ? (int)bc->worker : -1);
    bc->worker = stream_worker(s);
    bc->placed = true;
}

/* Main thread: the worker built the tee; held clients join. */
static void up_task(struct weir_task *t)
{
    struct bcast *bc = weir_container_of(t, struct bcast, up_task);
    const struct weir_pipeline *p = bc->env.p;

    if (!bc->stopped && bc->s) {
        bc->up = true;
        if (bc->outage)
            log_info("pipeline %s: source %s is up again", p->name,
                     p->source->text);
        bc->outage = false;
        bc->backoff_ns = BACKOFF_MIN_NS;
        for (struct bclient *c = bc->clients, *next; c; c = next) {
            next = c->next;
            if (c->held)
                client_place(c);
        }
    }
    /* After the joins (a worker runs posts in order); even when stopped,
     * since the tee must read to see its source's end. */
    weir_workers_post(bc->env.cx->workers, bc->worker, &bc->go_task);
}

/* Main thread: the worker saw the current source end. */
static void down_task(struct weir_task *t)
{
    struct bcast *bc = weir_container_of(t, struct bcast, down_task);

    if (!bc->s)
        return;
    if (source_restarts(bc))
        source_down(bc, bc->down_rc);
    else
        source_gone(bc);
}

/* Main thread: a stream of the source ended; true when its end is ours
 * to tell (the source restarts). */
static bool source_stream_ended(struct bcast *bc, struct stream *s)
{
    bool current = bc->s == s;

    if (bc->stopped || !source_restarts(bc)) {
        if (current)
            source_gone(bc);
        return false;
    }
    if (!current)
        return true; /* its source's end was handled (down_task) */
    /* It never came up (a failed connect): one line per outage. */
    s->quiet = true;
    source_down(bc, s->src_rc);
    return true;
}

static void stream_ended(struct stream *s)
{
    struct bcast *bc = s->owner;
    bool handled = source_stream_ended(bc, s);

    bc->env.stream_ended(bc->env.owner, s, handled);
}

static void stream_released(struct stream *s)
{
    struct bcast *bc = s->owner;

    weir_list_remove(&s->link);
    bc->nstreams--;
    alive_drop(bc->env.alive);
}

static const struct stream_hooks bcast_hooks = {
    .ended = stream_ended,
    .released = stream_released,
};

static const struct stream_tail bcast_tail = {
    .build = tail_build,
    .teardown = tail_teardown,
    .watch = tail_watch,
};

void broadcast_stop(struct bcast *bc)
{
    struct weir_list *pos, *tmp;

    if (!bc || bc->stopped)
        return;
    bc->stopped = true;
    if (bc->retry.op.pending)
        weir_loop_timer_stop(bc->env.cx->main, &bc->retry);
    for (struct bclient *c = bc->clients, *next; c; c = next) {
        next = c->next;
        if (c->held)
            client_drop(c, NULL);
    }
    weir_list_for_each(pos, tmp, &bc->streams)
        stream_stop(weir_list_entry(pos, struct stream, link));
}

int broadcast_start(struct bcast **out, const struct bcast_env *env)
{
    struct bcast *bc = calloc(1, sizeof(*bc));

    if (!bc)
        return -ENOMEM;
    bc->env = *env;
    bc->spec = (struct stream_spec){
        .p = env->p,
        .nsinks = (unsigned)env->p->nsinks,
        .src_at_end = true,
        .one_worker = true,
        .tail = &bcast_tail,
        .hooks = &bcast_hooks,
    };
    weir_list_init(&bc->streams);
    bc->backoff_ns = BACKOFF_MIN_NS;
    bc->retry.op.fn = retry_fire;
    weir_task_init(&bc->up_task, up_task);
    weir_task_init(&bc->down_task, down_task);
    weir_task_init(&bc->go_task, go_task);
    *out = bc;
    source_spawn(bc);
    return 0;
}

unsigned broadcast_cut(struct bcast *bc)
{
    unsigned cut = 0;

    if (!bc)
        return 0;
    for (const struct bclient *c = bc->clients; c; c = c->next)
        if (c->kill_fd >= 0) {
            shutdown(c->kill_fd, SHUT_RDWR);
            cut++;
        }
    return cut;
}

unsigned broadcast_clients(const struct bcast *bc)
{
    return bc ? bc->nclients : 0;
}

unsigned broadcast_streams(const struct bcast *bc)
{
    return bc ? bc->nstreams : 0;
}

uint64_t broadcast_bytes_live(const struct bcast *bc)
{
    const struct weir_list *pos;
    uint64_t b = 0;

    if (!bc)
        return 0;
    /* Relaxed: a statistic; pairs with the sinks' relaxed adds. */
    for (pos = bc->streams.next; pos != &bc->streams; pos = pos->next)
        b += atomic_load_explicit(
            &weir_list_entry(pos, const struct stream, link)->bytes_out,
            memory_order_relaxed);
    return b;
}

void broadcast_free(struct bcast *bc)
{
    if (!bc)
        return;
    /* Held clients, if the run ended without a stop; the liveness they
     * held is over with the run. */
    for (struct bclient *c = bc->clients, *next; c; c = next) {
        next = c->next;
        if (c->fd >= 0)
            close(c->fd);
        if (c->kill_fd >= 0)
            close(c->kill_fd);
        free(c);
    }
    free(bc);
}
