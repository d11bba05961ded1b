/*
 * http_conn.c - see http_conn.h. One request at a time: read until the
 * front of the buffer holds a whole request, answer it (the head with
 * send(2), a file's bytes with the zero-copy stage), drop it from the
 * buffer, and go on with what follows it, so pipelined requests are
 * answered in the order sent.
 *
 * Reads and the head's writes are system calls on the loop's thread
 * after a poll says the socket is ready (as the stage's sendfile does):
 * a request's head is a few hundred bytes, and the buffer is taken only
 * once bytes are there to read.
 *
 * One timer bounds every wait: a deadline is set (header_timeout while a
 * request is awaited, send_timeout while a head waits for room) and
 * cleared, and the timer, when it fires, looks at the deadline: past,
 * the client is cut; later, it sleeps again for the rest; cleared, it
 * stops. A deadline costs a clock read, not a timer operation.
 *
 * Over TLS (https-listen) the same steps go through the session's
 * plaintext requests instead of the socket: a read instead of a poll and
 * a recv, a write of the head and then of the file in chunks read into a
 * buffer held while the body is sent (no sendfile: the bytes must pass
 * through OpenSSL), and close_notify before an orderly end.
 */
#include "httpd/http_conn.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <poll.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/sendfile.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "httpd/access_log.h"
#include "httpd/http_file_cache.h"
#include "httpd/http_index.h"
#include "httpd/http_mime.h"
#include "httpd/http_path.h"
#include "httpd/http_reply.h"
#include "httpd/http_req.h"
#include "weir/file_send.h"
#include "weir/util.h"

/* A chunk of a file read for TLS: one full record. */
#define TLS_CHUNK (16u * 1024u)

/*
 * What one request and its answer need: taken when a request's bytes are
 * to be read, given back once it is answered and nothing follows it (so
 * an idle connection holds struct http_conn only; over TLS it stays, as
 * a read must have its buffer).
 */
struct http_xchg {
    size_t len;          /* request bytes in buf */
    struct http_req req; /* the one being answered */
    char *head;          /* buf + HTTP_REQ_MAX */
    size_t head_len, head_off;
    /* The file being answered: its fd and the range of it to send; held
     * in the worker's cache of open files, or the answer's own (NULL). */
    int file_fd;
    struct http_file *held;
    uint64_t body_off, body_len;
    bool close_after; /* the connection ends after this answer */
    struct weir_file_send *send;
    int send_rc;
    bool in_send_start, send_back;
    int64_t began; /* when its head was found whole (or bad) */
    int status;    /* its answer's */
    uint64_t sent; /* its body's bytes sent */
    /* TLS: the buffer of the body's chunk, the write in flight (the
     * head, the chunk, or both) and the chunk's length in it. */
    char *tbuf;
    struct iovec tiov[2];
    size_t tchunk;
    /* A directory's listing (index=yes), sent after the head. */
    char *page;
    size_t page_len, page_off;
    /* The request bytes (HTTP_REQ_MAX), then room for the answer's head
     * (HTTP_HEAD_MAX). */
    char buf[HTTP_REQ_MAX + HTTP_HEAD_MAX];
};

/* A connection, idle or not: what it holds between requests. */
struct http_conn {
    struct weir_loop *loop;
    int fd;
    const struct http_conn_options *o; /* its listen address's */
    const char *peer;
    _Atomic uint64_t *bytes_out;
    struct weir_tls_session *tls;
    struct http_file_cache *files; /* its worker's, or NULL */
    weir_done_cb done;
    void *ctx;
    struct http_xchg *x; /* NULL while idle */
    struct weir_op poll_op;
    struct weir_timer timer;
    int64_t deadline; /* CLOCK_MONOTONIC ns; 0: none */
    int64_t timer_at; /* when the pending timer fires */
    uint64_t requests;
    bool in_next, again; /* next_request's loop (see there) */
    bool reading;        /* a TLS read waits for a request's bytes */
    bool closing;        /* close_notify is on its way; finish follows */
    bool parking;        /* idle, with park_after_ns as its deadline */
    bool woken;         /* back from the park: it reads before it parks again */
    int64_t due;        /* the next request's header_timeout */
    int64_t idle_since; /* the last answer sent (or the connection made) */
    int64_t gap;        /* the last wait from an answer to a request */
    bool stopping, finished, destroyed, reaping;
    struct weir_reap reap;
};

static int64_t now_ns(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static void conn_free(struct weir_reap *r)
{
    struct http_conn *c = weir_container_of(r, struct http_conn, reap);

    if (c->x) {
        free(c->x->tbuf);
        free(c->x->page);
        free(c->x);
    }
    free(c);
}

static void maybe_reap(struct http_conn *c)
{
    if (c->destroyed && !c->reaping && !c->poll_op.pending &&
        !c->timer.op.pending) {
        c->reaping = true;
        c->reap.fn = conn_free;
        weir_loop_defer(c->loop, &c->reap);
    }
}

/* The answer is done with fd: the cache's hold on it let go, or it is
 * closed. */
static void drop_fd(struct http_conn *c, int fd)
{
    if (c->x->held) {
        http_file_put(c->files, c->x->held);
        c->x->held = NULL;
    } else {
        close(fd);
    }
}

static void close_file(struct http_conn *c)
{
    if (!c->x)
        return;
    if (c->x->send) {
        weir_file_send_destroy(c->x->send);
        c->x->send = NULL;
    }
    if (c->x->file_fd >= 0) {
        drop_fd(c, c->x->file_fd);
        c->x->file_fd = -1;
    }
    free(c->x->tbuf);
    c->x->tbuf = NULL;
    free(c->x->page);
    c->x->page = NULL;
    c->x->page_len = c->x->page_off = 0;
}

static void tls_shut(void *arg, int res);
static void deadline_set(struct http_conn *c, uint64_t ns);

/* The end: done runs once. rc 0 is an orderly end, told to the client
 * by a shut down write side; anything else resets nothing here (the
 * socket is the caller's to close). */
static void finish(struct http_conn *c, int rc)
{
    if (c->finished)
        return;
    if (c->tls && rc == 0 && !c->closing) {
        /* close_notify first, so that the client knows it read the
         * whole of the last answer; its wait is bounded as a send's. */
        c->closing = true;
        close_file(c);
        weir_tls_session_abort(c->tls); /* a read for a request */
        deadline_set(c, c->o->send_timeout_ns ? c->o->send_timeout_ns
                                              : c->o->header_timeout_ns);
        if (c->finished || weir_tls_session_shutdown(c->tls, tls_shut, c) == 0)
            return;
    }
    c->finished = true;
    c->deadline = 0;
    close_file(c);
    if (c->tls)
        weir_tls_session_abort(c->tls);
    if (rc == 0)
        shutdown(c->fd, SHUT_WR);
    else if (rc == -ETIMEDOUT)
        shutdown(c->fd, SHUT_RDWR);
    if (c->poll_op.pending)
        weir_loop_cancel(c->loop, &c->poll_op);
    if (c->timer.op.pending)
        weir_loop_timer_stop(c->loop, &c->timer);
    if (!c->destroyed)
        c->done(c->ctx, rc);
}

/* An op came back: true when the connection is gone or ending. */
static bool back(struct http_conn *c)
{
    if (c->destroyed) {
        maybe_reap(c);
        return true;
    }
    return c->finished || c->closing;
}

static void tls_shut(void *arg, int res)
{
    struct http_conn *c = arg;

    (void)res; /* a peer already gone: the end is orderly all the same */
    if (!c->destroyed && !c->finished)
        finish(c, 0);
}

static void timer_arm(struct http_conn *c, uint64_t ns)
{
    c->timer_at = now_ns() + (int64_t)ns;
    if (weir_loop_timer_start(c->loop, &c->timer, ns) != 0)
        finish(c, -EBUSY);
}

/* Fired, or stopped for an earlier deadline (deadline_set): either way
 * the deadline says what to do. */
static void timer_fired(struct weir_op *op, int res, uint32_t flags)
{
    struct http_conn *c = weir_container_of(op, struct http_conn, timer.op);
    int64_t left;

    (void)res;
    (void)flags;
    /* Not back(): a closing connection's close_notify is bounded too. */
    if (c->destroyed) {
        maybe_reap(c);
        return;
    }
    if (c->finished || c->deadline == 0)
        return;
    left = c->deadline - now_ns();
    if (left > 0) {
        timer_arm(c, (uint64_t)left);
        return;
    }
    if (c->parking) {
        finish(c, HTTP_CONN_PARKED);
        return;
    }
    if (c->o->counts)
        /* Relaxed: a statistic; it orders nothing. */
        atomic_fetch_add_explicit(&c->o->counts->timeouts, 1,
                                  memory_order_relaxed);
    finish(c, -ETIMEDOUT);
}

/* A deadline ns from now (0: none). A pending timer that fires by then
 * sees it when it fires; one that would fire later is stopped, and its
 * callback arms it again for the deadline. */
static void deadline_set(struct http_conn *c, uint64_t ns)
{
    if (ns == 0) {
        c->deadline = 0;
        return;
    }
    c->deadline = now_ns() + (int64_t)ns;
    if (!c->timer.op.pending)
        timer_arm(c, ns);
    else if (c->timer_at > c->deadline)
        weir_loop_timer_stop(c->loop, &c->timer);
}

static void wait_for(struct http_conn *c, unsigned mask, weir_op_fn fn)
{
    int rc;

    c->poll_op.fn = fn;
    rc = weir_loop_poll(c->loop, &c->poll_op, c->fd, mask);
    if (rc)
        finish(c, rc);
}

static void on_readable(struct weir_op *op, int res, uint32_t flags);
static void request_in(struct http_conn *c);
static void head_out(struct http_conn *c);
static void tls_read_done(void *arg, int res);

/* The exchange and its buffer, taken when a request's bytes are to be
 * read. */
static bool take_buf(struct http_conn *c)
{
    if (c->x)
        return true;
    /* Not calloc: the buffer's 9 KiB need no zeroes. */
    c->x = malloc(sizeof(*c->x));
    if (!c->x) {
        finish(c, -ENOMEM);
        return false;
    }
    memset(c->x, 0, offsetof(struct http_xchg, buf));
    c->x->head = c->x->buf + HTTP_REQ_MAX;
    c->x->file_fd = -1;
    return true;
}

/* More of a request: a poll, then a recv; over TLS, a read. */
static void read_more(struct http_conn *c)
{
    int rc;

    if (!c->tls) {
        wait_for(c, POLLIN, on_readable);
        return;
    }
    if (!take_buf(c))
        return;
    rc = weir_tls_session_read(c->tls, c->x->buf + c->x->len,
                               HTTP_REQ_MAX - c->x->len, tls_read_done, c);
    if (rc)
        finish(c, rc);
    else
        c->reading = true;
}

/* How many park_after_ns an idle connection waits before it is parked,
 * by the requests it had answered: one before its first request (a
 * client that connects and asks at once keeps its stream); none after
 * its first answer (most such clients are done, and the next request
 * of one that is not only wakes it); then one more for each answer. */
static uint64_t park_times(uint64_t requests)
{
    if (requests == 0)
        return 1;
    return requests - 1 < HTTP_PARK_GROWTH ? requests - 1 : HTTP_PARK_GROWTH;
}

/* The next request: the bytes after the last one, or a wait for some. */
static void next_request(struct http_conn *c)
{
    uint64_t park_wait, gap_wait;

    if (c->stopping) {
        finish(c, 0);
        return;
    }
    deadline_set(c, c->o->header_timeout_ns);
    if (c->finished)
        return;
    if (!c->x || !c->x->len) {
        /* Idle: no exchange held while nothing is to be read (a TLS
         * read needs one to read into). */
        if (!c->tls && c->x) {
            close_file(c);
            free(c->x);
            c->x = NULL;
        }
        c->due = c->deadline;
        if (!c->woken) /* a woken one's wait began before its park */
            c->idle_since = now_ns();
        park_wait = c->o->park_after_ns * park_times(c->requests);
        /* A client whose requests come further apart than the answers
         * it has had would say (a large file taken between them, a slow
         * reader) is waited for as long as its last gap, twice. */
        gap_wait = 2 * (uint64_t)c->gap < HTTP_PARK_GAP_MAX_NS
                       ? 2 * (uint64_t)c->gap
                       : HTTP_PARK_GAP_MAX_NS;
        if (gap_wait > park_wait)
            park_wait = gap_wait;
        if (!c->tls && !c->woken && c->o->park_after_ns &&
            park_wait < c->o->header_timeout_ns) {
            if (!park_wait) {
                finish(c, HTTP_CONN_PARKED);
                return;
            }
            c->parking = true;
            deadline_set(c, park_wait);
        }
        read_more(c);
        return;
    }
    /* Pipelined requests are answered in this loop: an answer that goes
     * out at once calls back here, and a buffer of many small requests
     * would otherwise nest a call (and its path buffers) per request. */
    if (c->in_next) {
        c->again = true;
        return;
    }
    c->in_next = true;
    do {
        c->again = false;
        request_in(c);
    } while (c->again && !c->finished);
    c->in_next = false;
}

static void on_readable(struct weir_op *op, int res, uint32_t flags)
{
    struct http_conn *c = weir_container_of(op, struct http_conn, poll_op);
    ssize_t k;

    (void)flags;
    if (back(c))
        return;
    if (res < 0) {
        finish(c, res);
        return;
    }
    if (c->parking) {
        /* The timer, set for the park, sees the later deadline when it
         * fires and sleeps on. */
        c->parking = false;
        c->deadline = c->due;
    }
    c->woken = false;
    if ((!c->x || !c->x->len) && c->requests)
        c->gap = now_ns() - c->idle_since;
    if (!take_buf(c))
        return;
    k = recv(c->fd, c->x->buf + c->x->len, HTTP_REQ_MAX - c->x->len,
             MSG_DONTWAIT);
    if (k == 0) {
        finish(c, 0); /* the client is done */
        return;
    }
    if (k < 0) {
        if (errno == EAGAIN || errno == EINTR)
            wait_for(c, POLLIN, on_readable);
        else
            finish(c, -errno);
        return;
    }
    c->x->len += (size_t)k;
    request_in(c);
}

static void tls_read_done(void *arg, int res)
{
    struct http_conn *c = arg;

    c->reading = false;
    if (back(c))
        return;
    if (res <= 0) {
        finish(c, res); /* 0: the client is done */
        return;
    }
    c->x->len += (size_t)res;
    request_in(c);
}

const uint64_t http_time_le_us[HTTP_TIME_BUCKETS - 1] = {
    1000, 5000, 25000, 100000, 500000, 2500000, 10000000,
};

/* The answer's status, counted once its head is made. */
static void count(struct http_conn *c, int status)
{
    unsigned cls = status >= 100 && status < 600 ? (unsigned)status / 100 : 0;

    c->x->status = status;
    c->x->sent = 0;
    if (!c->o->counts)
        return;
    /* Relaxed: statistics another thread samples; they order nothing. */
    atomic_fetch_add_explicit(&c->o->counts->requests[cls][c->x->req.method], 1,
                              memory_order_relaxed);
}

/* The request line: the buffer's first line, without its end. */
static size_t request_line(const struct http_conn *c)
{
    size_t n = c->x->req.size < c->x->len ? c->x->req.size : c->x->len;
    const char *nl = memchr(c->x->buf, '\n', n);

    if (nl)
        n = (size_t)(nl - c->x->buf);
    if (n && c->x->buf[n - 1] == '\r')
        n--;
    return n;
}

/* The answer's time, and its line in the access log, once its last
 * byte is out (or its connection ends it). */
static void count_time(struct http_conn *c)
{
    uint64_t us = (uint64_t)(now_ns() - c->x->began) / 1000;
    unsigned b = 0;

    if (c->o->log) {
        struct access_entry e = {
            .client = c->peer,
            .request = c->x->buf,
            .request_len = request_line(c),
            .status = c->x->status,
            .bytes = c->x->sent,
            .duration_us = us,
            .range = c->x->req.range.p,
            .range_len = c->x->req.range.len,
            .user_agent = c->x->req.user_agent.p,
            .user_agent_len = c->x->req.user_agent.len,
        };

        access_log_put(c->o->log, &e);
    }
    if (!c->o->counts)
        return;
    while (b < HTTP_TIME_BUCKETS - 1 && us > http_time_le_us[b])
        b++;
    atomic_fetch_add_explicit(&c->o->counts->time[b], 1, memory_order_relaxed);
    atomic_fetch_add_explicit(&c->o->counts->time_us, us, memory_order_relaxed);
}

/* An answer with no file: its head (and short body) only; a 301 says
 * where to. */
static void answer_short(struct http_conn *c, int status, bool close_after,
                         const char *location)
{
    struct http_head h = {
        .status = status,
        .server = c->o->server,
        .keep_alive = !close_after && c->x->req.keep_alive,
        .http10 = c->x->req.major == 1 && c->x->req.minor == 0,
        .head_only = c->x->req.method == HTTP_M_HEAD,
        .location = location,
    };

    c->x->close_after = !h.keep_alive;
    c->x->head_len = http_reply_head(c->x->head, &h);
    c->x->head_off = 0;
    c->x->body_len = 0;
    count(c, status);
    head_out(c);
}

static void answer_error(struct http_conn *c, int status, bool close_after)
{
    answer_short(c, status, close_after, NULL);
}

/* The file the request names, open (from the worker's cache of open
 * files when it has it: c->x->held), or the status that says why not. */
static int open_target(struct http_conn *c, char *rel, struct stat *st, int *fd)
{
    int rc = http_path_map(c->x->req.target.p, c->x->req.target.len,
                           c->o->dotfiles, rel);
    /* Beneath the root: a symlink that leads out of it fails with EXDEV,
     * unless the operator lets symlinks go anywhere. The path itself has
     * no ".." (http_path_map). */
    struct open_how how = {
        .flags = O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY,
        .resolve = RESOLVE_NO_MAGICLINKS |
                   (c->o->follow_symlinks ? 0 : RESOLVE_BENEATH),
    };
    int dirfd = c->o->root_fd;
    const char *path = rel[0] ? rel : ".";

    if (rc)
        return rc;
    if (c->o->root_fd < 0) {
        const char *at = c->o->url_path ? c->o->url_path : "/";
        char want[HTTP_PATH_MAX];

        /* Both mapped alike: "/a/./b" asks for "/a/b". */
        if (http_path_map(at, strlen(at), true, want) != 0 ||
            strcmp(rel, want) != 0)
            return 404;
        dirfd = AT_FDCWD;
        path = c->o->file_path;
        how.resolve = 0;
    }
    if (c->files && (c->x->held = http_file_get(c->files, dirfd, path,
                                                how.resolve, fd, st)))
        return 0;
    *fd = (int)syscall(SYS_openat2, dirfd, path, &how, sizeof(how));
    if (*fd < 0 && (errno == EMFILE || errno == ENFILE) && c->files &&
        http_file_cache_trim(c->files))
        *fd = (int)syscall(SYS_openat2, dirfd, path, &how, sizeof(how));
    if (*fd < 0)
        return errno == ENOENT || errno == ENOTDIR || errno == EXDEV ||
                       errno == ELOOP || errno == EACCES ||
                       errno == ENAMETOOLONG
                   ? 404
                   : 500;
    if (fstat(*fd, st) != 0 ||
        !(S_ISREG(st->st_mode) ||
          (S_ISDIR(st->st_mode) && c->o->index && c->o->root_fd >= 0))) {
        close(*fd);
        *fd = -1;
        return 404; /* a directory (no listing), a device, a FIFO */
    }
    if (c->files && S_ISREG(st->st_mode))
        c->x->held = http_file_add(c->files, dirfd, path, how.resolve, *fd, st);
    return 0;
}

/* The longest last segment a 301 names; the head has room for it. */
#define LOCATION_MAX 768

/* A directory, with index=yes: its listing, at its name with a slash. A
 * request without the slash is sent there first (by its last segment,
 * relative to itself), so that the listing's relative links resolve
 * inside the directory. */
static void answer_dir(struct http_conn *c, const char *rel, int fd)
{
    struct http_req *r = &c->x->req;
    const char *t = r->target.p, *end = t + r->target.len, *q = t, *seg;
    char loc[LOCATION_MAX + 2];
    struct http_index_options io = {
        .root_fd = c->o->root_fd,
        .dir_fd = fd,
        .rel = rel,
        .dotfiles = c->o->dotfiles,
        .follow_symlinks = c->o->follow_symlinks,
    };
    struct http_head h = {
        .status = 200,
        .server = c->o->server,
        .keep_alive = r->keep_alive && !r->has_body,
        .http10 = r->major == 1 && r->minor == 0,
        .head_only = r->method == HTTP_M_HEAD,
        .type = "text/html; charset=utf-8",
    };
    int rc;

    while (q < end && *q != '?' && *q != '#')
        q++;
    if (q > t && q[-1] != '/') {
        close(fd);
        for (seg = q; seg > t && seg[-1] != '/'; seg--)
            ;
        if (q - seg > LOCATION_MAX) {
            answer_error(c, 414, r->has_body);
            return;
        }
        snprintf(loc, sizeof(loc), "%.*s/", (int)(q - seg), seg);
        answer_short(c, 301, r->has_body, loc);
        return;
    }
    rc = http_index_page(&io, &c->x->page, &c->x->page_len);
    close(fd);
    if (rc) {
        answer_error(c, 500, r->has_body);
        return;
    }
    h.len = c->x->page_len;
    if (h.head_only) {
        free(c->x->page);
        c->x->page = NULL;
        c->x->page_len = 0;
    }
    c->x->page_off = 0;
    c->x->close_after = !h.keep_alive;
    c->x->head_len = http_reply_head(c->x->head, &h);
    c->x->head_off = 0;
    c->x->body_len = 0;
    count(c, 200);
    head_out(c);
}

static void answer(struct http_conn *c)
{
    struct http_req *r = &c->x->req;
    char rel[HTTP_PATH_MAX];
    struct stat st;
    int status, fd = -1;
    struct http_head h = {
        .server = c->o->server,
        .http10 = r->major == 1 && r->minor == 0,
        .head_only = r->method == HTTP_M_HEAD,
    };

    /* HTTP/1.1 names its host, once; a body is never read, so the
     * connection cannot go on after one. */
    if (r->major != 1) {
        answer_error(c, 505, true);
        return;
    }
    if (r->minor >= 1 ? r->hosts != 1 : r->hosts > 1) {
        answer_error(c, 400, true);
        return;
    }
    if (r->method == HTTP_M_OTHER) {
        answer_error(c, 405, r->has_body);
        return;
    }
    status = open_target(c, rel, &st, &fd);
    if (status) {
        answer_error(c, status, r->has_body || status == 400);
        return;
    }
    if (S_ISDIR(st.st_mode)) {
        answer_dir(c, rel, fd);
        return;
    }
    h.status = http_reply_status(r, &st, &h.off, &h.len);
    if (h.status == 412) {
        drop_fd(c, fd);
        answer_error(c, 412, r->has_body);
        return;
    }
    h.keep_alive = r->keep_alive && !r->has_body;
    h.st = &st;
    h.type =
        http_mime_type(c->o->mime, c->o->root_fd < 0 ? c->o->file_path : rel);
    c->x->close_after = !h.keep_alive;
    c->x->head_len = http_reply_head(c->x->head, &h);
    c->x->head_off = 0;
    c->x->body_off = h.off;
    c->x->body_len =
        (h.status == 200 || h.status == 206) && !h.head_only ? h.len : 0;
    if (c->x->body_len)
        c->x->file_fd = fd;
    else
        drop_fd(c, fd);
    count(c, h.status);
    head_out(c);
}

/* The front of the buffer, read again with what just arrived. */
static void request_in(struct http_conn *c)
{
    c->x->began = now_ns();
    switch (http_req_parse(c->x->buf, c->x->len, &c->x->req)) {
    case HTTP_REQ_DONE:
        c->deadline = 0;
        answer(c);
        return;
    case HTTP_REQ_MORE:
        read_more(c);
        return;
    case HTTP_REQ_BAD:
        c->x->req.size = c->x->len;
        answer_error(c, 400, true);
        return;
    case HTTP_REQ_LINE_LONG:
        c->x->req.size = c->x->len;
        answer_error(c, 414, true);
        return;
    case HTTP_REQ_HEADS_LONG:
        c->x->req.size = c->x->len;
        answer_error(c, 431, true);
        return;
    }
}

/* The answer is out: the request leaves the buffer. */
static void answered(struct http_conn *c)
{
    close_file(c); /* and the page of a listing */
    c->requests++;
    count_time(c);
    memmove(c->x->buf, c->x->buf + c->x->req.size, c->x->len - c->x->req.size);
    c->x->len -= c->x->req.size;
    if (c->x->close_after)
        finish(c, 0);
    else
        next_request(c);
}

static void body_back(struct http_conn *c)
{
    uint64_t sent = weir_file_send_bytes(c->x->send);
    int rc = c->x->send_rc;

    close_file(c);
    c->x->sent += sent;
    if (rc < 0) {
        count_time(c);
        finish(c, rc);
        return;
    }
    /* A file that shrank while it was sent ends the answer short: the
     * connection closes, so the client sees a length that was not met. */
    if (sent < c->x->body_len) {
        count_time(c);
        finish(c, 0);
        return;
    }
    answered(c);
}

static void body_done(void *ctx, int rc)
{
    struct http_conn *c = ctx;

    c->x->send_rc = rc;
    c->x->send_back = true;
    /* A small file may be sent whole inside weir_file_send_start. */
    if (!c->x->in_send_start)
        body_back(c);
}

static void body_out(struct http_conn *c)
{
    struct weir_file_send_options so = {
        .offset = c->x->body_off,
        .length = c->x->body_len,
        .sendfile = true,
        .keep_fds = true,
        .keep_open = true,
        .counter = c->bytes_out,
        .send_timeout_ns = c->o->send_timeout_ns,
    };
    int rc;

    c->x->send_back = false;
    c->x->in_send_start = true;
    rc = weir_file_send_start(&c->x->send, c->loop, c->x->file_fd, c->fd, &so,
                              body_done, c);
    c->x->in_send_start = false;
    if (rc) {
        c->x->send = NULL;
        finish(c, rc);
        return;
    }
    if (c->x->send_back)
        body_back(c);
}

/* One sendfile(2) at once: a small file (most of a site's) usually
 * fits the socket's buffer whole, and then needs no stage. True when
 * bytes are left for the stage. */
static bool body_now(struct http_conn *c)
{
    off_t off = (off_t)c->x->body_off;
    ssize_t k = sendfile(c->fd, c->x->file_fd, &off, c->x->body_len);

    if (k < 0 && errno != EAGAIN && errno != EINTR) {
        finish(c, -errno);
        return false;
    }
    if (k == 0) { /* the file ended before the range: it shrank */
        count_time(c);
        finish(c, 0);
        return false;
    }
    if (k > 0) {
        c->x->body_off += (uint64_t)k;
        c->x->body_len -= (uint64_t)k;
        c->x->sent += (uint64_t)k;
        if (c->bytes_out)
            /* Relaxed: a statistic, as the stage's counter. */
            atomic_fetch_add_explicit(c->bytes_out, (uint64_t)k,
                                      memory_order_relaxed);
    }
    if (c->x->body_len)
        return true;
    close_file(c);
    return false;
}

static void on_writable(struct weir_op *op, int res, uint32_t flags)
{
    struct http_conn *c = weir_container_of(op, struct http_conn, poll_op);

    (void)flags;
    if (back(c))
        return;
    if (res < 0) {
        finish(c, res);
        return;
    }
    head_out(c);
}

static void tls_wrote(void *arg, int res);

/* Bytes of a listing's page taken by the socket or the session. */
static void page_sent(struct http_conn *c, size_t k)
{
    c->x->page_off += k;
    c->x->sent += k;
    if (c->bytes_out)
        /* Relaxed: a statistic, as the stage's counter. */
        atomic_fetch_add_explicit(c->bytes_out, k, memory_order_relaxed);
}

/* Over TLS: the head, then the body in chunks read from the file, one
 * write each; the head goes with the first chunk. */
static void tls_out(struct http_conn *c)
{
    size_t want =
        c->x->body_len < TLS_CHUNK ? (size_t)c->x->body_len : TLS_CHUNK;
    unsigned n = 0;
    ssize_t k = 0;
    int rc;

    if (c->x->head_off < c->x->head_len)
        c->x->tiov[n++] = (struct iovec){c->x->head + c->x->head_off,
                                         c->x->head_len - c->x->head_off};
    if (c->x->page_off < c->x->page_len)
        c->x->tiov[n++] = (struct iovec){c->x->page + c->x->page_off,
                                         c->x->page_len - c->x->page_off};
    if (want) {
        if (!c->x->tbuf && !(c->x->tbuf = malloc(TLS_CHUNK))) {
            finish(c, -ENOMEM);
            return;
        }
        do
            k = pread(c->x->file_fd, c->x->tbuf, want, (off_t)c->x->body_off);
        while (k < 0 && errno == EINTR);
        if (k < 0) {
            finish(c, -errno);
            return;
        }
        /* The file ended before the range: it shrank; the connection
         * closes once the head is out, short of its length. */
        if (k == 0 && !n) {
            count_time(c);
            finish(c, 0);
            return;
        }
        if (k > 0)
            c->x->tiov[n++] = (struct iovec){c->x->tbuf, (size_t)k};
    }
    c->x->tchunk = (size_t)k;
    deadline_set(c, c->o->send_timeout_ns);
    if (c->finished)
        return;
    rc = weir_tls_session_write(c->tls, c->x->tiov, n, tls_wrote, c);
    if (rc)
        finish(c, rc);
}

static void tls_wrote(void *arg, int res)
{
    struct http_conn *c = arg;

    if (back(c))
        return;
    if (res < 0) {
        finish(c, res);
        return;
    }
    c->deadline = 0;
    c->x->head_off = c->x->head_len;
    page_sent(c, c->x->page_len - c->x->page_off);
    c->x->body_off += c->x->tchunk;
    c->x->body_len -= c->x->tchunk;
    c->x->sent += c->x->tchunk;
    if (c->bytes_out)
        /* Relaxed: a statistic, as the stage's counter. */
        atomic_fetch_add_explicit(c->bytes_out, c->x->tchunk,
                                  memory_order_relaxed);
    if (c->x->body_len) {
        tls_out(c);
        return;
    }
    close_file(c);
    answered(c);
}

static void head_out(struct http_conn *c)
{
    int more = c->x->body_len ? MSG_MORE : 0;

    if (c->tls) {
        tls_out(c);
        return;
    }
    /* The head, and a listing's page after it. */
    while (c->x->head_off < c->x->head_len || c->x->page_off < c->x->page_len) {
        struct iovec iov[2];
        struct msghdr m = {.msg_iov = iov};
        size_t head_left = c->x->head_len - c->x->head_off;
        ssize_t k;

        if (head_left)
            iov[m.msg_iovlen++] =
                (struct iovec){c->x->head + c->x->head_off, head_left};
        if (c->x->page_off < c->x->page_len)
            iov[m.msg_iovlen++] = (struct iovec){
                c->x->page + c->x->page_off, c->x->page_len - c->x->page_off};
        k = sendmsg(c->fd, &m, MSG_DONTWAIT | MSG_NOSIGNAL | more);
        if (k < 0 && (errno == EAGAIN || errno == EINTR)) {
            deadline_set(c, c->o->send_timeout_ns);
            if (!c->finished)
                wait_for(c, POLLOUT, on_writable);
            return;
        }
        if (k < 0) {
            finish(c, -errno);
            return;
        }
        if ((size_t)k <= head_left) {
            c->x->head_off += (size_t)k;
        } else {
            c->x->head_off = c->x->head_len;
            page_sent(c, (size_t)k - head_left);
        }
    }
    c->deadline = 0;
    if (c->x->body_len && body_now(c))
        body_out(c);
    else if (!c->finished)
        answered(c);
}

int http_conn_start(struct http_conn **out, struct weir_loop *loop, int sock_fd,
                    const struct http_conn_options *o,
                    const struct http_client *cl, weir_done_cb done, void *ctx)
{
    struct http_conn *c = calloc(1, sizeof(*c));
    int fl;

    *out = c;
    if (!c) {
        weir_tls_session_release(cl->tls);
        return -ENOMEM;
    }
    c->loop = loop;
    c->fd = sock_fd;
    c->o = o;
    c->peer = cl->peer;
    c->bytes_out = cl->bytes_out;
    c->requests = cl->requests;
    c->idle_since = cl->idle_since;
    c->woken = cl->requests > 0;
    c->tls = cl->tls;
    c->files = cl->files;
    c->done = done;
    c->ctx = ctx;
    c->timer.op.fn = timer_fired;
    /* Non-blocking for good: the sendfile tried at once (body_now) must
     * never wait, and the stage leaves such a socket as it is. */
    fl = fcntl(sock_fd, F_GETFL);
    if (fl < 0 || fcntl(sock_fd, F_SETFL, fl | O_NONBLOCK) != 0) {
        fl = -errno;
        weir_tls_session_release(cl->tls);
        free(c);
        *out = NULL;
        return fl;
    }
    next_request(c);
    return 0;
}

void http_conn_stop(struct http_conn *c)
{
    if (c->finished || c->stopping)
        return;
    c->stopping = true;
    /* Waiting for a request (or the rest of one): nothing is owed; a
     * request cut short is the client's to send again elsewhere. */
    if (c->reading || (c->poll_op.pending && c->poll_op.fn == on_readable))
        finish(c, 0);
}

int64_t http_conn_deadline(const struct http_conn *c)
{
    return c->due;
}

uint64_t http_conn_requests(const struct http_conn *c)
{
    return c->requests;
}

int64_t http_conn_idle_since(const struct http_conn *c)
{
    return c->idle_since;
}

void http_conn_destroy(struct http_conn *c)
{
    if (!c || c->destroyed)
        return;
    c->destroyed = true;
    close_file(c);
    if (c->poll_op.pending)
        weir_loop_cancel(c->loop, &c->poll_op);
    if (c->timer.op.pending)
        weir_loop_timer_stop(c->loop, &c->timer);
    if (c->tls) {
        weir_tls_session_abort(c->tls);
        weir_tls_session_release(c->tls);
        c->tls = NULL;
    }
    maybe_reap(c);
}
