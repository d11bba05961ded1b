/*
 * sockaddr.h - addresses of the config as socket addresses, and socket
 * addresses as text for log lines.
 */
#ifndef WEIR_DAEMON_SOCKADDR_H
#define WEIR_DAEMON_SOCKADDR_H

#include <stddef.h>
#include <sys/socket.h>

#include "conf/config.h"

/* The address a tcp/unix (or -listen) address names: the first that
 * HOST resolves to. Returns 0 or -errno (-EHOSTUNREACH: no address). */
int sockaddr_resolve(const struct weir_address *a, struct sockaddr_storage *ss,
                     socklen_t *len);

/* --check: every tcp address (source or sink) whose host does not
 * resolve now gets a warning line, FILE:LINE first; a name that does not
 * resolve is an outage at run time, not an error. Held in diag. */
void sockaddr_check_names(const struct weir_config *conf,
                          struct conf_diag *diag);

/* HOST:PORT, [V6]:PORT or unix:PATH. */
void sockaddr_format(const struct sockaddr *sa, socklen_t len, char *buf,
                     size_t size);

#endif
