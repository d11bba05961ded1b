/*
 * http_conn.h - one HTTP client's connection on a worker's loop: it reads
 * requests into a small buffer, answers each in order (pipelined ones
 * too), sends a file's bytes with the zero-copy stage (weir/file_send.h),
 * and keeps the connection for the next request when the client may.
 *
 * An idle connection holds its socket and a struct of a couple of hundred
 * bytes, no buffer: what a request and its answer need (the 9 KiB buffer
 * among it) is taken when bytes arrive and given back once a request has
 * been answered and nothing follows it.
 *
 * Owner thread of `loop` only.
 */
#ifndef WEIR_DAEMON_HTTP_CONN_H
#define WEIR_DAEMON_HTTP_CONN_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "weir/loop.h"
#include "weir/stream_types.h"
#include "weir/tls.h"

struct http_conn;
struct http_mime;
struct access_log;
struct http_file_cache;

/* The upper bounds, in microseconds, of the buckets of a request's
 * time (from its whole head to its answer's last byte taken by the
 * socket); the last bucket has none. */
#define HTTP_TIME_BUCKETS 8
extern const uint64_t http_time_le_us[HTTP_TIME_BUCKETS - 1];

/* What a connection's requests came to; added relaxed (statistics that
 * order nothing), shared by every connection of a listener. */
struct http_counts {
    /* By status class ([2] is 2xx; [0] anything else) and method (GET,
     * HEAD, other: enum http_req_method). */
    _Atomic uint64_t requests[6][3];
    _Atomic uint64_t timeouts; /* connections cut by header_timeout */
    _Atomic uint64_t time[HTTP_TIME_BUCKETS];
    _Atomic uint64_t time_us; /* their sum */
};

/* What every connection of one listen address shares; it outlives
 * them. */
struct http_conn_options {
    /* A directory served whole: its fd (O_PATH is enough), and whether a
     * symlink may lead out of it. */
    int root_fd;
    bool follow_symlinks;
    /* Or one file: its path, served at the URL path url_path ("/" when
     * NULL). root_fd -1 then. */
    const char *file_path;
    const char *url_path;
    bool dotfiles; /* serve names that start with "." */
    bool index;    /* a directory (of root_fd) answers with its listing */
    bool server;   /* send Server: weir */
    uint64_t header_timeout_ns; /* a request's wait for its whole head */
    uint64_t send_timeout_ns;   /* a send that moves nothing; 0: none */
    /* A plain connection idle this long before its first request, at
     * once after its first answer, and this long times one less than the
     * requests it has had answered (up to HTTP_PARK_GROWTH times) after
     * more, or twice its last wait between an answer and the next
     * request (up to HTTP_PARK_GAP_MAX_NS) when that is longer, ends with
     * HTTP_CONN_PARKED, so that its owner may keep the socket for less:
     * a client that has shown it comes back soon is waited for longer.
     * 0 (or a wait not below header_timeout_ns): never. */
    uint64_t park_after_ns;
    const struct http_mime *mime;
    struct http_counts *counts; /* or NULL */
    struct access_log *log;     /* a line per answer, or NULL */
};

#define HTTP_PARK_GROWTH     20
#define HTTP_PARK_GAP_MAX_NS (2000ull * 1000 * 1000)

/* What is one client's own. */
struct http_client {
    uint64_t requests;           /* answered before, on this socket (parked) */
    int64_t idle_since;          /* and when the last of them was sent */
    const char *peer;            /* for the log; lives as long */
    _Atomic uint64_t *bytes_out; /* bytes of files sent (relaxed), or NULL */
    /* https-listen: the connection's TLS session (weir/tls.h), which the
     * connection then owns and releases; NULL: plain HTTP. Requests and
     * answers go through it, a file's bytes read into a buffer taken
     * only while an answer's body is sent. */
    struct weir_tls_session *tls;
    /* Its worker's open files (httpd/http_file_cache.h), kept between
     * requests, or NULL: each request opens its file and closes it. */
    struct http_file_cache *files;
};

/* done's rc for a connection that idled long enough (see park_after_ns):
 * nothing of a request has been read, the socket is as it was, and the
 * next request is due by http_conn_deadline. */
#define HTTP_CONN_PARKED 1

/*
 * Serves the client on sock_fd (which stays the caller's: it is never
 * closed here) until it goes, fails, idles past header_timeout_ns, or
 * asks to close; then done(ctx, rc) runs once: 0 for an orderly end,
 * -ETIMEDOUT for a client cut by a timeout, else -errno. The socket is
 * left in non-blocking mode. Returns 0, or -ENOMEM or fcntl's -errno
 * (done not called, cl->tls released).
 */
int http_conn_start(struct http_conn **out, struct weir_loop *loop, int sock_fd,
                    const struct http_conn_options *o,
                    const struct http_client *cl, weir_done_cb done, void *ctx);

/* Ends the connection once the answer being sent (if any) is out: one
 * waiting for a request, or for the rest of one, ends now. done
 * follows. */
void http_conn_stop(struct http_conn *c);

/* When (CLOCK_MONOTONIC ns) the next request's head is due whole. */
int64_t http_conn_deadline(const struct http_conn *c);

/* Requests answered so far. */
uint64_t http_conn_requests(const struct http_conn *c);

/* When (CLOCK_MONOTONIC ns) the last answer was sent, or the connection
 * made: what its next request's wait is measured from. */
int64_t http_conn_idle_since(const struct http_conn *c);

/* Stops (done is not called after this) and frees the connection once
 * the loop has nothing of it. Safe inside done. */
void http_conn_destroy(struct http_conn *c);

#endif
