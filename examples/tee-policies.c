/*
 * tee-policies.c - one source teed into two branches with different
 * policies for when a branch is full.
 *
 * Branch 0 uses WEIR_TEE_BLOCK: the source is read only while it has room,
 * so it loses nothing and its queue stays at its high-water mark. Branch 1
 * uses WEIR_TEE_DROP_OLDEST with a mark of 3 chunks and is not read until
 * the end: it keeps the newest 3 chunks and counts the rest as dropped,
 * without holding the source (or branch 0) back. A block branch that
 * nobody reads would stop the whole tee; that is the policy's point.
 *
 * Build against an installed libweir:
 *   cc tee-policies.c $(pkg-config --cflags --libs weir)
 */
#include <stdio.h>

#include <weir/stream.h>

#define TOTAL 10

/* Chunk i carries the text "i " (one digit and a space); the bytes live in
 * a constant string. */
static const char digits[] = "0 1 2 3 4 5 6 7 8 9 ";

static int count_pull(struct weir_readable *rs, void *ctx)
{
    unsigned *next = ctx;

    if (*next == TOTAL)
        return weir_readable_close(rs);
    struct weir_chunk c = {
        .buf = NULL, .data = (uint8_t *)digits + 2 * *next, .len = 2};
    (*next)++;
    return weir_readable_enqueue(rs, c);
}

static const struct weir_source_ops count_ops = {.pull = count_pull};

/* Every read here is answered during the call, since the source enqueues
 * inside its pull; a read that parked would report here, later. */
static void read_later(void *ctx, int rc, struct weir_chunk c)
{
    (void)ctx;
    (void)c;
    printf("a read parked and ended with %d\n", rc);
}

/* Reads a branch to its end with synchronous reads: every chunk here is
 * already queued or made by the source inside the read call. */
static int drain(const char *name, struct weir_readable *branch)
{
    struct weir_reader r;
    struct weir_chunk c;
    int rc;

    if (weir_reader_acquire(&r, branch) != 0)
        return -1;
    printf("%s:", name);
    while ((rc = weir_reader_read(&r, &c, read_later, NULL)) == 0) {
        printf(" %c", c.data[0]);
        weir_chunk_unref(&c, 0);
    }
    printf(" (%s)\n", rc == WEIR_DONE ? "end" : "not the end");
    weir_reader_release(&r);
    return rc == WEIR_DONE ? 0 : -1;
}

int main(void)
{
    struct weir_tee_branch_options bo[2] = {
        {.strategy = {.hwm = 2}, .policy = WEIR_TEE_BLOCK},
        {.strategy = {.hwm = 3}, .policy = WEIR_TEE_DROP_OLDEST},
    };
    struct weir_readable *src;
    struct weir_tee *tee;
    struct weir_tee_stats st;
    unsigned next = 0;
    int bad = 0;

    if (weir_readable_create(&src, &count_ops, &next, NULL) != 0 ||
        weir_tee_create(&tee, src, 2, bo) != 0) {
        fprintf(stderr, "setup failed\n");
        return 1;
    }
    /* Reading the block branch drives the source; branch 1 fills up and
     * then drops its oldest chunk for each new one. */
    bad |= drain("block", weir_tee_branch(tee, 0));
    bad |= drain("drop-oldest", weir_tee_branch(tee, 1));

    for (unsigned i = 0; i < 2; i++) {
        weir_tee_stats(tee, i, &st);
        printf("branch %u: delivered %llu, dropped %llu\n", i,
               (unsigned long long)st.delivered,
               (unsigned long long)st.dropped);
    }
    printf("source: %llu chunks read\n",
           (unsigned long long)weir_tee_produced(tee));
    weir_tee_destroy(tee);
    weir_readable_destroy(src);
    return bad ? 1 : 0;
}
