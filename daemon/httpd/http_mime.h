/*
 * http_mime.h - a file's Content-Type from its name's extension, as the
 * system's /etc/mime.types (Debian's media-types) says.
 */
#ifndef WEIR_DAEMON_HTTP_MIME_H
#define WEIR_DAEMON_HTTP_MIME_H

#include <stddef.h>

struct http_mime;

/* Reads a mime.types file ("type ext ext..." lines, '#' comments). A
 * missing or unreadable file gives an empty table. NULL when out of
 * memory. */
struct http_mime *http_mime_load(const char *path);
void http_mime_free(struct http_mime *m);

/* Any thread (the table is read-only once loaded). The type of name's
 * extension, compared without case; application/octet-stream for none or
 * an unknown one, or when m is NULL. */
const char *http_mime_type(const struct http_mime *m, const char *name);

#endif
