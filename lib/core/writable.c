/*
 * writable.c - writable streams: the write queue, the sink's one
 * outstanding operation, close, abort and error.
 *
 * The first `in_flight` entries of the queue are at the sink; their chunks
 * belong to it already and stay in the queue only for their weight and
 * completion callbacks, so the desired size counts them, as the spec's
 * queue total does until a write settles.
 *
 * ws_advance is the one place that hands work to the sink; it loops while
 * the sink finishes synchronously, so a long queue drains without
 * recursion. Mark and reap as in readable.c: entry points that can run
 * callbacks hold the stream.
 */
#include <errno.h>

#include "alloc.h"
#include "stream_impl.h"

#define REQ_SZ sizeof(struct write_req)

static void ws_free(struct weir_writable *ws)
{
    for (uint32_t i = ws->queue.head + ws->in_flight; i != ws->queue.tail; i++)
        weir_chunk_unref(
            &((struct write_req *)weir_q_at(&ws->queue, REQ_SZ, i))->chunk,
            ws->slot);
    weir_q_fini(&ws->queue);
    weir_core_free(ws);
}

static inline void ws_hold(struct weir_writable *ws)
{
    ws->busy++;
}

static inline void ws_put(struct weir_writable *ws)
{
    if (--ws->busy == 0 && ws->doomed)
        ws_free(ws);
}

static inline size_t ws_weight(const struct weir_writable *ws,
                               const struct weir_chunk *c)
{
    return ws->weigh_bytes ? c->len : 1;
}

static inline int64_t ws_desired(const struct weir_writable *ws)
{
    return weir_ws_desired(ws);
}

static void ws_fire_ready(struct weir_writable *ws, int rc)
{
    weir_done_cb cb = ws->ready_cb;

    if (!cb)
        return;
    ws->ready_cb = NULL;
    cb(ws->ready_ctx, rc);
}

static void ws_fire_close(struct weir_writable *ws, int rc)
{
    weir_done_cb cb = ws->close_cb;

    if (!cb)
        return;
    ws->close_cb = NULL;
    cb(ws->close_ctx, rc);
}

/* Catches an abort that settles inside weir_writer_abort itself. */
static void ws_abort_sync_cb(void *ctx, int rc)
{
    struct weir_writable *ws = ctx;

    ws->abort_rc = rc;
}

static void ws_fire_abort(struct weir_writable *ws, int rc)
{
    weir_done_cb cb = ws->abort_cb;

    ws->abort_pending = false;
    if (!cb)
        return;
    ws->abort_cb = NULL;
    cb(ws->abort_ctx, rc);
}

static void ws_notify(struct weir_writable *ws)
{
    if (ws->watch.fn)
        ws->watch.fn(ws->watch.ctx);
}

/* Whether the sink has an operation outstanding (the spec's
 * HasOperationMarkedInFlight). */
static inline bool ws_busy_sink(const struct weir_writable *ws)
{
    return ws->in_flight || ws->close_in_flight;
}

/*
 * The spec's FinishErroring: the stream is errored now. The writes not yet
 * at the sink fail in the order they were made, then an abort waiting for
 * the sink runs the sink's abort, then the close request fails. Called
 * once no operation is at the sink and the sink has started.
 */
static void ws_finish_erroring(struct weir_writable *ws)
{
    int err = ws->err;
    int rc;

    ws->state = WS_ERRORED;
    while (!weir_q_empty(&ws->queue)) {
        struct write_req r =
            *(struct write_req *)weir_q_pop(&ws->queue, REQ_SZ);

        ws->queued -= ws_weight(ws, &r.chunk);
        weir_chunk_unref(&r.chunk, ws->slot);
        if (r.cb)
            r.cb(r.ctx, err);
    }
    if (ws->abort_pending) {
        if (ws->abort_on_sink) {
            rc = ws->ops && ws->ops->abort
                     ? ws->ops->abort(ws, ws->ctx, ws->abort_reason)
                     : 0;
            ws_fire_abort(ws, rc < 0 ? rc : 0);
        } else {
            /* The stream was erroring already when the abort came: the
             * sink is not told, the abort reports the stored error. */
            ws_fire_abort(ws, err);
        }
    }
    ws_fire_close(ws, err);
    ws_notify(ws);
}

/*
 * The spec's StartErroring: records err, fails the ready wait at once, and
 * finishes erroring now if the sink is idle, otherwise when its operation
 * settles. Writes made from here on fail with err.
 */
static void ws_start_erroring(struct weir_writable *ws, int err)
{
    ws->state = WS_ERRORING;
    ws->err = err;
    ws_fire_ready(ws, err);
    if (ws->started && !ws_busy_sink(ws))
        ws_finish_erroring(ws);
    else
        ws_notify(ws);
}

/* The spec's DealWithRejection: an operation of the sink failed. */
static void ws_deal_with_rejection(struct weir_writable *ws, int err)
{
    if (ws->state == WS_WRITABLE)
        ws_start_erroring(ws, err);
    else if (ws->state == WS_ERRORING && !ws_busy_sink(ws))
        ws_finish_erroring(ws);
}

static void ws_close_complete(struct weir_writable *ws, int rc)
{
    ws->close_in_flight = false;
    if (rc < 0) {
        ws_fire_close(ws, rc);
        /* An abort that waited for the close fails with the close's
         * error (the spec's FinishInFlightCloseWithError). */
        if (ws->abort_pending)
            ws_fire_abort(ws, rc);
        ws_deal_with_rejection(ws, rc);
        return;
    }
    /* A close that succeeds wins over an error or abort that arrived
     * while it was at the sink: the stream is closed, and a waiting
     * abort succeeds without reaching the sink. */
    ws->state = WS_CLOSED;
    ws->err = 0;
    ws_fire_close(ws, 0);
    if (ws->abort_pending)
        ws_fire_abort(ws, 0);
    ws_notify(ws);
}

static int ws_do_close(struct weir_writable *ws)
{
    int rc = 0;

    ws->close_in_flight = true;
    if (ws->ops && ws->ops->close)
        rc = ws->ops->close(ws, ws->ctx);
    if (rc != WEIR_PENDING)
        ws_close_complete(ws, rc);
    return rc;
}

/*
 * The sink finished the in-flight batch with rc. A failure errors the
 * stream before any callback runs, so a callback that writes again is
 * refused instead of reaching a sink that failed. Each entry leaves the
 * in-flight count as it is popped, before its callback runs: a callback
 * that writes again must see the rest of the batch still at the sink, or
 * ws_advance would hand those chunks over a second time. After the last
 * one, a callback may start the next batch; the loop stops at the n
 * entries it was given.
 */
static void ws_complete(struct weir_writable *ws, int rc)
{
    bool was_full = ws_desired(ws) <= 0;
    uint32_t n = ws->in_flight;
    bool failed = rc < 0 && ws->state == WS_WRITABLE;

    if (failed) {
        /* Erroring, with the ready wait still to fail after the write
         * callbacks (the spec's order). */
        ws->state = WS_ERRORING;
        ws->err = rc;
    }
    while (n--) {
        struct write_req r =
            *(struct write_req *)weir_q_pop(&ws->queue, REQ_SZ);

        ws->in_flight--;
        ws->queued -= ws_weight(ws, &r.chunk);
        if (r.cb)
            r.cb(r.ctx, rc);
    }
    if (failed)
        ws_fire_ready(ws, rc);
    if (ws->state == WS_ERRORING) {
        if (!ws_busy_sink(ws))
            ws_finish_erroring(ws);
        return;
    }
    if (ws->state != WS_WRITABLE)
        return;
    if (was_full && ws_desired(ws) > 0 && !ws->close_requested)
        ws_fire_ready(ws, 0);
}

static int ws_issue(struct weir_writable *ws)
{
    uint32_t n = weir_q_len(&ws->queue);
    struct write_req *r = weir_q_front(&ws->queue, REQ_SZ);

    if (n > 1 && ws->ops && ws->ops->writev) {
        struct weir_chunk batch[WEIR_WRITEV_MAX];

        if (n > WEIR_WRITEV_MAX)
            n = WEIR_WRITEV_MAX;
        for (uint32_t i = 0; i < n; i++)
            batch[i] = ((struct write_req *)weir_q_at(&ws->queue, REQ_SZ,
                                                      ws->queue.head + i))
                           ->chunk;
        ws->in_flight = n;
        return ws->ops->writev(ws, ws->ctx, batch, n);
    }
    ws->in_flight = 1;
    if (ws->ops && ws->ops->write)
        return ws->ops->write(ws, ws->ctx, r->chunk);
    weir_chunk_unref(&r->chunk, ws->slot);
    return 0;
}

/* Hands queued work to the sink while it is idle and finishing at once
 * (the spec's AdvanceQueueIfNeeded, as a loop). */
static void ws_advance(struct weir_writable *ws)
{
    while (ws->started && !ws_busy_sink(ws)) {
        int rc;

        if (ws->state == WS_ERRORING) {
            ws_finish_erroring(ws);
            return;
        }
        if (ws->state != WS_WRITABLE)
            return;
        if (weir_q_empty(&ws->queue)) {
            if (ws->close_requested)
                ws_do_close(ws);
            return;
        }
        rc = ws_issue(ws);
        if (rc == WEIR_PENDING)
            return;
        ws_complete(ws, rc);
    }
}

int weir_writable_create(struct weir_writable **out,
                         const struct weir_sink_ops *ops, void *ctx,
                         const struct weir_writable_options *opts)
{
    struct weir_writable *ws = weir_core_zalloc(sizeof(*ws));
    int rc;

    if (!ws)
        return -ENOMEM;
    ws->ops = ops;
    ws->ctx = ctx;
    if (opts) {
        ws->hwm = weir_hwm_of(opts->strategy.hwm);
        ws->weigh_bytes = opts->strategy.bytes;
        ws->slot = opts->slot;
    } else {
        ws->hwm = 1;
    }
    ws->state = WS_WRITABLE;
    *out = ws;
    if (!ops || !ops->start) {
        ws->started = true;
        ws->direct = ws->ops && ws->ops->write;
        return 0;
    }
    ws_hold(ws);
    rc = ops->start(ws, ctx);
    if (rc != WEIR_PENDING)
        weir_writable_start_done(ws, rc);
    ws_put(ws);
    return 0;
}

void weir_writable_destroy(struct weir_writable *ws)
{
    if (!ws)
        return;
    if (ws->busy) {
        ws->doomed = true;
        return;
    }
    ws_free(ws);
}

void weir_writable_error(struct weir_writable *ws, int err)
{
    if (ws->state != WS_WRITABLE)
        return;
    ws_hold(ws);
    ws_start_erroring(ws, err);
    ws_put(ws);
}

void weir_writable_start_done(struct weir_writable *ws, int rc)
{
    ws_hold(ws);
    ws->started = true;
    if (rc < 0) {
        ws_deal_with_rejection(ws, rc);
    } else {
        ws->direct = ws->ops && ws->ops->write && !ws->bp_released;
        ws_advance(ws);
    }
    ws_put(ws);
}

void weir_writable_release_backpressure(struct weir_writable *ws)
{
    if (ws->state != WS_WRITABLE || ws->close_requested ||
        !weir_q_empty(&ws->queue) || ws_desired(ws) > 0)
        return;
    if (!ws->bp_released) {
        ws->bp_released = true;
        /* The next write must end the release: the inline path, which
         * would not, is off until then. */
        ws->direct = false;
    }
    ws_hold(ws);
    ws_fire_ready(ws, 0);
    ws_put(ws);
}

void weir_writable_write_done(struct weir_writable *ws, int rc)
{
    ws_hold(ws);
    ws_complete(ws, rc);
    ws_advance(ws);
    ws_put(ws);
}

void weir_writable_close_done(struct weir_writable *ws, int rc)
{
    ws_hold(ws);
    ws_close_complete(ws, rc);
    ws_put(ws);
}

int64_t weir_writable_desired_size(const struct weir_writable *ws)
{
    if (ws->state == WS_ERRORED || ws->state == WS_ERRORING)
        return WEIR_DESIRED_NONE;
    if (ws->state == WS_CLOSED)
        return 0;
    if (ws->hwm == INT64_MAX)
        return INT64_MAX;
    return ws_desired(ws);
}

size_t weir_writable_queued(const struct weir_writable *ws)
{
    return ws->queued;
}

bool weir_writable_locked(const struct weir_writable *ws)
{
    return ws->locked;
}

bool weir_writable_closed(const struct weir_writable *ws)
{
    return ws->state == WS_CLOSED;
}

bool weir_writable_errored(const struct weir_writable *ws, int *err)
{
    if (ws->state != WS_ERRORED && ws->state != WS_ERRORING)
        return false;
    if (err)
        *err = ws->err;
    return true;
}

int weir_writer_acquire(struct weir_writer *w, struct weir_writable *ws)
{
    if (ws->locked)
        return -EBUSY;
    ws->locked = true;
    w->stream = ws;
    return 0;
}

void weir_writer_release(struct weir_writer *w)
{
    struct weir_writable *ws = w->stream;

    if (!ws)
        return;
    ws->locked = false;
    w->stream = NULL;
    /* The ready wait was the writer's: it ends with the writer. Writes
     * and a close already made are the stream's and settle as usual. */
    ws_hold(ws);
    ws_fire_ready(ws, -ECANCELED);
    ws_put(ws);
}

/* The sink answered a direct write with rc other than 0. */
int weir_writer_write_done_(struct weir_writable *ws, struct weir_chunk chunk,
                            weir_done_cb cb, void *ctx, int rc)
{
    struct write_req *r;

    if (rc < 0) {
        weir_writable_error(ws, rc);
        return rc;
    }
    r = weir_q_push(&ws->queue, REQ_SZ, 8);
    if (!r) {
        /* The sink has the chunk and will report; we cannot track it, so
         * the stream fails rather than lose count. */
        weir_writable_error(ws, -ENOMEM);
        return -ENOMEM;
    }
    *r = (struct write_req){chunk, cb, ctx};
    ws->in_flight = 1;
    ws->queued += ws_weight(ws, &chunk);
    return WEIR_PENDING;
}

/* A write that cannot go straight to the sink. */
int weir_writer_write_slow_(struct weir_writable *ws, struct weir_chunk chunk,
                            weir_done_cb cb, void *ctx)
{
    struct write_req *r;

    if (!ws || ws->state != WS_WRITABLE || ws->close_requested) {
        weir_chunk_unref(&chunk, ws ? ws->slot : 0);
        if (ws && (ws->state == WS_ERRORED || ws->state == WS_ERRORING))
            return ws->err;
        return -EINVAL;
    }
    if (ws->bp_released) {
        /* This write ends a released backpressure (which had turned the
         * inline path off to come here). */
        ws->bp_released = false;
        ws->direct = ws->started && ws->ops && ws->ops->write;
    }
    if (!ws->in_flight && weir_q_empty(&ws->queue) && ws->direct) {
        /* As the inline path: straight to the idle sink. */
        int rc = ws->ops->write(ws, ws->ctx, chunk);

        if (rc == 0)
            return 0;
        return weir_writer_write_done_(ws, chunk, cb, ctx, rc);
    }
    r = weir_q_push(&ws->queue, REQ_SZ, 8);
    if (!r) {
        weir_chunk_unref(&chunk, ws->slot);
        return -ENOMEM;
    }
    *r = (struct write_req){chunk, cb, ctx};
    ws->queued += ws_weight(ws, &chunk);
    ws_hold(ws);
    ws_advance(ws);
    ws_put(ws);
    /* Even a write that ws_advance finished counts as pending: its
     * callback has run. */
    return WEIR_PENDING;
}

int weir_writer_ready(struct weir_writer *w, weir_done_cb cb, void *ctx)
{
    struct weir_writable *ws = w->stream;

    if (!ws)
        return -EINVAL;
    if (ws->state == WS_ERRORED || ws->state == WS_ERRORING)
        return ws->err;
    if (ws->state == WS_CLOSED || ws->close_requested || ws_desired(ws) > 0 ||
        ws->bp_released)
        return 0;
    ws->ready_cb = cb;
    ws->ready_ctx = ctx;
    return WEIR_PENDING;
}

int weir_writer_close(struct weir_writer *w, weir_done_cb cb, void *ctx)
{
    struct weir_writable *ws = w->stream;
    int rc;

    if (!ws)
        return -EINVAL;
    if (ws->state == WS_ERRORED)
        return ws->err;
    if (ws->state == WS_CLOSED || ws->close_requested)
        return -EINVAL;
    ws->close_requested = true;
    if (ws->state == WS_ERRORING) {
        /* Fails with the error once the sink is idle, after the writes
         * before it (the spec's close request of an erroring stream). */
        ws->close_cb = cb;
        ws->close_ctx = ctx;
        return WEIR_PENDING;
    }
    /* A writer waiting for room would wait forever: let it go. */
    ws_hold(ws);
    ws_fire_ready(ws, 0);
    if (ws->started && !ws->in_flight && weir_q_empty(&ws->queue) &&
        ws->state == WS_WRITABLE) {
        rc = ws_do_close(ws);
        if (rc == WEIR_PENDING) {
            ws->close_cb = cb;
            ws->close_ctx = ctx;
        }
        ws_put(ws);
        return rc;
    }
    ws->close_cb = cb;
    ws->close_ctx = ctx;
    ws_put(ws);
    return WEIR_PENDING;
}

int weir_writer_abort(struct weir_writer *w, int reason, weir_done_cb cb,
                      void *ctx)
{
    struct weir_writable *ws = w->stream;
    bool already;

    if (!ws)
        return -EINVAL;
    if (ws->state == WS_CLOSED || ws->state == WS_ERRORED)
        return 0;
    if (ws->abort_pending)
        return -EALREADY;
    already = ws->state == WS_ERRORING;
    ws_hold(ws);
    ws->abort_pending = true;
    ws->abort_on_sink = !already;
    ws->abort_reason = reason;
    ws->abort_cb = NULL;
    ws->abort_rc = WEIR_PENDING;
    /* Until the abort settles, its result lands in abort_rc (a record of
     * the synchronous case); after this call returns, in the callback. */
    ws->abort_ctx = ws;
    ws->abort_cb = ws_abort_sync_cb;
    if (!already)
        ws_start_erroring(ws, reason);
    else if (!ws_busy_sink(ws) && ws->started)
        ws_finish_erroring(ws);
    if (ws->abort_rc == WEIR_PENDING) {
        ws->abort_cb = cb;
        ws->abort_ctx = ctx;
        ws_put(ws);
        return WEIR_PENDING;
    }
    ws_put(ws);
    return ws->abort_rc;
}

int64_t weir_writer_desired_size(const struct weir_writer *w)
{
    return w->stream ? weir_writable_desired_size(w->stream)
                     : WEIR_DESIRED_NONE;
}
