/*
 * epoll_impl.h - the epoll engine's request record, shared by the engine
 * (epoll.c), its timer heap (timer_heap.c) and its I/O threads
 * (io_pool.c), with the two steps the I/O threads take for it: the read
 * or write call, and the loop's done list, where a result waits for the
 * next dispatch. Those are inline here, so that the threads' file calls
 * nothing back in epoll.c. Private to lib/io.
 */
#ifndef WEIR_IO_EPOLL_IMPL_H
#define WEIR_IO_EPOLL_IMPL_H

#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <sys/uio.h>

#include "loop_impl.h"

enum epl_kind {
    K_NOP,
    K_READ,
    K_WRITE,
    K_READV,
    K_WRITEV,
    K_RECV,
    K_SEND,
    K_SENDMSG,
    K_ACCEPT,
    K_ACCEPT_MS,
    K_CONNECT,
    K_SPLICE,
    K_POLL,
    K_CLOSE,
    K_TIMER,
};

enum epl_state {
    R_FREE,
    R_DONE,   /* has its result, on the done list */
    R_WAIT,   /* on an fd's wait list */
    R_LINKED, /* waits for the request before it */
    R_TIMER,  /* in the timer heap */
    R_POOL,   /* with the I/O threads */
};

/* The wait lists of an fd. */
enum { DIR_IN, DIR_OUT, DIR_POLL, NDIRS };

struct epl_req {
    struct weir_op *op;
    struct epl_req *next, *prev; /* done list, wait list or free list */
    struct epl_req *link;        /* the request linked after this one */
    struct epl_req *pred;        /* R_LINKED: the one it waits for */
    uint8_t kind, state, dir;
    bool link_next; /* weir_loop_link was called after starting it */
    bool no_nowait; /* the fd refused RWF_NOWAIT */
    int fd;         /* the fd of the call */
    int wfd;        /* the fd it waits on */
    int res;
    uint32_t want;          /* bytes asked for: less breaks a link */
    uint32_t partial;       /* a file read's bytes read before it had to wait */
    struct weir_loop *loop; /* R_POOL: the loop to post the result to */
    struct weir_task task;  /* R_POOL: how it comes back */
    struct epl_req *pool_next;
    union {
        struct {
            const struct iovec *iov;
            struct iovec one;
            unsigned n;
            int64_t off;
        } rw;
        struct {
            void *buf;
            const struct msghdr *msg;
            uint32_t len;
            int flags;
        } sock;
        struct {
            struct sockaddr *addr;
            socklen_t *addrlen;
            int flags;
        } acc;
        struct {
            const struct sockaddr *addr;
            socklen_t len;
        } conn;
        struct {
            int fd_out;
            int64_t off_in, off_out;
            unsigned flags;
        } spl;
        unsigned mask;
        struct {
            uint64_t deadline;
            unsigned idx;
        } tm;
    } a;
};

static inline int neg_errno(ssize_t n)
{
    return n < 0 ? -errno : (int)n;
}

/* r's read or write, with the RWF_ flags rwf: bytes or -errno. */
static inline int rw_call(struct epl_req *r, int rwf)
{
    bool wr = r->kind == K_WRITE || r->kind == K_WRITEV;
    ssize_t n;

    n = wr ? pwritev2(r->fd, r->a.rw.iov, (int)r->a.rw.n, r->a.rw.off, rwf)
           : preadv2(r->fd, r->a.rw.iov, (int)r->a.rw.n, r->a.rw.off, rwf);
    if (n < 0 && errno == ESPIPE && r->a.rw.off != -1) {
        /* A pipe or socket with an offset: io_uring ignores it there. */
        r->a.rw.off = -1;
        return rw_call(r, rwf);
    }
    return neg_errno(n);
}

/* Puts r on the loop's done list with its result, for the next
 * dispatch. */
static inline void done_push(struct weir_loop *loop, struct epl_req *r, int res)
{
    /* A file read finished off the fast path: what the first part read
     * counts, and an error after it is the next read's to report. */
    if (r->partial)
        res = res > 0 ? res + (int)r->partial : (int)r->partial;
    r->res = res;
    r->state = R_DONE;
    r->next = NULL;
    *loop->e.done_tail = r;
    loop->e.done_tail = &r->next;
}

#endif
