/*
 * http_collector.h - a small HTTP/1.1 collector for the http sink's
 * tests: a thread on 127.0.0.1 (an ephemeral port) that reads POSTs on
 * keep-alive connections, undoes gzip and zstd, counts every record it
 * takes (a line holding "r" and 7 digits: its number) and answers as the
 * test's policy says: a status, a reset after reading the body, or no
 * answer at all. With bulk set it reads _bulk NDJSON and answers each
 * item with the status item_status gives. The peer, not product code.
 */
#ifndef WEIR_TEST_HTTP_COLLECTOR_H
#define WEIR_TEST_HTTP_COLLECTOR_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#define COLL_RESET       (-1) /* read the body, then reset */
#define COLL_STORE_RESET (-2) /* take its records, then reset */
#define COLL_HANG        (-3) /* read the body, never answer */

struct coll;

struct coll_opts {
    unsigned nrec; /* record numbers are < nrec */
    bool bulk;
    /* The answer to request n (0, 1, ...); NULL: 200. Under the lock. */
    int (*batch_status)(struct coll *c, unsigned n, const char *body,
                        size_t len);
    /* bulk: the item status of record rec; NULL: 201. */
    int (*item_status)(struct coll *c, unsigned rec);
    void *arg;
};

struct coll {
    struct coll_opts o;
    pthread_t th;
    pthread_mutex_t lock;
    int lfd, wake[2];
    uint16_t port;
    /* Under the lock: */
    unsigned requests;
    unsigned *got;         /* per record: times taken (answered 2xx) */
    unsigned bad_lines;    /* lines with no record number */
    unsigned item_seen[8]; /* a test's own tallies */
    bool gzip_seen, zstd_seen, auth_seen;
    char auth[128];  /* the last Authorization header */
    char first[256]; /* the first line of the first body */
};

struct coll *coll_start(const struct coll_opts *o);
void coll_stop(struct coll *c);
/* Times record rec was taken so far (locks). */
unsigned coll_got(struct coll *c, unsigned rec);

#endif
