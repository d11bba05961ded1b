/*
 * defaults.c - see config_print_defaults in config.h.
 */
#include <inttypes.h>
#include <stdio.h>

#include "conf/address.h"
#include "conf/config.h"

/* An address as the parser makes it when it names no option. */
static struct weir_address *plain_address(const char *text, enum addr_role role)
{
    struct conf_loc loc = {"defaults", 1};
    struct weir_address *a = NULL;
    char err[256];

    if (address_parse(text, role, "/", &loc, &a, err, sizeof(err)) < 0)
        return NULL;
    return a;
}

static struct weir_address *plain_sink(const char *text)
{
    return plain_address(text, ADDR_SINK);
}

int config_print_defaults(FILE *f)
{
    struct conf_loc loc = {"defaults", 1};
    struct weir_config *conf = config_new("defaults", "/");
    struct weir_pipeline *p =
        conf ? config_add_pipeline(conf, "d", &loc) : NULL;
    struct weir_address *listen = plain_sink("tcp-listen:127.0.0.1:1");
    struct weir_address *file = plain_sink("file:out");
    struct weir_address *in = plain_address("file:in", ADDR_SOURCE);
    int r = -1;

    if (p != NULL && listen != NULL && file != NULL && in != NULL) {
        fprintf(f, "workers=%s\n",
                conf->daemon.workers == 0 ? "auto" : "(a count)");
        fprintf(f, "log_level=%s\n", log_level_name(conf->daemon.log_level));
        fprintf(f, "drain_timeout=%" PRIu64 "ms\n",
                conf->daemon.drain_timeout_ms);
        fprintf(f, "control_socket=%s\n", conf->daemon.control_socket);
        fprintf(f, "access_log=%s\n", conf->daemon.access_log ? "yes" : "no");
        fprintf(f, "log_format=%s\n",
                conf->daemon.log_format == LOG_STYLE_JSON ? "json" : "text");
        fprintf(f, "log_target=%s\n",
                conf->daemon.log_target == LOG_TARGET_AUTO     ? "auto"
                : conf->daemon.log_target == LOG_TARGET_STDERR ? "stderr"
                                                               : "journal");
        fprintf(f, "pool_size=%" PRIu64 "\n", conf->daemon.pool_size);
        fprintf(f, "state_directory=%s\n", conf->daemon.state_directory);
        fprintf(f, "checkpoint_interval=%" PRIu64 "ms\n",
                conf->daemon.checkpoint_interval_ms);
        fprintf(f, "read_from=%s\n", p->read_from_end ? "end" : "beginning");
        fprintf(f, "high_water_mark=%" PRIu64 "\n", p->high_water_mark);
        fprintf(f, "chunk_size=%" PRIu64 "\n", p->chunk_size);
        fprintf(f, "follow=%s\n", p->follow ? "yes" : "no");
        fprintf(f, "fifo=%s\n", in->fifo ? "yes" : "no");
        fprintf(f, "keepalive=%s\n", p->keepalive ? "yes" : "no");
        fprintf(f, "keepalive_idle=%" PRIu64 "ms\n", p->keepalive_idle_ms);
        fprintf(f, "tcp_user_timeout=%" PRIu64 "ms\n", p->tcp_user_timeout_ms);
        fprintf(f, "tcp_congestion=%s\n",
                p->tcp_congestion[0] ? p->tcp_congestion : "system");
        fprintf(f, "send_timeout=%" PRIu64 "ms\n", p->send_timeout_ms);
        fprintf(f, "connect_timeout=%" PRIu64 "ms\n", p->connect_timeout_ms);
        fprintf(f, "flush_interval=%" PRIu64 "ms\n", p->flush_interval_ms);
        /* A glob source's (follow is yes there unless told). */
        fprintf(f, "exclude=none\n");
        fprintf(f, "ignore_older=%" PRIu64 "ms\n", p->ignore_older_ms);
        fprintf(f, "rotate_wait=%" PRIu64 "ms\n", p->rotate_wait_ms);
        fprintf(f, "line_timeout=%" PRIu64 "ms\n", p->line_timeout_ms);
        fprintf(f, "max_open_files=%u\n", p->max_open_files);
        fprintf(f, "rescan_interval=%" PRIu64 "ms\n", p->rescan_interval_ms);
        fprintf(f, "framing=%s\n", p->framing_bytes ? "bytes" : "lines");
        fprintf(f, "max_record=%" PRIu64 "\n", p->max_record);
        fprintf(f, "on_long=%s\n", p->on_long_skip ? "skip" : "truncate");
        fprintf(f, "multiline_start=none\n");
        fprintf(f, "format=%s\n", p->format_json ? "json" : "raw");
        /* A config file's file sinks append unless told (config_check;
         * weir pipe's truncate). */
        fprintf(f, "append=%s\n",
                file->append_set ? (file->append ? "yes" : "no") : "yes");
        fprintf(f, "on_full=%s\n", on_full_name(listen->on_full));
        fprintf(f, "backlog=%u\n", listen->backlog);
        if (listen->notsent_lowat == CONF_NOTSENT_AUTO)
            fprintf(f, "notsent_lowat=auto\n");
        else
            fprintf(f, "notsent_lowat=%" PRIu64 "\n", listen->notsent_lowat);
        if (listen->max_clients == 0)
            fprintf(f, "max_clients=none\n");
        else
            fprintf(f, "max_clients=%u\n", listen->max_clients);
        /* tls: and tls-listen: (an address's fields before parsing any
         * option are the defaults). */
        fprintf(f, "verify=%s\n", listen->verify ? "yes" : "no");
        fprintf(f, "min_version=%s\n",
                listen->min_version == WEIR_TLS_1_3 ? "1.3" : "1.2");
        fprintf(f, "handshake_timeout=%" PRIu64 "ms\n",
                listen->handshake_timeout_ms);
        /* http: and https: sinks (the same untouched fields). */
        fprintf(f, "preset=raw\ncompression=none\n");
        fprintf(f, "batch_bytes=%" PRIu64 "\n", listen->batch_bytes);
        fprintf(f, "batch_records=%" PRIu64 "\n", listen->batch_records);
        fprintf(f, "batch_age=%" PRIu64 "ms\n", listen->batch_age_ms);
        fprintf(f, "concurrency=%" PRIu64 "\n", listen->concurrency);
        fprintf(f, "timeout=%" PRIu64 "ms\n", listen->timeout_ms);
        fprintf(f, "retries=forever\n"); /* weir run's; weir pipe: 5 */
        /* http-listen: (the same untouched fields). */
        fprintf(f, "server=%s\n", listen->server_header ? "yes" : "no");
        fprintf(f, "dotfiles=%s\n", listen->dotfiles ? "yes" : "no");
        fprintf(f, "follow_symlinks=%s\n",
                listen->follow_symlinks ? "yes" : "no");
        fprintf(f, "header_timeout=%" PRIu64 "ms\n", listen->header_timeout_ms);
        fprintf(f, "request_log=none\n");
        fprintf(f, "request_log_format=%s\n",
                listen->access_json ? "json" : "clf");
        r = 0;
    }
    address_free(listen);
    address_free(file);
    address_free(in);
    config_free(conf);
    return r;
}
