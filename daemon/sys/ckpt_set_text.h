/*
 * ckpt_set_text.h - the checkpoints of a glob source's files, as kept in
 * the state directory (STATE_DIR/pipeline-NAME.files), one line a file:
 *
 *   # weir file checkpoints for pipeline NAME, written 2026-12-06T12:00:00Z
 *   file fp=0123456789abcdef fplen=256 dev=2049 ino=131 offset=4096
 * written=2026-12-06T11:59:59Z path=/var/log/app.log
 *
 * fp is the hash of the file's first fplen bytes (0: it had fewer then,
 * and dev/ino alone name it); offset is where every sink has the file's
 * records up to; written is when that offset was sampled (a file whose
 * offset has not moved keeps the time of the text that first had it). path
 * comes last and runs to the end of the line, so it may hold spaces and be of
 * any length; its backslashes, control bytes and DEL are written \xNN, so a
 * newline in a file name cannot end the line. A person can read it, and
 * edit it: the reader checks every field.
 */
#ifndef WEIR_DAEMON_CKPT_SET_TEXT_H
#define WEIR_DAEMON_CKPT_SET_TEXT_H

#include <stddef.h>
#include <stdint.h>
#include <time.h>

struct ckpt_set_entry {
    uint64_t fp;
    uint32_t fplen;
    uint64_t dev, ino, offset;
    time_t written;
    char *path; /* unescaped */
};

/* The longest line ckpt_set_text_line writes for a path of path_len. */
#define CKPT_SET_LINE_MAX(path_len)   (4 * (path_len) + 200)
#define CKPT_SET_HEADER_MAX(name_len) ((name_len) + 80)

/* The first line, for pipeline `name`, written at `now`; its length.
 * buf has CKPT_SET_HEADER_MAX(strlen(name)) bytes at least. */
size_t ckpt_set_text_header(const char *name, time_t now, char *buf,
                            size_t size);
/* One file's line, '\n' ended; its length. buf has
 * CKPT_SET_LINE_MAX(strlen(e->path)) bytes at least. */
size_t ckpt_set_text_line(const struct ckpt_set_entry *e, char *buf,
                          size_t size);

/* Parses a whole file's text (NUL-terminated). The entries in *out (to
 * free with ckpt_set_text_free) and their count, or -EINVAL (a line that
 * is not one of weir's: the whole file is not trusted), -ENOMEM. */
int ckpt_set_text_parse(const char *text, struct ckpt_set_entry **out);
void ckpt_set_text_free(struct ckpt_set_entry *v, size_t n);

#endif
