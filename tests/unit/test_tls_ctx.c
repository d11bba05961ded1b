/*
 * test_tls_ctx.c - TLS contexts: what weir_tls_ctx_create accepts and
 * what it refuses, with the sentence `weir --check` prints. Certificates
 * are made by the openssl command: a server's, another unrelated one,
 * and files that are not PEM. A reload that meets a broken file keeps
 * the context it had; one that meets a good file takes it.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "test_tls_certs.h"
#include "weir/tls.h"

static char dir[] = "/tmp/weir-tlsctx-XXXXXX";
static char cert[600], key[600], other[600], other_key[600], junk[600],
    missing[600], swap[600];

/* create with o; expects -EINVAL and an error holding `needle`. */
static void refused(const struct weir_tls_options *o, const char *needle)
{
    struct weir_tls_ctx *c = NULL;
    char err[512] = "";

    assert_int_equal(weir_tls_ctx_create(&c, o, err, sizeof(err)), -EINVAL);
    assert_null(c);
    if (!strstr(err, needle))
        fail_msg("error '%s' does not say '%s'", err, needle);
}

static struct weir_tls_ctx *accepted(const struct weir_tls_options *o)
{
    struct weir_tls_ctx *c = NULL;
    char err[512] = "";
    int rc = weir_tls_ctx_create(&c, o, err, sizeof(err));

    if (rc != 0)
        fail_msg("refused (%d): %s", rc, err);
    assert_non_null(c);
    return c;
}

static void test_server_files(void **state)
{
    (void)state;
    refused(&(struct weir_tls_options){.server = true}, "needs a certificate");
    refused(&(struct weir_tls_options){.server = true, .cert = missing},
            "No such file");
    refused(&(struct weir_tls_options){.server = true,
                                       .cert = cert,
                                       .key = missing},
            "No such file");
    refused(&(struct weir_tls_options){.server = true, .cert = junk}, "cert ");
    refused(
        &(struct weir_tls_options){.server = true, .cert = cert, .key = junk},
        "key ");
    refused(&(struct weir_tls_options){.server = true,
                                       .cert = cert,
                                       .key = other_key},
            "does not belong to cert");
    weir_tls_ctx_destroy(accepted(
        &(struct weir_tls_options){.server = true, .cert = cert, .key = key}));
}

static void test_client_options(void **state)
{
    (void)state;
    refused(&(struct weir_tls_options){.key = key}, "key= needs cert=");
    refused(&(struct weir_tls_options){.ca = missing}, "No such file");
    refused(&(struct weir_tls_options){.ca = junk}, "ca ");
    refused(&(struct weir_tls_options){.ciphers = "NOT-A-CIPHER"},
            "no cipher OpenSSL knows");
    refused(&(struct weir_tls_options){.ciphers = "TLS_NOT_A_SUITE"},
            "no cipher OpenSSL knows");
    refused(&(struct weir_tls_options){.alpn = "h2,,http/1.1"},
            "empty or overlong");
    /* The system store, a CA file, both kinds of cipher names, ALPN,
     * TLS 1.3 only, a client certificate: all taken. */
    weir_tls_ctx_destroy(accepted(&(struct weir_tls_options){0}));
    weir_tls_ctx_destroy(accepted(&(struct weir_tls_options){
        .ca = cert,
        .cert = other,
        .key = other_key,
        .ciphers = "ECDHE-ECDSA-AES128-GCM-SHA256:TLS_AES_128_GCM_SHA256",
        .alpn = "h2,http/1.1",
        .min_version = WEIR_TLS_1_3,
    }));
    weir_tls_ctx_destroy(
        accepted(&(struct weir_tls_options){.no_verify = true}));
}

static void test_server_alpn_and_clients(void **state)
{
    (void)state;
    /* A server that requires client certificates from its CA file. */
    weir_tls_ctx_destroy(accepted(&(struct weir_tls_options){
        .server = true,
        .cert = cert,
        .key = key,
        .ca = other,
        .alpn = "http/1.1",
    }));
    refused(
        &(struct weir_tls_options){
            .server = true, .cert = cert, .key = key, .ca = junk},
        "ca ");
}

static void copy(const char *from, const char *to)
{
    char cmd[1400];

    snprintf(cmd, sizeof(cmd), "cp %s %s", from, to);
    assert_int_equal(system(cmd), 0);
}

static void test_reload(void **state)
{
    struct weir_tls_ctx *c;
    char err[512] = "";
    char swap_key[620];

    (void)state;
    snprintf(swap_key, sizeof(swap_key), "%s.key", swap);
    copy(cert, swap);
    copy(key, swap_key);
    c = accepted(&(struct weir_tls_options){
        .server = true, .cert = swap, .key = swap_key});
    /* A certificate that no longer matches its key: refused, kept. */
    copy(other, swap);
    assert_int_equal(weir_tls_ctx_reload(c, err, sizeof(err)), -EINVAL);
    assert_non_null(strstr(err, "does not belong to cert"));
    /* The other pair, whole: taken. */
    copy(other_key, swap_key);
    err[0] = '\0';
    assert_int_equal(weir_tls_ctx_reload(c, err, sizeof(err)), 0);
    weir_tls_ctx_destroy(c);
}

static int setup(void **state)
{
    FILE *f;

    (void)state;
    if (tls_certs_make(dir) != 0)
        return -1;
    snprintf(cert, sizeof(cert), "%s/cert.pem", dir);
    snprintf(key, sizeof(key), "%s/cert.key", dir);
    snprintf(other, sizeof(other), "%s/other.pem", dir);
    snprintf(other_key, sizeof(other_key), "%s/other.key", dir);
    snprintf(junk, sizeof(junk), "%s/junk.pem", dir);
    snprintf(missing, sizeof(missing), "%s/missing.pem", dir);
    snprintf(swap, sizeof(swap), "%s/swap.pem", dir);
    f = fopen(junk, "w");
    if (!f)
        return -1;
    fputs("-----BEGIN CERTIFICATE-----\nnot base64 at all\n"
          "-----END CERTIFICATE-----\n",
          f);
    fclose(f);
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    return tls_certs_remove(dir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_server_files),
        cmocka_unit_test(test_client_options),
        cmocka_unit_test(test_server_alpn_and_clients),
        cmocka_unit_test(test_reload),
    };

    return cmocka_run_group_tests(tests, setup, teardown);
}
