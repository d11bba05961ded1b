/*
 * gzip.c - the gzip transform: libdeflate, one gzip member per
 * member_size bytes of input, made by the member engine (members.c) on
 * the stream's thread or, with a helper loop, partly on the helper's.
 *
 * Chosen by measurement (weir-bench xform-core): on repeated text,
 * libdeflate's whole-buffer compressor ran several times faster than zlib's
 * streaming deflate at the same level, with a ratio as good once members
 * reach a few hundred KiB. A file of members is one valid gzip file
 * (RFC 1952, 2.2), which gzip -d, Python's gzip module and zlib's inflate
 * all read.
 */
#include <libdeflate.h>
#include <stddef.h>
#include <string.h>

#include "xform_impl.h"

/*
 * One member, with its own length in the header: FEXTRA with a subfield
 * 'W','R' holding the member's total size (4 bytes, little-endian), as
 * BGZF does with its 'B','C'. Decoders skip unknown subfields; a sink
 * that must resume at a member boundary reads it to find where each
 * member ends (see weir_socket_sink_options.resume). The deflate data
 * goes GZ_EXTRA bytes further in, and the header moves in front of it.
 */
#define GZ_EXTRA 10u

static int gz_member(void *c, const uint8_t *src, size_t n, uint8_t *out,
                     size_t cap, size_t *len)
{
    size_t deflated =
        libdeflate_gzip_compress(c, src, n, out + GZ_EXTRA, cap - GZ_EXTRA);
    uint32_t total = (uint32_t)(deflated + GZ_EXTRA);

    /* The output room is the bound for member_size: this cannot fail. */
    if (deflated < 10)
        return -EOVERFLOW;
    memmove(out, out + GZ_EXTRA, 10);
    out[3] |= 0x04; /* FLG.FEXTRA */
    out[10] = 8;    /* XLEN */
    out[11] = 0;
    out[12] = 'W';
    out[13] = 'R';
    out[14] = 4; /* LEN */
    out[15] = 0;
    for (int i = 0; i < 4; i++)
        out[16 + i] = (uint8_t)(total >> (8 * i));
    *len = total;
    return 0;
}

static void *gz_open(int level)
{
    return libdeflate_alloc_compressor(level);
}

static void gz_close(void *c)
{
    libdeflate_free_compressor(c);
}

static size_t gz_bound(void *c, size_t n)
{
    return libdeflate_gzip_compress_bound(c, n) + GZ_EXTRA;
}

static const struct xf_codec gz_codec = {
    .open = gz_open,
    .close = gz_close,
    .bound = gz_bound,
    .make = gz_member,
};

const struct xf_kind weir__xf_gzip = {
    .name = "gzip",
    .min_level = 1,
    .max_level = 9,
    .def_level = 6,
    .codec = &gz_codec,
    XM_KIND_OPS,
};
