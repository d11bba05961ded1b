/*
 * tls_context.c - TLS contexts (weir/tls.h): the certificate, key, CA,
 * ALPN and cipher settings built into an OpenSSL SSL_CTX, rebuilt in
 * place by a reload, and shared by reference with the sessions made from
 * them (tls_session.c), which keep a context alive until they end.
 *
 * Unexpected EOF is taken as the peer's end (SSL_OP_IGNORE_UNEXPECTED_EOF),
 * as a plain TCP peer's close is: socat and many servers close without
 * close_notify. Renegotiation is refused.
 */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>

#include "tls_context.h"
#include "tls_impl.h"

#define HANDSHAKE_NS (10ull * 1000 * 1000 * 1000)

static void ctx_err(char *err, size_t errlen, const char *what,
                    const char *path)
{
    unsigned long e = ERR_get_error();
    char buf[160] = "";

    if (e)
        ERR_error_string_n(e, buf, sizeof(buf));
    ERR_clear_error();
    snprintf(err, errlen, "%s %s: %s", what, path,
             e ? (ERR_reason_error_string(e) ? ERR_reason_error_string(e) : buf)
               : "cannot be used");
}

static bool readable_file(const char *what, const char *path, char *err,
                          size_t errlen)
{
    FILE *f = fopen(path, "r");

    if (f) {
        fclose(f);
        return true;
    }
    snprintf(err, errlen, "%s %s: %s", what, path, strerror(errno));
    return false;
}

static int alpn_select(SSL *ssl, const unsigned char **out,
                       unsigned char *outlen, const unsigned char *in,
                       unsigned inlen, void *arg)
{
    struct weir_tls_ctx *c = arg;
    unsigned char *sel;

    (void)ssl;
    if (SSL_select_next_proto(&sel, outlen, c->alpn, c->alpn_len, in, inlen) !=
        OPENSSL_NPN_NEGOTIATED)
        return SSL_TLSEXT_ERR_NOACK;
    *out = sel;
    return SSL_TLSEXT_ERR_OK;
}

/* Splits "a:b:TLS_X" into the TLS 1.2 list and the TLS 1.3 suites. */
static int set_ciphers(SSL_CTX *s, const char *list, char *err, size_t errlen)
{
    size_t n = strlen(list) + 1;
    char *v12 = calloc(1, n), *v13 = calloc(1, n), *copy = strdup(list);
    char *save = NULL, *tok;
    int rc = 0;

    if (!v12 || !v13 || !copy) {
        rc = -ENOMEM;
        goto out;
    }
    for (tok = strtok_r(copy, ":", &save); tok;
         tok = strtok_r(NULL, ":", &save)) {
        char *dst = strncmp(tok, "TLS_", 4) == 0 ? v13 : v12;

        if (*dst)
            strcat(dst, ":");
        strcat(dst, tok);
    }
    if ((*v12 && !SSL_CTX_set_cipher_list(s, v12)) ||
        (*v13 && !SSL_CTX_set_ciphersuites(s, v13))) {
        ERR_clear_error();
        snprintf(err, errlen, "ciphers '%s': no cipher OpenSSL knows", list);
        rc = -EINVAL;
    }
out:
    free(v12);
    free(v13);
    free(copy);
    return rc;
}

static int ctx_build(struct weir_tls_ctx *c, SSL_CTX **out, char *err,
                     size_t errlen)
{
    const struct weir_tls_options *o = &c->o;
    SSL_CTX *s =
        SSL_CTX_new(o->server ? TLS_server_method() : TLS_client_method());
    int rc = -EINVAL;

    ERR_clear_error();
    if (!s)
        return -ENOMEM;
    SSL_CTX_set_min_proto_version(
        s, o->min_version == WEIR_TLS_1_3 ? TLS1_3_VERSION : TLS1_2_VERSION);
    SSL_CTX_set_options(s, SSL_OP_IGNORE_UNEXPECTED_EOF |
                               SSL_OP_NO_RENEGOTIATION | SSL_OP_NO_COMPRESSION);
    SSL_CTX_set_mode(s, SSL_MODE_ENABLE_PARTIAL_WRITE |
                            SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER);
    if (o->server && !o->cert) {
        snprintf(err, errlen, "a TLS server needs a certificate (cert=)");
        goto fail;
    }
    if (o->cert) {
        const char *key = o->key ? o->key : o->cert;

        if (!readable_file("cert", o->cert, err, errlen) ||
            !readable_file("key", key, err, errlen))
            goto fail;
        if (!SSL_CTX_use_certificate_chain_file(s, o->cert)) {
            ctx_err(err, errlen, "cert", o->cert);
            goto fail;
        }
        if (!SSL_CTX_use_PrivateKey_file(s, key, SSL_FILETYPE_PEM)) {
            if (ERR_GET_REASON(ERR_peek_last_error()) ==
                X509_R_KEY_VALUES_MISMATCH)
                snprintf(err, errlen, "key %s does not belong to cert %s", key,
                         o->cert);
            else
                ctx_err(err, errlen, "key", key);
            goto fail;
        }
        if (!SSL_CTX_check_private_key(s)) {
            ERR_clear_error();
            snprintf(err, errlen, "key %s does not belong to cert %s", key,
                     o->cert);
            goto fail;
        }
    } else if (o->key) {
        snprintf(err, errlen, "key= needs cert=");
        goto fail;
    }
    if (o->ca) {
        STACK_OF(X509_NAME) * names;

        if (!readable_file("ca", o->ca, err, errlen))
            goto fail;
        if (!SSL_CTX_load_verify_file(s, o->ca)) {
            ctx_err(err, errlen, "ca", o->ca);
            goto fail;
        }
        if (o->server && (names = SSL_load_client_CA_file(o->ca)) != NULL)
            SSL_CTX_set_client_CA_list(s, names);
    } else if (!o->server && !o->no_verify &&
               !SSL_CTX_set_default_verify_paths(s)) {
        ctx_err(err, errlen, "the system's CA store", "");
        goto fail;
    }
    if (o->server)
        SSL_CTX_set_verify(s,
                           o->ca ? SSL_VERIFY_PEER |
                                       SSL_VERIFY_FAIL_IF_NO_PEER_CERT
                                 : SSL_VERIFY_NONE,
                           NULL);
    else
        SSL_CTX_set_verify(s, o->no_verify ? SSL_VERIFY_NONE : SSL_VERIFY_PEER,
                           NULL);
    if (o->ciphers && (rc = set_ciphers(s, o->ciphers, err, errlen)) != 0)
        goto fail;
    rc = -EINVAL;
    if (c->alpn) {
        if (o->server)
            SSL_CTX_set_alpn_select_cb(s, alpn_select, c);
        else if (SSL_CTX_set_alpn_protos(s, c->alpn, c->alpn_len) != 0) {
            snprintf(err, errlen, "alpn '%s' cannot be offered", o->alpn);
            goto fail;
        }
    }
    ERR_clear_error();
    *out = s;
    return 0;
fail:
    ERR_clear_error();
    SSL_CTX_free(s);
    return rc;
}

static int alpn_wire(struct weir_tls_ctx *c, char *err, size_t errlen)
{
    size_t n = strlen(c->o.alpn), at = 0;
    const char *p = c->o.alpn;

    c->alpn = malloc(n + 1);
    if (!c->alpn)
        return -ENOMEM;
    while (*p) {
        size_t len = strcspn(p, ",");

        if (len == 0 || len > 255) {
            snprintf(err, errlen, "alpn '%s': empty or overlong name",
                     c->o.alpn);
            return -EINVAL;
        }
        c->alpn[at++] = (unsigned char)len;
        memcpy(c->alpn + at, p, len);
        at += len;
        p += len;
        if (*p == ',')
            p++;
    }
    c->alpn_len = (unsigned)at;
    return 0;
}

static void ctx_free(struct weir_tls_ctx *c)
{
    SSL_CTX_free(c->ssl);
    pthread_mutex_destroy(&c->mu);
    free((char *)c->o.cert);
    free((char *)c->o.key);
    free((char *)c->o.ca);
    free((char *)c->o.alpn);
    free((char *)c->o.ciphers);
    free(c->alpn);
    free(c);
}

static int dup_str(const char **dst, const char *src)
{
    *dst = NULL;
    if (src && !(*dst = strdup(src)))
        return -ENOMEM;
    return 0;
}

int weir_tls_ctx_create(struct weir_tls_ctx **out,
                        const struct weir_tls_options *o, char *err,
                        size_t errlen)
{
    struct weir_tls_ctx *c;
    int rc;

    if (!o || o->min_version > WEIR_TLS_1_3)
        return -EINVAL;
    c = calloc(1, sizeof(*c));
    if (!c)
        return -ENOMEM;
    atomic_init(&c->refs, 1);
    pthread_mutex_init(&c->mu, NULL);
    c->o = *o;
    if (dup_str(&c->o.cert, o->cert) || dup_str(&c->o.key, o->key) ||
        dup_str(&c->o.ca, o->ca) || dup_str(&c->o.alpn, o->alpn) ||
        dup_str(&c->o.ciphers, o->ciphers)) {
        ctx_free(c);
        return -ENOMEM;
    }
    if (!c->o.handshake_timeout_ns)
        c->o.handshake_timeout_ns = HANDSHAKE_NS;
    rc = c->o.alpn ? alpn_wire(c, err, errlen) : 0;
    if (rc == 0)
        rc = ctx_build(c, &c->ssl, err, errlen);
    if (rc) {
        ctx_free(c);
        return rc;
    }
    *out = c;
    return 0;
}

int weir_tls_ctx_reload(struct weir_tls_ctx *c, char *err, size_t errlen)
{
    SSL_CTX *s, *old;
    int rc = ctx_build(c, &s, err, errlen);

    if (rc)
        return rc;
    pthread_mutex_lock(&c->mu);
    old = c->ssl;
    c->ssl = s;
    pthread_mutex_unlock(&c->mu);
    SSL_CTX_free(old); /* sessions made from it hold their own reference */
    return 0;
}

static void ctx_unref(struct weir_tls_ctx *c)
{
    /* Release orders this holder's use before the free; the acquire on
     * the last decrement pairs with the other holders' releases. */
    if (atomic_fetch_sub_explicit(&c->refs, 1, memory_order_acq_rel) == 1)
        ctx_free(c);
}

void weir_tls_ctx_destroy(struct weir_tls_ctx *c)
{
    if (c)
        ctx_unref(c);
}

void weir__tls_ctx_ref(struct weir_tls_ctx *c)
{
    /* Relaxed: the caller already holds a reference. */
    atomic_fetch_add_explicit(&c->refs, 1, memory_order_relaxed);
}

void weir__tls_ctx_unref(struct weir_tls_ctx *c)
{
    ctx_unref(c);
}

bool weir_tls_kernel_available(void)
{
    char buf[256];
    FILE *f = fopen("/proc/sys/net/ipv4/tcp_available_ulp", "r");
    bool found = false;

    if (!f)
        return false;
    if (fgets(buf, sizeof(buf), f)) {
        char *save = NULL;

        for (char *w = strtok_r(buf, " \n", &save); w && !found;
             w = strtok_r(NULL, " \n", &save))
            found = strcmp(w, "tls") == 0;
    }
    fclose(f);
    return found;
}
