/*
 * records_stub.c - STAND-IN for lib/io/records.c, which is written
 * elsewhere against the same header; drop this file when that lands.
 * Plain lines only: no multiline_start (-EINVAL), no JSON (-EINVAL).
 *
 * What emit's non-zero means here (and what the file-set source relies
 * on): the records of that call were taken; feeding stops after them, and
 * weir_records_feed returns the input bytes up to their end.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "weir/records.h"

struct weir_records {
    uint8_t *buf; /* max + 1: a held line and its '\n' */
    size_t held;
    uint32_t max;
    enum weir_records_long on_long;
    bool over;           /* the held line went past max: the rest is dropped */
    uint64_t off;        /* the offset of the next byte fed */
    uint64_t line_start; /* of the line held */
    struct weir_records_stats st;
};

int weir_records_new(struct weir_records **out,
                     const struct weir_records_options *o, char *errbuf,
                     size_t errlen)
{
    struct weir_records *r;

    if (o->multiline_start || o->format != WEIR_RECORDS_RAW) {
        if (errbuf && errlen)
            strncpy(errbuf, "not in the stand-in framer", errlen - 1);
        return -EINVAL;
    }
    r = calloc(1, sizeof(*r));
    if (!r)
        return -ENOMEM;
    r->max = o->max_record ? o->max_record : 64 * 1024;
    r->on_long = o->on_long;
    r->buf = malloc((size_t)r->max + 1);
    if (!r->buf) {
        free(r);
        return -ENOMEM;
    }
    *out = r;
    return 0;
}

void weir_records_free(struct weir_records *r)
{
    if (!r)
        return;
    free(r->buf);
    free(r);
}

/* Ends the held line: a record, or nothing for an overlong one skipped. */
static int rec_end_line(struct weir_records *r, uint64_t consumed,
                        weir_records_emit_fn emit, void *arg)
{
    bool over = r->over;
    size_t n = r->held;

    r->held = 0;
    r->over = false;
    if (over && r->on_long == WEIR_RECORDS_SKIP) {
        r->st.skipped++;
        return 0;
    }
    if (over)
        r->st.truncated++;
    r->buf[n] = '\n';
    r->st.records++;
    return emit(arg, r->buf, n + 1, consumed);
}

static void rec_hold(struct weir_records *r, const uint8_t *p, size_t len,
                     uint64_t at)
{
    if (r->held == 0 && !r->over)
        r->line_start = at;
    if (r->over)
        return;
    if (r->held + len > r->max) {
        len = r->max - r->held;
        r->over = true;
    }
    memcpy(r->buf + r->held, p, len);
    r->held += len;
}

size_t weir_records_feed(struct weir_records *r, const uint8_t *p, size_t n,
                         uint64_t now_ns, weir_records_emit_fn emit, void *arg)
{
    uint64_t base = r->off;
    size_t i = 0, run = 0;

    (void)now_ns;
    while (i < n) {
        const uint8_t *nl = memchr(p + i, '\n', n - i);
        size_t end = nl ? (size_t)(nl - p) : n;

        /* Whole short lines with nothing held go out as they are, many
         * per call. */
        if (nl && r->held == 0 && !r->over && end - i <= r->max) {
            i = end + 1;
            r->st.records++;
            continue;
        }
        if (i > run && emit(arg, p + run, i - run, base + i)) {
            r->off = base + i;
            return i;
        }
        rec_hold(r, p + i, end - i, base + i);
        i = nl ? end + 1 : n;
        run = i;
        if (nl && rec_end_line(r, base + i, emit, arg)) {
            r->off = base + i;
            return i;
        }
    }
    r->off = base + n;
    if (i > run)
        emit(arg, p + run, i - run, base + i); /* the last: nothing to stop */
    return n;
}

int weir_records_flush(struct weir_records *r, uint64_t now_ns,
                       weir_records_emit_fn emit, void *arg)
{
    (void)now_ns;
    if (r->held == 0 && !r->over)
        return 0;
    return rec_end_line(r, r->off, emit, arg);
}

size_t weir_records_pending(const struct weir_records *r)
{
    return r->held + (r->over && r->held == 0);
}

uint64_t weir_records_consumed(const struct weir_records *r)
{
    return r->held || r->over ? r->line_start : r->off;
}

void weir_records_reset(struct weir_records *r, uint64_t offset)
{
    r->held = 0;
    r->over = false;
    r->off = offset;
}

void weir_records_stats(const struct weir_records *r,
                        struct weir_records_stats *st)
{
    *st = r->st;
}
