/*
 * weir/pipe.h - piping a readable stream into a writable one (pipeTo and
 * pipeThrough).
 *
 * All functions: the streams' thread only (weir/stream_types.h).
 *
 * The pipe follows the Streams Standard's ReadableStreamPipeTo: it reads
 * only while the destination's desired size is > 0, writes every chunk it
 * read, and reacts to the streams' states in the spec's order:
 *   1. source errored: abort the destination with the error (unless
 *      prevent_abort);
 *   2. destination errored: cancel the source with the error (unless
 *      prevent_cancel);
 *   3. source closed: close the destination (unless prevent_close);
 *   4. destination closing or closed: cancel the source with -EPIPE
 *      (unless prevent_cancel).
 * The states are watched whether or not a read is waiting on the source:
 * a destination that errors or closes ends a pipe whose source is idle.
 * A destination still erroring (its error waits for a write at its sink)
 * is waited for: the pipe neither reads nor writes until it has errored,
 * and a chunk that reaches a read it had parked goes back to the source.
 * When the action is an abort or a cancel that fails, the pipe reports
 * that failure instead of the error it acted on.
 * Before acting, it waits until every chunk it has read has been written
 * (when the destination can still take writes). Then it unlocks both
 * streams and reports: 0 after a close, otherwise the error it acted on.
 */
#ifndef WEIR_PIPE_H
#define WEIR_PIPE_H

#include "weir/readable.h"
#include "weir/transform.h"
#include "weir/writable.h"

#ifdef __cplusplus
extern "C" {
#endif

struct weir_pipe_options {
    bool prevent_close;
    bool prevent_abort;
    bool prevent_cancel;
};

/*
 * Pipes `src` into `dst`, locking both. `opts` may be NULL (all false).
 * Returns the pipe's result when it finished at once (0 or -errno, and
 * done is not called), -EBUSY when either stream is locked, -ENOMEM, or
 * WEIR_PENDING and done(ctx, rc) when it finishes (done may be NULL). The
 * pipe's state is allocated here and freed when it finishes.
 */
int weir_pipe_to(struct weir_readable *src, struct weir_writable *dst,
                 const struct weir_pipe_options *opts, weir_done_cb done,
                 void *ctx);

/* Pipes `src` into the writable side of `tf` (as weir_pipe_to); read the
 * result from weir_transform_readable(tf). */
int weir_pipe_through(struct weir_readable *src, struct weir_transform *tf,
                      const struct weir_pipe_options *opts, weir_done_cb done,
                      void *ctx);

#ifdef __cplusplus
}
#endif

#endif /* WEIR_PIPE_H */
