/*
 * test_status.c - the control socket and its clients on the real binary
 * (WEIR_BIN): `weir status --json`, parsed by python3's json module,
 * reports the bytes a test client received; `weir status` prints the
 * table; the socket is 0600 and goes at exit; malformed, oversized and
 * idle requests are answered or cut off while status keeps answering;
 * SIGUSR1 logs the same table; `weir top` run under tmux shows the
 * pipelines and quits on q, and with no terminal prints frames, the sink
 * in trouble first. Every wait is bounded.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>

#include "harness.h"

#define WAIT 30000 /* ms: generous for sanitizer builds on a busy box */
#define TMUX "/usr/bin/tmux"

static char data[300], data_hex[65];
#define DATA_SIZE (3u << 20)
static char big[300], big_hex[65];
#define BIG_SIZE (64u << 20)

static char sock[300];

/* Runs WEIR_BIN with args (NULL-terminated), stdout into h_dir/out.txt;
 * returns its exit status and, in *out, its stdout (caller frees). */
static int run_weir(char **out, const char *arg, ...)
{
    char *argv[16], outp[300], logp[300];
    struct h_weir w;
    va_list ap;
    int n = 0, rc;

    argv[n++] = "weir";
    va_start(ap, arg);
    for (const char *a = arg; a && n < 15; a = va_arg(ap, const char *))
        argv[n++] = (char *)a;
    va_end(ap);
    argv[n] = NULL;
    h_path(outp, sizeof(outp), "out.txt");
    h_path(logp, sizeof(logp), "client.log");
    unlink(outp);
    h_spawn_io(&w, argv, logp, NULL, outp);
    rc = h_wait(&w, WAIT);
    *out = h_slurp(outp);
    assert_non_null(*out);
    return rc;
}

/* A field of the status document, through python3's json module: the
 * pipeline's `key` (sink NULL), or its sink's. -1 when not there. */
static double json_field(const char *doc, const char *pipeline,
                         const char *sink, const char *key)
{
    char path[300], cmd[1024], line[128] = "";
    FILE *f;

    h_path(path, sizeof(path), "status.json");
    h_write_text(path, "%s", doc);
    snprintf(cmd, sizeof(cmd),
             "python3 -c 'import json,sys\n"
             "d=json.load(open(sys.argv[1]))\n"
             "assert d[\"schema\"]==1\n"
             "p=[p for p in d[\"pipelines\"] if p[\"name\"]==sys.argv[2]][0]\n"
             "o=p if sys.argv[3]==\"\" else "
             "[s for s in p[\"sinks\"] if s[\"sink\"]==sys.argv[3]][0]\n"
             "print(o[sys.argv[4]])' '%s' '%s' '%s' '%s'",
             path, pipeline, sink ? sink : "", key);
    f = popen(cmd, "r");
    assert_non_null(f);
    if (!fgets(line, sizeof(line), f))
        line[0] = '\0';
    if (pclose(f) != 0 || !line[0])
        return -1;
    return strtod(line, NULL);
}

static void start(struct h_weir *w, const char *name, uint16_t port,
                  uint16_t collector)
{
    h_start_conf(w, name, H_CONF_FRESH_LOG,
                 "[daemon]\nworkers = 2\ncontrol_socket = %s\n"
                 "drain_timeout = 20s\n\n"
                 "[pipeline files]\nsource = file:%s\n"
                 "sink = tcp-listen:127.0.0.1:%u\n\n"
                 "[pipeline logs]\nsource = file:%s\nfollow = yes\n"
                 "sink = tcp:127.0.0.1:%u\n",
                 sock, data, port, data, collector);
    h_expect_log(w, "pipeline files: listening on", WAIT);
}

/* Sends req on a fresh connection to the control socket and reads the
 * reply to EOF (NUL-terminated; caller frees). */
static char *ask_raw(const char *req, size_t len)
{
    int fd = h_connect(false, 0, sock, WAIT);
    char *buf = calloc(1, 1 << 16);
    size_t n = 0;
    int64_t end = h_now_ms() + WAIT;

    assert_true(fd >= 0);
    assert_non_null(buf);
    (void)h_write_all(fd, req, len);
    while (h_now_ms() < end && n + 1 < (1 << 16)) {
        struct pollfd p = {.fd = fd, .events = POLLIN};
        ssize_t got;

        if (poll(&p, 1, 100) != 1)
            continue;
        got = read(fd, buf + n, (1 << 16) - 1 - n);
        if (got <= 0)
            break;
        n += (size_t)got;
    }
    close(fd);
    return buf;
}

static void test_status_json(void **state)
{
    uint16_t port = h_free_port(false), collector;
    int held = h_hold_port(&collector);
    struct h_collector col;
    char sink[64], *out = NULL;
    struct h_client c = {.port = 0};
    struct stat st;
    struct h_weir w;
    double got = -1;

    (void)state;
    start(&w, "json", port, collector);
    assert_int_equal(stat(sock, &st), 0);
    assert_true(S_ISSOCK(st.st_mode));
    assert_int_equal(st.st_mode & 0777, 0600);
    assert_int_equal(st.st_uid, geteuid());

    c.port = port;
    h_client_run(&c, WAIT);
    assert_int_equal(c.got, DATA_SIZE);
    assert_string_equal(c.hex, data_hex);

    /* The client's stream ends a moment after its EOF: ask until the
     * document shows no live stream, then its bytes are final. */
    snprintf(sink, sizeof(sink), "tcp-listen:127.0.0.1:%u", port);
    for (int64_t end = h_now_ms() + WAIT; h_now_ms() < end;) {
        free(out);
        assert_int_equal(run_weir(&out, "status", "--json", "-s", sock, NULL),
                         0);
        if (json_field(out, "files", NULL, "streams_active") == 0) {
            got = json_field(out, "files", sink, "bytes_delivered");
            break;
        }
        h_sleep_ms(50);
    }
    if (got != (double)c.got) {
        fprintf(stderr, "%s\n", out);
        fail_msg("bytes_delivered %.0f, the client got %lld", got,
                 (long long)c.got);
    }
    assert_true(json_field(out, "files", NULL, "bytes_read") ==
                (double)DATA_SIZE);
    assert_true(json_field(out, "files", NULL, "streams_total") == 1);
    /* The collector is down: the logs sink says so. */
    snprintf(sink, sizeof(sink), "tcp:127.0.0.1:%u", collector);
    assert_non_null(strstr(out, "\"state\":\"connecting\""));
    assert_true(json_field(out, "logs", sink, "bytes_delivered") == 0);
    assert_true(json_field(out, "logs", sink, "high_water_mark") == 1048576);
    free(out);

    /* The table: a header and one row per sink. */
    assert_int_equal(run_weir(&out, "status", "-s", sock, NULL), 0);
    assert_non_null(strstr(out, "2 pipelines, 1 live stream, 0 clients, "));
    assert_non_null(strstr(out, "PIPELINE  SINK"));
    assert_non_null(strstr(out, "files     tcp-listen:127.0.0.1:"));
    assert_non_null(strstr(out, "logs      tcp:127.0.0.1:"));
    assert_non_null(strstr(out, " connecting "));
    free(out);

    /* The collector comes up (its sink connects at its next try). */
    h_collector_up(&col, held, WAIT);
    /* A sink in backoff gives up at a stop: let it connect first. */
    h_expect_log(&w, "pipeline logs: connected to", WAIT);

    /* SIGUSR1: the same table in the log. */
    assert_int_equal(kill(w.pid, SIGUSR1), 0);
    h_expect_log(&w, "info: status: PIPELINE  SINK", WAIT);
    h_expect_log(&w, "info: status: logs      tcp:127.0.0.1:", WAIT);

    h_expect_exit(&w, 0, true, WAIT);
    h_collector_join(&col);
    /* Its socket goes with it. */
    assert_int_equal(stat(sock, &st), -1);
    /* Nothing answers now: weir status says so. */
    assert_int_equal(run_weir(&out, "status", "-s", sock, NULL), 69);
    free(out);
}

static void test_bad_requests(void **state)
{
    uint16_t port = h_free_port(false), collector;
    int held = h_hold_port(&collector), idle[8];
    struct h_collector col;
    char huge[400], *r, *out;
    struct h_weir w;

    (void)state;
    start(&w, "bad", port, collector);
    r = ask_raw("bogus\n", 6);
    assert_string_equal(r, "error: unknown request 'bogus'\n");
    free(r);
    r = ask_raw("status yaml\n", 12);
    assert_string_equal(r, "error: unknown option 'yaml'\n");
    free(r);
    memset(huge, 's', sizeof(huge));
    r = ask_raw(huge, sizeof(huge));
    assert_string_equal(r, "error: request too long\n");
    free(r);
    r = ask_raw("status\r\n", 8);
    assert_non_null(strstr(r, "PIPELINE"));
    free(r);

    /* Every connection slot taken by a client that says nothing: they are
     * cut off after the exchange's bound, and status answers again. */
    for (int i = 0; i < 8; i++) {
        idle[i] = h_connect(false, 0, sock, WAIT);
        assert_true(idle[i] >= 0);
    }
    assert_int_equal(run_weir(&out, "status", "-s", sock, NULL), 0);
    assert_non_null(strstr(out, "PIPELINE"));
    free(out);
    for (int i = 0; i < 8; i++) {
        char c;

        /* Cut: EOF (or a reset), not a hang. */
        assert_true(h_drain(idle[i], NULL, 1, WAIT) >= 0 ||
                    read(idle[i], &c, 1) <= 0);
        close(idle[i]);
    }
    h_collector_up(&col, held, WAIT);
    /* A sink in backoff gives up at a stop: let it connect first. */
    h_expect_log(&w, "pipeline logs: connected to", WAIT);
    h_expect_exit(&w, 0, true, WAIT);
    h_collector_join(&col);
}

/* A reload that changes a pipeline while a client of it is served: the
 * old one drains, the new one serves, and the board shows the name once,
 * not draining. */
static void test_reload_shows_once(void **state)
{
    uint16_t port = h_free_port(false);
    char conf[300], *out = NULL;
    struct h_weir w;
    int fd;

    (void)state;
    h_start_conf(&w, "reload", H_CONF_FRESH_LOG,
                 "[daemon]\nworkers = 2\ncontrol_socket = %s\n"
                 "drain_timeout = 20s\n\n"
                 "[pipeline files]\nsource = file:%s\n"
                 "sink = tcp-listen:127.0.0.1:%u\n",
                 sock, big, port);
    h_expect_log(&w, "pipeline files: listening on", WAIT);
    /* A client that takes a part and waits: its stream keeps the old
     * pipeline draining. */
    fd = h_connect(false, port, NULL, WAIT);
    assert_true(fd >= 0);
    assert_int_equal(h_drain(fd, NULL, 4096, WAIT), 4096);
    h_path(conf, sizeof(conf), "reload.conf");
    h_write_text(conf,
                 "[daemon]\nworkers = 2\ncontrol_socket = %s\n"
                 "drain_timeout = 20s\n\n"
                 "[pipeline files]\nsource = file:%s\n"
                 "sink = tcp-listen:127.0.0.1:%u\nhigh_water_mark = 2MiB\n",
                 sock, big, port);
    assert_int_equal(kill(w.pid, SIGHUP), 0);
    h_expect_log(&w, "reloaded ", WAIT);
    assert_int_equal(run_weir(&out, "status", "--json", "-s", sock, NULL), 0);
    assert_int_equal(h_count(out, "\"name\":\"files\""), 1);
    assert_non_null(strstr(out, "\"draining\":false"));
    assert_true(json_field(out, "files", NULL, "streams_active") == 1);
    free(out);
    close(fd);
    h_expect_exit(&w, 0, true, WAIT);
}

/* The frames `weir top -n` prints when stdout is no terminal. */
static void test_top_frames(void **state)
{
    uint16_t port = h_free_port(false), collector;
    int held = h_hold_port(&collector);
    struct h_collector col;
    struct h_weir w;
    char *out;
    const char *logs, *files;

    (void)state;
    start(&w, "frames", port, collector);
    assert_int_equal(run_weir(&out, "top", "-n", "2", "-s", sock, NULL), 0);
    assert_int_equal(h_count(out, "weir top - "), 2);
    assert_int_equal(h_count(out, "PIPELINE  SINK"), 2);
    /* The sink in trouble first, though the config names it second. */
    logs = strstr(out, "\nlogs ");
    files = strstr(out, "\nfiles ");
    assert_non_null(logs);
    assert_non_null(files);
    assert_true(logs < files);
    assert_null(strchr(out, '\033')); /* no terminal: no escapes */
    free(out);
    h_collector_up(&col, held, WAIT);
    /* A sink in backoff gives up at a stop: let it connect first. */
    h_expect_log(&w, "pipeline logs: connected to", WAIT);
    h_expect_exit(&w, 0, true, WAIT);
    h_collector_join(&col);
}

static int tmux(const char *tsock, const char *a, const char *b, const char *c,
                const char *d, char **out)
{
    char cmd[2048], path[300];
    int rc;

    h_path(path, sizeof(path), "tmux.out");
    snprintf(cmd, sizeof(cmd), "%s -S '%s' %s %s %s %s >'%s' 2>&1", TMUX, tsock,
             a, b ? b : "", c ? c : "", d ? d : "", path);
    rc = system(cmd);
    if (out)
        *out = h_slurp(path);
    return rc == -1 ? -1 : WEXITSTATUS(rc);
}

static void test_top_tmux(void **state)
{
    uint16_t port = h_free_port(false), collector;
    int held = h_hold_port(&collector);
    struct h_collector col;
    char tsock[300], cmd[1024], *screen = NULL;
    struct h_weir w;
    bool shown = false, gone = false;

    (void)state;
    if (access(TMUX, X_OK) != 0) {
        fprintf(stderr, "tmux is not installed (tools/install-deps)\n");
        fail();
    }
    start(&w, "tmux", port, collector);
    h_path(tsock, sizeof(tsock), "tmux.sock");
    snprintf(cmd, sizeof(cmd), "'TERM=xterm %s top -s %s'", h_bin(), sock);
    if (tmux(tsock, "new-session -d -x 132 -y 24", cmd, NULL, NULL, &screen) !=
        0)
        fail_msg("tmux new-session failed: %s", screen ? screen : "");
    free(screen);
    screen = NULL;
    for (int64_t end = h_now_ms() + WAIT; !shown && h_now_ms() < end;) {
        free(screen);
        (void)tmux(tsock, "capture-pane -p", NULL, NULL, NULL, &screen);
        shown = screen && strstr(screen, "weir top - ") &&
                strstr(screen, "\nfiles ") && strstr(screen, "\nlogs ") &&
                strstr(screen, "connecting");
        if (!shown)
            h_sleep_ms(100);
    }
    if (!shown) {
        fprintf(stderr, "%s\n", screen ? screen : "(nothing)");
        (void)tmux(tsock, "kill-server", NULL, NULL, NULL, NULL);
        fail_msg("weir top did not show the pipelines");
    }
    free(screen);
    /* It draws in place: one header on the screen, however many frames. */
    (void)tmux(tsock, "capture-pane -p", NULL, NULL, NULL, &screen);
    assert_int_equal(h_count(screen, "weir top - "), 1);
    free(screen);
    assert_int_equal(tmux(tsock, "send-keys q", NULL, NULL, NULL, NULL), 0);
    for (int64_t end = h_now_ms() + WAIT; !gone && h_now_ms() < end;) {
        gone = tmux(tsock, "has-session", NULL, NULL, NULL, NULL) != 0;
        if (!gone)
            h_sleep_ms(50);
    }
    if (!gone)
        (void)tmux(tsock, "kill-server", NULL, NULL, NULL, NULL);
    assert_true(gone);
    h_collector_up(&col, held, WAIT);
    /* A sink in backoff gives up at a stop: let it connect first. */
    h_expect_log(&w, "pipeline logs: connected to", WAIT);
    h_expect_exit(&w, 0, true, WAIT);
    h_collector_join(&col);
}

/* The access log: one info line per client, a client that hangs up
 * early is no warning; access_log = no keeps both out of the info
 * level. */
static void test_access_log(void **state)
{
    uint16_t port = h_free_port(false);
    struct h_client c = {.port = 0};
    struct h_weir w;
    char want[128], *log;
    int fd, small = 4096;

    (void)state;
    h_start_conf(&w, "access", H_CONF_FRESH_LOG,
                 "[daemon]\nworkers = 2\ncontrol_socket = no\n\n"
                 "[pipeline files]\nsource = file:%s\n"
                 "sink = tcp-listen:127.0.0.1:%u\n",
                 big, port);
    h_expect_log(&w, "pipeline files: listening on", WAIT);
    c.port = port;
    h_client_run(&c, WAIT);
    assert_int_equal(c.got, BIG_SIZE);
    snprintf(want, sizeof(want), " done, %u bytes in ", BIG_SIZE);
    h_expect_log(&w, want, WAIT);
    h_expect_log(&w, "info: pipeline files: client 127.0.0.1:", WAIT);
    /* Takes a part of the file and leaves with far more unsent than the
     * sockets' buffers hold. */
    fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    assert_true(fd >= 0);
    assert_int_equal(
        setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &small, sizeof(small)), 0);
    {
        struct sockaddr_storage ss;
        socklen_t len = h_addr(&ss, false, port);

        assert_int_equal(connect(fd, (struct sockaddr *)&ss, len), 0);
    }
    assert_int_equal(h_drain(fd, NULL, 4096, WAIT), 4096);
    close(fd);
    h_expect_log(&w, " hung up (", WAIT);
    h_expect_exit(&w, 0, true, WAIT);
    log = h_slurp(w.log);
    assert_int_equal(h_count(log, "warning: pipeline files: client"), 0);
    assert_int_equal(h_count(log, "info: pipeline files: client"), 2);
    free(log);

    h_start_conf(&w, "quiet", H_CONF_FRESH_LOG,
                 "[daemon]\nworkers = 2\naccess_log = no\n"
                 "control_socket = no\n\n"
                 "[pipeline files]\nsource = file:%s\n"
                 "sink = tcp-listen:127.0.0.1:%u\n",
                 data, port);
    h_expect_log(&w, "pipeline files: listening on", WAIT);
    h_client_run(&c, WAIT);
    assert_int_equal(c.got, DATA_SIZE);
    /* Stopped: by the exit its stream has ended, and said nothing at
     * info. */
    h_expect_exit(&w, 0, true, WAIT);
    log = h_slurp(w.log);
    assert_int_equal(h_count(log, "pipeline files: client"), 0);
    free(log);
}

/* A control_socket that names a file which is not a socket (the config
 * itself, by mistake): the start fails, says why, and the file is as it
 * was. */
static void test_control_socket_spares_files(void **state)
{
    char conf[300], before[65], after[65];
    struct h_weir w;

    (void)state;
    h_path(conf, sizeof(conf), "spare.conf");
    h_start_conf(&w, "spare", H_CONF_FRESH_LOG,
                 "[daemon]\nworkers = 1\ncontrol_socket = %s\n\n"
                 "[pipeline files]\nsource = file:%s\n"
                 "sink = tcp-listen:127.0.0.1:%u\n",
                 conf, data, h_free_port(false));
    h_expect_exit(&w, 1, false, WAIT);
    h_expect_log(&w, "a file that is not a socket is there; it is left", WAIT);
    /* h_start_conf wrote the config before the start: it is still whole. */
    assert_true(h_file_sha(conf, after, &(uint64_t){0}));
    {
        char *text = h_slurp(conf);

        assert_non_null(strstr(text, "[pipeline files]"));
        h_sha_hex(text, strlen(text), before);
        free(text);
    }
    assert_string_equal(before, after);
}

/* Many clients at once, and clients that connect and say nothing: none
 * is refused at connect, and `weir status` is answered all the same. */
static void test_control_many_clients(void **state)
{
    enum { IDLE = 100, BUSY = 200 };
    int idle[IDLE], busy[BUSY];
    unsigned answered = 0;
    struct h_weir w;
    char *out;

    (void)state;
    h_start_conf(&w, "many", H_CONF_FRESH_LOG,
                 "[daemon]\nworkers = 1\ncontrol_socket = %s\n\n"
                 "[pipeline files]\nsource = file:%s\n"
                 "sink = tcp-listen:127.0.0.1:%u\n",
                 sock, data, h_free_port(false));
    h_expect_log(&w, "pipeline files: listening on", WAIT);
    for (int i = 0; i < IDLE; i++) {
        idle[i] = h_connect(false, 0, sock, WAIT);
        assert_true(idle[i] >= 0);
    }
    /* With every idle client still connected, status is answered. */
    assert_int_equal(run_weir(&out, "status", "-s", sock, NULL), 0);
    assert_non_null(strstr(out, "files"));
    free(out);
    for (int i = 0; i < BUSY; i++) {
        struct sockaddr_un un = {.sun_family = AF_UNIX};

        /* Non-blocking, as a client with a deadline connects: a full
         * backlog refuses it at once (EAGAIN) instead of queueing it. */
        busy[i] =
            socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
        assert_true(strlen(sock) < sizeof(un.sun_path));
        memcpy(un.sun_path, sock, strlen(sock) + 1);
        if (connect(busy[i], (struct sockaddr *)&un, sizeof(un)) != 0)
            fail_msg("client %d of %d refused at connect: %s", i + 1, BUSY,
                     strerror(errno));
        assert_true(h_write_all(busy[i], "status\n", 7));
    }
    for (int i = 0; i < BUSY; i++) {
        char buf[4096];
        ssize_t n, total = 0;
        struct pollfd p = {.fd = busy[i], .events = POLLIN};

        while (poll(&p, 1, (int)WAIT) == 1 &&
               (n = read(busy[i], buf, sizeof(buf))) > 0)
            total += n;
        answered += total > 0;
        close(busy[i]);
    }
    assert_int_equal(answered, BUSY);
    for (int i = 0; i < IDLE; i++)
        close(idle[i]);
    h_expect_exit(&w, 0, true, WAIT);
}

/* Without control_socket, the daemon makes its socket where `weir
 * status` looks: in $RUNTIME_DIRECTORY (made when missing). */
static void test_control_default_place(void **state)
{
    char rt[300], conf[300], where[340], *out;
    uint16_t port = h_free_port(false);
    struct h_weir w;
    struct stat st;

    (void)state;
    h_path(rt, sizeof(rt), "rt-default");
    h_rm_tree(rt);
    setenv("RUNTIME_DIRECTORY", rt, 1);
    h_start_conf(&w, "dflt", H_CONF_FRESH_LOG,
                 "[pipeline files]\nsource = file:%s\n"
                 "sink = tcp-listen:127.0.0.1:%u\n",
                 data, port);
    h_expect_log(&w, "pipeline files: listening on", WAIT);
    snprintf(where, sizeof(where), "%s/control", rt);
    assert_int_equal(lstat(where, &st), 0);
    assert_true(S_ISSOCK(st.st_mode));
    h_path(conf, sizeof(conf), "dflt.conf");
    assert_int_equal(run_weir(&out, "-c", conf, "status", NULL), 0);
    assert_non_null(strstr(out, "files"));
    free(out);
    assert_int_equal(run_weir(&out, "status", NULL), 0);
    assert_non_null(strstr(out, "files"));
    free(out);
    h_expect_exit(&w, 0, true, WAIT);
    h_path(rt, sizeof(rt), "run");
    setenv("RUNTIME_DIRECTORY", rt, 1);
}

/* The screen line of `screen` that holds `needle`, in out; false when
 * none does. */
static bool screen_line(const char *screen, const char *needle, char *out,
                        size_t size)
{
    const char *at = strstr(screen, needle), *start, *end;

    if (!at)
        return false;
    for (start = at; start > screen && start[-1] != '\n'; start--)
        ;
    end = strchr(at, '\n');
    if (!end)
        end = at + strlen(at);
    snprintf(out, size, "%.*s", (int)(end - start), start);
    return true;
}

static unsigned words(const char *s)
{
    unsigned n = 0;

    for (bool in = false; *s; s++) {
        if (*s != ' ' && !in)
            n++;
        in = *s != ' ';
    }
    return n;
}

/* weir top on an 80x24 terminal: long pipeline names and sinks with
 * options no longer push QUEUE, FILL and DROPPED off the screen. Each
 * row keeps all nine columns on its one line of at most 80 characters. */
static void test_top_80x24(void **state)
{
    uint16_t port = h_free_port(false), collector;
    int held = h_hold_port(&collector);
    char tsock[300], cmd[1024], out[300], line[400], *screen = NULL;
    struct h_weir w;
    bool shown = false;

    (void)state;
    if (access(TMUX, X_OK) != 0) {
        fprintf(stderr, "tmux is not installed (tools/install-deps)\n");
        fail();
    }
    h_path(out, sizeof(out), "copy-of-the-application-log.txt");
    h_start_conf(&w, "narrow", H_CONF_FRESH_LOG,
                 "[daemon]\nworkers = 2\ncontrol_socket = %s\n\n"
                 "[pipeline files-for-the-download-mirror]\nsource = file:%s\n"
                 "sink = tcp-listen:127.0.0.1:%u,max_clients=500,"
                 "notsent_lowat=64KiB\n\n"
                 "[pipeline logs-from-the-application-servers]\n"
                 "source = file:%s\nfollow = yes\n"
                 "sink = tcp:127.0.0.1:%u,on_full=disconnect\n"
                 "sink = file:%s\n",
                 sock, data, port, data, collector, out);
    h_expect_log(&w, "listening on", WAIT);
    h_path(tsock, sizeof(tsock), "tmux80.sock");
    snprintf(cmd, sizeof(cmd), "'TERM=xterm %s top -s %s'", h_bin(), sock);
    if (tmux(tsock, "new-session -d -x 80 -y 24", cmd, NULL, NULL, &screen) !=
        0)
        fail_msg("tmux new-session failed: %s", screen ? screen : "");
    for (int64_t end = h_now_ms() + WAIT; !shown && h_now_ms() < end;) {
        free(screen);
        (void)tmux(tsock, "capture-pane -p", NULL, NULL, NULL, &screen);
        shown = screen && strstr(screen, "PIPELINE") &&
                strstr(screen, "\nfiles-") && strstr(screen, "\nlogs-");
        if (!shown)
            h_sleep_ms(100);
    }
    (void)tmux(tsock, "kill-server", NULL, NULL, NULL, NULL);
    if (!shown)
        fail_msg("weir top did not show the pipelines:\n%s",
                 screen ? screen : "(nothing)");
    assert_true(screen_line(screen, "PIPELINE", line, sizeof(line)));
    if (!strstr(line, "QUEUE") || !strstr(line, "FILL") ||
        !strstr(line, "DROP"))
        fail_msg("the head lacks QUEUE, FILL or DROP:\n%s", screen);
    for (const char *row = screen; (row = strstr(row, "\n")) != NULL; row++) {
        if (strncmp(row + 1, "files-", 6) && strncmp(row + 1, "logs-", 5))
            continue;
        assert_true(screen_line(row + 1, row[1] == 'f' ? "files-" : "logs-",
                                line, sizeof(line)));
        assert_true(strlen(line) <= 80);
        /* Nine columns; a state with its time ("retrying 3s") is two. */
        if (words(line) < 9)
            fail_msg("a row lost columns:\n%s\n(screen:\n%s)", line, screen);
    }
    free(screen);
    h_expect_exit(&w, 0, true, WAIT);
    close(held);
}

/* A tee whose file sink has finished while its tcp sink takes nothing:
 * the finished sink holds nothing back. Before, its closed queue read as
 * full (desired size 0): it was shown at 100 % and its blocked seconds
 * grew, so the operator blamed the wrong sink. */
static void test_finished_sink_not_blamed(void **state)
{
    char copy[300], sink[400], tcp[64], *out;
    uint16_t port;
    int lfd = h_listen_any(&port), cfd, small = 4096;
    struct h_weir w;
    double blocked, queued;

    (void)state;
    h_path(copy, sizeof(copy), "tee-copy");
    unlink(copy);
    setsockopt(lfd, SOL_SOCKET, SO_RCVBUF, &small, sizeof(small));
    snprintf(tcp, sizeof(tcp), "tcp:127.0.0.1:%u", port);
    snprintf(sink, sizeof(sink), "file:%s", copy);
    h_start_conf(&w, "teefinish", H_CONF_FRESH_LOG,
                 "[daemon]\nworkers = 2\ncontrol_socket = %s\n"
                 "drain_timeout = 1s\n\n"
                 "[pipeline tee]\nsource = file:%s\nsink = %s\nsink = %s\n",
                 sock, data, sink, tcp);
    cfd = h_accept(lfd, WAIT);
    assert_true(cfd >= 0);
    for (int64_t end = h_now_ms() + WAIT;;) {
        struct stat st;

        if (stat(copy, &st) == 0 && (uint64_t)st.st_size == DATA_SIZE)
            break;
        if (h_now_ms() > end)
            fail_msg("the file sink did not get the whole file");
        h_sleep_ms(20);
    }
    /* Eight watches later the file sink has still held nothing back. */
    h_sleep_ms(2000);
    assert_int_equal(run_weir(&out, "status", "--json", "-s", sock, NULL), 0);
    blocked = json_field(out, "tee", sink, "blocked_seconds");
    queued = json_field(out, "tee", sink, "queue_bytes");
    if (blocked < 0 || blocked > 0.3 || queued != 0)
        fail_msg("the finished file sink: blocked %.3f s, queue %.0f B:\n%s",
                 blocked, queued, out);
    /* The tcp sink is the one that holds the source. */
    assert_true(json_field(out, "tee", tcp, "queue_bytes") > 0);
    free(out);
    h_expect_exit(&w, 0, true, WAIT);
    close(cfd);
    close(lfd);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_teardown(test_status_json, h_teardown),
        cmocka_unit_test_teardown(test_bad_requests, h_teardown),
        cmocka_unit_test_teardown(test_top_frames, h_teardown),
        cmocka_unit_test_teardown(test_top_tmux, h_teardown),
        cmocka_unit_test_teardown(test_top_80x24, h_teardown),
        cmocka_unit_test_teardown(test_finished_sink_not_blamed, h_teardown),
        cmocka_unit_test_teardown(test_access_log, h_teardown),
        cmocka_unit_test_teardown(test_reload_shows_once, h_teardown),
        cmocka_unit_test_teardown(test_control_socket_spares_files, h_teardown),
        cmocka_unit_test_teardown(test_control_many_clients, h_teardown),
        cmocka_unit_test_teardown(test_control_default_place, h_teardown),
    };
    int rc;

    if (h_begin("status") != 0)
        return 1;
    h_path(data, sizeof(data), "data");
    h_make_file(data, DATA_SIZE, 21, data_hex);
    h_path(big, sizeof(big), "big");
    h_make_file(big, BIG_SIZE, 22, big_hex);
    h_path(sock, sizeof(sock), "control");
    rc = cmocka_run_group_tests(tests, NULL, NULL);
    h_end();
    return rc;
}
