/*
 * logs_ship.c - the shippers of the log suites, each from a config of the
 * suite's: follow every *.log of a directory from its first byte and send
 * each line, as it was, over TCP to the collector. The pattern is DIR,
 * a slash and "*.log":
 *
 *   weir       `source = file:` the pattern, `read_from = beginning`
 *   rsyslog    imfile (inotify) on the pattern -> omfwd TCP, template
 *              "%msg%\n", run unprivileged: -n -f CONF -i PIDFILE
 *   syslog-ng  wildcard-file() with flags(no-parse) -> network() TCP,
 *              template "${MSG}\n", flow-control so that nothing is
 *              dropped; Debian's package unpacked by
 *              bench/peers/syslog-ng.sh (it cannot be installed beside
 *              rsyslog)
 *
 * The peers get bigger batches than their defaults (rsyslog's main queue
 * and dequeue batch, syslog-ng's source window and fetch limit): the
 * point is each one at its best, not at its most cautious.
 */
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "logs.h"

static int write_conf(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");

    if (!f)
        return -1;
    fputs(text, f);
    return fclose(f) == 0 ? 0 : -1;
}

/* snprintf into a path; false when it does not fit (never cut short). */
static bool path_fmt(char *out, size_t len, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static bool path_fmt(char *out, size_t len, const char *fmt, ...)
{
    va_list ap;
    int n;

    va_start(ap, fmt);
    n = vsnprintf(out, len, fmt, ap);
    va_end(ap);
    return n >= 0 && (size_t)n < len;
}

static pid_t spawn(char *const argv[], const char *log, const char *ld_path)
{
    pid_t pid = fork();

    if (pid != 0)
        return pid;
    int in = open("/dev/null", O_RDONLY);
    int out = open(log, O_WRONLY | O_CREAT | O_APPEND, 0644);

    if (in < 0 || out < 0)
        _exit(126);
    dup2(in, 0);
    dup2(out, 1);
    dup2(out, 2);
    if (ld_path)
        setenv("LD_LIBRARY_PATH", ld_path, 1);
    execv(argv[0], argv);
    _exit(127);
}

static pid_t start_weir(const struct lg_ship *s, char *conf, size_t clen,
                        char *log, char *text, size_t tlen)
{
    char bin[PATH_MAX + 32];

    snprintf(bin, sizeof(bin), "%s/daemon/weir", s->env->builddir);
    snprintf(text, tlen,
             "[daemon]\nstate_directory = %s/state\n"
             "checkpoint_interval = 1s\n\n"
             "[pipeline logs]\nsource = file:%s/*.log\n"
             "read_from = beginning\n%s"
             "sink = tcp:127.0.0.1:%d\n",
             s->work, s->dir, s->extra ? s->extra : "", s->port);
    snprintf(conf, clen, "%s/weir.conf", s->work);
    if (access(bin, X_OK) != 0) {
        fprintf(stderr, "logs: no %s\n", bin);
        return 0;
    }
    if (write_conf(conf, text) != 0)
        return -1;
    return spawn((char *const[]){bin, "-c", conf, NULL}, log, NULL);
}

static pid_t start_rsyslog(const struct lg_ship *s, char *conf, size_t clen,
                           char *log, char *text, size_t tlen)
{
    const char *bin = getenv("WEIR_RSYSLOGD");
    char pidf[PATH_MAX];

    if (!bin)
        bin = "/usr/sbin/rsyslogd";
    if (access(bin, X_OK) != 0) {
        fprintf(stderr, "logs: no %s (apt-get install rsyslog)\n", bin);
        return 0;
    }
    snprintf(text, tlen,
             "global(workDirectory=\"%s\" maxMessageSize=\"64k\")\n"
             "main_queue(queue.size=\"200000\" "
             "queue.dequeueBatchSize=\"4096\")\n"
             "module(load=\"imfile\" mode=\"inotify\")\n"
             "input(type=\"imfile\" file=\"%s/*.log\" tag=\"logs\" "
             "maxLinesAtOnce=\"0\")\n"
             "template(name=\"raw\" type=\"string\" string=\"%%msg%%\\n\")\n"
             "action(type=\"omfwd\" target=\"127.0.0.1\" port=\"%d\" "
             "protocol=\"tcp\" template=\"raw\")\n",
             s->work, s->dir, s->port);
    snprintf(conf, clen, "%s/rsyslog.conf", s->work);
    snprintf(pidf, sizeof(pidf), "%s/rsyslog.pid", s->work);
    if (write_conf(conf, text) != 0)
        return -1;
    return spawn(
        (char *const[]){(char *)bin, "-n", "-f", conf, "-i", pidf, NULL}, log,
        NULL);
}

static pid_t start_syslog_ng(const struct lg_ship *s, char *conf, size_t clen,
                             char *log, char *text, size_t tlen)
{
    const char *root = getenv("WEIR_SYSLOG_NG_ROOT");
    char def[PATH_MAX], bin[PATH_MAX], mod[PATH_MAX], ld[2 * PATH_MAX];
    char persist[PATH_MAX], pidf[PATH_MAX], ctl[PATH_MAX];

    if (!root) {
        if (!path_fmt(def, sizeof(def), "%s/bench/peers/syslog-ng",
                      s->env->builddir))
            return -1;
        root = def;
    }
    if (!path_fmt(bin, sizeof(bin), "%s/usr/sbin/syslog-ng", root) ||
        !path_fmt(mod, sizeof(mod), "--module-path=%s/usr/lib/syslog-ng/3.38",
                  root) ||
        !path_fmt(ld, sizeof(ld),
                  "%s/usr/lib/x86_64-linux-gnu:%s/usr/lib/syslog-ng", root,
                  root) ||
        !path_fmt(persist, sizeof(persist), "%s/syslog-ng.persist", s->work) ||
        !path_fmt(pidf, sizeof(pidf), "%s/syslog-ng.pid", s->work) ||
        !path_fmt(ctl, sizeof(ctl), "%s/syslog-ng.ctl", s->work))
        return -1;
    if (access(bin, X_OK) != 0) {
        fprintf(stderr, "logs: no %s (bench/peers/syslog-ng.sh)\n", bin);
        return 0;
    }
    snprintf(text, tlen,
             "@version: 3.38\n"
             "options { stats-freq(0); log-msg-size(65536); "
             "log-fifo-size(100000); };\n"
             "source s_logs { wildcard-file(base-dir(\"%s\") "
             "filename-pattern(\"*.log\") flags(no-parse) "
             "max-files(%u) log-iw-size(%u) log-fetch-limit(1000)); };\n"
             "destination d_tcp { network(\"127.0.0.1\" port(%d) "
             "transport(tcp) template(\"${MSG}\\n\")); };\n"
             "log { source(s_logs); destination(d_tcp); "
             "flags(flow-control); };\n",
             s->dir, s->max_files + 16, 1000 * (s->max_files + 16), s->port);
    snprintf(conf, clen, "%s/syslog-ng.conf", s->work);
    if (write_conf(conf, text) != 0)
        return -1;
    return spawn((char *const[]){bin, "-F", "--no-caps", "-f", conf, mod, "-R",
                                 persist, "-p", pidf, "-c", ctl, NULL},
                 log, ld);
}

pid_t lg_ship_start(const struct lg_ship *s)
{
    char conf[PATH_MAX + 32], log[PATH_MAX + 32];
    static char text[8192];

    snprintf(log, sizeof(log), "%s/%s.log", s->work, s->name);
    if (mkdir(s->work, 0755) != 0)
        return -1;
    if (strcmp(s->name, "weir") == 0)
        return start_weir(s, conf, sizeof(conf), log, text, sizeof(text));
    if (strcmp(s->name, "rsyslog") == 0)
        return start_rsyslog(s, conf, sizeof(conf), log, text, sizeof(text));
    if (strcmp(s->name, "syslog-ng") == 0)
        return start_syslog_ng(s, conf, sizeof(conf), log, text, sizeof(text));
    fprintf(stderr, "logs: no shipper named %s\n", s->name);
    return -1;
}

void lg_ship_stop(pid_t pid)
{
    struct timespec ms10 = {0, 10000000};

    kill(pid, SIGTERM);
    for (int i = 0; i < 1000; i++) {
        if (waitpid(pid, NULL, WNOHANG) == pid)
            return;
        nanosleep(&ms10, NULL);
    }
    kill(pid, SIGKILL);
    waitpid(pid, NULL, 0);
}
