/*
 * http_reply.h - what a request for a file is answered (200, 206, 304,
 * 416, from its Range and its conditions), and the answer's head as
 * bytes: the status line, the headers, and the short body of an error.
 */
#ifndef WEIR_DAEMON_HTTP_REPLY_H
#define WEIR_DAEMON_HTTP_REPLY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>

#include "httpd/http_req.h"

/* Room for any head this file writes. */
#define HTTP_HEAD_MAX 1024

/* The status for a GET or HEAD of the file st describes: 412 when
 * If-Match (strong comparison), else If-Unmodified-Since, says the file
 * is not the one the client meant; 304 when a condition says the
 * client's copy is current (If-None-Match, else If-Modified-Since); 206
 * for one satisfiable range (unless If-Range says the client's copy is
 * another), 416 for an unsatisfiable one, else 200. *off and *len: the
 * body's bytes of the file (for 200 and 206). A Range of several ranges,
 * or one not understood, is ignored: 200. */
int http_reply_status(const struct http_req *r, const struct stat *st,
                      uint64_t *off, uint64_t *len);

struct http_head {
    int status;
    bool server;     /* say Server: weir */
    bool keep_alive; /* the connection stays open after */
    bool http10;     /* the request was HTTP/1.0 */
    bool head_only;  /* a HEAD: the length, never the bytes */
    /* A file's answer (200, 206, 304, 416): its type and stat, and for
     * 200 and 206 the range sent. NULL st: with a type, a page made here
     * (a directory's listing) of len bytes; without, an error with a
     * short body. */
    const char *type;
    const struct stat *st;
    uint64_t off, len;
    /* A 301's Location: a reference relative to the request's. */
    const char *location;
};

/* Writes h's head into buf[HTTP_HEAD_MAX]; an error's short body follows
 * it there (not for a HEAD). Returns the bytes written. */
size_t http_reply_head(char *buf, const struct http_head *h);

/* "Not Found" for 404; "" for a status this file does not answer. */
const char *http_reply_reason(int status);

#endif
