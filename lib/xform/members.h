/*
 * members.h - the member engine's insides (members_engine.c), shared by
 * the compressing side (members.c) and the decoding side
 * (members_decode.c): the slots members wait in, in order, and what the
 * stream's thread and the helper share.
 */
#ifndef WEIR_XFORM_MEMBERS_H
#define WEIR_XFORM_MEMBERS_H

#include <stdatomic.h>

#include "weir/loop.h"
#include "xform_impl.h"

/* Members between input and output at once with a helper: one being
 * filled, up to XM_HELPER_DEPTH on the helper, and those made here that
 * wait behind them for their turn. */
#define XM_SLOTS 6

/* A decoder's slots: one gathering, two on the helper, one made here
 * waiting behind them. Its members are cut where they end rather than
 * filled to a size, so their room varies; members_decode.c bounds it. */
#define XM_DECODE_SLOTS 4

/* Members queued or running on the helper at once. Two keep it busy
 * while this thread also reads and converts the input. */
#define XM_HELPER_DEPTH 2

enum xm_slot_state {
    XM_FREE,    /* unused (the stream's thread) */
    XM_FILLING, /* gathering input (the stream's thread) */
    XM_QUEUED,  /* handed to the helper, not started */
    XM_RUNNING, /* the helper makes it */
    XM_DONE,    /* made; the stream's thread copies it out */
};

struct xm_slot {
    _Atomic uint32_t state;
    int rc;             /* make's result */
    const uint8_t *src; /* the member's input: in, or held's bytes */
    uint8_t *in, *out;
    size_t in_cap, out_cap; /* what in and out hold room for */
    size_t in_len, out_len, out_done;
    uint64_t at; /* decoders: the member's first byte in the stream */
    /* A pool chunk holding a whole member, read where it lies instead of
     * copied into `in` (buf NULL when none). */
    struct weir_chunk held;
};

/* What the stream's thread and the helper share. */
struct xm_shared {
    _Atomic uint32_t refs;
    struct weir_task task; /* posted to the helper */
    const struct xf_codec *codec;
    void *hc;       /* the helper's codec state */
    size_t out_cap; /* compressors: every member's output room */
    struct xm_slot slot[XM_SLOTS];
};

struct xm_state {
    struct xm_shared *sh;
    void *c;                  /* the stream's thread's codec state */
    struct weir_loop *helper; /* NULL: every member is made here */
    const _Atomic uint32_t *helper_busy;
    unsigned nslots;  /* XM_SLOTS (decoders XM_DECODE_SLOTS), or 1 */
    unsigned head, n; /* slots in member order: head .. head + n - 1 */
    uint64_t members;
    bool final; /* the last member is sealed */
    /* A sync found members on the helper: once they are out, the open
     * buffer goes too. */
    bool sync_pending;

    /* Decoders (members_decode.c). */
    uint64_t taken; /* input bytes taken into members so far */
    /* A member cut could not measure: the codec's streaming kind has the
     * stream from it on, its state here, fed first the bytes the slot
     * gathered (prefix_off of them so far). */
    bool streaming, prefix_fed;
    void *stream_state;
    size_t prefix_off;
    uint64_t stream_at; /* where the streaming kind began */
};

/* The k-th slot in member order. */
static inline struct xm_slot *xm_slot_at(struct xm_state *g, unsigned k)
{
    return &g->sh->slot[(g->head + k) % g->nslots];
}

/* The engine (members_engine.c). */
int weir__xm_state(struct weir_xform *x, struct xm_state **out);
struct xm_slot *weir__xm_filling(struct xm_state *g);
unsigned weir__xm_sealed(struct xm_state *g);
bool weir__xm_helper_free(struct xm_state *g);
int weir__xm_claim(struct xm_state *g, struct xm_slot **out);
int weir__xm_make_here(struct xm_state *g, struct xm_slot *s,
                       const uint8_t *src, size_t n);
void weir__xm_send(struct weir_xform *x, struct xm_state *g, struct xm_slot *s);
/* Makes the member in the slot: on the helper when it has room, else
 * here (then 0 or make's error). */
int weir__xm_seal(struct weir_xform *x, struct xm_state *g, struct xm_slot *s);
int weir__xm_drain(struct weir_xform *x, struct xm_state *g);
void weir__xm_shared_drop(struct weir_xform *x, struct xm_state *g);

/* The decoding side's step, finish and sync (members_decode.c). */
int weir__xm_decode_step(struct weir_xform *x, struct xm_state *g);
int weir__xm_decode_finish(struct weir_xform *x, struct xm_state *g);
int weir__xm_decode_sync(struct weir_xform *x, struct xm_state *g);
void weir__xm_decode_fini(struct weir_xform *x, struct xm_state *g);

#endif /* WEIR_XFORM_MEMBERS_H */
