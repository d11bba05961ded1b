/*
 * budget.h - a client's stream promises its share of the worker's buffer
 * pool before it starts (the memory formula of weir.conf(5), counted in
 * buffers), so that no number of slow or stalled clients can take the
 * buffers of streams already running: when the promises would pass the
 * pool, the new client is refused with a log line. Worker thread only.
 */
#ifndef WEIR_DAEMON_BUDGET_H
#define WEIR_DAEMON_BUDGET_H

#include <stdbool.h>
#include <stdint.h>

struct stream;

/* The buffers the stream may hold at most: its sinks' queues, the
 * source's read-ahead, its transforms, a proxy's reverse direction. */
uint32_t budget_of(const struct stream *s);

/* Promises the stream's budget on its worker's pool. False, with a log line at
 * most once a second per worker, when the pool cannot cover it. */
bool budget_take(struct stream *s);

/* Gives back what budget_take promised (nothing when it did not). */
void budget_give(struct stream *s);

#endif
