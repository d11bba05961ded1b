/*
 * http_impl.h - what the files of the http sink share. Private to
 * lib/http.
 *
 *   http_records.c   the sink's input cut into records at '\n', and
 *                    the batches that hold them until acknowledged
 *   http_body.c      a batch's body as a preset shapes it, compressed
 *   http_answer.c    what an answer means: done, retry, rejected; the
 *                    per-item statuses of an Elasticsearch _bulk answer
 *   http_request.c   one request (its easy handle, what it keeps of the
 *                    answer) and what every request of a sink carries
 *   http_curl.c      libcurl's multi-socket interface on a weir loop
 *   endpoint_http.c  the kind: its stream, the batches' lives, acked
 */
#ifndef WEIR_HTTP_IMPL_H
#define WEIR_HTTP_IMPL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <curl/curl.h>

#include "../io/endpoint_base.h"

/* ---- records and batches (http_records.c) ---- */

enum hb_state {
    HB_OPEN,    /* still taking records */
    HB_READY,   /* sealed, waiting for a request slot */
    HB_SENDING, /* a request is out */
    HB_BACKOFF, /* failed; sent again at `due` */
    HB_DONE,    /* acknowledged (or rejected and handled) */
};

struct hb_rec {
    uint32_t off, len; /* in the batch's raw bytes, without the '\n' */
};

/* A batch: the records of input bytes [.., in_end), and which of them are
 * still to be delivered (all at first; after a _bulk answer with failed
 * items, those). */
struct hbatch {
    struct hbatch *next;
    enum hb_state state;
    uint64_t in_end; /* the sink's input offset just past its last byte */
    uint64_t in_len; /* input bytes it covers (newlines included) */
    uint8_t *raw;
    size_t raw_len, raw_cap;
    struct hb_rec *recs;
    uint32_t nrec, rec_cap;
    uint32_t *todo; /* indices into recs still to deliver */
    uint32_t ntodo;
    unsigned attempts;
    int64_t due; /* HB_BACKOFF: when to send again (monotonic ns) */
    /* Loki: the sealing time (realtime ns); record i is stamped stamp + i,
     * the same at every retry, so that Loki keeps one copy of each. */
    int64_t stamp;
};

/* Appends one record (len bytes, no newline) of in_len input bytes. */
int weir__hb_add(struct hbatch *b, const uint8_t *p, size_t len,
                 uint64_t in_len);
/* Seals: every record is to deliver. */
int weir__hb_seal(struct hbatch *b);
/* Bytes of memory the batch holds (for the high-water mark). */
size_t weir__hb_size(const struct hbatch *b);
void weir__hb_free(struct hbatch *b);

/*
 * The cutter: bytes in, whole records out. A line longer than `max` is cut
 * into records of max bytes (a batch must be able to hold it).
 */
struct hcut {
    uint8_t *part; /* a line without its newline yet */
    size_t len, cap;
    size_t max;
};

/* Calls fn for each record p..n completed by the bytes (in_len: the
 * input bytes it stands for, its newline included). 0, or fn's error. */
typedef int (*hcut_fn)(void *arg, const uint8_t *p, size_t n, uint64_t in_len);
int weir__hcut_feed(struct hcut *c, const uint8_t *p, size_t n, hcut_fn fn,
                    void *arg);
/* The end of the input: a last line without its newline is a record. */
int weir__hcut_finish(struct hcut *c, hcut_fn fn, void *arg);
void weir__hcut_free(struct hcut *c);

/* ---- bodies (http_body.c) ---- */

struct hbuf {
    uint8_t *p;
    size_t len, cap;
};

int weir__hbuf_put(struct hbuf *b, const void *p, size_t n);
/* A string literal, its length counted by the compiler. */
#define HBUF_LIT(b, lit) weir__hbuf_put((b), "" lit, sizeof(lit) - 1)
void weir__hbuf_free(struct hbuf *b);
/* s as a JSON string's contents (no quotes): ", \ and controls escaped. */
int weir__http_json_escape(struct hbuf *b, const uint8_t *s, size_t n);
/* Whether a record is a JSON object already (by its first and last
 * non-blank bytes: a collector still parses it). */
bool weir__http_json_is_object(const uint8_t *s, size_t n);

/* How a preset shapes bodies: index, Elasticsearch's (may be NULL);
 * labels, Loki's stream labels as a JSON object, or OTLP's resource
 * attributes as a JSON array. */
struct hshape {
    enum weir_http_preset preset;
    enum weir_http_compression comp;
    const char *index;
    const char *labels;
};

/* The body of b's records still to deliver, shaped and compressed. */
int weir__http_body(struct hbuf *out, const struct hbatch *b,
                    const struct hshape *sh);

/* ---- requests (http_request.c) ---- */

/* What every request of a sink carries, made once from its options. */
struct hclient {
    char *url, *ca, *userpwd, *index;
    char *labels; /* Loki's or OTLP's, as JSON */
    struct curl_slist *hdrs;
    bool insecure;
    long timeout_ms, connect_timeout_ms;
    struct hshape shape;
};

/* o: the caller's options (strings copied); set: the same with the
 * defaults filled in. 0, -ENOMEM, -EINVAL (a label without '='). */
int weir__hclient_init(struct hclient *c,
                       const struct weir_http_sink_options *set,
                       const struct weir_http_sink_options *o);
void weir__hclient_free(struct hclient *c);

/* A request: b's records still to deliver as a body, on an easy handle
 * whose PRIVATE is the request; the answer's body and Retry-After are
 * kept in it. */
struct hreq {
    struct hreq *next;
    struct hbatch *b;
    CURL *easy;
    struct hbuf body, ans;
    uint64_t retry_after_ns;
    int64_t t0; /* when it was sent (monotonic ns) */
};

int weir__hreq_new(struct hreq **out, const struct hclient *c,
                   struct hbatch *b);
void weir__hreq_free(struct hreq *r);

/* ---- answers (http_answer.c) ---- */

enum hans_kind {
    HANS_DONE,   /* every record delivered */
    HANS_RETRY,  /* the whole batch again, later */
    HANS_REJECT, /* will never succeed: dead letters */
    HANS_ITEMS,  /* _bulk: per item; see statuses */
};

/* Why a request is retried, for the counters. */
enum hretry {
    HRETRY_CONNECT,
    HRETRY_TIMEOUT,
    HRETRY_429,
    HRETRY_5XX,
};

/* What a finished request's result and status mean for its batch. */
enum hans_kind weir__http_classify(CURLcode rc, long status, enum hretry *why);

/*
 * An Elasticsearch _bulk answer: false when it says "errors":false (all
 * done); else true, with the status of each item in order in statuses
 * (n of them, at most cap). -EPROTO when it cannot be read.
 */
int weir__bulk_statuses(const char *ans, size_t len, int *statuses,
                        uint32_t cap, uint32_t *n, bool *errors);

/* A Retry-After header's seconds (a date is not honoured: 0). */
uint64_t weir__retry_after_ns(const char *line, size_t len);

/* ---- the curl driver (http_curl.c) ---- */

struct hcurl;

/* A finished transfer: easy, its result. */
typedef void (*hcurl_done_fn)(void *arg, CURL *easy, CURLcode rc);

/* A multi handle whose sockets and timer the loop watches; ep counts the
 * ops it has pending, so that the endpoint is freed after them. */
int weir__hcurl_new(struct hcurl **out, struct weir_endpoint *ep,
                    hcurl_done_fn done, void *arg);
int weir__hcurl_add(struct hcurl *hc, CURL *easy);
/* Removes a transfer still running (its done never comes). */
void weir__hcurl_remove(struct hcurl *hc, CURL *easy);
/* Lets go of every transfer, socket and the timer; the ops still out
 * complete later, counted in ep. */
void weir__hcurl_close(struct hcurl *hc);
/* The memory, once nothing is pending (the endpoint's release). */
void weir__hcurl_free(struct hcurl *hc);
/* A one-shot timer of the endpoint's own, counted in ep: fn at `due`
 * (monotonic ns); re-arming earlier replaces the later time. */
struct htimer {
    struct weir_timer t;
    struct weir_endpoint *ep;
    int64_t due, armed; /* 0: none */
    void (*fn)(struct htimer *t);
};
void weir__htimer_at(struct htimer *t, int64_t due);
void weir__htimer_stop(struct htimer *t);

#endif
