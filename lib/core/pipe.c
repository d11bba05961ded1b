/*
 * pipe.c - pipeTo: the read/write loop and the spec's shutdown rules.
 *
 * pipe_pump is the only loop. Every event (a parked read answered, a write
 * finished, the destination ready again, a state change seen by a watch)
 * calls it; a call that arrives while it runs only sets pump_again, so
 * chunks that flow synchronously cycle inside one loop rather than nesting
 * read -> write -> read on the stack.
 *
 * Shutdown goes through three steps, as the spec's "shutdown with an
 * action": wait until the writes already issued have finished (while the
 * destination can still finish them), run the action (abort, cancel,
 * close), then finalize (unlock both streams and report). The pipe's
 * memory is freed by the outermost event that leaves it finished (mark and
 * reap: `busy` counts the events in progress).
 */
#include <errno.h>

#include "alloc.h"
#include "stream_impl.h"

enum { ACT_NONE, ACT_ABORT, ACT_CANCEL, ACT_CLOSE };
enum { PH_RUN, PH_DRAIN, PH_ACTING, PH_DONE };

struct weir_pipe {
    struct weir_reader reader;
    struct weir_writer writer;
    struct weir_pipe_options opts;
    weir_done_cb done;
    void *ctx;
    int result;    /* what finalize reports */
    int writes;    /* writes issued and not finished */
    unsigned slot; /* the source's thread slot */
    uint32_t busy;
    uint8_t phase, action;
    bool pumping, pump_again, reading, in_call;
};

static void pipe_pump(struct weir_pipe *p);
static void pipe_ready_cb(void *ctx, int rc);

static inline struct weir_readable *src_of(struct weir_pipe *p)
{
    return p->reader.stream;
}

static inline struct weir_writable *dst_of(struct weir_pipe *p)
{
    return p->writer.stream;
}

static void pipe_hold(struct weir_pipe *p)
{
    p->busy++;
}

/* Frees a finished pipe once no event is running in it and no write it
 * issued can still call back (an abort leaves writes in flight). */
static void pipe_put(struct weir_pipe *p)
{
    if (--p->busy == 0 && p->phase == PH_DONE && p->writes == 0)
        weir_core_free(p);
}

static void pipe_finalize(struct weir_pipe *p, int rc)
{
    struct weir_readable *rs = src_of(p);
    struct weir_writable *ws = dst_of(p);

    p->phase = PH_DONE;
    p->result = rc;
    rs->watch = (struct weir_watch){0};
    ws->watch = (struct weir_watch){0};
    if (ws->ready_cb == pipe_ready_cb && ws->ready_ctx == p)
        ws->ready_cb = NULL;
    weir_writer_release(&p->writer);
    /* A read still parked comes back now with -ECANCELED; its callback
     * sees PH_DONE and ignores it. */
    weir_reader_release(&p->reader);
    if (!p->in_call && p->done)
        p->done(p->ctx, rc);
}

/* The abort of a shutdown finished: its failure, if any, is the pipe's
 * result, otherwise the error that caused it. */
static void pipe_abort_cb(void *ctx, int rc)
{
    struct weir_pipe *p = ctx;

    pipe_hold(p);
    pipe_finalize(p, rc < 0 ? rc : p->result);
    pipe_put(p);
}

static void pipe_close_cb(void *ctx, int rc)
{
    struct weir_pipe *p = ctx;

    pipe_hold(p);
    pipe_finalize(p, rc);
    pipe_put(p);
}

static bool dst_closing(const struct weir_writable *ws)
{
    return ws->close_requested || ws->close_in_flight || ws->state == WS_CLOSED;
}

static void pipe_act(struct weir_pipe *p)
{
    struct weir_writable *ws = dst_of(p);
    int rc = p->result;

    p->phase = PH_ACTING;
    switch (p->action) {
    case ACT_ABORT: {
        int a = weir_writer_abort(&p->writer, rc, pipe_abort_cb, p);

        if (a == WEIR_PENDING)
            return;
        if (a < 0)
            rc = a;
        break;
    }
    case ACT_CANCEL: {
        int c = weir_reader_cancel(&p->reader, rc);

        if (c < 0 && c != rc)
            rc = c;
        break;
    }
    case ACT_CLOSE:
        /* The spec's WritableStreamDefaultWriterCloseWithErrorPropagation. */
        if (ws->state == WS_ERRORED)
            rc = ws->err;
        else if (dst_closing(ws))
            rc = 0;
        else {
            rc = weir_writer_close(&p->writer, pipe_close_cb, p);
            if (rc == WEIR_PENDING)
                return;
        }
        break;
    default:
        break;
    }
    pipe_finalize(p, rc);
}

/* Steps a shutdown as far as it can go now. */
static void pipe_shutdown_step(struct weir_pipe *p)
{
    struct weir_writable *ws = dst_of(p);

    if (p->phase != PH_DRAIN)
        return;
    if (p->writes > 0 && ws->state == WS_WRITABLE && !dst_closing(ws))
        return;
    pipe_act(p);
}

static void pipe_shutdown(struct weir_pipe *p, uint8_t action, int rc)
{
    p->phase = PH_DRAIN;
    p->action = action;
    p->result = rc;
}

/* The spec's four state rules, in its order. True once shutting down, or
 * while the destination is erroring (its error settles once its sink is
 * idle, and the pipe neither reads nor writes meanwhile). */
static inline bool pipe_check(struct weir_pipe *p)
{
    struct weir_readable *rs = src_of(p);
    struct weir_writable *ws = dst_of(p);

    /* Both streams open: one test for the common case. */
    if ((rs->state | ws->state | ws->close_requested | ws->close_in_flight) ==
        0)
        return false;
    if (ws->state == WS_ERRORING && rs->state != RS_ERRORED)
        return true;
    if (rs->state == RS_ERRORED)
        pipe_shutdown(p, p->opts.prevent_abort ? ACT_NONE : ACT_ABORT, rs->err);
    else if (ws->state == WS_ERRORED)
        pipe_shutdown(p, p->opts.prevent_cancel ? ACT_NONE : ACT_CANCEL,
                      ws->err);
    else if (rs->state == RS_CLOSED)
        pipe_shutdown(p, p->opts.prevent_close ? ACT_NONE : ACT_CLOSE, 0);
    else if (dst_closing(ws))
        pipe_shutdown(p, p->opts.prevent_cancel ? ACT_NONE : ACT_CANCEL,
                      -EPIPE);
    else
        return false;
    return true;
}

static void pipe_write_cb(void *ctx, int rc)
{
    struct weir_pipe *p = ctx;

    (void)rc;
    pipe_hold(p);
    p->writes--;
    pipe_pump(p);
    pipe_put(p);
}

static inline __attribute__((always_inline)) void
pipe_write(struct weir_pipe *p, struct weir_chunk chunk)
{
    int rc;

    p->writes++;
    rc = weir_writer_write(&p->writer, chunk, pipe_write_cb, p);
    if (rc != WEIR_PENDING)
        p->writes--;
}

static void pipe_read_cb(void *ctx, int rc, struct weir_chunk chunk)
{
    struct weir_pipe *p = ctx;

    pipe_hold(p);
    p->reading = false;
    if (rc == 0) {
        struct weir_writable *ws = dst_of(p);

        /* A chunk read is written even during shutdown, while the
         * destination can take it. One it cannot take (it started
         * erroring or closing while the read waited) was never the
         * pipe's: it goes back to the source, for whoever reads next. */
        if (p->phase != PH_DONE && ws->state == WS_WRITABLE && !dst_closing(ws))
            pipe_write(p, chunk);
        else if (src_of(p))
            weir_readable_unread_(src_of(p), chunk);
        else
            weir_chunk_unref(&chunk, p->slot);
    }
    pipe_pump(p);
    pipe_put(p);
}

static void pipe_event(void *ctx)
{
    struct weir_pipe *p = ctx;

    pipe_hold(p);
    pipe_pump(p);
    pipe_put(p);
}

static void pipe_ready_cb(void *ctx, int rc)
{
    (void)rc;
    pipe_event(ctx);
}

static void pipe_run(struct weir_pipe *p)
{
    struct weir_writable *ws = dst_of(p);
    struct weir_chunk chunk;
    int rc;

    /* The states are checked even while a read is parked: a destination
     * that errors or closes must end the pipe (and cancel the source)
     * without waiting for the source to yield. */
    while (p->phase == PH_RUN) {
        if (pipe_check(p) || p->reading)
            return;
        if (weir_ws_desired(ws) <= 0) {
            int ready = weir_writer_ready(&p->writer, pipe_ready_cb, p);

            if (ready == WEIR_PENDING)
                return;
            /* Ready without room: the destination closed, errored (the
             * states are checked again), or released its backpressure
             * (weir_writable_release_backpressure), which lets one chunk
             * through. */
            if (ready != 0 || !ws->bp_released)
                continue;
        }
        rc = weir_reader_read_as_(&p->reader, &chunk, pipe_read_cb, p, true);
        if (rc == 0)
            pipe_write(p, chunk);
        else if (rc == WEIR_PENDING)
            p->reading = true;
        else if (rc == -ENOMEM)
            pipe_shutdown(p, ACT_NONE, rc);
        /* WEIR_DONE or an error: the next pipe_check acts on it. */
    }
}

static void pipe_pump(struct weir_pipe *p)
{
    if (p->pumping) {
        p->pump_again = true;
        return;
    }
    p->pumping = true;
    do {
        p->pump_again = false;
        pipe_run(p);
        pipe_shutdown_step(p);
    } while (p->pump_again && p->phase != PH_DONE);
    p->pumping = false;
}

int weir_pipe_to(struct weir_readable *src, struct weir_writable *dst,
                 const struct weir_pipe_options *opts, weir_done_cb done,
                 void *ctx)
{
    struct weir_pipe *p;
    int rc;

    if (src->locked || dst->locked)
        return -EBUSY;
    p = weir_core_zalloc(sizeof(*p));
    if (!p)
        return -ENOMEM;
    if (opts)
        p->opts = *opts;
    p->done = done;
    p->ctx = ctx;
    p->slot = src->slot;
    weir_reader_acquire(&p->reader, src);
    weir_writer_acquire(&p->writer, dst);
    src->watch = (struct weir_watch){pipe_event, p};
    dst->watch = (struct weir_watch){pipe_event, p};
    p->in_call = true;
    pipe_hold(p);
    pipe_pump(p);
    p->in_call = false;
    rc = p->phase == PH_DONE ? p->result : WEIR_PENDING;
    pipe_put(p);
    return rc;
}

int weir_pipe_through(struct weir_readable *src, struct weir_transform *tf,
                      const struct weir_pipe_options *opts, weir_done_cb done,
                      void *ctx)
{
    return weir_pipe_to(src, weir_transform_writable(tf), opts, done, ctx);
}
