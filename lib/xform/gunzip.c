/*
 * gunzip.c - the gunzip transform: members decoded whole by libdeflate
 * where their header says their size, zlib's streaming inflate where it
 * does not.
 *
 * A member whose header carries its size (weir's own 'W','R' subfield,
 * BGZF's 'B','C') is gathered whole by the member engine
 * (members_decode.c) and handed to libdeflate, here or, with a helper, on
 * either thread: whole-buffer decoding ran at twice inflate's speed on
 * weir's members (bench/results/heavy.md). The first member without a
 * size (gzip(1)'s, pigz's) turns the rest of the stream over to inflate.
 *
 * inflate in gzip mode (windowBits 16 + MAX_WBITS) stops at the end of a
 * member; a reset makes it read the next one from the following byte, so a
 * concatenation of members (gzip's own multi-member files) comes out as
 * one stream. What follows a member must be another member: gzip(1) skips
 * trailing zeros with a warning, weir refuses them, since a stream with
 * garbage in it is more likely damaged than padded.
 */
#include <libdeflate.h>
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

/* ---- whole members, from the member engine ---- */

static int gunz_more(struct xf_cut *cut, size_t want)
{
    cut->in = want;
    return XF_CUT_MORE;
}

/*
 * The member at p from its header (RFC 1952, 2.3): ID1 ID2 CM FLG, MTIME,
 * XFL, OS, then with FLG.FEXTRA an XLEN and XLEN bytes of subfields, each
 * SI1 SI2 LEN and LEN bytes. 'W','R' holds the member's total size (4
 * bytes), BGZF's 'B','C' the total less one (2 bytes). Its output size
 * is the trailer's ISIZE.
 */
static int gunz_cut(const uint8_t *p, size_t n, struct xf_cut *cut)
{
    static const uint8_t id[3] = {0x1f, 0x8b, 8};
    size_t xend, total = 0;

    for (size_t i = 0; i < n && i < sizeof(id); i++)
        if (p[i] != id[i])
            return XF_CUT_NONE;
    if (n < 4)
        return gunz_more(cut, 4);
    if (!(p[3] & 0x04))
        return XF_CUT_NONE;
    if (n < 12)
        return gunz_more(cut, 12);
    xend = 12 + (size_t)xf_le(p + 10, 2);
    if (n < xend)
        return gunz_more(cut, xend);
    for (size_t at = 12; at + 4 <= xend;) {
        size_t len = (size_t)xf_le(p + at + 2, 2);

        if (at + 4 + len > xend)
            break;
        if (p[at] == 'W' && p[at + 1] == 'R' && len == 4)
            total = (size_t)xf_le(p + at + 4, 4);
        else if (p[at] == 'B' && p[at + 1] == 'C' && len == 2)
            total = (size_t)xf_le(p + at + 4, 2) + 1;
        at += 4 + len;
    }
    /* No size, or one no member can have (the header, an empty block and
     * the trailer are the least): inflate judges it. */
    if (total < xend + 2 + 8 || total > XM_DECODE_MAX)
        return XF_CUT_NONE;
    if (n < total)
        return gunz_more(cut, total);
    cut->in = total;
    cut->out = (size_t)xf_le(p + total - 4, 4);
    return cut->out > XM_DECODE_MAX ? XF_CUT_NONE : XF_CUT_WHOLE;
}

static void *gunz_open(int level)
{
    (void)level;
    return libdeflate_alloc_decompressor();
}

static void gunz_close(void *d)
{
    libdeflate_free_decompressor(d);
}

/* One whole member; libdeflate checks its CRC and ISIZE. A member that
 * does not end where its size said is corrupt too. */
static int gunz_member(void *d, const uint8_t *src, size_t n, uint8_t *out,
                       size_t cap, size_t *len)
{
    size_t used = 0;

    if (libdeflate_gzip_decompress_ex(d, src, n, out, cap, &used, len) !=
            LIBDEFLATE_SUCCESS ||
        used != n)
        return -EBADMSG;
    return 0;
}

/* inflate, for the stream from the first member without a size on. */
static const struct xf_kind xf_gunzip_stream = {
    .name = "gunzip",
    .step = gunzip_step,
    .finish = gunzip_finish,
    .fini = gunzip_fini,
};

static const struct xf_codec gunz_codec = {
    .open = gunz_open,
    .close = gunz_close,
    .make = gunz_member,
    .cut = gunz_cut,
    .stream = &xf_gunzip_stream,
};

const struct xf_kind weir__xf_gunzip = {
    .name = "gunzip",
    .codec = &gunz_codec,
    XM_KIND_OPS,
};
