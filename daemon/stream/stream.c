/*
 * stream.c - a stream's life on the main thread: made, placed on a
 * worker, asked to stop, and freed once it has finished there.
 *
 * The stream runs on its worker (build.c, worker.c), which posts `done`
 * here at its end. A stop posted to the worker is acknowledged, and the
 * stream is freed only when both the end and that acknowledgement are
 * back, so no task of it is left queued on a worker.
 */
#include "stream/stream.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "conf/sockaddr.h"
#include "stream/build.h"
#include "stream/checkpoint_set.h"
#include "stream/relay.h"
#include "stream/report.h"
#include "stream/stream_impl.h"
#include "sys/clock.h"
#include "sys/log.h"

int stream_ctx_init(struct stream_ctx *cx)
{
    cx->sched =
        calloc(1, sizeof(*cx->sched) +
                      cx->nworkers * sizeof(cx->sched->member_streams[0]));
    return cx->sched ? 0 : -ENOMEM;
}

void stream_ctx_fini(struct stream_ctx *cx)
{
    free(cx->sched);
    cx->sched = NULL;
}

static void src_file_put(struct src_file *f)
{
    if (f && --f->refs == 0) {
        if (f->share)
            f->share->cur = NULL;
        close(f->fd);
        free(f);
    }
}

void stream_share_release(struct src_share *sh)
{
    if (sh->cur)
        sh->cur->share = NULL;
    sh->cur = NULL;
}

/* The shared fd of the file at path, when it is a regular file; -ENOENT
 * or -errno; 1 when it is not a regular file (the caller opens it). */
static int share_get(struct stream *s, const char *path, struct stat *st)
{
    struct src_share *sh = s->sp->share;
    struct src_file *f = sh->cur;
    int fd;

    if (stat(path, st) != 0)
        return -errno;
    if (!S_ISREG(st->st_mode))
        return 1;
    if (!f || f->dev != st->st_dev || f->ino != st->st_ino) {
        fd = open(path, O_RDONLY | O_CLOEXEC);
        if (fd < 0)
            return -errno;
        f = calloc(1, sizeof(*f));
        if (!f || fstat(fd, st) != 0) {
            free(f);
            close(fd);
            return -ENOMEM;
        }
        *f = (struct src_file){
            .fd = fd, .dev = st->st_dev, .ino = st->st_ino, .share = sh};
        stream_share_release(sh);
        sh->cur = f;
    }
    f->refs++;
    s->src_file = f;
    return f->fd;
}

static void stream_free(struct stream *s)
{
    const struct stream_hooks *hk = s->sp->hooks;

    if (hk && hk->released)
        hk->released(s);
    if (s->src_fd >= 0 && !s->src_file)
        close(s->src_fd);
    src_file_put(s->src_file);
    if (s->sink_fd >= 0 && s->sink_fd != s->kill_fd)
        close(s->sink_fd);
    if (s->replay_fd >= 0)
        close(s->replay_fd);
    if (s->kill_fd >= 0)
        close(s->kill_fd);
    relay_free(s);
    free(s->home.sinks);
    free(s->home.sw);
    free(s->sink_rc);
    free(s->sink_bytes);
    free(s->live);
    free(s->xf_live);
    free(s->ss);
    free(s->pc);
    free(atomic_exchange_explicit(&s->fs_mail, NULL, memory_order_acq_rel));
    free(s->fs_seen);
    ckpt_set_lines_free(&s->ck_track.set_lines);
    free(s);
}

/* No task of the stream is left on a worker. */
static bool settled(const struct stream *s)
{
    return (!s->stop_posted || s->stop_acked) && s->cuts_out == 0;
}

static void done_task(struct weir_task *t)
{
    struct stream *s = weir_container_of(t, struct stream, done);
    const struct stream_hooks *hk = s->sp->hooks;

    s->done_seen = true;
    if (s->sp->ckpt)
        ckpt_stream_done(s->sp->ckpt, s);
    if (s->sp->ckset)
        ckpt_set_stream_done(s->sp->ckset, s);
    if (hk && hk->ended)
        hk->ended(s);
    stream_report(s);
    if (settled(s))
        stream_free(s);
}

static void stop_ack_task(struct weir_task *t)
{
    struct stream *s = weir_container_of(t, struct stream, stop_ack);

    s->stop_acked = true;
    if (s->done_seen && settled(s))
        stream_free(s);
}

static void cut_ack_task(struct weir_task *t)
{
    struct stream *s = weir_container_of(t, struct stream, home.cut_ack);

    s->cuts_out--;
    if (s->done_seen && settled(s))
        stream_free(s);
}

/* The source's fd for a stream that is not an accepted client. */
static int open_source(struct stream *s)
{
    const struct weir_pipeline *p = s->sp->p;
    const struct weir_address *a = p->source;
    struct stat st;
    int fd, rc;

    switch (a->kind) {
    case ADDR_FILE:
        if (s->sp->share && !(p->follow || a->follow) &&
            (rc = share_get(s, a->path, &st)) != 1) {
            if (rc < 0)
                return rc;
            s->src_regular = true;
            s->src_size = (uint64_t)st.st_size;
            return rc;
        }
        /* O_NONBLOCK: opening a FIFO must not wait for a writer here, on
         * the main thread. */
        if (s->sp->ckpt) {
            fd = ckpt_open(s->sp->ckpt, &s->src_offset);
            errno = fd < 0 ? -fd : 0;
        } else {
            fd = open(a->path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
        }
        if (fd < 0 && errno == ENOENT && (p->follow || a->follow)) {
            /* A log that does not exist yet: the source waits for it. */
            log_info("pipeline %s: %s does not exist yet; waiting for it",
                     p->name, a->path);
            s->src_regular = true;
            s->src_waits = true;
            return -ENOENT;
        }
        if (fd < 0)
            return -errno;
        s->src_regular = fstat(fd, &st) == 0 && S_ISREG(st.st_mode);
        if (!s->src_regular && S_ISFIFO(st.st_mode)) {
            /* Read and write: the FIFO always has a writer (this one), so
             * writers may come and go and a read waits for the next
             * rather than ending the stream; opening so never waits.
             * Opened before the first fd is closed: a writer that came
             * and went meanwhile left its bytes in a pipe that dies with
             * its last opener. */
            int rw = open(a->path, O_RDWR | O_CLOEXEC);

            rc = rw < 0 ? -errno : 0;
            close(fd);
            if (rw < 0)
                return rc;
            fd = rw;
        }
        /* Reads go through the loop, which waits for data itself; an
         * O_NONBLOCK fd would fail them with EAGAIN instead. */
        if (fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK) != 0) {
            rc = -errno;
            close(fd);
            return rc;
        }
        if (s->src_regular && s->sp->replay)
            s->replay_fd = fcntl(fd, F_DUPFD_CLOEXEC, 0);
        if (s->src_regular && !(p->follow || a->follow))
            s->src_size = (uint64_t)st.st_size;
        return fd;
    case ADDR_FILE_SET:
        /* The file set opens its files on the worker, as it finds them. */
        s->src_set = true;
        return -1;
    case ADDR_JETSTREAM:
        /* Its thread connects once the worker made it. */
        s->src_remote = true;
        return -1;
    case ADDR_STDIN:
        fd = fcntl(0, F_DUPFD_CLOEXEC, 0);
        return fd < 0 ? -errno : fd;
    case ADDR_TCP:
    case ADDR_UNIX:
        /* A connecting source connects on its worker's loop (relay.c):
         * a peer that is slow to answer holds up nothing else. */
        rc = sockaddr_resolve(a, &s->conn_addr, &s->conn_addrlen);
        if (rc)
            return rc;
        fd = socket(s->conn_addr.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
        if (fd < 0)
            return -errno;
        s->conn_fd = fd;
        return fd;
    default:
        return -EINVAL;
    }
}

/* A plain file into one socket may take the splice stage, on one worker.
 * The spec says whether its sink may (a reconnecting sink resumes, which
 * the splice stage does not). */
static bool wants_zero_copy(const struct stream *s)
{
    const struct weir_pipeline *p = s->sp->p;

    /* TLS needs the bytes in user space (no kernel TLS here); a served
     * client's sink is one of the pipeline's listen sinks. */
    for (size_t i = 0; i < p->nsinks; i++)
        if (p->sinks[i]->tls)
            return false;
    return s->sp->zero_copy && s->src_regular && p->nsinks == 1 &&
           p->ntransforms == 0 && p->sinks[0]->on_full == ON_FULL_BLOCK &&
           !(p->follow || p->source->follow);
}

struct stream *stream_new(struct stream_ctx *cx, const struct stream_spec *sp,
                          void *owner, int src_fd, int sink_fd,
                          const char *peer)
{
    unsigned n = sp->nsinks;
    struct stream *s = calloc(1, sizeof(*s));

    if (!s)
        return NULL;
    s->sink_rc = calloc(n, sizeof(int));
    s->sink_bytes = calloc(n, sizeof(uint64_t));
    s->live = calloc(n, sizeof(*s->live));
    s->xf_live = calloc(sp->p->ntransforms + 1, sizeof(*s->xf_live));
    s->ss = calloc(n, sizeof(*s->ss));
    s->pc = calloc(n + 1 + sp->p->ntransforms, sizeof(*s->pc));
    if (!s->sink_rc || !s->sink_bytes || !s->live || !s->xf_live || !s->ss ||
        !s->pc) {
        free(s->sink_rc);
        free(s->sink_bytes);
        free(s->live);
        free(s->xf_live);
        free(s->ss);
        free(s->pc);
        free(s);
        return NULL;
    }
    s->cx = cx;
    s->sp = sp;
    s->owner = owner;
    weir_list_init(&s->link);
    s->replay_fd = -1;
    s->kill_fd = -1;
    s->conn_fd = -1;
    s->up_fd = -1;
    s->kill_up_fd = -1;
    s->sink_fd = sink_fd;
    snprintf(s->peer, sizeof(s->peer), "%s", peer ? peer : "");
    s->t_start_ns = clock_now_ns();
    if (src_fd >= 0) {
        s->src_fd = src_fd;
        /* A dup the main thread keeps, so that a drain timeout can shut
         * the connection down while a worker owns the stream's fd. */
        s->kill_fd = fcntl(src_fd, F_DUPFD_CLOEXEC, 0);
    } else if (sp->http) {
        /* An HTTP client's files are opened by its requests. */
        s->src_fd = -1;
    } else {
        s->src_fd = open_source(s);
        if (s->src_fd < 0) {
            s->src_rc =
                s->src_waits || s->src_set || s->src_remote ? 0 : s->src_fd;
            s->src_fd = -1;
        }
    }
    if (sink_fd >= 0) {
        /* The stream keeps the client's socket and the worker borrows
         * it, so a drain timeout can shut it down without a dup. */
        s->kill_fd = sink_fd;
        s->sink_borrowed = true;
    }
    s->zero_copy = wants_zero_copy(s);
    /* A proxy relays replies on the worker that carries the requests. */
    if (s->src_fd >= 0 && sp->relay && relay_open(s) != 0)
        s->relay = false;
    weir_task_init(&s->done, done_task);
    weir_task_init(&s->stop_ack, stop_ack_task);
    weir_task_init(&s->ck_save, ckpt_set_save_task);
    atomic_init(&s->bytes_in, 0);
    atomic_init(&s->bytes_out, 0);
    atomic_init(&s->fs_mail, NULL);
    for (unsigned i = 0; i < n; i++) {
        atomic_init(&s->live[i].out, 0);
        atomic_init(&s->live[i].blocked_ns, 0);
        atomic_init(&s->live[i].dropped, 0);
        atomic_init(&s->live[i].queued, 0);
        atomic_init(&s->live[i].reconnects, 0);
        atomic_init(&s->live[i].state, SINK_UP);
    }
    for (size_t k = 0; k < sp->p->ntransforms; k++) {
        atomic_init(&s->xf_live[k].in, 0);
        atomic_init(&s->xf_live[k].out, 0);
    }
    return s;
}

void stream_start(struct stream *s, int worker)
{
    struct stream_ctx *cx = s->cx;
    struct stream_home *h = &s->home;

    h->worker = worker >= 0 ? (unsigned)worker
                            : cx->sched->next_worker++ % cx->nworkers;
    h->loop = weir_workers_loop(cx->workers, h->worker);
    weir_task_init(&h->start, stream_start_task);
    weir_task_init(&h->stop, stream_stop_task);
    weir_task_init(&h->cut, stream_cut_task);
    weir_task_init(&h->cut_ack, cut_ack_task);
    if (s->src_fd < 0 && !s->src_waits && !s->src_set && !s->src_remote &&
        !s->sp->http) {
        /* The source could not be opened: the stream ends at once. */
        weir_loop_post(cx->main, &s->done);
        return;
    }
    if (s->sp->ckpt)
        ckpt_attach(s->sp->ckpt, s);
    if (s->sp->ckset)
        ckpt_set_attach(s->sp->ckset, s);
    weir_workers_post(cx->workers, h->worker, &h->start);
}

void stream_stop(struct stream *s)
{
    if (s->stop_posted || s->done_seen)
        return;
    s->stop_posted = true;
    weir_workers_post(s->cx->workers, s->home.worker, &s->home.stop);
}

unsigned stream_cut(struct stream *s)
{
    unsigned cut = 0;

    /* On the workers: socket sinks give up, so that one still connecting
     * or waiting to retry does not hold the stream past the cut. */
    if (!s->cut_posted && !s->done_seen) {
        s->cut_posted = true;
        s->cuts_out++;
        weir_workers_post(s->cx->workers, s->home.worker, &s->home.cut);
        cut = 1;
    }
    /* Through the stream's own dup of the client's socket: the worker's
     * pending send or receive fails, and the stream ends through its
     * usual path, freeing what it holds. */
    if (s->kill_fd < 0)
        return cut;
    shutdown(s->kill_fd, SHUT_RDWR);
    /* A relayed stream's upstream too: an idle one would keep the
     * reverse direction waiting. */
    if (s->kill_up_fd >= 0)
        shutdown(s->kill_up_fd, SHUT_RDWR);
    return 1;
}

int stream_error(const struct stream *s)
{
    int cut = 0;
    unsigned kept = 0;

    /* A sink its policy cut loose did what the operator asked: the
     * stream failed only if no sink was kept. */
    for (unsigned i = 0; i < s->sp->nsinks; i++) {
        if (stream_sink_cut(s, i)) {
            cut = cut ? cut : s->sink_rc[i];
            continue;
        }
        kept++;
        if (s->sink_rc[i] < 0)
            return s->sink_rc[i];
    }
    if (s->src_rc < 0)
        return s->src_rc;
    return kept ? 0 : cut;
}

unsigned stream_worker(const struct stream *s)
{
    return s->home.worker;
}

void stream_set_via(struct stream *s, const struct weir_address *via)
{
    s->via = via;
}

void stream_set_quiet(struct stream *s)
{
    s->quiet = true;
}

bool stream_quiet(const struct stream *s)
{
    return s->quiet;
}

void stream_set_carried(struct stream *s, const struct http_parked *pc)
{
    s->t_start_ns = pc->started_ns;
    s->carried_bytes = pc->bytes;
    s->carried_requests = pc->requests;
    s->carried_idle_since = pc->idle_since;
}

uint64_t stream_carried_bytes(const struct stream *s)
{
    return s->carried_bytes;
}

struct weir_list *stream_link(struct stream *s)
{
    return &s->link;
}

struct stream *stream_of_link(const struct weir_list *node)
{
    return weir_list_entry(node, struct stream, link);
}
