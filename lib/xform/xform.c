/*
 * xform.c - the driver every kind shares: the transformer callbacks of the
 * core transform, parking when output cannot be placed, and resuming.
 *
 * Parking is the core's own promise: the transform callback answers
 * WEIR_PENDING, the core keeps the write in flight (so nothing more is
 * written to us and the writer upstream sees backpressure), and
 * weir_transform_done settles it when the work is finished. The
 * alternatives were worse: failing on an empty pool turns a normal
 * condition into a stream error, and allocating outside the pool breaks
 * the memory bound the pool exists for.
 */
#include <stdlib.h>
#include <string.h>

#include "xform_spec.h"

/* Drops the input chunk, if the kind did not pass it on. */
static void xf_drop_input(struct weir_xform *x)
{
    if (x->has_in) {
        x->has_in = false;
        weir_chunk_unref(&x->in, x->slot);
    }
}

static bool xf_is_stall(int rc)
{
    return rc == XF_STALL_POOL || rc == XF_STALL_ROOM || rc == XF_STALL_AWAY;
}

/* After a call that finished: output still being made on the helper's
 * thread stays for weir_xform_resume, and the owner is told as for a
 * park. */
static void xf_check_away(struct weir_xform *x)
{
    if (!x->kind->away || x->cancelled || !x->kind->away(x))
        return;
    x->stall = XF_STALL_AWAY;
    if (x->on_stall)
        x->on_stall(x->stall_ctx, x);
}

/* Runs the outstanding operation: WEIR_PENDING when it parked, else its
 * result, with the operation over. */
static int xf_run(struct weir_xform *x)
{
    int rc;

    x->emitted = 0;
    x->stall = 0;
    x->running = true;
    rc = x->op == XF_OP_FLUSH ? x->kind->finish(x) : x->kind->step(x);
    x->running = false;
    if (xf_is_stall(rc) && !x->cancelled) {
        x->stall = rc;
        x->st.stalls++;
        if (x->on_stall)
            x->on_stall(x->stall_ctx, x);
        return WEIR_PENDING;
    }
    if (xf_is_stall(rc))
        rc = -ECANCELED;
    x->stall = 0;
    x->op = XF_OP_NONE;
    xf_drop_input(x);
    if (rc < 0 && !x->err)
        x->err = rc;
    if (rc == 0)
        xf_check_away(x);
    return rc;
}

static int xf_transform(struct weir_transform *tf, void *ctx,
                        struct weir_chunk chunk)
{
    struct weir_xform *x = ctx;

    (void)tf;
    x->in = chunk;
    x->in_off = 0;
    x->has_in = true;
    x->op = XF_OP_CHUNK;
    return xf_run(x);
}

static int xf_flush(struct weir_transform *tf, void *ctx)
{
    struct weir_xform *x = ctx;

    (void)tf;
    x->op = XF_OP_FLUSH;
    return xf_run(x);
}

static int xf_cancel(struct weir_transform *tf, void *ctx, int reason)
{
    struct weir_xform *x = ctx;

    x->cancelled = true;
    if (x->op == XF_OP_NONE && !x->running)
        x->stall = 0; /* output left over has no reader now */
    if (x->running || x->op == XF_OP_NONE)
        return 0;
    /* Parked: nobody will resume work whose output has no reader.
     * Settle the core's write now, with the reason. */
    x->stall = 0;
    x->op = XF_OP_NONE;
    xf_drop_input(x);
    weir_transform_done(tf, reason);
    return 0;
}

static const struct weir_transformer_ops xf_ops = {
    .transform = xf_transform,
    .flush = xf_flush,
    .cancel = xf_cancel,
};

int weir_xform_create(struct weir_xform **out, const char *spec,
                      const struct weir_xform_options *opts)
{
    const struct xf_kind *kind;
    struct weir_transform_options to;
    struct weir_xform *x;
    int level, rc;

    if (!opts || !opts->pool)
        return -EINVAL;
    rc = weir__xf_spec_parse(spec, &kind, &level, NULL, 0);
    if (rc)
        return rc;
    if (opts->member_size &&
        (opts->member_size < 4096 || opts->member_size > (64u << 20)))
        return -EINVAL;
    x = calloc(1, sizeof(*x));
    if (!x)
        return -ENOMEM;
    if (opts->helper && kind->with_helper)
        kind = kind->with_helper;
    x->kind = kind;
    x->level = level;
    x->pool = opts->pool;
    x->helper = opts->helper;
    x->helper_busy = opts->helper_busy;
    x->slot = opts->slot;
    x->member_size = opts->member_size      ? opts->member_size
                     : kind->member_default ? kind->member_default
                                            : WEIR_XFORM_MEMBER_DEFAULT;
    x->burst = opts->burst ? opts->burst : WEIR_XFORM_BURST_DEFAULT;
    x->room = opts->readable.hwm ? opts->readable.hwm : 1;
    x->on_stall = opts->on_stall;
    x->stall_ctx = opts->stall_ctx;
    x->ob_cap = (uint32_t)weir_pool_buf_size(opts->pool);
    to = (struct weir_transform_options){
        .writable = opts->writable,
        .readable = opts->readable,
        .slot = opts->slot,
    };
    if (to.writable.hwm == 0)
        to.writable.hwm = 1;
    rc = weir_transform_create(&x->tf, &xf_ops, x, &to);
    if (rc) {
        free(x);
        return rc;
    }
    *out = x;
    return 0;
}

void weir_xform_destroy(struct weir_xform *x)
{
    if (!x)
        return;
    weir_transform_destroy(x->tf);
    xf_drop_input(x);
    if (x->ob)
        weir_buf_unref(x->ob, x->slot);
    if (x->kind->fini)
        x->kind->fini(x);
    free(x);
}

struct weir_transform *weir_xform_transform(struct weir_xform *x)
{
    return x->tf;
}

const char *weir_xform_name(const struct weir_xform *x)
{
    return x->kind->name;
}

int weir_xform_level(const struct weir_xform *x)
{
    return x->kind->max_level ? x->level : 0;
}

bool weir_xform_stalled(const struct weir_xform *x)
{
    return x->stall != 0;
}

/* Hands on output left over after a call finished (x->op is none, so
 * there is no core call to settle): a stall parks again quietly, an error
 * errors both sides. */
static int xf_poll(struct weir_xform *x)
{
    int rc;

    x->emitted = 0;
    x->running = true;
    rc = x->kind->poll(x);
    x->running = false;
    if (xf_is_stall(rc)) {
        x->stall = rc;
        return WEIR_PENDING;
    }
    x->stall = 0;
    if (rc < 0) {
        if (!x->err)
            x->err = rc;
        weir_transform_error(x->tf, rc);
    }
    return rc < 0 ? rc : 0;
}

int weir_xform_resume(struct weir_xform *x)
{
    int rc;

    if (!x->stall || x->running)
        return 0;
    /* Still no room and nobody has read: park again without running the
     * kind (an empty pool is checked by the kind itself, which reclaims
     * returned buffers as it asks). */
    if (x->stall == XF_STALL_ROOM &&
        weir_readable_queued(weir_transform_readable(x->tf)) >= x->room)
        return WEIR_PENDING;
    if (x->op == XF_OP_NONE)
        return xf_poll(x);
    rc = xf_run(x);
    if (rc == WEIR_PENDING)
        return rc;
    weir_transform_done(x->tf, rc);
    return rc < 0 ? rc : 0;
}

int weir_xform_sync(struct weir_xform *x)
{
    int rc;

    if (x->op != XF_OP_NONE || x->running)
        return -EBUSY;
    if (x->err)
        return x->err;
    x->emitted = 0;
    x->stall = 0;
    x->running = true;
    rc = x->kind->sync ? x->kind->sync(x) : weir__xf_out_emit(x);
    x->running = false;
    /* What is still on the helper, or could not be placed, goes out
     * through weir_xform_resume, as after a step. Work on the helper does
     * not make the sync fail: what went out ends at a boundary, and the
     * rest follows whole. */
    if (xf_is_stall(rc) && x->kind->poll) {
        x->stall = rc;
        if (x->on_stall)
            x->on_stall(x->stall_ctx, x);
        return rc == XF_STALL_AWAY ? 0 : -EAGAIN;
    }
    return rc;
}

int weir_xform_error(const struct weir_xform *x, uint64_t *offset)
{
    if (offset)
        *offset = x->err == -EBADMSG || x->err == -EMSGSIZE ? x->err_offset : 0;
    return x->err;
}

void weir_xform_stats(const struct weir_xform *x, struct weir_xform_stats *st)
{
    *st = x->st;
}
