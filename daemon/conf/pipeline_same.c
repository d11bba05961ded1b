/*
 * pipeline_same.c - see pipeline_same.h.
 */
#include "conf/pipeline_same.h"

#include <string.h>

static bool str_same(const char *a, const char *b)
{
    if (a == NULL || b == NULL)
        return a == b;
    return strcmp(a, b) == 0;
}

static bool addr_same(const struct weir_address *a,
                      const struct weir_address *b)
{
    if (a == NULL || b == NULL)
        return a == b;
    return a->kind == b->kind && a->role == b->role &&
           str_same(a->host, b->host) && a->ipv6 == b->ipv6 &&
           a->port == b->port && str_same(a->path, b->path) &&
           a->follow == b->follow && a->append == b->append &&
           a->on_full == b->on_full &&
           a->high_water_mark == b->high_water_mark &&
           a->max_clients == b->max_clients && a->backlog == b->backlog;
}

bool config_pipeline_same(const struct weir_pipeline *a,
                          const struct weir_pipeline *b)
{
    if (strcmp(a->name, b->name) != 0 || !addr_same(a->source, b->source) ||
        a->ntransforms != b->ntransforms || a->nsinks != b->nsinks ||
        a->high_water_mark != b->high_water_mark ||
        a->chunk_size != b->chunk_size || a->follow != b->follow ||
        a->read_from_end != b->read_from_end)
        return false;
    for (size_t i = 0; i < a->ntransforms; i++)
        if (strcmp(a->transforms[i].spec, b->transforms[i].spec) != 0)
            return false;
    for (size_t i = 0; i < a->nsinks; i++)
        if (!addr_same(a->sinks[i], b->sinks[i]))
            return false;
    return true;
}
