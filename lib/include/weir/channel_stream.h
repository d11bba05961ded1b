/*
 * weir/channel_stream.h - a channel as a pair of core streams: a writable
 * on the producer's loop and a readable on the consumer's, so a pipeline
 * that spans two workers is two core pipes joined by a channel.
 *
 * weir_channel_pair runs on any thread and makes the channel and both ends;
 * each end is then opened, used and destroyed on its own loop's thread
 * only (hand it over with weir_loop_post). Closing or aborting the
 * writable closes the channel (aborting with the reason as the error);
 * the readable closes after the last chunk, errors with the producer's
 * error, and cancelling it cancels the channel, which errors the writable
 * with -ECANCELED. Chunk references move through unchanged; the consumer
 * drops them on its own slot, which sends the buffers home.
 */
#ifndef WEIR_CHANNEL_STREAM_H
#define WEIR_CHANNEL_STREAM_H

#include "weir/channel.h"
#include "weir/readable.h"
#include "weir/writable.h"

#ifdef __cplusplus
extern "C" {
#endif

struct weir_channel_tx;
struct weir_channel_rx;

/* Any thread. hwm: the channel's high-water mark in bytes (0: 1 MiB).
 * Returns 0, -EINVAL, -ENOMEM. */
int weir_channel_pair(struct weir_channel_tx **tx, struct weir_channel_rx **rx,
                      struct weir_loop *producer, struct weir_loop *consumer,
                      uint64_t hwm);

/* Producer. Creates the writable end (once). 0 or -ENOMEM. */
int weir_channel_tx_open(struct weir_channel_tx *tx,
                         struct weir_writable **out);

/* Consumer. Creates the readable end (once). 0 or -ENOMEM. */
int weir_channel_rx_open(struct weir_channel_rx *rx,
                         struct weir_readable **out);

/* Producer. Destroys the writable (not locked by a pipe any more) and,
 * unless it closed or aborted, closes the channel with -ECANCELED. */
void weir_channel_tx_destroy(struct weir_channel_tx *tx);

/* Consumer. Destroys the readable (not locked any more) and cancels the
 * channel, its last call. */
void weir_channel_rx_destroy(struct weir_channel_rx *rx);

#ifdef __cplusplus
}
#endif

#endif /* WEIR_CHANNEL_STREAM_H */
