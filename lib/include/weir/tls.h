/*
 * weir/tls.h - TLS (OpenSSL 3) on the sockets of endpoints.
 *
 * A context holds what every connection of one address shares: the role
 * (client or server), the certificate and key, the trusted CAs, the
 * verification rules, ALPN, the lowest protocol version and the ciphers.
 * A session is one connection's TLS state. It is driven through memory
 * (a BIO pair), never through the socket: the session's socket I/O is the
 * loop's sends and receives, so it runs on io_uring and on epoll alike and
 * never blocks the loop. The handshake is a state of the session with its
 * own timeout; writes and reads wait for it.
 *
 * An endpoint made with a session (the tls of its options) reads or
 * writes plaintext through it; a socket sink given a context
 * (weir_socket_sink_options.tls) makes a new session for every connection
 * it opens and reports the connection up only after the handshake. Both
 * directions of one connection (a proxy's client) share one session: give
 * it to the source and to the sink.
 *
 * Contexts: any thread; a context is used by sessions on several loops at
 * once, and weir_tls_ctx_reload may run meanwhile (new handshakes take the
 * new certificate; running sessions keep theirs). Sessions: the owner
 * thread of their loop.
 */
#ifndef WEIR_TLS_H
#define WEIR_TLS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>
#include <sys/uio.h>

#include "weir/loop.h"

#ifdef __cplusplus
extern "C" {
#endif

struct weir_tls_ctx;
struct weir_tls_session;

/* Protocol versions for min_version. */
enum weir_tls_version {
    WEIR_TLS_DEFAULT = 0, /* TLS 1.2 */
    WEIR_TLS_1_2,
    WEIR_TLS_1_3,
};

/*
 * A handshake failed. peer: the socket's peer (may be NULL when unknown);
 * reason: OpenSSL's reason, e.g. "certificate verify failed: unable to get
 * local issuer certificate"; verify: the X509 verification result (0 when
 * verification was not the cause). Runs on the session's loop thread, so
 * on several threads at once.
 */
typedef void (*weir_tls_fail_fn)(void *arg, const struct sockaddr *peer,
                                 socklen_t peerlen, const char *reason,
                                 long verify);

struct weir_tls_options {
    bool server;      /* accept handshakes (else: connect) */
    const char *cert; /* PEM certificate chain; the server needs one */
    const char *key;  /* PEM private key of cert; NULL: in the cert file */
    /* PEM file of trusted CAs. A client verifies the server against it
     * (NULL: the system store); a server given one requires and verifies
     * client certificates (mutual TLS). */
    const char *ca;
    bool no_verify;   /* client: accept any server certificate */
    const char *alpn; /* "h2,http/1.1": offered (client) or chosen */
    enum weir_tls_version min_version;
    /* OpenSSL cipher names, ':'-separated; TLS_* names are TLS 1.3
     * suites, the others TLS 1.2 ciphers. NULL: OpenSSL's defaults. */
    const char *ciphers;
    uint64_t handshake_timeout_ns; /* 0: 10 s */
    weir_tls_fail_fn on_fail;      /* may be NULL */
    void *fail_arg;
};

/*
 * Any thread. Loads the files and checks that the key matches the
 * certificate. Returns 0, -EINVAL with a sentence in err (a file that is
 * missing or does not parse, a key that is not the certificate's, an
 * unknown option value), or -ENOMEM. The options' strings are copied.
 */
int weir_tls_ctx_create(struct weir_tls_ctx **out,
                        const struct weir_tls_options *o, char *err,
                        size_t errlen);

/* Any thread. Loads the files again: sessions made from now on use what
 * they hold; running sessions are untouched. On failure (as for create)
 * the context keeps what it had. */
int weir_tls_ctx_reload(struct weir_tls_ctx *ctx, char *err, size_t errlen);

/* Any thread. Drops the caller's reference; sessions keep theirs. */
void weir_tls_ctx_destroy(struct weir_tls_ctx *ctx);

/*
 * Owner of `loop`. A session on the connected socket fd (the session
 * keeps a duplicate of it; the caller's fd stays the caller's). name: for
 * a client, the server name sent (SNI, when it is not an address literal)
 * and checked against the certificate; NULL: no check of the name. The
 * handshake starts at once. Returns 0, -EINVAL, -ENOMEM or -EMFILE.
 */
int weir_tls_session_create(struct weir_tls_session **out,
                            struct weir_tls_ctx *ctx, struct weir_loop *loop,
                            int fd, const char *name);

/* Owner. Drops the creator's reference: the endpoints given the session
 * hold their own, and the last one to go frees it. */
void weir_tls_session_release(struct weir_tls_session *s);

/*
 * Plaintext over a session, for a protocol that drives the connection
 * itself rather than through an endpoint (an HTTP server's requests and
 * answers). At most one request of each kind at a time (-EBUSY
 * otherwise); fn(arg, res) runs later from the loop, never inside the
 * call: res >= 0 on success, -errno on failure, and after one failure
 * every request fails with the same error. Reads and writes wait for the
 * handshake.
 *
 * read: up to len bytes into buf; res is how many, 0 the peer's end.
 * write: every byte of iov (which stays valid until fn runs) is taken
 * and res is their count. shutdown: close_notify goes to the kernel,
 * after a pending write (the peer's close_notify is not waited for).
 * abort: each pending request completes now, inside the call, with
 * -ECANCELED; for an owner about to let go of the session.
 * Owner thread of the session's loop.
 */
typedef void (*weir_tls_io_fn)(void *arg, int res);

int weir_tls_session_read(struct weir_tls_session *s, void *buf, uint32_t len,
                          weir_tls_io_fn fn, void *arg);
int weir_tls_session_write(struct weir_tls_session *s, const struct iovec *iov,
                           unsigned n, weir_tls_io_fn fn, void *arg);
int weir_tls_session_shutdown(struct weir_tls_session *s, weir_tls_io_fn fn,
                              void *arg);
void weir_tls_session_abort(struct weir_tls_session *s);

/*
 * Any thread. Whether the kernel offers TLS to sockets (the tls upper
 * layer protocol is listed in /proc/sys/net/ipv4/tcp_available_ulp;
 * `modprobe tls` adds it). Sessions run in user space either way today.
 */
bool weir_tls_kernel_available(void);

#ifdef __cplusplus
}
#endif

#endif /* WEIR_TLS_H */
