/*
 * pull-transform-write.c - a pull source, through a transform, into a
 * writable stream, all on one thread with no event loop.
 *
 * The source hands out one word per pull, pointing into a constant array
 * (a chunk with no pool buffer). The transformer copies each word into a
 * buffer of a pool, upper-cased, and emits that buffer as a new chunk. The
 * sink prints what it gets and drops the chunk's reference, which sends
 * the buffer back to the pool. At the end the pool must have every buffer
 * back: that is the check that no reference leaked.
 *
 * Build against an installed libweir:
 *   cc pull-transform-write.c $(pkg-config --cflags --libs weir)
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include <weir/pipe.h>
#include <weir/pool.h>
#include <weir/stream.h>

static const char *const words[] = {"a ",   "weir ",   "is ", "a ",     "low ",
                                    "dam ", "across ", "a ",  "river\n"};
#define NWORDS (sizeof(words) / sizeof(words[0]))

/* ---- the underlying source: one word per pull, then close ---- */

struct words_source {
    unsigned next;
    unsigned pulls;
};

static int words_pull(struct weir_readable *rs, void *ctx)
{
    struct words_source *s = ctx;
    struct weir_chunk c;

    s->pulls++;
    if (s->next == NWORDS)
        return weir_readable_close(rs);
    /* buf NULL: the bytes are a constant, kept alive by the program. */
    c = (struct weir_chunk){.buf = NULL,
                            .data = (uint8_t *)words[s->next],
                            .len = (uint32_t)strlen(words[s->next])};
    s->next++;
    return weir_readable_enqueue(rs, c);
}

static const struct weir_source_ops words_ops = {.pull = words_pull};

/* ---- the transformer: upper-case into a pool buffer ---- */

static int upper_transform(struct weir_transform *tf, void *ctx,
                           struct weir_chunk in)
{
    struct weir_pool *pool = ctx;
    struct weir_buf *b;
    int rc = weir_pool_get(pool, &b);

    if (rc) {
        /* The input chunk is ours: drop it even when failing. */
        weir_chunk_unref(&in, 0);
        return rc; /* errors both sides of the transform */
    }
    for (uint32_t i = 0; i < in.len; i++) {
        uint8_t ch = in.data[i];

        b->data[i] = ch >= 'a' && ch <= 'z' ? (uint8_t)(ch - 'a' + 'A') : ch;
    }
    weir_chunk_unref(&in, 0);
    return weir_transform_enqueue(tf, weir_chunk_of(b, in.len));
}

static const struct weir_transformer_ops upper_ops = {.transform =
                                                          upper_transform};

/* ---- the underlying sink: print and count ---- */

struct print_sink {
    unsigned writes;
    size_t bytes;
    int closed;
};

static int print_write(struct weir_writable *ws, void *ctx, struct weir_chunk c)
{
    struct print_sink *s = ctx;

    (void)ws;
    fwrite(c.data, 1, c.len, stdout);
    s->writes++;
    s->bytes += c.len;
    weir_chunk_unref(&c, 0); /* the buffer goes home to its pool */
    return 0;
}

static int print_close(struct weir_writable *ws, void *ctx)
{
    struct print_sink *s = ctx;

    (void)ws;
    s->closed = 1;
    return 0;
}

static const struct weir_sink_ops print_ops = {.write = print_write,
                                               .close = print_close};

/* A pipe reports here when it did not finish inside weir_pipe_*. */
static void pipe_done(void *ctx, int rc)
{
    *(int *)ctx = rc;
}

int main(void)
{
    struct weir_pool_options po = {.buf_size = 4096, .count = 4, .threads = 1};
    struct weir_pool *pool;
    struct weir_readable *rs;
    struct weir_transform *tf;
    struct weir_writable *ws;
    struct words_source src = {0};
    struct print_sink sink = {0};
    struct weir_pool_stats st;
    int rc1 = WEIR_PENDING, rc2 = WEIR_PENDING, rc;

    if (weir_pool_create(&pool, &po) != 0 ||
        weir_readable_create(&rs, &words_ops, &src, NULL) != 0 ||
        weir_transform_create(&tf, &upper_ops, pool, NULL) != 0 ||
        weir_writable_create(&ws, &print_ops, &sink, NULL) != 0) {
        fprintf(stderr, "setup failed\n");
        return 1;
    }

    /* source -> transform: this pipe waits, since nobody reads the
     * transform's readable side yet (its high-water mark is 0). */
    rc = weir_pipe_through(rs, tf, NULL, pipe_done, &rc1);
    if (rc != WEIR_PENDING)
        rc1 = rc;
    /* transform -> sink: reading the readable side lets words flow; with
     * every callback synchronous, both pipes finish inside this call. */
    rc = weir_pipe_to(weir_transform_readable(tf), ws, NULL, pipe_done, &rc2);
    if (rc != WEIR_PENDING)
        rc2 = rc;

    printf("pipes: %d %d\n", rc1, rc2);
    printf("sink: %u writes, %zu bytes, closed %d\n", sink.writes, sink.bytes,
           sink.closed);
    printf("source: %u pulls\n", src.pulls);

    weir_writable_destroy(ws);
    weir_transform_destroy(tf);
    weir_readable_destroy(rs);
    weir_pool_reclaim(pool);
    weir_pool_stats(pool, &st);
    printf("pool: %u buffers in use, peak %u\n", st.in_use, st.peak);
    return weir_pool_destroy(pool) == 0 && rc1 == 0 && rc2 == 0 ? 0 : 1;
}
