/*
 * test_state.c - the state directory under the faults it meets: a
 * followed file whose path is as long as the kernel allows, a FIFO
 * where a checkpoint should be, a checkpoint left by a pipeline that
 * followed another file, and two daemons pointed at one directory. In
 * each, every byte of the log arrives once, and what weir could not use
 * is named in its log.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>
#include <limits.h>
#include <sys/stat.h>

#include "../integration/harness.h"
#include "collector.h"

#define WAIT  30000u
#define LINES 20000u

struct st {
    char log[PATH_MAX], state[300], ckpt[400];
    struct fc_collector c;
    struct h_weir w;
};

static void start(struct st *t, const char *name)
{
    h_start_conf(&t->w, name, 0,
                 "[daemon]\nworkers = 2\nstate_directory = %s\n"
                 "checkpoint_interval = 100ms\n\n"
                 "[pipeline p]\nsource = file:%s\nfollow = yes\n"
                 "sink = tcp:127.0.0.1:%u\n",
                 t->state, t->log, t->c.port);
}

static void setup(struct st *t, const char *name, const char *log)
{
    char dir[64];
    uint8_t *lines = fc_log_lines(0, LINES);

    snprintf(dir, sizeof(dir), "%s.statedir", name);
    h_path(t->state, sizeof(t->state), dir);
    snprintf(t->ckpt, sizeof(t->ckpt), "%s/pipeline-p.ckpt", t->state);
    h_rm_tree(t->state);
    assert_int_equal(mkdir(t->state, 0750), 0);
    snprintf(t->log, sizeof(t->log), "%s", log);
    unlink(t->log);
    fc_append(t->log, lines, (size_t)LINES * FC_LOG_LINE);
    free(lines);
    fc_start(&t->c);
}

static bool total_is(struct fc_collector *c, void *arg)
{
    return fc_total(c) >= *(uint64_t *)arg;
}

/* Waits until the collector has want bytes over all connections. */
static void wait_total(struct st *t, uint64_t want)
{
    if (!fc_wait(&t->c, total_is, &want, WAIT)) {
        h_show_log(&t->w);
        fail_msg("%llu of %llu bytes arrived",
                 (unsigned long long)fc_total(&t->c), (unsigned long long)want);
    }
}

/* The checkpoint's offset; -1 when there is none. */
static int64_t ckpt_offset(const struct st *t)
{
    char *text = h_slurp(t->ckpt);
    const char *at = text ? strstr(text, "\noffset ") : NULL;
    int64_t off = at ? strtoll(at + 8, NULL, 10) : -1;

    free(text);
    return off;
}

/* A path of over 3,000 bytes (the kernel's PATH_MAX is 4,096), made of
 * directories of 200 bytes each. */
static void long_path(char *out, size_t size)
{
    char name[201];

    memset(name, 'd', 200);
    name[200] = '\0';
    h_path(out, size, "long");
    h_rm_tree(out);
    assert_int_equal(mkdir(out, 0750), 0);
    for (int i = 0; i < 15; i++) {
        size_t n = strlen(out);

        snprintf(out + n, size - n, "/%02d%s", i, name + 2);
        assert_int_equal(mkdir(out, 0750), 0);
    }
    strncat(out, "/app.log", size - strlen(out) - 1);
}

/* Stopped cleanly, weir checkpoints the whole log, and the restart sends
 * only what was appended since, whatever the path's length. */
static void test_long_path_restart(void **state)
{
    static struct st t; /* a failed check may leave its threads */
    char path[PATH_MAX];
    uint64_t first = (uint64_t)LINES * FC_LOG_LINE, want;
    uint8_t *more = fc_log_lines(LINES, 1000);

    (void)state;
    long_path(path, sizeof(path));
    assert_true(strlen(path) > 3000);
    setup(&t, "longpath", path);
    start(&t, "longpath");
    wait_total(&t, first);
    h_expect_exit(&t.w, 0, true, WAIT);
    assert_int_equal(ckpt_offset(&t), (int64_t)first);

    fc_append(t.log, more, 1000 * FC_LOG_LINE);
    start(&t, "longpath");
    want = first + 1000 * FC_LOG_LINE;
    wait_total(&t, want);
    h_expect_exit(&t.w, 0, true, WAIT);
    assert_int_equal(t.c.nconns, 2);
    assert_int_equal(t.c.conns[1].len, 1000 * FC_LOG_LINE);
    assert_memory_equal(t.c.conns[1].p, more, 1000 * FC_LOG_LINE);
    assert_int_equal(ckpt_offset(&t), (int64_t)want);
    printf("a path of %zu bytes: %llu bytes, then the %u appended; none "
           "twice\n",
           strlen(path), (unsigned long long)first, 1000 * FC_LOG_LINE);
    free(more);
    fc_free(&t.c);
}

/* A FIFO where the checkpoint goes: refused at once and named; the log
 * ships whole and SIGTERM stops weir. */
static void test_fifo_checkpoint(void **state)
{
    static struct st t;
    char log[300];
    uint64_t want = (uint64_t)LINES * FC_LOG_LINE;
    uint8_t *file;
    size_t flen;

    (void)state;
    h_path(log, sizeof(log), "fifo-app.log");
    setup(&t, "fifockpt", log);
    assert_int_equal(mkfifo(t.ckpt, 0640), 0);
    start(&t, "fifockpt");
    wait_total(&t, want);
    h_expect_log(&t.w, "pipeline-p.ckpt is not a regular file", WAIT);
    h_expect_exit(&t.w, 0, true, WAIT);
    file = fc_read_file(t.log, &flen);
    assert_non_null(file);
    assert_int_equal(t.c.conns[0].len, flen);
    assert_memory_equal(t.c.conns[0].p, file, flen);
    free(file);
    fc_free(&t.c);
}

/* A checkpoint another file's pipeline left: named with both paths, not
 * used, and the log is read from its start. */
static void test_checkpoint_of_other_path(void **state)
{
    static struct st t;
    char log[300], needle[PATH_MAX + 64];
    uint64_t want = (uint64_t)LINES * FC_LOG_LINE;

    (void)state;
    h_path(log, sizeof(log), "other-app.log");
    setup(&t, "otherckpt", log);
    h_write_text(t.ckpt, "weir checkpoint 1\npath /srv/elsewhere.log\ndev 1\n"
                         "ino 2\noffset 300\nhead 6c696e65\n");
    start(&t, "otherckpt");
    snprintf(needle, sizeof(needle),
             "is for /srv/elsewhere.log, not for %s; not used", t.log);
    h_expect_log(&t.w, needle, WAIT);
    wait_total(&t, want);
    h_expect_exit(&t.w, 0, true, WAIT);
    assert_int_equal(t.c.conns[0].len, want);
    fc_free(&t.c);
}

/* A second daemon on the same state directory refuses to start and
 * names the first; the first ships on, and its checkpoint is its own. */
static void test_two_daemons_one_state_dir(void **state)
{
    static struct st t;
    struct h_weir second;
    char log[300], needle[128];
    uint64_t want = (uint64_t)LINES * FC_LOG_LINE;

    (void)state;
    h_path(log, sizeof(log), "shared-app.log");
    setup(&t, "shared", log);
    start(&t, "shared");
    wait_total(&t, want);
    h_start_conf(&second, "shared2", 0,
                 "[daemon]\nworkers = 1\nstate_directory = %s\n\n"
                 "[pipeline p]\nsource = file:%s\nfollow = yes\n"
                 "sink = tcp:127.0.0.1:%u\n",
                 t.state, t.log, t.c.port);
    h_expect_exit(&second, 1, false, WAIT);
    snprintf(needle, sizeof(needle), "is in use by another weir (pid %ld)",
             (long)t.w.pid);
    h_expect_log(&second, needle, WAIT);
    h_expect_exit(&t.w, 0, true, WAIT);
    /* Nothing but the first daemon's stream reached the collector. */
    assert_int_equal(t.c.nconns, 1);
    assert_int_equal(ckpt_offset(&t), (int64_t)want);
    fc_free(&t.c);
}

/* A daemon without a followed file shares the directory until a reload
 * asks for checkpoints: that reload is refused, names the holder, and
 * the running configuration stays. */
static void test_reload_into_a_held_state_dir(void **state)
{
    static struct st t;
    struct h_weir second;
    char log[300], needle[480], conf[300];
    uint64_t want = (uint64_t)LINES * FC_LOG_LINE;
    uint16_t port = h_free_port(false);

    (void)state;
    h_path(log, sizeof(log), "held-app.log");
    setup(&t, "held", log);
    start(&t, "held");
    wait_total(&t, want);
    h_start_conf(&second, "held2", 0,
                 "[daemon]\nworkers = 1\nstate_directory = %s\n\n"
                 "[pipeline serve]\nsource = file:%s\n"
                 "sink = tcp-listen:127.0.0.1:%u\n",
                 t.state, t.log, port);
    h_expect_log(&second, "pipeline serve: listening on", WAIT);
    h_path(conf, sizeof(conf), "held2.conf");
    h_write_text(conf,
                 "[daemon]\nworkers = 1\nstate_directory = %s\n\n"
                 "[pipeline serve]\nsource = file:%s\n"
                 "sink = tcp-listen:127.0.0.1:%u\n\n"
                 "[pipeline p]\nsource = file:%s\nfollow = yes\n"
                 "sink = tcp:127.0.0.1:%u\n",
                 t.state, t.log, port, t.log, t.c.port);
    kill(second.pid, SIGHUP);
    snprintf(needle, sizeof(needle),
             "reload: state_directory %s is in use by another weir (pid %ld)",
             t.state, (long)t.w.pid);
    h_expect_log(&second, needle, WAIT);
    h_expect_exit(&second, 0, true, WAIT);
    h_expect_exit(&t.w, 0, true, WAIT);
    /* Only the first daemon's stream reached the collector. */
    assert_int_equal(t.c.nconns, 1);
    assert_int_equal(ckpt_offset(&t), (int64_t)want);
    fc_free(&t.c);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_teardown(test_long_path_restart, h_teardown),
        cmocka_unit_test_teardown(test_fifo_checkpoint, h_teardown),
        cmocka_unit_test_teardown(test_checkpoint_of_other_path, h_teardown),
        cmocka_unit_test_teardown(test_two_daemons_one_state_dir, h_teardown),
        cmocka_unit_test_teardown(test_reload_into_a_held_state_dir,
                                  h_teardown),
    };
    int rc;

    if (h_begin("state") != 0)
        return 1;
    rc = cmocka_run_group_tests(tests, NULL, NULL);
    h_end();
    return rc;
}
