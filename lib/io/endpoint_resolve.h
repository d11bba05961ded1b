/*
 * endpoint_resolve.h - a host name looked up off the loop's thread, for
 * an endpoint that connects by name (endpoint_resolve.c). Private to
 * lib/io.
 */
#ifndef WEIR_IO_ENDPOINT_RESOLVE_H
#define WEIR_IO_ENDPOINT_RESOLVE_H

#include <sys/socket.h>

#include "endpoint_base.h"

struct ep_lookup;

struct ep_resolve {
    struct weir_endpoint *ep; /* whose loop it answers on, and whose op
                               * the lookup counts as */
    char *host;               /* owned */
    uint16_t port;
    /* The answer, on the loop's thread: 0 with addrs filled, or an EAI_*
     * code. */
    void (*done)(struct ep_resolve *r, int eai);
    struct ep_lookup *lookup; /* the lookup out, or NULL */
    struct sockaddr_storage *addrs;
    socklen_t *addrlens;
    unsigned naddrs, addr_at; /* addr_at: the one tried now */
};

/* Asks for the name's addresses: 0 (the answer comes to r->done), or
 * -errno. */
int weir__ep_lookup_start(struct ep_resolve *r);
/* At destroy: lets go of a lookup still out. */
void weir__ep_lookup_drop(struct ep_resolve *r);
/* The free: what r holds. */
void weir__ep_resolve_free(struct ep_resolve *r);

#endif
