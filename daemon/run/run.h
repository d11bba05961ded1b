/*
 * run.h - the plug point between the config and the data path.
 */
#ifndef WEIR_DAEMON_RUN_H
#define WEIR_DAEMON_RUN_H

#include <stdbool.h>

#include "conf/config.h"

/*
 * Runs the pipelines of a checked config until they end (conf->oneshot) or
 * the daemon is told to stop. SIGHUP reads `conffile` again (NULL: the
 * config came from elsewhere, nothing to read); `verbose` keeps the debug
 * level across reloads. Returns the process's exit status. Takes
 * ownership of conf.
 */
int daemon_run(struct weir_config *conf, const char *conffile, bool verbose);

#endif
