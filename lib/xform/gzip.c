/*
 * gzip.c - the gzip transform: libdeflate, one gzip member per
 * member_size bytes of input.
 *
 * Chosen by measurement (weir-bench xform-core): on repeated text,
 * libdeflate's whole-buffer compressor ran several times faster than zlib's
 * streaming deflate at the same level, with a ratio as good once members
 * reach a few hundred KiB. A file of members is one valid gzip file
 * (RFC 1952, 2.2), which gzip -d, Python's gzip module and zlib's inflate
 * all read.
 *
 * Input gathers in a staging buffer until a member's worth is there (a
 * chunk is usually far smaller than a member, and a small member would cost
 * ratio), then compresses into a scratch buffer sized for the worst case
 * and is copied out into pool buffers; compressed bytes are few, so the
 * copy is cheap. A chunk that alone makes a whole member while nothing is
 * staged is compressed where it lies.
 */
#include <libdeflate.h>
#include <stdlib.h>
#include <string.h>

#include "xform_impl.h"

struct gz_state {
    struct libdeflate_compressor *c;
    uint8_t *stage, *scratch;
    size_t stage_len, scratch_cap;
    size_t out_len, out_done; /* scratch bytes compressed / copied out */
    uint64_t members;
    bool final; /* the last member is compressed */
};

static int gz_state(struct weir_xform *x, struct gz_state **out)
{
    struct gz_state *g = x->state;

    if (!g) {
        g = calloc(1, sizeof(*g));
        if (!g)
            return -ENOMEM;
        x->state = g;
        g->c = libdeflate_alloc_compressor(x->level);
        if (!g->c)
            return -ENOMEM;
        g->scratch_cap = libdeflate_gzip_compress_bound(g->c, x->member_size);
        g->stage = malloc(x->member_size);
        g->scratch = malloc(g->scratch_cap);
    }
    if (!g->c || !g->stage || !g->scratch)
        return -ENOMEM;
    *out = g;
    return 0;
}

static int gz_compress(struct gz_state *g, const uint8_t *src, size_t n)
{
    g->out_len =
        libdeflate_gzip_compress(g->c, src, n, g->scratch, g->scratch_cap);
    g->out_done = 0;
    g->members++;
    /* The scratch holds the bound for member_size; 0 cannot happen. */
    return g->out_len ? 0 : -EOVERFLOW;
}

/* Copies the compressed member out: 0 when all of it is out. */
static int gz_drain(struct weir_xform *x, struct gz_state *g)
{
    return xf_out_copy(x, g->scratch, g->out_len, &g->out_done);
}

static int gzip_step(struct weir_xform *x)
{
    struct gz_state *g;
    int rc = gz_state(x, &g);

    while (rc == 0 && (rc = gz_drain(x, g)) == 0 && xf_in_left(x)) {
        uint32_t n = xf_in_left(x);

        if (g->stage_len == 0 && n >= x->member_size) {
            n = (uint32_t)x->member_size;
            rc = gz_compress(g, xf_in_ptr(x), n);
        } else {
            if (n > x->member_size - g->stage_len)
                n = (uint32_t)(x->member_size - g->stage_len);
            memcpy(g->stage + g->stage_len, xf_in_ptr(x), n);
            g->stage_len += n;
            if (g->stage_len == x->member_size) {
                rc = gz_compress(g, g->stage, g->stage_len);
                g->stage_len = 0;
            }
        }
        x->in_off += n;
        x->st.in_bytes += n;
    }
    return rc;
}

static int gzip_finish(struct weir_xform *x)
{
    struct gz_state *g;
    int rc = gz_state(x, &g);

    if (rc == 0)
        rc = gz_drain(x, g);
    if (rc == 0 && !g->final) {
        g->final = true;
        /* An empty stream still makes one member: zero bytes are not a
         * gzip file. */
        if (g->stage_len || g->members == 0)
            rc = gz_compress(g, g->stage, g->stage_len);
        g->stage_len = 0;
        if (rc == 0)
            rc = gz_drain(x, g);
    }
    return rc ? rc : xf_out_emit(x);
}

/* Ends the member early: a live source went quiet. */
static int gzip_sync(struct weir_xform *x)
{
    struct gz_state *g = x->state;
    int rc;

    if (!g || g->final)
        return xf_out_emit(x);
    rc = gz_drain(x, g);
    if (rc == 0 && g->stage_len) {
        rc = gz_compress(g, g->stage, g->stage_len);
        g->stage_len = 0;
        if (rc == 0)
            rc = gz_drain(x, g);
    }
    return rc ? rc : xf_out_emit(x);
}

static void gzip_fini(struct weir_xform *x)
{
    struct gz_state *g = x->state;

    if (!g)
        return;
    if (g->c)
        libdeflate_free_compressor(g->c);
    free(g->stage);
    free(g->scratch);
    free(g);
}

const struct xf_kind xf_gzip = {
    .name = "gzip",
    .min_level = 1,
    .max_level = 9,
    .def_level = 6,
    .step = gzip_step,
    .finish = gzip_finish,
    .sync = gzip_sync,
    .fini = gzip_fini,
};
