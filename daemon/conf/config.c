/*
 * config.c - the config model: building, freeing, and reporting errors.
 */
#include "conf/config.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "conf/address.h"

/* Messages past this many are only counted: a config generated wrong can
 * have an error on every line. */
#define CONF_MSGS_HELD (CONF_ERRORS_SHOWN * 16)

static unsigned file_index(struct conf_diag *diag, const char *file)
{
    const char **files;

    for (unsigned i = 0; i < diag->nfiles; i++)
        if (strcmp(diag->files[i], file) == 0)
            return i;
    files = realloc(diag->files, (diag->nfiles + 1) * sizeof(*files));
    if (files == NULL)
        return diag->nfiles; /* sorts after the known ones */
    diag->files = files;
    diag->files[diag->nfiles] = file;
    return diag->nfiles++;
}

static void hold(struct conf_diag *diag, const struct conf_loc *loc,
                 bool warning, const char *fmt, va_list ap)
{
    char msg[1024], where[600];
    struct conf_msg *m;

    if (diag->nmsgs == diag->cap) {
        size_t cap = diag->cap ? diag->cap * 2 : 16;
        struct conf_msg *msgs;

        if (diag->nmsgs >= CONF_MSGS_HELD ||
            !(msgs = realloc(diag->msgs, cap * sizeof(*msgs))))
            return;
        diag->msgs = msgs;
        diag->cap = cap;
    }
    vsnprintf(msg, sizeof(msg), fmt, ap);
    if (loc->file != NULL)
        snprintf(where, sizeof(where), "%s:%u", loc->file, loc->line);
    else
        snprintf(where, sizeof(where), "argument %u", loc->line);
    m = &diag->msgs[diag->nmsgs];
    *m = (struct conf_msg){
        .file = loc->file ? file_index(diag, loc->file) : 0,
        .line = loc->line,
        .seq = (unsigned)diag->nmsgs,
        .warning = warning,
    };
    if (asprintf(&m->text, "%s: %s%s", where, warning ? "warning: " : "",
                 msg) >= 0)
        diag->nmsgs++;
}

void config_error(struct conf_diag *diag, const struct conf_loc *loc,
                  const char *fmt, ...)
{
    va_list ap;

    diag->errors++;
    va_start(ap, fmt);
    hold(diag, loc, false, fmt, ap);
    va_end(ap);
}

void config_warning(struct conf_diag *diag, const struct conf_loc *loc,
                    const char *fmt, ...)
{
    va_list ap;

    diag->warnings++;
    va_start(ap, fmt);
    hold(diag, loc, true, fmt, ap);
    va_end(ap);
}

static int by_place(const void *pa, const void *pb)
{
    const struct conf_msg *a = pa, *b = pb;

    if (a->file != b->file)
        return a->file < b->file ? -1 : 1;
    if (a->line != b->line)
        return a->line < b->line ? -1 : 1;
    return a->seq < b->seq ? -1 : a->seq > b->seq;
}

void config_diag_flush(struct conf_diag *diag)
{
    unsigned shown = 0;

    if (diag->nmsgs > 1)
        qsort(diag->msgs, diag->nmsgs, sizeof(*diag->msgs), by_place);
    for (size_t i = 0; i < diag->nmsgs; i++) {
        struct conf_msg *m = &diag->msgs[i];

        if (m->warning)
            log_warnx("%s", m->text);
        else if (shown++ < CONF_ERRORS_SHOWN)
            log_errx("%s", m->text);
        free(m->text);
    }
    free(diag->msgs);
    free(diag->files);
    diag->msgs = NULL;
    diag->files = NULL;
    diag->nmsgs = diag->cap = 0;
    diag->nfiles = 0;
}

/* systemd names the unit's StateDirectory= in $STATE_DIRECTORY (several,
 * colon-separated, when the unit has several): the first one. */
char *config_default_state_dir(void)
{
    const char *e = getenv("STATE_DIRECTORY");
    size_t n;

    if (e == NULL || e[0] != '/')
        return strdup(CONF_DEFAULT_STATE_DIR);
    n = strcspn(e, ":");
    return strndup(e, n);
}

bool config_follows(const struct weir_config *conf)
{
    for (size_t i = 0; i < conf->npipelines; i++) {
        const struct weir_pipeline *p = conf->pipelines[i];

        if (p->source && p->source->kind == ADDR_FILE &&
            (p->follow || p->source->follow))
            return true;
        /* A glob source keeps checkpoints, following or not: a one-off
         * import stopped half way resumes where it was. */
        if (p->source && p->source->kind == ADDR_FILE_SET)
            return true;
    }
    return false;
}

/* The control socket when the config names none: in the unit's
 * RuntimeDirectory under systemd ($RUNTIME_DIRECTORY); /run/weir for
 * root; $XDG_RUNTIME_DIR/weir for another user, whose session has one. A
 * path too long for a unix socket falls back to CONF_DEFAULT_CONTROL. */
char *config_default_control(void)
{
    const char *rt = getenv("RUNTIME_DIRECTORY");
    const char *xdg = getenv("XDG_RUNTIME_DIR");
    char path[CONF_MAX_CONTROL + 1];
    int n = -1;

    if (rt && rt[0] == '/')
        n = snprintf(path, sizeof(path), "%.*s/control", (int)strcspn(rt, ":"),
                     rt);
    else if (geteuid() != 0 && xdg && xdg[0] == '/')
        n = snprintf(path, sizeof(path), "%s/weir/control", xdg);
    if (n < 0 || n >= (int)sizeof(path))
        return strdup(CONF_DEFAULT_CONTROL);
    return strdup(path);
}

struct weir_config *config_new(const char *file, const char *base_dir)
{
    struct weir_config *conf = calloc(1, sizeof(*conf));

    if (conf == NULL)
        return NULL;
    conf->daemon.log_level = LOG_LEVEL_INFO;
    conf->daemon.drain_timeout_ms = CONF_DEFAULT_DRAIN_MS;
    conf->daemon.access_log = true;
    conf->daemon.control_socket = config_default_control();
    if (conf->daemon.control_socket == NULL)
        goto fail;
    conf->daemon.pool_size = CONF_DEFAULT_POOL;
    conf->daemon.checkpoint_interval_ms = CONF_DEFAULT_CKPT_MS;
    if ((conf->daemon.state_directory = config_default_state_dir()) == NULL)
        goto fail;
    if (file != NULL && (conf->file = strdup(file)) == NULL)
        goto fail;
    if (base_dir != NULL && (conf->base_dir = strdup(base_dir)) == NULL)
        goto fail;
    return conf;
fail:
    config_free(conf);
    return NULL;
}

struct weir_pipeline *config_add_pipeline(struct weir_config *conf,
                                          const char *name,
                                          const struct conf_loc *loc)
{
    struct weir_pipeline **v, *p = calloc(1, sizeof(*p));

    if (p == NULL)
        return NULL;
    p->name = strdup(name);
    v = reallocarray(conf->pipelines, conf->npipelines + 1, sizeof(*v));
    if (p->name == NULL || v == NULL) {
        free(p->name);
        free(p);
        return NULL;
    }
    p->loc = *loc;
    p->high_water_mark = CONF_DEFAULT_HWM;
    p->chunk_size = CONF_DEFAULT_CHUNK;
    p->keepalive = true;
    p->keepalive_idle_ms = CONF_DEFAULT_KEEPALIVE_IDLE_MS;
    p->tcp_user_timeout_ms = CONF_DEFAULT_TCP_USER_TIMEOUT_MS;
    p->send_timeout_ms = CONF_DEFAULT_SEND_TIMEOUT_MS;
    p->connect_timeout_ms = CONF_DEFAULT_CONNECT_TIMEOUT_MS;
    p->flush_interval_ms = CONF_DEFAULT_FLUSH_INTERVAL_MS;
    p->rotate_wait_ms = CONF_DEFAULT_ROTATE_WAIT_MS;
    p->line_timeout_ms = CONF_DEFAULT_LINE_TIMEOUT_MS;
    p->max_open_files = CONF_DEFAULT_MAX_OPEN_FILES;
    p->rescan_interval_ms = CONF_DEFAULT_RESCAN_MS;
    p->max_record = CONF_DEFAULT_MAX_RECORD;
    conf->pipelines = v;
    conf->pipelines[conf->npipelines++] = p;
    return p;
}

int config_add_sink(struct weir_pipeline *p, struct weir_address *sink)
{
    struct weir_address **v = reallocarray(p->sinks, p->nsinks + 1, sizeof(*v));

    if (v == NULL)
        return -ENOMEM;
    p->sinks = v;
    p->sinks[p->nsinks++] = sink;
    return 0;
}

int config_add_transform(struct weir_pipeline *p, const char *spec,
                         const struct conf_loc *loc)
{
    struct conf_transform *v =
        reallocarray(p->transforms, p->ntransforms + 1, sizeof(*v));
    char *copy;

    if (v == NULL)
        return -ENOMEM;
    p->transforms = v;
    copy = strdup(spec);
    if (copy == NULL)
        return -ENOMEM;
    p->transforms[p->ntransforms++] = (struct conf_transform){copy, *loc};
    return 0;
}

static void pipeline_conf_free(struct weir_pipeline *p)
{
    address_free(p->source);
    for (size_t i = 0; i < p->nsinks; i++)
        address_free(p->sinks[i]);
    free(p->sinks);
    for (size_t i = 0; i < p->ntransforms; i++)
        free(p->transforms[i].spec);
    free(p->transforms);
    for (size_t i = 0; i < p->nexclude; i++)
        free(p->exclude[i]);
    free(p->exclude);
    free(p->multiline_start);
    free(p->name);
    free(p);
}

void config_free(struct weir_config *conf)
{
    if (conf == NULL)
        return;
    for (size_t i = 0; i < conf->npipelines; i++)
        pipeline_conf_free(conf->pipelines[i]);
    free(conf->pipelines);
    address_free(conf->daemon.metrics);
    free(conf->daemon.control_socket);
    free(conf->daemon.state_directory);
    free(conf->file);
    free(conf->base_dir);
    free(conf);
}

struct conf_ref *conf_ref_new(struct weir_config *conf)
{
    struct conf_ref *c = calloc(1, sizeof(*c));

    if (c == NULL) {
        config_free(conf);
        return NULL;
    }
    *c = (struct conf_ref){.conf = conf, .refs = 1};
    return c;
}

struct conf_ref *conf_ref_get(struct conf_ref *c)
{
    c->refs++;
    return c;
}

void conf_ref_put(struct conf_ref *c)
{
    if (c == NULL || --c->refs > 0)
        return;
    config_free(c->conf);
    free(c);
}
