/*
 * timer_heap.h - the epoll engine's timers: a min-heap of requests by
 * deadline (a.tm.deadline), each knowing its place in it (a.tm.idx), kept
 * in the loop's struct loop_epoll. Owner thread of the loop only.
 * Private to lib/io.
 */
#ifndef WEIR_IO_TIMER_HEAP_H
#define WEIR_IO_TIMER_HEAP_H

#include "epoll_impl.h"

/* Adds r at its deadline. 0, or -ENOMEM when the heap cannot grow. */
int weir__timer_heap_push(struct loop_epoll *e, struct epl_req *r);

/* Takes r, which is in the heap, out of it. */
void weir__timer_heap_remove(struct loop_epoll *e, struct epl_req *r);

#endif
