/*
 * tcp_tune.h - the TCP options of weir_tcp_options, set on a socket; what
 * the endpoints and the splice stage share.
 */
#ifndef WEIR_IO_TCP_TUNE_H
#define WEIR_IO_TCP_TUNE_H

#include "weir/endpoint.h"

/* Sets t's options on fd, a TCP socket. Best effort: a kernel without one
 * of them, or a congestion control it refuses, still moves bytes. */
void weir__tcp_tune(int fd, const struct weir_tcp_options *t);

#endif /* WEIR_IO_TCP_TUNE_H */
