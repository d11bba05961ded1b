/*
 * test_epoll.c - the epoll engine's operations, asked for explicitly (so
 * they run whatever WEIR_ENGINE says): each op's result and its -errno,
 * waits for readiness, cancel in each state, timers in deadline order,
 * links that hold and links that break, multishot accept, splice, and
 * doorbells between loops of both engines on two threads.
 */
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cmocka.h>

#include "weir/loop.h"

#define container_of(p, type, member)                                          \
    ((type *)((char *)(p)-offsetof(type, member)))

/* One op's outcome. The loop stops when `left` of the run reaches 0. */
struct rec {
    struct weir_op op;
    int res;
    int calls;
    uint32_t flags;
    int order; /* when it completed, counting from 1 */
};

static struct weir_loop *loop;
static int left, completed;

static void rec_done(struct weir_op *op, int res, uint32_t flags)
{
    struct rec *r = container_of(op, struct rec, op);

    r->res = res;
    r->flags = flags;
    r->calls++;
    r->order = ++completed;
    if (--left == 0)
        weir_loop_stop(loop);
}

static void rec_init(struct rec *r)
{
    *r = (struct rec){.op.fn = rec_done, .res = 12345};
}

static struct weir_loop *epoll_loop(void)
{
    struct weir_loop_options o = {.engine = WEIR_ENGINE_EPOLL};
    struct weir_loop *l = NULL;

    assert_int_equal(weir_loop_create(&l, &o), 0);
    assert_int_equal(weir_loop_engine(l), WEIR_ENGINE_EPOLL);
    assert_string_equal(weir_loop_engine_reason(l), "asked for");
    return l;
}

static int setup(void **state)
{
    (void)state;
    loop = epoll_loop();
    left = completed = 0;
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    assert_int_equal(weir_loop_pending(loop), 0);
    weir_loop_destroy(loop);
    return 0;
}

static void run(int ops)
{
    left = ops;
    assert_int_equal(weir_loop_run(loop), 0);
    assert_int_equal(left, 0);
}

/* A connected pair of TCP sockets on 127.0.0.1. */
static void tcp_pair(int *a, int *b)
{
    struct sockaddr_in sin = {.sin_family = AF_INET,
                              .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t len = sizeof(sin);
    int lfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

    assert_int_equal(bind(lfd, (struct sockaddr *)&sin, sizeof(sin)), 0);
    assert_int_equal(listen(lfd, 1), 0);
    assert_int_equal(getsockname(lfd, (struct sockaddr *)&sin, &len), 0);
    *a = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    assert_int_equal(connect(*a, (struct sockaddr *)&sin, sizeof(sin)), 0);
    *b = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
    assert_true(*b >= 0);
    close(lfd);
}

/* A port nobody listens on (bound, then closed). */
static void closed_port(struct sockaddr_in *sin)
{
    socklen_t len = sizeof(*sin);
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

    *sin = (struct sockaddr_in){.sin_family = AF_INET,
                                .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    assert_int_equal(bind(fd, (struct sockaddr *)sin, sizeof(*sin)), 0);
    assert_int_equal(getsockname(fd, (struct sockaddr *)sin, &len), 0);
    close(fd);
}

/* ---- engine names ---- */

static void test_names(void **state)
{
    enum weir_engine e = WEIR_ENGINE_AUTO;

    (void)state;
    assert_int_equal(weir_engine_parse("epoll", &e), 0);
    assert_int_equal(e, WEIR_ENGINE_EPOLL);
    assert_int_equal(weir_engine_parse("io_uring", &e), 0);
    assert_int_equal(e, WEIR_ENGINE_IO_URING);
    assert_int_equal(weir_engine_parse("auto", &e), 0);
    assert_int_equal(e, WEIR_ENGINE_AUTO);
    assert_int_equal(weir_engine_parse("uring", &e), -EINVAL);
    assert_string_equal(weir_engine_name(WEIR_ENGINE_EPOLL), "epoll");
    assert_string_equal(weir_engine_name(WEIR_ENGINE_IO_URING), "io_uring");
    assert_int_equal(weir_loop_create(&(struct weir_loop *){NULL},
                                      &(struct weir_loop_options){.engine = 7}),
                     -EINVAL);
}

/* ---- results and errors of each op ---- */

static void test_errors(void **state)
{
    struct rec rd, wr, rv, acc, cl, sp, pl;
    int fds[2], sock[2];
    char buf[8];
    struct sockaddr_in sin;
    int notlistening = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

    (void)state;
    assert_int_equal(pipe2(fds, O_CLOEXEC), 0);
    close(fds[0]); /* writes to fds[1] now fail with EPIPE */
    closed_port(&sin);
    tcp_pair(&sock[0], &sock[1]);
    rec_init(&rd);
    rec_init(&wr);
    rec_init(&rv);
    rec_init(&acc);
    rec_init(&cl);
    rec_init(&sp);
    rec_init(&pl);
    assert_int_equal(weir_loop_read(loop, &rd.op, 999, buf, 8, 0), 0);
    assert_int_equal(weir_loop_write(loop, &wr.op, fds[1], "x", 1, -1), 0);
    assert_int_equal(weir_loop_recv(loop, &rv.op, fds[1], buf, 8, 0), 0);
    assert_int_equal(
        weir_loop_accept(loop, &acc.op, notlistening, NULL, NULL, 0), 0);
    assert_int_equal(weir_loop_close(loop, &cl.op, 998), 0);
    /* Neither end is a pipe. */
    assert_int_equal(
        weir_loop_splice(loop, &sp.op, sock[0], -1, sock[1], -1, 8, 0), 0);
    /* Writable at once: the answer is the ready mask. */
    assert_int_equal(weir_loop_poll(loop, &pl.op, sock[0], POLLOUT), 0);
    assert_true(rd.op.pending);
    /* Nothing completes inside the start call, not even a failure. */
    assert_int_equal(rd.calls + wr.calls + pl.calls, 0);
    run(7);
    assert_int_equal(rd.res, -EBADF);
    assert_int_equal(wr.res, -EPIPE);
    assert_int_equal(rv.res, -ENOTSOCK);
    assert_int_equal(acc.res, -EINVAL);
    assert_int_equal(cl.res, -EBADF);
    assert_int_equal(sp.res, -EINVAL);
    assert_int_equal(pl.res, POLLOUT);
    assert_int_equal(rd.order, 1); /* in the order they were started */
    assert_int_equal(pl.order, 7);

    /* A refused connect, and one that succeeds. */
    {
        struct rec bad, good;
        struct sockaddr_in lsin = {.sin_family = AF_INET,
                                   .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
        socklen_t len = sizeof(lsin);
        int lfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
        int c1 = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
        int c2 = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

        assert_int_equal(bind(lfd, (struct sockaddr *)&lsin, sizeof(lsin)), 0);
        assert_int_equal(listen(lfd, 4), 0);
        assert_int_equal(getsockname(lfd, (struct sockaddr *)&lsin, &len), 0);
        rec_init(&bad);
        rec_init(&good);
        assert_int_equal(weir_loop_connect(loop, &bad.op, c1,
                                           (struct sockaddr *)&sin,
                                           sizeof(sin)),
                         0);
        assert_int_equal(weir_loop_connect(loop, &good.op, c2,
                                           (struct sockaddr *)&lsin,
                                           sizeof(lsin)),
                         0);
        run(2);
        assert_int_equal(bad.res, -ECONNREFUSED);
        assert_int_equal(good.res, 0);
        /* The socket is left as the caller made it: blocking. */
        assert_int_equal(fcntl(c2, F_GETFL) & O_NONBLOCK, 0);
        close(c1);
        close(c2);
        close(lfd);
    }
    close(fds[1]);
    close(sock[0]);
    close(sock[1]);
    close(notlistening);
}

/* ---- ops that wait for readiness ---- */

struct waiter {
    struct rec read, poll, timer_rec;
    struct weir_timer kick;
    int wfd;
};

static void kick_fired(struct weir_op *op, int res, uint32_t flags)
{
    struct waiter *w = container_of(op, struct waiter, kick.op);

    (void)flags;
    assert_int_equal(res, -ETIME);
    /* Both waiters are waiting now; this write wakes them. */
    assert_true(w->read.op.pending);
    assert_true(w->poll.op.pending);
    assert_int_equal(write(w->wfd, "ready!", 6), 6);
    if (--left == 0)
        weir_loop_stop(loop);
}

static void test_waits(void **state)
{
    static struct waiter w;
    char buf[16] = {0};
    int fds[2];

    (void)state;
    assert_int_equal(pipe2(fds, O_CLOEXEC), 0);
    w.wfd = fds[1];
    rec_init(&w.read);
    rec_init(&w.poll);
    w.kick.op.fn = kick_fired;
    assert_int_equal(
        weir_loop_read(loop, &w.read.op, fds[0], buf, sizeof(buf), -1), 0);
    assert_int_equal(weir_loop_poll(loop, &w.poll.op, fds[0], POLLIN), 0);
    assert_int_equal(weir_loop_timer_start(loop, &w.kick, 2000000), 0);
    run(3);
    assert_int_equal(w.read.res, 6);
    assert_memory_equal(buf, "ready!", 6);
    assert_true(w.poll.res & POLLIN);
    /* The caller's fd was not made non-blocking. */
    assert_int_equal(fcntl(fds[0], F_GETFL) & O_NONBLOCK, 0);
    close(fds[0]);
    close(fds[1]);
}

/* A send bigger than the socket takes waits for the reader, and every
 * byte arrives in order. */
struct bulk {
    struct weir_op send, recv;
    int tx, rx;
    uint8_t *out, *in;
    size_t sent, got, total;
};

static struct bulk bk;

static void bulk_sent(struct weir_op *op, int res, uint32_t flags)
{
    (void)flags;
    assert_true(res > 0);
    bk.sent += (size_t)res;
    if (bk.sent < bk.total)
        assert_int_equal(weir_loop_send(loop, op, bk.tx, bk.out + bk.sent,
                                        (uint32_t)(bk.total - bk.sent), 0),
                         0);
}

static void bulk_received(struct weir_op *op, int res, uint32_t flags)
{
    (void)flags;
    assert_true(res > 0);
    bk.got += (size_t)res;
    if (bk.got < bk.total)
        assert_int_equal(
            weir_loop_recv(loop, op, bk.rx, bk.in + bk.got, 65536, 0), 0);
    else
        weir_loop_stop(loop);
}

static void test_bulk_send(void **state)
{
    int small = 4096;

    (void)state;
    memset(&bk, 0, sizeof(bk));
    bk.total = 8u << 20;
    bk.out = malloc(bk.total);
    bk.in = malloc(bk.total + 65536);
    for (size_t i = 0; i < bk.total; i++)
        bk.out[i] = (uint8_t)(i * 2654435761u >> 11);
    tcp_pair(&bk.tx, &bk.rx);
    setsockopt(bk.tx, SOL_SOCKET, SO_SNDBUF, &small, sizeof(small));
    bk.send.fn = bulk_sent;
    bk.recv.fn = bulk_received;
    assert_int_equal(
        weir_loop_send(loop, &bk.send, bk.tx, bk.out, (uint32_t)bk.total, 0),
        0);
    assert_int_equal(weir_loop_recv(loop, &bk.recv, bk.rx, bk.in, 65536, 0), 0);
    assert_int_equal(weir_loop_run(loop), 0);
    assert_int_equal(bk.sent, bk.total);
    assert_int_equal(bk.got, bk.total);
    assert_memory_equal(bk.in, bk.out, bk.total);
    close(bk.tx);
    close(bk.rx);
    free(bk.out);
    free(bk.in);
}

/* ---- timers fire in deadline order, whatever the start order ---- */

struct tmr {
    struct weir_timer t;
    int res;
    int order;
};

static void tmr_done(struct weir_op *op, int res, uint32_t flags)
{
    struct tmr *x = container_of(op, struct tmr, t.op);

    (void)flags;
    x->res = res;
    x->order = ++completed;
    if (--left == 0)
        weir_loop_stop(loop);
}

static void test_timer_order(void **state)
{
    enum { N = 6 };
    static const uint64_t ms[N] = {9, 1, 5, 3, 0, 7};
    struct tmr tm[N];

    (void)state;
    for (int i = 0; i < N; i++) {
        tm[i] = (struct tmr){.t.op.fn = tmr_done};
        assert_int_equal(
            weir_loop_timer_start(loop, &tm[i].t, ms[i] * 1000000ull), 0);
    }
    run(N);
    for (int i = 0; i < N; i++) {
        assert_int_equal(tm[i].res, -ETIME);
        for (int j = 0; j < N; j++)
            if (ms[j] < ms[i])
                assert_true(tm[j].order < tm[i].order);
    }
}

/* ---- cancel: waiting, done already, linked, timer ---- */

static void test_cancel_states(void **state)
{
    struct rec waiting, done, first, second;
    struct tmr t = {.t.op.fn = tmr_done};
    char buf[8];
    int fds[2];

    (void)state;
    assert_int_equal(pipe2(fds, O_CLOEXEC), 0);
    rec_init(&waiting);
    rec_init(&done);
    rec_init(&first);
    rec_init(&second);
    /* A read of an empty pipe waits; canceled, it ends -ECANCELED. */
    assert_int_equal(weir_loop_read(loop, &waiting.op, fds[0], buf, 8, -1), 0);
    assert_int_equal(weir_loop_cancel(loop, &waiting.op), 0);
    /* A nop has its result already: the cancel does not change it. */
    assert_int_equal(weir_loop_nop(loop, &done.op), 0);
    assert_int_equal(weir_loop_cancel(loop, &done.op), 0);
    /* A read linked behind a waiting read: canceling the second leaves
     * the first waiting; canceling the first then ends both. */
    assert_int_equal(weir_loop_read(loop, &first.op, fds[0], buf, 8, -1), 0);
    weir_loop_link(loop);
    assert_int_equal(weir_loop_nop(loop, &second.op), 0);
    assert_int_equal(weir_loop_cancel(loop, &second.op), 0);
    assert_int_equal(weir_loop_cancel(loop, &first.op), 0);
    /* A timer, stopped through cancel. */
    assert_int_equal(weir_loop_timer_start(loop, &t.t, 3600000000000ull), 0);
    assert_int_equal(weir_loop_cancel(loop, &t.t.op), 0);
    run(5);
    assert_int_equal(waiting.res, -ECANCELED);
    assert_int_equal(done.res, 0);
    assert_int_equal(second.res, -ECANCELED);
    assert_int_equal(first.res, -ECANCELED);
    assert_int_equal(t.res, -ECANCELED);
    assert_int_equal(weir_loop_pending(loop), 0);
    assert_int_equal(weir_loop_cancel(loop, &waiting.op), -ENOENT);
    assert_int_equal(weir_loop_timer_stop(loop, &t.t), -ENOENT);
    close(fds[0]);
    close(fds[1]);
}

/* ---- links ---- */

static void test_links(void **state)
{
    struct rec bad, after_bad, shortr, after_short, w, r;
    char buf[16], in[8];
    int fds[2];

    (void)state;
    assert_int_equal(pipe2(fds, O_CLOEXEC), 0);
    rec_init(&bad);
    rec_init(&after_bad);
    rec_init(&shortr);
    rec_init(&after_short);
    rec_init(&w);
    rec_init(&r);
    /* A failure breaks the link. */
    assert_int_equal(weir_loop_read(loop, &bad.op, 997, buf, 8, 0), 0);
    weir_loop_link(loop);
    assert_int_equal(weir_loop_nop(loop, &after_bad.op), 0);
    /* A write, and linked to it a read that waits for nothing. */
    assert_int_equal(weir_loop_write(loop, &w.op, fds[1], "0123", 4, -1), 0);
    weir_loop_link(loop);
    assert_int_equal(weir_loop_read(loop, &r.op, fds[0], in, 4, -1), 0);
    /* A short read (4 of 16 asked for) breaks the link too. */
    assert_int_equal(write(fds[1], "abcd", 4), 4);
    assert_int_equal(
        weir_loop_read(loop, &shortr.op, fds[0], buf, sizeof(buf), -1), 0);
    weir_loop_link(loop);
    assert_int_equal(weir_loop_nop(loop, &after_short.op), 0);
    run(6);
    assert_int_equal(bad.res, -EBADF);
    assert_int_equal(after_bad.res, -ECANCELED);
    assert_true(bad.order < after_bad.order);
    assert_int_equal(w.res, 4);
    assert_int_equal(r.res, 4);
    assert_memory_equal(in, "0123", 4);
    assert_int_equal(shortr.res, 4);
    assert_memory_equal(buf, "abcd", 4);
    assert_int_equal(after_short.res, -ECANCELED);
    close(fds[0]);
    close(fds[1]);
}

/* A link behind an op that waits: the second starts once the first is
 * done. */
struct chain {
    struct rec first, second;
    struct weir_timer kick;
    int wfd;
};

static void chain_kick(struct weir_op *op, int res, uint32_t flags)
{
    struct chain *c = container_of(op, struct chain, kick.op);

    (void)res;
    (void)flags;
    assert_int_equal(c->second.calls, 0);
    assert_int_equal(write(c->wfd, "12345678", 8), 8);
    if (--left == 0)
        weir_loop_stop(loop);
}

static void test_link_waits(void **state)
{
    static struct chain c;
    char a[8], b[8];
    int fds[2];

    (void)state;
    assert_int_equal(pipe2(fds, O_CLOEXEC), 0);
    c.wfd = fds[1];
    rec_init(&c.first);
    rec_init(&c.second);
    c.kick.op.fn = chain_kick;
    assert_int_equal(weir_loop_read(loop, &c.first.op, fds[0], a, 4, -1), 0);
    weir_loop_link(loop);
    assert_int_equal(weir_loop_read(loop, &c.second.op, fds[0], b, 4, -1), 0);
    assert_int_equal(weir_loop_timer_start(loop, &c.kick, 1000000), 0);
    run(3);
    assert_int_equal(c.first.res, 4);
    assert_int_equal(c.second.res, 4);
    assert_true(c.first.order < c.second.order);
    assert_memory_equal(a, "1234", 4);
    assert_memory_equal(b, "5678", 4);
    close(fds[0]);
    close(fds[1]);
}

/* ---- multishot accept: connections that come while it waits ---- */

struct multi {
    struct weir_op accept;
    struct weir_timer kick;
    struct sockaddr_in sin;
    int clients[4];
    int accepted[8];
    int more, n, last;
};

static struct multi ms;

static void multi_kick(struct weir_op *op, int res, uint32_t flags)
{
    (void)op;
    (void)res;
    (void)flags;
    for (int i = 0; i < 4; i++) {
        ms.clients[i] = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
        assert_int_equal(
            connect(ms.clients[i], (struct sockaddr *)&ms.sin, sizeof(ms.sin)),
            0);
    }
}

static void multi_done(struct weir_op *op, int res, uint32_t flags)
{
    if (flags & WEIR_OP_MORE) {
        assert_true(op->pending);
        assert_true(res >= 0);
        ms.accepted[ms.n++] = res;
        ms.more++;
        if (ms.n == 4)
            assert_int_equal(weir_loop_cancel(loop, op), 0);
        return;
    }
    assert_false(op->pending);
    ms.last = res;
    weir_loop_stop(loop);
}

static void test_accept_multishot(void **state)
{
    socklen_t len = sizeof(ms.sin);
    int lfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

    (void)state;
    memset(&ms, 0, sizeof(ms));
    ms.sin = (struct sockaddr_in){.sin_family = AF_INET,
                                  .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    assert_int_equal(bind(lfd, (struct sockaddr *)&ms.sin, sizeof(ms.sin)), 0);
    assert_int_equal(listen(lfd, 8), 0);
    assert_int_equal(getsockname(lfd, (struct sockaddr *)&ms.sin, &len), 0);
    ms.accept.fn = multi_done;
    ms.kick.op.fn = multi_kick;
    assert_int_equal(
        weir_loop_accept_multishot(loop, &ms.accept, lfd, SOCK_CLOEXEC), 0);
    assert_int_equal(weir_loop_timer_start(loop, &ms.kick, 1000000), 0);
    assert_int_equal(weir_loop_run(loop), 0);
    assert_int_equal(ms.more, 4);
    assert_int_equal(ms.last, -ECANCELED);
    for (int i = 0; i < 4; i++) {
        assert_true(ms.accepted[i] >= 0);
        close(ms.accepted[i]);
        close(ms.clients[i]);
    }
    close(lfd);
}

/* ---- splice: file -> pipe -> socket, linked, bytes checked ---- */

static void test_splice(void **state)
{
    char path[] = "/tmp/weir-epoll-XXXXXX";
    enum { LEN = 200000 };
    static uint8_t data[LEN], got[LEN];
    struct rec in, out;
    int fd = mkstemp(path), p[2], s[2];
    size_t n = 0;

    (void)state;
    assert_true(fd >= 0);
    unlink(path);
    for (int i = 0; i < LEN; i++)
        data[i] = (uint8_t)(i * 31 + 7);
    assert_int_equal(write(fd, data, LEN), LEN);
    assert_int_equal(pipe2(p, O_CLOEXEC), 0);
    assert_true(fcntl(p[1], F_SETPIPE_SZ, 1 << 20) >= (1 << 18));
    tcp_pair(&s[0], &s[1]);
    rec_init(&in);
    rec_init(&out);
    assert_int_equal(weir_loop_splice(loop, &in.op, fd, 0, p[1], -1, LEN, 0),
                     0);
    weir_loop_link(loop);
    assert_int_equal(
        weir_loop_splice(loop, &out.op, p[0], -1, s[0], -1, LEN, 0), 0);
    run(2);
    assert_int_equal(in.res, LEN);
    assert_true(out.res > 0);
    while (n < (size_t)out.res) {
        ssize_t k = read(s[1], got + n, (size_t)out.res - n);

        assert_true(k > 0);
        n += (size_t)k;
    }
    assert_memory_equal(got, data, (size_t)out.res);
    close(fd);
    close(p[0]);
    close(p[1]);
    close(s[0]);
    close(s[1]);
}

/* A splice out of an empty pipe waits for the pipe, then moves what came. */
struct spl_wait {
    struct rec out;
    struct weir_timer kick;
    int pipe_wr;
};

static void spl_kick(struct weir_op *op, int res, uint32_t flags)
{
    struct spl_wait *w = container_of(op, struct spl_wait, kick.op);

    (void)res;
    (void)flags;
    assert_true(w->out.op.pending);
    assert_int_equal(write(w->pipe_wr, "spliced!", 8), 8);
    if (--left == 0)
        weir_loop_stop(loop);
}

static void test_splice_waits(void **state)
{
    static struct spl_wait w;
    char got[8];
    int p[2], s[2];

    (void)state;
    assert_int_equal(pipe2(p, O_CLOEXEC), 0);
    tcp_pair(&s[0], &s[1]);
    w.pipe_wr = p[1];
    rec_init(&w.out);
    w.kick.op.fn = spl_kick;
    assert_int_equal(
        weir_loop_splice(loop, &w.out.op, p[0], -1, s[0], -1, 8, 0), 0);
    assert_int_equal(weir_loop_timer_start(loop, &w.kick, 1000000), 0);
    run(2);
    assert_int_equal(w.out.res, 8);
    assert_int_equal(read(s[1], got, 8), 8);
    assert_memory_equal(got, "spliced!", 8);
    close(p[0]);
    close(p[1]);
    close(s[0]);
    close(s[1]);
}

/* ---- a file read from the disk, not the page cache ---- */

/* Reads a file of 4 MiB, out of the page cache but for a page in its
 * second quarter, in four reads on `loop` as its file_reads says. */
static void cold_file_read(void)
{
    char path[] = "/tmp/weir-epoll-XXXXXX";
    enum { LEN = 4 << 20, N = 4, PART = LEN / N };
    uint8_t *data = malloc(LEN), *got = calloc(1, LEN);
    struct rec rd[N];
    int fd = mkstemp(path);

    assert_true(fd >= 0);
    unlink(path);
    for (int i = 0; i < LEN; i++)
        data[i] = (uint8_t)(i * 13 + (i >> 12));
    assert_int_equal(write(fd, data, LEN), LEN);
    assert_int_equal(fdatasync(fd), 0);
    /* Out of the cache (clean pages go), except a page in the middle of
     * the second part, so that RWF_NOWAIT stops short there. */
    assert_int_equal(posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED), 0);
    assert_int_equal(pread(fd, got, 1, PART), 1);
    for (int i = 0; i < N; i++) {
        rec_init(&rd[i]);
        assert_int_equal(weir_loop_read(loop, &rd[i].op, fd, got + i * PART,
                                        PART, (uint64_t)i * PART),
                         0);
    }
    run(N);
    /* Every read is whole, as on io_uring, and has the file's bytes. */
    for (int i = 0; i < N; i++)
        assert_int_equal(rd[i].res, PART);
    assert_memory_equal(got, data, LEN);
    close(fd);
    free(data);
    free(got);
}

static void test_cold_file_read(void **state)
{
    (void)state;
    cold_file_read();
}

/* The same on loops whose file reads that would wait go to the I/O
 * threads (io_pool.c): all of them, or those RWF_NOWAIT refused. */
static void test_cold_file_read_threads(void **state)
{
    static const enum weir_loop_file_reads modes[] = {
        WEIR_LOOP_FILE_READS_THREADS,
        WEIR_LOOP_FILE_READS_NOWAIT_THREADS,
        WEIR_LOOP_FILE_READS_BLOCK,
    };

    (void)state;
    for (size_t i = 0; i < sizeof(modes) / sizeof(modes[0]); i++) {
        struct weir_loop_options o = {.engine = WEIR_ENGINE_EPOLL,
                                      .file_reads = modes[i]};

        assert_int_equal(weir_loop_create(&loop, &o), 0);
        left = completed = 0;
        cold_file_read();
        assert_int_equal(weir_loop_pending(loop), 0);
        weir_loop_destroy(loop);
    }
    loop = NULL;
}

/* ---- doorbells between loops of both engines ---- */

#define ROUNDS 5000

struct side {
    struct weir_loop *loop;
    struct weir_task task;
    enum weir_engine engine;
    int runs;
    int err;
};

static struct side sides[2];
static pthread_barrier_t ready;

/* Runs 0, 1, 0, 1, ...: each side posts to the other, which is asleep or
 * about to be, and side 1's last run ends the exchange. */
static void side_ran(struct weir_task *t)
{
    int i = t == &sides[0].task ? 0 : 1;

    if (++sides[i].runs == ROUNDS && i == 1) {
        weir_loop_stop(sides[1].loop);
        return;
    }
    weir_loop_post(sides[1 - i].loop, &sides[1 - i].task);
    if (sides[i].runs == ROUNDS)
        weir_loop_stop(sides[0].loop);
}

static void *side_main(void *arg)
{
    struct side *s = arg;
    struct weir_loop_options o = {.engine = s->engine,
                                  .slot = (unsigned)(s - sides)};

    s->err = weir_loop_create(&s->loop, &o);
    pthread_barrier_wait(&ready);
    if (s->err)
        return NULL;
    pthread_barrier_wait(&ready);
    s->err = weir_loop_run(s->loop);
    return NULL;
}

static void pingpong(enum weir_engine a, enum weir_engine b)
{
    pthread_t th[2];

    memset(sides, 0, sizeof(sides));
    sides[0].engine = a;
    sides[1].engine = b;
    pthread_barrier_init(&ready, NULL, 3);
    for (int i = 0; i < 2; i++) {
        weir_task_init(&sides[i].task, side_ran);
        assert_int_equal(pthread_create(&th[i], NULL, side_main, &sides[i]), 0);
    }
    pthread_barrier_wait(&ready);
    assert_int_equal(sides[0].err, 0);
    assert_int_equal(sides[1].err, 0);
    /* Posted before either runs: from a thread without a loop. */
    weir_loop_post(sides[0].loop, &sides[0].task);
    pthread_barrier_wait(&ready);
    for (int i = 0; i < 2; i++)
        pthread_join(th[i], NULL);
    assert_int_equal(sides[0].err, 0);
    assert_int_equal(sides[1].err, 0);
    assert_int_equal(sides[0].runs, ROUNDS);
    assert_int_equal(sides[1].runs, ROUNDS);
    for (int i = 0; i < 2; i++)
        weir_loop_destroy(sides[i].loop);
    pthread_barrier_destroy(&ready);
}

static void test_doorbell_epoll(void **state)
{
    (void)state;
    pingpong(WEIR_ENGINE_EPOLL, WEIR_ENGINE_EPOLL);
}

static void test_doorbell_mixed(void **state)
{
    (void)state;
    /* io_uring's MSG_RING cannot reach an epoll loop: the eventfd must. */
    pingpong(WEIR_ENGINE_IO_URING, WEIR_ENGINE_EPOLL);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_names),
        cmocka_unit_test_setup_teardown(test_errors, setup, teardown),
        cmocka_unit_test_setup_teardown(test_waits, setup, teardown),
        cmocka_unit_test_setup_teardown(test_bulk_send, setup, teardown),
        cmocka_unit_test_setup_teardown(test_cancel_states, setup, teardown),
        cmocka_unit_test_setup_teardown(test_timer_order, setup, teardown),
        cmocka_unit_test_setup_teardown(test_links, setup, teardown),
        cmocka_unit_test_setup_teardown(test_link_waits, setup, teardown),
        cmocka_unit_test_setup_teardown(test_accept_multishot, setup, teardown),
        cmocka_unit_test_setup_teardown(test_splice, setup, teardown),
        cmocka_unit_test_setup_teardown(test_splice_waits, setup, teardown),
        cmocka_unit_test_setup_teardown(test_cold_file_read, setup, teardown),
        cmocka_unit_test(test_cold_file_read_threads),
        cmocka_unit_test(test_doorbell_epoll),
        cmocka_unit_test(test_doorbell_mixed),
    };

    signal(SIGPIPE, SIG_IGN);
    return cmocka_run_group_tests(tests, NULL, NULL);
}
