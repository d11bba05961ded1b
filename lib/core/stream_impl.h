/*
 * stream_impl.h - the insides of readable and writable streams, shared by
 * the files of the stream core (pipe, tee and transform look at states and
 * hook notifications that the public API does not expose).
 */
#ifndef WEIR_CORE_STREAM_IMPL_H
#define WEIR_CORE_STREAM_IMPL_H

#include "queue.h"
#include "weir/stream.h"

#define RS_READABLE WEIR_RS_READABLE_
#define RS_CLOSED   WEIR_RS_CLOSED_
#define RS_ERRORED  WEIR_RS_ERRORED_

#define WS_WRITABLE WEIR_WS_WRITABLE_
#define WS_CLOSED   WEIR_WS_CLOSED_
#define WS_ERRORED  WEIR_WS_ERRORED_
#define WS_ERRORING WEIR_WS_ERRORING_
#define write_req   weir_write_req_

static inline int64_t weir_rs_desired(const struct weir_readable *rs)
{
    return rs->hwm - (int64_t)weir_readable_size_(rs);
}

static inline int64_t weir_ws_desired(const struct weir_writable *ws)
{
    return ws->hwm - (int64_t)ws->queued;
}

/* The high-water mark as stored: unlimited becomes INT64_MAX. */
static inline int64_t weir_hwm_of(size_t hwm)
{
    return hwm >= (size_t)INT64_MAX ? INT64_MAX : (int64_t)hwm;
}

/* Whether a read waits for data: the synchronous one, or a parked one
 * (parked is kept equal to reads being non-empty). */
static inline bool weir_rs_read_waits(const struct weir_readable *rs)
{
    return rs->sync_want | rs->parked;
}

/* Puts a chunk that a parked read was handed, and that its reader cannot
 * use after all, back at the front of the stream's queue (readable.c). */
void weir_readable_unread_(struct weir_readable *rs, struct weir_chunk chunk);

#endif /* WEIR_CORE_STREAM_IMPL_H */
