/*
 * endpoint_kafka.c - the kafka sink: records in, produced to a topic by
 * librdkafka, acknowledged by their delivery reports.
 *
 * The stream's bytes are cut into records at newlines
 * (lib/io/endpoint_ledger.c) and each is copied into librdkafka with
 * rd_kafka_produce; librdkafka batches, compresses, sends and retries them on
 * threads of its own, as an idempotent producer with acks=all (kafka_conf.c).
 * What it has to say (delivery reports, errors, log lines) waits on its main
 * queue, which writes a byte to a pipe when it stops being empty: the loop
 * polls the pipe and serves the queue from the worker, so every callback
 * below runs on the worker and nothing here ever waits for librdkafka.
 *
 * Acknowledged (weir_endpoint_acked, the counter) is the input offset
 * below which every record was reported delivered (or refused for good
 * and handled). Reports of different partitions come in any order, so a
 * ledger keeps the records out in input order and the offset moves over
 * its done prefix only. Everything not acknowledged counts against the
 * high-water mark: a write that finds `hwm` input bytes held is held
 * itself, which stops the stream's producer. Should librdkafka's own
 * queue be full first, the record it refused is kept, and the rest of
 * the write waits with it for the next reports.
 *
 * A record refused for good (too large for the topic, not authorized)
 * goes to the dead letters and counts as handled. One that failed in a
 * way that may pass (a delivery timeout, when rdkafka.message.timeout.ms
 * sets one) is produced again: it may then be stored twice, and after
 * records that followed it.
 *
 * The close waits for every report, as long as the stream's drain bound
 * lets it; whatever is still out then is purged. librdkafka's handle is
 * destroyed on a short-lived thread of its own, since its destroy joins
 * its threads and may wait on a broker.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "kafka_impl.h"

/* The record's bytes a dead letter quotes. */
#define DEAD_RECORD 4096

/* What librdkafka's callbacks reach the sink by. It outlives the sink
 * when the handle's destroy runs late on its own thread: ks is NULL
 * then, and a callback finds nothing to tell. */
struct kafka_glue {
    struct kafka_sink *ks;
};

/* A chunk of a write the cutter has not taken all of yet. */
struct kpend {
    struct weir_chunk c;
    uint32_t pos;
};

struct kafka_sink {
    struct weir_endpoint ep;
    struct weir_kafka_sink_options o; /* its strings not kept */
    char *key;
    size_t key_len;
    struct kafka_glue *glue;
    rd_kafka_t *rk;
    rd_kafka_topic_t *rkt;
    rd_kafka_queue_t *mainq;
    int ev_rd, ev_wr; /* the pipe librdkafka's main queue wakes */
    struct weir_op ev_op;
    struct lcut cut;
    struct ledger led;
    struct kpend *pend; /* the rest of a held write, in order */
    unsigned npend, ipend;
    uint64_t in_total; /* input bytes the cutter took */
    uint64_t cut_end;  /* input offset past the last record cut */
    uint64_t rejected; /* records refused for good */
    bool write_held;   /* a write waits (WEIR_PENDING) */
    bool closing;      /* the close waits for the last reports */
    bool failing;      /* an error came since the last delivery */
    bool up;           /* a delivery succeeded once */
    int err;           /* cut or failed: every op ends with it */
};

static struct kafka_sink *ks_of(struct weir_endpoint *ep)
{
    return EP_CONTAINER(ep, struct kafka_sink, ep);
}

static void stat_add(_Atomic uint64_t *c, int64_t n)
{
    /* Relaxed: statistics sampled by another thread; they order nothing. */
    atomic_fetch_add_explicit(c, (uint64_t)n, memory_order_relaxed);
}

#define STAT(ks, field, n)                                                     \
    do {                                                                       \
        if ((ks)->o.stats)                                                     \
            stat_add(&(ks)->o.stats->field, (n));                              \
    } while (0)

static void event(struct kafka_sink *ks, enum weir_endpoint_event ev, int err,
                  uint64_t off)
{
    if (ks->o.on_event)
        ks->o.on_event(ks->o.event_arg, ev, err, off);
}

static void fail(struct kafka_sink *ks, int err);

/* seq is done: what the done prefix grew by is acknowledged. */
static void record_done(struct kafka_sink *ks, uint64_t seq)
{
    uint64_t n = weir__ledger_done(&ks->led, seq);

    if (n)
        weir__ep_count(&ks->ep, n);
}

/* ---- dead letters ---- */

/* A record refused for good: one line to the dead letters. A regular
 * file's append, on the loop: rare, small, and the page cache takes it. */
static void dead_letter(struct kafka_sink *ks, rd_kafka_resp_err_t why,
                        const void *p, size_t n)
{
    size_t len = n < DEAD_RECORD ? n : DEAD_RECORD;
    size_t cap = len * 6 + 256, off = 0, l;
    char *line;

    STAT(ks, err_rejected, 1);
    ks->rejected++;
    event(ks, WEIR_EP_KAFKA_REJECTED, why, ks->rejected);
    if (!ks->o.has_dead_letter || !(line = malloc(cap)))
        return;
    l = (size_t)snprintf(line, cap, "{\"error\":\"");
    l += weir__json_escape_to(line + l, cap - l,
                              (const uint8_t *)rd_kafka_err2name(why),
                              strlen(rd_kafka_err2name(why)));
    l += (size_t)snprintf(line + l, cap - l, "\",\"record\":\"");
    l += weir__json_escape_to(line + l, cap - l, p, len);
    l += (size_t)snprintf(line + l, cap - l, "\"}\n");
    if (l >= cap)
        l = cap - 1; /* cannot happen (cap is the escapes' worst case) */
    while (off < l) {
        ssize_t w = write(ks->o.dead_letter_fd, line + off, l - off);

        if (w <= 0)
            break; /* counted and reported; the file is the operator's */
        off += (size_t)w;
    }
    free(line);
}

/* ---- producing ---- */

static int produce(struct kafka_sink *ks, const void *p, size_t n, uint64_t seq)
{
    if (rd_kafka_produce(ks->rkt, RD_KAFKA_PARTITION_UA, RD_KAFKA_MSG_F_COPY,
                         (void *)p, n, ks->key, ks->key_len,
                         (void *)(uintptr_t)seq) == 0)
        return 0;
    return rd_kafka_last_error();
}

static int on_record(void *arg, const uint8_t *p, size_t n, uint64_t in_len)
{
    struct kafka_sink *ks = arg;
    uint64_t seq = ks->led.tail;
    rd_kafka_resp_err_t e = 0;
    bool done = n == 0;
    int rc;

    /* An empty line is no record, but its byte is acknowledged in turn. */
    if (!done) {
        e = produce(ks, p, n, seq);
        if (e == RD_KAFKA_RESP_ERR__QUEUE_FULL)
            return -EAGAIN;
        if (e == RD_KAFKA_RESP_ERR__FATAL)
            return -EIO;
        if (e) {
            /* Refused before it left (larger than message.max.bytes, an
             * unknown partition): for good. */
            dead_letter(ks, e, p, n);
            done = true;
        } else {
            STAT(ks, in_flight, 1);
        }
    }
    rc = weir__ledger_push(&ks->led, ks->cut_end + in_len, done, &seq);
    if (rc)
        return rc;
    ks->cut_end += in_len;
    if (done)
        record_done(ks, seq);
    return 0;
}

/* Feeds the rest of held writes to the cutter, the record librdkafka
 * refused first. -EAGAIN: its queue is full still. */
static int feed_pending(struct kafka_sink *ks)
{
    int rc = weir__lcut_retry(&ks->cut, on_record, ks);

    while (rc == 0 && ks->ipend < ks->npend) {
        struct kpend *k = &ks->pend[ks->ipend];
        size_t used;

        rc = weir__lcut_feed(&ks->cut, k->c.data + k->pos, k->c.len - k->pos,
                             on_record, ks, &used);
        ks->in_total += used;
        k->pos += (uint32_t)used;
        if (k->pos == k->c.len) {
            weir_chunk_unref(&k->c, ks->ep.slot);
            ks->ipend++;
        }
    }
    if (ks->ipend == ks->npend) {
        free(ks->pend);
        ks->pend = NULL;
        ks->npend = ks->ipend = 0;
    }
    return rc;
}

static void drop_pending(struct kafka_sink *ks)
{
    for (unsigned i = ks->ipend; i < ks->npend; i++)
        weir_chunk_unref(&ks->pend[i].c, ks->ep.slot);
    free(ks->pend);
    ks->pend = NULL;
    ks->npend = ks->ipend = 0;
}

static bool full(const struct kafka_sink *ks)
{
    return ks->in_total - ks->led.acked >= ks->o.hwm;
}

/* After reports: a held write goes on when its chunks are cut and there
 * is room; a close ends when every record is reported. */
static void flow(struct kafka_sink *ks)
{
    int rc;

    if (ks->err)
        return;
    rc = feed_pending(ks);
    if (rc && rc != -EAGAIN) {
        fail(ks, rc);
        return;
    }
    if (ks->write_held && !ks->npend && !ks->cut.held && !full(ks)) {
        ks->write_held = false;
        weir_writable_write_done(ks->ep.ws, 0);
        return; /* the next write may already have run flow again */
    }
    if (ks->closing && !ks->cut.held && ledger_out(&ks->led) == 0) {
        ks->closing = false;
        weir_writable_close_done(ks->ep.ws, 0);
    }
}

/* ---- what librdkafka reports (on the worker, from serve_queue) ---- */

static bool retriable(rd_kafka_resp_err_t e)
{
    switch (e) {
    case RD_KAFKA_RESP_ERR__MSG_TIMED_OUT:
    case RD_KAFKA_RESP_ERR__TIMED_OUT:
    case RD_KAFKA_RESP_ERR__TRANSPORT:
    case RD_KAFKA_RESP_ERR__ALL_BROKERS_DOWN:
    case RD_KAFKA_RESP_ERR_REQUEST_TIMED_OUT:
    case RD_KAFKA_RESP_ERR_NOT_LEADER_FOR_PARTITION:
    case RD_KAFKA_RESP_ERR_LEADER_NOT_AVAILABLE:
    case RD_KAFKA_RESP_ERR_NOT_ENOUGH_REPLICAS:
    case RD_KAFKA_RESP_ERR_NOT_ENOUGH_REPLICAS_AFTER_APPEND:
        return true;
    default:
        return false;
    }
}

static void on_delivery(rd_kafka_t *rk, const rd_kafka_message_t *m,
                        void *opaque)
{
    struct kafka_glue *g = opaque;
    struct kafka_sink *ks = g->ks;
    uint64_t seq = (uintptr_t)m->_private;
    rd_kafka_resp_err_t e;

    (void)rk;
    if (!ks || ks->err)
        return;
    STAT(ks, in_flight, -1);
    switch (m->err) {
    case RD_KAFKA_RESP_ERR_NO_ERROR:
        STAT(ks, records, 1);
        STAT(ks, bytes, (int64_t)m->len);
        if (ks->failing || !ks->up)
            event(ks, WEIR_EP_CONNECTED, 0, ks->led.acked);
        ks->failing = false;
        ks->up = true;
        record_done(ks, seq);
        return;
    case RD_KAFKA_RESP_ERR__PURGE_QUEUE:
    case RD_KAFKA_RESP_ERR__PURGE_INFLIGHT:
        return; /* the sink let it go: not acknowledged */
    default:
        break;
    }
    if (!retriable(m->err)) {
        dead_letter(ks, m->err, m->payload, m->len);
        record_done(ks, seq);
        return;
    }
    if (m->err == RD_KAFKA_RESP_ERR__MSG_TIMED_OUT)
        STAT(ks, err_timeout, 1);
    else
        STAT(ks, err_other, 1);
    if (!ks->failing)
        event(ks, WEIR_EP_KAFKA_FAILING, m->err, ks->led.acked);
    ks->failing = true;
    e = produce(ks, m->payload, m->len, seq);
    if (e) {
        fail(ks, e == RD_KAFKA_RESP_ERR__QUEUE_FULL ? -ENOBUFS : -EIO);
        return;
    }
    STAT(ks, retries, 1);
    STAT(ks, in_flight, 1);
}

static void on_error(rd_kafka_t *rk, int err, const char *reason, void *opaque)
{
    struct kafka_glue *g = opaque;
    struct kafka_sink *ks = g->ks;
    char why[256];

    (void)reason;
    if (!ks || ks->err)
        return;
    if (err == RD_KAFKA_RESP_ERR__FATAL) {
        /* The idempotent producer cannot go on (its sequence broke):
         * the stream fails, what was not reported is not acknowledged. */
        event(ks, WEIR_EP_KAFKA_FAILING,
              rd_kafka_fatal_error(rk, why, sizeof(why)), ks->led.acked);
        fail(ks, -EIO);
        return;
    }
    if (err == RD_KAFKA_RESP_ERR__TRANSPORT ||
        err == RD_KAFKA_RESP_ERR__ALL_BROKERS_DOWN ||
        err == RD_KAFKA_RESP_ERR__RESOLVE)
        STAT(ks, err_transport, 1);
    else
        STAT(ks, err_other, 1);
    if (!ks->failing)
        event(ks, WEIR_EP_KAFKA_FAILING, err, ks->led.acked);
    ks->failing = true;
}

static void ev_arm(struct kafka_sink *ks);

static void serve_queue(struct kafka_sink *ks)
{
    char drain[64];

    while (read(ks->ev_rd, drain, sizeof(drain)) > 0)
        ;
    rd_kafka_poll(ks->rk, 0);
    flow(ks);
}

static void ev_ready(struct weir_op *op, int res, uint32_t flags)
{
    struct kafka_sink *ks = EP_CONTAINER(op, struct kafka_sink, ev_op);

    (void)flags;
    if (weir__ep_op_done(&ks->ep))
        return;
    if (res == -ECANCELED || ks->ep.destroyed)
        return;
    serve_queue(ks);
    ev_arm(ks);
}

static void ev_arm(struct kafka_sink *ks)
{
    if (ks->ev_op.pending || ks->ep.destroyed || !ks->rk)
        return;
    ks->ev_op.fn = ev_ready;
    if (weir_loop_poll(ks->ep.loop, &ks->ev_op, ks->ev_rd, POLLIN) == 0)
        ep_op_started(&ks->ep);
    else
        fail(ks, -EIO);
}

/* ---- the stream ---- */

static void fail(struct kafka_sink *ks, int err)
{
    if (ks->err)
        return;
    ks->err = err;
    drop_pending(ks);
    if (ks->write_held) {
        ks->write_held = false;
        weir_writable_write_done(ks->ep.ws, err);
    } else if (ks->closing) {
        ks->closing = false;
        weir_writable_close_done(ks->ep.ws, err);
    } else if (ks->ep.ws) {
        weir_writable_error(ks->ep.ws, err);
    }
}

static int kafka_writev(struct weir_writable *ws, void *ctx,
                        const struct weir_chunk *c, unsigned n)
{
    struct kafka_sink *ks = ks_of(ctx);
    unsigned i = 0;
    int rc = ks->err;

    (void)ws;
    for (; rc == 0 && i < n; i++) {
        size_t used;

        rc = weir__lcut_feed(&ks->cut, c[i].data, c[i].len, on_record, ks,
                             &used);
        ks->in_total += used;
        if (rc == -EAGAIN) {
            /* librdkafka's queue is full: the rest waits for reports. */
            ks->pend = malloc((n - i) * sizeof(*ks->pend));
            if (!ks->pend) {
                rc = -ENOMEM;
                break;
            }
            for (unsigned j = i; j < n; j++)
                ks->pend[ks->npend++] =
                    (struct kpend){c[j], j == i ? (uint32_t)used : 0};
            ks->write_held = true;
            return WEIR_PENDING;
        }
        weir_chunk_unref(&c[i], ks->ep.slot);
    }
    for (; i < n; i++)
        weir_chunk_unref(&c[i], ks->ep.slot);
    if (rc)
        return rc;
    if (!full(ks))
        return 0;
    ks->write_held = true;
    return WEIR_PENDING;
}

static int kafka_write(struct weir_writable *ws, void *ctx, struct weir_chunk c)
{
    return kafka_writev(ws, ctx, &c, 1);
}

static int kafka_close(struct weir_writable *ws, void *ctx)
{
    struct kafka_sink *ks = ks_of(ctx);

    int rc;

    (void)ws;
    if (ks->err)
        return ks->err;
    /* A last line without its newline; refused, it waits held. */
    rc = weir__lcut_finish(&ks->cut, on_record, ks);
    if (rc && rc != -EAGAIN)
        return rc;
    if (!ks->cut.held && ledger_out(&ks->led) == 0)
        return 0;
    ks->closing = true;
    return WEIR_PENDING;
}

/* Aborted: what was not acknowledged is not delivered; nothing more is
 * produced. */
static int kafka_abort(struct weir_writable *ws, void *ctx, int reason)
{
    struct kafka_sink *ks = ks_of(ctx);

    (void)ws;
    ks->err = reason < 0 ? reason : -ECANCELED;
    drop_pending(ks);
    return 0;
}

static const struct weir_sink_ops kafka_stream = {
    .write = kafka_write,
    .writev = kafka_writev,
    .close = kafka_close,
    .abort = kafka_abort,
};

/* ---- the endpoint's ops ---- */

static void kafka_stop(struct weir_endpoint *ep)
{
    ep->stopping = true;
}

/* Given up on: what is out fails, and the stream with it. */
static void kafka_cut(struct weir_endpoint *ep)
{
    fail(ks_of(ep), -ECANCELED);
}

static int kafka_acked(const struct weir_endpoint *ep, uint64_t *acked)
{
    *acked = EP_CONTAINER(ep, const struct kafka_sink, ep)->led.acked;
    return 0;
}

struct kafka_end {
    rd_kafka_t *rk;
    struct kafka_glue *glue;
};

static void *destroy_thread(void *arg)
{
    struct kafka_end *e = arg;

    rd_kafka_destroy(e->rk);
    free(e->glue);
    free(e);
    return NULL;
}

/* librdkafka's handle, let go: what is still queued or out is purged
 * (never acknowledged), and the destroy, which joins librdkafka's
 * threads, runs on a thread of its own. */
static void let_go(struct kafka_sink *ks)
{
    struct kafka_end *e;
    pthread_attr_t at;
    pthread_t t;
    bool started = false;

    if (!ks->rk)
        return;
    ks->glue->ks = NULL;
    if (ks->mainq) {
        rd_kafka_queue_io_event_enable(ks->mainq, -1, NULL, 0);
        rd_kafka_queue_destroy(ks->mainq);
    }
    if (ks->rkt)
        rd_kafka_topic_destroy(ks->rkt);
    rd_kafka_purge(ks->rk, RD_KAFKA_PURGE_F_QUEUE | RD_KAFKA_PURGE_F_INFLIGHT |
                               RD_KAFKA_PURGE_F_NON_BLOCKING);
    e = malloc(sizeof(*e));
    if (e) {
        *e = (struct kafka_end){ks->rk, ks->glue};
        if (pthread_attr_init(&at) == 0) {
            pthread_attr_setdetachstate(&at, PTHREAD_CREATE_DETACHED);
            started = pthread_create(&t, &at, destroy_thread, e) == 0;
            pthread_attr_destroy(&at);
        }
    }
    if (!started) {
        /* No thread to spare: here, then. */
        rd_kafka_destroy(ks->rk);
        free(ks->glue);
        free(e);
    }
    ks->rk = NULL;
    ks->rkt = NULL;
    ks->mainq = NULL;
    ks->glue = NULL;
}

static void kafka_close_down(struct weir_endpoint *ep)
{
    struct kafka_sink *ks = ks_of(ep);

    if (ks->ev_op.pending)
        weir_loop_cancel(ep->loop, &ks->ev_op);
    let_go(ks);
    drop_pending(ks);
    /* Nothing is out any more, for the figures (whose memory is the
     * stream's, gone by the release). */
    if (ks->o.stats)
        atomic_store_explicit(&ks->o.stats->in_flight, 0, memory_order_relaxed);
    /* A write or close still waiting keeps the stream until the free. */
    if (ep->ws && !ks->write_held && !ks->closing) {
        weir_writable_destroy(ep->ws);
        ep->ws = NULL;
    }
}

static void kafka_release(struct weir_endpoint *ep)
{
    struct kafka_sink *ks = ks_of(ep);

    if (ep->ws)
        weir_writable_destroy(ep->ws);
    let_go(ks);
    drop_pending(ks);
    if (ks->ev_rd >= 0)
        close(ks->ev_rd);
    if (ks->ev_wr >= 0)
        close(ks->ev_wr);
    weir__lcut_free(&ks->cut);
    weir__ledger_free(&ks->led);
    free(ks->key);
    free(ks->glue); /* NULL once the handle's destroy took it */
}

static const struct ep_ops kafka_ops = {
    .sink = &kafka_stream,
    .stop = kafka_stop,
    .cut = kafka_cut,
    .acked = kafka_acked,
    .close = kafka_close_down,
    .release = kafka_release,
};

/* ---- construction ---- */

/* librdkafka's handle, its topic and its main queue on the pipe. */
static int open_producer(struct kafka_sink *ks,
                         const struct weir_kafka_sink_options *o)
{
    char err[512];
    rd_kafka_conf_t *conf = weir__kafka_conf(o, ks->o.hwm, err, sizeof(err));
    int fds[2];

    if (!conf)
        return -EINVAL;
    if (pipe2(fds, O_NONBLOCK | O_CLOEXEC) != 0) {
        rd_kafka_conf_destroy(conf);
        return -errno;
    }
    ks->ev_rd = fds[0];
    ks->ev_wr = fds[1];
    rd_kafka_conf_set_dr_msg_cb(conf, on_delivery);
    rd_kafka_conf_set_error_cb(conf, on_error);
    rd_kafka_conf_set_opaque(conf, ks->glue);
    ks->rk = rd_kafka_new(RD_KAFKA_PRODUCER, conf, err, sizeof(err));
    if (!ks->rk) {
        rd_kafka_conf_destroy(conf);
        return -EINVAL;
    }
    rd_kafka_set_log_queue(ks->rk, NULL); /* the main queue, served here */
    ks->rkt = rd_kafka_topic_new(ks->rk, o->topic, NULL);
    ks->mainq = rd_kafka_queue_get_main(ks->rk);
    if (!ks->rkt || !ks->mainq)
        return -ENOMEM;
    rd_kafka_queue_io_event_enable(ks->mainq, ks->ev_wr, "1", 1);
    return 0;
}

int weir_endpoint_kafka_sink(struct weir_endpoint **out, struct weir_loop *loop,
                             const struct weir_kafka_sink_options *o)
{
    struct kafka_sink *ks;
    int rc;

    if (!o || !o->brokers || !*o->brokers || !o->topic || !*o->topic)
        return -EINVAL;
    ks = weir__ep_new(sizeof(*ks), &kafka_ops, loop, -1, false, o->counter,
                      NULL);
    if (!ks)
        return -ENOMEM;
    ks->o = *o;
    ks->o.brokers = ks->o.topic = ks->o.key = ks->o.compression = NULL;
    ks->o.props = NULL;
    ks->ev_rd = ks->ev_wr = -1;
    if (!ks->o.hwm)
        ks->o.hwm = 1u << 20;
    /* A part of a line is held input too: a longer line is cut at the
     * mark, or a write held for it would wait for ever. */
    ks->cut.max = ks->o.hwm;
    rc = -ENOMEM;
    ks->glue = calloc(1, sizeof(*ks->glue));
    if (ks->glue && o->key) {
        ks->key_len = strlen(o->key);
        ks->key = strdup(o->key);
    }
    if (ks->glue && (!o->key || ks->key)) {
        ks->glue->ks = ks;
        rc = open_producer(ks, o);
    }
    if (rc) {
        weir__ep_free_now(&ks->ep);
        return rc;
    }
    rc = weir__ep_open_stream(&ks->ep, ks->o.hwm);
    if (rc)
        return rc;
    ev_arm(ks);
    serve_queue(ks); /* anything queued before the pipe was set */
    *out = &ks->ep;
    return 0;
}
