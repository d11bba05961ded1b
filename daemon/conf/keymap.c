/*
 * keymap.c - open addressing with linear probing, grown to twice its
 * size at half load; keys are copied.
 */
#include "conf/keymap.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

struct keymap_slot {
    char *key; /* NULL: empty */
    const void *value;
};

/* FNV-1a: short keys, no adversary (the operator's own config). */
static uint64_t hash(const char *s)
{
    uint64_t h = 14695981039346656037ull;

    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 1099511628211ull;
    return h;
}

static struct keymap_slot *find(const struct keymap *m, const char *key)
{
    size_t i = (size_t)hash(key) & (m->cap - 1);

    while (m->slots[i].key && strcmp(m->slots[i].key, key) != 0)
        i = (i + 1) & (m->cap - 1);
    return &m->slots[i];
}

static int grow(struct keymap *m)
{
    struct keymap old = *m;

    m->cap = old.cap ? old.cap * 2 : 64;
    m->slots = calloc(m->cap, sizeof(*m->slots));
    if (!m->slots) {
        *m = old;
        return -1;
    }
    for (size_t i = 0; i < old.cap; i++)
        if (old.slots[i].key)
            *find(m, old.slots[i].key) = old.slots[i];
    free(old.slots);
    return 0;
}

const void *keymap_get(const struct keymap *m, const char *key)
{
    return m->cap ? find(m, key)->value : NULL;
}

const void *keymap_put(struct keymap *m, const char *key, const void *value)
{
    struct keymap_slot *s;

    if ((m->n + 1) * 2 > m->cap && grow(m) != 0)
        return NULL;
    s = find(m, key);
    if (s->key)
        return s->value;
    s->key = strdup(key);
    if (!s->key)
        return NULL;
    s->value = value;
    m->n++;
    return NULL;
}

void keymap_free(struct keymap *m)
{
    for (size_t i = 0; i < m->cap; i++)
        free(m->slots[i].key);
    free(m->slots);
    *m = (struct keymap){0};
}
