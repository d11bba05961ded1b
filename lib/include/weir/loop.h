/*
 * weir/loop.h - the per-worker event loop.
 *
 * A loop belongs to one thread, its owner: the thread that created it with
 * weir_loop_create and later calls weir_loop_run. Everything here is
 * owner-only unless it says "any thread". The kernel interface behind the
 * loop (io_uring, or the epoll engine: see Engines below) is not visible in
 * this interface: callers start operations, and a callback they embedded in
 * their own object runs when the operation completes.
 *
 * Engines. A loop runs on io_uring or on epoll, chosen when it is created
 * (weir_loop_options.engine): every operation below has the same meaning
 * and the same results on both. The epoll engine exists for the places
 * that deny io_uring (container runtimes' default seccomp profiles, the
 * kernel.io_uring_disabled sysctl). On it, a socket operation is tried at
 * once and, when it would block, retried when epoll reports the socket
 * ready; a listening socket given to accept and the fds given to splice
 * are put in non-blocking mode; a read of a regular file is tried with
 * RWF_NOWAIT and, when it would wait for the disk, done by a small pool of
 * I/O threads; writes of regular files run on the loop's thread.
 *
 * Operations. A caller embeds a struct weir_op in the object the operation
 * works for, sets op->fn, and starts the operation with one of the
 * weir_loop_<verb> functions. Nothing is allocated per operation. Starting
 * only queues the request; the loop hands every request queued during one
 * turn to the kernel with one system call at the end of the turn. An op is
 * "pending" from the start call until its callback runs (until the last
 * callback, for an op that completes more than once): while it is pending,
 * the memory it names (the op itself, buffers, iovecs, addresses) must stay
 * valid.
 *
 * Freeing objects (mark and reap). Completions arrive in batches, and a
 * callback earlier in a batch may decide to free an object that a later
 * completion of the same batch still points to. So an owner never frees an
 * object from a callback while any op of it is pending; it cancels them,
 * and once none is pending it schedules the free with weir_loop_defer, which
 * runs after the whole batch has been dispatched.
 *
 * Tasks. Work for a loop can be posted from any thread (weir_loop_post): a
 * struct weir_task embedded in the caller's object, run on the loop's thread
 * at least once after the post. Posting a task that is already queued does
 * not queue it twice; the one run covers both posts. A sleeping loop is
 * woken by the post; a running one picks the task up on its next turn.
 */
#ifndef WEIR_LOOP_H
#define WEIR_LOOP_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>
#include <sys/uio.h>

#ifdef __cplusplus
extern "C" {
#endif

struct weir_loop;
struct weir_op;

/* Callback flag: the op will complete again (multishot); it stays pending. */
#define WEIR_OP_MORE (1u << 0)

/* Called on the owner thread with the result: >= 0 on success (bytes,
 * a new fd, ...) or -errno, as the matching system call would report. */
typedef void (*weir_op_fn)(struct weir_op *op, int res, uint32_t flags);

struct weir_op {
    weir_op_fn fn; /* set by the caller before starting the op */
    bool pending;  /* read-only for the caller */
    void *impl;    /* private: the engine's record of a pending op */
};

/* Timer. The callback gets -ETIME when it fires, -ECANCELED when stopped. */
struct weir_timer {
    struct weir_op op;
    struct {
        int64_t tv_sec;
        long long tv_nsec;
    } ts; /* private: the kernel reads it at submission */
};

struct weir_task;
typedef void (*weir_task_fn)(struct weir_task *t);

struct weir_task {
    weir_task_fn fn;
    struct weir_task *next;  /* private: inbox link */
    _Atomic uint32_t queued; /* private: 1 while in an inbox */
};

/* Work deferred to the end of the current batch (weir_loop_defer). */
struct weir_reap {
    void (*fn)(struct weir_reap *r);
    struct weir_reap *next; /* private */
};

/* How a loop wakes another that sleeps. */
enum weir_doorbell {
    WEIR_DOORBELL_DEFAULT = 0,
    WEIR_DOORBELL_EVENTFD,  /* write(2) to the target's eventfd */
    WEIR_DOORBELL_MSG_RING, /* IORING_OP_MSG_RING from the sender's ring */
};

/*
 * The kernel interface a loop runs on. AUTO tries io_uring and falls back
 * to epoll when io_uring is refused: io_uring_setup failing with EPERM,
 * EACCES, ENOSYS or ENOMEM, or kernel.io_uring_disabled being 2. The
 * environment variable WEIR_ENGINE (io_uring or epoll), read once per
 * process, replaces AUTO; an explicit choice ignores it.
 */
enum weir_engine {
    WEIR_ENGINE_AUTO = 0,
    WEIR_ENGINE_IO_URING,
    WEIR_ENGINE_EPOLL,
};

struct weir_loop_options {
    enum weir_engine engine; /* 0: AUTO */
    unsigned entries;        /* submission queue size; 0: 256 */
    unsigned slot;           /* the owner's thread slot (worker index) */
    enum weir_doorbell bell; /* how this loop rings others */
    /* Backend setup flags; 0 picks the measured default. Only for
     * benchmarks comparing them (WEIR_LOOP_URING_* below). */
    uint32_t uring_flags;
    bool uring_flags_set; /* use uring_flags even when 0 */
    /* How the epoll engine reads regular files; 0 picks the measured
     * default. Only for benchmarks comparing them. */
    enum weir_loop_file_reads {
        WEIR_LOOP_FILE_READS_DEFAULT = 0,
        WEIR_LOOP_FILE_READS_NOWAIT_BLOCK,   /* RWF_NOWAIT, else pread here */
        WEIR_LOOP_FILE_READS_NOWAIT_THREADS, /* RWF_NOWAIT, else a thread */
        WEIR_LOOP_FILE_READS_THREADS,        /* every read on a thread */
        WEIR_LOOP_FILE_READS_BLOCK,          /* pread here, always */
    } file_reads;
};

#define WEIR_LOOP_URING_COOP_TASKRUN  (1u << 8)
#define WEIR_LOOP_URING_SINGLE_ISSUER (1u << 12)
#define WEIR_LOOP_URING_DEFER_TASKRUN (1u << 13)

/*
 * Creates a loop owned by the calling thread. Returns 0, or -errno when the
 * kernel refuses: with engine IO_URING, -EPERM (io_uring disabled by sysctl
 * or blocked by a seccomp profile), -ENOSYS (a kernel without io_uring),
 * -ENOMEM (locked memory limit); on any engine -EMFILE.
 * weir_loop_strerror explains each.
 */
int weir_loop_create(struct weir_loop **out,
                     const struct weir_loop_options *opts);

/* Owner. Frees the loop. Pending ops are abandoned: their memory must stay
 * valid until this returns, and their callbacks never run. Tasks still
 * queued are not run, and none may be posted to it any more. */
void weir_loop_destroy(struct weir_loop *loop);

/* Any thread. A sentence for an operator: what failed when weir_loop_create
 * returned `err` (a negative errno) and how to enable io_uring. */
const char *weir_loop_strerror(int err);

/* Any thread. The engine the loop runs on (never AUTO). */
enum weir_engine weir_loop_engine(const struct weir_loop *loop);

/* Any thread. Why the loop runs on its engine, for an operator: "asked
 * for", "WEIR_ENGINE=epoll" (or =io_uring), "io_uring is available", or
 * what refused io_uring ("kernel.io_uring_disabled is 2", "io_uring_setup
 * failed with EPERM (a seccomp profile or kernel.io_uring_disabled)", and
 * the same for EACCES, ENOSYS, ENOMEM). A static string. */
const char *weir_loop_engine_reason(const struct weir_loop *loop);

/* "io_uring", "epoll" or "auto". */
const char *weir_engine_name(enum weir_engine engine);

/* Parses "auto", "io_uring" or "epoll". Returns 0 or -EINVAL. */
int weir_engine_parse(const char *name, enum weir_engine *out);

/*
 * Owner. Runs turns until weir_loop_stop: posted tasks, then one submission
 * of everything queued (sleeping in the kernel when there is nothing else
 * to do), then the batch of completions and the deferred work. Returns 0,
 * or -errno when the kernel fails the loop itself.
 */
int weir_loop_run(struct weir_loop *loop);

/* Owner, usually from a callback or task: weir_loop_run returns after the
 * current turn. From another thread, post a task that calls this. */
void weir_loop_stop(struct weir_loop *loop);

/* Any thread. The loop the calling thread is running (inside
 * weir_loop_run), or NULL. */
struct weir_loop *weir_loop_current(void);

/* Any thread. The owner's thread slot given at creation. */
unsigned weir_loop_slot(const struct weir_loop *loop);

/* Owner. A pointer the caller attaches to the loop. */
void weir_loop_set_data(struct weir_loop *loop, void *data);
void *weir_loop_data(const struct weir_loop *loop);

/* Owner. Ops started and not yet completed. */
uint32_t weir_loop_pending(const struct weir_loop *loop);
/* Any thread. The turns the loop has run so far (a statistic, read
 * relaxed: it orders nothing). */
uint64_t weir_loop_turns(const struct weir_loop *loop);

/* Any thread. Initialises a task before its first post. */
static inline void weir_task_init(struct weir_task *t, weir_task_fn fn)
{
    t->fn = fn;
    t->next = NULL;
    atomic_init(&t->queued, 0);
}

/* Any thread. Runs t->fn on the loop's thread at least once after this
 * call. Never fails and never blocks. Returns true when this call queued
 * the task, false when it was queued already (and one run covers both). */
bool weir_loop_post(struct weir_loop *loop, struct weir_task *t);

/* Owner. Hands the requests queued so far (doorbells of posts to other
 * loops included) to the kernel now instead of at the end of the turn:
 * for a callback that queued work for others and is about to compute for
 * a while. */
void weir_loop_flush(struct weir_loop *loop);

/* Owner. Runs r->fn after every callback of the current batch. */
void weir_loop_defer(struct weir_loop *loop, struct weir_reap *r);

/*
 * Owner. Operations. Each returns 0 once the request is queued, or -EBUSY
 * when the submission queue is full even after flushing it to the kernel
 * (the caller retries on a later turn). Results come to op->fn.
 */
int weir_loop_nop(struct weir_loop *loop, struct weir_op *op);
int weir_loop_read(struct weir_loop *loop, struct weir_op *op, int fd,
                   void *buf, uint32_t len, uint64_t off);
int weir_loop_write(struct weir_loop *loop, struct weir_op *op, int fd,
                    const void *buf, uint32_t len, uint64_t off);
int weir_loop_readv(struct weir_loop *loop, struct weir_op *op, int fd,
                    const struct iovec *iov, unsigned n, uint64_t off);
int weir_loop_writev(struct weir_loop *loop, struct weir_op *op, int fd,
                     const struct iovec *iov, unsigned n, uint64_t off);
int weir_loop_recv(struct weir_loop *loop, struct weir_op *op, int fd,
                   void *buf, uint32_t len, int flags);
int weir_loop_send(struct weir_loop *loop, struct weir_op *op, int fd,
                   const void *buf, uint32_t len, int flags);
int weir_loop_sendmsg(struct weir_loop *loop, struct weir_op *op, int fd,
                      const struct msghdr *msg, int flags);
int weir_loop_accept(struct weir_loop *loop, struct weir_op *op, int fd,
                     struct sockaddr *addr, socklen_t *addrlen, int flags);
/* Accepts every connection until canceled or failed: one callback per
 * connection, with WEIR_OP_MORE while it keeps going. A callback without
 * WEIR_OP_MORE is the last; restart it then if still wanted. */
int weir_loop_accept_multishot(struct weir_loop *loop, struct weir_op *op,
                               int fd, int flags);
int weir_loop_connect(struct weir_loop *loop, struct weir_op *op, int fd,
                      const struct sockaddr *addr, socklen_t addrlen);
/* off_in/off_out: -1 for "the fd's current position / a pipe". */
int weir_loop_splice(struct weir_loop *loop, struct weir_op *op, int fd_in,
                     int64_t off_in, int fd_out, int64_t off_out, uint32_t len,
                     unsigned flags);
/* One-shot readiness wait; mask is POLLIN/POLLOUT/... */
int weir_loop_poll(struct weir_loop *loop, struct weir_op *op, int fd,
                   unsigned mask);
int weir_loop_close(struct weir_loop *loop, struct weir_op *op, int fd);

/* Owner. Makes the op queued last wait for the next one queued (linked
 * requests, e.g. splice into a pipe then out of it): if it fails, the next
 * completes with -ECANCELED. */
void weir_loop_link(struct weir_loop *loop);

/* Owner. Asks the kernel to cancel a pending op: it completes with
 * -ECANCELED (or its result, if it finished first). Returns 0, -EBUSY,
 * or -ENOENT when op is not pending. */
int weir_loop_cancel(struct weir_loop *loop, struct weir_op *op);

/* Owner. Starts t, firing once `ns` nanoseconds from now. The callback is
 * t->op.fn. */
int weir_loop_timer_start(struct weir_loop *loop, struct weir_timer *t,
                          uint64_t ns);

/* Owner. Stops a pending timer: its callback gets -ECANCELED unless it had
 * fired already. Returns 0, -EBUSY, or -ENOENT when not pending. */
int weir_loop_timer_stop(struct weir_loop *loop, struct weir_timer *t);

#ifdef __cplusplus
}
#endif

#endif /* WEIR_LOOP_H */
