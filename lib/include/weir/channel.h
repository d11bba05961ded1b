/*
 * weir/channel.h - a one-way channel of chunks between two stages on two
 * loops (usually two workers).
 *
 * Locking rule, stated once: one producer loop and one consumer loop. The
 * functions marked "producer" run on the producer loop's thread, those
 * marked "consumer" on the consumer loop's thread; the two run concurrently.
 *
 * Forward: batches of struct weir_chunk, published with one release store
 * per batch (lib/core's weir_spsc over a chunk array). A chunk's reference
 * moves with it: the consumer drops it with weir_chunk_unref and its own
 * slot, which sends the buffer home to the producer's pool.
 *
 * Backward: credit, as a byte count. The consumer publishes how many bytes
 * it has taken; the producer knows how many it has put in, so
 * queued = produced - consumed and desired = hwm - queued. The producer
 * asks weir_channel_ready before producing more and stops when it says no.
 *
 * Wakeups. A side that finds nothing to do (the consumer an empty channel,
 * the producer no credit) announces it on the channel and re-checks; the
 * other side, after publishing, notifies only a side that announced, by
 * posting a task to that side's loop (which rings that loop's doorbell only
 * if the loop sleeps). The notified side's callback runs on its own loop.
 *
 * End: close (with or without an error) travels forward, cancel travels
 * back. Each side's last call is its close or cancel; the channel frees
 * itself when both sides are done and no notification is in flight.
 */
#ifndef WEIR_CHANNEL_H
#define WEIR_CHANNEL_H

#include <stdint.h>

#include "weir/loop.h"
#include "weir/pool.h"

#ifdef __cplusplus
extern "C" {
#endif

struct weir_channel;

/* Runs on the side's own loop: "try again" (data, end, credit, cancel). */
typedef void (*weir_channel_fn)(struct weir_channel *ch, void *arg);

struct weir_channel_options {
    uint32_t capacity;           /* chunk slots, a power of two; 0: 256 */
    uint64_t hwm;                /* high-water mark in bytes; 0: 1 MiB */
    weir_channel_fn on_readable; /* consumer's callback */
    void *readable_arg;
    weir_channel_fn on_writable; /* producer's callback */
    void *writable_arg;
};

/*
 * Any thread, before either side uses the channel (hand it to the sides
 * with weir_loop_post, which orders the creation before their use).
 * Returns 0, -EINVAL (capacity not a power of two, no callbacks), -ENOMEM.
 */
int weir_channel_create(struct weir_channel **out,
                        const struct weir_channel_options *opts,
                        struct weir_loop *producer, struct weir_loop *consumer);

/* Producer. hwm - queued; <= 0 means stop producing. */
int64_t weir_channel_desired(struct weir_channel *ch);

/*
 * Producer. 1: produce (credit and a free slot are there). 0: stop; the
 * consumer has been told, and on_writable runs when credit returns.
 * -ECANCELED: the consumer canceled; close the channel.
 */
int weir_channel_ready(struct weir_channel *ch);

/*
 * Producer. Enqueues as many of chunks[0..n) as there are free slots, in
 * order, with one release store; their references move into the channel.
 * Credit is advisory here, as in WHATWG streams: a push past the high-water
 * mark is accepted, and weir_channel_ready then says stop. Returns how many
 * were taken (0 when the ring is full), -ECANCELED, or -ENOMEM when the
 * ring's slots, allocated by the first push, could not be (none taken).
 */
int weir_channel_push(struct weir_channel *ch, const struct weir_chunk *c,
                      uint32_t n);

/*
 * Producer, its last call. err == 0: end of stream, delivered after every
 * chunk pushed before it. err < 0: the stream failed; the consumer gets err
 * on its next pop and the chunks still queued are dropped.
 */
void weir_channel_close(struct weir_channel *ch, int err);

/*
 * Consumer. Takes up to max chunks (their references move to the caller),
 * returning the credit for their bytes. Returns how many (> 0); 0 when
 * empty, and then on_readable runs when something arrives; -EPIPE at the
 * end of the stream (closed, all taken); or the producer's error.
 */
int weir_channel_pop(struct weir_channel *ch, struct weir_chunk *out,
                     uint32_t max);

/*
 * Consumer, its last call (also after -EPIPE or an error). Drops what is
 * queued; if the producer has not closed, its ready and push return
 * -ECANCELED from now on, and its on_writable runs.
 */
void weir_channel_cancel(struct weir_channel *ch);

struct weir_channel_stats {
    uint64_t produced;       /* bytes pushed */
    uint64_t consumed;       /* bytes popped (credit returned) */
    uint64_t queued;         /* produced - consumed */
    uint64_t producer_waits; /* times ready() said stop: backpressure */
    uint64_t consumer_waits; /* times pop() found it empty */
};

/* Either side's thread, while it has not closed or canceled. A snapshot:
 * the other side's counters may lag by one batch. */
void weir_channel_stats(struct weir_channel *ch, struct weir_channel_stats *st);

#ifdef __cplusplus
}
#endif

#endif /* WEIR_CHANNEL_H */
