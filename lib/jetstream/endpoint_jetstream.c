/*
 * endpoint_jetstream.c - the jetstream sink: records in, published to a
 * JetStream subject asynchronously, acknowledged by the stream.
 *
 * The stream's bytes are cut into records at newlines
 * (lib/io/endpoint_ledger.c); each becomes a NATS message with the header
 * Nats-Msg-Id "PREFIX:OFFSET" (the record's offset in the input, plus
 * where the input began) and is published with js_PublishMsgAsync. The
 * stream's acknowledgements come on the client's threads and reach the
 * loop as notes behind an eventfd (jetstream_box.c). A publish that
 * failed, or had no answer within ack_wait, is published again, after a
 * short pause, with the same id: the stream's duplicate window drops it
 * if the first one was stored after all. A later run that resumes at the
 * same offset with the same prefix (a followed file after a crash)
 * sends the same ids, so what was stored before the crash is dropped
 * too, within the window.
 *
 * Acknowledged (weir_endpoint_acked, the counter) is the input offset
 * below which every record was acknowledged: answers come in any order
 * (and a record sent again is answered late), so a ledger keeps the
 * records out in input order and the offset moves over its done prefix.
 * Everything not acknowledged counts against the high-water mark: a
 * write that finds `hwm` input bytes held is held itself.
 *
 * A record the server refuses for good (larger than its max_payload, which
 * the client checks at the publish, or the stream's max_msg_size, which
 * the stream answers), or the oldest record out once it failed
 * retry_limit publishes in a row, goes to the dead letters and counts as
 * acknowledged: the stream goes on without it.
 *
 * The client writes what is published into its own buffer and sends it
 * from its flusher thread; the buffer is sized so that a publish does
 * not have to flush it itself (which would write to the socket from the
 * worker).
 */
#include <errno.h>
#include <inttypes.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../io/sock_util.h"
#include "jetstream_impl.h"

/* How long a failed publish waits before it is sent again: doubled at
 * each failure in a row, up to the most. */
#define RETRY_MIN_NS 100000000ull
#define RETRY_MAX_NS 5000000000ull
/* The record's bytes a dead letter quotes. */
#define DEAD_RECORD 4096

struct js_sink {
    struct weir_endpoint ep;
    struct weir_jetstream_sink_options o; /* its strings not kept */
    char *subject, *prefix;
    struct js_box *box;
    natsConnection *nc;
    jsCtx *js;
    jsPubOptions popts;
    struct weir_op ev_op;
    struct lcut cut;
    struct ledger led;
    /* Messages to publish (again): before the connection is there, or
     * after a failure; in input order (by their ids' offsets). */
    struct js_wait {
        natsMsg *m;
        uint64_t off;
    } * retry;
    size_t nretry, retry_cap;
    /* While failing, one message (the oldest) goes as a probe; the rest
     * wait until it is acknowledged, so an outage costs one publish per
     * backoff, not one per record. */
    bool probe_out;
    uint64_t backoff_ns;
    uint64_t rejected;     /* records refused for good or given up */
    uint64_t oldest_at;    /* the oldest record out, by input offset ... */
    unsigned oldest_fails; /* ... and its failed publishes in a row */
    uint64_t in_total;     /* input bytes the cutter took */
    uint64_t cut_end;      /* input offset past the last record cut */
    bool write_held, closing, failing, up;
    int err;
};

static struct js_sink *js_of(struct weir_endpoint *ep)
{
    return EP_CONTAINER(ep, struct js_sink, ep);
}

static void stat_add(_Atomic uint64_t *c, int64_t n)
{
    /* Relaxed: statistics sampled by another thread; they order nothing. */
    atomic_fetch_add_explicit(c, (uint64_t)n, memory_order_relaxed);
}

#define STAT(s, field, n)                                                      \
    do {                                                                       \
        if ((s)->o.stats)                                                      \
            stat_add(&(s)->o.stats->field, (n));                               \
    } while (0)

static void event(struct js_sink *s, enum weir_endpoint_event ev, int err,
                  uint64_t off)
{
    if (s->o.on_event)
        s->o.on_event(s->o.event_arg, ev, err, off);
}

static void fail(struct js_sink *s, int err);

static void record_done(struct js_sink *s, uint64_t seq)
{
    uint64_t n = weir__ledger_done(&s->led, seq);

    if (n)
        weir__ep_count(&s->ep, n);
}

/* ---- dead letters ---- */

static bool seq_of(struct js_sink *s, natsMsg *m, uint64_t *seq);

/* Why the server will never take a record: its words for it. */
static const char *refusal(natsStatus st, int jerr)
{
    if (jerr == JSStreamMessageExceedsMaximumErr)
        return "message size exceeds the stream's maximum";
    return natsStatus_GetText(st);
}

/* A record refused for good, or given up: one line to the dead letters
 * (a regular file's append, on the loop: rare, small, and the page cache
 * takes it), and it counts as acknowledged. */
static void dead_letter(struct js_sink *s, natsMsg *m, natsStatus st, int jerr)
{
    const char *why = refusal(st, jerr);
    size_t n = (size_t)natsMsg_GetDataLength(m);
    size_t len = n < DEAD_RECORD ? n : DEAD_RECORD;
    size_t cap = len * 6 + strlen(why) * 6 + 64, l, off = 0;
    char *line;
    uint64_t seq;

    STAT(s, dead_letter, 1);
    s->rejected++;
    event(s, WEIR_EP_JETSTREAM_REJECTED, st, s->rejected);
    if (s->o.has_dead_letter && (line = malloc(cap)) != NULL) {
        l = (size_t)snprintf(line, cap, "{\"error\":\"");
        l += weir__json_escape_to(line + l, cap - l, (const uint8_t *)why,
                                  strlen(why));
        l += (size_t)snprintf(line + l, cap - l, "\",\"record\":\"");
        l += weir__json_escape_to(line + l, cap - l,
                                  (const uint8_t *)natsMsg_GetData(m), len);
        l += (size_t)snprintf(line + l, cap - l, "\"}\n");
        if (l >= cap)
            l = cap - 1; /* cannot happen (cap is the escapes' worst case) */
        while (off < l) {
            ssize_t w = write(s->o.dead_letter_fd, line + off, l - off);

            if (w <= 0)
                break; /* counted and reported; the file is the operator's */
            off += (size_t)w;
        }
        free(line);
    }
    if (seq_of(s, m, &seq))
        record_done(s, seq);
    natsMsg_Destroy(m);
}

/* ---- publishing ---- */

/* The input offset a message's id names. */
static uint64_t id_offset(natsMsg *m)
{
    const char *id = NULL, *colon;

    if (natsMsgHeader_Get(m, "Nats-Msg-Id", &id) != NATS_OK || !id ||
        !(colon = strrchr(id, ':')))
        return 0;
    return strtoull(colon + 1, NULL, 10);
}

/* Keeps m to publish later, in its place by offset (most often the end:
 * a failure answers the messages out in the order they went). */
static int retry_push(struct js_sink *s, natsMsg *m)
{
    uint64_t off = id_offset(m);
    size_t i = s->nretry;

    if (s->nretry == s->retry_cap) {
        size_t cap = s->retry_cap ? s->retry_cap * 2 : 64;
        struct js_wait *v = realloc(s->retry, cap * sizeof(*v));

        if (!v)
            return -ENOMEM;
        s->retry = v;
        s->retry_cap = cap;
    }
    while (i > 0 && s->retry[i - 1].off > off)
        i--;
    memmove(s->retry + i + 1, s->retry + i,
            (s->nretry - i) * sizeof(*s->retry));
    s->retry[i] = (struct js_wait){m, off};
    s->nretry++;
    return 0;
}

static void on_retry(struct weir_endpoint *ep);

/* Publishes m, or keeps it to publish later (behind those waiting). */
static int publish(struct js_sink *s, natsMsg *m)
{
    if (s->js && s->nretry == 0 && !s->failing) {
        natsStatus st = js_PublishMsgAsync(s->js, &m, &s->popts);

        if (st == NATS_OK) {
            STAT(s, in_flight, 1);
            return 0;
        }
        if (st == NATS_MAX_PAYLOAD) {
            dead_letter(s, m, st, 0);
            return 0;
        }
        /* Refused at once (the client's buffer full while it
         * reconnects): no answer will come to send it again. */
        weir__ep_timer(&s->ep, s->backoff_ns, on_retry);
    } else if (s->js && !s->probe_out) {
        /* Failing, and no probe out to answer (the last one was given
         * up): the timer sends the oldest. */
        weir__ep_timer(&s->ep, s->backoff_ns, on_retry);
    }
    return retry_push(s, m);
}

/* Publishes what waits, in order, until one fails again; while failing,
 * the oldest alone. */
static void publish_waiting(struct js_sink *s)
{
    size_t i = 0;

    if (!s->js || s->probe_out)
        return;
    for (; i < s->nretry && !s->probe_out; i++) {
        natsMsg *m = s->retry[i].m;
        natsStatus st = js_PublishMsgAsync(s->js, &m, &s->popts);

        if (st == NATS_MAX_PAYLOAD) {
            dead_letter(s, m, st, 0);
            continue;
        }
        if (st != NATS_OK)
            break;
        STAT(s, in_flight, 1);
        s->probe_out = s->failing;
    }
    memmove(s->retry, s->retry + i, (s->nretry - i) * sizeof(*s->retry));
    s->nretry -= i;
    if (s->nretry && !s->probe_out)
        weir__ep_timer(&s->ep, s->backoff_ns, on_retry);
}

static int on_record(void *arg, const uint8_t *p, size_t n, uint64_t in_len)
{
    struct js_sink *s = arg;
    char id[160];
    natsMsg *m = NULL;
    uint64_t seq;
    int rc = weir__ledger_push(&s->led, s->cut_end + in_len, n == 0, &seq);

    if (rc)
        return rc;
    if (n == 0) {
        /* An empty line is no record; its byte is acknowledged in turn. */
        s->cut_end += in_len;
        record_done(s, seq);
        return 0;
    }
    snprintf(id, sizeof(id), "%s:%" PRIu64, s->prefix,
             s->o.id_base + s->cut_end);
    s->cut_end += in_len;
    if (natsMsg_Create(&m, s->subject, NULL, (const char *)p, (int)n) !=
            NATS_OK ||
        natsMsgHeader_Set(m, "Nats-Msg-Id", id) != NATS_OK) {
        natsMsg_Destroy(m);
        return -ENOMEM;
    }
    return publish(s, m);
}

static bool full(const struct js_sink *s)
{
    return s->in_total - s->led.acked >= s->o.hwm;
}

static void flow(struct js_sink *s)
{
    if (s->err)
        return;
    if (s->write_held && !full(s)) {
        s->write_held = false;
        weir_writable_write_done(s->ep.ws, 0);
        return; /* the next write may already have run flow again */
    }
    if (s->closing && ledger_out(&s->led) == 0) {
        s->closing = false;
        weir_writable_close_done(s->ep.ws, 0);
    }
}

static void on_retry(struct weir_endpoint *ep)
{
    struct js_sink *s = js_of(ep);

    if (s->err || ep->destroyed)
        return;
    publish_waiting(s);
}

/* ---- the notes: what the stream answered ---- */

/* The record a message stands for, by its id's offset. */
static bool seq_of(struct js_sink *s, natsMsg *m, uint64_t *seq)
{
    uint64_t off = id_offset(m);

    return off >= s->o.id_base &&
           weir__ledger_find(&s->led, off - s->o.id_base, seq);
}

static void note(struct js_sink *s, struct js_note *nt)
{
    uint64_t seq;

    STAT(s, in_flight, -1);
    s->probe_out = false;
    if (nt->st == NATS_OK) {
        STAT(s, records, 1);
        STAT(s, bytes, natsMsg_GetDataLength(nt->msg));
        if (nt->duplicate)
            STAT(s, duplicates, 1);
        if (s->failing || !s->up)
            event(s, WEIR_EP_CONNECTED, 0, s->led.acked);
        s->failing = false;
        s->up = true;
        s->backoff_ns = RETRY_MIN_NS;
        if (seq_of(s, nt->msg, &seq))
            record_done(s, seq);
        natsMsg_Destroy(nt->msg);
        publish_waiting(s); /* the probe passed: the rest follows */
        return;
    }
    if (nt->jerr == JSStreamMessageExceedsMaximumErr ||
        nt->st == NATS_MAX_PAYLOAD) {
        STAT(s, err_other, 1);
        dead_letter(s, nt->msg, nt->st, nt->jerr);
        publish_waiting(s);
        return;
    }
    if (nt->st == NATS_TIMEOUT)
        STAT(s, err_timeout, 1);
    else if (nt->st == NATS_NO_RESPONDERS)
        STAT(s, err_no_responders, 1);
    else
        STAT(s, err_other, 1);
    if (!s->failing)
        event(s, WEIR_EP_JETSTREAM_FAILING, nt->st, s->led.acked);
    s->failing = true;
    /* The oldest record out failing again and again (no stream takes its
     * subject): given up after retry_limit, so the rest can follow. */
    if (s->o.retry_limit && id_offset(nt->msg) - s->o.id_base == s->led.acked) {
        if (s->oldest_at != s->led.acked || s->oldest_fails == 0) {
            s->oldest_at = s->led.acked;
            s->oldest_fails = 0;
        }
        if (++s->oldest_fails > s->o.retry_limit) {
            s->oldest_fails = 0;
            dead_letter(s, nt->msg, nt->st, nt->jerr);
            s->backoff_ns = RETRY_MIN_NS;
            if (s->nretry)
                weir__ep_timer(&s->ep, s->backoff_ns, on_retry);
            return;
        }
    }
    STAT(s, retries, 1);
    /* Later, with the same id: stored already, it is dropped. */
    if (retry_push(s, nt->msg) != 0) {
        natsMsg_Destroy(nt->msg);
        fail(s, -ENOMEM);
        return;
    }
    weir__ep_timer(&s->ep, s->backoff_ns, on_retry);
    s->backoff_ns =
        s->backoff_ns * 2 < RETRY_MAX_NS ? s->backoff_ns * 2 : RETRY_MAX_NS;
}

static void ev_arm(struct js_sink *s);

static void serve_box(struct js_sink *s)
{
    natsConnection *nc = NULL;
    jsCtx *js = NULL;
    natsStatus st = NATS_OK;
    size_t n = 0;
    struct js_note *v = weir__js_box_take(s->box, &n, &nc, &js, &st);

    if (nc || js || st != NATS_OK) {
        s->nc = nc;
        s->js = js;
        if (st != NATS_OK || !js) {
            /* Bad options the client found (a credentials file it
             * cannot read): nothing will ever be published. */
            event(s, WEIR_EP_JETSTREAM_FAILING, st, s->led.acked);
            fail(s, -EINVAL);
        } else {
            publish_waiting(s);
        }
    }
    for (size_t i = 0; i < n; i++) {
        if (s->err)
            natsMsg_Destroy(v[i].msg);
        else
            note(s, &v[i]);
    }
    free(v);
    flow(s);
}

static void ev_ready(struct weir_op *op, int res, uint32_t flags)
{
    struct js_sink *s = EP_CONTAINER(op, struct js_sink, ev_op);

    (void)flags;
    if (weir__ep_op_done(&s->ep))
        return;
    if (res == -ECANCELED || s->ep.destroyed)
        return;
    serve_box(s);
    ev_arm(s);
}

static void ev_arm(struct js_sink *s)
{
    if (s->ev_op.pending || s->ep.destroyed)
        return;
    s->ev_op.fn = ev_ready;
    if (weir_loop_poll(s->ep.loop, &s->ev_op, s->box->efd, POLLIN) == 0)
        ep_op_started(&s->ep);
    else
        fail(s, -EIO);
}

/* ---- the stream ---- */

static void drop_waiting(struct js_sink *s)
{
    for (size_t i = 0; i < s->nretry; i++)
        natsMsg_Destroy(s->retry[i].m);
    s->nretry = 0;
}

static void fail(struct js_sink *s, int err)
{
    if (s->err)
        return;
    s->err = err;
    drop_waiting(s);
    if (s->write_held) {
        s->write_held = false;
        weir_writable_write_done(s->ep.ws, err);
    } else if (s->closing) {
        s->closing = false;
        weir_writable_close_done(s->ep.ws, err);
    } else if (s->ep.ws) {
        weir_writable_error(s->ep.ws, err);
    }
}

static int js_writev(struct weir_writable *ws, void *ctx,
                     const struct weir_chunk *c, unsigned n)
{
    struct js_sink *s = js_of(ctx);
    int rc = s->err;

    (void)ws;
    for (unsigned i = 0; i < n; i++) {
        size_t used = 0;

        if (rc == 0) {
            rc = weir__lcut_feed(&s->cut, c[i].data, c[i].len, on_record, s,
                                 &used);
            s->in_total += used;
        }
        weir_chunk_unref(&c[i], s->ep.slot);
    }
    if (rc)
        return rc;
    if (!full(s))
        return 0;
    s->write_held = true;
    return WEIR_PENDING;
}

static int js_write(struct weir_writable *ws, void *ctx, struct weir_chunk c)
{
    return js_writev(ws, ctx, &c, 1);
}

static int js_close(struct weir_writable *ws, void *ctx)
{
    struct js_sink *s = js_of(ctx);
    int rc;

    (void)ws;
    if (s->err)
        return s->err;
    rc = weir__lcut_finish(&s->cut, on_record, s);
    if (rc)
        return rc;
    if (ledger_out(&s->led) == 0)
        return 0;
    s->closing = true;
    return WEIR_PENDING;
}

static int js_abort(struct weir_writable *ws, void *ctx, int reason)
{
    struct js_sink *s = js_of(ctx);

    (void)ws;
    s->err = reason < 0 ? reason : -ECANCELED;
    drop_waiting(s);
    return 0;
}

static const struct weir_sink_ops js_stream = {
    .write = js_write,
    .writev = js_writev,
    .close = js_close,
    .abort = js_abort,
};

/* ---- the endpoint's ops ---- */

static void js_stop(struct weir_endpoint *ep)
{
    ep->stopping = true;
}

static void js_cut(struct weir_endpoint *ep)
{
    fail(js_of(ep), -ECANCELED);
}

static int js_acked(const struct weir_endpoint *ep, uint64_t *acked)
{
    *acked = EP_CONTAINER(ep, const struct js_sink, ep)->led.acked;
    return 0;
}

static void js_close_down(struct weir_endpoint *ep)
{
    struct js_sink *s = js_of(ep);

    if (s->ev_op.pending)
        weir_loop_cancel(ep->loop, &s->ev_op);
    weir__ep_timer_stop(ep);
    drop_waiting(s);
    /* Nothing is out any more, for the figures (whose memory is the
     * stream's, gone by the release). */
    if (s->o.stats)
        atomic_store_explicit(&s->o.stats->in_flight, 0, memory_order_relaxed);
    if (ep->ws && !s->write_held && !s->closing) {
        weir_writable_destroy(ep->ws);
        ep->ws = NULL;
    }
}

static void js_release(struct weir_endpoint *ep)
{
    struct js_sink *s = js_of(ep);

    if (ep->ws)
        weir_writable_destroy(ep->ws);
    drop_waiting(s);
    free(s->retry);
    if (s->box)
        weir__js_box_release(s->box, s->nc, s->js);
    weir__lcut_free(&s->cut);
    weir__ledger_free(&s->led);
    free(s->subject);
    free(s->prefix);
}

static const struct ep_ops js_ops = {
    .sink = &js_stream,
    .stop = js_stop,
    .cut = js_cut,
    .acked = js_acked,
    .close = js_close_down,
    .release = js_release,
};

/* ---- construction ---- */

int weir_endpoint_jetstream_sink(struct weir_endpoint **out,
                                 struct weir_loop *loop,
                                 const struct weir_jetstream_sink_options *o)
{
    struct js_sink *s;
    natsOptions *no;
    char own[40];
    int rc;

    if (!o || !o->servers || !*o->servers || !o->subject || !*o->subject ||
        (o->id_prefix && strchr(o->id_prefix, ':')))
        return -EINVAL;
    s = weir__ep_new(sizeof(*s), &js_ops, loop, -1, false, o->counter, NULL);
    if (!s)
        return -ENOMEM;
    s->o = *o;
    s->o.servers = s->o.subject = s->o.id_prefix = NULL;
    s->o.creds = s->o.ca = NULL;
    if (!s->o.hwm)
        s->o.hwm = 1u << 20;
    if (!s->o.ack_wait_ns)
        s->o.ack_wait_ns = 5000000000ull;
    s->cut.max = s->o.hwm;
    s->backoff_ns = RETRY_MIN_NS;
    jsPubOptions_Init(&s->popts);
    s->popts.MaxWait = (int64_t)(s->o.ack_wait_ns / 1000000);
    if (!o->id_prefix) {
        /* Never the same twice: this run's ids are its own. */
        snprintf(own, sizeof(own), "w%016" PRIx64 "%08x",
                 (uint64_t)weir__mono_ns() ^ ((uint64_t)getpid() << 40),
                 (unsigned)(uintptr_t)s);
    }
    s->subject = strdup(o->subject);
    s->prefix = strdup(o->id_prefix ? o->id_prefix : own);
    no = s->subject && s->prefix
             ? weir__js_client_options(o->servers, o->creds, o->ca, s->o.hwm)
             : NULL;
    rc = no ? 0 : -EINVAL;
    /* Records out are bounded by the mark (each at least a byte): the
     * client never stalls a publish for its own bound. */
    if (rc == 0 &&
        (rc = weir__js_box_new(&s->box, no, (int64_t)s->o.hwm + 1024)) != 0)
        natsOptions_Destroy(no);
    if (rc == 0 && (rc = weir__js_box_connect(s->box)) != 0) {
        weir__js_box_release(s->box, NULL, NULL);
        s->box = NULL;
    }
    if (rc) {
        weir__ep_free_now(&s->ep);
        return rc;
    }
    rc = weir__ep_open_stream(&s->ep, s->o.hwm);
    if (rc)
        return rc;
    ev_arm(s);
    *out = &s->ep;
    return 0;
}

const char *weir_jetstream_strerror(int err)
{
    return natsStatus_GetText((natsStatus)err);
}

const char *weir_jetstream_version(void)
{
    return nats_GetVersion();
}
