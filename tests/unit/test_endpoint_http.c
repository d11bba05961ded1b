/*
 * test_endpoint_http.c - the http sink on a real worker, fed by a file
 * source of numbered records, against the collector of http_collector.c
 * on 127.0.0.1: bodies as the presets shape them (gzip and zstd too),
 * 429 with Retry-After, 500 and 503, a reset after the body, an answer
 * that never comes (the timeout), a 400 for a poisoned record (to the
 * dead letters), _bulk items that fail, and a collector slow enough that
 * the sink's high-water mark has to hold the source back.
 *
 * Throughout, a timer on the worker checks what the sink acknowledged
 * against what the collector took: acked never passes a record the
 * collector has not answered 2xx for (or refused for good).
 */
#include <arpa/inet.h>
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
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "http_collector.h"
#include "weir/endpoint.h"
#include "weir/pipe.h"
#include "weir/worker.h"

#define RECLEN 40 /* "r%07u " padded to 39 bytes, and '\n' */

static char dir[] = "/tmp/wt-http-epu-XXXXXX";

struct run {
    struct weir_workers *w;
    char in[600], dead[600], url[128];
    unsigned nrec;
    struct weir_http_sink_options o;
    struct weir_http_counters st;
    _Atomic uint64_t acked_count;
    struct coll *c;
    const bool *poison; /* records refused for good: not taken */
    bool free_form;     /* input of the test's own: no record checks */
    uint64_t bound;     /* > 0: source bytes - acked never past it */
    /* worker side */
    struct weir_endpoint *src, *sink;
    struct weir_task start, cut;
    struct weir_timer sample;
    unsigned checked; /* records below this were found taken */
    uint64_t acked;
    bool done, sampling;
    int rc;
    int violations;
    /* shared */
    pthread_mutex_t lock;
    pthread_cond_t cond;
    int finished;
    unsigned events[WEIR_EP_HTTP_GAVE_UP + 1];
};

static struct run r;

static void on_event(void *arg, enum weir_endpoint_event ev, int err,
                     uint64_t off)
{
    struct run *x = arg;

    (void)err;
    (void)off;
    pthread_mutex_lock(&x->lock);
    if (ev <= WEIR_EP_HTTP_GAVE_UP)
        x->events[ev]++;
    pthread_mutex_unlock(&x->lock);
}

/* acked against the collector; the held bytes against the bound. */
static void check_acked(struct run *x)
{
    uint64_t acked, read = weir_endpoint_bytes(x->src);

    if (weir_endpoint_acked(x->sink, &acked) != 0) {
        x->violations++;
        return;
    }
    if (acked < x->acked || (!x->free_form && acked % RECLEN != 0))
        x->violations++;
    x->acked = acked;
    if (x->free_form)
        return;
    for (; x->checked < acked / RECLEN; x->checked++)
        if (!(x->poison && x->poison[x->checked]) &&
            coll_got(x->c, x->checked) == 0) {
            fprintf(stderr, "acked %llu but record %u not taken\n",
                    (unsigned long long)acked, x->checked);
            x->violations++;
        }
    if (x->bound && read > acked + x->bound) {
        fprintf(stderr, "held %llu > bound %llu\n",
                (unsigned long long)(read - acked),
                (unsigned long long)x->bound);
        x->violations++;
    }
}

static void sample_fired(struct weir_op *op, int res, uint32_t flags)
{
    struct run *x =
        (struct run *)(void *)((char *)op - offsetof(struct run, sample.op));

    (void)res;
    (void)flags;
    if (x->done) {
        x->sampling = false;
        pthread_mutex_lock(&x->lock);
        x->finished = 1;
        pthread_cond_broadcast(&x->cond);
        pthread_mutex_unlock(&x->lock);
        return;
    }
    check_acked(x);
    x->sample.op.fn = sample_fired;
    weir_loop_timer_start(weir_loop_current(), &x->sample, 2000000);
}

static void pipe_done(void *ctx, int rc)
{
    struct run *x = ctx;

    check_acked(x);
    x->rc = rc;
    x->done = true;
    weir_endpoint_destroy(x->sink);
    weir_endpoint_destroy(x->src);
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
        weir_endpoint_http_sink(&x->sink, weir_loop_current(), &x->o), 0);
    x->sample.op.fn = sample_fired;
    x->sampling = true;
    weir_loop_timer_start(weir_loop_current(), &x->sample, 2000000);
    rc = weir_pipe_to(weir_endpoint_readable(x->src),
                      weir_endpoint_writable(x->sink), NULL, pipe_done, x);
    if (rc != WEIR_PENDING)
        pipe_done(x, rc);
}

static void cut_task(struct weir_task *t)
{
    struct run *x =
        (struct run *)(void *)((char *)t - offsetof(struct run, cut));

    if (!x->done)
        weir_endpoint_cut(x->sink);
}

static void make_input(unsigned nrec, const bool *poison)
{
    FILE *f = fopen(r.in, "w");

    assert_non_null(f);
    for (unsigned i = 0; i < nrec; i++)
        fprintf(f, "r%07u %-30s\n", i,
                poison && poison[i] ? "POISON \"q\" \\ x" : "abcdefghij klm");
    fclose(f);
}

/* A run: nrec records to a collector answering per `co`. */
static void run_begin(unsigned nrec, const struct coll_opts *co,
                      const bool *poison)
{
    struct coll_opts o = *co;

    memset(&r, 0, sizeof(r));
    pthread_mutex_init(&r.lock, NULL);
    pthread_cond_init(&r.cond, NULL);
    snprintf(r.in, sizeof(r.in), "%s/in", dir);
    snprintf(r.dead, sizeof(r.dead), "%s/dead", dir);
    unlink(r.dead);
    r.nrec = nrec;
    r.poison = poison;
    make_input(nrec, poison);
    o.nrec = nrec;
    r.c = coll_start(&o);
    snprintf(r.url, sizeof(r.url), "http://127.0.0.1:%u/in", r.c->port);
    r.o.url = r.url;
    r.o.counter = &r.acked_count;
    r.o.stats = &r.st;
    r.o.on_event = on_event;
    r.o.event_arg = &r;
    r.o.batch_records = 500;
    r.o.backoff_min_ns = 1000000;
    r.o.backoff_max_ns = 8000000;
    weir_task_init(&r.start, start_task);
    weir_task_init(&r.cut, cut_task);
}

/* Runs; with `cut_when`, cuts the sink once it says so (60 s at most). */
static int run_go_cut(bool (*cut_when)(void))
{
    struct weir_workers_options wo = {.count = 1};
    struct timespec until;

    assert_int_equal(weir_workers_start(&r.w, &wo), 0);
    weir_workers_post(r.w, 0, &r.start);
    if (cut_when) {
        for (int i = 0; i < 60000 && !cut_when(); i++)
            usleep(1000);
        assert_true(cut_when());
        weir_workers_post(r.w, 0, &r.cut);
    }
    clock_gettime(CLOCK_REALTIME, &until);
    until.tv_sec += 120;
    pthread_mutex_lock(&r.lock);
    while (!r.finished &&
           pthread_cond_timedwait(&r.cond, &r.lock, &until) != ETIMEDOUT)
        ;
    assert_true(r.finished);
    pthread_mutex_unlock(&r.lock);
    assert_int_equal(weir_workers_stop(r.w), 0);
    assert_int_equal(r.violations, 0);
    return r.rc;
}

static int run_go(void)
{
    return run_go_cut(NULL);
}

/* Every record taken exactly once (but those in skip), and the sink
 * acknowledged the whole input. */
static void expect_once(const bool *skip, unsigned max_dup)
{
    unsigned dups = 0;

    for (unsigned i = 0; i < r.nrec; i++) {
        unsigned g = coll_got(r.c, i);

        if (skip && skip[i]) {
            assert_int_equal(g, 0);
            continue;
        }
        if (g != 1 && max_dup == 0)
            fprintf(stderr, "record %u taken %u times\n", i, g);
        assert_true(g >= 1);
        dups += g - 1;
    }
    assert_true(dups <= max_dup);
    assert_int_equal(r.c->bad_lines, 0);
    assert_int_equal(r.acked, (uint64_t)r.nrec * RECLEN);
    assert_int_equal(atomic_load(&r.acked_count), (uint64_t)r.nrec * RECLEN);
}

static void run_end(void)
{
    coll_stop(r.c);
    unlink(r.in);
}

static void test_raw(void **state)
{
    struct coll_opts co = {0};

    (void)state;
    run_begin(20000, &co, NULL);
    assert_int_equal(run_go(), 0);
    expect_once(NULL, 0);
    assert_int_equal(atomic_load(&r.st.records), 20000);
    assert_true(atomic_load(&r.st.requests) >= 40);
    assert_int_equal(atomic_load(&r.st.in_flight), 0);
    run_end();
}

static void test_clickhouse_gzip(void **state)
{
    struct coll_opts co = {0};

    (void)state;
    run_begin(5000, &co, NULL);
    r.o.preset = WEIR_HTTP_CLICKHOUSE;
    r.o.compression = WEIR_HTTP_GZIP;
    r.o.bearer = "sekrit";
    assert_int_equal(run_go(), 0);
    expect_once(NULL, 0);
    assert_true(r.c->gzip_seen);
    assert_true(r.c->auth_seen);
    run_end();
}

static void test_splunk_hec(void **state)
{
    struct coll_opts co = {0};
    char want[128];

    (void)state;
    run_begin(3000, &co, NULL);
    r.o.preset = WEIR_HTTP_SPLUNK_HEC;
    r.o.bearer = "tok-1";
    assert_int_equal(run_go(), 0);
    expect_once(NULL, 0);
    assert_string_equal(r.c->auth, "Splunk tok-1");
    snprintf(want, sizeof(want), "{\"event\":\"r0000000 %-30s\"}",
             "abcdefghij klm");
    assert_string_equal(r.c->first, want);
    run_end();
}

static void test_loki(void **state)
{
    static const char *const labels[] = {"job=app", "host=a\"b"};
    struct coll_opts co = {0};

    (void)state;
    run_begin(3000, &co, NULL);
    r.o.preset = WEIR_HTTP_LOKI;
    r.o.labels = labels;
    r.o.nlabels = 2;
    r.o.compression = WEIR_HTTP_GZIP;
    assert_int_equal(run_go(), 0);
    expect_once(NULL, 0);
    assert_memory_equal(r.c->first,
                        "{\"streams\":[{\"stream\":{\"job\":\"app\","
                        "\"host\":\"a\\\"b\"},\"values\":[[\"",
                        55);
    run_end();
}

static void test_otlp(void **state)
{
    static const char *const attrs[] = {"service.name=app", "host=a\"b"};
    struct coll_opts co = {0};
    static const char want[] =
        "{\"resourceLogs\":[{\"resource\":{\"attributes\":["
        "{\"key\":\"service.name\",\"value\":{\"stringValue\":\"app\"}},"
        "{\"key\":\"host\",\"value\":{\"stringValue\":\"a\\\"b\"}}]},"
        "\"scopeLogs\":[{\"scope\":{\"name\":\"weir\"},\"logRecords\":["
        "{\"timeUnixNano\":\"";

    (void)state;
    run_begin(3000, &co, NULL);
    r.o.preset = WEIR_HTTP_OTLP;
    r.o.labels = attrs;
    r.o.nlabels = 2;
    assert_int_equal(run_go(), 0);
    expect_once(NULL, 0);
    assert_memory_equal(r.c->first, want, sizeof(want) - 1);
    run_end();
}

static void test_zstd_one_batch(void **state)
{
    struct coll_opts co = {0};

    (void)state;
    run_begin(3000, &co, NULL);
    r.o.compression = WEIR_HTTP_ZSTD;
    r.o.batch_records = 100000;
    r.o.batch_bytes = 64u << 20;
    r.o.hwm = 64u << 20;
    assert_int_equal(run_go(), 0);
    expect_once(NULL, 0);
    assert_true(r.c->zstd_seen);
    assert_int_equal(atomic_load(&r.st.requests), 1);
    run_end();
}

static int first_429(struct coll *c, unsigned n, const char *b, size_t len)
{
    (void)c;
    (void)b;
    (void)len;
    return n < 2 ? 429 : 200;
}

static void test_429_retry_after(void **state)
{
    struct coll_opts co = {.batch_status = first_429};
    struct timespec t0, t1;

    (void)state;
    run_begin(2000, &co, NULL);
    clock_gettime(CLOCK_MONOTONIC, &t0);
    assert_int_equal(run_go(), 0);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    expect_once(NULL, 0);
    assert_int_equal(atomic_load(&r.st.retry_429), 2);
    /* Retry-After: 1 was honoured (the backoff alone is milliseconds). */
    assert_true(t1.tv_sec - t0.tv_sec >= 1 ||
                (t1.tv_sec - t0.tv_sec) * 1000000000L + t1.tv_nsec -
                        t0.tv_nsec >=
                    1000000000L);
    /* One outage, or two when a batch got through between the 429s:
     * each one ends (CONNECTED also comes at a first answer that
     * succeeds before any failure). */
    assert_true(r.events[WEIR_EP_HTTP_FAILING] >= 1);
    assert_true(r.events[WEIR_EP_CONNECTED] >= r.events[WEIR_EP_HTTP_FAILING]);
    assert_true(r.events[WEIR_EP_CONNECTED] <=
                r.events[WEIR_EP_HTTP_FAILING] + 1);
    run_end();
}

static int some_5xx(struct coll *c, unsigned n, const char *b, size_t len)
{
    (void)c;
    (void)b;
    (void)len;
    if (n < 6)
        return n % 2 ? 503 : 500;
    return n % 3 == 0 ? 502 : 200;
}

static void test_5xx(void **state)
{
    struct coll_opts co = {.batch_status = some_5xx};

    (void)state;
    run_begin(10000, &co, NULL);
    assert_int_equal(run_go(), 0);
    expect_once(NULL, 0);
    assert_true(atomic_load(&r.st.retry_5xx) >= 6);
    run_end();
}

/* Reset after the body: the first two dropped, the next two taken (the
 * answer lost): those arrive twice, no more. */
static int resets(struct coll *c, unsigned n, const char *b, size_t len)
{
    (void)c;
    (void)b;
    (void)len;
    if (n < 2)
        return COLL_RESET;
    if (n < 4)
        return COLL_STORE_RESET;
    return 200;
}

static void test_reset(void **state)
{
    struct coll_opts co = {.batch_status = resets};

    (void)state;
    run_begin(10000, &co, NULL);
    assert_int_equal(run_go(), 0);
    /* Duplicates: at most the two batches taken without an answer. */
    expect_once(NULL, 2 * 500);
    assert_true(atomic_load(&r.st.retry_connect) >= 4);
    run_end();
}

static int hang_first(struct coll *c, unsigned n, const char *b, size_t len)
{
    (void)c;
    (void)b;
    (void)len;
    return n == 0 ? COLL_HANG : 200;
}

static void test_timeout(void **state)
{
    struct coll_opts co = {.batch_status = hang_first};

    (void)state;
    run_begin(3000, &co, NULL);
    r.o.timeout_ns = 300000000;
    assert_int_equal(run_go(), 0);
    expect_once(NULL, 0);
    assert_int_equal(atomic_load(&r.st.retry_timeout), 1);
    run_end();
}

static int reject_poison(struct coll *c, unsigned n, const char *b, size_t len)
{
    (void)c;
    (void)n;
    return memmem(b, len, "POISON", 6) ? 400 : 200;
}

static bool poison[1000];

static int refuse_poison_503(struct coll *c, unsigned n, const char *b,
                             size_t len)
{
    (void)c;
    (void)n;
    return memmem(b, len, "POISON", 6) ? 503 : 200;
}

/* A batch that fails retry_limit + 1 times is given up: its records go to
 * the dead letters with the last status, the rest are delivered, and the
 * acknowledged offset goes past them (handled, as refused ones). */
static void test_retry_limit(void **state)
{
    struct coll_opts co = {.batch_status = refuse_poison_503};
    char line[512];
    unsigned lines = 0, tries;
    FILE *f;
    int fd;

    (void)state;
    memset(poison, 0, sizeof(poison));
    for (unsigned i = 100; i < 200; i++)
        poison[i] = true;
    run_begin(1000, &co, poison);
    fd = open(r.dead, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
    assert_true(fd >= 0);
    r.o.batch_records = 100;
    r.o.retry_limit = 2;
    r.o.has_dead_letter = true;
    r.o.dead_letter_fd = fd;
    assert_int_equal(run_go(), 0);
    close(fd);
    expect_once(poison, 0);
    assert_int_equal(atomic_load(&r.st.dead_letter), 100);
    assert_int_equal(atomic_load(&r.st.retry_5xx), 2);
    assert_int_equal(r.events[WEIR_EP_HTTP_GAVE_UP], 1);
    /* Nine batches once, the poisoned one three times. */
    tries = (unsigned)atomic_load(&r.st.requests);
    assert_int_equal(tries, 9 + 3);
    f = fopen(r.dead, "r");
    assert_non_null(f);
    while (fgets(line, sizeof(line), f)) {
        char want[32];

        snprintf(want, sizeof(want), "\"record\":\"r%07u ", 100 + lines);
        assert_non_null(strstr(line, "\"status\":503"));
        assert_non_null(strstr(line, want));
        lines++;
    }
    fclose(f);
    assert_int_equal(lines, 100);
    run_end();
}

static void test_poison_dead_letter(void **state)
{
    struct coll_opts co = {.batch_status = reject_poison};
    char line[512];
    unsigned lines = 0;
    FILE *f;
    int fd;

    (void)state;
    memset(poison, 0, sizeof(poison));
    poison[137] = true;
    run_begin(1000, &co, poison);
    fd = open(r.dead, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
    assert_true(fd >= 0);
    r.o.batch_records = 1;
    r.o.has_dead_letter = true;
    r.o.dead_letter_fd = fd;
    assert_int_equal(run_go(), 0);
    close(fd);
    expect_once(poison, 0);
    assert_int_equal(atomic_load(&r.st.dead_letter), 1);
    assert_int_equal(r.events[WEIR_EP_HTTP_REJECTED], 1);
    f = fopen(r.dead, "r");
    assert_non_null(f);
    while (fgets(line, sizeof(line), f)) {
        lines++;
        assert_non_null(strstr(line, "\"status\":400"));
        assert_non_null(strstr(line, "{\\\"error\\\":\\\"no\\\"}"));
        assert_non_null(strstr(line, "r0000137 POISON \\\"q\\\" \\\\ x"));
    }
    fclose(f);
    assert_int_equal(lines, 1);
    run_end();
}

/* _bulk: record 42 is refused (400), records 10..19 are answered 429 the
 * first time and 503 the second, then taken. */
static int items(struct coll *c, unsigned rec)
{
    if (rec == 42)
        return 400;
    if (rec >= 10 && rec < 20) {
        unsigned k = c->item_seen[0]++;

        if (k < 10)
            return 429;
        if (k < 20)
            return 503;
    }
    return 201;
}

static bool poison42[2000];

static void test_bulk_items(void **state)
{
    struct coll_opts co = {.bulk = true, .item_status = items};
    char line[512];
    unsigned lines = 0;
    FILE *f;
    int fd;

    (void)state;
    memset(poison42, 0, sizeof(poison42));
    poison42[42] = true;
    run_begin(2000, &co, poison42);
    fd = open(r.dead, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
    r.o.preset = WEIR_HTTP_ELASTICSEARCH;
    r.o.index = "logs";
    r.o.has_dead_letter = true;
    r.o.dead_letter_fd = fd;
    assert_int_equal(run_go(), 0);
    close(fd);
    expect_once(poison42, 0);
    assert_int_equal(atomic_load(&r.st.dead_letter), 1);
    assert_int_equal(atomic_load(&r.st.retry_429), 1);
    assert_int_equal(atomic_load(&r.st.retry_5xx), 1);
    f = fopen(r.dead, "r");
    while (fgets(line, sizeof(line), f)) {
        lines++;
        assert_non_null(strstr(line, "\"status\":400"));
        assert_non_null(strstr(line, "r0000042"));
    }
    fclose(f);
    assert_int_equal(lines, 1);
    run_end();
}

/* A collector that answers every request late: the source is held back
 * by the sink's high-water mark, batches out included. */
static int slow(struct coll *c, unsigned n, const char *b, size_t len)
{
    struct timespec ts = {0, 3000000};

    (void)c;
    (void)n;
    (void)b;
    (void)len;
    nanosleep(&ts, NULL);
    return 200;
}

static void test_backpressure(void **state)
{
    struct coll_opts co = {.batch_status = slow};

    (void)state;
    run_begin(200000, &co, NULL); /* 8 MB */
    r.o.hwm = 64u << 10;
    r.o.batch_bytes = 16u << 10;
    /* Ours (hwm), the writable's queue (hwm), a file source's reads in
     * flight (4 chunks of the pool's 64 KiB) and the chunk at hand. */
    r.bound = 2 * (64u << 10) + 5 * (64u << 10);
    assert_int_equal(run_go(), 0);
    expect_once(NULL, 0);
    run_end();
}

/* A collector that never answers: the sink is cut with requests out
 * and batches waiting; the pipe fails, nothing was acknowledged, and
 * the endpoint goes with its transfers (ASan watches the teardown). */
static int hang_all(struct coll *c, unsigned n, const char *b, size_t len)
{
    (void)c;
    (void)n;
    (void)b;
    (void)len;
    return COLL_HANG;
}

static bool two_requests(void)
{
    unsigned n;

    pthread_mutex_lock(&r.c->lock);
    n = r.c->requests;
    pthread_mutex_unlock(&r.c->lock);
    return n >= 2;
}

static void test_cut_in_flight(void **state)
{
    struct coll_opts co = {.batch_status = hang_all};

    (void)state;
    run_begin(5000, &co, NULL);
    r.o.concurrency = 2;
    assert_int_equal(run_go_cut(two_requests), -ECANCELED);
    assert_int_equal(r.acked, 0);
    assert_int_equal(atomic_load(&r.acked_count), 0);
    assert_int_equal(atomic_load(&r.st.in_flight), 0);
    assert_int_equal(atomic_load(&r.st.records), 0);
    run_end();
}

static bool refused_thrice(void)
{
    return atomic_load(&r.st.retry_connect) >= 3;
}

/* A port bound but not listening: every connect is refused and retried
 * (one FAILING for the outage), until the sink is cut. */
static void test_refused(void **state)
{
    struct coll_opts co = {0};
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    struct sockaddr_in sa = {.sin_family = AF_INET};
    socklen_t len = sizeof(sa);

    (void)state;
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    assert_int_equal(bind(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
    assert_int_equal(getsockname(fd, (struct sockaddr *)&sa, &len), 0);
    run_begin(1000, &co, NULL);
    /* Bound, not listening: connects are refused until the cut. */
    snprintf(r.url, sizeof(r.url), "http://127.0.0.1:%u/in",
             ntohs(sa.sin_port));
    r.o.backoff_min_ns = 1000000;
    r.o.backoff_max_ns = 2000000;
    assert_int_equal(run_go_cut(refused_thrice), -ECANCELED);
    assert_int_equal(r.acked, 0);
    assert_int_equal(r.events[WEIR_EP_HTTP_FAILING], 1);
    close(fd);
    run_end();
}

/* A line longer than the high-water mark (and shorter than batch_bytes):
 * cut at the mark, so that the write held for it is let go. */
static void test_line_over_hwm(void **state)
{
    struct coll_opts co = {0};
    FILE *f;

    (void)state;
    run_begin(1, &co, NULL);
    r.free_form = true;
    f = fopen(r.in, "w");
    assert_non_null(f);
    fprintf(f, "r0000000 short\n");
    for (int i = 0; i < 200000; i++)
        fputc('x', f);
    fprintf(f, "\nlast\n");
    fclose(f);
    r.o.hwm = 16u << 10;
    r.o.batch_bytes = 1u << 20;
    assert_int_equal(run_go(), 0);
    assert_int_equal(r.acked, 15 + 200001 + 5);
    assert_true(atomic_load(&r.st.records) >= 200000 / (16u << 10));
    run_end();
}

static int setup(void **state)
{
    (void)state;
    return mkdtemp(dir) ? 0 : -1;
}

static int teardown(void **state)
{
    (void)state;
    unlink(r.dead);
    return rmdir(dir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_raw),
        cmocka_unit_test(test_clickhouse_gzip),
        cmocka_unit_test(test_zstd_one_batch),
        cmocka_unit_test(test_splunk_hec),
        cmocka_unit_test(test_loki),
        cmocka_unit_test(test_otlp),
        cmocka_unit_test(test_retry_limit),
        cmocka_unit_test(test_429_retry_after),
        cmocka_unit_test(test_5xx),
        cmocka_unit_test(test_reset),
        cmocka_unit_test(test_timeout),
        cmocka_unit_test(test_poison_dead_letter),
        cmocka_unit_test(test_bulk_items),
        cmocka_unit_test(test_backpressure),
        cmocka_unit_test(test_cut_in_flight),
        cmocka_unit_test(test_refused),
        cmocka_unit_test(test_line_over_hwm),
    };

    return cmocka_run_group_tests(tests, setup, teardown);
}
