/*
 * weir/transform.h - transform streams: a writable side whose chunks go
 * through a transformer and come out of a readable side (the WHATWG
 * TransformStream).
 *
 * All functions: the stream's thread only (weir/stream_types.h).
 *
 * Backpressure crosses the two sides as the spec has it: while the readable
 * side is full (nobody reading and its queue at the high-water mark), the
 * write in flight on the writable side waits, so the writable side's queue
 * fills and its writer sees backpressure in turn. A read on the readable
 * side (its pull) releases the waiting write. A write held that way when
 * the writable side is aborted settles with the abort's reason at that
 * pull, untransformed.
 */
#ifndef WEIR_TRANSFORM_H
#define WEIR_TRANSFORM_H

#include "weir/readable.h"
#include "weir/writable.h"

#ifdef __cplusplus
extern "C" {
#endif

struct weir_transform;

/* The transformer. Every member may be NULL; a NULL transform passes each
 * chunk through unchanged (the identity transform). */
struct weir_transformer_ops {
    /* Called once, by weir_transform_create, before either side starts:
     * may enqueue. 0, WEIR_PENDING (then call weir_transform_done; until
     * then neither side starts: writes queue, reads wait) or -errno, which
     * errors both sides. */
    int (*start)(struct weir_transform *tf, void *ctx);
    /* Takes `chunk` and enqueues results with weir_transform_enqueue. 0,
     * WEIR_PENDING (then call weir_transform_done) or -errno, which errors
     * both sides. */
    int (*transform)(struct weir_transform *tf, void *ctx,
                     struct weir_chunk chunk);
    /* The writable side closed: enqueue what is left. Same results; the
     * readable side closes after it. A flush that errors the transform
     * (weir_transform_error) fails the close with that error. Not called
     * after cancel. */
    int (*flush)(struct weir_transform *tf, void *ctx);
    /* The readable side was cancelled with `reason`, or the writable
     * side aborted with it: called once, and not after flush. 0, or -errno
     * to report failure (the cancel or abort returns it, and the other
     * side errors with it instead of `reason`). */
    int (*cancel)(struct weir_transform *tf, void *ctx, int reason);
};

struct weir_transform_options {
    struct weir_strategy writable; /* spec default: count, hwm 1 */
    struct weir_strategy readable; /* spec default: count, hwm 0 */
    unsigned slot;
};

/* Creates a transform (the two sides and the link between them). `opts`
 * NULL means the spec's defaults. Returns 0 or -ENOMEM. */
int weir_transform_create(struct weir_transform **out,
                          const struct weir_transformer_ops *ops, void *ctx,
                          const struct weir_transform_options *opts);

/* Frees the transform and both its sides; neither may still be locked by
 * a running pipe. Not from inside the transform's own callbacks. */
void weir_transform_destroy(struct weir_transform *tf);

/* The two sides; they belong to the transform (do not destroy them). */
struct weir_readable *weir_transform_readable(struct weir_transform *tf);
struct weir_writable *weir_transform_writable(struct weir_transform *tf);

/* Transformer. Emits a chunk on the readable side (weir_readable_enqueue's
 * results). */
int weir_transform_enqueue(struct weir_transform *tf, struct weir_chunk chunk);

/* Transformer. Finishes a start, transform or flush that returned
 * WEIR_PENDING: rc 0, or -errno to error both sides. */
void weir_transform_done(struct weir_transform *tf, int rc);

/* Transformer. Errors both sides with err; a write held back by
 * backpressure fails with it now. */
void weir_transform_error(struct weir_transform *tf, int err);

/* Transformer. Closes the readable side and errors the writable side with
 * -EPIPE: no more input will be taken (a write held back by backpressure
 * fails with -EPIPE now). */
void weir_transform_terminate(struct weir_transform *tf);

/* The readable side's desired size. */
int64_t weir_transform_desired_size(const struct weir_transform *tf);

#ifdef __cplusplus
}
#endif

#endif /* WEIR_TRANSFORM_H */
