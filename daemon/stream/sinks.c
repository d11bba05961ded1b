/*
 * sinks.c - a stream's sinks: the endpoints the pipeline's sink addresses
 * name (or the served client), fed directly when there is one block
 * sink, through the core's tee otherwise.
 */
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <stdio.h>
#include <sys/stat.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "stream/sinks.h"

#include "conf/address.h"
#include "stream/stream_impl.h"
#include "sys/clock.h"
#include "sys/log.h"

/* One warning when a connecting sink goes down, one line when it is up
 * again with how long it was down; the retries between are debug lines. */
static bool outage_begins(struct sink_stats *ss)
{
    if (ss->down_since)
        return false;
    ss->down_since = clock_now_ns();
    return true;
}

/* retries= as given; else a pipeline's stream keeps trying, and weir
 * pipe gives up after a few and exits non-zero (as a tcp sink that does
 * not reconnect). 0: without end. */
static unsigned http_retry_limit(const struct stream *s,
                                 const struct weir_address *a)
{
    if (a->retries != CONF_HTTP_RETRIES_UNSET)
        return (unsigned)a->retries;
    return s->sp->reconnect ? 0 : CONF_PIPE_HTTP_RETRIES;
}

static void sink_event(void *arg, enum weir_endpoint_event ev, int err,
                       uint64_t off)
{
    struct pipe_ctx *pc = arg;
    struct stream *s = pc->s;
    const struct weir_address *a = s->sp->p->sinks[pc->idx];
    const char *name = s->sp->p->name;
    struct sink_live *sl = &s->live[pc->idx];
    /* Relaxed: only this worker writes them; readers take a statistic. */
    uint32_t was = atomic_load_explicit(&sl->state, memory_order_relaxed);

    switch (ev) {
    case WEIR_EP_CONNECTED:
        if (s->ss[pc->idx].down_since)
            log_info(
                "pipeline %s: connected to %s after %.1f s down", name, a->text,
                (double)(clock_now_ns() - s->ss[pc->idx].down_since) / 1e9);
        else
            log_debug("pipeline %s: connected to %s", name, a->text);
        s->ss[pc->idx].down_since = 0;
        if (was == SINK_RETRYING)
            atomic_store_explicit(
                &sl->reconnects,
                atomic_load_explicit(&sl->reconnects, memory_order_relaxed) + 1,
                memory_order_relaxed);
        atomic_store_explicit(&sl->state, SINK_UP, memory_order_relaxed);
        break;
    case WEIR_EP_CONNECT_FAIL:
        if (outage_begins(&s->ss[pc->idx]))
            log_warnx("pipeline %s: cannot connect to %s: %s; retrying "
                      "(one line when it is up again)",
                      name, a->text, strerror(-err));
        else
            log_debug("pipeline %s: still cannot connect to %s: %s", name,
                      a->text, strerror(-err));
        break;
    case WEIR_EP_DISCONNECTED:
        (void)outage_begins(&s->ss[pc->idx]);
        atomic_store_explicit(&sl->state, SINK_RETRYING, memory_order_relaxed);
        log_warnx("pipeline %s: lost %s (%s); the peer acknowledged %llu "
                  "bytes; reconnecting",
                  name, a->text, strerror(-err), (unsigned long long)off);
        break;
    case WEIR_EP_RESOLVE_FAIL:
        if (outage_begins(&s->ss[pc->idx]))
            log_warnx("pipeline %s: cannot resolve %s: %s; retrying "
                      "(one line when it is up again)",
                      name, a->text, gai_strerror(err));
        else
            log_debug("pipeline %s: still cannot resolve %s: %s", name, a->text,
                      gai_strerror(err));
        break;
    case WEIR_EP_HTTP_FAILING:
        (void)outage_begins(&s->ss[pc->idx]);
        atomic_store_explicit(&sl->state, SINK_RETRYING, memory_order_relaxed);
        if (err > 0)
            log_warnx("pipeline %s: %s answered HTTP %d; retrying (one line "
                      "when it is up again)",
                      name, s->sp->p->sinks[pc->idx]->label, err);
        else
            log_warnx("pipeline %s: no answer from %s: %s; retrying (one "
                      "line when it is up again)",
                      name, s->sp->p->sinks[pc->idx]->label, strerror(-err));
        break;
    case WEIR_EP_HTTP_REJECTED:
        log_errx("pipeline %s: %s refused %llu records for good (HTTP %d); "
                 "%s",
                 name, s->sp->p->sinks[pc->idx]->label, (unsigned long long)off,
                 err,
                 a->dead_letter ? "written to its dead_letter file"
                                : "dropped: the sink has no dead_letter=");
        break;
    case WEIR_EP_HTTP_GAVE_UP: {
        char last[64];

        if (err > 0)
            snprintf(last, sizeof(last), "HTTP %d", err);
        else
            snprintf(last, sizeof(last), "%s", strerror(-err));
        log_errx("pipeline %s: %s: gave up on %llu records after %u "
                 "retries (the last: %s); %s",
                 name, s->sp->p->sinks[pc->idx]->label, (unsigned long long)off,
                 http_retry_limit(s, a), last,
                 a->dead_letter ? "written to its dead_letter file"
                                : "dropped: the sink has no dead_letter=");
        break;
    }
    case WEIR_EP_KAFKA_FAILING:
        (void)outage_begins(&s->ss[pc->idx]);
        atomic_store_explicit(&sl->state, SINK_RETRYING, memory_order_relaxed);
        log_warnx("pipeline %s: %s: %s; librdkafka retries (one line when "
                  "records are delivered again)",
                  name, a->label, weir_kafka_strerror(err));
        break;
    case WEIR_EP_KAFKA_REJECTED:
        /* One line at the 1st, 2nd, 4th, 8th ... record: a topic that
         * refuses everything must not flood the log. */
        if (off & (off - 1))
            break;
        log_errx("pipeline %s: %s refused a record for good (%s; %llu so "
                 "far); %s",
                 name, a->label, weir_kafka_strerror(err),
                 (unsigned long long)off,
                 a->dead_letter ? "written to its dead_letter file"
                                : "dropped: the sink has no dead_letter=");
        break;
    case WEIR_EP_JETSTREAM_FAILING:
        (void)outage_begins(&s->ss[pc->idx]);
        atomic_store_explicit(&sl->state, SINK_RETRYING, memory_order_relaxed);
        log_warnx("pipeline %s: %s: %s; publishing again (one line when "
                  "records are acknowledged again)",
                  name, a->label, weir_jetstream_strerror(err));
        break;
    case WEIR_EP_JETSTREAM_REJECTED:
        /* One line at the 1st, 2nd, 4th, 8th ... record, as for kafka. */
        if (off & (off - 1))
            break;
        log_errx("pipeline %s: %s: a record not stored (%s; %llu so far); "
                 "%s",
                 name, a->label, weir_jetstream_strerror(err),
                 (unsigned long long)off,
                 a->dead_letter ? "written to its dead_letter file"
                                : "dropped: the sink has no dead_letter=");
        break;
    case WEIR_EP_RESUMED:
        log_info("pipeline %s: reconnected to %s, resending from byte %llu",
                 name, a->text, (unsigned long long)off);
        break;
    default: /* a source's */
        break;
    }
}

/* What a reconnecting sink keeps. Transformed bytes are not the file's,
 * so a copy, resumed where the last transform's members begin. A followed
 * file may be renamed away under its fd (rotation), so its bytes too are
 * resent from a copy, not read again from the file. TLS: the peer's
 * acknowledgements count records, not stream bytes, so no resume point
 * can be known. */
static enum weir_resume stream_resume(const struct weir_pipeline *p,
                                      const struct weir_address *a)
{
    const char *last;

    if (a->tls)
        return WEIR_RESUME_OFF;
    if (p->ntransforms == 0)
        return (p->follow || p->source->follow) && a->on_full == ON_FULL_BLOCK
                   ? WEIR_RESUME_BYTES
                   : WEIR_RESUME_OFF;
    last = p->transforms[p->ntransforms - 1].spec;
    if (strncmp(last, "gzip", 4) == 0)
        return WEIR_RESUME_GZIP;
    if (strncmp(last, "zstd", 4) == 0)
        return WEIR_RESUME_ZSTD;
    return WEIR_RESUME_BYTES;
}

void stream_tcp_options(const struct weir_pipeline *p,
                        struct weir_tcp_options *t)
{
    /* Probes every 10 s, 3 of them: with TCP_USER_TIMEOUT set, the
     * kernel gives the connection up once that much time has passed
     * without an answer, so the user timeout is the bound that counts. */
    *t = (struct weir_tcp_options){
        .keepalive = p->keepalive,
        .keepalive_idle_s = (uint32_t)(p->keepalive_idle_ms / 1000),
        .keepalive_intvl_s = 10,
        .keepalive_cnt = 3,
        .user_timeout_ms = (uint32_t)p->tcp_user_timeout_ms,
    };
    memcpy(t->congestion, p->tcp_congestion, sizeof(t->congestion));
}

void stream_peer_options(const struct weir_pipeline *p,
                         const struct weir_address *a,
                         struct weir_peer_options *o)
{
    if (!addr_kind_listens(a->kind))
        stream_tcp_options(p, &o->tcp);
    o->send_timeout_ns = p->send_timeout_ms * 1000 * 1000;
}

/* A secret's file (a token, a password): its first line. Read on the
 * worker as the sink is made: a few bytes of a local file. */
static int read_secret(const char *path, char *buf, size_t len)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    ssize_t n;

    if (fd < 0)
        return -errno;
    n = read(fd, buf, len - 1);
    close(fd);
    if (n < 0)
        return -errno;
    buf[n] = '\0';
    buf[strcspn(buf, "\r\n")] = '\0';
    return 0;
}

static int make_http(struct stream *s, unsigned i, uint64_t hwm,
                     _Atomic uint64_t *counter, struct weir_endpoint **out)
{
    const struct weir_address *a = s->sp->p->sinks[i];
    char secret[4096];
    struct weir_http_sink_options ho = {
        .hwm = hwm,
        .counter = counter,
        .stats = &s->live[i].http,
        .url = a->url,
        .preset = a->preset,
        .compression = a->compression,
        .index = a->index,
        .headers = (const char *const *)a->headers,
        .nheaders = a->nheaders,
        .labels = (const char *const *)a->labels,
        .nlabels = a->nlabels,
        .user = a->user,
        .batch_bytes = a->batch_bytes,
        .batch_records = (uint32_t)a->batch_records,
        .batch_age_ns = a->batch_age_ms * 1000000,
        .concurrency = (unsigned)a->concurrency,
        .timeout_ns = a->timeout_ms * 1000000,
        .retry_limit = http_retry_limit(s, a),
        .connect_timeout_ns = s->sp->p->connect_timeout_ms * 1000000,
        .ca = a->ca,
        .insecure = !a->verify,
        .has_dead_letter = s->sp->res[i].file_fd >= 0,
        .dead_letter_fd = s->sp->res[i].file_fd,
        .on_event = sink_event,
        .event_arg = stream_pipe_ctx(s, (int)i),
    };
    const char *file = a->auth_file ? a->auth_file : a->password_file;
    int rc;

    if (file && (rc = read_secret(file, secret, sizeof(secret))) != 0) {
        log_errx("pipeline %s: %s: cannot read %s: %s", s->sp->p->name,
                 a->label, file, strerror(-rc));
        return rc;
    }
    if (a->auth_file)
        ho.bearer = secret;
    else if (a->password_file)
        ho.password = secret;
    /* Relaxed: a statistic (struct sink_live). */
    atomic_store_explicit(&s->live[i].state, SINK_CONNECTING,
                          memory_order_relaxed);
    rc = weir_endpoint_http_sink(out, s->home.loop, &ho);
    explicit_bzero(secret, sizeof(secret));
    return rc;
}

/* What keys a kafka sink's records: key=file the source's path (a glob's
 * pattern), or the pipeline's name when the source is no file. */
static int make_kafka(struct stream *s, unsigned i, uint64_t hwm,
                      _Atomic uint64_t *counter, struct weir_endpoint **out)
{
    const struct weir_pipeline *p = s->sp->p;
    const struct weir_address *a = p->sinks[i];
    char host[256];
    struct weir_kafka_sink_options ko = {
        .hwm = hwm,
        .counter = counter,
        .stats = &s->live[i].kafka,
        .brokers = a->brokers,
        .topic = a->topic,
        .compression = a->kafka_compression,
        .props = (const char *const *)a->kafka_props,
        .nprops = a->nkafka_props,
        .has_dead_letter = s->sp->res[i].file_fd >= 0,
        .dead_letter_fd = s->sp->res[i].file_fd,
        .on_event = sink_event,
        .event_arg = stream_pipe_ctx(s, (int)i),
    };

    switch (a->key_by) {
    case KAFKA_KEY_FILE:
        ko.key = p->source->path ? p->source->path : p->name;
        break;
    case KAFKA_KEY_HOST:
        if (gethostname(host, sizeof(host)) != 0)
            snprintf(host, sizeof(host), "localhost");
        host[sizeof(host) - 1] = '\0';
        ko.key = host;
        break;
    default:
        break;
    }
    /* Relaxed: a statistic (struct sink_live). */
    atomic_store_explicit(&s->live[i].state, SINK_CONNECTING,
                          memory_order_relaxed);
    return weir_endpoint_kafka_sink(out, s->home.loop, &ko);
}

/* A jetstream sink's message ids: for a file source, a hash of the
 * file's identity (device, inode and its first 64 bytes) and the offset
 * the stream began at, so that a run that resumes at a checkpoint sends
 * the ids the crashed run sent and the stream drops what it had. The
 * file's head is read here, on the worker: 64 bytes of a local file. */
static bool file_identity(const struct stream *s, char *prefix, size_t len)
{
    const struct weir_address *src = s->sp->p->source;
    uint8_t head[64];
    struct stat st;
    uint64_t h = 0xcbf29ce484222325ull; /* FNV-1a */
    ssize_t n;
    int fd;

    if (src->kind != ADDR_FILE || !src->path)
        return false;
    fd = open(src->path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0)
        return false;
    n = fstat(fd, &st) == 0 && S_ISREG(st.st_mode)
            ? pread(fd, head, sizeof(head), 0)
            : -1;
    close(fd);
    if (n < 0)
        return false;
    for (size_t k = 0; k < sizeof(uint64_t) * 2 + (size_t)n; k++) {
        uint8_t b = k < 8    ? (uint8_t)((uint64_t)st.st_dev >> (8 * k))
                    : k < 16 ? (uint8_t)((uint64_t)st.st_ino >> (8 * (k - 8)))
                             : head[k - 16];

        h = (h ^ b) * 0x100000001b3ull;
    }
    snprintf(prefix, len, "f%016llx", (unsigned long long)h);
    return true;
}

static int make_jetstream(struct stream *s, unsigned i, uint64_t hwm,
                          _Atomic uint64_t *counter, struct weir_endpoint **out)
{
    const struct weir_address *a = s->sp->p->sinks[i];
    char prefix[32];
    struct weir_jetstream_sink_options jo = {
        .hwm = hwm,
        .counter = counter,
        .stats = &s->live[i].jetstream,
        .servers = a->servers,
        .subject = a->subject,
        .creds = a->creds,
        .ca = a->ca,
        .retry_limit = http_retry_limit(s, a),
        .has_dead_letter = s->sp->res[i].file_fd >= 0,
        .dead_letter_fd = s->sp->res[i].file_fd,
        .on_event = sink_event,
        .event_arg = stream_pipe_ctx(s, (int)i),
    };

    if (file_identity(s, prefix, sizeof(prefix))) {
        jo.id_prefix = prefix;
        jo.id_base = s->src_offset;
    }
    /* Relaxed: a statistic (struct sink_live). */
    atomic_store_explicit(&s->live[i].state, SINK_CONNECTING,
                          memory_order_relaxed);
    return weir_endpoint_jetstream_sink(out, s->home.loop, &jo);
}

static int make_sink(struct stream *s, unsigned i, struct weir_endpoint **out)
{
    struct stream_home *h = &s->home;
    const struct weir_pipeline *p = s->sp->p;
    const struct weir_address *a = p->sinks[i];
    struct weir_fd_sink_options o = {
        .hwm = stream_sink_hwm(p, i),
        .own_fd = true,
        .counter = stream_sink_counter(s, i),
    };
    struct weir_tls_session *t;
    int fd, rc;

    stream_peer_options(p, a, &o.peer);
    if (s->sp->client_sink) {
        fd = s->sink_fd;
        s->sink_fd = -1;
        o.linger_ns = STREAM_LINGER_NS;
        o.own_fd = !s->sink_borrowed; /* the stream closes it at its end */
        if ((rc = stream_tls_open(s, s->via, fd, &t)) != 0) {
            if (o.own_fd)
                close(fd);
            return rc;
        }
        o.tls = t;
        rc = weir_endpoint_fd_sink(out, h->loop, fd, &o);
        weir_tls_session_release(t); /* the endpoint holds its own */
        return rc;
    }
    if (s->relay) {
        /* The upstream this stream's worker connected (relay.c). */
        fd = s->up_fd;
        s->up_fd = -1;
        if ((rc = stream_tls_open(s, a, fd, &h->tls_up)) != 0) {
            close(fd);
            return rc;
        }
        o.tls = h->tls_up;
        return weir_endpoint_fd_sink(out, h->loop, fd, &o);
    }
    switch (a->kind) {
    case ADDR_FILE:
        fd = fcntl(s->sp->res[i].file_fd, F_DUPFD_CLOEXEC, 0);
        if (fd < 0)
            return -errno;
        return weir_endpoint_fd_sink(out, h->loop, fd, &o);
    case ADDR_STDOUT:
        fd = fcntl(1, F_DUPFD_CLOEXEC, 0);
        if (fd < 0)
            return -errno;
        return weir_endpoint_fd_sink(out, h->loop, fd, &o);
    case ADDR_HTTP:
        return make_http(s, i, o.hwm, o.counter, out);
    case ADDR_KAFKA:
        return make_kafka(s, i, o.hwm, o.counter, out);
    case ADDR_JETSTREAM:
        return make_jetstream(s, i, o.hwm, o.counter, out);
    case ADDR_NULL: {
        struct weir_null_sink_options no = {.hwm = o.hwm, .counter = o.counter};

        return weir_endpoint_null_sink(out, h->loop, &no);
    }
    case ADDR_TCP:
    case ADDR_UNIX: {
        /* Relaxed: a statistic (struct sink_live). */
        atomic_store_explicit(&s->live[i].state, SINK_CONNECTING,
                              memory_order_relaxed);
        struct weir_socket_sink_options so = {
            .hwm = o.hwm,
            .counter = o.counter,
            .peer = o.peer,
            .addr = s->sp->res[i].addr,
            .addrlen = s->sp->res[i].addrlen,
            .host = s->sp->res[i].host,
            .port = s->sp->res[i].port,
            /* A per-client proxy stream fails with its upstream; a
             * pipeline's one stream keeps trying; weir pipe reports
             * the failure instead. */
            .reconnect = s->sp->reconnect,
            /* The file's bytes are not the stream's once transformed,
             * nor a dropping sink's (cut when it stalls: the tee goes on
             * without it); a followed file resends from a copy. */
            .replay_fd = p->ntransforms || a->on_full != ON_FULL_BLOCK ||
                                 p->follow || p->source->follow
                             ? -1
                             : s->replay_fd,
            .replay_base = s->src_offset,
            .cut_stalled = a->on_full != ON_FULL_BLOCK,
            .resume = stream_resume(p, a),
            .connect_timeout_ns = p->connect_timeout_ms * 1000 * 1000,
            .on_event = sink_event,
            .event_arg = stream_pipe_ctx(s, (int)i),
            .tls = a->tls ? a->tls_ctx : NULL,
            .tls_name = a->sni ? a->sni : a->host,
        };
        return weir_endpoint_socket_sink(out, h->loop, &so);
    }
    default:
        return -EINVAL;
    }
}

enum weir_tee_policy stream_tee_policy(enum on_full f)
{
    switch (f) {
    case ON_FULL_DROP_NEWEST:
        return WEIR_TEE_DROP_NEWEST;
    case ON_FULL_DROP_OLDEST:
        return WEIR_TEE_DROP_OLDEST;
    case ON_FULL_DISCONNECT:
        return WEIR_TEE_DISCONNECT;
    default:
        return WEIR_TEE_BLOCK;
    }
}

/* The sinks of the stream, fed by rs. */
void stream_sinks_build(struct stream *s, struct weir_readable *rs)
{
    struct stream_home *h = &s->home;
    unsigned n = s->sp->nsinks;
    struct weir_tee_branch_options bo[CONF_MAX_SINKS] = {0};
    int rc = 0;

    h->sinks = calloc(n, sizeof(*h->sinks));
    if (!h->sinks) {
        s->sink_rc[0] = -ENOMEM;
        stream_cancel_unread(s, rs, -ENOMEM);
        return;
    }
    for (unsigned i = 0; i < n; i++) {
        stream_pipe_ctx(s, (int)i)->s = s;
        stream_pipe_ctx(s, (int)i)->idx = (int)i;
        rc = make_sink(s, i, &h->sinks[i]);
        if (rc) {
            s->sink_rc[i] = rc;
            h->sinks[i] = NULL;
            break;
        }
    }
    if (rc) {
        stream_cancel_unread(s, rs, rc);
        return;
    }
    stream_watch_start(s);
    if (n == 1 && s->sp->p->sinks[0]->on_full == ON_FULL_BLOCK) {
        stream_pipe(s, rs, weir_endpoint_writable(h->sinks[0]), 0);
        return;
    }
    /* Several sinks, or a policy other than block: the core's tee, one
     * branch per sink with the sink's on_full policy. The branch holds at
     * most one chunk past what the sink's own queue (its high_water_mark)
     * holds, so a sink's memory is its hwm + one chunk whatever its
     * policy; a drop policy acts when both are full. */
    for (unsigned i = 0; i < n; i++)
        bo[i] = (struct weir_tee_branch_options){
            .strategy = {.hwm = s->sp->p->chunk_size, .bytes = true},
            .policy = stream_tee_policy(s->sp->p->sinks[i]->on_full),
        };
    rc = weir_tee_create(&h->tee, rs, n, bo);
    if (rc) {
        s->sink_rc[0] = rc;
        stream_cancel_unread(s, rs, rc);
        return;
    }
    for (unsigned i = 0; i < n; i++)
        stream_pipe(s, weir_tee_branch(h->tee, i),
                    weir_endpoint_writable(h->sinks[i]), (int)i);
}
