/*
 * weir/records.h - cutting one file's bytes into records: whole lines, or
 * a first line and its continuation lines (multiline_start), optionally
 * wrapped as one JSON object each.
 *
 * One framer per file. Bytes go in as they are read (any split); what
 * comes out is whole records only, each ending in '\n'. The bytes of a
 * line not yet ended stay in the framer (up to max_record) until the
 * newline comes, or until the owner calls weir_records_flush (the file
 * went quiet for line_timeout, or was left): then they come out as a
 * record with a '\n' added.
 *
 * A line longer than max_record: on_long truncate emits its first
 * max_record bytes as a record (with '\n') and drops the rest of that line
 * as it arrives; skip drops the whole line. Either counts it in
 * weir_records_stats.
 *
 * The framer never allocates after weir_records_new: it holds one buffer
 * of max_record bytes (plus the JSON envelope), so a file's memory is
 * bounded whatever its lines: max_record + 1 for raw lines, twice that
 * with multiline_start (the record and the line being tested), and
 * 6 * max_record more for JSON (each byte may become \u00XX).
 */
#ifndef WEIR_RECORDS_H
#define WEIR_RECORDS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

struct weir_records;

enum weir_records_long {
    WEIR_RECORDS_TRUNCATE = 0, /* keep the first max_record bytes */
    WEIR_RECORDS_SKIP,         /* drop the line */
};

enum weir_records_format {
    WEIR_RECORDS_RAW = 0, /* the line as it was, '\n' ended */
    /* {"message":"...","file":"...","host":"...","timestamp":"..."}\n:
     * the record's text (without its final newline) as a JSON string
     * (control characters, '"' and '\\' escaped; bytes that are not UTF-8
     * as \ufffd), the file's path, the host name, and the time it was
     * read (RFC 3339, UTC, milliseconds). */
    WEIR_RECORDS_JSON,
};

struct weir_records_options {
    /* Bytes of one record's text (its final '\n' left out); 0: 64 KiB;
     * at most 1 GiB (-EINVAL). */
    uint32_t max_record;
    enum weir_records_long on_long;
    /* A PCRE2 pattern: a line it matches starts a record; the lines after
     * it that do not match belong to that record (a stack trace's
     * frames). NULL: each line is a record. */
    const char *multiline_start;
    enum weir_records_format format;
    const char *path; /* JSON: the "file" member (copied) */
    const char *host; /* JSON: the "host" member (copied); NULL: gethostname */
};

struct weir_records_stats {
    uint64_t records;   /* emitted */
    uint64_t truncated; /* lines cut at max_record */
    uint64_t skipped;   /* lines dropped (on_long skip) */
};

/*
 * Receives whole records, one or more, ending in '\n'. `consumed` is the
 * file offset just past the input bytes these records came from (the
 * offset given to weir_records_reset, 0 at first, plus the bytes fed
 * since; with multiline_start, where the line that closed them begins):
 * where a checkpoint may move once these records are acknowledged. `rec`
 * is valid until emit returns. Returns 0, or non-zero to stop feeding: the
 * records of this call are taken all the same, and weir_records_feed returns
 * the bytes up to their end.
 */
typedef int (*weir_records_emit_fn)(void *arg, const uint8_t *rec, size_t len,
                                    uint64_t consumed);

/* Returns 0, -EINVAL (a pattern that does not compile, or max_record too
 * large: errbuf says where and why, when given), -ENOMEM. */
int weir_records_new(struct weir_records **out,
                     const struct weir_records_options *o, char *errbuf,
                     size_t errlen);
void weir_records_free(struct weir_records *r);

/*
 * Feeds n bytes. Returns how many were taken: n, or fewer when emit asked
 * to stop (feed the rest later). `now_ns` is the time for JSON's
 * timestamp (CLOCK_REALTIME).
 */
size_t weir_records_feed(struct weir_records *r, const uint8_t *p, size_t n,
                         uint64_t now_ns, weir_records_emit_fn emit, void *arg);

/* Emits what is held (a line without its newline, a multiline record not
 * yet closed by the next start). Returns emit's result, or 0. A flush can
 * emit two records (a held line that starts a record closes the one
 * before it); when emit stops it after the first, call it again. */
int weir_records_flush(struct weir_records *r, uint64_t now_ns,
                       weir_records_emit_fn emit, void *arg);

/* Bytes held, not yet emitted. */
size_t weir_records_pending(const struct weir_records *r);

/*
 * The file offset behind everything emitted or dropped, with nothing held
 * before it: where a checkpoint may move once what was emitted is
 * acknowledged. It moves over lines skipped (or their truncated rests)
 * that no emit reports, and never into a line or a multiline record that
 * is not whole yet.
 */
uint64_t weir_records_consumed(const struct weir_records *r);

/* Forget what is held and the offset count: the file starts again at its
 * byte `offset` (a truncation, a resumption). */
void weir_records_reset(struct weir_records *r, uint64_t offset);

void weir_records_stats(const struct weir_records *r,
                        struct weir_records_stats *st);

#ifdef __cplusplus
}
#endif

#endif /* WEIR_RECORDS_H */
