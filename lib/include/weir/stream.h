/*
 * weir/stream.h - the whole stream core in one include: readable streams
 * and their readers, writable streams and their writers, transforms, pipes
 * and tees. The rules they share (threading, result codes, ownership of
 * chunks) are in weir/stream_types.h.
 */
#ifndef WEIR_STREAM_H
#define WEIR_STREAM_H

#include "weir/stream_types.h"
#include "weir/readable.h"
#include "weir/writable.h"
#include "weir/transform.h"
#include "weir/pipe.h"
#include "weir/tee.h"

#ifdef __cplusplus
extern "C" {
#endif

#ifdef __cplusplus
}
#endif

#endif /* WEIR_STREAM_H */
