/*
 * fuzz_records.c - libFuzzer target: a file's bytes through the record
 * framer (weir/records.h), cut into feeds of the sizes the input picks,
 * with an emit that sometimes stops the feed.
 *
 * The first two bytes pick the options: max_record (1..64), truncate or
 * skip, a multiline pattern or none, raw or JSON; the feed sizes and how
 * often emit stops. What must hold: every record ends in '\n'; a raw
 * record (a raw line in a batch of them) is at most max_record + 1 bytes;
 * a JSON record is one line with no control byte in it; consumed never
 * moves back and never passes the bytes fed, and after the last flush it
 * is exactly what was fed; and the bytes out are the bytes one feed of
 * the whole input gives.
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "weir/records.h"

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define NOW 1796558400123000000ull

static const char *const patterns[] = {"^\\S", "^\\d{4}-", "^(a|b)+$", "x"};

struct out {
    uint8_t *buf;
    size_t len, cap;
    uint32_t max;
    bool raw_lines, raw_records;
    uint64_t fed, consumed;
    unsigned stop_every, calls;
};

static void check_raw(const struct out *o, const uint8_t *rec, size_t len)
{
    if (o->raw_records && len > (size_t)o->max + 1)
        abort();
    if (!o->raw_lines)
        return;
    for (size_t at = 0; at < len;) {
        const uint8_t *nl = memchr(rec + at, '\n', len - at);

        if (nl == NULL || (size_t)(nl - (rec + at)) > o->max)
            abort();
        at = (size_t)(nl - rec) + 1;
    }
}

static int emit(void *arg, const uint8_t *rec, size_t len, uint64_t consumed)
{
    struct out *o = arg;

    if (len == 0 || rec[len - 1] != '\n' || consumed < o->consumed ||
        consumed > o->fed)
        abort();
    if (!o->raw_lines && !o->raw_records) {
        for (size_t i = 0; i + 1 < len; i++)
            if (rec[i] < 0x20)
                abort();
    }
    check_raw(o, rec, len);
    if (o->len + len > o->cap)
        abort(); /* more out than the bound allows */
    memcpy(o->buf + o->len, rec, len);
    o->len += len;
    o->consumed = consumed;
    return o->stop_every && ++o->calls % o->stop_every == 0;
}

/* Feeds p in pieces; `fed` runs ahead of each feed by its length, as the
 * file offset past what was handed over. */
static void run(struct weir_records *r, struct out *o, const uint8_t *p,
                size_t n, const uint8_t *cuts, size_t ncuts)
{
    size_t at = 0, k = 0;

    while (at < n) {
        size_t piece = ncuts ? (size_t)cuts[k++ % ncuts] + 1 : n;
        size_t took;

        if (piece > n - at)
            piece = n - at;
        o->fed = at + piece;
        took = weir_records_feed(r, p + at, piece, NOW, emit, o);
        if (took > piece || (took < piece && !o->stop_every))
            abort();
        at += took;
        o->fed = at;
        if (weir_records_consumed(r) > at)
            abort();
    }
    while (weir_records_flush(r, NOW, emit, o))
        ;
    if (weir_records_pending(r) != 0 || weir_records_consumed(r) != n)
        abort();
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct weir_records_options opt = {.host = "h", .path = "/p"};
    struct weir_records *r;
    struct out one = {0}, cut = {0};
    const uint8_t *p, *cuts;
    size_t n, ncuts, cap;

    if (size < 3)
        return 0;
    opt.max_record = (data[0] & 63) + 1u;
    opt.on_long = data[0] & 64 ? WEIR_RECORDS_SKIP : WEIR_RECORDS_TRUNCATE;
    opt.format = data[0] & 128 ? WEIR_RECORDS_JSON : WEIR_RECORDS_RAW;
    if (data[1] & 4)
        opt.multiline_start = patterns[data[1] & 3];
    /* The low 3 bits of data[2] say how many bytes after it are the feed
     * sizes; its high bits how often emit stops (0: never). */
    ncuts = data[2] & 7;
    if (size < 3 + ncuts)
        return 0;
    cuts = data + 3;
    p = data + 3 + ncuts;
    n = size - 3 - ncuts;
    if (weir_records_new(&r, &opt, NULL, 0) != 0)
        abort();
    /* Raw output is at most the input and one '\n' per record; JSON
     * six bytes per byte and its envelope per record. */
    cap = (n + 1) * (opt.format == WEIR_RECORDS_JSON ? 6 + 80 : 2);
    one.buf = malloc(cap);
    cut.buf = malloc(cap);
    if (one.buf == NULL || cut.buf == NULL)
        abort();
    one.cap = cut.cap = cap;
    one.max = cut.max = opt.max_record;
    one.raw_lines = cut.raw_lines =
        opt.format == WEIR_RECORDS_RAW && !opt.multiline_start;
    one.raw_records = cut.raw_records =
        opt.format == WEIR_RECORDS_RAW && opt.multiline_start;
    cut.stop_every = data[2] >> 3;

    run(r, &one, p, n, NULL, 0);
    weir_records_reset(r, 0);
    run(r, &cut, p, n, cuts, ncuts);
    if (one.len != cut.len || memcmp(one.buf, cut.buf, one.len) != 0)
        abort();
    free(one.buf);
    free(cut.buf);
    weir_records_free(r);
    return 0;
}
