/*
 * fileset_live.c - see fileset_live.h. The figures move from the worker
 * to the main thread as checkpoint_set.c's texts do: a heap block in a
 * one-slot mailbox, exchanged; the main thread keeps the last it took,
 * so a status asked for twice between two samples shows the same.
 */
#include "stream/fileset_live.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "stream/stream_impl.h"
#include "weir/file_set.h"

/* The STREAM_FS_TOP files most behind, most first: an insertion into a
 * short sorted array, cheap beside the foreach itself. */
static int rank_file(void *arg, const struct weir_file_set_file *f)
{
    struct stream_fs_view *v = arg;
    uint64_t behind = f->read > f->acked ? f->read - f->acked : 0;
    unsigned k;

    if (behind == 0 ||
        (v->ntop == STREAM_FS_TOP && v->top[v->ntop - 1].behind >= behind))
        return 0;
    k = v->ntop < STREAM_FS_TOP ? v->ntop++ : STREAM_FS_TOP - 1;
    for (; k > 0 && v->top[k - 1].behind < behind; k--)
        v->top[k] = v->top[k - 1];
    v->top[k].behind = behind;
    snprintf(v->top[k].path, sizeof(v->top[k].path), "%s", f->path);
    return 0;
}

void stream_fs_sample(struct stream *s)
{
    struct weir_file_set_stats st;
    struct stream_fs_view *v;

    if (!s->src_set || !s->home.src ||
        weir_file_set_stats(s->home.src, &st) != 0 ||
        !(v = calloc(1, sizeof(*v))))
        return;
    v->watched = st.watched;
    v->open = st.open;
    /* Relaxed: a statistic, added by the source on this thread. */
    v->read = atomic_load_explicit(&s->bytes_in, memory_order_relaxed);
    v->behind = st.behind;
    v->unread = st.unread;
    v->lost = st.lost;
    v->rotations = st.rotations;
    v->truncated = st.records.truncated;
    v->skipped = st.records.skipped;
    /* None behind, none to rank: the walk of every file is spared. */
    if (st.behind > 0)
        weir_file_set_foreach(s->home.src, rank_file, v);
    /* Release: the block's contents before the pointer, for the main
     * thread's acquire; acquire: one handed back is this thread's own. */
    free(atomic_exchange_explicit(&s->fs_mail, v, memory_order_acq_rel));
}

bool stream_fs_view(const struct stream *cs, struct stream_fs_view *out)
{
    /* The mailbox and the main thread's copy are the main thread's to
     * move; what the stream is does not change. */
    struct stream *s = (struct stream *)cs;
    struct stream_fs_view *v =
        atomic_exchange_explicit(&s->fs_mail, NULL, memory_order_acq_rel);

    if (v) {
        free(s->fs_seen);
        s->fs_seen = v;
    }
    if (!s->fs_seen)
        return false;
    *out = *s->fs_seen;
    return true;
}
