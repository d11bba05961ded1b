/*
 * place.h - where a stream's stages run and which send path it takes:
 * one policy for the whole run, chosen once at start by placement_choose.
 *
 * By measurement (bench/results/placement.md): a whole stream on one
 * worker beats a stream split over two by 2.5-4x on two cores, with
 * transforms too; one file into one socket takes the stream path; a
 * served file's clients take sendfile at any size (bench/results/
 * serve.md: no buffer of ours per client). WEIR_PLACEMENT=split|same,
 * WEIR_XFORM_SIDE=source|sink, WEIR_SENDPATH=splice|stream and
 * WEIR_XFORM_HELPER=off override the defaults, for measuring.
 */
#ifndef WEIR_DAEMON_PLACE_H
#define WEIR_DAEMON_PLACE_H

#include <stdbool.h>
#include <stdint.h>

/* Where a split stream's transforms run: with the source, or with the
 * sinks; PLACE_SAME keeps a stream with transforms on one worker. */
enum xf_place { PLACE_SAME, PLACE_SOURCE, PLACE_SINK };

struct placement {
    bool split;                /* a stream without transforms: two workers */
    enum xf_place xf_side;     /* a stream with transforms */
    bool zero_copy;            /* weir pipe's file -> socket: splice stage */
    bool zero_copy_serve;      /* a served file: splice stage */
    uint64_t splice_serve_max; /* bigger served files take streams; 0: any */
    bool serve_sendfile;       /* a served file: sendfile, not a pipe */
    bool xform_helper;         /* gzip may lend members to another worker */
};

/* Reads the defaults and the environment once. */
void placement_choose(struct placement *pl);

#endif
