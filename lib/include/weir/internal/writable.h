/*
 * weir/internal/writable.h - the layout of a writable stream and the
 * out-of-line halves of weir_writer_write, for that inline fast path.
 * Not API: included by weir/writable.h, never by a program.
 */
#ifndef WEIR_INTERNAL_WRITABLE_H
#define WEIR_INTERNAL_WRITABLE_H

#include "weir/internal/stream_types.h"
#include "weir/stream_types.h"

#ifdef __cplusplus
extern "C" {
#endif

struct weir_sink_ops;

/*
 * Layout of a writable stream, public only for the inline fast path of
 * weir/writable.h (see weir/internal/stream_types.h): not API.
 */
enum {
    WEIR_WS_WRITABLE_,
    WEIR_WS_CLOSED_,
    WEIR_WS_ERRORED_,
    WEIR_WS_ERRORING_ /* errored, settling once the sink is idle */
};

struct weir_write_req_ {
    struct weir_chunk chunk;
    weir_done_cb cb;
    void *ctx;
};

struct weir_writable {
    struct weir_q queue; /* struct weir_write_req_; the first in_flight are
                            at the sink */
    size_t queued;       /* weight of the queue, in-flight writes included */
    int64_t hwm;         /* INT64_MAX for WEIR_HWM_UNLIMITED */
    const struct weir_sink_ops *ops;
    void *ctx;
    uint32_t in_flight; /* writes the sink has and has not finished */
    uint8_t state;
    bool close_requested;
    bool direct; /* started, and the sink has a write */
    bool weigh_bytes, started, close_in_flight;
    bool abort_pending, locked, doomed;
    bool bp_released; /* ready though full, until the next write */
    struct weir_watch watch;
    bool abort_on_sink; /* the pending abort calls the sink's abort */
    weir_done_cb ready_cb, close_cb, abort_cb;
    void *ready_ctx, *close_ctx, *abort_ctx;
    int err;
    int abort_reason; /* an abort waiting for the sink to be idle */
    int abort_rc;
    unsigned slot;
    uint32_t busy;
};

/* Out-of-line halves of weir_writer_write. */
int weir_writer_write_done_(struct weir_writable *ws, struct weir_chunk chunk,
                            weir_done_cb cb, void *ctx, int rc);
int weir_writer_write_slow_(struct weir_writable *ws, struct weir_chunk chunk,
                            weir_done_cb cb, void *ctx);

#ifdef __cplusplus
}
#endif

#endif /* WEIR_INTERNAL_WRITABLE_H */
