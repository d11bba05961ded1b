/*
 * tls.c - a TLS session for a socket of a stream, on the stream's worker:
 * the server's side for an accepted client of a tls-listen address, the
 * client's side (with the server name to send and check) for a tls:
 * connection.
 */
#include "stream/stream_impl.h"

int stream_tls_open(struct stream *s, const struct weir_address *a, int fd,
                    struct weir_tls_session **out)
{
    struct stream_home *h = &s->home;
    const char *name = NULL;

    *out = NULL;
    if (!a || !a->tls)
        return 0;
    if (!a->tls_ctx)
        return -EINVAL;
    if (a->kind == ADDR_TCP)
        name = a->sni ? a->sni : a->host;
    return weir_tls_session_create(out, a->tls_ctx, h->loop, fd, name);
}
