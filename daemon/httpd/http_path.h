/*
 * http_path.h - a request's target as a path under the served root: the
 * only way a URL becomes a file name. Everything that could name a file
 * outside the root, or one the operator did not mean to publish, is
 * refused here, before any system call sees it; the open beneath the
 * root (http_conn.c, RESOLVE_BENEATH) is the second wall, for symlinks.
 */
#ifndef WEIR_DAEMON_HTTP_PATH_H
#define WEIR_DAEMON_HTTP_PATH_H

#include <stdbool.h>
#include <stddef.h>

/* The longest decoded path taken (a longer one is 414). */
#define HTTP_PATH_MAX 4096

/*
 * Maps target (origin form "/a/b?q", or absolute form "http://h/a/b") to
 * a relative path in out[HTTP_PATH_MAX]: percent-decoded, its empty and
 * "." segments dropped, with no leading slash ("" for the root). Returns
 * 0, or the status to answer: 400 for what no honest client sends (a
 * ".." segment, an encoded NUL or control byte, a backslash, a bad
 * percent escape, bytes that are not UTF-8, overlong forms included),
 * 404 for a segment starting with "." unless dotfiles, 414 when too long.
 */
int http_path_map(const char *target, size_t len, bool dotfiles, char *out);

#endif
