/*
 * iter.c - the iterator over a readable stream: the loop (for-await in C)
 * and next/return for code that drives it by hand.
 *
 * The loop reads synchronously for as long as chunks are there; when a read
 * parks, the loop resumes from the read's callback. A callback that fires
 * inside the source's pull (the source enqueued) re-enters the loop, whose
 * next read then parks behind the running pull rather than pulling again,
 * so the stack depth stays bounded however long the stream is.
 */
#include <errno.h>
#include <string.h>

#include "stream_impl.h"

static void iter_read_cb(void *ctx, int rc, struct weir_chunk chunk);

/* Ends the iteration: the stream is left unlocked. */
static int iter_finish(struct weir_iter *it, int rc)
{
    weir_reader_release(&it->reader);
    return rc == WEIR_DONE ? 0 : rc;
}

/* Stops early: cancels unless told not to. */
static int iter_stop(struct weir_iter *it, int reason)
{
    int rc = 0;

    if (!(it->flags & WEIR_ITER_PREVENT_CANCEL))
        rc = weir_reader_cancel(&it->reader, reason);
    weir_reader_release(&it->reader);
    return rc;
}

/* Hands one chunk to `each`; true when the loop must stop. The chunk is
 * passed on from registers: the by-value argument is built with 8-byte
 * stores rather than copied as a block from a chunk just stored field by
 * field, which the store buffer cannot forward (see weir_chunk_copy_). */
static inline __attribute__((always_inline)) bool
iter_each(struct weir_iter *it, struct weir_chunk chunk)
{
    typedef uint64_t pair __attribute__((vector_size(16)));
    pair head = {(uint64_t)(uintptr_t)chunk.buf,
                 (uint64_t)(uintptr_t)chunk.data};
    struct weir_chunk arg;

    uint64_t tail = chunk.len;

    _Static_assert(sizeof(struct weir_chunk) == 24, "chunk layout");
    memcpy(&arg, &head, sizeof(head));
    memcpy((char *)&arg + 16, &tail, sizeof(tail));
    if (it->each(it->ctx, arg) == 0)
        return false;
    iter_stop(it, -ECANCELED);
    return true;
}

static int iter_run_loop(struct weir_iter *it)
{
    struct weir_chunk chunk;
    int rc;

    while ((rc = weir_reader_read_as_(&it->reader, &chunk, iter_read_cb, it,
                                      false)) == 0) {
        if (iter_each(it, chunk))
            return 0;
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
            rc = 0;
        else
            rc = iter_run_loop(it);
        if (rc == WEIR_PENDING)
            return;
    } else {
        rc = iter_finish(it, rc);
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

int weir_iter_loop(struct weir_iter *it, weir_iter_each_fn each,
                   weir_done_cb done, void *ctx)
{
    if (!each || !it->reader.stream)
        return -EINVAL;
    it->each = each;
    it->done = done;
    it->ctx = ctx;
    return iter_run_loop(it);
}

int weir_iter_run(struct weir_iter *it, struct weir_readable *rs,
                  weir_iter_each_fn each, weir_done_cb done, void *ctx)
{
    int rc;

    if (!each)
        return -EINVAL;
    rc = weir_iter_open(it, rs, 0);
    if (rc)
        return rc;
    return weir_iter_loop(it, each, done, ctx);
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
