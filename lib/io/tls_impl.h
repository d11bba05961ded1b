/*
 * tls_impl.h - what the endpoints ask of a TLS session (tls_session.c).
 * Private to lib/io. Owner thread of the session's loop only.
 *
 * Each request (ready, write, read, shutdown) is at most one at a time of
 * its kind, and its callback always runs later, from the loop, never from
 * inside the call that made it: fn(arg, res), res >= 0 on success (bytes
 * for write and read; 0 from read is the peer's end) or -errno. A request
 * canceled with weir__tls_cancel completes with -ECANCELED the same way.
 * After a failure every request fails with the same error.
 */
#ifndef WEIR_IO_TLS_IMPL_H
#define WEIR_IO_TLS_IMPL_H

#include <stdint.h>
#include <sys/uio.h>

#include "weir/tls.h"

typedef void (*weir__tls_fn)(void *arg, int res);

enum weir__tls_req_kind {
    TLS_REQ_READY,    /* the handshake is done */
    TLS_REQ_WRITE,    /* all of the plaintext was taken */
    TLS_REQ_READ,     /* plaintext arrived into the buffer */
    TLS_REQ_SHUTDOWN, /* close_notify went to the kernel */
    TLS_REQ_KINDS,
};

void weir__tls_ref(struct weir_tls_session *t);
void weir__tls_unref(struct weir_tls_session *t);
/* Any thread: a context's references. */
void weir__tls_ctx_ref(struct weir_tls_ctx *c);
void weir__tls_ctx_unref(struct weir_tls_ctx *c);
/* A source reads the session (then its sink does not linger). */
void weir__tls_set_reader(struct weir_tls_session *t);
bool weir__tls_has_reader(const struct weir_tls_session *t);

int weir__tls_ready(struct weir_tls_session *t, weir__tls_fn fn, void *arg);
/* iov stays valid until fn runs. */
int weir__tls_write(struct weir_tls_session *t, const struct iovec *iov,
                    unsigned n, weir__tls_fn fn, void *arg);
int weir__tls_read(struct weir_tls_session *t, void *buf, uint32_t len,
                   weir__tls_fn fn, void *arg);
int weir__tls_shutdown(struct weir_tls_session *t, weir__tls_fn fn, void *arg);
/* True when a request of that kind is pending. */
bool weir__tls_pending(const struct weir_tls_session *t,
                       enum weir__tls_req_kind k);
void weir__tls_cancel(struct weir_tls_session *t, enum weir__tls_req_kind k);
/* For an owner being destroyed: a pending request of kind k completes
 * with -ECANCELED now, inside this call. */
void weir__tls_abort(struct weir_tls_session *t, enum weir__tls_req_kind k);

#endif
