/*
 * weir/xform.h - the transforms a pipeline may name: uppercase, gzip[:LEVEL],
 * gunzip, zstd[:LEVEL], unzstd. Each is a stream-core transform
 * (weir/transform.h) with a transformer that writes its output into buffers
 * of a pool; pipe a readable into weir_xform_transform(x) and read the
 * result from its readable side, like any other transform.
 *
 * All functions: the stream's thread only (weir/stream_types.h), which must
 * also be the output pool's owner. weir_xform_check: any thread.
 *
 * What each transform does with its chunks:
 *   uppercase  ASCII a-z to A-Z. In place when the chunk holds the only
 *              reference to its pool buffer (the chunk itself goes on),
 *              otherwise copied into pool buffers. Chunk boundaries are
 *              kept; nothing is held back.
 *   gzip       libdeflate, whole buffers: input accumulates to member_size
 *              bytes, which become one gzip member (RFC 1952 allows a file
 *              of several). The end of the stream flushes the partial
 *              member; an empty stream still gives one (empty) member, so
 *              the output is always a valid gzip file. Levels 1-9, default
 *              6, as gzip(1). With a helper loop (options), a member that
 *              fills while the helper is idle is compressed there and the
 *              next one here; members still leave in order. Each
 *              member's header has an extra field (FEXTRA, subfield 'W',
 *              'R', 4 bytes) holding the member's total size, so a reader
 *              can find where members begin without inflating.
 *   gunzip     zlib inflate; reads any number of members. Anything that is
 *              not a complete gzip member (bad header, bad CRC, trailing
 *              garbage, a stream ending inside a member) errors the stream
 *              with -EBADMSG; weir_xform_error gives the input offset.
 *              Members whose header gives their size (weir's 'W','R',
 *              BGZF's 'B','C') are decoded whole with libdeflate, about
 *              twice as fast as inflate; with a helper loop, here or on
 *              the helper, leaving in order. A corrupt one's offset is
 *              then its first byte. From the first member without a size
 *              on (gzip(1)'s), inflate.
 *   zstd       libzstd streaming, one frame per 4 MiB of input (and one
 *              more after each weir_xform_sync), each with a checksum of
 *              its content, as zstd(1) writes. Levels 1-19,
 *              default 3, as zstd(1) without --ultra. With a helper
 *              loop, frames are made whole like gzip's members instead:
 *              one per member_size bytes of input (default 1 MiB), each
 *              compressed here or on the helper, leaving in order.
 *   unzstd     libzstd streaming; reads any number of frames. Corrupt or
 *              truncated input: -EBADMSG with the offset, as gunzip. A
 *              frame needing a window over 8 MiB (WEIR_UNZSTD_WINDOW_MAX;
 *              zstd --long) is refused with -EMSGSIZE, so the decoder's
 *              memory stays bounded; weir_xform_error gives the window the
 *              frame asked for. With a helper loop, frames of up to about
 *              2 MiB (found by their blocks' headers) are decoded whole,
 *              here or on the helper, leaving in order, as gunzip's
 *              members; from the first larger frame on, streaming.
 * Compressors keep their last, partly filled output buffer until it fills
 * or the stream ends (or weir_xform_sync); uppercase and the decompressors
 * hand on what one input chunk gave before taking the next.
 *
 * When output cannot be placed, a transform parks rather than fails. Two
 * things stop it:
 *   - the pool is empty (every buffer is downstream or elsewhere);
 *   - it has queued `burst` output buffers on its readable side in one run
 *     while that side is full (a decompressor can turn one chunk into
 *     thousands of buffers; this keeps one stream from taking the pool).
 *   - (with a helper) every member slot is taken, or the stream ended,
 *     while the helper still makes one.
 * It then keeps its place in the input, answers WEIR_PENDING to the core
 * (so its writable side stays busy and backpressure reaches upstream),
 * calls on_stall once, and waits for its owner to call weir_xform_resume.
 * The owner does that after anything that may have freed a buffer or read
 * from the transform (in the daemon: once per loop iteration, for every
 * stalled transform of the worker); a resume that still finds no room
 * parks again cheaply. A transform whose input is all taken but whose
 * member is still on the helper reports itself stalled too, with no call
 * of the core outstanding: the same resume hands the member on.
 * The memory a transform stage holds is therefore
 * bounded by its queues' high-water marks + `burst` + one partly filled
 * buffer, plus its codec's own state, made on the first chunk:
 *   gzip     member_size of input + its compress bound of output +
 *            libdeflate's compressor (200 KiB at level 1, 650 KiB at
 *            2-9): ~0.7-1.2 MiB at the default member of 256 KiB; with a
 *            helper, six members in flight (input held or copied, and
 *            output) and two compressors: ~3.4-4.3 MiB;
 *   gunzip   zlib's inflate state, ~45 KiB, for members without a size;
 *            for members with one, the member's input and output (~340
 *            KiB for weir's own of 256 KiB), up to four members in flight
 *            with a helper (at most 12 MiB and the member being gathered),
 *            and a libdeflate decompressor per thread;
 *   zstd     the context of its level (libzstd's own estimate): 1.3 MiB
 *            at level 1, 3.5 MiB at 3, 17 MiB at 9, 90 MiB at 19; with a
 *            helper, six frames in flight (1 MiB of input and its bound
 *            of output each) and two contexts sized for 1 MiB inputs;
 *   unzstd   at most ~8.5 MiB (the 8 MiB window limit); with a helper,
 *            frames in flight as gunzip's members (at most 12 MiB and the
 *            frame being gathered, up to ~4 MiB more) and two contexts.
 */
#ifndef WEIR_XFORM_H
#define WEIR_XFORM_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "weir/transform.h"

#ifdef __cplusplus
extern "C" {
#endif

struct weir_loop;
struct weir_xform;

struct weir_xform_options {
    /* Where output buffers come from; owned by the stream's thread. */
    struct weir_pool *pool;
    /* The stream's thread slot (chunk references are dropped on it). */
    unsigned slot;
    /* The transform's two queues. A zero writable hwm means 1, the spec's
     * default (0 would never accept a write); the readable side's zero
     * means the spec's 0. */
    struct weir_strategy writable, readable;
    /* gzip: input bytes per member; zstd with a helper: per frame. 0
     * means the kind's default (WEIR_XFORM_MEMBER_DEFAULT for gzip,
     * 1 MiB for zstd). Between 4 KiB and 64 MiB. */
    size_t member_size;
    /* gzip, zstd, gunzip, unzstd: another thread's loop (another
     * worker's) that compresses or decodes every other member (zstd:
     * frame) while this thread reads and does the rest; NULL: everything
     * on this thread. The helper touches no pool buffer; its loop must
     * keep running until the transform is destroyed and the tasks it
     * posted there have run. */
    struct weir_loop *helper;
    /* With a helper: a count the helper's owner keeps of its own work of
     * the same kind (its own streams with members). While it is nonzero
     * members stay on this thread: lending them would only queue them
     * behind that work. NULL: always lend. Read relaxed, once a member. */
    const _Atomic uint32_t *helper_busy;
    /* Output buffers one run may queue past a full readable side before
     * parking; 0 means WEIR_XFORM_BURST_DEFAULT. */
    uint32_t burst;
    /* Called when the transform parks (may be NULL). Not a place to call
     * weir_xform_resume: the core is in the middle of a write. */
    void (*on_stall)(void *ctx, struct weir_xform *x);
    void *stall_ctx;
};

#define WEIR_XFORM_MEMBER_DEFAULT (256u * 1024u)
#define WEIR_XFORM_BURST_DEFAULT  16u

/* Counters of one transform. */
struct weir_xform_stats {
    uint64_t in_bytes;  /* input consumed */
    uint64_t out_bytes; /* output handed to the readable side */
    uint64_t stalls;    /* times it parked (pool empty or no room) */
    uint64_t helped;    /* members (frames) made on the helper loop */
};

/*
 * Any thread. 0 when `spec` names a transform with a valid level; else
 * -EINVAL and one sentence in why (n bytes, may be 0), e.g. "gzip level
 * 12 is out of range 1-9". A spec is NAME or NAME:LEVEL.
 */
int weir_xform_check(const char *spec, char *why, size_t n);

/*
 * Any thread. Whether a transform of `spec` splits its work into members
 * (gzip, zstd, gunzip, unzstd) and so has a use for
 * weir_xform_options.helper; false for the other kinds and for a spec
 * weir_xform_check refuses. A caller that lends a thread to transforms
 * asks this rather than knowing the kinds.
 */
bool weir_xform_uses_helper(const char *spec);

/*
 * Creates the transform `spec` names. Allocates the transform and its two
 * sides; compressor state is allocated on the first chunk. Returns 0,
 * -EINVAL (bad spec or options, or no pool), -ENOMEM.
 */
int weir_xform_create(struct weir_xform **out, const char *spec,
                      const struct weir_xform_options *opts);

/* Frees the transform, its core transform and whatever it still holds.
 * Neither side may be locked by a running pipe. */
void weir_xform_destroy(struct weir_xform *x);

/* The core transform: pipe into it and read from it. Owned by x. */
struct weir_transform *weir_xform_transform(struct weir_xform *x);

/* The transform's name as given in the spec ("gzip"), and its level (0 for
 * transforms without one). */
const char *weir_xform_name(const struct weir_xform *x);
int weir_xform_level(const struct weir_xform *x);

/* Whether the transform is parked waiting for a buffer or for room. */
bool weir_xform_stalled(const struct weir_xform *x);

/*
 * Retries parked work. 0 when nothing is parked any more (the work
 * finished, or nothing was parked); WEIR_PENDING when it parked again;
 * -errno when the work finished with that error (the stream is errored
 * with it). The core's callbacks (the pipe's writes, a close) may run
 * inside.
 */
int weir_xform_resume(struct weir_xform *x);

/*
 * Pushes out what the transform holds back, for a live source that went
 * quiet (a followed file at its end): gzip ends its member early, zstd
 * ends its frame, and the partly filled output buffer is queued, so a
 * reader can decode everything written so far. Costs ratio if called
 * often; calling it when the source has been idle for a while is the
 * intent. Not from inside the core's callbacks. 0 when everything is out,
 * or (gzip or zstd with a helper) when what is out ends with a whole member and
 * the members still on the helper follow whole through
 * weir_xform_resume, without waiting for input: either way the next byte
 * out begins a member or frame;
 * -EBUSY while the transform is working on a chunk or parked (call again
 * after it finished); -ENOBUFS or -EAGAIN when output could not all be
 * placed (the rest goes out with the next chunk, or call again); the
 * transform's error once it failed.
 */
int weir_xform_sync(struct weir_xform *x);

/* The largest window unzstd decodes with, in bytes. */
#define WEIR_UNZSTD_WINDOW_MAX (8ull << 20)

/*
 * The error the transform failed with (0 if none) and, for corrupt input
 * (-EBADMSG), the offset of the input byte where it was found, counted from
 * the start of the stream: the number for "corrupt gzip input at byte N".
 * For a zstd frame refused for its window (-EMSGSIZE), *offset is the
 * window the frame asked for, in bytes (0 if its header was not read
 * whole).
 */
int weir_xform_error(const struct weir_xform *x, uint64_t *offset);

void weir_xform_stats(const struct weir_xform *x, struct weir_xform_stats *st);

#ifdef __cplusplus
}
#endif

#endif /* WEIR_XFORM_H */
