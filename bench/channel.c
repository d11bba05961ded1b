/*
 * channel.c - the io engine's costs: io_uring setup flags, the doorbell
 * round trip (eventfd vs IORING_OP_MSG_RING), and channel throughput of
 * 64 KiB chunks between two workers.
 *
 *   weir-bench channel [flags|doorbell|throughput] [-n N]
 *
 * Round trip: two loops on two threads post a task back and forth, one in
 * flight at a time, so every hop finds the other loop asleep and rings its
 * doorbell. NOP batch: one loop keeps 32 NOPs in flight, re-queued from
 * their callbacks, so each turn is one submit-and-reap of 32 requests.
 */
#include <errno.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "bench.h"
#include "weir/channel.h"
#include "weir/loop.h"
#include "weir/worker.h"

/* ---- two loops on two threads, posting back and forth ---- */

struct rt_side {
    struct rt *rt;
    int index;
    struct weir_loop *loop;
    struct weir_task task;
    pthread_t thread;
    uint64_t runs;
    int err;
};

struct rt {
    struct weir_loop_options lo;
    uint64_t rounds;
    struct rt_side side[2];
    pthread_barrier_t ready;
    pthread_barrier_t created;
    bool abort; /* a loop failed to come up */
    uint64_t t0, t1;
};

static void rt_ran(struct weir_task *t)
{
    struct rt_side *s =
        (struct rt_side *)((char *)t - offsetof(struct rt_side, task));
    struct rt *rt = s->rt;
    struct rt_side *other = &rt->side[1 - s->index];

    s->runs++;
    if (s->index == 0 && s->runs == rt->rounds) {
        rt->t1 = bench_now_ns();
        weir_loop_stop(s->loop);
        weir_loop_post(other->loop, &other->task);
        return;
    }
    if (s->index == 1 && s->runs > rt->rounds) {
        weir_loop_stop(s->loop);
        return;
    }
    weir_loop_post(other->loop, &other->task);
}

static void *rt_thread(void *arg)
{
    struct rt_side *s = arg;
    struct weir_loop_options lo = s->rt->lo;

    lo.slot = (unsigned)s->index;
    /* Created on the thread that runs it (SINGLE_ISSUER). */
    s->err = weir_loop_create(&s->loop, &lo);
    weir_task_init(&s->task, rt_ran);
    pthread_barrier_wait(&s->rt->created);
    pthread_barrier_wait(&s->rt->ready);
    if (s->rt->abort)
        return NULL;
    if (s->index == 0) {
        s->rt->t0 = bench_now_ns();
        weir_loop_post(s->rt->side[1].loop, &s->rt->side[1].task);
    }
    s->err = weir_loop_run(s->loop);
    return NULL;
}

/* Returns ns per round trip, or 0 on failure. */
static double round_trip(uint32_t flags, enum weir_doorbell bell,
                         uint64_t rounds)
{
    struct rt rt = {.rounds = rounds};
    double ns = 0;

    rt.lo.uring_flags = flags;
    rt.lo.uring_flags_set = true;
    rt.lo.bell = bell;
    pthread_barrier_init(&rt.created, NULL, 3);
    pthread_barrier_init(&rt.ready, NULL, 3);
    for (int i = 0; i < 2; i++) {
        rt.side[i].rt = &rt;
        rt.side[i].index = i;
        pthread_create(&rt.side[i].thread, NULL, rt_thread, &rt.side[i]);
    }
    pthread_barrier_wait(&rt.created);
    /* The barriers order the threads' writes of err before these reads
     * and this write of abort before theirs. */
    rt.abort = rt.side[0].err || rt.side[1].err;
    if (rt.abort)
        fprintf(stderr, "channel: loop setup: %s\n",
                weir_loop_strerror(rt.side[0].err ? rt.side[0].err
                                                  : rt.side[1].err));
    pthread_barrier_wait(&rt.ready);
    for (int i = 0; i < 2; i++)
        pthread_join(rt.side[i].thread, NULL);
    if (!rt.abort && !rt.side[0].err && !rt.side[1].err)
        ns = (double)(rt.t1 - rt.t0) / (double)rounds;
    for (int i = 0; i < 2; i++)
        if (rt.side[i].loop && !(rt.abort && rt.side[i].err))
            weir_loop_destroy(rt.side[i].loop);
    pthread_barrier_destroy(&rt.created);
    pthread_barrier_destroy(&rt.ready);
    return ns;
}

/* What uring.c picks when not told. */
#define DEFAULT_FLAGS                                                          \
    (WEIR_LOOP_URING_COOP_TASKRUN | WEIR_LOOP_URING_SINGLE_ISSUER |            \
     WEIR_LOOP_URING_DEFER_TASKRUN)

/* ---- one loop, NOPs in batches of 32 ---- */

struct nops {
    struct weir_loop *loop;
    struct weir_op ops[32];
    uint64_t left;
    uint64_t done;
};

static struct nops *nops_of;

static void nop_done(struct weir_op *op, int res, uint32_t flags)
{
    struct nops *n = nops_of;

    (void)res;
    (void)flags;
    n->done++;
    if (n->left == 0) {
        if (weir_loop_pending(n->loop) == 0)
            weir_loop_stop(n->loop);
        return;
    }
    n->left--;
    weir_loop_nop(n->loop, op);
}

static double nop_rate(uint32_t flags, uint64_t total)
{
    struct weir_loop_options lo = {.uring_flags = flags,
                                   .uring_flags_set = true};
    struct nops n = {.left = total};
    uint64_t t0, t1;
    int err = weir_loop_create(&n.loop, &lo);

    if (err) {
        fprintf(stderr, "channel: %s\n", weir_loop_strerror(err));
        return 0;
    }
    nops_of = &n;
    for (int i = 0; i < 32; i++) {
        n.ops[i].fn = nop_done;
        n.left--;
        weir_loop_nop(n.loop, &n.ops[i]);
    }
    t0 = bench_now_ns();
    weir_loop_run(n.loop);
    t1 = bench_now_ns();
    weir_loop_destroy(n.loop);
    return (double)n.done * 1e9 / (double)(t1 - t0);
}

/* ---- one loop, TCP over loopback: sends and receives in flight ---- */

#define SOCK_DEPTH 4
#define SOCK_BUF   (64 * 1024)

struct sockio {
    struct weir_loop *loop;
    int tx, rx;
    struct weir_op send[SOCK_DEPTH];
    struct weir_op recv[SOCK_DEPTH];
    uint8_t *buf; /* one send buffer shared by all sends, recvs after it */
    uint64_t to_send, sent_q, received, total;
    bool failed;
};

static struct sockio *sockio_of;

static void sock_recv_done(struct weir_op *op, int res, uint32_t flags)
{
    struct sockio *s = sockio_of;
    size_t i = (size_t)(op - s->recv);

    (void)flags;
    if (res <= 0) {
        s->failed = true;
        weir_loop_stop(s->loop);
        return;
    }
    s->received += (uint64_t)res;
    if (s->received >= s->total) {
        weir_loop_stop(s->loop);
        return;
    }
    weir_loop_recv(s->loop, op, s->rx, s->buf + SOCK_BUF * (1 + i), SOCK_BUF,
                   0);
}

static void sock_send_done(struct weir_op *op, int res, uint32_t flags)
{
    struct sockio *s = sockio_of;

    (void)flags;
    if (res <= 0) {
        s->failed = true;
        weir_loop_stop(s->loop);
        return;
    }
    s->to_send -= (uint64_t)res;
    if (s->sent_q < s->total) {
        s->sent_q += SOCK_BUF;
        weir_loop_send(s->loop, op, s->tx, s->buf, SOCK_BUF, 0);
    }
}

static int tcp_pair(int *a, int *b)
{
    struct sockaddr_in sin = {.sin_family = AF_INET,
                              .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t len = sizeof(sin);
    int l = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

    if (l < 0 || bind(l, (struct sockaddr *)&sin, sizeof(sin)) ||
        listen(l, 1) || getsockname(l, (struct sockaddr *)&sin, &len))
        return -1;
    *a = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (*a < 0 || connect(*a, (struct sockaddr *)&sin, sizeof(sin)))
        return -1;
    *b = accept4(l, NULL, NULL, SOCK_CLOEXEC);
    close(l);
    return *b < 0 ? -1 : 0;
}

/* Bytes per second through one loop's TCP sends and receives. */
static double sock_rate(uint32_t flags, uint64_t total)
{
    struct weir_loop_options lo = {.uring_flags = flags,
                                   .uring_flags_set = true};
    struct sockio s = {.total = total};
    uint64_t t0, t1;

    if (weir_loop_create(&s.loop, &lo) || tcp_pair(&s.tx, &s.rx))
        return 0;
    s.buf = calloc(1 + SOCK_DEPTH, SOCK_BUF);
    sockio_of = &s;
    for (int i = 0; i < SOCK_DEPTH; i++) {
        s.send[i].fn = sock_send_done;
        s.recv[i].fn = sock_recv_done;
        s.sent_q += SOCK_BUF;
        weir_loop_send(s.loop, &s.send[i], s.tx, s.buf, SOCK_BUF, 0);
        weir_loop_recv(s.loop, &s.recv[i], s.rx, s.buf + SOCK_BUF * (1 + i),
                       SOCK_BUF, 0);
    }
    t0 = bench_now_ns();
    weir_loop_run(s.loop);
    t1 = bench_now_ns();
    weir_loop_destroy(s.loop);
    close(s.tx);
    close(s.rx);
    free(s.buf);
    return s.failed ? 0 : (double)s.received * 1e9 / (double)(t1 - t0);
}

static const struct {
    const char *name;
    uint32_t flags;
} flag_sets[] = {
    {"none", 0},
    {"coop", WEIR_LOOP_URING_COOP_TASKRUN},
    {"coop+single",
     WEIR_LOOP_URING_COOP_TASKRUN | WEIR_LOOP_URING_SINGLE_ISSUER},
    {"single+defer",
     WEIR_LOOP_URING_SINGLE_ISSUER | WEIR_LOOP_URING_DEFER_TASKRUN},
    {"coop+single+defer", WEIR_LOOP_URING_COOP_TASKRUN |
                              WEIR_LOOP_URING_SINGLE_ISSUER |
                              WEIR_LOOP_URING_DEFER_TASKRUN},
};

#define NFLAGS (sizeof(flag_sets) / sizeof(flag_sets[0]))
#define REPS   5

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;

    return (x > y) - (x < y);
}

static double median(double *v)
{
    qsort(v, REPS, sizeof(*v), cmp_double);
    return v[REPS / 2];
}

static int run_flags(uint64_t n)
{
    static double msg[NFLAGS][REPS], efd[NFLAGS][REPS], nop[NFLAGS][REPS];
    static double tcp[NFLAGS][REPS];

    /* Interleaved repetitions, medians reported: the two cores are
     * shared, and a neighbour's burst should hit every flag set alike. */
    for (int r = 0; r < REPS; r++)
        for (size_t i = 0; i < NFLAGS; i++) {
            msg[i][r] =
                round_trip(flag_sets[i].flags, WEIR_DOORBELL_MSG_RING, n / 10);
            efd[i][r] =
                round_trip(flag_sets[i].flags, WEIR_DOORBELL_EVENTFD, n / 10);
            nop[i][r] = nop_rate(flag_sets[i].flags, n * 20);
            tcp[i][r] = sock_rate(flag_sets[i].flags, n * 16 * SOCK_BUF);
        }
    printf("# setup flags, medians of %d: doorbell round trip (us), "
           "32-NOP batches (M ops/s), TCP loopback send+recv on one loop "
           "(GB/s)\n",
           REPS);
    for (size_t i = 0; i < NFLAGS; i++)
        printf("channel flags=%-18s rt_msg_ring_us=%.2f rt_eventfd_us=%.2f "
               "nop_mops=%.2f tcp_gbs=%.2f\n",
               flag_sets[i].name, median(msg[i]) / 1000, median(efd[i]) / 1000,
               median(nop[i]) / 1e6, median(tcp[i]) / 1e9);
    fflush(stdout);
    return 0;
}

static int run_doorbell(uint64_t n)
{
    double msg[REPS], efd[REPS];

    /* Interleaved, medians: the two cores are shared. */
    for (int r = 0; r < REPS; r++) {
        msg[r] = round_trip(DEFAULT_FLAGS, WEIR_DOORBELL_MSG_RING, n);
        efd[r] = round_trip(DEFAULT_FLAGS, WEIR_DOORBELL_EVENTFD, n);
    }
    printf("channel doorbell=msg_ring round_trip_us: %.2f\n",
           median(msg) / 1000);
    printf("channel doorbell=eventfd round_trip_us: %.2f\n",
           median(efd) / 1000);
    fflush(stdout);
    return 0;
}

/* ---- throughput: 64 KiB chunks, worker 0 to worker 1 ---- */

struct tp {
    struct weir_workers *w;
    struct weir_channel *ch;
    struct weir_task p_start, c_start;
    uint64_t chunks;
    uint32_t len;
    uint64_t sent, received;
    bool closed;
    bool touch; /* write and read every byte of every chunk */
    uint64_t t0, t1;
    pthread_mutex_t lock;
    pthread_cond_t cond;
    int done;
};

/* Keeps the consumer's reads of the chunks. */
static volatile uint8_t tp_sink;

static void tp_done(struct tp *t)
{
    pthread_mutex_lock(&t->lock);
    t->done++;
    pthread_cond_signal(&t->cond);
    pthread_mutex_unlock(&t->lock);
}

static void tp_produce(struct tp *t)
{
    struct weir_pool *pool = weir_worker_pool();
    struct weir_chunk batch[16];

    while (t->sent < t->chunks && weir_channel_ready(t->ch) == 1) {
        uint32_t n = 0;
        int pushed;

        while (n < 16 && t->sent + n < t->chunks) {
            struct weir_buf *b;

            if (weir_pool_get(pool, &b))
                break;
            if (t->touch)
                /* Write every byte, as a read into the buffer would. */
                memset(b->data, (int)(t->sent + n), t->len);
            else
                b->data[0] = (uint8_t)(t->sent + n);
            batch[n++] = weir_chunk_of(b, t->len);
        }
        if (n == 0)
            break;
        pushed = weir_channel_push(t->ch, batch, n);
        for (uint32_t i = pushed < 0 ? 0 : (uint32_t)pushed; i < n; i++)
            weir_chunk_unref(&batch[i], 0);
        if (pushed < 0)
            break;
        t->sent += (uint64_t)pushed;
    }
    if (t->sent == t->chunks && !t->closed) {
        t->closed = true;
        weir_channel_close(t->ch, 0);
        tp_done(t);
    }
}

static void tp_consume(struct tp *t)
{
    struct weir_chunk got[32];
    unsigned self = weir_loop_slot(weir_loop_current());
    uint8_t sink = 0;
    int n;

    while ((n = weir_channel_pop(t->ch, got, 32)) > 0) {
        for (int i = 0; i < n; i++) {
            if (t->touch) {
                /* Read every byte, as a send from the buffer would. */
                uint64_t acc = 0, w;

                for (uint32_t k = 0; k < got[i].len; k += 8) {
                    memcpy(&w, got[i].data + k, 8);
                    acc ^= w;
                }
                sink ^= (uint8_t)acc;
            } else {
                sink ^= got[i].data[0];
            }
            weir_chunk_unref(&got[i], self);
        }
        t->received += (uint64_t)n;
    }
    tp_sink ^= sink;
    if (n < 0) {
        t->t1 = bench_now_ns();
        weir_channel_cancel(t->ch);
        tp_done(t);
    }
}

static struct tp *tp_of;

static void tp_writable(struct weir_channel *ch, void *arg)
{
    (void)ch;
    tp_produce(arg);
}

static void tp_readable(struct weir_channel *ch, void *arg)
{
    (void)ch;
    tp_consume(arg);
}

static void tp_p_start(struct weir_task *task)
{
    (void)task;
    tp_of->t0 = bench_now_ns();
    tp_produce(tp_of);
}

static void tp_c_start(struct weir_task *task)
{
    (void)task;
    tp_consume(tp_of);
}

static int run_throughput(uint64_t chunks, uint64_t hwm, unsigned workers,
                          bool touch)
{
    struct weir_workers_options wo = {.count = workers, .pool_buffers = 256};
    struct weir_channel_options co = {.capacity = 256,
                                      .hwm = hwm,
                                      .on_readable = tp_readable,
                                      .on_writable = tp_writable};
    struct tp t = {.chunks = chunks, .len = 64 * 1024, .touch = touch};
    char params[96];
    double secs;
    int err;

    pthread_mutex_init(&t.lock, NULL);
    pthread_cond_init(&t.cond, NULL);
    tp_of = &t;
    err = weir_workers_start(&t.w, &wo);
    if (err) {
        fprintf(stderr, "channel: %s\n", weir_loop_strerror(err));
        return 1;
    }
    co.readable_arg = co.writable_arg = &t;
    weir_channel_create(&t.ch, &co, weir_workers_loop(t.w, 0),
                        weir_workers_loop(t.w, workers - 1));
    weir_task_init(&t.p_start, tp_p_start);
    weir_task_init(&t.c_start, tp_c_start);
    weir_workers_post(t.w, workers - 1, &t.c_start);
    weir_workers_post(t.w, 0, &t.p_start);
    pthread_mutex_lock(&t.lock);
    while (t.done < 2)
        pthread_cond_wait(&t.cond, &t.lock);
    pthread_mutex_unlock(&t.lock);
    weir_workers_stop(t.w);
    secs = (double)(t.t1 - t.t0) / 1e9;
    snprintf(params, sizeof(params),
             "throughput workers=%u hwm=%lluKiB bytes=%s 64KiB chunks/s",
             workers, (unsigned long long)(hwm >> 10),
             touch ? "written+read" : "untouched");
    /* Untouched: only references move, so the GB/s is what the channel
     * could carry, not a memory bandwidth. */
    printf("channel %s: %.0f (%.2f GB/s)\n", params, (double)t.received / secs,
           (double)t.received * t.len / secs / 1e9);
    fflush(stdout);
    pthread_mutex_destroy(&t.lock);
    pthread_cond_destroy(&t.cond);
    return 0;
}

int bench_channel(int argc, char **argv)
{
    const char *what = "all";
    uint64_t n = 20000;

    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "-n") == 0 && i + 1 < argc)
            n = strtoull(argv[++i], NULL, 10);
        else
            what = argv[i];
    }
    if (!strcmp(what, "flags") || !strcmp(what, "all"))
        run_flags(n);
    if (!strcmp(what, "doorbell") || !strcmp(what, "all"))
        run_doorbell(n);
    if (!strcmp(what, "throughput") || !strcmp(what, "all")) {
        run_throughput(n * 100, 1 << 20, 2, false);
        run_throughput(n * 100, 4 << 20, 2, false);
        run_throughput(n * 100, 1 << 20, 1, false);
        run_throughput(n * 5, 1 << 20, 2, true);
        run_throughput(n * 5, 4 << 20, 2, true);
        run_throughput(n * 5, 1 << 20, 1, true);
    }
    return 0;
}
