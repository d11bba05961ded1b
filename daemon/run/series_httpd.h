/*
 * series_httpd.h - an http-listen pipeline's numbers in the series
 * (/metrics): what its connections counted (struct http_counts), kept
 * by pipeline across reloads as series.c keeps the others.
 */
#ifndef WEIR_DAEMON_SERIES_HTTPD_H
#define WEIR_DAEMON_SERIES_HTTPD_H

#include <stdbool.h>
#include <stdint.h>

#include "httpd/http_conn.h"
#include "run/text.h"

struct httpd_num {
    bool any; /* the pipeline serves HTTP */
    uint64_t requests[6][3];
    uint64_t timeouts;
    uint64_t time[HTTP_TIME_BUCKETS];
    uint64_t time_us;
};

/* Adds what c counted (read relaxed). */
void httpd_num_add(struct httpd_num *h, const struct http_counts *c);
/* Adds b to a (totals into a scrape's snapshot). */
void httpd_num_merge(struct httpd_num *a, const struct httpd_num *b);
/* Every family, each with one pipeline's samples for those whose any is
 * set: names[i] and nums[i] for i < n. */
void httpd_put(struct text *t, const char *const *names,
               const struct httpd_num *const *nums, size_t n);

#endif
