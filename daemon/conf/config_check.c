/*
 * config_check.c - the checks that need the whole config: what one line
 * cannot tell (a pipeline without a sink, two pipelines on one port, a
 * source file that cannot be read). They add to the parser's error count,
 * and they also settle the values that depend on other lines (a sink's
 * high-water mark defaults to its pipeline's).
 */
#include "conf/config.h"

#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include "conf/address.h"

/* "line 12" in a file, "argument 3" on the command line. */
static const char *where(const struct conf_loc *loc, char *buf, size_t len)
{
    snprintf(buf, len, "%s %u", loc->file ? "line" : "argument", loc->line);
    return buf;
}

static void check_source_file(const struct weir_address *a,
                              struct conf_diag *diag)
{
    struct stat st;
    int fd;

    /* O_NONBLOCK: opening a FIFO for reading must not wait for a writer. */
    fd = open(a->path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0) {
        config_error(diag, &a->loc, "source: cannot open '%s' for reading: %s",
                     a->path, strerror(errno));
        return;
    }
    if (fstat(fd, &st) == 0 && S_ISDIR(st.st_mode))
        config_error(diag, &a->loc, "source: '%s' is a directory", a->path);
    close(fd);
}

/* A file sink, or a unix-listen socket, is created in a directory that
 * must exist; a file sink must not be a directory itself. */
static void check_created_path(const struct weir_address *a, const char *what,
                               struct conf_diag *diag)
{
    char *copy = strdup(a->path), *dir;
    struct stat st;

    if (copy == NULL)
        return;
    dir = dirname(copy);
    if (stat(dir, &st) != 0)
        config_error(diag, &a->loc, "%s: directory '%s': %s", what, dir,
                     strerror(errno));
    else if (!S_ISDIR(st.st_mode))
        config_error(diag, &a->loc, "%s: '%s' is not a directory", what, dir);
    else if (a->kind == ADDR_FILE && stat(a->path, &st) == 0 &&
             S_ISDIR(st.st_mode))
        config_error(diag, &a->loc, "sink: '%s' is a directory", a->path);
    free(copy);
}

/* The same file: the same path, or the same inode when both exist. */
static bool same_file(const char *a, const char *b)
{
    struct stat sa, sb;

    if (strcmp(a, b) == 0)
        return true;
    return stat(a, &sa) == 0 && stat(b, &sb) == 0 && sa.st_dev == sb.st_dev &&
           sa.st_ino == sb.st_ino;
}

static bool wildcard_host(const char *host)
{
    return strcmp(host, "0.0.0.0") == 0 || strcmp(host, "::") == 0;
}

/*
 * Would binding both fail? The same port with the same host, or with a
 * wildcard on either side (on Linux, 0.0.0.0:P and [::]:P each cover the
 * other's addresses too, since IPv6 sockets accept IPv4 by default).
 */
static bool same_listener(const struct weir_address *a,
                          const struct weir_address *b)
{
    if (a->kind != b->kind)
        return false;
    if (a->kind == ADDR_UNIX_LISTEN)
        return strcmp(a->path, b->path) == 0;
    return a->port == b->port &&
           (strcasecmp(a->host, b->host) == 0 || wildcard_host(a->host) ||
            wildcard_host(b->host));
}

/* Every address of the config, for the checks across pipelines. */
struct addr_list {
    const struct weir_address **v;
    size_t n;
};

static void collect(struct weir_config *conf, struct addr_list *all)
{
    size_t cap = 1;

    for (size_t i = 0; i < conf->npipelines; i++)
        cap += 1 + conf->pipelines[i]->nsinks;
    all->v = calloc(cap, sizeof(*all->v));
    all->n = 0;
    if (all->v == NULL)
        return;
    if (conf->daemon.metrics != NULL)
        all->v[all->n++] = conf->daemon.metrics;
    for (size_t i = 0; i < conf->npipelines; i++) {
        struct weir_pipeline *p = conf->pipelines[i];
        if (p->source != NULL)
            all->v[all->n++] = p->source;
        for (size_t j = 0; j < p->nsinks; j++)
            all->v[all->n++] = p->sinks[j];
    }
}

static const char *role_of(const struct weir_address *a)
{
    return a->role == ADDR_SOURCE ? "a source" : "a sink";
}

/* Each address against the ones before it: one error per repeat. */
static void check_shared(struct weir_config *conf, struct conf_diag *diag)
{
    struct addr_list all;
    char at[32];

    collect(conf, &all);
    for (size_t i = 0; i < all.n; i++) {
        const struct weir_address *a = all.v[i];
        for (size_t j = 0; j < i; j++) {
            const struct weir_address *b = all.v[j];
            where(&b->loc, at, sizeof(at));
            if (addr_kind_listens(a->kind) && same_listener(a, b)) {
                config_error(
                    diag, &a->loc, "%s: %s is already listened on by %s at %s",
                    a->role == ADDR_SOURCE ? "source" : "sink", a->text,
                    b == conf->daemon.metrics ? "metrics" : role_of(b), at);
                break;
            }
            if (a->kind == ADDR_STDIN && b->kind == ADDR_STDIN) {
                config_error(diag, &a->loc,
                             "source: stdin is already read at %s", at);
                break;
            }
            if (a->kind == ADDR_STDOUT && b->kind == ADDR_STDOUT) {
                config_error(diag, &a->loc,
                             "sink: stdout is already written at %s", at);
                break;
            }
            if (a->kind == ADDR_FILE && b->kind == ADDR_FILE &&
                a->role == ADDR_SINK && b->role == ADDR_SINK &&
                same_file(a->path, b->path)) {
                config_error(diag, &a->loc,
                             "sink: '%s' is already written by the sink at %s",
                             a->path, at);
                break;
            }
        }
    }
    free(all.v);
}

static void check_follow(struct weir_pipeline *p, struct conf_diag *diag)
{
    struct weir_address *src = p->source;
    char at[32];

    if (src == NULL)
        return;
    if (conf_loc_set(&p->follow_loc) && src->kind != ADDR_FILE) {
        config_error(diag, &p->follow_loc,
                     "follow applies to a file source, not to %s",
                     addr_kind_name(src->kind));
        return;
    }
    if (src->follow_set && conf_loc_set(&p->follow_loc) &&
        src->follow != p->follow) {
        config_error(
            diag, &src->loc, "source: follow=%s contradicts 'follow' at %s",
            src->follow ? "yes" : "no", where(&p->follow_loc, at, sizeof(at)));
        return;
    }
    if (!src->follow_set)
        src->follow = p->follow;
}

static void check_pipeline(struct weir_pipeline *p, struct conf_diag *diag)
{
    struct weir_address *src = p->source;

    if (!conf_loc_set(&p->source_loc))
        config_error(diag, &p->loc, "pipeline '%s' has no source", p->name);
    if (p->sink_keys == 0)
        config_error(diag, &p->loc, "pipeline '%s' has no sink", p->name);
    check_follow(p, diag);
    if (src != NULL && src->kind == ADDR_FILE)
        check_source_file(src, diag);
    if (src != NULL && src->kind == ADDR_UNIX_LISTEN)
        check_created_path(src, "source", diag);
    for (size_t i = 0; i < p->nsinks; i++) {
        struct weir_address *s = p->sinks[i];
        if (s->high_water_mark == 0)
            s->high_water_mark = p->high_water_mark;
        if (s->kind == ADDR_FILE || s->kind == ADDR_UNIX_LISTEN)
            check_created_path(s, "sink", diag);
        if (s->kind == ADDR_FILE && src != NULL && src->kind == ADDR_FILE &&
            same_file(s->path, src->path))
            config_error(diag, &s->loc,
                         "sink: '%s' is the pipeline's own source", s->path);
    }
}

void config_check(struct weir_config *conf, struct conf_diag *diag)
{
    char at[32];

    if (conf->npipelines == 0) {
        struct conf_loc top = {conf->file, 1};
        config_error(diag, &top, "no pipeline: add a [pipeline NAME] section");
    }
    for (size_t i = 0; i < conf->npipelines; i++) {
        struct weir_pipeline *p = conf->pipelines[i];
        for (size_t j = 0; j < i; j++) {
            if (strcmp(conf->pipelines[j]->name, p->name) == 0) {
                config_error(diag, &p->loc,
                             "pipeline '%s' is already defined at %s", p->name,
                             where(&conf->pipelines[j]->loc, at, sizeof(at)));
                break;
            }
        }
        check_pipeline(p, diag);
    }
    check_shared(conf, diag);
}
