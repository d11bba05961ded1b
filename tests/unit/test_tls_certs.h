/*
 * test_tls_certs.h - the certificates the TLS unit tests load: two
 * self-signed P-256 pairs for localhost, made by the openssl command in a
 * fresh temporary directory (cert.pem/cert.key, other.pem/other.key),
 * and that directory removed again.
 */
#ifndef WEIR_TEST_TLS_CERTS_H
#define WEIR_TEST_TLS_CERTS_H

#include <stdio.h>
#include <stdlib.h>

/* dir is a mkdtemp template, filled in. 0, or -1 when a step failed. */
static inline int tls_certs_make(char *dir)
{
    char cmd[2000];

    if (!mkdtemp(dir))
        return -1;
    snprintf(cmd, sizeof(cmd),
             "cd %s && for n in cert other; do openssl req -x509 -newkey ec "
             "-pkeyopt ec_paramgen_curve:prime256v1 -nodes -keyout $n.key "
             "-out $n.pem -days 2 -subj /CN=localhost "
             "-addext subjectAltName=DNS:localhost 2>/dev/null || exit 1; "
             "done",
             dir);
    return system(cmd) == 0 ? 0 : -1;
}

static inline int tls_certs_remove(const char *dir)
{
    char cmd[700];

    snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
    return system(cmd) == 0 ? 0 : -1;
}

#endif /* WEIR_TEST_TLS_CERTS_H */
