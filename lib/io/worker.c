/*
 * worker.c - worker threads, one loop and one pool each.
 *
 * Start-up is a handshake under a mutex: each thread builds its loop and
 * pool, reports the result, and either runs (on go) or exits. The mutex is
 * only for start and stop, never on the data path.
 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <time.h>

#include "weir/worker.h"

struct worker {
    struct weir_workers *w;
    unsigned index;
    pthread_t thread;
    bool started;
    struct weir_loop *loop;
    struct weir_pool *pool;
    struct weir_task stop;
    unsigned stop_turns; /* turns the stop has waited for ops to finish */
    struct weir_timer trim;
    int err;
    bool ready;
};

/* How many turns a stop lets the ops still out (cancels of objects freed
 * last, mostly) come back, so their owners are freed before the loop is. */
#define STOP_TURNS 1000

struct weir_workers {
    struct weir_workers_options opts;
    pthread_mutex_t lock;
    pthread_cond_t cond;
    bool go;    /* every worker came up: run */
    bool abort; /* one failed: exit without running */
    struct worker *ws;
};

static _Thread_local struct worker *tls_worker;

/* Turns a stop lets run first in any case: an object destroyed in the
 * last turn before the stop cancelled its ops, and their answers (which
 * free it) come in the next turn or two. Re-posting costs a turn each, no
 * sleep. */
#define STOP_TURNS_MIN 4

static void stop_task(struct weir_task *t)
{
    struct worker *wk =
        (struct worker *)((char *)t - offsetof(struct worker, stop));

    if ((wk->stop_turns < STOP_TURNS_MIN || weir_loop_pending(wk->loop) > 0) &&
        wk->stop_turns++ < STOP_TURNS) {
        weir_loop_post(wk->loop, &wk->stop);
        return;
    }
    weir_loop_stop(wk->loop);
}

/* Idle pool pages go back to the kernel on a timer, so that the resident
 * size follows the working set down after a burst. */
static void trim_fire(struct weir_op *op, int res, uint32_t flags)
{
    struct worker *wk =
        (struct worker *)((char *)op - offsetof(struct worker, trim.op));
    const struct weir_workers_options *o = &wk->w->opts;

    (void)flags;
    if (res == -ECANCELED)
        return;
    weir_pool_trim(wk->pool, o->trim_keep);
    (void)weir_loop_timer_start(wk->loop, &wk->trim,
                                o->trim_ns ? o->trim_ns : 1000000000ull);
}

static int worker_setup(struct worker *wk)
{
    const struct weir_workers_options *o = &wk->w->opts;
    struct weir_loop_options lo = {
        .entries = o->loop_entries,
        .slot = wk->index,
        .bell = o->bell,
        .engine = o->engine,
    };
    struct weir_pool_options po = {
        .buf_size = o->buf_size,
        .count = o->pool_buffers ? o->pool_buffers : 1024,
        .threads = o->count,
        .owner = wk->index,
    };
    int err = weir_loop_create(&wk->loop, &lo);

    if (err)
        return err;
    err = weir_pool_create(&wk->pool, &po);
    if (err) {
        weir_loop_destroy(wk->loop);
        wk->loop = NULL;
        return err;
    }
    weir_task_init(&wk->stop, stop_task);
    wk->trim.op.fn = trim_fire;
    return 0;
}

static void *worker_main(void *arg)
{
    struct worker *wk = arg;
    struct weir_workers *w = wk->w;
    bool run;

    tls_worker = wk;
    wk->err = worker_setup(wk);
    pthread_mutex_lock(&w->lock);
    wk->ready = true;
    pthread_cond_broadcast(&w->cond);
    while (!w->go && !w->abort)
        pthread_cond_wait(&w->cond, &w->lock);
    run = w->go && !wk->err;
    pthread_mutex_unlock(&w->lock);
    if (run) {
        (void)weir_loop_timer_start(wk->loop, &wk->trim,
                                    w->opts.trim_ns ? w->opts.trim_ns
                                                    : 1000000000ull);
        wk->err = weir_loop_run(wk->loop);
    }
    if (run && wk->err && w->opts.on_fail)
        w->opts.on_fail(w->opts.fail_arg, wk->index, wk->err);
    return NULL;
}

static void workers_free(struct weir_workers *w)
{
    pthread_mutex_destroy(&w->lock);
    pthread_cond_destroy(&w->cond);
    free(w->ws);
    free(w);
}

/* After the threads are joined: the joins order their last writes before
 * these frees. */
static int workers_release(struct weir_workers *w)
{
    int err = 0;

    for (unsigned i = 0; i < w->opts.count; i++) {
        struct worker *wk = &w->ws[i];

        if (wk->pool && weir_pool_destroy(wk->pool) == -EBUSY)
            err = -EBUSY;
        if (wk->loop)
            weir_loop_destroy(wk->loop);
    }
    workers_free(w);
    return err;
}

int weir_workers_start(struct weir_workers **out,
                       const struct weir_workers_options *opts)
{
    struct weir_workers *w;
    int err = 0;
    unsigned started = 0;

    if (!opts || opts->count == 0)
        return -EINVAL;
    w = calloc(1, sizeof(*w));
    if (!w)
        return -ENOMEM;
    w->opts = *opts;
    w->ws = calloc(opts->count, sizeof(*w->ws));
    if (!w->ws) {
        free(w);
        return -ENOMEM;
    }
    pthread_mutex_init(&w->lock, NULL);
    pthread_cond_init(&w->cond, NULL);
    for (unsigned i = 0; i < opts->count; i++) {
        struct worker *wk = &w->ws[i];

        wk->w = w;
        wk->index = i;
        if (pthread_create(&wk->thread, NULL, worker_main, wk) != 0) {
            err = -EAGAIN;
            break;
        }
        wk->started = true;
        started++;
    }
    pthread_mutex_lock(&w->lock);
    for (unsigned i = 0; i < started; i++) {
        while (!w->ws[i].ready)
            pthread_cond_wait(&w->cond, &w->lock);
        if (!err && w->ws[i].err)
            err = w->ws[i].err;
    }
    if (err)
        w->abort = true;
    else
        w->go = true;
    pthread_cond_broadcast(&w->cond);
    pthread_mutex_unlock(&w->lock);
    if (err) {
        for (unsigned i = 0; i < started; i++)
            pthread_join(w->ws[i].thread, NULL);
        workers_release(w);
        return err;
    }
    *out = w;
    return 0;
}

int weir_workers_stop(struct weir_workers *w)
{
    for (unsigned i = 0; i < w->opts.count; i++)
        weir_loop_post(w->ws[i].loop, &w->ws[i].stop);
    for (unsigned i = 0; i < w->opts.count; i++)
        pthread_join(w->ws[i].thread, NULL);
    return workers_release(w);
}

unsigned weir_workers_count(const struct weir_workers *w)
{
    return w->opts.count;
}

struct weir_loop *weir_workers_loop(const struct weir_workers *w, unsigned i)
{
    return w->ws[i].loop;
}

struct weir_pool *weir_workers_pool(const struct weir_workers *w, unsigned i)
{
    return w->ws[i].pool;
}

int weir_workers_cpu_ns(const struct weir_workers *w, unsigned i, uint64_t *ns)
{
    struct timespec ts;
    clockid_t cid;
    int err;

    if (i >= w->opts.count)
        return -EINVAL;
    /* The thread's own clock: read from here, it costs the worker
     * nothing. */
    err = pthread_getcpuclockid(w->ws[i].thread, &cid);
    if (err)
        return -err;
    if (clock_gettime(cid, &ts) != 0)
        return -errno;
    *ns = (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
    return 0;
}

void weir_workers_post(struct weir_workers *w, unsigned i, struct weir_task *t)
{
    weir_loop_post(w->ws[i].loop, t);
}

struct weir_pool *weir_worker_pool(void)
{
    return tls_worker ? tls_worker->pool : NULL;
}
