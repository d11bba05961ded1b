/*
 * endpoint_resume.c - what a reconnecting socket sink keeps so that a new
 * connection can start where a gzip member or zstd frame does, and the
 * count of what its peers acknowledged.
 *
 * Bytes are kept as they are sent, from the latest boundary at or before
 * the peer's acknowledged byte (as the socket sink counts it). The
 * boundaries are read off the stream itself, by a small parser that only skips:
 * a gzip member of weir's carries its size in its header's extra field
 * ('W','R'), and a zstd frame is a header and blocks that state their sizes. A
 * stream the parser cannot follow (a member without the size) loses its
 * boundaries from there on, and resumes at the acknowledged byte as a plain
 * copy.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "endpoint_resume.h"

enum {
    FR_GZ_HDR,  /* the 20 bytes of a member's header, with its size */
    FR_Z_MAGIC, /* 4 bytes: a frame or a skippable frame */
    FR_Z_FHD,   /* the frame header descriptor */
    FR_Z_FHX,   /* the rest of the frame header */
    FR_Z_BLK,   /* a block header */
    FR_Z_SKIPSZ /* a skippable frame's size */
};

/* What follows a skip: another block, or the end of the frame. */
#define FR_AFTER_BLOCK 0x80u
#define FR_AFTER_END   0x40u

static void fr_want(struct ep_framer *f, uint8_t st, uint8_t n)
{
    f->st = st;
    f->hn = 0;
    f->hwant = n;
}

static void fr_start(struct ep_resume *r)
{
    if (r->mode == WEIR_RESUME_GZIP)
        fr_want(&r->fr, FR_GZ_HDR, 20);
    else
        fr_want(&r->fr, FR_Z_MAGIC, 4);
}

static uint32_t le32(const uint8_t *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
           (uint32_t)p[3] << 24;
}

static void bound_add(struct ep_resume *r, uint64_t off)
{
    if (r->nbounds == sizeof(r->bounds) / sizeof(r->bounds[0])) {
        memmove(r->bounds, r->bounds + 1,
                (r->nbounds - 1) * sizeof(r->bounds[0]));
        r->nbounds--;
    }
    r->bounds[r->nbounds++] = off;
}

/* A header is complete: what to skip, and what comes next. */
static void fr_header(struct ep_resume *r)
{
    struct ep_framer *f = &r->fr;
    const uint8_t *h = f->hb;
    static const uint8_t did[4] = {0, 1, 2, 4};
    uint32_t m, b;
    unsigned n;

    switch (f->st) {
    case FR_GZ_HDR:
        if (h[0] != 0x1f || h[1] != 0x8b || !(h[3] & 0x04) || h[12] != 'W' ||
            h[13] != 'R' || h[14] != 4 || le32(h + 16) < 20) {
            f->lost = true;
            return;
        }
        f->skip = le32(h + 16) - 20;
        f->st = FR_GZ_HDR | FR_AFTER_END;
        return;
    case FR_Z_MAGIC:
        m = le32(h);
        if (m == 0xFD2FB528u)
            fr_want(f, FR_Z_FHD, 1);
        else if ((m & 0xFFFFFFF0u) == 0x184D2A50u)
            fr_want(f, FR_Z_SKIPSZ, 4);
        else
            f->lost = true;
        return;
    case FR_Z_SKIPSZ:
        f->skip = le32(h);
        f->st = FR_Z_MAGIC | FR_AFTER_END;
        return;
    case FR_Z_FHD:
        f->checksum = h[0] & 0x04;
        n = (h[0] & 0x20 ? 0 : 1) + did[h[0] & 3];
        switch (h[0] >> 6) {
        case 0:
            n += h[0] & 0x20 ? 1 : 0;
            break;
        case 1:
            n += 2;
            break;
        case 2:
            n += 4;
            break;
        default:
            n += 8;
        }
        if (n)
            fr_want(f, FR_Z_FHX, (uint8_t)n);
        else
            fr_want(f, FR_Z_BLK, 3);
        return;
    case FR_Z_FHX:
        fr_want(f, FR_Z_BLK, 3);
        return;
    case FR_Z_BLK:
        b = (uint32_t)h[0] | (uint32_t)h[1] << 8 | (uint32_t)h[2] << 16;
        f->skip = ((b >> 1) & 3) == 1 ? 1 : b >> 3;
        if (b & 1) {
            f->skip += f->checksum ? 4 : 0;
            f->st = FR_Z_MAGIC | FR_AFTER_END;
        } else {
            f->st = FR_Z_BLK | FR_AFTER_BLOCK;
        }
        return;
    }
}

/* Follows the member structure over n sent bytes. */
static void fr_feed(struct ep_resume *r, const uint8_t *p, size_t n)
{
    struct ep_framer *f = &r->fr;

    while (n && !f->lost) {
        if (f->skip) {
            size_t k = f->skip < n ? (size_t)f->skip : n;

            f->skip -= k;
            f->at += k;
            p += k;
            n -= k;
        } else {
            size_t k = f->hwant - f->hn;

            if (k > n)
                k = n;
            memcpy(f->hb + f->hn, p, k);
            f->hn = (uint8_t)(f->hn + k);
            f->at += k;
            p += k;
            n -= k;
            if (f->hn == f->hwant)
                fr_header(r);
        }
        if (f->skip == 0 && (f->st & (FR_AFTER_END | FR_AFTER_BLOCK))) {
            if (f->st & FR_AFTER_END) {
                bound_add(r, f->at);
                fr_start(r);
            } else {
                fr_want(f, FR_Z_BLK, 3);
            }
        }
    }
}

int weir__ep_resume_keep(struct ep_resume *r, const struct iovec *iov,
                         unsigned niov, size_t n)
{
    size_t need = r->rb_len + n;

    if (r->mode == WEIR_RESUME_OFF || n == 0)
        return 0;
    if (r->rb_cap == 0)
        fr_start(r);
    if (r->rb_off + need > r->rb_cap) {
        if (r->rb_off) {
            memmove(r->rb, r->rb + r->rb_off, r->rb_len);
            r->rb_off = 0;
        }
        if (need > r->rb_cap) {
            size_t cap = r->rb_cap ? r->rb_cap : 256 * 1024;
            uint8_t *p;

            while (cap < need)
                cap *= 2;
            p = realloc(r->rb, cap);
            if (!p)
                return -ENOMEM;
            r->rb = p;
            r->rb_cap = cap;
        }
    }
    for (unsigned i = 0; i < niov && n; i++) {
        size_t k = iov[i].iov_len < n ? iov[i].iov_len : n;

        memcpy(r->rb + r->rb_off + r->rb_len, iov[i].iov_base, k);
        if (r->mode != WEIR_RESUME_BYTES)
            fr_feed(r, iov[i].iov_base, k);
        r->rb_len += k;
        n -= k;
    }
    return 0;
}

/* The latest boundary at or before off (the bytes kept start there). */
static uint64_t bound_before(const struct ep_resume *r, uint64_t off)
{
    uint64_t b = r->rb_base;

    if (r->mode == WEIR_RESUME_BYTES || r->fr.lost)
        return off;
    for (unsigned i = 0; i < r->nbounds && r->bounds[i] <= off; i++)
        b = r->bounds[i];
    return b;
}

void weir__ep_resume_release(struct ep_resume *r, uint64_t acked)
{
    uint64_t keep;
    unsigned k = 0;

    if (r->mode == WEIR_RESUME_OFF)
        return;
    keep = bound_before(r, acked);
    if (keep <= r->rb_base)
        return;
    r->rb_off += keep - r->rb_base;
    r->rb_len -= keep - r->rb_base;
    r->rb_base = keep;
    while (k < r->nbounds && r->bounds[k] <= keep)
        k++;
    memmove(r->bounds, r->bounds + k, (r->nbounds - k) * sizeof(uint64_t));
    r->nbounds -= k;
}

uint64_t weir__ep_resume_point(const struct ep_resume *r, uint64_t acked)
{
    uint64_t b = bound_before(r, acked);

    if (acked < r->rb_base)
        return r->rb_base; /* cannot be: kept from at most acked */
    return b < r->rb_base ? r->rb_base : b;
}

bool weir__ep_resume_fits(const struct ep_resume *r, size_t n)
{
    return r->mode == WEIR_RESUME_OFF || r->rb_len + n <= WEIR_RESUME_MAX;
}

bool weir__ep_resume_room(struct ep_resume *r, size_t n, uint64_t acked)
{
    uint64_t cut;

    if (weir__ep_resume_fits(r, n) || r->rb_len == 0)
        return true;
    /* A member bigger than the copy (not one of weir's gzip's, nor a
     * zstd frame of 4 MiB of input behind a usual send queue): let go of
     * its acknowledged part. A loss before its end then resumes at the
     * acknowledged byte, inside the member; the next one is whole. */
    if (acked <= r->rb_base || acked > r->rb_base + r->rb_len)
        return false;
    cut = acked - r->rb_base;
    r->rb_off += cut;
    r->rb_len -= cut;
    r->rb_base = acked;
    return weir__ep_resume_fits(r, n);
}

void weir__ep_resume_free(struct ep_resume *r)
{
    free(r->rb);
    r->rb = NULL;
}
