/*
 * loop.c - the event loop's turn, its inbox of posted tasks and its
 * deferred work; the kernel side is in the backend (uring.c).
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
#include <stdlib.h>

#include "loop_impl.h"

static _Thread_local struct weir_loop *tls_loop;

int weir_loop_create(struct weir_loop **out,
                     const struct weir_loop_options *opts)
{
    static const struct weir_loop_options defaults = {0};
    struct weir_loop *loop;
    int err;

    if (!opts)
        opts = &defaults;
    loop = aligned_alloc(WEIR_CACHELINE, (sizeof(*loop) + WEIR_CACHELINE - 1) &
                                             ~(size_t)(WEIR_CACHELINE - 1));
    if (!loop)
        return -ENOMEM;
    *loop = (struct weir_loop){0};
    loop->slot = opts->slot;
    loop->bell = opts->bell;
    loop->reap_tail = &loop->reap_head;
    loop->efd = -1;
    atomic_init(&loop->inbox, 0);
    err = loop_backend_init(loop, opts);
    if (err) {
        free(loop);
        return err;
    }
    *out = loop;
    return 0;
}

void weir_loop_destroy(struct weir_loop *loop)
{
    loop_backend_exit(loop);
    free(loop);
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

uint32_t weir_loop_pending(const struct weir_loop *loop)
{
    return loop->npending;
}

void weir_loop_flush(struct weir_loop *loop)
{
    loop_backend_flush(loop);
}

void weir_loop_stop(struct weir_loop *loop)
{
    loop->stopped = true;
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
        loop_backend_ring(loop, tls_loop);
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

void loop_complete(struct weir_loop *loop, struct weir_op *op, int res,
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

        run_inbox(loop);
        run_reaps(loop);
        if (loop->stopped)
            break;
        /* Sleep only with no completion waiting, nothing deferred, and
         * the inbox marked: the kernel returns when an op completes or a
         * doorbell rings. */
        block = loop_backend_idle(loop) && try_sleep(loop);
        err = loop_backend_turn(loop, block);
        if (err)
            break;
        if (block)
            awake(loop);
        run_reaps(loop);
    }
    /* What the last turn queued (a task's post to another loop rings its
     * doorbell through this ring) goes out now, not at the next run. */
    loop_backend_flush(loop);
    tls_loop = outer;
    return err;
}
