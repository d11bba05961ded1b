/*
 * endpoint_jetstream_source.c - the jetstream source: a stream's messages,
 * read through a durable pull consumer, as records of the source's
 * stream; each acknowledged to the consumer only once its owner says
 * every sink has it.
 *
 * The fetches and the acks run on the source's thread
 * (jetstream_fetch.c); the messages it fetched reach the loop behind an
 * eventfd. Here they wait in order, first to be copied into pool buffers
 * (each payload, and a '\n' unless it ends with one: the jetstream sink
 * cuts records at '\n' and publishes them without it), then, once
 * copied, with the stream offset just past their last byte, until
 * weir_jetstream_source_ack passes that offset. A message larger than a
 * buffer spans several; a smaller one is never cut.
 *
 * The stream's readable holds two chunks at most; the thread fetches
 * only while the payloads held (waiting here, in the pipeline, or not
 * yet acknowledged) are under the mark.
 */
#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>

#include "jetstream_impl.h"

struct jss_msg {
    natsMsg *m;
    uint64_t end; /* the stream offset past its last byte, once copied */
};

struct js_source {
    struct weir_endpoint ep;
    struct weir_pool *pool;
    struct js_fetch *fetch;
    struct weir_jetstream_source_counters *stats;
    weir_endpoint_event_fn on_event;
    void *event_arg;
    struct weir_op ev_op;
    /* Messages in order: [head, copied) copied into the stream, waiting
     * for their ack; [copied, n) waiting to be copied. */
    struct jss_msg *v;
    size_t head, copied, n, cap;
    size_t part;  /* bytes of v[copied] (its newline included) copied */
    uint64_t out; /* stream bytes made */
    bool ended, failing, up;
    bool held; /* weir_jetstream_source_hold: nothing goes into the stream */
};

static struct js_source *jss_of(struct weir_endpoint *ep)
{
    return EP_CONTAINER(ep, struct js_source, ep);
}

static void stat_add(_Atomic uint64_t *c, int64_t n)
{
    /* Relaxed: statistics sampled by another thread; they order nothing. */
    atomic_fetch_add_explicit(c, (uint64_t)n, memory_order_relaxed);
}

#define STAT(s, field, n)                                                      \
    do {                                                                       \
        if ((s)->stats)                                                        \
            stat_add(&(s)->stats->field, (n));                                 \
    } while (0)

/* A message's bytes in the stream: its payload, and a newline unless it
 * ends with one. */
static size_t msg_len(natsMsg *m, const uint8_t **data, size_t *payload)
{
    int n = natsMsg_GetDataLength(m);

    *data = (const uint8_t *)natsMsg_GetData(m);
    *payload = n > 0 ? (size_t)n : 0;
    return *payload + (*payload && (*data)[*payload - 1] == '\n' ? 0 : 1);
}

/* ---- into the stream ---- */

static void jss_fill(struct js_source *s);
static void event(struct js_source *s, enum weir_endpoint_event ev, int err);

static void jss_timer(struct weir_endpoint *ep)
{
    jss_fill(jss_of(ep));
}

/* Copies waiting messages into pool buffers while the stream wants them. */
static void jss_fill(struct js_source *s)
{
    struct weir_endpoint *ep = &s->ep;
    size_t cap = weir_pool_buf_size(s->pool);
    uint64_t was = s->out;

    while (!ep->destroyed && !s->ended && !s->held && s->copied < s->n &&
           weir_readable_desired_size(ep->rs) > 0) {
        struct weir_buf *b;
        size_t used = 0;

        if (weir_pool_get(s->pool, &b) != 0) {
            weir__ep_timer(ep, 1000 * 1000, jss_timer);
            return;
        }
        while (used < cap && s->copied < s->n) {
            struct jss_msg *jm = &s->v[s->copied];
            const uint8_t *data;
            size_t payload, len = msg_len(jm->m, &data, &payload);
            size_t take =
                len - s->part < cap - used ? len - s->part : cap - used;
            size_t from_payload;

            /* A message that fits a buffer is never cut across two: a
             * sink killed between their writes would leave half a line,
             * and the whole one comes again after it. */
            if (s->part == 0 && used > 0 && len > cap - used)
                break;
            from_payload =
                s->part < payload
                    ? (take < payload - s->part ? take : payload - s->part)
                    : 0;

            if (from_payload)
                memcpy(b->data + used, data + s->part, from_payload);
            if (from_payload < take)
                b->data[used + from_payload] = '\n';
            used += take;
            s->part += take;
            if (s->part == len) {
                jm->end = s->out + used;
                s->part = 0;
                s->copied++;
                STAT(s, records, 1);
                STAT(s, bytes, (int64_t)payload);
            }
        }
        s->out += used;
        weir__ep_count(ep, used);
        weir_readable_enqueue(ep->rs, weir_chunk_of(b, (uint32_t)used));
    }
    if (s->out != was && !ep->destroyed)
        event(s, WEIR_EP_JETSTREAM_READ, 0);
}

static int jss_push(struct js_source *s, natsMsg *m)
{
    if (s->head > 0 && s->n == s->cap) {
        memmove(s->v, s->v + s->head, (s->n - s->head) * sizeof(*s->v));
        s->n -= s->head;
        s->copied -= s->head;
        s->head = 0;
    }
    if (s->n == s->cap) {
        size_t cap = s->cap ? s->cap * 2 : 256;
        struct jss_msg *v = realloc(s->v, cap * sizeof(*v));

        if (!v)
            return -ENOMEM;
        s->v = v;
        s->cap = cap;
    }
    s->v[s->n++] = (struct jss_msg){m, 0};
    STAT(s, unacked, 1);
    return 0;
}

/* ---- the thread's news ---- */

static void event(struct js_source *s, enum weir_endpoint_event ev, int err)
{
    if (s->on_event)
        s->on_event(s->event_arg, ev, err, s->out);
}

static void serve_fetch(struct js_source *s)
{
    natsStatus st;
    bool st_new;
    uint64_t redelivered, errors;
    size_t n = 0;
    natsMsg **v =
        weir__js_fetch_take(s->fetch, &n, &st, &st_new, &redelivered, &errors);

    STAT(s, redelivered, (int64_t)redelivered);
    STAT(s, errors, (int64_t)errors);
    if (st_new && st != NATS_OK && !s->failing) {
        s->failing = true;
        event(s, WEIR_EP_JETSTREAM_FAILING, st);
    } else if (st_new && st == NATS_OK && (s->failing || !s->up)) {
        s->failing = false;
        s->up = true;
        event(s, WEIR_EP_CONNECTED, 0);
    }
    for (size_t i = 0; i < n; i++) {
        if (s->ended || jss_push(s, v[i]) != 0) {
            /* Not read: never acknowledged, it comes again at a start;
             * its bytes are no longer held. */
            const uint8_t *d;
            size_t payload;

            (void)msg_len(v[i], &d, &payload);
            natsMsg_Destroy(v[i]);
            (void)weir__js_fetch_ack(s->fetch, NULL, 0, payload);
        }
    }
    free(v);
    jss_fill(s);
}

static void ev_arm(struct js_source *s);

static void ev_ready(struct weir_op *op, int res, uint32_t flags)
{
    struct js_source *s = EP_CONTAINER(op, struct js_source, ev_op);

    (void)flags;
    if (weir__ep_op_done(&s->ep))
        return;
    if (res == -ECANCELED || s->ep.destroyed)
        return;
    serve_fetch(s);
    ev_arm(s);
}

static void ev_arm(struct js_source *s)
{
    if (s->ev_op.pending || s->ep.destroyed)
        return;
    s->ev_op.fn = ev_ready;
    if (weir_loop_poll(s->ep.loop, &s->ev_op, s->fetch->efd, POLLIN) == 0) {
        ep_op_started(&s->ep);
    } else if (!s->ended) {
        s->ended = true;
        weir_readable_error(s->ep.rs, -EIO);
    }
}

/* ---- the stream ---- */

static int jss_pull(struct weir_readable *rs, void *ctx)
{
    (void)rs;
    jss_fill(jss_of(ctx));
    return 0;
}

static int jss_cancel(struct weir_readable *rs, void *ctx, int reason)
{
    struct js_source *s = jss_of(ctx);

    (void)rs;
    (void)reason;
    s->ended = true;
    weir__ep_timer_stop(&s->ep);
    return 0;
}

static const struct weir_source_ops jss_stream = {
    .pull = jss_pull,
    .cancel = jss_cancel,
};

uint64_t weir_jetstream_source_ack(struct weir_endpoint *ep, uint64_t acked)
{
    struct js_source *s;
    natsMsg *batch[256];
    uint64_t bytes = 0, done = 0;
    size_t k = 0;

    if (!ep || ep->ops->source != &jss_stream)
        return 0;
    s = jss_of(ep);
    while (s->head < s->copied && s->v[s->head].end <= acked) {
        const uint8_t *d;
        size_t payload;

        (void)msg_len(s->v[s->head].m, &d, &payload);
        bytes += payload;
        batch[k++] = s->v[s->head++].m;
        if (k == sizeof(batch) / sizeof(batch[0])) {
            (void)weir__js_fetch_ack(s->fetch, batch, k, bytes);
            done += k;
            k = 0;
            bytes = 0;
        }
    }
    if (k) {
        (void)weir__js_fetch_ack(s->fetch, batch, k, bytes);
        done += k;
    }
    STAT(s, acked, (int64_t)done);
    STAT(s, unacked, -(int64_t)done);
    return done;
}

void weir_jetstream_source_hold(struct weir_endpoint *ep, bool hold)
{
    struct js_source *s;

    if (!ep || ep->ops->source != &jss_stream)
        return;
    s = jss_of(ep);
    s->held = hold;
    if (!hold)
        jss_fill(s);
}

/* ---- the endpoint's ops ---- */

/* The stream ends now: what was copied flows on; what waits to be copied
 * was never read, and comes again at the next start. */
static void jss_stop(struct weir_endpoint *ep)
{
    struct js_source *s = jss_of(ep);

    ep->stopping = true;
    if (s->ended)
        return;
    s->ended = true;
    weir__ep_timer_stop(ep);
    weir_readable_close(ep->rs);
}

static void jss_close(struct weir_endpoint *ep)
{
    struct js_source *s = jss_of(ep);

    if (s->ev_op.pending)
        weir_loop_cancel(ep->loop, &s->ev_op);
    weir__ep_timer_stop(ep);
    weir_readable_destroy(ep->rs);
    ep->rs = NULL;
    /* Nothing is held any more, for the figures; their memory is the
     * owner's, gone by the release. */
    if (s->stats)
        atomic_store_explicit(&s->stats->unacked, 0, memory_order_relaxed);
    s->stats = NULL;
}

static void jss_release(struct weir_endpoint *ep)
{
    struct js_source *s = jss_of(ep);

    /* Messages not acknowledged: the server delivers them again. The
     * thread sends the acks it was handed, then lets go of the rest. */
    for (size_t i = s->head; i < s->n; i++)
        natsMsg_Destroy(s->v[i].m);
    free(s->v);
    if (s->fetch)
        weir__js_fetch_release(s->fetch);
}

static const struct ep_ops jss_ops = {
    .source = &jss_stream,
    .stop = jss_stop,
    .close = jss_close,
    .release = jss_release,
};

/* ---- construction ---- */

int weir_endpoint_jetstream_source(
    struct weir_endpoint **out, struct weir_loop *loop, struct weir_pool *pool,
    const struct weir_jetstream_source_options *o)
{
    struct js_source *s;
    natsOptions *no;
    int rc;

    if (!o || !pool || !o->servers || !*o->servers || !o->stream ||
        !*o->stream || !o->consumer || !*o->consumer ||
        strchr(o->consumer, '.'))
        return -EINVAL;
    s = weir__ep_new(sizeof(*s), &jss_ops, loop, -1, false, o->counter, NULL);
    if (!s)
        return -ENOMEM;
    s->pool = pool;
    s->stats = o->stats;
    s->on_event = o->on_event;
    s->event_arg = o->event_arg;
    no = weir__js_client_options(o->servers, o->creds, o->ca,
                                 o->hwm ? o->hwm : 1u << 20);
    rc = no ? weir__js_fetch_start(&s->fetch, no, o) : -EINVAL;
    if (rc) {
        weir__ep_free_now(&s->ep);
        return rc;
    }
    rc = weir__ep_open_stream(&s->ep, 2 * (uint64_t)weir_pool_buf_size(pool));
    if (rc)
        return rc;
    ev_arm(s);
    *out = &s->ep;
    return 0;
}
