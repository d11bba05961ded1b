/*
 * pipe_args.h - `weir pipe [OPTIONS] SOURCE SINK [SINK...]` (getopt_long): one
 * pipeline, named "pipe", from the command line, checked exactly like a
 * pipeline of a config file; errors name the argument ("argument 3: ...").
 */
#ifndef WEIR_DAEMON_PIPE_ARGS_H
#define WEIR_DAEMON_PIPE_ARGS_H

#include <stdio.h>

#include "conf/config.h"

/*
 * argv[first] is the word after "pipe". Returns 0 with *out set; EX_USAGE
 * when the words do not form a pipe command (missing sink, unknown option),
 * after printing what is wrong; EX_CONFIG when they do but a value is bad
 * (an address, a size, a transform, an unreadable file), after reporting
 * every such error. For --help it prints the usage and returns 0 with
 * *out NULL.
 */
int pipe_args_parse(int argc, char **argv, int first, struct weir_config **out);

void pipe_args_usage(FILE *f);

#endif
