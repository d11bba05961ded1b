/*
 * iter.c - the iterator loop over a readable stream (for-await in C).
 *
 * The loop reads synchronously for as long as chunks are there; when a read
 * parks, the loop resumes from the read's callback. A callback that fires
 * inside the source's pull (the source enqueued) re-enters the loop, whose
 * next read then parks behind the running pull rather than pulling again,
 * so the stack depth stays bounded however long the stream is.
 */
#include <errno.h>

#include "stream_impl.h"

static void iter_read_cb(void *ctx, int rc, struct weir_chunk chunk);

/* Ends the loop: the stream is left unlocked. */
static int iter_finish(struct weir_iter *it, int rc)
{
    weir_reader_release(&it->reader);
    return rc == WEIR_DONE ? 0 : rc;
}

/* Hands one chunk to `each`; true when the loop must stop. */
static bool iter_each(struct weir_iter *it, struct weir_chunk chunk)
{
    if (it->each(it->ctx, chunk) == 0)
        return false;
    weir_reader_cancel(&it->reader, -ECANCELED);
    return true;
}

static int iter_loop(struct weir_iter *it)
{
    struct weir_chunk chunk;
    int rc;

    while ((rc = weir_reader_read_as_(&it->reader, &chunk, iter_read_cb, it,
                                      true)) == 0) {
        if (iter_each(it, chunk))
            return iter_finish(it, 0);
    }
    if (rc == WEIR_PENDING)
        return rc;
    return iter_finish(it, rc);
}

static void iter_read_cb(void *ctx, int rc, struct weir_chunk chunk)
{
    struct weir_iter *it = ctx;

    if (rc == 0) {
        if (iter_each(it, chunk))
            rc = iter_finish(it, 0);
        else
            rc = iter_loop(it);
        if (rc == WEIR_PENDING)
            return;
    } else {
        rc = iter_finish(it, rc);
    }
    it->done(it->ctx, rc);
}

int weir_iter_run(struct weir_iter *it, struct weir_readable *rs,
                  weir_iter_each_fn each, weir_done_cb done, void *ctx)
{
    int rc = weir_reader_acquire(&it->reader, rs);

    if (rc)
        return rc;
    it->each = each;
    it->done = done;
    it->ctx = ctx;
    return iter_loop(it);
}
