/*
 * io_pool.c - the epoll engine's I/O threads (io_pool.h). A read of a
 * regular file that RWF_NOWAIT could not answer from the page cache is
 * queued here; one of POOL_THREADS detached threads, shared by every loop
 * of the process, makes the blocking call and posts the record back to
 * its loop as a task, which puts the result on the done list. A loop
 * counts its reads out here (pool_jobs) and waits for them at exit.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>

#include "io_pool.h"

#define POOL_THREADS 4

static struct {
    pthread_once_t once;
    pthread_mutex_t lock;
    pthread_cond_t cond;
    struct epl_req *head, **tail;
    unsigned threads;
} pool = {.once = PTHREAD_ONCE_INIT,
          .lock = PTHREAD_MUTEX_INITIALIZER,
          .cond = PTHREAD_COND_INITIALIZER};

static void pool_done(struct weir_task *t)
{
    struct epl_req *r =
        (struct epl_req *)(void *)((char *)t - offsetof(struct epl_req, task));

    done_push(r->loop, r, r->res);
}

static void *pool_main(void *arg)
{
    (void)arg;
    for (;;) {
        struct epl_req *r;
        struct weir_loop *loop;

        pthread_mutex_lock(&pool.lock);
        while (!pool.head)
            pthread_cond_wait(&pool.cond, &pool.lock);
        r = pool.head;
        pool.head = r->pool_next;
        if (!pool.head)
            pool.tail = &pool.head;
        pthread_mutex_unlock(&pool.lock);
        r->res = rw_call(r, 0);
        loop = r->loop;
        /* The post publishes r->res to the owner (its release pairs with
         * run_inbox's acquire); after the count drops, r and the loop may
         * be gone. Release pairs with the acquire load in epl_exit
         * (epoll.c). */
        weir_loop_post(loop, &r->task);
        atomic_fetch_sub_explicit(&loop->e.pool_jobs, 1, memory_order_release);
    }
    return NULL;
}

static void pool_start(void)
{
    pthread_attr_t attr;

    pool.tail = &pool.head;
    pthread_attr_init(&attr);
    pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
    /* A read and a post: no deep stacks (sanitizers need more). */
    pthread_attr_setstacksize(&attr, 256 * 1024);
    for (unsigned i = 0; i < POOL_THREADS; i++) {
        pthread_t th;

        if (pthread_create(&th, &attr, pool_main, NULL) == 0)
            pool.threads++;
    }
    pthread_attr_destroy(&attr);
}

bool weir__io_pool_submit(struct weir_loop *loop, struct epl_req *r)
{
    if (pool.threads == 0)
        return false;
    r->loop = loop;
    r->state = R_POOL;
    weir_task_init(&r->task, pool_done);
    /* Relaxed: the owner reads the count only at exit, after the acquire
     * that pairs with each job's release decrement. */
    atomic_fetch_add_explicit(&loop->e.pool_jobs, 1, memory_order_relaxed);
    pthread_mutex_lock(&pool.lock);
    r->pool_next = NULL;
    *pool.tail = r;
    pool.tail = &r->pool_next;
    pthread_cond_signal(&pool.cond);
    pthread_mutex_unlock(&pool.lock);
    return true;
}

void weir__io_pool_start(void)
{
    pthread_once(&pool.once, pool_start);
}
