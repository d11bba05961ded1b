/*
 * listener.h - tcp-listen and unix-listen: a listening socket on the main
 * loop with one accept in flight. It knows nothing of streams: each
 * accepted connection goes to the on_client hook its owner installed, and
 * the owner decides what it becomes.
 *
 * A listener holds its owner's liveness (sys/alive.h) from the moment it
 * has a socket until the socket is closed and no accept is pending, so
 * the owner hears through its count when the last one is gone. Main
 * thread only.
 */
#ifndef WEIR_DAEMON_LISTENER_H
#define WEIR_DAEMON_LISTENER_H

#include <stdbool.h>
#include <sys/socket.h>

#include "conf/config.h"
#include "serve/listenfds.h"
#include "sys/alive.h"
#include "weir/endpoint.h"
#include "weir/loop.h"
#include "weir/util.h"

struct listener;

/*
 * A connection on l: fd is the caller's to keep or close; peer names it
 * for log lines. It is also called for a connection accepted while the
 * listener was closing (l->closing): when l had handed its socket over
 * (l->fd < 0), the connection belongs to whoever serves the address now.
 */
typedef void (*listener_client_fn)(struct listener *l, int fd,
                                   const char *peer);

struct listener {
    const struct weir_address *addr;
    const char *name; /* the owner's, for log lines */
    struct weir_loop *loop;
    struct alive *alive; /* the owner's: held while the socket is */
    listener_client_fn on_client;
    void *owner;
    int fd;
    /* Set on a TCP listening socket, and so on every connection it
     * accepts, which inherits them (with notsent_lowat below). */
    struct weir_tcp_options tcp;
    /* What they got: the congestion control read back, and the
     * notsent_lowat set (addr's, or chosen by that control). */
    char congestion[16];
    unsigned notsent_lowat;
    struct weir_op op;
    struct sockaddr_storage peer;
    socklen_t peerlen;
    bool closing;
    bool held; /* holds alive */
    /* Accepts paused after running out of fds or memory (listener.c). */
    struct weir_timer pause;
    int64_t paused_since; /* the episode's start; 0: none */
    unsigned long paused_refusals;
    /* Descriptors held while accepting and let go for the accepted
     * client's stream (listener.c): nspare of spare[] are open. */
    int spare[3];
    unsigned nspare;
    bool systemd; /* passed by systemd: its path is not ours to unlink */
    /* While a reload is prepared: the listener of a pipeline being
     * replaced whose socket this one takes over at the commit. */
    struct listener *from;
};

/* Gets l a listening socket: one systemd passed in lfds (may be NULL),
 * else bound here. Returns 0 or -errno. */
int listener_open(struct listener *l, struct listenfds *lfds);
/* Starts accepting. */
void listener_arm(struct listener *l);
/* Stops accepting and closes the socket (once a pending accept is back). */
void listener_close(struct listener *l);
/* Closes the socket of a listener whose loop is gone (at exit). */
void listener_free(struct listener *l);
/* Whether a and b name the same socket (kind, path, resolved address). */
bool listener_same_addr(const struct weir_address *a,
                        const struct weir_address *b);
/* Takes over from->fd at a reload's commit; from stops accepting. */
void listener_take_over(struct listener *l, struct listener *from);

#endif
