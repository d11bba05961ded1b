/*
 * timer_heap.c - the epoll engine's timers: a binary min-heap of requests
 * by deadline, in an array that doubles as it fills and is freed with the
 * loop (epoll.c). The loop waits until the root's deadline; a timer
 * stopped or fired leaves from wherever it sits, its place kept in the
 * request.
 */
#include <errno.h>
#include <stdlib.h>

#include "timer_heap.h"

static bool heap_less(struct epl_req *a, struct epl_req *b)
{
    return a->a.tm.deadline < b->a.tm.deadline;
}

static void heap_set(struct loop_epoll *e, unsigned i, struct epl_req *r)
{
    e->timers[i] = r;
    r->a.tm.idx = i;
}

static void heap_up(struct loop_epoll *e, unsigned i)
{
    struct epl_req *r = e->timers[i];

    while (i > 0 && heap_less(r, e->timers[(i - 1) / 2])) {
        heap_set(e, i, e->timers[(i - 1) / 2]);
        i = (i - 1) / 2;
    }
    heap_set(e, i, r);
}

static void heap_down(struct loop_epoll *e, unsigned i)
{
    struct epl_req *r = e->timers[i];

    for (;;) {
        unsigned c = 2 * i + 1;

        if (c >= e->ntimers)
            break;
        if (c + 1 < e->ntimers && heap_less(e->timers[c + 1], e->timers[c]))
            c++;
        if (!heap_less(e->timers[c], r))
            break;
        heap_set(e, i, e->timers[c]);
        i = c;
    }
    heap_set(e, i, r);
}

int weir__timer_heap_push(struct loop_epoll *e, struct epl_req *r)
{
    if (e->ntimers == e->timers_cap) {
        unsigned cap = e->timers_cap ? 2 * e->timers_cap : 16;
        struct epl_req **t = realloc(e->timers, cap * sizeof(*t));

        if (!t)
            return -ENOMEM;
        e->timers = t;
        e->timers_cap = cap;
    }
    e->timers[e->ntimers] = r;
    heap_up(e, e->ntimers++);
    return 0;
}

void weir__timer_heap_remove(struct loop_epoll *e, struct epl_req *r)
{
    unsigned i = r->a.tm.idx;
    struct epl_req *last = e->timers[--e->ntimers];

    if (i == e->ntimers)
        return;
    heap_set(e, i, last);
    heap_up(e, i);
    heap_down(e, last->a.tm.idx);
}
