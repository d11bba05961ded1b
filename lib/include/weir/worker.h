/*
 * weir/worker.h - worker threads: each runs one event loop and owns one
 * buffer pool.
 *
 * Worker i's loop and pool are created on worker i's own thread (the
 * io_uring setup flags tie a ring to the thread that creates it), and its
 * thread slot is i: the pool's return rings, and every weir_chunk_unref on
 * that thread, use it. Work reaches a worker as a posted task
 * (weir_workers_post), which is how the daemon places a stage on a worker.
 */
#ifndef WEIR_WORKER_H
#define WEIR_WORKER_H

#include <stddef.h>
#include <stdint.h>

#include "weir/loop.h"
#include "weir/pool.h"

#ifdef __cplusplus
extern "C" {
#endif

struct weir_workers;

struct weir_workers_options {
    unsigned count;          /* threads, >= 1 */
    uint32_t pool_buffers;   /* buffers per worker pool; 0: 1024 */
    size_t buf_size;         /* bytes per buffer; 0: the pool's default */
    unsigned loop_entries;   /* submission queue size; 0: the default */
    enum weir_doorbell bell; /* 0: the measured default */
    enum weir_engine engine; /* 0: AUTO (weir_loop_options.engine) */
    /* Every trim_ns the worker gives its pool's idle buffers back to the
     * kernel (weir_pool_trim), keeping trim_keep; 0: every second. */
    uint64_t trim_ns;
    uint32_t trim_keep;
    /* Called on worker `index`'s thread when its loop fails for good
     * (weir_loop_run returned `err`, a negative errno: the kernel refused
     * the loop's wait); the thread ends after it returns, and what ran on
     * it stops. The owner decides what that means (the daemon logs and
     * exits). NULL: the thread ends silently. */
    void (*on_fail)(void *arg, unsigned index, int err);
    void *fail_arg;
};

/*
 * Any thread that is not a worker. Starts the workers and waits until each
 * has its loop and pool, or one failed: then the started ones are stopped
 * and the first error is returned (-EPERM, -ENOSYS, -ENOMEM from a loop
 * asked to run on io_uring, weir_loop_strerror explains them; -EAGAIN when a
 * thread cannot start; -EINVAL for bad options).
 */
int weir_workers_start(struct weir_workers **out,
                       const struct weir_workers_options *opts);

/*
 * The thread that started them. Stops every loop after its current turn,
 * joins the threads and frees loops and pools. Returns 0, or -EBUSY when a
 * pool still had buffers out (they are leaked rather than freed under
 * someone's feet).
 */
int weir_workers_stop(struct weir_workers *w);

/* Any thread. */
unsigned weir_workers_count(const struct weir_workers *w);

/* Any thread. Worker i's loop; only worker i may use it, except for
 * weir_loop_post. */
struct weir_loop *weir_workers_loop(const struct weir_workers *w, unsigned i);

/* Any thread. Worker i's pool; only worker i may take buffers from it. */
struct weir_pool *weir_workers_pool(const struct weir_workers *w, unsigned i);

/* Any thread but while weir_workers_stop runs. The CPU time (user and
 * system) worker i's thread has used, in ns: how busy it was. 0, or
 * -EINVAL for an i out of range, or what the thread's clock reports. */
int weir_workers_cpu_ns(const struct weir_workers *w, unsigned i, uint64_t *ns);

/* Any thread. Runs t->fn on worker i (weir_loop_post). */
void weir_workers_post(struct weir_workers *w, unsigned i, struct weir_task *t);

/* Any thread. The calling worker's pool, or NULL off the workers. */
struct weir_pool *weir_worker_pool(void);

#ifdef __cplusplus
}
#endif

#endif /* WEIR_WORKER_H */
