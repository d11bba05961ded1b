/*
 * checkpoint.c - see checkpoint.h.
 *
 * The file, dir/pipeline-NAME.ckpt, is text (sys/ckpt_text.h).
 * A file is the checkpointed one when its device, inode and first bytes
 * all match: an inode number reused by a new file has other first bytes
 * (or fewer than the offset), and is then read from its start.
 */
#include "stream/checkpoint.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "stream/stream_impl.h"
#include "sys/log.h"
#include "sys/statefile.h"

/* Files looked at in the followed file's directory for a rotated one. */
#define SCAN_MAX 10000

struct ckpt {
    struct weir_loop *main;
    struct alive *hold;
    const struct weir_pipeline *p;
    const struct stream_sink_res *res;
    char *dir;
    char name[3 * CONF_MAX_NAME + 16];
    uint64_t interval_ns;
    struct ckpt_rec saved; /* what the file holds */
    struct ckpt_rec rec;   /* the newest known */
    struct stream *s;      /* sampling into rec */
    struct weir_timer timer;
    bool failing; /* the last write failed (warned once) */
    bool freed;
};

/* Checkpoint writes that failed, of every pipeline (main thread). */
static uint64_t write_failures;

void ckpt_write_failed(void)
{
    write_failures++;
}

uint64_t ckpt_write_failures(void)
{
    return write_failures;
}

/* Main thread. The stream's latest sample; false when there is none or
 * the worker was writing it. */
static bool slot_read(struct ckpt_slot *sl, struct ckpt_rec *rec)
{
    uint64_t w[CKPT_WORDS];

    for (int tries = 0; tries < 4; tries++) {
        /* Acquire: pairs with the worker's release of the even count,
         * so the words read below are at least that sample's. */
        uint32_t q = atomic_load_explicit(&sl->seq, memory_order_acquire);

        if (q == 0)
            return false;
        if (q & 1)
            continue;
        /* Acquire: pairs with the worker's release stores of the words,
         * so a word of a later write brings its odd count along, and the
         * count's re-read below cannot move before these loads. */
        for (int i = 0; i < CKPT_WORDS; i++)
            w[i] = atomic_load_explicit(&sl->w[i], memory_order_acquire);
        /* Still q: no write overlapped the loads. */
        if (atomic_load_explicit(&sl->seq, memory_order_relaxed) != q)
            continue;
        rec->valid = true;
        rec->dev = w[0];
        rec->ino = w[1];
        rec->off = w[2];
        rec->head_len = (uint32_t)w[3];
        if (rec->head_len > sizeof(rec->head))
            rec->head_len = sizeof(rec->head);
        memcpy(rec->head, &w[4], sizeof(rec->head));
        return true;
    }
    return false;
}

/* Worker. One writer: the stream's sinks' worker. */
static void slot_write(struct ckpt_slot *sl,
                       const struct weir_file_position *pos, uint64_t off)
{
    uint64_t w[CKPT_WORDS] = {pos->dev, pos->ino, off, pos->head_len};
    uint32_t q = atomic_load_explicit(&sl->seq, memory_order_relaxed);

    memcpy(&w[4], pos->head, sizeof(pos->head));
    atomic_store_explicit(&sl->seq, q + 1, memory_order_relaxed);
    /* Release: each word carries the odd count before it, so a reader
     * that loads a new word (acquire) sees the count moved. */
    for (int i = 0; i < CKPT_WORDS; i++)
        atomic_store_explicit(&sl->w[i], w[i], memory_order_release);
    /* Release: publishes the words with the even count (pairs with the
     * reader's acquire load of it). */
    atomic_store_explicit(&sl->seq, q + 2, memory_order_release);
}

static bool rec_same(const struct ckpt_rec *a, const struct ckpt_rec *b)
{
    return a->valid == b->valid && a->dev == b->dev && a->ino == b->ino &&
           a->off == b->off && a->head_len == b->head_len &&
           memcmp(a->head, b->head, a->head_len) == 0;
}

void ckpt_state_name(const char *pipeline, const char *ext, char *out,
                     size_t size)
{
    size_t n = (size_t)snprintf(out, size, "pipeline-");

    for (const unsigned char *c = (const unsigned char *)pipeline;
         *c && n + 4 < size; c++) {
        if ((*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') ||
            (*c >= '0' && *c <= '9') || *c == '.' || *c == '_' || *c == '-')
            out[n++] = (char)*c;
        else
            n += (size_t)snprintf(out + n, size - n, "%%%02X", *c);
    }
    snprintf(out + n, size - n, "%s", ext);
}

/* The text a checkpoint file may hold: its path escaped, and the rest. */
#define CKPT_READ_MAX CKPT_TEXT_MAX(PATH_MAX)

/* Reads the pipeline's checkpoint into ck->saved; what is not a usable
 * one is said and left alone. */
static void load(struct ckpt *ck)
{
    const char *dir = ck->dir, *name = ck->p->name;
    char *text = malloc(CKPT_READ_MAX), *other = NULL;
    int n;

    if (!text) {
        log_warnx("pipeline %s: out of memory reading its checkpoint", name);
        return;
    }
    n = statefile_read(dir, ck->name, text, CKPT_READ_MAX);
    if (n == -EFTYPE_STATE) {
        log_warnx("pipeline %s: %s/%s is not a regular file; not used, and "
                  "checkpoints will not be written until it is removed",
                  name, dir, ck->name);
    } else if (n < 0 && n != -ENOENT) {
        log_warnx("pipeline %s: cannot read the checkpoint %s/%s: %s", name,
                  dir, ck->name, strerror(-n));
    } else if (n >= 0) {
        switch (
            ckpt_text_parse(text, ck->p->source->path, &ck->saved, &other)) {
        case CKPT_TEXT_OK:
            break;
        case CKPT_TEXT_OTHER:
            log_info("pipeline %s: the checkpoint in %s/%s is for %s, not "
                     "for %s; not used",
                     name, dir, ck->name, other, ck->p->source->path);
            break;
        case CKPT_TEXT_BAD:
            log_warnx("pipeline %s: %s/%s is not a checkpoint weir wrote; "
                      "ignoring it",
                      name, dir, ck->name);
            break;
        }
    }
    free(other);
    free(text);
}

struct ckpt *ckpt_new(struct weir_loop *main, struct alive *hold,
                      const struct weir_pipeline *p, const char *dir,
                      uint64_t interval_ms, const struct stream_sink_res *res)
{
    struct ckpt *ck = calloc(1, sizeof(*ck));

    if (!ck || !(ck->dir = strdup(dir))) {
        free(ck);
        return NULL;
    }
    ck->main = main;
    ck->hold = hold;
    ck->p = p;
    ck->res = res;
    ck->interval_ns = interval_ms * 1000000ull;
    ckpt_state_name(p->name, ".ckpt", ck->name, sizeof(ck->name));
    load(ck);
    ck->rec = ck->saved;
    return ck;
}

/* Whether fd is rec's file, with at least rec->off bytes. */
static bool rec_matches(const struct ckpt_rec *rec, int fd)
{
    uint8_t head[sizeof(rec->head)];
    struct stat st;

    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) ||
        (uint64_t)st.st_dev != rec->dev || (uint64_t)st.st_ino != rec->ino ||
        (uint64_t)st.st_size < rec->off)
        return false;
    return rec->head_len == 0 ||
           (pread(fd, head, rec->head_len, 0) == (ssize_t)rec->head_len &&
            memcmp(head, rec->head, rec->head_len) == 0);
}

/* rec's file under another name in dir (renamed by a rotation), or -1. */
static int find_rotated(const struct ckpt_rec *rec, const char *path,
                        char *found, size_t size)
{
    char dir[4096];
    const char *slash = strrchr(path, '/');
    struct dirent *e;
    unsigned looked = 0;
    int fd = -1;
    DIR *d;

    if (!slash)
        return -1;
    snprintf(dir, sizeof(dir), "%.*s", (int)(slash - path), path);
    d = opendir(dir[0] ? dir : "/");
    if (!d)
        return -1;
    while (fd < 0 && looked++ < SCAN_MAX && (e = readdir(d)) != NULL) {
        struct stat st;

        if (e->d_ino != rec->ino ||
            fstatat(dirfd(d), e->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0 ||
            (uint64_t)st.st_dev != rec->dev || (uint64_t)st.st_ino != rec->ino)
            continue;
        fd = openat(dirfd(d), e->d_name, O_RDONLY | O_CLOEXEC);
        if (fd >= 0 && !rec_matches(rec, fd)) {
            close(fd);
            fd = -1;
        } else if (fd >= 0) {
            snprintf(found, size, "%s/%s", dir, e->d_name);
        }
    }
    closedir(d);
    return fd;
}

int ckpt_open(struct ckpt *ck, uint64_t *offset)
{
    const char *path = ck->p->source->path, *name = ck->p->name;
    const struct ckpt_rec *rec = &ck->rec;
    char other[4096 + 256];
    struct stat st;
    int fd = open(path, O_RDONLY | O_CLOEXEC), old, err = errno;

    *offset = 0;
    if (!rec->valid) {
        if (fd >= 0 && ck->p->read_from_end && fstat(fd, &st) == 0)
            *offset = (uint64_t)st.st_size;
        return fd >= 0 ? fd : -err;
    }
    if (fd >= 0 && rec_matches(rec, fd)) {
        *offset = rec->off;
        log_info("pipeline %s: %s: resuming at byte %" PRIu64
                 " (its checkpoint)",
                 name, path, rec->off);
        return fd;
    }
    old = find_rotated(rec, path, other, sizeof(other));
    if (old >= 0) {
        *offset = rec->off;
        log_info("pipeline %s: %s was rotated since its checkpoint: resuming "
                 "%s at byte %" PRIu64 ", then %s from its start",
                 name, path, other, rec->off, path);
        if (fd >= 0)
            close(fd);
        return old;
    }
    log_info("pipeline %s: %s is not the file checkpointed (device %" PRIu64
             ", inode %" PRIu64 "), which is gone: reading %s from its start",
             name, path, rec->dev, rec->ino, path);
    return fd >= 0 ? fd : -err;
}

int ckpt_sync_sinks(const struct weir_pipeline *p,
                    const struct stream_sink_res *res)
{
    int rc = 0;

    for (size_t i = 0; i < p->nsinks; i++)
        if (p->sinks[i]->kind == ADDR_FILE && res[i].file_fd >= 0 &&
            fdatasync(res[i].file_fd) != 0 && rc == 0 && errno != EINVAL)
            rc = -errno;
    return rc;
}

static void save(struct ckpt *ck)
{
    const char *path = ck->p->source->path;
    size_t size = CKPT_TEXT_MAX(strlen(path)), n;
    char *text;
    int rc;

    if (!ck->rec.valid || rec_same(&ck->rec, &ck->saved))
        return;
    rc = ckpt_sync_sinks(ck->p, ck->res);
    if (rc == 0 && (text = malloc(size)) == NULL)
        rc = -ENOMEM;
    if (rc == 0) {
        n = ckpt_text_format(&ck->rec, path, text, size);
        rc = statefile_write(ck->dir, ck->name, text, n);
        free(text);
    }
    if (rc == 0) {
        ck->saved = ck->rec;
        if (ck->failing)
            log_info("pipeline %s: checkpoints are written again to %s",
                     ck->p->name, ck->dir);
        ck->failing = false;
        return;
    }
    if (!ck->failing)
        log_warnx("pipeline %s: cannot write its checkpoint in %s: %s; "
                  "shipping goes on, but a restart resends what was sent "
                  "since the last checkpoint written (one line when it "
                  "works again)",
                  ck->p->name, ck->dir,
                  rc == -EFTYPE_STATE ? "something other than a regular "
                                        "file is at its name"
                                      : strerror(-rc));
    ck->failing = true;
    ckpt_write_failed();
}

static void take_sample(struct ckpt *ck)
{
    struct ckpt_rec r;

    if (ck->s && slot_read(&ck->s->ck_track.slot, &r))
        ck->rec = r;
}

static void tick(struct weir_op *op, int res, uint32_t flags)
{
    struct ckpt *ck = weir_container_of(op, struct ckpt, timer.op);

    (void)res;
    (void)flags;
    if (ck->freed) {
        alive_drop(ck->hold);
        free(ck->dir);
        free(ck);
        return;
    }
    take_sample(ck);
    save(ck);
    if (ck->s &&
        weir_loop_timer_start(ck->main, &ck->timer, ck->interval_ns) == 0)
        return;
    alive_drop(ck->hold);
}

void ckpt_attach(struct ckpt *ck, struct stream *s)
{
    ck->s = s;
    if (!ck->timer.op.pending) {
        ck->timer.op.fn = tick;
        if (weir_loop_timer_start(ck->main, &ck->timer, ck->interval_ns) == 0)
            alive_hold(ck->hold);
    }
}

void ckpt_stream_done(struct ckpt *ck, struct stream *s)
{
    if (ck->s != s)
        return;
    take_sample(ck);
    ck->s = NULL;
    save(ck);
    if (ck->timer.op.pending)
        weir_loop_timer_stop(ck->main, &ck->timer); /* tick lets go */
}

void ckpt_free(struct ckpt *ck)
{
    if (!ck)
        return;
    save(ck);
    if (ck->timer.op.pending) {
        ck->freed = true;
        weir_loop_timer_stop(ck->main, &ck->timer);
        return;
    }
    free(ck->dir);
    free(ck);
}

/* Worker side. */

void ckpt_file_left(struct stream *s)
{
    struct ckpt_track *t = &s->ck_track;
    struct weir_file_position pos;

    if (!s->sp->ckpt || !s->home.src ||
        weir_endpoint_file_position(s->home.src, &pos) != 0)
        return;
    if (t->nseg == CKPT_SEGS) {
        memmove(&t->seg[0], &t->seg[1], sizeof(t->seg[0]) * (CKPT_SEGS - 1));
        t->nseg--;
    }
    t->seg[t->nseg++] = pos;
}

/* Whether sink i's queue is empty. */
static bool sink_idle(struct stream *s, unsigned i)
{
    return weir_writable_desired_size(weir_endpoint_writable(
               s->home.sinks[i])) >= (int64_t)stream_sink_hwm(s->sp->p, i);
}

/*
 * The source bytes every block sink has, or false when that cannot be
 * told now. Without transforms a sink's stream is the source's, byte for
 * byte. With them it is not, so only a stream at rest counts: the
 * transforms synced after the source's last byte (watch.c), every block
 * sink's queue empty and all it took acknowledged, and nothing more for
 * the sinks since the previous sample (what the syncs pushed out has
 * arrived); then every source byte is out.
 */
bool ckpt_acked_source(struct stream *s, bool final, uint64_t *acked)
{
    struct stream_home *h = &s->home;
    const struct weir_pipeline *p = s->sp->p;
    uint64_t in = weir_endpoint_bytes(h->src), min = in, a, sent = 0;
    struct ckpt_track *t = &s->ck_track;

    for (unsigned i = 0; i < s->sp->nsinks; i++) {
        if (p->sinks[i]->on_full != ON_FULL_BLOCK)
            continue;
        if (!h->sinks[i] || weir_endpoint_acked(h->sinks[i], &a) != 0)
            return false;
        sent += weir_endpoint_bytes(h->sinks[i]);
        if (p->ntransforms && (a != weir_endpoint_bytes(h->sinks[i]) ||
                               (!final && !sink_idle(s, i)))) {
            t->rest = 0;
            return false;
        }
        if (a < min)
            min = a;
    }
    if (p->ntransforms && !final) {
        if (h->synced_bytes != in || sent != t->rest_out) {
            t->rest = 0;
            t->rest_out = sent;
            return false;
        }
        if (t->rest++ < 1)
            return false;
    }
    *acked = p->ntransforms ? in : min;
    return true;
}

bool ckpt_acks_pending(struct stream *s)
{
    struct stream_home *h = &s->home;
    const struct weir_pipeline *p = s->sp->p;
    uint64_t a;

    if ((!s->sp->ckpt && !s->sp->ckset) || !h->sinks)
        return false;
    for (unsigned i = 0; i < s->sp->nsinks; i++)
        /* Relaxed: the state is this worker's own. */
        if (p->sinks[i]->kind == ADDR_TCP && h->sinks[i] &&
            p->sinks[i]->on_full == ON_FULL_BLOCK && s->sink_rc[i] == 0 &&
            atomic_load_explicit(&s->live[i].state, memory_order_relaxed) ==
                SINK_UP &&
            weir_endpoint_acked(h->sinks[i], &a) == 0 &&
            a < weir_endpoint_bytes(h->sinks[i]))
            return true;
    return false;
}

void ckpt_sample(struct stream *s, bool final)
{
    struct stream_home *h = &s->home;
    struct ckpt_track *t = &s->ck_track;
    struct weir_file_position cur;
    const struct weir_file_position *pos = &cur;
    uint64_t a;

    if (!s->sp->ckpt || !h->src || !h->sinks ||
        !ckpt_acked_source(s, final, &a) ||
        weir_endpoint_file_position(h->src, &cur) != 0)
        return;
    /* The newest file whose start is at or before a. */
    for (unsigned k = t->nseg; (int64_t)a < pos->start; k--) {
        if (k == 0)
            return; /* further back than the files remembered */
        pos = &t->seg[k - 1];
    }
    slot_write(&t->slot, pos, (uint64_t)((int64_t)a - pos->start));
}
