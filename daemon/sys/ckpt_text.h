/*
 * ckpt_text.h - a checkpoint's text, as kept in the state directory:
 *
 *   weir checkpoint 1
 *   path /var/log/app.log
 *   dev 2049
 *   ino 131090
 *   offset 48213
 *   head 3230...   (hex of the file's first bytes, up to 64)
 *
 * The path is any the kernel accepts: its backslashes, control bytes and
 * DEL are written as \xNN, so a newline in a file name cannot end the
 * line and the file stays one record per line.
 */
#ifndef WEIR_DAEMON_CKPT_TEXT_H
#define WEIR_DAEMON_CKPT_TEXT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* A checkpoint: the file and the offset reached in it. */
struct ckpt_rec {
    bool valid;
    uint64_t dev, ino, off;
    uint32_t head_len;
    uint8_t head[64];
};

/* The longest text ckpt_text_format writes for a path of path_len. */
#define CKPT_TEXT_MAX(path_len) (4 * (path_len) + 256)

/* rec and path as text in buf (CKPT_TEXT_MAX(strlen(path)) bytes at
 * least); the text's length. */
size_t ckpt_text_format(const struct ckpt_rec *rec, const char *path, char *buf,
                        size_t size);

enum ckpt_text_kind {
    CKPT_TEXT_OK,    /* a checkpoint of the path asked for */
    CKPT_TEXT_OTHER, /* a checkpoint, of another path (in *other) */
    CKPT_TEXT_BAD,   /* not a checkpoint weir wrote */
};

/* Parses text (NUL-terminated; left as it was). With CKPT_TEXT_OTHER,
 * *other is the path it was written for, to free; else NULL. */
enum ckpt_text_kind ckpt_text_parse(const char *text, const char *path,
                                    struct ckpt_rec *rec, char **other);

#endif
