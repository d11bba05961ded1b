/*
 * xforms.c - a stream's transform stages: made from the pipeline's
 * specs and piped one into the next (worker.c destroys them, keeping the
 * first error for the stream's closing line).
 */
#include "stream/xforms.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "stream/stream_impl.h"
#include "stream/watch.h"

/*
 * The loop that may make members beside the stream's own worker (gzip
 * members and zstd frames compressed, or decoded): the next worker's,
 * with two workers or more. Lending members to a worker that has such streams
 * of its own only queues them behind its work (bench/results/heavy.md), so
 * each such stream (weir_xform_uses_helper says which) counts itself in the
 * run's member_streams, and its codec reads the other worker's count before
 * each member (weir_xform_options.helper_busy).
 */
static struct weir_loop *xf_helper(struct stream *s,
                                   const _Atomic uint32_t **busy)
{
    struct stream_home *h = &s->home;
    struct stream_ctx *cx = s->cx;
    _Atomic uint32_t *count = cx->sched->member_streams;
    const struct weir_pipeline *p = s->sp->p;
    unsigned other = (h->worker + 1) % cx->nworkers;
    bool members = false;

    for (size_t k = 0; k < p->ntransforms; k++)
        members = members || weir_xform_uses_helper(p->transforms[k].spec);
    if (!members)
        return NULL;
    h->member_stream = true;
    /* Relaxed: a hint for the other worker's member streams, read
     * relaxed there; nothing is published with it. */
    atomic_fetch_add_explicit(&count[h->worker], 1, memory_order_relaxed);
    if (cx->nworkers < 2)
        return NULL;
    *busy = &count[other];
    return weir_workers_loop(cx->workers, other);
}

struct weir_readable *stream_xforms_build(struct stream *s,
                                          struct weir_readable *rs)
{
    struct stream_home *h = &s->home;
    const struct weir_pipeline *p = s->sp->p;
    struct weir_xform_options o = {
        .pool = weir_worker_pool(),
        .slot = weir_loop_slot(h->loop),
        /* One chunk in, one chunk out: the stage's share of the memory
         * formula. */
        .writable = {.hwm = p->chunk_size, .bytes = true},
        .readable = {.hwm = p->chunk_size, .bytes = true},
        .on_stall = stream_xf_stalled,
        .stall_ctx = s,
    };
    int rc;

    o.helper = xf_helper(s, &o.helper_busy);
    stream_kick_init(s);
    h->xf = calloc(p->ntransforms, sizeof(*h->xf));
    if (!h->xf) {
        s->src_rc = -ENOMEM;
        stream_cancel_unread(s, rs, -ENOMEM);
        return NULL;
    }
    for (size_t k = 0; k < p->ntransforms; k++) {
        rc = weir_xform_create(&h->xf[k], p->transforms[k].spec, &o);
        if (rc) {
            h->xf[k] = NULL;
            s->src_rc = rc;
            stream_cancel_unread(s, rs, rc);
            return NULL;
        }
        h->nxf = (unsigned)k + 1;
        stream_pipe(s, rs,
                    weir_transform_writable(weir_xform_transform(h->xf[k])),
                    -2 - (int)k);
        rs = weir_transform_readable(weir_xform_transform(h->xf[k]));
    }
    return rs;
}

struct weir_xform *stream_last_xform(const struct stream *s)
{
    return s->home.nxf ? s->home.xf[s->home.nxf - 1] : NULL;
}
