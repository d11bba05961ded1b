/*
 * watch.h - a stream's timers on its worker (watch.c): the watch of its
 * sinks (stream_watch_start, stream_sync_idle and sink_watch_step are in
 * tail.h) and the retry of its parked transforms.
 */
#ifndef WEIR_DAEMON_WATCH_H
#define WEIR_DAEMON_WATCH_H

#include "weir/xform.h"

struct stream;

/* Readies the retry of parked transforms (xforms.c), and the transforms'
 * stall callback (weir_xform_options.on_stall; ctx is the stream). */
void stream_kick_init(struct stream *s);
void stream_xf_stalled(void *ctx, struct weir_xform *x);

#endif
