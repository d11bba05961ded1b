/*
 * glob_lines.h - the glob source's fault tests: writers whose lines say
 * who wrote them, into which incarnation of their file, and their number;
 * and the account of what a collector received against what the files on
 * disk hold.
 *
 * A line is GL_LINE bytes: "w00003 g0002 0000004711\n", writer 3, the
 * third file it wrote to (it reopened its path twice), line 4711 of that
 * writer. The account is black-box: the truth is what is on disk when the
 * test ends (rotated copies included, .gz ones through gzip -dc), so lines
 * a rotation itself lost (logrotate's copytruncate race) are not blamed on
 * weir, and lines weir sent that no file holds any more are counted apart.
 */
#ifndef WEIR_TEST_GLOB_LINES_H
#define WEIR_TEST_GLOB_LINES_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "../integration/harness.h"
#include "collector.h"

#define GL_LINE 24u

/* Line seq of writer w, written into its file's incarnation gen. */
void gl_line(char out[GL_LINE], unsigned w, unsigned gen, uint64_t seq);
/* False when p is not a line of ours. */
bool gl_parse(const uint8_t *p, unsigned *w, unsigned *gen, uint64_t *seq);

/* How a writer meets a rotation. */
enum gl_reopen {
    GL_REOPEN_INODE, /* reopens its path when the path names another
                      * inode than the one it writes (an application
                      * that follows its log's name; until the new file
                      * exists it goes on in the old one) */
    GL_NEVER,        /* keeps its descriptor (copytruncate's writer) */
};

struct gl_writer {
    char path[512];
    unsigned id;
    enum gl_reopen reopen;
    unsigned rate; /* lines a second, in bursts every 2 ms */
    atomic_bool stop;
    atomic_uint_fast64_t n; /* lines written */
    atomic_uint gen;        /* reopens done */
    pthread_t th;
};

/* Starts writing path (created when missing) on a thread. */
void gl_writer_start(struct gl_writer *w, const char *path, unsigned id,
                     enum gl_reopen reopen, unsigned rate);
/* Stops it; the lines it wrote. */
uint64_t gl_writer_stop(struct gl_writer *w);

/* Appends lines [first, first + n) of writer w, generation 0, to path
 * (created when missing). */
void gl_append(const char *path, unsigned w, uint64_t first, unsigned n);

/* logrotate's `create` done by hand: path to `to`, and a new empty path. */
void gl_rotate(const char *path, const char *to);

/* ---- weir and other programs ---- */

/* WEIR_SOAK=1: the full sizes; otherwise the CI's. */
bool gl_soak(void);

/*
 * Starts weir on h_dir/NAME.conf: one pipeline `logs` following
 * the *.log files of DIR from their first bytes (rotate_wait 2 s) into
 * tcp:127.0.0.1:PORT, its checkpoints in `state` every `ckpt` ("200ms"),
 * and `extra` (more keys of the pipeline, or ""). `fresh`: a new log.
 */
void gl_start_weir(struct h_weir *w, const char *name, bool fresh,
                   const char *dir, const char *state, const char *ckpt,
                   uint16_t port, const char *extra);

/* Runs argv (argv[0] a path) to its end: its exit status, 127 when it
 * cannot be run, -1 when it did not end within timeout_ms (killed). */
int gl_run(char *const argv[], unsigned timeout_ms);

/* ---- the account ---- */

struct gl_account {
    unsigned writers;
    uint64_t max_seq;    /* lines per writer the tables hold */
    uint8_t *on_disk;    /* [writers * max_seq]: 1 when a file holds it */
    uint16_t *file_of;   /* [writers * max_seq]: which of names[] (+1) */
    char names[256][64]; /* the files read, for the failure's report */
    unsigned nnames;
    uint32_t *got;     /* [writers * max_seq]: times it arrived */
    uint64_t disk;     /* lines on disk */
    uint64_t torn;     /* pieces of lines on disk (a copy made mid-write) */
    uint64_t received; /* lines received */
    uint64_t missing;  /* on disk, never received */
    uint64_t twice;    /* arrivals beyond the first */
    uint64_t stray;    /* received, on no disk file (written to a file
                        * deleted since, or before a copytruncate's cut) */
    uint64_t bad;      /* not a line of ours, or cut */
    uint64_t disorder; /* a line of a file before one it followed */
};

void gl_account_init(struct gl_account *a, unsigned writers, uint64_t max_seq);
void gl_account_free(struct gl_account *a);
/* Notes every line of every file in dir whose name starts with prefix
 * (.gz through gzip -dc). */
void gl_account_disk(struct gl_account *a, const char *dir, const char *prefix);
/* Counts what c received (every connection, in order), from scratch. */
void gl_account_received(struct gl_account *a, struct fc_collector *c);
/* Until weir's first scan is behind it: bytes past `had` at c. A file
 * made and rotated away before weir ever looked is one no checkpoint
 * names, so a test's rotations wait for weir (a start under a sanitizer,
 * on a loaded machine, takes longer than a rotation period). Fails the
 * test, with w's log, after timeout_ms. */
void gl_wait_reading(struct fc_collector *c, struct h_weir *w, uint64_t had,
                     unsigned timeout_ms);
/* Waits until every line on disk arrived; false after timeout_ms. */
bool gl_wait_all(struct gl_account *a, struct fc_collector *c,
                 unsigned timeout_ms);
/* One line of figures, for the test's output and its failures; with
 * lines missing, also where the first runs of them were. */
void gl_account_show(const struct gl_account *a, const char *what);

#endif
