/*
 * endpoint_ledger.h - for sinks that send records and hear of each one's
 * fate in any order (a Kafka producer's delivery reports, JetStream's
 * acknowledgements): the stream's bytes cut into records at '\n', and
 * the ledger of the records out, whose done prefix is what the sink
 * acknowledges. Private to libweir.
 */
#ifndef WEIR_IO_ENDPOINT_LEDGER_H
#define WEIR_IO_ENDPOINT_LEDGER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* ---- the cutter ---- */

struct lcut {
    uint8_t *part; /* a line without its newline yet, or a held record */
    size_t len, cap;
    size_t max; /* a longer line is cut into records of max bytes */
    /* The record fn refused (its peer's queue was full), kept in part
     * whole until weir__lcut_retry takes it. */
    bool held;
    uint64_t held_in_len;
};

/* A record p..n standing for in_len input bytes (its newline included).
 * 0 to go on; anything else stops the feed, which returns it. */
typedef int (*lcut_fn)(void *arg, const uint8_t *p, size_t n, uint64_t in_len);

/* Feeds bytes; *used says how many were taken. When fn refuses a record
 * the feed stops there with fn's error: the record is held (its bytes
 * are taken), the rest is not. Never called while a record is held. */
int weir__lcut_feed(struct lcut *c, const uint8_t *p, size_t n, lcut_fn fn,
                    void *arg, size_t *used);
/* Offers the held record to fn again: 0 when it was taken (or none was
 * held), else fn's error and it stays held. */
int weir__lcut_retry(struct lcut *c, lcut_fn fn, void *arg);
/* The end of the input: a last line without its newline is a record. */
int weir__lcut_finish(struct lcut *c, lcut_fn fn, void *arg);
void weir__lcut_free(struct lcut *c);

/* ---- the ledger ---- */

/*
 * Records in input order, by sequence number: each the input offset just
 * past it and whether its delivery was reported. Reports come in any
 * order (partitions are independent); the done prefix is dropped as it
 * grows, and the last offset dropped is what the sink acknowledged.
 */
struct ledger {
    struct lrec {
        uint64_t in_end;
        bool done;
    } * v;
    size_t cap;          /* a power of two */
    uint64_t head, tail; /* sequence numbers: [head, tail) are out */
    uint64_t acked;      /* input offset past the done prefix */
};

/* Appends a record ending at in_end; *seq is its number. */
int weir__ledger_push(struct ledger *l, uint64_t in_end, bool done,
                      uint64_t *seq);
/* The record out that holds input offset off: true, with its number,
 * when one not yet done does. */
bool weir__ledger_find(const struct ledger *l, uint64_t off, uint64_t *seq);
/* Marks seq done; returns the input bytes the done prefix grew by. */
uint64_t weir__ledger_done(struct ledger *l, uint64_t seq);
static inline uint64_t ledger_out(const struct ledger *l)
{
    return l->tail - l->head;
}
void weir__ledger_free(struct ledger *l);

/* s as a JSON string's contents (no quotes) into buf (cap bytes, at
 * least 7); returns the length written, stopping before a character
 * that does not fit. */
size_t weir__json_escape_to(char *buf, size_t cap, const uint8_t *s, size_t n);

#endif
