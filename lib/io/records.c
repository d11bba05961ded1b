/*
 * records.c - cuts one file's bytes into records (weir/records.h).
 *
 * The buffer holds what is not yet a whole record, and nothing else: in
 * line mode the current line (its first max_record bytes, room for the
 * '\n'); with multiline_start, the open record at the front and the
 * current line after it at a fixed place (max_record + 1), so a line can
 * be tested against the pattern before it is known whether it joins the
 * record or starts the next one. A line is decided only at its newline,
 * which is why a line's bytes past max_record are counted but not kept:
 * the pattern sees the line as truncation would keep it.
 *
 * Raw lines that arrive whole in one feed are not copied at all: a run
 * of them goes to emit straight from the caller's bytes, several records
 * in one call. That is the common case of a busy log, and the reason the
 * framer costs little more than the memchr that finds the newlines.
 *
 * Offsets: `off` is the file offset of the next byte fed, `line_off`
 * where the current line began (== off between lines), `rec_off` where
 * the open multiline record began. What is emitted or dropped ends at
 * the lowest of them that still holds something; that is
 * weir_records_consumed, and a checkpoint there never lands inside a
 * line or a record.
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#include "records_json.h"
#include "weir/records.h"

#define DEFAULT_MAX (64u << 10)
/* Keeps the JSON room (six bytes out per byte in) far from overflow. */
#define LIMIT_MAX (1u << 30)

struct weir_records {
    uint32_t max;
    enum weir_records_long on_long;
    enum weir_records_format format;
    pcre2_code *re; /* NULL: line mode */
    pcre2_match_data *md;
    bool jit;

    uint64_t off, line_off, rec_off;
    size_t line_len; /* the current line's bytes kept (<= max) */
    size_t rec_len;  /* the open record's bytes (<= max + 1; cut: its text) */
    bool rec_open, rec_cut, rec_skip;
    uint8_t *buf;

    uint8_t *json; /* the JSON record being made; NULL for raw */
    uint8_t *suffix;
    size_t suffix_len;
    struct weir__json_clock clock;

    struct weir_records_stats st;
};

static int compile(struct weir_records *r, const char *pattern, char *errbuf,
                   size_t errlen)
{
    int err;
    PCRE2_SIZE at;
    PCRE2_UCHAR msg[256];

    /* Lines are bytes; MATCH_INVALID_UTF lets a UTF-8 pattern run on
     * a line that is not valid UTF-8 instead of failing the match. */
    r->re = pcre2_compile((PCRE2_SPTR)pattern, PCRE2_ZERO_TERMINATED,
                          PCRE2_MATCH_INVALID_UTF, &err, &at, NULL);
    if (r->re == NULL) {
        if (err == PCRE2_ERROR_NOMEMORY)
            return -ENOMEM;
        if (pcre2_get_error_message(err, msg, sizeof(msg)) < 0)
            snprintf((char *)msg, sizeof(msg), "error %d", err);
        if (errbuf && errlen)
            snprintf(errbuf, errlen, "multiline_start: %s at offset %zu",
                     (char *)msg, (size_t)at);
        return -EINVAL;
    }
    /* JIT is an optimisation: a kernel or build without it (W^X
     * policies, an architecture PCRE2 has no JIT for) still matches.
     * JIT matching allocates nothing (its stack is on the machine's);
     * the interpreter keeps its backtracking frames in the match data,
     * allocated at its first match and grown only for deep patterns. */
    r->jit = pcre2_jit_compile(r->re, PCRE2_JIT_COMPLETE) == 0;
    r->md = pcre2_match_data_create_from_pattern(r->re, NULL);
    return r->md ? 0 : -ENOMEM;
}

int weir_records_new(struct weir_records **out,
                     const struct weir_records_options *o, char *errbuf,
                     size_t errlen)
{
    struct weir_records *r;
    uint32_t max = o->max_record ? o->max_record : DEFAULT_MAX;
    char host[HOST_NAME_MAX + 1] = "";
    const char *h = o->host, *path = o->path ? o->path : "";
    size_t buf_len, json_len = 0, suffix_room = 0;
    int rc;

    *out = NULL;
    if (max > LIMIT_MAX) {
        if (errbuf && errlen)
            snprintf(errbuf, errlen, "max_record: at most %u bytes", LIMIT_MAX);
        return -EINVAL;
    }
    buf_len = o->multiline_start ? 2 * ((size_t)max + 1) : (size_t)max + 1;
    if (o->format == WEIR_RECORDS_JSON) {
        if (h == NULL) {
            gethostname(host, sizeof(host) - 1);
            h = host;
        }
        suffix_room = WEIR__JSON_SUFFIX_ROOM(strlen(path), strlen(h));
        json_len =
            WEIR__JSON_FIXED + WEIR__JSON_PER_BYTE * (size_t)max + suffix_room;
    }
    /* One allocation: the struct, the buffer and the JSON room. */
    r = calloc(1, sizeof(*r) + buf_len + json_len + suffix_room);
    if (r == NULL)
        return -ENOMEM;
    r->max = max;
    r->on_long = o->on_long;
    r->format = o->format;
    r->buf = (uint8_t *)(r + 1);
    if (json_len) {
        r->json = r->buf + buf_len;
        r->suffix = r->json + json_len;
        r->suffix_len = weir__records_json_suffix(r->suffix, path, h);
        r->clock.sec = UINT64_MAX;
    }
    if (o->multiline_start) {
        rc = compile(r, o->multiline_start, errbuf, errlen);
        if (rc) {
            weir_records_free(r);
            return rc;
        }
    }
    *out = r;
    return 0;
}

void weir_records_free(struct weir_records *r)
{
    if (r == NULL)
        return;
    pcre2_match_data_free(r->md);
    pcre2_code_free(r->re);
    free(r);
}

/* Records out: raw as they are, or each in its JSON envelope. The state
 * is already past the record, so emit may ask weir_records_consumed. */
static int out(struct weir_records *r, const uint8_t *p, size_t n,
               uint64_t now_ns, weir_records_emit_fn emit, void *arg)
{
    if (r->json == NULL)
        return emit(arg, p, n, weir_records_consumed(r));
    n = weir__records_json(r->json, p, n - 1, r->suffix, r->suffix_len,
                           &r->clock, now_ns);
    return emit(arg, r->json, n, weir_records_consumed(r));
}

uint64_t weir_records_consumed(const struct weir_records *r)
{
    return r->rec_open ? r->rec_off : r->line_off;
}

static bool is_start(struct weir_records *r, const uint8_t *p, size_t n)
{
    int rc = r->jit ? pcre2_jit_match(r->re, p, n, 0, 0, r->md, NULL)
                    : pcre2_match(r->re, p, n, 0, 0, r->md, NULL);

    return rc >= 0;
}

/* A record or line `full` bytes long (its text, final '\n' left out):
 * whether it goes out, and counted how. */
static bool keep(struct weir_records *r, uint64_t full)
{
    if (full <= r->max)
        return true;
    if (r->on_long == WEIR_RECORDS_SKIP) {
        r->st.skipped++;
        return false;
    }
    r->st.truncated++;
    return true;
}

/* The open record goes out (or is dropped, when it was too long for
 * skip). Its bytes stay where they are until emit returns. */
static int close_record(struct weir_records *r, size_t len, bool cut, bool skip,
                        uint64_t now_ns, weir_records_emit_fn emit, void *arg)
{
    if (skip) {
        r->st.skipped++;
        return 0;
    }
    if (cut) {
        r->st.truncated++;
        r->buf[len++] = '\n';
    }
    r->st.records++;
    return out(r, r->buf, len, now_ns, emit, arg);
}

/* The line at `at` (kept bytes of it, `full` long, from file offset
 * `start`) opens a record. */
static void open_record(struct weir_records *r, uint64_t start, size_t at,
                        size_t kept, uint64_t full)
{
    r->rec_open = true;
    r->rec_off = start;
    r->rec_cut = r->rec_skip = false;
    r->rec_len = kept + 1;
    if (full > r->max) {
        r->rec_skip = r->on_long == WEIR_RECORDS_SKIP;
        r->rec_cut = !r->rec_skip;
        r->rec_len = r->rec_skip ? 0 : r->max;
    }
    if (at)
        memmove(r->buf, r->buf + at, r->rec_len);
}

/* A continuation line joins the open record, as much of it as fits. */
static void join_record(struct weir_records *r, size_t at, size_t kept,
                        uint64_t full)
{
    size_t take;

    if (r->rec_cut || r->rec_skip)
        return;
    if (r->rec_len + full <= r->max) {
        memmove(r->buf + r->rec_len, r->buf + at, kept + 1);
        r->rec_len += kept + 1;
        return;
    }
    if (r->on_long == WEIR_RECORDS_SKIP) {
        r->rec_skip = true;
        r->rec_len = 0;
        return;
    }
    /* A cut record holds its text without the final '\n' (put back when
     * it goes out). One that is full already takes nothing of the line,
     * and loses the newline it ends in rather than end in two. */
    take = r->rec_len < r->max ? r->max - r->rec_len : 0;
    memmove(r->buf + r->rec_len, r->buf + at, take);
    r->rec_cut = true;
    r->rec_len = take ? r->max : r->rec_len - 1;
}

/* The current line ended (a newline fed, or a flush): `full` is its
 * length without the newline, its first line_len bytes kept. */
static int line_end(struct weir_records *r, uint64_t full, uint64_t now_ns,
                    weir_records_emit_fn emit, void *arg)
{
    size_t at = r->rec_open ? (size_t)r->max + 1 : 0, kept = r->line_len;
    uint64_t start = r->line_off;
    int rc = 0;

    r->buf[at + kept] = '\n';
    r->line_off = r->off;
    r->line_len = 0;
    if (r->re && is_start(r, r->buf + at, kept)) {
        if (r->rec_open) {
            /* The record before is whole now. While it goes out, what
             * is held begins at this line. */
            r->rec_off = start;
            rc = close_record(r, r->rec_len, r->rec_cut, r->rec_skip, now_ns,
                              emit, arg);
        }
        open_record(r, start, at, kept, full);
        return rc;
    }
    if (r->rec_open) {
        join_record(r, at, kept, full);
        return 0;
    }
    if (!keep(r, full))
        return 0;
    r->st.records++;
    return out(r, r->buf, kept + 1, now_ns, emit, arg);
}

/* Raw lines without a pattern, none held: the run of whole lines at p,
 * each short enough, goes out as it lies. Returns its length. */
static size_t run_of_lines(struct weir_records *r, const uint8_t *p, size_t n,
                           uint64_t *count)
{
    size_t at = 0;

    *count = 0;
    while (at < n) {
        const uint8_t *nl = memchr(p + at, '\n', n - at);
        size_t len;

        if (nl == NULL)
            break;
        len = (size_t)(nl - (p + at));
        if (len > r->max)
            break;
        at += len + 1;
        ++*count;
    }
    return at;
}

size_t weir_records_feed(struct weir_records *r, const uint8_t *p, size_t n,
                         uint64_t now_ns, weir_records_emit_fn emit, void *arg)
{
    size_t i = 0;

    while (i < n) {
        const uint8_t *nl;
        size_t seg, room;

        if (r->re == NULL && r->json == NULL && r->off == r->line_off) {
            uint64_t count;
            size_t k = run_of_lines(r, p + i, n - i, &count);

            if (k) {
                r->off += k;
                r->line_off = r->off;
                r->st.records += count;
                i += k;
                if (emit(arg, p + i - k, k, r->off))
                    return i;
                continue;
            }
        }
        nl = memchr(p + i, '\n', n - i);
        seg = nl ? (size_t)(nl - (p + i)) : n - i;
        /* Past max_record a line is counted, not kept. */
        room = r->max - r->line_len;
        if (room > seg)
            room = seg;
        memcpy(r->buf + (r->rec_open ? (size_t)r->max + 1 : 0) + r->line_len,
               p + i, room);
        r->line_len += room;
        r->off += seg;
        i += seg;
        if (nl == NULL)
            break;
        i++;
        r->off++;
        if (line_end(r, r->off - 1 - r->line_off, now_ns, emit, arg))
            return i;
    }
    return n;
}

int weir_records_flush(struct weir_records *r, uint64_t now_ns,
                       weir_records_emit_fn emit, void *arg)
{
    int rc;

    /* A line without its newline ends here, as if the newline came; then
     * the record it closed or joined is whole too. */
    if (r->off > r->line_off) {
        rc = line_end(r, r->off - r->line_off, now_ns, emit, arg);
        if (rc)
            return rc;
    }
    if (!r->rec_open)
        return 0;
    r->rec_open = false;
    return close_record(r, r->rec_len, r->rec_cut, r->rec_skip, now_ns, emit,
                        arg);
}

size_t weir_records_pending(const struct weir_records *r)
{
    return (r->rec_open ? r->rec_len : 0) + r->line_len;
}

void weir_records_reset(struct weir_records *r, uint64_t offset)
{
    r->off = r->line_off = r->rec_off = offset;
    r->line_len = r->rec_len = 0;
    r->rec_open = r->rec_cut = r->rec_skip = false;
}

void weir_records_stats(const struct weir_records *r,
                        struct weir_records_stats *st)
{
    *st = r->st;
}
