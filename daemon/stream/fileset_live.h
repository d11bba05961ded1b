/*
 * fileset_live.h - a glob source's figures for `weir status` and
 * /metrics (stream_fs_view in stream.h), sampled on the stream's worker.
 */
#ifndef WEIR_DAEMON_FILESET_LIVE_H
#define WEIR_DAEMON_FILESET_LIVE_H

struct stream;

/* Worker. Samples the file set's figures and the files most behind, and
 * leaves them for the main thread. */
void stream_fs_sample(struct stream *s);

#endif
