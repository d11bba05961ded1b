/*
 * ctl.h - `weir status` and `weir top`: clients of a running weir's
 * control socket (run/control.c).
 */
#ifndef WEIR_DAEMON_CTL_H
#define WEIR_DAEMON_CTL_H

#include <stdbool.h>

/* argv[0] is "status" or "top"; conffile is what -c named before it
 * (NULL: none). Returns the exit status. */
int ctl_main(int argc, char *argv[], const char *conffile);

/* Sends req to the control socket at path and reads the whole reply:
 * 0 with *out malloc'd (NUL-terminated), or -errno. */
int ctl_ask(const char *path, const char *req, char **out);

#endif
