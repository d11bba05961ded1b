/*
 * http_file_cache.h - the files a worker's HTTP connections opened, kept
 * open for the next requests of the same path.
 *
 * A hit costs one statx(2) of the path where a miss costs an openat2, an
 * fstat and a close: the path is looked up again at every request, and
 * the descriptor kept is used only while the path still leads to the
 * inode it holds. A file renamed over, deleted or replaced is never
 * served stale, and a file written in place is seen as it is now (its
 * size and mtime come from that statx). The descriptor was opened with
 * the request's own resolve rules (beneath the root), so a hit serves no
 * inode those rules would not have opened by that path.
 *
 * At most HTTP_FILE_CACHE_MAX files per cache, the least recently asked
 * for closed first; a file the cache let go while an answer still sends
 * from it is closed when that answer lets it go. A deleted file stays
 * open (and its blocks allocated) until its entry is asked for again or
 * pushed out, as in any server's open file cache.
 *
 * Owner thread only: one cache per worker.
 */
#ifndef WEIR_DAEMON_HTTP_FILE_CACHE_H
#define WEIR_DAEMON_HTTP_FILE_CACHE_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/stat.h>

#define HTTP_FILE_CACHE_MAX 256

struct http_file_cache;
struct http_file;

struct http_file_cache *http_file_cache_new(void);
/* Closes every file; none may be held. NULL is ignored. */
void http_file_cache_free(struct http_file_cache *fc);

/*
 * The regular file at path (relative to dirfd, or absolute), opened
 * before with these resolve flags (struct open_how's), if the path still
 * leads to it: its descriptor in *fd, its stat now in *st (mode, size,
 * mtime, dev, ino), and a hold on it until http_file_put. NULL: not
 * cached, or no longer that file (the caller opens it and may add it).
 */
struct http_file *http_file_get(struct http_file_cache *fc, int dirfd,
                                const char *path, uint64_t resolve, int *fd,
                                struct stat *st);

/*
 * Keeps fd (a regular file just opened at path with these resolve flags;
 * st its fstat) for the next requests, and returns the hold on it that
 * the caller has now, or NULL (no memory: fd stays the caller's).
 */
struct http_file *http_file_add(struct http_file_cache *fc, int dirfd,
                                const char *path, uint64_t resolve, int fd,
                                const struct stat *st);

/* Lets go of every file kept (those an answer holds, at its put): at the
 * fd limit, the kept files give way to a request's. False when none was
 * kept. */
bool http_file_cache_trim(struct http_file_cache *fc);

/* Lets go of a hold taken by http_file_get or http_file_add. */
void http_file_put(struct http_file_cache *fc, struct http_file *f);

#endif
