/*
 * statefile.h - small files in a state directory, replaced atomically:
 * a reader (after a crash too) finds the old text or the new, whole.
 *
 * Names are relative to the directory, opened once per call, so a state
 * directory as long as the kernel allows works. Only regular files are
 * read or replaced: a FIFO or a device at the name is refused at once
 * (-EFTYPE_STATE), never opened in a way that could block.
 */
#ifndef WEIR_DAEMON_STATEFILE_H
#define WEIR_DAEMON_STATEFILE_H

#include <errno.h>
#include <stdbool.h>
#include <stddef.h>

/* Something other than a regular file is at the name. */
#define EFTYPE_STATE EMEDIUMTYPE

/* The directory dir opened (O_DIRECTORY), made first when create is set
 * and it does not exist (one level, mode 0750). The fd, or -errno. */
int statefile_dir(const char *dir, bool create);
/* Writes dir/name.tmp, fsyncs it, renames it over dir/name and fsyncs
 * dir, making dir first when it does not exist (one level). 0 or
 * -errno; on failure dir/name is untouched. */
int statefile_write(const char *dir, const char *name, const char *text,
                    size_t len);
/* Reads dir/name (at most size - 1 bytes, NUL-terminated). Its length,
 * or -errno (-ENOENT: none; -EFBIG: longer than size - 1). */
int statefile_read(const char *dir, const char *name, char *buf, size_t size);

#endif
