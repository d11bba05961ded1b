/*
 * endpoint_base.h - what every endpoint is: the common base each kind of
 * endpoint embeds as its first member, the table of what a kind does
 * (chosen by its constructor), and the base's helpers. Private to lib/io.
 *
 * A kind is one file (endpoint_file.c, endpoint_fd_source.c,
 * endpoint_fd_sink.c, endpoint_socket.c, endpoint_null.c): a struct that
 * begins with a struct weir_endpoint, a const struct ep_ops, and its
 * constructor. The kinds call the base and the helpers beside it
 * (endpoint_sink.h and the files it names), never one another; the base
 * reaches a kind only through its ops.
 *
 * Every operation an endpoint starts is counted in `inflight` when queued
 * and uncounted first thing in its callback. After weir_endpoint_destroy,
 * callbacks only release what they held; the last one schedules the free
 * with weir_loop_defer (the loop's mark and reap), so no completion later
 * in the same batch can touch freed memory.
 */
#ifndef WEIR_IO_ENDPOINT_BASE_H
#define WEIR_IO_ENDPOINT_BASE_H

#include <stddef.h>

#include "weir/endpoint.h"

#define EP_CONTAINER(ptr, type, member)                                        \
    ((type *)(void *)((char *)(ptr)-offsetof(type, member)))

struct weir_endpoint;

/*
 * What a kind does. source or sink is its stream's ops (pull and cancel;
 * start, write, close, abort), the other NULL. The rest are called by the
 * base's public functions; a NULL member means the call does nothing there
 * (or returns -EINVAL).
 */
struct ep_ops {
    const struct weir_source_ops *source;
    const struct weir_sink_ops *sink;
    /* weir_endpoint_stop, before the endpoint is destroyed. */
    void (*stop)(struct weir_endpoint *ep);
    /* weir_endpoint_cut, before the endpoint is destroyed. */
    void (*cut)(struct weir_endpoint *ep);
    /* weir_endpoint_acked (stats). */
    int (*acked)(const struct weir_endpoint *ep, uint64_t *acked);
    /* weir_endpoint_file_position. */
    int (*position)(const struct weir_endpoint *ep,
                    struct weir_file_position *pos);
    /* weir_endpoint_destroy: the kind lets go of its stream (a sink's
     * batch still out keeps it until the free) and cancels its ops. */
    void (*close)(struct weir_endpoint *ep);
    /* The free, nothing in flight: what the kind holds, but the fd and
     * the endpoint's memory, which the base frees after. */
    void (*release)(struct weir_endpoint *ep);
};

struct weir_endpoint {
    const struct ep_ops *ops;
    struct weir_loop *loop;
    unsigned slot; /* the loop's thread slot, for dropping chunks */
    int fd;        /* -1: none (a null sink, a socket sink that is down) */
    bool own_fd;
    bool is_socket;
    struct weir_readable *rs; /* a source's stream */
    struct weir_writable *ws; /* a sink's stream */
    uint64_t bytes;           /* read or delivered, for weir_endpoint_bytes */
    _Atomic uint64_t *counter;

    uint32_t inflight;
    bool destroyed, reaping;
    bool stopping; /* weir_endpoint_stop was called */
    struct weir_reap reap;
    struct weir_timer timer; /* retries, follow polls, backoff, linger */
    void (*on_timer)(struct weir_endpoint *ep);
};

/*
 * Allocates a kind's struct of `size` bytes (zeroed), whose first member
 * is the base, and sets the base up: fd (-1: none), and when fd is a TCP
 * socket, tcp's options on it (tcp may be NULL). NULL when out of memory;
 * then an fd owned is closed.
 */
void *weir__ep_new(size_t size, const struct ep_ops *ops,
                   struct weir_loop *loop, int fd, bool own_fd,
                   _Atomic uint64_t *counter,
                   const struct weir_tcp_options *tcp);
/* The kind's stream (ops->source or ops->sink) with its high-water mark
 * in bytes; on failure the endpoint is freed. */
int weir__ep_open_stream(struct weir_endpoint *ep, uint64_t hwm);
/* Frees at once: a constructor that failed, or the reap. */
void weir__ep_free_now(struct weir_endpoint *ep);

/* Counts a queued op; uncounts one in its callback. weir__ep_op_done returns
 * true when the endpoint was destroyed: the callback releases and returns. */
static inline void ep_op_started(struct weir_endpoint *ep)
{
    ep->inflight++;
}
bool weir__ep_op_done(struct weir_endpoint *ep);
/* An op counted but never queued after all (its start failed). */
static inline void ep_op_unstarted(struct weir_endpoint *ep)
{
    ep->inflight--;
}

/* Arms the endpoint's timer to call fn after ns (unless it is armed). */
int weir__ep_timer(struct weir_endpoint *ep, uint64_t ns,
                   void (*fn)(struct weir_endpoint *ep));
void weir__ep_timer_stop(struct weir_endpoint *ep);

/* n bytes read or delivered: weir_endpoint_bytes and the counter. */
void weir__ep_count(struct weir_endpoint *ep, uint64_t n);

/* Sets t's options on fd when it is a TCP socket of `family`. */
void weir__ep_tcp_tune(const struct weir_tcp_options *t, int fd, int family);

/*
 * What a sink's far side has (endpoint_ack.c). queue_acked: of `sent`
 * bytes handed to fd's kernel, those that left its send queue (any
 * socket). conn_acked: of `sent` bytes handed to a connection the sink
 * made itself (family: its address's), those its peer acknowledged; 0
 * when it cannot tell.
 */
uint64_t weir__ep_queue_acked(int fd, uint64_t sent);
uint64_t weir__ep_conn_acked(int fd, int family, uint64_t sent);

#endif
