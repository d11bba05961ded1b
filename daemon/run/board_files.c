/*
 * board_files.c - see board_files.h. The figures are series.c's snapshot,
 * as the rest of the board's: they agree with /metrics.
 */
#include "run/board_files.h"

#include <stdio.h>

static void put_pipeline(struct text *t, const struct pl_num *pn)
{
    const struct files_num *f = &pn->files;
    char read[32], behind[32], unread[32], lost[32], b[32];

    text_human_bytes(read, sizeof(read), (double)pn->read, "");
    text_human_bytes(behind, sizeof(behind), (double)f->behind, "");
    text_human_bytes(unread, sizeof(unread), (double)f->unread, "");
    text_human_bytes(lost, sizeof(lost), (double)f->lost, "");
    text_put(t,
             "\nfiles of %s: %llu watched, %llu open, %s read, %s behind, "
             "%s unread; lines truncated %llu, skipped %llu; rotations %llu; "
             "lost %s\n",
             pn->name, (unsigned long long)f->watched,
             (unsigned long long)f->open, read, behind, unread,
             (unsigned long long)f->truncated, (unsigned long long)f->skipped,
             (unsigned long long)f->rotations, lost);
    if (f->ntop == 0)
        return;
    text_put(t, "  %10s  %s\n", "BEHIND", "FILE");
    for (unsigned i = 0; i < f->ntop; i++) {
        text_human_bytes(b, sizeof(b), (double)f->top[i].behind, "");
        text_put(t, "  %10s  %s\n", b, f->top[i].path);
    }
}

void board_files_text(struct text *t, const struct series *snap)
{
    for (size_t i = 0; i < snap->npls; i++)
        if (snap->pls[i].files.any)
            put_pipeline(t, &snap->pls[i]);
}

void board_files_json(struct text *t, const struct files_num *f)
{
    if (!f->any)
        return;
    text_put(t,
             "\"files\":{\"watched\":%llu,\"open\":%llu,\"bytes_behind\":%llu,"
             "\"bytes_unread\":%llu,\"lines_truncated\":%llu,"
             "\"lines_skipped\":%llu,\"rotations\":%llu,\"bytes_lost\":%llu,"
             "\"most_behind\":[",
             (unsigned long long)f->watched, (unsigned long long)f->open,
             (unsigned long long)f->behind, (unsigned long long)f->unread,
             (unsigned long long)f->truncated, (unsigned long long)f->skipped,
             (unsigned long long)f->rotations, (unsigned long long)f->lost);
    for (unsigned i = 0; i < f->ntop; i++) {
        text_put(t, "%s{\"path\":", i ? "," : "");
        text_json_str(t, f->top[i].path);
        text_put(t, ",\"bytes_behind\":%llu}",
                 (unsigned long long)f->top[i].behind);
    }
    text_put(t, "]},");
}
