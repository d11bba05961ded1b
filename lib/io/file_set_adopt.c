/*
 * file_set_adopt.c - where a file its owner's checkpoint lists went while
 * no weir was watching: renamed away from the patterns (app.log is
 * app.log.1 now), or copied and then truncated (its bytes are in the
 * copy). Looked for once, at the first scan, in the directory the file was
 * in: by its fingerprint, or by device and inode for a file too short to
 * have one. The rest of it, past the checkpoint, is read as a rotated
 * file's; without this a restart during a rotation would lose it.
 */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "file_set_impl.h"

/* Entries looked at in one directory: a directory of more is not one a
 * rotation writes to, and a start must not stall on it. */
#define ADOPT_SCAN_MAX 10000

static bool adopt_match(const struct weir_file_set_file *k, uint32_t fplen,
                        const char *path, const struct stat *st)
{
    struct stat again;

    /* Read to its offset already, it is taken all the same: a writer
     * that has not reopened yet may still append to it (rotate_wait). */
    if (!S_ISREG(st->st_mode) || (uint64_t)st->st_size < k->acked)
        return false; /* shorter than its offset: another file */
    if (k->fingerprint == 0)
        return (uint64_t)st->st_dev == k->dev && (uint64_t)st->st_ino == k->ino;
    if ((uint64_t)st->st_size < fplen || k->fingerprint_len != fplen)
        return false;
    return weir__fs_fingerprint_path(path, fplen, &again) == k->fingerprint;
}

char *weir__fs_find_known(const struct weir_file_set_file *k, uint32_t fplen,
                          struct stat *st)
{
    const char *slash = strrchr(k->path, '/');
    char *dir, *found = NULL;
    struct dirent *e;
    unsigned seen = 0;
    DIR *dp;

    if (!slash)
        return NULL;
    dir = strndup(k->path, (size_t)(slash - k->path) + 1);
    if (!dir || !(dp = opendir(dir))) {
        free(dir);
        return NULL;
    }
    while (!found && seen++ < ADOPT_SCAN_MAX && (e = readdir(dp))) {
        char *full;

        if (e->d_name[0] == '.' || weir__fs_compressed(e->d_name))
            continue;
        /* Without a fingerprint only the inode can tell: no stat for
         * the others. */
        if (k->fingerprint == 0 && e->d_ino != k->ino)
            continue;
        if (asprintf(&full, "%s%s", dir, e->d_name) < 0)
            break;
        if (stat(full, st) == 0 && adopt_match(k, fplen, full, st))
            found = full;
        else
            free(full);
    }
    closedir(dp);
    free(dir);
    return found;
}
