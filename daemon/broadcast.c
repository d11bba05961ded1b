/*
 * broadcast.c - a live source (a followed file, a connecting tcp or unix
 * source) with listen sinks: one shared stream, started with the
 * pipeline, whose last stage is a live tee (lib/core/tee.c); each
 * accepted client becomes a branch of that tee and a socket sink on the
 * stream's worker, and sees what the source reads from then on. A client
 * that leaves takes its branch away; with no client the tee reads on and
 * drops, since a broadcast keeps no backlog. A client too slow for its
 * queue meets its listen address's on_full policy: block holds the source
 * (and so every other client) back, drop-newest and drop-oldest lose data
 * for that client only, disconnect evicts it with one log line.
 *
 * Threads: struct bcast and the clients' list are the main thread's,
 * except the fields marked "worker", which only the shared stream's
 * worker touches (joins are posted there; they run in order after the
 * stream's start).
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "runtime.h"

#define CONTAINER(ptr, type, member)                                           \
    ((type *)(void *)((char *)(ptr)-offsetof(type, member)))

struct bclient {
    struct bcast *bc;
    const struct weir_address *addr; /* the listen sink it came through */
    unsigned sink;                   /* that sink's index in the pipeline */
    char peer[80];
    int fd;      /* handed to the sink endpoint on the worker */
    int kill_fd; /* main: a dup, to cut the connection */
    struct weir_task join;
    struct weir_task done;
    /* Worker. */
    struct weir_endpoint *ep;
    int cut_fd; /* a dup, to cut the connection at an eviction */
    unsigned branch;
    /* Written by the worker before `done` is posted. */
    int rc;
    uint64_t bytes, lost;
    bool evicted, refused;
    struct bclient *next, *prev; /* main: bc's list */
};

struct bcast {
    struct pipeline_rt *pl;
    unsigned worker; /* the shared stream's */
    unsigned nclients;
    struct bclient *clients;
    /* Worker. */
    struct half *h; /* the shared stream's half while it runs */
    struct weir_tee *tee;
    bool ended; /* the source ended: joins are refused */
};

/* At most this many clients at once: the tee's branches. */
static unsigned bcast_cap(const struct pipeline_rt *pl)
{
    unsigned cap = UINT_MAX;

    for (size_t i = 0; i < pl->p->nsinks; i++) {
        unsigned m = pl->p->sinks[i]->max_clients;

        if (m && m < cap)
            cap = m;
    }
    return cap;
}

static enum weir_tee_policy policy_of(enum on_full f)
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

/* Worker: the source ended (closed, failed, or stopped by a drain). */
static void hub_ended(void *ctx, int rc)
{
    struct bcast *bc = ctx;
    struct half *h = bc->h;

    bc->ended = true;
    if (rc != WEIR_DONE && h->s->src_rc == 0)
        h->s->src_rc = rc;
    half_put(h); /* the hold taken in broadcast_build */
}

void broadcast_build(struct half *h, struct weir_readable *rs)
{
    struct bcast *bc = h->s->pl->bc;
    struct weir_reader r;
    int rc;

    bc->h = h;
    h->pipes++; /* held until the source ends */
    rc = weir_tee_create_live(&bc->tee, rs, bcast_cap(h->s->pl), hub_ended, bc);
    if (rc == 0)
        return;
    /* Nothing will read the source: cancel it, and end. */
    h->s->src_rc = rc;
    if (weir_reader_acquire(&r, rs) == 0) {
        weir_reader_cancel(&r, rc);
        weir_reader_release(&r);
    }
    bc->tee = NULL;
    bc->ended = true;
    half_put(h);
}

void broadcast_teardown(struct half *h)
{
    struct bcast *bc = h->s->pl->bc;

    if (bc->h != h)
        return;
    weir_tee_destroy(bc->tee);
    bc->tee = NULL;
    bc->h = NULL;
    bc->ended = true;
}

/* Worker: the client's pipe ended; its branch and sink go, and the
 * shared stream's sink counters add its share. */
static void client_piped(void *ctx, int rc)
{
    struct bclient *c = ctx;
    struct bcast *bc = c->bc;
    struct half *h = bc->h;
    struct stream *s = h->s;
    struct weir_tee_stats st;
    uint64_t offered;

    weir_tee_stats(bc->tee, c->branch, &st);
    weir_tee_remove_branch(bc->tee, c->branch);
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
    s->ss[c->sink].teed = true;
    if (c->cut_fd >= 0)
        close(c->cut_fd);
    c->cut_fd = -1;
    weir_loop_post(s->run->main, &c->done);
    half_put(h);
}

static void client_refuse(struct bclient *c, int rc)
{
    if (c->fd >= 0)
        close(c->fd);
    c->fd = -1;
    c->rc = rc;
    c->refused = true;
}

/* Worker: the tee cut the client loose. Its sink may be waiting on a
 * send the peer will never take: shutting the socket down ends it. */
static void client_evicted(void *ctx)
{
    struct bclient *c = ctx;
    const struct weir_pipeline *p = c->bc->pl->p;

    log_warnx("pipeline %s: evicted client %s: its queue passed "
              "high_water_mark=%llu (on_full=disconnect)",
              p->name, c->peer,
              (unsigned long long)(c->addr->high_water_mark
                                       ? c->addr->high_water_mark
                                       : p->high_water_mark));
    if (c->cut_fd >= 0)
        shutdown(c->cut_fd, SHUT_RDWR);
}

/* Worker: the client becomes a branch of the tee and a socket sink. */
static void client_join(struct weir_task *t)
{
    struct bclient *c = CONTAINER(t, struct bclient, join);
    struct bcast *bc = c->bc;
    struct half *h = bc->h;
    const struct weir_pipeline *p = bc->pl->p;
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
        .policy = policy_of(c->addr->on_full),
        .on_disconnect = client_evicted,
        .disconnect_ctx = c,
    };
    int rc;

    if (bc->ended || !h || !bc->tee) {
        client_refuse(c, -EPIPE);
        goto out;
    }
    c->cut_fd = fcntl(c->fd, F_DUPFD_CLOEXEC, 0);
    rc = weir_tee_add_branch(bc->tee, &bo, &c->branch);
    if (rc) {
        if (c->cut_fd >= 0)
            close(c->cut_fd);
        c->cut_fd = -1;
        client_refuse(c, rc);
        goto out;
    }
    rc = weir_endpoint_fd_sink(&c->ep, h->loop, c->fd, &o);
    c->fd = -1; /* own_fd: the endpoint has it, or closed it */
    if (rc) {
        weir_tee_remove_branch(bc->tee, c->branch);
        if (c->cut_fd >= 0)
            close(c->cut_fd);
        c->cut_fd = -1;
        c->rc = rc;
        c->refused = true;
        goto out;
    }
    h->pipes++;
    rc = weir_pipe_to(weir_tee_branch(bc->tee, c->branch),
                      weir_endpoint_writable(c->ep), NULL, client_piped, c);
    if (rc != WEIR_PENDING)
        client_piped(c, rc);
    return;
out:
    weir_loop_post(bc->pl->run->main, &c->done);
}

/* Main thread: the client is gone. */
static void client_done(struct weir_task *t)
{
    struct bclient *c = CONTAINER(t, struct bclient, done);
    struct bcast *bc = c->bc;
    struct pipeline_rt *pl = bc->pl;
    const char *name = pl->p->name;

    if (c->refused)
        log_warnx("pipeline %s: refused %s: %s", name, c->peer,
                  c->rc == -EPIPE    ? "the broadcast's source has ended"
                  : c->rc == -ENOSPC ? "too many clients"
                                     : strerror(-c->rc));
    else
        log_debug("pipeline %s: sink %s: %llu bytes delivered, %llu dropped%s",
                  name, c->peer, (unsigned long long)c->bytes,
                  (unsigned long long)c->lost,
                  c->evicted ? ", disconnected (queue full)" : "");
    if (c->prev)
        c->prev->next = c->next;
    else
        bc->clients = c->next;
    if (c->next)
        c->next->prev = c->prev;
    bc->nclients--;
    pl->clients--;
    if (c->kill_fd >= 0)
        close(c->kill_fd);
    free(c);
    run_check_finished(pl->run);
}

void broadcast_client(struct listener *l, int fd, const char *peer)
{
    struct pipeline_rt *pl = l->pl;
    struct bcast *bc = pl->bc;
    struct bclient *c;

    if (l->addr->max_clients && bc->nclients >= l->addr->max_clients) {
        log_warnx("pipeline %s: refused %s: max_clients=%u reached",
                  pl->p->name, peer, l->addr->max_clients);
        close(fd);
        return;
    }
    c = calloc(1, sizeof(*c));
    if (!c) {
        log_warnx("pipeline %s: dropped %s: out of memory", pl->p->name, peer);
        close(fd);
        return;
    }
    c->bc = bc;
    c->addr = l->addr;
    for (size_t i = 0; i < pl->p->nsinks; i++)
        if (pl->p->sinks[i] == l->addr)
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
    pl->clients++;
    log_debug("pipeline %s: client %s joined the broadcast", pl->p->name, peer);
    weir_workers_post(pl->run->workers, bc->worker, &c->join);
}

int broadcast_start(struct pipeline_rt *pl)
{
    struct stream *s;

    pl->bc = calloc(1, sizeof(*pl->bc));
    if (!pl->bc)
        return -ENOMEM;
    pl->bc->pl = pl;
    s = stream_new(pl, -1, -1, NULL);
    if (!s) {
        /* No stream: every client is refused (bc->h stays NULL). */
        pl->bc->ended = true;
        return -ENOMEM;
    }
    pl->bc->worker = s->h[0].worker;
    stream_start(s);
    return 0;
}

unsigned broadcast_cut(const struct pipeline_rt *pl)
{
    unsigned cut = 0;

    if (!pl->bc)
        return 0;
    for (const struct bclient *c = pl->bc->clients; c; c = c->next)
        if (c->kill_fd >= 0) {
            shutdown(c->kill_fd, SHUT_RDWR);
            cut++;
        }
    return cut;
}

void broadcast_free(struct pipeline_rt *pl)
{
    free(pl->bc);
    pl->bc = NULL;
}
