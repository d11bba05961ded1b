/*
 * suggest.h - "did you mean": the known word nearest to a misspelt one.
 */
#ifndef WEIR_DAEMON_SUGGEST_H
#define WEIR_DAEMON_SUGGEST_H

#include <stddef.h>

/*
 * The Damerau-Levenshtein distance (optimal string alignment: insert,
 * delete, substitute, swap two neighbours) between a[0..alen) and
 * b[0..blen), letters compared without case. Words longer than
 * SUGGEST_MAX_LEN count as far from everything.
 */
#define SUGGEST_MAX_LEN 64
unsigned suggest_distance(const char *a, size_t alen, const char *b,
                          size_t blen);

/*
 * Of the NULL-terminated candidates, the one nearest to word[0..len)
 * when it is near enough to be a slip of the keyboard: at most 2 edits,
 * and at most a third of the word's length (so "tpc" finds "tcp" but
 * "udp" does not). A difference of case only is distance 0 and always
 * found. NULL when none is near, and when word equals a candidate.
 */
const char *suggest_word(const char *word, size_t len,
                         const char *const *candidates);

#endif
