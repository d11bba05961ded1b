/*
 * listenfds.h - socket activation: the listening sockets systemd passed
 * (LISTEN_FDS, from a weir.socket unit), matched to the config's
 * tcp-listen and unix-listen addresses so that weir uses them instead of
 * binding its own.
 *
 * The set is taken once at startup, before any other fd is opened, and
 * kept until exit: a reload that brings a listen address back finds its
 * socket again. A match hands out a duplicate, which the caller owns and
 * closes like a socket it bound itself. Main thread only.
 */
#ifndef WEIR_DAEMON_LISTENFDS_H
#define WEIR_DAEMON_LISTENFDS_H

#include <stdbool.h>
#include <stddef.h>

#include "conf/config.h"

struct listenfds;

/* What the unused report says about one passed socket. */
struct listenfd_info {
    int fd;
    char name[64];  /* FileDescriptorName= of the .socket unit, or "unknown" */
    char addr[128]; /* its bound address: HOST:PORT, [V6]:PORT, unix:PATH */
};

/*
 * Reads LISTEN_FDS/LISTEN_PID/LISTEN_FDNAMES (sd_listen_fds_with_names),
 * removes them from the environment and marks the fds close-on-exec.
 * Without them, or when LISTEN_PID names another process, the set is
 * empty. Returns 0 with a new set in *out, or -errno (-ENOMEM, or what
 * libsystemd reports for malformed variables).
 */
int listenfds_take(struct listenfds **out);

/* How many sockets were passed. */
size_t listenfds_count(const struct listenfds *set);

/*
 * A duplicate (close-on-exec) of the passed listening stream socket bound
 * to `addr`, a tcp-listen or unix-listen address, or -ENOENT when none is
 * (any other kind of address, too).
 * tcp: the same port and the same address as HOST resolves to; 0.0.0.0
 * also matches a dual-stack [::] socket (systemd's ListenStream=PORT), and
 * an IPv4 host its v4-mapped form. unix: the same path. The socket counts
 * as used. Other negative values are -errno from resolving HOST or dup.
 */
int listenfds_match(struct listenfds *set, const struct weir_address *addr);

/*
 * The passed sockets that no listenfds_match has used: fills up to max
 * entries of out and returns how many there are in all. The run path logs
 * each as an error after opening its listeners.
 */
size_t listenfds_unused(const struct listenfds *set, struct listenfd_info *out,
                        size_t max);

/* Closes the passed sockets (not the duplicates handed out). */
void listenfds_free(struct listenfds *set);

#endif
