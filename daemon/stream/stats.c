/*
 * stats.c - what a stream's maker reads of it (stream.h), and what a
 * last stage adds to its results or asks of it (tail.h): one line each,
 * so that the makers see the stream's struct nowhere.
 */
#include "stream/stream_impl.h"

void *stream_owner(const struct stream *s)
{
    return s->owner;
}

struct stream_ctx *stream_ctx_of(const struct stream *s)
{
    return s->cx;
}

const struct stream_spec *stream_spec(const struct stream *s)
{
    return s->sp;
}

const char *stream_peer(const struct stream *s)
{
    return s->peer;
}

int64_t stream_started_ns(const struct stream *s)
{
    return s->t_start_ns;
}

bool stream_relays(const struct stream *s)
{
    return s->relay;
}

bool stream_zero_copy(const struct stream *s)
{
    return s->zero_copy;
}

uint64_t stream_src_size(const struct stream *s)
{
    return s->src_size;
}

bool stream_done(const struct stream *s)
{
    return s->done_seen;
}

int stream_src_rc(const struct stream *s)
{
    return s->src_rc;
}

int stream_sink_rc(const struct stream *s, unsigned i)
{
    return s->sink_rc[i];
}

uint64_t stream_sink_bytes(const struct stream *s, unsigned i)
{
    return s->sink_bytes[i];
}

const struct sink_stats *stream_sink_stats(const struct stream *s, unsigned i)
{
    return &s->ss[i];
}

int stream_xf_err(const struct stream *s)
{
    return s->xf_err;
}

bool stream_refused(const struct stream *s)
{
    return s->refused;
}

/* Relaxed: statistics; they pair with the workers' relaxed adds and
 * order nothing. */
uint64_t stream_bytes_in(const struct stream *s)
{
    return atomic_load_explicit(&s->bytes_in, memory_order_relaxed);
}

uint64_t stream_sink_out(const struct stream *s, unsigned i)
{
    return atomic_load_explicit(i == 0 ? &s->bytes_out : &s->live[i].out,
                                memory_order_relaxed);
}

struct sink_live *stream_sink_live(const struct stream *s, unsigned i)
{
    return &s->live[i];
}

const struct weir_jetstream_source_counters *
stream_src_js(const struct stream *s)
{
    return &s->src_js;
}

struct xf_live *stream_xf_live(const struct stream *s, unsigned k)
{
    return &s->xf_live[k];
}

/* The last stage's (tail.h), on the stream's worker. */

struct weir_loop *stream_loop(const struct stream *s)
{
    return s->home.loop;
}

void *stream_tail_state(const struct stream *s)
{
    return s->home.tail;
}

void stream_set_tail_state(struct stream *s, void *state)
{
    s->home.tail = state;
}

void stream_source_failed(struct stream *s, int rc)
{
    if (s->src_rc == 0)
        s->src_rc = rc;
}

void stream_sink_add(struct stream *s, unsigned i, uint64_t bytes,
                     uint64_t lost, uint64_t blocked_ns)
{
    s->sink_bytes[i] += bytes;
    s->ss[i].dropped += lost;
    s->ss[i].blocked_ns += blocked_ns;
    s->ss[i].teed = true;
}

void stream_sink_blocked(struct stream *s, unsigned i, uint64_t ns)
{
    /* Relaxed: a statistic (struct sink_live). */
    atomic_fetch_add_explicit(&s->live[i].blocked_ns, ns, memory_order_relaxed);
}

_Atomic uint64_t *stream_sink_counter(struct stream *s, unsigned i)
{
    return i == 0 ? &s->bytes_out : &s->live[i].out;
}
