/*
 * endpoint_resume.h - what a reconnecting socket sink keeps to resend
 * (endpoint_resume.c): a copy of the stream bytes sent, from the start of
 * the gzip member or zstd frame the peer's acknowledgements have reached.
 * Private to lib/io.
 */
#ifndef WEIR_IO_ENDPOINT_RESUME_H
#define WEIR_IO_ENDPOINT_RESUME_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/uio.h>

#include "weir/endpoint.h"

/*
 * rb holds stream bytes [rb_base, rb_base + rb_len) from rb + rb_off;
 * bounds are the member boundaries after rb_base, ascending.
 */
struct ep_resume {
    enum weir_resume mode; /* WEIR_RESUME_OFF: keeps nothing */
    uint8_t *rb;
    size_t rb_off, rb_len, rb_cap;
    uint64_t rb_base;
    uint64_t bounds[32];
    unsigned nbounds;
    struct ep_framer {
        uint8_t st, hn, hwant;
        uint8_t hb[20];
        bool checksum, lost;
        uint64_t skip, at;
    } fr;
};

/* n bytes of iov[0..niov) went out: kept. 0 or -ENOMEM. */
int weir__ep_resume_keep(struct ep_resume *r, const struct iovec *iov,
                         unsigned niov, size_t n);
/* The peer acknowledged up to stream byte acked: what no resend needs
 * goes. */
void weir__ep_resume_release(struct ep_resume *r, uint64_t acked);
/* Where a new connection starts after the old peer acknowledged up to
 * acked. */
uint64_t weir__ep_resume_point(const struct ep_resume *r, uint64_t acked);
/* Whether n more bytes fit in the copy as it is. */
bool weir__ep_resume_fits(const struct ep_resume *r, size_t n);
/* Whether n more bytes fit once the acknowledged part of a member bigger
 * than the copy goes (acked: stream bytes acknowledged). */
bool weir__ep_resume_room(struct ep_resume *r, size_t n, uint64_t acked);
void weir__ep_resume_free(struct ep_resume *r);

#endif
