/*
 * loop.c - the event loop's turn, its inbox of posted tasks and its
 * deferred work, and the doorbell; the kernel side is in the backends
 * (uring.c, epoll.c), and a loop's making and its choice of engine in
 * loop_create.c, above both.
 *
 * One turn:
 *   1. run the tasks other threads posted (the inbox, taken whole);
 *   2. submit everything queued since the last turn in one system call,
 *      sleeping in it only when there is provably nothing to do;
 *   3. dispatch the batch of completions;
 *   4. run what callbacks deferred (frees, mostly).
 *
 * Tasks run before the submission so that the ops they start go out in the
 * same system call; deferred work runs after the whole batch so that no
 * callback of the batch finds its object freed (mark and reap, as Redis's
 * ae.c marks deleted events and reaps them after dispatch).
 *
 * Sleeping without losing a post. The inbox is one word: a stack of tasks,
 * or the mark LOOP_SLEEPING. Before sleeping the owner swaps an empty inbox
 * for the mark (compare-and-swap); a poster pushes with compare-and-swap,
 * and if the word it replaced was the mark, it rings the doorbell. Both
 * sides are read-modify-writes of the same word, so the word's modification
 * order puts one before the other: either the owner's swap comes first and
 * the poster sees the mark and rings, or the push comes first and the
 * owner's swap fails (the inbox is not empty) and it does not sleep. A
 * wakeup cannot fall between the two. The rejected alternative, a separate
 * "sleeping" flag beside the queue, needs a store-load (Dekker) pairing on
 * two locations, which is easy to get subtly wrong and which
 * ThreadSanitizer cannot check through fences.
 *
 * Why one multi-producer stack rather than an SPSC ring per (sender,
 * receiver) pair: tasks are nodes embedded in their owners' objects, so a
 * post allocates nothing and can never find the queue full. That matters
 * because a post is how a channel wakes its other side, and a wakeup that
 * could fail for lack of room would have to be retried by someone who may
 * be about to sleep. Senders need no slot number (the daemon's main thread
 * posts too), and the owner takes everything with one exchange. The cost
 * is a compare-and-swap per post on a shared line, which is fine because
 * posts are rare (wakeups and control): chunks travel through the
 * channels' SPSC rings, never through here. There is no ABA problem: the
 * owner never pops a single node, it swaps the whole stack out, and a
 * node is pushed only by the poster that flipped its `queued` flag.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "loop_impl.h"

static _Thread_local struct weir_loop *tls_loop;

void weir_loop_destroy(struct weir_loop *loop)
{
    loop->be->exit(loop);
    close(loop->efd);
    free(loop);
}

enum weir_engine weir_loop_engine(const struct weir_loop *loop)
{
    return loop->engine;
}

const char *weir_loop_engine_reason(const struct weir_loop *loop)
{
    return loop->engine_reason;
}

const char *weir_engine_name(enum weir_engine engine)
{
    switch (engine) {
    case WEIR_ENGINE_IO_URING:
        return "io_uring";
    case WEIR_ENGINE_EPOLL:
        return "epoll";
    default:
        return "auto";
    }
}

int weir_engine_parse(const char *name, enum weir_engine *out)
{
    if (strcmp(name, "auto") == 0)
        *out = WEIR_ENGINE_AUTO;
    else if (strcmp(name, "io_uring") == 0)
        *out = WEIR_ENGINE_IO_URING;
    else if (strcmp(name, "epoll") == 0)
        *out = WEIR_ENGINE_EPOLL;
    else
        return -EINVAL;
    return 0;
}

struct weir_loop *weir_loop_current(void)
{
    return tls_loop;
}

unsigned weir_loop_slot(const struct weir_loop *loop)
{
    return loop->slot;
}

void weir_loop_set_data(struct weir_loop *loop, void *data)
{
    loop->data = data;
}

void *weir_loop_data(const struct weir_loop *loop)
{
    return loop->data;
}

uint64_t weir_loop_turns(const struct weir_loop *loop)
{
    return atomic_load_explicit(&loop->turns, memory_order_relaxed);
}

uint32_t weir_loop_pending(const struct weir_loop *loop)
{
    return loop->npending;
}

void weir_loop_flush(struct weir_loop *loop)
{
    loop->be->flush(loop);
}

void weir_loop_stop(struct weir_loop *loop)
{
    loop->stopped = true;
}

/* Wakes `target`, which announced it sleeps. Any thread; `self` is the
 * caller's running loop or NULL. */
static void loop_ring(struct weir_loop *target, struct weir_loop *self)
{
    int saved = errno;
    uint64_t one = 1;

    if (self && self != target && self->be == target->be && self->be->ring &&
        self->be->ring(target, self))
        return;
    /* Cannot fail short of a counter overflow after 2^64 - 1 rings. */
    if (write(target->efd, &one, sizeof(one)) < 0)
        errno = saved;
    errno = saved;
}

bool weir_loop_post(struct weir_loop *loop, struct weir_task *t)
{
    uintptr_t old;

    /* Acq_rel: the release half publishes the poster's writes (the data
     * the task is about) to the run that clears the flag; the acquire half
     * pairs with that clearing exchange in run_inbox. A task already
     * queued will run after this point anyway, so one run covers both. */
    if (atomic_exchange_explicit(&t->queued, 1, memory_order_acq_rel))
        return false;
    old = atomic_load_explicit(&loop->inbox, memory_order_relaxed);
    do {
        t->next = old == LOOP_SLEEPING ? NULL : (struct weir_task *)old;
        /* Release pairs with the acquire exchange in run_inbox: t->next
         * and the task are visible to the owner once it takes the stack.
         * Seq_cst only so the whole handshake reads as one total order. */
    } while (!atomic_compare_exchange_weak_explicit(
        &loop->inbox, &old, (uintptr_t)t, memory_order_seq_cst,
        memory_order_relaxed));
    /* The owner put the mark there before sleeping: this push is the one
     * that must wake it. Later posters see a task, not the mark. */
    if (old == LOOP_SLEEPING)
        loop_ring(loop, tls_loop);
    return true;
}

/* Owner. Takes the whole inbox (clearing the sleep mark) and runs the
 * tasks in the order they were posted. */
static void run_inbox(struct weir_loop *loop)
{
    struct weir_task *stack, *fifo = NULL;
    uintptr_t word;

    /* Relaxed peek: a push it misses is seen by the compare-and-swap in
     * try_sleep, which then refuses to sleep. */
    if (atomic_load_explicit(&loop->inbox, memory_order_relaxed) == 0)
        return;
    /* Acquire pairs with the release compare-and-swap in weir_loop_post. */
    word = atomic_exchange_explicit(&loop->inbox, 0, memory_order_acquire);
    if (word == 0 || word == LOOP_SLEEPING)
        return;
    for (stack = (struct weir_task *)word; stack;) {
        struct weir_task *next = stack->next;

        stack->next = fifo;
        fifo = stack;
        stack = next;
    }
    while (fifo) {
        struct weir_task *t = fifo;

        fifo = t->next;
        /* Acq_rel, pairing with the exchange in weir_loop_post: a poster
         * that found the flag still set published its writes with it, and
         * this exchange reads them before fn runs; a poster that comes
         * after this sees 0 and queues the task again. t->next was read
         * above, since after this a poster may relink the task. */
        atomic_exchange_explicit(&t->queued, 0, memory_order_acq_rel);
        t->fn(t);
    }
}

/* Owner. Announces sleep; false when tasks arrived meanwhile. */
static bool try_sleep(struct weir_loop *loop)
{
    uintptr_t empty = 0;

    /* Seq_cst compare-and-swap on the inbox word: pairs with the
     * compare-and-swap in weir_loop_post (see the top of this file). */
    return atomic_compare_exchange_strong_explicit(
        &loop->inbox, &empty, LOOP_SLEEPING, memory_order_seq_cst,
        memory_order_relaxed);
}

/* Owner, after a sleep. Takes the mark back if no post replaced it, so that
 * posts during this busy turn do not ring a doorbell nobody needs. */
static void awake(struct weir_loop *loop)
{
    uintptr_t mark = LOOP_SLEEPING;

    /* Relaxed: no data moves with the mark. A post that wins the race
     * replaced it (and rang); its task is then taken by run_inbox. */
    atomic_compare_exchange_strong_explicit(
        &loop->inbox, &mark, 0, memory_order_relaxed, memory_order_relaxed);
}

void weir_loop_defer(struct weir_loop *loop, struct weir_reap *r)
{
    r->next = NULL;
    *loop->reap_tail = r;
    loop->reap_tail = &r->next;
}

static void run_reaps(struct weir_loop *loop)
{
    /* Work deferred by deferred work runs in the same pass. */
    while (loop->reap_head) {
        struct weir_reap *r = loop->reap_head;

        loop->reap_head = r->next;
        if (!loop->reap_head)
            loop->reap_tail = &loop->reap_head;
        r->fn(r);
    }
}

void weir__loop_complete(struct weir_loop *loop, struct weir_op *op, int res,
                         uint32_t flags)
{
    if (!(flags & WEIR_OP_MORE) && op->pending) {
        op->pending = false;
        loop->npending--;
    }
    op->fn(op, res, flags);
}

int weir_loop_run(struct weir_loop *loop)
{
    struct weir_loop *outer = tls_loop;
    int err = 0;

    tls_loop = loop;
    loop->stopped = false;
    while (!loop->stopped) {
        bool block;

        /* One writer: a plain load and store, no locked add. */
        atomic_store_explicit(
            &loop->turns,
            atomic_load_explicit(&loop->turns, memory_order_relaxed) + 1,
            memory_order_relaxed);
        run_inbox(loop);
        run_reaps(loop);
        if (loop->stopped)
            break;
        /* Sleep only with no completion waiting, nothing deferred, and
         * the inbox marked: the kernel returns when an op completes or a
         * doorbell rings. */
        block = loop->be->idle(loop) && try_sleep(loop);
        err = loop->be->turn(loop, block);
        if (err)
            break;
        if (block)
            awake(loop);
        run_reaps(loop);
    }
    /* What the last turn queued (a task's post to another loop rings its
     * doorbell through this ring) goes out now, not at the next run. */
    loop->be->flush(loop);
    tls_loop = outer;
    return err;
}

/* ---- operations: the loop's backend does them ---- */

int weir_loop_nop(struct weir_loop *loop, struct weir_op *op)
{
    return loop->be->nop(loop, op);
}

int weir_loop_read(struct weir_loop *loop, struct weir_op *op, int fd,
                   void *buf, uint32_t len, uint64_t off)
{
    return loop->be->read(loop, op, fd, buf, len, off);
}

int weir_loop_write(struct weir_loop *loop, struct weir_op *op, int fd,
                    const void *buf, uint32_t len, uint64_t off)
{
    return loop->be->write(loop, op, fd, buf, len, off);
}

int weir_loop_readv(struct weir_loop *loop, struct weir_op *op, int fd,
                    const struct iovec *iov, unsigned n, uint64_t off)
{
    return loop->be->readv(loop, op, fd, iov, n, off);
}

int weir_loop_writev(struct weir_loop *loop, struct weir_op *op, int fd,
                     const struct iovec *iov, unsigned n, uint64_t off)
{
    return loop->be->writev(loop, op, fd, iov, n, off);
}

int weir_loop_recv(struct weir_loop *loop, struct weir_op *op, int fd,
                   void *buf, uint32_t len, int flags)
{
    return loop->be->recv(loop, op, fd, buf, len, flags);
}

int weir_loop_send(struct weir_loop *loop, struct weir_op *op, int fd,
                   const void *buf, uint32_t len, int flags)
{
    return loop->be->send(loop, op, fd, buf, len, flags);
}

int weir_loop_sendmsg(struct weir_loop *loop, struct weir_op *op, int fd,
                      const struct msghdr *msg, int flags)
{
    return loop->be->sendmsg(loop, op, fd, msg, flags);
}

int weir_loop_accept(struct weir_loop *loop, struct weir_op *op, int fd,
                     struct sockaddr *addr, socklen_t *addrlen, int flags)
{
    return loop->be->accept(loop, op, fd, addr, addrlen, flags);
}

int weir_loop_accept_multishot(struct weir_loop *loop, struct weir_op *op,
                               int fd, int flags)
{
    return loop->be->accept_multishot(loop, op, fd, flags);
}

int weir_loop_connect(struct weir_loop *loop, struct weir_op *op, int fd,
                      const struct sockaddr *addr, socklen_t addrlen)
{
    return loop->be->connect(loop, op, fd, addr, addrlen);
}

int weir_loop_splice(struct weir_loop *loop, struct weir_op *op, int fd_in,
                     int64_t off_in, int fd_out, int64_t off_out, uint32_t len,
                     unsigned flags)
{
    return loop->be->splice(loop, op, fd_in, off_in, fd_out, off_out, len,
                            flags);
}

int weir_loop_poll(struct weir_loop *loop, struct weir_op *op, int fd,
                   unsigned mask)
{
    return loop->be->poll(loop, op, fd, mask);
}

int weir_loop_close(struct weir_loop *loop, struct weir_op *op, int fd)
{
    return loop->be->close(loop, op, fd);
}

void weir_loop_link(struct weir_loop *loop)
{
    loop->be->link(loop);
}

int weir_loop_cancel(struct weir_loop *loop, struct weir_op *op)
{
    if (!op->pending)
        return -ENOENT;
    return loop->be->cancel(loop, op);
}

int weir_loop_timer_start(struct weir_loop *loop, struct weir_timer *t,
                          uint64_t ns)
{
    return loop->be->timer_start(loop, t, ns);
}

int weir_loop_timer_stop(struct weir_loop *loop, struct weir_timer *t)
{
    if (!t->op.pending)
        return -ENOENT;
    return loop->be->timer_stop(loop, t);
}
