/*
 * test_xform_harness.h - runs bytes through a chain of transforms with the
 * stream core, the way a pipeline does, on the test's one thread:
 *
 *   source (chunks of assorted sizes) -> xform -> ... -> xform -> file sink
 *
 * The source hands out its input either as pool buffers it holds alone
 * (the case uppercase converts in place), as chunks outside any pool, or as
 * pool buffers it keeps a second reference to (a tee's case). The sink
 * writes every chunk to a file; with `hold` it keeps each write in flight
 * until the driver finishes it, so buffers stay out of the pool the way a
 * slow socket keeps them. The driver plays the event loop: it finishes
 * held writes and resumes parked transforms until nothing moves.
 */
#ifndef WEIR_TEST_XFORM_HARNESS_H
#define WEIR_TEST_XFORM_HARNESS_H

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <zlib.h>

#include "weir/stream.h"
#include "weir/xform.h"

enum feed_mode { FEED_POOL, FEED_EXTERNAL, FEED_SHARED };

struct feed {
    const uint8_t *data;
    size_t len, off;
    enum feed_mode mode;
    struct weir_pool *pool; /* FEED_POOL, FEED_SHARED */
    unsigned step;          /* picks the next chunk size */
    uint32_t max_chunk;     /* 0: no cap beyond the pool's buffers */
    uint32_t chunks;
    /* A live source going quiet: at pause_at bytes the pull parks until
     * feed_wake (0: never). */
    size_t pause_at;
    bool paused;
    struct weir_readable *rs;
    /* FEED_SHARED: the second references, dropped after the run, and the
     * bytes each chunk had when handed out. */
    struct weir_chunk kept[4096];
    uint32_t nkept;
};

/* Sizes that cross every boundary a transform has: tiny, odd, a page, a
 * whole buffer and one byte less, bigger than a buffer (external only). */
static const uint32_t feed_sizes[] = {1,     3,    100,    4096,   65536,
                                      7000,  17,   65535,  200000, 31,
                                      12345, 4095, 300000, 1};

static inline int feed_pull(struct weir_readable *rs, void *ctx)
{
    struct feed *f = ctx;
    uint32_t n;
    struct weir_chunk c;

    if (f->pause_at && f->off >= f->pause_at) {
        f->paused = true;
        f->rs = rs;
        return WEIR_PENDING;
    }
    if (f->off == f->len) {
        weir_readable_close(rs);
        return 0;
    }
    n = feed_sizes[f->step++ % (sizeof(feed_sizes) / sizeof(feed_sizes[0]))];
    if (f->max_chunk && n > f->max_chunk)
        n = f->max_chunk;
    if (f->mode != FEED_EXTERNAL && n > weir_pool_buf_size(f->pool))
        n = (uint32_t)weir_pool_buf_size(f->pool);
    if (n > f->len - f->off)
        n = (uint32_t)(f->len - f->off);
    if (f->mode == FEED_EXTERNAL) {
        c = (struct weir_chunk){NULL, (uint8_t *)f->data + f->off, n};
    } else {
        struct weir_buf *b;

        if (weir_pool_get(f->pool, &b) != 0)
            return -ENOBUFS;
        memcpy(b->data, f->data + f->off, n);
        c = weir_chunk_of(b, n);
        if (f->mode == FEED_SHARED && f->nkept < 4096) {
            weir_chunk_ref(&c);
            f->kept[f->nkept++] = c;
        }
    }
    f->off += n;
    f->chunks++;
    return weir_readable_enqueue(rs, c);
}

static const struct weir_source_ops feed_ops = {.pull = feed_pull};

/* Ends a pause: the parked pull delivers and finishes; the next pause is
 * at next_pause bytes (0: none). */
static inline void feed_wake(struct feed *f, size_t next_pause)
{
    int rc;

    f->pause_at = next_pause;
    f->paused = false;
    rc = feed_pull(f->rs, f);
    weir_readable_pull_done(f->rs, rc < 0 ? rc : 0);
}

struct file_sink {
    int fd;
    bool hold;
    int fail_rc; /* finish held writes with this error instead */
    bool in_flight;
    struct weir_chunk held;
    struct weir_writable *ws;
    uint64_t bytes;
    int closes, aborts;
};

static inline int file_sink_put(struct file_sink *k, struct weir_chunk c)
{
    size_t off = 0;

    while (off < c.len) {
        ssize_t w = write(k->fd, c.data + off, c.len - off);

        if (w < 0)
            return -errno;
        off += (size_t)w;
    }
    k->bytes += c.len;
    weir_chunk_unref(&c, 0);
    return 0;
}

static inline int file_sink_write(struct weir_writable *ws, void *ctx,
                                  struct weir_chunk c)
{
    struct file_sink *k = ctx;

    k->ws = ws;
    if (k->hold) {
        k->held = c;
        k->in_flight = true;
        return WEIR_PENDING;
    }
    return file_sink_put(k, c);
}

static inline int file_sink_close(struct weir_writable *ws, void *ctx)
{
    struct file_sink *k = ctx;

    (void)ws;
    k->closes++;
    return 0;
}

static inline int file_sink_abort(struct weir_writable *ws, void *ctx,
                                  int reason)
{
    struct file_sink *k = ctx;

    (void)ws;
    (void)reason;
    k->aborts++;
    return 0;
}

static const struct weir_sink_ops file_sink_ops = {
    .write = file_sink_write,
    .close = file_sink_close,
    .abort = file_sink_abort,
};

#define CHAIN_MAX 4

struct pipe_end {
    bool finished;
    int rc;
};

static inline void pipe_end_cb(void *ctx, int rc)
{
    struct pipe_end *e = ctx;

    e->finished = true;
    e->rc = rc;
}

static inline void pipe_end_set(struct pipe_end *e, int rc)
{
    if (rc != WEIR_PENDING)
        pipe_end_cb(e, rc);
}

struct chain {
    struct weir_xform *x[CHAIN_MAX];
    unsigned n;
    struct weir_readable *src;
    struct weir_writable *dst;
    struct file_sink sink;
    struct pipe_end ends[CHAIN_MAX + 1];
    uint32_t resumes;
};

/* Finishes held writes (failing them with fail_rc when set) and resumes
 * parked transforms until the last pipe ends or nothing can move. Returns
 * the last pipe's result, or -EDEADLK when the chain stalled for good. */
static inline int chain_drive(struct chain *ch)
{
    while (!ch->ends[ch->n].finished) {
        bool moved = false;

        if (ch->sink.in_flight) {
            int rc = ch->sink.fail_rc;

            ch->sink.in_flight = false;
            if (rc)
                weir_chunk_unref(&ch->sink.held, 0);
            else
                rc = file_sink_put(&ch->sink, ch->sink.held);
            weir_writable_write_done(ch->sink.ws, rc);
            moved = true;
        }
        for (unsigned i = 0; i < ch->n; i++) {
            if (weir_xform_stalled(ch->x[i])) {
                ch->resumes++;
                if (weir_xform_resume(ch->x[i]) != WEIR_PENDING)
                    moved = true;
            }
        }
        if (!moved)
            return -EDEADLK;
    }
    return ch->ends[ch->n].rc;
}

/*
 * Sets up the chain for the bytes of `f` through the transforms named in
 * specs[] into the file `out`, and starts its pipes (which run as far as
 * they can at once). The transforms stay in ch (for their errors and
 * stats) until chain_free. 0 or -errno.
 */
static inline int chain_start(struct chain *ch, const char *const *specs,
                              unsigned n, struct feed *f,
                              const struct weir_xform_options *xo,
                              const char *out, bool hold)
{
    struct weir_readable_options ro = {.strategy = {.hwm = 1}};
    struct weir_readable *rs;
    int rc;

    memset(ch, 0, sizeof(*ch));
    ch->n = n;
    for (unsigned i = 0; i < n; i++) {
        rc = weir_xform_create(&ch->x[i], specs[i], xo);
        if (rc)
            return rc;
    }
    ch->sink.fd = open(out, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    if (ch->sink.fd < 0)
        return -errno;
    ch->sink.hold = hold;
    rc = weir_readable_create(&ch->src, &feed_ops, f, &ro);
    if (rc == 0)
        rc = weir_writable_create(&ch->dst, &file_sink_ops, &ch->sink, NULL);
    if (rc)
        return rc;
    ch->sink.ws = ch->dst;
    rs = ch->src;
    for (unsigned i = 0; i < n; i++) {
        struct weir_transform *tf = weir_xform_transform(ch->x[i]);

        pipe_end_set(&ch->ends[i], weir_pipe_through(rs, tf, NULL, pipe_end_cb,
                                                     &ch->ends[i]));
        rs = weir_transform_readable(tf);
    }
    pipe_end_set(&ch->ends[n],
                 weir_pipe_to(rs, ch->dst, NULL, pipe_end_cb, &ch->ends[n]));
    return 0;
}

/* chain_start and chain_drive: the result of the pipe into the sink. */
static inline int chain_run(struct chain *ch, const char *const *specs,
                            unsigned n, struct feed *f,
                            const struct weir_xform_options *xo,
                            const char *out, bool hold)
{
    int rc = chain_start(ch, specs, n, f, xo, out, hold);

    return rc ? rc : chain_drive(ch);
}

static inline void chain_free(struct chain *ch)
{
    /* A write the sink still holds (the pipe may write once more into a
     * sink that is failing) is settled, so its pipe can finish. */
    if (ch->sink.in_flight) {
        weir_chunk_unref(&ch->sink.held, 0);
        ch->sink.in_flight = false;
        weir_writable_write_done(ch->sink.ws, -ECANCELED);
    }
    for (unsigned i = 0; i < ch->n; i++)
        weir_xform_destroy(ch->x[i]);
    weir_readable_destroy(ch->src);
    weir_writable_destroy(ch->dst);
    if (ch->sink.fd >= 0)
        close(ch->sink.fd);
    memset(ch, 0, sizeof(*ch));
}

/* Test files live in one mkdtemp directory per executable. */
static char tdir[64];

static inline const char *tpath(char *buf, size_t n, const char *name)
{
    snprintf(buf, n, "%s/%s", tdir, name);
    return buf;
}

static inline void write_file(const char *path, const uint8_t *data, size_t len)
{
    FILE *fp = fopen(path, "wb");

    if (!fp || fwrite(data, 1, len, fp) != len || fclose(fp) != 0)
        abort();
}

/* Reads a whole file; *len its size. The caller frees. */
static inline uint8_t *read_file(const char *path, size_t *len)
{
    FILE *fp = fopen(path, "rb");
    uint8_t *buf = NULL;
    size_t cap = 0, n = 0, r;

    *len = 0;
    if (!fp)
        return NULL;
    do {
        if (n == cap) {
            cap = cap ? cap * 2 : 1 << 16;
            buf = realloc(buf, cap);
            if (!buf)
                abort();
        }
        r = fread(buf + n, 1, cap - n, fp);
        n += r;
    } while (r > 0);
    fclose(fp);
    *len = n;
    return buf;
}

/* Runs a shell command; its exit status. */
static inline int sh(const char *fmt, ...)
    __attribute__((format(printf, 1, 2)));
static inline int sh(const char *fmt, ...)
{
    char cmd[1024];
    va_list ap;
    int st;

    va_start(ap, fmt);
    vsnprintf(cmd, sizeof(cmd), fmt, ap);
    va_end(ap);
    st = system(cmd);
    return st == -1 ? -1 : WEXITSTATUS(st);
}

/* Input of mixed kinds: the bench's repeated text, text with upper and
 * lower case and punctuation, and bytes from a fixed generator (every
 * value, including the ones next to 'a' and 'z'). */
static inline uint8_t *make_input(size_t len, uint32_t seed)
{
    static const char text[] = "The quick brown fox jumps over the lazy dog; "
                               "{`az~} AZ@[ 0123456789 abcdefghij\n";
    uint8_t *d = malloc(len ? len : 1);
    uint32_t r = seed;

    for (size_t i = 0; i < len; i++) {
        size_t zone = (i / 50000) % 3;

        if (zone == 0) {
            d[i] = (uint8_t)("abcdefghij"[i % 10]);
        } else if (zone == 1) {
            d[i] = (uint8_t)text[i % (sizeof(text) - 1)];
        } else {
            r = r * 1103515245u + 12345u;
            d[i] = (uint8_t)(r >> 16);
        }
    }
    return d;
}

static inline struct weir_pool *make_pool(uint32_t count, size_t buf_size)
{
    struct weir_pool_options o = {
        .buf_size = buf_size, .count = count, .threads = 1, .owner = 0};
    struct weir_pool *p = NULL;

    if (weir_pool_create(&p, &o) != 0)
        abort();
    return p;
}

/*
 * What each transform test file sets up: its temp directory (from the
 * mkdtemp template `tmpl`), an input pool of 64 buffers, an output pool of
 * 256, and `len` bytes of make_input(seed). 0, or -1 when something could
 * not be made.
 */
static inline int xf_setup(const char *tmpl, struct weir_pool **in_pool,
                           struct weir_pool **out_pool, uint8_t **input,
                           size_t len, uint32_t seed)
{
    snprintf(tdir, sizeof(tdir), "%s", tmpl);
    if (!mkdtemp(tdir))
        return -1;
    *in_pool = make_pool(64, 0);
    *out_pool = make_pool(256, 0);
    *input = make_input(len, seed);
    return 0;
}

/* Undoes xf_setup: -1 when a pool still had a buffer out (one was lost). */
static inline int xf_teardown(struct weir_pool *in_pool,
                              struct weir_pool *out_pool, uint8_t *input)
{
    free(input);
    weir_pool_reclaim(in_pool);
    weir_pool_reclaim(out_pool);
    if (weir_pool_destroy(in_pool) || weir_pool_destroy(out_pool))
        return -1;
    sh("rm -rf '%s'", tdir);
    return 0;
}

#ifdef CMOCKA_H_
/* The file at path holds exactly data[0..len). */
static inline void assert_file_is(const char *path, const uint8_t *data,
                                  size_t len)
{
    size_t got_len;
    uint8_t *got = read_file(path, &got_len);

    assert_non_null(got);
    assert_int_equal(got_len, len);
    assert_memory_equal(got, data, len);
    free(got);
}

/* The gzip file at path decompresses with zlib's gzread, which reads
 * member after member, to exactly data[0..len). */
static inline void assert_gzread_is(const char *path, const uint8_t *data,
                                    size_t len)
{
    gzFile gz = gzopen(path, "rb");
    uint8_t *got = malloc(len + 1);
    size_t n = 0;
    int r;

    assert_non_null(gz);
    while ((r = gzread(gz, got + n, (unsigned)(len + 1 - n))) > 0)
        n += (size_t)r;
    assert_int_equal(r, 0);
    assert_int_equal(gzclose(gz), Z_OK);
    assert_int_equal(n, len);
    assert_memory_equal(got, data, len);
    free(got);
}
#endif

#endif /* WEIR_TEST_XFORM_HARNESS_H */
