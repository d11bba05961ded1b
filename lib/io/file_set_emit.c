/*
 * file_set_emit.c - the file-set source's records into the stream: each
 * file's framer (weir/records.h) cuts what was read into records, which
 * are copied into output buffers holding one file's records only. Each
 * buffer that goes to the stream is noted in the ledger (file_set_ack.c)
 * with the file's offset behind its last record, so that an
 * acknowledgement of the stream's bytes moves that file's offset.
 *
 * When the pool has no buffer left, what the framer emitted is kept in
 * the spill and placed first once buffers come back: the framer never
 * sees backpressure in the middle of a record.
 */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "file_set_impl.h"

void weir__fs_seal(struct fs_set *s)
{
    struct weir_buf *b = s->out;

    if (!b || s->out_len == 0)
        return;
    s->out = NULL;
    weir__fs_ledger_add(&s->led, s->emitted + s->out_len, s->cur_f,
                        s->out_consumed);
    s->emitted += s->out_len;
    weir__ep_count(&s->ep, s->out_len);
    if (s->ep.rs)
        weir_readable_enqueue(s->ep.rs, weir_chunk_of(b, s->out_len));
    else
        weir_buf_unref(b, s->ep.slot);
}

/*
 * A buffer not full goes to the stream when its queue is empty (a reader
 * waits, or soon will: its read pulls, and the pull seals). While the
 * reader is behind, records of the same file join the buffer instead of
 * making chunks of a few lines each, which would take the pool's buffers
 * for a few bytes each.
 */
void weir__fs_seal_maybe(struct fs_set *s)
{
    if (!s->ep.rs || weir_readable_queued(s->ep.rs) == 0)
        weir__fs_seal(s);
}

/* Records of f come next: a buffer of another file's goes first. */
static void fs_begin(struct fs_set *s, struct fs_file *f)
{
    if (s->out && s->out_len && s->cur_f != f)
        weir__fs_seal(s);
    s->cur_f = f;
    s->out_consumed = f->consumed;
}

/*
 * Places records (rec, len, whole ones) of s->cur_f into output buffers,
 * a full one going to the stream at once. A buffer is cut after the last
 * record that fits; a record longer than a buffer goes in pieces. Returns
 * the bytes placed: fewer than len when the pool is empty.
 */
static size_t fs_place(struct fs_set *s, const uint8_t *rec, size_t len,
                       uint64_t consumed)
{
    size_t done = 0;

    while (done < len) {
        size_t room, n = len - done;

        if (!s->out) {
            if (weir_pool_get(s->pool, &s->out) != 0) {
                s->out = NULL;
                return done;
            }
            s->out_len = 0;
        }
        room = s->buf_size - s->out_len;
        if (n <= room) {
            memcpy(s->out->data + s->out_len, rec + done, n);
            s->out_len += (uint32_t)n;
            s->out_consumed = consumed;
            return len;
        }
        {
            const uint8_t *nl = memrchr(rec + done, '\n', room);

            if (nl)
                n = (size_t)(nl - (rec + done)) + 1;
            else if (s->out_len > 0)
                n = 0; /* the record starts in the next buffer */
            else
                n = room;
        }
        memcpy(s->out->data + s->out_len, rec + done, n);
        s->out_len += (uint32_t)n;
        done += n;
        weir__fs_seal(s);
    }
    return done;
}

static int fs_emit(void *arg, const uint8_t *rec, size_t len, uint64_t consumed)
{
    struct fs_set *s = arg;
    size_t placed = s->spill_len ? 0 : fs_place(s, rec, len, consumed);

    if (placed == len)
        return 0;
    /* The pool is dry: keep the rest until buffers come back, and stop
     * the framer (it counts these records as taken). */
    if (s->spill_len + len - placed > s->spill_cap) {
        size_t cap = s->spill_len + len - placed + 4096;
        uint8_t *p = realloc(s->spill, cap);

        if (!p)
            return 1; /* dropped: unreachable in practice, and counted
                       * nowhere; the ledger stays behind it */
        s->spill = p;
        s->spill_cap = cap;
    }
    memcpy(s->spill + s->spill_len, rec + placed, len - placed);
    s->spill_len += len - placed;
    s->spill_consumed = consumed;
    return 1;
}

/* Places the spilled records; false while the pool is still dry. */
bool weir__fs_drain_spill(struct fs_set *s)
{
    size_t n = fs_place(s, s->spill, s->spill_len, s->spill_consumed);

    memmove(s->spill, s->spill + n, s->spill_len - n);
    s->spill_len -= n;
    if (s->spill_len)
        return false;
    weir__fs_seal_maybe(s);
    s->cur_f->consumed = s->out_consumed;
    return true;
}

/*
 * Everything f's framer emitted is placed: its offset may move to the
 * framer's, which also passes what it dropped (a line skipped) without a
 * record to say so.
 */
static void fs_caught_up(struct fs_set *s, struct fs_file *f)
{
    uint64_t c = weir_records_consumed(f->rec);

    if (c > s->out_consumed)
        s->out_consumed = c;
}

bool weir__fs_framer(struct fs_set *s, struct fs_file *f, uint64_t at)
{
    struct weir_records_options ro = s->o.records;

    if (f->rec)
        return true;
    ro.path = f->path;
    if (weir_records_new(&f->rec, &ro, NULL, 0) != 0)
        return false;
    weir_records_reset(f->rec, at);
    return true;
}

/* Frames the input left; false when it stopped on a dry pool. */
bool weir__fs_feed(struct fs_set *s)
{
    struct fs_file *f = s->in_f;
    size_t n;

    fs_begin(s, f);
    n = weir_records_feed(f->rec, s->in->data + s->in_pos,
                          s->in_len - s->in_pos, weir__fs_clock(CLOCK_REALTIME),
                          fs_emit, s);
    s->in_pos += (uint32_t)n;
    if (!s->spill_len) {
        fs_caught_up(s, f);
        weir__fs_seal_maybe(s);
        f->consumed = s->out_consumed;
    }
    if (s->in_pos < s->in_len)
        return false;
    weir_buf_unref(s->in, s->ep.slot);
    s->in = NULL;
    s->in_f = NULL;
    return true;
}

/* Emits what f's framer holds (a line without its newline). */
void weir__fs_flush(struct fs_set *s, struct fs_file *f)
{
    if (!f->rec || weir_records_pending(f->rec) == 0 || s->spill_len ||
        weir__fs_busy(s, f))
        return;
    fs_begin(s, f);
    weir_records_flush(f->rec, weir__fs_clock(CLOCK_REALTIME), fs_emit, s);
    if (!s->spill_len) {
        fs_caught_up(s, f);
        weir__fs_seal_maybe(s);
        f->consumed = s->out_consumed;
    }
}
