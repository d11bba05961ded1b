/*
 * test_endpoint.c - endpoints and the channel's stream ends on real
 * workers: a file source piped into a file sink on one worker, the same
 * across two workers through a channel, with a pool so small that the
 * source must wait for buffers to come home, and a followed file that
 * grows and is stopped. Every output file is compared byte for byte.
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
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "weir/channel_stream.h"
#include "weir/endpoint.h"
#include "weir/pipe.h"
#include "weir/worker.h"

static char dir[] = "/tmp/weir-endpoint-XXXXXX";

struct run {
    struct weir_workers *w;
    char in[600], out[600];
    bool split, follow;
    uint32_t chunk;
    /* worker side */
    struct weir_endpoint *src, *sink;
    struct weir_channel_tx *tx;
    struct weir_channel_rx *rx;
    struct weir_task start_src, start_sink, stop;
    int src_rc, sink_rc;
    int pipes;
    /* main side */
    pthread_mutex_t lock;
    pthread_cond_t cond;
    int finished;
};

static void side_done(struct run *r)
{
    pthread_mutex_lock(&r->lock);
    r->finished++;
    pthread_cond_broadcast(&r->cond);
    pthread_mutex_unlock(&r->lock);
}

static void src_pipe_done(void *ctx, int rc)
{
    struct run *r = ctx;

    r->src_rc = rc;
    weir_endpoint_destroy(r->src);
    weir_channel_tx_destroy(r->tx);
    side_done(r);
}

static void sink_pipe_done(void *ctx, int rc)
{
    struct run *r = ctx;

    r->sink_rc = rc;
    weir_endpoint_destroy(r->sink);
    if (r->split)
        weir_channel_rx_destroy(r->rx);
    else
        weir_endpoint_destroy(r->src);
    side_done(r);
}

static void make_sink(struct run *r, struct weir_readable *rs)
{
    struct weir_fd_sink_options o = {.own_fd = true, .hwm = 256 * 1024};
    int fd = open(r->out, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    int rc;

    assert_true(fd >= 0);
    assert_int_equal(
        weir_endpoint_fd_sink(&r->sink, weir_loop_current(), fd, &o), 0);
    rc = weir_pipe_to(rs, weir_endpoint_writable(r->sink), NULL, sink_pipe_done,
                      r);
    if (rc != WEIR_PENDING)
        sink_pipe_done(r, rc);
}

static void start_src(struct weir_task *t)
{
    struct run *r =
        (struct run *)(void *)((char *)t - offsetof(struct run, start_src));
    struct weir_file_source_options o = {
        .own_fd = true,
        .chunk_size = r->chunk,
        .follow = r->follow,
        .poll_ns = 5 * 1000 * 1000,
    };
    int fd = open(r->in, O_RDONLY | O_CLOEXEC);
    struct weir_writable *ws;
    int rc;

    assert_true(fd >= 0);
    assert_int_equal(weir_endpoint_file_source(&r->src, weir_loop_current(),
                                               weir_worker_pool(), fd, &o),
                     0);
    if (!r->split) {
        make_sink(r, weir_endpoint_readable(r->src));
        return;
    }
    assert_int_equal(weir_channel_tx_open(r->tx, &ws), 0);
    rc = weir_pipe_to(weir_endpoint_readable(r->src), ws, NULL, src_pipe_done,
                      r);
    if (rc != WEIR_PENDING)
        src_pipe_done(r, rc);
}

static void start_sink(struct weir_task *t)
{
    struct run *r =
        (struct run *)(void *)((char *)t - offsetof(struct run, start_sink));
    struct weir_readable *rs;

    assert_int_equal(weir_channel_rx_open(r->rx, &rs), 0);
    make_sink(r, rs);
}

static void stop_src(struct weir_task *t)
{
    struct run *r =
        (struct run *)(void *)((char *)t - offsetof(struct run, stop));

    /* The source may have ended already; then r->src is gone. */
    if (r->finished == 0)
        weir_endpoint_stop(r->src);
}

static void make_input(const char *path, size_t size, unsigned seed)
{
    FILE *f = fopen(path, "w");

    assert_non_null(f);
    srand(seed);
    for (size_t i = 0; i < size; i++)
        fputc(rand() & 0xff, f);
    fclose(f);
}

static void expect_same(const char *a, const char *b)
{
    FILE *fa = fopen(a, "r"), *fb = fopen(b, "r");
    int ca, cb;
    long at = 0;

    assert_non_null(fa);
    assert_non_null(fb);
    do {
        ca = fgetc(fa);
        cb = fgetc(fb);
        if (ca != cb)
            fail_msg("files differ at byte %ld", at);
        at++;
    } while (ca != EOF);
    fclose(fa);
    fclose(fb);
}

static void wait_finished(struct run *r, int n)
{
    struct timespec until;

    clock_gettime(CLOCK_REALTIME, &until);
    until.tv_sec += 60;
    pthread_mutex_lock(&r->lock);
    while (r->finished < n)
        if (pthread_cond_timedwait(&r->cond, &r->lock, &until) == ETIMEDOUT)
            break;
    pthread_mutex_unlock(&r->lock);
    assert_int_equal(r->finished, n);
}

static void run_copy(bool split, uint32_t pool_buffers, size_t size,
                     uint32_t chunk)
{
    static struct run r;
    struct weir_workers_options wo = {.count = 2, .pool_buffers = pool_buffers};

    memset(&r, 0, sizeof(r));
    pthread_mutex_init(&r.lock, NULL);
    pthread_cond_init(&r.cond, NULL);
    r.split = split;
    r.chunk = chunk;
    snprintf(r.in, sizeof(r.in), "%s/in-%zu", dir, size);
    snprintf(r.out, sizeof(r.out), "%s/out-%zu", dir, size);
    make_input(r.in, size, (unsigned)size);
    assert_int_equal(weir_workers_start(&r.w, &wo), 0);
    weir_task_init(&r.start_src, start_src);
    weir_task_init(&r.start_sink, start_sink);
    if (split)
        assert_int_equal(
            weir_channel_pair(&r.tx, &r.rx, weir_workers_loop(r.w, 0),
                              weir_workers_loop(r.w, 1), 128 * 1024),
            0);
    weir_workers_post(r.w, 0, &r.start_src);
    if (split)
        weir_workers_post(r.w, 1, &r.start_sink);
    wait_finished(&r, split ? 2 : 1);
    {
        uint64_t ns = 0;

        /* The worker that read the file used CPU time; no worker 99. */
        assert_int_equal(weir_workers_cpu_ns(r.w, 0, &ns), 0);
        assert_true(ns > 0);
        assert_int_equal(weir_workers_cpu_ns(r.w, 99, &ns), -EINVAL);
    }
    assert_int_equal(weir_workers_stop(r.w), 0);
    assert_int_equal(r.sink_rc, 0);
    assert_int_equal(r.src_rc, 0);
    expect_same(r.in, r.out);
}

static void test_one_worker(void **state)
{
    (void)state;
    run_copy(false, 0, 3u << 20, 0);
}

static void test_two_workers(void **state)
{
    (void)state;
    run_copy(true, 0, 3u << 20, 0);
}

/* Four buffers per pool and odd sizes: reads wait for buffers, chunks end
 * mid-buffer, the last one is short. */
static void test_small_pool(void **state)
{
    (void)state;
    run_copy(true, 4, (1u << 20) + 12345, 10000);
    run_copy(false, 4, 777777, 4096);
}

static void test_follow_and_stop(void **state)
{
    static struct run r;
    struct weir_workers_options wo = {.count = 1};
    FILE *f;

    (void)state;
    memset(&r, 0, sizeof(r));
    pthread_mutex_init(&r.lock, NULL);
    pthread_cond_init(&r.cond, NULL);
    r.follow = true;
    snprintf(r.in, sizeof(r.in), "%s/follow-in", dir);
    snprintf(r.out, sizeof(r.out), "%s/follow-out", dir);
    make_input(r.in, 100000, 5);
    assert_int_equal(weir_workers_start(&r.w, &wo), 0);
    weir_task_init(&r.start_src, start_src);
    weir_task_init(&r.stop, stop_src);
    weir_workers_post(r.w, 0, &r.start_src);
    /* Grow it while it is followed; the poll is 5 ms. */
    for (int i = 0; i < 20; i++) {
        struct timespec ts = {0, 10 * 1000 * 1000};

        f = fopen(r.in, "a");
        assert_non_null(f);
        for (int j = 0; j < 5000; j++)
            fputc((i * 7 + j) & 0xff, f);
        fclose(f);
        nanosleep(&ts, NULL);
    }
    /* Wait until everything written so far has arrived, then stop. */
    for (int i = 0; i < 6000; i++) {
        struct stat a, b;
        struct timespec ts = {0, 10 * 1000 * 1000};

        if (stat(r.in, &a) == 0 && stat(r.out, &b) == 0 &&
            a.st_size == b.st_size)
            break;
        nanosleep(&ts, NULL);
    }
    weir_workers_post(r.w, 0, &r.stop);
    wait_finished(&r, 1);
    assert_int_equal(weir_workers_stop(r.w), 0);
    assert_int_equal(r.sink_rc, 0);
    expect_same(r.in, r.out);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_one_worker),
        cmocka_unit_test(test_two_workers),
        cmocka_unit_test(test_small_pool),
        cmocka_unit_test(test_follow_and_stop),
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
