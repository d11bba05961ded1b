/*
 * loop_impl.h - the loop's private state and the backend interface.
 *
 * loop.c holds what any backend shares: the run loop, the cross-thread
 * inbox of tasks, the deferred work. A backend (uring.c today) owns the
 * kernel side: setup, the submission and wait of one turn, the dispatch of
 * completions, the doorbell, and the operations of weir/loop.h. An epoll
 * backend would implement the same loop_backend_* functions and the same
 * weir_loop_<verb> operations, completing them from readiness events.
 */
#ifndef WEIR_LOOP_IMPL_H
#define WEIR_LOOP_IMPL_H

#include <liburing.h>
#include <stdalign.h>

#include "weir/loop.h"
#include "weir/ring.h"

struct weir_loop {
    /* Owner only. */
    struct io_uring ring;
    struct io_uring_sqe *last_sqe; /* for weir_loop_link, this turn only */
    unsigned slot;
    enum weir_doorbell bell;
    bool stopped;
    bool defer_taskrun;
    void *data;
    uint32_t npending;
    struct weir_reap *reap_head;
    struct weir_reap **reap_tail;

    /* The doorbell every loop listens on: an eventfd with a read always in
     * flight (written by other threads), and an op whose address is the
     * user_data of IORING_OP_MSG_RING messages aimed at this loop. */
    int efd;
    uint64_t efd_value;
    struct weir_op efd_op;
    struct weir_op bell_op;

    /*
     * The inbox: a stack of posted tasks, or LOOP_SLEEPING when the owner
     * announced it is about to sleep with nothing queued. Written by any
     * thread; on its own line so posters do not disturb the owner's fields.
     */
    alignas(WEIR_CACHELINE) _Atomic uintptr_t inbox;
};

#define LOOP_SLEEPING ((uintptr_t)1)

/* Backend: sets up the kernel side for the calling thread. */
int loop_backend_init(struct weir_loop *loop,
                      const struct weir_loop_options *opts);
void loop_backend_exit(struct weir_loop *loop);

/* Backend: true when no completion is waiting to be dispatched. */
bool loop_backend_idle(struct weir_loop *loop);

/* Backend: submits what this turn queued; with `block`, sleeps until at
 * least one completion. Then dispatches the completions. Returns 0 or a
 * fatal -errno. */
int loop_backend_turn(struct weir_loop *loop, bool block);

/* Backend: hands queued requests to the kernel without waiting (a loop
 * that stops must not strand the doorbells it queued for others). */
void loop_backend_flush(struct weir_loop *loop);

/* Backend: wakes `target`, which announced it sleeps. Any thread; `self`
 * is the caller's running loop or NULL. */
void loop_backend_ring(struct weir_loop *target, struct weir_loop *self);

/* Completes `op` with `res`: the bookkeeping every backend shares. */
void loop_complete(struct weir_loop *loop, struct weir_op *op, int res,
                   uint32_t flags);

#endif /* WEIR_LOOP_IMPL_H */
