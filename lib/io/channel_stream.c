/*
 * channel_stream.c - the two stream ends of a channel.
 *
 * The writable's sink pushes each write into the channel and finishes it
 * at once while the channel has credit; without credit (or slots) it
 * keeps the rest of the write and finishes it from on_writable, which is
 * the backpressure the pipe upstream sees. Its own queue is one byte deep,
 * so all buffering is the channel's, bounded by the channel's mark.
 *
 * The readable's source pops batches while the stream wants more, and
 * waits for on_readable when the channel is empty. Enqueueing can pull
 * again from inside a fill; `filling` turns that nested pull into a no-op
 * so chunks popped in one batch are never overtaken by a later batch.
 * The same flag defers a destroy that happens inside a fill (the stream's
 * close can finish the pipe and its owner's teardown synchronously).
 */
#include <errno.h>
#include <stdlib.h>

#include "weir/channel_stream.h"

#define RX_BATCH 32u
#define RX_HWM   (128u * 1024u)

struct weir_channel_tx {
    struct weir_channel *ch;
    struct weir_loop *loop;
    struct weir_writable *ws;
    struct weir_chunk held[WEIR_WRITEV_MAX];
    unsigned nheld, held_at;
    bool waiting; /* a write is pending on credit */
    bool closed;
    bool destroyed;
};

struct weir_channel_rx {
    struct weir_channel *ch;
    struct weir_loop *loop;
    struct weir_readable *rs;
    bool filling;
    bool doomed; /* destroyed during a fill: freed when the fill ends */
    bool done;   /* cancelled: the channel is gone for us */
};

/* ---- producer ---- */

static void tx_drop_held(struct weir_channel_tx *tx)
{
    unsigned slot = weir_loop_slot(tx->loop);

    for (unsigned i = tx->held_at; i < tx->nheld; i++)
        weir_chunk_unref(&tx->held[i], slot);
    tx->nheld = tx->held_at = 0;
}

/* Pushes what is held. 0: all in and credit left; WEIR_PENDING: wait for
 * on_writable; -ECANCELED. */
static int tx_flush(struct weir_channel_tx *tx)
{
    while (tx->held_at < tx->nheld) {
        int n = weir_channel_push(tx->ch, tx->held + tx->held_at,
                                  tx->nheld - tx->held_at);

        if (n < 0) {
            tx_drop_held(tx);
            return n;
        }
        tx->held_at += (unsigned)n;
        if (n == 0)
            break;
    }
    if (tx->held_at == tx->nheld)
        tx->nheld = tx->held_at = 0;
    switch (weir_channel_ready(tx->ch)) {
    case 1:
        if (tx->nheld == 0)
            return 0;
        return tx_flush(tx);
    case 0:
        return WEIR_PENDING;
    default:
        tx_drop_held(tx);
        return -ECANCELED;
    }
}

static int tx_writev(struct weir_writable *ws, void *ctx,
                     const struct weir_chunk *c, unsigned n)
{
    struct weir_channel_tx *tx = ctx;
    int rc;

    (void)ws;
    for (unsigned i = 0; i < n; i++)
        tx->held[i] = c[i];
    tx->nheld = n;
    tx->held_at = 0;
    rc = tx_flush(tx);
    tx->waiting = rc == WEIR_PENDING;
    return rc;
}

static int tx_write(struct weir_writable *ws, void *ctx, struct weir_chunk c)
{
    return tx_writev(ws, ctx, &c, 1);
}

static int tx_close(struct weir_writable *ws, void *ctx)
{
    struct weir_channel_tx *tx = ctx;

    (void)ws;
    tx->closed = true;
    weir_channel_close(tx->ch, 0);
    return 0;
}

static int tx_abort(struct weir_writable *ws, void *ctx, int reason)
{
    struct weir_channel_tx *tx = ctx;

    (void)ws;
    tx_drop_held(tx);
    if (!tx->closed) {
        tx->closed = true;
        weir_channel_close(tx->ch, reason < 0 ? reason : -ECANCELED);
    }
    return 0;
}

static void tx_on_writable(struct weir_channel *ch, void *arg)
{
    struct weir_channel_tx *tx = arg;
    int rc;

    (void)ch;
    if (!tx->ws || tx->closed)
        return;
    if (!tx->waiting) {
        /* A cancel with no write pending: error the stream so the pipe
         * cancels its source now rather than at its next write. */
        if (weir_channel_ready(tx->ch) < 0)
            weir_writable_error(tx->ws, -ECANCELED);
        return;
    }
    rc = tx_flush(tx);
    if (rc == WEIR_PENDING)
        return;
    tx->waiting = false;
    weir_writable_write_done(tx->ws, rc);
}

static const struct weir_sink_ops tx_ops = {
    .write = tx_write,
    .writev = tx_writev,
    .close = tx_close,
    .abort = tx_abort,
};

int weir_channel_tx_open(struct weir_channel_tx *tx, struct weir_writable **out)
{
    struct weir_writable_options wo = {
        .strategy = {.hwm = 1, .bytes = true},
        .slot = weir_loop_slot(tx->loop),
    };
    int rc = weir_writable_create(&tx->ws, &tx_ops, tx, &wo);

    if (rc == 0)
        *out = tx->ws;
    return rc;
}

void weir_channel_tx_destroy(struct weir_channel_tx *tx)
{
    if (tx->ws)
        weir_writable_destroy(tx->ws);
    tx->ws = NULL;
    tx_drop_held(tx);
    if (!tx->closed)
        weir_channel_close(tx->ch, -ECANCELED);
    free(tx);
}

/* ---- consumer ---- */

static void rx_fill(struct weir_channel_rx *rx)
{
    struct weir_chunk batch[RX_BATCH];

    if (rx->filling)
        return;
    rx->filling = true;
    while (rx->rs && !rx->done && (weir_readable_desired_size(rx->rs) > 0)) {
        int n = weir_channel_pop(rx->ch, batch, RX_BATCH);

        if (n == 0)
            break;
        if (n < 0) {
            if (n == -EPIPE)
                weir_readable_close(rx->rs);
            else
                weir_readable_error(rx->rs, n);
            break;
        }
        for (int i = 0; i < n; i++) {
            if (rx->rs)
                weir_readable_enqueue(rx->rs, batch[i]);
            else
                weir_chunk_unref(&batch[i], weir_loop_slot(rx->loop));
        }
    }
    rx->filling = false;
    if (rx->doomed)
        free(rx);
}

static int rx_pull(struct weir_readable *rs, void *ctx)
{
    (void)rs;
    rx_fill(ctx);
    return 0;
}

static int rx_cancel(struct weir_readable *rs, void *ctx, int reason)
{
    struct weir_channel_rx *rx = ctx;

    (void)rs;
    (void)reason;
    if (!rx->done) {
        rx->done = true;
        weir_channel_cancel(rx->ch);
    }
    return 0;
}

static void rx_on_readable(struct weir_channel *ch, void *arg)
{
    (void)ch;
    rx_fill(arg);
}

static const struct weir_source_ops rx_ops = {
    .pull = rx_pull,
    .cancel = rx_cancel,
};

int weir_channel_rx_open(struct weir_channel_rx *rx, struct weir_readable **out)
{
    struct weir_readable_options ro = {
        .strategy = {.hwm = RX_HWM, .bytes = true},
        .slot = weir_loop_slot(rx->loop),
    };
    int rc = weir_readable_create(&rx->rs, &rx_ops, rx, &ro);

    if (rc == 0)
        *out = rx->rs;
    return rc;
}

void weir_channel_rx_destroy(struct weir_channel_rx *rx)
{
    struct weir_readable *rs = rx->rs;

    rx->rs = NULL;
    if (rs)
        weir_readable_destroy(rs);
    if (!rx->done) {
        rx->done = true;
        weir_channel_cancel(rx->ch);
    }
    /* Closing the stream inside rx_fill can end the pipe and bring us
     * here: rx_fill frees on its way out. */
    if (rx->filling)
        rx->doomed = true;
    else
        free(rx);
}

int weir_channel_pair(struct weir_channel_tx **txp,
                      struct weir_channel_rx **rxp, struct weir_loop *producer,
                      struct weir_loop *consumer, uint64_t hwm)
{
    struct weir_channel_tx *tx = calloc(1, sizeof(*tx));
    struct weir_channel_rx *rx = calloc(1, sizeof(*rx));
    struct weir_channel_options co = {
        .hwm = hwm,
        .on_readable = rx_on_readable,
        .on_writable = tx_on_writable,
    };
    int rc;

    if (!tx || !rx) {
        free(tx);
        free(rx);
        return -ENOMEM;
    }
    co.readable_arg = rx;
    co.writable_arg = tx;
    rc = weir_channel_create(&tx->ch, &co, producer, consumer);
    if (rc) {
        free(tx);
        free(rx);
        return rc;
    }
    rx->ch = tx->ch;
    tx->loop = producer;
    rx->loop = consumer;
    *txp = tx;
    *rxp = rx;
    return 0;
}
