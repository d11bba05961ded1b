/*
 * budget.c - the promises of client streams on their worker's pool
 * (budget.h).
 */
#include "stream/budget.h"

#include <time.h>

#include "stream/stream_impl.h"
#include "sys/log.h"
#include "weir/pool.h"

/* Buffers promised on this worker's pool, and the refusals not yet told. */
static _Thread_local uint32_t promised;
static _Thread_local uint64_t refused, refused_told;
static _Thread_local int64_t told_at;

static uint32_t chunks(uint64_t bytes, uint64_t chunk)
{
    return (uint32_t)((bytes + chunk - 1) / chunk);
}

uint32_t budget_of(const struct stream *s)
{
    const struct weir_pipeline *p = s->sp->p;
    uint64_t chunk = p->chunk_size;
    unsigned n = s->sp->nsinks;
    bool tee = n > 1 || p->sinks[0]->on_full != ON_FULL_BLOCK;
    /* The source's read-ahead, R of the formula. */
    uint32_t b = s->src_regular ? 5 : 3;

    for (unsigned i = 0; i < n; i++)
        b += chunks(stream_sink_hwm(p, i), chunk) + (tee ? 1 : 0);
    b += 2 * (uint32_t)p->ntransforms;
    if (s->relay)
        b += chunks(p->high_water_mark, chunk) + 3;
    /* A plain file cannot fill more buffers than it has bytes: the
     * read-ahead and the queues together hold at most the file, plus
     * one buffer each way for TLS records. */
    if (s->src_size && p->ntransforms == 0 && !s->relay) {
        uint32_t cap = chunks(s->src_size, chunk) + n + 2;

        if (cap < b)
            b = cap;
    }
    return b;
}

static void tell(const struct stream *s, uint32_t want, uint32_t cap)
{
    struct timespec ts;
    int64_t now;

    refused++;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    now = (int64_t)ts.tv_sec;
    if (told_at && now - told_at < 1)
        return;
    told_at = now;
    log_warnx("pipeline %s: refused client %s: the buffer pool of worker %u "
              "is promised to running streams (%u of %u buffers, this one "
              "needs %u; %llu refused since the last line)",
              s->sp->p->name, s->peer, s->home.worker, promised, cap, want,
              (unsigned long long)(refused - refused_told));
    refused_told = refused;
}

bool budget_take(struct stream *s)
{
    struct stream_home *h = &s->home;
    struct weir_pool *pool = weir_worker_pool();
    struct weir_pool_stats st;
    uint32_t want = budget_of(s);

    if (!pool)
        return true;
    weir_pool_stats(pool, &st);
    if (promised + want > st.allocated) {
        tell(s, want, st.allocated);
        return false;
    }
    promised += want;
    h->budget = want;
    return true;
}

void budget_give(struct stream *s)
{
    struct stream_home *h = &s->home;

    promised -= h->budget;
    h->budget = 0;
}
