/*
 * port_holder.h - which process listens on a TCP port, for messages that
 * name it ("127.0.0.1:8080 is in use by pid 812 (nginx)"). Reading /proc
 * costs far more than a bind: look only after a bind said EADDRINUSE.
 */
#ifndef WEIR_DAEMON_PORT_HOLDER_H
#define WEIR_DAEMON_PORT_HOLDER_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* The pid of the process holding the listening socket of port (IPv4 or
 * IPv6), its command name into name; 0 when none was found. */
pid_t port_holder(uint16_t port, char *name, size_t len);

#endif
