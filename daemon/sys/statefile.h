/*
 * statefile.h - small files in a state directory, replaced atomically:
 * a reader (after a crash too) finds the old text or the new, whole.
 */
#ifndef WEIR_DAEMON_STATEFILE_H
#define WEIR_DAEMON_STATEFILE_H

#include <stddef.h>

/* Writes dir/name.tmp, fsyncs it, renames it over dir/name and fsyncs
 * dir, making dir first when it does not exist (one level). 0 or
 * -errno; on failure dir/name is untouched. */
int statefile_write(const char *dir, const char *name, const char *text,
                    size_t len);
/* Reads dir/name (at most size - 1 bytes, NUL-terminated). Its length,
 * or -errno (-ENOENT: none). */
int statefile_read(const char *dir, const char *name, char *buf, size_t size);

#endif
