/*
 * http_index.h - a directory's listing as an HTML page, for index=yes:
 * the names of its regular files and directories (HTML-escaped in the
 * text, percent-encoded in the links), sorted, directories first, with
 * their sizes and modification times.
 *
 * What the listing names obeys the rules of what may be fetched: no
 * dotfile unless dotfiles, and a symlink only when it resolves beneath
 * the root (unless follow_symlinks) to a file or a directory.
 */
#ifndef WEIR_DAEMON_HTTP_INDEX_H
#define WEIR_DAEMON_HTTP_INDEX_H

#include <stdbool.h>
#include <stddef.h>

/* The most entries a listing reads; a directory with more says so at the
 * end of its page, so that one page's memory has a bound. */
#define HTTP_INDEX_MAX 10000

struct http_index_options {
    int root_fd;     /* the served root */
    int dir_fd;      /* the directory, opened beneath it (read here) */
    const char *rel; /* its path under the root: "" or "a/b" */
    bool dotfiles, follow_symlinks;
};

/* Makes the page into *out (malloc'd, the caller frees it) of *len
 * bytes. Returns 0, -ENOMEM, or the -errno of reading the directory. */
int http_index_page(const struct http_index_options *o, char **out,
                    size_t *len);

/* Percent-encodes s[0..n) into out (room for 3n+1) for a URL path
 * segment: everything but letters, digits and -._~. Returns its length. */
size_t http_index_encode(const char *s, size_t n, char *out);

#endif
