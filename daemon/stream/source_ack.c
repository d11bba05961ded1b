/*
 * source_ack.c - see source_ack.h.
 */
#include "stream/source_ack.h"

#include "stream/checkpoint.h"
#include "stream/stream_impl.h"

void source_ack_sample(struct stream *s, bool final)
{
    struct stream_home *h = &s->home;
    uint64_t a;

    if (s->sp->p->source->kind != ADDR_JETSTREAM || !h->src || !h->sinks ||
        !ckpt_acked_source(s, final, &a))
        return;
    (void)weir_jetstream_source_ack(h->src, a);
}

/* Without transforms the stage's input is the source's stream, byte for
 * byte. With them, only a stream at rest tells (checkpoint.c's rule):
 * the transforms synced after the source's last byte, every client has
 * all the stage was given, and nothing more came since the last watch. */
void stream_source_acked_out(struct stream *s, uint64_t acked, uint64_t made)
{
    struct stream_home *h = &s->home;
    struct ckpt_track *t = &s->ck_track;
    uint64_t in;

    if (s->sp->p->source->kind != ADDR_JETSTREAM || !h->src)
        return;
    if (s->sp->p->ntransforms == 0) {
        (void)weir_jetstream_source_ack(h->src, acked);
        return;
    }
    in = weir_endpoint_bytes(h->src);
    if (acked != made || h->synced_bytes != in || made != t->rest_out) {
        t->rest = 0;
        t->rest_out = made;
        return;
    }
    if (t->rest++ >= 1)
        (void)weir_jetstream_source_ack(h->src, in);
}

void stream_source_hold(struct stream *s, bool hold)
{
    if (s->sp->p->source->kind == ADDR_JETSTREAM && s->home.src)
        weir_jetstream_source_hold(s->home.src, hold);
}
