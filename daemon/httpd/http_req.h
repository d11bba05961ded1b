/*
 * http_req.h - one HTTP/1.x request read from the front of a buffer:
 * its method, target, version and the few headers a file server acts on.
 * The parsing is http-parser's (Debian's libhttp-parser); this file only
 * says what the server needs of it, as spans of the caller's buffer.
 *
 * No state is kept between calls: the caller hands the whole buffer again
 * as more bytes arrive (the buffer is small, so that costs less than a
 * parser per connection would hold).
 */
#ifndef WEIR_DAEMON_HTTP_REQ_H
#define WEIR_DAEMON_HTTP_REQ_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The request buffer's size: the longest request line and headers taken
 * (a longer one is answered 414 or 431). */
#define HTTP_REQ_MAX 8192

/* A piece of the buffer; len 0 when absent. */
struct http_span {
    const char *p;
    size_t len;
};

enum http_req_method {
    HTTP_M_GET,
    HTTP_M_HEAD,
    HTTP_M_OTHER,
};

struct http_req {
    enum http_req_method method;
    unsigned major, minor;
    bool keep_alive; /* the version's default, or what Connection said */
    bool has_body;   /* Content-Length > 0 or chunked */
    unsigned hosts;  /* Host headers sent: HTTP/1.1 needs exactly one */
    struct http_span target; /* as sent: "/a%20b?q" or "http://h/a" */
    struct http_span range, if_range, if_none_match, if_modified_since;
    struct http_span if_match, if_unmodified_since;
    struct http_span user_agent;
    size_t size; /* bytes of the buffer the request took */
};

/* What the front of a buffer holds. */
enum http_req_result {
    HTTP_REQ_DONE,       /* a whole request; req is filled */
    HTTP_REQ_MORE,       /* the start of one: read more */
    HTTP_REQ_BAD,        /* not HTTP (400) */
    HTTP_REQ_LINE_LONG,  /* the buffer is full within the request line */
    HTTP_REQ_HEADS_LONG, /* the buffer is full within the headers */
};

/* Reads the request at the front of buf[0..len). A full buffer (len ==
 * HTTP_REQ_MAX) that holds no whole request is LINE_LONG or HEADS_LONG. */
enum http_req_result http_req_parse(const char *buf, size_t len,
                                    struct http_req *req);

#endif
