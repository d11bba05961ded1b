/*
 * kafka_impl.h - what the files of the kafka sink share. Private to
 * lib/kafka.
 *
 *   kafka_records.c   the sink's input cut into records at '\n'; the
 *                     ledger of records out, whose done prefix is what
 *                     the sink acknowledges
 *   kafka_conf.c      librdkafka's configuration from the options: weir's
 *                     settings, then the operator's
 *   endpoint_kafka.c  the kind: its stream, librdkafka's queue on the
 *                     loop, delivery reports, the close
 */
#ifndef WEIR_KAFKA_IMPL_H
#define WEIR_KAFKA_IMPL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <librdkafka/rdkafka.h>

#include "../io/endpoint_base.h"

/* ---- the cutter (kafka_records.c) ---- */

struct kcut {
    uint8_t *part; /* a line without its newline yet, or a held record */
    size_t len, cap;
    size_t max; /* a longer line is cut into records of max bytes */
    /* The record fn refused (librdkafka's queue was full), kept in part
     * whole until weir__kcut_retry takes it. */
    bool held;
    uint64_t held_in_len;
};

/* A record p..n standing for in_len input bytes (its newline included).
 * 0 to go on; anything else stops the feed, which returns it. */
typedef int (*kcut_fn)(void *arg, const uint8_t *p, size_t n, uint64_t in_len);

/* Feeds bytes; *used says how many were taken. When fn refuses a record
 * the feed stops there with fn's error: the record is held (its bytes
 * are taken), the rest is not. Never called while a record is held. */
int weir__kcut_feed(struct kcut *c, const uint8_t *p, size_t n, kcut_fn fn,
                    void *arg, size_t *used);
/* Offers the held record to fn again: 0 when it was taken (or none was
 * held), else fn's error and it stays held. */
int weir__kcut_retry(struct kcut *c, kcut_fn fn, void *arg);
/* The end of the input: a last line without its newline is a record. */
int weir__kcut_finish(struct kcut *c, kcut_fn fn, void *arg);
void weir__kcut_free(struct kcut *c);

/* ---- the ledger (kafka_records.c) ---- */

/*
 * Records in input order, by sequence number: each the input offset just
 * past it and whether its delivery was reported. Reports come in any
 * order (partitions are independent); the done prefix is dropped as it
 * grows, and the last offset dropped is what the sink acknowledged.
 */
struct kledger {
    struct krec {
        uint64_t in_end;
        bool done;
    } * v;
    size_t cap;          /* a power of two */
    uint64_t head, tail; /* sequence numbers: [head, tail) are out */
    uint64_t acked;      /* input offset past the done prefix */
};

/* Appends a record ending at in_end; *seq is its number. */
int weir__kl_push(struct kledger *l, uint64_t in_end, bool done, uint64_t *seq);
/* Marks seq done; returns the input bytes the done prefix grew by. */
uint64_t weir__kl_done(struct kledger *l, uint64_t seq);
static inline uint64_t kl_out(const struct kledger *l)
{
    return l->tail - l->head;
}
void weir__kl_free(struct kledger *l);

/* s as a JSON string's contents (no quotes) into buf (cap bytes, at
 * least 7); returns the length written, stopping before a character
 * that does not fit. */
size_t weir__kafka_json_escape(char *buf, size_t cap, const uint8_t *s,
                               size_t n);

/* ---- the configuration (kafka_conf.c) ---- */

/* A configuration for o: weir's settings (idempotence, acks=all, no
 * delivery timeout, the queue inside hwm), then o's. NULL, with
 * librdkafka's sentence in err, when it refuses a setting. */
rd_kafka_conf_t *weir__kafka_conf(const struct weir_kafka_sink_options *o,
                                  uint64_t hwm, char *err, size_t errlen);

#endif
