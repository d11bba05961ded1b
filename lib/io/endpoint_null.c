/*
 * endpoint_null.c - the null sink: counts what it is given and drops it.
 */
#include "endpoint_base.h"

static int null_write(struct weir_writable *ws, void *ctx, struct weir_chunk c)
{
    struct weir_endpoint *ep = ctx;

    (void)ws;
    weir__ep_count(ep, c.len);
    weir_chunk_unref(&c, ep->slot);
    return 0;
}

static const struct weir_sink_ops null_stream = {.write = null_write};

static void null_stop(struct weir_endpoint *ep)
{
    ep->stopping = true;
}

static int null_acked(const struct weir_endpoint *ep, uint64_t *acked)
{
    *acked = ep->bytes;
    return 0;
}

static void null_close(struct weir_endpoint *ep)
{
    /* It never holds a write: the stream goes at once. */
    weir_writable_destroy(ep->ws);
    ep->ws = NULL;
}

static const struct ep_ops null_ops = {
    .sink = &null_stream,
    .stop = null_stop,
    .acked = null_acked,
    .close = null_close,
};

int weir_endpoint_null_sink(struct weir_endpoint **out, struct weir_loop *loop,
                            const struct weir_null_sink_options *o)
{
    static const struct weir_null_sink_options none;
    struct weir_endpoint *ep;
    int rc;

    if (!o)
        o = &none;
    ep =
        weir__ep_new(sizeof(*ep), &null_ops, loop, -1, false, o->counter, NULL);
    if (!ep)
        return -ENOMEM;
    rc = weir__ep_open_stream(ep, o->hwm ? o->hwm : 1u << 20);
    if (rc)
        return rc;
    *out = ep;
    return 0;
}
