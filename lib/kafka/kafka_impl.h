/*
 * kafka_impl.h - what the files of the kafka sink share. Private to
 * lib/kafka.
 *
 *   kafka_conf.c      librdkafka's configuration from the options: weir's
 *                     settings, then the operator's
 *   endpoint_kafka.c  the kind: its stream, librdkafka's queue on the
 *                     loop, delivery reports, the close
 */
#ifndef WEIR_KAFKA_IMPL_H
#define WEIR_KAFKA_IMPL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <librdkafka/rdkafka.h>

#include "../io/endpoint_base.h"
#include "../io/endpoint_ledger.h"

/* ---- the configuration (kafka_conf.c) ---- */

/* A configuration for o: weir's settings (idempotence, acks=all, no
 * delivery timeout, the queue inside hwm), then o's. NULL, with
 * librdkafka's sentence in err, when it refuses a setting. */
rd_kafka_conf_t *weir__kafka_conf(const struct weir_kafka_sink_options *o,
                                  uint64_t hwm, char *err, size_t errlen);

#endif
