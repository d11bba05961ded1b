/*
 * xform_impl.h - what the transforms of lib/xform share: the transform
 * object, the table entry each kind provides, and the output helpers that
 * place bytes into pool buffers.
 *
 * A kind's step and finish work on x->in from x->in_off and may stop at any
 * point with XF_STALL_POOL or XF_STALL_ROOM (from the output helpers); the
 * driver (xform.c) parks and later calls the same function again, which
 * must pick up where it stopped. Everything a kind needs to resume lives
 * in its state, never on the C stack.
 */
#ifndef WEIR_XFORM_IMPL_H
#define WEIR_XFORM_IMPL_H

#include <errno.h>
#include <stdbool.h>
#include <stdint.h>

#include "weir/xform.h"

/* Stall codes a step returns; all are "try again later", never errors
 * seen by the core. AWAY: output is being made on the helper's thread. */
#define XF_STALL_POOL (-ENOBUFS)
#define XF_STALL_ROOM (-EAGAIN)
#define XF_STALL_AWAY (-EINPROGRESS)

/*
 * A codec of independent members, for the member engine
 * (members_engine.c): each call of make turns one whole member's input
 * into its output, so members made on two threads concatenate into one
 * valid stream. A compressor makes a member (a gzip member, a zstd frame)
 * of n input bytes; a decoder (cut set) decodes one member it was handed
 * whole. Each thread has its own codec state (open).
 */
struct xf_cut {
    size_t in;  /* XF_CUT_MORE: input bytes wanted; WHOLE: the member's */
    size_t out; /* XF_CUT_WHOLE: the most output the member can make */
};

enum {
    XF_CUT_MORE,  /* the member is not all there yet */
    XF_CUT_WHOLE, /* the member is the first cut.in bytes */
    XF_CUT_NONE,  /* its end or size is unknown: stream it instead */
};

struct xf_codec {
    void *(*open)(int level); /* NULL when out of memory */
    void (*close)(void *c);
    /* Compressors: the most output n bytes of input can make. */
    size_t (*bound)(void *c, size_t n);
    /* One member's output, from n bytes at src into out (cap bytes): 0
     * with *len set, or -errno (-EBADMSG: a decoder's member is
     * corrupt). */
    int (*make)(void *c, const uint8_t *src, size_t n, uint8_t *out, size_t cap,
                size_t *len);
    /* Decoders: where the member whose first n bytes are at p ends, and
     * how much it makes, from its header (and trailer) alone; never more
     * than XM_DECODE_MAX in or out, or XF_CUT_NONE. */
    int (*cut)(const uint8_t *p, size_t n, struct xf_cut *cut);
    /* Decoders: the streaming kind that takes the stream over from the
     * first member cut cannot find the end of. */
    const struct xf_kind *stream;
};

/* The largest member a decoder makes whole, input or output (for a zstd
 * frame without a content size, its blocks' bound). Larger ones are
 * streamed: a member decoded on the helper holds that worker's loop for
 * its whole decoding, and the stream's sink half may run there. weir's
 * own members (256 KiB of gzip input, 1 MiB zstd frames with two workers)
 * fit; its 4 MiB streaming zstd frames stream, which measured faster
 * (bench/results/heavy.md). */
#define XM_DECODE_MAX ((2u << 20) + (128u << 10))

struct xf_kind {
    const char *name;
    int min_level, max_level, def_level; /* max_level 0: takes no level */
    /* Kinds made of independent members: their codec (members_engine.c). */
    const struct xf_codec *codec;
    /* Input bytes per member when the options say 0 (0: the library's
     * WEIR_XFORM_MEMBER_DEFAULT). */
    size_t member_default;
    /* The kind a transform with a helper loop is made of instead (NULL:
     * this one), e.g. zstd's frames from the member engine. */
    const struct xf_kind *with_helper;
    /* Consumes x->in from x->in_off to its end. 0 when done (the driver
     * drops the input unless the kind took it: has_in false), a stall
     * code, or -errno. */
    int (*step)(struct weir_xform *x);
    /* End of input: emit everything left. Same results. */
    int (*finish)(struct weir_xform *x);
    /* Pushes out what the kind holds back (weir_xform_sync); NULL when it
     * holds nothing but the open buffer. 0 or a stall code or -errno; what
     * did not go out goes with the next step or finish. */
    int (*sync)(struct weir_xform *x);
    /* Kinds that hand work to a helper thread (NULL otherwise). away:
     * whether output is still being made there after a step or sync
     * returned; poll: hands on what has finished since, with the core
     * not in a call (0 once nothing is away, or a stall code, or
     * -errno). */
    bool (*away)(struct weir_xform *x);
    int (*poll)(struct weir_xform *x);
    /* Frees the kind's state (x->state), if any. */
    void (*fini)(struct weir_xform *x);
};

/* The member engine (members.c), as a kind's step, finish, sync, away,
 * poll and fini; x->kind->codec makes the members. */
int weir__xm_step(struct weir_xform *x);
int weir__xm_finish(struct weir_xform *x);
int weir__xm_sync(struct weir_xform *x);
bool weir__xm_away(struct weir_xform *x);
int weir__xm_poll(struct weir_xform *x);
void weir__xm_fini(struct weir_xform *x);

/* The member engine's entries in a kind's initializer. */
#define XM_KIND_OPS                                                            \
    .step = weir__xm_step, .finish = weir__xm_finish, .sync = weir__xm_sync,   \
    .away = weir__xm_away, .poll = weir__xm_poll, .fini = weir__xm_fini

extern const struct xf_kind weir__xf_uppercase, weir__xf_gzip, weir__xf_gunzip,
    weir__xf_zstd, weir__xf_unzstd;

struct weir_xform {
    const struct xf_kind *kind;
    struct weir_transform *tf;
    struct weir_pool *pool;
    struct weir_loop *helper; /* may do work on its own thread, or NULL */
    const _Atomic uint32_t *helper_busy; /* see weir_xform_options */
    void *state; /* the kind's, allocated on first use */
    int level;
    unsigned slot;
    size_t member_size;
    uint32_t burst;
    size_t room; /* the readable side's hwm, at least 1 */
    void (*on_stall)(void *ctx, struct weir_xform *x);
    void *stall_ctx;

    /* The input chunk being worked on. */
    struct weir_chunk in;
    uint32_t in_off;
    bool has_in;

    /* The output buffer being filled. */
    struct weir_buf *ob;
    uint32_t ob_len, ob_cap;
    uint32_t emitted; /* buffers queued in this run */

    uint8_t op; /* XF_OP_*: the core's outstanding call */
    /* 0 or the stall code it parked with. With op XF_OP_NONE: output
     * left to hand on after the call returned (kind->poll). */
    int stall;
    bool running; /* inside step/finish */
    bool cancelled;
    int err;
    uint64_t err_offset;
    struct weir_xform_stats st;
};

enum { XF_OP_NONE, XF_OP_CHUNK, XF_OP_FLUSH };

/* Bytes of input left to consume. */
static inline uint32_t xf_in_left(const struct weir_xform *x)
{
    return x->in.len - x->in_off;
}

static inline const uint8_t *xf_in_ptr(const struct weir_xform *x)
{
    return x->in.data + x->in_off;
}

/* The n-byte (at most 8) little-endian number at p: the byte order of
 * gzip's and zstd's headers. */
static inline uint64_t xf_le(const uint8_t *p, unsigned n)
{
    uint64_t v = 0;

    for (unsigned i = 0; i < n; i++)
        v |= (uint64_t)p[i] << (8 * i);
    return v;
}

/* Marks corrupt input at `offset` (from the stream's start). */
static inline int xf_corrupt(struct weir_xform *x, uint64_t offset)
{
    x->err_offset = offset;
    return -EBADMSG;
}

/*
 * The output buffer's free space: takes a buffer when none is open.
 * 0 with *p and *avail (> 0) set, XF_STALL_ROOM when this run has queued
 * `burst` buffers and the readable side is full, XF_STALL_POOL when the
 * pool is empty.
 */
int weir__xf_out_space(struct weir_xform *x, uint8_t **p, uint32_t *avail);

/* Accounts n bytes written into the space; a full buffer is queued. 0 or
 * the enqueue's error. */
int weir__xf_out_commit(struct weir_xform *x, uint32_t n);

/* Queues the open buffer if it holds anything. 0 or -errno. */
int weir__xf_out_emit(struct weir_xform *x);

/* Copies from src (*done bytes of len already copied, advanced here).
 * 0 when all of it is out, a stall code, or -errno. */
int weir__xf_out_copy(struct weir_xform *x, const uint8_t *src, size_t len,
                      size_t *done);

/* Queues a chunk the transform passes on as it is (uppercase in place). */
int weir__xf_out_pass(struct weir_xform *x, struct weir_chunk c);

/* ASCII a-z to A-Z from src to dst (equal, or not overlapping). */
void weir__xf_upper(uint8_t *dst, const uint8_t *src, size_t n);

#endif /* WEIR_XFORM_IMPL_H */
