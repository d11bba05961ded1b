/*
 * weir/endpoint.h - files, sockets and standard streams as the underlying
 * sources and sinks of core streams, running on one loop.
 *
 * An endpoint belongs to the thread that owns its loop (a worker), and its
 * stream (weir_endpoint_readable or weir_endpoint_writable) is a core
 * stream of that thread: pipe it, tee it, read it. Chunks a source
 * produces are buffers of the pool it was given, which must be the same
 * thread's pool (weir_worker_pool()); chunks a sink receives may come from
 * any pool and are dropped on the loop's thread slot.
 *
 * Sources:
 *   file   reads at explicit offsets, `depth` reads in flight, chunks
 *          enqueued in file order; `follow` keeps reading what is appended,
 *          also after the file was truncated (then from its start again).
 *   fd     one read in flight (recv on a socket, read elsewhere: stdin,
 *          pipes, ttys); ends when the read returns 0.
 * Sinks:
 *   fd     a writev of the queued chunks (sendmsg on a socket: one send in
 *          flight per socket, short sends resumed); regular files are opened
 *          by the caller (O_APPEND or not) and written at their position.
 *   socket an fd sink that owns its connection: connects to `addr` on
 *          start, and, when `reconnect` is set, reconnects with exponential
 *          backoff while the peer is down or after it went away (see
 *          weir_endpoint_socket_sink).
 *   null   discards.
 *
 * Lifetime: weir_endpoint_destroy destroys the stream (which must no longer
 * be locked by a pipe or tee), cancels the endpoint's operations, closes
 * its fd, and frees it once the kernel has finished with its memory.
 */
#ifndef WEIR_ENDPOINT_H
#define WEIR_ENDPOINT_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/socket.h>

#include "weir/loop.h"
#include "weir/pool.h"
#include "weir/readable.h"
#include "weir/writable.h"

#ifdef __cplusplus
extern "C" {
#endif

struct weir_endpoint;

/* What a socket sink or a followed file tells its owner, for logging. */
enum weir_endpoint_event {
    WEIR_EP_CONNECTED,    /* err 0; a connection is up */
    WEIR_EP_CONNECT_FAIL, /* err: why; a retry is scheduled */
    WEIR_EP_DISCONNECTED, /* err: why; a reconnect follows */
    WEIR_EP_RESUMED,      /* err 0; resending from the acked offset */
    /* A followed file (follow_path). offset: where reading was in it. */
    WEIR_EP_ROTATED,   /* the path names another file: reading it from 0 */
    WEIR_EP_TRUNCATED, /* the file was cut (copytruncate): reading from 0 */
    WEIR_EP_APPEARED,  /* the path that did not exist yet was opened */
};

typedef void (*weir_endpoint_event_fn)(void *arg, enum weir_endpoint_event ev,
                                       int err, uint64_t offset);

struct weir_endpoint_options {
    uint32_t chunk_size; /* bytes per read; 0: the pool's buffer size */
    uint64_t hwm;        /* the stream's high-water mark in bytes; 0: 1 MiB */
    /* File source. */
    uint32_t depth;   /* reads in flight, 2..64; 0: 4 */
    uint64_t offset;  /* where reading starts */
    bool follow;      /* keep reading what is appended */
    uint64_t poll_ns; /* follow: how often to look at the size; 0: 100 ms */
    /* Follow: the file's path, watched for rotation (see endpoint_file.c);
     * with it the fd may be -1 (the file does not exist yet). NULL: the
     * fd alone. Requires own_fd. */
    const char *follow_path;
    weir_endpoint_event_fn on_event; /* file source; may be NULL */
    void *event_arg;
    bool own_fd; /* close the fd on destroy (sources and fd sinks) */
    /* An fd sink on a socket: after the last byte its close shuts the
     * sending side down and reads (and drops) what the peer still sends,
     * up to 1 MiB, until the peer closes or linger_ns have passed, so
     * that closing never resets a connection whose peer has not read
     * everything yet (a client that sent a request). 0: close at once. */
    uint64_t linger_ns;
    /* Statistics: bytes delivered (sinks) or read (sources) are added here
     * when not NULL, relaxed: another thread may sample it. */
    _Atomic uint64_t *counter;
};

/* Options of a socket sink that connects by itself. */
struct weir_socket_sink_options {
    struct sockaddr_storage addr;
    socklen_t addrlen;
    bool reconnect;          /* retry while down, reconnect after a loss */
    uint64_t backoff_min_ns; /* first retry delay; 0: 100 ms */
    uint64_t backoff_max_ns; /* cap of the doubling; 0: 10 s */
    /* A regular file whose bytes [replay_base, ...) are this stream's
     * bytes, or -1. With it, a reconnect resends from the last byte the
     * old connection's peer acknowledged (TCP_INFO tcpi_bytes_acked);
     * without it, what the old connection had sent but not had
     * acknowledged is lost. Not closed by the endpoint. */
    int replay_fd;
    uint64_t replay_base;
    weir_endpoint_event_fn on_event; /* may be NULL */
    void *event_arg;
};

/*
 * Owner of `loop`. Each creates the endpoint and its stream. Returns 0,
 * -EINVAL (bad options), -ENOMEM. On failure an fd marked own_fd is
 * closed.
 */
int weir_endpoint_file_source(struct weir_endpoint **out,
                              struct weir_loop *loop, struct weir_pool *pool,
                              int fd, const struct weir_endpoint_options *o);
int weir_endpoint_fd_source(struct weir_endpoint **out, struct weir_loop *loop,
                            struct weir_pool *pool, int fd,
                            const struct weir_endpoint_options *o);
int weir_endpoint_fd_sink(struct weir_endpoint **out, struct weir_loop *loop,
                          int fd, const struct weir_endpoint_options *o);
int weir_endpoint_socket_sink(struct weir_endpoint **out,
                              struct weir_loop *loop,
                              const struct weir_endpoint_options *o,
                              const struct weir_socket_sink_options *so);
int weir_endpoint_null_sink(struct weir_endpoint **out, struct weir_loop *loop,
                            const struct weir_endpoint_options *o);

/* Owner. The endpoint's stream (NULL for the other direction). */
struct weir_readable *weir_endpoint_readable(struct weir_endpoint *ep);
struct weir_writable *weir_endpoint_writable(struct weir_endpoint *ep);

/* Owner. Bytes read (source) or written (sink) so far. */
uint64_t weir_endpoint_bytes(const struct weir_endpoint *ep);

/* Owner. A source ends its stream cleanly (close, not error) as soon as
 * the reads in flight have been delivered: what was read still flows. A
 * sink that lingers (linger_ns) stops lingering. */
void weir_endpoint_stop(struct weir_endpoint *ep);

/* Owner. See "Lifetime" above. Safe inside the stream's callbacks. */
void weir_endpoint_destroy(struct weir_endpoint *ep);

/* Owner. A socket sink gives up now: one that is down or connecting fails
 * its pending write with -ECANCELED, a connection is shut down so its
 * pending send fails, and it never reconnects from here on; its stream
 * then ends through the usual error path. Other endpoints: nothing. For
 * an owner that stopped waiting (a drain that timed out). */
void weir_endpoint_cut(struct weir_endpoint *ep);

#ifdef __cplusplus
}
#endif

#endif /* WEIR_ENDPOINT_H */
