/*
 * pipe_args.c - see pipe_args.h.
 */
#include "conf/pipe_args.h"

#include <errno.h>
#include <string.h>
#include <sysexits.h>

#include "conf/address.h"
#include "conf/transforms.h"

void pipe_args_usage(FILE *f)
{
    fprintf(f,
            "usage: weir pipe [options] SOURCE SINK [SINK...]\n"
            "\n"
            "Moves SOURCE to every SINK once, then exits: 0 when every byte\n"
            "reached every sink. Addresses as in weir.conf: file:PATH,\n"
            "tcp:HOST:PORT, tcp-listen:HOST:PORT, unix:PATH,\n"
            "unix-listen:PATH, stdin, stdout, null, each with ,option=value.\n"
            "\n"
            "  -t, --transform T          add transform T (repeatable, in "
            "order)\n"
            "      --high-water-mark SIZE per-sink queue limit (default 1 "
            "MiB)\n"
            "      --chunk-size SIZE      read size (default 64 KiB)\n"
            "  -f, --follow               keep reading a file as it grows\n"
            "  -w, --workers N            worker threads (default: one per "
            "CPU)\n"
            "  -h, --help                 this text\n"
            "\n"
            "Exit status: 64 for a malformed command, 78 for a bad value\n"
            "(address, size, transform, unreadable file).\n");
}

struct pipe_parse {
    struct weir_config *conf;
    struct weir_pipeline *pl;
    struct conf_diag diag;
    int usage_errors;
    unsigned positional;
};

static void usage_error(struct pipe_parse *pp, const char *fmt, const char *arg)
{
    char msg[256];

    snprintf(msg, sizeof(msg), fmt, arg);
    log_errx("weir pipe: %s (see weir pipe --help)", msg);
    pp->usage_errors++;
}

/* "--name=value" or "--name value" / "-x value"; *i moves past the value. */
static const char *option_value(struct pipe_parse *pp, int argc, char **argv,
                                int *i, const char *name)
{
    const char *eq = strchr(argv[*i], '=');

    if (strncmp(argv[*i], "--", 2) == 0 && eq != NULL)
        return eq + 1;
    if (*i + 1 >= argc) {
        usage_error(pp, "%s needs a value", name);
        return NULL;
    }
    return argv[++*i];
}

static bool is_option(const char *arg, const char *shrt, const char *lng)
{
    size_t n = strlen(lng);

    if (shrt != NULL && strcmp(arg, shrt) == 0)
        return true;
    return strncmp(arg, lng, n) == 0 && (arg[n] == '\0' || arg[n] == '=');
}

static void add_address(struct pipe_parse *pp, const char *text,
                        struct conf_loc *loc)
{
    enum addr_role role = pp->positional == 0 ? ADDR_SOURCE : ADDR_SINK;
    struct weir_address *a;
    char err[512];

    if (role == ADDR_SOURCE)
        pp->pl->source_loc = *loc;
    else
        pp->pl->sink_keys++;
    pp->positional++;
    if (address_parse(text, role, NULL, loc, &a, err, sizeof(err)) < 0) {
        config_error(&pp->diag, loc, "%s: %s",
                     role == ADDR_SOURCE ? "source" : "sink", err);
        return;
    }
    if (role == ADDR_SOURCE)
        pp->pl->source = a;
    else if (config_add_sink(pp->pl, a) < 0)
        address_free(a);
}

static void set_size(struct pipe_parse *pp, const char *v, uint64_t min,
                     uint64_t max, uint64_t *out, struct conf_loc *slot,
                     struct conf_loc *loc, const char *name)
{
    char err[256];

    if (v == NULL)
        return;
    if (value_size(v, min, max, out, err, sizeof(err)) < 0)
        config_error(&pp->diag, loc, "%s: %s", name, err);
    *slot = *loc;
}

/* One argument; returns 1 when --help was asked for. */
static int parse_one(struct pipe_parse *pp, int argc, char **argv, int *i,
                     bool *options_done)
{
    const char *arg = argv[*i], *v;
    struct conf_loc loc = {NULL, (unsigned)*i};
    struct weir_pipeline *pl = pp->pl;
    char err[256];

    if (*options_done || arg[0] != '-' || arg[1] == '\0') {
        add_address(pp, arg, &loc);
    } else if (strcmp(arg, "--") == 0) {
        *options_done = true;
    } else if (is_option(arg, "-h", "--help")) {
        return 1;
    } else if (is_option(arg, "-t", "--transform")) {
        if ((v = option_value(pp, argc, argv, i, "--transform")) == NULL)
            return 0;
        loc.line = (unsigned)*i;
        if (transform_check(v, err, sizeof(err)) < 0)
            config_error(&pp->diag, &loc, "%s", err);
        else if (config_add_transform(pl, v, &loc) < 0)
            config_error(&pp->diag, &loc, "out of memory");
    } else if (is_option(arg, NULL, "--high-water-mark")) {
        v = option_value(pp, argc, argv, i, "--high-water-mark");
        loc.line = (unsigned)*i;
        set_size(pp, v, CONF_MIN_HWM, CONF_MAX_HWM, &pl->high_water_mark,
                 &pl->high_water_mark_loc, &loc, "high_water_mark");
    } else if (is_option(arg, NULL, "--chunk-size")) {
        v = option_value(pp, argc, argv, i, "--chunk-size");
        loc.line = (unsigned)*i;
        set_size(pp, v, CONF_MIN_CHUNK, CONF_MAX_CHUNK, &pl->chunk_size,
                 &pl->chunk_size_loc, &loc, "chunk_size");
    } else if (is_option(arg, "-w", "--workers")) {
        uint64_t n;

        if ((v = option_value(pp, argc, argv, i, "--workers")) == NULL)
            return 0;
        loc.line = (unsigned)*i;
        if (value_uint(v, 1, CONF_MAX_WORKERS, &n, err, sizeof(err)) < 0)
            config_error(&pp->diag, &loc, "workers: %s", err);
        else
            pp->conf->daemon.workers = (unsigned)n;
        pp->conf->daemon.workers_loc = loc;
    } else if (is_option(arg, "-f", "--follow") && strchr(arg, '=') == NULL) {
        pl->follow = true;
        pl->follow_loc = loc;
    } else {
        usage_error(pp, "unknown option '%s'", arg);
    }
    return 0;
}

int pipe_args_parse(int argc, char **argv, int first, struct weir_config **out)
{
    struct pipe_parse pp = {0};
    struct conf_loc loc = {NULL, (unsigned)first};
    bool options_done = false;

    *out = NULL;
    pp.conf = config_new(NULL, NULL);
    if (pp.conf == NULL ||
        (pp.pl = config_add_pipeline(pp.conf, "pipe", &loc)) == NULL) {
        log_errx("weir pipe: out of memory");
        config_free(pp.conf);
        return EX_OSERR;
    }
    pp.conf->oneshot = true;
    for (int i = first; i < argc; i++) {
        if (parse_one(&pp, argc, argv, &i, &options_done) == 1) {
            pipe_args_usage(stdout);
            config_free(pp.conf);
            return 0;
        }
    }
    if (pp.positional == 0)
        usage_error(&pp, "missing SOURCE and SINK%s", "");
    else if (pp.positional == 1)
        usage_error(&pp, "missing SINK after SOURCE%s", "");
    if (pp.usage_errors > 0) {
        config_free(pp.conf);
        return EX_USAGE;
    }
    config_check(pp.conf, &pp.diag);
    if (pp.diag.errors > 0) {
        config_free(pp.conf);
        return EX_CONFIG;
    }
    *out = pp.conf;
    return 0;
}
