/*
 * transform.c - transform streams: a sink (the writable side) and a source
 * (the readable side) sharing one transformer.
 *
 * `backpressure` is the spec's [[backpressure]]: true while the readable
 * side would not pull (full and nobody reading). A write arriving then is
 * held as `pending` and reported to the writable side as in flight; the
 * readable side's next pull clears the flag and runs the held write. It
 * starts true, as in the spec, so nothing is transformed before someone
 * reads.
 */
#include <errno.h>

#include "alloc.h"
#include "stream_impl.h"

enum { OP_NONE, OP_TRANSFORM, OP_FLUSH, OP_START };

struct weir_transform {
    struct weir_readable *rs;
    struct weir_writable *ws;
    const struct weir_transformer_ops *ops;
    void *ctx;
    struct weir_chunk pending;
    unsigned slot;
    uint8_t op; /* the transformer's outstanding operation */
    bool backpressure, has_pending;
    /* The transformer's flush or cancel has been called: the spec's
     * finishPromise, after which neither is called again. */
    bool finishing;
};

/* The spec's ReadableStreamDefaultControllerHasBackpressure. */
static bool tf_full(const struct weir_transform *tf)
{
    const struct weir_readable *rs = tf->rs;

    if (weir_rs_read_waits(rs))
        return false;
    return weir_rs_desired(rs) <= 0;
}

int weir_transform_enqueue(struct weir_transform *tf, struct weir_chunk chunk)
{
    int rc = weir_readable_enqueue(tf->rs, chunk);

    if (rc == 0 && tf_full(tf))
        tf->backpressure = true;
    return rc;
}

/* Runs the transformer on one chunk; the writable side's write result. */
static int tf_perform(struct weir_transform *tf, struct weir_chunk chunk)
{
    int rc;

    if (!tf->ops || !tf->ops->transform)
        return weir_transform_enqueue(tf, chunk);
    tf->op = OP_TRANSFORM;
    rc = tf->ops->transform(tf, tf->ctx, chunk);
    if (rc == WEIR_PENDING)
        return rc;
    tf->op = OP_NONE;
    if (rc < 0)
        weir_readable_error(tf->rs, rc);
    return rc;
}

/* Settles the write held back by backpressure, without running it, with
 * err (the spec's TransformStreamUnblockWrite, seen from the write). */
static void tf_drop_held(struct weir_transform *tf, int err)
{
    if (!tf->has_pending)
        return;
    tf->has_pending = false;
    weir_chunk_unref(&tf->pending, tf->slot);
    weir_writable_write_done(tf->ws, err);
}

static int tf_sink_write(struct weir_writable *ws, void *ctx,
                         struct weir_chunk chunk)
{
    struct weir_transform *tf = ctx;

    (void)ws;
    if (tf->backpressure) {
        tf->pending = chunk;
        tf->has_pending = true;
        return WEIR_PENDING;
    }
    return tf_perform(tf, chunk);
}

static int tf_finish_flush(struct weir_transform *tf, int rc)
{
    tf->op = OP_NONE;
    if (rc < 0) {
        weir_readable_error(tf->rs, rc);
        return rc;
    }
    /* The flush errored the transform itself: the close fails with that
     * error (the spec's check of the readable side after flush). */
    if (tf->rs->state == RS_ERRORED)
        return tf->rs->err;
    if (!tf->rs->close_requested && tf->rs->state == RS_READABLE)
        weir_readable_close(tf->rs);
    return 0;
}

static int tf_sink_close(struct weir_writable *ws, void *ctx)
{
    struct weir_transform *tf = ctx;
    int rc = 0;

    (void)ws;
    if (tf->finishing)
        return tf->rs->state == RS_ERRORED ? tf->rs->err : 0;
    tf->finishing = true;
    if (tf->ops && tf->ops->flush) {
        tf->op = OP_FLUSH;
        rc = tf->ops->flush(tf, tf->ctx);
        if (rc == WEIR_PENDING)
            return rc;
    }
    return tf_finish_flush(tf, rc);
}

/* The transformer's cancel, once, for a cancel or an abort. */
static int tf_call_cancel(struct weir_transform *tf, int reason)
{
    if (tf->finishing)
        return 0;
    tf->finishing = true;
    if (tf->ops && tf->ops->cancel)
        return tf->ops->cancel(tf, tf->ctx, reason);
    return 0;
}

static int tf_sink_abort(struct weir_writable *ws, void *ctx, int reason)
{
    struct weir_transform *tf = ctx;
    int rc = tf_call_cancel(tf, reason);

    (void)ws;
    if (tf->rs->state == RS_ERRORED)
        return rc < 0 ? rc : tf->rs->err;
    weir_readable_error(tf->rs, rc < 0 ? rc : reason);
    return rc < 0 ? rc : 0;
}

static int tf_source_pull(struct weir_readable *rs, void *ctx)
{
    struct weir_transform *tf = ctx;
    int rc;

    (void)rs;
    tf->backpressure = false;
    if (tf->has_pending) {
        if (tf->ws->state != WS_WRITABLE) {
            /* Aborted or errored while the write was held: it fails
             * with the writable side's error and is never transformed. */
            tf_drop_held(tf, tf->ws->err);
            return 0;
        }
        tf->has_pending = false;
        rc = tf_perform(tf, tf->pending);
        if (rc != WEIR_PENDING)
            weir_writable_write_done(tf->ws, rc);
    }
    /* A reader wants a chunk: a writable side with hwm 0, which never has
     * room of its own, lets its writer go (whatwg/streams #1190). The
     * readable side is made first, and may be pulled before the writable
     * side exists. */
    if (tf->ws)
        weir_writable_release_backpressure(tf->ws);
    return 0;
}

static int tf_source_cancel(struct weir_readable *rs, void *ctx, int reason)
{
    struct weir_transform *tf = ctx;
    int rc = tf_call_cancel(tf, reason);

    (void)rs;
    /* Errored (not merely erroring, which an abort still settling is):
     * the cancel reports the writable side's error. */
    if (tf->ws->state == WS_ERRORED && rc == 0)
        rc = tf->ws->err;
    else
        weir_writable_error(tf->ws, rc < 0 ? rc : reason);
    /* The held write will never run: drop it and settle it. */
    tf_drop_held(tf, tf->ws->err);
    return rc;
}

/* Both sides wait for the transformer's start (the spec's
 * startPromise). */
static int tf_side_start_rs(struct weir_readable *rs, void *ctx)
{
    (void)rs;
    (void)ctx;
    return WEIR_PENDING;
}

static int tf_side_start_ws(struct weir_writable *ws, void *ctx)
{
    (void)ws;
    (void)ctx;
    return WEIR_PENDING;
}

static const struct weir_sink_ops tf_sink_ops = {
    .write = tf_sink_write,
    .close = tf_sink_close,
    .abort = tf_sink_abort,
};

static const struct weir_source_ops tf_source_ops = {
    .pull = tf_source_pull,
    .cancel = tf_source_cancel,
};

static const struct weir_sink_ops tf_sink_ops_started = {
    .start = tf_side_start_ws,
    .write = tf_sink_write,
    .close = tf_sink_close,
    .abort = tf_sink_abort,
};

static const struct weir_source_ops tf_source_ops_started = {
    .start = tf_side_start_rs,
    .pull = tf_source_pull,
    .cancel = tf_source_cancel,
};

/* The transformer's start finished with rc: both sides start (or
 * error). */
static void tf_start_done(struct weir_transform *tf, int rc)
{
    tf->op = OP_NONE;
    weir_readable_start_done(tf->rs, rc);
    weir_writable_start_done(tf->ws, rc);
}

int weir_transform_create(struct weir_transform **out,
                          const struct weir_transformer_ops *ops, void *ctx,
                          const struct weir_transform_options *opts)
{
    struct weir_transform *tf = weir_core_zalloc(sizeof(*tf));
    struct weir_writable_options wo = {.strategy = {.hwm = 1}};
    struct weir_readable_options ro = {.strategy = {.hwm = 0}};
    bool start = ops && ops->start;
    int rc;

    if (!tf)
        return -ENOMEM;
    if (opts) {
        wo.strategy = opts->writable;
        ro.strategy = opts->readable;
        wo.slot = ro.slot = tf->slot = opts->slot;
    }
    tf->ops = ops;
    tf->ctx = ctx;
    tf->backpressure = true;
    rc = weir_readable_create(
        &tf->rs, start ? &tf_source_ops_started : &tf_source_ops, tf, &ro);
    if (rc == 0)
        rc = weir_writable_create(
            &tf->ws, start ? &tf_sink_ops_started : &tf_sink_ops, tf, &wo);
    if (rc) {
        weir_readable_destroy(tf->rs);
        weir_core_free(tf);
        return rc;
    }
    *out = tf;
    if (start) {
        tf->op = OP_START;
        rc = ops->start(tf, ctx);
        if (rc != WEIR_PENDING)
            tf_start_done(tf, rc);
    }
    return 0;
}

void weir_transform_destroy(struct weir_transform *tf)
{
    if (!tf)
        return;
    if (tf->has_pending)
        weir_chunk_unref(&tf->pending, tf->slot);
    weir_readable_destroy(tf->rs);
    weir_writable_destroy(tf->ws);
    weir_core_free(tf);
}

struct weir_readable *weir_transform_readable(struct weir_transform *tf)
{
    return tf->rs;
}

struct weir_writable *weir_transform_writable(struct weir_transform *tf)
{
    return tf->ws;
}

void weir_transform_done(struct weir_transform *tf, int rc)
{
    uint8_t op = tf->op;

    tf->op = OP_NONE;
    if (op == OP_START) {
        tf_start_done(tf, rc);
    } else if (op == OP_TRANSFORM) {
        if (rc < 0)
            weir_readable_error(tf->rs, rc);
        weir_writable_write_done(tf->ws, rc);
    } else if (op == OP_FLUSH) {
        weir_writable_close_done(tf->ws, tf_finish_flush(tf, rc));
    }
}

void weir_transform_error(struct weir_transform *tf, int err)
{
    weir_readable_error(tf->rs, err);
    weir_writable_error(tf->ws, err);
    /* A write held back by backpressure settles with the error now
     * rather than waiting for a read that cannot come. */
    tf_drop_held(tf, tf->ws->err);
}

void weir_transform_terminate(struct weir_transform *tf)
{
    if (!tf->rs->close_requested && tf->rs->state == RS_READABLE)
        weir_readable_close(tf->rs);
    weir_writable_error(tf->ws, -EPIPE);
    tf_drop_held(tf, tf->ws->err);
}

int64_t weir_transform_desired_size(const struct weir_transform *tf)
{
    return weir_readable_desired_size(tf->rs);
}
