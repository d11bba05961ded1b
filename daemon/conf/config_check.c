/*
 * config_check.c - the checks that need the whole config: what one line
 * cannot tell (a pipeline without a sink, two pipelines on one port, a
 * source file that cannot be read). They add to the parser's error count,
 * and they also settle the values that depend on other lines (a sink's
 * high-water mark defaults to its pipeline's).
 */
#include "conf/config.h"

#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <fcntl.h>
#include <fnmatch.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include "conf/address.h"
#include "conf/keymap.h"
#include "conf/tls.h"

#define GLOB_KEYS 11

/* "line 12" in a file, "argument 3" on the command line. */
static const char *where(const struct conf_loc *loc, char *buf, size_t len)
{
    snprintf(buf, len, "%s %u", loc->file ? "line" : "argument", loc->line);
    return buf;
}

static void check_created_path(const struct weir_address *a, const char *what,
                               struct conf_diag *diag);

static void check_source_file(const struct weir_address *a, bool follow,
                              struct conf_diag *diag)
{
    struct stat st;
    int fd;

    /* O_NONBLOCK: opening a FIFO for reading must not wait for a writer. */
    fd = open(a->path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0 && errno == ENOENT && follow) {
        /* A log that is not there yet is waited for; its directory must
         * be, or it never will. */
        check_created_path(a, "source", diag);
        return;
    }
    if (fd < 0) {
        config_error(diag, &a->loc, "source: cannot open '%s' for reading: %s",
                     a->path, strerror(errno));
        return;
    }
    if (fstat(fd, &st) != 0)
        config_error(diag, &a->loc, "source: cannot stat '%s': %s", a->path,
                     strerror(errno));
    else if (S_ISDIR(st.st_mode))
        config_error(diag, &a->loc, "source: '%s' is a directory", a->path);
    else if (!S_ISREG(st.st_mode) && !a->fifo)
        /* Reading one may wait for a writer forever, or never end. */
        config_error(diag, &a->loc,
                     "source: '%s' is not a regular file (a FIFO or a device "
                     "is read with fifo=yes)",
                     a->path);
    else if (a->fifo && follow)
        config_error(diag, &a->loc,
                     "source: fifo=yes and follow exclude each other (a FIFO "
                     "is read until weir stops)");
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

/* What names a file however it is spelled: its inode when it exists, else
 * its path (already absolute and without "." and ".." is not promised, so
 * the directory is resolved when it exists). */
static void file_key(const char *path, char *key, size_t len)
{
    char *copy, *dir, resolved[PATH_MAX];
    const char *base = strrchr(path, '/');
    struct stat st;

    /* weir pipe leaves a relative path as written: "out" has no '/'. */
    base = base ? base + 1 : path;
    if (stat(path, &st) == 0) {
        snprintf(key, len, "f:%llu:%llu", (unsigned long long)st.st_dev,
                 (unsigned long long)st.st_ino);
        return;
    }
    copy = strdup(path);
    dir = copy ? dirname(copy) : NULL;
    if (dir && realpath(dir, resolved))
        snprintf(key, len, "p:%s/%s", resolved, base);
    else
        snprintf(key, len, "p:%s", path);
    free(copy);
}

static bool wildcard_host(const char *host)
{
    return strcmp(host, "0.0.0.0") == 0 || strcmp(host, "::") == 0;
}

static const char *role_of(const struct weir_address *a)
{
    return a->role == ADDR_SOURCE ? "a source" : "a sink";
}

/*
 * The addresses seen so far, one lookup each: the listen addresses by
 * kind and port (and by host, for the exact repeat), each port's first
 * wildcard and first address, the file sinks by file, stdin and stdout.
 */
struct shared {
    struct keymap seen;
    const struct weir_address *metrics;
};

/* The address a conflicts with, or NULL; a is remembered. */
static const struct weir_address *listener_clash(struct shared *sh,
                                                 const struct weir_address *a)
{
    const struct weir_address *b;
    char key[PATH_MAX + 32];

    if (a->kind == ADDR_UNIX_LISTEN) {
        snprintf(key, sizeof(key), "u:%s", a->path);
        return keymap_put(&sh->seen, key, a);
    }
    /* The same host and port, then a wildcard on either side (on Linux
     * 0.0.0.0:P and [::]:P each cover the other's addresses too). */
    snprintf(key, sizeof(key), "t:%u:%s", a->port, a->host);
    for (char *c = key; *c; c++)
        *c = (char)tolower((unsigned char)*c);
    if ((b = keymap_put(&sh->seen, key, a)))
        return b;
    snprintf(key, sizeof(key), "w:%u", a->port);
    if ((b = keymap_get(&sh->seen, key)))
        return b;
    if (wildcard_host(a->host))
        keymap_put(&sh->seen, key, a);
    snprintf(key, sizeof(key), "a:%u", a->port);
    b = keymap_put(&sh->seen, key, a);
    return wildcard_host(a->host) ? b : NULL;
}

static void check_one(struct shared *sh, const struct weir_address *a,
                      struct conf_diag *diag)
{
    const struct weir_address *b = NULL;
    char key[PATH_MAX + 32], at[32];

    if (addr_kind_listens(a->kind) && (b = listener_clash(sh, a))) {
        config_error(diag, &a->loc, "%s: %s is already listened on by %s at %s",
                     a->role == ADDR_SOURCE ? "source" : "sink", a->text,
                     b == sh->metrics ? "metrics" : role_of(b),
                     where(&b->loc, at, sizeof(at)));
    } else if (a->kind == ADDR_STDIN &&
               (b = keymap_put(&sh->seen, "stdin", a))) {
        config_error(diag, &a->loc, "source: stdin is already read at %s",
                     where(&b->loc, at, sizeof(at)));
    } else if (a->kind == ADDR_STDOUT &&
               (b = keymap_put(&sh->seen, "stdout", a))) {
        config_error(diag, &a->loc, "sink: stdout is already written at %s",
                     where(&b->loc, at, sizeof(at)));
    } else if (a->kind == ADDR_FILE && a->role == ADDR_SINK) {
        file_key(a->path, key, sizeof(key));
        if ((b = keymap_put(&sh->seen, key, a)))
            config_error(diag, &a->loc,
                         "sink: '%s' is already written by the sink at %s",
                         a->path, where(&b->loc, at, sizeof(at)));
    }
}

/* Each address against the ones before it: one error per repeat. */
static void check_shared(struct weir_config *conf, struct conf_diag *diag)
{
    struct shared sh = {.metrics = conf->daemon.metrics};

    if (conf->daemon.metrics != NULL)
        check_one(&sh, conf->daemon.metrics, diag);
    for (size_t i = 0; i < conf->npipelines; i++) {
        struct weir_pipeline *p = conf->pipelines[i];

        if (p->source != NULL)
            check_one(&sh, p->source, diag);
        for (size_t j = 0; j < p->nsinks; j++)
            check_one(&sh, p->sinks[j], diag);
    }
    keymap_free(&sh.seen);
}

static void check_follow(struct weir_pipeline *p, bool oneshot,
                         struct conf_diag *diag)
{
    struct weir_address *src = p->source;
    char at[32];

    if (src == NULL)
        return;
    if (conf_loc_set(&p->follow_loc) && src->kind != ADDR_FILE &&
        src->kind != ADDR_FILE_SET) {
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
    /* A glob source follows unless told not to: its files are logs that
     * grow and appear. `weir pipe` reads it once unless given --follow,
     * as it does a file. */
    if (src->kind == ADDR_FILE_SET && !src->follow_set &&
        !conf_loc_set(&p->follow_loc) && !oneshot)
        p->follow = true;
    if (!src->follow_set)
        src->follow = p->follow;
    if (conf_loc_set(&p->read_from_loc) && !src->follow)
        config_error(diag, &p->read_from_loc,
                     "read_from applies to a followed file (follow = yes)");
}

/* The keys only a glob source takes, with where each was set. */
static void glob_keys(struct weir_pipeline *p, const char **names,
                      const struct conf_loc **locs)
{
    const char *n[] = {"exclude",         "ignore_older",   "rotate_wait",
                       "line_timeout",    "max_open_files", "rescan_interval",
                       "framing",         "max_record",     "on_long",
                       "multiline_start", "format"};
    const struct conf_loc *l[] = {
        &p->exclude_loc,        &p->ignore_older_loc,
        &p->rotate_wait_loc,    &p->line_timeout_loc,
        &p->max_open_files_loc, &p->rescan_interval_loc,
        &p->framing_loc,        &p->max_record_loc,
        &p->on_long_loc,        &p->multiline_start_loc,
        &p->format_loc};

    _Static_assert(sizeof(n) / sizeof(n[0]) == GLOB_KEYS, "one loc a key");
    memcpy(names, n, sizeof(n));
    memcpy(locs, l, sizeof(l));
}

/*
 * A glob source: its keys elsewhere are errors, and what it cannot be
 * joined with. A directory that does not exist yet is fine (logs of a
 * service not installed yet); a warning says so, since a typo there
 * would wait for ever too.
 */
static void check_file_set(struct weir_pipeline *p, struct conf_diag *diag)
{
    struct weir_address *src = p->source;
    const char *names[GLOB_KEYS];
    const struct conf_loc *locs[GLOB_KEYS];
    char *dir;
    size_t cut;
    struct stat st;

    glob_keys(p, names, locs);
    if (src == NULL)
        return;
    /* `framing = lines` on one named file asks for what a glob source
     * gives: records, and a renamed or copied file finished by its
     * fingerprint. A pattern without wildcards names that file alone. */
    if (src->kind == ADDR_FILE && src->role == ADDR_SOURCE && !src->fifo &&
        conf_loc_set(&p->framing_loc) && !p->framing_bytes)
        src->kind = ADDR_FILE_SET;
    if (src->kind != ADDR_FILE_SET) {
        for (size_t i = 0; i < GLOB_KEYS; i++)
            if (conf_loc_set(locs[i]))
                config_error(diag, locs[i],
                             "%s applies to a glob source (file:PATTERN, a "
                             "path with * ? or [, or a file with framing = "
                             "lines), not to %s",
                             names[i], src->text);
        return;
    }
    if (p->framing_bytes)
        config_error(diag, &p->framing_loc,
                     "framing = bytes cannot take a glob source: the files' "
                     "bytes would interleave mid-line (use lines)");
    for (size_t i = 0; i < p->nsinks; i++)
        if (addr_kind_listens(p->sinks[i]->kind))
            config_error(diag, &p->sinks[i]->loc,
                         "sink: a listen sink serves one file; %s is a glob "
                         "source (use a connecting sink)",
                         src->text);
    /* The fixed directory: the parts before the first with a wildcard. */
    cut = strcspn(src->path, "*?[");
    dir = strndup(src->path, cut);
    if (dir == NULL)
        return;
    *(strrchr(dir, '/') == dir ? dir + 1 : strrchr(dir, '/')) = '\0';
    if (stat(dir, &st) != 0)
        config_warning(diag, &src->loc,
                       "source: directory '%s' does not exist (%s): files "
                       "are picked up once it does",
                       dir, strerror(errno));
    else if (!S_ISDIR(st.st_mode))
        config_error(diag, &src->loc, "source: '%s' is not a directory", dir);
    free(dir);
}

/* A secret's file must be there and readable by the user weir runs as
 * (it is read at the start, never logged). */
static void check_secret(const struct weir_address *a, const char *key,
                         const char *path, struct conf_diag *diag)
{
    if (path != NULL && access(path, R_OK) != 0)
        config_error(diag, &a->loc, "%s: %s '%s': %s",
                     a->role == ADDR_SOURCE ? "source" : "sink", key, path,
                     strerror(errno));
}

/* A jetstream source: its files readable, and its consumer named (by
 * default weir_ and the pipeline's name, its bytes outside
 * [A-Za-z0-9_-] as '_'). */
static void check_js_source(const struct weir_pipeline *p,
                            struct weir_address *a, struct conf_diag *diag)
{
    check_secret(a, "creds", a->creds, diag);
    check_secret(a, "ca", a->ca, diag);
    if (a->ack_wait_ms == 0)
        a->ack_wait_ms = CONF_DEFAULT_JS_ACK_WAIT_MS;
    if (a->consumer == NULL && (a->consumer = malloc(strlen(p->name) + 6))) {
        char *c = a->consumer + sprintf(a->consumer, "weir_");

        for (const char *n = p->name; *n; n++)
            *c++ = isalnum((unsigned char)*n) || *n == '-' ? *n : '_';
        *c = '\0';
    }
}

/* The dead letters' file is opened at the start: its directory must be
 * there. */
static void check_dead_letter(const struct weir_address *a,
                              struct conf_diag *diag)
{
    char *copy, *dir;
    struct stat st;

    if (a->dead_letter == NULL || (copy = strdup(a->dead_letter)) == NULL)
        return;
    dir = dirname(copy);
    if (stat(dir, &st) != 0)
        config_error(diag, &a->loc, "sink: dead_letter directory '%s': %s", dir,
                     strerror(errno));
    else if (!S_ISDIR(st.st_mode))
        config_error(diag, &a->loc,
                     "sink: dead_letter: '%s' is not a directory", dir);
    free(copy);
}

static void check_http(const struct weir_address *a, struct conf_diag *diag)
{
    if ((a->user == NULL) != (a->password_file == NULL))
        config_error(diag, &a->loc,
                     "sink: user= and password_file= go together (basic "
                     "authentication)");
    if (a->auth_file != NULL && a->user != NULL)
        config_error(diag, &a->loc,
                     "sink: auth_file= (a bearer token) and user= (basic "
                     "authentication) exclude each other");
    if ((a->ca != NULL || !a->verify) && strncmp(a->url, "https:", 6) != 0)
        config_error(diag, &a->loc,
                     "sink: ca= and verify= apply to https, not to http");
    if (a->preset != WEIR_HTTP_ELASTICSEARCH && a->index != NULL)
        config_error(diag, &a->loc,
                     "sink: index= applies to preset=elasticsearch");
    if (a->preset != WEIR_HTTP_LOKI && a->preset != WEIR_HTTP_OTLP &&
        a->nlabels != 0)
        config_error(diag, &a->loc,
                     "sink: label= applies to preset=loki and preset=otlp");
    for (unsigned i = 0; a->preset == WEIR_HTTP_LOKI && i < a->nlabels; i++)
        if (strcspn(a->labels[i], ".") < strcspn(a->labels[i], "="))
            config_error(diag, &a->loc,
                         "sink: label %s: a Loki label name has no '.' "
                         "(letters, digits, '_')",
                         a->labels[i]);
    check_secret(a, "auth_file", a->auth_file, diag);
    check_secret(a, "password_file", a->password_file, diag);
    check_dead_letter(a, diag);
}

/* A kafka sink's settings as librdkafka reads them (its sentence when it
 * refuses one); no broker is contacted. */
static void check_kafka(const struct weir_address *a, struct conf_diag *diag)
{
    struct weir_kafka_sink_options ko = {
        .hwm = a->high_water_mark,
        .brokers = a->brokers,
        .topic = a->topic,
        .compression = a->kafka_compression,
        .props = (const char *const *)a->kafka_props,
        .nprops = a->nkafka_props,
    };
    char err[512];

    if (weir_kafka_check(&ko, err, sizeof(err)) != 0)
        config_error(diag, &a->loc, "sink: %s", err);
    check_dead_letter(a, diag);
}

/* http-listen sinks serve a file (at / or path=) or a dir source's
 * files, and a dir source has no other kind of sink. */
static void check_serve_http(const struct weir_pipeline *p,
                             struct conf_diag *diag)
{
    const struct weir_address *src = p->source;
    bool dir = src != NULL && src->kind == ADDR_DIR;
    struct stat st;

    if (dir && stat(src->path, &st) != 0)
        config_error(diag, &src->loc, "source: %s: %s", src->path,
                     strerror(errno));
    else if (dir && !S_ISDIR(st.st_mode))
        config_error(diag, &src->loc, "source: %s is not a directory",
                     src->path);
    for (size_t i = 0; src != NULL && i < p->nsinks; i++) {
        const struct weir_address *s = p->sinks[i];

        if (!s->serve_http) {
            if (dir)
                config_error(diag, &s->loc,
                             "sink: a dir source is served by http-listen "
                             "sinks only; %s is not one",
                             s->text);
            continue;
        }
        if (!dir && (src->kind != ADDR_FILE || src->follow || src->fifo))
            config_error(diag, &s->loc,
                         "sink: %s serves a file or a dir source; %s is not "
                         "one (a followed file, a FIFO or a glob is not "
                         "served over HTTP)",
                         s->text, src->text);
        if (s->access_format_set && !s->access_log)
            config_error(diag, &s->loc,
                         "sink: request_log_format= applies with request_log=, "
                         "which "
                         "%s does not have",
                         s->text);
        if (!dir && s->dir_index)
            config_error(diag, &s->loc,
                         "sink: index= lists a dir source's directories; "
                         "%s is a file",
                         src->text);
        if (dir && s->url_path)
            config_error(diag, &s->loc,
                         "sink: path= applies to a file source; a dir "
                         "source's files are at their own paths");
        for (size_t j = 0; j < p->nsinks; j++)
            if (!p->sinks[j]->serve_http) {
                config_error(diag, &s->loc,
                             "sink: an http-listen sink must be the "
                             "pipeline's only kind of sink (%s)",
                             p->sinks[j]->text);
                break;
            }
    }
}

static void check_pipeline(struct weir_pipeline *p, bool oneshot,
                           struct conf_diag *diag)
{
    struct weir_address *src = p->source;

    if (!conf_loc_set(&p->source_loc))
        config_error(diag, &p->loc, "pipeline '%s' has no source", p->name);
    if (p->sink_keys == 0)
        config_error(diag, &p->loc, "pipeline '%s' has no sink", p->name);
    check_follow(p, oneshot, diag);
    check_file_set(p, diag);
    check_serve_http(p, diag);
    if (src != NULL && src->kind == ADDR_FILE)
        check_source_file(src, p->follow || src->follow, diag);
    if (src != NULL && src->kind == ADDR_UNIX_LISTEN)
        check_created_path(src, "source", diag);
    if (src != NULL && src->kind == ADDR_JETSTREAM)
        check_js_source(p, src, diag);
    if (src != NULL)
        conf_tls_check(src, diag);
    for (size_t i = 0; i < p->nsinks; i++) {
        struct weir_address *s = p->sinks[i];
        if (s->high_water_mark == 0)
            s->high_water_mark = p->high_water_mark;
        /* The daemon never truncates what it did not say it would (a
         * restart must not wipe what it wrote); weir pipe writes a file
         * afresh, as a shell's > does. */
        if (s->kind == ADDR_FILE && !s->append_set)
            s->append = !oneshot;
        if (s->kind == ADDR_FILE || s->kind == ADDR_UNIX_LISTEN)
            check_created_path(s, "sink", diag);
        if (s->kind == ADDR_HTTP)
            check_http(s, diag);
        if (s->kind == ADDR_KAFKA)
            check_kafka(s, diag);
        if (s->kind == ADDR_JETSTREAM) {
            check_secret(s, "creds", s->creds, diag);
            check_secret(s, "ca", s->ca, diag);
            check_dead_letter(s, diag);
        }
        conf_tls_check(s, diag);
        /* The series and the board tell sinks apart by their label (an
         * address written twice is another check's). */
        for (size_t j = 0; j < i; j++)
            if (strcmp(p->sinks[j]->label, s->label) == 0 &&
                strcmp(p->sinks[j]->text, s->text) != 0) {
                config_error(diag, &s->loc,
                             "sink: pipeline '%s' already has a sink called "
                             "'%s' (its address without options); give one "
                             "of them name=",
                             p->name, s->label);
                break;
            }
        if (s->kind == ADDR_FILE && src != NULL && src->kind == ADDR_FILE &&
            same_file(s->path, src->path))
            config_error(diag, &s->loc,
                         "sink: '%s' is the pipeline's own source", s->path);
        /* A sink the pattern matches would read its own output back. */
        if (s->kind == ADDR_FILE && src != NULL && src->kind == ADDR_FILE_SET &&
            fnmatch(src->path, s->path, FNM_PATHNAME | FNM_PERIOD) == 0)
            config_error(diag, &s->loc,
                         "sink: '%s' matches the pipeline's own source %s",
                         s->path, src->path);
    }
}

/*
 * A state directory weir cannot write is a warning, not an error: the
 * pipelines ship without checkpoints (a restart then resends, or reads
 * from read_from). It is made when missing, so its parent counts then.
 */
static void check_state_dir(const struct weir_config *conf)
{
    const struct weir_daemon_conf *d = &conf->daemon;
    const char *dir = d->state_directory;
    char parent[PATH_MAX], *slash;

    if (conf->oneshot || !config_follows(conf) || dir == NULL)
        return;
    if (access(dir, W_OK | X_OK) == 0)
        return;
    if (errno == ENOENT) {
        snprintf(parent, sizeof(parent), "%s", dir);
        slash = strrchr(parent, '/');
        if (slash)
            *(slash == parent ? slash + 1 : slash) = '\0';
        if (access(parent, W_OK | X_OK) == 0)
            return;
    }
    if (conf_loc_set(&d->state_directory_loc))
        log_warnx("%s:%u: state_directory %s cannot be written (%s): "
                  "followed files will not keep checkpoints",
                  d->state_directory_loc.file, d->state_directory_loc.line, dir,
                  strerror(errno));
    else
        log_warnx("state_directory %s cannot be written (%s): followed "
                  "files will not keep checkpoints",
                  dir, strerror(errno));
}

void config_check(struct weir_config *conf, struct conf_diag *diag)
{
    struct keymap names = {0};
    char at[32];

    if (conf->npipelines == 0) {
        struct conf_loc top = {conf->file, 1};
        config_error(diag, &top, "no pipeline: add a [pipeline NAME] section");
    }
    for (size_t i = 0; i < conf->npipelines; i++) {
        struct weir_pipeline *p = conf->pipelines[i];
        const struct weir_pipeline *q = keymap_put(&names, p->name, p);

        if (q)
            config_error(diag, &p->loc,
                         "pipeline '%s' is already defined at %s", p->name,
                         where(&q->loc, at, sizeof(at)));
        check_pipeline(p, conf->oneshot, diag);
    }
    keymap_free(&names);
    check_shared(conf, diag);
    check_state_dir(conf);
}
