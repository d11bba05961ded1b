/*
 * series_jetstream.h - a jetstream sink's numbers in the series (/metrics) and
 * on the status board: what its endpoint counted (struct
 * weir_jetstream_counters), summed over the sink's streams as series.c sums
 * the other numbers of a sink.
 */
#ifndef WEIR_DAEMON_SERIES_JETSTREAM_H
#define WEIR_DAEMON_SERIES_JETSTREAM_H

#include <stdbool.h>
#include <stdint.h>

#include "run/text.h"
#include "weir/endpoint.h"

enum js_num_field {
    JN_RECORDS,
    JN_BYTES,
    JN_DUPLICATES,
    JN_RETRIES,
    JN_ERR_TIMEOUT,
    JN_ERR_NO_RESPONDERS,
    JN_ERR_OTHER,
    JN_IN_FLIGHT, /* a gauge: live streams only */
    JN_FIELDS,
};

struct js_num {
    bool is_js;
    uint64_t v[JN_FIELDS];
};

/* Adds what c counted (read relaxed); live: a running stream's, whose
 * records in flight count. */
void js_num_add(struct js_num *j, const struct weir_jetstream_counters *c,
                bool live);
void js_num_merge(struct js_num *a, const struct js_num *b);

/* The families of every jetstream sink's samples, each family's together. */
unsigned js_families(void);
void js_family_head(struct text *t, unsigned f);
void js_family_put(struct text *t, unsigned f, const struct js_num *j,
                   const char *pl, const char *sink);
/* ,"jetstream":{...} for `weir status --json`. */
void js_json(struct text *t, const struct js_num *j);

#endif
