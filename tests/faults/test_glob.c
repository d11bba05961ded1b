/*
 * test_glob.c - a glob source end to end: the real daemon follows
 * every *.log of a directory into a TCP collector. Three files there at the
 * start and a fourth created later arrive line by line, each line once and each
 * file's in order; `weir status` and /metrics show the files; SIGTERM
 * leaves a state file that says where every file stands, and a restart
 * sends only what was appended since (to an old file and a new one), and
 * a file renamed out of the pattern while weir was stopped is finished
 * from its checkpoint. The
 * logrotate, kill -9 and many-files cases are test_rotate's neighbours'.
 */
#include <inttypes.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>
#include <sys/stat.h>

#include "../integration/harness.h"
#include "collector.h"

#define WAIT  30000u
#define LINE  23 /* "a 000001 line of a log\n" */
#define FILES 5  /* a b c d e */

struct gt {
    char logs[300], state[400], ctl[300], conf_name[32];
    uint16_t mport;
    unsigned lines[FILES]; /* written to each file so far */
    struct fc_collector c;
    struct h_weir w;
};

static void log_path(const struct gt *t, unsigned k, char *out, size_t len)
{
    snprintf(out, len, "%s/%c.log", t->logs, 'a' + k);
}

/* n more lines to file k. */
static void add_lines(struct gt *t, unsigned k, unsigned n)
{
    char path[400], *buf = malloc((size_t)n * LINE + 1);

    assert_non_null(buf);
    for (unsigned i = 0; i < n; i++)
        snprintf(buf + (size_t)i * LINE, LINE + 1, "%c %06u line of a log\n",
                 'a' + k, t->lines[k] + i);
    log_path(t, k, path, sizeof(path));
    fc_append(path, (const uint8_t *)buf, (size_t)n * LINE);
    t->lines[k] += n;
    free(buf);
}

static uint64_t written(const struct gt *t)
{
    uint64_t n = 0;

    for (unsigned k = 0; k < FILES; k++)
        n += (uint64_t)t->lines[k] * LINE;
    return n;
}

static void start(struct gt *t)
{
    h_start_conf(&t->w, t->conf_name, H_CONF_VERBOSE,
                 "[daemon]\nworkers = 2\ncheckpoint_interval = 100ms\n"
                 "metrics = 127.0.0.1:%u\ncontrol_socket = %s\n\n"
                 "[pipeline glob]\nsource = file:%s/*.log\n"
                 "sink = tcp:127.0.0.1:%u\n",
                 t->mport, t->ctl, t->logs, t->c.port);
}

static bool total_is(struct fc_collector *c, void *arg)
{
    return fc_total(c) >= *(uint64_t *)arg;
}

static void wait_total(struct gt *t, uint64_t want)
{
    if (!fc_wait(&t->c, total_is, &want, WAIT)) {
        h_show_log(&t->w);
        fail_msg("%llu of %llu bytes arrived",
                 (unsigned long long)fc_total(&t->c), (unsigned long long)want);
    }
}

/*
 * Every line the collector has, over its connections in order: whole,
 * of a known file, and the next of its file (so none twice, none
 * skipped); and at the end every line written.
 */
static void expect_lines(struct gt *t)
{
    unsigned next[FILES] = {0};

    pthread_mutex_lock(&t->c.mu);
    for (unsigned i = 0; i < t->c.nconns; i++) {
        const struct fc_conn *cn = &t->c.conns[i];

        if (cn->len % LINE)
            fail_msg("connection %u: %zu bytes, not whole lines", i, cn->len);
        for (size_t at = 0; at < cn->len; at += LINE) {
            const char *l = (const char *)cn->p + at;
            unsigned k = (unsigned)(l[0] - 'a'), n;

            if (k >= FILES || sscanf(l + 2, "%6u", &n) != 1 ||
                memcmp(l + 8, " line of a log\n", 15) != 0)
                fail_msg("connection %u: not a line: '%.*s'", i, LINE, l);
            if (n != next[k])
                fail_msg("%c.log: line %u arrived where %u was due", 'a' + k, n,
                         next[k]);
            next[k]++;
        }
    }
    pthread_mutex_unlock(&t->c.mu);
    for (unsigned k = 0; k < FILES; k++)
        assert_int_equal(next[k], t->lines[k]);
}

/* GET path from the metrics server, whole; caller frees. */
static char *http_get(uint16_t port, const char *path)
{
    int fd = h_connect(false, port, NULL, WAIT);
    char req[128], *buf = malloc(1 << 20);
    size_t n = 0;
    ssize_t got;

    assert_true(fd >= 0);
    assert_non_null(buf);
    snprintf(req, sizeof(req), "GET %s HTTP/1.0\r\n\r\n", path);
    assert_true(h_write_all(fd, req, strlen(req)));
    while ((got = read(fd, buf + n, (1 << 20) - 1 - n)) > 0)
        n += (size_t)got;
    buf[n] = '\0';
    close(fd);
    return buf;
}

/* weir status (args) as text; caller frees. */
static char *status(const struct gt *t, const char *args)
{
    char cmd[1024], *buf = malloc(1 << 16);
    size_t n = 0, got;
    FILE *p;

    snprintf(cmd, sizeof(cmd), "'%s' status %s -s '%s' 2>&1", h_bin(), args,
             t->ctl);
    assert_non_null(buf);
    p = popen(cmd, "r");
    assert_non_null(p);
    while ((got = fread(buf + n, 1, (1 << 16) - 1 - n, p)) > 0)
        n += got;
    buf[n] = '\0';
    pclose(p);
    return buf;
}

/* Waits until every needle is in what get() returns (the figures are
 * sampled every 250 ms); fails showing the last text. */
static void expect_text(struct gt *t, char *(*get)(struct gt *),
                        const char *const *needles)
{
    int64_t until = h_now_ms() + WAIT;
    char *text = NULL;
    unsigned i;

    for (;;) {
        free(text);
        text = get(t);
        for (i = 0; needles[i] && strstr(text, needles[i]); i++)
            ;
        if (!needles[i])
            break;
        if (h_now_ms() > until) {
            h_show_log(&t->w);
            fail_msg("no '%s' in:\n%s", needles[i], text);
        }
        h_sleep_ms(100);
    }
    free(text);
}

static char *get_metrics(struct gt *t)
{
    return http_get(t->mport, "/metrics");
}

static char *get_status(struct gt *t)
{
    return status(t, "");
}

static char *get_status_json(struct gt *t)
{
    return status(t, "--json");
}

/* The state file's line for file k, checked against the file itself:
 * its identity, and every byte of it acknowledged. */
static void expect_checkpoint(const struct gt *t, const char *text, unsigned k)
{
    char path[400], want[440], when[32];
    const char *l;
    uint64_t fp, dev, ino, off;
    unsigned fplen;
    struct stat st;
    int n = 0;

    log_path(t, k, path, sizeof(path));
    assert_int_equal(stat(path, &st), 0);
    snprintf(want, sizeof(want), " path=%s\n", path);
    l = strstr(text, want);
    if (!l)
        fail_msg("no line for %s in:\n%s", path, text);
    while (l > text && l[-1] != '\n')
        l--;
    if (sscanf(l,
               "file fp=%16" SCNx64 " fplen=%u dev=%" SCNu64 " ino=%" SCNu64
               " offset=%" SCNu64 " written=%20s path=%n",
               &fp, &fplen, &dev, &ino, &off, when, &n) != 6 ||
        n == 0)
        fail_msg("a line not as documented: %.200s", l);
    /* Longer than the 256 bytes a fingerprint takes. */
    assert_true(fp != 0);
    assert_int_equal(fplen, 256);
    assert_int_equal(dev, (uint64_t)st.st_dev);
    assert_int_equal(ino, (uint64_t)st.st_ino);
    assert_int_equal(off, (uint64_t)st.st_size);
    assert_int_equal(strlen(when), 20); /* 2026-12-06T12:00:00Z */
}

static void expect_state(const struct gt *t, unsigned nfiles)
{
    char *text = h_slurp(t->state);

    assert_non_null(text);
    assert_int_equal(strncmp(text,
                             "# weir file checkpoints for pipeline glob, "
                             "written ",
                             50),
                     0);
    assert_int_equal(h_count(text, "\nfile fp="), nfiles);
    for (unsigned k = 0; k < nfiles; k++)
        expect_checkpoint(t, text, k);
    free(text);
}

static void test_glob_follow_restart(void **state)
{
    static struct gt t; /* a failed check may leave its threads */
    static const char *const live[] = {
        "weir_files_watched{pipeline=\"glob\"} 4\n",
        "weir_files_open{pipeline=\"glob\"} ",
        "weir_file_bytes_behind{pipeline=\"glob\"} 0\n",
        "weir_lines_truncated_total{pipeline=\"glob\"} 0\n",
        "weir_lines_skipped_total{pipeline=\"glob\"} 0\n",
        "weir_file_rotations_total{pipeline=\"glob\"} 0\n",
        "weir_file_bytes_lost_total{pipeline=\"glob\"} 0\n",
        "weir_checkpoint_write_failures_total 0\n",
        NULL};
    static const char *const board[] = {
        "files of glob: 4 watched, ",
        " 0 B behind, 0 B unread; lines "
        "truncated 0, skipped 0; rotations 0; lost 0 B",
        NULL};
    static const char *const json[] = {"\"files\":{\"watched\":4,",
                                       "\"bytes_behind\":0,",
                                       "\"most_behind\":[]", NULL};
    char from[400], to[410];
    uint64_t first;

    (void)state;
    snprintf(t.conf_name, sizeof(t.conf_name), "glob");
    h_path(t.logs, sizeof(t.logs), "glob-logs");
    h_path(t.ctl, sizeof(t.ctl), "glob.ctl");
    snprintf(t.state, sizeof(t.state), "%s/glob.state/pipeline-glob.files",
             h_dir);
    h_rm_tree(t.logs);
    assert_int_equal(mkdir(t.logs, 0750), 0);
    t.mport = h_free_port(false);
    for (unsigned k = 0; k < 3; k++)
        add_lines(&t, k, 40 + 10 * k);
    fc_start(&t.c);
    start(&t);

    /* The three files, then a fourth made while weir runs. */
    wait_total(&t, written(&t));
    add_lines(&t, 3, 30);
    add_lines(&t, 0, 5);
    wait_total(&t, written(&t));
    expect_text(&t, get_metrics, live);
    expect_text(&t, get_status, board);
    expect_text(&t, get_status_json, json);
    h_expect_exit(&t.w, 0, true, WAIT);
    expect_lines(&t);
    expect_state(&t, 4);
    first = written(&t);

    /* Appended while weir was stopped: to an old file, and a new one. */
    add_lines(&t, 1, 7);
    add_lines(&t, 4, 25);
    start(&t);
    wait_total(&t, written(&t));
    h_expect_exit(&t.w, 0, true, WAIT);
    assert_int_equal(t.c.nconns, 2);
    assert_int_equal(t.c.conns[1].len, written(&t) - first);
    expect_lines(&t);
    expect_state(&t, 5);
    printf("%u files, %llu bytes in lines, each once; the restart sent the "
           "%llu appended\n",
           FILES, (unsigned long long)written(&t),
           (unsigned long long)(written(&t) - first));

    /* A rotation while weir was stopped: b.log grew, then was renamed to
     * b.log.1, out of the pattern. Its checkpoint finds it there, by its
     * first bytes, and the rest arrives. */
    first = written(&t);
    add_lines(&t, 1, 9);
    log_path(&t, 1, from, sizeof(from));
    snprintf(to, sizeof(to), "%s.1", from);
    assert_int_equal(rename(from, to), 0);
    start(&t);
    wait_total(&t, written(&t));
    h_expect_exit(&t.w, 0, true, WAIT);
    assert_int_equal(t.c.nconns, 3);
    assert_int_equal(t.c.conns[2].len, written(&t) - first);
    expect_lines(&t);
    fc_free(&t.c);
}

/* The number after needle in text, or -1. */
static long long number_after(const char *text, const char *needle)
{
    const char *at = strstr(text, needle);

    return at ? strtoll(at + strlen(needle), NULL, 10) : -1;
}

/*
 * A collector that takes its connection and reads nothing: the file's
 * bytes wait in weir's queue and the sockets' buffers, read but not
 * acknowledged. Status names the file among the most behind, with those
 * bytes, and /metrics has them; once the collector reads, nothing is
 * behind and every line has arrived once.
 */
static void test_glob_behind(void **state)
{
    static struct gt t;
    char big[400], needle[600], *text;
    int lfd, c, small = 4096;
    long long behind;
    int64_t got;

    (void)state;
    snprintf(t.conf_name, sizeof(t.conf_name), "behind");
    h_path(t.logs, sizeof(t.logs), "behind-logs");
    h_path(t.ctl, sizeof(t.ctl), "behind.ctl");
    h_rm_tree(t.logs);
    assert_int_equal(mkdir(t.logs, 0750), 0);
    t.mport = h_free_port(false);
    lfd = h_listen_any(&t.c.port);
    setsockopt(lfd, SOL_SOCKET, SO_RCVBUF, &small, sizeof(small));
    add_lines(&t, 0, 200000); /* 4.4 MiB, past the 1 MiB queue */
    add_lines(&t, 1, 10);
    log_path(&t, 0, big, sizeof(big));
    start(&t);
    c = h_accept(lfd, WAIT);
    assert_true(c >= 0);
    snprintf(needle, sizeof(needle),
             "\"most_behind\":[{\"path\":\"%s\",\"bytes_behind\":", big);
    {
        static const char *json[2];

        json[0] = needle;
        expect_text(&t, get_status_json, json);
    }
    text = get_status_json(&t);
    behind = number_after(text, needle);
    free(text);
    /* More than the sockets could hold: weir's own queue is in it. */
    assert_true(behind > 256 * 1024);
    text = get_status(&t);
    assert_non_null(strstr(text, "      BEHIND  FILE\n"));
    snprintf(needle, sizeof(needle), "  %s\n", big);
    assert_non_null(strstr(text, needle));
    free(text);
    text = get_metrics(&t);
    assert_true(
        number_after(text, "weir_file_bytes_behind{pipeline=\"glob\"} ") > 0);
    free(text);

    /* The collector reads: everything arrives, nothing is behind. */
    got = h_drain(c, NULL, written(&t), WAIT);
    assert_int_equal(got, (int64_t)written(&t));
    {
        static const char *const none[] = {
            "weir_file_bytes_behind{pipeline=\"glob\"} 0\n", NULL};

        expect_text(&t, get_metrics, none);
    }
    h_expect_exit(&t.w, 0, true, WAIT);
    close(c);
    close(lfd);
}

int main(void)
{
    static const struct CMUnitTest tests[] = {
        cmocka_unit_test_teardown(test_glob_follow_restart, h_teardown),
        cmocka_unit_test_teardown(test_glob_behind, h_teardown),
    };
    int rc;

    if (h_begin("glob") != 0)
        return 1;
    rc = cmocka_run_group_tests(tests, NULL, NULL);
    h_end();
    return rc;
}
