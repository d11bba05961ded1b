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

#include "serve/broadcast_impl.h"
#include "sys/log.h"

#define BACKOFF_MIN_NS (100ull * 1000 * 1000)
#define BACKOFF_MAX_NS (10ull * 1000 * 1000 * 1000)
/* A source the broadcast starts again when it ends. */
static bool source_restarts(const struct bcast *bc)
{
    enum addr_kind k = bc->env.p->source->kind;

    return (k == ADDR_TCP || k == ADDR_UNIX) && bc->env.restarts;
}

/* Main thread: unlinks and frees the client. */
static void client_free(struct bclient *c)
{
    struct bcast *bc = c->bc;

    weir_list_remove(&c->link);
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

    if (why) {
        log_warnx("pipeline %s: refused %s: %s", name, c->peer, why);
        c->bc->env.counts->refused++;
    } else
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
    if (c->refused) {
        log_warnx("pipeline %s: refused %s: %s", name, c->peer,
                  c->rc == -ENOSPC ? "too many clients" : strerror(-c->rc));
        bc->env.counts->refused++;
    } else
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
        bc->env.counts->refused++;
        close(fd);
        return;
    }
    c = calloc(1, sizeof(*c));
    if (!c) {
        log_warnx("pipeline %s: dropped %s: out of memory", p->name, peer);
        bc->env.counts->refused++;
        close(fd);
        return;
    }
    bc->env.counts->accepted++;
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
    weir_task_init(&c->join, bcast_client_join);
    weir_task_init(&c->done, client_done);
    weir_list_init(&c->wlink);
    weir_list_push_head(&bc->clients, &c->link);
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
    struct weir_list *pos, *tmp;
    bc->s = NULL;
    bc->up = false;
    if (bc->stopped || bc->dead)
        return;
    bc->dead = true;
    weir_list_for_each(pos, tmp, &bc->clients)
    {
        struct bclient *c = weir_list_entry(pos, struct bclient, link);

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
    weir_list_push_tail(&bc->streams, stream_link(s));
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
    struct weir_list *pos, *tmp;
    struct bcast *bc = weir_container_of(t, struct bcast, up_task);
    const struct weir_pipeline *p = bc->env.p;

    if (!bc->stopped && bc->s) {
        bc->up = true;
        if (bc->outage)
            log_info("pipeline %s: source %s is up again", p->name,
                     p->source->text);
        bc->outage = false;
        bc->backoff_ns = BACKOFF_MIN_NS;
        weir_list_for_each(pos, tmp, &bc->clients)
        {
            struct bclient *c = weir_list_entry(pos, struct bclient, link);

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
    stream_set_quiet(s);
    source_down(bc, stream_src_rc(s));
    return true;
}

static void stream_ended(struct stream *s)
{
    struct bcast *bc = stream_owner(s);
    bool handled = source_stream_ended(bc, s);

    bc->env.stream_ended(bc->env.owner, s, handled);
}

static void stream_released(struct stream *s)
{
    struct bcast *bc = stream_owner(s);

    weir_list_remove(stream_link(s));
    bc->nstreams--;
    alive_drop(bc->env.alive);
}

static const struct stream_hooks bcast_hooks = {
    .ended = stream_ended,
    .released = stream_released,
};

void broadcast_stop(struct bcast *bc)
{
    struct weir_list *pos, *tmp;

    if (!bc || bc->stopped)
        return;
    bc->stopped = true;
    if (bc->retry.op.pending)
        weir_loop_timer_stop(bc->env.cx->main, &bc->retry);
    weir_list_for_each(pos, tmp, &bc->clients)
    {
        struct bclient *c = weir_list_entry(pos, struct bclient, link);

        if (c->held)
            client_drop(c, NULL);
    }
    weir_list_for_each(pos, tmp, &bc->streams) stream_stop(stream_of_link(pos));
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
        .tail = &bcast_tail,
        .hooks = &bcast_hooks,
    };
    weir_list_init(&bc->streams);
    weir_list_init(&bc->clients);
    weir_list_init(&bc->joined);
    weir_list_init(&bc->waiting);
    bc->backoff_ns = BACKOFF_MIN_NS;
    bc->retry.op.fn = retry_fire;
    weir_task_init(&bc->up_task, up_task);
    weir_task_init(&bc->down_task, down_task);
    weir_task_init(&bc->go_task, bcast_go_task);
    *out = bc;
    source_spawn(bc);
    return 0;
}

unsigned broadcast_cut(struct bcast *bc)
{
    struct weir_list *pos, *tmp;
    unsigned cut = 0;

    if (!bc)
        return 0;
    weir_list_for_each(pos, tmp, &bc->clients)
    {
        const struct bclient *c = weir_list_entry(pos, struct bclient, link);

        if (c->kill_fd >= 0) {
            shutdown(c->kill_fd, SHUT_RDWR);
            cut++;
        }
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
    /* Every client's, whichever listen sink it came through. */
    for (pos = bc->streams.next; pos != &bc->streams; pos = pos->next) {
        const struct stream *s = stream_of_link(pos);

        for (unsigned i = 0; i < stream_spec(s)->nsinks; i++)
            b += stream_sink_out(s, i);
    }
    return b;
}

void broadcast_each_stream(const struct bcast *bc,
                           void (*fn)(void *arg, const struct stream *s),
                           void *arg)
{
    const struct weir_list *pos;

    if (!bc)
        return;
    for (pos = bc->streams.next; pos != &bc->streams; pos = pos->next)
        fn(arg, stream_of_link(pos));
}

void broadcast_free(struct bcast *bc)
{
    struct weir_list *pos, *tmp;
    if (!bc)
        return;
    /* Held clients, if the run ended without a stop; the liveness they
     * held is over with the run. */
    weir_list_for_each(pos, tmp, &bc->clients)
    {
        struct bclient *c = weir_list_entry(pos, struct bclient, link);

        if (c->fd >= 0)
            close(c->fd);
        if (c->kill_fd >= 0)
            close(c->kill_fd);
        free(c);
    }
    free(bc);
}
