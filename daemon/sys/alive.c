/*
 * alive.c - counted liveness (alive.h).
 */
#include "sys/alive.h"

#include <assert.h>
#include <stddef.h>

void alive_init(struct alive *a, struct alive *parent,
                void (*on_idle)(struct alive *a))
{
    a->holds = 0;
    a->parent = parent;
    a->on_idle = on_idle;
}

void alive_hold(struct alive *a)
{
    if (a->holds++ == 0 && a->parent)
        alive_hold(a->parent);
}

void alive_drop(struct alive *a)
{
    struct alive *parent = a->parent;

    assert(a->holds > 0);
    if (--a->holds > 0)
        return;
    if (a->on_idle)
        a->on_idle(a);
    if (parent)
        alive_drop(parent);
}
