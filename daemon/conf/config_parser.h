/*
 * config_parser.h - what the INI reader (config_parse.c) and the key
 * setters (config_keys.c) share; private to those two files.
 */
#ifndef WEIR_DAEMON_CONFIG_PARSER_H
#define WEIR_DAEMON_CONFIG_PARSER_H

#include <stdio.h>

#include "conf/config.h"

enum section {
    SECTION_NONE, /* before the first header */
    SECTION_DAEMON,
    SECTION_PIPELINE,
    SECTION_IGNORED, /* after a bad header: its keys are not checked */
};

struct parser {
    struct weir_config *conf;
    struct conf_diag diag;
    FILE *in;
    char *line; /* the physical line being handed to inih */
    size_t cap, len, off;
    unsigned lineno;
    enum section section;
    struct weir_pipeline *pipeline;
};

static inline struct conf_loc here(const struct parser *p)
{
    return (struct conf_loc){p->conf->file, p->lineno};
}

#define PARSE_ERROR(p, ...)                                                    \
    do {                                                                       \
        struct conf_loc loc_ = here(p);                                        \
        config_error(&(p)->diag, &loc_, __VA_ARGS__);                          \
    } while (0)

struct key_def {
    enum section section;
    const char *name;
    /* source and sink take even an empty value (and report it
     * themselves), so the pipeline counts them and does not also report
     * "no source"; every other key with no value is refused before this. */
    bool takes_empty;
    void (*set)(struct parser *p, const char *value);
};

/* Every key, ended by a row whose name is NULL. */
extern const struct key_def config_keys[];

#endif
