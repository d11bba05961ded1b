/*
 * xforms.h - a stream's transform stages (xforms.c); their teardown is
 * in worker.h.
 */
#ifndef WEIR_DAEMON_XFORMS_H
#define WEIR_DAEMON_XFORMS_H

#include "weir/readable.h"

struct stream;

/* The pipeline's transforms, fed by rs: the readable their output comes
 * out of, or NULL when one could not be made (then the stream errors). */
struct weir_readable *stream_xforms_build(struct stream *s,
                                          struct weir_readable *rs);

#endif
