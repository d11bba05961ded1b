/*
 * byob-read.c - BYOB ("bring your own buffer") reads from a byte stream.
 *
 * The source makes 41 bytes of text, at most 7 per pull. When the oldest
 * waiting read is a BYOB read, it writes straight into that reader's
 * buffer (weir_readable_byob_request / _respond): no chunk, no copy. When
 * it is asked by anything else (a default read, or filling the queue up to
 * its mark), it enqueues a chunk of its own bytes instead, which the
 * stream copies into the next BYOB buffer.
 *
 * The reader first makes one default read (the source has no buffer to
 * fill, so it enqueues a chunk), then asks for 16 bytes with a minimum of
 * 16, so that one read spans several pulls, then for whatever is left
 * with a minimum of 1.
 *
 * Build against an installed libweir:
 *   cc byob-read.c $(pkg-config --cflags --libs weir)
 */
#include <stdio.h>
#include <string.h>

#include <weir/stream.h>

static const char text[] = "the quick brown fox jumps over a lazy dog";
#define TOTAL    (sizeof(text) - 1)
#define PER_PULL 7u

struct text_source {
    size_t at;
    unsigned direct, queued; /* pulls answered each way */
};

static int text_pull(struct weir_readable *rs, void *ctx)
{
    struct text_source *s = ctx;
    size_t n = TOTAL - s->at < PER_PULL ? TOTAL - s->at : PER_PULL;
    uint8_t *dst;
    size_t room;

    if (n == 0)
        return weir_readable_close(rs);
    if (weir_readable_byob_request(rs, &dst, &room) == 0) {
        /* Fill the reader's own buffer and say how much went in. */
        if (n > room)
            n = room;
        memcpy(dst, text + s->at, n);
        s->at += n;
        s->direct++;
        return weir_readable_byob_respond(rs, n);
    }
    /* No BYOB read waits: queue a chunk over the constant text. */
    struct weir_chunk c = {
        .buf = NULL, .data = (uint8_t *)text + s->at, .len = (uint32_t)n};
    s->at += n;
    s->queued++;
    return weir_readable_enqueue(rs, c);
}

static const struct weir_source_ops text_ops = {.pull = text_pull};

/* Every read here is answered during the call, since the source enqueues
 * inside its pull; a read that parked would report here, later. */
static void read_later(void *ctx, int rc, struct weir_chunk c)
{
    (void)ctx;
    (void)c;
    printf("a read parked and ended with %d\n", rc);
}

int main(void)
{
    /* A byte stream with a high-water mark of 0 bytes: the source is asked
     * only when a read waits, so every pull can answer a BYOB read. */
    struct weir_readable_options ro = {.strategy = {.hwm = 0, .bytes = true},
                                       .byte_stream = true};
    struct weir_readable *rs;
    struct weir_reader r;
    struct text_source src = {0};
    uint8_t buf[16];
    struct weir_chunk got;
    size_t total = 0;
    int rc;

    if (weir_readable_create(&rs, &text_ops, &src, &ro) != 0 ||
        weir_reader_acquire(&r, rs) != 0) {
        fprintf(stderr, "setup failed\n");
        return 1;
    }
    /* A default read: the answer is a chunk the source enqueued. */
    rc = weir_reader_read(&r, &got, read_later, NULL);
    if (rc != 0) {
        fprintf(stderr, "default read: %d\n", rc);
        return 1;
    }
    printf("default read, %u bytes: \"%.*s\"\n", got.len, (int)got.len,
           got.data);
    total += got.len;
    weir_chunk_unref(&got, 0);
    /* Full buffers: min == len. */
    for (int i = 0; i < 2; i++) {
        rc = weir_reader_read_byob(&r, buf, sizeof(buf), sizeof(buf), &got,
                                   read_later, NULL);
        if (rc != 0)
            break;
        printf("byob read, %u bytes: \"%.*s\"\n", got.len, (int)got.len,
               got.data);
        total += got.len;
    }
    /* Then anything: min 1, until the end. */
    while ((rc = weir_reader_read_byob(&r, buf, sizeof(buf), 1, &got,
                                       read_later, NULL)) == 0) {
        printf("byob read, %u bytes: \"%.*s\"\n", got.len, (int)got.len,
               got.data);
        total += got.len;
    }
    printf("end: %s, %zu bytes in all\n", rc == WEIR_DONE ? "done" : "error",
           total);
    printf("pulls: %u into the reader's buffer, %u as chunks\n", src.direct,
           src.queued);
    weir_reader_release(&r);
    weir_readable_destroy(rs);
    return rc == WEIR_DONE && total == TOTAL ? 0 : 1;
}
