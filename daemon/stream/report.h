/*
 * report.h - a stream's closing lines (report.c): to the log, or where
 * stream_ctx.report_line says. Main thread, once the stream has ended.
 */
#ifndef WEIR_DAEMON_REPORT_H
#define WEIR_DAEMON_REPORT_H

#include <stdbool.h>

struct stream;

void stream_report(struct stream *s);
/* Whether sink i was cut loose by its own policy: on_full=disconnect, or
 * a dropping or disconnecting sink cut at its send timeout. */
bool stream_sink_cut(const struct stream *s, unsigned i);

#endif
