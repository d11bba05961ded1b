/*
 * zstd.c - the zstd and unzstd transforms: libzstd's streaming API
 * straight into pool buffers, or, for zstd with a helper loop, whole
 * frames from the member engine (members.c) on two threads.
 *
 * On its own thread zstd writes one frame per 4 MiB of input
 * (ZS_FRAME_MAX): ZSTD_e_continue while chunks come (libzstd gathers a
 * block before it emits anything), ZSTD_e_end at the end, which also
 * makes an empty stream a valid (empty) frame. A sync
 * (a quiet live source, or a client joining a broadcast) ends the frame
 * there and then, and the next input opens a new one: a file of frames is
 * valid zstd, and the output after a sync decodes on its own, which is
 * what a client that joins midway needs (ending only the block would
 * leave it without a frame header). The price is a frame header and a
 * fresh window per sync, a few bytes and some ratio.
 *
 * With a helper (another worker's loop), frames are independent members:
 * member_size bytes of input each (ZS_MEMBER_DEFAULT, 1 MiB, unless the
 * options say), compressed whole with ZSTD_compress2, alternately on the
 * helper and here, and handed on in order, as gzip's members are. Frames
 * of 1 MiB cost little ratio at the default levels (bench/results), and
 * keep the engine's six slots of input and output near 12 MiB.
 *
 * unzstd
 * reads frame after frame; ZSTD_decompressStream answers 0 exactly at a
 * frame's end, so any other answer when the stream ends means truncated
 * input. unzstd takes frames whose window is at most 8 MiB (what zstd
 * writes at levels 1-19 without --long): a larger one is refused with
 * -EMSGSIZE rather than allocated, and the size it asked for is kept
 * for the error's message.
 *
 * unzstd with a helper decodes frames whole (members_decode.c): the frame
 * header and its blocks' headers tell where a frame ends and how much it
 * makes, without decoding, so any zstd stream of frames up to
 * XM_DECODE_MAX (about 2 MiB) is cut into frames for both threads; a
 * larger frame (weir's own 4 MiB streaming frames, the one zstd(1) writes
 * for a big file) turns the rest over to the streaming decoder.
 */
#include <stdlib.h>
#include <zstd.h>
#include <zstd_errors.h>

#include "xform_impl.h"

#define XF_ZSTD_WINDOW_LOG 23
_Static_assert(WEIR_UNZSTD_WINDOW_MAX == 1ull << XF_ZSTD_WINDOW_LOG,
               "the documented bound is the decoder's");

/* A frame ends after this much input too, so that a sink resuming at a
 * frame boundary after a reconnect never has to keep more than about one
 * frame's output (weir_socket_sink_options.resume); ratio costs little
 * at 4 MiB, the window of the default levels being 1-2 MiB. */
#define ZS_FRAME_MAX (4u * 1024u * 1024u)

/* Input per frame made by the member engine (a helper is there). */
#define ZS_MEMBER_DEFAULT (1u * 1024u * 1024u)

struct zs_state {
    ZSTD_CCtx *c;
    ZSTD_DCtx *d;
    uint64_t consumed; /* unzstd: input bytes taken */
    size_t frame_in;   /* zstd: input in the open frame */
    bool frame_open;   /* unzstd: inside a frame; zstd: input since the
                          frame began */
    bool ended;        /* zstd: ZSTD_e_end has finished */
    bool ending;       /* zstd: a frame's ZSTD_e_end has not finished yet */
};

/* The level, and a checksum of each frame's content, as zstd(1) writes:
 * without it a damaged frame can decode to wrong bytes without an
 * error. */
static int zs_params(ZSTD_CCtx *c, int level)
{
    if (ZSTD_isError(
            ZSTD_CCtx_setParameter(c, ZSTD_c_compressionLevel, level)) ||
        ZSTD_isError(ZSTD_CCtx_setParameter(c, ZSTD_c_checksumFlag, 1)))
        return -EINVAL;
    return 0;
}

static int zs_state(struct weir_xform *x, bool compress, struct zs_state **out)
{
    struct zs_state *z = x->state;

    if (!z) {
        z = calloc(1, sizeof(*z));
        if (!z)
            return -ENOMEM;
        x->state = z;
        if (compress) {
            z->c = ZSTD_createCCtx();
            if (z->c && zs_params(z->c, x->level))
                return -EINVAL;
        } else {
            /* A frame's window is the decoder's memory; bound it to what
             * zstd levels 1-19 write (8 MiB), not libzstd's 128 MiB. */
            z->d = ZSTD_createDCtx();
            if (z->d && ZSTD_isError(ZSTD_DCtx_setParameter(
                            z->d, ZSTD_d_windowLogMax, XF_ZSTD_WINDOW_LOG)))
                return -EINVAL;
        }
    }
    if (compress ? !z->c : !z->d)
        return -ENOMEM;
    *out = z;
    return 0;
}

/* One compress call with `mode`. 0, a stall code or -errno; *left is what
 * libzstd still has to flush (ZSTD_e_end: 0 once the frame is out). */
static int zs_compress_once(struct weir_xform *x, struct zs_state *z,
                            ZSTD_EndDirective mode, size_t *left)
{
    ZSTD_inBuffer in = {xf_in_ptr(x), xf_in_left(x), 0};
    ZSTD_outBuffer out;
    uint8_t *p;
    uint32_t avail;
    int rc = weir__xf_out_space(x, &p, &avail);
    size_t r;

    if (rc)
        return rc;
    if (mode != ZSTD_e_continue)
        in.size = 0;
    else if (in.size > ZS_FRAME_MAX - z->frame_in)
        in.size = ZS_FRAME_MAX - z->frame_in;
    out = (ZSTD_outBuffer){p, avail, 0};
    r = ZSTD_compressStream2(z->c, &out, &in, mode);
    if (ZSTD_isError(r))
        return -EIO;
    *left = r;
    if (in.pos)
        z->frame_open = true;
    z->frame_in += in.pos;
    x->in_off += (uint32_t)in.pos;
    x->st.in_bytes += in.pos;
    return weir__xf_out_commit(x, (uint32_t)out.pos);
}

/* Finishes the frame being ended (by a sync or the stream's end): libzstd wants
 * ZSTD_e_end repeated until it answers 0 before any other directive; the next
 * ZSTD_e_continue then begins a new frame. */
static int zs_end_frame(struct weir_xform *x, struct zs_state *z)
{
    size_t left = 1;
    int rc = 0;

    while (rc == 0 && z->ending) {
        rc = zs_compress_once(x, z, ZSTD_e_end, &left);
        if (rc == 0 && left == 0) {
            z->ending = false;
            z->frame_open = false;
            z->frame_in = 0;
        }
    }
    return rc;
}

static int zstd_step(struct weir_xform *x)
{
    struct zs_state *z;
    size_t left;
    int rc = zs_state(x, true, &z);

    if (rc == 0)
        rc = zs_end_frame(x, z);
    while (rc == 0 && xf_in_left(x)) {
        rc = zs_compress_once(x, z, ZSTD_e_continue, &left);
        if (rc == 0 && z->frame_in >= ZS_FRAME_MAX) {
            z->ending = true;
            rc = zs_end_frame(x, z);
        }
    }
    return rc;
}

/* The stream's last frame ends as a sync's does (a frame a sync was
 * ending is that last frame); a stream with no input still gets one, empty:
 * zero bytes are not a zstd file. */
static int zstd_finish(struct weir_xform *x)
{
    struct zs_state *z;
    int rc = zs_state(x, true, &z);

    if (rc == 0 && !z->ended) {
        z->ending = true;
        rc = zs_end_frame(x, z);
        if (rc == 0)
            z->ended = true;
    }
    return rc ? rc : weir__xf_out_emit(x);
}

/* Ends the current frame so what came in so far can be decoded, and the
 * output from here on decodes by itself. A frame with no input yet has
 * nothing to end (no empty frames at every sync of a quiet source). */
static int zstd_sync(struct weir_xform *x)
{
    struct zs_state *z = x->state;
    int rc;

    if (!z || z->ended || !(z->frame_open || z->ending))
        return weir__xf_out_emit(x);
    z->ending = true;
    rc = zs_end_frame(x, z);
    return rc ? rc : weir__xf_out_emit(x);
}

/* A frame's header (RFC 8878, 3.1.1.1): magic, descriptor, then a window
 * descriptor unless single-segment, a dictionary id, a content size. */
struct zs_header {
    unsigned len;     /* its bytes, magic included */
    uint64_t window;  /* what the frame asks for */
    uint64_t content; /* the content size, when has_content */
    bool has_content; /* the header says the content size */
    bool checksum;    /* the frame ends with one */
    bool reserved;    /* the descriptor's reserved bit is set */
};

/* The header at p, n bytes there: true when it is one and all there;
 * false with h->len its length when the magic and descriptor are there
 * but not the rest. */
static bool zs_header(const uint8_t *p, size_t n, struct zs_header *h)
{
    static const unsigned did_len[4] = {0, 1, 2, 4};
    static const unsigned fcs_len[4] = {0, 2, 4, 8};
    unsigned fhd, fcs_n;
    bool single;

    if (n < 5 || xf_le(p, 4) != 0xfd2fb528u)
        return false;
    fhd = p[4];
    single = fhd & 0x20;
    fcs_n = fcs_len[fhd >> 6] ? fcs_len[fhd >> 6] : single ? 1 : 0;
    h->len = 5 + !single + did_len[fhd & 3] + fcs_n;
    if (n < h->len)
        return false;
    h->has_content = fcs_n != 0;
    h->content = xf_le(p + h->len - fcs_n, fcs_n) + (fcs_n == 2 ? 256 : 0);
    if (single) {
        h->window = h->content;
    } else {
        uint64_t base = 1ull << (10 + (p[5] >> 3));

        h->window = base + base / 8 * (p[5] & 7);
    }
    h->checksum = fhd & 0x04;
    h->reserved = fhd & 0x08;
    return true;
}

/* The window a frame header at p (n bytes) asks for, or 0 when p does
 * not hold a whole one. */
static uint64_t zs_frame_window(const uint8_t *p, size_t n)
{
    struct zs_header h;

    return zs_header(p, n, &h) ? h.window : 0;
}

/* One decompress call. As gunzip's: *full when the space was filled,
 * *stuck when nothing moved. */
static int zs_decompress_once(struct weir_xform *x, struct zs_state *z,
                              bool *full, bool *stuck)
{
    ZSTD_inBuffer in = {xf_in_ptr(x), xf_in_left(x), 0};
    ZSTD_outBuffer out;
    uint8_t *p;
    uint32_t avail;
    int rc = weir__xf_out_space(x, &p, &avail);
    size_t r;

    if (rc)
        return rc;
    out = (ZSTD_outBuffer){p, avail, 0};
    r = ZSTD_decompressStream(z->d, &out, &in);
    if (ZSTD_isError(r)) {
        if (ZSTD_getErrorCode(r) == ZSTD_error_memory_allocation)
            return -ENOMEM;
        if (ZSTD_getErrorCode(r) == ZSTD_error_frameParameter_windowTooLarge) {
            /* The header is read whole in the call that opens the frame
             * (one split across chunks leaves the size unknown: 0). */
            x->err_offset =
                z->frame_open ? 0 : zs_frame_window(in.src, in.size);
            return -EMSGSIZE;
        }
        return xf_corrupt(x, z->consumed + in.pos);
    }
    x->in_off += (uint32_t)in.pos;
    x->st.in_bytes += in.pos;
    z->consumed += in.pos;
    if (in.pos)
        z->frame_open = true;
    if (r == 0)
        z->frame_open = false;
    *full = out.pos == out.size;
    *stuck = in.pos == 0 && out.pos == 0;
    return weir__xf_out_commit(x, (uint32_t)out.pos);
}

static int unzstd_step(struct weir_xform *x)
{
    struct zs_state *z;
    bool full = true, stuck = false;
    int rc = zs_state(x, false, &z);

    while (rc == 0 && !stuck && (xf_in_left(x) || full))
        rc = zs_decompress_once(x, z, &full, &stuck);
    return rc ? rc : weir__xf_out_emit(x);
}

static int unzstd_finish(struct weir_xform *x)
{
    struct zs_state *z = x->state;

    if (z && z->frame_open)
        return xf_corrupt(x, z->consumed);
    return weir__xf_out_emit(x);
}

static void zs_fini(struct weir_xform *x)
{
    struct zs_state *z = x->state;

    if (!z)
        return;
    ZSTD_freeCCtx(z->c);
    ZSTD_freeDCtx(z->d);
    free(z);
}

/* ---- zstd with a helper: frames from the member engine ---- */

static void *zs_open(int level)
{
    ZSTD_CCtx *c = ZSTD_createCCtx();

    if (c && zs_params(c, level)) {
        ZSTD_freeCCtx(c);
        return NULL;
    }
    return c;
}

static void zs_close(void *c)
{
    ZSTD_freeCCtx(c);
}

static size_t zs_bound(void *c, size_t n)
{
    (void)c;
    return ZSTD_compressBound(n);
}

/* One whole frame; the parameters set at open stay (ZSTD_compress2). */
static int zs_frame(void *c, const uint8_t *src, size_t n, uint8_t *out,
                    size_t cap, size_t *len)
{
    size_t r = ZSTD_compress2(c, out, cap, src, n);

    if (ZSTD_isError(r))
        return -EOVERFLOW;
    *len = r;
    return 0;
}

static const struct xf_codec zs_codec = {
    .open = zs_open,
    .close = zs_close,
    .bound = zs_bound,
    .make = zs_frame,
};

/* zstd as the member engine makes it, chosen over the streaming kind
 * when the transform has a helper (weir_xform_create). */
static const struct xf_kind xf_zstd_members = {
    .name = "zstd",
    .min_level = 1,
    .max_level = 19,
    .def_level = 3,
    .codec = &zs_codec,
    .member_default = ZS_MEMBER_DEFAULT,
    XM_KIND_OPS,
};

const struct xf_kind weir__xf_zstd = {
    .name = "zstd",
    .min_level = 1,
    .max_level = 19,
    .def_level = 3,
    .with_helper = &xf_zstd_members,
    .step = zstd_step,
    .finish = zstd_finish,
    .sync = zstd_sync,
    .fini = zs_fini,
};

/* ---- unzstd with a helper: whole frames from the member engine ---- */

static int zs_more(struct xf_cut *cut, size_t want)
{
    if (want > XM_DECODE_MAX)
        return XF_CUT_NONE;
    cut->in = want;
    return XF_CUT_MORE;
}

/*
 * The frame at p (RFC 8878, 3.1): its header, then blocks of a 3-byte
 * header each (last flag, type, size) until the last, then a checksum if
 * the header says so. A skippable frame is its 8-byte header and the
 * length it gives. The output is the header's content size, or at most
 * a block's worth per compressed block. Anything unusual (a reserved bit
 * or type, a window past the decoder's limit) goes to the streaming
 * decoder, whose error names it.
 */
static int unzs_cut(const uint8_t *p, size_t n, struct xf_cut *cut)
{
    struct zs_header h;
    uint64_t out = 0, block_max;
    size_t at;
    bool last = false;

    if (n < 8)
        return zs_more(cut, 8);
    if ((xf_le(p, 4) & 0xfffffff0u) == 0x184d2a50u) {
        cut->in = 8 + (size_t)xf_le(p + 4, 4);
        cut->out = 0;
        if (cut->in > XM_DECODE_MAX)
            return XF_CUT_NONE;
        return n < cut->in ? XF_CUT_MORE : XF_CUT_WHOLE;
    }
    if (xf_le(p, 4) != 0xfd2fb528u)
        return XF_CUT_NONE;
    if (!zs_header(p, n, &h))
        return zs_more(cut, h.len);
    if (h.reserved || h.window == 0 || h.window > WEIR_UNZSTD_WINDOW_MAX ||
        (h.has_content && h.content > XM_DECODE_MAX))
        return XF_CUT_NONE;
    block_max = h.window < ZSTD_BLOCKSIZE_MAX ? h.window : ZSTD_BLOCKSIZE_MAX;
    for (at = h.len; !last;) {
        uint32_t b, type, size;

        if (n < at + 3)
            return zs_more(cut, at + 3);
        b = (uint32_t)xf_le(p + at, 3);
        last = b & 1;
        type = (b >> 1) & 3;
        size = b >> 3;
        if (type == 3)
            return XF_CUT_NONE;
        at += 3 + (type == 1 ? 1 : size); /* RLE: one byte, repeated */
        out += type == 2 ? block_max : size;
        if (!h.has_content && out > XM_DECODE_MAX)
            return XF_CUT_NONE;
    }
    at += h.checksum ? 4 : 0;
    if (n < at)
        return zs_more(cut, at);
    cut->in = at;
    cut->out = h.has_content ? h.content : out;
    return cut->out > XM_DECODE_MAX ? XF_CUT_NONE : XF_CUT_WHOLE;
}

static void *unzs_open(int level)
{
    ZSTD_DCtx *d = ZSTD_createDCtx();

    (void)level;
    if (d && ZSTD_isError(ZSTD_DCtx_setParameter(d, ZSTD_d_windowLogMax,
                                                 XF_ZSTD_WINDOW_LOG))) {
        ZSTD_freeDCtx(d);
        return NULL;
    }
    return d;
}

static void unzs_close(void *d)
{
    ZSTD_freeDCtx(d);
}

static int unzs_frame(void *d, const uint8_t *src, size_t n, uint8_t *out,
                      size_t cap, size_t *len)
{
    size_t r = ZSTD_decompressDCtx(d, out, cap, src, n);

    if (ZSTD_isError(r))
        return ZSTD_getErrorCode(r) == ZSTD_error_memory_allocation ? -ENOMEM
                                                                    : -EBADMSG;
    *len = r;
    return 0;
}

static const struct xf_codec unzs_codec = {
    .open = unzs_open,
    .close = unzs_close,
    .make = unzs_frame,
    .cut = unzs_cut,
    .stream = &weir__xf_unzstd,
};

static const struct xf_kind xf_unzstd_members = {
    .name = "unzstd",
    .codec = &unzs_codec,
    XM_KIND_OPS,
};

const struct xf_kind weir__xf_unzstd = {
    .name = "unzstd",
    .with_helper = &xf_unzstd_members,
    .step = unzstd_step,
    .finish = unzstd_finish,
    .fini = zs_fini,
};
