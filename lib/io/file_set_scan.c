/*
 * file_set_scan.c - a file set's patterns: parsing, matching a path, and
 * walking the directories they reach.
 *
 * A pattern is matched part by part with fnmatch (FNM_PATHNAME |
 * FNM_PERIOD: `*` never crosses a '/' nor matches a leading '.'), and
 * `**` stands for any number of directories, none included, but never
 * for hidden ones. A walk starts at each pattern's literal prefix (its
 * nearest existing ancestor while that does not exist yet, so that its
 * creation is seen) and enters only the directories a pattern can reach.
 * Symbolic links to files are followed, to directories not: a link loop
 * cannot make a walk endless.
 *
 * The safety rescan reads a directory only when its mtime moved since it
 * was last read (a name was added, removed or renamed in it): with
 * 10,000 idle files it costs one stat per directory.
 */
#include <dirent.h>
#include <errno.h>
#include <fnmatch.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "file_set_impl.h"

#define FS_MAX_PARTS 128

int weir__fs_pattern_parse(struct fs_pattern *p, const char *text)
{
    char *copy, *save = NULL;

    memset(p, 0, sizeof(*p));
    if (!text || text[0] != '/')
        return -EINVAL;
    copy = strdup(text);
    p->part = calloc(FS_MAX_PARTS, sizeof(*p->part));
    if (!copy || !p->part) {
        free(copy);
        free(p->part);
        return -ENOMEM;
    }
    p->root = SIZE_MAX;
    for (char *t = strtok_r(copy, "/", &save); t;
         t = strtok_r(NULL, "/", &save)) {
        bool glob = strpbrk(t, "*?[") != NULL;

        if (p->n == FS_MAX_PARTS) {
            free(copy);
            weir__fs_pattern_free(p);
            return -EINVAL;
        }
        /* "**" twice in a row is "**" once. */
        if (strcmp(t, "**") == 0 && p->n &&
            strcmp(p->part[p->n - 1], "**") == 0)
            continue;
        if (glob && p->root == SIZE_MAX)
            p->root = p->n;
        p->part[p->n] = strdup(t);
        if (!p->part[p->n++]) {
            free(copy);
            weir__fs_pattern_free(p);
            return -ENOMEM;
        }
    }
    free(copy);
    if (p->n == 0) {
        weir__fs_pattern_free(p);
        return -EINVAL;
    }
    /* The walk starts in a directory: at most the file's parent. */
    if (p->root > p->n - 1)
        p->root = p->n - 1;
    return 0;
}

void weir__fs_pattern_free(struct fs_pattern *p)
{
    if (p->part)
        for (size_t i = 0; i < p->n; i++)
            free(p->part[i]);
    free(p->part);
    memset(p, 0, sizeof(*p));
}

/*
 * Whether pattern parts p match path parts s: all of them for a file;
 * for a directory (dir), whether what is below it can still match.
 */
static bool fs_match(char *const *p, size_t np, char *const *s, size_t ns,
                     bool dir)
{
    if (np == 0)
        return false;
    if (strcmp(p[0], "**") == 0) {
        if (np == 1 && (ns > 0 || dir))
            return ns == 0 || s[ns - 1][0] != '.'; /* anything below */
        if (fs_match(p + 1, np - 1, s, ns, dir))
            return true;
        return ns > 0 && (ns > 1 || dir) && s[0][0] != '.' &&
               fs_match(p, np, s + 1, ns - 1, dir);
    }
    if (ns == 0)
        return dir;
    if (fnmatch(p[0], s[0], FNM_PATHNAME | FNM_PERIOD) != 0)
        return false;
    if (ns == 1 && np == 1)
        return !dir;
    return fs_match(p + 1, np - 1, s + 1, ns - 1, dir);
}

/* Splits path into parts in buf (a copy). Returns how many, or -1. */
static int fs_split(const char *path, char *buf, size_t cap, char **parts)
{
    char *save = NULL;
    int n = 0;

    if (strlen(path) >= cap)
        return -1;
    strcpy(buf, path);
    for (char *t = strtok_r(buf, "/", &save); t;
         t = strtok_r(NULL, "/", &save)) {
        if (n == FS_MAX_PARTS)
            return -1;
        parts[n++] = t;
    }
    return n;
}

static bool fs_any(const struct fs_pattern *pats, size_t npats,
                   const char *path, bool dir)
{
    char buf[4096], *parts[FS_MAX_PARTS];
    int n = fs_split(path, buf, sizeof(buf), parts);

    if (n < 0)
        return false;
    for (size_t i = 0; i < npats; i++)
        if (fs_match(pats[i].part, pats[i].n, parts, (size_t)n, dir))
            return true;
    return false;
}

bool weir__fs_compressed(const char *path)
{
    static const char *const ext[] = {".gz", ".zst", ".xz", ".bz2"};
    size_t len = strlen(path);

    for (size_t i = 0; i < sizeof(ext) / sizeof(ext[0]); i++) {
        size_t n = strlen(ext[i]);

        if (len > n && strcmp(path + len - n, ext[i]) == 0)
            return true;
    }
    return false;
}

bool weir__fs_wanted(const struct fs_set *s, const char *path)
{
    return !weir__fs_compressed(path) && fs_any(s->inc, s->ninc, path, false) &&
           !fs_any(s->exc, s->nexc, path, false);
}

bool weir__fs_reachable(const struct fs_set *s, const char *path)
{
    return fs_any(s->inc, s->ninc, path, true);
}

/* path + "/" + name in out; false when it does not fit. */
static bool fs_join(char *out, size_t cap, const char *path, const char *name)
{
    int n = snprintf(out, cap, "%s/%s", strcmp(path, "/") ? path : "", name);

    return n > 0 && (size_t)n < cap;
}

static void fs_scan(struct fs_set *s, const char *path, bool force, int depth)
{
    struct fs_dir *d = weir__fs_dir_find(s, path);
    char full[4096];
    struct dirent *e;
    struct stat st;
    DIR *dp;

    if (depth > FS_MAX_PARTS || stat(path, &st) != 0 || !S_ISDIR(st.st_mode)) {
        if (d)
            d->gone = true;
        return;
    }
    if (!d || d->gone) {
        d = weir__fs_dir_add(s, path, &st);
        if (!d)
            return;
    }
    if (!force && d->mtime_ns == (int64_t)st.st_mtim.tv_sec * 1000000000 +
                                     st.st_mtim.tv_nsec)
        return;
    d->mtime_ns = (int64_t)st.st_mtim.tv_sec * 1000000000 + st.st_mtim.tv_nsec;
    dp = opendir(path);
    if (!dp)
        return;
    while ((e = readdir(dp)) && !s->ep.destroyed) {
        unsigned char type = e->d_type;

        if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0 ||
            !fs_join(full, sizeof(full), path, e->d_name))
            continue;
        if (type == DT_UNKNOWN) {
            struct stat est;

            if (lstat(full, &est) != 0)
                continue;
            type = S_ISDIR(est.st_mode)   ? DT_DIR
                   : S_ISLNK(est.st_mode) ? DT_LNK
                                          : DT_REG;
        }
        if (type == DT_DIR) {
            if (weir__fs_reachable(s, full))
                fs_scan(s, full, false, depth + 1);
        } else if ((type == DT_REG || type == DT_LNK) &&
                   weir__fs_wanted(s, full) && s->hooks.found) {
            s->hooks.found(s, full);
        }
    }
    closedir(dp);
}

/* Where a pattern's walk starts: its literal prefix, or the nearest
 * ancestor of it that exists. */
static void fs_root(const struct fs_pattern *p, char *out, size_t cap)
{
    size_t len = 0;
    struct stat st;

    out[0] = '\0';
    for (size_t i = 0; i < p->root; i++) {
        int n = snprintf(out + len, cap - len, "/%s", p->part[i]);

        if (n < 0 || (size_t)n >= cap - len)
            break;
        if (stat(out, &st) != 0 || !S_ISDIR(st.st_mode)) {
            out[len] = '\0';
            break;
        }
        len += (size_t)n;
    }
    if (len == 0)
        strcpy(out, "/");
}

void weir__fs_scan_dir(struct fs_set *s, const char *path, bool force)
{
    fs_scan(s, path, force, 0);
}

void weir__fs_scan_all(struct fs_set *s)
{
    char root[4096];

    for (size_t i = 0; i < s->ninc && !s->ep.destroyed; i++) {
        fs_root(&s->inc[i], root, sizeof(root));
        fs_scan(s, root, false, 0);
    }
}

void weir__fs_rescan(struct fs_set *s)
{
    weir__fs_scan_all(s);
    /* Known directories a pattern root does not lead to any more by
     * walking (a subtree whose parent was unchanged). */
    for (size_t i = 0; i < s->ndirs && !s->ep.destroyed; i++)
        if (!s->dirs[i]->gone)
            fs_scan(s, s->dirs[i]->path, false, 0);
}
