/*
 * loop_create.c - a loop's making, and the choice of its engine
 * (io_uring, or epoll where io_uring is refused or asked not to be used).
 * Apart from loop.c because it is the one place that names the backends
 * (uring.c, epoll.c), which themselves complete their ops through loop.c.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "loop_impl.h"

/* WEIR_ENGINE, read once: 0 unset (or not understood), else the engine. */
static _Atomic int env_engine = -1;

static enum weir_engine engine_from_env(void)
{
    int e = atomic_load_explicit(&env_engine, memory_order_relaxed);

    if (e < 0) {
        const char *s = getenv("WEIR_ENGINE");
        enum weir_engine parsed = WEIR_ENGINE_AUTO;

        if (s && weir_engine_parse(s, &parsed) != 0)
            parsed = WEIR_ENGINE_AUTO;
        e = (int)parsed;
        /* Relaxed: every thread computes the same value. */
        atomic_store_explicit(&env_engine, e, memory_order_relaxed);
    }
    return (enum weir_engine)e;
}

/* kernel.io_uring_disabled: 2 refuses every process. */
static bool uring_disabled_by_sysctl(void)
{
    char c = 0;
    int fd = open("/proc/sys/kernel/io_uring_disabled", O_RDONLY | O_CLOEXEC);

    if (fd < 0)
        return false;
    if (read(fd, &c, 1) != 1)
        c = 0;
    close(fd);
    return c == '2';
}

static const char *uring_refusal(int err)
{
    switch (err) {
    case -EPERM:
        return "io_uring_setup failed with EPERM (a seccomp profile or "
               "kernel.io_uring_disabled)";
    case -EACCES:
        return "io_uring_setup failed with EACCES";
    case -ENOSYS:
        return "io_uring_setup failed with ENOSYS (no io_uring in this "
               "kernel)";
    default:
        return "io_uring_setup failed with ENOMEM (locked-memory limit)";
    }
}

static bool uring_refused(int err)
{
    return err == -EPERM || err == -EACCES || err == -ENOSYS || err == -ENOMEM;
}

static int backend_init(struct weir_loop *loop,
                        const struct weir_loop_options *opts)
{
    enum weir_engine want = opts->engine;
    int err;

    loop->engine_reason = "asked for";
    if (want == WEIR_ENGINE_AUTO) {
        want = engine_from_env();
        if (want == WEIR_ENGINE_IO_URING)
            loop->engine_reason = "WEIR_ENGINE=io_uring";
        else if (want == WEIR_ENGINE_EPOLL)
            loop->engine_reason = "WEIR_ENGINE=epoll";
    }
    if (want == WEIR_ENGINE_AUTO) {
        if (uring_disabled_by_sysctl()) {
            want = WEIR_ENGINE_EPOLL;
            loop->engine_reason = "kernel.io_uring_disabled is 2";
        } else {
            loop->engine = WEIR_ENGINE_IO_URING;
            loop->be = &weir__loop_uring_backend;
            err = loop->be->init(loop, opts);
            if (err == 0) {
                loop->engine_reason = "io_uring is available";
                return 0;
            }
            if (!uring_refused(err))
                return err;
            want = WEIR_ENGINE_EPOLL;
            loop->engine_reason = uring_refusal(err);
        }
    }
    loop->engine = want;
    loop->be = want == WEIR_ENGINE_EPOLL ? &weir__loop_epoll_backend
                                         : &weir__loop_uring_backend;
    return loop->be->init(loop, opts);
}

int weir_loop_create(struct weir_loop **out,
                     const struct weir_loop_options *opts)
{
    static const struct weir_loop_options defaults = {0};
    struct weir_loop *loop;
    int err;

    if (!opts)
        opts = &defaults;
    if ((unsigned)opts->engine > WEIR_ENGINE_EPOLL)
        return -EINVAL;
    loop = aligned_alloc(WEIR_CACHELINE, (sizeof(*loop) + WEIR_CACHELINE - 1) &
                                             ~(size_t)(WEIR_CACHELINE - 1));
    if (!loop)
        return -ENOMEM;
    *loop = (struct weir_loop){0};
    loop->slot = opts->slot;
    loop->bell = opts->bell;
    loop->reap_tail = &loop->reap_head;
    atomic_init(&loop->inbox, 0);
    /* Non-blocking: io_uring polls it internally, epoll waits for it. */
    loop->efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    if (loop->efd < 0) {
        err = -errno;
        free(loop);
        return err;
    }
    err = backend_init(loop, opts);
    if (err) {
        close(loop->efd);
        free(loop);
        return err;
    }
    *out = loop;
    return 0;
}
