/*
 * watch.h - a stream's timers on its worker (watch.c): the watch of its
 * sinks (stream_watch_start, stream_sync_idle and sink_watch_step are in
 * tail.h), the retry of its parked transforms, and a glob source's
 * prompt checkpoint.
 */
#ifndef WEIR_DAEMON_WATCH_H
#define WEIR_DAEMON_WATCH_H

#include "weir/xform.h"

struct stream;

/* Readies the retry of parked transforms (xforms.c), and the transforms'
 * stall callback (weir_xform_options.on_stall; ctx is the stream). */
void stream_kick_init(struct stream *s);
void stream_xf_stalled(void *ctx, struct weir_xform *x);

/* A glob source found, rotated or cut a file: the checkpoint text that
 * names it is made within a millisecond (checkpoint_set.c posts it to the
 * main loop, which writes it at once), so a file born and rotated away
 * between two intervals is in a checkpoint before a kill -9 can come. */
void stream_ckpt_soon(struct stream *s);

#endif
