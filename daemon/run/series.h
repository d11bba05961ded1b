/*
 * series.h - the numbers of a run by pipeline and sink, as series.c keeps
 * them (the totals of what ended) and as a snapshot adds the live streams
 * to them: what /metrics and the status board read. Main thread.
 */
#ifndef WEIR_DAEMON_SERIES_H
#define WEIR_DAEMON_SERIES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "run/series_http.h"
#include "run/series_httpd.h"
#include "run/series_jetstream.h"
#include "run/series_kafka.h"
#include "stream/stream.h"

struct run;

enum err_kind { ERR_SOURCE, ERR_SINK, ERR_CLIENT, ERR_TRANSFORM, ERR_KINDS };

struct sink_num {
    char *name; /* the sink's address as written */
    uint64_t delivered, dropped, blocked_ns, reconnects;
    /* Gauges: live streams by state, their queues, the configured mark
     * (0: the pipeline is gone). */
    uint64_t in_state[SINK_STATES];
    uint64_t queued, hwm;
    struct http_num http;    /* an http sink's */
    struct kafka_num kafka;  /* a kafka sink's */
    struct js_num jetstream; /* a jetstream sink's */
};

struct xf_num {
    unsigned pos; /* 1: the first transform of the chain */
    char *spec;   /* as written: gzip:6 */
    uint64_t in, out;
};

/* A glob source's files (stream_fs_view): the counters are kept across
 * its streams; the gauges and the files most behind are a snapshot's. */
struct files_num {
    bool any; /* the pipeline's source is a glob */
    uint64_t truncated, skipped, rotations, lost;
    uint64_t watched, open, behind, unread;
    unsigned ntop;
    struct stream_fs_file top[STREAM_FS_TOP];
};

struct pl_num {
    char *name;
    uint64_t read, streams, accepted, refused;
    uint64_t errors[ERR_KINDS];
    /* Gauges: only in a scrape's snapshot. */
    uint64_t active, clients;
    struct sink_num *sinks;
    size_t nsinks;
    struct xf_num *xfs;
    size_t nxfs;
    struct files_num files;
    struct httpd_num httpd;   /* an http-listen pipeline's */
    struct jss_num js_source; /* a jetstream source's */
};

struct series {
    struct pl_num *pls;
    size_t npls;
};

/* The totals with the live streams on top, as a scrape sees them; NULL
 * when out of memory. Freed with series_free. */
struct series *series_snapshot(const struct run *r);

#endif
