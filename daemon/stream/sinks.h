/*
 * sinks.h - a stream's sinks (sinks.c); stream_peer_options and
 * stream_tee_policy are in tail.h, stream_tcp_options in stream.h.
 */
#ifndef WEIR_DAEMON_SINKS_H
#define WEIR_DAEMON_SINKS_H

#include "weir/readable.h"

struct stream;

/* Makes the stream's sinks, fed by rs. */
void stream_sinks_build(struct stream *s, struct weir_readable *rs);

#endif
