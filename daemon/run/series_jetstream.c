/*
 * series_jetstream.c - see series_jetstream.h.
 */
#include "run/series_jetstream.h"

static uint64_t get(const _Atomic uint64_t *c)
{
    /* Relaxed: statistics; they order nothing. */
    return atomic_load_explicit(c, memory_order_relaxed);
}

void js_num_add(struct js_num *j, const struct weir_jetstream_counters *c,
                bool live)
{
    j->is_js = true;
    j->v[JN_RECORDS] += get(&c->records);
    j->v[JN_BYTES] += get(&c->bytes);
    j->v[JN_DUPLICATES] += get(&c->duplicates);
    j->v[JN_RETRIES] += get(&c->retries);
    j->v[JN_ERR_TIMEOUT] += get(&c->err_timeout);
    j->v[JN_ERR_NO_RESPONDERS] += get(&c->err_no_responders);
    j->v[JN_ERR_OTHER] += get(&c->err_other);
    j->v[JN_DEAD_LETTER] += get(&c->dead_letter);
    if (live)
        j->v[JN_IN_FLIGHT] += get(&c->in_flight);
}

void js_num_merge(struct js_num *a, const struct js_num *b)
{
    a->is_js |= b->is_js;
    for (int i = 0; i < JN_FIELDS; i++)
        a->v[i] += b->v[i];
}

static const char *const reasons[] = {"timeout", "no_responders", "other"};

static const struct {
    const char *name, *type, *help;
    int field; /* -1: the errors by reason */
} fams[] = {
    {"weir_jetstream_records_acked_total", "counter",
     "Records the stream acknowledged (duplicates included).", JN_RECORDS},
    {"weir_jetstream_bytes_acked_total", "counter",
     "Record bytes (payloads) the stream acknowledged.", JN_BYTES},
    {"weir_jetstream_duplicates_total", "counter",
     "Records the stream acknowledged as already stored (its duplicate "
     "window dropped them).",
     JN_DUPLICATES},
    {"weir_jetstream_retries_total", "counter",
     "Records published again after a failure or no acknowledgement.",
     JN_RETRIES},
    {"weir_jetstream_errors_total", "counter",
     "Failed publishes by reason: timeout (no acknowledgement in time), "
     "no_responders (no stream answered), other.",
     -1},
    {"weir_jetstream_dead_letter_records_total", "counter",
     "Records not stored: refused for good (over the server's max_payload "
     "or the stream's max_msg_size) or given up after retries; in the "
     "dead_letter file when there is one.",
     JN_DEAD_LETTER},
    {"weir_jetstream_in_flight", "gauge",
     "Records published and not yet answered.", JN_IN_FLIGHT},
};

#define NFAMS (sizeof(fams) / sizeof(fams[0]))

unsigned js_families(void)
{
    return NFAMS;
}

void js_family_head(struct text *t, unsigned f)
{
    text_put(t, "# HELP %s %s\n# TYPE %s %s\n", fams[f].name, fams[f].help,
             fams[f].name, fams[f].type);
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

void js_family_put(struct text *t, unsigned f, const struct js_num *j,
                   const char *pl, const char *sink)
{
    if (!j->is_js)
        return;
    if (fams[f].field == -1) {
        for (int i = 0; i < 3; i++) {
            labels(t, fams[f].name, pl, sink);
            text_put(t, ",reason=\"%s\"} %llu\n", reasons[i],
                     (unsigned long long)j->v[JN_ERR_TIMEOUT + i]);
        }
        return;
    }
    labels(t, fams[f].name, pl, sink);
    text_put(t, "} %llu\n", (unsigned long long)j->v[fams[f].field]);
}

void js_json(struct text *t, const struct js_num *j)
{
    text_put(t,
             ",\"jetstream\":{\"records_acked\":%llu,\"bytes_acked\":%llu,"
             "\"duplicates\":%llu,\"in_flight\":%llu,\"retries\":%llu,"
             "\"dead_letter_records\":%llu,\"errors\":{",
             (unsigned long long)j->v[JN_RECORDS],
             (unsigned long long)j->v[JN_BYTES],
             (unsigned long long)j->v[JN_DUPLICATES],
             (unsigned long long)j->v[JN_IN_FLIGHT],
             (unsigned long long)j->v[JN_RETRIES],
             (unsigned long long)j->v[JN_DEAD_LETTER]);
    for (int i = 0; i < 3; i++)
        text_put(t, "\"%s\":%llu%s", reasons[i],
                 (unsigned long long)j->v[JN_ERR_TIMEOUT + i],
                 i < 2 ? "," : "}}");
}

void jss_num_add(struct jss_num *j,
                 const struct weir_jetstream_source_counters *c, bool live)
{
    j->any = true;
    j->v[JSS_RECORDS] += get(&c->records);
    j->v[JSS_BYTES] += get(&c->bytes);
    j->v[JSS_ACKED] += get(&c->acked);
    j->v[JSS_REDELIVERED] += get(&c->redelivered);
    j->v[JSS_ERRORS] += get(&c->errors);
    if (live)
        j->v[JSS_UNACKED] += get(&c->unacked);
}

void jss_num_merge(struct jss_num *a, const struct jss_num *b)
{
    a->any |= b->any;
    for (int i = 0; i < JSS_FIELDS; i++)
        a->v[i] += b->v[i];
}

static const struct {
    const char *name, *type, *help;
} src_fams[JSS_FIELDS] = {
    [JSS_RECORDS] = {"weir_jetstream_source_records_total", "counter",
                     "Messages a jetstream source read into its pipeline."},
    [JSS_BYTES] = {"weir_jetstream_source_bytes_total", "counter",
                   "Message payload bytes a jetstream source read."},
    [JSS_ACKED] = {"weir_jetstream_source_acked_total", "counter",
                   "Messages acknowledged to the consumer once every sink "
                   "had them."},
    [JSS_REDELIVERED] = {"weir_jetstream_source_redelivered_total", "counter",
                         "Messages the server delivered again while their "
                         "first delivery was held (dropped)."},
    [JSS_ERRORS] = {"weir_jetstream_source_errors_total", "counter",
                    "Fetches and acknowledgements that failed."},
    [JSS_UNACKED] = {"weir_jetstream_source_unacked", "gauge",
                     "Messages read and not yet acknowledged."},
};

unsigned jss_families(void)
{
    return JSS_FIELDS;
}

void jss_family_head(struct text *t, unsigned f)
{
    text_put(t, "# HELP %s %s\n# TYPE %s %s\n", src_fams[f].name,
             src_fams[f].help, src_fams[f].name, src_fams[f].type);
}

void jss_family_put(struct text *t, unsigned f, const struct jss_num *j,
                    const char *pl)
{
    if (!j->any)
        return;
    text_put(t, "%s{pipeline=\"", src_fams[f].name);
    text_prom_label(t, pl);
    text_put(t, "\"} %llu\n", (unsigned long long)j->v[f]);
}

void jss_json(struct text *t, const struct jss_num *j)
{
    if (!j->any)
        return;
    text_put(t,
             "\"jetstream_source\":{\"records\":%llu,\"bytes\":%llu,"
             "\"acked\":%llu,\"unacked\":%llu,\"redelivered\":%llu,"
             "\"errors\":%llu},",
             (unsigned long long)j->v[JSS_RECORDS],
             (unsigned long long)j->v[JSS_BYTES],
             (unsigned long long)j->v[JSS_ACKED],
             (unsigned long long)j->v[JSS_UNACKED],
             (unsigned long long)j->v[JSS_REDELIVERED],
             (unsigned long long)j->v[JSS_ERRORS]);
}

void jss_text(struct text *t, const struct jss_num *j, const char *pl)
{
    if (!j->any)
        return;
    text_put(t,
             "\npipeline %s: jetstream source: %llu messages read, %llu "
             "acknowledged, %llu waiting for their sinks, %llu delivered "
             "again, %llu errors\n",
             pl, (unsigned long long)j->v[JSS_RECORDS],
             (unsigned long long)j->v[JSS_ACKED],
             (unsigned long long)j->v[JSS_UNACKED],
             (unsigned long long)j->v[JSS_REDELIVERED],
             (unsigned long long)j->v[JSS_ERRORS]);
}
