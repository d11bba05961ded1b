/*
 * weir/internal/readable.h - the layout of a readable stream and the
 * helpers of the inline fast paths of weir/readable.h (enqueue, read and
 * the iterator loop): their out-of-line halves, the cold wrappers that
 * reach those, and the shared steps of the inline bodies.
 * Not API: included by weir/readable.h, after the types it declares,
 * never by a program.
 */
#ifndef WEIR_INTERNAL_READABLE_H
#define WEIR_INTERNAL_READABLE_H

#ifndef WEIR_READABLE_H
#error "weir/internal/readable.h is included by weir/readable.h only"
#endif

#include "weir/internal/stream_types.h"

#ifdef __cplusplus
extern "C" {
#endif

/*
 * Layout of a readable stream, public only for the inline fast paths of
 * weir/readable.h (see weir/internal/stream_types.h): not API.
 */
enum { WEIR_RS_READABLE_, WEIR_RS_CLOSED_, WEIR_RS_ERRORED_ };

/* pull_flags bits. */
#define WEIR_RS_NO_PULL_ 1u
#define WEIR_RS_PULLING_ 2u

/* A slot of the chunk queue: a chunk, padded to a power of two so that
 * finding a slot is a shift, not a multiply by three. */
struct weir_rs_slot_ {
    struct weir_chunk chunk;
    uint64_t pad_;
};

/* A read request: a default read (buf NULL) or a BYOB read. */
struct weir_read_req_ {
    weir_read_cb cb;
    void *ctx;
    uint8_t *buf;
    size_t len, min, filled;
    struct weir_chunk got; /* the answer of a synchronous read */
};

struct weir_readable {
    struct weir_q queue; /* struct weir_rs_slot_ */
    uint32_t qmask;      /* queue.cap - 1, kept for the hot paths */
    size_t queued_bytes; /* weight of the queue, when weighed in bytes; a
                            count is the queue's length, tail - head */
    int64_t hwm;         /* INT64_MAX for WEIR_HWM_UNLIMITED: never reached,
                            so desired size needs no special case */
    /* The weight below which a change of the queue needs a look: hwm
     * while can_pull (the source is asked for more), 1 while closing (the
     * read that empties the queue closes the stream), 0 otherwise. One
     * compare on the hot paths instead of the flags and the desired size. */
    uint64_t pull_below;
    /* An enqueue that found n chunks queued asks for more when n is
     * below this: hwm - 1 for a count while can_pull (n + 1 < hwm, one
     * compare of the length the enqueue has at hand; -1 for hwm 0), 0
     * before, the maximum when weighed in bytes (the enqueue then does
     * the sums, and compares them with pull_below). Signed, so that hwm
     * 0 needs no case of its own. */
    int64_t enq_below;
    struct weir_q reads; /* parked struct weir_read_req_ */
    /* The pull's state, written as one word when an inline pull starts
     * and tested as one when it ends (pull_pad_ is only ever zero).
     * pull_flags holds WEIR_RS_NO_PULL_ (not started, not readable,
     * closing, or the source has no pull: the part of the spec's
     * ShouldCallPull that changes rarely, inverted) and WEIR_RS_PULLING_
     * (the spec's pulling), so that "may pull now" is pull_flags == 0
     * and the whole word of an idle stream that may pull is 0: an inline
     * pull ends by subtracting what it stored, and the flags of that
     * subtraction say whether anything happened meanwhile. */
    union {
        struct {
            uint8_t pull_flags;
            bool in_pull, pull_again, pull_pad_;
        };
        uint32_t pull_word_;
    };
    bool doomed;
    /* What sends an enqueue out of line (parked: reads is not empty),
     * as one word; and room, which the inline enqueue tests instead:
     * the queue's capacity or 0 while that word is 0, and 0 whenever it
     * is not. A change that sets a flag clears room with it; one that
     * clears a flag may leave room at 0 (the out-of-line enqueue puts it
     * back when it queues), which costs that one enqueue. A read that
     * asks the source sets sync_want and clears room with one store of
     * enqueue_word_. */
    union {
        struct {
            union {
                struct {
                    bool close_requested, sync_want, parked;
                    uint8_t state;
                };
                uint32_t enqueue_stop_;
            };
            uint32_t room;
        };
        uint64_t enqueue_word_;
    };
    bool weigh_bytes, byte_stream;
    /* The read in progress inside a read call while it asks the source: a
     * request that has not parked (and may never need to). */
    struct weir_read_req_ sync_req;
    const struct weir_source_ops *ops;
    /* ops->pull, set once the stream can pull: the inline pulls call it
     * with one load fewer. */
    int (*pull)(struct weir_readable *rs, void *ctx);
    void *ctx;
    struct weir_watch watch;
    int err;
    unsigned slot;
    uint32_t busy; /* calls into the stream in progress (mark and reap) */
    bool started, locked;
    /* The chunk queue's first storage: enough for the spec's default hwm
     * of 1 plus the chunk a pull may overshoot by, with no allocation. */
    struct weir_rs_slot_ small[2];
};

/* Out-of-line halves of the inline functions of weir/readable.h. */
void weir_readable_pulled_(struct weir_readable *rs, int rc);
void weir_readable_pulled_0_(struct weir_readable *rs);
int weir_readable_enqueue_slow_(struct weir_readable *rs, struct weir_buf *buf,
                                uint8_t *data, uint32_t len);
void weir_readable_enqueue_pull_(struct weir_readable *rs);
int weir_reader_read_empty_(struct weir_readable *rs, struct weir_chunk *out,
                            weir_read_cb cb, void *ctx);
void weir_readable_read_below_(struct weir_readable *rs);

/*
 * The inline fast paths reach their out-of-line halves through
 * these cold wrappers. A call marked cold puts its path out of the way,
 * and lets GCC keep the caller's values in call-clobbered registers,
 * saved around the rare call, rather than in callee-saved ones that a
 * caller's function saves and restores on every entry (a source whose
 * pull loops over enqueues pays that once per pull). The halves
 * themselves stay ordinary functions: for some callers they are the
 * common path.
 */
static inline __attribute__((cold)) void
weir_readable_pulled_cold_(struct weir_readable *rs, int rc)
{
    weir_readable_pulled_(rs, rc);
}

static inline __attribute__((cold)) void
weir_readable_pulled_0_cold_(struct weir_readable *rs)
{
    weir_readable_pulled_0_(rs);
}

static inline __attribute__((cold)) int
weir_readable_enqueue_slow_cold_(struct weir_readable *rs, struct weir_buf *buf,
                                 uint8_t *data, uint32_t len)
{
    return weir_readable_enqueue_slow_(rs, buf, data, len);
}

static inline __attribute__((cold)) void
weir_readable_enqueue_pull_cold_(struct weir_readable *rs)
{
    weir_readable_enqueue_pull_(rs);
}

/* The queue's total weight. */
static inline size_t weir_readable_size_(const struct weir_readable *rs)
{
    return rs->weigh_bytes ? rs->queued_bytes
                           : (size_t)(rs->queue.tail - rs->queue.head);
}

static inline struct weir_chunk *
weir_readable_slot_(const struct weir_readable *rs, uint32_t i)
{
    return &((struct weir_rs_slot_ *)rs->queue.slots + (i & rs->qmask))->chunk;
}

/*
 * Chunks are copied field by field on the hot paths, and kept that way: a
 * chunk enqueued moments ago is still in the store buffer as separate
 * 8-byte stores, and a 16-byte load spanning two of them (what the
 * compiler makes of a struct copy) cannot be forwarded and waits for them
 * to retire, a dozen cycles per read. The empty asm makes the pointers
 * pass through general registers, so the loads stay 8 bytes wide.
 */
static inline void weir_chunk_copy_(struct weir_chunk *to,
                                    const struct weir_chunk *from)
{
    struct weir_buf *buf = from->buf;
    uint8_t *data = from->data;
    uint32_t len = from->len;

    __asm__("" : "+r"(buf), "+r"(data));
    to->buf = buf;
    to->data = data;
    to->len = len;
}

/* Whether a change of the queue needs a look (see pull_below). */
static inline bool weir_readable_below_(const struct weir_readable *rs)
{
    return (uint64_t)weir_readable_size_(rs) < rs->pull_below;
}

/* What pull_word_ holds with these flags and in_pull, nothing else set
 * (a constant once inlined). */
static inline uint32_t weir_rs_pull_word_(unsigned flags, bool in_pull)
{
    union {
        struct {
            uint8_t flags;
            bool in_pull, pull_again, pad;
        } b;
        uint32_t w;
    } u = {.b = {(uint8_t)flags, in_pull, false, false}};

    return u.w;
}

/* An inline pull; the caller found pull_flags 0 (may pull, no pull
 * running). */
static inline void weir_readable_pull_inline_(struct weir_readable *rs)
{
    const uint32_t running = weir_rs_pull_word_(WEIR_RS_PULLING_, true);
    int rc;

    /* One pull, inline; anything but "done, nothing more asked, nothing
     * changed" (pending, error, pull-again, destroyed meanwhile: destroy
     * sets pull_again too; closed or errored meanwhile: can_pull gone)
     * continues out of line.
     * in_pull keeps the stream alive across the callback: plain stores,
     * where a busy count would chain a load and a store on each side. */
    rs->pull_word_ = running;
    rc = rs->pull(rs, rs->ctx);
    /* Two calls, so that the common path need not move rc into place
     * for one of them. Subtracting `running` leaves the idle word, 0,
     * exactly when nothing changed; otherwise weir_readable_pulled_0_
     * adds it back. */
    if (rc != 0)
        weir_readable_pulled_cold_(rs, rc);
    else if ((rs->pull_word_ -= running) != 0)
        weir_readable_pulled_0_cold_(rs);
}

/* weir_reader_read's body; `whole` copies the chunk as one block, for a
 * caller that passes it on by value (the core's pipe, tee and iterator):
 * GCC copies by-value arguments as blocks, which the store buffer can only
 * forward from block stores. */
static inline __attribute__((always_inline)) int
weir_reader_read_as_(struct weir_reader *r, struct weir_chunk *out,
                     weir_read_cb cb, void *ctx, bool whole)
{
    struct weir_readable *rs = r->stream;

    if (rs && rs->queue.tail != rs->queue.head) {
        struct weir_chunk *slot = weir_readable_slot_(rs, rs->queue.head++);

        if (whole)
            *out = *slot;
        else
            weir_chunk_copy_(out, slot);
        if (rs->weigh_bytes)
            rs->queued_bytes -= out->len;
        /* A queued chunk means no read waits, so ShouldCallPull reduces
         * to can_pull and a positive desired size. */
        /* Said to be rare so that GCC lays the loop of a caller reading
         * from a full queue out in one piece (the branch for the pull is
         * taken instead). */
        if (__builtin_expect(weir_readable_below_(rs), 0)) {
            if (rs->pull_flags == 0)
                weir_readable_pull_inline_(rs);
            else
                weir_readable_read_below_(rs);
        }
        return 0;
    } else {
        /* The slow path answers through a chunk of its own, so that the
         * caller's need not live in memory for its sake (a loop's chunk
         * can then stay in registers). */
        struct weir_chunk got;
        int rc = weir_reader_read_empty_(rs, &got, cb, ctx);

        if (rc == 0)
            weir_chunk_copy_(out, &got);
        return rc;
    }
}

/* Out-of-line halves of the iterator loop (weir_iter_loop). */
void weir_iter_read_cb_(void *ctx, int rc, struct weir_chunk chunk);
int weir_iter_end_(struct weir_iter *it, int rc);
int weir_iter_stop_(struct weir_iter *it);

/* The loop of weir_iter_loop; `each` and `ctx` are its own, kept apart
 * from the iterator so that they stay in registers. */
static inline __attribute__((always_inline)) int
weir_iter_loop_(struct weir_iter *it, weir_iter_each_fn each, void *ctx)
{
    struct weir_chunk chunk;
    int rc;

    while ((rc = weir_reader_read_as_(&it->reader, &chunk, weir_iter_read_cb_,
                                      it, false)) == 0) {
        if (each(ctx, chunk) != 0)
            return weir_iter_stop_(it);
    }
    if (rc == WEIR_PENDING)
        return rc;
    return weir_iter_end_(it, rc);
}

#ifdef __cplusplus
}
#endif

#endif /* WEIR_INTERNAL_READABLE_H */
