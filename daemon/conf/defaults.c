/*
 * defaults.c - see config_print_defaults in config.h.
 */
#include <inttypes.h>
#include <stdio.h>

#include "conf/address.h"
#include "conf/config.h"

/* A sink as the parser makes it when it names no option. */
static struct weir_address *plain_sink(const char *text)
{
    struct conf_loc loc = {"defaults", 1};
    struct weir_address *a = NULL;
    char err[256];

    if (address_parse(text, ADDR_SINK, "/", &loc, &a, err, sizeof(err)) < 0)
        return NULL;
    return a;
}

int config_print_defaults(FILE *f)
{
    struct conf_loc loc = {"defaults", 1};
    struct weir_config *conf = config_new("defaults", "/");
    struct weir_pipeline *p =
        conf ? config_add_pipeline(conf, "d", &loc) : NULL;
    struct weir_address *listen = plain_sink("tcp-listen:127.0.0.1:1");
    struct weir_address *file = plain_sink("file:out");
    int r = -1;

    if (p != NULL && listen != NULL && file != NULL) {
        fprintf(f, "workers=%s\n",
                conf->daemon.workers == 0 ? "auto" : "(a count)");
        fprintf(f, "log_level=%s\n", log_level_name(conf->daemon.log_level));
        fprintf(f, "drain_timeout=%" PRIu64 "ms\n",
                conf->daemon.drain_timeout_ms);
        fprintf(f, "state_directory=%s\n", conf->daemon.state_directory);
        fprintf(f, "checkpoint_interval=%" PRIu64 "ms\n",
                conf->daemon.checkpoint_interval_ms);
        fprintf(f, "read_from=%s\n", p->read_from_end ? "end" : "beginning");
        fprintf(f, "high_water_mark=%" PRIu64 "\n", p->high_water_mark);
        fprintf(f, "chunk_size=%" PRIu64 "\n", p->chunk_size);
        fprintf(f, "follow=%s\n", p->follow ? "yes" : "no");
        /* A config file's file sinks append unless told (config_check;
         * weir pipe's truncate). */
        fprintf(f, "append=%s\n",
                file->append_set ? (file->append ? "yes" : "no") : "yes");
        fprintf(f, "on_full=%s\n", on_full_name(listen->on_full));
        fprintf(f, "backlog=%u\n", listen->backlog);
        if (listen->max_clients == 0)
            fprintf(f, "max_clients=none\n");
        else
            fprintf(f, "max_clients=%u\n", listen->max_clients);
        r = 0;
    }
    address_free(listen);
    address_free(file);
    config_free(conf);
    return r;
}
