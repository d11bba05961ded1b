/*
 * checkpoint_set.c - see checkpoint_set.h.
 */
#include "stream/checkpoint_set.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "stream/stream_impl.h"
#include "sys/ckpt_set_text.h"
#include "sys/clock.h"
#include "sys/log.h"
#include "sys/statefile.h"

/* The most a checkpoint file is read at a start: a line is about 200
 * bytes and a path, so 10,000 files of long names fit. */
#define SET_READ_MAX (64u << 20)

struct ckpt_set {
    struct weir_loop *main;
    struct alive *hold;
    const struct weir_pipeline *p;
    const struct stream_sink_res *res;
    char *dir;
    char name[3 * CONF_MAX_NAME + 16];
    uint64_t interval_ns;
    /* Read at the start, before the stream is posted to its worker (the
     * post orders these writes before the worker's reads); never
     * changed after, so the worker's resume reads them freely. */
    struct ckpt_set_entry *saved;
    size_t nsaved;
    /* The worker's newest text that the main loop has not taken. */
    _Atomic(char *) mail;
    char *pending; /* taken, not written yet (the last write failed) */
    struct stream *s;
    struct weir_timer timer;
    bool failing; /* warned once, until a write works again */
    bool freed;
};

static void load(struct ckpt_set *cs)
{
    const char *name = cs->p->name;
    char *text = malloc(SET_READ_MAX);
    int n;

    if (!text) {
        log_warnx("pipeline %s: out of memory reading its checkpoints", name);
        return;
    }
    n = statefile_read(cs->dir, cs->name, text, SET_READ_MAX);
    if (n == -EFTYPE_STATE)
        log_warnx("pipeline %s: %s/%s is not a regular file; not used, and "
                  "checkpoints will not be written until it is removed",
                  name, cs->dir, cs->name);
    else if (n < 0 && n != -ENOENT)
        log_warnx("pipeline %s: cannot read the checkpoints %s/%s: %s", name,
                  cs->dir, cs->name, strerror(-n));
    else if (n >= 0 && (n = ckpt_set_text_parse(text, &cs->saved)) < 0)
        log_warnx("pipeline %s: %s/%s is not a checkpoint file weir wrote%s; "
                  "ignoring it",
                  name, cs->dir, cs->name,
                  n == -ENOMEM ? " (or out of memory)" : "");
    else if (n > 0) {
        cs->nsaved = (size_t)n;
        log_info("pipeline %s: %zu files' checkpoints read from %s/%s", name,
                 cs->nsaved, cs->dir, cs->name);
    }
    free(text);
}

struct ckpt_set *ckpt_set_new(struct weir_loop *main, struct alive *hold,
                              const struct weir_pipeline *p, const char *dir,
                              uint64_t interval_ms,
                              const struct stream_sink_res *res)
{
    struct ckpt_set *cs = calloc(1, sizeof(*cs));

    if (!cs || !(cs->dir = strdup(dir))) {
        free(cs);
        return NULL;
    }
    cs->main = main;
    cs->hold = hold;
    cs->p = p;
    cs->res = res;
    cs->interval_ns = interval_ms * 1000000ull;
    atomic_init(&cs->mail, NULL);
    ckpt_state_name(p->name, ".files", cs->name, sizeof(cs->name));
    load(cs);
    return cs;
}

/* Main thread. The newest text, written when there is one. */
static void save(struct ckpt_set *cs)
{
    /* Acquire: pairs with the worker's release in its exchange, so the
     * text's bytes are seen whole. Release: nothing to publish here; the
     * worker never reads the NULL's surroundings. */
    char *text =
        atomic_exchange_explicit(&cs->mail, NULL, memory_order_acq_rel);
    int rc;

    if (text) {
        free(cs->pending);
        cs->pending = text;
    }
    if (!cs->pending)
        return;
    rc = ckpt_sync_sinks(cs->p, cs->res);
    if (rc == 0)
        rc = statefile_write(cs->dir, cs->name, cs->pending,
                             strlen(cs->pending));
    if (rc == 0) {
        free(cs->pending);
        cs->pending = NULL;
        if (cs->failing)
            log_info("pipeline %s: checkpoints are written again to %s",
                     cs->p->name, cs->dir);
        cs->failing = false;
        return;
    }
    if (!cs->failing)
        log_warnx("pipeline %s: cannot write its checkpoints in %s: %s; "
                  "shipping goes on, but a restart resends what was sent "
                  "since the last checkpoint written (one line when it "
                  "works again)",
                  cs->p->name, cs->dir,
                  rc == -EFTYPE_STATE ? "something other than a regular "
                                        "file is at its name"
                                      : strerror(-rc));
    cs->failing = true;
    ckpt_write_failed();
}

static void cs_release(struct ckpt_set *cs)
{
    free(atomic_exchange_explicit(&cs->mail, NULL, memory_order_acq_rel));
    free(cs->pending);
    ckpt_set_text_free(cs->saved, cs->nsaved);
    free(cs->dir);
    free(cs);
}

static void tick(struct weir_op *op, int res, uint32_t flags)
{
    struct ckpt_set *cs = weir_container_of(op, struct ckpt_set, timer.op);

    (void)res;
    (void)flags;
    if (cs->freed) {
        alive_drop(cs->hold);
        cs_release(cs);
        return;
    }
    save(cs);
    if (cs->s &&
        weir_loop_timer_start(cs->main, &cs->timer, cs->interval_ns) == 0)
        return;
    alive_drop(cs->hold);
}

void ckpt_set_attach(struct ckpt_set *cs, struct stream *s)
{
    cs->s = s;
    if (!cs->timer.op.pending) {
        cs->timer.op.fn = tick;
        if (weir_loop_timer_start(cs->main, &cs->timer, cs->interval_ns) == 0)
            alive_hold(cs->hold);
    }
}

void ckpt_set_stream_done(struct ckpt_set *cs, struct stream *s)
{
    if (cs->s != s)
        return;
    cs->s = NULL;
    save(cs);
    if (cs->timer.op.pending)
        weir_loop_timer_stop(cs->main, &cs->timer); /* tick lets go */
}

void ckpt_set_free(struct ckpt_set *cs)
{
    if (!cs)
        return;
    save(cs);
    if (cs->timer.op.pending) {
        cs->freed = true;
        weir_loop_timer_stop(cs->main, &cs->timer);
        return;
    }
    cs_release(cs);
}

/* Worker side. */

/*
 * A file first seen: its entry by fingerprint (of as many bytes), the
 * one of the same device and inode first when several share it (a copy
 * of a file has its first bytes). A file too short for a fingerprint
 * then and now is found by device and inode alone. An offset past the
 * file's end is not trusted (another file under a reused inode): the
 * file set then reads it as a file never seen.
 */
bool ckpt_set_resume(void *arg, const struct weir_file_set_file *f,
                     uint64_t *offset)
{
    const struct ckpt_set *cs = arg;
    const struct ckpt_set_entry *best = NULL;

    for (size_t i = 0; i < cs->nsaved; i++) {
        const struct ckpt_set_entry *e = &cs->saved[i];
        bool inode = e->dev == f->dev && e->ino == f->ino;

        if (f->fingerprint != 0 &&
            (e->fp != f->fingerprint || e->fplen != f->fingerprint_len))
            continue;
        if (f->fingerprint == 0 && (e->fp != 0 || !inode))
            continue;
        if (!best || inode) {
            best = e;
            if (inode)
                break;
        }
    }
    if (!best || best->offset > f->size)
        return false;
    *offset = best->offset;
    return true;
}

size_t ckpt_set_known(const struct ckpt_set *cs,
                      struct weir_file_set_file **out)
{
    struct weir_file_set_file *v;

    *out = NULL;
    if (!cs || cs->nsaved == 0 || !(v = calloc(cs->nsaved, sizeof(*v))))
        return 0;
    for (size_t i = 0; i < cs->nsaved; i++) {
        const struct ckpt_set_entry *e = &cs->saved[i];

        v[i] = (struct weir_file_set_file){
            .path = e->path,
            .dev = e->dev,
            .ino = e->ino,
            .fingerprint = e->fp,
            .fingerprint_len = e->fplen,
            .acked = e->offset,
        };
    }
    *out = v;
    return cs->nsaved;
}

struct writer {
    char *buf;
    size_t len, size;
    time_t now;
    const struct ckpt_set_lines *old; /* NULL: every line made anew */
    struct ckpt_set_line *v;          /* this text's lines */
    size_t n, cap_v;
    bool failed;
};

static bool writer_room(struct writer *w, size_t need)
{
    size_t size;
    char *b;

    if (w->size - w->len >= need)
        return true;
    size = w->size * 2 > w->len + need ? w->size * 2 : w->len + need;
    b = realloc(w->buf, size);
    if (!b)
        return false;
    w->buf = b;
    w->size = size;
    return true;
}

static int write_file(void *arg, const struct weir_file_set_file *f)
{
    struct writer *w = arg;
    const struct ckpt_set_line *was =
        w->old && w->n < w->old->n ? &w->old->v[w->n] : NULL;
    struct ckpt_set_entry e = {
        .fp = f->fingerprint,
        .fplen = f->fingerprint_len,
        .dev = f->dev,
        .ino = f->ino,
        .offset = f->acked,
        .written = w->now,
        .path = (char *)f->path,
    };
    size_t at = w->len;

    if (w->n == w->cap_v) {
        size_t cap = w->cap_v ? w->cap_v * 2 : 256;
        struct ckpt_set_line *v = realloc(w->v, cap * sizeof(*v));

        if (!v)
            goto fail;
        w->v = v;
        w->cap_v = cap;
    }
    if (was && was->acked == f->acked) {
        /* Not moved: its line as it was, with the time it was written. */
        if (!writer_room(w, was->len + 1))
            goto fail;
        memcpy(w->buf + w->len, w->old->text + was->off, was->len);
        w->len += was->len;
    } else {
        if (!writer_room(w, CKPT_SET_LINE_MAX(strlen(f->path)) + 1))
            goto fail;
        w->len += ckpt_set_text_line(&e, w->buf + w->len, w->size - w->len);
    }
    w->v[w->n++] = (struct ckpt_set_line){at, w->len - at, f->acked};
    return 0;
fail:
    w->failed = true;
    return 1;
}

/* Keeps the lines of the text just made (from `from` in w->buf on) for
 * the next one; false when there is no memory for them. */
static bool keep_lines(struct ckpt_set_lines *k, struct writer *w, size_t from)
{
    size_t len = w->len - from;

    if (k->cap < len) {
        char *b = realloc(k->text, len);

        if (!b)
            return false;
        k->text = b;
        k->cap = len;
    }
    memcpy(k->text, w->buf + from, len);
    k->len = len;
    for (size_t i = 0; i < w->n; i++)
        w->v[i].off -= from;
    free(k->v);
    k->v = w->v;
    k->n = w->n;
    k->cap_v = w->cap_v;
    w->v = NULL;
    return true;
}

void ckpt_set_lines_free(struct ckpt_set_lines *k)
{
    free(k->text);
    free(k->v);
    memset(k, 0, sizeof(*k));
}

void ckpt_set_sample(struct stream *s, bool final)
{
    struct stream_home *h = &s->home;
    struct ckpt_track *t = &s->ck_track;
    struct ckpt_set *cs = s->sp->ckset;
    struct weir_file_set_changes ch;
    struct writer w;
    bool named;
    uint64_t a;
    size_t head;
    int64_t now;

    if (!s->src_set || !h->src)
        return;
    if (h->sinks && ckpt_acked_source(s, final, &a))
        weir_file_set_ack(h->src, a);
    if (!cs || weir_file_set_changes(h->src, &ch) != 0)
        return;
    /* The set says what moved since the last text, so thousands of idle
     * files are not walked while they rest. Offsets that moved wait for
     * the interval: the main loop writes one text per interval, one made
     * more often would be replaced unread, and a text costs a line per
     * file known. A file found, rotated or gone goes now: one born and
     * rotated away between two texts, with a kill -9 after, is a file no
     * checkpoint names. */
    now = clock_now_ns();
    named = !t->set_sent || ch.files != t->set_seen.files;
    if (!final && !named &&
        (ch.offsets == t->set_seen.offsets ||
         (uint64_t)(now - t->set_at) < cs->interval_ns))
        return;
    w = (struct writer){
        .now = time(NULL),
        .size = CKPT_SET_HEADER_MAX(strlen(s->sp->p->name)) + 4096,
        .old = named ? NULL : &t->set_lines,
    };
    w.buf = malloc(w.size);
    if (!w.buf)
        return; /* the next sample tries again */
    w.len = ckpt_set_text_header(s->sp->p->name, w.now, w.buf, w.size);
    head = w.len;
    if (weir_file_set_foreach(h->src, write_file, &w) != 0 || w.failed ||
        w.len == w.size) {
        free(w.buf);
        free(w.v);
        return;
    }
    w.buf[w.len] = '\0';
    if (!keep_lines(&t->set_lines, &w, head)) {
        /* Without them the next text makes every line anew. */
        ckpt_set_lines_free(&t->set_lines);
        free(w.v);
    }
    t->set_sent = true;
    t->set_at = now;
    t->set_seen = ch;
    if (!final && named)
        weir_loop_post(cs->main, &s->ck_save); /* names a new file */
    /* Release: the text's bytes, written above, are seen by the main
     * loop's acquire when it takes the pointer. Acquire: a text handed
     * back (the main loop did not take it) is this thread's own, freed
     * here. */
    free(atomic_exchange_explicit(&cs->mail, w.buf, memory_order_acq_rel));
}

/* Main loop. The stream is alive: its `done` is posted after this. */
void ckpt_set_save_task(struct weir_task *t)
{
    struct stream *s = weir_container_of(t, struct stream, ck_save);
    struct ckpt_set *cs = s->sp->ckset;

    if (cs && cs->s == s)
        save(cs);
}
