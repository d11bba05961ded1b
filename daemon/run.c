/*
 * run.c - placeholder for the data path, which is not wired in yet.
 */
#include "run.h"

#include <sysexits.h>

int daemon_run(struct weir_config *conf)
{
    log_errx("running pipelines is not built yet (%zu pipeline%s checked)",
             conf->npipelines, conf->npipelines == 1 ? "" : "s");
    config_free(conf);
    return EX_UNAVAILABLE;
}
