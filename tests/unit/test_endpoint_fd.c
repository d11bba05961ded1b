/*
 * test_endpoint_fd.c - the sequential (fd) source on a loop of the test's
 * own thread: a pipe and a socket fed by another thread arrive byte for
 * byte in a file, also with a pool of two buffers (the source waits for
 * buffers); a read error (a pipe's write end) errors the stream with the
 * read's errno; destroying a source, or cancelling its stream, with a
 * read in flight cancels the read and gives its buffer back; a stop
 * delivers what the read in flight brings, then closes. What an fd sink
 * on a socket says its peer has (weir_endpoint_acked): on TCP, what the
 * peer acknowledged, the FIN of a shutdown not counted; on a unix socket,
 * at most what was sent and all of it once the peer read it. And the
 * texts weir_loop_strerror gives an operator.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/sockios.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "weir/endpoint.h"
#include "weir/pipe.h"

#define LEN (3u * 1024 * 1024 + 777)

static uint8_t *want;

struct writer {
    pthread_t t;
    int fd;
};

/* Writes `want` in pieces of assorted sizes, then closes. */
static void *writer_main(void *arg)
{
    struct writer *w = arg;
    static const size_t steps[] = {1, 4096, 100000, 13, 65536, 300001};
    size_t off = 0;

    for (unsigned i = 0; off < LEN; i++) {
        size_t n = steps[i % 6];

        if (n > LEN - off)
            n = LEN - off;
        ssize_t r = write(w->fd, want + off, n);

        if (r <= 0)
            abort();
        off += (size_t)r;
    }
    close(w->fd);
    return NULL;
}

struct run {
    struct weir_loop *loop;
    struct weir_pool *pool;
    struct weir_endpoint *src, *sink;
    bool done;
    int rc;
};

static void pipe_done(void *ctx, int rc)
{
    struct run *r = ctx;

    r->done = true;
    r->rc = rc;
    weir_endpoint_destroy(r->sink);
    weir_endpoint_destroy(r->src);
    weir_loop_stop(r->loop);
}

static void run_setup(struct run *r, uint32_t buffers)
{
    struct weir_pool_options po = {
        .buf_size = 64 * 1024, .count = buffers, .threads = 1};

    memset(r, 0, sizeof(*r));
    assert_int_equal(weir_loop_create(&r->loop, NULL), 0);
    assert_int_equal(weir_pool_create(&r->pool, &po), 0);
}

static void run_teardown(struct run *r)
{
    /* The loop finishes what destroy cancelled before it is freed. */
    weir_loop_destroy(r->loop);
    weir_pool_reclaim(r->pool);
    assert_int_equal(weir_pool_destroy(r->pool), 0);
}

/* fd -> (fd source) -> (fd sink) -> a temp file; the pipe's result. */
static int copy_to_file(struct run *r, int fd, char *path)
{
    struct weir_fd_source_options so = {.own_fd = true};
    struct weir_fd_sink_options ko = {.own_fd = true};
    int out = mkstemp(path), rc;

    assert_true(out >= 0);
    assert_int_equal(
        weir_endpoint_fd_source(&r->src, r->loop, r->pool, fd, &so), 0);
    assert_int_equal(weir_endpoint_fd_sink(&r->sink, r->loop, out, &ko), 0);
    rc = weir_pipe_to(weir_endpoint_readable(r->src),
                      weir_endpoint_writable(r->sink), NULL, pipe_done, r);
    if (rc != WEIR_PENDING)
        pipe_done(r, rc);
    while (!r->done)
        assert_int_equal(weir_loop_run(r->loop), 0);
    return r->rc;
}

static void assert_file_is_want(const char *path)
{
    FILE *fp = fopen(path, "rb");
    uint8_t *got = malloc(LEN + 1);
    size_t n;

    assert_non_null(fp);
    n = fread(got, 1, LEN + 1, fp);
    fclose(fp);
    unlink(path);
    assert_int_equal(n, LEN);
    assert_memory_equal(got, want, LEN);
    free(got);
}

static void copy_case(bool socket, uint32_t buffers)
{
    char path[] = "/tmp/weir-epfd-XXXXXX";
    struct writer w;
    struct run r;
    int fds[2];

    if (socket)
        assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM, 0, fds), 0);
    else
        assert_int_equal(pipe(fds), 0);
    w.fd = fds[1];
    run_setup(&r, buffers);
    assert_int_equal(pthread_create(&w.t, NULL, writer_main, &w), 0);
    assert_int_equal(copy_to_file(&r, fds[0], path), 0);
    pthread_join(w.t, NULL);
    run_teardown(&r);
    assert_file_is_want(path);
}

static void test_pipe(void **state)
{
    (void)state;
    copy_case(false, 64);
}

static void test_pipe_two_buffers(void **state)
{
    (void)state;
    copy_case(false, 2);
}

static void test_socket(void **state)
{
    (void)state;
    copy_case(true, 64);
}

static void test_socket_two_buffers(void **state)
{
    (void)state;
    copy_case(true, 2);
}

/* Reading a pipe's write end fails (EBADF): the stream errors with it. */
static void test_read_error(void **state)
{
    char path[] = "/tmp/weir-epfd-XXXXXX";
    struct run r;
    int fds[2];

    (void)state;
    assert_int_equal(pipe(fds), 0);
    run_setup(&r, 4);
    assert_int_equal(copy_to_file(&r, fds[1], path), -EBADF);
    run_teardown(&r);
    close(fds[0]);
    unlink(path);
}

/* A source on a pipe nobody writes to has a read in flight from its
 * first pull; destroying it cancels the read and the buffer comes back
 * (the pool is destroyed empty, and ASan sees no leak). */
struct until_home {
    struct weir_op op;
    struct run *r;
};

/* Turns of the loop until every buffer is back in the pool. */
static void until_home_fn(struct weir_op *op, int res, uint32_t flags)
{
    struct until_home *u = (struct until_home *)(void *)op;
    struct weir_pool_stats st;

    (void)res;
    (void)flags;
    weir_pool_stats(u->r->pool, &st);
    if (st.in_use == 0)
        weir_loop_stop(u->r->loop);
    else
        assert_int_equal(weir_loop_nop(u->r->loop, &u->op), 0);
}

static void test_destroy_reading(void **state)
{
    struct until_home u;
    struct weir_fd_source_options so = {.own_fd = true};
    struct run r;
    int fds[2];

    (void)state;
    assert_int_equal(pipe(fds), 0);
    run_setup(&r, 4);
    assert_int_equal(
        weir_endpoint_fd_source(&r.src, r.loop, r.pool, fds[0], &so), 0);
    assert_int_equal(weir_endpoint_bytes(r.src), 0);
    weir_endpoint_destroy(r.src);
    u = (struct until_home){.op.fn = until_home_fn, .r = &r};
    assert_int_equal(weir_loop_nop(r.loop, &u.op), 0);
    assert_int_equal(weir_loop_run(r.loop), 0);
    close(fds[1]);
    run_teardown(&r);
}

/* A reader that cancels while the read is in flight: the read is
 * cancelled and its buffer comes back. */
static void test_cancel_reading(void **state)
{
    struct weir_fd_source_options so = {.own_fd = true};
    struct weir_reader rd = {0};
    struct until_home u;
    struct run r;
    int fds[2];

    (void)state;
    assert_int_equal(pipe(fds), 0);
    run_setup(&r, 4);
    assert_int_equal(
        weir_endpoint_fd_source(&r.src, r.loop, r.pool, fds[0], &so), 0);
    assert_int_equal(weir_reader_acquire(&rd, weir_endpoint_readable(r.src)),
                     0);
    assert_int_equal(weir_reader_cancel(&rd, -ECANCELED), 0);
    weir_reader_release(&rd);
    /* Freed on a later turn, once the cancelled read is back. */
    weir_endpoint_destroy(r.src);
    u = (struct until_home){.op.fn = until_home_fn, .r = &r};
    assert_int_equal(weir_loop_nop(r.loop, &u.op), 0);
    assert_int_equal(weir_loop_run(r.loop), 0);
    close(fds[1]);
    run_teardown(&r);
}

/* A stop with a read in flight cancels it: the stream closes cleanly
 * although the writer never closed. Bytes the read had already taken
 * (io_uring completes it at once when they are there; epoll's cancel
 * comes first) arrive whole. */
static void test_stop(void **state)
{
    struct weir_fd_source_options so = {.own_fd = true};
    struct weir_fd_sink_options ko = {.own_fd = true};
    char path[] = "/tmp/weir-epfd-XXXXXX", got[16] = {0};
    int fds[2], out, rc;
    struct run r;

    (void)state;
    assert_int_equal(pipe(fds), 0);
    run_setup(&r, 4);
    out = mkstemp(path);
    assert_true(out >= 0);
    assert_int_equal(
        weir_endpoint_fd_source(&r.src, r.loop, r.pool, fds[0], &so), 0);
    assert_int_equal(weir_endpoint_fd_sink(&r.sink, r.loop, out, &ko), 0);
    rc = weir_pipe_to(weir_endpoint_readable(r.src),
                      weir_endpoint_writable(r.sink), NULL, pipe_done, &r);
    assert_int_equal(rc, WEIR_PENDING);
    assert_int_equal(write(fds[1], "weir", 4), 4);
    weir_endpoint_stop(r.src);
    while (!r.done)
        assert_int_equal(weir_loop_run(r.loop), 0);
    assert_int_equal(r.rc, 0);
    run_teardown(&r);
    close(fds[1]);
    out = open(path, O_RDONLY);
    rc = (int)read(out, got, sizeof(got));
    assert_true(rc == 0 || rc == 4);
    assert_string_equal(got, rc ? "weir" : "");
    close(out);
    unlink(path);
}

#define ACK_LEN (256u * 1024)

/* Destroys a run's endpoints outside a callback: their memory goes on a
 * later turn of the loop, once every buffer is home. */
static void destroy_both(struct run *r)
{
    struct until_home u = {.op.fn = until_home_fn, .r = r};

    weir_endpoint_destroy(r->sink);
    weir_endpoint_destroy(r->src);
    assert_int_equal(weir_loop_nop(r->loop, &u.op), 0);
    assert_int_equal(weir_loop_run(r->loop), 0);
    run_teardown(r);
}

/* A TCP connection on 127.0.0.1: *snd with a send buffer that holds
 * ACK_LEN whole, *rcv with a receive buffer of a few KiB, so a receiver
 * that does not read leaves most of ACK_LEN in the sender's queue. */
static void tcp_pair(int *snd, int *rcv)
{
    struct sockaddr_in sin = {.sin_family = AF_INET,
                              .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t len = sizeof(sin);
    int small = 4096, big = 1 << 20;
    int l = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

    assert_true(l >= 0);
    assert_int_equal(
        setsockopt(l, SOL_SOCKET, SO_RCVBUF, &small, sizeof(small)), 0);
    assert_int_equal(bind(l, (struct sockaddr *)&sin, sizeof(sin)), 0);
    assert_int_equal(getsockname(l, (struct sockaddr *)&sin, &len), 0);
    assert_int_equal(listen(l, 1), 0);
    *snd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    assert_true(*snd >= 0);
    assert_int_equal(setsockopt(*snd, SOL_SOCKET, SO_SNDBUF, &big, sizeof(big)),
                     0);
    assert_int_equal(connect(*snd, (struct sockaddr *)&sin, sizeof(sin)), 0);
    *rcv = accept(l, NULL, NULL);
    assert_true(*rcv >= 0);
    close(l);
}

static int queued_in(int fd, unsigned long req)
{
    int n = -1;

    assert_int_equal(ioctl(fd, req, &n), 0);
    return n;
}

/* Waits (5 s at most) until the sink's acked figure is `want`: the
 * peer's acknowledgements arrive a little after its bytes. */
static uint64_t acked_becomes(const struct weir_endpoint *sink, uint64_t want)
{
    struct timespec nap = {0, 5 * 1000 * 1000};
    uint64_t acked = 0;

    for (int i = 0; i < 1000; i++) {
        assert_int_equal(weir_endpoint_acked(sink, &acked), 0);
        if (acked == want)
            break;
        nanosleep(&nap, NULL);
    }
    return acked;
}

static void read_all(int fd, size_t n)
{
    uint8_t *got = malloc(n);
    size_t off = 0;

    assert_non_null(got);
    while (off < n) {
        ssize_t r = read(fd, got + off, n - off);

        assert_true(r > 0);
        off += (size_t)r;
    }
    assert_memory_equal(got, want, n);
    free(got);
}

static void sink_done(void *ctx, int rc)
{
    struct run *r = ctx;

    r->done = true;
    r->rc = rc;
    weir_loop_stop(r->loop);
}

/* ACK_LEN bytes of `want` from a file through an fd sink into fd, which
 * the sink does not own; the sink is left for the caller to look at. */
static void send_ack_len(struct run *r, int fd)
{
    struct weir_file_source_options so = {.own_fd = true};
    struct weir_fd_sink_options ko = {0};
    char path[] = "/tmp/weir-epfd-XXXXXX";
    int in = mkstemp(path);

    assert_true(in >= 0);
    unlink(path);
    assert_int_equal(write(in, want, ACK_LEN), (ssize_t)ACK_LEN);
    run_setup(r, 8);
    assert_int_equal(
        weir_endpoint_file_source(&r->src, r->loop, r->pool, in, &so), 0);
    assert_int_equal(weir_endpoint_fd_sink(&r->sink, r->loop, fd, &ko), 0);
    int rc = weir_pipe_to(weir_endpoint_readable(r->src),
                          weir_endpoint_writable(r->sink), NULL, sink_done, r);
    if (rc != WEIR_PENDING)
        sink_done(r, rc);
    while (!r->done)
        assert_int_equal(weir_loop_run(r->loop), 0);
    assert_int_equal(r->rc, 0);
    assert_int_equal(weir_endpoint_bytes(r->sink), ACK_LEN);
}

/* On TCP, with the receiver not reading: acked is what sits in the
 * receiver's queue (what it acknowledged), also after a shutdown put a
 * FIN behind the unsent bytes; once it read everything, all of it. */
static void test_acked_tcp(void **state)
{
    struct tcp_info ti;
    socklen_t len = sizeof(ti);
    uint64_t acked;
    struct run r;
    int snd, rcv;

    (void)state;
    tcp_pair(&snd, &rcv);
    send_ack_len(&r, snd);
    assert_int_equal(shutdown(snd, SHUT_WR), 0);
    assert_int_equal(getsockopt(snd, IPPROTO_TCP, TCP_INFO, &ti, &len), 0);
    assert_int_equal(ti.tcpi_state, TCP_FIN_WAIT1);
    acked = acked_becomes(r.sink, (uint64_t)queued_in(rcv, FIONREAD));
    assert_int_equal(acked, queued_in(rcv, FIONREAD));
    /* Unsent bytes and the FIN wait: the FIN was not counted as a byte. */
    assert_true(acked < ACK_LEN);
    assert_int_equal(acked + (uint64_t)queued_in(snd, SIOCOUTQ), ACK_LEN + 1);
    read_all(rcv, ACK_LEN);
    assert_int_equal(acked_becomes(r.sink, ACK_LEN), ACK_LEN);
    destroy_both(&r);
    close(snd);
    close(rcv);
}

/* On a unix socket: never more than was sent while the peer holds the
 * bytes unread, and all of it once the peer read them. */
static void test_acked_unix(void **state)
{
    uint64_t acked;
    struct run r;
    int fds[2], big = 1 << 20;

    (void)state;
    assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM, 0, fds), 0);
    assert_int_equal(
        setsockopt(fds[0], SOL_SOCKET, SO_SNDBUF, &big, sizeof(big)), 0);
    send_ack_len(&r, fds[0]);
    assert_int_equal(weir_endpoint_acked(r.sink, &acked), 0);
    assert_true(acked < ACK_LEN);
    read_all(fds[1], ACK_LEN);
    assert_int_equal(acked_becomes(r.sink, ACK_LEN), ACK_LEN);
    destroy_both(&r);
    close(fds[0]);
    close(fds[1]);
}

static void test_strerror(void **state)
{
    (void)state;
    assert_string_equal(weir_loop_strerror(0), "no error");
    assert_non_null(strstr(weir_loop_strerror(-EPERM), "io_uring_disabled"));
    assert_non_null(strstr(weir_loop_strerror(-EACCES), "seccomp"));
    assert_non_null(strstr(weir_loop_strerror(-ENOSYS), "5.19"));
    assert_non_null(strstr(weir_loop_strerror(-ENOMEM), "LimitMEMLOCK="));
    assert_non_null(strstr(weir_loop_strerror(-EMFILE), "LimitNOFILE="));
    assert_non_null(strstr(weir_loop_strerror(-ENFILE), "ulimit -n"));
    assert_non_null(strstr(weir_loop_strerror(-EINVAL), "too old"));
    assert_non_null(strstr(weir_loop_strerror(-EIO), "unexpected"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_pipe),
        cmocka_unit_test(test_pipe_two_buffers),
        cmocka_unit_test(test_socket),
        cmocka_unit_test(test_socket_two_buffers),
        cmocka_unit_test(test_read_error),
        cmocka_unit_test(test_destroy_reading),
        cmocka_unit_test(test_cancel_reading),
        cmocka_unit_test(test_stop),
        cmocka_unit_test(test_acked_tcp),
        cmocka_unit_test(test_acked_unix),
        cmocka_unit_test(test_strerror),
    };
    int rc;

    want = malloc(LEN);
    for (size_t i = 0; i < LEN; i++)
        want[i] = (uint8_t)(i * 2654435761u >> 13);
    rc = cmocka_run_group_tests(tests, NULL, NULL);
    free(want);
    return rc;
}
