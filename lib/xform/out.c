/*
 * out.c - placing a transform's output into pool buffers.
 *
 * One buffer is open at a time; it is queued on the readable side when
 * full (or when the kind says so). The two reasons to stop are checked
 * only when a new buffer is needed, so a kind never stops with a buffer
 * half written by itself.
 */
#include <string.h>

#include "xform_impl.h"

/* Whether this run has queued its share while nobody takes the output. */
static bool xf_no_room(const struct weir_xform *x)
{
    struct weir_readable *rs = weir_transform_readable(x->tf);

    return x->emitted >= x->burst && weir_readable_queued(rs) >= x->room;
}

int weir__xf_out_space(struct weir_xform *x, uint8_t **p, uint32_t *avail)
{
    if (!x->ob) {
        if (xf_no_room(x))
            return XF_STALL_ROOM;
        if (weir_pool_get(x->pool, &x->ob) != 0)
            return XF_STALL_POOL;
        x->ob_len = 0;
    }
    *p = x->ob->data + x->ob_len;
    *avail = x->ob_cap - x->ob_len;
    return 0;
}

int weir__xf_out_emit(struct weir_xform *x)
{
    struct weir_chunk c;

    if (!x->ob || x->ob_len == 0)
        return 0;
    c = weir_chunk_of(x->ob, x->ob_len);
    x->ob = NULL;
    x->emitted++;
    x->st.out_bytes += c.len;
    return weir_transform_enqueue(x->tf, c);
}

int weir__xf_out_commit(struct weir_xform *x, uint32_t n)
{
    x->ob_len += n;
    if (x->ob_len < x->ob_cap)
        return 0;
    return weir__xf_out_emit(x);
}

int weir__xf_out_copy(struct weir_xform *x, const uint8_t *src, size_t len,
                      size_t *done)
{
    while (*done < len) {
        uint8_t *p;
        uint32_t avail;
        int rc = weir__xf_out_space(x, &p, &avail);

        if (rc)
            return rc;
        if (avail > len - *done)
            avail = (uint32_t)(len - *done);
        memcpy(p, src + *done, avail);
        *done += avail;
        rc = weir__xf_out_commit(x, avail);
        if (rc)
            return rc;
    }
    return 0;
}

int weir__xf_out_pass(struct weir_xform *x, struct weir_chunk c)
{
    x->emitted++;
    x->st.out_bytes += c.len;
    return weir_transform_enqueue(x->tf, c);
}
