/*
 * tls_context.h - the layout of a TLS context (tls_context.c), which the
 * sessions made from it (tls_session.c) read: its SSL_CTX, under the lock
 * a reload takes, and its options. Private to lib/io.
 */
#ifndef WEIR_IO_TLS_CONTEXT_H
#define WEIR_IO_TLS_CONTEXT_H

#include <pthread.h>
#include <stdatomic.h>

#include <openssl/ssl.h>

#include "weir/tls.h"

struct weir_tls_ctx {
    _Atomic unsigned refs;
    pthread_mutex_t mu; /* guards ssl: a reload swaps it */
    SSL_CTX *ssl;
    struct weir_tls_options o; /* strings owned */
    unsigned char *alpn;       /* wire format: length-prefixed names */
    unsigned alpn_len;
};

#endif
