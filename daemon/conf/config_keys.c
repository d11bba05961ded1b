/*
 * config_keys.c - one setter per key of weir.conf, and the table that
 * names them. A setter checks its value, stores it with its line, and
 * reports what is wrong; it never stops the parse.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "conf/address.h"
#include "conf/config_parser.h"
#include "conf/congestion.h"
#include "conf/transforms.h"
#include "weir/records.h"

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
    if (config_add_sink(pl, a) < 0) {
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
    else if (config_add_transform(p->pipeline, value, &loc) < 0)
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

static void key_keepalive(struct parser *p, const char *value)
{
    struct weir_pipeline *pl = p->pipeline;
    char err[256];

    if (first_time(p, &pl->keepalive_loc, "keepalive") &&
        value_bool(value, &pl->keepalive, err, sizeof(err)) < 0)
        PARSE_ERROR(p, "keepalive: %s", err);
}

/* A duration key of a pipeline, 0 (none) up to max_ms. */
static void pipeline_duration(struct parser *p, const char *key,
                              const char *value, struct conf_loc *loc,
                              uint64_t min_ms, uint64_t max_ms, uint64_t *out)
{
    char err[256];

    if (first_time(p, loc, key) &&
        value_duration_ms(value, min_ms, max_ms, out, err, sizeof(err)) < 0)
        PARSE_ERROR(p, "%s: %s", key, err);
}

static void key_keepalive_idle(struct parser *p, const char *value)
{
    struct weir_pipeline *pl = p->pipeline;

    /* TCP_KEEPIDLE takes whole seconds, at least 1. */
    pipeline_duration(p, "keepalive_idle", value, &pl->keepalive_idle_loc, 1000,
                      CONF_MAX_PEER_TIMEOUT_MS, &pl->keepalive_idle_ms);
}

static void key_tcp_user_timeout(struct parser *p, const char *value)
{
    struct weir_pipeline *pl = p->pipeline;

    pipeline_duration(p, "tcp_user_timeout", value, &pl->tcp_user_timeout_loc,
                      0, CONF_MAX_PEER_TIMEOUT_MS, &pl->tcp_user_timeout_ms);
}

static void key_tcp_congestion(struct parser *p, const char *value)
{
    struct weir_pipeline *pl = p->pipeline;
    char err[512];

    if (first_time(p, &pl->tcp_congestion_loc, "tcp_congestion") &&
        congestion_check(value, pl->tcp_congestion, sizeof(pl->tcp_congestion),
                         err, sizeof(err)) < 0)
        PARSE_ERROR(p, "tcp_congestion: %s", err);
}

static void key_send_timeout(struct parser *p, const char *value)
{
    struct weir_pipeline *pl = p->pipeline;

    pipeline_duration(p, "send_timeout", value, &pl->send_timeout_loc, 0,
                      CONF_MAX_PEER_TIMEOUT_MS, &pl->send_timeout_ms);
}

static void key_connect_timeout(struct parser *p, const char *value)
{
    struct weir_pipeline *pl = p->pipeline;

    pipeline_duration(p, "connect_timeout", value, &pl->connect_timeout_loc, 0,
                      CONF_MAX_PEER_TIMEOUT_MS, &pl->connect_timeout_ms);
}

static void key_flush_interval(struct parser *p, const char *value)
{
    struct weir_pipeline *pl = p->pipeline;

    pipeline_duration(p, "flush_interval", value, &pl->flush_interval_loc, 0,
                      CONF_MAX_FLUSH_INTERVAL_MS, &pl->flush_interval_ms);
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

static void key_engine(struct parser *p, const char *value)
{
    struct weir_daemon_conf *d = &p->conf->daemon;

    if (first_time(p, &d->engine_loc, "engine") &&
        weir_engine_parse(value, &d->engine) < 0)
        PARSE_ERROR(p,
                    "engine: '%s' is not an engine: use auto, io_uring or "
                    "epoll",
                    value);
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

static void key_pool_size(struct parser *p, const char *value)
{
    struct weir_daemon_conf *d = &p->conf->daemon;
    char err[256];

    if (first_time(p, &d->pool_size_loc, "pool_size") &&
        value_size(value, CONF_MIN_POOL, CONF_MAX_POOL, &d->pool_size, err,
                   sizeof(err)) < 0)
        PARSE_ERROR(p, "pool_size: %s", err);
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

static void key_read_from(struct parser *p, const char *value)
{
    struct weir_pipeline *pl = p->pipeline;

    if (!first_time(p, &pl->read_from_loc, "read_from"))
        return;
    if (strcmp(value, "beginning") == 0)
        pl->read_from_end = false;
    else if (strcmp(value, "end") == 0)
        pl->read_from_end = true;
    else
        PARSE_ERROR(p, "read_from: '%s' is neither beginning nor end", value);
}

/* A glob source's keys. Whether the source is a glob is known only once
 * the whole pipeline is read (config_check says when it is not). */

static void key_exclude(struct parser *p, const char *value)
{
    struct weir_pipeline *pl = p->pipeline;
    char *copy, *tok, *save = NULL;

    if (!first_time(p, &pl->exclude_loc, "exclude"))
        return;
    copy = strdup(value);
    if (copy == NULL) {
        PARSE_ERROR(p, "out of memory");
        return;
    }
    for (tok = strtok_r(copy, " \t", &save); tok;
         tok = strtok_r(NULL, " \t", &save)) {
        char **v;

        if (tok[0] != '/') {
            PARSE_ERROR(p, "exclude: '%s' is not an absolute pattern", tok);
            break;
        }
        if (pl->nexclude == CONF_MAX_EXCLUDES) {
            PARSE_ERROR(p, "exclude: more than %d patterns", CONF_MAX_EXCLUDES);
            break;
        }
        v = reallocarray(pl->exclude, pl->nexclude + 1, sizeof(*v));
        if (v == NULL || (v[pl->nexclude] = strdup(tok)) == NULL) {
            if (v)
                pl->exclude = v;
            PARSE_ERROR(p, "out of memory");
            break;
        }
        pl->exclude = v;
        pl->nexclude++;
    }
    if (pl->nexclude == 0 && tok == NULL)
        PARSE_ERROR(p, "exclude: needs one or more absolute patterns");
    free(copy);
}

static void key_ignore_older(struct parser *p, const char *value)
{
    struct weir_pipeline *pl = p->pipeline;

    pipeline_duration(p, "ignore_older", value, &pl->ignore_older_loc, 0,
                      CONF_MAX_IGNORE_OLDER_MS, &pl->ignore_older_ms);
}

static void key_rotate_wait(struct parser *p, const char *value)
{
    struct weir_pipeline *pl = p->pipeline;

    pipeline_duration(p, "rotate_wait", value, &pl->rotate_wait_loc, 0,
                      CONF_MAX_ROTATE_WAIT_MS, &pl->rotate_wait_ms);
}

static void key_line_timeout(struct parser *p, const char *value)
{
    struct weir_pipeline *pl = p->pipeline;

    pipeline_duration(p, "line_timeout", value, &pl->line_timeout_loc,
                      CONF_MIN_LINE_TIMEOUT_MS, CONF_MAX_LINE_TIMEOUT_MS,
                      &pl->line_timeout_ms);
}

static void key_rescan_interval(struct parser *p, const char *value)
{
    struct weir_pipeline *pl = p->pipeline;

    pipeline_duration(p, "rescan_interval", value, &pl->rescan_interval_loc,
                      CONF_MIN_RESCAN_MS, CONF_MAX_RESCAN_MS,
                      &pl->rescan_interval_ms);
}

static void key_max_open_files(struct parser *p, const char *value)
{
    struct weir_pipeline *pl = p->pipeline;
    uint64_t n;
    char err[256];

    if (!first_time(p, &pl->max_open_files_loc, "max_open_files"))
        return;
    if (value_uint(value, 1, CONF_MAX_OPEN_FILES, &n, err, sizeof(err)) < 0)
        PARSE_ERROR(p, "max_open_files: %s", err);
    else
        pl->max_open_files = (unsigned)n;
}

static void key_framing(struct parser *p, const char *value)
{
    struct weir_pipeline *pl = p->pipeline;

    if (!first_time(p, &pl->framing_loc, "framing"))
        return;
    if (strcmp(value, "lines") == 0)
        pl->framing_bytes = false;
    else if (strcmp(value, "bytes") == 0)
        pl->framing_bytes = true;
    else
        PARSE_ERROR(p, "framing: '%s' is neither lines nor bytes", value);
}

static void key_max_record(struct parser *p, const char *value)
{
    struct weir_pipeline *pl = p->pipeline;
    char err[256];

    if (first_time(p, &pl->max_record_loc, "max_record") &&
        value_size(value, CONF_MIN_MAX_RECORD, CONF_MAX_MAX_RECORD,
                   &pl->max_record, err, sizeof(err)) < 0)
        PARSE_ERROR(p, "max_record: %s", err);
}

static void key_on_long(struct parser *p, const char *value)
{
    struct weir_pipeline *pl = p->pipeline;

    if (!first_time(p, &pl->on_long_loc, "on_long"))
        return;
    if (strcmp(value, "truncate") == 0)
        pl->on_long_skip = false;
    else if (strcmp(value, "skip") == 0)
        pl->on_long_skip = true;
    else
        PARSE_ERROR(p, "on_long: '%s' is neither truncate nor skip", value);
}

/* Compiled now, so that --check says what pcre2 thinks of it; the file
 * set compiles it again per file when it runs. */
static void key_multiline_start(struct parser *p, const char *value)
{
    struct weir_pipeline *pl = p->pipeline;
    struct weir_records_options ro = {.multiline_start = value};
    struct weir_records *r = NULL;
    char err[256] = "";
    int rc;

    if (!first_time(p, &pl->multiline_start_loc, "multiline_start"))
        return;
    if (value[0] == '\0') {
        PARSE_ERROR(p, "multiline_start: needs a pattern");
        return;
    }
    rc = weir_records_new(&r, &ro, err, sizeof(err));
    if (rc == -EINVAL) {
        PARSE_ERROR(p, "multiline_start: '%s' does not compile: %s", value,
                    err[0] ? err : "invalid pattern");
        return;
    }
    weir_records_free(r);
    if (rc < 0 || (pl->multiline_start = strdup(value)) == NULL)
        PARSE_ERROR(p, "out of memory");
}

static void key_format(struct parser *p, const char *value)
{
    struct weir_pipeline *pl = p->pipeline;

    if (!first_time(p, &pl->format_loc, "format"))
        return;
    if (strcmp(value, "raw") == 0)
        pl->format_json = false;
    else if (strcmp(value, "json") == 0)
        pl->format_json = true;
    else
        PARSE_ERROR(p, "format: '%s' is neither raw nor json", value);
}

static void key_state_directory(struct parser *p, const char *value)
{
    struct weir_daemon_conf *d = &p->conf->daemon;
    char *dir;

    if (!first_time(p, &d->state_directory_loc, "state_directory"))
        return;
    if (value[0] != '/') {
        PARSE_ERROR(p, "state_directory: '%s' is not an absolute path", value);
        return;
    }
    dir = strdup(value);
    if (dir == NULL) {
        PARSE_ERROR(p, "out of memory");
        return;
    }
    free(d->state_directory);
    d->state_directory = dir;
}

static void key_checkpoint_interval(struct parser *p, const char *value)
{
    struct weir_daemon_conf *d = &p->conf->daemon;
    char err[256];

    if (first_time(p, &d->checkpoint_interval_loc, "checkpoint_interval") &&
        value_duration_ms(value, CONF_MIN_CKPT_MS, CONF_MAX_CKPT_MS,
                          &d->checkpoint_interval_ms, err, sizeof(err)) < 0)
        PARSE_ERROR(p, "checkpoint_interval: %s", err);
}

static void key_log_format(struct parser *p, const char *value)
{
    struct weir_daemon_conf *d = &p->conf->daemon;

    if (first_time(p, &d->log_format_loc, "log_format") &&
        log_style_parse(value, &d->log_format) < 0)
        PARSE_ERROR(p, "log_format: '%s' is not a format: use text or json",
                    value);
}

static void key_log_target(struct parser *p, const char *value)
{
    struct weir_daemon_conf *d = &p->conf->daemon;

    if (first_time(p, &d->log_target_loc, "log_target") &&
        log_target_parse(value, &d->log_target) < 0)
        PARSE_ERROR(p,
                    "log_target: '%s' is not a target: use auto, stderr or "
                    "journal",
                    value);
}

static void key_access_log(struct parser *p, const char *value)
{
    struct weir_daemon_conf *d = &p->conf->daemon;
    char err[256];

    if (first_time(p, &d->access_log_loc, "access_log") &&
        value_bool(value, &d->access_log, err, sizeof(err)) < 0)
        PARSE_ERROR(p, "access_log: %s", err);
}

static void key_control_socket(struct parser *p, const char *value)
{
    struct weir_daemon_conf *d = &p->conf->daemon;
    const char *base = p->conf->base_dir;
    char *path = NULL;

    if (!first_time(p, &d->control_socket_loc, "control_socket"))
        return;
    free(d->control_socket);
    d->control_socket = NULL;
    d->control_socket_set = true;
    if (value[0] == '\0' || strcmp(value, "no") == 0 ||
        strcmp(value, "none") == 0)
        return;
    if (value[0] == '/' || base == NULL)
        path = strdup(value);
    else if (asprintf(&path, "%s/%s", base, value) < 0)
        path = NULL;
    if (path == NULL) {
        PARSE_ERROR(p, "out of memory");
        return;
    }
    /* sun_path's room, less the temporary name's suffix (run/control.c). */
    if (strlen(path) > CONF_MAX_CONTROL) {
        PARSE_ERROR(p, "control_socket: '%s' is longer than %d bytes", path,
                    CONF_MAX_CONTROL);
        free(path);
        return;
    }
    d->control_socket = path;
}

const struct key_def config_keys[] = {
    {SECTION_DAEMON, "workers", false, key_workers},
    {SECTION_DAEMON, "engine", false, key_engine},
    {SECTION_DAEMON, "log_level", false, key_log_level},
    {SECTION_DAEMON, "drain_timeout", false, key_drain_timeout},
    {SECTION_DAEMON, "metrics", false, key_metrics},
    {SECTION_DAEMON, "control_socket", false, key_control_socket},
    {SECTION_DAEMON, "access_log", false, key_access_log},
    {SECTION_DAEMON, "log_format", false, key_log_format},
    {SECTION_DAEMON, "log_target", false, key_log_target},
    {SECTION_DAEMON, "pool_size", false, key_pool_size},
    {SECTION_DAEMON, "state_directory", false, key_state_directory},
    {SECTION_DAEMON, "checkpoint_interval", false, key_checkpoint_interval},
    {SECTION_PIPELINE, "source", true, key_source},
    {SECTION_PIPELINE, "sink", true, key_sink},
    {SECTION_PIPELINE, "transform", false, key_transform},
    {SECTION_PIPELINE, "high_water_mark", false, key_hwm},
    {SECTION_PIPELINE, "chunk_size", false, key_chunk_size},
    {SECTION_PIPELINE, "follow", false, key_follow},
    {SECTION_PIPELINE, "keepalive", false, key_keepalive},
    {SECTION_PIPELINE, "keepalive_idle", false, key_keepalive_idle},
    {SECTION_PIPELINE, "tcp_user_timeout", false, key_tcp_user_timeout},
    {SECTION_PIPELINE, "tcp_congestion", false, key_tcp_congestion},
    {SECTION_PIPELINE, "send_timeout", false, key_send_timeout},
    {SECTION_PIPELINE, "connect_timeout", false, key_connect_timeout},
    {SECTION_PIPELINE, "flush_interval", false, key_flush_interval},
    {SECTION_PIPELINE, "read_from", false, key_read_from},
    {SECTION_PIPELINE, "exclude", false, key_exclude},
    {SECTION_PIPELINE, "ignore_older", false, key_ignore_older},
    {SECTION_PIPELINE, "rotate_wait", false, key_rotate_wait},
    {SECTION_PIPELINE, "line_timeout", false, key_line_timeout},
    {SECTION_PIPELINE, "max_open_files", false, key_max_open_files},
    {SECTION_PIPELINE, "rescan_interval", false, key_rescan_interval},
    {SECTION_PIPELINE, "framing", false, key_framing},
    {SECTION_PIPELINE, "max_record", false, key_max_record},
    {SECTION_PIPELINE, "on_long", false, key_on_long},
    {SECTION_PIPELINE, "multiline_start", false, key_multiline_start},
    {SECTION_PIPELINE, "format", false, key_format},
    {SECTION_NONE, NULL, false, NULL},
};
