/*
 * config.c - the config model: building, freeing, and reporting errors.
 */
#include "conf/config.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "conf/address.h"

void config_error(struct conf_diag *diag, const struct conf_loc *loc,
                  const char *fmt, ...)
{
    char msg[1024];
    va_list ap;

    /* A config generated wrong can have an error on every line: the
     * first ones say what is wrong, the count says how much. */
    if (diag->errors++ >= CONF_ERRORS_SHOWN)
        return;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    if (loc->file != NULL)
        log_errx("%s:%u: %s", loc->file, loc->line, msg);
    else
        log_errx("argument %u: %s", loc->line, msg);
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

struct weir_config *config_new(const char *file, const char *base_dir)
{
    struct weir_config *conf = calloc(1, sizeof(*conf));

    if (conf == NULL)
        return NULL;
    conf->daemon.log_level = LOG_LEVEL_INFO;
    conf->daemon.drain_timeout_ms = CONF_DEFAULT_DRAIN_MS;
    conf->daemon.access_log = true;
    conf->daemon.control_socket = strdup(CONF_DEFAULT_CONTROL);
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
