/*
 * http_records.c - the http sink's input as records, and the batches
 * that hold them. A batch keeps its records' own bytes (not the body) so
 * that a _bulk answer with failed items sends those again, and a rejected
 * record can be written to the dead-letter file as it came.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "http_impl.h"

static int grow(void **p, size_t *cap, size_t need, size_t elem)
{
    size_t n = *cap ? *cap : 64;
    void *q;

    if (need <= *cap)
        return 0;
    while (n < need)
        n *= 2;
    q = realloc(*p, n * elem);
    if (!q)
        return -ENOMEM;
    *p = q;
    *cap = n;
    return 0;
}

int weir__hb_add(struct hbatch *b, const uint8_t *p, size_t len,
                 uint64_t in_len)
{
    size_t rc_cap = b->rec_cap;
    int rc = grow((void **)&b->raw, &b->raw_cap, b->raw_len + len + 1, 1);

    if (rc == 0)
        rc = grow((void **)&b->recs, &rc_cap, (size_t)b->nrec + 1,
                  sizeof(*b->recs));
    if (rc)
        return rc;
    b->rec_cap = (uint32_t)rc_cap;
    if (len)
        memcpy(b->raw + b->raw_len, p, len);
    b->recs[b->nrec++] = (struct hb_rec){(uint32_t)b->raw_len, (uint32_t)len};
    b->raw_len += len;
    b->in_len += in_len;
    return 0;
}

int weir__hb_seal(struct hbatch *b)
{
    b->todo = malloc(((size_t)b->nrec + 1) * sizeof(*b->todo));
    if (!b->todo)
        return -ENOMEM;
    for (uint32_t i = 0; i < b->nrec; i++)
        b->todo[i] = i;
    b->ntodo = b->nrec;
    b->state = HB_READY;
    return 0;
}

size_t weir__hb_size(const struct hbatch *b)
{
    return b->raw_len + (size_t)b->nrec * sizeof(struct hb_rec);
}

void weir__hb_free(struct hbatch *b)
{
    if (!b)
        return;
    free(b->raw);
    free(b->recs);
    free(b->todo);
    free(b);
}

static int part_put(struct hcut *c, const uint8_t *p, size_t n)
{
    int rc = grow((void **)&c->part, &c->cap, c->len + n, 1);

    if (rc)
        return rc;
    memcpy(c->part + c->len, p, n);
    c->len += n;
    return 0;
}

int weir__hcut_feed(struct hcut *c, const uint8_t *p, size_t n, hcut_fn fn,
                    void *arg)
{
    while (n) {
        const uint8_t *nl = memchr(p, '\n', n);
        size_t take = nl ? (size_t)(nl - p) : n;
        int rc;

        /* A line that would pass max: what is held so far is a record. */
        if (c->len + take > c->max) {
            size_t room = c->max - c->len;

            if ((rc = part_put(c, p, room)) ||
                (rc = fn(arg, c->part, c->len, c->len)))
                return rc;
            c->len = 0;
            p += room;
            n -= room;
            continue;
        }
        if (!nl)
            return part_put(c, p, n);
        if (c->len == 0) {
            /* The common case: a whole line in the chunk, no copy. */
            rc = fn(arg, p, take, take + 1);
        } else {
            if ((rc = part_put(c, p, take)))
                return rc;
            rc = fn(arg, c->part, c->len, c->len + 1);
            c->len = 0;
        }
        if (rc)
            return rc;
        p += take + 1;
        n -= take + 1;
    }
    return 0;
}

int weir__hcut_finish(struct hcut *c, hcut_fn fn, void *arg)
{
    int rc;

    if (c->len == 0)
        return 0;
    rc = fn(arg, c->part, c->len, c->len);
    c->len = 0;
    return rc;
}

void weir__hcut_free(struct hcut *c)
{
    free(c->part);
    c->part = NULL;
    c->len = c->cap = 0;
}
