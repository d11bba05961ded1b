/*
 * file_set_ident.c - how the file-set source knows a file again: the
 * fingerprint of its first bytes, and the tables that find a known file
 * by path, by device and inode, or by fingerprint.
 *
 * The hash is FNV-1a over 8-byte words with a final avalanche (the
 * finaliser of splitmix64): fingerprints are compared, never trusted for
 * security, and a quality 64-bit mix makes a collision between two log
 * heads of 256 bytes as unlikely as any.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "file_set_impl.h"

static uint64_t fs_mix(uint64_t h)
{
    h ^= h >> 30;
    h *= 0xbf58476d1ce4e5b9ull;
    h ^= h >> 27;
    h *= 0x94d049bb133111ebull;
    h ^= h >> 31;
    return h;
}

uint64_t weir__fs_hash(const void *p, size_t n, uint64_t seed)
{
    const uint8_t *b = p;
    uint64_t h = 0xcbf29ce484222325ull ^ seed;
    size_t i = 0;

    for (; i + 8 <= n; i += 8) {
        uint64_t w;

        memcpy(&w, b + i, 8);
        h = (h ^ w) * 0x100000001b3ull;
        h ^= h >> 29;
    }
    for (; i < n; i++)
        h = (h ^ b[i]) * 0x100000001b3ull;
    return fs_mix(h ^ n);
}

uint64_t weir__fs_path_key(const char *path)
{
    return weir__fs_hash(path, strlen(path), 0x70617468);
}

uint64_t weir__fs_fingerprint(int fd, uint32_t len)
{
    uint8_t stackbuf[1024], *buf = stackbuf;
    uint64_t fp = 0;
    ssize_t n;

    if (len > sizeof(stackbuf)) {
        buf = malloc(len);
        if (!buf)
            return 0;
    }
    n = pread(fd, buf, len, 0);
    if (n == (ssize_t)len) {
        fp = weir__fs_hash(buf, len, 0);
        if (fp == 0) /* 0 means "none yet" */
            fp = 1;
    }
    if (buf != stackbuf)
        free(buf);
    return fp;
}

uint64_t weir__fs_fingerprint_path(const char *path, uint32_t len,
                                   struct stat *st)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
    uint64_t fp = 0;

    if (fd < 0)
        return 0;
    if (fstat(fd, st) == 0 && S_ISREG(st->st_mode) &&
        (uint64_t)st->st_size >= len)
        fp = weir__fs_fingerprint(fd, len);
    close(fd);
    return fp;
}

static int fs_map_grow(struct fs_map *m)
{
    size_t nb = m->nb ? m->nb * 2 : 64;
    struct fs_link **b = calloc(nb, sizeof(*b));

    if (!b)
        return -ENOMEM;
    for (size_t i = 0; i < m->nb; i++) {
        struct fs_link *l = m->b[i], *next;

        for (; l; l = next) {
            next = l->next;
            l->next = b[l->key & (nb - 1)];
            b[l->key & (nb - 1)] = l;
        }
    }
    free(m->b);
    m->b = b;
    m->nb = nb;
    return 0;
}

int weir__fs_map_add(struct fs_map *m, struct fs_link *l, uint64_t key)
{
    if (m->n + 1 > m->nb && fs_map_grow(m) != 0)
        return -ENOMEM;
    l->key = key;
    l->next = m->b[key & (m->nb - 1)];
    m->b[key & (m->nb - 1)] = l;
    m->n++;
    return 0;
}

void weir__fs_map_del(struct fs_map *m, struct fs_link *l)
{
    struct fs_link **pp;

    if (!m->nb)
        return;
    for (pp = &m->b[l->key & (m->nb - 1)]; *pp; pp = &(*pp)->next)
        if (*pp == l) {
            *pp = l->next;
            m->n--;
            return;
        }
}

struct fs_link *weir__fs_map_find(const struct fs_map *m, uint64_t key)
{
    return m->nb ? m->b[key & (m->nb - 1)] : NULL;
}

void weir__fs_map_free(struct fs_map *m)
{
    free(m->b);
    m->b = NULL;
    m->nb = m->n = 0;
}
