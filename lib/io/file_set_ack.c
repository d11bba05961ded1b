/*
 * file_set_ack.c - the ledger of the file-set source: for each chunk the
 * stream was given, where it ends in the stream, which file its records
 * came from and that file's offset behind them. An acknowledgement of the
 * stream's first n bytes pops the entries it covers and moves each file's
 * acknowledged offset, which is what a checkpoint records.
 *
 * Of a run of chunks from one file, the ledger keeps the first entry and
 * moves the last one on: at most two entries per change of file between
 * acks, not one per chunk, and an ack always pops the first, so a file
 * read without pause still sees its acknowledged offset move.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "file_set_impl.h"

int weir__fs_ledger_add(struct fs_ledger *l, uint64_t end, struct fs_file *f,
                        uint64_t consumed)
{
    if (l->tail >= l->head + 2 && l->e[l->tail - 1].f == f &&
        l->e[l->tail - 2].f == f) {
        l->e[l->tail - 1].end = end;
        l->e[l->tail - 1].consumed = consumed;
        return 0;
    }
    if (l->tail == l->cap) {
        if (l->head > 0) {
            memmove(l->e, l->e + l->head, (l->tail - l->head) * sizeof(*l->e));
            l->tail -= l->head;
            l->head = 0;
        }
        if (l->tail == l->cap) {
            size_t cap = l->cap ? l->cap * 2 : 64;
            struct fs_entry *e = realloc(l->e, cap * sizeof(*e));

            if (!e)
                return -ENOMEM;
            l->e = e;
            l->cap = cap;
        }
    }
    l->e[l->tail++] = (struct fs_entry){end, f, consumed};
    f->refs++;
    return 0;
}

size_t weir__fs_ledger_ack(struct fs_ledger *l, uint64_t acked,
                           void (*fn)(void *arg, struct fs_file *f), void *arg)
{
    size_t n = 0;

    while (l->head < l->tail && l->e[l->head].end <= acked) {
        struct fs_entry *e = &l->e[l->head++];

        e->f->acked = e->consumed;
        n++;
        if (--e->f->refs == 0 && fn)
            fn(arg, e->f);
    }
    if (l->head == l->tail)
        l->head = l->tail = 0;
    return n;
}

void weir__fs_ledger_free(struct fs_ledger *l)
{
    free(l->e);
    memset(l, 0, sizeof(*l));
}
