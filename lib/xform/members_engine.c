/*
 * members_engine.c - the member engine that the compressors (members.c)
 * and the decoders (members_decode.c) both stand on: the slots members
 * wait in, in member order; sealing a whole member, which lends it to the
 * helper loop when that has room and makes it here otherwise; and copying
 * finished members out, oldest first. It knows nothing of either side: a
 * member is input in a slot and the codec's make.
 *
 * The slots outlive the transform when the helper still holds one: the
 * shared part is reference counted, one reference for the transform and
 * one per queued post of the task, and whoever lets go last frees it.
 */
#include <sched.h>
#include <stddef.h>
#include <stdlib.h>

#include "members.h"

static void xm_shared_free(struct xm_shared *sh)
{
    for (unsigned i = 0; i < XM_SLOTS; i++) {
        free(sh->slot[i].in);
        free(sh->slot[i].out);
    }
    if (sh->hc)
        sh->codec->close(sh->hc);
    free(sh);
}

static void xm_shared_put(struct xm_shared *sh)
{
    /* Acq_rel: the release publishes this side's last use of the slots;
     * the acquire, on the last reference, makes the other side's visible
     * before the free. Pairs with the other side's put. */
    if (atomic_fetch_sub_explicit(&sh->refs, 1, memory_order_acq_rel) == 1)
        xm_shared_free(sh);
}

/* The helper's thread: makes every member queued for it. */
static void xm_helper_run(struct weir_task *t)
{
    struct xm_shared *sh =
        (struct xm_shared *)(void *)((char *)t -
                                     offsetof(struct xm_shared, task));

    for (unsigned i = 0; i < XM_SLOTS; i++) {
        struct xm_slot *s = &sh->slot[i];
        uint32_t want = XM_QUEUED;

        /* Acquire: pairs with the release store of XM_QUEUED in weir__xm_send,
         * so the member's input is visible. A slot the transform took
         * back (weir__xm_shared_drop) fails the exchange and is left alone. */
        if (!atomic_compare_exchange_strong_explicit(
                &s->state, &want, XM_RUNNING, memory_order_acquire,
                memory_order_relaxed))
            continue;
        s->rc = sh->codec->make(sh->hc, s->src, s->in_len, s->out, s->out_cap,
                                &s->out_len);
        s->out_done = 0;
        /* Release: publishes out and out_len; pairs with the acquire load
         * in xm_drain. */
        atomic_store_explicit(&s->state, XM_DONE, memory_order_release);
    }
    xm_shared_put(sh);
}

int weir__xm_state(struct weir_xform *x, struct xm_state **out)
{
    const struct xf_codec *codec = x->kind->codec;
    struct xm_state *g = x->state;

    if (!g) {
        g = calloc(1, sizeof(*g));
        if (!g)
            return -ENOMEM;
        x->state = g;
        g->helper = x->helper;
        g->helper_busy = x->helper_busy;
        g->nslots = !g->helper ? 1 : codec->cut ? XM_DECODE_SLOTS : XM_SLOTS;
        g->c = codec->open(x->level);
        g->sh = calloc(1, sizeof(*g->sh));
        if (!g->c || !g->sh)
            return -ENOMEM;
        g->sh->codec = codec;
        atomic_init(&g->sh->refs, 1);
        weir_task_init(&g->sh->task, xm_helper_run);
        if (codec->bound)
            g->sh->out_cap = codec->bound(g->c, x->member_size);
        for (unsigned i = 0; i < XM_SLOTS; i++)
            atomic_init(&g->sh->slot[i].state, XM_FREE);
        if (g->helper) {
            g->sh->hc = codec->open(x->level);
            if (!g->sh->hc)
                return -ENOMEM;
        }
    }
    if (!g->c || !g->sh || (g->helper && !g->sh->hc))
        return -ENOMEM;
    *out = g;
    return 0;
}

/* Only the stream's thread moves a slot out of XM_FREE or XM_FILLING, so
 * it reads those states relaxed. */
static uint32_t xm_peek(const struct xm_slot *s)
{
    return atomic_load_explicit(&s->state, memory_order_relaxed);
}

/* The slot gathering input, or NULL. */
struct xm_slot *weir__xm_filling(struct xm_state *g)
{
    struct xm_slot *s = g->n ? xm_slot_at(g, g->n - 1) : NULL;

    return s && xm_peek(s) == XM_FILLING ? s : NULL;
}

/* Sealed members not yet out: on the helper, or waiting behind one. */
unsigned weir__xm_sealed(struct xm_state *g)
{
    return g->n - (weir__xm_filling(g) ? 1 : 0);
}

/* Whether the helper can take another member. */
bool weir__xm_helper_free(struct xm_state *g)
{
    unsigned load = 0;

    if (!g->helper)
        return false;
    /* Relaxed: a hint from the helper's owner; a stale value lends one
     * member more or less. */
    if (g->helper_busy &&
        atomic_load_explicit(g->helper_busy, memory_order_relaxed) > 0)
        return false;
    for (unsigned k = 0; k < g->n; k++) {
        uint32_t st = xm_peek(xm_slot_at(g, k));

        load += st == XM_QUEUED || st == XM_RUNNING;
    }
    return load < XM_HELPER_DEPTH;
}

/* The slot to gather input into: the filling one, or a new one at the
 * tail. XF_STALL_AWAY when every slot holds a sealed member. A
 * compressor's slot has its output room already; a decoder's gets it
 * once the member's size is known. */
int weir__xm_claim(struct xm_state *g, struct xm_slot **out)
{
    struct xm_slot *s = weir__xm_filling(g);

    if (!s) {
        if (g->n == g->nslots)
            return XF_STALL_AWAY;
        s = xm_slot_at(g, g->n);
        if (!s->out && g->sh->out_cap) {
            s->out = malloc(g->sh->out_cap);
            if (!s->out)
                return -ENOMEM;
            s->out_cap = g->sh->out_cap;
        }
        s->src = NULL;
        s->in_len = 0;
        s->at = g->taken;
        atomic_store_explicit(&s->state, XM_FILLING, memory_order_relaxed);
        g->n++;
    }
    *out = s;
    return 0;
}

/* Makes the member of n bytes at src into the slot, on this thread. A
 * failure is reported when the member's turn to go out comes (xm_drain),
 * after the members before it, as the helper's are. */
int weir__xm_make_here(struct xm_state *g, struct xm_slot *s,
                       const uint8_t *src, size_t n)
{
    s->src = src;
    s->in_len = n;
    s->rc = g->sh->codec->make(g->c, src, n, s->out, s->out_cap, &s->out_len);
    s->out_done = 0;
    g->members++;
    /* Relaxed: this thread reads it back (xm_drain's acquire pairs only
     * with the helper's store). */
    atomic_store_explicit(&s->state, XM_DONE, memory_order_relaxed);
    return 0;
}

void weir__xm_send(struct weir_xform *x, struct xm_state *g, struct xm_slot *s)
{
    g->members++;
    x->st.helped++;
    /* Release: publishes the slot's input to the helper; pairs with the
     * acquire exchange in xm_helper_run. */
    atomic_store_explicit(&s->state, XM_QUEUED, memory_order_release);
    /* Relaxed: the reference only has to exist before the helper's put,
     * and the post below orders it before the task runs. */
    atomic_fetch_add_explicit(&g->sh->refs, 1, memory_order_relaxed);
    if (!weir_loop_post(g->helper, &g->sh->task)) {
        /* Already queued: that one run covers this member, and puts one
         * reference. Ours still holds the struct alive meanwhile. */
        atomic_fetch_sub_explicit(&g->sh->refs, 1, memory_order_relaxed);
        return;
    }
    /* The doorbell would otherwise wait for the end of this thread's
     * turn, after the member this thread compresses next: the helper
     * would start late and do a third of the work instead of half
     * (bench/results/heavy.md). */
    struct weir_loop *home = weir_loop_current();
    if (home)
        weir_loop_flush(home);
}

/* A full slot: to the helper when it has room, else made here. */
int weir__xm_seal(struct weir_xform *x, struct xm_state *g, struct xm_slot *s)
{
    if (weir__xm_helper_free(g)) {
        weir__xm_send(x, g, s);
        return 0;
    }
    return weir__xm_make_here(g, s, s->src, s->in_len);
}

/* Lets go of a member's input chunk, if it held one. */
static void xm_release(struct weir_xform *x, struct xm_slot *s)
{
    if (s->held.buf)
        weir_chunk_unref(&s->held, x->slot);
    s->held = (struct weir_chunk){0};
}

/* A member that could not be made: a decoder's corrupt one is reported
 * at its first byte. */
static int xm_failed(struct weir_xform *x, struct xm_slot *s)
{
    if (s->rc == -EBADMSG)
        return xf_corrupt(x, s->at);
    return s->rc;
}

/* Copies finished members out, in order, until the oldest is not
 * finished. 0, or a stall code or -errno from the output. */
int weir__xm_drain(struct weir_xform *x, struct xm_state *g)
{
    while (g->n) {
        struct xm_slot *s = xm_slot_at(g, 0);
        int rc;

        /* Acquire: pairs with the release store of XM_DONE in
         * xm_helper_run, so out and out_len are visible. */
        if (atomic_load_explicit(&s->state, memory_order_acquire) != XM_DONE)
            return 0;
        xm_release(x, s);
        if (s->rc)
            return xm_failed(x, s);
        rc = weir__xf_out_copy(x, s->out, s->out_len, &s->out_done);
        if (rc)
            return rc;
        atomic_store_explicit(&s->state, XM_FREE, memory_order_relaxed);
        g->head = (g->head + 1) % g->nslots;
        g->n--;
    }
    return 0;
}

/*
 * Lets go of the shared part when the transform ends. Takes back members
 * the helper has not started, so it never touches them. One it is
 * compressing may read a chunk held here, which goes back to the pool
 * now: wait for it. That is one member's compression at most
 * (milliseconds at level 9), and the helper never waits for this thread,
 * so the wait ends. A task still queued keeps the shared part alive
 * through its reference.
 */
void weir__xm_shared_drop(struct weir_xform *x, struct xm_state *g)
{
    for (unsigned i = 0; i < XM_SLOTS; i++) {
        struct xm_slot *s = &g->sh->slot[i];
        uint32_t want = XM_QUEUED;

        /* Relaxed: nothing is published by taking a slot back. */
        atomic_compare_exchange_strong_explicit(&s->state, &want, XM_FREE,
                                                memory_order_relaxed,
                                                memory_order_relaxed);
        /* Acquire: pairs with the helper's release of XM_DONE; its
         * reads of the chunk are over after this. */
        while (atomic_load_explicit(&s->state, memory_order_acquire) ==
               XM_RUNNING)
            sched_yield();
        xm_release(x, s);
    }
    xm_shared_put(g->sh);
}
