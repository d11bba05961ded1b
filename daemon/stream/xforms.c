/*
 * xforms.c - a half's transform stages: made from the pipeline's specs,
 * piped one into the next, and destroyed with the first error kept for
 * the stream's closing line.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "stream/stream.h"

/*
 * The loop that may make members beside this half's (gzip members and
 * zstd frames compressed, or decoded): the other worker's, with two
 * workers or more. Lending members to a worker that has such streams of
 * its own only queues them behind its work (bench/results/placement.md),
 * so each such stream (weir_xform_uses_helper says which) counts itself
 * in cx->member_streams, and its codec reads the other worker's count
 * before each member (weir_xform_options.helper_busy).
 */
static struct weir_loop *xf_helper(struct half *h,
                                   const _Atomic uint32_t **busy)
{
    struct stream *s = h->s;
    struct stream_ctx *cx = s->cx;
    const struct weir_pipeline *p = s->sp->p;
    struct half *other = h == &s->h[0] ? &s->h[1] : &s->h[0];
    bool members = false;

    for (size_t k = 0; k < p->ntransforms; k++)
        members = members || weir_xform_uses_helper(p->transforms[k].spec);
    if (!members || !cx->member_streams)
        return NULL;
    h->member_stream = true;
    /* Relaxed: a hint for the other worker's member streams, read
     * relaxed there; nothing is published with it. */
    atomic_fetch_add_explicit(&cx->member_streams[h->worker], 1,
                              memory_order_relaxed);
    if (cx->nworkers < 2 || !cx->place.xform_helper)
        return NULL;
    *busy = &cx->member_streams[other->worker];
    return other->loop;
}

struct weir_readable *half_xforms_build(struct half *h,
                                        struct weir_readable *rs)
{
    struct stream *s = h->s;
    const struct weir_pipeline *p = s->sp->p;
    struct weir_xform_options o = {
        .pool = weir_worker_pool(),
        .slot = weir_loop_slot(h->loop),
        /* One chunk in, one chunk out: the stage's share of the memory
         * formula. */
        .writable = {.hwm = p->chunk_size, .bytes = true},
        .readable = {.hwm = p->chunk_size, .bytes = true},
        .on_stall = half_xf_stalled,
        .stall_ctx = h,
    };
    int rc;

    o.helper = xf_helper(h, &o.helper_busy);
    half_kick_init(h);
    h->xf = calloc(p->ntransforms, sizeof(*h->xf));
    if (!h->xf) {
        s->src_rc = -ENOMEM;
        half_cancel_unread(h, rs, -ENOMEM);
        return NULL;
    }
    for (size_t k = 0; k < p->ntransforms; k++) {
        rc = weir_xform_create(&h->xf[k], p->transforms[k].spec, &o);
        if (rc) {
            h->xf[k] = NULL;
            s->src_rc = rc;
            half_cancel_unread(h, rs, rc);
            return NULL;
        }
        h->nxf = (unsigned)k + 1;
        half_pipe(h, rs,
                  weir_transform_writable(weir_xform_transform(h->xf[k])),
                  -2 - (int)k);
        rs = weir_transform_readable(weir_xform_transform(h->xf[k]));
    }
    return rs;
}
