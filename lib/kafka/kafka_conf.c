/*
 * kafka_conf.c - librdkafka's configuration of a kafka sink.
 *
 * weir's settings come first and the operator's rdkafka.NAME=VALUE after,
 * so that any of them may be overridden, knowingly:
 *
 *   enable.idempotence=true   a record retried by librdkafka is stored
 *                             once, in order (it implies acks=all and at
 *                             most five requests in flight per broker)
 *   acks=all                  a delivery report means every in-sync
 *                             replica has the record
 *   message.timeout.ms=0      librdkafka retries a record for as long as
 *                             it takes: an unreachable cluster holds the
 *                             source back instead of losing records
 *   queue.buffering.max.*     librdkafka's queue is bounded by the sink's
 *                             high-water mark, with room over it for the
 *                             chunk that passes it, so a full queue is
 *                             the exception (the sink waits then)
 *   log.queue=true            librdkafka's log lines come through the
 *                             queue the loop serves, not from its threads
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kafka_impl.h"

static bool set(rd_kafka_conf_t *conf, const char *name, const char *value,
                char *err, size_t errlen)
{
    return rd_kafka_conf_set(conf, name, value, err, errlen) ==
           RD_KAFKA_CONF_OK;
}

rd_kafka_conf_t *weir__kafka_conf(const struct weir_kafka_sink_options *o,
                                  uint64_t hwm, char *err, size_t errlen)
{
    rd_kafka_conf_t *conf = rd_kafka_conf_new();
    char kbytes[32];
    bool ok;

    if (!conf) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    /* Twice the mark, in KiB: the mark holds the source back first. */
    snprintf(kbytes, sizeof(kbytes), "%" PRIu64, (hwm * 2 + 1023) / 1024);
    ok = set(conf, "bootstrap.servers", o->brokers, err, errlen) &&
         set(conf, "enable.idempotence", "true", err, errlen) &&
         set(conf, "acks", "all", err, errlen) &&
         set(conf, "message.timeout.ms", "0", err, errlen) &&
         set(conf, "queue.buffering.max.kbytes", kbytes, err, errlen) &&
         set(conf, "queue.buffering.max.messages", "10000000", err, errlen) &&
         set(conf, "log.queue", "true", err, errlen) &&
         set(conf, "compression.codec",
             o->compression ? o->compression : "none", err, errlen);
    for (unsigned i = 0; ok && i < o->nprops; i++) {
        const char *eq = strchr(o->props[i], '=');
        char *name;

        if (!eq || eq == o->props[i]) {
            snprintf(err, errlen, "'%s' is not NAME=VALUE", o->props[i]);
            ok = false;
            break;
        }
        name = strndup(o->props[i], (size_t)(eq - o->props[i]));
        if (!name) {
            snprintf(err, errlen, "out of memory");
            ok = false;
            break;
        }
        ok = set(conf, name, eq + 1, err, errlen);
        if (!ok) {
            /* Which of the operator's settings, as they wrote it. */
            char why[384];

            snprintf(why, sizeof(why), "%s", err);
            snprintf(err, errlen, "rdkafka.%s: %s", o->props[i], why);
        }
        free(name);
    }
    if (!ok) {
        rd_kafka_conf_destroy(conf);
        return NULL;
    }
    return conf;
}

int weir_kafka_check(const struct weir_kafka_sink_options *o, char *err,
                     size_t errlen)
{
    rd_kafka_conf_t *conf;

    if (!o || !o->brokers || !o->topic || !*o->topic) {
        snprintf(err, errlen, "a kafka sink needs brokers and a topic");
        return -EINVAL;
    }
    conf = weir__kafka_conf(o, o->hwm ? o->hwm : 1u << 20, err, errlen);
    if (!conf)
        return -EINVAL;
    rd_kafka_conf_destroy(conf);
    return 0;
}

const char *weir_kafka_strerror(int err)
{
    return rd_kafka_err2str((rd_kafka_resp_err_t)err);
}

const char *weir_kafka_version(void)
{
    return rd_kafka_version_str();
}
