/*
 * broadcast.h - a live source (a followed file, a connecting tcp or unix
 * source) whose sinks are listen addresses: one shared stream, every
 * accepted client a branch of its tee, seeing what the source reads from
 * then on. broadcast.c says how clients join, leave and wait for a
 * source that is down.
 *
 * The broadcast is its pipeline's child: it owns its clients and the
 * streams of its source (one after another, as the source comes and
 * goes), holds the pipeline's liveness while any of them is there, and
 * tells the pipeline of each stream's end through the hook in its env.
 * Main thread, except what broadcast.c marks as the worker's.
 */
#ifndef WEIR_DAEMON_BROADCAST_H
#define WEIR_DAEMON_BROADCAST_H

#include <stdbool.h>

#include "conf/config.h"
#include "stream/stream.h"
#include "sys/alive.h"

struct bcast;

/* The clients a pipeline's listeners took in and turned away (max_clients,
 * out of memory, a broadcast whose source has ended). Main thread. */
struct client_counts {
    uint64_t accepted, refused;
};

struct bcast_env {
    struct stream_ctx *cx;
    const struct weir_pipeline *p;
    struct alive *alive; /* the pipeline's */
    bool restarts;       /* a tcp/unix source that ends is started again */
    /* A stream of the source ended; `handled` when the broadcast took
     * over what its end means (the source restarts), so the owner need
     * not log it. */
    void (*stream_ended)(void *owner, struct stream *s, bool handled);
    void *owner;
    struct client_counts *counts; /* the pipeline's */
};

/* Starts the first source stream. Returns 0 or -ENOMEM. */
int broadcast_start(struct bcast **out, const struct bcast_env *env);
/* An accepted client of the listen address addr (one of p's sinks). */
void broadcast_client(struct bcast *bc, const struct weir_address *addr, int fd,
                      const char *peer);
/* No more restarts; held clients are closed; the source stops. */
void broadcast_stop(struct bcast *bc);
/* Shuts the clients' connections down; returns how many. */
unsigned broadcast_cut(struct bcast *bc);
/* Clients connected or held, and the bytes sent to them by the streams
 * still running. */
unsigned broadcast_clients(const struct bcast *bc);
unsigned broadcast_streams(const struct bcast *bc);
uint64_t broadcast_bytes_live(const struct bcast *bc);
/* Calls fn for each stream of the source still running. */
void broadcast_each_stream(const struct bcast *bc,
                           void (*fn)(void *arg, const struct stream *s),
                           void *arg);
/* At exit, once the workers are gone. */
void broadcast_free(struct bcast *bc);

#endif
