/*
 * value.h - the scalar values of the config and the command line: sizes,
 * booleans, counts and durations. Each parser takes the whole string,
 * returns 0 or -EINVAL, and on error writes a sentence for the operator into
 * err (which never repeats the value's key: the caller adds that).
 */
#ifndef WEIR_DAEMON_VALUE_H
#define WEIR_DAEMON_VALUE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define KiB (UINT64_C(1) << 10)
#define MiB (UINT64_C(1) << 20)
#define GiB (UINT64_C(1) << 30)

/*
 * A size in bytes: digits, optionally followed (with or without a space) by
 * B, KiB, MiB, GiB or TiB, case-insensitive. Plain digits are bytes. The
 * 1000-based KB/MB/GB and the bare K/M/G are refused rather than guessed.
 * The result must lie in [min, max].
 */
int value_size(const char *s, uint64_t min, uint64_t max, uint64_t *out,
               char *err, size_t errlen);

/* yes/no, true/false, on/off, 1/0 (systemd's spellings). */
int value_bool(const char *s, bool *out, char *err, size_t errlen);

/* A decimal count in [min, max]. */
int value_uint(const char *s, uint64_t min, uint64_t max, uint64_t *out,
               char *err, size_t errlen);

/*
 * A duration: digits with a unit ms, s, min or h (plain digits are
 * seconds), in [min_ms, max_ms] milliseconds.
 */
int value_duration_ms(const char *s, uint64_t min_ms, uint64_t max_ms,
                      uint64_t *out, char *err, size_t errlen);

/* Writes "1 MiB", "512 KiB" or "1000 B": the largest exact unit. */
void value_size_format(uint64_t bytes, char *buf, size_t len);

#endif
