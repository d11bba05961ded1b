/*
 * fuzz_pipe_args.c - libFuzzer target: the words of `weir pipe ...`
 * (pipe_args_parse with getopt_long), one word per NUL-separated piece
 * of the input.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sysexits.h>

#include "conf/pipe_args.h"

#define MAX_WORDS 64

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    log_init(LOG_LEVEL_ERROR, false);
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *buf = malloc(size + 1), *argv[MAX_WORDS + 3];
    struct weir_config *conf = NULL;
    int argc = 2, rc;

    if (buf == NULL)
        return 0;
    memcpy(buf, data, size);
    buf[size] = '\0';
    argv[0] = "weir";
    argv[1] = "pipe";
    for (char *p = buf; p <= buf + size && argc < MAX_WORDS + 2;
         p += strlen(p) + 1)
        argv[argc++] = p;
    argv[argc] = NULL;
    rc = pipe_args_parse(argc, argv, 2, &conf);
    if (rc != 0 && rc != EX_USAGE && rc != EX_CONFIG && rc != EX_OSERR)
        abort();
    if (rc != 0 && conf != NULL)
        abort();
    if (conf != NULL &&
        (conf->npipelines != 1 || !conf->oneshot ||
         conf->pipelines[0]->source == NULL || conf->pipelines[0]->nsinks == 0))
        abort();
    config_free(conf);
    free(buf);
    return 0;
}
