/*
 * sendpath.h - which send path a stream takes: one policy for the whole
 * run, chosen once at start by sendpath_choose.
 *
 * By measurement (bench/results/sendpath.md): one file into one socket
 * takes the stream path; a served file's clients take sendfile at any
 * size (bench/results/serve.md: no buffer of ours per client).
 *
 * WEIR_SENDPATH in the environment overrides the defaults, for measuring
 * the other paths (bench/serve_util.c, and the tests that cover them):
 *   splice  weir pipe's file -> socket and a served file take the splice
 *           stage (a pipe per client), not sendfile;
 *   stream  a served file takes the stream path, as any other source.
 */
#ifndef WEIR_DAEMON_SENDPATH_H
#define WEIR_DAEMON_SENDPATH_H

#include <stdbool.h>
#include <stdint.h>

struct sendpath {
    bool zero_copy;            /* weir pipe's file -> socket: splice stage */
    bool zero_copy_serve;      /* a served file: splice stage */
    uint64_t splice_serve_max; /* bigger served files take streams; 0: any */
    bool serve_sendfile;       /* a served file: sendfile, not a pipe */
};

/* Reads the defaults and WEIR_SENDPATH once. */
void sendpath_choose(struct sendpath *sp);

#endif
