/*
 * build.h - a stream on its worker: the tasks the main thread posts
 * there (build.c). The start task builds the stages (after a connect,
 * when the stream needs one); the stop task asks them to end; the cut
 * task makes the socket sinks give up.
 */
#ifndef WEIR_DAEMON_BUILD_H
#define WEIR_DAEMON_BUILD_H

#include "weir/loop.h"

void stream_start_task(struct weir_task *t);
void stream_stop_task(struct weir_task *t);
void stream_cut_task(struct weir_task *t);

#endif
