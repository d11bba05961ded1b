/*
 * tls.c - see tls.h.
 *
 * A failed handshake is logged with the peer, OpenSSL's reason and what to
 * check, at most once a minute per address and reason: a client that keeps
 * retrying with the wrong CA, or a scanner's hundreds of connections, must
 * not fill the journal, while a second, different failure is still heard
 * at once. What a window held back is counted, and said with the next line
 * of its kind or at exit. The table of recent lines is small and shared by
 * the workers under a mutex; a handshake costs far more than the lock.
 */
#include "conf/tls.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include <openssl/x509_vfy.h>

#include "conf/sockaddr.h"
#include "sys/clock.h"
#include "sys/log.h"

#define SEEN_SLOTS  256
#define SEEN_WINDOW (60ll * 1000 * 1000 * 1000)

static struct seen {
    const struct weir_address *addr;
    char reason[96];
    int64_t at;          /* when its last line was logged */
    uint64_t suppressed; /* failures since that were not */
} seen[SEEN_SLOTS];
static pthread_mutex_t seen_mu = PTHREAD_MUTEX_INITIALIZER;

/* The peer's host, without the port: one client, many ports. */
static void peer_host(const struct sockaddr *sa, socklen_t len, char *buf,
                      size_t size)
{
    char *colon;

    if (!sa) {
        snprintf(buf, size, "an unknown peer");
        return;
    }
    sockaddr_format(sa, len, buf, size);
    colon = strrchr(buf, ':');
    if (colon && sa->sa_family != AF_UNIX)
        *colon = '\0';
}

/* Whether a failure of addr for reason is to be logged now; if so, how
 * many of its kind were held back since the last line (*held). */
static bool first_in_window(const struct weir_address *addr, const char *reason,
                            uint64_t *held)
{
    uint64_t h = (uintptr_t)addr;
    int64_t now = clock_now_ns();
    struct seen *e;
    bool first;

    for (const char *p = reason; *p; p++)
        h = h * 31 + (unsigned char)*p;
    e = &seen[h % SEEN_SLOTS];
    *held = 0;
    pthread_mutex_lock(&seen_mu);
    if (e->addr != addr || strncmp(e->reason, reason, sizeof(e->reason) - 1)) {
        /* A new kind, or another that shared the slot (its count is
         * lost: a bound, not a ledger). */
        e->addr = addr;
        snprintf(e->reason, sizeof(e->reason), "%s", reason);
        e->suppressed = 0;
        e->at = now;
        first = true;
    } else if (now - e->at >= SEEN_WINDOW) {
        *held = e->suppressed;
        e->suppressed = 0;
        e->at = now;
        first = true;
    } else {
        e->suppressed++;
        first = false;
    }
    pthread_mutex_unlock(&seen_mu);
    return first;
}

void conf_tls_flush_suppressed(void)
{
    pthread_mutex_lock(&seen_mu);
    for (unsigned i = 0; i < SEEN_SLOTS; i++) {
        struct seen *e = &seen[i];

        if (e->addr && e->suppressed)
            log_warnx("%s: %llu more TLS handshake%s failed (%s) after the "
                      "last line that said so; not logged, once a minute "
                      "per address and reason",
                      e->addr->text, (unsigned long long)e->suppressed,
                      e->suppressed == 1 ? "" : "s", e->reason);
        e->suppressed = 0;
    }
    pthread_mutex_unlock(&seen_mu);
}

/* What to check, for the failures people meet. */
static const char *hint(const struct weir_address *a, const char *reason,
                        long verify)
{
    bool server = a->kind == ADDR_TCP_LISTEN;

    switch (verify) {
    case X509_V_ERR_UNABLE_TO_GET_ISSUER_CERT_LOCALLY:
    case X509_V_ERR_UNABLE_TO_GET_ISSUER_CERT:
    case X509_V_ERR_DEPTH_ZERO_SELF_SIGNED_CERT:
    case X509_V_ERR_SELF_SIGNED_CERT_IN_CHAIN:
    case X509_V_ERR_UNABLE_TO_VERIFY_LEAF_SIGNATURE:
        if (server)
            return "the client's certificate must be issued by a CA in ca=";
        return a->ca ? "the server's certificate is not issued by a CA in "
                       "ca=: check the file, and the chain the server sends"
                     : "set ca= or verify=no";
    case X509_V_ERR_HOSTNAME_MISMATCH:
    case X509_V_ERR_IP_ADDRESS_MISMATCH:
        return "connect by a name the certificate holds, or set sni= to one";
    case X509_V_ERR_CERT_HAS_EXPIRED:
        return "the peer's certificate has expired: renew it (or check the "
               "clock)";
    case X509_V_ERR_CERT_NOT_YET_VALID:
        return "the peer's certificate is not valid yet: check the clocks";
    default:
        break;
    }
    if (strstr(reason, "did not return a certificate") ||
        strstr(reason, "certificate required"))
        return server ? "the client must present a certificate (cert= and "
                        "key=) issued by a CA in ca="
                      : "the server wants a client certificate: set cert= "
                        "and key=";
    if (strstr(reason, "unknown ca") || strstr(reason, "bad certificate"))
        return "the peer refused this side's certificate: check cert= "
               "against the peer's CAs";
    if (strstr(reason, "wrong version number") ||
        strstr(reason, "packet length too long") ||
        strstr(reason, "http request"))
        return "the peer does not speak TLS on this port";
    if (strstr(reason, "protocol version") ||
        strstr(reason, "unsupported protocol"))
        return "check min_version= on both sides";
    if (strstr(reason, "no shared cipher") ||
        strstr(reason, "handshake failure"))
        return "check ciphers= and min_version= on both sides";
    if (strstr(reason, "did not finish"))
        return "is the peer a TLS peer, and is it alive?";
    if (strstr(reason, "closed the connection"))
        return "the peer may have refused the certificate or the protocol; "
               "see its log";
    return "see the peer's log for its side";
}

static void handshake_failed(void *arg, const struct sockaddr *peer,
                             socklen_t peerlen, const char *reason, long verify)
{
    const struct weir_address *a = arg;
    char host[80], more[96] = "";
    uint64_t held;

    if (!first_in_window(a, reason, &held))
        return;
    peer_host(peer, peerlen, host, sizeof(host));
    if (held)
        snprintf(more, sizeof(more), "; %llu more like it since the last line",
                 (unsigned long long)held);
    log_warnx("%s: TLS handshake with %s failed: %s; %s (once a minute per "
              "address and reason%s)",
              a->text, host, reason, hint(a, reason, verify), more);
}

void conf_tls_check(struct weir_address *a, struct conf_diag *diag)
{
    struct weir_tls_options o = {
        .server = a->kind == ADDR_TCP_LISTEN,
        .cert = a->cert,
        .key = a->key,
        .ca = a->ca,
        .no_verify = !a->verify,
        .alpn = a->alpn,
        .min_version = a->min_version,
        .ciphers = a->ciphers,
        .handshake_timeout_ns = a->handshake_timeout_ms * 1000000ull,
        .on_fail = handshake_failed,
        .fail_arg = a,
    };
    char err[512] = "", alpn[256];
    int rc;

    if (!a->tls || a->tls_ctx)
        return;
    if (a->alpn) {
        /* Commas separate address options: the list is written with ':'. */
        snprintf(alpn, sizeof(alpn), "%s", a->alpn);
        for (char *c = alpn; *c; c++)
            if (*c == ':')
                *c = ',';
        o.alpn = alpn;
    }
    conf_tls_note_kernel();
    if (o.server && !a->cert) {
        config_error(diag, &a->loc,
                     "%s: a TLS server needs cert=FILE (and key=FILE unless "
                     "the cert file holds the key)",
                     a->text);
        return;
    }
    rc = weir_tls_ctx_create(&a->tls_ctx, &o, err, sizeof(err));
    if (rc)
        config_error(diag, &a->loc, "%s: %s", a->text,
                     rc == -ENOMEM ? "out of memory" : err);
}

static void reload_one(struct weir_address *a)
{
    char err[512] = "";

    if (a && a->tls_ctx && weir_tls_ctx_reload(a->tls_ctx, err, sizeof(err)))
        log_warnx("%s: keeping the certificate loaded before: %s", a->text,
                  err);
}

void conf_tls_reload(const struct weir_pipeline *p)
{
    reload_one(p->source);
    for (size_t i = 0; i < p->nsinks; i++)
        reload_one(p->sinks[i]);
}

static void note_kernel(void)
{
    if (weir_tls_kernel_available())
        log_debug("tls: the kernel offers TLS (the tls ULP); weir's TLS runs "
                  "in user space over its event loop all the same");
    else
        log_debug("tls: the kernel has no TLS (no tls in "
                  "/proc/sys/net/ipv4/tcp_available_ulp; `modprobe tls` adds "
                  "it where the kernel has CONFIG_TLS): TLS runs in user "
                  "space");
}

void conf_tls_note_kernel(void)
{
    static pthread_once_t once = PTHREAD_ONCE_INIT;

    pthread_once(&once, note_kernel);
}
