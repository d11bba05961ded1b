/*
 * wpt.h - what the ports of the WPT streams tests share: a recording
 * source and sink whose calls the tests read back as one line of events,
 * string chunks, and recorders for completions.
 *
 * The WPT files are JavaScript, driven by promises; here a promise is a
 * completion callback (weir/stream_types.h) and "later" is the point in
 * the test where the test itself finishes a pending operation. Everything
 * runs on the test's one thread, so "flush async events" has no
 * counterpart: what would happen has happened when a call returns.
 *
 * Each test carries the WPT file and title it ports in a comment, and the
 * title is the test's name in the cmocka table (WPT()).
 */
#ifndef WEIR_TESTS_WPT_H
#define WEIR_TESTS_WPT_H

#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <errno.h>
#include <cmocka.h>

#include "weir/stream.h"

/* The tests' error1 and error2: any negative code the core passes on. */
#define E1 (-1001)
#define E2 (-1002)

/* A cmocka test named by its WPT title. */
#define WPT(fn, title)                                                         \
    {                                                                          \
        title, fn, NULL, NULL, NULL                                            \
    }

/* A chunk of a C string (no buffer: the literal outlives the stream). */
static inline struct weir_chunk S(const char *s) {
    return (struct weir_chunk){NULL, (uint8_t *)s, (uint32_t)strlen(s)};
}

/* Whether chunk c holds exactly the bytes of s. */
static inline bool
chunk_is(struct weir_chunk c, const char *s)
{
    return c.len == strlen(s) && memcmp(c.data, s, c.len) == 0;
}

/* One line of events, "write:a close abort:-1001". */
struct evlog {
    char s[2048];
};

__attribute__((format(printf, 2, 3))) static inline void
ev_add(struct evlog *l, const char *fmt, ...)
{
    size_t n = strlen(l->s);
    va_list ap;

    if (n && n < sizeof(l->s) - 1)
        l->s[n++] = ' ';
    va_start(ap, fmt);
    vsnprintf(l->s + n, sizeof(l->s) - n, fmt, ap);
    va_end(ap);
}

/*
 * The recording source. Each underlying-source call is logged ("pull",
 * "cancel:R") and answered from the fields: start_rc / pull_rc /
 * cancel_rc, or a hook when the test needs the call to do something.
 * `nopull` logs the same events without the pulls (the WPT's
 * eventsWithoutPulls).
 */
struct rsrc {
    struct weir_readable *rs;
    struct evlog ev, nopull;
    int start_rc, pull_rc, cancel_rc;
    int starts, pulls, cancels, cancel_reason;
    int (*on_start)(struct rsrc *s);
    int (*on_pull)(struct rsrc *s);
    int (*on_cancel)(struct rsrc *s, int reason);
    void *user;
    int n; /* free for hooks */
};

static inline int rsrc_start(struct weir_readable *rs, void *ctx)
{
    struct rsrc *s = ctx;

    s->rs = rs;
    s->starts++;
    return s->on_start ? s->on_start(s) : s->start_rc;
}

static inline int rsrc_pull(struct weir_readable *rs, void *ctx)
{
    struct rsrc *s = ctx;

    s->rs = rs;
    s->pulls++;
    ev_add(&s->ev, "pull");
    return s->on_pull ? s->on_pull(s) : s->pull_rc;
}

static inline int rsrc_cancel(struct weir_readable *rs, void *ctx, int reason)
{
    struct rsrc *s = ctx;

    s->rs = rs;
    s->cancels++;
    s->cancel_reason = reason;
    ev_add(&s->ev, "cancel:%d", reason);
    ev_add(&s->nopull, "cancel:%d", reason);
    return s->on_cancel ? s->on_cancel(s, reason) : s->cancel_rc;
}

__attribute__((unused)) static const struct weir_source_ops rsrc_ops = {
    .start = rsrc_start, .pull = rsrc_pull, .cancel = rsrc_cancel};

static inline struct weir_readable *rsrc_make(struct rsrc *s, size_t hwm,
                                              bool bytes_stream)
{
    struct weir_readable_options o = {.strategy = {.hwm = hwm},
                                      .byte_stream = bytes_stream};
    struct weir_readable *rs = NULL;

    assert_int_equal(weir_readable_create(&rs, &rsrc_ops, s, &o), 0);
    s->rs = rs;
    return rs;
}

/* The spec's default readable: count strategy, hwm 1. */
static inline struct weir_readable *rsrc_new(struct rsrc *s)
{
    return rsrc_make(s, 1, false);
}

/*
 * The recording sink: logs "write:DATA", "close", "abort:R" and answers
 * from write_rc / close_rc / abort_rc or a hook. A sink that answers
 * WEIR_PENDING leaves the operation to the test (weir_writable_*_done).
 */
struct rsink {
    struct weir_writable *ws;
    struct evlog ev;
    int start_rc, write_rc, close_rc, abort_rc;
    int writes, closes, aborts, abort_reason;
    int (*on_start)(struct rsink *k);
    int (*on_write)(struct rsink *k, struct weir_chunk c);
    int (*on_close)(struct rsink *k);
    int (*on_abort)(struct rsink *k, int reason);
    void *user;
    int n; /* free for hooks */
};

static inline int rsink_start(struct weir_writable *ws, void *ctx)
{
    struct rsink *k = ctx;

    k->ws = ws;
    return k->on_start ? k->on_start(k) : k->start_rc;
}

static inline int rsink_write(struct weir_writable *ws, void *ctx,
                              struct weir_chunk c)
{
    struct rsink *k = ctx;

    k->ws = ws;
    k->writes++;
    ev_add(&k->ev, "write:%.*s", (int)c.len, (const char *)c.data);
    return k->on_write ? k->on_write(k, c) : k->write_rc;
}

static inline int rsink_close(struct weir_writable *ws, void *ctx)
{
    struct rsink *k = ctx;

    k->ws = ws;
    k->closes++;
    ev_add(&k->ev, "close");
    return k->on_close ? k->on_close(k) : k->close_rc;
}

static inline int rsink_abort(struct weir_writable *ws, void *ctx, int reason)
{
    struct rsink *k = ctx;

    k->ws = ws;
    k->aborts++;
    k->abort_reason = reason;
    ev_add(&k->ev, "abort:%d", reason);
    return k->on_abort ? k->on_abort(k, reason) : k->abort_rc;
}

__attribute__((unused)) static const struct weir_sink_ops rsink_ops = {
    .start = rsink_start,
    .write = rsink_write,
    .close = rsink_close,
    .abort = rsink_abort};

static inline struct weir_writable *rsink_make(struct rsink *k, size_t hwm)
{
    struct weir_writable_options o = {.strategy = {.hwm = hwm}};
    struct weir_writable *ws = NULL;

    assert_int_equal(weir_writable_create(&ws, &rsink_ops, k, &o), 0);
    k->ws = ws;
    return ws;
}

/* The spec's default writable: count strategy, hwm 1. */
static inline struct weir_writable *rsink_new(struct rsink *k)
{
    return rsink_make(k, 1);
}

/* A completion recorder: how often, the last result, and (for reads) the
 * chunk; `order` is a shared counter stamped into `at`, so a test can see
 * in what order several completions came. */
struct done {
    int calls, rc;
    struct weir_chunk chunk;
    int at;
    int *order;
    char text[64]; /* a read's bytes, as a string */
};

static inline void done_cb(void *ctx, int rc)
{
    struct done *d = ctx;

    d->calls++;
    d->rc = rc;
    if (d->order)
        d->at = ++*d->order;
}

static inline void read_cb(void *ctx, int rc, struct weir_chunk chunk)
{
    struct done *d = ctx;
    size_t n =
        chunk.len < sizeof(d->text) - 1 ? chunk.len : sizeof(d->text) - 1;

    d->calls++;
    d->rc = rc;
    d->chunk = chunk;
    if (chunk.data && n)
        memcpy(d->text, chunk.data, n);
    d->text[chunk.data ? n : 0] = '\0';
    if (d->order)
        d->at = ++*d->order;
}

/* A read callback that must never run. */
__attribute__((unused)) static void never_read(void *ctx, int rc,
                                               struct weir_chunk c)
{
    (void)ctx;
    (void)rc;
    (void)c;
    fail_msg("a read that must not complete completed");
}

/* Reads once, synchronously; returns the result and stores the bytes as a
 * string in out (when given). */
static inline int read_now(struct weir_reader *r, char *out, size_t cap)
{
    struct weir_chunk c = {0};
    int rc = weir_reader_read(r, &c, never_read, NULL);

    if (rc == 0 && out) {
        size_t n = c.len < cap - 1 ? c.len : cap - 1;

        memcpy(out, c.data, n);
        out[n] = '\0';
    }
    return rc;
}

/* Asserts that the next read returns chunk s at once. */
#define assert_read(r, s)                                                      \
    do {                                                                       \
        char got_[256];                                                        \
        assert_int_equal(read_now((r), got_, sizeof(got_)), 0);                \
        assert_string_equal(got_, (s));                                        \
    } while (0)

/* What a pipe prevents (weir_pipe_options), as bits. */
enum { P_CLOSE = 1, P_ABORT = 2, P_CANCEL = 4 };

/* Starts a pipe; its result lands in d whether it finished at once or
 * later. */
static inline void pipe_go(struct weir_readable *rs, struct weir_writable *ws,
                           unsigned prevent, struct done *d)
{
    struct weir_pipe_options o = {.prevent_close = prevent & P_CLOSE,
                                  .prevent_abort = prevent & P_ABORT,
                                  .prevent_cancel = prevent & P_CANCEL};
    int rc = weir_pipe_to(rs, ws, &o, done_cb, d);

    if (rc != WEIR_PENDING)
        done_cb(d, rc);
}

/* A start hook that enqueues the strings in s->user (NULL-terminated)
 * and closes when s->n is set. */
static inline int start_enqueue(struct rsrc *s)
{
    const char *const *v = s->user;

    for (; v && *v; v++)
        weir_readable_enqueue(s->rs, S(*v));
    if (s->n)
        weir_readable_close(s->rs);
    return 0;
}

/* The stream's error (0 when not errored). */
static inline int rs_err(const struct weir_readable *rs)
{
    int e = 0;

    return weir_readable_errored(rs, &e) ? e : 0;
}

static inline int ws_err(const struct weir_writable *ws)
{
    int e = 0;

    return weir_writable_errored(ws, &e) ? e : 0;
}

/*
 * The recording transformer: logs "transform:DATA", "flush", "cancel:R";
 * by default passes each chunk through (the identity) and answers from
 * the *_rc fields, or from a hook.
 */
struct rtf {
    struct weir_transform *tf;
    struct evlog ev;
    int start_rc, transform_rc, flush_rc, cancel_rc;
    int transforms, flushes, cancels, cancel_reason;
    int (*on_start)(struct rtf *t);
    int (*on_transform)(struct rtf *t, struct weir_chunk c);
    int (*on_flush)(struct rtf *t);
    int (*on_cancel)(struct rtf *t, int reason);
    int n; /* free for hooks */
};

static inline int rtf_start(struct weir_transform *tf, void *ctx)
{
    struct rtf *t = ctx;

    t->tf = tf;
    return t->on_start ? t->on_start(t) : t->start_rc;
}

static inline int rtf_transform(struct weir_transform *tf, void *ctx,
                                struct weir_chunk c)
{
    struct rtf *t = ctx;

    t->tf = tf;
    t->transforms++;
    ev_add(&t->ev, "transform:%.*s", (int)c.len, (const char *)c.data);
    if (t->on_transform)
        return t->on_transform(t, c);
    weir_transform_enqueue(tf, c);
    return t->transform_rc;
}

static inline int rtf_flush(struct weir_transform *tf, void *ctx)
{
    struct rtf *t = ctx;

    t->tf = tf;
    t->flushes++;
    ev_add(&t->ev, "flush");
    return t->on_flush ? t->on_flush(t) : t->flush_rc;
}

static inline int rtf_cancel(struct weir_transform *tf, void *ctx, int reason)
{
    struct rtf *t = ctx;

    t->tf = tf;
    t->cancels++;
    t->cancel_reason = reason;
    ev_add(&t->ev, "cancel:%d", reason);
    return t->on_cancel ? t->on_cancel(t, reason) : t->cancel_rc;
}

/* With a start (so the transformer's start runs) and without. */
__attribute__((unused)) static const struct weir_transformer_ops rtf_ops = {
    .start = rtf_start,
    .transform = rtf_transform,
    .flush = rtf_flush,
    .cancel = rtf_cancel};

/* A transform with the spec's strategies (writable hwm 1, readable
 * rhwm), recording into t. */
static inline struct weir_transform *rtf_make(struct rtf *t, size_t whwm,
                                              size_t rhwm)
{
    struct weir_transform_options o = {.writable = {.hwm = whwm},
                                       .readable = {.hwm = rhwm}};

    assert_int_equal(weir_transform_create(&t->tf, &rtf_ops, t, &o), 0);
    return t->tf;
}

#endif /* WEIR_TESTS_WPT_H */
