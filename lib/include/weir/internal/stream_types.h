/*
 * weir/internal/stream_types.h - the shared parts of the stream core's
 * layout, for the inline fast paths of weir/readable.h and weir/writable.h.
 * Not API: included by those headers, never by a program.
 */
#ifndef WEIR_INTERNAL_STREAM_TYPES_H
#define WEIR_INTERNAL_STREAM_TYPES_H

#include <stdbool.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/*
 * Layout details. The types below appear in the stream layouts of
 * weir/internal/readable.h and weir/internal/writable.h, which the public
 * headers include only so that the hottest operations can be inlined into
 * the caller (the way liburing exposes its rings); their fields are not
 * API and must not be touched.
 */

/* A growable FIFO of fixed-size entries (lib/core/queue.h). */
struct weir_q {
    uint8_t *slots; /* cap entries, NULL until first use */
    uint32_t head;  /* next entry to take */
    uint32_t tail;  /* next free slot */
    uint32_t cap;   /* 0 or a power of two */
    bool borrowed;  /* slots is storage inside the owner, not ours to free */
};

/* An internal listener of a stream's state changes (pipe). */
struct weir_watch {
    void (*fn)(void *ctx);
    void *ctx;
};

#ifdef __cplusplus
}
#endif

#endif /* WEIR_INTERNAL_STREAM_TYPES_H */
