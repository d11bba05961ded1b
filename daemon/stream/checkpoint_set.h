/*
 * checkpoint_set.h - where each file of a glob source stands, kept in
 * the state directory (sys/ckpt_set_text.h has the format) so that a
 * restart, or a crash, resumes every file where its records were
 * acknowledged. checkpoint.h is the one followed file's; this is the
 * file set's (weir/file_set.h), with the same rules of what counts:
 * bytes every block sink has (a TCP peer acknowledged them; a file sink
 * wrote them and they are fdatasync'd before the file is written).
 *
 * Threads. At every watch (~250 ms) the stream's worker tells the file
 * set what the sinks acknowledged (weir_file_set_ack), and, when a
 * file's acknowledged offset moved, writes the whole file's text into a
 * heap block and leaves it in a one-slot mailbox: the main loop takes
 * the newest every checkpoint_interval and writes it (statefile.h); a
 * text it never took is replaced and freed. The worker never waits for
 * the disk or for the main loop.
 *
 * At the start the file is read once, before the stream is started: the
 * file set asks where each file it finds resumes (ckpt_set_resume), by
 * fingerprint, on the worker; the entries are not changed after that.
 */
#ifndef WEIR_DAEMON_CHECKPOINT_SET_H
#define WEIR_DAEMON_CHECKPOINT_SET_H

#include <stdbool.h>
#include <stdint.h>

#include "weir/file_set.h"

struct ckpt_set;
struct ckpt_set_lines;
struct stream;

/* ckpt_set_new and ckpt_set_free, for the pipeline, are in stream.h. */

/* Main thread. s samples into cs from now on, until it has ended; then
 * its last text is written at once. */
void ckpt_set_attach(struct ckpt_set *cs, struct stream *s);
void ckpt_set_stream_done(struct ckpt_set *cs, struct stream *s);

/* Worker: the file set's resume callback (arg: the struct ckpt_set). */
bool ckpt_set_resume(void *arg, const struct weir_file_set_file *f,
                     uint64_t *offset);
/* Worker. The files the checkpoint lists, for the file set to look for
 * those its patterns no longer name (weir_file_set_options.known): an
 * array to free (its paths are cs's), and its length; 0 when none. */
size_t ckpt_set_known(const struct ckpt_set *cs,
                      struct weir_file_set_file **out);
/* Worker. One sample (`final` once the pipes have ended): the
 * acknowledgement to the file set, and the text when it changed. */
void ckpt_set_sample(struct stream *s, bool final);
/* The lines ckpt_set_sample keeps from one text to the next. */
void ckpt_set_lines_free(struct ckpt_set_lines *k);
/* Main loop: the task ckpt_set_sample posts (s->ck_save) when its text
 * names a file the last one did not. */
void ckpt_set_save_task(struct weir_task *t);

#endif
