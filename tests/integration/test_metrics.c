/*
 * test_metrics.c - [daemon] metrics on the real binary (WEIR_BIN): GET
 * /metrics over a plain socket (and curl, when installed) holds every
 * series, and weir_bytes_delivered_total for a served pipeline equals the
 * bytes its clients received, a live stream's bytes included; promtool
 * accepts the text; /health and /ready answer, /ready with 503 while
 * stopping; oversized, malformed and too many requests are refused while
 * the daemon goes on serving; SIGUSR1 logs a status line and weir keeps
 * running. Then a real Prometheus scrapes weir and its query API reports
 * the bytes a client received. Every wait is bounded.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>

#include "harness.h"

#define WAIT       30000 /* ms: generous for sanitizer builds on a busy box */
#define PROMETHEUS "/usr/bin/prometheus"
#define PROMTOOL   "/usr/bin/promtool"

static char data[300], data_hex[65];
static char big[300], big_hex[65];
#define DATA_SIZE (3u << 20)
#define BIG_SIZE  (64u << 20)

/* ---- HTTP by hand ---- */

struct reply {
    int status; /* 0: no status line (the connection closed first) */
    char *text; /* the whole reply, NUL-terminated */
    const char *body;
};

/* Sends req as is to loopback:port and reads the reply to EOF. */
static void http_raw(uint16_t port, const char *req, size_t len,
                     struct reply *r)
{
    int fd = h_connect(false, port, NULL, WAIT);
    size_t cap = 1 << 16, n = 0;
    int64_t end = h_now_ms() + WAIT;

    assert_true(fd >= 0);
    *r = (struct reply){.text = malloc(cap)};
    assert_non_null(r->text);
    /* A server that refuses may close before taking all of it. */
    (void)h_write_all(fd, req, len);
    while (h_now_ms() < end) {
        struct pollfd p = {.fd = fd, .events = POLLIN};
        ssize_t got;

        if (poll(&p, 1, 100) != 1)
            continue;
        if (n + 1 == cap) {
            cap *= 2;
            r->text = realloc(r->text, cap);
            assert_non_null(r->text);
        }
        got = read(fd, r->text + n, cap - 1 - n);
        if (got <= 0)
            break;
        n += (size_t)got;
    }
    close(fd);
    r->text[n] = '\0';
    sscanf(r->text, "HTTP/1.%*d %d", &r->status);
    r->body = strstr(r->text, "\r\n\r\n");
    r->body = r->body ? r->body + 4 : "";
}

static void http_get(uint16_t port, const char *path, struct reply *r)
{
    char req[512];
    int n = snprintf(req, sizeof(req),
                     "GET %s HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                     "Connection: close\r\n\r\n",
                     path);

    http_raw(port, req, (size_t)n, r);
}

/* The value of the sample whose name and labels are exactly `series`, or
 * -1 when there is none. */
static double sample(const char *text, const char *series)
{
    size_t n = strlen(series);

    for (const char *p = text; p && *p; p = strchr(p, '\n')) {
        if (*p == '\n')
            p++;
        if (strncmp(p, series, n) == 0 && p[n] == ' ')
            return strtod(p + n + 1, NULL);
    }
    return -1;
}

static void expect_sample(const char *text, const char *series, double want)
{
    double got = sample(text, series);

    if (got != want) {
        fprintf(stderr, "%s: %.0f, want %.0f\n%s", series, got, want, text);
        fail();
    }
}

/* Waits until /ready says 200. */
static void wait_ready(const struct h_weir *w, uint16_t mport)
{
    int64_t end = h_now_ms() + WAIT;
    struct reply r;

    while (h_now_ms() < end) {
        http_get(mport, "/ready", &r);
        free(r.text);
        if (r.status == 200)
            return;
        h_sleep_ms(50);
    }
    h_show_log(w);
    fail_msg("/ready did not say 200 within %d ms", WAIT);
}

static void start(struct h_weir *w, const char *name, uint16_t mport,
                  uint16_t port, const char *file, const char *extra)
{
    h_start_conf(w, name, H_CONF_FRESH_LOG,
                 "[daemon]\nworkers = 2\nmetrics = 127.0.0.1:%u\n"
                 "drain_timeout = 20s\n\n"
                 "[pipeline files]\nsource = file:%s\n"
                 "sink = tcp-listen:127.0.0.1:%u\n%s",
                 mport, file, port, extra);
    h_expect_log(w, "metrics: http://127.0.0.1:", WAIT);
    wait_ready(w, mport);
}

/* ---- the series ---- */

static const char *const families[] = {
    "weir_build_info",
    "weir_ready",
    "weir_pipelines",
    "weir_bytes_read_total",
    "weir_bytes_delivered_total",
    "weir_bytes_dropped_total",
    "weir_blocked_seconds_total",
    "weir_connected_clients",
    "weir_clients_accepted_total",
    "weir_clients_refused_total",
    "weir_streams_total",
    "weir_streams_active",
    "weir_errors_total",
    "weir_sink_reconnects_total",
    "weir_sink_state",
    "weir_sink_queue_bytes",
    "weir_sink_high_water_mark_bytes",
    "weir_transform_bytes_in_total",
    "weir_transform_bytes_out_total",
    "weir_process_resident_memory_bytes",
    "weir_process_open_fds",
    "weir_workers",
    "weir_worker_loop_turns_total",
    "weir_worker_busy_seconds_total",
    "weir_pool_buffers",
    "weir_pool_buffers_in_use",
    "weir_pool_buffers_peak",
};

static void test_series(void **state)
{
    struct h_weir w;
    uint16_t mport = h_free_port(false), port = h_free_port(false);
    char out1[300], out2[300], gz[300], extra[2048], name[512], hex[65];
    uint64_t gz_size;
    struct reply r;
    uint64_t got = 0;
    int fd;

    (void)state;
    h_path(out1, sizeof(out1), "tee1");
    h_path(out2, sizeof(out2), "tee2");
    h_path(gz, sizeof(gz), "upper.gz");
    snprintf(extra, sizeof(extra),
             "\n[pipeline tee]\nsource = file:%s\nsink = file:%s\n"
             "sink = file:%s\n\n"
             "[pipeline upper]\nsource = file:%s\ntransform = uppercase\n"
             "transform = gzip:1\nsink = file:%s\n",
             data, out1, out2, data, gz);
    start(&w, "series", mport, port, big, extra);

    /* A live stream: the client has read part of the file and waits. Its
     * bytes already count, at least what it received. */
    fd = h_connect(false, port, NULL, WAIT);
    assert_true(fd >= 0);
    assert_int_equal(h_drain(fd, NULL, 1u << 20, WAIT), 1u << 20);
    snprintf(name, sizeof(name),
             "weir_bytes_delivered_total{pipeline=\"files\",sink=\"tcp-"
             "listen:127.0.0.1:%u\"}",
             port);
    /* A send counts when the engine reports it done, which may be a turn
     * after the client read it: ask again until it shows (bounded). */
    for (int64_t end = h_now_ms() + WAIT;;) {
        http_get(mport, "/metrics", &r);
        assert_int_equal(r.status, 200);
        if (sample(r.body, name) >= (double)(1u << 20) || h_now_ms() > end)
            break;
        free(r.text);
        h_sleep_ms(20);
    }
    assert_true(sample(r.body, name) >= (double)(1u << 20));
    expect_sample(r.body, "weir_streams_active{pipeline=\"files\"}", 1);
    expect_sample(r.body, "weir_connected_clients{pipeline=\"files\"}", 1);
    free(r.text);
    got = (1u << 20) + (uint64_t)h_drain(fd, hex, UINT64_MAX, WAIT);
    close(fd);
    assert_int_equal(got, BIG_SIZE);
    /* Two more, whole. */
    for (int i = 0; i < 2; i++) {
        fd = h_connect(false, port, NULL, WAIT);
        assert_true(fd >= 0);
        got += (uint64_t)h_drain(fd, hex, UINT64_MAX, WAIT);
        close(fd);
        assert_string_equal(hex, big_hex);
    }
    assert_int_equal(got, 3ull * BIG_SIZE);
    h_expect_log_count(&w, "pipeline tee: sink", 2, WAIT);
    h_expect_log(&w, "pipeline upper: sink", WAIT);
    /* The closing line of the last client comes before its stream's end
     * reaches the totals only in debug logs; wait until none is live. */
    for (int64_t end = h_now_ms() + WAIT;; h_sleep_ms(20)) {
        http_get(mport, "/metrics", &r);
        if (sample(r.body, "weir_streams_active{pipeline=\"files\"}") == 0)
            break;
        free(r.text);
        assert_true(h_now_ms() < end);
    }
    assert_int_equal(r.status, 200);
    assert_non_null(strstr(r.text, "Content-Type: text/plain; version=0.0.4"));
    for (size_t i = 0; i < sizeof(families) / sizeof(families[0]); i++) {
        char t[128];

        snprintf(t, sizeof(t), "# TYPE %s ", families[i]);
        if (!strstr(r.body, t))
            fail_msg("no %s in\n%s", families[i], r.body);
    }
    expect_sample(r.body, name, (double)got);
    /* 3 x 64 MiB went out: the workers turned, and used CPU time. */
    {
        double turns = 0, busy = 0;

        for (int i = 0; i < 2; i++) {
            snprintf(name, sizeof(name),
                     "weir_worker_loop_turns_total{worker=\"%d\"}", i);
            assert_true(sample(r.body, name) >= 0);
            turns += sample(r.body, name);
            snprintf(name, sizeof(name),
                     "weir_worker_busy_seconds_total{worker=\"%d\"}", i);
            assert_true(sample(r.body, name) >= 0);
            busy += sample(r.body, name);
        }
        assert_true(turns >= 3);
        assert_true(busy > 0);
    }
    expect_sample(r.body, "weir_clients_accepted_total{pipeline=\"files\"}", 3);
    expect_sample(r.body, "weir_clients_refused_total{pipeline=\"files\"}", 0);
    expect_sample(r.body, "weir_streams_total{pipeline=\"files\"}", 3);
    expect_sample(r.body, "weir_connected_clients{pipeline=\"files\"}", 0);
    expect_sample(r.body, "weir_bytes_read_total{pipeline=\"files\"}",
                  (double)got);
    expect_sample(r.body, "weir_bytes_read_total{pipeline=\"tee\"}", DATA_SIZE);
    snprintf(name, sizeof(name),
             "weir_bytes_delivered_total{pipeline=\"tee\",sink=\"file:%s\"}",
             out1);
    expect_sample(r.body, name, DATA_SIZE);
    snprintf(name, sizeof(name),
             "weir_bytes_delivered_total{pipeline=\"tee\",sink=\"file:%s\"}",
             out2);
    expect_sample(r.body, name, DATA_SIZE);
    expect_sample(r.body, "weir_errors_total{pipeline=\"tee\",kind=\"sink\"}",
                  0);
    /* The transforms: each takes what the one before it handed on. */
    h_expect_log(&w, "pipeline upper: sink", WAIT);
    assert_true(h_file_sha(gz, hex, &gz_size));
    expect_sample(r.body,
                  "weir_transform_bytes_in_total{pipeline=\"upper\","
                  "transform=\"uppercase\",position=\"1\"}",
                  DATA_SIZE);
    expect_sample(r.body,
                  "weir_transform_bytes_out_total{pipeline=\"upper\","
                  "transform=\"uppercase\",position=\"1\"}",
                  DATA_SIZE);
    expect_sample(r.body,
                  "weir_transform_bytes_in_total{pipeline=\"upper\","
                  "transform=\"gzip:1\",position=\"2\"}",
                  DATA_SIZE);
    expect_sample(r.body,
                  "weir_transform_bytes_out_total{pipeline=\"upper\","
                  "transform=\"gzip:1\",position=\"2\"}",
                  (double)gz_size);
    snprintf(name, sizeof(name),
             "weir_bytes_delivered_total{pipeline=\"upper\",sink=\"file:%s\"}",
             gz);
    expect_sample(r.body, name, (double)gz_size);
    expect_sample(r.body, "weir_workers", 2);
    expect_sample(r.body, "weir_pipelines", 3);
    expect_sample(r.body, "weir_ready", 1);
    assert_true(sample(r.body, "weir_process_resident_memory_bytes") > 0);
    assert_true(sample(r.body, "weir_process_open_fds") > 0);
    assert_true(sample(r.body, "weir_pool_buffers_peak{worker=\"0\"}") +
                    sample(r.body, "weir_pool_buffers_peak{worker=\"1\"}") >
                0);
    snprintf(name, sizeof(name), "weir_build_info{version=\"%s\"",
             getenv("WEIR_VERSION") ? getenv("WEIR_VERSION") : "");
    assert_non_null(strstr(r.body, name));

    /* promtool, the format's own checker, finds nothing to say. */
    {
        char file[300], cmd[1024], *said;
        int rc;

        h_path(file, sizeof(file), "metrics.txt");
        h_write_text(file, "%s", r.body);
        snprintf(cmd, sizeof(cmd), PROMTOOL " check metrics < %s > %s.out 2>&1",
                 file, file);
        if (access(PROMTOOL, X_OK) != 0) {
            fprintf(stderr, "promtool is not installed (Debian package "
                            "prometheus): the format check is skipped\n");
        } else {
            rc = system(cmd);
            snprintf(cmd, sizeof(cmd), "%s.out", file);
            said = h_slurp(cmd);
            fprintf(stderr, "promtool check metrics: exit %d%s%s\n",
                    WEXITSTATUS(rc), said && *said ? ": " : "",
                    said ? said : "");
            assert_int_equal(WEXITSTATUS(rc), 0);
            assert_string_equal(said, "");
            free(said);
        }
    }
    free(r.text);

    /* curl sees the same. */
    if (access("/usr/bin/curl", X_OK) == 0) {
        char file[300], cmd[1024], *body;

        h_path(file, sizeof(file), "curl.txt");
        snprintf(cmd, sizeof(cmd),
                 "curl -sf --max-time 30 -o %s http://127.0.0.1:%u/metrics",
                 file, mport);
        assert_int_equal(system(cmd), 0);
        body = h_slurp(file);
        assert_non_null(body);
        snprintf(name, sizeof(name),
                 "weir_bytes_delivered_total{pipeline=\"files\",sink=\"tcp-"
                 "listen:127.0.0.1:%u\"}",
                 port);
        expect_sample(body, name, (double)got);
        free(body);
    } else {
        fprintf(stderr, "curl is not installed: only the plain socket\n");
    }
    h_expect_exit(&w, 0, true, WAIT);
}

/* Fetches /metrics until `series` is above `floor`. */
static void wait_above(const struct h_weir *w, uint16_t mport,
                       const char *series, double floor)
{
    int64_t end = h_now_ms() + WAIT;
    struct reply r;
    double v = -1;

    while (h_now_ms() < end) {
        http_get(mport, "/metrics", &r);
        v = sample(r.body, series);
        free(r.text);
        if (v > floor)
            return;
        h_sleep_ms(50);
    }
    h_show_log(w);
    fail_msg("%s: %f, want more than %f", series, v, floor);
}

/* ---- health, readiness, and requests that are refused ---- */

static void expect_status(uint16_t mport, const char *path, int status,
                          const char *body)
{
    struct reply r;

    http_get(mport, path, &r);
    if (r.status != status || (body && strcmp(r.body, body) != 0))
        fail_msg("GET %s: %d, want %d:\n%s", path, r.status, status, r.text);
    free(r.text);
}

static void test_endpoints(void **state)
{
    struct h_weir w;
    uint16_t mport = h_free_port(false), port = h_free_port(false);
    uint16_t bport = h_free_port(false);
    static char bigreq[(64u << 10) + 128];
    char extra[512];
    int fds[40], fd;
    size_t len;
    struct reply r;

    (void)state;
    /* A transform keeps its clients on the stream path, with a queue to
     * watch (a plain file is sent with sendfile, which has none). */
    snprintf(extra, sizeof(extra),
             "\n[pipeline big]\nsource = file:%s\ntransform = uppercase\n"
             "sink = tcp-listen:127.0.0.1:%u\n",
             big, bport);
    start(&w, "endpoints", mport, port, data, extra);
    expect_status(mport, "/health", 200, "ok\n");
    expect_status(mport, "/ready", 200, "ready\n");
    expect_status(mport, "/nothing", 404, NULL);

    http_raw(mport, "POST /metrics HTTP/1.1\r\nHost: x\r\n\r\n", 35, &r);
    assert_int_equal(r.status, 405);
    free(r.text);

    /* A 64 KiB header: over the 16 KiB a connection may use. */
    len =
        (size_t)sprintf(bigreq, "GET /metrics HTTP/1.1\r\nHost: x\r\nX-Big: ");
    memset(bigreq + len, 'a', 64u << 10);
    len += 64u << 10;
    len += (size_t)sprintf(bigreq + len, "\r\n\r\n");
    http_raw(mport, bigreq, len, &r);
    if (r.status != 431 && r.status != 413 && r.status != 0)
        fail_msg("oversized request: %d\n%s", r.status, r.text);
    assert_null(strstr(r.text, "weir_build_info"));
    free(r.text);

    /* Not HTTP. */
    http_raw(mport, "\x01\x02 garbage\r\n\r\n", 14, &r);
    assert_true(r.status == 0 || r.status == 400);
    free(r.text);

    /* More idle connections than the limit (32): the later ones are
     * closed, and once they go the endpoint answers again. */
    for (int i = 0; i < 40; i++)
        fds[i] = h_connect(false, mport, NULL, WAIT);
    for (int i = 0; i < 40; i++)
        if (fds[i] >= 0)
            close(fds[i]);
    expect_status(mport, "/health", 200, "ok\n");
    h_expect_fetch(&w, port, WAIT, DATA_SIZE, data_hex, WAIT);

    /* SIGUSR1: a status line; weir goes on. The client's stream ends a
     * moment after the client closed (its lingering close sees the end),
     * so ask until the line shows it gone. */
    for (int64_t end = h_now_ms() + WAIT;;) {
        assert_int_equal(kill(w.pid, SIGUSR1), 0);
        if (h_wait_log(w.log, "status: 2 pipelines, 0 live streams, 0 clients,",
                       200) ||
            h_now_ms() > end)
            break;
    }
    h_expect_log(&w, "status: 2 pipelines, 0 live streams, 0 clients,", 1);
    expect_status(mport, "/health", 200, "ok\n");
    h_expect_fetch(&w, port, WAIT, DATA_SIZE, data_hex, WAIT);
    h_expect_log(&w, " workers, engine ", WAIT);
    h_expect_log(&w, ", fd limit ", WAIT);

    /* Stopping with a client that does not read: not ready any more,
     * alive still, until the client goes. */
    fd = h_connect(false, bport, NULL, WAIT);
    assert_true(fd >= 0);
    assert_int_equal(h_drain(fd, NULL, 4096, WAIT), 4096);
    /* It holds the source back, and that shows while it lasts. */
    snprintf(extra, sizeof(extra),
             "weir_blocked_seconds_total{pipeline=\"big\",sink=\"tcp-listen:"
             "127.0.0.1:%u\"}",
             bport);
    wait_above(&w, mport, extra, 0);
    /* Its queue is full: at its high-water mark (1 MiB, the default). */
    snprintf(extra, sizeof(extra),
             "weir_sink_queue_bytes{pipeline=\"big\",sink=\"tcp-listen:"
             "127.0.0.1:%u\"}",
             bport);
    wait_above(&w, mport, extra, (1u << 20) - 1);
    snprintf(extra, sizeof(extra),
             "weir_sink_high_water_mark_bytes{pipeline=\"big\",sink=\"tcp-"
             "listen:127.0.0.1:%u\"}",
             bport);
    http_get(mport, "/metrics", &r);
    expect_sample(r.body, extra, 1u << 20);
    free(r.text);
    assert_int_equal(kill(w.pid, SIGTERM), 0);
    h_expect_log(&w, "SIGTERM: stopping", WAIT);
    expect_status(mport, "/ready", 503, "stopping\n");
    expect_status(mport, "/health", 200, "ok\n");
    close(fd);
    h_expect_exit(&w, 0, false, WAIT);
}

/* ---- a connecting sink's state ---- */

/* Fetches /metrics until `series` has the value want, appending a line
 * to `grow` (when not NULL) before each try, so that a sink whose peer
 * left finds out. */
static void wait_sample(const struct h_weir *w, uint16_t mport,
                        const char *series, double want, const char *grow)
{
    int64_t end = h_now_ms() + WAIT;
    struct reply r;
    double v = -1;

    while (h_now_ms() < end) {
        if (grow) {
            FILE *f = fopen(grow, "a");

            assert_non_null(f);
            fputs("more\n", f);
            fclose(f);
        }
        http_get(mport, "/metrics", &r);
        v = sample(r.body, series);
        free(r.text);
        if (v == want)
            return;
        h_sleep_ms(50);
    }
    h_show_log(w);
    fail_msg("%s: %.0f, want %.0f", series, v, want);
}

static void test_sink_state(void **state)
{
    struct h_weir w;
    uint16_t mport = h_free_port(false), port = h_free_port(false);
    char src[300], series[512], buf[6];
    int lfd, fd;

    (void)state;
    h_path(src, sizeof(src), "follow.txt");
    h_write_text(src, "hello\n");
    h_start_conf(&w, "sinkstate", H_CONF_FRESH_LOG,
                 "[daemon]\nworkers = 2\nmetrics = 127.0.0.1:%u\n\n"
                 "[pipeline ship]\nsource = file:%s\nfollow = yes\n"
                 "sink = tcp:127.0.0.1:%u\n",
                 mport, src, port);
    h_expect_log(&w, "metrics: http://127.0.0.1:", WAIT);
#define STATE(st)                                                              \
    (snprintf(series, sizeof(series),                                          \
              "weir_sink_state{pipeline=\"ship\",sink=\"tcp:127.0.0.1:%u\","   \
              "state=\"" st "\"}",                                             \
              port),                                                           \
     series)
    /* Nothing listens yet. */
    wait_sample(&w, mport, STATE("connecting"), 1, NULL);
    lfd = h_listen(false, port);
    assert_true(lfd >= 0);
    fd = h_accept(lfd, WAIT);
    assert_true(fd >= 0);
    assert_int_equal(h_drain(fd, NULL, 6, WAIT), 6);
    wait_sample(&w, mport, STATE("up"), 1, NULL);
    /* The collector goes away: the next writes fail, the sink retries. */
    close(fd);
    close(lfd);
    wait_sample(&w, mport, STATE("retrying"), 1, src);
    lfd = h_listen(false, port);
    assert_true(lfd >= 0);
    fd = h_accept(lfd, WAIT);
    assert_true(fd >= 0);
    assert_true(read(fd, buf, sizeof(buf)) > 0);
    wait_sample(&w, mport, STATE("up"), 1, NULL);
    snprintf(series, sizeof(series),
             "weir_sink_reconnects_total{pipeline=\"ship\",sink=\"tcp:127.0.0."
             "1:%u\"}",
             port);
    wait_sample(&w, mport, series, 1, NULL);
#undef STATE
    close(fd);
    close(lfd);
    h_expect_exit(&w, 0, true, WAIT);
}

/* A collector that takes nothing, behind on_full=drop-newest, beside a
 * file that sets the pace: the drops show while the stream runs, and
 * stay counted after it ended. */
static void test_dropped_live(void **state)
{
    struct h_weir w;
    uint16_t mport = h_free_port(false), port = h_free_port(false);
    char series[512], copy[300];
    int lfd, fd;
    int64_t got;
    double live;
    struct reply r;

    (void)state;
    h_path(copy, sizeof(copy), "copy");
    lfd = h_listen(false, port);
    assert_true(lfd >= 0);
    h_start_conf(&w, "dropped", H_CONF_FRESH_LOG,
                 "[daemon]\nworkers = 2\nmetrics = 127.0.0.1:%u\n\n"
                 "[pipeline ship]\nsource = file:%s\nsink = file:%s\n"
                 "sink = tcp:127.0.0.1:%u,on_full=drop-newest\n\n"
                 "; keeps weir running after ship's one stream\n"
                 "[pipeline keep]\nsource = file:%s\n"
                 "sink = tcp-listen:127.0.0.1:%u\n",
                 mport, big, copy, port, data, h_free_port(false));
    fd = h_accept(lfd, WAIT);
    assert_true(fd >= 0);
    snprintf(series, sizeof(series),
             "weir_bytes_dropped_total{pipeline=\"ship\",sink=\"tcp:127.0.0.1:"
             "%u\"}",
             port);
    wait_above(&w, mport, series, 0);
    http_get(mport, "/metrics", &r);
    live = sample(r.body, series);
    expect_sample(r.body, "weir_streams_active{pipeline=\"ship\"}", 1);
    free(r.text);
    /* The collector reads what it was sent; the stream ends, its drops
     * stay counted, and delivered + dropped is the file. */
    got = h_drain(fd, NULL, UINT64_MAX, WAIT);
    assert_true(got > 0);
    close(fd);
    close(lfd);
    h_expect_log(&w, "pipeline ship: sink", WAIT);
    wait_sample(&w, mport, "weir_streams_active{pipeline=\"ship\"}", 0, NULL);
    wait_above(&w, mport, series, live - 1);
    http_get(mport, "/metrics", &r);
    expect_sample(r.body, series, (double)BIG_SIZE - (double)got);
    free(r.text);
    h_expect_exit(&w, 0, true, WAIT);
}

/* A collector that takes nothing behind on_full=disconnect, beside a file
 * that sets the pace: once the policy cuts it, the series say so while
 * the stream runs (state "cut", the drops counted, an empty queue), not
 * a queue of 2^63 bytes and a sink still "up" until the stream ends. */
static void test_disconnect_live(void **state)
{
    struct h_weir w;
    uint16_t mport = h_free_port(false), port = h_free_port(false);
    char copy[300], sink[128], label[64], series[512], *doc;
    int lfd, fd;
    struct reply r;

    (void)state;
    h_path(copy, sizeof(copy), "cut-copy");
    lfd = h_listen(false, port);
    assert_true(lfd >= 0);
    snprintf(sink, sizeof(sink),
             "tcp:127.0.0.1:%u,on_full=disconnect,high_water_mark=64KiB", port);
    /* The series call it by its address without the options. */
    snprintf(label, sizeof(label), "tcp:127.0.0.1:%u", port);
    h_start_conf(&w, "cutlive", H_CONF_FRESH_LOG,
                 "[daemon]\nworkers = 2\nmetrics = 127.0.0.1:%u\n\n"
                 "[pipeline ship]\nsource = file:%s\nfollow = yes\n"
                 "sink = file:%s\nsink = %s\n",
                 mport, big, copy, sink);
    fd = h_accept(lfd, WAIT);
    assert_true(fd >= 0);
    h_expect_log(&w, "cut loose: its queue stayed full (on_full=disconnect)",
                 WAIT);
    snprintf(series, sizeof(series),
             "weir_sink_state{pipeline=\"ship\",sink=\"%s\",state=\"cut\"}",
             label);
    wait_sample(&w, mport, series, 1, NULL);
    http_get(mport, "/metrics", &r);
    snprintf(series, sizeof(series),
             "weir_sink_state{pipeline=\"ship\",sink=\"%s\",state=\"up\"}",
             label);
    expect_sample(r.body, series, 0);
    snprintf(series, sizeof(series),
             "weir_sink_queue_bytes{pipeline=\"ship\",sink=\"%s\"}", label);
    expect_sample(r.body, series, 0);
    snprintf(series, sizeof(series),
             "weir_bytes_dropped_total{pipeline=\"ship\",sink=\"%s\"}", label);
    free(r.text);
    /* The file sink reads the whole file: all it did not deliver, the
     * cut sink dropped. */
    wait_above(&w, mport, series, (double)BIG_SIZE / 2);
    /* weir status says the same: the row is "cut", its queue 0 B. */
    {
        char cmd[900], out[300];
        const char *row;

        h_path(out, sizeof(out), "cutlive.status");
        snprintf(cmd, sizeof(cmd), "%s status -s %s/run/control > %s 2>&1",
                 h_bin(), h_dir, out);
        assert_int_equal(system(cmd), 0);
        doc = h_slurp(out);
        assert_non_null(doc);
        row = strstr(doc, label);
        if (!row || !strstr(row, " cut ") || strstr(doc, "TiB"))
            fail_msg("weir status:\n%s", doc);
        free(doc);
    }
    close(fd);
    close(lfd);
    h_expect_exit(&w, 0, true, WAIT);
}

/* A reload that changes a pipeline: its old definition drains and is
 * freed, and what it counted stays in the counters. */
static void test_reload_keeps_counts(void **state)
{
    struct h_weir w;
    uint16_t mport = h_free_port(false), port = h_free_port(false);
    char conf[300], series[512];
    struct reply r;

    (void)state;
    start(&w, "reloadm", mport, port, data, "");
    h_expect_fetch(&w, port, WAIT, DATA_SIZE, data_hex, WAIT);
    snprintf(series, sizeof(series),
             "weir_bytes_delivered_total{pipeline=\"files\",sink=\"tcp-"
             "listen:127.0.0.1:%u\"}",
             port);
    wait_sample(&w, mport, series, DATA_SIZE, NULL);

    h_path(conf, sizeof(conf), "reloadm.conf");
    h_write_text(conf,
                 "[daemon]\nworkers = 2\nmetrics = 127.0.0.1:%u\n"
                 "drain_timeout = 20s\n\n"
                 "[pipeline files]\nsource = file:%s\n"
                 "sink = tcp-listen:127.0.0.1:%u\nchunk_size = 128KiB\n",
                 mport, data, port);
    assert_int_equal(kill(w.pid, SIGHUP), 0);
    h_expect_log(&w, "reloaded ", WAIT);
    h_expect_log(&w, "0 pipelines unchanged, 1 changed", WAIT);
    h_expect_fetch(&w, port, WAIT, DATA_SIZE, data_hex, WAIT);
    wait_sample(&w, mport, series, 2.0 * DATA_SIZE, NULL);
    http_get(mport, "/metrics", &r);
    expect_sample(r.body, "weir_clients_accepted_total{pipeline=\"files\"}", 2);
    expect_sample(r.body, "weir_streams_total{pipeline=\"files\"}", 2);
    expect_sample(r.body, "weir_pipelines", 1);
    free(r.text);
    h_expect_exit(&w, 0, true, WAIT);
}

/* ---- a real Prometheus ---- */

/* The first "value":[TIME,"V"] of a query reply, or -1. */
static double query_value(const char *json)
{
    const char *p = strstr(json, "\"value\":[");

    if (!p || !(p = strchr(p, ',')) || p[1] != '"')
        return -1;
    return strtod(p + 2, NULL);
}

static void test_prometheus(void **state)
{
    struct h_weir w;
    uint16_t mport = h_free_port(false), port = h_free_port(false);
    uint16_t pport = h_free_port(false);
    char conf[300], tsdb[300], plog[300], path[256], *json = NULL;
    struct reply r;
    pid_t pid;
    int status = -1, fd;
    double v = -1;
    int64_t end;

    (void)state;
    if (access(PROMETHEUS, X_OK) != 0) {
        fprintf(stderr,
                "%s is not installed (Debian package prometheus): "
                "the scrape test is skipped\n",
                PROMETHEUS);
        skip();
    }
    start(&w, "prom", mport, port, data, "");
    h_expect_fetch(&w, port, WAIT, DATA_SIZE, data_hex, WAIT);

    h_path(conf, sizeof(conf), "prometheus.yml");
    h_path(tsdb, sizeof(tsdb), "tsdb");
    h_path(plog, sizeof(plog), "prometheus.log");
    h_write_text(conf,
                 "global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\n"
                 "scrape_configs:\n  - job_name: weir\n"
                 "    static_configs:\n      - targets: ['127.0.0.1:%u']\n",
                 mport);
    pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        char a1[400], a2[400], a3[64];
        int lfd = open(plog, O_WRONLY | O_CREAT | O_TRUNC, 0644);

        if (lfd >= 0) {
            dup2(lfd, 1);
            dup2(lfd, 2);
        }
        snprintf(a1, sizeof(a1), "--config.file=%s", conf);
        snprintf(a2, sizeof(a2), "--storage.tsdb.path=%s", tsdb);
        snprintf(a3, sizeof(a3), "--web.listen-address=127.0.0.1:%u", pport);
        execl(PROMETHEUS, "prometheus", a1, a2, a3, (char *)NULL);
        _exit(127);
    }
    h_track(pid, true);

    /* Bounded: Prometheus starts, scrapes once a second, and answers. */
    end = h_now_ms() + 60000;
    while (h_now_ms() < end) {
        fd = h_connect(false, pport, NULL, 100);
        if (fd >= 0) {
            close(fd);
            http_get(pport, "/api/v1/query?query=weir_bytes_delivered_total",
                     &r);
            if (r.status == 200 && (v = query_value(r.body)) >= 0) {
                json = strdup(r.body);
                free(r.text);
                break;
            }
            free(r.text);
        }
        if (waitpid(pid, &status, WNOHANG) == pid) {
            h_track(pid, false);
            pid = -1;
            break;
        }
        h_sleep_ms(200);
    }
    if (pid > 0) {
        kill(pid, SIGTERM);
        for (int64_t stop = h_now_ms() + WAIT; h_now_ms() < stop;
             h_sleep_ms(20))
            if (waitpid(pid, &status, WNOHANG) == pid)
                break;
        if (waitpid(pid, &status, WNOHANG) == 0) {
            kill(pid, SIGKILL);
            waitpid(pid, &status, 0);
        }
        h_track(pid, false);
    }
    if (!json) {
        char *log = h_slurp(plog);

        fprintf(stderr, "prometheus said:\n%s\n", log ? log : "");
        free(log);
        fail_msg("no weir_bytes_delivered_total from Prometheus");
        return;
    }
    fprintf(stderr, "GET /api/v1/query?query=weir_bytes_delivered_total:\n%s\n",
            json);
    snprintf(path, sizeof(path), "\"sink\":\"tcp-listen:127.0.0.1:%u\"", port);
    assert_non_null(strstr(json, path));
    assert_non_null(strstr(json, "\"pipeline\":\"files\""));
    assert_true(v == (double)DATA_SIZE);
    free(json);
    h_rm_tree(tsdb);
    h_expect_exit(&w, 0, true, WAIT);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_teardown(test_series, h_teardown),
        cmocka_unit_test_teardown(test_endpoints, h_teardown),
        cmocka_unit_test_teardown(test_sink_state, h_teardown),
        cmocka_unit_test_teardown(test_dropped_live, h_teardown),
        cmocka_unit_test_teardown(test_disconnect_live, h_teardown),
        cmocka_unit_test_teardown(test_reload_keeps_counts, h_teardown),
        cmocka_unit_test_teardown(test_prometheus, h_teardown),
    };
    int rc;

    if (h_begin("metrics") != 0)
        return 1;
    h_path(data, sizeof(data), "data");
    h_make_file(data, DATA_SIZE, 13, data_hex);
    h_path(big, sizeof(big), "big");
    h_make_file(big, BIG_SIZE, 14, big_hex);
    rc = cmocka_run_group_tests(tests, NULL, NULL);
    h_end();
    return rc;
}
