/*
 * xform_core.c - suite `xform-core`: the transforms of lib/xform in
 * process, no I/O. A source hands 64 KiB chunks of repeated 'abcdefghij'
 * to the transform through the stream core (pipe_through), and a sink
 * counts what comes out:
 *
 *   xform-core transform=gzip:1 size=64MiB: <MB/s> MB/s ratio=<in/out>
 *
 * MB/s is input bytes per second (for gunzip and unzstd, the bytes they
 * restore). `uppercase` gets chunks outside any pool and copies them;
 * `uppercase(in-place)` gets pool buffers it holds alone, as from a file
 * read, and converts them where they lie (the source's copy into the
 * buffer is counted, as the read would be).
 *
 * Then the measurement behind gzip's compressor: libdeflate compressing
 * whole members of several sizes against zlib's streaming deflate, on the
 * same bytes, at levels 1 and 6:
 *
 *   xform-core engine=libdeflate level=1 member=256KiB size=64MiB: ...
 *   xform-core engine=zlib level=1 size=64MiB: ...
 *
 * and the same comparison on log lines (input=log), whose numbers change
 * from line to line as real logs do.
 *
 * Times are the thread's CPU time: in process and single-threaded, that
 * is the work's cost even on a loaded machine.
 *
 *   weir-bench xform-core [size=64MiB] [only=SPEC] [input=log]
 */
#include <errno.h>
#include <libdeflate.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include <time.h>

#include "bench.h"
#include "weir/stream.h"
#include "weir/xform.h"

#define CHUNK (64u * 1024u)

/* The thread's CPU clock: the work is single-threaded and does no I/O, so
 * this is its cost, whatever else the (shared, 2-core) machine runs. */
static uint64_t cpu_now_ns(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* Log lines whose numbers change from line to line: compressible the way
 * real logs are, unlike the repeated pattern. */
static void fill_log(uint8_t *d, size_t len)
{
    static const char *const paths[] = {"/api/v1/items", "/api/v1/users",
                                        "/static/app.js", "/healthz"};
    uint32_t r = 12345;
    size_t off = 0;

    while (off < len) {
        char line[160];
        int n;

        r = r * 1103515245u + 12345u;
        n = snprintf(line, sizeof(line),
                     "2026-11-29T19:%02u:%02u.%03uZ host-%u app[%u]: GET "
                     "%s/%u status=%u bytes=%u ms=%u\n",
                     (r >> 8) % 60, (r >> 14) % 60, (r >> 4) % 1000,
                     (r >> 20) % 32, 4000 + (r >> 24), paths[(r >> 2) % 4],
                     (r >> 7) % 100000, (r >> 27) % 2 ? 200 : 404,
                     (r >> 9) % 65536, (r >> 3) % 500);
        if ((size_t)n > len - off)
            n = (int)(len - off);
        memcpy(d + off, line, (size_t)n);
        off += (size_t)n;
    }
}

struct xsrc {
    const uint8_t *data;
    size_t len, off;
    struct weir_pool *pool; /* NULL: chunks outside any pool */
};

static int xsrc_pull(struct weir_readable *rs, void *ctx)
{
    struct xsrc *s = ctx;
    uint32_t n = CHUNK;
    struct weir_chunk c;

    if (s->off == s->len)
        return weir_readable_close(rs);
    if (n > s->len - s->off)
        n = (uint32_t)(s->len - s->off);
    if (s->pool) {
        struct weir_buf *b;

        if (weir_pool_get(s->pool, &b) != 0)
            return -ENOBUFS;
        memcpy(b->data, s->data + s->off, n);
        c = weir_chunk_of(b, n);
    } else {
        c = (struct weir_chunk){NULL, (uint8_t *)s->data + s->off, n};
    }
    s->off += n;
    return weir_readable_enqueue(rs, c);
}

static const struct weir_source_ops xsrc_ops = {.pull = xsrc_pull};

/* Counts the output; keeps a copy when `keep` is set (the decoders'
 * input). */
struct xsink {
    uint64_t bytes;
    uint8_t *keep;
    size_t cap;
};

static int xsink_write(struct weir_writable *ws, void *ctx, struct weir_chunk c)
{
    struct xsink *k = ctx;

    (void)ws;
    if (k->keep && k->bytes + c.len <= k->cap)
        memcpy(k->keep + k->bytes, c.data, c.len);
    k->bytes += c.len;
    weir_chunk_unref(&c, 0);
    return 0;
}

static const struct weir_sink_ops xsink_ops = {.write = xsink_write};

struct end {
    bool done;
    int rc;
};

static void end_cb(void *ctx, int rc)
{
    struct end *e = ctx;

    e->done = true;
    e->rc = rc;
}

/* Runs data through spec; 0 and the output size in *out_len, or -errno. */
static int run_one(const char *spec, const uint8_t *data, size_t len,
                   struct weir_pool *in_pool, struct weir_pool *out_pool,
                   struct xsink *k, uint64_t *ns)
{
    struct xsrc s = {.data = data, .len = len, .pool = in_pool};
    struct weir_readable_options ro = {.strategy = {.hwm = 1}};
    struct weir_xform_options xo = {.pool = out_pool};
    struct weir_readable *rs = NULL;
    struct weir_writable *ws = NULL;
    struct weir_xform *x = NULL;
    struct end e1 = {0}, e2 = {0};
    uint64_t t0;
    int rc;

    rc = weir_xform_create(&x, spec, &xo);
    if (rc == 0)
        rc = weir_readable_create(&rs, &xsrc_ops, &s, &ro);
    if (rc == 0)
        rc = weir_writable_create(&ws, &xsink_ops, k, NULL);
    if (rc)
        goto out;
    t0 = cpu_now_ns();
    rc = weir_pipe_through(rs, weir_xform_transform(x), NULL, end_cb, &e1);
    if (rc != WEIR_PENDING)
        end_cb(&e1, rc);
    rc = weir_pipe_to(weir_transform_readable(weir_xform_transform(x)), ws,
                      NULL, end_cb, &e2);
    if (rc != WEIR_PENDING)
        end_cb(&e2, rc);
    /* The sink finishes every write at once, so a parked transform only
     * waits for its own next resume. */
    while (!e2.done && weir_xform_stalled(x))
        weir_xform_resume(x);
    *ns = cpu_now_ns() - t0;
    rc = e2.done ? e2.rc : -EDEADLK;
out:
    weir_readable_destroy(rs);
    weir_writable_destroy(ws);
    weir_xform_destroy(x);
    return rc;
}

/* Which input the lines are about: empty for the repeated pattern. */
static const char *input_tag = "";

static void report(const char *what, const char *size, uint64_t bytes,
                   uint64_t ns, double ratio)
{
    printf("xform-core %s%s size=%s: %.0f MB/s ratio=%.1f\n", what, input_tag,
           size, ns ? (double)bytes * 1e3 / (double)ns : 0.0, ratio);
    fflush(stdout);
}

static int bench_engines(const uint8_t *data, size_t len, const char *size)
{
    static const size_t members[] = {64u << 10, 256u << 10, 1u << 20};
    static const int levels[] = {1, 6};
    size_t cap = len + len / 8 + (1u << 20);
    uint8_t *out = malloc(cap);

    if (!out)
        return 1;
    for (size_t l = 0; l < 2; l++) {
        for (size_t m = 0; m < 3; m++) {
            struct libdeflate_compressor *c =
                libdeflate_alloc_compressor(levels[l]);
            size_t total = 0;
            uint64_t t0 = cpu_now_ns(), ns;
            char what[96];

            for (size_t off = 0; off < len; off += members[m]) {
                size_t n = len - off < members[m] ? len - off : members[m];

                total += libdeflate_gzip_compress(c, data + off, n, out, cap);
            }
            ns = cpu_now_ns() - t0;
            libdeflate_free_compressor(c);
            snprintf(what, sizeof(what),
                     "engine=libdeflate level=%d member=%zuKiB", levels[l],
                     members[m] >> 10);
            report(what, size, len, ns, total ? (double)len / total : 0);
        }
        {
            z_stream z = {0};
            uint64_t t0 = cpu_now_ns(), ns;
            char what[64];
            int zr = Z_OK;

            deflateInit2(&z, levels[l], Z_DEFLATED, 16 + MAX_WBITS, 8,
                         Z_DEFAULT_STRATEGY);
            z.next_out = out;
            z.avail_out = (uInt)(cap > UINT32_MAX ? UINT32_MAX : cap);
            /* Fed in chunks, as a stream stage would be. */
            for (size_t off = 0; off < len && zr == Z_OK; off += CHUNK) {
                z.next_in = (Bytef *)data + off;
                z.avail_in = (uInt)(len - off < CHUNK ? len - off : CHUNK);
                zr = deflate(&z, Z_NO_FLUSH);
            }
            while (zr == Z_OK)
                zr = deflate(&z, Z_FINISH);
            ns = cpu_now_ns() - t0;
            snprintf(what, sizeof(what), "engine=zlib level=%d", levels[l]);
            report(what, size, len, ns,
                   z.total_out ? (double)len / (double)z.total_out : 0);
            deflateEnd(&z);
        }
    }
    free(out);
    return 0;
}

static size_t parse_size(const char *s)
{
    char *end;
    size_t v = strtoull(s, &end, 10);

    if (strcmp(end, "GiB") == 0)
        v <<= 30;
    else if (strcmp(end, "MiB") == 0)
        v <<= 20;
    else if (strcmp(end, "KiB") == 0)
        v <<= 10;
    return v;
}

int bench_xform_core(int argc, char **argv)
{
    static const char *const specs[] = {
        "uppercase", "uppercase(in-place)",
        "gzip:1",    "gzip:6",
        "zstd:1",    "zstd:3",
        "gunzip",    "unzstd",
    };
    const char *size = "64MiB", *only = NULL;
    struct weir_pool_options po = {.count = 64, .threads = 1};
    struct weir_pool *in_pool = NULL, *out_pool = NULL;
    uint8_t *data, *gz = NULL, *zs = NULL;
    size_t len, gz_len = 0, zs_len = 0;
    bool logs = false;
    int rc = 0;

    for (int i = 1; i < argc; i++) {
        if (strncmp(argv[i], "size=", 5) == 0)
            size = argv[i] + 5;
        else if (strncmp(argv[i], "only=", 5) == 0)
            only = argv[i] + 5;
        else if (strcmp(argv[i], "input=log") == 0)
            logs = true;
    }
    len = parse_size(size);
    data = malloc(len ? len : 1);
    if (!data || len == 0 || weir_pool_create(&in_pool, &po) ||
        weir_pool_create(&out_pool, &po)) {
        fprintf(stderr, "xform-core: bad size or out of memory\n");
        return 1;
    }
    if (logs) {
        fill_log(data, len);
        input_tag = " input=log";
    } else {
        for (size_t i = 0; i < len; i++)
            data[i] = (uint8_t) "abcdefghij"[i % 10];
    }
    for (size_t i = 0; i < sizeof(specs) / sizeof(specs[0]); i++) {
        const char *spec = specs[i];
        bool in_place = strcmp(spec, "uppercase(in-place)") == 0;
        bool dec = strcmp(spec, "gunzip") == 0 || strcmp(spec, "unzstd") == 0;
        struct xsink k = {0};
        const uint8_t *in = data;
        size_t in_len = len;
        uint64_t ns;
        char what[64];

        if (only && strcmp(only, spec) != 0)
            continue;
        if (dec) {
            /* The decoders read what gzip:1 / zstd:1 made of the input. */
            uint8_t **z = spec[0] == 'g' ? &gz : &zs;
            size_t *zl = spec[0] == 'g' ? &gz_len : &zs_len;

            k.cap = len + (1u << 20);
            k.keep = malloc(k.cap);
            if (!k.keep ||
                run_one(spec[0] == 'g' ? "gzip:1" : "zstd:1", data, len, NULL,
                        out_pool, &k, &ns) != 0 ||
                k.bytes > k.cap) {
                free(k.keep);
                rc = 1;
                continue;
            }
            *z = k.keep;
            *zl = k.bytes;
            in = *z;
            in_len = *zl;
            k = (struct xsink){0};
        }
        if (run_one(in_place ? "uppercase" : spec, in, in_len,
                    in_place ? in_pool : NULL, out_pool, &k, &ns) != 0) {
            fprintf(stderr, "xform-core: %s failed\n", spec);
            rc = 1;
            continue;
        }
        snprintf(what, sizeof(what), "transform=%s", spec);
        if (dec)
            report(what, size, k.bytes, ns, (double)k.bytes / in_len);
        else
            report(what, size, len, ns, k.bytes ? (double)len / k.bytes : 0);
    }
    if (!only) {
        rc |= bench_engines(data, len, size);
        if (!logs) {
            /* The choice should not rest on the degenerate pattern
             * alone: the same comparison on log lines. */
            fill_log(data, len);
            input_tag = " input=log";
            rc |= bench_engines(data, len, size);
        }
    }
    free(gz);
    free(zs);
    free(data);
    weir_pool_reclaim(in_pool);
    weir_pool_reclaim(out_pool);
    weir_pool_destroy(in_pool);
    weir_pool_destroy(out_pool);
    return rc;
}
