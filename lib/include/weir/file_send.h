/*
 * weir/file_send.h - the zero-copy stage: a byte range of a regular file into
 * a socket with no buffer of ours in between. Two mechanisms: a pipe with
 * linked io_uring SPLICE pairs (file -> pipe, pipe -> socket), or, with
 * the `sendfile` option, sendfile(2) on the loop's thread each time the
 * socket is writable, which needs no pipe and holds nothing but page-cache
 * pages referenced by the socket's queue (a file whose pages are not
 * cached is read from disk on the loop's thread, as nginx's sendfile does).
 *
 * It is not a core stream: no chunk ever exists, so there is nothing to
 * pipe, tee or transform. The daemon chooses it instead of the stream path
 * for a plain file -> socket stream (one sink, no transform, no follow),
 * where the measurement says it is faster; everything else takes streams.
 *
 * Owner thread of `loop` only.
 */
#ifndef WEIR_FILE_SEND_H
#define WEIR_FILE_SEND_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/socket.h>

#include "weir/endpoint.h"
#include "weir/loop.h"
#include "weir/stream_types.h"

#ifdef __cplusplus
extern "C" {
#endif

struct weir_file_send;

struct weir_file_send_options {
    uint64_t offset;    /* first byte of the file to send */
    uint64_t length;    /* bytes to send; UINT64_MAX: to the end */
    uint32_t pipe_size; /* bytes per splice pair; 0: 1 MiB */
    /* sendfile(2) when the socket is writable instead of a pipe (the
     * socket is in non-blocking mode while it sends); pipe_size unused. */
    bool sendfile;
    uint32_t sendfile_max; /* bytes per sendfile call; 0: 1 MiB */
    /* file_fd and sock_fd stay the caller's: the stage never closes them
     * (a file shared by many stages, a socket the caller closes later). */
    bool keep_fds;
    /* The socket stays open for more after the range (an HTTP response
     * on a kept-alive connection): its write side is not shut down and
     * linger_ns is unused. */
    bool keep_open;
    uint64_t max_length;       /* a longer range: -EFBIG; 0: no limit */
    _Atomic uint64_t *counter; /* bytes sent are added here (relaxed) */
    /* After the range: read and drop what the peer sends, until it closes
     * or linger_ns passed, before done runs (weir_fd_sink_options's
     * linger_ns says why). 0: done at once. */
    uint64_t linger_ns;
    /* When sock_fd is -1: connect to this address first (once). */
    const struct sockaddr *connect_addr;
    socklen_t connect_addrlen;
    /* Set on sock_fd (then a TCP socket), or on the socket the stage
     * connects when connect_addr is an IPv4 or IPv6 one. */
    struct weir_tcp_options tcp;
    /* A socket that takes no byte for this long fails the stage with
     * -ETIMEDOUT, its connection reset (weir_peer_options's
     * send_timeout_ns). 0: no bound. */
    uint64_t send_timeout_ns;
};

/*
 * Starts sending. Returns 0, and done(ctx, rc) runs once when the range
 * was sent (rc 0; the socket's write side is shut down) or failed (rc
 * -errno); or -errno at once, done not called: -EMFILE / -ENFILE / -EPERM
 * when no pipe of the wanted size can be had (the per-user pipe limits),
 * -EFBIG when the range is longer than max_length; the caller then takes
 * the stream path. Both fds are the stage's
 * from a successful start: it closes them, unless keep_fds.
 */
int weir_file_send_start(struct weir_file_send **out, struct weir_loop *loop,
                         int file_fd, int sock_fd,
                         const struct weir_file_send_options *o,
                         weir_done_cb done, void *ctx);

/* Bytes the socket took so far. */
uint64_t weir_file_send_bytes(const struct weir_file_send *sp);

/* Stops (if running; done is not called after this) and frees the stage
 * once the kernel has finished with it. Safe inside done. */
void weir_file_send_destroy(struct weir_file_send *sp);

#ifdef __cplusplus
}
#endif

#endif /* WEIR_FILE_SEND_H */
