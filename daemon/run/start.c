/*
 * start.c - what a run sets up before its main loop runs: the fd limit
 * and table, socket activation's sockets, the workers (and the word of
 * one whose loop fails), and the pipelines, all prepared before any
 * starts. run.c calls these in order (daemon_run).
 *
 * The send path is chosen once, with the workers (stream/sendpath.h);
 * the measurements behind it are in bench/results/sendpath.md.
 */
#include <fcntl.h>
#include <string.h>
#include <sys/resource.h>
#include <sysexits.h>
#include <unistd.h>

#include "run/run_impl.h"
#include "sys/notify.h"

static unsigned worker_count(const struct weir_config *conf)
{
    long n = conf->daemon.workers ? (long)conf->daemon.workers
                                  : sysconf(_SC_NPROCESSORS_ONLN);

    return n < 1 ? 1 : (unsigned)n;
}

size_t run_buffer_size(const struct weir_config *conf)
{
    uint64_t sz = CONF_DEFAULT_CHUNK;

    for (size_t i = 0; i < conf->npipelines; i++)
        if (conf->pipelines[i]->chunk_size > sz)
            sz = conf->pipelines[i]->chunk_size;
    return (size_t)sz;
}

/* A file server holds two fds per client (the socket, the file): take the
 * hard limit rather than the usual soft 1024. Returns the limit now. */
static unsigned long long raise_fd_limit(void)
{
    struct rlimit rl;

    if (getrlimit(RLIMIT_NOFILE, &rl) != 0)
        return 0;
    if (rl.rlim_cur < rl.rlim_max) {
        rl.rlim_cur = rl.rlim_max;
        if (setrlimit(RLIMIT_NOFILE, &rl) != 0)
            getrlimit(RLIMIT_NOFILE, &rl);
    }
    return (unsigned long long)rl.rlim_cur;
}

/*
 * The kernel grows a process's fd table by doubling it, and in a process
 * of more than one thread each growth waits for an RCU grace period
 * (expand_fdtable's synchronize_rcu), which costs far more than the
 * growth itself (bench/results/serve.md). The first wave of clients
 * would wait it out on the accepting thread, so the table is grown once,
 * now, while this is the only thread: to the fd limit, at most
 * FD_TABLE_MAX slots (8 bytes of kernel memory each; past it, the
 * doubling goes on as before).
 */
#define FD_TABLE_MAX 65536

static void size_fd_table(unsigned long long limit)
{
    int fd = open("/dev/null", O_RDONLY | O_CLOEXEC), high;

    if (fd < 0)
        return;
    if (limit > FD_TABLE_MAX)
        limit = FD_TABLE_MAX;
    high = limit > (unsigned long long)fd + 1
               ? fcntl(fd, F_DUPFD_CLOEXEC, (int)(limit - 1))
               : -1;
    if (high >= 0)
        close(high);
    close(fd);
}

/* Socket activation: the passed sockets, taken before anything else
 * opens an fd. A malformed LISTEN_FDS is logged and ignored. */
void run_take_listenfds(struct run *r)
{
    int rc = listenfds_take(&r->lfds);

    if (rc) {
        log_errx("socket activation: %s", strerror(-rc));
        r->lfds = NULL;
    } else if (listenfds_count(r->lfds) > 0) {
        log_debug("socket activation: %zu socket%s passed",
                  listenfds_count(r->lfds),
                  listenfds_count(r->lfds) == 1 ? "" : "s");
    }
}

static void report_unused_listenfds(const struct run *r)
{
    struct listenfd_info info[16];
    size_t n;

    if (!r->lfds)
        return;
    n = listenfds_unused(r->lfds, info, 16);
    for (size_t i = 0; i < n && i < 16; i++)
        log_errx("socket activation: fd %d (%s, %s) matches no listen "
                 "address in the config",
                 info[i].fd, info[i].name, info[i].addr);
    if (n > 16)
        log_errx("socket activation: %zu more unused sockets", n - 16);
}

void run_daemon_started(struct run *r)
{
    report_unused_listenfds(r);
    notify_ready();
    status_start(r);
}

/* Every pipeline prepared first, then all started: READY=1 follows only
 * when each one listens. */
int run_pipelines_start(struct run *r)
{
    struct weir_list *pos, *tmp;
    struct pipeline *pl;
    unsigned failed = 0;
    int rc = 0;

    /* All of them, so that every error is reported at once. */
    for (size_t i = 0; i < r->conf->npipelines; i++) {
        int err = pipeline_prepare(&pl, &r->env, r->conf->pipelines[i], r->cref,
                                   NULL);

        if (pl)
            weir_list_push_tail(&r->pls, &pl->link);
        if (err) {
            failed++;
            if (!rc)
                rc = err;
        }
    }
    if (rc) {
        log_errx("%u pipeline%s could not start; exiting", failed,
                 failed == 1 ? "" : "s");
        return rc;
    }
    weir_list_for_each(pos, tmp, &r->pls) if (pipeline_start(weir_list_entry(
                                                  pos, struct pipeline,
                                                  link)) != 0) r->failures++;
    return 0;
}

/* The system call a loop's wait failed in, for the log. */
const char *run_loop_wait_call(const struct weir_loop *loop)
{
    return weir_loop_engine(loop) == WEIR_ENGINE_EPOLL ? "epoll_wait"
                                                       : "io_uring_enter";
}

/* On the main loop: a worker's loop failed, so the streams on it are
 * stuck for good; waiting for them would never end. */
void run_worker_fail_tell(struct run *r)
{
    int err = atomic_load(&r->worker_err);

    if (r->fail_told || err == 0)
        return;
    r->fail_told = true;
    log_errx("worker %u: %s failed: %s (errno %d); exiting",
             atomic_load(&r->worker_failed), run_loop_wait_call(r->main),
             strerror(-err), -err);
}

static void worker_fail_task(struct weir_task *t)
{
    struct run *r = weir_container_of(t, struct run, fail_task);

    run_worker_fail_tell(r);
    r->exit_status = EX_OSERR;
    r->finished = true;
    weir_loop_stop(r->main);
}

/* On the failing worker's thread, which ends after this. The first
 * failure is kept; the main loop, once there is one, reports it. */
static void worker_failed(void *arg, unsigned index, int err)
{
    struct run *r = arg;
    int none = 0;
    struct weir_loop *main;

    if (atomic_compare_exchange_strong(&r->worker_err, &none, err))
        atomic_store(&r->worker_failed, index);
    /* Pairs with the store in workers_start: either this sees the main
     * loop, or workers_start sees worker_err (both seq_cst). */
    main = atomic_load(&r->fail_loop);
    if (main)
        weir_loop_post(main, &r->fail_task);
}

int run_workers_start(struct run *r)
{
    struct weir_workers_options wo = {0};
    struct weir_loop_options lo = {0};
    unsigned n = worker_count(r->conf);
    int rc;

    wo.count = n;
    wo.buf_size = r->bufsz;
    wo.engine = r->conf->daemon.engine;
    wo.on_fail = worker_failed;
    wo.fail_arg = r;
    weir_task_init(&r->fail_task, worker_fail_task);
    /* pool_size of buffer address space per worker; pages are committed
     * only as buffers are first used, and idle ones given back. */
    wo.pool_buffers = (uint32_t)(r->conf->daemon.pool_size / r->bufsz);
    if (wo.pool_buffers < 16)
        wo.pool_buffers = 16;
    if (wo.pool_buffers > 16384) /* bounds the pool's bookkeeping */
        wo.pool_buffers = 16384;
    /* A few idle buffers stay resident for the next burst. */
    wo.trim_keep = 16;
    rc = weir_workers_start(&r->cx.workers, &wo);
    if (rc)
        return rc;
    lo.slot = n;
    lo.engine = r->conf->daemon.engine;
    rc = weir_loop_create(&r->main, &lo);
    if (rc) {
        weir_workers_stop(r->cx.workers);
        r->cx.workers = NULL;
        return rc;
    }
    r->cx.main = r->main;
    atomic_store(&r->fail_loop, r->main);
    if (atomic_load(&r->worker_err) != 0)
        weir_loop_post(r->main, &r->fail_task);
    r->cx.nworkers = n;
    sendpath_choose(&r->cx.paths);
    r->cx.report_line = r->mode->report_line;
    rc = stream_ctx_init(&r->cx);
    if (rc) {
        weir_workers_stop(r->cx.workers);
        r->cx.workers = NULL;
    }
    return rc;
}

unsigned long long run_fd_limit(void)
{
    unsigned long long limit = raise_fd_limit();

    size_fd_table(limit);
    return limit;
}
