/*
 * weir/readable.h - readable streams, their controller, readers and the
 * iterator loop: the WHATWG ReadableStream in C.
 *
 * All functions: the stream's thread only (weir/stream_types.h), which
 * also gives the result codes and the ownership of chunks.
 *
 * An underlying source fills the stream through the controller functions
 * (weir_readable_enqueue, _close, _error, _desired_size); the controller is
 * the stream itself. The stream calls the source's pull only after start
 * has finished, only while the desired size is > 0 or a read is waiting,
 * and never twice at once: a request that arrives during a pull sets a
 * pull-again flag and the stream pulls once more when the pull finishes.
 * That loop, not recursion, is what keeps a source that enqueues inside
 * pull from growing the C stack.
 *
 * A read that finds a queued chunk returns it at once. One that finds the
 * queue empty asks the source first (a source that enqueues synchronously
 * answers within the same call, with no callback); only a read still
 * unanswered parks, and its callback fires when data, close or error
 * arrives.
 */
#ifndef WEIR_READABLE_H
#define WEIR_READABLE_H

#include <errno.h>

#include "weir/stream_types.h"

#ifdef __cplusplus
extern "C" {
#endif

struct weir_readable;

/* The underlying source. Every member may be NULL. */
struct weir_source_ops {
    /* Called once, by weir_readable_create. 0, WEIR_PENDING (then call
     * weir_readable_start_done) or -errno (errors the stream). */
    int (*start)(struct weir_readable *rs, void *ctx);
    /* Asks for more: enqueue now or later. 0, WEIR_PENDING (then call
     * weir_readable_pull_done) or -errno (errors the stream). */
    int (*pull)(struct weir_readable *rs, void *ctx);
    /* The consumer cancelled with `reason`; the queue is already gone
     * and the stream closed. 0, or -errno to report that the cancel
     * failed (weir_reader_cancel returns it). */
    int (*cancel)(struct weir_readable *rs, void *ctx, int reason);
};

struct weir_readable_options {
    struct weir_strategy strategy;
    /* A byte stream (the spec's type: 'bytes') also serves BYOB reads. */
    bool byte_stream;
    /* The thread slot this stream drops chunk references on. */
    unsigned slot;
};

/*
 * Creates a readable stream and runs the source's start. `opts` NULL means
 * the spec's defaults: count strategy, hwm 1, not a byte stream, slot 0.
 * Allocates the stream only: its chunk queue materialises with the first
 * chunk that has to wait in it, its request queue with the first read that
 * has to park.
 * *out is set before start runs, so start may enqueue. Returns 0 or
 * -ENOMEM. The source's ops and ctx must outlive the stream.
 */
int weir_readable_create(struct weir_readable **out,
                         const struct weir_source_ops *ops, void *ctx,
                         const struct weir_readable_options *opts);

/*
 * Frees the stream, dropping queued chunks; parked reads are forgotten
 * without their callbacks. It must not be locked by a pipe or tee still
 * running. Safe inside the stream's own callbacks: the stream is then
 * marked and freed when the outermost call into it returns.
 */
void weir_readable_destroy(struct weir_readable *rs);

/* Controller: weir_readable_enqueue, an inline function, is defined at
 * the end of this header. */

/* Controller. No more chunks: the stream closes once its queue is read.
 * 0, or -EINVAL when already closing, closed or errored. */
int weir_readable_close(struct weir_readable *rs);

/* Controller. Errors the stream with `err` (< 0): queued chunks are
 * dropped and waiting reads fail with err. No effect unless readable. */
void weir_readable_error(struct weir_readable *rs, int err);

/* Controller. hwm - queued; 0 once closed, WEIR_DESIRED_NONE once
 * errored. INT64_MAX for an unlimited hwm. */
int64_t weir_readable_desired_size(const struct weir_readable *rs);

/*
 * Source of a byte stream: the zero-copy way to answer a BYOB read (the
 * spec's byobRequest). When the oldest waiting read is a BYOB read, sets
 * *buf and *len to the part of the reader's buffer still to fill and
 * returns 0; -ENOENT when there is none. Write up to *len bytes there, then
 * call weir_readable_byob_respond with the count: the read completes once
 * it holds at least its minimum.
 */
int weir_readable_byob_request(struct weir_readable *rs, uint8_t **buf,
                               size_t *len);

/* Source. Commits n bytes written into the region weir_readable_byob_request
 * gave. 0, or -EINVAL when there is no such request or n exceeds it. */
int weir_readable_byob_respond(struct weir_readable *rs, size_t n);

/* Source. Finishes a start or a pull that returned WEIR_PENDING: rc 0,
 * or -errno to error the stream. */
void weir_readable_start_done(struct weir_readable *rs, int rc);
void weir_readable_pull_done(struct weir_readable *rs, int rc);

/* Total weight queued (chunks or bytes, by the strategy). */
size_t weir_readable_queued(const struct weir_readable *rs);

/* Whether a reader, pipe or tee holds the stream. */
bool weir_readable_locked(const struct weir_readable *rs);

/* Whether the stream has closed / errored (then *err, if given, is the
 * error). */
bool weir_readable_closed(const struct weir_readable *rs);
bool weir_readable_errored(const struct weir_readable *rs, int *err);

/*
 * A reader: the exclusive right to read a stream. A plain value the caller
 * keeps (on the stack is fine); acquiring one allocates nothing.
 */
struct weir_reader {
    struct weir_readable *stream; /* NULL once released */
};

/* Locks `rs` to `r`. 0, or -EBUSY when the stream is already locked. */
int weir_reader_acquire(struct weir_reader *r, struct weir_readable *rs);

/* Unlocks. Reads still parked fail with -ECANCELED (their callbacks run
 * now). Nothing for a reader already released. */
void weir_reader_release(struct weir_reader *r);

/* weir_reader_read, an inline function, is defined at the end of this
 * header. */

/*
 * BYOB read: copies queued bytes into the caller's `buf` (len bytes) until
 * at least `min` (1 <= min <= len) are there. 0 with *out = {NULL, buf,
 * filled}, filled in [min, len]; WEIR_DONE when the stream closed, *out
 * holding what was filled before the close (possibly nothing, and
 * possibly fewer than min when the close came while the read waited); the
 * error; -EINVAL (not a byte stream, bad min, released reader, or NULL cb
 * for a read that would park; and when the stream is closing with fewer
 * than min bytes queued, which errors the stream with -EINVAL, as the
 * spec does); or WEIR_PENDING and cb later with the same meanings. `buf`
 * is the stream's to write until the read completes.
 */
int weir_reader_read_byob(struct weir_reader *r, uint8_t *buf, size_t len,
                          size_t min, struct weir_chunk *out, weir_read_cb cb,
                          void *ctx);

/*
 * Cancels the stream with `reason` (< 0): it closes, waiting reads finish
 * with WEIR_DONE (a BYOB read with no bytes: what it had filled is
 * dropped with the queue), queued chunks are dropped, the source's cancel
 * runs.
 * 0 (also when already closed), the source's cancel error, the error of
 * an errored stream, or -EINVAL for a released reader.
 */
int weir_reader_cancel(struct weir_reader *r, int reason);

/*
 * The iterator loop, the C form of `for await (const chunk of stream)`:
 * calls each(ctx, chunk) for every chunk, in order, handing it over. each
 * returns 0 to go on or anything else to stop; stopping cancels the stream
 * (-ECANCELED), like breaking out of the loop, unless the iterator was
 * opened with WEIR_ITER_PREVENT_CANCEL (then the stream is only released).
 * The caller keeps the struct alive until the loop ends; it allocates
 * nothing.
 */
typedef int (*weir_iter_each_fn)(void *ctx, struct weir_chunk chunk);

/* weir_iter_open flag: ending early releases the stream without
 * cancelling it (the spec's preventCancel). */
#define WEIR_ITER_PREVENT_CANCEL 1u

struct weir_iter {
    struct weir_reader reader;
    weir_iter_each_fn each;
    weir_done_cb done;
    void *ctx;
    weir_read_cb next_cb; /* weir_iter_next's callback while it waits */
    void *next_ctx;
    unsigned flags;
};

/*
 * Runs the loop over `rs` (locking it). 0 when the loop ended at once
 * (stream closed, or each stopped); the stream's error; -EBUSY when
 * locked; or WEIR_PENDING and done(ctx, rc) when it ends later (done may
 * be NULL when the caller does not need to know). each must not be NULL
 * (-EINVAL). weir_iter_open then weir_iter_loop, with no flags. An inline
 * function (defined at the end of this header), so that a caller's each
 * can be inlined into the loop.
 */

/*
 * The iterator without the loop, for code that cannot hand over a
 * callback per chunk (the spec's next() and return()). Open locks `rs`
 * (flags: 0 or WEIR_ITER_PREVENT_CANCEL): 0 or -EBUSY.
 */
int weir_iter_open(struct weir_iter *it, struct weir_readable *rs,
                   unsigned flags);

/* Runs the loop over an opened iterator (weir_iter_run's results); inline,
 * defined at the end of this header. */

/*
 * The next chunk, as weir_reader_read (cb may be NULL only when the read
 * cannot park: -EINVAL then). When the iteration ends, WEIR_DONE or the
 * stream's error, now or through cb, the iterator releases the stream, and
 * later calls return WEIR_DONE. -EBUSY while an earlier next waits.
 */
int weir_iter_next(struct weir_iter *it, struct weir_chunk *out,
                   weir_read_cb cb, void *ctx);

/*
 * Ends the iteration early (the spec's return()): cancels the stream with
 * `reason` (< 0) unless the iterator was opened with
 * WEIR_ITER_PREVENT_CANCEL, then releases it. A next still waiting ends
 * first: WEIR_DONE after the cancel, -ECANCELED without it. 0, or the
 * cancel's error (also the error of a stream that had errored); 0 when the
 * iteration had ended already.
 */
int weir_iter_return(struct weir_iter *it, int reason);

/* The layout and the helpers of the inline fast paths below; not API.
 * Here, after the types they use. */
#include "weir/internal/readable.h"

/*
 * Controller. Queues `chunk` (or hands it straight to a waiting read).
 * 0; -EINVAL when closed, close-requested or errored (or an empty chunk
 * on a byte stream); -ENOMEM. The chunk is the stream's either way.
 * Inline: when nobody waits and the queue has room, the chunk joins the
 * queue and the only question left is whether to pull (again). The slow
 * path takes the chunk's fields in registers, so that the fast one need
 * not build a copy on the stack for it.
 */
static inline int weir_readable_enqueue(struct weir_readable *rs,
                                        struct weir_chunk chunk)
{
    uint32_t tail = rs->queue.tail, n = tail - rs->queue.head;

    /* room is 0 unless readable, not closing, nobody waits; and n below
     * it leaves a free slot. */
    if (n < rs->room && (chunk.len != 0 || !rs->byte_stream)) {
        struct weir_chunk *slot = weir_readable_slot_(rs, tail);

        rs->queue.tail = tail + 1;
        /* Stored from the caller's values as they are: constants stay
         * immediates (see weir_chunk_copy_ for the loads, which this
         * does not make). */
        slot->buf = chunk.buf;
        slot->data = chunk.data;
        slot->len = chunk.len;
        /* Not closing and readable, so pull_below is hwm or 0. Below
         * the mark the source should be asked (the spec's
         * CallPullIfNeeded with no read waiting): inside a pull, that
         * is the pull-again flag; otherwise a pull, out of line. */
        if ((int64_t)n < rs->enq_below &&
            (!rs->weigh_bytes ||
             (rs->queued_bytes += chunk.len) < rs->pull_below)) {
            if (rs->pull_flags != 0)
                rs->pull_again = true;
            else
                weir_readable_enqueue_pull_cold_(rs);
        }
        return 0;
    }
    return weir_readable_enqueue_slow_cold_(rs, chunk.buf, chunk.data,
                                            chunk.len);
}

/*
 * Reads one chunk. 0 and *out set (the caller's chunk now); WEIR_DONE when
 * the stream is closed; the stream's error; -EINVAL for a released reader,
 * or for a read that would park with cb NULL; -ENOMEM when parking failed;
 * or WEIR_PENDING and cb(ctx, ...) later.
 * Inline: a queued chunk is taken here, and the source asked for more if
 * the queue fell below its mark.
 */
static inline int weir_reader_read(struct weir_reader *r,
                                   struct weir_chunk *out, weir_read_cb cb,
                                   void *ctx)
{
    return weir_reader_read_as_(r, out, cb, ctx, false);
}

/* weir_iter_loop and weir_iter_run, as documented with the iterator
 * above. */
static inline int weir_iter_loop(struct weir_iter *it, weir_iter_each_fn each,
                                 weir_done_cb done, void *ctx)
{
    if (!each || !it->reader.stream)
        return -EINVAL;
    it->each = each;
    it->done = done;
    it->ctx = ctx;
    return weir_iter_loop_(it, each, ctx);
}

static inline int weir_iter_run(struct weir_iter *it, struct weir_readable *rs,
                                weir_iter_each_fn each, weir_done_cb done,
                                void *ctx)
{
    int rc;

    if (!each)
        return -EINVAL;
    rc = weir_iter_open(it, rs, 0);
    if (rc)
        return rc;
    return weir_iter_loop(it, each, done, ctx);
}

#ifdef __cplusplus
}
#endif

#endif /* WEIR_READABLE_H */
