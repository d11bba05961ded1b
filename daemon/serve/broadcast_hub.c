/*
 * broadcast_hub.c - the worker's side of a broadcast (broadcast.c has the
 * whole story): the live tee at the end of each source stream, clients
 * becoming its branches at a sync point, leaving, and the clients' watch.
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

/* Worker lists: a client is in `joined` (clients leave in any order) or
 * in `waiting`, a queue (they join in the order they came). */
static struct bclient *waiting_pop(struct bcast *bc)
{
    struct weir_list *n = weir_list_first(&bc->waiting);

    if (!n)
        return NULL;
    weir_list_remove(n);
    return weir_list_entry(n, struct bclient, wlink);
}

/* Worker: no source is up; the main thread holds the client again. */
static void client_bounce(struct bclient *c)
{
    c->bounced = true;
    weir_loop_post(c->bc->env.cx->main, &c->done);
}

/* The transform a client must join at a sync point of: the last one,
 * when it compresses (a compressed stream cannot be entered midway). */
static struct weir_xform *join_xform(const struct stream *s)
{
    struct weir_xform *x = stream_last_xform(s);
    const char *name;

    if (!x)
        return NULL;
    name = weir_xform_name(x);
    return strcmp(name, "gzip") == 0 || strcmp(name, "zstd") == 0 ? x : NULL;
}

/* Worker: the source ended (closed, failed, or stopped by a drain); the
 * tee has ended the clients' branches. The clients waiting for a sync
 * point go back to be held for the next source. */
static void hub_ended(void *ctx, int rc)
{
    struct bhub *hub = ctx;
    struct bcast *bc = hub->bc;
    struct stream *s = hub->s;
    struct bclient *c;

    hub->ended = true;
    if (rc != WEIR_DONE)
        stream_source_failed(s, rc);
    if (bc->hub == hub) {
        bc->hub = NULL;
        while ((c = waiting_pop(bc)))
            client_bounce(c);
        bc->down_rc = rc == WEIR_DONE ? 0 : rc;
        weir_loop_post(bc->env.cx->main, &bc->down_task);
    }
    stream_put(s); /* the hold taken in tail_build; may free hub */
}

/*
 * Worker: the stream's last stage. The tee starts paused: the main thread
 * is told the source is up, posts the clients it held, then go_task, and
 * the tee reads once they are branches, so they get the new source's
 * bytes from its first one.
 */
static void tail_build(struct stream *s, struct weir_readable *rs)
{
    struct bcast *bc = stream_owner(s);
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
        hub->s = s;
        hub->zx = join_xform(s);
        stream_set_tail_state(s, hub);
        rc = weir_tee_create_live(&hub->tee, rs, &o);
        if (rc == 0) {
            stream_source_hold(s, true); /* until a client is here */
            bc->hub = hub;
            stream_hold(s); /* until the source ends */
            stream_watch_start(s);
            weir_loop_post(bc->env.cx->main, &bc->up_task);
            return;
        }
        hub->tee = NULL;
        hub->ended = true;
    }
    /* Nothing will read the source: cancel it, and end. */
    stream_source_failed(s, rc);
    if (weir_reader_acquire(&r, rs) == 0) {
        weir_reader_cancel(&r, rc);
        weir_reader_release(&r);
    }
}

static void hub_ack(struct bhub *hub);

static void tail_teardown(struct stream *s)
{
    struct bhub *hub = stream_tail_state(s);
    struct bcast *bc = stream_owner(s);
    struct bclient *c;

    if (!hub)
        return;
    if (hub->tee)
        hub_ack(hub); /* the last, while the clients can be asked */
    if (bc->hub == hub) {
        bc->hub = NULL;
        while ((c = waiting_pop(bc)))
            client_bounce(c);
    }
    weir_tee_destroy(hub->tee);
    stream_set_tail_state(s, NULL);
    free(hub);
}

static void hub_hold(struct bhub *hub);

/* Worker: the client's pipe ended; its branch and sink go, and the
 * shared stream's sink counters add its share. */
static void client_piped(void *ctx, int rc)
{
    struct bclient *c = ctx;
    struct bhub *hub = c->hub;
    struct stream *s = hub->s;
    struct weir_tee_stats st;
    uint64_t offered;

    weir_list_remove(&c->wlink);
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
    stream_sink_add(s, c->sink, c->bytes, c->lost, c->blocked_ns);
    if (c->cut_fd >= 0)
        close(c->cut_fd);
    c->cut_fd = -1;
    c->hub = NULL;
    weir_loop_post(c->bc->env.cx->main, &c->done);
    hub_hold(hub);
    stream_put(s);
}

/* Worker: the tee cut the client loose. Its sink may be waiting on a
 * send the peer will never take: shutting the socket down ends it. */
static void client_evicted(void *ctx)
{
    struct bclient *c = ctx;
    const struct weir_pipeline *p = c->bc->env.p;

    log_warnx("pipeline %s: evicted client %s: its queue stayed full "
              "(high_water_mark=%llu) for %.0f s while other clients kept "
              "up (on_full=disconnect)",
              p->name, c->peer,
              (unsigned long long)(c->addr->high_water_mark
                                       ? c->addr->high_water_mark
                                       : p->high_water_mark),
              (double)BCAST_LAG_NS / 1e9);
    if (c->cut_fd >= 0)
        shutdown(c->cut_fd, SHUT_RDWR);
}

/* Worker: the client becomes a branch of hub's tee and a socket sink; on
 * failure it is refused. */
static void client_attach(struct bhub *hub, struct bclient *c)
{
    struct stream *s = hub->s;
    const struct weir_pipeline *p = c->bc->env.p;
    struct weir_fd_sink_options o = {
        .hwm = c->addr->high_water_mark ? c->addr->high_water_mark
                                        : p->high_water_mark,
        .own_fd = true,
        .counter = stream_sink_counter(s, c->sink),
        .linger_ns = STREAM_LINGER_NS,
    };
    /* The branch holds one chunk past the sink's own queue, as a tee'd
     * sink of any other pipeline does. */
    struct weir_tee_branch_options bo = {
        .strategy = {.hwm = p->chunk_size, .bytes = true},
        /* A disconnect client holds the source back like a block one
         * until the watch finds it lagging (watch_clients): a burst is
         * paced to the clients, not cut at the first full queue. */
        .policy = c->addr->on_full == ON_FULL_DISCONNECT
                      ? WEIR_TEE_BLOCK
                      : stream_tee_policy(c->addr->on_full),
        .on_disconnect = client_evicted,
        .disconnect_ctx = c,
    };
    struct weir_tls_session *t = NULL;
    int rc;

    stream_peer_options(p, c->addr, &o.peer);
    c->cut_fd = fcntl(c->fd, F_DUPFD_CLOEXEC, 0);
    rc = stream_tls_open(s, c->addr, c->fd, &t);
    if (rc == 0)
        rc = weir_tee_add_branch(hub->tee, &bo, &c->branch);
    if (rc == 0) {
        o.tls = t;
        rc = weir_endpoint_fd_sink(&c->ep, stream_loop(s), c->fd, &o);
        c->fd = -1; /* own_fd: the endpoint has it, or closed it */
        if (rc)
            weir_tee_remove_branch(hub->tee, c->branch);
    }
    weir_tls_session_release(t); /* the endpoint holds its own */
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
    weir_list_push_head(&c->bc->joined, &c->wlink);
    log_debug("pipeline %s: client %s is a branch of the broadcast", p->name,
              c->peer);
    stream_hold(s);
    rc = weir_pipe_to(weir_tee_branch(hub->tee, c->branch),
                      weir_endpoint_writable(c->ep), NULL, client_piped, c);
    if (rc != WEIR_PENDING)
        client_piped(c, rc);
    else
        hub_hold(hub);
}

/* Worker: a source that keeps what nobody reads (a jetstream consumer)
 * is held while the hub has no client. */
static void hub_hold(struct bhub *hub)
{
    struct weir_list *pos, *tmp;
    bool any = false;

    weir_list_for_each(pos, tmp, &hub->bc->joined)
    {
        const struct bclient *c = weir_list_entry(pos, struct bclient, wlink);

        any = any || c->hub == hub;
    }
    stream_source_hold(hub->s, !any);
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

    if (weir_list_empty(&bc->waiting) || hub->ended || !hub->going)
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
void bcast_go_task(struct weir_task *t)
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
void bcast_client_join(struct weir_task *t)
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
    weir_list_push_tail(&c->bc->waiting, &c->wlink);
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

/* Worker: an on_full=disconnect client that lags: full while another
 * client has room (it is the one holding the source back, not a burst
 * that fills everyone) for BCAST_LAG_NS in a row is cut loose. */
static void watch_lag(struct bhub *hub, struct bclient *c, bool full,
                      bool others, int64_t now)
{
    if (!full || !others) {
        c->lag_since = 0;
        return;
    }
    if (c->lag_since == 0) {
        c->lag_since = now;
        return;
    }
    if (now - c->lag_since >= BCAST_LAG_NS)
        (void)weir_tee_disconnect_branch(hub->tee, c->branch);
}

/* Worker: the block clients of the hub that have held the source back
 * for long get a warning line, as a stream's sinks do; disconnect
 * clients that lag behind the others are cut. */
static void watch_clients(struct bhub *hub, int64_t now)
{
    const struct weir_pipeline *p = hub->bc->env.p;
    bool others = false;

    struct weir_list *pos, *tmp;

    weir_list_for_each(pos, tmp, &hub->bc->joined)
    {
        const struct bclient *c = weir_list_entry(pos, struct bclient, wlink);

        if (c->hub == hub && !client_full(hub, c)) {
            others = true;
            break;
        }
    }
    weir_list_for_each(pos, tmp, &hub->bc->joined)
    {
        struct bclient *c = weir_list_entry(pos, struct bclient, wlink);
        int64_t held;

        if (c->hub != hub)
            continue;
        if (c->addr->on_full == ON_FULL_DISCONNECT) {
            watch_lag(hub, c, client_full(hub, c), others, now);
            continue;
        }
        if (c->addr->on_full != ON_FULL_BLOCK)
            continue;
        uint64_t was = c->blocked_ns;

        held = sink_watch_step(&c->sw, client_full(hub, c),
                               weir_endpoint_bytes(c->ep), now, others,
                               p->chunk_size, &c->blocked_ns);
        /* A statistic: what the client adds to its sink's
         * blocked_ns when it leaves (client_piped), shown meanwhile. */
        if (c->blocked_ns != was)
            stream_sink_blocked(hub->s, c->sink, c->blocked_ns - was);
        if (held)
            log_warnx("pipeline %s: client %s has held the source back for "
                      "%.0f s (its queue is full; on_full=block)",
                      p->name, c->peer, (double)held / 1e9);
    }
}

/* Worker: what every block client has of the tee's output, told to the
 * stream (a jetstream source acknowledges it). A client's branch and its
 * socket both count from its join: what the branch was given less what
 * the client's peer acknowledged is what it still lacks. A client that
 * left lacks nothing any more. */
static void hub_ack(struct bhub *hub)
{
    uint64_t made = weir_tee_produced_bytes(hub->tee), behind = 0, a;
    struct weir_list *pos, *tmp;

    weir_list_for_each(pos, tmp, &hub->bc->joined)
    {
        const struct bclient *c = weir_list_entry(pos, struct bclient, wlink);
        struct weir_tee_stats st;
        uint64_t lack;

        if (c->hub != hub || !c->ep || c->addr->on_full != ON_FULL_BLOCK)
            continue;
        weir_tee_stats(hub->tee, c->branch, &st);
        if (weir_endpoint_acked(c->ep, &a) != 0)
            a = 0;
        lack = st.delivered_bytes > a ? st.delivered_bytes - a : 0;
        behind = lack > behind ? lack : behind;
    }
    stream_source_acked_out(hub->s, made - behind, made);
}

static uint64_t tail_watch(struct stream *s, int64_t now)
{
    struct bhub *hub = stream_tail_state(s);
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
        hub_ack(hub);
        /* A live source gone quiet: the compressor's held-back output
         * goes out to the clients, as for a followed file's stream. */
        if (!hub->ended)
            stream_sync_idle(s);
    }
    return current && !weir_list_empty(&hub->bc->waiting) ? JOIN_RETRY_NS
                                                          : WATCH_NS;
}

const struct stream_tail bcast_tail = {
    .build = tail_build,
    .teardown = tail_teardown,
    .watch = tail_watch,
};
