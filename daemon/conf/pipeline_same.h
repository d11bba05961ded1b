/*
 * pipeline_same.h - whether a reload leaves a pipeline as it runs.
 */
#ifndef WEIR_DAEMON_PIPELINE_SAME_H
#define WEIR_DAEMON_PIPELINE_SAME_H

#include <stdbool.h>

#include "conf/config.h"

/*
 * Whether two checked pipelines define the same thing: every key compared
 * field by field, addresses by their parsed values (kind, host, port,
 * path and each option, defaults filled in), not by how they were
 * written; where they were written (FILE:LINE) does not count.
 */
bool config_pipeline_same(const struct weir_pipeline *a,
                          const struct weir_pipeline *b);

#endif
