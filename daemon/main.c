/*
 * main.c - the weir program.
 *
 *   weir [-v] [-c FILE]              run the pipelines of FILE (default: the
 *                                    embedded demo) in the foreground
 *   weir --check [-c FILE]           check FILE, run nothing
 *   weir [--check] pipe SRC SINK...  one pipeline from the command line
 *   weir status [--json], weir top   ask a running weir (ctl.c)
 *
 * Exit status: 0; 64 (EX_USAGE) for a malformed command line; 78
 * (EX_CONFIG) for any config error; what daemon_run returns otherwise.
 */
#include <getopt.h>
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sysexits.h>

#include "conf/config.h"
#include "demo.h"
#include "sys/log.h"
#include "sys/statelock.h"
#include "conf/pipe_args.h"
#include "check_env.h"
#include "ctl.h"
#include "conf/sockaddr.h"
#include "run/run.h"
#include "version.h"

/*
 * jemalloc's options, read once at its start (a MALLOC_CONF in the
 * environment still goes over them). Memory a burst of clients freed goes
 * back to the system within 100 ms, by jemalloc's own thread, rather than
 * after ten seconds of further allocations: an idle daemon (10,000 parked
 * keep-alive clients after a burst) holds what they use, not what the
 * burst did (bench/results/http_serve.md). Unused with glibc's malloc.
 */
const char *malloc_conf =
    "background_thread:true,dirty_decay_ms:100,muzzy_decay_ms:0";

static void usage(FILE *f)
{
    fprintf(
        f,
        "usage: weir [-v] [-c FILE]\n"
        "       weir --check [-c FILE]\n"
        "       weir [--check] pipe [options] SOURCE SINK [SINK...]\n"
        "       weir [-c FILE] status [--json] [-s SOCKET]\n"
        "       weir [-c FILE] top [-n FRAMES] [-s SOCKET]\n"
        "\n"
        "  -c, --config FILE  the config (default: the embedded demo,\n"
        "                     serving files from %s)\n"
        "  -n, --check        check the config and exit: 0 when valid,\n"
        "                     78 with every error as FILE:LINE: message;\n"
        "                     also what it names: files readable and\n"
        "                     writable by the service's user, listen\n"
        "                     addresses free (or held by weir, systemd)\n"
        "      --syntax-only  with --check: the file alone\n"
        "  -v, --verbose      log at debug level, whatever log_level says\n"
        "  -h, --help         this text (weir pipe --help: pipe's options)\n"
        "  -V, --version      print the version and the build's engine\n"
        "                     and libraries\n",
        demo_dir());
}

/* For the demo: how to see each listening pipeline at work. */
static void demo_hints(const struct weir_config *conf)
{
    log_info("no -c given: running the embedded demo, serving files from %s",
             demo_dir());
    for (size_t i = 0; i < conf->npipelines; i++) {
        const struct weir_pipeline *p = conf->pipelines[i];
        for (size_t j = 0; j < p->nsinks; j++) {
            const struct weir_address *s = p->sinks[j];
            if (s->kind != ADDR_TCP_LISTEN || p->source->kind != ADDR_FILE)
                continue;
            log_info("try: nc %s %u </dev/null | sha256sum   (compare: "
                     "sha256sum %s)",
                     s->host, s->port, p->source->path);
        }
    }
}

/*
 * A daemon whose pipelines follow files keeps their checkpoints in the
 * state directory, which is its alone while it runs (sys/statelock.h;
 * a reload that names another takes that one too, run/reload.c). False
 * when another weir holds it. A directory that cannot be written is not an
 * error here: the pipelines ship without checkpoints, as the config check
 * warned.
 */
static bool lock_state_dir(const struct weir_config *conf)
{
    const char *dir = conf->daemon.state_directory;
    pid_t holder;
    int rc;

    if (!config_follows(conf) || dir == NULL)
        return true;
    rc = statelock_take(dir, &holder);
    if (rc == -EWOULDBLOCK) {
        char pid[48] = "";

        if (holder > 0)
            snprintf(pid, sizeof(pid), " (pid %ld)", (long)holder);
        log_errx("state_directory %s is in use by another weir%s: two daemons "
                 "sharing it would overwrite each other's checkpoints; give "
                 "this one a state_directory of its own",
                 dir, pid);
        return false;
    }
    if (rc < 0)
        log_debug("state_directory %s: no lock taken: %s", dir, strerror(-rc));
    return true;
}

int main(int argc, char *argv[])
{
    static const struct option longopts[] = {
        {"config", required_argument, NULL, 'c'},
        {"check", no_argument, NULL, 'n'},
        {"syntax-only", no_argument, NULL, 'S'},
        {"verbose", no_argument, NULL, 'v'},
        {"help", no_argument, NULL, 'h'},
        {"version", no_argument, NULL, 'V'},
        /* Not in --help: for the docs test (conf/defaults.c). */
        {"dump-defaults", no_argument, NULL, 'D'},
        {NULL, 0, NULL, 0},
    };
    const char *conffile = NULL;
    bool check = false, verbose = false, pipe_mode = false;
    bool syntax_only = false;
    struct weir_config *conf;
    unsigned errors = 0;
    int ch, r;

    /* '+': stop at the first word, so `pipe` parses its own options. */
    while ((ch = getopt_long(argc, argv, "+c:nvhV", longopts, NULL)) != -1) {
        switch (ch) {
        case 'c':
            conffile = optarg;
            break;
        case 'n':
            check = true;
            break;
        case 'v':
            verbose = true;
            break;
        case 'S':
            syntax_only = true;
            break;
        case 'h':
            usage(stdout);
            return 0;
        case 'V':
            version_print(stdout);
            return 0;
        case 'D':
            return config_print_defaults(stdout) == 0 ? 0 : EX_OSERR;
        default:
            usage(stderr);
            return EX_USAGE;
        }
    }
    if (optind < argc && !check &&
        (strcmp(argv[optind], "status") == 0 ||
         strcmp(argv[optind], "top") == 0)) {
        log_init(LOG_LEVEL_INFO, false);
        return ctl_main(argc - optind, argv + optind, conffile);
    }
    if (optind < argc && strcmp(argv[optind], "pipe") == 0)
        pipe_mode = true;
    if (pipe_mode && conffile != NULL) {
        fprintf(stderr, "weir: pipe takes its pipeline from its arguments, "
                        "not from -c\n");
        return EX_USAGE;
    }
    if (optind < argc && !pipe_mode) {
        fprintf(stderr, "weir: unexpected argument '%s'\n", argv[optind]);
        usage(stderr);
        return EX_USAGE;
    }

    /* A checked config, and `weir pipe`, talk to a person: plain lines. */
    log_init(verbose ? LOG_LEVEL_DEBUG : LOG_LEVEL_INFO, !check && !pipe_mode);

    if (pipe_mode) {
        r = pipe_args_parse(argc, argv, optind + 1, &conf);
        if (r != 0 || conf == NULL)
            return r;
    } else if (conffile != NULL) {
        conf = check ? config_check_file(conffile, &errors)
                     : config_load_file(conffile, &errors);
    } else {
        conf = config_load_string(weir_demo_conf, WEIR_DEMO_NAME, demo_dir(),
                                  &errors);
    }
    if (conf == NULL) {
        log_errx("%u error%s in the configuration", errors,
                 errors == 1 ? "" : "s");
        return EX_CONFIG;
    }

    if (syntax_only && !check) {
        fprintf(stderr, "weir: --syntax-only goes with --check\n");
        config_free(conf);
        return EX_USAGE;
    }
    if (check) {
        struct conf_diag diag = {0};

        /* What the config names, in the order of its lines. */
        if (!syntax_only)
            check_env(conf, &diag);
        if (pipe_mode)
            sockaddr_check_names(conf, &diag);
        config_diag_flush(&diag);
        if (diag.errors > 0) {
            log_errx("%u error%s in what the configuration names", diag.errors,
                     diag.errors == 1 ? "" : "s");
            config_free(conf);
            return EX_CONFIG;
        }
        fprintf(stderr, "%s: configuration OK\n",
                pipe_mode ? "weir pipe"
                          : (conffile ? conffile : WEIR_DEMO_NAME));
        config_free(conf);
        return 0;
    }
    if (!verbose)
        log_set_level(conf->daemon.log_level);
    if (!pipe_mode &&
        (r = log_setup(conf->daemon.log_format, conf->daemon.log_target)) < 0)
        log_warnx("log_target = journal: %s; logging to stderr", strerror(-r));
    if (!pipe_mode && conffile == NULL)
        demo_hints(conf);
    if (!pipe_mode && !lock_state_dir(conf)) {
        config_free(conf);
        return 1;
    }
    return daemon_run(conf, pipe_mode ? NULL : conffile, verbose);
}
