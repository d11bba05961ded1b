/*
 * report.h - a stream's closing lines (report.c): to the log, or where
 * stream_ctx.report_line says. Main thread, once the stream has ended.
 */
#ifndef WEIR_DAEMON_REPORT_H
#define WEIR_DAEMON_REPORT_H

struct stream;

void stream_report(struct stream *s);

#endif
