/*
 * pipeline_same.c - see pipeline_same.h.
 */
#include "conf/pipeline_same.h"

#include <string.h>

static bool str_same(const char *a, const char *b)
{
    if (a == NULL || b == NULL)
        return a == b;
    return strcmp(a, b) == 0;
}

static bool http_same(const struct weir_address *a,
                      const struct weir_address *b)
{
    if (a->nheaders != b->nheaders || a->nlabels != b->nlabels)
        return false;
    for (unsigned i = 0; i < a->nheaders; i++)
        if (strcmp(a->headers[i], b->headers[i]) != 0)
            return false;
    for (unsigned i = 0; i < a->nlabels; i++)
        if (strcmp(a->labels[i], b->labels[i]) != 0)
            return false;
    return str_same(a->url, b->url) && a->preset == b->preset &&
           a->compression == b->compression && str_same(a->index, b->index) &&
           str_same(a->auth_file, b->auth_file) && str_same(a->user, b->user) &&
           str_same(a->password_file, b->password_file) &&
           str_same(a->dead_letter, b->dead_letter) &&
           a->batch_bytes == b->batch_bytes &&
           a->batch_records == b->batch_records &&
           a->batch_age_ms == b->batch_age_ms &&
           a->concurrency == b->concurrency && a->timeout_ms == b->timeout_ms &&
           a->retries == b->retries;
}

static bool serve_http_same(const struct weir_address *a,
                            const struct weir_address *b)
{
    return a->serve_http == b->serve_http &&
           str_same(a->url_path, b->url_path) &&
           a->server_header == b->server_header && a->dotfiles == b->dotfiles &&
           a->follow_symlinks == b->follow_symlinks &&
           a->dir_index == b->dir_index &&
           a->header_timeout_ms == b->header_timeout_ms &&
           str_same(a->access_log, b->access_log) &&
           a->access_json == b->access_json;
}

static bool addr_same(const struct weir_address *a,
                      const struct weir_address *b)
{
    if (a == NULL || b == NULL)
        return a == b;
    return a->kind == b->kind && a->role == b->role &&
           str_same(a->host, b->host) && a->ipv6 == b->ipv6 &&
           a->port == b->port && str_same(a->path, b->path) &&
           a->follow == b->follow && a->append == b->append &&
           a->on_full == b->on_full &&
           a->high_water_mark == b->high_water_mark &&
           a->max_clients == b->max_clients && a->backlog == b->backlog &&
           a->notsent_lowat == b->notsent_lowat && a->tls == b->tls &&
           str_same(a->cert, b->cert) && str_same(a->key, b->key) &&
           str_same(a->ca, b->ca) && str_same(a->sni, b->sni) &&
           str_same(a->alpn, b->alpn) && str_same(a->ciphers, b->ciphers) &&
           a->verify == b->verify && a->min_version == b->min_version &&
           a->handshake_timeout_ms == b->handshake_timeout_ms &&
           http_same(a, b) && serve_http_same(a, b) &&
           /* kafka, jetstream: every setting is in the address as
            * written. */
           ((a->kind != ADDR_KAFKA && a->kind != ADDR_JETSTREAM) ||
            strcmp(a->text, b->text) == 0);
}

bool config_pipeline_same(const struct weir_pipeline *a,
                          const struct weir_pipeline *b)
{
    if (strcmp(a->name, b->name) != 0 || !addr_same(a->source, b->source) ||
        a->ntransforms != b->ntransforms || a->nsinks != b->nsinks ||
        a->high_water_mark != b->high_water_mark ||
        a->chunk_size != b->chunk_size || a->follow != b->follow ||
        a->keepalive != b->keepalive ||
        a->keepalive_idle_ms != b->keepalive_idle_ms ||
        a->tcp_user_timeout_ms != b->tcp_user_timeout_ms ||
        strcmp(a->tcp_congestion, b->tcp_congestion) != 0 ||
        a->send_timeout_ms != b->send_timeout_ms ||
        a->connect_timeout_ms != b->connect_timeout_ms ||
        a->flush_interval_ms != b->flush_interval_ms ||
        a->read_from_end != b->read_from_end ||
        a->ignore_older_ms != b->ignore_older_ms ||
        a->rotate_wait_ms != b->rotate_wait_ms ||
        a->line_timeout_ms != b->line_timeout_ms ||
        a->max_open_files != b->max_open_files ||
        a->rescan_interval_ms != b->rescan_interval_ms ||
        a->framing_bytes != b->framing_bytes ||
        a->max_record != b->max_record || a->on_long_skip != b->on_long_skip ||
        !str_same(a->multiline_start, b->multiline_start) ||
        a->format_json != b->format_json || a->nexclude != b->nexclude)
        return false;
    for (size_t i = 0; i < a->nexclude; i++)
        if (strcmp(a->exclude[i], b->exclude[i]) != 0)
            return false;
    for (size_t i = 0; i < a->ntransforms; i++)
        if (strcmp(a->transforms[i].spec, b->transforms[i].spec) != 0)
            return false;
    for (size_t i = 0; i < a->nsinks; i++)
        if (!addr_same(a->sinks[i], b->sinks[i]))
            return false;
    return true;
}
