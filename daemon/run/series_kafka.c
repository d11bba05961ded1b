/*
 * series_kafka.c - see series_kafka.h.
 */
#include "run/series_kafka.h"

static uint64_t get(const _Atomic uint64_t *c)
{
    /* Relaxed: statistics; they order nothing. */
    return atomic_load_explicit(c, memory_order_relaxed);
}

void kafka_num_add(struct kafka_num *k, const struct weir_kafka_counters *c,
                   bool live)
{
    k->is_kafka = true;
    k->v[KN_RECORDS] += get(&c->records);
    k->v[KN_BYTES] += get(&c->bytes);
    k->v[KN_RETRIES] += get(&c->retries);
    k->v[KN_ERR_TRANSPORT] += get(&c->err_transport);
    k->v[KN_ERR_TIMEOUT] += get(&c->err_timeout);
    k->v[KN_ERR_REJECTED] += get(&c->err_rejected);
    k->v[KN_ERR_OTHER] += get(&c->err_other);
    if (live)
        k->v[KN_IN_FLIGHT] += get(&c->in_flight);
}

void kafka_num_merge(struct kafka_num *a, const struct kafka_num *b)
{
    a->is_kafka |= b->is_kafka;
    for (int i = 0; i < KN_FIELDS; i++)
        a->v[i] += b->v[i];
}

static const char *const reasons[] = {"transport", "timeout", "rejected",
                                      "other"};

static const struct {
    const char *name, *type, *help;
    int field; /* -1: the errors by reason */
} fams[] = {
    {"weir_kafka_records_acked_total", "counter",
     "Records the cluster acknowledged (acks=all).", KN_RECORDS},
    {"weir_kafka_bytes_acked_total", "counter",
     "Record bytes (values, before compression) the cluster acknowledged.",
     KN_BYTES},
    {"weir_kafka_retries_total", "counter",
     "Records produced again after a failed delivery.", KN_RETRIES},
    {"weir_kafka_errors_total", "counter",
     "Errors by reason: transport (a broker unreachable), timeout (a "
     "delivery timed out), rejected (a record refused for good), other.",
     -1},
    {"weir_kafka_in_flight", "gauge", "Records produced and not yet reported.",
     KN_IN_FLIGHT},
};

#define NFAMS (sizeof(fams) / sizeof(fams[0]))

unsigned kafka_families(void)
{
    return NFAMS;
}

void kafka_family_head(struct text *t, unsigned f)
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

void kafka_family_put(struct text *t, unsigned f, const struct kafka_num *k,
                      const char *pl, const char *sink)
{
    if (!k->is_kafka)
        return;
    if (fams[f].field == -1) {
        for (int i = 0; i < 4; i++) {
            labels(t, fams[f].name, pl, sink);
            text_put(t, ",reason=\"%s\"} %llu\n", reasons[i],
                     (unsigned long long)k->v[KN_ERR_TRANSPORT + i]);
        }
        return;
    }
    labels(t, fams[f].name, pl, sink);
    text_put(t, "} %llu\n", (unsigned long long)k->v[fams[f].field]);
}

void kafka_json(struct text *t, const struct kafka_num *k)
{
    text_put(t,
             ",\"kafka\":{\"records_acked\":%llu,\"bytes_acked\":%llu,"
             "\"in_flight\":%llu,\"retries\":%llu,\"errors\":{",
             (unsigned long long)k->v[KN_RECORDS],
             (unsigned long long)k->v[KN_BYTES],
             (unsigned long long)k->v[KN_IN_FLIGHT],
             (unsigned long long)k->v[KN_RETRIES]);
    for (int i = 0; i < 4; i++)
        text_put(t, "\"%s\":%llu%s", reasons[i],
                 (unsigned long long)k->v[KN_ERR_TRANSPORT + i],
                 i < 3 ? "," : "}}");
}
