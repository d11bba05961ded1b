/*
 * file_send.c - a file range into a socket: linked SPLICE pairs through a
 * pipe, or sendfile(2) when the socket is writable.
 *
 * A round queues SPLICE(file -> pipe, n) linked to SPLICE(pipe -> socket,
 * n), where n is at most the pipe's size, so the pipe never holds more
 * than one round. A short first splice breaks the link (the second comes
 * back -ECANCELED); a short second one leaves bytes in the pipe. Either
 * way the next round first empties the pipe with a lone pipe -> socket
 * splice, then goes on with pairs: the bytes reach the socket in file
 * order, and nothing is read twice.
 *
 * The pipe is sized with F_SETPIPE_SZ: 1 MiB by default (the default
 * fs.pipe-max-size), which measured ~25% faster than 256 KiB pairs here
 * (fewer rounds, each a trip through io-wq for the file side). Unprivileged
 * users share a budget of pipe pages (fs.pipe-user-pages-soft); past it the
 * kernel refuses to grow a pipe, and pipe() itself fails at the fd limits. Both
 * are reported to the caller, which then uses the stream path for that stream.
 *
 * The sendfile mechanism needs no pipe: when the socket is writable,
 * one sendfile(2) on the loop's thread queues up to sendfile_max bytes of
 * page-cache pages on the socket, and the next poll waits for room. The
 * socket is non-blocking while it sends, blocking again for the linger.
 *
 * A socket that takes no byte for send_timeout_ns (a client that stopped
 * reading, a peer gone without a word) fails the stage: one timer per
 * stage, which looks at the time of the last progress when it fires and
 * sleeps again for the rest of the bound, so that progress costs a clock
 * read, not a timer. With sendfile it is armed at the first wait for
 * room: a range the socket takes in one call (a small file) never needs
 * one.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdlib.h>
#include <sys/sendfile.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "sock_util.h"
#include "weir/file_send.h"

struct weir_file_send {
    struct weir_loop *loop;
    int file_fd, sock_fd, pipe_rd, pipe_wr;
    struct weir_file_send_options o;
    uint64_t off, end;
    uint64_t sent;
    uint32_t in_pipe;
    uint32_t want; /* bytes asked of the current pair's first splice */
    struct weir_op in_op, out_op, conn_op;
    unsigned pending;
    weir_done_cb done;
    void *ctx;
    bool finished, destroyed, reaping;
    bool nonblocking;  /* sendfile: the socket was made non-blocking */
    bool nb_checked;   /* sendfile: the socket's mode was looked at */
    bool lingering;    /* sent; waiting for the peer's end (sp_finish) */
    bool linger_done;  /* the linger ended: done runs once its ops are back */
    uint64_t lingered; /* bytes it sent meanwhile, dropped */
    struct weir_timer linger;
    struct weir_timer stall; /* send_timeout_ns: see the top */
    int64_t progress_ns;     /* when a byte last moved (or the start) */
    int cut;                 /* -ETIMEDOUT once the stall cut the socket */
    struct weir_reap reap;
};

#define SP_OF(ptr, member)                                                     \
    ((struct weir_file_send *)(void *)((char *)(ptr)-offsetof(                 \
        struct weir_file_send, member)))

static void sp_free(struct weir_reap *r)
{
    struct weir_file_send *sp =
        (struct weir_file_send *)(void *)((char *)r -
                                          offsetof(struct weir_file_send,
                                                   reap));

    if (sp->pipe_rd >= 0) {
        close(sp->pipe_rd);
        close(sp->pipe_wr);
    }
    if (!sp->o.keep_fds) {
        close(sp->file_fd);
        if (sp->sock_fd >= 0)
            close(sp->sock_fd);
    }
    free(sp);
}

/* pending counts the ops a round waits for; the stall timer (see the
 * top) is apart, so that a round's end is still pending == 0, but it
 * must be back too before the stage goes. */
static bool sp_idle(const struct weir_file_send *sp)
{
    return sp->pending == 0 && !sp->stall.op.pending;
}

static void sp_maybe_reap(struct weir_file_send *sp)
{
    if (sp->destroyed && sp_idle(sp) && !sp->reaping) {
        sp->reaping = true;
        sp->reap.fn = sp_free;
        weir_loop_defer(sp->loop, &sp->reap);
    }
}

/* A lingering close, as the endpoints' fd sink does (endpoint_sink.c):
 * closing with the peer's bytes unread would reset the connection and
 * lose what it has not read yet. */
#define LINGER_MAX (1u << 20)
static _Thread_local uint8_t linger_scratch[16384];

/* done runs once the linger's ops are back, so that the stage the
 * caller then destroys holds nothing in the kernel and goes at once. */
static void sp_linger_settle(struct weir_file_send *sp)
{
    if (sp->linger_done && sp_idle(sp) && !sp->destroyed) {
        sp->linger_done = false;
        sp->done(sp->ctx, 0);
    }
}

static void sp_linger_end(struct weir_file_send *sp)
{
    if (!sp->lingering)
        return;
    sp->lingering = false;
    sp->linger_done = true;
    if (sp->linger.op.pending)
        weir_loop_timer_stop(sp->loop, &sp->linger);
    if (sp->in_op.pending)
        weir_loop_cancel(sp->loop, &sp->in_op);
    sp_linger_settle(sp);
}

static int sp_linger_recv(struct weir_file_send *sp);

static void sp_linger_read(struct weir_op *op, int res, uint32_t flags)
{
    struct weir_file_send *sp = SP_OF(op, in_op);

    (void)flags;
    sp->pending--;
    if (sp->destroyed) {
        sp_maybe_reap(sp);
        return;
    }
    if (!sp->lingering) {
        sp_linger_settle(sp);
        return;
    }
    if (res > 0 && (sp->lingered += (uint64_t)res) < LINGER_MAX &&
        sp_linger_recv(sp) == 0)
        return;
    sp_linger_end(sp);
}

static int sp_linger_recv(struct weir_file_send *sp)
{
    int rc;

    sp->in_op.fn = sp_linger_read;
    rc = weir_loop_recv(sp->loop, &sp->in_op, sp->sock_fd, linger_scratch,
                        sizeof(linger_scratch), 0);
    if (rc == 0)
        sp->pending++;
    return rc;
}

static void sp_linger_timeout(struct weir_op *op, int res, uint32_t flags)
{
    struct weir_file_send *sp = SP_OF(op, linger.op);

    (void)flags;
    sp->pending--;
    if (sp->destroyed) {
        sp_maybe_reap(sp);
        return;
    }
    if (res != -ECANCELED)
        sp_linger_end(sp);
    sp_linger_settle(sp);
}

static void sp_stall_fired(struct weir_op *op, int res, uint32_t flags);

static void sp_stall_arm(struct weir_file_send *sp, uint64_t ns)
{
    sp->stall.op.fn = sp_stall_fired;
    /* No timer: no bound, as without the option. */
    (void)weir_loop_timer_start(sp->loop, &sp->stall, ns);
}

/* The bound, running from now (unless it runs already). */
static void sp_stall_start(struct weir_file_send *sp)
{
    if (!sp->o.send_timeout_ns || sp->stall.op.pending)
        return;
    sp->progress_ns = weir__mono_ns();
    sp_stall_arm(sp, sp->o.send_timeout_ns);
}

/* The socket took nothing for the whole bound: reset it (what the peer
 * has not taken is not delivered, and lingering for it would only wait
 * longer), which fails the op waiting on it; its completion finishes the
 * stage with -ETIMEDOUT. */
static void sp_stall_fired(struct weir_op *op, int res, uint32_t flags)
{
    struct weir_file_send *sp = SP_OF(op, stall.op);
    int64_t idle;

    (void)flags;
    if (sp->destroyed) {
        sp_maybe_reap(sp);
        return;
    }
    if (sp->finished) {
        sp_linger_settle(sp);
        return;
    }
    if (res == -ECANCELED)
        return;
    idle = weir__mono_ns() - sp->progress_ns;
    if (idle < (int64_t)sp->o.send_timeout_ns) {
        sp_stall_arm(sp, sp->o.send_timeout_ns - (uint64_t)idle);
        return;
    }
    sp->cut = -ETIMEDOUT;
    weir__sock_reset(sp->sock_fd);
    shutdown(sp->sock_fd, SHUT_RDWR);
}

static void sp_finish(struct weir_file_send *sp, int rc)
{
    if (sp->finished)
        return;
    sp->finished = true;
    if (sp->stall.op.pending)
        weir_loop_timer_stop(sp->loop, &sp->stall);
    if (sp->cut)
        rc = sp->cut; /* whatever the cut socket's op said */
    if (sp->nonblocking) {
        int fl = fcntl(sp->sock_fd, F_GETFL);

        if (fl >= 0)
            (void)fcntl(sp->sock_fd, F_SETFL, fl & ~O_NONBLOCK);
        sp->nonblocking = false;
    }
    if (rc == 0 && !sp->o.keep_open) {
        shutdown(sp->sock_fd, SHUT_WR);
        if (sp->o.linger_ns && !sp->destroyed && sp_linger_recv(sp) == 0) {
            sp->lingering = true;
            sp->linger.op.fn = sp_linger_timeout;
            if (weir_loop_timer_start(sp->loop, &sp->linger, sp->o.linger_ns) ==
                0)
                sp->pending++;
            else
                weir_loop_cancel(sp->loop, &sp->in_op); /* no bound */
            return;
        }
    }
    if (!sp->destroyed)
        sp->done(sp->ctx, rc);
}

static void sp_round(struct weir_file_send *sp);

/* An op came back: true when the stage is gone or finished. */
static bool sp_back(struct weir_file_send *sp)
{
    sp->pending--;
    if (sp->destroyed) {
        sp_maybe_reap(sp);
        return true;
    }
    return sp->finished;
}

static void sp_out_done(struct weir_op *op, int res, uint32_t flags)
{
    struct weir_file_send *sp = SP_OF(op, out_op);

    (void)flags;
    if (sp_back(sp))
        return;
    if (res > 0) {
        sp->in_pipe -= (uint32_t)res;
        sp->sent += (uint32_t)res;
        if (sp->o.send_timeout_ns)
            sp->progress_ns = weir__mono_ns();
        if (sp->o.counter)
            /* Relaxed: a statistic another thread samples; it orders
             * nothing and pairs with nothing. */
            atomic_fetch_add_explicit(sp->o.counter, (uint32_t)res,
                                      memory_order_relaxed);
    } else if (res == 0 && sp->in_pipe > 0) {
        sp_finish(sp, -EPIPE);
        return;
    } else if (res < 0 && res != -ECANCELED && res != -EAGAIN &&
               res != -EINTR) {
        sp_finish(sp, res);
        return;
    }
    if (sp->pending == 0)
        sp_round(sp);
}

static void sp_in_done(struct weir_op *op, int res, uint32_t flags)
{
    struct weir_file_send *sp = SP_OF(op, in_op);

    (void)flags;
    if (sp_back(sp))
        return;
    if (res > 0) {
        sp->in_pipe += (uint32_t)res;
        sp->off += (uint32_t)res;
    } else if (res == 0) {
        /* The file ended before `end` (it shrank): send what we have. */
        sp->end = sp->off;
    } else if (res != -EAGAIN && res != -EINTR) {
        sp_finish(sp, res);
        return;
    }
    if (sp->pending == 0)
        sp_round(sp);
}

static void sf_round(struct weir_file_send *sp);

static void sf_ready(struct weir_op *op, int res, uint32_t flags)
{
    struct weir_file_send *sp = SP_OF(op, out_op);

    (void)flags;
    if (sp_back(sp))
        return;
    if (res < 0 && res != -EINTR && res != -EAGAIN) {
        sp_finish(sp, res);
        return;
    }
    sf_round(sp);
}

/* One sendfile, then a wait for room (or, when it took all it was asked,
 * for the next turn, so that other sockets of the loop get theirs). */
static void sf_round(struct weir_file_send *sp)
{
    uint64_t left = sp->end - sp->off;
    off_t off = (off_t)sp->off;
    ssize_t k;
    int rc;

    if (!sp->nonblocking && !sp->nb_checked) {
        int fl = fcntl(sp->sock_fd, F_GETFL);

        /* A socket the caller keeps non-blocking stays as it is. */
        sp->nb_checked = true;
        if (fl < 0 || (!(fl & O_NONBLOCK) &&
                       fcntl(sp->sock_fd, F_SETFL, fl | O_NONBLOCK) != 0)) {
            sp_finish(sp, -errno);
            return;
        }
        sp->nonblocking = !(fl & O_NONBLOCK);
    }
    if (sp->off >= sp->end) {
        sp_finish(sp, 0);
        return;
    }
    k = sendfile(sp->sock_fd, sp->file_fd, &off,
                 left < sp->o.sendfile_max ? (size_t)left : sp->o.sendfile_max);
    if (k > 0) {
        sp->off += (uint64_t)k;
        sp->sent += (uint64_t)k;
        if (sp->o.send_timeout_ns)
            sp->progress_ns = weir__mono_ns();
        if (sp->o.counter)
            /* Relaxed: a statistic, as in sp_out_done. */
            atomic_fetch_add_explicit(sp->o.counter, (uint64_t)k,
                                      memory_order_relaxed);
        if (sp->off >= sp->end) {
            sp_finish(sp, 0);
            return;
        }
    } else if (k == 0) {
        /* The file ended before `end` (it shrank). */
        sp->end = sp->off;
        sp_finish(sp, 0);
        return;
    } else if (errno != EAGAIN && errno != EINTR) {
        sp_finish(sp, -errno);
        return;
    }
    sp_stall_start(sp);
    sp->out_op.fn = sf_ready;
    rc = weir_loop_poll(sp->loop, &sp->out_op, sp->sock_fd, POLLOUT);
    if (rc) {
        sp_finish(sp, rc);
        return;
    }
    sp->pending++;
}

static void sp_round(struct weir_file_send *sp)
{
    uint32_t n;
    int rc;

    if (sp->o.sendfile) {
        sf_round(sp);
        return;
    }
    if (sp->in_pipe > 0) {
        sp->out_op.fn = sp_out_done;
        rc = weir_loop_splice(sp->loop, &sp->out_op, sp->pipe_rd, -1,
                              sp->sock_fd, -1, sp->in_pipe, 0);
        if (rc) {
            sp_finish(sp, rc);
            return;
        }
        sp->pending++;
        return;
    }
    if (sp->off >= sp->end) {
        sp_finish(sp, 0);
        return;
    }
    n = sp->end - sp->off < sp->o.pipe_size ? (uint32_t)(sp->end - sp->off)
                                            : sp->o.pipe_size;
    sp->want = n;
    sp->in_op.fn = sp_in_done;
    sp->out_op.fn = sp_out_done;
    rc = weir_loop_splice(sp->loop, &sp->in_op, sp->file_fd, (int64_t)sp->off,
                          sp->pipe_wr, -1, n, 0);
    if (rc) {
        sp_finish(sp, rc);
        return;
    }
    sp->pending++;
    weir_loop_link(sp->loop);
    rc = weir_loop_splice(sp->loop, &sp->out_op, sp->pipe_rd, -1, sp->sock_fd,
                          -1, n, 0);
    if (rc) {
        /* The first stands alone; its completion starts the next round. */
        return;
    }
    sp->pending++;
}

static void sp_connected(struct weir_op *op, int res, uint32_t flags)
{
    struct weir_file_send *sp = SP_OF(op, conn_op);

    (void)flags;
    if (sp_back(sp))
        return;
    if (res < 0) {
        sp_finish(sp, res);
        return;
    }
    sp_round(sp);
}

static void close_pipe(const int p[2])
{
    if (p[0] >= 0) {
        close(p[0]);
        close(p[1]);
    }
}

int weir_file_send_start(struct weir_file_send **out, struct weir_loop *loop,
                         int file_fd, int sock_fd,
                         const struct weir_file_send_options *o,
                         weir_done_cb done, void *ctx)
{
    struct weir_file_send *sp;
    struct stat st;
    int p[2], rc;

    if (!o || !done || file_fd < 0 || fstat(file_fd, &st) != 0)
        return -EINVAL;
    if (o->max_length && (uint64_t)st.st_size > o->offset &&
        (uint64_t)st.st_size - o->offset > o->max_length &&
        o->length > o->max_length)
        return -EFBIG;
    p[0] = p[1] = -1;
    if (!o->sendfile && pipe2(p, O_CLOEXEC) != 0)
        return -errno;
    sp = calloc(1, sizeof(*sp));
    if (!sp) {
        close_pipe(p);
        return -ENOMEM;
    }
    sp->o = *o;
    if (!sp->o.pipe_size)
        sp->o.pipe_size = 1024u * 1024u;
    if (!sp->o.sendfile_max)
        sp->o.sendfile_max = 1024u * 1024u;
    rc = o->sendfile ? (int)sp->o.pipe_size
                     : fcntl(p[1], F_SETPIPE_SZ, (int)sp->o.pipe_size);
    if (rc < 0 || (uint32_t)rc < sp->o.pipe_size) {
        rc = rc < 0 ? -errno : -EPERM;
        close_pipe(p);
        free(sp);
        return rc;
    }
    sp->loop = loop;
    sp->pipe_rd = p[0];
    sp->pipe_wr = p[1];
    sp->file_fd = file_fd;
    sp->done = done;
    sp->ctx = ctx;
    sp->off = o->offset;
    sp->end =
        o->length == UINT64_MAX || o->offset + o->length > (uint64_t)st.st_size
            ? (uint64_t)st.st_size
            : o->offset + o->length;
    if (sock_fd < 0) {
        sock_fd =
            socket(o->connect_addr->sa_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
        if (sock_fd < 0) {
            rc = -errno;
            sp->sock_fd = -1;
            goto fail;
        }
        sp->sock_fd = sock_fd;
        if (o->connect_addr->sa_family == AF_INET ||
            o->connect_addr->sa_family == AF_INET6)
            weir__tcp_tune(sock_fd, &o->tcp);
        sp->conn_op.fn = sp_connected;
        rc = weir_loop_connect(loop, &sp->conn_op, sock_fd, o->connect_addr,
                               o->connect_addrlen);
        if (rc)
            goto fail;
        sp->pending++;
        /* A connect that never completes takes nothing either. */
        sp_stall_start(sp);
    } else {
        sp->sock_fd = sock_fd;
        weir__tcp_tune(sock_fd, &o->tcp);
        /* sendfile arms it at its first wait for room (sf_round). */
        if (!o->sendfile)
            sp_stall_start(sp);
        sp_round(sp);
    }
    *out = sp;
    return 0;
fail:
    close_pipe(p);
    if (sp->sock_fd >= 0)
        close(sp->sock_fd);
    free(sp);
    return rc;
}

uint64_t weir_file_send_bytes(const struct weir_file_send *sp)
{
    return sp->sent;
}

void weir_file_send_destroy(struct weir_file_send *sp)
{
    if (sp->destroyed)
        return;
    sp->destroyed = true;
    if (sp->linger.op.pending)
        weir_loop_timer_stop(sp->loop, &sp->linger);
    if (sp->stall.op.pending)
        weir_loop_timer_stop(sp->loop, &sp->stall);
    if (sp->in_op.pending)
        weir_loop_cancel(sp->loop, &sp->in_op);
    if (sp->out_op.pending)
        weir_loop_cancel(sp->loop, &sp->out_op);
    if (sp->conn_op.pending)
        weir_loop_cancel(sp->loop, &sp->conn_op);
    sp_maybe_reap(sp);
}
