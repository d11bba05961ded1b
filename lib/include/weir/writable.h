/*
 * weir/writable.h - writable streams, their controller and writers: the
 * WHATWG WritableStream in C.
 *
 * All functions: the stream's thread only (weir/stream_types.h, which also
 * gives the result codes and the ownership of chunks).
 *
 * Writes reach the underlying sink one at a time, in order: the sink never
 * has more than one write (or one writev batch) outstanding. A write that
 * arrives while the sink is idle goes straight to it, so a sink that
 * finishes synchronously costs one call per chunk and no queueing. Writes
 * that arrive while the sink is busy queue, and when the sink finishes, all
 * of them go to its writev at once (up to WEIR_WRITEV_MAX), when it has
 * one. The queue, in-flight writes included, counts against the
 * high-water mark: desired size = hwm - queued.
 */
#ifndef WEIR_WRITABLE_H
#define WEIR_WRITABLE_H

#include "weir/internal/writable.h"
#include "weir/stream_types.h"

#ifdef __cplusplus
extern "C" {
#endif

struct weir_writable;

/* Most chunks handed to one writev call. */
#define WEIR_WRITEV_MAX 64u

/* The underlying sink. Every member may be NULL (a NULL write drops the
 * chunk). */
struct weir_sink_ops {
    /* Called once, by weir_writable_create. 0, WEIR_PENDING (then call
     * weir_writable_start_done) or -errno. */
    int (*start)(struct weir_writable *ws, void *ctx);
    /* Takes `chunk` (the sink's now, even on failure). 0, WEIR_PENDING
     * (then call weir_writable_write_done once) or -errno, which errors
     * the stream. */
    int (*write)(struct weir_writable *ws, void *ctx, struct weir_chunk chunk);
    /* Takes n >= 2 queued chunks at once (the array is only valid during
     * the call). Same results; one write_done completes the batch. */
    int (*writev)(struct weir_writable *ws, void *ctx,
                  const struct weir_chunk *chunks, unsigned n);
    /* Every write has finished; no more will come. 0, WEIR_PENDING (then
     * call weir_writable_close_done) or -errno. */
    int (*close)(struct weir_writable *ws, void *ctx);
    /* The producer aborted with `reason`; no write or close is
     * outstanding, and none will come. 0, or -errno to report that the
     * abort failed (weir_writer_abort's completion gets it; the stream is
     * errored with `reason` either way). */
    int (*abort)(struct weir_writable *ws, void *ctx, int reason);
};

struct weir_writable_options {
    struct weir_strategy strategy;
    unsigned slot; /* the thread slot chunk references are dropped on */
};

/*
 * Creates a writable stream and runs the sink's start. `opts` NULL means
 * the spec's defaults: count strategy, hwm 1, slot 0. Returns 0 or -ENOMEM.
 * The sink's ops and ctx must outlive the stream.
 */
int weir_writable_create(struct weir_writable **out,
                         const struct weir_sink_ops *ops, void *ctx,
                         const struct weir_writable_options *opts);

/* Frees the stream, dropping queued chunks without calling their
 * callbacks. Not while a pipe still uses it. Safe inside the stream's own
 * callbacks (marked, freed on the way out). */
void weir_writable_destroy(struct weir_writable *ws);

/* Controller. Errors the stream (the sink found a fault) with err: a
 * ready wait fails at once; once the sink has no write or close
 * outstanding, the queued writes fail with err, in order, and then the
 * close. A close already at the sink wins if it succeeds (the stream ends
 * closed). No effect unless writable. */
void weir_writable_error(struct weir_writable *ws, int err);

/* Controller. Lets a writer waiting for room go although the desired size
 * is 0 (the releaseBackpressure() that WPT tests, whatwg/streams #1190):
 * for a stream whose queue is empty, writable and not closing, the ready
 * wait ends now and weir_writer_ready returns 0 until the next write. A
 * stream with hwm 0 otherwise never has room. No effect while chunks are
 * queued or the desired size is positive. A transform calls it on its
 * writable side whenever its readable side is pulled. */
void weir_writable_release_backpressure(struct weir_writable *ws);

/* Sink. Finishes a start, write(v) or close that returned WEIR_PENDING:
 * rc 0, or -errno to error the stream. */
void weir_writable_start_done(struct weir_writable *ws, int rc);
void weir_writable_write_done(struct weir_writable *ws, int rc);
void weir_writable_close_done(struct weir_writable *ws, int rc);

/* hwm - queued; 0 once closed; WEIR_DESIRED_NONE once errored. */
int64_t weir_writable_desired_size(const struct weir_writable *ws);

/* Total weight queued, in-flight writes included. */
size_t weir_writable_queued(const struct weir_writable *ws);

bool weir_writable_locked(const struct weir_writable *ws);
bool weir_writable_closed(const struct weir_writable *ws);
bool weir_writable_errored(const struct weir_writable *ws, int *err);

/* A writer: the exclusive right to write a stream; a plain value. */
struct weir_writer {
    struct weir_writable *stream; /* NULL once released */
};

/* Locks `ws` to `w`. 0, or -EBUSY. */
int weir_writer_acquire(struct weir_writer *w, struct weir_writable *ws);

/* Unlocks; queued writes and a close stay the stream's and settle as
 * usual. A ready wait of this writer ends now with -ECANCELED. */
void weir_writer_release(struct weir_writer *w);

/* weir_writer_write, an inline function, is defined at the end of this
 * header. */

/*
 * Waits for backpressure to lift. 0 when the desired size is > 0 now (or
 * the stream is closing or closed); the error; or WEIR_PENDING and cb(ctx,
 * rc) once the desired size turns positive or the stream errors (cb may be
 * NULL). One waiter at a time: a second call replaces the first's
 * callback. The wait belongs to the writer: releasing it ends the wait
 * with -ECANCELED.
 */
int weir_writer_ready(struct weir_writer *w, weir_done_cb cb, void *ctx);

/*
 * Closes: queued writes finish, then the sink's close runs. 0 when all of
 * that finished now; WEIR_PENDING and cb(ctx, rc) later (cb may be NULL);
 * -EINVAL when already closing or closed, or for a released writer; the
 * error of an errored stream. On a stream still erroring (its error waits
 * for the write at the sink) the close is pending and fails with the error
 * after the writes queued before it.
 */
int weir_writer_close(struct weir_writer *w, weir_done_cb cb, void *ctx);

/*
 * Aborts with `reason` (< 0): the stream errors with it (writes and a
 * ready wait fail with it from now on), and once no write or close is at
 * the sink, the queued writes fail with it, the sink's abort runs and the
 * close fails with it. Returns the abort's result when it finished now: 0
 * (also for a stream already closed or errored) or the sink's abort error;
 * WEIR_PENDING and cb(ctx, rc) later (cb may be NULL); -EALREADY while an
 * earlier abort is still pending; -EINVAL for a released writer.
 * A close already at the sink decides instead: if it succeeds the stream
 * ends closed and the abort reports 0 without calling the sink's abort; if
 * it fails the abort reports the close's error. A stream already erroring
 * (its error waits for a write at the sink) keeps its error, and the abort
 * reports that error without calling the sink's abort.
 */
int weir_writer_abort(struct weir_writer *w, int reason, weir_done_cb cb,
                      void *ctx);

/* The stream's desired size (see weir_writable_desired_size). */
int64_t weir_writer_desired_size(const struct weir_writer *w);

/*
 * Writes `chunk` (the stream's now). 0 when the sink already finished it;
 * WEIR_PENDING when it is queued or in flight, and cb(ctx, rc) (cb may be
 * NULL) when the sink finishes; -EINVAL when closing or closed; the error
 * of an errored stream; -ENOMEM. Inline: when the sink is idle and nothing
 * waits before this chunk, it goes straight to the sink.
 */
static inline int weir_writer_write(struct weir_writer *w,
                                    struct weir_chunk chunk, weir_done_cb cb,
                                    void *ctx)
{
    struct weir_writable *ws = w->stream;
    int rc;

    if (ws && (ws->state | ws->close_requested | !ws->direct) == 0 &&
        ws->in_flight == 0 && ws->queue.tail == ws->queue.head) {
        rc = ws->ops->write(ws, ws->ctx, chunk);
        if (rc == 0)
            return 0;
        return weir_writer_write_done_(ws, chunk, cb, ctx, rc);
    }
    return weir_writer_write_slow_(ws, chunk, cb, ctx);
}

#ifdef __cplusplus
}
#endif

#endif /* WEIR_WRITABLE_H */
