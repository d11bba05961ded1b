/*
 * place.c - the placement policy (place.h), chosen once at start.
 */
#include "stream/place.h"

#include <stdlib.h>
#include <string.h>

/* A served file of at most this size takes the splice stage, which holds
 * no user memory; bigger ones stream (bench/results/placement.md). */
#define SPLICE_SERVE_MAX (4ull << 20)

static bool env_is(const char *name, const char *value)
{
    const char *e = getenv(name);

    return e && strcmp(e, value) == 0;
}

void placement_choose(struct placement *pl)
{
    bool sendpath = getenv("WEIR_SENDPATH") != NULL;

    *pl = (struct placement){
        .split = env_is("WEIR_PLACEMENT", "split"),
        .xf_side = PLACE_SAME,
        .zero_copy = env_is("WEIR_SENDPATH", "splice"),
        .zero_copy_serve = !env_is("WEIR_SENDPATH", "stream"),
        /* WEIR_SENDPATH=splice lifts the size limit, for measuring. */
        .splice_serve_max = sendpath ? 0 : SPLICE_SERVE_MAX,
        .xform_helper = !env_is("WEIR_XFORM_HELPER", "off"),
    };
    if (env_is("WEIR_PLACEMENT", "same"))
        return;
    if (env_is("WEIR_XFORM_SIDE", "source"))
        pl->xf_side = PLACE_SOURCE;
    else if (env_is("WEIR_XFORM_SIDE", "sink") || pl->split)
        pl->xf_side = PLACE_SINK;
}
