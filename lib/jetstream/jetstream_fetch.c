/*
 * jetstream_fetch.c - the jetstream source's thread: the NATS client's
 * calls block (the connect, the consumer's set-up, a fetch waits for
 * messages), and a worker must never wait for them, so a thread of the
 * source's own makes them all.
 *
 * It connects, binds the durable pull consumer (made when missing), and
 * then turns: it sends the acknowledgements the loop handed it, and
 * fetches while the payload bytes held unacknowledged are under the
 * mark, so a stalled pipeline stops the fetches instead of growing
 * memory. What it fetched waits under the lock until the loop takes it
 * (the first message of an empty batch writes the eventfd the loop
 * polls).
 *
 * The consumer's ack floor is where a later run starts. A run killed
 * with messages delivered and not acknowledged leaves them pending on
 * the server, which would deliver them again only after the ack wait,
 * behind newer ones; so at a start a consumer with pending messages is
 * deleted and made again at its ack floor, and they come again first,
 * in the stream's order.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

#include "jetstream_impl.h"

/* A fetch waits this long for messages: also how late an ack handed
 * over meanwhile may go out. */
#define FETCH_WAIT_NS (200ll * 1000 * 1000)
/* Between two attempts to bind the consumer, or after a failed fetch. */
#define RETRY_WAIT_NS (500ll * 1000 * 1000)

/* The fetch threads running, for weir_jetstream_sources_wait. */
static pthread_mutex_t live_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t live_cv = PTHREAD_COND_INITIALIZER;
static unsigned live;

static void live_add(int n)
{
    pthread_mutex_lock(&live_mu);
    live = (unsigned)((int)live + n);
    if (live == 0)
        pthread_cond_broadcast(&live_cv);
    pthread_mutex_unlock(&live_mu);
}

bool weir_jetstream_sources_wait(uint64_t timeout_ns)
{
    struct timespec t;
    bool none;

    clock_gettime(CLOCK_REALTIME, &t);
    t.tv_sec += (time_t)(timeout_ns / 1000000000);
    t.tv_nsec += (long)(timeout_ns % 1000000000);
    if (t.tv_nsec >= 1000000000) {
        t.tv_sec++;
        t.tv_nsec -= 1000000000;
    }
    pthread_mutex_lock(&live_mu);
    while (live > 0 &&
           pthread_cond_timedwait(&live_cv, &live_mu, &t) != ETIMEDOUT) {
    }
    none = live == 0;
    pthread_mutex_unlock(&live_mu);
    return none;
}

static void wake(struct js_fetch *f)
{
    uint64_t one = 1;

    /* Nonblocking: a counter at its limit is readable anyway. */
    if (write(f->efd, &one, sizeof(one)) < 0) {
    }
}

/* Under mu: tells the loop of st, once per change. */
static void report(struct js_fetch *f, natsStatus st)
{
    if (f->st == st)
        return;
    f->st = st;
    if (!f->st_new && f->nin == 0)
        wake(f);
    f->st_new = true;
}

static void report_locked(struct js_fetch *f, natsStatus st)
{
    pthread_mutex_lock(&f->mu);
    report(f, st);
    pthread_mutex_unlock(&f->mu);
}

/* Under mu: waits up to ns, or until the loop lets go or hands acks. */
static void nap(struct js_fetch *f, int64_t ns)
{
    struct timespec t;

    clock_gettime(CLOCK_MONOTONIC, &t);
    t.tv_sec += (time_t)(ns / 1000000000);
    t.tv_nsec += (long)(ns % 1000000000);
    if (t.tv_nsec >= 1000000000) {
        t.tv_sec++;
        t.tv_nsec -= 1000000000;
    }
    if (!f->gone && f->nacks == 0)
        pthread_cond_timedwait(&f->cv, &f->mu, &t);
}

/* The consumer, made when missing, or again at its ack floor when a run
 * before this one left messages pending; then the subscription. */
static natsStatus bind_consumer(struct js_fetch *f, jsCtx *js,
                                natsSubscription **sub)
{
    jsConsumerInfo *ci = NULL;
    jsConsumerConfig cc;
    jsSubOptions so;
    jsErrCode jerr = 0;
    uint64_t start = 0;
    bool make = false;
    natsStatus st =
        js_GetConsumerInfo(&ci, js, f->stream, f->consumer, NULL, &jerr);

    if (st == NATS_OK && ci->NumAckPending > 0) {
        start = ci->AckFloor.Stream + 1;
        st = js_DeleteConsumer(js, f->stream, f->consumer, NULL, &jerr);
        make = st == NATS_OK;
    } else if (st == NATS_NOT_FOUND || jerr == JSConsumerNotFoundErr) {
        st = NATS_OK;
        make = true;
    }
    jsConsumerInfo_Destroy(ci);
    ci = NULL;
    if (make) {
        jsConsumerConfig_Init(&cc);
        cc.Durable = f->consumer;
        cc.AckPolicy = js_AckExplicit;
        cc.AckWait = f->ack_wait_ns;
        cc.FilterSubject = f->filter;
        cc.DeliverPolicy = start ? js_DeliverByStartSequence : js_DeliverAll;
        cc.OptStartSeq = start;
        /* Messages out are bounded by the fetches' credit, not here. */
        cc.MaxAckPending = 1 << 20;
        st = js_AddConsumer(&ci, js, f->stream, &cc, NULL, &jerr);
        jsConsumerInfo_Destroy(ci);
    }
    if (st != NATS_OK)
        return st;
    jsSubOptions_Init(&so);
    so.Stream = f->stream;
    so.Consumer = f->consumer;
    so.ManualAck = true;
    return js_PullSubscribe(sub, js, f->filter, f->consumer, NULL, &so, &jerr);
}

/* Not under mu: the file sinks' bytes to disk, then the acks. */
static void send_acks(struct js_fetch *f, natsMsg **v, size_t n)
{
    uint64_t failed = 0;

    for (unsigned i = 0; i < f->nsync; i++)
        if (fdatasync(f->sync_fds[i]) != 0 && errno != EINVAL)
            failed++;
    for (size_t i = 0; i < n; i++) {
        /* A sink's bytes not on disk: not acknowledged, so they come
         * again at the next start. */
        if (failed || natsMsg_Ack(v[i], NULL) != NATS_OK)
            failed++;
        natsMsg_Destroy(v[i]);
    }
    if (failed) {
        pthread_mutex_lock(&f->mu);
        f->errors += failed;
        pthread_mutex_unlock(&f->mu);
    }
}

/* Takes the acks handed over; under mu. */
static natsMsg **take_acks(struct js_fetch *f, size_t *n)
{
    natsMsg **v = f->acks;

    *n = f->nacks;
    f->acks = NULL;
    f->nacks = f->cap_acks = 0;
    return v;
}

/* Under mu: appends m for the loop. */
static int push_in(struct js_fetch *f, natsMsg *m)
{
    if (f->nin == f->cap_in) {
        size_t cap = f->cap_in ? f->cap_in * 2 : 256;
        natsMsg **v = realloc(f->in, cap * sizeof(*v));

        if (!v)
            return -ENOMEM;
        f->in = v;
        f->cap_in = cap;
    }
    if (f->nin == 0 && !f->st_new)
        wake(f);
    f->in[f->nin++] = m;
    f->held += (uint64_t)natsMsg_GetDataLength(m);
    return 0;
}

/*
 * One fetch of what the credit allows. A message delivered again while
 * its first delivery is held (the ack wait ran out) is dropped: the
 * first one's ack will do. One delivered again after its ack was sent
 * (the ack was lost) is acknowledged again.
 */
static void fetch(struct js_fetch *f, natsSubscription *sub, uint64_t credit,
                  uint64_t *last_seq, uint64_t *acked_seq, bool *wait_empty)
{
    natsMsgList list = {0};
    jsFetchRequest req;
    natsStatus st;

    jsFetchRequest_Init(&req);
    req.Batch = f->batch;
    req.Expires = FETCH_WAIT_NS;
    /* With nothing held, one message larger than the mark must still
     * come: no bound on bytes then. */
    if (credit < f->hwm)
        req.MaxBytes = (int64_t)credit;
    st = natsSubscription_FetchRequest(&list, sub, &req);
    if (st == NATS_TIMEOUT && list.Count == 0) {
        report_locked(f, NATS_OK);
        return;
    }
    if (st != NATS_OK && list.Count == 0 && req.MaxBytes) {
        /* The next message is larger than the room left: it comes once
         * everything held was acknowledged. */
        *wait_empty = true;
        return;
    }
    if (st != NATS_OK && list.Count == 0) {
        pthread_mutex_lock(&f->mu);
        f->errors++;
        report(f, st);
        nap(f, RETRY_WAIT_NS);
        pthread_mutex_unlock(&f->mu);
        return;
    }
    pthread_mutex_lock(&f->mu);
    report(f, NATS_OK);
    for (int i = 0; i < list.Count; i++) {
        natsMsg *m = list.Msgs[i];
        jsMsgMetaData *md = NULL;
        uint64_t seq = 0;

        list.Msgs[i] = NULL;
        if (natsMsg_GetMetaData(&md, m) == NATS_OK) {
            seq = md->Sequence.Stream;
            jsMsgMetaData_Destroy(md);
        }
        if (seq && seq <= *last_seq) {
            f->redelivered++;
            if (seq <= *acked_seq) {
                pthread_mutex_unlock(&f->mu);
                send_acks(f, &m, 1);
                pthread_mutex_lock(&f->mu);
            } else {
                natsMsg_Destroy(m);
            }
            continue;
        }
        if (push_in(f, m) != 0) {
            /* Never read, never acknowledged: it comes again later. */
            natsMsg_Destroy(m);
            f->errors++;
            continue;
        }
        if (seq)
            *last_seq = seq;
    }
    pthread_mutex_unlock(&f->mu);
    natsMsgList_Destroy(&list);
}

static void fetch_free(struct js_fetch *f)
{
    for (size_t i = 0; i < f->nin; i++)
        natsMsg_Destroy(f->in[i]);
    for (size_t i = 0; i < f->nacks; i++)
        natsMsg_Destroy(f->acks[i]);
    free(f->in);
    free(f->acks);
    for (unsigned i = 0; i < f->nsync; i++)
        close(f->sync_fds[i]);
    free(f->sync_fds);
    if (f->opts)
        natsOptions_Destroy(f->opts);
    free(f->stream);
    free(f->consumer);
    free(f->filter);
    close(f->efd);
    pthread_cond_destroy(&f->cv);
    pthread_mutex_destroy(&f->mu);
    free(f);
}

/* The stream sequence of the newest message acknowledged, for the
 * redeliveries' rule. */
static uint64_t seq_of(natsMsg *m)
{
    jsMsgMetaData *md = NULL;
    uint64_t seq = 0;

    if (natsMsg_GetMetaData(&md, m) == NATS_OK) {
        seq = md->Sequence.Stream;
        jsMsgMetaData_Destroy(md);
    }
    return seq;
}

static void *fetch_thread(void *arg)
{
    struct js_fetch *f = arg;
    natsConnection *nc = NULL;
    natsSubscription *sub = NULL;
    jsCtx *js = NULL;
    uint64_t last_seq = 0, acked_seq = 0;
    bool wait_empty = false;
    /* With retry on a failed connect, an unreachable server is no error:
     * the connection is made, and reconnects, in the background. */
    natsStatus st = natsConnection_Connect(&nc, f->opts);

    if (st == NATS_NOT_YET_CONNECTED)
        st = NATS_OK;
    if (st == NATS_OK)
        st = natsConnection_JetStream(&js, nc, NULL);
    pthread_mutex_lock(&f->mu);
    if (st != NATS_OK)
        report(f, st); /* options the client refused: nothing comes */
    while (!f->gone) {
        size_t n = 0;
        natsMsg **acks = take_acks(f, &n);
        uint64_t credit = f->held < f->hwm ? f->hwm - f->held : 0;

        /* Fetches wait for a quarter of the mark to be free, so they are
         * not a message at a time; or for all of it after a message
         * that did not fit. */
        if (f->held == 0)
            wait_empty = false;
        if (credit < f->hwm / 4 || (wait_empty && f->held))
            credit = 0;

        pthread_mutex_unlock(&f->mu);
        if (n) {
            uint64_t seq = seq_of(acks[n - 1]);

            send_acks(f, acks, n);
            acked_seq = seq > acked_seq ? seq : acked_seq;
        }
        free(acks);
        if (st == NATS_OK && !sub &&
            (st = bind_consumer(f, js, &sub)) != NATS_OK) {
            pthread_mutex_lock(&f->mu);
            report(f, st);
            st = NATS_OK; /* a stream or a leader still to come: again */
            nap(f, RETRY_WAIT_NS);
            continue;
        }
        if (sub && credit && n == 0)
            fetch(f, sub, credit, &last_seq, &acked_seq, &wait_empty);
        pthread_mutex_lock(&f->mu);
        if (st != NATS_OK || (!credit && f->nacks == 0))
            nap(f, RETRY_WAIT_NS);
    }
    /* The loop let go: what it handed over is acknowledged, and goes out
     * before the connection closes. */
    {
        size_t n = 0;
        natsMsg **acks = take_acks(f, &n);

        pthread_mutex_unlock(&f->mu);
        if (n && sub)
            send_acks(f, acks, n);
        else
            for (size_t i = 0; i < n; i++)
                natsMsg_Destroy(acks[i]);
        free(acks);
    }
    if (nc && sub)
        natsConnection_FlushTimeout(nc, 2000);
    pthread_mutex_lock(&f->mu);
    for (size_t i = 0; i < f->nin; i++)
        natsMsg_Destroy(f->in[i]);
    f->nin = 0;
    pthread_mutex_unlock(&f->mu);
    if (sub) {
        natsSubscription_Unsubscribe(sub);
        natsSubscription_Destroy(sub);
    }
    if (js)
        jsCtx_Destroy(js);
    if (nc)
        natsConnection_Destroy(nc);
    fetch_free(f);
    live_add(-1);
    return NULL;
}

static char *dup_or_null(const char *s, bool *oom)
{
    char *d = s ? strdup(s) : NULL;

    if (s && !d)
        *oom = true;
    return d;
}

int weir__js_fetch_start(struct js_fetch **out, natsOptions *opts,
                         const struct weir_jetstream_source_options *o)
{
    struct js_fetch *f = calloc(1, sizeof(*f));
    pthread_attr_t at;
    pthread_t t;
    bool oom = false;
    int rc;

    if (!f) {
        natsOptions_Destroy(opts);
        return -ENOMEM;
    }
    f->efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    if (f->efd < 0) {
        rc = -errno;
        natsOptions_Destroy(opts);
        free(f);
        return rc;
    }
    pthread_mutex_init(&f->mu, NULL);
    {
        pthread_condattr_t ca;

        pthread_condattr_init(&ca);
        pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
        pthread_cond_init(&f->cv, &ca);
        pthread_condattr_destroy(&ca);
    }
    f->opts = opts;
    f->stream = dup_or_null(o->stream, &oom);
    f->consumer = dup_or_null(o->consumer, &oom);
    f->filter = dup_or_null(o->filter, &oom);
    f->ack_wait_ns =
        o->ack_wait_ns ? (int64_t)o->ack_wait_ns : 60ll * 1000 * 1000 * 1000;
    f->batch = o->batch ? (int)o->batch : 1024;
    f->hwm = o->hwm ? o->hwm : 1u << 20;
    f->st = NATS_NOT_YET_CONNECTED; /* so that the first read is news */
    if (o->nsync_fds) {
        f->sync_fds = calloc(o->nsync_fds, sizeof(int));
        oom = oom || !f->sync_fds;
        for (unsigned i = 0; f->sync_fds && i < o->nsync_fds; i++) {
            int fd = fcntl(o->sync_fds[i], F_DUPFD_CLOEXEC, 0);

            if (fd >= 0)
                f->sync_fds[f->nsync++] = fd;
        }
    }
    if (oom) {
        fetch_free(f);
        return -ENOMEM;
    }
    rc = pthread_attr_init(&at);
    live_add(1);
    if (rc == 0) {
        pthread_attr_setdetachstate(&at, PTHREAD_CREATE_DETACHED);
        rc = pthread_create(&t, &at, fetch_thread, f);
        pthread_attr_destroy(&at);
    }
    if (rc) {
        live_add(-1);
        fetch_free(f);
        return -rc;
    }
    *out = f;
    return 0;
}

natsMsg **weir__js_fetch_take(struct js_fetch *f, size_t *n, natsStatus *st,
                              bool *st_new, uint64_t *redelivered,
                              uint64_t *errors)
{
    natsMsg **v;
    uint64_t count;

    if (read(f->efd, &count, sizeof(count)) < 0) {
        /* Nothing written since the last take: nothing to clear. */
    }
    pthread_mutex_lock(&f->mu);
    v = f->in;
    *n = f->nin;
    f->in = NULL;
    f->nin = f->cap_in = 0;
    *st = f->st;
    *st_new = f->st_new;
    f->st_new = false;
    *redelivered = f->redelivered;
    *errors = f->errors;
    f->redelivered = f->errors = 0;
    pthread_mutex_unlock(&f->mu);
    return v;
}

int weir__js_fetch_ack(struct js_fetch *f, natsMsg **m, size_t n,
                       uint64_t bytes)
{
    int rc = 0;

    pthread_mutex_lock(&f->mu);
    f->held = f->held > bytes ? f->held - bytes : 0;
    if (f->nacks + n > f->cap_acks) {
        size_t cap = f->cap_acks ? f->cap_acks : 256;
        natsMsg **v;

        while (cap < f->nacks + n)
            cap *= 2;
        v = realloc(f->acks, cap * sizeof(*v));
        if (v) {
            f->acks = v;
            f->cap_acks = cap;
        } else {
            rc = -ENOMEM;
        }
    }
    if (rc == 0 && n) {
        memcpy(f->acks + f->nacks, m, n * sizeof(*m));
        f->nacks += n;
    }
    pthread_cond_signal(&f->cv);
    pthread_mutex_unlock(&f->mu);
    if (rc)
        for (size_t i = 0; i < n; i++)
            natsMsg_Destroy(m[i]);
    return rc;
}

void weir__js_fetch_release(struct js_fetch *f)
{
    pthread_mutex_lock(&f->mu);
    f->gone = true;
    pthread_cond_signal(&f->cv);
    pthread_mutex_unlock(&f->mu);
}
