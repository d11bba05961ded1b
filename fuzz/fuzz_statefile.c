/*
 * fuzz_statefile.c - libFuzzer target: a checkpoint file's text as the
 * daemon reads it back from the state directory (ckpt_text_parse), and
 * the writer's round trip (ckpt_text_format).
 *
 * Any bytes may be in the file: a parse must never read past them, and
 * a record it accepts must format and parse back to itself. The input
 * also serves as a path (any bytes but NUL): the text written for it
 * must parse back to the same path and record.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "sys/ckpt_text.h"

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    return 0;
}

static bool rec_equal(const struct ckpt_rec *a, const struct ckpt_rec *b)
{
    return a->valid == b->valid && a->dev == b->dev && a->ino == b->ino &&
           a->off == b->off && a->head_len == b->head_len &&
           memcmp(a->head, b->head, a->head_len) == 0;
}

/* rec formatted for path parses back to rec, for path. */
static void round_trip(const struct ckpt_rec *rec, const char *path)
{
    size_t size = CKPT_TEXT_MAX(strlen(path));
    char *text = malloc(size), *other = NULL;
    struct ckpt_rec back;

    if (!text)
        abort();
    ckpt_text_format(rec, path, text, size);
    if (strlen(text) + 1 >= size ||
        ckpt_text_parse(text, path, &back, &other) != CKPT_TEXT_OK ||
        !rec_equal(rec, &back) || other != NULL)
        abort();
    /* Read as another pipeline's: it names this path. */
    if (ckpt_text_parse(text, strcmp(path, "/a") ? "/a" : "/b", &back,
                        &other) != CKPT_TEXT_OTHER ||
        !other || strcmp(other, path) != 0)
        abort();
    free(other);
    free(text);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *text = malloc(size + 1), *other = NULL;
    struct ckpt_rec rec;
    enum ckpt_text_kind kind;

    if (!text)
        return 0;
    memcpy(text, data, size);
    text[size] = '\0';
    kind = ckpt_text_parse(text, "/var/log/app.log", &rec, &other);
    if ((kind == CKPT_TEXT_OTHER) != (other != NULL) ||
        (kind == CKPT_TEXT_OK) != rec.valid)
        abort();
    if (kind == CKPT_TEXT_OK)
        round_trip(&rec, "/var/log/app.log");
    if (kind == CKPT_TEXT_OTHER && other[0] != '\0')
        round_trip(&(struct ckpt_rec){.valid = true, .off = size}, other);
    free(other);

    /* The input as a path (up to its first NUL), with a head of its
     * first bytes. */
    if (text[0] != '\0') {
        struct ckpt_rec r = {.valid = true, .dev = size, .ino = ~0ull};

        r.head_len = size < sizeof(r.head) ? (uint32_t)size : sizeof(r.head);
        memcpy(r.head, data, r.head_len);
        round_trip(&r, text);
    }
    free(text);
    return 0;
}
