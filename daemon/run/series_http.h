/*
 * series_http.h - an http sink's numbers in the series (/metrics): what
 * its endpoint counted (struct weir_http_counters), summed over the
 * sink's streams, the gone ones and the live ones, as series.c sums the
 * other numbers of a sink.
 */
#ifndef WEIR_DAEMON_SERIES_HTTP_H
#define WEIR_DAEMON_SERIES_HTTP_H

#include <stdbool.h>
#include <stdint.h>

#include "run/text.h"
#include "weir/endpoint.h"

enum http_num_field {
    HN_REQUESTS,
    HN_BATCHES,
    HN_RECORDS,
    HN_BYTES,
    HN_RETRY_CONNECT,
    HN_RETRY_TIMEOUT,
    HN_RETRY_429,
    HN_RETRY_5XX,
    HN_DEAD_LETTER,
    HN_IN_FLIGHT, /* a gauge: live streams only */
    HN_FIELDS,
};

struct http_num {
    bool is_http;
    uint64_t v[HN_FIELDS];
    uint64_t answer[WEIR_HTTP_ANSWER_BUCKETS];
    uint64_t answer_us;
};

/* Adds what c counted (read relaxed); live: a running stream's, whose
 * requests in flight count. */
void http_num_add(struct http_num *h, const struct weir_http_counters *c,
                  bool live);
/* Adds b's counters to a (totals into a scrape's snapshot). */
void http_num_merge(struct http_num *a, const struct http_num *b);

/* One sink's samples of every http family, for the family `k` (0 ..
 * http_families() - 1): the document lists a family's samples together.
 * label(t, s) writes a label value. */
unsigned http_families(void);
void http_family_head(struct text *t, unsigned k);
void http_family_put(struct text *t, unsigned k, const struct http_num *h,
                     const char *pl, const char *sink);

#endif
