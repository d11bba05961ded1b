/*
 * pipe_args.c - see pipe_args.h.
 */
#include "conf/pipe_args.h"

#include <errno.h>
#include <getopt.h>
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
            "tcp:HOST:PORT, tcp-listen:HOST:PORT, tls:HOST:PORT,\n"
            "tls-listen:HOST:PORT, unix:PATH, unix-listen:PATH, stdin,\n"
            "stdout, null, each with ,option=value.\n"
            "\n"
            "  -t, --transform T          add transform T (repeatable, in "
            "order)\n"
            "      --high-water-mark SIZE per-sink queue limit (default 1 "
            "MiB)\n"
            "      --chunk-size SIZE      read size (default 256 KiB)\n"
            "  -f, --follow               keep reading a file as it grows\n"
            "  -w, --workers N            worker threads (default: one per "
            "CPU)\n"
            "      --engine E             auto, io_uring or epoll (default "
            "auto)\n"
            "  -h, --help                 this text\n"
            "\n"
            "Exit status: 64 for a malformed command, 78 for a bad value\n"
            "(address, size, transform, unreadable file), 1 when the\n"
            "transfer failed or the source file shrank, 130 after Ctrl-C\n"
            "(128 + the signal).\n");
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

    if (value_size(v, min, max, out, err, sizeof(err)) < 0)
        config_error(&pp->diag, loc, "%s: %s", name, err);
    *slot = *loc;
}

/* Long-only options get values above any character. */
enum { OPT_HWM = 256, OPT_CHUNK, OPT_ENGINE };

static const struct option pipe_options[] = {
    {"transform", required_argument, NULL, 't'},
    {"high-water-mark", required_argument, NULL, OPT_HWM},
    {"chunk-size", required_argument, NULL, OPT_CHUNK},
    {"follow", no_argument, NULL, 'f'},
    {"workers", required_argument, NULL, 'w'},
    {"engine", required_argument, NULL, OPT_ENGINE},
    {"help", no_argument, NULL, 'h'},
    {NULL, 0, NULL, 0},
};

/* The long name of option `val`, for messages. */
static const char *option_name(int val)
{
    for (const struct option *o = pipe_options; o->name != NULL; o++)
        if (o->val == val)
            return o->name;
    return "?";
}

/* One option getopt_long returned, whose argument (if any) is optarg and
 * was argument number `arg` of the command line. */
static void apply_option(struct pipe_parse *pp, int ch, unsigned arg)
{
    struct conf_loc loc = {NULL, arg};
    struct weir_pipeline *pl = pp->pl;
    char err[256];
    uint64_t n;

    switch (ch) {
    case 't':
        if (transform_check(optarg, err, sizeof(err)) < 0)
            config_error(&pp->diag, &loc, "%s", err);
        else if (config_add_transform(pl, optarg, &loc) < 0)
            config_error(&pp->diag, &loc, "out of memory");
        break;
    case OPT_HWM:
        set_size(pp, optarg, CONF_MIN_HWM, CONF_MAX_HWM, &pl->high_water_mark,
                 &pl->high_water_mark_loc, &loc, "high_water_mark");
        break;
    case OPT_CHUNK:
        set_size(pp, optarg, CONF_MIN_CHUNK, CONF_MAX_CHUNK, &pl->chunk_size,
                 &pl->chunk_size_loc, &loc, "chunk_size");
        break;
    case 'w':
        if (value_uint(optarg, 1, CONF_MAX_WORKERS, &n, err, sizeof(err)) < 0)
            config_error(&pp->diag, &loc, "workers: %s", err);
        else
            pp->conf->daemon.workers = (unsigned)n;
        pp->conf->daemon.workers_loc = loc;
        break;
    case 'f':
        pl->follow = true;
        pl->follow_loc = loc;
        break;
    case OPT_ENGINE:
        if (weir_engine_parse(optarg, &pp->conf->daemon.engine) < 0)
            config_error(&pp->diag, &loc,
                         "engine: '%s' is not an engine: use auto, io_uring "
                         "or epoll",
                         optarg);
        pp->conf->daemon.engine_loc = loc;
        break;
    }
}

/* What getopt_long refused, in `word` (for a short option in a bundle
 * like -fx, optopt says which letter). */
static void unknown_option(struct pipe_parse *pp, const char *word)
{
    char opt[3] = {'-', (char)optopt, '\0'};

    if (strncmp(word, "--", 2) != 0)
        usage_error(pp, "unknown option '%s'", opt);
    else if (optopt != 0 && strchr(word, '=') != NULL)
        usage_error(pp, "--%s takes no value", option_name(optopt));
    else
        usage_error(pp, "unknown option '%s'", word);
}

/*
 * The words after "pipe", with getopt_long: "-tgzip", "-t gzip",
 * "--transform=gzip", "--transform gzip", "-fw2", unique prefixes of long
 * options. The optstring's '-' hands back every address in place, so
 * addresses and options may mix and each keeps its number; ':' makes a
 * missing value ':' rather than a message of getopt's own. Returns 1 when
 * --help was asked for.
 */
static int parse_words(struct pipe_parse *pp, int argc, char **argv, int first)
{
    /* getopt counts from 1; argv[first - 1] ("pipe") stands for argv[0]. */
    char **words = argv + first - 1;
    int nwords = argc - first + 1, ch, prev;
    unsigned base = (unsigned)first - 1;

    opterr = 0;
    optind = 0; /* main's getopt_long already ran: start over */
    for (prev = 1;; prev = optind) {
        ch = getopt_long(nwords, words, "-:ht:fw:", pipe_options, NULL);
        if (ch == -1)
            break;
        /* Where optarg came from: the last word getopt took. */
        unsigned arg = base + (unsigned)(optind > prev ? optind - 1 : prev);

        switch (ch) {
        case 1:
            add_address(pp, optarg, &(struct conf_loc){NULL, arg});
            break;
        case 'h':
            return 1;
        case ':':
            usage_error(pp, "--%s needs a value", option_name(optopt));
            break;
        case '?':
            unknown_option(pp, words[prev]);
            break;
        default:
            apply_option(pp, ch, arg);
            break;
        }
    }
    /* After "--", every word left is an address. */
    for (int i = optind; i < nwords; i++)
        add_address(pp, words[i], &(struct conf_loc){NULL, base + (unsigned)i});
    return 0;
}

int pipe_args_parse(int argc, char **argv, int first, struct weir_config **out)
{
    struct pipe_parse pp = {0};
    struct conf_loc loc = {NULL, (unsigned)first};

    *out = NULL;
    pp.conf = config_new(NULL, NULL);
    if (pp.conf == NULL ||
        (pp.pl = config_add_pipeline(pp.conf, "pipe", &loc)) == NULL) {
        log_errx("weir pipe: out of memory");
        config_free(pp.conf);
        return EX_OSERR;
    }
    pp.conf->oneshot = true;
    if (parse_words(&pp, argc, argv, first) == 1) {
        config_diag_flush(&pp.diag);
        pipe_args_usage(stdout);
        config_free(pp.conf);
        return 0;
    }
    if (pp.positional == 0)
        usage_error(&pp, "missing SOURCE and SINK%s", "");
    else if (pp.positional == 1)
        usage_error(&pp, "missing SINK after SOURCE%s", "");
    if (pp.usage_errors > 0) {
        config_diag_flush(&pp.diag);
        config_free(pp.conf);
        return EX_USAGE;
    }
    config_check(pp.conf, &pp.diag);
    config_diag_flush(&pp.diag);
    if (pp.diag.errors > 0) {
        config_free(pp.conf);
        return EX_CONFIG;
    }
    *out = pp.conf;
    return 0;
}
