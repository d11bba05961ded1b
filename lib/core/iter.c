/*
 * iter.c - the iterator over a readable stream: the out-of-line halves of
 * the loop (for-await in C), and next/return for code that drives it by
 * hand.
 *
 * The loop itself is inline (weir/readable.h), so that a caller's each can
 * be inlined into it. It reads synchronously for as long as chunks are
 * there; when a read parks, the loop resumes from the read's callback. A
 * callback that fires inside the source's pull (the source enqueued)
 * re-enters the loop, whose next read then parks behind the running pull
 * rather than pulling again, so the stack depth stays bounded however long
 * the stream is.
 */
#include <errno.h>

#include "stream_impl.h"

/* Ends the iteration: the stream is left unlocked. */
int weir_iter_end_(struct weir_iter *it, int rc)
{
    weir_reader_release(&it->reader);
    return rc == WEIR_DONE ? 0 : rc;
}

/* Stops early: cancels unless told not to, and releases. */
static int iter_stop(struct weir_iter *it, int reason)
{
    int rc = 0;

    if (!(it->flags & WEIR_ITER_PREVENT_CANCEL))
        rc = weir_reader_cancel(&it->reader, reason);
    weir_reader_release(&it->reader);
    return rc;
}

/* each stopped the loop: like breaking out of it, -ECANCELED. */
int weir_iter_stop_(struct weir_iter *it)
{
    iter_stop(it, -ECANCELED);
    return 0;
}

/* A parked read of the loop was answered: hands the chunk over and goes
 * on (or ends), then reports to done if the loop ended. */
void weir_iter_read_cb_(void *ctx, int rc, struct weir_chunk chunk)
{
    struct weir_iter *it = ctx;

    if (rc == 0) {
        if (it->each(it->ctx, chunk) != 0)
            rc = weir_iter_stop_(it);
        else
            rc = weir_iter_loop_(it, it->each, it->ctx);
        if (rc == WEIR_PENDING)
            return;
    } else {
        rc = weir_iter_end_(it, rc);
    }
    if (it->done)
        it->done(it->ctx, rc);
}

int weir_iter_open(struct weir_iter *it, struct weir_readable *rs,
                   unsigned flags)
{
    int rc = weir_reader_acquire(&it->reader, rs);

    if (rc)
        return rc;
    it->each = NULL;
    it->done = NULL;
    it->ctx = NULL;
    it->next_cb = NULL;
    it->next_ctx = NULL;
    it->flags = flags;
    return 0;
}

static void iter_next_cb(void *ctx, int rc, struct weir_chunk chunk)
{
    struct weir_iter *it = ctx;
    weir_read_cb cb = it->next_cb;

    it->next_cb = NULL;
    if (rc != 0)
        weir_reader_release(&it->reader);
    cb(it->next_ctx, rc, chunk);
}

int weir_iter_next(struct weir_iter *it, struct weir_chunk *out,
                   weir_read_cb cb, void *ctx)
{
    int rc;

    if (!it->reader.stream)
        return WEIR_DONE;
    if (it->next_cb)
        return -EBUSY;
    it->next_cb = cb ? cb : NULL;
    it->next_ctx = ctx;
    rc = weir_reader_read(&it->reader, out, cb ? iter_next_cb : NULL, it);
    if (rc == WEIR_PENDING)
        return rc;
    it->next_cb = NULL;
    if (rc != 0 && rc != -EINVAL)
        weir_reader_release(&it->reader);
    return rc;
}

int weir_iter_return(struct weir_iter *it, int reason)
{
    if (!it->reader.stream)
        return 0;
    return iter_stop(it, reason);
}
