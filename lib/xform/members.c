/*
 * members.c - compressors whose output is a run of independent members
 * (gzip members, zstd frames), made whole from member_size bytes of input
 * each, on the stream's thread or, when the transform has a helper loop,
 * partly on the helper's thread. The kind gives the codec (x->kind->codec);
 * this file gathers input into members, lends them, and hands the output
 * on in order.
 *
 * Input gathers in a slot until a member's worth is there (a chunk is
 * usually far smaller than a member, and a small member would cost ratio),
 * then compresses into the slot's output buffer, sized for the worst case,
 * and is copied out into pool buffers; compressed bytes are few, so the
 * copy is cheap. A chunk that alone makes a whole member while nothing is
 * gathered is compressed where it lies.
 *
 * Members are independent, so two threads can compress two of them at
 * once. With a helper, a member that fills while the helper has room (and
 * its owner is not busy with its own compressing) goes to the helper (a
 * task posted to its loop), and the stream's thread goes on reading and
 * compresses the next member itself; the output leaves in member order
 * from a small ring of slots. When every slot is taken, or the stream
 * ends, the transform parks with XF_STALL_AWAY until the helper's member
 * is done; the owner's resume then hands it on. Lending a member costs one
 * post: its input was gathered into a slot anyway (or is a pool chunk the
 * slot holds a reference to), and the helper touches no pool buffer.
 *
 * Decoders (gunzip, unzstd) use the same slots, helper and order the other
 * way round: members_decode.c cuts the input into members and hands each
 * whole to seal. Both sides stand on members_engine.c (the slots, the
 * helper, the order out); this file also holds the kinds' entry points,
 * which send a decoder's calls on to members_decode.c.
 */
#include <stdlib.h>
#include <string.h>

#include "members.h"

/* Gathers n bytes of input into the slot. */
static int xm_gather(struct weir_xform *x, struct xm_slot *s, const uint8_t *p,
                     size_t n)
{
    if (!s->in) {
        s->in = malloc(x->member_size);
        if (!s->in)
            return -ENOMEM;
        s->in_cap = x->member_size;
    }
    memcpy(s->in + s->in_len, p, n);
    s->src = s->in;
    s->in_len += n;
    return 0;
}

int weir__xm_step(struct weir_xform *x)
{
    struct xm_state *g;
    int rc = weir__xm_state(x, &g);

    if (rc == 0 && x->kind->codec->cut)
        return weir__xm_decode_step(x, g);
    while (rc == 0 && (rc = weir__xm_drain(x, g)) == 0 && xf_in_left(x)) {
        uint32_t n = xf_in_left(x);
        struct xm_slot *s;
        bool whole, lend;

        rc = weir__xm_claim(g, &s);
        if (rc)
            break;
        whole = s->in_len == 0 && n >= x->member_size;
        lend = whole && weir__xm_helper_free(g);
        if (whole && (x->in.buf || !lend)) {
            /* A whole member in one chunk: compressed where it lies,
             * here or, holding a reference to the chunk, on the helper
             * (a chunk outside any pool cannot be held: it is gathered). */
            n = (uint32_t)x->member_size;
            s->src = xf_in_ptr(x);
            s->in_len = n;
            if (lend) {
                s->held = x->in;
                weir_chunk_ref(&s->held);
                weir__xm_send(x, g, s);
            } else {
                rc = weir__xm_make_here(g, s, s->src, n);
            }
        } else {
            if (n > x->member_size - s->in_len)
                n = (uint32_t)(x->member_size - s->in_len);
            rc = xm_gather(x, s, xf_in_ptr(x), n);
            if (rc == 0 && s->in_len == x->member_size)
                rc = weir__xm_seal(x, g, s);
        }
        x->in_off += n;
        x->st.in_bytes += n;
    }
    return rc;
}

/* Seals what is gathered, compressing it here: nothing else is coming
 * soon, and waiting for the helper would only add its latency. */
static int xm_seal_here(struct xm_state *g)
{
    struct xm_slot *s = weir__xm_filling(g);
    int rc;

    if (s)
        return weir__xm_make_here(g, s, s->src, s->in_len);
    if (g->members || !g->final)
        return 0;
    /* The end of an empty stream still makes one member: zero bytes are
     * neither a gzip file nor a zstd one. */
    rc = weir__xm_claim(g, &s);
    return rc ? rc : weir__xm_make_here(g, s, (const uint8_t *)"", 0);
}

int weir__xm_finish(struct weir_xform *x)
{
    struct xm_state *g;
    int rc = weir__xm_state(x, &g);

    if (rc == 0 && x->kind->codec->cut)
        return weir__xm_decode_finish(x, g);
    if (rc == 0)
        rc = weir__xm_drain(x, g);
    if (rc == 0 && !g->final) {
        g->final = true;
        rc = xm_seal_here(g);
        if (rc == 0)
            rc = weir__xm_drain(x, g);
    }
    if (rc == 0 && g->n)
        rc = XF_STALL_AWAY;
    return rc ? rc : weir__xf_out_emit(x);
}

/* Ends the member early: a live source went quiet. */
int weir__xm_sync(struct weir_xform *x)
{
    struct xm_state *g = x->state;
    int rc;

    if (!g || g->final)
        return weir__xf_out_emit(x);
    if (x->kind->codec->cut)
        return weir__xm_decode_sync(x, g);
    rc = weir__xm_drain(x, g);
    if (rc == 0)
        rc = xm_seal_here(g);
    if (rc == 0)
        rc = weir__xm_drain(x, g);
    if (rc == 0)
        rc = weir__xf_out_emit(x);
    /* What went out ends with a whole member either way; members still
     * on the helper follow whole, without waiting for input. */
    if (rc == 0 && g->n) {
        g->sync_pending = true;
        rc = XF_STALL_AWAY;
    }
    return rc;
}

bool weir__xm_away(struct weir_xform *x)
{
    struct xm_state *g = x->state;

    return g && g->sh && weir__xm_sealed(g) > 0;
}

/* Hands on members the helper finished since the last call. */
int weir__xm_poll(struct weir_xform *x)
{
    struct xm_state *g = x->state;
    int rc = weir__xm_drain(x, g);

    if (rc == 0 && weir__xm_sealed(g))
        rc = XF_STALL_AWAY;
    /* After a sync or the last member, the open buffer goes too; a
     * decoder hands on what it has at once. */
    if (rc == 0 && (g->final || g->sync_pending || x->kind->codec->cut)) {
        g->sync_pending = false;
        rc = weir__xf_out_emit(x);
    }
    return rc;
}

void weir__xm_fini(struct weir_xform *x)
{
    struct xm_state *g = x->state;

    if (!g)
        return;
    if (g->c)
        x->kind->codec->close(g->c);
    if (x->kind->codec->cut)
        weir__xm_decode_fini(x, g);
    if (g->sh)
        weir__xm_shared_drop(x, g);
    free(g);
}
