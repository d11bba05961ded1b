/*
 * readable.c - readable streams: the controller side (enqueue, close,
 * error, pull scheduling) and the reader side (default and BYOB reads,
 * cancel).
 *
 * Pull scheduling follows the spec's pulling / pullAgain pair, as a loop:
 * rs_pull_if_needed never calls pull while a pull is running; it sets
 * pull_again instead, and the running loop pulls once more when the pull
 * returns. A source that enqueues synchronously, and a consumer that reads
 * again from inside its read callback, therefore alternate inside one loop
 * instead of nesting.
 *
 * A read that finds the queue empty does not park first and wait to be
 * woken, as the spec's promise does: it files itself as the "synchronous
 * request" (sync_req), asks the source, and if the source enqueued in the
 * meantime the chunk was handed to that request and the read returns it
 * directly. Only when the source has nothing yet does the request move to
 * the parked queue. The order of answers is the spec's: the synchronous
 * request is always the oldest, since a read only takes that path when no
 * request is parked.
 *
 * Mark and reap: public entry points that can run user callbacks hold the
 * stream (busy) for their duration; weir_readable_destroy inside such a
 * callback only marks the stream, and the outermost entry point frees it on
 * the way out.
 */
#include <errno.h>
#include <string.h>

#include "alloc.h"
#include "stream_impl.h"

#define CHUNK_SZ sizeof(struct weir_rs_slot_)
#define REQ_SZ   sizeof(struct weir_read_req_)

/* Parked reads are rare and few: a small first allocation. */
#define READS_FIRST 4u

static void rs_drop_queue(struct weir_readable *rs)
{
    while (!weir_q_empty(&rs->queue))
        weir_chunk_unref(weir_q_pop(&rs->queue, CHUNK_SZ), rs->slot);
    rs->queued_bytes = 0;
}

static void rs_free(struct weir_readable *rs)
{
    rs_drop_queue(rs);
    weir_q_fini(&rs->queue);
    weir_q_fini(&rs->reads);
    weir_core_free(rs);
}

static inline void rs_hold(struct weir_readable *rs)
{
    rs->busy++;
}

/* Ends a hold; frees a stream destroyed meanwhile. */
static inline void rs_put(struct weir_readable *rs)
{
    if (--rs->busy == 0 && rs->doomed && !rs->in_pull)
        rs_free(rs);
}

static inline int64_t rs_desired(const struct weir_readable *rs)
{
    return weir_rs_desired(rs);
}

static inline bool rs_can_pull(const struct weir_readable *rs)
{
    return !(rs->pull_flags & WEIR_RS_NO_PULL_);
}

static inline bool rs_pulling(const struct weir_readable *rs)
{
    return rs->pull_flags & WEIR_RS_PULLING_;
}

static inline void rs_set_pulling(struct weir_readable *rs, bool on)
{
    if (on)
        rs->pull_flags |= WEIR_RS_PULLING_;
    else
        rs->pull_flags &= (uint8_t)~WEIR_RS_PULLING_;
}

/* pull_word_ for an inline pull started with the stream able to pull:
 * pulling, in_pull, no pull-again; and its value after that pull. */
#define RS_PULL_RUNNING weir_rs_pull_word_(WEIR_RS_PULLING_, true)
#define RS_PULL_IDLE    weir_rs_pull_word_(0, false)

/* Puts room back after a flag of enqueue_stop_ was cleared or the queue
 * grew (see room). */
static inline void rs_update_room(struct weir_readable *rs)
{
    rs->room = rs->enqueue_stop_ == 0 ? rs->queue.cap : 0;
}

/* enqueue_word_ of a readable stream, not closing, nobody parked, whose
 * read in progress now asks the source: sync_want, and room 0. */
static inline uint64_t rs_sync_word(void)
{
    struct weir_readable w = {.sync_want = true};

    return w.enqueue_word_;
}

/* After a change of started, state or close_requested. */
static void rs_update_can_pull(struct weir_readable *rs)
{
    bool readable = rs->state == RS_READABLE;
    bool can = rs->started && readable && !rs->close_requested && rs->ops &&
               rs->ops->pull;

    if (can) {
        /* A stream weighed in bytes keeps the enq_below create gave
         * it. */
        rs->pull = rs->ops->pull;
        rs->pull_flags &= (uint8_t)~WEIR_RS_NO_PULL_;
        rs->pull_below = (uint64_t)rs->hwm;
        if (!rs->weigh_bytes)
            rs->enq_below = rs->hwm - 1;
    } else {
        /* enq_below stays: a stream that never could pull still has the
         * value create gave it, and one that could no longer takes
         * inline enqueues (closing or not readable: room 0). */
        rs->pull_flags |= WEIR_RS_NO_PULL_;
        if (readable && !rs->close_requested) {
            rs->pull_below = 0;
        } else {
            rs->pull_below = readable; /* 1 while closing */
            rs->room = 0;
        }
    }
}

/* Takes the oldest parked read off the queue. */
static struct weir_read_req_ rs_pop_read(struct weir_readable *rs)
{
    struct weir_read_req_ q =
        *(struct weir_read_req_ *)weir_q_pop(&rs->reads, REQ_SZ);

    rs->parked = !weir_q_empty(&rs->reads);
    rs_update_room(rs);
    return q;
}

/* The spec's ReadableStreamDefaultControllerShouldCallPull. */
static inline bool rs_should_pull(const struct weir_readable *rs)
{
    return rs_can_pull(rs) && (weir_rs_read_waits(rs) || rs_desired(rs) > 0);
}

/* A cancel discards what waiting BYOB reads had filled: they end done
 * with no bytes (the spec resolves them with an undefined value), where a
 * close hands back what they hold. */
static void rs_forget_filled(struct weir_readable *rs)
{
    for (uint32_t i = rs->reads.head; i != rs->reads.tail; i++) {
        struct weir_read_req_ *q = weir_q_at(&rs->reads, REQ_SZ, i);

        q->filled = 0;
    }
    if (rs->sync_want)
        rs->sync_req.filled = 0;
}

static void rs_close_now(struct weir_readable *rs)
{
    rs->state = RS_CLOSED;
    rs_update_can_pull(rs);
    while (!weir_q_empty(&rs->reads)) {
        struct weir_read_req_ q = rs_pop_read(rs);

        q.cb(q.ctx, WEIR_DONE,
             (struct weir_chunk){NULL, q.buf, (uint32_t)q.filled});
    }
    if (rs->watch.fn)
        rs->watch.fn(rs->watch.ctx);
}

static void rs_error_now(struct weir_readable *rs, int err)
{
    rs->state = RS_ERRORED;
    rs_update_can_pull(rs);
    rs->err = err;
    rs_drop_queue(rs);
    while (!weir_q_empty(&rs->reads)) {
        struct weir_read_req_ q = rs_pop_read(rs);

        q.cb(q.ctx, err, (struct weir_chunk){0});
    }
    if (rs->watch.fn)
        rs->watch.fn(rs->watch.ctx);
}

/* Pulls, and pulls again while the source asked for it meanwhile. The
 * caller checked rs_should_pull and that no pull is running. */
static inline __attribute__((always_inline)) void
rs_pull_loop(struct weir_readable *rs)
{
    int rc;

    do {
        rs_set_pulling(rs, true);
        rs->pull_again = false;
        rc = rs->pull(rs, rs->ctx);
        if (rc == WEIR_PENDING)
            return;
        rs_set_pulling(rs, false);
        if (__builtin_expect(rc < 0, 0)) {
            /* A source that errored the stream itself and then returned
             * an error keeps its first error. */
            if (rs->state == RS_READABLE)
                rs_error_now(rs, rc);
            return;
        }
    } while (rs->pull_again && !rs->doomed && rs_should_pull(rs));
}

static void rs_pull_if_needed(struct weir_readable *rs)
{
    if (!rs_should_pull(rs))
        return;
    if (rs_pulling(rs)) {
        rs->pull_again = true;
        return;
    }
    rs_pull_loop(rs);
}

/* After a chunk left the queue: close if that was the last one of a
 * closing stream, otherwise ask for more. */
static void rs_after_dequeue(struct weir_readable *rs)
{
    if (rs->close_requested) {
        if (weir_q_empty(&rs->queue))
            rs_close_now(rs);
        return;
    }
    rs_pull_if_needed(rs);
}

static size_t fill(struct weir_read_req_ *q, struct weir_chunk *c)
{
    size_t n = q->len - q->filled;

    if (n > c->len)
        n = c->len;
    memcpy(q->buf + q->filled, c->data, n);
    q->filled += n;
    c->data += n;
    c->len -= (uint32_t)n;
    return n;
}

/* Copies queued bytes into a BYOB request, as many as fit. */
static void rs_fill_from_queue(struct weir_readable *rs,
                               struct weir_read_req_ *q)
{
    while (!weir_q_empty(&rs->queue) && q->filled < q->len) {
        struct weir_chunk *c = weir_q_front(&rs->queue, CHUNK_SZ);

        rs->queued_bytes -= fill(q, c);
        if (c->len == 0)
            weir_chunk_unref(weir_q_pop(&rs->queue, CHUNK_SZ), rs->slot);
    }
}

static int rs_queue_chunk(struct weir_readable *rs, struct weir_chunk chunk)
{
    /* A small bounded queue is sized to its mark at once (plus the chunk
     * a pull may overshoot by); others start small and double. */
    struct weir_chunk *slot = weir_q_push(
        &rs->queue, CHUNK_SZ, rs->hwm < 64 ? (uint32_t)rs->hwm + 1 : 64);

    if (!slot) {
        weir_chunk_unref(&chunk, rs->slot);
        return -ENOMEM;
    }
    rs->qmask = rs->queue.cap - 1;
    rs_update_room(rs);
    *slot = chunk;
    if (rs->weigh_bytes)
        rs->queued_bytes += chunk.len;
    return 0;
}

/*
 * Byte streams: hands the bytes of `chunk` to waiting BYOB reads in order,
 * and what is left to a default read or the queue.
 */
static int rs_deliver_bytes(struct weir_readable *rs, struct weir_chunk chunk)
{
    while (chunk.len > 0 && rs->state == RS_READABLE) {
        struct weir_read_req_ *q;

        if (rs->sync_want) {
            q = &rs->sync_req;
            if (!q->buf) {
                q->got = chunk;
                rs->sync_want = false;
                return 0;
            }
            fill(q, &chunk);
            if (q->filled >= q->min)
                rs->sync_want = false;
            continue;
        }
        if (weir_q_empty(&rs->reads))
            return rs_queue_chunk(rs, chunk);
        q = weir_q_front(&rs->reads, REQ_SZ);
        if (!q->buf) {
            struct weir_read_req_ r = rs_pop_read(rs);
            r.cb(r.ctx, 0, chunk);
            return 0;
        }
        fill(q, &chunk);
        if (q->filled >= q->min) {
            struct weir_read_req_ r = rs_pop_read(rs);
            r.cb(r.ctx, 0,
                 (struct weir_chunk){NULL, r.buf, (uint32_t)r.filled});
        }
    }
    weir_chunk_unref(&chunk, rs->slot);
    return 0;
}

static int rs_enqueue(struct weir_readable *rs, struct weir_chunk chunk)
{
    int rc = 0;

    if (rs->byte_stream)
        rc = rs_deliver_bytes(rs, chunk);
    else if (rs->sync_want) {
        rs->sync_req.got = chunk;
        rs->sync_want = false;
    } else if (!weir_q_empty(&rs->reads)) {
        struct weir_read_req_ r = rs_pop_read(rs);

        r.cb(r.ctx, 0, chunk);
    } else {
        rc = rs_queue_chunk(rs, chunk);
    }
    if (rc == 0)
        rs_pull_if_needed(rs);
    return rc;
}

/*
 * A chunk handed to a parked read whose reader can no longer use it (a
 * pipe whose destination started erroring while the read waited) goes
 * back to the front of the queue, as if it had never been read: the
 * spec's pipe gives up its read when the destination errors, so a chunk
 * that arrives after that stays in the source for the next reader. A
 * stream that is no longer readable has no queue to keep it: dropped.
 */
void weir_readable_unread_(struct weir_readable *rs, struct weir_chunk chunk)
{
    struct weir_chunk *slot;

    if (rs->state != RS_READABLE) {
        weir_chunk_unref(&chunk, rs->slot);
        return;
    }
    slot = weir_q_unshift(&rs->queue, CHUNK_SZ,
                          rs->hwm < 64 ? (uint32_t)rs->hwm + 1 : 64);
    if (!slot) {
        weir_chunk_unref(&chunk, rs->slot);
        return;
    }
    rs->qmask = rs->queue.cap - 1;
    rs_update_room(rs);
    *slot = chunk;
    if (rs->weigh_bytes)
        rs->queued_bytes += chunk.len;
}

/* The out-of-line halves of the inline fast paths in weir/readable.h. */
/* The rest of a pull that weir_readable_pull_inline_ started (and
 * held the stream for): rc is that pull's result. */
void weir_readable_pulled_(struct weir_readable *rs, int rc)
{
    rs->in_pull = false;
    rs_hold(rs);
    if (rc != WEIR_PENDING) {
        rs_set_pulling(rs, false);
        if (rc < 0) {
            if (rs->state == RS_READABLE)
                rs_error_now(rs, rc);
        } else if (!rs->doomed && rs->pull_again && rs_should_pull(rs))
            rs_pull_loop(rs);
    }
    rs_put(rs);
}

/* weir_readable_pulled_ after a pull that returned 0, whose caller
 * subtracted RS_PULL_RUNNING from the pull word on the way here. */
void weir_readable_pulled_0_(struct weir_readable *rs)
{
    rs->pull_word_ += RS_PULL_RUNNING;
    weir_readable_pulled_(rs, 0);
}

/* The pull an inline enqueue asks for when no pull is running (a source
 * that pushes outside its pull, below the mark). */
void weir_readable_enqueue_pull_(struct weir_readable *rs)
{
    weir_readable_pull_inline_(rs);
}

int weir_readable_enqueue_slow_(struct weir_readable *rs, struct weir_buf *buf,
                                uint8_t *data, uint32_t len)
{
    struct weir_chunk chunk = {buf, data, len};
    int rc;

    if (rs->close_requested || rs->state != RS_READABLE ||
        (rs->byte_stream && chunk.len == 0)) {
        weir_chunk_unref(&chunk, rs->slot);
        return -EINVAL;
    }
    /* The read in progress asked the source and waits for this very
     * chunk (a default read, inside the pull it started): hand it over.
     * No callback runs, so no hold; a pull is running, so wanting more
     * only sets pull_again. */
    if (rs->sync_want && rs_pulling(rs) && !rs->sync_req.buf &&
        weir_q_empty(&rs->reads)) {
        rs->sync_req.got = chunk;
        rs->sync_want = false;
        if (rs_can_pull(rs) && rs_desired(rs) > 0)
            rs->pull_again = true;
        return 0;
    }
    rs_hold(rs);
    rc = rs_enqueue(rs, chunk);
    rs_put(rs);
    return rc;
}

int weir_readable_close(struct weir_readable *rs)
{
    if (rs->close_requested || rs->state != RS_READABLE)
        return -EINVAL;
    rs->close_requested = true;
    rs_update_can_pull(rs);
    if (weir_q_empty(&rs->queue)) {
        rs_hold(rs);
        rs_close_now(rs);
        rs_put(rs);
    }
    return 0;
}

void weir_readable_error(struct weir_readable *rs, int err)
{
    if (rs->state != RS_READABLE)
        return;
    rs_hold(rs);
    rs_error_now(rs, err);
    rs_put(rs);
}

int64_t weir_readable_desired_size(const struct weir_readable *rs)
{
    if (rs->state == RS_ERRORED)
        return WEIR_DESIRED_NONE;
    if (rs->state == RS_CLOSED)
        return 0;
    if (rs->hwm == INT64_MAX)
        return INT64_MAX;
    return rs_desired(rs);
}

void weir_readable_start_done(struct weir_readable *rs, int rc)
{
    rs_hold(rs);
    if (rc < 0)
        weir_readable_error(rs, rc);
    else {
        rs->started = true;
        rs_update_can_pull(rs);
        rs_pull_if_needed(rs);
    }
    rs_put(rs);
}

void weir_readable_pull_done(struct weir_readable *rs, int rc)
{
    rs_hold(rs);
    rs_set_pulling(rs, false);
    if (rc < 0)
        weir_readable_error(rs, rc);
    else if (rs->pull_again && !rs->doomed)
        rs_pull_if_needed(rs);
    rs_put(rs);
}

size_t weir_readable_queued(const struct weir_readable *rs)
{
    return weir_readable_size_(rs);
}

bool weir_readable_locked(const struct weir_readable *rs)
{
    return rs->locked;
}

bool weir_readable_closed(const struct weir_readable *rs)
{
    return rs->state == RS_CLOSED;
}

bool weir_readable_errored(const struct weir_readable *rs, int *err)
{
    if (rs->state != RS_ERRORED)
        return false;
    if (err)
        *err = rs->err;
    return true;
}

int weir_readable_create(struct weir_readable **out,
                         const struct weir_source_ops *ops, void *ctx,
                         const struct weir_readable_options *opts)
{
    struct weir_readable *rs = weir_core_zalloc(sizeof(*rs));
    int rc = 0;

    if (!rs)
        return -ENOMEM;
    rs->ops = ops;
    rs->ctx = ctx;
    rs->queue = (struct weir_q){
        .slots = (uint8_t *)rs->small, .cap = 2, .borrowed = true};
    rs->qmask = 1;
    rs->room = 2;
    if (opts) {
        rs->hwm = weir_hwm_of(opts->strategy.hwm);
        rs->byte_stream = opts->byte_stream;
        /* A byte stream's queue is measured in bytes, whatever the
         * strategy says (the spec has no other size for it). */
        rs->weigh_bytes = opts->strategy.bytes || opts->byte_stream;
        rs->slot = opts->slot;
        /* Until the stream can pull: never (0, as allocated), but for
         * the sums. */
        if (rs->weigh_bytes)
            rs->enq_below = INT64_MAX;
    } else {
        rs->hwm = 1;
    }
    rs->state = RS_READABLE;
    *out = rs;
    if (!ops || !ops->start) {
        rs->started = true;
        rs_update_can_pull(rs);
        rs_pull_if_needed(rs);
        return 0;
    }
    /* No pull until start has finished. */
    rs->pull_flags = WEIR_RS_NO_PULL_;
    rs_hold(rs);
    rc = ops->start(rs, ctx);
    if (rc == 0 && rs->state == RS_READABLE) {
        rs->started = true;
        rs_update_can_pull(rs);
        rs_pull_if_needed(rs);
    } else if (rc < 0 && rs->state == RS_READABLE) {
        rs_error_now(rs, rc);
    }
    rs_put(rs);
    return 0;
}

void weir_readable_destroy(struct weir_readable *rs)
{
    if (!rs)
        return;
    if (rs->busy || rs->in_pull) {
        rs->doomed = true;
        /* An inline pull tests only pull_again on its way out. */
        if (rs->in_pull)
            rs->pull_again = true;
        return;
    }
    rs_free(rs);
}

int weir_reader_acquire(struct weir_reader *r, struct weir_readable *rs)
{
    if (rs->locked)
        return -EBUSY;
    rs->locked = true;
    r->stream = rs;
    return 0;
}

void weir_reader_release(struct weir_reader *r)
{
    struct weir_readable *rs = r->stream;

    if (!rs)
        return;
    r->stream = NULL;
    rs->locked = false;
    rs_hold(rs);
    while (!weir_q_empty(&rs->reads)) {
        struct weir_read_req_ q = rs_pop_read(rs);

        q.cb(q.ctx, -ECANCELED, (struct weir_chunk){0});
    }
    rs_put(rs);
}

/* Files `q` as a parked read, ahead of any parked during the synchronous
 * attempt (it is older than they are). */
static int rs_park(struct weir_readable *rs, const struct weir_read_req_ *q,
                   bool front)
{
    struct weir_read_req_ *slot;

    /* A read that has to wait needs a callback to answer it. */
    if (!q->cb)
        return -EINVAL;
    slot = front ? weir_q_unshift(&rs->reads, REQ_SZ, READS_FIRST)
                 : weir_q_push(&rs->reads, REQ_SZ, READS_FIRST);
    if (!slot)
        return -ENOMEM;
    *slot = *q;
    rs->parked = true;
    rs->room = 0;
    return WEIR_PENDING;
}

/*
 * Asks the source on behalf of the synchronous request rs->sync_req, and
 * parks it when the source had nothing. Returns 0 when the request was
 * answered, WEIR_DONE, the error, or rs_park's result.
 */
static int rs_read_slow(struct weir_readable *rs)
{
    int rc;

    rs->sync_want = true;
    rs->room = 0;
    rs_pull_if_needed(rs);
    if (!rs->sync_want)
        return 0;
    rs->sync_want = false;
    rs_update_room(rs);
    if (rs->state == RS_CLOSED)
        return WEIR_DONE;
    if (rs->state == RS_ERRORED)
        return rs->err;
    rc = rs_park(rs, &rs->sync_req, true);
    return rc;
}

/* A read left the queue below its mark and the stream cannot pull at
 * once: a pull is running (it pulls again), or the stream is closing
 * (the read that emptied the queue closes it). */
void weir_readable_read_below_(struct weir_readable *rs)
{
    if (rs_can_pull(rs)) {
        rs->pull_again = true;
    } else if (weir_q_empty(&rs->queue)) {
        rs_hold(rs);
        rs_close_now(rs);
        rs_put(rs);
    }
}

/*
 * The rest of a pull that a read ran inline for its synchronous request
 * (rc: the pull's result), as rs_read_slow would have gone on: finishes
 * the pull (pulling again if asked), then answers the request: 0 when it
 * was answered, WEIR_DONE, the error, or parks it. Returns holding the
 * stream: the caller reads the request's answer, then rs_put.
 */
static int rs_sync_pulled(struct weir_readable *rs, int rc)
{
    rs->in_pull = false;
    rs_hold(rs);
    if (rc != WEIR_PENDING) {
        rs_set_pulling(rs, false);
        if (rc < 0) {
            if (rs->state == RS_READABLE)
                rs_error_now(rs, rc);
        } else if (!rs->doomed && rs->pull_again && rs_should_pull(rs)) {
            rs_pull_loop(rs);
        }
    }
    if (!rs->sync_want)
        return 0;
    rs->sync_want = false;
    rs_update_room(rs);
    if (rs->state == RS_CLOSED)
        return WEIR_DONE;
    if (rs->state == RS_ERRORED)
        return rs->err;
    return rs_park(rs, &rs->sync_req, true);
}

/* A read that found the queue empty (or a released reader). */
int weir_reader_read_empty_(struct weir_readable *rs, struct weir_chunk *out,
                            weir_read_cb cb, void *ctx)
{
    int rc;

    if (!rs)
        return -EINVAL;
    if (rs->state == RS_CLOSED)
        return WEIR_DONE;
    if (rs->state == RS_ERRORED)
        return rs->err;
    if (rs->sync_want || !weir_q_empty(&rs->reads)) {
        /* Others wait already (the synchronous request among them, which
         * this read must leave alone): take a place in line. */
        struct weir_read_req_ q = {.cb = cb, .ctx = ctx};

        rc = rs_park(rs, &q, false);
        rs_hold(rs);
        rs_pull_if_needed(rs);
        rs_put(rs);
        return rc;
    }
    rs->sync_req.cb = cb;
    rs->sync_req.ctx = ctx;
    rs->sync_req.buf = NULL;
    if (rs->pull_flags == 0) {
        /* The pull runs here, as weir_readable_pull_inline_ runs it: a
         * source that enqueues at once answers this read directly.
         * Readable, not closing (can pull), nobody waits: the word is
         * known but for sync_want and room. */
        rs->enqueue_word_ = rs_sync_word();
        rs->pull_word_ = RS_PULL_RUNNING;
        rc = rs->pull(rs, rs->ctx);
        if (rc == 0 && rs->pull_word_ == RS_PULL_RUNNING &&
            !(rs->doomed | rs->sync_want)) {
            rs->pull_word_ = RS_PULL_IDLE;
            weir_chunk_copy_(out, &rs->sync_req.got);
            return 0;
        }
        rc = rs_sync_pulled(rs, rc);
        if (rc == 0)
            *out = rs->sync_req.got;
        rs_put(rs);
        return rc;
    }
    rs_hold(rs);
    rc = rs_read_slow(rs);
    if (rc == 0)
        *out = rs->sync_req.got;
    rs_put(rs);
    return rc;
}

/*
 * A BYOB read handed straight to the source: the request is the
 * synchronous one, and the pull runs here as weir_readable_pull_inline_
 * runs it, so a source that responds at once costs one call. Anything
 * else (pending, pull-again, short of min, an error) continues as the
 * general path does.
 */
static int rs_read_byob_pull(struct weir_readable *rs, uint8_t *buf, size_t len,
                             size_t min, struct weir_chunk *out,
                             weir_read_cb cb, void *ctx)
{
    struct weir_read_req_ *q = &rs->sync_req;
    int rc;

    q->cb = cb;
    q->ctx = ctx;
    q->buf = buf;
    q->len = len;
    q->min = min;
    q->filled = 0;
    /* As in weir_reader_read_empty_. */
    rs->enqueue_word_ = rs_sync_word();
    rs->pull_word_ = RS_PULL_RUNNING;
    rc = rs->pull(rs, rs->ctx);
    if (rc == 0 && rs->pull_word_ == RS_PULL_RUNNING &&
        !(rs->doomed | rs->sync_want)) {
        rs->pull_word_ = RS_PULL_IDLE;
        *out = (struct weir_chunk){NULL, buf, (uint32_t)q->filled};
        return 0;
    }
    rc = rs_sync_pulled(rs, rc);
    *out = (struct weir_chunk){
        NULL, buf, rc == 0 || rc == WEIR_DONE ? (uint32_t)q->filled : 0};
    rs_put(rs);
    return rc;
}

int weir_reader_read_byob(struct weir_reader *r, uint8_t *buf, size_t len,
                          size_t min, struct weir_chunk *out, weir_read_cb cb,
                          void *ctx)
{
    struct weir_readable *rs = r->stream;
    struct weir_read_req_ q;
    int rc;

    if (!rs || !rs->byte_stream || min == 0 || min > len || len > UINT32_MAX)
        return -EINVAL;
    /* Nothing queued or waiting, and the source may be asked: this read
     * is the source's BYOB request at once, the zero-copy way. */
    if (rs->sync_want == 0 && rs->pull_flags == 0 &&
        rs->queue.tail == rs->queue.head && rs->reads.tail == rs->reads.head)
        return rs_read_byob_pull(rs, buf, len, min, out, cb, ctx);
    q = (struct weir_read_req_){
        .cb = cb, .ctx = ctx, .buf = buf, .len = len, .min = min};
    if (rs->state == RS_ERRORED)
        return rs->err;
    *out = (struct weir_chunk){NULL, buf, 0};
    if (rs->state == RS_CLOSED)
        return WEIR_DONE;
    rs_hold(rs);
    if (rs->sync_want || !weir_q_empty(&rs->reads)) {
        rc = rs_park(rs, &q, false);
        rs_pull_if_needed(rs);
        rs_put(rs);
        return rc;
    }
    rs_fill_from_queue(rs, &q);
    if (q.filled >= min) {
        out->len = (uint32_t)q.filled;
        rs_after_dequeue(rs);
        rs_put(rs);
        return 0;
    }
    if (rs->close_requested) {
        /* Closing, and the rest of the queue is short of min: the read
         * can never be satisfied, and the spec errors the stream (its
         * TypeError) rather than end the read short. */
        out->len = 0;
        rs_error_now(rs, -EINVAL);
        rs_put(rs);
        return -EINVAL;
    }
    rs->sync_req = q;
    rc = rs_read_slow(rs);
    out->len = (uint32_t)rs->sync_req.filled;
    rs_put(rs);
    return rc;
}

/* The oldest waiting read, if it is a BYOB read. */
static struct weir_read_req_ *rs_byob_front(struct weir_readable *rs)
{
    struct weir_read_req_ *q = NULL;

    if (!rs->byte_stream || rs->state != RS_READABLE)
        return NULL;
    if (rs->sync_want)
        q = &rs->sync_req;
    else if (!weir_q_empty(&rs->reads))
        q = weir_q_front(&rs->reads, REQ_SZ);
    return q && q->buf ? q : NULL;
}

int weir_readable_byob_request(struct weir_readable *rs, uint8_t **buf,
                               size_t *len)
{
    struct weir_read_req_ *q;

    /* Asked from inside a pull for the read in progress (the common
     * case): that request is the oldest. */
    if (rs->sync_want && rs_pulling(rs) && rs->sync_req.buf &&
        rs->state == RS_READABLE) {
        q = &rs->sync_req;
        *buf = q->buf + q->filled;
        *len = q->len - q->filled;
        return 0;
    }
    q = rs_byob_front(rs);

    if (!q)
        return -ENOENT;
    *buf = q->buf + q->filled;
    *len = q->len - q->filled;
    return 0;
}

int weir_readable_byob_respond(struct weir_readable *rs, size_t n)
{
    struct weir_read_req_ *q;

    q = rs->sync_want && rs->sync_req.buf && rs->state == RS_READABLE
            ? &rs->sync_req
            : rs_byob_front(rs);
    if (!q || n > q->len - q->filled)
        return -EINVAL;
    q->filled += n;
    if (q == &rs->sync_req && rs_pulling(rs)) {
        /* The read in progress returns the bytes itself; a read still
         * short of its minimum asks again when this pull returns. */
        if (q->filled >= q->min)
            rs->sync_want = false;
        if (rs_should_pull(rs))
            rs->pull_again = true;
        return 0;
    }
    rs_hold(rs);
    if (q->filled >= q->min) {
        if (q == &rs->sync_req) {
            /* The read in progress returns the bytes itself. */
            rs->sync_want = false;
        } else {
            struct weir_read_req_ r = rs_pop_read(rs);

            r.cb(r.ctx, 0,
                 (struct weir_chunk){NULL, r.buf, (uint32_t)r.filled});
        }
    }
    /* As after an enqueue: a read still short of its minimum asks for
     * more (during a pull, as pull-again). */
    rs_pull_if_needed(rs);
    rs_put(rs);
    return 0;
}

int weir_reader_cancel(struct weir_reader *r, int reason)
{
    struct weir_readable *rs = r->stream;
    int rc = 0;

    if (!rs)
        return -EINVAL;
    if (rs->state == RS_CLOSED)
        return 0;
    if (rs->state == RS_ERRORED)
        return rs->err;
    rs_hold(rs);
    rs_forget_filled(rs);
    rs_close_now(rs);
    rs_drop_queue(rs);
    if (rs->ops && rs->ops->cancel)
        rc = rs->ops->cancel(rs, rs->ctx, reason);
    rs_put(rs);
    return rc < 0 ? rc : 0;
}
