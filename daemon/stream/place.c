/*
 * place.c - the placement policy (place.h), chosen once at start.
 */
#include "stream/place.h"

#include <stdlib.h>
#include <string.h>

static bool env_is(const char *name, const char *value)
{
    const char *e = getenv(name);

    return e && strcmp(e, value) == 0;
}

void placement_choose(struct placement *pl)
{
    *pl = (struct placement){
        .split = env_is("WEIR_PLACEMENT", "split"),
        .xf_side = PLACE_SAME,
        .zero_copy = env_is("WEIR_SENDPATH", "splice"),
        .zero_copy_serve = !env_is("WEIR_SENDPATH", "stream"),
        /* A served file takes sendfile at any size: no buffer of ours and
         * no pipe per client (bench/results/serve.md); =splice a pipe per
         * client, =stream the stream path. */
        .splice_serve_max = 0,
        .serve_sendfile = !env_is("WEIR_SENDPATH", "splice"),
        .xform_helper = !env_is("WEIR_XFORM_HELPER", "off"),
    };
    if (env_is("WEIR_PLACEMENT", "same"))
        return;
    if (env_is("WEIR_XFORM_SIDE", "source"))
        pl->xf_side = PLACE_SOURCE;
    else if (env_is("WEIR_XFORM_SIDE", "sink") || pl->split)
        pl->xf_side = PLACE_SINK;
}
