/*
 * http_park.h - the idle keep-alive connections of an http-listen
 * pipeline, kept without a stream. A client that asks nothing (for how
 * long: park_after_ns in httpd/http_conn.h) costs its socket and a struct
 * of 192 bytes here instead of a stream: its worker watches the socket
 * for the next request and its deadline (header_timeout from when it
 * went idle), and the first byte of a request gives the connection a
 * stream again.
 *
 * A lot belongs to its pipeline, whose liveness each parked connection
 * holds, and is counted with its streams (max_clients, the clients
 * connected). Main thread, except http_lot_park (the parking worker).
 */
#ifndef WEIR_DAEMON_HTTP_PARK_H
#define WEIR_DAEMON_HTTP_PARK_H

#include <stdbool.h>
#include <stdint.h>

#include "conf/config.h"
#include "httpd/http_conn.h"
#include "stream/stream.h"
#include "sys/alive.h"
#include "weir/loop.h"
#include "weir/util.h"

/* The unit of how long an idle connection keeps its stream before it is
 * parked (httpd/http_conn.h, park_after_ns), so that a client going on
 * with its requests (a benchmark, a browser's page) rarely pays the trip
 * to the main thread and back. */
#define HTTP_PARK_AFTER_NS (50ull * 1000 * 1000)

struct http_lot {
    struct weir_loop *main;
    struct alive *alive;        /* the pipeline's */
    struct http_counts *counts; /* its timeouts counted there */
    /* A parked client sent something (or went): fd is the caller's now,
     * for a stream of its own. */
    void (*wake)(void *owner, int fd, const struct http_parked *pc);
    void *owner;
    struct weir_list parked;
    unsigned nparked;
    bool closed; /* no connection is parked any more */
};

void http_lot_init(struct http_lot *lot, struct weir_loop *main,
                   struct alive *alive, struct http_counts *counts,
                   void (*wake)(void *, int, const struct http_parked *),
                   void *owner);

/* The parking worker's (struct stream_http's park): watches pc->fd
 * (taken over) on loop until a request begins or pc->deadline passes.
 * Out of memory, the fd is closed, as a client idle past its deadline
 * would be. */
void http_lot_park(void *lot, struct weir_loop *loop,
                   const struct http_parked *pc);

/* Closes every parked connection and parks none from now on: a stop or a
 * cut. Each goes once its worker let go of it. */
void http_lot_close(struct http_lot *lot);

#endif
