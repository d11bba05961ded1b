/*
 * alive.h - counted liveness. An object is alive while something holds
 * it: an open socket, a stream in flight, a pending timer. Whoever lets go
 * last brings the count to zero, and the object's owner hears it through
 * on_idle. Nothing has to ask "are we done yet?" after every change, and
 * nothing that ends can forget to ask.
 *
 * Counts nest: an object holds its parent while it is itself held, so a
 * pipeline with a live stream keeps the run alive. Main thread only.
 */
#ifndef WEIR_DAEMON_ALIVE_H
#define WEIR_DAEMON_ALIVE_H

#include <stdbool.h>

struct alive {
    unsigned holds;
    struct alive *parent;
    /* Called when holds falls to 0, before the parent's hold is dropped.
     * It may free the object only if nothing on the way up names it. */
    void (*on_idle)(struct alive *a);
};

void alive_init(struct alive *a, struct alive *parent,
                void (*on_idle)(struct alive *a));
void alive_hold(struct alive *a);
void alive_drop(struct alive *a);

static inline bool alive_held(const struct alive *a)
{
    return a->holds > 0;
}

#endif
