/*
 * count.c - what the run has running: its live streams and its
 * pipelines, counted over the pipelines it owns; whether it is ready.
 */
#include "run/run_impl.h"

unsigned run_streams(const struct run *r)
{
    const struct weir_list *pos;
    unsigned n = 0;

    for (pos = r->pls.next; pos != &r->pls; pos = pos->next)
        n +=
            pipeline_streams(weir_list_entry(pos, const struct pipeline, link));
    return n;
}

unsigned run_pipelines(const struct run *r)
{
    const struct weir_list *pos;
    unsigned n = 0;

    for (pos = r->pls.next; pos != &r->pls; pos = pos->next)
        n += !weir_list_entry(pos, const struct pipeline, link)->draining;
    return n;
}

bool run_ready(const struct run *r)
{
    return r->started && !r->stopping;
}
