/*
 * config_parse.c - weir.conf, read with inih.
 *
 * inih splits key = value lines, strips comments and whitespace, and calls
 * us once per key. Debian's inih has no line number in that callback and no
 * callback for a section header, so we hand it the file ourselves, one
 * physical line at a time, through an ini_reader: the reader counts lines,
 * and it takes the section headers and the malformed lines for itself
 * (reporting each, where inih would report only the first) and hands inih a
 * blank line in their place. A key's callback therefore always comes while
 * the reader's count is the key's own line, whatever comments, blank lines
 * or overlong lines came before it. Continuation lines are turned off: an
 * indented line is a line of its own, never a hidden extra value.
 */
#include "config.h"

#include <ctype.h>
#include <errno.h>
#include <ini.h>
#include <libgen.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>

#include "address.h"
#include "transforms.h"

/* Longer lines are an error; inih's buffer may grow to hold this much. */
#define MAX_LINE 8192

enum section {
    SECTION_NONE, /* before the first header */
    SECTION_DAEMON,
    SECTION_PIPELINE,
    SECTION_IGNORED, /* after a bad header: its keys are not checked */
};

struct parser {
    struct weir_config *conf;
    struct conf_diag diag;
    FILE *in;
    char *line; /* the physical line being handed to inih */
    size_t cap, len, off;
    unsigned lineno;
    enum section section;
    struct weir_pipeline *pipeline;
};

static struct conf_loc here(const struct parser *p)
{
    return (struct conf_loc){p->conf->file, p->lineno};
}

#define PARSE_ERROR(p, ...)                                                    \
    do {                                                                       \
        struct conf_loc loc_ = here(p);                                        \
        config_error(&(p)->diag, &loc_, __VA_ARGS__);                          \
    } while (0)

static bool valid_name(const char *s)
{
    size_t n = strspn(s, "abcdefghijklmnopqrstuvwxyz"
                         "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.-");
    return n > 0 && n <= CONF_MAX_NAME && s[n] == '\0';
}

/* "[daemon]" or "[pipeline NAME]"; `inside` is the trimmed text between
 * the brackets. */
static void begin_section(struct parser *p, char *inside)
{
    char *word = inside, *rest = inside + strcspn(inside, " \t");
    struct conf_loc loc = here(p);

    if (*rest != '\0') {
        *rest++ = '\0';
        rest += strspn(rest, " \t");
    }
    p->section = SECTION_IGNORED;
    p->pipeline = NULL;
    if (strcmp(word, "daemon") == 0) {
        if (*rest != '\0') {
            PARSE_ERROR(p, "[daemon] takes no name");
        } else if (conf_loc_set(&p->conf->daemon.daemon_loc)) {
            PARSE_ERROR(p, "[daemon] is already defined at line %u",
                        p->conf->daemon.daemon_loc.line);
        } else {
            p->conf->daemon.daemon_loc = loc;
            p->section = SECTION_DAEMON;
        }
    } else if (strcmp(word, "pipeline") == 0) {
        if (*rest == '\0') {
            PARSE_ERROR(p, "a pipeline needs a name: [pipeline NAME]");
        } else if (!valid_name(rest)) {
            PARSE_ERROR(p,
                        "bad pipeline name '%s': use up to %d letters, "
                        "digits, '_', '.' or '-'",
                        rest, CONF_MAX_NAME);
        } else {
            p->pipeline = config_add_pipeline(p->conf, rest, &loc);
            if (p->pipeline == NULL)
                PARSE_ERROR(p, "out of memory");
            else
                p->section = SECTION_PIPELINE;
        }
    } else {
        PARSE_ERROR(p,
                    "unknown section '[%s%s%s]': expected [daemon] or "
                    "[pipeline NAME]",
                    word, *rest ? " " : "", rest);
    }
}

/* What a trimmed line holds, by inih's own rules (ini.c, ini_parse_stream):
 * a key ends at '=' or ':', and a ';' after whitespace starts a comment. */
static bool is_key_line(const char *s)
{
    for (const char *c = s; *c; c++) {
        if (*c == '=' || *c == ':')
            return true;
        if (*c == ';' && c > s && isspace((unsigned char)c[-1]))
            return false;
    }
    return false;
}

static void screen_header(struct parser *p, char *s)
{
    char *close = strchr(s, ']'), *after, *inside, *end;

    if (close == NULL) {
        PARSE_ERROR(p, "missing ']' in section header");
        p->section = SECTION_IGNORED;
        return;
    }
    after = close + 1 + strspn(close + 1, " \t");
    if (*after != '\0' && *after != ';' && *after != '#') {
        PARSE_ERROR(p, "unexpected text after ']': '%s'", after);
        p->section = SECTION_IGNORED;
        return;
    }
    *close = '\0';
    inside = s + 1 + strspn(s + 1, " \t");
    for (end = close; end > inside && isspace((unsigned char)end[-1]);)
        *--end = '\0';
    begin_section(p, inside);
}

/*
 * Takes section headers and malformed lines away from inih (see the top of
 * the file). Returns true when inih may have the line as it is. Works on a
 * copy: the line itself must reach inih unchanged, newline included, or
 * inih would take the next line for the rest of this one.
 */
static bool screen_line(struct parser *p)
{
    char *copy, *s, *end;
    bool pass = false;

    if (strlen(p->line) != p->len) {
        PARSE_ERROR(p, "NUL byte in line");
        return false;
    }
    if (p->len > MAX_LINE) {
        PARSE_ERROR(p, "line longer than %d bytes", MAX_LINE);
        return false;
    }
    copy = strdup(p->line);
    if (copy == NULL) {
        PARSE_ERROR(p, "out of memory");
        return false;
    }
    s = copy;
    if (p->lineno == 1 && strncmp(s, "\xEF\xBB\xBF", 3) == 0)
        s += 3; /* a UTF-8 byte-order mark, which inih skips too */
    while (isspace((unsigned char)*s))
        s++;
    end = s + strlen(s);
    while (end > s && isspace((unsigned char)end[-1]))
        *--end = '\0';
    if (*s == '\0' || *s == ';' || *s == '#')
        pass = true;
    else if (*s == '[')
        screen_header(p, s);
    else if (is_key_line(s))
        pass = true;
    else
        PARSE_ERROR(p, "expected 'key = value' or '[section]', not '%s'", s);
    free(copy);
    return pass;
}

/* The ini_reader: serves the current physical line in pieces of at most
 * size-1 bytes, and reads the next one when it is used up. */
static char *read_line(char *buf, int size, void *stream)
{
    struct parser *p = stream;
    size_t n;
    ssize_t got;

    if (p->off >= p->len) {
        got = getline(&p->line, &p->cap, p->in);
        if (got < 0)
            return NULL;
        p->lineno++;
        p->len = (size_t)got;
        p->off = 0;
        if (!screen_line(p)) {
            strcpy(p->line, "\n");
            p->len = 1;
        }
    }
    n = p->len - p->off;
    if (n > (size_t)size - 1)
        n = (size_t)size - 1;
    memcpy(buf, p->line + p->off, n);
    buf[n] = '\0';
    p->off += n;
    return buf;
}

/* True the first time a single-valued key is set; reports the repeat. */
static bool first_time(struct parser *p, struct conf_loc *slot, const char *key)
{
    if (conf_loc_set(slot)) {
        PARSE_ERROR(p, "'%s' is already set at line %u", key, slot->line);
        return false;
    }
    *slot = here(p);
    return true;
}

static void key_source(struct parser *p, const char *value)
{
    struct weir_pipeline *pl = p->pipeline;
    struct conf_loc loc = here(p);
    char err[512];
    int r;

    if (!first_time(p, &pl->source_loc, "source"))
        return;
    r = address_parse(value, ADDR_SOURCE, p->conf->base_dir, &loc, &pl->source,
                      err, sizeof(err));
    if (r < 0)
        PARSE_ERROR(p, "source: %s", err);
}

static void key_sink(struct parser *p, const char *value)
{
    struct weir_pipeline *pl = p->pipeline;
    struct weir_address *a;
    struct conf_loc loc = here(p);
    char err[512];

    pl->sink_keys++;
    if (pl->nsinks == CONF_MAX_SINKS) {
        PARSE_ERROR(p, "more than %d sinks", CONF_MAX_SINKS);
        return;
    }
    if (address_parse(value, ADDR_SINK, p->conf->base_dir, &loc, &a, err,
                      sizeof(err)) < 0) {
        PARSE_ERROR(p, "sink: %s", err);
        return;
    }
    if (pipeline_add_sink(pl, a) < 0) {
        address_free(a);
        PARSE_ERROR(p, "out of memory");
    }
}

static void key_transform(struct parser *p, const char *value)
{
    struct conf_loc loc = here(p);
    char err[256];

    if (p->pipeline->ntransforms == CONF_MAX_TRANSFORMS) {
        PARSE_ERROR(p, "more than %d transforms", CONF_MAX_TRANSFORMS);
        return;
    }
    if (transform_check(value, err, sizeof(err)) < 0)
        PARSE_ERROR(p, "%s", err);
    else if (pipeline_add_transform(p->pipeline, value, &loc) < 0)
        PARSE_ERROR(p, "out of memory");
}

static void key_hwm(struct parser *p, const char *value)
{
    struct weir_pipeline *pl = p->pipeline;
    char err[256];

    if (first_time(p, &pl->high_water_mark_loc, "high_water_mark") &&
        value_size(value, CONF_MIN_HWM, CONF_MAX_HWM, &pl->high_water_mark, err,
                   sizeof(err)) < 0)
        PARSE_ERROR(p, "high_water_mark: %s", err);
}

static void key_chunk_size(struct parser *p, const char *value)
{
    struct weir_pipeline *pl = p->pipeline;
    char err[256];

    if (first_time(p, &pl->chunk_size_loc, "chunk_size") &&
        value_size(value, CONF_MIN_CHUNK, CONF_MAX_CHUNK, &pl->chunk_size, err,
                   sizeof(err)) < 0)
        PARSE_ERROR(p, "chunk_size: %s", err);
}

static void key_follow(struct parser *p, const char *value)
{
    struct weir_pipeline *pl = p->pipeline;
    char err[256];

    if (first_time(p, &pl->follow_loc, "follow") &&
        value_bool(value, &pl->follow, err, sizeof(err)) < 0)
        PARSE_ERROR(p, "follow: %s", err);
}

static void key_workers(struct parser *p, const char *value)
{
    struct weir_daemon_conf *d = &p->conf->daemon;
    uint64_t n;
    char err[256];

    if (!first_time(p, &d->workers_loc, "workers"))
        return;
    if (strcmp(value, "auto") == 0)
        d->workers = 0;
    else if (value_uint(value, 1, CONF_MAX_WORKERS, &n, err, sizeof(err)) < 0)
        PARSE_ERROR(p, "workers: '%s' is neither auto nor a count from 1 to %d",
                    value, CONF_MAX_WORKERS);
    else
        d->workers = (unsigned)n;
}

static void key_log_level(struct parser *p, const char *value)
{
    struct weir_daemon_conf *d = &p->conf->daemon;

    if (first_time(p, &d->log_level_loc, "log_level") &&
        log_level_parse(value, &d->log_level) < 0)
        PARSE_ERROR(p,
                    "log_level: '%s' is not a level: use error, warning, "
                    "info or debug",
                    value);
}

static void key_drain_timeout(struct parser *p, const char *value)
{
    struct weir_daemon_conf *d = &p->conf->daemon;
    char err[256];

    if (first_time(p, &d->drain_timeout_loc, "drain_timeout") &&
        value_duration_ms(value, 0, CONF_MAX_DRAIN_MS, &d->drain_timeout_ms,
                          err, sizeof(err)) < 0)
        PARSE_ERROR(p, "drain_timeout: %s", err);
}

static void key_metrics(struct parser *p, const char *value)
{
    struct weir_daemon_conf *d = &p->conf->daemon;
    struct weir_address *a;
    struct conf_loc loc = here(p);
    char err[256];

    if (d->metrics != NULL) {
        PARSE_ERROR(p, "'metrics' is already set at line %u",
                    d->metrics->loc.line);
        return;
    }
    a = calloc(1, sizeof(*a));
    if (a == NULL || (a->text = strdup(value)) == NULL) {
        free(a);
        PARSE_ERROR(p, "out of memory");
        return;
    }
    a->kind = ADDR_TCP_LISTEN;
    a->loc = loc;
    if (address_parse_hostport(value, &a->host, &a->ipv6, &a->port, err,
                               sizeof(err)) < 0) {
        PARSE_ERROR(p, "metrics: %s", err);
        address_free(a);
        return;
    }
    d->metrics = a;
}

struct key_def {
    enum section section;
    const char *name;
    void (*set)(struct parser *p, const char *value);
};

static const struct key_def keys[] = {
    {SECTION_DAEMON, "workers", key_workers},
    {SECTION_DAEMON, "log_level", key_log_level},
    {SECTION_DAEMON, "drain_timeout", key_drain_timeout},
    {SECTION_DAEMON, "metrics", key_metrics},
    {SECTION_PIPELINE, "source", key_source},
    {SECTION_PIPELINE, "sink", key_sink},
    {SECTION_PIPELINE, "transform", key_transform},
    {SECTION_PIPELINE, "high_water_mark", key_hwm},
    {SECTION_PIPELINE, "chunk_size", key_chunk_size},
    {SECTION_PIPELINE, "follow", key_follow},
    {SECTION_NONE, NULL, NULL},
};

static const char *section_label(enum section s)
{
    return s == SECTION_DAEMON ? "[daemon]" : "[pipeline]";
}

static int on_key(void *user, const char *section, const char *name,
                  const char *value)
{
    struct parser *p = user;
    const struct key_def *k, *other = NULL;

    (void)section; /* ours comes from the reader; see the top */
    if (p->section == SECTION_IGNORED)
        return 1;
    if (*name == '\0') {
        PARSE_ERROR(p, "missing key before '='");
        return 1;
    }
    if (p->section == SECTION_NONE) {
        PARSE_ERROR(p,
                    "'%s' is outside a section: put it under [daemon] or "
                    "[pipeline NAME]",
                    name);
        return 1;
    }
    for (k = keys; k->name != NULL; k++) {
        if (strcmp(k->name, name) == 0 && k->section == p->section)
            break;
        if (strcasecmp(k->name, name) == 0)
            other = k;
    }
    if (k->name == NULL) {
        if (other != NULL && other->section != p->section &&
            strcmp(other->name, name) == 0)
            PARSE_ERROR(p, "'%s' belongs in %s, not in %s", name,
                        section_label(other->section),
                        section_label(p->section));
        else if (other != NULL && other->section == p->section)
            PARSE_ERROR(p, "unknown key '%s' in %s (did you mean '%s'?)", name,
                        section_label(p->section), other->name);
        else
            PARSE_ERROR(p, "unknown key '%s' in %s", name,
                        section_label(p->section));
        return 1;
    }
    /* source and sink take even an empty value, so the pipeline counts
     * them and does not also report "no source". */
    if (*value == '\0' && k->set != key_source && k->set != key_sink) {
        PARSE_ERROR(p, "'%s' needs a value", name);
        return 1;
    }
    k->set(p, value);
    return 1;
}

static struct weir_config *parse_stream(FILE *in, const char *name,
                                        const char *base_dir, unsigned *errors)
{
    struct parser p = {.in = in};
    int r;

    p.conf = config_new(name, base_dir);
    if (p.conf == NULL) {
        log_errx("%s: out of memory", name);
        *errors = 1;
        return NULL;
    }
    /* inih's settings are process-wide; only this file parses INI. */
    ini_allow_multiline = false;
    ini_use_stack = false;
    ini_allow_realloc = true;
    ini_max_line = MAX_LINE + 3;
    r = ini_parse_stream(read_line, &p, on_key, &p);
    free(p.line);
    if (r == -2) {
        struct conf_loc loc = here(&p);
        config_error(&p.diag, &loc, "out of memory");
    }
    if (ferror(in)) {
        log_errx("%s: read error", name);
        p.diag.errors++;
    }
    config_check(p.conf, &p.diag);
    *errors = p.diag.errors;
    if (p.diag.errors == 0)
        return p.conf;
    config_free(p.conf);
    return NULL;
}

struct weir_config *config_load_file(const char *path, unsigned *errors)
{
    char *copy = strdup(path), *dir, real[PATH_MAX];
    struct weir_config *conf = NULL;
    struct stat st;
    FILE *in;

    *errors = 1;
    if (copy == NULL) {
        log_errx("%s: out of memory", path);
        return NULL;
    }
    dir = dirname(copy);
    in = fopen(path, "re");
    if (in == NULL) {
        log_errx("%s: %s", path, strerror(errno));
    } else if (fstat(fileno(in), &st) == 0 && S_ISDIR(st.st_mode)) {
        log_errx("%s: %s", path, strerror(EISDIR));
        fclose(in);
    } else if (realpath(dir, real) == NULL) {
        log_errx("%s: %s", dir, strerror(errno));
        fclose(in);
    } else {
        conf = parse_stream(in, path, real, errors);
        fclose(in);
    }
    free(copy);
    return conf;
}

struct weir_config *config_load_string(const char *text, const char *name,
                                       const char *base_dir, unsigned *errors)
{
    struct weir_config *conf;
    FILE *in = fmemopen((void *)text, strlen(text), "r");

    if (in == NULL) {
        log_errx("%s: %s", name, strerror(errno));
        *errors = 1;
        return NULL;
    }
    conf = parse_stream(in, name, base_dir, errors);
    fclose(in);
    return conf;
}
