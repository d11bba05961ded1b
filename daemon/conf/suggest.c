/*
 * suggest.c - see suggest.h.
 */
#include "conf/suggest.h"

#include <ctype.h>
#include <string.h>

static unsigned min3(unsigned a, unsigned b, unsigned c)
{
    unsigned m = a < b ? a : b;
    return m < c ? m : c;
}

unsigned suggest_distance(const char *a, size_t alen, const char *b,
                          size_t blen)
{
    /* Three rows of the dynamic programme: two back, one back, this one. */
    unsigned rows[3][SUGGEST_MAX_LEN + 1];
    unsigned *prev2 = rows[0], *prev = rows[1], *cur = rows[2], *t;

    if (alen > SUGGEST_MAX_LEN || blen > SUGGEST_MAX_LEN)
        return ~0u;
    for (size_t j = 0; j <= blen; j++)
        prev[j] = (unsigned)j;
    for (size_t i = 1; i <= alen; i++) {
        int ca = tolower((unsigned char)a[i - 1]);

        cur[0] = (unsigned)i;
        for (size_t j = 1; j <= blen; j++) {
            int cb = tolower((unsigned char)b[j - 1]);
            unsigned cost = ca != cb;

            cur[j] = min3(prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + cost);
            if (i > 1 && j > 1 && ca == tolower((unsigned char)b[j - 2]) &&
                tolower((unsigned char)a[i - 2]) == cb &&
                prev2[j - 2] + 1 < cur[j])
                cur[j] = prev2[j - 2] + 1;
        }
        t = prev2;
        prev2 = prev;
        prev = cur;
        cur = t;
    }
    return prev[blen];
}

const char *suggest_word(const char *word, size_t len,
                         const char *const *candidates)
{
    const char *best = NULL;
    unsigned best_d = ~0u;

    for (const char *const *c = candidates; *c != NULL; c++) {
        size_t clen = strlen(*c);
        unsigned d;

        if (clen == len && strncmp(*c, word, len) == 0)
            return NULL;
        d = suggest_distance(word, len, *c, clen);
        if (d < best_d) {
            best_d = d;
            best = *c;
        }
    }
    if (best_d <= 2 && 3 * best_d <= len)
        return best;
    return NULL;
}
