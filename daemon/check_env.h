/*
 * check_env.h - `weir --check`'s look at the system the config will run
 * on (check_env.c).
 */
#ifndef WEIR_DAEMON_CHECK_ENV_H
#define WEIR_DAEMON_CHECK_ENV_H

#include "conf/config.h"

/* Adds every problem to diag as an error at its FILE:LINE. */
void check_env(const struct weir_config *conf, struct conf_diag *diag);

#endif
