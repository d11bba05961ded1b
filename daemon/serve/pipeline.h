/*
 * pipeline.h - a pipeline of the config at run time: how it becomes
 * streams (its mode), its listeners, its resolved sinks, and its life
 * across reloads.
 *
 * A pipeline owns its children: its listeners, the streams it made, its
 * broadcast. It is prepared (everything that can fail: resolving, opening
 * files, binding) before it is started, so that a reload can give up
 * without having changed anything. Its liveness counts its open
 * listeners, its streams and clients, and pending timers; a draining
 * pipeline whose count falls to zero tells its owner through the drained
 * hook. Main thread only.
 */
#ifndef WEIR_DAEMON_PIPELINE_H
#define WEIR_DAEMON_PIPELINE_H

#include <stdbool.h>
#include <stdint.h>

#include "conf/config.h"
#include "serve/broadcast.h"
#include "serve/http_park.h"
#include "serve/listener.h"
#include "stream/stream.h"
#include "sys/alive.h"
#include "weir/util.h"

struct pipeline;
struct pl_mode; /* how a pipeline becomes streams (pipeline.c) */

/* What the owner hears. */
struct pipeline_hooks {
    /* A stream was started (s->src_size is known by then). */
    void (*stream_started)(struct pipeline *pl, struct stream *s);
    /* A stream ended, its results final; `handled` when the pipeline's
     * mode took over what its end means (a broadcast's source that
     * restarts), so that it need not be logged. */
    void (*stream_ended)(struct pipeline *pl, struct stream *s, bool handled);
    /* A connection that a listener of pl accepted after handing its
     * socket over (a reload): it belongs to whoever serves the address
     * now. fd is the hook's to keep or close. */
    void (*late_client)(struct pipeline *pl, const struct weir_address *addr,
                        int fd, const char *peer);
    /* A draining pipeline has nothing left: the owner frees it (later
     * than this call: a completion of this batch may still name it). */
    void (*drained)(struct pipeline *pl);
};

/* What a run gives its pipelines. */
struct pipeline_env {
    struct stream_ctx *cx;
    struct listenfds *lfds; /* socket activation; may be NULL */
    struct alive *alive;    /* the run's: each live pipeline holds it */
    const struct pipeline_hooks *hooks;
    void *owner;
    bool serve_once;      /* a listener takes one connection, then closes */
    bool sinks_reconnect; /* a pipeline's tcp/unix sinks reconnect */
    bool sources_restart; /* a broadcast's tcp/unix source is restarted */
    bool splice_connects; /* file -> tcp/unix sink may take the splice stage */
    bool checkpoints;     /* a followed file's stream keeps checkpoints */
};

struct pipeline {
    const struct pipeline_env *env;
    const struct weir_pipeline *p;
    const struct pl_mode *mode;
    struct conf_ref *cref; /* the config p belongs to */
    struct listener *ls;   /* one per listen address */
    unsigned nls;
    struct stream_sink_res *res; /* [p->nsinks] */
    struct stream_spec spec;     /* its streams' (not the broadcast's) */
    struct src_share share;      /* serve: the file its clients share */
    struct stream_http http;     /* http: what its connections share */
    struct http_lot lot;         /* http: its idle connections, parked */
    struct weir_list streams;
    unsigned nstreams;
    struct bcast *bc; /* the broadcast mode's */
    struct client_counts clients;
    struct alive alive;
    struct weir_timer drain; /* the drain timeout */
    bool draining;           /* removed or replaced by a reload */
    bool replaced;           /* while a reload is prepared: to drain */
    bool gone;               /* drained: the owner may free it */
    struct weir_list link;   /* in the owner's list */
};

/*
 * Builds a pipeline of p (holding cref) up to open listeners, not yet
 * accepting; a listen address that `taken(addr)` finds held by a
 * pipeline being replaced is taken over at the start rather than bound.
 * On failure, -errno with the reason logged; pipeline_free undoes it.
 */
int pipeline_prepare(struct pipeline **out, const struct pipeline_env *env,
                     const struct weir_pipeline *p, struct conf_ref *cref,
                     struct listener *(*taken)(void *owner,
                                               const struct weir_address *a));
/* Starts accepting (taking sockets over) and the mode's first streams.
 * Returns 0 or -ENOMEM (logged). */
int pipeline_start(struct pipeline *pl);
/* A connection for pl, accepted on its listener l. */
void pipeline_client(struct pipeline *pl, struct listener *l, int fd,
                     const char *peer);
/* Stops accepting, lets the streams finish up to timeout_ms, then cuts
 * them; the drained hook follows. */
void pipeline_drain(struct pipeline *pl, uint64_t timeout_ms);
/* Stops accepting and asks every stream to end (weir is stopping). */
void pipeline_stop(struct pipeline *pl);
/* Shuts its streams' client connections down; returns how many. */
unsigned pipeline_cut(struct pipeline *pl);
/* Its listener of the address a that still accepts, or NULL. */
struct listener *pipeline_listener(struct pipeline *pl,
                                   const struct weir_address *a);
/* Live streams, and the bytes they have sent so far. */
unsigned pipeline_streams(const struct pipeline *pl);
uint64_t pipeline_bytes_live(const struct pipeline *pl);
/* Calls fn for each stream of pl still running, its broadcast's too. */
void pipeline_each_stream(const struct pipeline *pl,
                          void (*fn)(void *arg, const struct stream *s),
                          void *arg);
/* Clients connected now: served, proxied or broadcast to. */
unsigned pipeline_clients(const struct pipeline *pl);
/* Frees it; at exit, or once drained. */
void pipeline_free(struct pipeline *pl);

#endif
