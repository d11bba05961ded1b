/*
 * ctl.c - `weir status` prints the running weir's status board once (the
 * table, or --json); `weir top` asks for it every second, sinks in
 * trouble first, and redraws it until q (or -n frames). On a terminal it
 * draws in place; with TERM=dumb, or when stdout is not a terminal, it
 * prints one frame after the other.
 *
 * The socket: --socket PATH, else the control_socket of the config -c
 * names, else the default, found the way the daemon makes it
 * (config_default_control: the unit's RuntimeDirectory, /run/weir for
 * root, $XDG_RUNTIME_DIR/weir for another user).
 */
#include "ctl.h"

#include <errno.h>
#include <getopt.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sysexits.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>

#include "conf/config.h"
#include "sys/ctlreq.h"

#define REPLY_WAIT_MS 10000
#define REPLY_MAX     (64u << 20)

static volatile sig_atomic_t ctl_stop;

static void on_signal(int sig)
{
    (void)sig;
    ctl_stop = 1;
}

static int64_t now_ms(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Sends req and reads the reply to its end: 0 with *out malloc'd, or
 * -errno. */
int ctl_ask(const char *path, const char *req, char **out)
{
    struct sockaddr_un un = {.sun_family = AF_UNIX};
    size_t cap = 4096, n = 0, rlen = strlen(req);
    int64_t end = now_ms() + REPLY_WAIT_MS;
    char *buf;
    int fd, rc = 0;

    if (strlen(path) >= sizeof(un.sun_path))
        return -ENAMETOOLONG;
    memcpy(un.sun_path, path, strlen(path) + 1);
    fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return -errno;
    if (connect(fd, (struct sockaddr *)&un, sizeof(un)) != 0 ||
        send(fd, req, rlen, MSG_NOSIGNAL) != (ssize_t)rlen) {
        rc = -errno;
        close(fd);
        return rc;
    }
    buf = malloc(cap);
    while (buf) {
        struct pollfd p = {.fd = fd, .events = POLLIN};
        int64_t left = end - now_ms();
        ssize_t got;

        if (left <= 0) {
            rc = -ETIMEDOUT;
            break;
        }
        if (poll(&p, 1, (int)left) < 0) {
            if (errno == EINTR && !ctl_stop)
                continue;
            rc = -errno;
            break;
        }
        if (n + 1 == cap) {
            char *nb = cap < REPLY_MAX ? realloc(buf, cap * 2) : NULL;

            if (!nb) {
                rc = -ENOMEM;
                break;
            }
            buf = nb;
            cap *= 2;
        }
        got = read(fd, buf + n, cap - 1 - n);
        if (got < 0 && (errno == EINTR || errno == EAGAIN))
            continue;
        if (got < 0) {
            rc = -errno;
            break;
        }
        if (got == 0)
            break;
        n += (size_t)got;
    }
    close(fd);
    if (!buf)
        return -ENOMEM;
    if (rc) {
        free(buf);
        return rc;
    }
    buf[n] = '\0';
    *out = buf;
    return 0;
}

static void usage(FILE *f)
{
    char *dflt = config_default_control();

    fprintf(f,
            "usage: weir [-c FILE] status [--json] [-s PATH]\n"
            "       weir [-c FILE] top [-n FRAMES] [-s PATH]\n"
            "\n"
            "  -j, --json          status: the JSON document (schema 1)\n"
            "  -n, --frames N      top: draw N frames, then exit\n"
            "  -s, --socket PATH   the control socket (default: -c FILE's\n"
            "                      control_socket, else %s)\n"
            "  -c, --config FILE   take the socket from FILE's [daemon]\n",
            dflt ? dflt : CONF_DEFAULT_CONTROL);
    free(dflt);
}

/* The socket: -s, else the config's, else the default. NULL: the config
 * turns it off or is broken (said on stderr). */
static char *socket_path(const char *opt, const char *conffile)
{
    struct weir_config *conf;
    unsigned errors = 0;
    char *path;

    if (opt)
        return strdup(opt);
    if (!conffile)
        return config_default_control();
    conf = config_load_file(conffile, &errors);
    if (!conf) {
        fprintf(stderr, "weir: %u error%s in %s\n", errors,
                errors == 1 ? "" : "s", conffile);
        return NULL;
    }
    if (!conf->daemon.control_socket)
        fprintf(stderr, "weir: %s turns the control socket off\n", conffile);
    path = conf->daemon.control_socket ? strdup(conf->daemon.control_socket)
                                       : NULL;
    config_free(conf);
    return path;
}

static void say_unreachable(const char *path, int err)
{
    fprintf(stderr, "weir: cannot reach weir at %s: %s%s\n", path,
            strerror(-err),
            err == -ENOENT || err == -ECONNREFUSED
                ? " (is it running? is [daemon] control_socket elsewhere?)"
                : "");
}

/* The terminal's columns when stdout is one; 0 otherwise. */
static unsigned term_columns(void)
{
    struct winsize ws;

    if (!isatty(STDOUT_FILENO) || ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) != 0 ||
        ws.ws_col < CTLREQ_MIN_WIDTH)
        return 0;
    return ws.ws_col;
}

/* The request for the table: fitted to the terminal when there is one. */
static void table_request(char *req, size_t size, const char *words)
{
    unsigned cols = term_columns();

    if (cols)
        snprintf(req, size, "status%s width %u\n", words, cols);
    else
        snprintf(req, size, "status%s\n", words);
}

static int do_status(const char *path, bool json)
{
    char *reply, req[64];
    int rc;

    if (json)
        snprintf(req, sizeof(req), "status json\n");
    else
        table_request(req, sizeof(req), "");
    rc = ctl_ask(path, req, &reply);

    if (rc) {
        say_unreachable(path, rc);
        return EX_UNAVAILABLE;
    }
    if (strncmp(reply, "error: ", 7) == 0) {
        fprintf(stderr, "weir: %s", reply);
        free(reply);
        return 1;
    }
    fputs(reply, stdout);
    free(reply);
    return fflush(stdout) == 0 ? 0 : 1;
}

/* top */

struct screen {
    bool live; /* draws in place (a terminal that is not dumb) */
    bool raw;  /* stdin's settings changed: restore them */
    bool keys; /* stdin may still say q */
    struct termios saved;
};

static void screen_open(struct screen *s)
{
    const char *term = getenv("TERM");
    struct termios t;

    s->live =
        isatty(STDOUT_FILENO) && term && *term && strcmp(term, "dumb") != 0;
    s->keys = true;
    if (isatty(STDIN_FILENO) && tcgetattr(STDIN_FILENO, &s->saved) == 0) {
        t = s->saved;
        t.c_lflag &= ~(tcflag_t)(ICANON | ECHO);
        t.c_cc[VMIN] = 0;
        t.c_cc[VTIME] = 0;
        s->raw = tcsetattr(STDIN_FILENO, TCSANOW, &t) == 0;
    }
    if (s->live)
        fputs("\033[?1049h\033[?25l", stdout); /* own screen, no cursor */
}

static void screen_close(struct screen *s)
{
    if (s->live)
        fputs("\033[?25h\033[?1049l", stdout);
    fflush(stdout);
    if (s->raw)
        tcsetattr(STDIN_FILENO, TCSANOW, &s->saved);
}

static unsigned columns(void)
{
    struct winsize ws;

    if (ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_col > 0)
        return ws.ws_col;
    return 0; /* no limit */
}

static void frame(const struct screen *s, const char *path, const char *body)
{
    unsigned cols = s->live ? columns() : 0;
    char clock[16];
    time_t t = time(NULL);
    struct tm tm;

    localtime_r(&t, &tm);
    strftime(clock, sizeof(clock), "%H:%M:%S", &tm);
    if (s->live)
        fputs("\033[H", stdout);
    printf("weir top - %s - %s - q quits%s\n", path, clock,
           s->live ? "\033[K" : "");
    for (const char *line = body; *line;) {
        const char *nl = strchr(line, '\n');
        size_t n = nl ? (size_t)(nl - line) : strlen(line);

        if (cols && n > cols)
            n = cols;
        printf("%.*s%s\n", (int)n, line, s->live ? "\033[K" : "");
        line = nl ? nl + 1 : line + n;
    }
    if (s->live)
        fputs("\033[J", stdout);
    else
        putchar('\n');
    fflush(stdout);
}

/* Waits until `until` (ms) for q; true when it came. */
static bool wait_for_q(struct screen *s, int64_t until)
{
    while (!ctl_stop) {
        struct pollfd p = {.fd = STDIN_FILENO, .events = POLLIN};
        int64_t left = until - now_ms();
        char c[64];
        ssize_t n;

        if (left <= 0)
            return false;
        if (!s->keys) {
            poll(NULL, 0, (int)left);
            continue;
        }
        if (poll(&p, 1, (int)left) <= 0)
            continue;
        n = read(STDIN_FILENO, c, sizeof(c));
        if (n <= 0) {
            s->keys = n < 0 && errno == EINTR; /* EOF: no more keys */
            continue;
        }
        for (ssize_t i = 0; i < n; i++)
            if (c[i] == 'q' || c[i] == 'Q')
                return true;
    }
    return true;
}

static int do_top(const char *path, long frames)
{
    struct sigaction sa = {.sa_handler = on_signal};
    struct screen s = {0};
    int rc = 0;

    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGHUP, &sa, NULL);
    screen_open(&s);
    for (long i = 0; !ctl_stop && (frames <= 0 || i < frames); i++) {
        int64_t next = now_ms() + 1000;
        char *reply = NULL, msg[256], req[64];
        int err;

        table_request(req, sizeof(req), " worst");
        err = ctl_ask(path, req, &reply);

        if (err) {
            snprintf(msg, sizeof(msg), "cannot reach weir: %s; trying again\n",
                     strerror(-err));
            frame(&s, path, msg);
            rc = EX_UNAVAILABLE;
        } else {
            frame(&s, path, reply);
            rc = 0;
        }
        free(reply);
        if (frames > 0 && i + 1 == frames)
            break;
        if (wait_for_q(&s, next))
            break;
    }
    screen_close(&s);
    return rc;
}

int ctl_main(int argc, char *argv[], const char *conffile)
{
    static const struct option longopts[] = {
        {"json", no_argument, NULL, 'j'},
        {"frames", required_argument, NULL, 'n'},
        {"socket", required_argument, NULL, 's'},
        {"config", required_argument, NULL, 'c'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    bool top = strcmp(argv[0], "top") == 0, json = false;
    const char *sock = NULL;
    long frames = 0;
    char *path, *end;
    int ch, rc;

    optind = 1;
    while ((ch = getopt_long(argc, argv, "jn:s:c:h", longopts, NULL)) != -1) {
        switch (ch) {
        case 'j':
            json = true;
            break;
        case 'n':
            frames = strtol(optarg, &end, 10);
            if (*end || frames < 1) {
                fprintf(stderr, "weir %s: -n takes a count from 1\n", argv[0]);
                return EX_USAGE;
            }
            break;
        case 's':
            sock = optarg;
            break;
        case 'c':
            conffile = optarg;
            break;
        case 'h':
            usage(stdout);
            return 0;
        default:
            usage(stderr);
            return EX_USAGE;
        }
    }
    if (optind < argc || (top && json) || (!top && frames)) {
        fprintf(stderr, "weir %s: %s\n", argv[0],
                optind < argc ? "unexpected argument"
                : top         ? "--json is for weir status"
                              : "-n is for weir top");
        usage(stderr);
        return EX_USAGE;
    }
    path = socket_path(sock, conffile);
    if (!path)
        return EX_CONFIG;
    rc = top ? do_top(path, frames) : do_status(path, json);
    free(path);
    return rc;
}
