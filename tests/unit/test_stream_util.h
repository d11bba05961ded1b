/*
 * test_stream_util.h - test doubles for the stream-core tests: a scripted
 * source, a recording sink, and a chunk pattern whose checksum the tests
 * compare end to end. Everything runs on the test's one thread.
 */
#ifndef WEIR_TEST_STREAM_UTIL_H
#define WEIR_TEST_STREAM_UTIL_H

#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "weir/stream.h"

/* 4 KiB of a known pattern; chunks point into it (buf NULL). */
__attribute__((unused)) static uint8_t pattern[4096];

static inline void pattern_init(void)
{
    for (size_t i = 0; i < sizeof(pattern); i++)
        pattern[i] = (uint8_t)(i * 31 + 7);
}

/* Chunk number i: 1 + i % 97 bytes of the pattern at offset i % 512. */
static inline struct weir_chunk chunk_nr(uint32_t i)
{
    return (struct weir_chunk){
        .buf = NULL, .data = pattern + i % 512, .len = 1 + i % 97};
}

/* Order-sensitive checksum of a sequence of chunks. */
static inline uint64_t sum_chunk(uint64_t h, struct weir_chunk c)
{
    for (uint32_t i = 0; i < c.len; i++)
        h = (h ^ c.data[i]) * 1099511628211u;
    return h ^ c.len;
}

/* A source: emits chunk_nr(0 .. total-1), per_pull per pull, then closes
 * (unless endless). With async_pull, pull returns WEIR_PENDING and the
 * test completes it with src_finish_pull. */
struct src {
    struct weir_readable *rs;
    uint32_t next, total, per_pull;
    bool endless, async_start, async_pull, no_close, error_at_end;
    int error;
    int starts, pulls, cancels, cancel_reason;
    bool pull_pending;
    uint64_t sum; /* of what was enqueued */
};

static inline void src_emit(struct src *s)
{
    for (uint32_t k = 0; k < s->per_pull; k++) {
        if (!s->endless && s->next >= s->total) {
            if (s->error_at_end)
                weir_readable_error(s->rs, s->error);
            else if (!s->no_close)
                weir_readable_close(s->rs);
            return;
        }
        s->sum = sum_chunk(s->sum, chunk_nr(s->next));
        weir_readable_enqueue(s->rs, chunk_nr(s->next++));
    }
}

static inline int src_start(struct weir_readable *rs, void *ctx)
{
    struct src *s = ctx;

    s->rs = rs;
    s->starts++;
    return s->async_start ? WEIR_PENDING : 0;
}

static inline int src_pull(struct weir_readable *rs, void *ctx)
{
    struct src *s = ctx;

    s->rs = rs;
    s->pulls++;
    if (s->async_pull) {
        s->pull_pending = true;
        return WEIR_PENDING;
    }
    src_emit(s);
    return 0;
}

/* Completes a parked pull: emits and reports done. */
static inline void src_finish_pull(struct src *s)
{
    s->pull_pending = false;
    src_emit(s);
    weir_readable_pull_done(s->rs, 0);
}

static inline int src_cancel(struct weir_readable *rs, void *ctx, int reason)
{
    struct src *s = ctx;

    (void)rs;
    s->cancels++;
    s->cancel_reason = reason;
    return 0;
}

__attribute__((unused)) static const struct weir_source_ops src_ops = {
    .start = src_start, .pull = src_pull, .cancel = src_cancel};

/* A sink: records writes; with async, each write stays in flight until
 * the test calls sink_finish. */
struct sink {
    struct weir_writable *ws;
    bool async, use_writev, async_close;
    int fail_at; /* fail the write with this 1-based number (0: never) */
    int writes, writev_calls, max_batch, closes, aborts, abort_reason;
    int writes_done_at_abort;
    int writes_done;
    bool in_flight, close_pending;
    uint32_t chunks;
    uint64_t sum;
    size_t max_queued; /* the stream's queue seen at each write */
};

static inline int sink_take(struct sink *s, struct weir_chunk c)
{
    size_t q = weir_writable_queued(s->ws);

    if (q > s->max_queued)
        s->max_queued = q;
    s->chunks++;
    s->sum = sum_chunk(s->sum, c);
    weir_chunk_unref(&c, 0);
    if (s->fail_at && s->chunks == (uint32_t)s->fail_at)
        return -EIO;
    return 0;
}

static inline int sink_write(struct weir_writable *ws, void *ctx,
                             struct weir_chunk c)
{
    struct sink *s = ctx;
    int rc;

    s->ws = ws;
    s->writes++;
    rc = sink_take(s, c);
    if (rc)
        return rc;
    if (s->async) {
        s->in_flight = true;
        return WEIR_PENDING;
    }
    s->writes_done++;
    return 0;
}

static inline int sink_writev(struct weir_writable *ws, void *ctx,
                              const struct weir_chunk *c, unsigned n)
{
    struct sink *s = ctx;

    s->ws = ws;
    s->writev_calls++;
    if ((int)n > s->max_batch)
        s->max_batch = (int)n;
    for (unsigned i = 0; i < n; i++) {
        int rc = sink_take(s, c[i]);

        if (rc)
            return rc;
    }
    if (s->async) {
        s->in_flight = true;
        return WEIR_PENDING;
    }
    s->writes_done++;
    return 0;
}

static inline void sink_finish(struct sink *s)
{
    s->in_flight = false;
    s->writes_done++;
    weir_writable_write_done(s->ws, 0);
}

static inline int sink_close(struct weir_writable *ws, void *ctx)
{
    struct sink *s = ctx;

    s->ws = ws;
    s->closes++;
    if (s->async_close) {
        s->close_pending = true;
        return WEIR_PENDING;
    }
    return 0;
}

static inline int sink_abort(struct weir_writable *ws, void *ctx, int reason)
{
    struct sink *s = ctx;

    (void)ws;
    s->aborts++;
    s->abort_reason = reason;
    s->writes_done_at_abort = s->writes_done;
    return 0;
}

__attribute__((unused)) static const struct weir_sink_ops sink_ops = {
    .write = sink_write, .close = sink_close, .abort = sink_abort};
__attribute__((unused)) static const struct weir_sink_ops sink_ops_v = {
    .write = sink_write,
    .writev = sink_writev,
    .close = sink_close,
    .abort = sink_abort};

/* Records the completion of a parked operation. */
struct done {
    int calls;
    int rc;
    struct weir_chunk chunk;
};

static inline void done_cb(void *ctx, int rc)
{
    struct done *d = ctx;

    d->calls++;
    d->rc = rc;
}

static inline void read_cb(void *ctx, int rc, struct weir_chunk chunk)
{
    struct done *d = ctx;

    d->calls++;
    d->rc = rc;
    d->chunk = chunk;
}

#endif /* WEIR_TEST_STREAM_UTIL_H */
