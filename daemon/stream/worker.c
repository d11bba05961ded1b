/*
 * worker.c - the life of a stream on its worker: holds taken by its
 * build and by each pipe, the end once the last is released (and its
 * timers are back: mark and reap), and the teardown of every stage it
 * built, which keeps the stream's results for the main thread.
 */
#include "stream/worker.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "stream/budget.h"
#include "stream/checkpoint_set.h"
#include "stream/fileset_live.h"
#include "stream/source_ack.h"
#include "stream/stream_impl.h"
#include "sys/clock.h"
#include "sys/log.h"

struct pipe_ctx *stream_pipe_ctx(struct stream *s, int idx)
{
    if (idx >= -1)
        return &s->pc[idx + 1];
    return &s->pc[s->sp->nsinks + 1 + (unsigned)(-2 - idx)];
}

static void tee_collect(struct stream *s)
{
    struct stream_home *h = &s->home;
    struct weir_tee_stats st;

    for (unsigned i = 0; i < s->sp->nsinks; i++) {
        weir_tee_stats(h->tee, i, &st);
        s->ss[i].teed = true;
        s->ss[i].dropped = st.dropped_bytes;
        s->ss[i].produced = weir_tee_produced_bytes(h->tee);
        s->ss[i].disconnected = st.disconnected;
    }
}

static void stream_teardown(struct stream *s)
{
    struct stream_home *h = &s->home;

    if (s->sp->tail)
        s->sp->tail->teardown(s);
    /* The last checkpoint, while the endpoints can still be asked. */
    ckpt_sample(s, true);
    ckpt_set_sample(s, true);
    source_ack_sample(s, true);
    stream_fs_sample(s);
    if (h->tee) {
        tee_collect(s);
        weir_tee_destroy(h->tee);
    }
    if (h->http) {
        s->sink_bytes[0] =
            atomic_load_explicit(&s->bytes_out, memory_order_relaxed);
        http_conn_destroy(h->http);
        h->http = NULL;
    }
    if (h->splice) {
        s->sink_bytes[0] = weir_file_send_bytes(h->splice);
        weir_file_send_destroy(h->splice);
        h->splice = NULL;
    }
    for (unsigned i = 0; h->sinks && i < s->sp->nsinks; i++) {
        if (!h->sinks[i])
            continue;
        s->sink_bytes[i] = weir_endpoint_bytes(h->sinks[i]);
        weir_endpoint_destroy(h->sinks[i]);
    }
    stream_xforms_destroy(s);
    relay_teardown(s);
    weir_tls_session_release(h->tls_src);
    weir_tls_session_release(h->tls_up);
    h->tls_src = h->tls_up = NULL;
    if (h->src)
        weir_endpoint_destroy(h->src);
    h->tee = NULL;
    h->src = NULL;
    budget_give(s);
    /* The post orders the results written here (sink_rc, sink_bytes,
     * src_rc) before the main loop's reading of them. */
    weir_loop_post(s->cx->main, &s->done);
}

void stream_hold(struct stream *s)
{
    s->home.pipes++;
}

void stream_put(struct stream *s)
{
    if (--s->home.pipes == 0)
        stream_finish(s);
}

/* A tee'd sink that fails leaves the others going: said at once, not
 * only when the stream ends. Its checkpoint offset stays where it failed,
 * so a restart resends it what it missed. */
static void sink_failed(struct stream *s, unsigned i, int rc)
{
    const struct weir_address *a = s->sp->p->sinks[i];

    /* A cut at the drain timeout ends every sink; the closing line says
     * so once, not a failure per sink. */
    if (rc >= 0 || rc == -ECANCELED || s->sp->nsinks < 2 ||
        s->sp->client_sink || s->home.cutting)
        return;
    if (rc == -ENOBUFS && a->on_full == ON_FULL_DISCONNECT)
        log_warnx("pipeline %s: sink %s cut loose: its queue stayed full "
                  "(on_full=disconnect); the other sinks go on without it",
                  s->sp->p->name, a->text);
    else
        log_warnx("pipeline %s: sink %s failed: %s; the other sinks go on "
                  "without it",
                  s->sp->p->name, a->text, strerror(-rc));
}

static void pipe_done(void *ctx, int rc)
{
    struct pipe_ctx *pc = ctx;
    struct stream *s = pc->s;

    if (pc->idx == -1)
        s->src_rc = rc;
    else if (pc->idx < -1) {
        if (rc < 0 && s->src_rc == 0)
            s->src_rc = rc;
    } else {
        s->sink_rc[pc->idx] = rc;
        sink_failed(s, (unsigned)pc->idx, rc);
    }
    if (rc < 0 && s->relay)
        relay_cut(pc->s);
    stream_put(pc->s);
}

void stream_pipe(struct stream *s, struct weir_readable *rs,
                 struct weir_writable *ws, int idx)
{
    struct pipe_ctx *pc = stream_pipe_ctx(s, idx);
    int rc;

    pc->s = s;
    pc->idx = idx;
    stream_hold(s);
    rc = weir_pipe_to(rs, ws, NULL, pipe_done, pc);
    if (rc != WEIR_PENDING)
        pipe_done(pc, rc);
}

/* The timers may still be pending, or the kick's callback running: then
 * the teardown waits for them (mark and reap). */
void stream_finish(struct stream *s)
{
    struct stream_home *h = &s->home;

    h->finished = true;
    if (h->kicking || h->kick.op.pending || h->watch.op.pending) {
        h->reap = true;
        if (h->kick.op.pending)
            weir_loop_timer_stop(h->loop, &h->kick);
        if (h->watch.op.pending)
            weir_loop_timer_stop(h->loop, &h->watch);
        return;
    }
    stream_try_reap(s);
}

/*
 * A followed file's last checkpoint is what the peers acknowledged: when
 * a tcp sink's peer has not acknowledged everything yet, the teardown
 * (which closes the socket) waits for it, polling every ACK_POLL_NS, for
 * at most ACK_WAIT_NS, so that a clean restart sends nothing twice.
 */
#define ACK_POLL_NS (10ll * 1000 * 1000)
#define ACK_WAIT_NS (2000ll * 1000 * 1000)

static bool ack_wait(struct stream *s)
{
    struct stream_home *h = &s->home;
    int64_t now = clock_now_ns();

    if (!h->watch.op.fn || !ckpt_acks_pending(s))
        return false;
    if (h->ack_until == 0)
        h->ack_until = now + ACK_WAIT_NS;
    if (now >= h->ack_until)
        return false;
    h->reap = true; /* the watch's callback comes back here */
    return weir_loop_timer_start(h->loop, &h->watch, ACK_POLL_NS) == 0;
}

/* A stream marked for reaping goes once none of its timers is pending. */
void stream_try_reap(struct stream *s)
{
    struct stream_home *h = &s->home;

    if (!h->kicking && !h->kick.op.pending && !h->watch.op.pending &&
        !h->ck_soon.op.pending && !ack_wait(s))
        stream_teardown(s);
}

void stream_xforms_count(struct stream *s)
{
    struct weir_xform_stats st;

    /* Relaxed: statistics, written by this worker only. */
    for (unsigned i = 0; i < s->home.nxf; i++) {
        struct weir_xform *x = s->home.xf[i];

        if (!x)
            continue;
        weir_xform_stats(x, &st);
        atomic_store_explicit(&s->xf_live[i].in, st.in_bytes,
                              memory_order_relaxed);
        atomic_store_explicit(&s->xf_live[i].out, st.out_bytes,
                              memory_order_relaxed);
    }
}

/* Keeps the first transform error of the stream for its closing line. */
void stream_xforms_destroy(struct stream *s)
{
    struct stream_home *h = &s->home;

    if (h->member_stream) {
        h->member_stream = false;
        /* Relaxed: only steers the next streams' choice (xf_helper). */
        atomic_fetch_sub_explicit(&s->cx->sched->member_streams[h->worker], 1,
                                  memory_order_relaxed);
    }
    stream_xforms_count(s);
    for (unsigned i = 0; i < h->nxf; i++) {
        uint64_t off = 0;
        int err;

        if (!h->xf[i])
            continue;
        err = weir_xform_error(h->xf[i], &off);
        if (err && !s->xf_err) {
            s->xf_err = err;
            s->xf_off = off;
            snprintf(s->xf_name, sizeof(s->xf_name), "%s",
                     weir_xform_name(h->xf[i]));
        }
        weir_xform_destroy(h->xf[i]);
    }
    free(h->xf);
    h->xf = NULL;
    h->nxf = 0;
}

void relay_cut(struct stream *s)
{
    struct stream_home *h = &s->home;

    /* Through the reverse direction's dups, which stay open until the
     * stream is torn down: both connections, both directions. */
    if (h->rfd_up >= 0)
        shutdown(h->rfd_up, SHUT_RDWR);
    if (h->rfd_cli >= 0)
        shutdown(h->rfd_cli, SHUT_RDWR);
}

void relay_teardown(struct stream *s)
{
    struct stream_home *h = &s->home;

    if (!s->relay)
        return;
    if (h->rsink) {
        s->rev_bytes = weir_endpoint_bytes(h->rsink);
        weir_endpoint_destroy(h->rsink);
    } else if (h->rfd_cli >= 0) {
        close(h->rfd_cli);
    }
    if (h->rsrc)
        weir_endpoint_destroy(h->rsrc);
    else if (h->rfd_up >= 0)
        close(h->rfd_up);
    h->rsrc = NULL;
    h->rsink = NULL;
    h->rfd_up = -1;
    h->rfd_cli = -1;
}

/* A readable that earlier stages feed but nothing will read (a later
 * stage could not be built): cancelling it ends those stages' pipes. */
void stream_cancel_unread(struct stream *s, struct weir_readable *rs, int rc)
{
    struct stream_home *h = &s->home;

    if (weir_readable_locked(rs) || weir_reader_acquire(&h->dead, rs) != 0)
        return;
    weir_reader_cancel(&h->dead, rc);
    weir_reader_release(&h->dead);
}
