/*
 * signals.h - termination, reload and status signals as readable data for the
 * main loop.
 */
#ifndef WEIR_DAEMON_SIGNALS_H
#define WEIR_DAEMON_SIGNALS_H

#include <stdbool.h>
#include <stddef.h>

/* Ignores SIGPIPE, blocks SIGTERM, SIGINT, SIGHUP and SIGUSR1 in the calling
 * thread (call it before starting threads) and returns a signalfd for them, or
 * -errno.
 */
int signals_block(void);

/* The size of one read from the signalfd, and the name of what it read. */
size_t signals_info_size(void);
const char *signals_name(const void *siginfo);
/* SIGHUP: reload; the others stop. */
bool signals_is_reload(const void *siginfo);
/* The signal's number. */
int signals_number(const void *siginfo);
/* SIGUSR1: a status line in the log. */
bool signals_is_status(const void *siginfo);

#endif
