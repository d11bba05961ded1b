/*
 * endpoint_ledger.c - see endpoint_ledger.h. The sinks copy a record out
 * when they send it, so nothing here keeps its bytes but a line still
 * incomplete, or the one record a full queue refused.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "endpoint_ledger.h"

/* ---- the cutter ---- */

static int part_put(struct lcut *c, const uint8_t *p, size_t n)
{
    if (c->len + n > c->cap) {
        size_t cap = c->cap ? c->cap : 256;
        uint8_t *q;

        while (cap < c->len + n)
            cap *= 2;
        q = realloc(c->part, cap);
        if (!q)
            return -ENOMEM;
        c->part = q;
        c->cap = cap;
    }
    memcpy(c->part + c->len, p, n);
    c->len += n;
    return 0;
}

/* fn refused the record: keep it whole in part (it may be part already). */
static int hold(struct lcut *c, const uint8_t *p, size_t n, uint64_t in_len,
                int why)
{
    int rc = 0;

    if (p != c->part) {
        c->len = 0;
        rc = part_put(c, p, n);
    }
    c->held = true;
    c->held_in_len = in_len;
    return rc ? rc : why;
}

static int offer(struct lcut *c, const uint8_t *p, size_t n, uint64_t in_len,
                 lcut_fn fn, void *arg)
{
    int rc = fn(arg, p, n, in_len);

    if (rc)
        return hold(c, p, n, in_len, rc);
    if (p == c->part)
        c->len = 0;
    return 0;
}

int weir__lcut_feed(struct lcut *c, const uint8_t *p, size_t n, lcut_fn fn,
                    void *arg, size_t *used)
{
    size_t done = 0;
    int rc = 0;

    while (done < n && rc == 0) {
        const uint8_t *s = p + done;
        size_t left = n - done;
        const uint8_t *nl = memchr(s, '\n', left);
        size_t take = nl ? (size_t)(nl - s) : left;

        if (c->len + take > c->max) {
            /* A line that would pass max: what is held so far is one. */
            size_t room = c->max - c->len;

            if ((rc = part_put(c, s, room)) != 0)
                break;
            done += room;
            rc = offer(c, c->part, c->len, c->len, fn, arg);
        } else if (!nl) {
            rc = part_put(c, s, left);
            if (rc == 0)
                done = n;
        } else if (c->len == 0) {
            /* The common case: a whole line in the chunk, no copy. */
            done += take + 1;
            rc = offer(c, s, take, take + 1, fn, arg);
        } else {
            if ((rc = part_put(c, s, take)) != 0)
                break;
            done += take + 1;
            rc = offer(c, c->part, c->len, c->len + 1, fn, arg);
        }
    }
    *used = done;
    return rc;
}

int weir__lcut_retry(struct lcut *c, lcut_fn fn, void *arg)
{
    int rc;

    if (!c->held)
        return 0;
    rc = fn(arg, c->part, c->len, c->held_in_len);
    if (rc)
        return rc;
    c->held = false;
    c->len = 0;
    return 0;
}

int weir__lcut_finish(struct lcut *c, lcut_fn fn, void *arg)
{
    if (c->len == 0)
        return 0;
    return offer(c, c->part, c->len, c->len, fn, arg);
}

void weir__lcut_free(struct lcut *c)
{
    free(c->part);
    c->part = NULL;
    c->len = c->cap = 0;
    c->held = false;
}

/* ---- the ledger ---- */

int weir__ledger_push(struct ledger *l, uint64_t in_end, bool done,
                      uint64_t *seq)
{
    if (ledger_out(l) == l->cap) {
        size_t cap = l->cap ? l->cap * 2 : 1024;
        struct lrec *v = malloc(cap * sizeof(*v));

        if (!v)
            return -ENOMEM;
        /* Unwrapped into the new ring at the same sequence numbers. */
        for (uint64_t s = l->head; s < l->tail; s++)
            v[s & (cap - 1)] = l->v[s & (l->cap - 1)];
        free(l->v);
        l->v = v;
        l->cap = cap;
    }
    l->v[l->tail & (l->cap - 1)] = (struct lrec){in_end, done};
    *seq = l->tail++;
    return 0;
}

uint64_t weir__ledger_done(struct ledger *l, uint64_t seq)
{
    uint64_t was = l->acked;

    if (seq >= l->head && seq < l->tail)
        l->v[seq & (l->cap - 1)].done = true;
    while (l->head < l->tail && l->v[l->head & (l->cap - 1)].done)
        l->acked = l->v[l->head++ & (l->cap - 1)].in_end;
    return l->acked - was;
}

bool weir__ledger_find(const struct ledger *l, uint64_t off, uint64_t *seq)
{
    uint64_t lo = l->head, hi = l->tail;

    /* The first record whose end is past off: records are contiguous. */
    while (lo < hi) {
        uint64_t mid = lo + (hi - lo) / 2;

        if (l->v[mid & (l->cap - 1)].in_end > off)
            hi = mid;
        else
            lo = mid + 1;
    }
    if (lo == l->tail || off < l->acked || l->v[lo & (l->cap - 1)].done)
        return false;
    *seq = lo;
    return true;
}

void weir__ledger_free(struct ledger *l)
{
    free(l->v);
    l->v = NULL;
    l->cap = 0;
}

size_t weir__json_escape_to(char *buf, size_t cap, const uint8_t *s, size_t n)
{
    size_t o = 0;

    for (size_t i = 0; i < n; i++) {
        uint8_t ch = s[i];

        if (o + 7 > cap)
            break;
        if (ch == '"' || ch == '\\') {
            buf[o++] = '\\';
            buf[o++] = (char)ch;
        } else if (ch < 0x20) {
            o += (size_t)snprintf(buf + o, cap - o, "\\u%04x", ch);
        } else {
            buf[o++] = (char)ch;
        }
    }
    return o;
}
