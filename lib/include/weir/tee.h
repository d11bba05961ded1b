/*
 * weir/tee.h - one readable stream into N branches, each with its own
 * policy for when it is full.
 *
 * All functions: the stream's thread only (weir/stream_types.h).
 *
 * Why not the spec's tee (the "tee block policy" and "tee cancel reason"
 * departures of weir/stream_types.h): the WHATWG tee reads the source as
 * fast as the fastest branch asks, so a slow branch's queue grows without bound
 * (whatwg/streams #1233 and friends). Here each branch chooses:
 *   WEIR_TEE_BLOCK        (default) the slowest governs: the source is read
 *                         only when every live block branch has room
 *                         (desired size > 0) or a read waiting, so no block
 *                         branch's queue passes its high-water mark by more
 *                         than the one chunk that answers a waiting read;
 *   WEIR_TEE_DROP_NEWEST  a full branch skips the new chunk;
 *   WEIR_TEE_DROP_OLDEST  a full branch drops its oldest queued chunk to
 *                         make room for the new one;
 *   WEIR_TEE_DISCONNECT   a full branch errors with -ENOBUFS and leaves.
 * Chunks are shared, not copied: each branch that takes a chunk holds one
 * reference to its buffer. The source is cancelled only when every branch
 * has cancelled (or disconnected), with the last reason; that last
 * branch's cancel returns the source cancel's result. The tee watches its
 * source even while the block rule keeps it from reading: a source error
 * reaches every branch at once (dropping what they hold), a close once
 * the source's queue has been read.
 */
#ifndef WEIR_TEE_H
#define WEIR_TEE_H

#include "weir/readable.h"

#ifdef __cplusplus
extern "C" {
#endif

struct weir_tee;

enum weir_tee_policy {
    WEIR_TEE_BLOCK = 0,
    WEIR_TEE_DROP_NEWEST,
    WEIR_TEE_DROP_OLDEST,
    WEIR_TEE_DISCONNECT,
};

struct weir_tee_branch_options {
    struct weir_strategy strategy;
    enum weir_tee_policy policy;
    /* WEIR_TEE_DISCONNECT: told (may be NULL) when the branch is cut
     * loose, right after it errored; the branch's consumer may be blocked
     * on a peer that does not read, which this is the moment to cut. */
    void (*on_disconnect)(void *ctx);
    void *disconnect_ctx;
};

/* Per-branch counters. Every chunk the tee read from the source ends, for
 * each branch that was live, either delivered or dropped. */
struct weir_tee_stats {
    uint64_t delivered; /* queued to the branch and not dropped from it */
    uint64_t dropped;   /* skipped (newest) or evicted (oldest) */
    /* The same in bytes: delivered_bytes + dropped_bytes is the bytes the
     * tee read while the branch was live. */
    uint64_t delivered_bytes, dropped_bytes;
    bool disconnected;
};

/*
 * Tees `src` (locking it) into n >= 1 branches, made now in one
 * allocation with the tee. opts: n entries, or NULL
 * for the spec's branch defaults (count strategy, hwm 1) with the block
 * policy. A byte-stream source gives byte-stream branches. Branches drop
 * references on the source's thread slot. Returns 0, -EINVAL, -EBUSY when
 * src is locked, -ENOMEM.
 */
int weir_tee_create(struct weir_tee **out, struct weir_readable *src,
                    unsigned n, const struct weir_tee_branch_options *opts);

/* Called once when the source of a live tee ends: rc WEIR_DONE (closed)
 * or its error; the live branches have been closed or errored first. */
typedef void weir_tee_end_fn(void *ctx, int rc);

struct weir_tee_live_options {
    unsigned cap;            /* most branches at once; 0: no limit */
    weir_tee_end_fn *on_end; /* may be NULL */
    void *ctx;
    /* Read nothing until weir_tee_resume, so that the first branches are
     * all there before the first chunk (clients that waited for the
     * source, say). */
    bool paused;
};

/*
 * A live tee (a broadcast): starts with no branch and takes up to o->cap
 * of them. A branch is allocated when it is added and freed when it is
 * removed; a slot costs one pointer. It reads the source whenever no live
 * block branch is full, whether or not a branch asks: with no branch, or
 * only drop/disconnect branches that are full, what it reads is dropped,
 * since a broadcast keeps no backlog; a block branch still holds the
 * source back. Branches come and go with weir_tee_add_branch and
 * weir_tee_remove_branch; the source is never cancelled for want of
 * branches (stop it through its own endpoint). on_end is told when the
 * source ends. `o` NULL means all defaults (no cap, no on_end, not
 * paused). Returns 0, -EBUSY when src is locked, -ENOMEM.
 */
int weir_tee_create_live(struct weir_tee **out, struct weir_readable *src,
                         const struct weir_tee_live_options *o);

/* A live tee made paused starts reading; nothing for one that reads. */
void weir_tee_resume(struct weir_tee *t);

/*
 * Adds a branch (opt NULL: the spec's defaults, block) in the lowest free
 * slot and stores its index in *idx. The branch sees the chunks read from
 * now on, none before. Returns 0, -ENOSPC when every slot is taken,
 * -EPIPE when the source has ended (or, for a tee that is not live, was
 * cancelled because every branch had left), -ENOMEM.
 */
int weir_tee_add_branch(struct weir_tee *t,
                        const struct weir_tee_branch_options *opt,
                        unsigned *idx);

/*
 * Removes branch i: a branch still readable errors with -ECANCELED (its
 * reader sees it), its readable is freed, its slot and counters are
 * reset for a later weir_tee_add_branch. The source goes on while other
 * branches remain, or always for a live tee. Read weir_tee_stats first if
 * they matter. Safe inside the branches' callbacks: there the branch is
 * only marked, and freed when the tee's callback returns (its slot is
 * taken until then).
 */
void weir_tee_remove_branch(struct weir_tee *t, unsigned i);

/* The branches added and not removed. */
unsigned weir_tee_branches(const struct weir_tee *t);

/* Branch i (< n): a readable stream owned by the tee; NULL for a slot
 * with no branch. */
struct weir_readable *weir_tee_branch(struct weir_tee *t, unsigned i);

/* Counters of branch i (zeros for a slot with no branch); and the number
 * of chunks read from the source. */
void weir_tee_stats(const struct weir_tee *t, unsigned i,
                    struct weir_tee_stats *st);
uint64_t weir_tee_produced(const struct weir_tee *t);
uint64_t weir_tee_produced_bytes(const struct weir_tee *t);

/* Cuts branch i loose now, as the disconnect policy does when its queue
 * is full: the branch errors with -ENOBUFS, its stats say disconnected,
 * its on_disconnect runs, and the tee reads again if it was what held
 * the tee back. For a caller that decides when (a branch with the block
 * policy that has held the others back for too long). 0, -EINVAL for no
 * such branch, -EALREADY when it has left already. */
int weir_tee_disconnect_branch(struct weir_tee *t, unsigned i);

/* Frees the tee and its branches and unlocks the source (which stays the
 * caller's). Safe inside the branches' callbacks (marked and reaped). */
void weir_tee_destroy(struct weir_tee *t);

#ifdef __cplusplus
}
#endif

#endif /* WEIR_TEE_H */
