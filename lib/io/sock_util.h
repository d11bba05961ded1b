/*
 * sock_util.h - what the endpoints and the splice stage share about their
 * sockets: the options of weir_tcp_options set on one, the reset of a
 * connection that is cut, and the clock their send bounds run on.
 */
#ifndef WEIR_IO_SOCK_UTIL_H
#define WEIR_IO_SOCK_UTIL_H

#include <stdint.h>
#include <time.h>

#include "weir/endpoint.h"

/* Sets t's options on fd, a TCP socket. Best effort: a kernel without one
 * of them, or a congestion control it refuses, still moves bytes. */
void weir__tcp_tune(int fd, const struct weir_tcp_options *t);

/* From now on a close or shutdown of fd resets the connection (SO_LINGER
 * 0): what the peer has not taken is dropped here, not sent later. */
void weir__sock_reset(int fd);

/* CLOCK_MONOTONIC in nanoseconds. */
static inline int64_t weir__mono_ns(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

#endif /* WEIR_IO_SOCK_UTIL_H */
