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
    JN_DEAD_LETTER,
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

/* A jetstream source's numbers (struct weir_jetstream_source_counters),
 * by pipeline. */
enum jss_num_field {
    JSS_RECORDS,
    JSS_BYTES,
    JSS_ACKED,
    JSS_REDELIVERED,
    JSS_ERRORS,
    JSS_UNACKED, /* a gauge: live streams only */
    JSS_FIELDS,
};

struct jss_num {
    bool any; /* the pipeline's source is a jetstream consumer */
    uint64_t v[JSS_FIELDS];
};

void jss_num_add(struct jss_num *j,
                 const struct weir_jetstream_source_counters *c, bool live);
void jss_num_merge(struct jss_num *a, const struct jss_num *b);
unsigned jss_families(void);
void jss_family_head(struct text *t, unsigned f);
void jss_family_put(struct text *t, unsigned f, const struct jss_num *j,
                    const char *pl);
/* "jetstream_source":{...}, with its comma, or nothing; and the line of
 * the text board. */
void jss_json(struct text *t, const struct jss_num *j);
void jss_text(struct text *t, const struct jss_num *j, const char *pl);

#endif
