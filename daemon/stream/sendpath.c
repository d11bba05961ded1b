/*
 * sendpath.c - the send path policy, chosen once at start. Reads
 * WEIR_SENDPATH, an override for measuring: sendpath.h says what each
 * value selects.
 */
#include "stream/sendpath.h"

#include <stdlib.h>
#include <string.h>

static bool sendpath_is(const char *value)
{
    const char *e = getenv("WEIR_SENDPATH");

    return e && strcmp(e, value) == 0;
}

void sendpath_choose(struct sendpath *sp)
{
    *sp = (struct sendpath){
        .zero_copy = sendpath_is("splice"),
        .zero_copy_serve = !sendpath_is("stream"),
        /* A served file takes sendfile at any size: no buffer of ours and
         * no pipe per client (bench/results/serve.md); =splice a pipe per
         * client, =stream the stream path. */
        .splice_serve_max = 0,
        .serve_sendfile = !sendpath_is("splice"),
    };
}
