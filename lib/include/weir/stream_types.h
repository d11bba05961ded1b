/*
 * weir/stream_types.h - what every part of the stream core shares: result
 * codes, queuing strategies, the completion callback shapes, and the allocation
 * counters.
 *
 * Threading rule, stated once: a stream and everything attached to it
 * (readers, writers, pipes, tees, transforms) belong to one thread, "the
 * stream's thread", and every function of the core may only be called
 * there. The core has no locks and no threads; moving chunks between
 * threads is the io layer's channel. The one exception is a chunk's buffer,
 * whose reference may be dropped on any thread (weir/pool.h).
 *
 * Promises in C: an operation that may finish later takes a callback and a
 * context. It returns 0 (or WEIR_DONE) when it finished at once, and then
 * the callback is never called; it returns WEIR_PENDING when it parked,
 * and then the callback is called exactly once, later, with the result; it
 * returns -errno when it failed at once. The same codes flow the other way:
 * an underlying source's or sink's callback returns 0 when it finished,
 * WEIR_PENDING when it will report completion later through the matching
 * *_done function, or -errno to error the stream.
 *
 * Ownership of chunks: a chunk handed to a stream (enqueue, write) is the
 * stream's from then on, even when the call fails (then the stream drops
 * it); a chunk handed out (read, a sink's write) is the receiver's, which
 * must drop it with weir_chunk_unref or pass it on. A stream drops the
 * chunks it discards (cancel, error, drop policies) with weir_chunk_unref
 * on its thread slot.
 *
 * Callbacks that may be NULL: a completion callback (weir_done_cb) of a
 * write, close, abort, ready wait or pipe may be NULL when the caller does
 * not need the result; every member of a source, sink or transformer ops
 * table may be NULL (each header says what a missing one means), and so
 * may the table itself. A read's callback may be NULL only if the read
 * cannot park: a read that would have to wait with no callback returns
 * -EINVAL. An iterator's each may not be NULL (-EINVAL).
 *
 * Departures from the WHATWG Streams Standard, each on purpose, and the
 * only ones (tests/wpt asserts weir's behaviour for each, by these names):
 *   - tee block policy: a tee's default branch policy reads the source
 *     only while every branch has room, so the slowest branch governs;
 *     the spec's tee follows the fastest and lets the slow branch's queue
 *     grow without bound (whatwg/streams #1233). Branches may choose drop
 *     or disconnect policies instead (weir/tee.h). Default branches hold
 *     one chunk (hwm 1) also for a byte stream, whose spec branches hold
 *     none, so that one branch can read while another is idle; the tee
 *     reads that chunk ahead.
 *   - tee cancel reason: C has no array of reasons; the source is
 *     cancelled once, when the last branch cancels, with that branch's
 *     reason, and only that branch's cancel reports the source cancel's
 *     result.
 *   - creation does not fail for start: a start that fails (at once or
 *     later) errors the stream; weir_*_create still returns 0 and the
 *     stream, since the caller owns it either way.
 *   - errors in place of TypeError: an operation on a stream that has
 *     already errored returns the stream's stored error rather than a type
 *     error; other misuse (closed, closing, released, locked) is -EINVAL or
 *     -EBUSY, a terminated transform's writable side errors with -EPIPE,
 *     and a pipe into a closed destination fails with -EPIPE.
 *   - one abort completion: a second weir_writer_abort while the first is
 *     pending returns -EALREADY (the spec returns the first's promise);
 *     one after the first settled finds the stream errored and returns 0.
 *   - no element types: BYOB reads are in bytes; there are no typed views
 *     and so no element-size checks (the spec's errors for a partial
 *     element at close do not arise).
 *   - close answers BYOB reads: a close ends the BYOB reads waiting on it
 *     at once (done, with the bytes they hold); the spec leaves them
 *     waiting for the source's respond(0), which here finds no request.
 *   - synchronous cancel and abort: a source's, a sink's and a
 *     transformer's cancel or abort report their result when they return;
 *     none can be left pending (a sink that needs time to shut down does
 *     so after answering).
 */
#ifndef WEIR_STREAM_TYPES_H
#define WEIR_STREAM_TYPES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "weir/pool.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Positive result codes; negative ones are -errno. */
#define WEIR_PENDING 1 /* parked: the callback reports the result later */
#define WEIR_DONE    2 /* a read found the stream closed: no more chunks */

/* A high-water mark without limit: the queue grows as needed. */
#define WEIR_HWM_UNLIMITED SIZE_MAX

/* A desired size that does not exist: the stream errored (the spec's
 * null). */
#define WEIR_DESIRED_NONE INT64_MIN

/*
 * Queuing strategy: how full a queue may get before it pushes back.
 * Count: every chunk weighs 1. Bytes: a chunk weighs its length. The
 * desired size is hwm - (total weight queued), as the Streams Standard
 * defines it; it may go negative, since enqueueing past the mark is allowed
 * and only signals backpressure. hwm 0 means "hold nothing, pass through
 * only what is asked for".
 */
struct weir_strategy {
    size_t hwm; /* in chunks or bytes; WEIR_HWM_UNLIMITED for none */
    bool bytes; /* weigh chunks by length instead of counting them */
};

/* Completion of a read: rc is 0 with a chunk (the reader's now), WEIR_DONE
 * when the stream closed (a BYOB read still gets the bytes it had filled,
 * possibly none; none after a cancel), or -errno when the stream errored
 * or the read was released. */
typedef void (*weir_read_cb)(void *ctx, int rc, struct weir_chunk chunk);

/* Completion of a write, a close, a ready wait, a pipe: rc is 0 or
 * -errno. */
typedef void (*weir_done_cb)(void *ctx, int rc);

/*
 * Allocation counters of the core. Every allocation the stream core makes
 * goes through one wrapper that counts it, so a test can show that a
 * steady flow of chunks allocates nothing. Any thread; relaxed snapshot.
 */
struct weir_core_alloc_stats {
    uint64_t allocs; /* successful allocations, including reallocations */
    uint64_t frees;
    uint64_t bytes; /* bytes requested by those allocations */
};

void weir_core_alloc_stats(struct weir_core_alloc_stats *st);

#ifdef __cplusplus
}
#endif

#endif /* WEIR_STREAM_TYPES_H */
