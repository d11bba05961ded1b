/*
 * series_httpd.c - see series_httpd.h.
 */
#include "run/series_httpd.h"

static uint64_t get(const _Atomic uint64_t *c)
{
    /* Relaxed: statistics; they order nothing. */
    return atomic_load_explicit(c, memory_order_relaxed);
}

void httpd_num_add(struct httpd_num *h, const struct http_counts *c)
{
    h->any = true;
    for (int k = 0; k < 6; k++)
        for (int m = 0; m < 3; m++)
            h->requests[k][m] += get(&c->requests[k][m]);
    h->timeouts += get(&c->timeouts);
    for (int b = 0; b < HTTP_TIME_BUCKETS; b++)
        h->time[b] += get(&c->time[b]);
    h->time_us += get(&c->time_us);
}

void httpd_num_merge(struct httpd_num *a, const struct httpd_num *b)
{
    a->any |= b->any;
    for (int k = 0; k < 6; k++)
        for (int m = 0; m < 3; m++)
            a->requests[k][m] += b->requests[k][m];
    a->timeouts += b->timeouts;
    for (int i = 0; i < HTTP_TIME_BUCKETS; i++)
        a->time[i] += b->time[i];
    a->time_us += b->time_us;
}

static void head(struct text *t, const char *name, const char *type,
                 const char *help)
{
    text_put(t, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

static void pl_label(struct text *t, const char *name, const char *pl)
{
    text_put(t, "%s{pipeline=\"", name);
    text_prom_label(t, pl);
    text_put(t, "\"");
}

static void requests(struct text *t, const char *pl, const struct httpd_num *h)
{
    static const char *const code[6] = {"other", "1xx", "2xx",
                                        "3xx",   "4xx", "5xx"};
    static const char *const method[3] = {"GET", "HEAD", "other"};

    for (int k = 0; k < 6; k++)
        for (int m = 0; m < 3; m++) {
            /* Only what happened, and the usual pairs, so that a series
             * does not appear at its first request. */
            if (!h->requests[k][m] && !((k == 2 || k == 3 || k == 4) && m < 2))
                continue;
            pl_label(t, "weir_http_served_requests_total", pl);
            text_put(t, ",method=\"%s\",code=\"%s\"} %llu\n", method[m],
                     code[k], (unsigned long long)h->requests[k][m]);
        }
}

static void times(struct text *t, const char *pl, const struct httpd_num *h)
{
    uint64_t n = 0;

    for (int b = 0; b < HTTP_TIME_BUCKETS; b++) {
        n += h->time[b];
        pl_label(t, "weir_http_served_request_seconds_bucket", pl);
        if (b < HTTP_TIME_BUCKETS - 1)
            text_put(t, ",le=\"%g\"} %llu\n", http_time_le_us[b] / 1e6,
                     (unsigned long long)n);
        else
            text_put(t, ",le=\"+Inf\"} %llu\n", (unsigned long long)n);
    }
    pl_label(t, "weir_http_served_request_seconds_sum", pl);
    text_put(t, "} %.6f\n", (double)h->time_us / 1e6);
    pl_label(t, "weir_http_served_request_seconds_count", pl);
    text_put(t, "} %llu\n", (unsigned long long)n);
}

void httpd_put(struct text *t, const char *const *names,
               const struct httpd_num *const *nums, size_t n)
{
    head(t, "weir_http_served_requests_total", "counter",
         "Requests an http-listen pipeline answered, by method and status "
         "class.");
    for (size_t i = 0; i < n; i++)
        if (nums[i]->any)
            requests(t, names[i], nums[i]);
    head(t, "weir_http_served_header_timeouts_total", "counter",
         "Connections an http-listen pipeline cut at header_timeout.");
    for (size_t i = 0; i < n; i++)
        if (nums[i]->any) {
            pl_label(t, "weir_http_served_header_timeouts_total", names[i]);
            text_put(t, "} %llu\n", (unsigned long long)nums[i]->timeouts);
        }
    head(t, "weir_http_served_request_seconds", "histogram",
         "How long an answer took, from its request's whole head to its "
         "last byte taken by the socket.");
    for (size_t i = 0; i < n; i++)
        if (nums[i]->any)
            times(t, names[i], nums[i]);
}
