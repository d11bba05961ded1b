/*
 * checkpoint.h - where a followed file's stream stands, kept in the state
 * directory so that a restart (or a crash) resumes there.
 *
 * A checkpoint names a file by device, inode and its first bytes (up to
 * 64, as read), and an offset in it: every byte before it has reached
 * every sink whose on_full is block (a TCP peer acknowledged it; a file
 * sink wrote it and fdatasync'd it before the checkpoint was written).
 * Sinks with a drop or disconnect policy chose losing bytes over waiting
 * and do not hold it back.
 *
 * Threads. The stream's worker samples the acknowledged offset at every
 * watch (~250 ms) and publishes it in the stream's slot, a seqlock of
 * relaxed atomics; the main loop reads the slot every checkpoint_interval,
 * fdatasyncs the file sinks and writes the file (statefile.h). A worker
 * never waits for a disk: the fsyncs run on the main loop, where a slow
 * disk delays the next checkpoint and the control socket, never a byte
 * of a stream.
 */
#ifndef WEIR_DAEMON_CHECKPOINT_H
#define WEIR_DAEMON_CHECKPOINT_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "sys/alive.h"
#include "sys/ckpt_text.h"
#include "weir/endpoint.h"
#include "weir/file_set.h"
#include "weir/loop.h"

struct ckpt;
struct stream;
struct stream_sink_res;
struct weir_pipeline;

#define CKPT_WORDS 12 /* dev, ino, off, head_len, the head as 8 words */

/* The worker's latest, for the main loop (seqlock: odd while written). */
struct ckpt_slot {
    _Atomic uint32_t seq;
    _Atomic uint64_t w[CKPT_WORDS];
};

/* The files a stream left (rotation, truncation), newest last: an offset
 * still behind the current file's start falls in one of them. */
#define CKPT_SEGS 8
struct ckpt_track {
    struct weir_file_position seg[CKPT_SEGS];
    unsigned nseg;
    /* With transforms: the samples in a row that found the stream at
     * rest, and the sinks' bytes then. */
    unsigned rest;
    uint64_t rest_out;
    /* A glob source: the set's change counters when the last text was
     * handed to the main loop (checkpoint_set.c), so an unchanged one is
     * not made again. */
    int64_t set_at; /* clock_now_ns when it was made */
    struct weir_file_set_changes set_seen;
    /* The last text's file lines, kept by the worker: while no file was
     * found, forgotten or renamed, the walk meets the same files in the
     * same order, and a file whose offset did not move has the same line
     * (checkpoint_set.c). */
    struct ckpt_set_lines {
        char *text;
        size_t len, cap;
        struct ckpt_set_line {
            size_t off, len;
            uint64_t acked;
        } * v;
        size_t n, cap_v;
    } set_lines;
    bool set_sent;
    struct ckpt_slot slot;
};

/* ckpt_new and ckpt_free, for the pipeline that keeps them, are in
 * stream.h. */

/* Main thread. Opens the followed file where its stream resumes: the
 * checkpointed file at its offset (also when the path names another file
 * now: it was rotated; its rest comes first), a file that is not the
 * checkpointed one from its start, or, with no checkpoint, where
 * read_from says. An fd, or -errno (-ENOENT: it does not exist yet). */
int ckpt_open(struct ckpt *ck, uint64_t *offset);
/* Main thread. s samples into ck from now on, until it has ended; then
 * its last checkpoint is written at once. */
void ckpt_attach(struct ckpt *ck, struct stream *s);
void ckpt_stream_done(struct ckpt *ck, struct stream *s);

/* Worker. The source leaves its current file. */
void ckpt_file_left(struct stream *s);
/* Worker. One sample; `final` once the pipes have ended. */
void ckpt_sample(struct stream *s, bool final);
/* Worker. The source bytes every block sink has, or false when that
 * cannot be told now (with transforms: only a stream at rest tells). */
bool ckpt_acked_source(struct stream *s, bool final, uint64_t *acked);
/* pipeline-NAME followed by ext, NAME's bytes outside [A-Za-z0-9._-] as
 * %XX: the name of a pipeline's file in the state directory. */
void ckpt_state_name(const char *pipeline, const char *ext, char *out,
                     size_t size);
/* Main thread. Counts a checkpoint write that failed (the count is
 * ckpt_write_failures, stream.h). */
void ckpt_write_failed(void);
/* Main thread. fdatasync of the file sinks, before a checkpoint that
 * counts their bytes is written; 0 or the first -errno. */
int ckpt_sync_sinks(const struct weir_pipeline *p,
                    const struct stream_sink_res *res);
/* Worker. After the pipes ended: a connected tcp sink that
 * closed cleanly still has bytes its peer has not acknowledged, so the
 * last checkpoint would leave them to be sent again. */
bool ckpt_acks_pending(struct stream *s);

#endif
