/*
 * tls_session.c - TLS sessions (weir/tls.h, tls_impl.h), each made from a
 * context (tls_context.c).
 *
 * A session's SSL object talks to one end of a BIO pair; the session moves
 * ciphertext between the other end and the socket with the loop's send and
 * recv, so OpenSSL never touches the fd and the loop never blocks. The
 * pair's buffers are allocated once per session (PAIR_SIZE each way);
 * records leave through one pool buffer the session fills from the pair
 * and sends, and arrive into one pool buffer it feeds to the pair, so
 * steady state allocates nothing.
 *
 * All progress is one function, step(), run by pump() from the session's
 * completions (send, recv, timers, and a nop used as a "kick" when a new
 * request arrives), never from inside the request call: a caller's
 * callback never runs inside its own call, and a callback that makes the
 * next request only marks the pump to go round again.
 *
 * Unexpected EOF is taken as the peer's end and renegotiation is refused,
 * by the options of the context (tls_context.c).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <unistd.h>

#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>

#include "tls_context.h"
#include "tls_impl.h"
#include "weir/pool.h"
#include "weir/util.h"
#include "weir/worker.h"

#define PAIR_SIZE  (32u * 1024u) /* each way: two records and then some */
#define RETRY_NS   (1000ull * 1000)
#define REASON_MAX 256

struct tls_req {
    weir__tls_fn fn;
    void *arg;
    bool on, canceled;
};

struct weir_tls_session {
    struct weir_tls_ctx *ctx;
    SSL *ssl;
    BIO *net; /* our end of the pair */
    struct weir_loop *loop;
    struct weir_pool *pool;
    unsigned slot;
    int fd;
    unsigned refs, inflight;
    bool dead, reaping, pumping, again;
    bool up, eof, notified, reader;
    int err;
    struct tls_req req[TLS_REQ_KINDS];
    /* The write request: plaintext not yet taken by SSL_write. */
    const struct iovec *w_iov;
    unsigned w_n, w_at;
    size_t w_off;
    uint64_t w_total;
    bool sd_sent;
    /* The read request. */
    uint8_t *r_buf;
    uint32_t r_len, r_got;
    /* Ciphertext out: [oat, olen) of obuf waits for or is in a send. */
    struct weir_buf *obuf;
    uint32_t olen, oat;
    struct weir_op send_op;
    /* Ciphertext in: rbuf is being received into; [iat, ilen) of ibuf
     * waits to go into the pair. */
    struct weir_buf *rbuf, *ibuf;
    uint32_t ilen, iat;
    struct weir_op recv_op;
    /* A recv waits for readiness first (poll_op) so that a connection
     * waiting for its peer holds no pool buffer; after a recv that filled
     * its buffer more is likely there, and the next recv goes at once. */
    struct weir_op poll_op;
    bool readable;
    struct weir_op kick_op;
    struct weir_timer hs_timer, retry;
    struct weir_reap reap;
};

static void pump(struct weir_tls_session *t);

/* ---- sessions: lifetime ---- */

static void ses_free(struct weir_reap *r)
{
    struct weir_tls_session *t =
        weir_container_of(r, struct weir_tls_session, reap);

    SSL_free(t->ssl);
    BIO_free(t->net);
    if (t->fd >= 0)
        close(t->fd);
    if (t->obuf)
        weir_buf_unref(t->obuf, t->slot);
    if (t->ibuf)
        weir_buf_unref(t->ibuf, t->slot);
    if (t->rbuf)
        weir_buf_unref(t->rbuf, t->slot);
    weir__tls_ctx_unref(t->ctx);
    free(t);
}

static void maybe_reap(struct weir_tls_session *t)
{
    if (t->dead && t->inflight == 0 && !t->reaping && !t->pumping) {
        t->reaping = true;
        t->reap.fn = ses_free;
        weir_loop_defer(t->loop, &t->reap);
    }
}

/* Uncounts an op in its callback; true when the session is gone. */
static bool op_done(struct weir_tls_session *t)
{
    t->inflight--;
    if (!t->dead)
        return false;
    maybe_reap(t);
    return true;
}

void weir__tls_ref(struct weir_tls_session *t)
{
    t->refs++;
}

void weir__tls_unref(struct weir_tls_session *t)
{
    if (--t->refs)
        return;
    t->dead = true;
    if (t->send_op.pending)
        weir_loop_cancel(t->loop, &t->send_op);
    if (t->recv_op.pending)
        weir_loop_cancel(t->loop, &t->recv_op);
    if (t->poll_op.pending)
        weir_loop_cancel(t->loop, &t->poll_op);
    if (t->hs_timer.op.pending)
        weir_loop_timer_stop(t->loop, &t->hs_timer);
    if (t->retry.op.pending)
        weir_loop_timer_stop(t->loop, &t->retry);
    if (t->fd >= 0)
        shutdown(t->fd, SHUT_RDWR);
    maybe_reap(t);
}

void weir_tls_session_release(struct weir_tls_session *t)
{
    if (t)
        weir__tls_unref(t);
}

/* ---- sessions: the loop's side ---- */

static void kick_done(struct weir_op *op, int res, uint32_t flags)
{
    struct weir_tls_session *t =
        weir_container_of(op, struct weir_tls_session, kick_op);

    (void)res;
    (void)flags;
    if (!op_done(t))
        pump(t);
}

static void retry_fired(struct weir_op *op, int res, uint32_t flags)
{
    struct weir_tls_session *t =
        weir_container_of(op, struct weir_tls_session, retry.op);

    (void)res;
    (void)flags;
    if (!op_done(t))
        pump(t);
}

static void retry_later(struct weir_tls_session *t)
{
    t->retry.op.fn = retry_fired;
    if (!t->retry.op.pending &&
        weir_loop_timer_start(t->loop, &t->retry, RETRY_NS) == 0)
        t->inflight++;
}

/* Runs step() soon: at once when already inside it, else from a nop. */
static void schedule(struct weir_tls_session *t)
{
    if (t->pumping) {
        t->again = true;
        return;
    }
    if (t->kick_op.pending)
        return;
    t->kick_op.fn = kick_done;
    if (weir_loop_nop(t->loop, &t->kick_op) == 0)
        t->inflight++;
    else
        retry_later(t);
}

static void set_err(struct weir_tls_session *t, int err)
{
    if (!t->err)
        t->err = err;
    t->again = true;
}

static void deliver(struct weir_tls_session *t, enum weir__tls_req_kind k,
                    int res)
{
    struct tls_req *r = &t->req[k];

    r->on = false;
    r->canceled = false;
    r->fn(r->arg, res);
}

/* Moves ciphertext from the pair into obuf; true when some moved. */
static bool drain(struct weir_tls_session *t)
{
    uint32_t cap;
    bool moved = false;
    int n;

    if (BIO_ctrl_pending(t->net) == 0)
        return false;
    if (!t->obuf) {
        if (weir_pool_get(t->pool, &t->obuf) != 0) {
            t->obuf = NULL;
            retry_later(t);
            return false;
        }
        t->olen = t->oat = 0;
    }
    cap = (uint32_t)weir_pool_buf_size(t->pool);
    while (t->olen < cap && (n = BIO_read(t->net, t->obuf->data + t->olen,
                                          (int)(cap - t->olen))) > 0) {
        t->olen += (uint32_t)n;
        moved = true;
    }
    return moved;
}

static void send_done(struct weir_op *op, int res, uint32_t flags);

static void flush(struct weir_tls_session *t)
{
    int rc;

    drain(t);
    if (t->send_op.pending || !t->obuf || t->oat == t->olen || t->err)
        return;
    t->send_op.fn = send_done;
    rc = weir_loop_send(t->loop, &t->send_op, t->fd, t->obuf->data + t->oat,
                        t->olen - t->oat, MSG_NOSIGNAL);
    if (rc == -EBUSY)
        retry_later(t);
    else if (rc)
        set_err(t, rc);
    else
        t->inflight++;
}

static void send_done(struct weir_op *op, int res, uint32_t flags)
{
    struct weir_tls_session *t =
        weir_container_of(op, struct weir_tls_session, send_op);

    (void)flags;
    if (op_done(t))
        return;
    if (res > 0) {
        t->oat += (uint32_t)res;
        if (t->oat == t->olen) {
            t->oat = t->olen = 0;
            if (BIO_ctrl_pending(t->net) == 0) {
                /* An idle connection holds no pool buffer. */
                weir_buf_unref(t->obuf, t->slot);
                t->obuf = NULL;
            }
        }
    } else if (res != -EINTR && res != -EAGAIN) {
        set_err(t, res ? res : -EPIPE);
    }
    pump(t);
}

static void recv_done(struct weir_op *op, int res, uint32_t flags)
{
    struct weir_tls_session *t =
        weir_container_of(op, struct weir_tls_session, recv_op);
    struct weir_buf *b = t->rbuf;

    (void)flags;
    t->rbuf = NULL;
    if (op_done(t)) {
        weir_buf_unref(b, t->slot);
        return;
    }
    t->readable = res == (int)weir_pool_buf_size(t->pool);
    if (res > 0) {
        t->ibuf = b;
        t->iat = 0;
        t->ilen = (uint32_t)res;
    } else {
        weir_buf_unref(b, t->slot);
        if (res == 0) {
            t->eof = true;
            BIO_shutdown_wr(t->net); /* SSL reads the end */
        } else if (res != -EINTR && res != -EAGAIN) {
            set_err(t, res);
        }
    }
    pump(t);
}

static void poll_done(struct weir_op *op, int res, uint32_t flags)
{
    struct weir_tls_session *t =
        weir_container_of(op, struct weir_tls_session, poll_op);

    (void)flags;
    if (op_done(t))
        return;
    if (res < 0 && res != -EINTR)
        set_err(t, res);
    else
        t->readable = res >= 0;
    pump(t);
}

static void start_recv(struct weir_tls_session *t)
{
    int rc;

    if (t->recv_op.pending || t->poll_op.pending || t->ibuf || t->eof || t->err)
        return;
    if (!t->readable) {
        t->poll_op.fn = poll_done;
        rc = weir_loop_poll(t->loop, &t->poll_op, t->fd, POLLIN);
        if (rc == -EBUSY)
            retry_later(t);
        else if (rc)
            set_err(t, rc);
        else
            t->inflight++;
        return;
    }
    if (weir_pool_get(t->pool, &t->rbuf) != 0) {
        t->rbuf = NULL;
        retry_later(t);
        return;
    }
    t->recv_op.fn = recv_done;
    rc = weir_loop_recv(t->loop, &t->recv_op, t->fd, t->rbuf->data,
                        (uint32_t)weir_pool_buf_size(t->pool), 0);
    if (rc) {
        weir_buf_unref(t->rbuf, t->slot);
        t->rbuf = NULL;
        if (rc == -EBUSY)
            retry_later(t);
        else
            set_err(t, rc);
        return;
    }
    t->inflight++;
}

/* Moves received ciphertext into the pair; true when some moved. */
static bool feed(struct weir_tls_session *t)
{
    int n;

    if (!t->ibuf)
        return false;
    n = BIO_write(t->net, t->ibuf->data + t->iat, (int)(t->ilen - t->iat));
    if (n <= 0)
        return false;
    t->iat += (uint32_t)n;
    if (t->iat == t->ilen) {
        weir_buf_unref(t->ibuf, t->slot);
        t->ibuf = NULL;
    }
    return true;
}

/* SSL wants input: what was received first, else a recv. */
static void need_input(struct weir_tls_session *t)
{
    if (feed(t))
        t->again = true;
    else
        start_recv(t);
}

/* ---- sessions: the handshake ---- */

static void describe(struct weir_tls_session *t, int e, char *reason,
                     size_t len)
{
    unsigned long code = ERR_peek_error();
    long vr = SSL_get_verify_result(t->ssl);
    const char *r = code ? ERR_reason_error_string(code) : NULL;

    if (code && ERR_GET_REASON(code) == SSL_R_CERTIFICATE_VERIFY_FAILED &&
        vr != X509_V_OK)
        snprintf(reason, len, "certificate verify failed: %s",
                 X509_verify_cert_error_string(vr));
    else if (r)
        snprintf(reason, len, "%s", r);
    else if (code)
        ERR_error_string_n(code, reason, len);
    else if (t->eof || e == SSL_ERROR_ZERO_RETURN || e == SSL_ERROR_SYSCALL)
        snprintf(reason, len,
                 "the peer closed the connection during the handshake");
    else
        snprintf(reason, len, "the handshake failed (SSL error %d)", e);
}

static void report(struct weir_tls_session *t, const char *reason, long vr)
{
    struct sockaddr_storage peer;
    socklen_t plen = sizeof(peer);

    if (t->notified || !t->ctx->o.on_fail)
        return;
    t->notified = true;
    if (getpeername(t->fd, (struct sockaddr *)&peer, &plen) != 0)
        plen = 0;
    t->ctx->o.on_fail(t->ctx->o.fail_arg,
                      plen ? (const struct sockaddr *)&peer : NULL, plen,
                      reason, vr);
}

static void hs_fail(struct weir_tls_session *t, int e)
{
    char reason[REASON_MAX];
    long vr = SSL_get_verify_result(t->ssl);

    describe(t, e, reason, sizeof(reason));
    ERR_clear_error();
    report(t, reason, vr == X509_V_OK ? 0 : vr);
    flush(t); /* the alert that tells the peer why */
    set_err(t, t->eof && !vr ? -ECONNABORTED : -EPROTO);
}

static void hs_timeout(struct weir_op *op, int res, uint32_t flags)
{
    struct weir_tls_session *t =
        weir_container_of(op, struct weir_tls_session, hs_timer.op);
    char reason[REASON_MAX];

    (void)flags;
    if (op_done(t) || res == -ECANCELED || t->up || t->err)
        return;
    snprintf(reason, sizeof(reason),
             "the handshake did not finish within %.1f s",
             (double)t->ctx->o.handshake_timeout_ns / 1e9);
    report(t, reason, 0);
    set_err(t, -ETIMEDOUT);
    pump(t);
}

static void handshake(struct weir_tls_session *t)
{
    int r, e;

    ERR_clear_error();
    r = SSL_do_handshake(t->ssl);
    if (r == 1) {
        t->up = true;
        if (t->hs_timer.op.pending)
            weir_loop_timer_stop(t->loop, &t->hs_timer);
        flush(t);
        t->again = true;
        return;
    }
    e = SSL_get_error(t->ssl, r);
    if (e == SSL_ERROR_WANT_READ || e == SSL_ERROR_WANT_WRITE) {
        flush(t);
        if (e == SSL_ERROR_WANT_READ)
            need_input(t);
        return;
    }
    hs_fail(t, e);
}

/* ---- sessions: data ---- */

static void do_write(struct weir_tls_session *t)
{
    while (t->w_at < t->w_n) {
        const struct iovec *v = &t->w_iov[t->w_at];
        size_t n;
        int e;

        if (t->w_off == v->iov_len) {
            t->w_at++;
            t->w_off = 0;
            continue;
        }
        ERR_clear_error();
        if (SSL_write_ex(t->ssl, (const char *)v->iov_base + t->w_off,
                         v->iov_len - t->w_off, &n)) {
            t->w_off += n;
            t->w_total += n;
            continue;
        }
        e = SSL_get_error(t->ssl, 0);
        if (e == SSL_ERROR_WANT_WRITE) {
            if (drain(t))
                continue;
            flush(t); /* the pair and obuf are full: wait for the send */
            return;
        }
        if (e == SSL_ERROR_WANT_READ) {
            need_input(t);
            return;
        }
        ERR_clear_error();
        set_err(t, -EPROTO);
        return;
    }
    flush(t);
    deliver(t, TLS_REQ_WRITE, (int)t->w_total);
}

static void do_read(struct weir_tls_session *t)
{
    bool end = false;

    while (t->r_got < t->r_len) {
        size_t n;
        int e;

        ERR_clear_error();
        if (SSL_read_ex(t->ssl, t->r_buf + t->r_got, t->r_len - t->r_got, &n)) {
            t->r_got += (uint32_t)n;
            continue;
        }
        e = SSL_get_error(t->ssl, 0);
        if (e == SSL_ERROR_WANT_READ) {
            if (feed(t))
                continue;
            break;
        }
        if (e == SSL_ERROR_WANT_WRITE) {
            flush(t);
            break;
        }
        if (e == SSL_ERROR_ZERO_RETURN) {
            end = true;
            break;
        }
        ERR_clear_error();
        set_err(t, -EPROTO);
        return;
    }
    flush(t); /* a read may answer (a key update) */
    if (t->r_got > 0 || end)
        deliver(t, TLS_REQ_READ, (int)t->r_got);
    else
        start_recv(t);
}

static void do_shutdown(struct weir_tls_session *t)
{
    if (!t->sd_sent) {
        ERR_clear_error();
        SSL_shutdown(t->ssl); /* queues close_notify; the peer's is not
                               * waited for */
        ERR_clear_error();
        t->sd_sent = true;
    }
    flush(t);
    if (!t->send_op.pending && !t->obuf && BIO_ctrl_pending(t->net) == 0)
        deliver(t, TLS_REQ_SHUTDOWN, 0);
}

static void step(struct weir_tls_session *t)
{
    for (int k = 0; k < TLS_REQ_KINDS; k++)
        if (t->req[k].on && t->req[k].canceled)
            deliver(t, (enum weir__tls_req_kind)k, -ECANCELED);
    if (t->err) {
        for (int k = 0; k < TLS_REQ_KINDS; k++)
            if (t->req[k].on)
                deliver(t, (enum weir__tls_req_kind)k, t->err);
        return;
    }
    if (!t->up) {
        handshake(t);
        return;
    }
    if (t->req[TLS_REQ_READY].on)
        deliver(t, TLS_REQ_READY, 0);
    if (t->req[TLS_REQ_WRITE].on)
        do_write(t);
    if (t->req[TLS_REQ_READ].on && !t->err)
        do_read(t);
    if (t->req[TLS_REQ_SHUTDOWN].on && !t->req[TLS_REQ_WRITE].on && !t->err)
        do_shutdown(t);
    if (!t->err)
        flush(t);
}

static void pump(struct weir_tls_session *t)
{
    if (t->pumping) {
        t->again = true;
        return;
    }
    t->pumping = true;
    do {
        t->again = false;
        step(t);
    } while (t->again && !t->dead);
    t->pumping = false;
    maybe_reap(t);
}

/* ---- sessions: requests ---- */

static int req_set(struct weir_tls_session *t, enum weir__tls_req_kind k,
                   weir__tls_fn fn, void *arg)
{
    if (t->req[k].on || t->dead)
        return -EBUSY;
    t->req[k] = (struct tls_req){.fn = fn, .arg = arg, .on = true};
    schedule(t);
    return 0;
}

int weir__tls_ready(struct weir_tls_session *t, weir__tls_fn fn, void *arg)
{
    return req_set(t, TLS_REQ_READY, fn, arg);
}

int weir__tls_write(struct weir_tls_session *t, const struct iovec *iov,
                    unsigned n, weir__tls_fn fn, void *arg)
{
    if (t->req[TLS_REQ_WRITE].on)
        return -EBUSY;
    t->w_iov = iov;
    t->w_n = n;
    t->w_at = 0;
    t->w_off = 0;
    t->w_total = 0;
    return req_set(t, TLS_REQ_WRITE, fn, arg);
}

int weir__tls_read(struct weir_tls_session *t, void *buf, uint32_t len,
                   weir__tls_fn fn, void *arg)
{
    if (t->req[TLS_REQ_READ].on)
        return -EBUSY;
    t->r_buf = buf;
    t->r_len = len;
    t->r_got = 0;
    return req_set(t, TLS_REQ_READ, fn, arg);
}

int weir__tls_shutdown(struct weir_tls_session *t, weir__tls_fn fn, void *arg)
{
    return req_set(t, TLS_REQ_SHUTDOWN, fn, arg);
}

void weir__tls_set_reader(struct weir_tls_session *t)
{
    t->reader = true;
}

bool weir__tls_has_reader(const struct weir_tls_session *t)
{
    return t->reader;
}

bool weir__tls_pending(const struct weir_tls_session *t,
                       enum weir__tls_req_kind k)
{
    return t->req[k].on;
}

void weir__tls_cancel(struct weir_tls_session *t, enum weir__tls_req_kind k)
{
    if (!t->req[k].on || t->req[k].canceled)
        return;
    t->req[k].canceled = true;
    schedule(t);
}

void weir__tls_abort(struct weir_tls_session *t, enum weir__tls_req_kind k)
{
    if (t->req[k].on)
        deliver(t, k, -ECANCELED);
}

/* The public face of the requests above (weir/tls.h). */

int weir_tls_session_read(struct weir_tls_session *s, void *buf, uint32_t len,
                          weir_tls_io_fn fn, void *arg)
{
    return weir__tls_read(s, buf, len, fn, arg);
}

int weir_tls_session_write(struct weir_tls_session *s, const struct iovec *iov,
                           unsigned n, weir_tls_io_fn fn, void *arg)
{
    return weir__tls_write(s, iov, n, fn, arg);
}

int weir_tls_session_shutdown(struct weir_tls_session *s, weir_tls_io_fn fn,
                              void *arg)
{
    return weir__tls_shutdown(s, fn, arg);
}

void weir_tls_session_abort(struct weir_tls_session *s)
{
    for (int k = 0; k < TLS_REQ_KINDS; k++)
        weir__tls_abort(s, (enum weir__tls_req_kind)k);
}

static bool is_literal(const char *name)
{
    unsigned char bin[16];

    return inet_pton(AF_INET, name, bin) == 1 ||
           inet_pton(AF_INET6, name, bin) == 1;
}

static int ses_name(struct weir_tls_session *t, const char *name)
{
    const struct weir_tls_options *o = &t->ctx->o;

    if (o->server || !name)
        return 0;
    if (is_literal(name)) {
        if (!o->no_verify &&
            !X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(t->ssl), name))
            return -EINVAL;
        return 0;
    }
    if (!SSL_set_tlsext_host_name(t->ssl, name))
        return -EINVAL;
    if (!o->no_verify && !SSL_set1_host(t->ssl, name))
        return -EINVAL;
    return 0;
}

int weir_tls_session_create(struct weir_tls_session **out,
                            struct weir_tls_ctx *ctx, struct weir_loop *loop,
                            int fd, const char *name)
{
    struct weir_tls_session *t;
    SSL_CTX *sc;
    BIO *inner = NULL;
    int rc;

    if (!ctx || !loop || fd < 0 || !weir_worker_pool())
        return -EINVAL;
    t = calloc(1, sizeof(*t));
    if (!t)
        return -ENOMEM;
    t->loop = loop;
    t->pool = weir_worker_pool();
    t->slot = weir_loop_slot(loop);
    t->refs = 1;
    t->fd = fcntl(fd, F_DUPFD_CLOEXEC, 0);
    if (t->fd < 0) {
        free(t);
        return -errno;
    }
    atomic_fetch_add_explicit(&ctx->refs, 1, memory_order_relaxed);
    t->ctx = ctx;
    pthread_mutex_lock(&ctx->mu);
    sc = ctx->ssl;
    SSL_CTX_up_ref(sc);
    pthread_mutex_unlock(&ctx->mu);
    t->ssl = SSL_new(sc);
    SSL_CTX_free(sc); /* the SSL holds its own reference */
    rc = -ENOMEM;
    if (!t->ssl || !BIO_new_bio_pair(&inner, PAIR_SIZE, &t->net, PAIR_SIZE))
        goto fail;
    SSL_set_bio(t->ssl, inner, inner);
    if (ctx->o.server)
        SSL_set_accept_state(t->ssl);
    else
        SSL_set_connect_state(t->ssl);
    if ((rc = ses_name(t, name)) != 0)
        goto fail;
    t->hs_timer.op.fn = hs_timeout;
    if ((rc = weir_loop_timer_start(loop, &t->hs_timer,
                                    ctx->o.handshake_timeout_ns)) != 0)
        goto fail;
    t->inflight++;
    schedule(t);
    *out = t;
    return 0;
fail:
    ERR_clear_error();
    ses_free(&t->reap);
    return rc;
}
