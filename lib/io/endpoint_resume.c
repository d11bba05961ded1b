/*
 * endpoint_resume.c - what a reconnecting socket sink keeps so that a new
 * connection can start where a gzip member or zstd frame does, and the
 * count of what its peers acknowledged.
 *
 * Bytes are kept as they are sent, from the latest boundary at or before
 * the peer's acknowledged byte (weir__ep_conn_acked, endpoint_ack.c). The
 * boundaries are read off the stream itself, by a small parser that only skips:
 * a gzip member of weir's carries its size in its header's extra field
 * ('W','R'), and a zstd frame is a header and blocks that state their sizes. A
 * stream the parser cannot follow (a member without the size) loses its
 * boundaries from there on, and resumes at the acknowledged byte as a plain
 * copy.
 */
#include <errno.h>
#include <netinet/in.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "endpoint_impl.h"

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

static void fr_start(struct weir_endpoint *ep)
{
    if (ep->so.resume == WEIR_RESUME_GZIP)
        fr_want(&ep->fr, FR_GZ_HDR, 20);
    else
        fr_want(&ep->fr, FR_Z_MAGIC, 4);
}

static uint32_t le32(const uint8_t *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
           (uint32_t)p[3] << 24;
}

static void bound_add(struct weir_endpoint *ep, uint64_t off)
{
    if (ep->nbounds == sizeof(ep->bounds) / sizeof(ep->bounds[0])) {
        memmove(ep->bounds, ep->bounds + 1,
                (ep->nbounds - 1) * sizeof(ep->bounds[0]));
        ep->nbounds--;
    }
    ep->bounds[ep->nbounds++] = off;
}

/* A header is complete: what to skip, and what comes next. */
static void fr_header(struct weir_endpoint *ep)
{
    struct ep_framer *f = &ep->fr;
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
static void fr_feed(struct weir_endpoint *ep, const uint8_t *p, size_t n)
{
    struct ep_framer *f = &ep->fr;

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
                fr_header(ep);
        }
        if (f->skip == 0 && (f->st & (FR_AFTER_END | FR_AFTER_BLOCK))) {
            if (f->st & FR_AFTER_END) {
                bound_add(ep, f->at);
                fr_start(ep);
            } else {
                fr_want(f, FR_Z_BLK, 3);
            }
        }
    }
}

int weir__ep_resume_sent(struct weir_endpoint *ep, size_t n)
{
    size_t need = ep->rb_len + n;

    if (ep->so.resume == WEIR_RESUME_OFF || n == 0)
        return 0;
    if (ep->rb_cap == 0)
        fr_start(ep);
    if (ep->rb_off + need > ep->rb_cap) {
        if (ep->rb_off) {
            memmove(ep->rb, ep->rb + ep->rb_off, ep->rb_len);
            ep->rb_off = 0;
        }
        if (need > ep->rb_cap) {
            size_t cap = ep->rb_cap ? ep->rb_cap : 256 * 1024;
            uint8_t *p;

            while (cap < need)
                cap *= 2;
            p = realloc(ep->rb, cap);
            if (!p)
                return -ENOMEM;
            ep->rb = p;
            ep->rb_cap = cap;
        }
    }
    for (unsigned i = ep->iov_at; i < ep->niov && n; i++) {
        size_t k = ep->iov[i].iov_len < n ? ep->iov[i].iov_len : n;

        memcpy(ep->rb + ep->rb_off + ep->rb_len, ep->iov[i].iov_base, k);
        if (ep->so.resume != WEIR_RESUME_BYTES)
            fr_feed(ep, ep->iov[i].iov_base, k);
        ep->rb_len += k;
        n -= k;
    }
    return 0;
}

/* The latest boundary at or before off (the bytes kept start there). */
static uint64_t bound_before(struct weir_endpoint *ep, uint64_t off)
{
    uint64_t b = ep->rb_base;

    if (ep->so.resume == WEIR_RESUME_BYTES || ep->fr.lost)
        return off;
    for (unsigned i = 0; i < ep->nbounds && ep->bounds[i] <= off; i++)
        b = ep->bounds[i];
    return b;
}

void weir__ep_resume_acked(struct weir_endpoint *ep)
{
    uint64_t acked = ep->conn_base + weir__ep_conn_acked(ep), keep;
    unsigned k = 0;

    if (acked > ep->acked_hi) {
        weir__ep_count(ep, acked - ep->acked_hi);
        ep->acked_hi = acked;
    }
    if (ep->so.resume == WEIR_RESUME_OFF || ep->conn == CONN_REPLAY)
        return;
    keep = bound_before(ep, acked);
    if (keep <= ep->rb_base)
        return;
    ep->rb_off += keep - ep->rb_base;
    ep->rb_len -= keep - ep->rb_base;
    ep->rb_base = keep;
    while (k < ep->nbounds && ep->bounds[k] <= keep)
        k++;
    memmove(ep->bounds, ep->bounds + k, (ep->nbounds - k) * sizeof(uint64_t));
    ep->nbounds -= k;
}

uint64_t weir__ep_resume_point(struct weir_endpoint *ep, uint64_t acked)
{
    uint64_t b = bound_before(ep, acked);

    if (acked < ep->rb_base)
        return ep->rb_base; /* cannot be: kept from at most acked */
    return b < ep->rb_base ? ep->rb_base : b;
}

bool weir__ep_resume_room(struct weir_endpoint *ep, size_t n)
{
    uint64_t acked, cut;

    if (ep->so.resume == WEIR_RESUME_OFF || ep->rb_len + n <= WEIR_RESUME_MAX)
        return true;
    weir__ep_resume_acked(ep);
    if (ep->rb_len + n <= WEIR_RESUME_MAX || ep->rb_len == 0)
        return true;
    /* A member bigger than the copy (not one of weir's gzip's, nor a
     * zstd frame of 4 MiB of input behind a usual send queue): let go of
     * its acknowledged part. A loss before its end then resumes at the
     * acknowledged byte, inside the member; the next one is whole. */
    acked = ep->acked_hi;
    if (acked <= ep->rb_base || acked > ep->rb_base + ep->rb_len)
        return false;
    cut = acked - ep->rb_base;
    ep->rb_off += cut;
    ep->rb_len -= cut;
    ep->rb_base = acked;
    return ep->rb_len + n <= WEIR_RESUME_MAX;
}
