/*
 * uring.c - the io_uring engine of the event loop.
 *
 * Every op's user_data is the address of its struct weir_op; 0 marks
 * requests whose completion nobody waits for (cancels, timer removals,
 * doorbells sent to other loops).
 *
 * Setup flags, chosen by measurement: `weir-bench channel flags` (kernel
 * 6.18, 2 vCPUs shared with other builds, liburing 2.3; medians of 5
 * interleaved runs; rt = round trip of a task posted to a sleeping loop on
 * another thread and back; NOP = 32 in flight on one loop; TCP = 4 sends
 * and 4 receives of 64 KiB in flight on one loop over 127.0.0.1). Two
 * runs, load average 3-4 (left) and 7-17 (right):
 *
 *   flags                rt MSG_RING  rt eventfd  NOP Mops/s  TCP GB/s
 *   none                  14.9 | 9.0  14.1 | 8.9   9.0 | 8.7  4.75 | 3.25
 *   COOP                  10.9 |10.2   6.7 | 7.4   7.2 | 8.6  4.73 | 3.15
 *   COOP+SINGLE            6.8 | 8.3   7.6 |13.5  11.3 | 7.3  5.01 | 3.36
 *   SINGLE+DEFER          15.4 |10.4   7.0 | 6.9  13.1 | 7.9  5.13 | 3.44
 *   COOP+SINGLE+DEFER     10.6 |10.5  10.6 | 9.5  10.2 | 8.6  3.63 | 3.19
 *
 * The two runs order the sets differently: the noise of a shared 2-vCPU
 * machine is larger than any difference between sets, so no flag buys or
 * costs anything measurable here. SINGLE_ISSUER+DEFER_TASKRUN came out
 * best or near it on NOPs and TCP in both runs, and it matches how the
 * loop works (one thread submits and reaps; completions are processed when
 * the loop asks for them, so a busy worker is not interrupted to run task
 * work); COOP_TASKRUN is kept for kernels that reject DEFER_TASKRUN, where
 * it is the next best thing. Re-measure on a quiet machine before changing.
 *
 * DEFER_TASKRUN requires SINGLE_ISSUER, and both require that the thread
 * which creates the ring is the one that submits and waits on it: workers
 * create their loop on their own thread for that reason. A kernel that
 * rejects a flag (older than 6.1) gets the set without it.
 */
#include <errno.h>
#include <unistd.h>

#include "loop_impl.h"

#define DEFAULT_FLAGS                                                          \
    (IORING_SETUP_COOP_TASKRUN | IORING_SETUP_SINGLE_ISSUER |                  \
     IORING_SETUP_DEFER_TASKRUN)

_Static_assert(WEIR_LOOP_URING_COOP_TASKRUN == IORING_SETUP_COOP_TASKRUN,
               "flag values are the kernel's");
_Static_assert(WEIR_LOOP_URING_SINGLE_ISSUER == IORING_SETUP_SINGLE_ISSUER,
               "flag values are the kernel's");
_Static_assert(WEIR_LOOP_URING_DEFER_TASKRUN == IORING_SETUP_DEFER_TASKRUN,
               "flag values are the kernel's");
_Static_assert(sizeof(((struct weir_timer *)0)->ts) ==
                   sizeof(struct __kernel_timespec),
               "weir_timer.ts has the kernel's timespec layout");

static void efd_arm(struct weir_loop *loop);

static void efd_done(struct weir_op *op, int res, uint32_t flags)
{
    struct weir_loop *loop =
        (struct weir_loop *)((char *)op - offsetof(struct weir_loop, u.efd_op));

    (void)res;
    (void)flags;
    /* The wake itself was the point; the inbox is read next turn. */
    efd_arm(loop);
}

static void bell_done(struct weir_op *op, int res, uint32_t flags)
{
    (void)op;
    (void)res;
    (void)flags;
}

static struct io_uring_sqe *loop_sqe(struct weir_loop *loop)
{
    struct io_uring_sqe *sqe = io_uring_get_sqe(&loop->u.ring);

    if (!sqe) {
        /* Full: flush this turn's requests early and retry once. */
        loop->u.last_sqe = NULL;
        io_uring_submit(&loop->u.ring);
        sqe = io_uring_get_sqe(&loop->u.ring);
    }
    return sqe;
}

static void efd_arm(struct weir_loop *loop)
{
    struct io_uring_sqe *sqe = loop_sqe(loop);

    /* The loop cannot run without its doorbell; a full queue right after
     * a flush cannot happen with no ops of its own in it, so this only
     * fails on a broken ring, which the next turn reports. */
    if (!sqe)
        return;
    io_uring_prep_read(sqe, loop->efd, &loop->u.efd_value,
                       sizeof(loop->u.efd_value), 0);
    io_uring_sqe_set_data(sqe, &loop->u.efd_op);
}

static int setup_ring(struct weir_loop *loop, unsigned entries, uint32_t flags)
{
    struct io_uring_params p;
    int err;

    for (;;) {
        p = (struct io_uring_params){.flags = flags};
        err = io_uring_queue_init_params(entries, &loop->u.ring, &p);
        if (err != -EINVAL || flags == 0)
            break;
        /* An older kernel: drop the newest flag and retry. */
        if (flags & IORING_SETUP_DEFER_TASKRUN)
            flags &= ~IORING_SETUP_DEFER_TASKRUN;
        else if (flags & IORING_SETUP_SINGLE_ISSUER)
            flags &= ~IORING_SETUP_SINGLE_ISSUER;
        else
            flags = 0;
    }
    if (err)
        return err;
    loop->u.defer_taskrun = (flags & IORING_SETUP_DEFER_TASKRUN) != 0;
    /* Saves a file-table lookup per enter; optional, so errors are
     * ignored. */
    (void)io_uring_register_ring_fd(&loop->u.ring);
    return 0;
}

static int uring_init(struct weir_loop *loop,
                      const struct weir_loop_options *opts)
{
    unsigned entries = opts->entries ? opts->entries : 256;
    uint32_t flags = opts->uring_flags_set || opts->uring_flags
                         ? opts->uring_flags
                         : DEFAULT_FLAGS;
    int err = setup_ring(loop, entries, flags);

    if (err)
        return err;
    loop->u.efd_op.fn = efd_done;
    loop->u.bell_op.fn = bell_done;
    /* The doorbell: `weir-bench channel doorbell` (medians of 5) measured
     * the round trip at 14.2/9.2/8.3 us with MSG_RING and 14.6/8.8/7.2 us
     * with the eventfd in three runs: a tie, within noise. MSG_RING wins
     * on what it does not do: the wake rides in the sender's end-of-turn
     * submit, which it makes anyway, while an eventfd costs the sender a
     * write(2) and the target a re-armed read per wake. The eventfd stays
     * for threads that have no loop (weir_workers_stop, the daemon's main),
     * for a loop that is stopping, and for loops on the other engine. */
    if (loop->bell == WEIR_DOORBELL_DEFAULT)
        loop->bell = WEIR_DOORBELL_MSG_RING;
    efd_arm(loop);
    return 0;
}

static void uring_exit(struct weir_loop *loop)
{
    io_uring_queue_exit(&loop->u.ring);
}

static void uring_flush(struct weir_loop *loop)
{
    loop->u.last_sqe = NULL;
    io_uring_submit(&loop->u.ring);
}

static bool uring_idle(struct weir_loop *loop)
{
    return io_uring_cq_ready(&loop->u.ring) == 0;
}

static void dispatch(struct weir_loop *loop)
{
    /* The batch is what is there now; completions posted while callbacks
     * run wait for the next turn, after this batch's deferred work. */
    unsigned n = io_uring_cq_ready(&loop->u.ring);
    unsigned head = *loop->u.ring.cq.khead;
    unsigned mask = loop->u.ring.cq.ring_mask;

    for (unsigned i = 0; i < n; i++) {
        struct io_uring_cqe *cqe = &loop->u.ring.cq.cqes[(head + i) & mask];
        struct weir_op *op = io_uring_cqe_get_data(cqe);
        uint32_t flags = cqe->flags & IORING_CQE_F_MORE ? WEIR_OP_MORE : 0;

        if (op)
            weir__loop_complete(loop, op, cqe->res, flags);
    }
    io_uring_cq_advance(&loop->u.ring, n);
}

static int uring_turn(struct weir_loop *loop, bool block)
{
    int ret;

    loop->u.last_sqe = NULL;
    if (block)
        ret = io_uring_submit_and_wait(&loop->u.ring, 1);
    else if (loop->u.defer_taskrun || io_uring_sq_ready(&loop->u.ring) ||
             IO_URING_READ_ONCE(*loop->u.ring.sq.kflags) &
                 (IORING_SQ_TASKRUN | IORING_SQ_CQ_OVERFLOW))
        /* Completions under DEFER_TASKRUN (or COOP_TASKRUN's pending
         * task work) only reach the queue when we enter with
         * GETEVENTS. */
        ret = io_uring_submit_and_get_events(&loop->u.ring);
    else
        ret = 0;
    /* EINTR: a signal; EBUSY/EAGAIN: the completion queue is full or the
     * kernel is short of memory for a moment. All clear up once this turn
     * dispatches what is there. */
    if (ret < 0 && ret != -EINTR && ret != -EBUSY && ret != -EAGAIN &&
        ret != -ETIME)
        return ret;
    dispatch(loop);
    return 0;
}

static bool uring_ring(struct weir_loop *target, struct weir_loop *self)
{
    struct io_uring_sqe *sqe;

    /* A stopping loop's thread may exit right after its last submit, and
     * the kernel cancels a MSG_RING it had to finish asynchronously when
     * its task exits: the eventfd write is done when it returns. */
    if (self->stopped || self->bell != WEIR_DOORBELL_MSG_RING)
        return false;
    sqe = loop_sqe(self);
    if (!sqe)
        return false;
    /* Goes out with the sender's submission at the end of its turn, which
     * is soon: the sender is running this turn. */
    io_uring_prep_msg_ring(sqe, target->u.ring.ring_fd, 0,
                           (uint64_t)(uintptr_t)&target->u.bell_op, 0);
    io_uring_sqe_set_data64(sqe, 0);
    sqe->flags |= IOSQE_CQE_SKIP_SUCCESS;
    return true;
}

/* ---- operations ---- */

static int start(struct weir_loop *loop, struct weir_op *op,
                 struct io_uring_sqe *sqe)
{
    io_uring_sqe_set_data(sqe, op);
    loop_op_started(loop, op);
    loop->u.last_sqe = sqe;
    return 0;
}

#define GET_SQE(loop, sqe)                                                     \
    do {                                                                       \
        (sqe) = loop_sqe(loop);                                                \
        if (!(sqe))                                                            \
            return -EBUSY;                                                     \
    } while (0)

static int uring_nop(struct weir_loop *loop, struct weir_op *op)
{
    struct io_uring_sqe *sqe;

    GET_SQE(loop, sqe);
    io_uring_prep_nop(sqe);
    return start(loop, op, sqe);
}

static int uring_read(struct weir_loop *loop, struct weir_op *op, int fd,
                      void *buf, uint32_t len, uint64_t off)
{
    struct io_uring_sqe *sqe;

    GET_SQE(loop, sqe);
    io_uring_prep_read(sqe, fd, buf, len, off);
    return start(loop, op, sqe);
}

static int uring_write(struct weir_loop *loop, struct weir_op *op, int fd,
                       const void *buf, uint32_t len, uint64_t off)
{
    struct io_uring_sqe *sqe;

    GET_SQE(loop, sqe);
    io_uring_prep_write(sqe, fd, buf, len, off);
    return start(loop, op, sqe);
}

static int uring_readv(struct weir_loop *loop, struct weir_op *op, int fd,
                       const struct iovec *iov, unsigned n, uint64_t off)
{
    struct io_uring_sqe *sqe;

    GET_SQE(loop, sqe);
    io_uring_prep_readv(sqe, fd, iov, n, off);
    return start(loop, op, sqe);
}

static int uring_writev(struct weir_loop *loop, struct weir_op *op, int fd,
                        const struct iovec *iov, unsigned n, uint64_t off)
{
    struct io_uring_sqe *sqe;

    GET_SQE(loop, sqe);
    io_uring_prep_writev(sqe, fd, iov, n, off);
    return start(loop, op, sqe);
}

static int uring_recv(struct weir_loop *loop, struct weir_op *op, int fd,
                      void *buf, uint32_t len, int flags)
{
    struct io_uring_sqe *sqe;

    GET_SQE(loop, sqe);
    io_uring_prep_recv(sqe, fd, buf, len, flags);
    return start(loop, op, sqe);
}

static int uring_send(struct weir_loop *loop, struct weir_op *op, int fd,
                      const void *buf, uint32_t len, int flags)
{
    struct io_uring_sqe *sqe;

    GET_SQE(loop, sqe);
    io_uring_prep_send(sqe, fd, buf, len, flags);
    return start(loop, op, sqe);
}

static int uring_sendmsg(struct weir_loop *loop, struct weir_op *op, int fd,
                         const struct msghdr *msg, int flags)
{
    struct io_uring_sqe *sqe;

    GET_SQE(loop, sqe);
    io_uring_prep_sendmsg(sqe, fd, msg, (unsigned)flags);
    return start(loop, op, sqe);
}

static int uring_accept(struct weir_loop *loop, struct weir_op *op, int fd,
                        struct sockaddr *addr, socklen_t *addrlen, int flags)
{
    struct io_uring_sqe *sqe;

    GET_SQE(loop, sqe);
    io_uring_prep_accept(sqe, fd, addr, addrlen, flags);
    return start(loop, op, sqe);
}

static int uring_accept_multishot(struct weir_loop *loop, struct weir_op *op,
                                  int fd, int flags)
{
    struct io_uring_sqe *sqe;

    GET_SQE(loop, sqe);
    io_uring_prep_multishot_accept(sqe, fd, NULL, NULL, flags);
    return start(loop, op, sqe);
}

static int uring_connect(struct weir_loop *loop, struct weir_op *op, int fd,
                         const struct sockaddr *addr, socklen_t addrlen)
{
    struct io_uring_sqe *sqe;

    GET_SQE(loop, sqe);
    io_uring_prep_connect(sqe, fd, addr, addrlen);
    return start(loop, op, sqe);
}

static int uring_splice(struct weir_loop *loop, struct weir_op *op, int fd_in,
                        int64_t off_in, int fd_out, int64_t off_out,
                        uint32_t len, unsigned flags)
{
    struct io_uring_sqe *sqe;

    GET_SQE(loop, sqe);
    io_uring_prep_splice(sqe, fd_in, off_in, fd_out, off_out, len, flags);
    return start(loop, op, sqe);
}

static int uring_poll(struct weir_loop *loop, struct weir_op *op, int fd,
                      unsigned mask)
{
    struct io_uring_sqe *sqe;

    GET_SQE(loop, sqe);
    io_uring_prep_poll_add(sqe, fd, mask);
    return start(loop, op, sqe);
}

static int uring_close(struct weir_loop *loop, struct weir_op *op, int fd)
{
    struct io_uring_sqe *sqe;

    GET_SQE(loop, sqe);
    io_uring_prep_close(sqe, fd);
    return start(loop, op, sqe);
}

static void uring_link(struct weir_loop *loop)
{
    if (loop->u.last_sqe)
        loop->u.last_sqe->flags |= IOSQE_IO_LINK;
}

static int uring_cancel(struct weir_loop *loop, struct weir_op *op)
{
    struct io_uring_sqe *sqe;

    GET_SQE(loop, sqe);
    io_uring_prep_cancel64(sqe, (uint64_t)(uintptr_t)op, 0);
    io_uring_sqe_set_data64(sqe, 0);
    return 0;
}

static int uring_timer_start(struct weir_loop *loop, struct weir_timer *t,
                             uint64_t ns)
{
    struct io_uring_sqe *sqe;

    GET_SQE(loop, sqe);
    t->ts.tv_sec = (int64_t)(ns / 1000000000u);
    t->ts.tv_nsec = (long long)(ns % 1000000000u);
    io_uring_prep_timeout(sqe, (struct __kernel_timespec *)&t->ts, 0, 0);
    return start(loop, &t->op, sqe);
}

static int uring_timer_stop(struct weir_loop *loop, struct weir_timer *t)
{
    struct io_uring_sqe *sqe;

    GET_SQE(loop, sqe);
    io_uring_prep_timeout_remove(sqe, (uint64_t)(uintptr_t)&t->op, 0);
    io_uring_sqe_set_data64(sqe, 0);
    return 0;
}

const struct loop_backend weir__loop_uring_backend = {
    .init = uring_init,
    .exit = uring_exit,
    .idle = uring_idle,
    .turn = uring_turn,
    .flush = uring_flush,
    .ring = uring_ring,
    .nop = uring_nop,
    .read = uring_read,
    .write = uring_write,
    .readv = uring_readv,
    .writev = uring_writev,
    .recv = uring_recv,
    .send = uring_send,
    .sendmsg = uring_sendmsg,
    .accept = uring_accept,
    .accept_multishot = uring_accept_multishot,
    .connect = uring_connect,
    .splice = uring_splice,
    .poll = uring_poll,
    .close = uring_close,
    .link = uring_link,
    .cancel = uring_cancel,
    .timer_start = uring_timer_start,
    .timer_stop = uring_timer_stop,
};
