/*
 * test_endpoint_kafka.c - the kafka sink on a real worker, fed by a file
 * source of numbered records, against librdkafka's mock cluster in this
 * process (3 brokers, a topic of 3 partitions replicated 3 times, each
 * led by broker 1), read back with librdkafka's own consumer.
 *
 *   deliver   every record in the topic once, in order (one key), and
 *             the sink acknowledged the whole input
 *   cut       broker 1 down: nothing acknowledged, the source held back
 *             within the high-water mark, then the sink cut with records
 *             out and queued: the pipe fails, and destroying the sink
 *             with all of that pending frees everything (ASan)
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
#include <time.h>
#include <unistd.h>

#include <cmocka.h>
#include <librdkafka/rdkafka.h>
#include <librdkafka/rdkafka_mock.h>

#include "weir/endpoint.h"
#include "weir/pipe.h"
#include "weir/worker.h"

#define RECLEN 40 /* "r%07u " padded to 39 bytes, and '\n' */
#define HWM    (64u * 1024)

static char dir[] = "/tmp/wt-kafka-epu-XXXXXX";
static rd_kafka_t *mrk;
static rd_kafka_mock_cluster_t *mc;
static int ntopic;

struct run {
    struct weir_workers *w;
    char in[600], topic[32];
    unsigned nrec;
    struct weir_kafka_sink_options o;
    struct weir_kafka_counters st;
    _Atomic uint64_t acked_count;
    /* worker side */
    struct weir_endpoint *src, *sink;
    struct weir_task start, cut;
    uint64_t max_held; /* the most read - acked seen */
    int rc;
    bool done;
    /* shared */
    pthread_mutex_t lock;
    pthread_cond_t cond;
    _Atomic uint64_t read;
};

static struct run r;

static void pipe_done(void *ctx, int rc)
{
    struct run *x = ctx;

    x->rc = rc;
    x->done = true;
    weir_endpoint_destroy(x->sink);
    weir_endpoint_destroy(x->src);
    pthread_mutex_lock(&x->lock);
    pthread_cond_broadcast(&x->cond);
    pthread_mutex_unlock(&x->lock);
}

static void start_task(struct weir_task *t)
{
    struct run *x =
        (struct run *)(void *)((char *)t - offsetof(struct run, start));
    struct weir_file_source_options so = {.own_fd = true};
    int fd = open(x->in, O_RDONLY | O_CLOEXEC);
    int rc;

    assert_true(fd >= 0);
    assert_int_equal(weir_endpoint_file_source(&x->src, weir_loop_current(),
                                               weir_worker_pool(), fd, &so),
                     0);
    assert_int_equal(
        weir_endpoint_kafka_sink(&x->sink, weir_loop_current(), &x->o), 0);
    rc = weir_pipe_to(weir_endpoint_readable(x->src),
                      weir_endpoint_writable(x->sink), NULL, pipe_done, x);
    if (rc != WEIR_PENDING)
        pipe_done(x, rc);
}

/* Samples what the source read against what the sink acknowledged, and
 * cuts the sink. */
static void cut_task(struct weir_task *t)
{
    struct run *x =
        (struct run *)(void *)((char *)t - offsetof(struct run, cut));
    uint64_t acked = 0;

    if (x->done)
        return;
    assert_int_equal(weir_endpoint_acked(x->sink, &acked), 0);
    x->max_held = weir_endpoint_bytes(x->src) - acked;
    atomic_store(&x->read, weir_endpoint_bytes(x->src));
    weir_endpoint_cut(x->sink);
}

static void run_begin(unsigned nrec)
{
    FILE *f;

    memset(&r, 0, sizeof(r));
    pthread_mutex_init(&r.lock, NULL);
    pthread_cond_init(&r.cond, NULL);
    snprintf(r.in, sizeof(r.in), "%s/in", dir);
    snprintf(r.topic, sizeof(r.topic), "t%d", ++ntopic);
    assert_int_equal(rd_kafka_mock_topic_create(mc, r.topic, 3, 3), 0);
    for (int p = 0; p < 3; p++)
        rd_kafka_mock_partition_set_leader(mc, r.topic, p, 1);
    f = fopen(r.in, "w");
    assert_non_null(f);
    for (unsigned i = 0; i < nrec; i++)
        fprintf(f, "r%07u %-30s\n", i, "abcdefghij klm");
    fclose(f);
    r.nrec = nrec;
    r.o.hwm = HWM;
    r.o.brokers = rd_kafka_mock_cluster_bootstraps(mc);
    r.o.topic = r.topic;
    r.o.key = "k";
    r.o.counter = &r.acked_count;
    r.o.stats = &r.st;
    weir_task_init(&r.start, start_task);
    weir_task_init(&r.cut, cut_task);
}

static void run_wait(void)
{
    struct timespec until;

    clock_gettime(CLOCK_REALTIME, &until);
    until.tv_sec += 60;
    pthread_mutex_lock(&r.lock);
    while (!r.done &&
           pthread_cond_timedwait(&r.cond, &r.lock, &until) != ETIMEDOUT)
        ;
    assert_true(r.done);
    pthread_mutex_unlock(&r.lock);
    assert_int_equal(weir_workers_stop(r.w), 0);
}

/* The topic's records in partition order (all in one: one key). */
static unsigned consume(char *out, size_t cap)
{
    char err[256];
    rd_kafka_conf_t *conf = rd_kafka_conf_new();
    rd_kafka_t *rk;
    rd_kafka_topic_t *rkt;
    unsigned n = 0;
    size_t len = 0;

    rd_kafka_conf_set(conf, "bootstrap.servers",
                      rd_kafka_mock_cluster_bootstraps(mc), err, sizeof(err));
    rd_kafka_conf_set(conf, "enable.partition.eof", "true", err, sizeof(err));
    /* An empty partition says so at once, not after the fetch wait. */
    rd_kafka_conf_set(conf, "fetch.wait.max.ms", "10", err, sizeof(err));
    rk = rd_kafka_new(RD_KAFKA_CONSUMER, conf, err, sizeof(err));
    assert_non_null(rk);
    rkt = rd_kafka_topic_new(rk, r.topic, NULL);
    for (int p = 0; p < 3; p++) {
        assert_int_equal(
            rd_kafka_consume_start(rkt, p, RD_KAFKA_OFFSET_BEGINNING), 0);
        for (;;) {
            rd_kafka_message_t *m = rd_kafka_consume(rkt, p, 10000);

            assert_non_null(m);
            if (m->err == RD_KAFKA_RESP_ERR__PARTITION_EOF) {
                rd_kafka_message_destroy(m);
                break;
            }
            assert_int_equal(m->err, 0);
            assert_true(len + m->len + 1 <= cap);
            memcpy(out + len, m->payload, m->len);
            len += m->len;
            out[len++] = '\n';
            n++;
            rd_kafka_message_destroy(m);
        }
        rd_kafka_consume_stop(rkt, p);
    }
    rd_kafka_topic_destroy(rkt);
    rd_kafka_destroy(rk);
    return n;
}

static void test_deliver(void **state)
{
    struct weir_workers_options wo = {.count = 1};
    unsigned n = 3000;
    size_t size = (size_t)n * RECLEN;
    char *want = malloc(size + 1), *got = malloc(size + 1);
    FILE *f;

    (void)state;
    run_begin(n);
    assert_int_equal(weir_workers_start(&r.w, &wo), 0);
    weir_workers_post(r.w, 0, &r.start);
    run_wait();
    assert_int_equal(r.rc, 0);
    assert_int_equal(atomic_load(&r.acked_count), size);
    assert_int_equal(atomic_load(&r.st.records), n);
    assert_int_equal(atomic_load(&r.st.in_flight), 0);
    f = fopen(r.in, "r");
    assert_int_equal(fread(want, 1, size, f), size);
    fclose(f);
    assert_int_equal(consume(got, size + 1), n);
    assert_memory_equal(got, want, size);
    free(want);
    free(got);
}

static void test_cut(void **state)
{
    struct weir_workers_options wo = {.count = 1};
    unsigned n = 20000; /* 800 KB: far past the mark */

    (void)state;
    run_begin(n);
    rd_kafka_mock_broker_set_down(mc, 1);
    assert_int_equal(weir_workers_start(&r.w, &wo), 0);
    weir_workers_post(r.w, 0, &r.start);
    usleep(500000);
    weir_workers_post(r.w, 0, &r.cut);
    run_wait();
    rd_kafka_mock_broker_set_up(mc, 1);
    assert_int_equal(r.rc, -ECANCELED);
    /* Nothing acknowledged with the leader down; the source was held
     * within the mark (and the chunk that passed it). */
    assert_int_equal(atomic_load(&r.acked_count), 0);
    assert_true(atomic_load(&r.read) > 0);
    assert_true(r.max_held <= HWM + 256 * 1024);
    assert_true(atomic_load(&r.read) < (uint64_t)n * RECLEN);
}

static int setup(void **state)
{
    char err[256];

    (void)state;
    assert_non_null(mkdtemp(dir));
    mrk =
        rd_kafka_new(RD_KAFKA_PRODUCER, rd_kafka_conf_new(), err, sizeof(err));
    assert_non_null(mrk);
    mc = rd_kafka_mock_cluster_new(mrk, 3);
    assert_non_null(mc);
    return 0;
}

static int teardown(void **state)
{
    char cmd[700];

    (void)state;
    rd_kafka_mock_cluster_destroy(mc);
    rd_kafka_destroy(mrk);
    snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
    return system(cmd) == 0 ? 0 : -1;
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_deliver),
        cmocka_unit_test(test_cut),
    };

    return cmocka_run_group_tests(tests, setup, teardown);
}
