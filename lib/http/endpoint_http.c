/*
 * endpoint_http.c - the http sink: records in, batches POSTed to a
 * collector, acknowledged when it answered.
 *
 * The stream's bytes are cut into records (http_records.c) and gathered
 * into the open batch, which is sealed when it holds batch_bytes or
 * batch_records, or batch_age after its first record. Sealed batches
 * queue in input order; up to `concurrency` of them are out as requests
 * at once (libcurl on the loop, http_curl.c; its connections are kept
 * alive and reused). A batch answered 2xx is done; one that failed in a
 * way that may pass (no answer, a timeout, 408, 429, 5xx) is sent again
 * after a backoff with jitter (past retry_limit retries, when one is set,
 * it is given up); one refused for good (another 4xx) or given up goes to
 * the dead letters and counts as handled.
 *
 * Acknowledged (weir_endpoint_acked, the counter) is the input offset
 * below which every batch is done: batches may finish out of order, so
 * it moves only over the done prefix of the queue. Everything not
 * acknowledged stays in memory and counts against the high-water mark:
 * a write that finds `hwm` input bytes held is held itself until a
 * batch is done, which stops the stream's producer (the sink's
 * acknowledgements are its backpressure).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../io/sock_util.h"
#include "http_impl.h"

const uint32_t weir_http_answer_le_ms[WEIR_HTTP_ANSWER_BUCKETS - 1] = {
    5, 10, 25, 50, 100, 250, 1000};

/* The answer's bytes a dead letter quotes. */
#define DEAD_ANSWER 200

struct http_sink {
    struct weir_endpoint ep;
    /* Its options (the strings not kept: hc's are the copies), and what
     * each request carries. */
    struct weir_http_sink_options o;
    struct hclient client;
    struct hcurl *hc;
    struct hcut cut;
    struct hbatch *cur;         /* open, taking records */
    struct hbatch *head, *tail; /* sealed, in input order */
    struct hreq *reqs;          /* out */
    unsigned sending;
    uint64_t in_total;  /* input bytes taken */
    uint64_t sealed;    /* input offset past the last sealed batch */
    uint64_t acked;     /* input offset below which all is done */
    struct htimer tick; /* the open batch's age, the backoffs */
    int64_t cur_since;
    bool write_held; /* a write waits for room (WEIR_PENDING) */
    bool closing;    /* the close waits for the last batches */
    bool failing;    /* the last request failed (an outage is on) */
    bool up;         /* a request succeeded once: CONNECTED was said */
    int err;         /* cut or failed: every op ends with it */
    uint64_t rng;
};

static struct http_sink *hs_of(struct weir_endpoint *ep)
{
    return EP_CONTAINER(ep, struct http_sink, ep);
}

static void stat_add(_Atomic uint64_t *c, int64_t n)
{
    /* Relaxed: statistics sampled by another thread; they order nothing. */
    atomic_fetch_add_explicit(c, (uint64_t)n, memory_order_relaxed);
}

#define STAT(hs, field, n)                                                     \
    do {                                                                       \
        if ((hs)->o.stats)                                                     \
            stat_add(&(hs)->o.stats->field, (n));                              \
    } while (0)

static void event(struct http_sink *hs, enum weir_endpoint_event ev, int err,
                  uint64_t off)
{
    if (hs->o.on_event)
        hs->o.on_event(hs->o.event_arg, ev, err, off);
}

/* ---- batches ---- */

static int64_t realtime_ns(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static int seal_cur(struct http_sink *hs)
{
    struct hbatch *b = hs->cur;
    int rc;

    if (!b)
        return 0;
    hs->cur = NULL;
    hs->sealed += b->in_len;
    b->in_end = hs->sealed;
    b->stamp = realtime_ns();
    rc = weir__hb_seal(b);
    if (rc) {
        weir__hb_free(b);
        return rc;
    }
    if (b->ntodo == 0)
        b->state = HB_DONE; /* empty lines only */
    if (hs->tail)
        hs->tail->next = b;
    else
        hs->head = b;
    hs->tail = b;
    return 0;
}

static int on_record(void *arg, const uint8_t *p, size_t n, uint64_t in_len)
{
    struct http_sink *hs = arg;
    int rc;

    if (!hs->cur) {
        hs->cur = calloc(1, sizeof(*hs->cur));
        if (!hs->cur)
            return -ENOMEM;
        hs->cur_since = weir__mono_ns();
        weir__htimer_at(&hs->tick, hs->cur_since + (int64_t)hs->o.batch_age_ns);
    }
    /* An empty line is no record (no collector takes one), but its byte
     * is acknowledged with the batch. */
    if (n == 0) {
        hs->cur->in_len += in_len;
        return 0;
    }
    rc = weir__hb_add(hs->cur, p, n, in_len);
    if (rc)
        return rc;
    if (hs->cur->raw_len >= hs->o.batch_bytes ||
        hs->cur->nrec >= hs->o.batch_records)
        return seal_cur(hs);
    return 0;
}

/* ---- requests ---- */

static void req_unlink(struct http_sink *hs, struct hreq *r)
{
    for (struct hreq **pp = &hs->reqs; *pp; pp = &(*pp)->next)
        if (*pp == r) {
            *pp = r->next;
            return;
        }
}

static int send_batch(struct http_sink *hs, struct hbatch *b)
{
    struct hreq *r;
    int rc = weir__hreq_new(&r, &hs->client, b);

    if (rc == 0 && (rc = weir__hcurl_add(hs->hc, r->easy)) != 0)
        weir__hreq_free(r);
    if (rc)
        return rc;
    r->t0 = weir__mono_ns();
    r->next = hs->reqs;
    hs->reqs = r;
    b->state = HB_SENDING;
    hs->sending++;
    STAT(hs, requests, 1);
    STAT(hs, in_flight, 1);
    return 0;
}

/* ---- the flow: send what may go, acknowledge the done prefix ---- */

static void fail(struct http_sink *hs, int err);

static void advance(struct http_sink *hs)
{
    while (hs->head && hs->head->state == HB_DONE) {
        struct hbatch *b = hs->head;

        hs->head = b->next;
        if (!hs->head)
            hs->tail = NULL;
        hs->acked = b->in_end;
        weir__ep_count(&hs->ep, b->in_len);
        weir__hb_free(b);
    }
}

static bool all_done(const struct http_sink *hs)
{
    return !hs->head && !hs->cur && hs->cut.len == 0;
}

static void flow(struct http_sink *hs)
{
    int64_t now = weir__mono_ns(), next = 0;
    int rc = 0;

    if (hs->err)
        return;
    if (hs->cur && now >= hs->cur_since + (int64_t)hs->o.batch_age_ns)
        rc = seal_cur(hs);
    for (struct hbatch *b = hs->head; b && rc == 0; b = b->next) {
        if (b->state == HB_BACKOFF && b->due > now) {
            next = next && next < b->due ? next : b->due;
            continue;
        }
        if ((b->state == HB_READY || b->state == HB_BACKOFF) &&
            hs->sending < hs->o.concurrency)
            rc = send_batch(hs, b);
    }
    if (rc) {
        fail(hs, rc);
        return;
    }
    advance(hs);
    if (hs->cur) {
        int64_t age = hs->cur_since + (int64_t)hs->o.batch_age_ns;

        next = next && next < age ? next : age;
    }
    if (next)
        weir__htimer_at(&hs->tick, next);
    if (hs->write_held && hs->in_total - hs->acked < hs->o.hwm) {
        hs->write_held = false;
        weir_writable_write_done(hs->ep.ws, 0);
        return; /* the next write may already have run flow again */
    }
    if (hs->closing && all_done(hs)) {
        hs->closing = false;
        weir_writable_close_done(hs->ep.ws, 0);
    }
}

static void on_tick(struct htimer *t)
{
    flow(EP_CONTAINER(t, struct http_sink, tick));
}

/* ---- answers ---- */

static uint64_t rnd(struct http_sink *hs)
{
    /* xorshift64: jitter only. */
    hs->rng ^= hs->rng << 13;
    hs->rng ^= hs->rng >> 7;
    hs->rng ^= hs->rng << 17;
    return hs->rng;
}

static void backoff(struct http_sink *hs, struct hbatch *b, enum hretry why,
                    uint64_t retry_after_ns, int err)
{
    uint64_t d = hs->o.backoff_min_ns;

    for (unsigned i = 0; i < b->attempts && d < hs->o.backoff_max_ns; i++)
        d *= 2;
    if (d > hs->o.backoff_max_ns)
        d = hs->o.backoff_max_ns;
    /* Half fixed, half random: batches that failed together (a collector
     * that restarted) do not come back together. */
    d = d / 2 + rnd(hs) % (d / 2 + 1);
    if (retry_after_ns > d)
        d = retry_after_ns;
    b->attempts++;
    b->state = HB_BACKOFF;
    b->due = weir__mono_ns() + (int64_t)d;
    switch (why) {
    case HRETRY_CONNECT:
        STAT(hs, retry_connect, 1);
        break;
    case HRETRY_TIMEOUT:
        STAT(hs, retry_timeout, 1);
        break;
    case HRETRY_429:
        STAT(hs, retry_429, 1);
        break;
    default:
        STAT(hs, retry_5xx, 1);
        break;
    }
    if (!hs->failing)
        event(hs, WEIR_EP_HTTP_FAILING, err, hs->acked);
    hs->failing = true;
}

static void put_json_str(struct hbuf *l, const char *key, const uint8_t *s,
                         size_t n)
{
    HBUF_LIT(l, "\"");
    weir__hbuf_put(l, key, strlen(key));
    HBUF_LIT(l, "\":\"");
    weir__http_json_escape(l, s, n);
    HBUF_LIT(l, "\"");
}

/* A record refused for good, or given up: one line to the dead letters.
 * `why` is the HTTP status, or -errno when no answer came. A regular
 * file's append, on the loop: rare, small, and the page cache takes it. */
static void dead_letter(struct http_sink *hs, const struct hreq *r,
                        uint32_t idx, int why)
{
    const struct hb_rec *rec = &r->b->recs[idx];
    size_t alen = r->ans.len < DEAD_ANSWER ? r->ans.len : DEAD_ANSWER;
    struct hbuf l = {0};
    char head[48];

    STAT(hs, dead_letter, 1);
    if (!hs->o.has_dead_letter)
        return;
    snprintf(head, sizeof(head), "{\"status\":%d,", why > 0 ? why : 0);
    weir__hbuf_put(&l, head, strlen(head));
    if (why > 0) {
        put_json_str(&l, "answer", r->ans.p, alen);
    } else {
        const char *e = strerror(-why);

        put_json_str(&l, "error", (const uint8_t *)e, strlen(e));
    }
    HBUF_LIT(&l, ",");
    put_json_str(&l, "record", r->b->raw + rec->off, rec->len);
    HBUF_LIT(&l, "}\n");
    for (size_t off = 0; off < l.len;) {
        ssize_t w = write(hs->o.dead_letter_fd, l.p + off, l.len - off);

        if (w <= 0)
            break; /* counted and reported; the file is the operator's */
        off += (size_t)w;
    }
    weir__hbuf_free(&l);
}

/* A failed try of the batch's records still to deliver: again after a
 * backoff, or, past retry_limit, given up to the dead letters (a pipe
 * that cannot reach its collector ends instead of waiting for ever). */
static void retry(struct http_sink *hs, struct hreq *r, enum hretry why,
                  uint64_t retry_after_ns, int err)
{
    struct hbatch *b = r->b;

    if (hs->o.retry_limit == 0 || b->attempts < hs->o.retry_limit) {
        backoff(hs, b, why, retry_after_ns, err);
        return;
    }
    for (uint32_t i = 0; i < b->ntodo; i++)
        dead_letter(hs, r, b->todo[i], err);
    event(hs, WEIR_EP_HTTP_GAVE_UP, err, b->ntodo);
    b->ntodo = 0;
    b->state = HB_DONE;
}

static void delivered(struct http_sink *hs, const struct hreq *r, uint32_t n)
{
    STAT(hs, records, n);
    if (hs->failing || !hs->up)
        event(hs, WEIR_EP_CONNECTED, 0, hs->acked);
    hs->failing = false;
    hs->up = true;
    (void)r;
}

/* A _bulk answer of 200 with "errors":true: per item. */
static void bulk_items(struct http_sink *hs, struct hreq *r)
{
    struct hbatch *b = r->b;
    int *st = malloc(((size_t)b->ntodo + 1) * sizeof(*st));
    uint32_t n = 0, nbad = 0, nretry = 0, ok = 0;
    bool errors, any429 = false;
    int rc = st ? 0 : -ENOMEM, bad_status = 0;

    if (rc == 0)
        rc = weir__bulk_statuses((const char *)r->ans.p, r->ans.len, st,
                                 b->ntodo, &n, &errors);
    if (rc == 0 && errors && n != b->ntodo)
        rc = -EPROTO;
    if (rc) {
        /* An answer that cannot be read: the batch again. */
        retry(hs, r, HRETRY_5XX, 0, -EPROTO);
        goto out;
    }
    if (!errors) {
        delivered(hs, r, b->ntodo);
        b->state = HB_DONE;
        goto out;
    }
    for (uint32_t i = 0; i < n; i++) {
        if (st[i] >= 200 && st[i] < 300)
            ok++;
        else if (st[i] == 429 || st[i] == 408 || st[i] >= 500) {
            any429 |= st[i] == 429;
            b->todo[nretry++] = b->todo[i]; /* nretry <= i */
        } else {
            dead_letter(hs, r, b->todo[i], st[i]);
            bad_status = st[i];
            nbad++;
        }
    }
    delivered(hs, r, ok);
    if (nbad)
        event(hs, WEIR_EP_HTTP_REJECTED, bad_status, nbad);
    b->ntodo = nretry;
    if (nretry)
        retry(hs, r, any429 ? HRETRY_429 : HRETRY_5XX, 0, any429 ? 429 : 500);
    else
        b->state = HB_DONE;
out:
    free(st);
}

static void answer_time(struct http_sink *hs, const struct hreq *r)
{
    uint64_t us = (uint64_t)(weir__mono_ns() - r->t0) / 1000;
    unsigned i = 0;

    if (!hs->o.stats)
        return;
    while (i < WEIR_HTTP_ANSWER_BUCKETS - 1 &&
           us > weir_http_answer_le_ms[i] * 1000ull)
        i++;
    STAT(hs, answer[i], 1);
    STAT(hs, answer_us, (int64_t)us);
}

static int curl_errno(CURLcode rc)
{
    switch (rc) {
    case CURLE_OPERATION_TIMEDOUT:
        return -ETIMEDOUT;
    case CURLE_COULDNT_CONNECT:
        return -ECONNREFUSED;
    case CURLE_COULDNT_RESOLVE_HOST:
        return -EHOSTUNREACH;
    case CURLE_GOT_NOTHING:
    case CURLE_SEND_ERROR:
    case CURLE_RECV_ERROR:
        return -ECONNRESET;
    default:
        return -EIO;
    }
}

static void on_done(void *arg, CURL *easy, CURLcode rc)
{
    struct http_sink *hs = arg;
    struct hreq *r = NULL;
    struct hbatch *b;
    long status = 0;
    enum hretry why = HRETRY_CONNECT;

    curl_easy_getinfo(easy, CURLINFO_PRIVATE, (char **)&r);
    curl_easy_getinfo(easy, CURLINFO_RESPONSE_CODE, &status);
    weir__hcurl_remove(hs->hc, easy);
    req_unlink(hs, r);
    hs->sending--;
    STAT(hs, in_flight, -1);
    b = r->b;
    if (rc == CURLE_OK)
        answer_time(hs, r);
    switch (weir__http_classify(rc, status, &why)) {
    case HANS_DONE:
        STAT(hs, bytes, (int64_t)r->body.len);
        if (hs->o.preset == WEIR_HTTP_ELASTICSEARCH) {
            bulk_items(hs, r);
            break;
        }
        delivered(hs, r, b->ntodo);
        b->state = HB_DONE;
        break;
    case HANS_REJECT:
        for (uint32_t i = 0; i < b->ntodo; i++)
            dead_letter(hs, r, b->todo[i], (int)status);
        event(hs, WEIR_EP_HTTP_REJECTED, (int)status, b->ntodo);
        b->state = HB_DONE;
        break;
    default:
        retry(hs, r, why, why == HRETRY_429 ? r->retry_after_ns : 0,
              rc == CURLE_OK ? (int)status : curl_errno(rc));
        break;
    }
    if (b->state == HB_DONE)
        STAT(hs, batches, 1);
    weir__hreq_free(r);
    flow(hs);
}

/* ---- the stream ---- */

static void drop_requests(struct http_sink *hs)
{
    while (hs->reqs) {
        struct hreq *r = hs->reqs;

        hs->reqs = r->next;
        weir__hcurl_remove(hs->hc, r->easy);
        STAT(hs, in_flight, -1);
        weir__hreq_free(r);
    }
    hs->sending = 0;
}

static void fail(struct http_sink *hs, int err)
{
    if (hs->err)
        return;
    hs->err = err;
    drop_requests(hs);
    weir__htimer_stop(&hs->tick);
    if (hs->write_held) {
        hs->write_held = false;
        weir_writable_write_done(hs->ep.ws, err);
    } else if (hs->closing) {
        hs->closing = false;
        weir_writable_close_done(hs->ep.ws, err);
    } else if (hs->ep.ws) {
        weir_writable_error(hs->ep.ws, err);
    }
}

static int take(struct http_sink *hs, struct weir_chunk c)
{
    int rc = weir__hcut_feed(&hs->cut, c.data, c.len, on_record, hs);

    hs->in_total += c.len;
    weir_chunk_unref(&c, hs->ep.slot);
    return rc;
}

/* After a write: full (hwm input bytes held) holds the write; the open
 * batch goes now rather than wait for its age, since nothing else would
 * make room. */
static int after_write(struct http_sink *hs)
{
    int rc = 0;

    if (hs->in_total - hs->acked >= hs->o.hwm)
        rc = seal_cur(hs);
    if (rc)
        return rc;
    flow(hs);
    if (hs->err)
        return hs->err;
    if (hs->in_total - hs->acked < hs->o.hwm)
        return 0;
    hs->write_held = true;
    return WEIR_PENDING;
}

static int http_writev(struct weir_writable *ws, void *ctx,
                       const struct weir_chunk *c, unsigned n)
{
    struct http_sink *hs = hs_of(ctx);
    int rc = hs->err;

    (void)ws;
    for (unsigned i = 0; i < n; i++) {
        if (rc == 0)
            rc = take(hs, c[i]);
        else
            weir_chunk_unref(&c[i], hs->ep.slot);
    }
    return rc ? rc : after_write(hs);
}

static int http_write(struct weir_writable *ws, void *ctx, struct weir_chunk c)
{
    return http_writev(ws, ctx, &c, 1);
}

static int http_close(struct weir_writable *ws, void *ctx)
{
    struct http_sink *hs = hs_of(ctx);
    int rc;

    (void)ws;
    if (hs->err)
        return hs->err;
    rc = weir__hcut_finish(&hs->cut, on_record, hs);
    if (rc == 0)
        rc = seal_cur(hs);
    if (rc)
        return rc;
    flow(hs);
    if (hs->err)
        return hs->err;
    if (all_done(hs))
        return 0;
    hs->closing = true;
    return WEIR_PENDING;
}

/* Aborted: what was not acknowledged is not delivered; nothing more is
 * sent. */
static int http_abort(struct weir_writable *ws, void *ctx, int reason)
{
    struct http_sink *hs = hs_of(ctx);

    (void)ws;
    hs->err = reason < 0 ? reason : -ECANCELED;
    drop_requests(hs);
    weir__htimer_stop(&hs->tick);
    return 0;
}

static const struct weir_sink_ops http_stream = {
    .write = http_write,
    .writev = http_writev,
    .close = http_close,
    .abort = http_abort,
};

/* ---- the endpoint's ops ---- */

static void http_stop(struct weir_endpoint *ep)
{
    ep->stopping = true;
}

/* Given up on: what is out or waiting fails, and the stream with it. */
static void http_cut(struct weir_endpoint *ep)
{
    fail(hs_of(ep), -ECANCELED);
}

static int http_acked(const struct weir_endpoint *ep, uint64_t *acked)
{
    *acked = EP_CONTAINER(ep, const struct http_sink, ep)->acked;
    return 0;
}

static void http_close_down(struct weir_endpoint *ep)
{
    struct http_sink *hs = hs_of(ep);

    drop_requests(hs);
    weir__hcurl_close(hs->hc);
    weir__htimer_stop(&hs->tick);
    /* A write or close still waiting keeps the stream until the free. */
    if (ep->ws && !hs->write_held && !hs->closing) {
        weir_writable_destroy(ep->ws);
        ep->ws = NULL;
    }
}

static void http_release(struct weir_endpoint *ep)
{
    struct http_sink *hs = hs_of(ep);

    if (ep->ws)
        weir_writable_destroy(ep->ws);
    weir__hcurl_free(hs->hc);
    weir__hb_free(hs->cur);
    while (hs->head) {
        struct hbatch *b = hs->head;

        hs->head = b->next;
        weir__hb_free(b);
    }
    weir__hcut_free(&hs->cut);
    weir__hclient_free(&hs->client);
}

static const struct ep_ops http_ops = {
    .sink = &http_stream,
    .stop = http_stop,
    .cut = http_cut,
    .acked = http_acked,
    .close = http_close_down,
    .release = http_release,
};

/* ---- construction ---- */

int weir_endpoint_http_sink(struct weir_endpoint **out, struct weir_loop *loop,
                            const struct weir_http_sink_options *o)
{
    struct http_sink *hs;
    int rc;

    if (!o || !o->url || o->preset > WEIR_HTTP_OTLP ||
        o->compression > WEIR_HTTP_ZSTD)
        return -EINVAL;
    if (strncmp(o->url, "http://", 7) != 0 &&
        strncmp(o->url, "https://", 8) != 0)
        return -ENOTSUP;
    hs =
        weir__ep_new(sizeof(*hs), &http_ops, loop, -1, false, o->counter, NULL);
    if (!hs)
        return -ENOMEM;
    hs->o = *o;
    hs->o.url = hs->o.index = hs->o.ca = hs->o.bearer = NULL;
    hs->o.user = hs->o.password = NULL;
    hs->o.headers = NULL;
    hs->o.labels = NULL;
    if (!hs->o.hwm)
        hs->o.hwm = 1u << 20;
    if (!hs->o.batch_bytes)
        hs->o.batch_bytes = 1u << 20;
    if (!hs->o.batch_records)
        hs->o.batch_records = 10000;
    if (!hs->o.batch_age_ns)
        hs->o.batch_age_ns = 1000000000ull;
    if (!hs->o.concurrency)
        hs->o.concurrency = 2;
    if (!hs->o.timeout_ns)
        hs->o.timeout_ns = 30000000000ull;
    if (!hs->o.connect_timeout_ns)
        hs->o.connect_timeout_ns = 10000000000ull;
    if (!hs->o.backoff_min_ns)
        hs->o.backoff_min_ns = 100000000ull;
    if (!hs->o.backoff_max_ns)
        hs->o.backoff_max_ns = 30000000000ull;
    if (hs->o.backoff_max_ns < hs->o.backoff_min_ns)
        hs->o.backoff_max_ns = hs->o.backoff_min_ns;
    /* A line is cut at batch_bytes, or at the high-water mark: a part of
     * a line is held input too, and a write held for it with no batch out
     * to make room would wait for ever. */
    hs->cut.max = hs->o.batch_bytes < hs->o.hwm ? hs->o.batch_bytes : hs->o.hwm;
    hs->tick.ep = &hs->ep;
    hs->tick.fn = on_tick;
    hs->rng = (uint64_t)weir__mono_ns() | 1;
    rc = weir__hclient_init(&hs->client, &hs->o, o);
    if (rc == 0)
        rc = weir__hcurl_new(&hs->hc, &hs->ep, on_done, hs);
    if (rc) {
        weir__ep_free_now(&hs->ep);
        return rc;
    }
    rc = weir__ep_open_stream(&hs->ep, hs->o.hwm);
    if (rc)
        return rc;
    *out = &hs->ep;
    return 0;
}
