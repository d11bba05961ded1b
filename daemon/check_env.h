/*
 * check_env.h - `weir --check`'s look at the system the config will run
 * on (check_env.c).
 */
#ifndef WEIR_DAEMON_CHECK_ENV_H
#define WEIR_DAEMON_CHECK_ENV_H

#include "conf/config.h"

/* Every problem as FILE:LINE: message on the log; returns their count. */
unsigned check_env(const struct weir_config *conf);

#endif
