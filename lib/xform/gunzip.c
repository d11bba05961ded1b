/*
 * gunzip.c - the gunzip transform: zlib's streaming inflate, member after
 * member.
 *
 * inflate in gzip mode (windowBits 16 + MAX_WBITS) stops at the end of a
 * member; a reset makes it read the next one from the following byte, so a
 * concatenation of members (gzip's own multi-member files, weir's gzip
 * output) comes out as one stream. What follows a member must be another
 * member: gzip(1) skips trailing zeros with a warning, weir refuses them,
 * since a stream with garbage in it is more likely damaged than padded.
 */
#include <stdlib.h>
#include <zlib.h>

#include "xform_impl.h"

struct gunz_state {
    z_stream z;
    uint64_t consumed; /* input bytes inflate has taken */
    bool member_open;  /* inside a member: its end has not been seen */
};

static int gunz_state(struct weir_xform *x, struct gunz_state **out)
{
    struct gunz_state *g = x->state;

    if (!g) {
        g = calloc(1, sizeof(*g));
        if (!g)
            return -ENOMEM;
        if (inflateInit2(&g->z, 16 + MAX_WBITS) != Z_OK) {
            free(g);
            return -ENOMEM;
        }
        x->state = g;
    }
    *out = g;
    return 0;
}

/* One inflate call into the open output buffer. 0, a stall code, or
 * -errno; *full tells whether it filled the space it was given (then
 * inflate may hold more output even with no input left); *stuck that
 * it could make no progress at all. */
static int gunz_once(struct weir_xform *x, struct gunz_state *g, bool *full,
                     bool *stuck)
{
    uint8_t *p;
    uint32_t avail, in_before = xf_in_left(x);
    int rc = weir__xf_out_space(x, &p, &avail);
    int zr;

    if (rc)
        return rc;
    g->z.next_in = (Bytef *)xf_in_ptr(x);
    g->z.avail_in = in_before;
    g->z.next_out = p;
    g->z.avail_out = avail;
    zr = inflate(&g->z, Z_NO_FLUSH);
    x->in_off += in_before - g->z.avail_in;
    x->st.in_bytes += in_before - g->z.avail_in;
    g->consumed += in_before - g->z.avail_in;
    if (in_before != g->z.avail_in)
        g->member_open = true;
    *full = g->z.avail_out == 0;
    if (zr == Z_BUF_ERROR && in_before == g->z.avail_in &&
        avail == g->z.avail_out) {
        *full = false;
        *stuck = true;
    }
    rc = weir__xf_out_commit(x, avail - g->z.avail_out);
    switch (zr) {
    case Z_STREAM_END:
        g->member_open = false;
        inflateReset(&g->z);
        return rc;
    case Z_OK:
    case Z_BUF_ERROR: /* no progress possible now: wants input or space */
        return rc;
    case Z_MEM_ERROR:
        return -ENOMEM;
    default: /* Z_DATA_ERROR, Z_NEED_DICT, Z_STREAM_ERROR */
        return xf_corrupt(x, g->consumed);
    }
}

static int gunzip_step(struct weir_xform *x)
{
    struct gunz_state *g;
    bool full = true, stuck = false;
    int rc = gunz_state(x, &g);

    while (rc == 0 && !stuck && (xf_in_left(x) || full))
        rc = gunz_once(x, g, &full, &stuck);
    return rc ? rc : weir__xf_out_emit(x);
}

static int gunzip_finish(struct weir_xform *x)
{
    struct gunz_state *g = x->state;

    /* The stream ended inside a member: truncated input. */
    if (g && g->member_open)
        return xf_corrupt(x, g->consumed);
    return weir__xf_out_emit(x);
}

static void gunzip_fini(struct weir_xform *x)
{
    struct gunz_state *g = x->state;

    if (!g)
        return;
    inflateEnd(&g->z);
    free(g);
}

const struct xf_kind weir__xf_gunzip = {
    .name = "gunzip",
    .step = gunzip_step,
    .finish = gunzip_finish,
    .fini = gunzip_fini,
};
