/*
 * keymap.h - a map from strings to pointers, for the checks across a
 * whole config (the same name, file or port twice): one lookup each, so
 * a config of 10,000 pipelines is checked in linear time, not by
 * comparing every pair.
 */
#ifndef WEIR_DAEMON_KEYMAP_H
#define WEIR_DAEMON_KEYMAP_H

#include <stddef.h>

struct keymap {
    struct keymap_slot *slots;
    size_t cap; /* a power of two, or 0 */
    size_t n;
};

/* The value stored under key, or NULL. */
const void *keymap_get(const struct keymap *m, const char *key);
/* Stores value under key unless the key is there: returns the value that
 * was there (the key stays mapped to it), NULL when the key was new, and
 * NULL with nothing stored when out of memory. */
const void *keymap_put(struct keymap *m, const char *key, const void *value);
void keymap_free(struct keymap *m);

#endif
