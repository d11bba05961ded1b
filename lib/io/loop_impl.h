/*
 * loop_impl.h - the loop's private state and the backend interface.
 *
 * loop.c holds what every backend shares: the run loop, the cross-thread
 * inbox of tasks, the deferred work, the doorbell's eventfd, and the choice
 * of a backend when a loop is created. A backend owns the kernel side: its
 * setup, the submission and wait of one turn, the dispatch of completions,
 * and the operations of weir/loop.h. Two backends sit side by side, each a
 * const table of functions: io_uring (uring.c) and epoll (epoll.c). Every
 * loop picks one at creation, so one process may run both (a loop whose
 * io_uring setup failed for lack of locked memory beside one that got it).
 */
#ifndef WEIR_LOOP_IMPL_H
#define WEIR_LOOP_IMPL_H

#include <liburing.h>
#include <stdalign.h>
#include <stdatomic.h>

#include "weir/loop.h"
#include "weir/ring.h"

/* io_uring state. */
struct loop_uring {
    struct io_uring ring;
    struct io_uring_sqe *last_sqe; /* for weir_loop_link, this turn only */
    bool defer_taskrun;
    /* A read of the shared eventfd always in flight, and an op whose
     * address is the user_data of IORING_OP_MSG_RING messages aimed at
     * this loop. */
    uint64_t efd_value;
    struct weir_op efd_op;
    struct weir_op bell_op;
};

struct epl_req;
struct epl_fd;

/* epoll state (epoll.c). */
struct loop_epoll {
    int epfd;
    struct epl_fd *fds; /* indexed by fd number */
    unsigned nfds;
    struct epl_req *free_reqs; /* spare request records */
    struct epl_req **blocks;   /* every record block, for the exit */
    unsigned nblocks;
    struct epl_req *done_head; /* results waiting for the next dispatch */
    struct epl_req **done_tail;
    struct epl_req **timers; /* min-heap by deadline */
    unsigned ntimers, timers_cap;
    struct epl_req *last; /* for weir_loop_link */
    uint32_t nwait;       /* requests waiting on an fd */
    bool pwait2_missing;  /* epoll_pwait2 refused: millisecond waits */
    enum weir_loop_file_reads file_reads;
    /* Reads handed to the I/O threads and not yet posted back; the
     * threads write it, the owner reads it at exit. */
    _Atomic unsigned pool_jobs;
};

struct loop_backend;

struct weir_loop {
    /* Owner only. */
    const struct loop_backend *be;
    enum weir_engine engine;
    const char *engine_reason;
    unsigned slot;
    enum weir_doorbell bell;
    bool stopped;
    void *data;
    uint32_t npending;
    /* Turns run: written by the owner only, read by anyone (relaxed: a
     * statistic that orders nothing). */
    _Atomic uint64_t turns;
    struct weir_reap *reap_head;
    struct weir_reap **reap_tail;

    /* The doorbell every loop listens on: an eventfd written by other
     * threads (and, between io_uring loops, IORING_OP_MSG_RING). */
    int efd;

    union {
        struct loop_uring u;
        struct loop_epoll e;
    };

    /*
     * The inbox: a stack of posted tasks, or LOOP_SLEEPING when the owner
     * announced it is about to sleep with nothing queued. Written by any
     * thread; on its own line so posters do not disturb the owner's fields.
     */
    alignas(WEIR_CACHELINE) _Atomic uintptr_t inbox;
};

#define LOOP_SLEEPING ((uintptr_t)1)

/*
 * A backend. Operations have the signatures of the weir_loop_<verb>
 * functions; weir_loop_<verb> in loop.c calls loop->be->verb.
 */
struct loop_backend {
    /* Sets up the kernel side for the calling thread; loop->efd is open. */
    int (*init)(struct weir_loop *loop, const struct weir_loop_options *opts);
    void (*exit)(struct weir_loop *loop);
    /* True when no completion is waiting to be dispatched. */
    bool (*idle)(struct weir_loop *loop);
    /* Submits what this turn queued; with `block`, sleeps until at least
     * one completion or a doorbell. Then dispatches the completions.
     * Returns 0 or a fatal -errno. */
    int (*turn)(struct weir_loop *loop, bool block);
    /* Hands queued requests to the kernel without waiting (a loop that
     * stops must not strand the doorbells it queued for others). */
    void (*flush)(struct weir_loop *loop);
    /* Wakes `target`, a loop of the same backend, from `self`'s turn;
     * false when it cannot and the eventfd must be written. May be NULL. */
    bool (*ring)(struct weir_loop *target, struct weir_loop *self);

    int (*nop)(struct weir_loop *loop, struct weir_op *op);
    int (*read)(struct weir_loop *loop, struct weir_op *op, int fd, void *buf,
                uint32_t len, uint64_t off);
    int (*write)(struct weir_loop *loop, struct weir_op *op, int fd,
                 const void *buf, uint32_t len, uint64_t off);
    int (*readv)(struct weir_loop *loop, struct weir_op *op, int fd,
                 const struct iovec *iov, unsigned n, uint64_t off);
    int (*writev)(struct weir_loop *loop, struct weir_op *op, int fd,
                  const struct iovec *iov, unsigned n, uint64_t off);
    int (*recv)(struct weir_loop *loop, struct weir_op *op, int fd, void *buf,
                uint32_t len, int flags);
    int (*send)(struct weir_loop *loop, struct weir_op *op, int fd,
                const void *buf, uint32_t len, int flags);
    int (*sendmsg)(struct weir_loop *loop, struct weir_op *op, int fd,
                   const struct msghdr *msg, int flags);
    int (*accept)(struct weir_loop *loop, struct weir_op *op, int fd,
                  struct sockaddr *addr, socklen_t *addrlen, int flags);
    int (*accept_multishot)(struct weir_loop *loop, struct weir_op *op, int fd,
                            int flags);
    int (*connect)(struct weir_loop *loop, struct weir_op *op, int fd,
                   const struct sockaddr *addr, socklen_t addrlen);
    int (*splice)(struct weir_loop *loop, struct weir_op *op, int fd_in,
                  int64_t off_in, int fd_out, int64_t off_out, uint32_t len,
                  unsigned flags);
    int (*poll)(struct weir_loop *loop, struct weir_op *op, int fd,
                unsigned mask);
    int (*close)(struct weir_loop *loop, struct weir_op *op, int fd);
    void (*link)(struct weir_loop *loop);
    int (*cancel)(struct weir_loop *loop, struct weir_op *op);
    int (*timer_start)(struct weir_loop *loop, struct weir_timer *t,
                       uint64_t ns);
    int (*timer_stop)(struct weir_loop *loop, struct weir_timer *t);
};

extern const struct loop_backend weir__loop_uring_backend;
extern const struct loop_backend weir__loop_epoll_backend;

/* Completes `op` with `res`: the bookkeeping every backend shares. */
void weir__loop_complete(struct weir_loop *loop, struct weir_op *op, int res,
                         uint32_t flags);

/* Marks `op` pending and counts it. */
static inline void loop_op_started(struct weir_loop *loop, struct weir_op *op)
{
    op->pending = true;
    loop->npending++;
}

#endif /* WEIR_LOOP_IMPL_H */
