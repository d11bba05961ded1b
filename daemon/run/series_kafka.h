/*
 * series_kafka.h - a kafka sink's numbers in the series (/metrics) and on
 * the status board: what its endpoint counted (struct
 * weir_kafka_counters), summed over the sink's streams as series.c sums
 * the other numbers of a sink.
 */
#ifndef WEIR_DAEMON_SERIES_KAFKA_H
#define WEIR_DAEMON_SERIES_KAFKA_H

#include <stdbool.h>
#include <stdint.h>

#include "run/text.h"
#include "weir/endpoint.h"

enum kafka_num_field {
    KN_RECORDS,
    KN_BYTES,
    KN_RETRIES,
    KN_ERR_TRANSPORT,
    KN_ERR_TIMEOUT,
    KN_ERR_REJECTED,
    KN_ERR_OTHER,
    KN_IN_FLIGHT, /* a gauge: live streams only */
    KN_FIELDS,
};

struct kafka_num {
    bool is_kafka;
    uint64_t v[KN_FIELDS];
};

/* Adds what c counted (read relaxed); live: a running stream's, whose
 * records in flight count. */
void kafka_num_add(struct kafka_num *k, const struct weir_kafka_counters *c,
                   bool live);
void kafka_num_merge(struct kafka_num *a, const struct kafka_num *b);

/* The families of every kafka sink's samples, each family's together. */
unsigned kafka_families(void);
void kafka_family_head(struct text *t, unsigned f);
void kafka_family_put(struct text *t, unsigned f, const struct kafka_num *k,
                      const char *pl, const char *sink);
/* ,"kafka":{...} for `weir status --json`. */
void kafka_json(struct text *t, const struct kafka_num *k);

#endif
