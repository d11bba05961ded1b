/*
 * source_ack.h - a source that is told what its sinks have: a jetstream
 * source acknowledges a message to its consumer only once every block
 * sink has every byte of it (checkpoint.c's rule: a TCP peer
 * acknowledged it, a file sink wrote it; the source's thread fdatasyncs
 * the file sinks before the ack goes out). Worker thread.
 */
#ifndef WEIR_DAEMON_SOURCE_ACK_H
#define WEIR_DAEMON_SOURCE_ACK_H

#include <stdbool.h>

struct stream;

/* At every watch, and once more (`final`) when the pipes have ended. */
void source_ack_sample(struct stream *s, bool final);

#endif
