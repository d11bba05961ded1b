/*
 * epoll.c - the epoll engine of the event loop, for kernels and containers
 * that refuse io_uring.
 *
 * Each started op gets a request record from the loop's own free list
 * (blocks of records are allocated as the loop first needs them and kept,
 * so steady state allocates nothing). The op's system call is made at
 * once, without blocking (MSG_DONTWAIT, RWF_NOWAIT, or the fd in
 * non-blocking mode): most sends and reads succeed then, and that saves
 * the epoll round trip that is the engine's main cost. A result goes on
 * the done list and its callback runs in the next dispatch, never inside
 * the start call, exactly as a completion from io_uring would. A call that
 * would block puts the request on its fd's wait list (reads, writes,
 * polls) and the fd in the epoll set; when epoll reports the fd ready, the
 * dispatch retries the waiting requests in order until one would block
 * again.
 *
 * The fd is registered edge-triggered for input and output at once and
 * stays registered: a readiness change nobody waits for costs nothing, and
 * a request waits only after its call found the fd not ready, so the next
 * edge is the one it needs. Each time a wait begins on an fd with no other
 * waiter, the registration is renewed with EPOLL_CTL_MOD (EPOLL_CTL_ADD
 * when the kernel has none): an fd closed and reused since the last wait
 * (callers close fds with close(2), which this file never sees) is then
 * registered again, and MOD re-reports a readiness that is already there.
 *
 * Regular files cannot be added to epoll (EPERM): they are always ready.
 * A read tries RWF_NOWAIT first (page-cache hits, the common case for a
 * file being served, cost nothing more), and what would wait for the disk
 * goes to a small pool of I/O threads shared by the process (io_pool.c),
 * which posts the result back as a task, so a cold read never holds the
 * loop and the other streams on it. Writes to regular files block on the
 * loop's thread (page-cache writes, rarely long).
 *
 * Linked requests (weir_loop_link): the second waits until the first
 * completes; a first that fails or transfers less than asked for completes
 * the second with -ECANCELED, as io_uring does. Timers are a min-heap of
 * deadlines on CLOCK_MONOTONIC (timer_heap.c), waited for with
 * epoll_pwait2's nanosecond timeout. The doorbell is the loop's eventfd in
 * the epoll set.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include "epoll_impl.h"
#include "io_pool.h"
#include "loop_impl.h"
#include "timer_heap.h"

struct epl_fd {
    struct epl_req *head[NDIRS], *tail[NDIRS];
};

#define REQ_BLOCK  64
#define MAX_EVENTS 64

static uint64_t now_ns(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* ---- request records ---- */

static struct epl_req *req_get(struct weir_loop *loop)
{
    struct loop_epoll *e = &loop->e;
    struct epl_req *r = e->free_reqs;

    if (!r) {
        struct epl_req **blocks, *blk;

        blocks = realloc(e->blocks, (e->nblocks + 1) * sizeof(*blocks));
        if (!blocks)
            return NULL;
        e->blocks = blocks;
        blk = calloc(REQ_BLOCK, sizeof(*blk));
        if (!blk)
            return NULL;
        blocks[e->nblocks++] = blk;
        for (unsigned i = 0; i < REQ_BLOCK; i++) {
            blk[i].next = e->free_reqs;
            e->free_reqs = &blk[i];
        }
        r = e->free_reqs;
    }
    e->free_reqs = r->next;
    *r = (struct epl_req){.fd = -1, .wfd = -1};
    return r;
}

static void req_put(struct weir_loop *loop, struct epl_req *r)
{
    if (loop->e.last == r)
        loop->e.last = NULL;
    r->state = R_FREE;
    r->next = loop->e.free_reqs;
    loop->e.free_reqs = r;
}

/* ---- fds and their wait lists ---- */

static struct epl_fd *fd_slot(struct weir_loop *loop, int fd)
{
    struct loop_epoll *e = &loop->e;

    if ((unsigned)fd >= e->nfds) {
        unsigned n = e->nfds ? e->nfds : 64;
        struct epl_fd *fds;

        while (n <= (unsigned)fd)
            n *= 2;
        fds = realloc(e->fds, n * sizeof(*fds));
        if (!fds)
            return NULL;
        memset(fds + e->nfds, 0, (n - e->nfds) * sizeof(*fds));
        e->fds = fds;
        e->nfds = n;
    }
    return &e->fds[fd];
}

static bool fd_idle(const struct epl_fd *f)
{
    return !f->head[DIR_IN] && !f->head[DIR_OUT] && !f->head[DIR_POLL];
}

/* Renews the fd's registration; -EPERM for fds epoll cannot watch. */
static int fd_arm(struct weir_loop *loop, int fd)
{
    struct epoll_event ev = {
        .events = EPOLLIN | EPOLLOUT | EPOLLRDHUP | EPOLLET,
        .data.fd = fd,
    };

    if (epoll_ctl(loop->e.epfd, EPOLL_CTL_MOD, fd, &ev) == 0)
        return 0;
    if (errno == ENOENT && epoll_ctl(loop->e.epfd, EPOLL_CTL_ADD, fd, &ev) == 0)
        return 0;
    return -errno;
}

/* Puts r on wfd's list `dir`. Returns 0, -EPERM when wfd is always ready
 * (a regular file), or another -errno. `arm` renews the registration even
 * when others wait (a new wait that needs the current state reported). */
static int wait_add(struct weir_loop *loop, struct epl_req *r, int dir,
                    bool arm)
{
    struct epl_fd *f = r->wfd >= 0 ? fd_slot(loop, r->wfd) : NULL;
    int err;

    if (!f)
        return r->wfd >= 0 ? -ENOMEM : -EBADF;
    if (arm || fd_idle(f)) {
        err = fd_arm(loop, r->wfd);
        if (err)
            return err;
        f = &loop->e.fds[r->wfd];
    }
    r->dir = (uint8_t)dir;
    r->state = R_WAIT;
    r->next = NULL;
    r->prev = f->tail[dir];
    if (f->tail[dir])
        f->tail[dir]->next = r;
    else
        f->head[dir] = r;
    f->tail[dir] = r;
    loop->e.nwait++;
    return 0;
}

static void wait_del(struct weir_loop *loop, struct epl_req *r)
{
    struct epl_fd *f = &loop->e.fds[r->wfd];

    if (r->prev)
        r->prev->next = r->next;
    else
        f->head[r->dir] = r->next;
    if (r->next)
        r->next->prev = r->prev;
    else
        f->tail[r->dir] = r->prev;
    r->next = r->prev = NULL;
    loop->e.nwait--;
}

/* ---- the calls ---- */

/* Runs `fd` in non-blocking mode from now on (a no-op for regular files). */
static void set_nonblock(int fd)
{
    int fl = fcntl(fd, F_GETFL);

    if (fl >= 0 && !(fl & O_NONBLOCK))
        (void)fcntl(fd, F_SETFL, fl | O_NONBLOCK);
}

/* A read or write that must not block. */
static int rw_try(struct epl_req *r)
{
    int fl, res;

    if (!r->no_nowait) {
        res = rw_call(r, RWF_NOWAIT);
        if (res != -EOPNOTSUPP)
            return res;
        r->no_nowait = true;
    }
    /* An fd without RWF_NOWAIT (a terminal, some devices): non-blocking
     * for the length of the call. */
    fl = fcntl(r->fd, F_GETFL);
    if (fl < 0)
        return -errno;
    if (!(fl & O_NONBLOCK))
        (void)fcntl(r->fd, F_SETFL, fl | O_NONBLOCK);
    res = rw_call(r, 0);
    if (!(fl & O_NONBLOCK))
        (void)fcntl(r->fd, F_SETFL, fl);
    return res;
}

static int connect_try(struct epl_req *r, bool first)
{
    int fl, err = 0, res;
    socklen_t len = sizeof(err);

    if (!first) {
        if (getsockopt(r->fd, SOL_SOCKET, SO_ERROR, &err, &len) != 0)
            return -errno;
        if (err)
            return -err;
    }
    fl = fcntl(r->fd, F_GETFL);
    if (fl < 0)
        return -errno;
    if (!(fl & O_NONBLOCK))
        (void)fcntl(r->fd, F_SETFL, fl | O_NONBLOCK);
    res = connect(r->fd, r->a.conn.addr, r->a.conn.len) == 0 ? 0 : -errno;
    if (!(fl & O_NONBLOCK))
        (void)fcntl(r->fd, F_SETFL, fl);
    if (res == -EISCONN && !first)
        return 0;
    if (res == -EINPROGRESS || res == -EALREADY)
        return -EAGAIN;
    return res;
}

static int splice_try(struct epl_req *r)
{
    loff_t in = r->a.spl.off_in, out = r->a.spl.off_out;
    ssize_t n;

    n = splice(r->fd, r->a.spl.off_in < 0 ? NULL : &in, r->a.spl.fd_out,
               r->a.spl.off_out < 0 ? NULL : &out, r->want,
               r->a.spl.flags | SPLICE_F_NONBLOCK);
    return neg_errno(n);
}

/* One attempt of r's call: its result, or -EAGAIN to wait. */
static int req_try(struct epl_req *r)
{
    ssize_t n;

    switch (r->kind) {
    case K_READ:
    case K_WRITE:
    case K_READV:
    case K_WRITEV:
        return rw_try(r);
    case K_RECV:
        n = recv(r->fd, r->a.sock.buf, r->a.sock.len,
                 r->a.sock.flags | MSG_DONTWAIT);
        return neg_errno(n);
    case K_SEND:
        n = send(r->fd, r->a.sock.buf, r->a.sock.len,
                 r->a.sock.flags | MSG_DONTWAIT);
        return neg_errno(n);
    case K_SENDMSG:
        n = sendmsg(r->fd, r->a.sock.msg, r->a.sock.flags | MSG_DONTWAIT);
        return neg_errno(n);
    case K_ACCEPT:
    case K_ACCEPT_MS:
        n = accept4(r->fd, r->a.acc.addr, r->a.acc.addrlen, r->a.acc.flags);
        return neg_errno(n);
    case K_CONNECT:
        return connect_try(r, false);
    case K_SPLICE:
        return splice_try(r);
    default:
        return -EINVAL;
    }
}

static int req_dir(const struct epl_req *r)
{
    switch (r->kind) {
    case K_WRITE:
    case K_WRITEV:
    case K_SEND:
    case K_SENDMSG:
    case K_CONNECT:
        return DIR_OUT;
    default:
        return DIR_IN;
    }
}

/* A blocking call, for fds that are always ready (regular files). */
static int req_block(struct epl_req *r)
{
    if (r->kind == K_READ || r->kind == K_WRITE || r->kind == K_READV ||
        r->kind == K_WRITEV)
        return rw_call(r, 0);
    if (r->kind == K_SPLICE) {
        loff_t in = r->a.spl.off_in, out = r->a.spl.off_out;

        return neg_errno(splice(
            r->fd, r->a.spl.off_in < 0 ? NULL : &in, r->a.spl.fd_out,
            r->a.spl.off_out < 0 ? NULL : &out, r->want, r->a.spl.flags));
    }
    return -EAGAIN;
}

/* A splice that would block: waits on the side that is not ready. False
 * when both look ready (a file side that would wait for the disk, which
 * epoll cannot report). */
static bool splice_wait_fd(struct epl_req *r)
{
    struct pollfd p[2] = {{.fd = r->fd, .events = POLLIN},
                          {.fd = r->a.spl.fd_out, .events = POLLOUT}};
    short bad = POLLHUP | POLLERR;

    r->wfd = r->a.spl.fd_out;
    r->dir = DIR_OUT;
    if (poll(p, 2, 0) < 0)
        return true;
    if (!(p[0].revents & (POLLIN | bad))) {
        r->wfd = r->fd;
        r->dir = DIR_IN;
        return true;
    }
    return !(p[1].revents & (POLLOUT | bad));
}

static bool link_breaks(const struct epl_req *r, int res)
{
    if (res < 0)
        return true;
    switch (r->kind) {
    case K_READ:
    case K_WRITE:
    case K_READV:
    case K_WRITEV:
    case K_SPLICE:
        return (uint32_t)res < r->want;
    default:
        return false;
    }
}

static bool is_file_read(const struct epl_req *r)
{
    struct stat st;

    return (r->kind == K_READ || r->kind == K_READV) &&
           fstat(r->fd, &st) == 0 && S_ISREG(st.st_mode);
}

static void req_run(struct weir_loop *loop, struct epl_req *r);

/* The final completion of r: its record is free before the callback, which
 * may start the op again. */
static void req_finish(struct weir_loop *loop, struct epl_req *r, int res)
{
    struct weir_op *op = r->op;
    struct epl_req *next = r->link;
    bool broke = link_breaks(r, res);

    op->impl = NULL;
    req_put(loop, r);
    if (next) {
        /* Before the callback, so that a cancel from it finds the linked
         * request queued or waiting. */
        next->pred = NULL;
        if (broke)
            done_push(loop, next, -ECANCELED);
        else
            req_run(loop, next);
    }
    weir__loop_complete(loop, op, res, 0);
}

/* Starts r's call now: r gets its result on the done list, or waits. */
static void req_run(struct weir_loop *loop, struct epl_req *r)
{
    struct pollfd p;
    int res, err;

    if ((loop->e.file_reads == WEIR_LOOP_FILE_READS_THREADS ||
         loop->e.file_reads == WEIR_LOOP_FILE_READS_BLOCK) &&
        is_file_read(r)) {
        if (loop->e.file_reads == WEIR_LOOP_FILE_READS_BLOCK ||
            !weir__io_pool_submit(loop, r))
            done_push(loop, r, rw_call(r, 0));
        return;
    }
    switch (r->kind) {
    case K_NOP:
        done_push(loop, r, 0);
        return;
    case K_CLOSE:
        done_push(loop, r, close(r->fd) == 0 ? 0 : -errno);
        return;
    case K_POLL:
        p = (struct pollfd){.fd = r->fd, .events = (short)r->a.mask};
        res = poll(&p, 1, 0);
        if (res != 0) {
            done_push(loop, r, res < 0 ? -errno : p.revents);
            return;
        }
        r->wfd = r->fd;
        err = wait_add(loop, r, DIR_POLL, true);
        if (err)
            done_push(loop, r, err == -EPERM ? (int)(r->a.mask & 0xffff) : err);
        return;
    case K_ACCEPT_MS:
        /* The callbacks run from the dispatch: the arm reports pending
         * connections as an event. */
        set_nonblock(r->fd);
        r->wfd = r->fd;
        err = wait_add(loop, r, DIR_IN, true);
        if (err)
            done_push(loop, r, err);
        return;
    case K_ACCEPT:
        set_nonblock(r->fd);
        res = req_try(r);
        break;
    case K_CONNECT:
        res = connect_try(r, true);
        break;
    case K_SPLICE:
        set_nonblock(r->fd);
        set_nonblock(r->a.spl.fd_out);
        res = req_try(r);
        break;
    case K_READ:
        res = req_try(r);
        if (res > 0 && (uint32_t)res < r->want && r->a.rw.off >= 0 &&
            is_file_read(r)) {
            /* RWF_NOWAIT stopped at the first page not in the cache; a
             * file read is whole up to the end of the file, as on
             * io_uring, so the rest follows the slow path. */
            r->partial = (uint32_t)res;
            r->a.rw.one.iov_base = (char *)r->a.rw.one.iov_base + res;
            r->a.rw.one.iov_len -= (size_t)res;
            if (r->a.rw.off >= 0)
                r->a.rw.off += res;
            res = -EAGAIN;
        }
        break;
    default:
        res = req_try(r);
        break;
    }
    if (res != -EAGAIN && res != -EWOULDBLOCK) {
        done_push(loop, r, res);
        return;
    }
    if (r->kind == K_SPLICE) {
        err = splice_wait_fd(r) ? wait_add(loop, r, r->dir, false) : -EPERM;
    } else {
        r->wfd = r->fd;
        err = wait_add(loop, r, req_dir(r), false);
    }
    if (err == -EPERM) {
        /* Always ready as far as epoll knows: a regular file whose pages
         * are not cached. */
        if (loop->e.file_reads == WEIR_LOOP_FILE_READS_NOWAIT_THREADS &&
            (r->kind == K_READ || r->kind == K_READV) &&
            weir__io_pool_submit(loop, r))
            return;
        err = req_block(r);
    }
    if (err != 0 || r->state != R_WAIT)
        done_push(loop, r, err);
}

/* ---- starting ops ---- */

static struct epl_req *req_new(struct weir_loop *loop, struct weir_op *op,
                               int kind, int fd)
{
    struct epl_req *r = req_get(loop);

    if (!r)
        return NULL;
    r->op = op;
    r->kind = (uint8_t)kind;
    r->fd = fd;
    return r;
}

/* Queues r: runs it, or links it behind the request started before it. */
static int req_start(struct weir_loop *loop, struct epl_req *r)
{
    struct epl_req *prev = loop->e.last;

    r->op->impl = r;
    loop_op_started(loop, r->op);
    loop->e.last = r;
    if (prev && prev->link_next) {
        prev->link_next = false;
        if (prev->state == R_DONE) {
            if (link_breaks(prev, prev->res))
                done_push(loop, r, -ECANCELED);
            else
                req_run(loop, r);
        } else {
            prev->link = r;
            r->pred = prev;
            r->state = R_LINKED;
        }
        return 0;
    }
    req_run(loop, r);
    return 0;
}

#define NEW_REQ(loop, r, op, kind, fd)                                         \
    do {                                                                       \
        (r) = req_new((loop), (op), (kind), (fd));                             \
        if (!(r))                                                              \
            return -EBUSY;                                                     \
    } while (0)

static int epl_nop(struct weir_loop *loop, struct weir_op *op)
{
    struct epl_req *r;

    NEW_REQ(loop, r, op, K_NOP, -1);
    return req_start(loop, r);
}

static int epl_rw(struct weir_loop *loop, struct weir_op *op, int kind, int fd,
                  const struct iovec *iov, unsigned n, uint64_t off)
{
    struct epl_req *r;
    uint64_t want = 0;

    NEW_REQ(loop, r, op, kind, fd);
    if (iov) {
        r->a.rw.iov = iov;
        for (unsigned i = 0; i < n; i++)
            want += iov[i].iov_len;
    } else {
        r->a.rw.iov = &r->a.rw.one;
        want = r->a.rw.one.iov_len;
    }
    r->a.rw.n = n;
    r->a.rw.off = off == (uint64_t)-1 ? -1 : (int64_t)off;
    r->want = want > UINT32_MAX ? UINT32_MAX : (uint32_t)want;
    return req_start(loop, r);
}

static int epl_read(struct weir_loop *loop, struct weir_op *op, int fd,
                    void *buf, uint32_t len, uint64_t off)
{
    struct epl_req *r;

    NEW_REQ(loop, r, op, K_READ, fd);
    r->a.rw.one = (struct iovec){buf, len};
    r->a.rw.iov = &r->a.rw.one;
    r->a.rw.n = 1;
    r->a.rw.off = off == (uint64_t)-1 ? -1 : (int64_t)off;
    r->want = len;
    return req_start(loop, r);
}

static int epl_write(struct weir_loop *loop, struct weir_op *op, int fd,
                     const void *buf, uint32_t len, uint64_t off)
{
    struct epl_req *r;

    NEW_REQ(loop, r, op, K_WRITE, fd);
    r->a.rw.one = (struct iovec){(void *)buf, len};
    r->a.rw.iov = &r->a.rw.one;
    r->a.rw.n = 1;
    r->a.rw.off = off == (uint64_t)-1 ? -1 : (int64_t)off;
    r->want = len;
    return req_start(loop, r);
}

static int epl_readv(struct weir_loop *loop, struct weir_op *op, int fd,
                     const struct iovec *iov, unsigned n, uint64_t off)
{
    return epl_rw(loop, op, K_READV, fd, iov, n, off);
}

static int epl_writev(struct weir_loop *loop, struct weir_op *op, int fd,
                      const struct iovec *iov, unsigned n, uint64_t off)
{
    return epl_rw(loop, op, K_WRITEV, fd, iov, n, off);
}

static int epl_recv(struct weir_loop *loop, struct weir_op *op, int fd,
                    void *buf, uint32_t len, int flags)
{
    struct epl_req *r;

    NEW_REQ(loop, r, op, K_RECV, fd);
    r->a.sock.buf = buf;
    r->a.sock.len = len;
    r->a.sock.flags = flags;
    return req_start(loop, r);
}

static int epl_send(struct weir_loop *loop, struct weir_op *op, int fd,
                    const void *buf, uint32_t len, int flags)
{
    struct epl_req *r;

    NEW_REQ(loop, r, op, K_SEND, fd);
    r->a.sock.buf = (void *)buf;
    r->a.sock.len = len;
    r->a.sock.flags = flags;
    return req_start(loop, r);
}

static int epl_sendmsg(struct weir_loop *loop, struct weir_op *op, int fd,
                       const struct msghdr *msg, int flags)
{
    struct epl_req *r;

    NEW_REQ(loop, r, op, K_SENDMSG, fd);
    r->a.sock.msg = msg;
    r->a.sock.flags = flags;
    return req_start(loop, r);
}

static int epl_accept(struct weir_loop *loop, struct weir_op *op, int fd,
                      struct sockaddr *addr, socklen_t *addrlen, int flags)
{
    struct epl_req *r;

    NEW_REQ(loop, r, op, K_ACCEPT, fd);
    r->a.acc.addr = addr;
    r->a.acc.addrlen = addrlen;
    r->a.acc.flags = flags;
    return req_start(loop, r);
}

static int epl_accept_multishot(struct weir_loop *loop, struct weir_op *op,
                                int fd, int flags)
{
    struct epl_req *r;

    NEW_REQ(loop, r, op, K_ACCEPT_MS, fd);
    r->a.acc.flags = flags;
    return req_start(loop, r);
}

static int epl_connect(struct weir_loop *loop, struct weir_op *op, int fd,
                       const struct sockaddr *addr, socklen_t addrlen)
{
    struct epl_req *r;

    NEW_REQ(loop, r, op, K_CONNECT, fd);
    r->a.conn.addr = addr;
    r->a.conn.len = addrlen;
    return req_start(loop, r);
}

static int epl_splice(struct weir_loop *loop, struct weir_op *op, int fd_in,
                      int64_t off_in, int fd_out, int64_t off_out, uint32_t len,
                      unsigned flags)
{
    struct epl_req *r;

    NEW_REQ(loop, r, op, K_SPLICE, fd_in);
    r->a.spl.fd_out = fd_out;
    r->a.spl.off_in = off_in;
    r->a.spl.off_out = off_out;
    r->a.spl.flags = flags;
    r->want = len;
    return req_start(loop, r);
}

static int epl_poll(struct weir_loop *loop, struct weir_op *op, int fd,
                    unsigned mask)
{
    struct epl_req *r;

    NEW_REQ(loop, r, op, K_POLL, fd);
    r->a.mask = mask;
    return req_start(loop, r);
}

static int epl_close(struct weir_loop *loop, struct weir_op *op, int fd)
{
    struct epl_req *r;

    NEW_REQ(loop, r, op, K_CLOSE, fd);
    return req_start(loop, r);
}

static void epl_link(struct weir_loop *loop)
{
    if (loop->e.last)
        loop->e.last->link_next = true;
}

static int epl_cancel(struct weir_loop *loop, struct weir_op *op)
{
    struct epl_req *r = op->impl;

    if (!r)
        return -ENOENT;
    switch (r->state) {
    case R_WAIT:
        wait_del(loop, r);
        done_push(loop, r, -ECANCELED);
        break;
    case R_LINKED:
        /* Its followers are canceled when its result is dispatched. */
        r->pred->link = NULL;
        r->pred = NULL;
        done_push(loop, r, -ECANCELED);
        break;
    case R_TIMER:
        weir__timer_heap_remove(&loop->e, r);
        done_push(loop, r, -ECANCELED);
        break;
    default:
        /* Done already: it completes with its result. */
        break;
    }
    return 0;
}

static int epl_timer_start(struct weir_loop *loop, struct weir_timer *t,
                           uint64_t ns)
{
    struct epl_req *r;

    NEW_REQ(loop, r, &t->op, K_TIMER, -1);
    r->a.tm.deadline = now_ns() + ns;
    if (weir__timer_heap_push(&loop->e, r) != 0) {
        req_put(loop, r);
        return -EBUSY;
    }
    r->state = R_TIMER;
    t->op.impl = r;
    loop_op_started(loop, &t->op);
    return 0;
}

static int epl_timer_stop(struct weir_loop *loop, struct weir_timer *t)
{
    return epl_cancel(loop, &t->op);
}

/* ---- the turn ---- */

/* Retries the requests waiting on fd's list `dir`, in order, until one
 * would block again. The list is read afresh each time: callbacks start
 * and cancel requests. */
static void run_list(struct weir_loop *loop, int fd, int dir)
{
    for (;;) {
        struct epl_req *r = loop->e.fds[fd].head[dir];
        int res;

        if (!r)
            return;
        res = req_try(r);
        if ((res == -EAGAIN || res == -EWOULDBLOCK) && r->kind == K_SPLICE) {
            /* Its other side may be the one not ready now. */
            wait_del(loop, r);
            res = splice_wait_fd(r) ? wait_add(loop, r, r->dir, true) : -EPERM;
            if (res == -EPERM)
                req_finish(loop, r, req_block(r));
            else if (res)
                req_finish(loop, r, res);
            return;
        }
        if (res == -EAGAIN || res == -EWOULDBLOCK)
            return;
        if (r->kind == K_ACCEPT_MS) {
            if (res >= 0) {
                weir__loop_complete(loop, r->op, res, WEIR_OP_MORE);
                continue;
            }
            if (res == -ECONNABORTED || res == -EINTR)
                continue;
        }
        wait_del(loop, r);
        req_finish(loop, r, res);
    }
}

/* Completes the polls of fd that the event answers. They are taken off
 * the list first, since their callbacks may change it. */
static void run_polls(struct weir_loop *loop, int fd, uint32_t ev)
{
    struct epl_req *ready = NULL, **tail = &ready;
    struct epl_req *r = loop->e.fds[fd].head[DIR_POLL];

    while (r) {
        struct epl_req *next = r->next;
        unsigned revents = ev & (r->a.mask | EPOLLERR | EPOLLHUP);

        if (revents) {
            wait_del(loop, r);
            r->res = (int)revents;
            r->state = R_DONE;
            *tail = r;
            tail = &r->next;
        }
        r = next;
    }
    while (ready) {
        r = ready;
        ready = r->next;
        req_finish(loop, r, r->res);
    }
}

static void on_event(struct weir_loop *loop, int fd, uint32_t ev)
{
    if (fd == loop->efd) {
        uint64_t v;

        /* The wake was the point; the inbox is read next turn. */
        if (read(loop->efd, &v, sizeof(v)) < 0)
            return;
        return;
    }
    if ((unsigned)fd >= loop->e.nfds)
        return;
    if (ev & (EPOLLIN | EPOLLRDHUP | EPOLLHUP | EPOLLERR))
        run_list(loop, fd, DIR_IN);
    if (ev & (EPOLLOUT | EPOLLHUP | EPOLLERR))
        run_list(loop, fd, DIR_OUT);
    if (loop->e.fds[fd].head[DIR_POLL])
        run_polls(loop, fd, ev);
}

static void run_timers(struct weir_loop *loop)
{
    struct loop_epoll *e = &loop->e;
    uint64_t now;

    if (e->ntimers == 0)
        return;
    now = now_ns();
    while (e->ntimers && e->timers[0]->a.tm.deadline <= now) {
        struct epl_req *r = e->timers[0];

        weir__timer_heap_remove(e, r);
        req_finish(loop, r, -ETIME);
    }
}

static bool epl_idle(struct weir_loop *loop)
{
    struct loop_epoll *e = &loop->e;

    return !e->done_head &&
           !(e->ntimers && e->timers[0]->a.tm.deadline <= now_ns());
}

static int epl_wait(struct weir_loop *loop, struct epoll_event *evs, bool block)
{
    struct loop_epoll *e = &loop->e;
    struct timespec ts = {0}, *tsp = &ts;
    int n;

    if (block && e->ntimers) {
        uint64_t now = now_ns(), due = e->timers[0]->a.tm.deadline;
        uint64_t left = due > now ? due - now : 0;

        ts.tv_sec = (time_t)(left / 1000000000u);
        ts.tv_nsec = (long)(left % 1000000000u);
    } else if (block) {
        tsp = NULL;
    }
    if (!e->pwait2_missing) {
        n = epoll_pwait2(e->epfd, evs, MAX_EVENTS, tsp, NULL);
        if (n >= 0 || errno != ENOSYS)
            return n;
        e->pwait2_missing = true;
    }
    /* Rounded up, so a timer never fires early. */
    return epoll_wait(
        e->epfd, evs, MAX_EVENTS,
        !tsp ? -1 : (int)(ts.tv_sec * 1000 + (ts.tv_nsec + 999999) / 1000000));
}

static int epl_turn(struct weir_loop *loop, bool block)
{
    struct loop_epoll *e = &loop->e;
    struct epoll_event evs[MAX_EVENTS];
    struct epl_req *batch;
    int n = 0;

    e->last = NULL;
    /* With nothing waiting on an fd and no sleep, there is nothing for
     * epoll to say: the done list and the timers are the whole turn. */
    if (block || e->nwait) {
        n = epl_wait(loop, evs, block);
        if (n < 0) {
            if (errno != EINTR)
                return -errno;
            n = 0;
        }
    }
    /* The batch is what is there now; results of ops the callbacks start
     * wait for the next turn, after this batch's deferred work. */
    batch = e->done_head;
    e->done_head = NULL;
    e->done_tail = &e->done_head;
    while (batch) {
        struct epl_req *r = batch;

        batch = r->next;
        req_finish(loop, r, r->res);
    }
    for (int i = 0; i < n; i++)
        on_event(loop, evs[i].data.fd, evs[i].events);
    run_timers(loop);
    e->last = NULL;
    return 0;
}

static void epl_flush(struct weir_loop *loop)
{
    /* Every call was made when its op started; doorbells are written at
     * once. Nothing is queued for the kernel. */
    (void)loop;
}

static int epl_init(struct weir_loop *loop,
                    const struct weir_loop_options *opts)
{
    struct loop_epoll *e = &loop->e;
    struct epoll_event ev = {.events = EPOLLIN | EPOLLET, .data.fd = loop->efd};

    *e = (struct loop_epoll){.epfd = -1};
    e->file_reads =
        opts->file_reads ? opts->file_reads : WEIR_LOOP_FILE_READS_NOWAIT_BLOCK;
    atomic_init(&e->pool_jobs, 0);
    /* Started with the first loop rather than the first cold read, so
     * that they belong to the process's base memory from the start. */
    if (e->file_reads == WEIR_LOOP_FILE_READS_NOWAIT_THREADS ||
        e->file_reads == WEIR_LOOP_FILE_READS_THREADS)
        weir__io_pool_start();
    e->done_tail = &e->done_head;
    e->epfd = epoll_create1(EPOLL_CLOEXEC);
    if (e->epfd < 0)
        return -errno;
    if (epoll_ctl(e->epfd, EPOLL_CTL_ADD, loop->efd, &ev) != 0) {
        int err = -errno;

        close(e->epfd);
        return err;
    }
    /* Loops on this engine are woken through the eventfd only. */
    loop->bell = WEIR_DOORBELL_EVENTFD;
    return 0;
}

static void epl_exit(struct weir_loop *loop)
{
    struct loop_epoll *e = &loop->e;

    /* A read on an I/O thread writes into its record and posts to this
     * loop: wait for them (reads of regular files end soon). Acquire pairs
     * with the release decrement in pool_main (io_pool.c). */
    while (atomic_load_explicit(&e->pool_jobs, memory_order_acquire))
        usleep(100);
    close(e->epfd);
    for (unsigned i = 0; i < e->nblocks; i++)
        free(e->blocks[i]);
    free(e->blocks);
    free(e->fds);
    free(e->timers);
}

const struct loop_backend weir__loop_epoll_backend = {
    .init = epl_init,
    .exit = epl_exit,
    .idle = epl_idle,
    .turn = epl_turn,
    .flush = epl_flush,
    .ring = NULL,
    .nop = epl_nop,
    .read = epl_read,
    .write = epl_write,
    .readv = epl_readv,
    .writev = epl_writev,
    .recv = epl_recv,
    .send = epl_send,
    .sendmsg = epl_sendmsg,
    .accept = epl_accept,
    .accept_multishot = epl_accept_multishot,
    .connect = epl_connect,
    .splice = epl_splice,
    .poll = epl_poll,
    .close = epl_close,
    .link = epl_link,
    .cancel = epl_cancel,
    .timer_start = epl_timer_start,
    .timer_stop = epl_timer_stop,
};
