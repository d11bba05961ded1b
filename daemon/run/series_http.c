/*
 * series_http.c - see series_http.h.
 */
#include "run/series_http.h"

static uint64_t get(const _Atomic uint64_t *c)
{
    /* Relaxed: statistics; they order nothing. */
    return atomic_load_explicit(c, memory_order_relaxed);
}

void http_num_add(struct http_num *h, const struct weir_http_counters *c,
                  bool live)
{
    h->is_http = true;
    h->v[HN_REQUESTS] += get(&c->requests);
    h->v[HN_BATCHES] += get(&c->batches);
    h->v[HN_RECORDS] += get(&c->records);
    h->v[HN_BYTES] += get(&c->bytes);
    h->v[HN_RETRY_CONNECT] += get(&c->retry_connect);
    h->v[HN_RETRY_TIMEOUT] += get(&c->retry_timeout);
    h->v[HN_RETRY_429] += get(&c->retry_429);
    h->v[HN_RETRY_5XX] += get(&c->retry_5xx);
    h->v[HN_DEAD_LETTER] += get(&c->dead_letter);
    if (live)
        h->v[HN_IN_FLIGHT] += get(&c->in_flight);
    for (int i = 0; i < WEIR_HTTP_ANSWER_BUCKETS; i++)
        h->answer[i] += get(&c->answer[i]);
    h->answer_us += get(&c->answer_us);
}

void http_num_merge(struct http_num *a, const struct http_num *b)
{
    a->is_http |= b->is_http;
    for (int i = 0; i < HN_FIELDS; i++)
        a->v[i] += b->v[i];
    for (int i = 0; i < WEIR_HTTP_ANSWER_BUCKETS; i++)
        a->answer[i] += b->answer[i];
    a->answer_us += b->answer_us;
}

static const struct {
    const char *name, *type, *help;
    int field; /* -1: the retries, -2: the histogram */
} fams[] = {
    {"weir_http_requests_total", "counter", "Requests the http sink sent.",
     HN_REQUESTS},
    {"weir_http_batches_acked_total", "counter",
     "Batches the collector answered 2xx (or refused for good).", HN_BATCHES},
    {"weir_http_records_acked_total", "counter",
     "Records the collector answered 2xx.", HN_RECORDS},
    {"weir_http_body_bytes_acked_total", "counter",
     "Body bytes (as sent, compressed) of the requests answered 2xx.",
     HN_BYTES},
    {"weir_http_retries_total", "counter",
     "Requests sent again, by why: connect (no answer), timeout (and 408), "
     "429, 5xx.",
     -1},
    {"weir_http_dead_letter_records_total", "counter",
     "Records the collector refused for good (a 4xx other than 408 and "
     "429).",
     HN_DEAD_LETTER},
    {"weir_http_in_flight", "gauge", "Requests out now.", HN_IN_FLIGHT},
    {"weir_http_answer_seconds", "histogram",
     "How long the collector took to answer a request.", -2},
};

#define NFAMS (sizeof(fams) / sizeof(fams[0]))

unsigned http_families(void)
{
    return NFAMS;
}

void http_family_head(struct text *t, unsigned k)
{
    text_put(t, "# HELP %s %s\n# TYPE %s %s\n", fams[k].name, fams[k].help,
             fams[k].name, fams[k].type);
}

static void labels(struct text *t, const char *name, const char *pl,
                   const char *sink)
{
    text_put(t, "%s{pipeline=\"", name);
    text_prom_label(t, pl);
    text_put(t, "\",sink=\"");
    text_prom_label(t, sink);
    text_put(t, "\"");
}

static void histogram(struct text *t, const struct http_num *h, const char *pl,
                      const char *sink)
{
    uint64_t n = 0;

    for (int i = 0; i < WEIR_HTTP_ANSWER_BUCKETS; i++) {
        n += h->answer[i];
        labels(t, "weir_http_answer_seconds_bucket", pl, sink);
        if (i < WEIR_HTTP_ANSWER_BUCKETS - 1)
            text_put(t, ",le=\"%g\"} %llu\n",
                     weir_http_answer_le_ms[i] / 1000.0, (unsigned long long)n);
        else
            text_put(t, ",le=\"+Inf\"} %llu\n", (unsigned long long)n);
    }
    labels(t, "weir_http_answer_seconds_sum", pl, sink);
    text_put(t, "} %.6f\n", (double)h->answer_us / 1e6);
    labels(t, "weir_http_answer_seconds_count", pl, sink);
    text_put(t, "} %llu\n", (unsigned long long)n);
}

void http_family_put(struct text *t, unsigned k, const struct http_num *h,
                     const char *pl, const char *sink)
{
    static const char *const reasons[] = {"connect", "timeout", "429", "5xx"};

    if (!h->is_http)
        return;
    if (fams[k].field == -2) {
        histogram(t, h, pl, sink);
        return;
    }
    if (fams[k].field == -1) {
        for (int i = 0; i < 4; i++) {
            labels(t, fams[k].name, pl, sink);
            text_put(t, ",reason=\"%s\"} %llu\n", reasons[i],
                     (unsigned long long)h->v[HN_RETRY_CONNECT + i]);
        }
        return;
    }
    labels(t, fams[k].name, pl, sink);
    text_put(t, "} %llu\n", (unsigned long long)h->v[fams[k].field]);
}
