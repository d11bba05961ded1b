/*
 * tail.h - a last stage that a stream's maker supplies instead of the
 * pipeline's sinks (a broadcast's live tee, serve/broadcast_hub.c), and
 * what such a stage may do with its stream on the stream's worker.
 *
 * Worker thread: everything here runs on the stream's worker, from the
 * stage's callbacks or from tasks the maker posts there.
 */
#ifndef WEIR_DAEMON_TAIL_H
#define WEIR_DAEMON_TAIL_H

#include <stdbool.h>
#include <stdint.h>

#include "conf/config.h"
#include "stream/stream.h"
#include "weir/endpoint.h"
#include "weir/loop.h"
#include "weir/stream.h"
#include "weir/tee.h"
#include "weir/xform.h"

/*
 * The last stage. build takes the output of the transforms; teardown
 * runs when the stream ends; watch is the stream's watch (every ~250 ms,
 * or when it asks) and returns when to watch next, in ns.
 */
struct stream_tail {
    void (*build)(struct stream *s, struct weir_readable *rs);
    void (*teardown)(struct stream *s);
    uint64_t (*watch)(struct stream *s, int64_t now);
};

/* The stream's worker loop. */
struct weir_loop *stream_loop(const struct stream *s);
/* The stage's own state, kept for it by the stream (NULL at first). */
void *stream_tail_state(const struct stream *s);
void stream_set_tail_state(struct stream *s, void *state);

/* A hold on the stream: it does not end while one is taken. The build
 * holds it; the stage takes one per pipe it starts, and puts it back
 * when the pipe ends (the last put may end the stream). */
void stream_hold(struct stream *s);
void stream_put(struct stream *s);

/* Starts the stream's watch timer, which calls the stage's watch. */
void stream_watch_start(struct stream *s);
/* One watch's idle sync of the stream's transforms (watch.c); nothing
 * without transforms. */
void stream_sync_idle(struct stream *s);
/* The stream's last transform, or NULL. */
struct weir_xform *stream_last_xform(const struct stream *s);

/* Every byte of the stage's input (the last transform's output) before
 * `acked` has reached every block client, of `made` so far
 * (source_ack.c): a jetstream source acknowledges what that covers. */
void stream_source_acked_out(struct stream *s, uint64_t acked, uint64_t made);
/* While nobody takes the stage's output (a broadcast with no client), a
 * jetstream source reads nothing more: its stream keeps its messages. */
void stream_source_hold(struct stream *s, bool hold);
/* The source failed with rc (the first error is kept). */
void stream_source_failed(struct stream *s, int rc);
/* A share of sink i's results that the stage counted itself (a client of
 * a broadcast that left): bytes delivered, lost, and time blocked. */
void stream_sink_add(struct stream *s, unsigned i, uint64_t bytes,
                     uint64_t lost, uint64_t blocked_ns);
/* Adds to sink i's live blocked time (struct sink_live). */
void stream_sink_blocked(struct stream *s, unsigned i, uint64_t ns);
/* Where sink i's endpoint adds what it delivers. */
_Atomic uint64_t *stream_sink_counter(struct stream *s, unsigned i);

/* tls.c: a TLS session on fd for address a (server for tls-listen,
 * client for tls), or *out NULL when a is not TLS. 0 or -errno. */
int stream_tls_open(struct stream *s, const struct weir_address *a, int fd,
                    struct weir_tls_session **out);

/* sinks.c. The pipeline's peer settings (keepalive, TCP_USER_TIMEOUT,
 * the congestion control, the send bound) into the options of an
 * endpoint on a connection of address a. A connection a listener
 * accepted (a listens) has its listener's TCP options already
 * (serve/listener.c), so it is given none: a client costs no setsockopt.
 * stream_tee_policy is the tee's name for an on_full. */
void stream_peer_options(const struct weir_pipeline *p,
                         const struct weir_address *a,
                         struct weir_peer_options *o);
enum weir_tee_policy stream_tee_policy(enum on_full f);

/* How long a served client's connection may stay after the last byte, for
 * the client to read it before weir closes (weir_fd_sink_options's
 * linger_ns; nginx's lingering_timeout is the same). */
#define STREAM_LINGER_NS (5ull * 1000 * 1000 * 1000)

/* The watch of one block sink's queue (sink_watch_step). */
struct sink_watch {
    int64_t full_since;  /* when its queue was first seen full; 0: not */
    int64_t room_since;  /* when it was first seen with room; 0: full */
    int64_t warned;      /* when it was last warned about */
    uint64_t full_bytes; /* its bytes when it filled */
};

/*
 * watch.c. One watch of a block sink: adds the interval to *blocked_ns
 * while its queue is full, and returns how long it has been full when a
 * "held the source back" warning is due (full for 5 s, and stuck or
 * slower than others: `others` says some other sink is not full), else 0.
 */
int64_t sink_watch_step(struct sink_watch *w, bool full, uint64_t bytes,
                        int64_t now, bool others, uint64_t chunk,
                        uint64_t *blocked_ns);
#define SINK_WATCH_NS (250ull * 1000 * 1000)

#endif
