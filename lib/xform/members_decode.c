/*
 * members_decode.c - decoders whose input is a run of independent members
 * (gzip members, zstd frames): the member engine the other way round.
 * The codec's cut finds where each member ends and how much it makes from
 * its header alone (weir's gzip members and BGZF blocks carry their size,
 * a zstd frame is the run of its blocks' headers); the member is gathered
 * whole into a slot and decoded whole, here or on the helper, and the
 * output leaves in member order, as compressed members do.
 *
 * A member cut cannot measure (gzip(1)'s members say nothing of their
 * size; a zstd frame past XM_DECODE_MAX) gives the rest of the stream to
 * the codec's streaming kind: once the members before it are out, that
 * kind is fed the bytes the slot gathered, then every chunk after them.
 * It keeps the stream to its end; its state lives here, swapped into
 * x->state around each call, so the kind runs unchanged.
 */
#include <stdlib.h>
#include <string.h>

#include "members.h"

/* What a decoder's slots may hold, input and output, besides the member
 * being gathered: past it, idle slots give their room back, and then the
 * next member waits for the helper to finish one rather than pile up.
 * Four weir members of 256 KiB (gzip) or 1 MiB (zstd) fit in it. */
#define XM_DECODE_HELD (12u << 20)

static size_t xm_held(struct xm_state *g)
{
    size_t held = 0;

    for (unsigned i = 0; i < g->nslots; i++)
        held += g->sh->slot[i].in_cap + g->sh->slot[i].out_cap;
    return held;
}

/* Frees the room of the slots that hold no member. */
static void xm_give_back(struct xm_state *g)
{
    for (unsigned k = g->n; k < g->nslots; k++) {
        struct xm_slot *s = xm_slot_at(g, k);

        free(s->in);
        free(s->out);
        s->in = s->out = NULL;
        s->in_cap = s->out_cap = 0;
    }
}

/* Room for `want` bytes in *buf, growing by at least half again, since a
 * zstd frame's cut asks block by block. */
static int xm_room(uint8_t **buf, size_t *cap, size_t want)
{
    size_t n = *cap + *cap / 2;
    uint8_t *p;

    if (want <= *cap && *buf)
        return 0;
    if (n < want)
        n = want;
    if (n < 4096)
        n = 4096;
    if (n > XM_DECODE_MAX)
        n = want > XM_DECODE_MAX ? want : XM_DECODE_MAX;
    p = realloc(*buf, n);
    if (!p)
        return -ENOMEM;
    *buf = p;
    *cap = n;
    return 0;
}

/* Calls one of the streaming kind's functions on its own state. Its
 * offsets count from where it took over. */
static int xm_stream_call(struct weir_xform *x, struct xm_state *g,
                          int (*fn)(struct weir_xform *))
{
    void *mine = x->state;
    int rc;

    x->state = g->stream_state;
    rc = fn(x);
    g->stream_state = x->state;
    x->state = mine;
    if (rc == -EBADMSG)
        x->err_offset += g->stream_at;
    return rc;
}

/* Feeds the streaming kind the bytes the last member's slot gathered, as
 * if they were a chunk of input; they were counted when gathered. */
static int xm_feed_prefix(struct weir_xform *x, struct xm_state *g)
{
    struct xm_slot *s = xm_slot_at(g, 0);
    struct weir_chunk in = x->in;
    uint32_t in_off = x->in_off;
    uint64_t counted = x->st.in_bytes;
    int rc;

    x->in = (struct weir_chunk){.data = s->in + g->prefix_off,
                                .len = (uint32_t)(s->in_len - g->prefix_off)};
    x->in_off = 0;
    rc = xm_stream_call(x, g, g->sh->codec->stream->step);
    g->prefix_off += x->in_off;
    x->in = in;
    x->in_off = in_off;
    x->st.in_bytes = counted;
    if (rc)
        return rc;
    g->prefix_fed = true;
    atomic_store_explicit(&s->state, XM_FREE, memory_order_relaxed);
    g->head = (g->head + 1) % g->nslots;
    g->n--;
    return 0;
}

/* Streaming from here on: first the members before it, then its
 * prefix. */
static int xm_stream_ready(struct weir_xform *x, struct xm_state *g)
{
    if (g->prefix_fed)
        return 0;
    if (g->n > 1)
        return XF_STALL_AWAY; /* on the helper: drain found them not done */
    return xm_feed_prefix(x, g);
}

/* Takes input into the member being gathered, as much as its cut asks
 * for, and seals it once it is whole. 0 also when the chunk ran out
 * first, or the stream turned to streaming. */
static int xm_take(struct weir_xform *x, struct xm_state *g)
{
    const struct xf_codec *codec = g->sh->codec;
    struct xm_slot *s = weir__xm_filling(g);
    struct xf_cut cut;
    int r, rc;

    if (!s && xm_held(g) > XM_DECODE_HELD)
        xm_give_back(g);
    if (!s && g->n && xm_held(g) > XM_DECODE_HELD)
        return XF_STALL_AWAY;
    if (!s && (rc = weir__xm_claim(g, &s)) != 0)
        return rc;
    r = codec->cut(s->in, s->in_len, &cut);
    while (r == XF_CUT_MORE && xf_in_left(x)) {
        size_t n = cut.in - s->in_len;

        if (n > xf_in_left(x))
            n = xf_in_left(x);
        rc = xm_room(&s->in, &s->in_cap, s->in_len + n);
        if (rc)
            return rc;
        memcpy(s->in + s->in_len, xf_in_ptr(x), n);
        s->in_len += n;
        x->in_off += (uint32_t)n;
        x->st.in_bytes += n;
        g->taken += n;
        r = codec->cut(s->in, s->in_len, &cut);
    }
    if (r == XF_CUT_MORE)
        return 0;
    if (r == XF_CUT_NONE) {
        g->streaming = true;
        g->stream_at = s->at;
        return 0;
    }
    /* Gathered up to what the cut asked for: the member is all of it. */
    rc = xm_room(&s->out, &s->out_cap, cut.out ? cut.out : 1);
    if (rc)
        return rc;
    s->src = s->in;
    return weir__xm_seal(x, g, s);
}

int weir__xm_decode_step(struct weir_xform *x, struct xm_state *g)
{
    int rc;

    while ((rc = weir__xm_drain(x, g)) == 0) {
        if (g->streaming) {
            rc = xm_stream_ready(x, g);
            return rc ? rc : xm_stream_call(x, g, g->sh->codec->stream->step);
        }
        if (!xf_in_left(x))
            break;
        rc = xm_take(x, g);
        if (rc)
            return rc;
    }
    return rc ? rc : weir__xf_out_emit(x);
}

int weir__xm_decode_finish(struct weir_xform *x, struct xm_state *g)
{
    struct xm_slot *s;
    int rc = weir__xm_drain(x, g);

    if (rc)
        return rc;
    if (g->streaming) {
        rc = xm_stream_ready(x, g);
        return rc ? rc : xm_stream_call(x, g, g->sh->codec->stream->finish);
    }
    s = weir__xm_filling(g);
    if (s && s->in_len)
        return xf_corrupt(x, g->taken); /* the stream ended inside it */
    if (s) {
        atomic_store_explicit(&s->state, XM_FREE, memory_order_relaxed);
        g->n--;
    }
    g->final = true;
    return g->n ? XF_STALL_AWAY : weir__xf_out_emit(x);
}

/* What is decoded goes out; a member only partly here waits for the rest,
 * and members on the helper follow once done. */
int weir__xm_decode_sync(struct weir_xform *x, struct xm_state *g)
{
    int rc = weir__xm_drain(x, g);

    if (rc == 0)
        rc = weir__xf_out_emit(x);
    if (rc == 0 && weir__xm_sealed(g)) {
        g->sync_pending = true;
        rc = XF_STALL_AWAY;
    }
    return rc;
}

void weir__xm_decode_fini(struct weir_xform *x, struct xm_state *g)
{
    void *mine = x->state;

    if (!g->stream_state)
        return;
    x->state = g->stream_state;
    g->sh->codec->stream->fini(x);
    x->state = mine;
}
