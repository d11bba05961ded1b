/*
 * test_endpoint_socket.c - a socket sink on a real worker, fed by a file
 * source, against listeners on 127.0.0.1 that this thread drives: a host
 * name resolved for it, a name that does not resolve, a refused port
 * retried until the sink is cut, a peer that never reads (send timeout),
 * and a peer that drops the connection mid-stream (reconnect, and resume
 * from what it acknowledged). Received bytes are compared with the file.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "weir/endpoint.h"
#include "weir/pipe.h"
#include "weir/worker.h"

#define NEVENTS (WEIR_EP_RESOLVE_FAIL + 1)

static char dir[] = "/tmp/weir-epsock-XXXXXX";

struct run {
    struct weir_workers *w;
    char in[600];
    struct weir_socket_sink_options so;
    int src_fd; /* >= 0: an fd source on it instead of the file */
    /* worker side */
    struct weir_endpoint *src, *sink;
    struct weir_task start, cut, stop;
    int rc;
    bool done;
    bool cut_at_start; /* cut the sink right after making it */
    /* shared, under lock */
    pthread_mutex_t lock;
    pthread_cond_t cond;
    int events[NEVENTS];
    int finished;
};

static struct run r;

static void on_event(void *arg, enum weir_endpoint_event ev, int err,
                     uint64_t offset)
{
    struct run *x = arg;

    (void)err;
    (void)offset;
    pthread_mutex_lock(&x->lock);
    if ((int)ev >= 0 && ev < NEVENTS)
        x->events[ev]++;
    pthread_cond_broadcast(&x->cond);
    pthread_mutex_unlock(&x->lock);
}

static void pipe_done(void *ctx, int rc)
{
    struct run *x = ctx;

    x->rc = rc;
    x->done = true;
    weir_endpoint_destroy(x->sink);
    weir_endpoint_destroy(x->src);
    pthread_mutex_lock(&x->lock);
    x->finished = 1;
    pthread_cond_broadcast(&x->cond);
    pthread_mutex_unlock(&x->lock);
}

static void start_task(struct weir_task *t)
{
    struct run *x =
        (struct run *)(void *)((char *)t - offsetof(struct run, start));
    struct weir_fd_source_options fo = {.own_fd = true};
    struct weir_file_source_options so = {.own_fd = true};
    int fd = x->src_fd >= 0 ? x->src_fd : open(x->in, O_RDONLY | O_CLOEXEC);
    int rc;

    assert_true(fd >= 0);
    if (x->src_fd >= 0)
        assert_int_equal(weir_endpoint_fd_source(&x->src, weir_loop_current(),
                                                 weir_worker_pool(), fd, &fo),
                         0);
    else
        assert_int_equal(weir_endpoint_file_source(&x->src, weir_loop_current(),
                                                   weir_worker_pool(), fd, &so),
                         0);
    assert_int_equal(
        weir_endpoint_socket_sink(&x->sink, weir_loop_current(), &x->so), 0);
    rc = weir_pipe_to(weir_endpoint_readable(x->src),
                      weir_endpoint_writable(x->sink), NULL, pipe_done, x);
    if (rc != WEIR_PENDING)
        pipe_done(x, rc);
    else if (x->cut_at_start)
        weir_endpoint_cut(x->sink); /* its lookup is out: no answer yet */
}

static void cut_task(struct weir_task *t)
{
    struct run *x =
        (struct run *)(void *)((char *)t - offsetof(struct run, cut));

    if (!x->done)
        weir_endpoint_cut(x->sink);
}

static void stop_task(struct weir_task *t)
{
    struct run *x =
        (struct run *)(void *)((char *)t - offsetof(struct run, stop));

    if (!x->done)
        weir_endpoint_stop(x->sink);
}

static void make_input(const char *path, size_t size)
{
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    uint8_t buf[65536];

    assert_true(fd >= 0);
    for (size_t at = 0; at < size;) {
        size_t n = size - at < sizeof(buf) ? size - at : sizeof(buf);

        for (size_t i = 0; i < n; i++)
            buf[i] = (uint8_t)(((at + i) * 2654435761u) >> 13);
        assert_int_equal(write(fd, buf, n), (ssize_t)n);
        at += n;
    }
    close(fd);
}

static uint8_t byte_at(size_t at)
{
    return (uint8_t)((at * 2654435761u) >> 13);
}

static void run_begin(size_t size)
{
    struct weir_workers_options wo = {.count = 1};

    memset(&r, 0, sizeof(r));
    pthread_mutex_init(&r.lock, NULL);
    pthread_cond_init(&r.cond, NULL);
    snprintf(r.in, sizeof(r.in), "%s/in", dir);
    make_input(r.in, size);
    r.so.replay_fd = -1;
    r.src_fd = -1;
    r.so.on_event = on_event;
    r.so.event_arg = &r;
    assert_int_equal(weir_workers_start(&r.w, &wo), 0);
    weir_task_init(&r.start, start_task);
    weir_task_init(&r.cut, cut_task);
    weir_task_init(&r.stop, stop_task);
}

/* Reconnects after a backoff of 1-4 ms, so a case's retries take
 * milliseconds. */
static void fast_backoff(void)
{
    r.so.reconnect = true;
    r.so.backoff_min_ns = 1000 * 1000;
    r.so.backoff_max_ns = 4 * 1000 * 1000;
}

static void run_go(void)
{
    weir_workers_post(r.w, 0, &r.start);
}

/* Waits (60 s at most) until events[ev] >= n, or finished when ev < 0. */
static void wait_for(int ev, int n)
{
    struct timespec until;
    bool ok;

    clock_gettime(CLOCK_REALTIME, &until);
    until.tv_sec += 60;
    pthread_mutex_lock(&r.lock);
    for (;;) {
        ok = ev < 0 ? r.finished >= n : r.events[ev] >= n;
        if (ok || pthread_cond_timedwait(&r.cond, &r.lock, &until) == ETIMEDOUT)
            break;
    }
    ok = ev < 0 ? r.finished >= n : r.events[ev] >= n;
    pthread_mutex_unlock(&r.lock);
    assert_true(ok);
}

static int run_end(void)
{
    wait_for(-1, 1);
    assert_int_equal(weir_workers_stop(r.w), 0);
    unlink(r.in);
    return r.rc;
}

/* A listening (or, listen false, only bound) socket on 127.0.0.1. */
static int tcp_socket(bool listen_too, struct sockaddr_in *sa)
{
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    socklen_t len = sizeof(*sa);

    assert_true(fd >= 0);
    memset(sa, 0, sizeof(*sa));
    sa->sin_family = AF_INET;
    sa->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    assert_int_equal(bind(fd, (struct sockaddr *)sa, sizeof(*sa)), 0);
    assert_int_equal(getsockname(fd, (struct sockaddr *)sa, &len), 0);
    if (listen_too)
        assert_int_equal(listen(fd, 8), 0);
    return fd;
}

static int accept_wait(int lfd)
{
    struct pollfd p = {.fd = lfd, .events = POLLIN};
    int fd;

    assert_int_equal(poll(&p, 1, 60000), 1);
    fd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
    assert_true(fd >= 0);
    return fd;
}

/* Reads to EOF (60 s idle at most), checking every byte is the file's
 * byte at base + position; returns how many arrived. */
static size_t read_check(int fd, size_t base, size_t limit)
{
    uint8_t buf[65536];
    size_t got = 0;

    for (;;) {
        struct pollfd p = {.fd = fd, .events = POLLIN};
        ssize_t n;

        if (got >= limit)
            break;
        assert_int_equal(poll(&p, 1, 60000), 1);
        n = read(fd, buf,
                 limit - got < sizeof(buf) ? limit - got : sizeof(buf));
        assert_true(n >= 0);
        if (n == 0)
            break;
        for (ssize_t i = 0; i < n; i++)
            if (buf[i] != byte_at(base + got + (size_t)i))
                fail_msg("byte %zu differs", base + got + (size_t)i);
        got += (size_t)n;
    }
    return got;
}

static void set_addr(const struct sockaddr_in *sa)
{
    memcpy(&r.so.addr, sa, sizeof(*sa));
    r.so.addrlen = sizeof(*sa);
}

/* "localhost" resolves off the loop's thread; every byte arrives. */
static void test_host_name(void **state)
{
    struct sockaddr_in sa;
    const size_t size = (1u << 20) + 333;
    int lfd, cfd;

    (void)state;
    lfd = tcp_socket(true, &sa);
    run_begin(size);
    r.so.host = "localhost";
    r.so.port = ntohs(sa.sin_port);
    run_go();
    cfd = accept_wait(lfd);
    assert_int_equal(read_check(cfd, 0, SIZE_MAX), size);
    assert_int_equal(run_end(), 0);
    assert_int_equal(r.events[WEIR_EP_CONNECTED], 1);
    assert_int_equal(r.events[WEIR_EP_RESOLVE_FAIL], 0);
    close(cfd);
    close(lfd);
}

/* A name that cannot resolve fails the sink when it does not reconnect. */
static void test_resolve_fail(void **state)
{
    int rc;

    (void)state;
    run_begin(4096);
    r.so.host = "no-such-host.invalid";
    r.so.port = 9;
    run_go();
    rc = run_end();
    assert_true(rc < 0);
    assert_int_equal(r.events[WEIR_EP_RESOLVE_FAIL], 1);
    assert_int_equal(r.events[WEIR_EP_CONNECTED], 0);
}

/* With reconnect it retries the lookup until cut. */
static void test_resolve_retry_cut(void **state)
{
    (void)state;
    run_begin(4096);
    r.so.host = "no-such-host.invalid";
    r.so.port = 9;
    fast_backoff();
    run_go();
    wait_for(WEIR_EP_RESOLVE_FAIL, 3);
    weir_workers_post(r.w, 0, &r.cut);
    assert_int_equal(run_end(), -ECANCELED);
    assert_int_equal(r.events[WEIR_EP_CONNECTED], 0);
}

/* A cut while the name's lookup is out: the answer fails the sink, and
 * nothing connects to the listener the name leads to. */
static void test_cut_during_lookup(void **state)
{
    struct sockaddr_in sa;
    int lfd;

    (void)state;
    lfd = tcp_socket(true, &sa);
    run_begin(4096);
    r.so.host = "localhost";
    r.so.port = ntohs(sa.sin_port);
    r.so.reconnect = true;
    r.cut_at_start = true;
    run_go();
    assert_int_equal(run_end(), -ECANCELED);
    assert_int_equal(r.events[WEIR_EP_CONNECTED], 0);
    close(lfd);
}

/* A port bound but not listening refuses; the sink backs off and retries
 * until it is cut. */
/* A sink reconnecting to a port bound but not listening, backing off
 * from `backoff_ns` (doubling up to four times that) after each refusal,
 * until `fails` connects were refused; then task t, and the stream ends
 * with want. */
static void refused_until(int fails, uint64_t backoff_ns, struct weir_task *t,
                          int want)
{
    struct sockaddr_in sa;
    int hold = tcp_socket(false, &sa);

    run_begin(4096);
    set_addr(&sa);
    r.so.reconnect = true;
    r.so.backoff_min_ns = backoff_ns;
    r.so.backoff_max_ns = 4 * backoff_ns;
    run_go();
    wait_for(WEIR_EP_CONNECT_FAIL, fails);
    weir_workers_post(r.w, 0, t);
    assert_int_equal(run_end(), want);
    assert_int_equal(r.events[WEIR_EP_CONNECTED], 0);
    close(hold);
}

static void test_refused_retry_cut(void **state)
{
    (void)state;
    refused_until(3, 1000 * 1000, &r.cut, -ECANCELED);
}

/* Without reconnect a refused connect fails the stream. */
static void test_refused_once(void **state)
{
    struct sockaddr_in sa;
    int hold;

    (void)state;
    hold = tcp_socket(false, &sa);
    run_begin(4096);
    set_addr(&sa);
    run_go();
    assert_int_equal(run_end(), -ECONNREFUSED);
    assert_int_equal(r.events[WEIR_EP_CONNECTED], 0);
    close(hold);
}

/* A peer that accepts and never reads: once the socket buffers are full
 * a send moves nothing and the send timeout ends the stream. */
static void test_send_timeout(void **state)
{
    struct sockaddr_in sa;
    int lfd, cfd;

    (void)state;
    lfd = tcp_socket(true, &sa);
    run_begin(64u << 20);
    set_addr(&sa);
    r.so.peer.send_timeout_ns = 200 * 1000 * 1000;
    run_go();
    cfd = accept_wait(lfd);
    assert_int_equal(run_end(), -ETIMEDOUT);
    assert_int_equal(r.events[WEIR_EP_CONNECTED], 1);
    close(cfd);
    close(lfd);
}

/* The peer resets the first connection mid-stream; the sink reconnects
 * and, resuming from its copy (or, replay, from the file), starts the
 * second where the first peer's acknowledged bytes ended: the second
 * connection carries the file's tail exactly. */
static void reconnect_tail(bool replay)
{
    struct sockaddr_in sa;
    const size_t size = 6u << 20;
    struct linger lg = {.l_onoff = 1, .l_linger = 0};
    int lfd, c1, c2, rfd = -1;
    size_t first, second;

    lfd = tcp_socket(true, &sa);
    run_begin(size);
    set_addr(&sa);
    r.so.reconnect = true;
    if (replay) {
        rfd = open(r.in, O_RDONLY | O_CLOEXEC);
        assert_true(rfd >= 0);
        r.so.replay_fd = rfd;
    } else {
        r.so.resume = WEIR_RESUME_BYTES;
    }
    fast_backoff();
    run_go();
    c1 = accept_wait(lfd);
    first = read_check(c1, 0, 100000);
    assert_int_equal(first, 100000);
    assert_int_equal(setsockopt(c1, SOL_SOCKET, SO_LINGER, &lg, sizeof(lg)), 0);
    close(c1);
    c2 = accept_wait(lfd);
    /* Where the second starts is only known from its length. */
    {
        uint8_t *all = malloc(size);
        size_t got = 0;

        assert_non_null(all);
        for (;;) {
            struct pollfd p = {.fd = c2, .events = POLLIN};
            ssize_t n;

            assert_int_equal(poll(&p, 1, 60000), 1);
            n = read(c2, all + got, size - got);
            assert_true(n >= 0);
            if (n == 0)
                break;
            got += (size_t)n;
            assert_true(got <= size);
        }
        second = got;
        assert_true(second > 0);
        assert_true(second <= size - first);
        for (size_t i = 0; i < second; i++)
            if (all[i] != byte_at(size - second + i))
                fail_msg("resent byte %zu differs", i);
        free(all);
    }
    assert_int_equal(run_end(), 0);
    assert_true(r.events[WEIR_EP_CONNECTED] >= 2);
    assert_true(r.events[WEIR_EP_DISCONNECTED] >= 1);
    assert_true(r.events[WEIR_EP_RESUMED] >= 1);
    close(c2);
    close(lfd);
    if (rfd >= 0)
        close(rfd);
}

static void test_reconnect_resume(void **state)
{
    (void)state;
    reconnect_tail(false);
}

static void test_reconnect_replay_file(void **state)
{
    (void)state;
    reconnect_tail(true);
}

static void destroy_task(struct weir_task *t)
{
    struct run *x =
        (struct run *)(void *)((char *)t - offsetof(struct run, start));

    assert_int_equal(
        weir_endpoint_socket_sink(&x->sink, weir_loop_current(), &x->so), 0);
    /* Its start began the lookup, which is still out on its thread. */
    weir_endpoint_destroy(x->sink);
    x->done = true;
    pthread_mutex_lock(&x->lock);
    x->finished = 1;
    pthread_cond_broadcast(&x->cond);
    pthread_mutex_unlock(&x->lock);
}

/* A sink destroyed while its name is being looked up: the lookup's
 * answer is dropped, nothing connects and nothing leaks. */
static void test_destroy_during_lookup(void **state)
{
    struct sockaddr_in sa;
    int lfd;

    (void)state;
    lfd = tcp_socket(true, &sa);
    run_begin(0);
    r.so.host = "localhost";
    r.so.port = ntohs(sa.sin_port);
    weir_task_init(&r.start, destroy_task);
    run_go();
    assert_int_equal(run_end(), 0);
    assert_int_equal(r.events[WEIR_EP_CONNECTED], 0);
    close(lfd);
}

/* An idle connection (the source has nothing yet) whose peer sends a few
 * bytes and closes: the sink's watch notices, reconnects, and the bytes
 * written later arrive on the new connection. */
static void test_idle_peer_close_reconnect(void **state)
{
    struct sockaddr_in sa;
    int lfd, c1, c2, p[2];
    static const char msg[] = "written after the first peer left";
    char got[sizeof(msg) + 16];
    size_t n = 0;

    (void)state;
    lfd = tcp_socket(true, &sa);
    assert_int_equal(pipe2(p, O_CLOEXEC), 0);
    run_begin(0);
    r.src_fd = p[0];
    set_addr(&sa);
    fast_backoff();
    run_go();
    c1 = accept_wait(lfd);
    wait_for(WEIR_EP_CONNECTED, 1);
    assert_int_equal(write(c1, "hi", 2), 2);
    close(c1);
    c2 = accept_wait(lfd);
    wait_for(WEIR_EP_CONNECTED, 2);
    assert_true(r.events[WEIR_EP_DISCONNECTED] >= 1);
    assert_int_equal(write(p[1], msg, sizeof(msg)), (ssize_t)sizeof(msg));
    close(p[1]);
    for (;;) {
        struct pollfd pf = {.fd = c2, .events = POLLIN};
        ssize_t k;

        assert_int_equal(poll(&pf, 1, 60000), 1);
        k = read(c2, got + n, sizeof(got) - n);
        assert_true(k >= 0);
        if (k == 0)
            break;
        n += (size_t)k;
    }
    assert_int_equal(n, sizeof(msg));
    assert_memory_equal(got, msg, sizeof(msg));
    assert_int_equal(run_end(), 0);
    close(c2);
    close(lfd);
}

/* Without reconnect, a peer that closes an idle connection fails the
 * stream at its next write. */
static void test_idle_peer_close_fails(void **state)
{
    struct sockaddr_in sa;
    int lfd, c1, p[2];

    (void)state;
    lfd = tcp_socket(true, &sa);
    assert_int_equal(pipe2(p, O_CLOEXEC), 0);
    run_begin(0);
    r.src_fd = p[0];
    set_addr(&sa);
    run_go();
    c1 = accept_wait(lfd);
    wait_for(WEIR_EP_CONNECTED, 1);
    close(c1);
    /* Once the sink saw the close, its next write fails; keep writing
     * until the stream has ended. */
    for (;;) {
        bool fin;

        pthread_mutex_lock(&r.lock);
        fin = r.finished;
        pthread_mutex_unlock(&r.lock);
        if (fin || write(p[1], "x", 1) != 1)
            break;
        {
            struct timespec ts = {0, 5 * 1000 * 1000};

            nanosleep(&ts, NULL);
        }
    }
    assert_true(run_end() < 0);
    close(p[1]);
    close(lfd);
}

/* Appends v to the buffer as n little-endian bytes. */
static size_t put_le(uint8_t *b, size_t at, uint64_t v, unsigned n)
{
    for (unsigned i = 0; i < n; i++)
        b[at + i] = (uint8_t)(v >> (8 * i));
    return at + n;
}

static size_t put_payload(uint8_t *b, size_t at, size_t n)
{
    for (size_t i = 0; i < n; i++)
        b[at + i] = byte_at(at + i);
    return at + n;
}

/*
 * A stream of members as weir's framer reads them, written to r.in;
 * starts[] gets each member's offset. gzip: a 20-byte header with the
 * member's size in its 'W','R' extra field, then opaque bytes. zstd:
 * frames of raw and RLE blocks (some with a checksum, some with a frame
 * content size) and skippable frames between them.
 */
static size_t make_members(enum weir_resume kind, uint8_t *b, size_t cap,
                           size_t *starts, size_t *nstarts)
{
    size_t at = 0;
    unsigned i = 0;

    *nstarts = 0;
    while (at + 300000 < cap) {
        starts[(*nstarts)++] = at;
        if (kind == WEIR_RESUME_GZIP) {
            uint32_t size = 20 + 50000 + (i % 7) * 1000;

            b[at] = 0x1f;
            b[at + 1] = 0x8b;
            b[at + 2] = 8;
            b[at + 3] = 0x04;
            memset(b + at + 4, 0, 6);
            put_le(b, at + 10, 8, 2);
            b[at + 12] = 'W';
            b[at + 13] = 'R';
            put_le(b, at + 14, 4, 2);
            put_le(b, at + 16, size, 4);
            at = put_payload(b, at + 20, size - 20);
        } else if (i % 5 == 4) {
            at = put_le(b, at, 0x184D2A53u, 4);
            at = put_le(b, at, 1000, 4);
            at = put_payload(b, at, 1000);
        } else {
            bool sum = i % 2, fcs = i % 3 == 1;

            at = put_le(b, at, 0xFD2FB528u, 4);
            /* FHD: checksum flag; with fcs a 2-byte content size (code
             * 1) and a window descriptor, else the window alone. */
            b[at++] = (uint8_t)((sum ? 0x04 : 0) | (fcs ? 0x40 : 0));
            b[at++] = 0x50; /* window descriptor */
            if (fcs)
                at = put_le(b, at, 1234, 2);
            for (unsigned k = 0; k < 4; k++) {
                bool last = k == 3;
                uint32_t n = 20000 + k * 100;

                if (k == 1) { /* RLE: one byte on the wire */
                    at = put_le(b, at, (n << 3) | (1u << 1) | last, 3);
                    b[at++] = 0x55;
                } else {
                    at = put_le(b, at, (n << 3) | last, 3);
                    at = put_payload(b, at, n);
                }
            }
            if (sum)
                at = put_le(b, at, 0xdeadbeef, 4);
        }
        i++;
    }
    return at;
}

/* As test_reconnect_resume, on a member stream: the second connection
 * must start exactly where a member starts, and carry the rest. */
static void reconnect_members(enum weir_resume kind)
{
    struct sockaddr_in sa;
    const size_t cap = 6u << 20;
    struct linger lg = {.l_onoff = 1, .l_linger = 0};
    uint8_t *in = malloc(cap), *got = malloc(cap);
    size_t starts[512], nstarts, size, n = 0;
    int lfd, c1, c2, fd;
    bool at_start = false;

    assert_non_null(in);
    assert_non_null(got);
    size = make_members(kind, in, cap, starts, &nstarts);
    lfd = tcp_socket(true, &sa);
    run_begin(0);
    fd = open(r.in, O_WRONLY | O_TRUNC | O_CLOEXEC);
    assert_true(fd >= 0);
    assert_int_equal(write(fd, in, size), (ssize_t)size);
    close(fd);
    set_addr(&sa);
    r.so.reconnect = true;
    r.so.resume = kind;
    fast_backoff();
    run_go();
    c1 = accept_wait(lfd);
    assert_int_equal(read(c1, got, 1000) > 0, 1);
    assert_int_equal(setsockopt(c1, SOL_SOCKET, SO_LINGER, &lg, sizeof(lg)), 0);
    close(c1);
    c2 = accept_wait(lfd);
    for (;;) {
        struct pollfd p = {.fd = c2, .events = POLLIN};
        ssize_t k;

        assert_int_equal(poll(&p, 1, 60000), 1);
        k = read(c2, got + n, cap - n);
        assert_true(k >= 0);
        if (k == 0)
            break;
        n += (size_t)k;
        assert_true(n <= size);
    }
    assert_true(n > 0);
    for (size_t i = 0; i < nstarts; i++)
        at_start |= starts[i] == size - n;
    assert_true(at_start);
    assert_memory_equal(got, in + (size - n), n);
    assert_int_equal(run_end(), 0);
    assert_true(r.events[WEIR_EP_RESUMED] >= 1);
    close(c2);
    close(lfd);
    free(in);
    free(got);
}

static void test_resume_gzip(void **state)
{
    (void)state;
    reconnect_members(WEIR_RESUME_GZIP);
}

static void test_resume_zstd(void **state)
{
    (void)state;
    reconnect_members(WEIR_RESUME_ZSTD);
}

/* A resuming sink whose peer never reads: the copy fills up to its bound
 * and the sink waits for acknowledgements that never come, until the send
 * timeout ends the stream. */
static void test_resume_bound_timeout(void **state)
{
    struct sockaddr_in sa;
    int lfd, cfd;

    (void)state;
    lfd = tcp_socket(true, &sa);
    run_begin(64u << 20);
    set_addr(&sa);
    r.so.resume = WEIR_RESUME_BYTES;
    r.so.reconnect = true;
    r.so.cut_stalled = true;
    r.so.peer.send_timeout_ns = 200 * 1000 * 1000;
    run_go();
    cfd = accept_wait(lfd);
    assert_int_equal(run_end(), -ETIMEDOUT);
    assert_int_equal(r.events[WEIR_EP_CONNECTED], 1);
    close(cfd);
    close(lfd);
}

/* One gzip member three times the copy's bound: at the bound the copy
 * lets go of the member's acknowledged part instead of holding it all,
 * and every byte still arrives once, in order. */
static void test_resume_member_over_bound(void **state)
{
    struct sockaddr_in sa;
    const size_t size = 3 * WEIR_RESUME_MAX;
    uint8_t *in = malloc(size);
    int lfd, cfd, fd;

    (void)state;
    assert_non_null(in);
    memset(in, 0, 20);
    in[0] = 0x1f;
    in[1] = 0x8b;
    in[2] = 8;
    in[3] = 0x04;
    put_le(in, 10, 8, 2);
    in[12] = 'W';
    in[13] = 'R';
    put_le(in, 14, 4, 2);
    put_le(in, 16, size, 4);
    put_payload(in, 20, size - 20);
    lfd = tcp_socket(true, &sa);
    run_begin(0);
    fd = open(r.in, O_WRONLY | O_TRUNC | O_CLOEXEC);
    assert_true(fd >= 0);
    assert_int_equal(write(fd, in, size), (ssize_t)size);
    close(fd);
    set_addr(&sa);
    r.so.resume = WEIR_RESUME_GZIP;
    r.so.reconnect = true;
    run_go();
    cfd = accept_wait(lfd);
    {
        uint8_t buf[65536];
        size_t got = 0;

        for (;;) {
            struct pollfd p = {.fd = cfd, .events = POLLIN};
            ssize_t n;

            assert_int_equal(poll(&p, 1, 60000), 1);
            n = read(cfd, buf, sizeof(buf));
            assert_true(n >= 0);
            if (n == 0)
                break;
            assert_true(got + (size_t)n <= size);
            assert_memory_equal(buf, in + got, (size_t)n);
            got += (size_t)n;
        }
        assert_int_equal(got, size);
    }
    free(in);
    assert_int_equal(run_end(), 0);
    assert_int_equal(r.events[WEIR_EP_CONNECTED], 1);
    close(cfd);
    close(lfd);
}

/* Stopped while backing off from a refused port: no more retries, and
 * the write it holds fails with -ENOTCONN. The backoff is long, so that
 * the stop cannot land during the next connect instead (which ends the
 * stream with that connect's own refusal). */
static void test_stop_in_backoff(void **state)
{
    (void)state;
    refused_until(1, 10ull * 1000 * 1000 * 1000, &r.stop, -ENOTCONN);
}

/* A listener whose backlog is full never answers the sink's SYN: the
 * connect timeout fails it. */
static void test_connect_timeout(void **state)
{
    struct sockaddr_in sa;
    int lfd, fill[4];

    (void)state;
    lfd = tcp_socket(false, &sa);
    assert_int_equal(listen(lfd, 0), 0);
    for (int i = 0; i < 4; i++) {
        fill[i] =
            socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
        assert_true(fill[i] >= 0);
        (void)connect(fill[i], (struct sockaddr *)&sa, sizeof(sa));
    }
    run_begin(4096);
    set_addr(&sa);
    r.so.connect_timeout_ns = 200 * 1000 * 1000;
    run_go();
    assert_int_equal(run_end(), -ETIMEDOUT);
    assert_int_equal(r.events[WEIR_EP_CONNECTED], 0);
    for (int i = 0; i < 4; i++)
        close(fill[i]);
    close(lfd);
}

/* The source fails (its TCP peer resets) while the sink is connected:
 * the pipe aborts the sink, and the bytes it already took arrive. */
static void test_source_reset_aborts(void **state)
{
    struct sockaddr_in sa, sb;
    struct linger lg = {.l_onoff = 1, .l_linger = 0};
    int lfd, sfd, feed, srcfd, cfd;
    char buf[16];
    size_t got = 0;

    (void)state;
    lfd = tcp_socket(true, &sa);
    sfd = tcp_socket(true, &sb);
    feed = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    assert_true(feed >= 0);
    assert_int_equal(connect(feed, (struct sockaddr *)&sb, sizeof(sb)), 0);
    srcfd = accept_wait(sfd);
    run_begin(0);
    r.src_fd = srcfd;
    set_addr(&sa);
    run_go();
    cfd = accept_wait(lfd);
    wait_for(WEIR_EP_CONNECTED, 1);
    assert_int_equal(write(feed, "abc", 3), 3);
    while (got < 3) {
        struct pollfd p = {.fd = cfd, .events = POLLIN};
        ssize_t n;

        assert_int_equal(poll(&p, 1, 60000), 1);
        n = read(cfd, buf + got, sizeof(buf) - got);
        assert_true(n > 0);
        got += (size_t)n;
    }
    assert_memory_equal(buf, "abc", 3);
    assert_int_equal(setsockopt(feed, SOL_SOCKET, SO_LINGER, &lg, sizeof(lg)),
                     0);
    close(feed);
    assert_int_equal(run_end(), -ECONNRESET);
    close(cfd);
    close(sfd);
    close(lfd);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_host_name),
        cmocka_unit_test(test_resolve_fail),
        cmocka_unit_test(test_resolve_retry_cut),
        cmocka_unit_test(test_cut_during_lookup),
        cmocka_unit_test(test_refused_retry_cut),
        cmocka_unit_test(test_refused_once),
        cmocka_unit_test(test_send_timeout),
        cmocka_unit_test(test_reconnect_resume),
        cmocka_unit_test(test_destroy_during_lookup),
        cmocka_unit_test(test_idle_peer_close_reconnect),
        cmocka_unit_test(test_idle_peer_close_fails),
        cmocka_unit_test(test_resume_gzip),
        cmocka_unit_test(test_resume_zstd),
        cmocka_unit_test(test_resume_bound_timeout),
        cmocka_unit_test(test_reconnect_replay_file),
        cmocka_unit_test(test_resume_member_over_bound),
        cmocka_unit_test(test_stop_in_backoff),
        cmocka_unit_test(test_connect_timeout),
        cmocka_unit_test(test_source_reset_aborts),
    };
    char cmd[700];
    int rc;

    if (!mkdtemp(dir))
        return 1;
    rc = cmocka_run_group_tests(tests, NULL, NULL);
    snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
    if (system(cmd) != 0)
        rc = rc ? rc : 1;
    return rc;
}
