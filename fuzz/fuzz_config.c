/*
 * fuzz_config.c - libFuzzer target: weir.conf text through the INI front
 * end and the whole-config checks (config_load_string), as --check and
 * every start and reload run them.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "conf/config.h"

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
    char *text = malloc(size + 1);
    struct weir_config *conf;
    unsigned errors;

    if (text == NULL)
        return 0;
    memcpy(text, data, size);
    text[size] = '\0';
    /* Relative paths resolve against a directory that does not exist, so
     * no input names a file by accident. */
    conf = config_load_string(text, "fuzz.conf", "/nonexistent/weir-fuzz",
                              &errors);
    if ((conf == NULL) != (errors > 0))
        abort();
    config_free(conf);
    free(text);
    return 0;
}
