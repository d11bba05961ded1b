/*
 * test_glob_rotate.c - a glob source (every *.log of a directory) whose log
 * is rotated by logrotate itself (/usr/sbin/logrotate -f -s STATE CONF)
 * under a writer that never stops, every line accounted for, line by
 * line, against what the files on disk hold at the end:
 *
 *   create          the writer reopens its path once it names the new
 *                   file (it checks the inode, as an application that
 *                   follows its log's name); every line arrives once, in
 *                   order per file;
 *   copytruncate    the writer never reopens; logrotate copies and cuts
 *                   under it. Lines written between the copy and the cut
 *                   are in no file (logrotate's own race); every line of
 *                   every file arrives once, in order;
 *   compress + delaycompress   the first rotated copy stays plain, older
 *                   ones become .gz, which are never read again: once;
 *   dateext         app.log-YYYYMMDD-HHMMSS names: once.
 *
 * CI sizes: 2,000 lines/s, 5 rotations (3 for dateext, one a second);
 * WEIR_SOAK=1: 20,000 lines/s and 20.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>

#include "../integration/harness.h"
#include "collector.h"
#include "glob_lines.h"

#define WAIT       30000u
#define LOGROTATE  "/usr/sbin/logrotate"
#define SLACK_SEQS 4096u

struct lr_case {
    const char *name;
    const char *directives; /* inside the log's block */
    enum gl_reopen reopen;
    unsigned rotations, gap_ms;
};

static void run_case(const struct lr_case *lc)
{
    static struct fc_collector c; /* a failed check may leave its thread */
    static struct gl_writer wr;
    struct gl_account a;
    struct h_weir w;
    char dir[256], log[300], state[300], conf[300], lrstate[300], what[128];
    unsigned rate = gl_soak() ? 20000 : 2000;
    unsigned rotations = lc->rotations * (gl_soak() ? 4 : 1);
    uint64_t lines;

    if (access(LOGROTATE, X_OK) != 0) {
        printf("no %s: skipped\n", LOGROTATE);
        skip();
    }
    snprintf(what, sizeof(what), "%s.d", lc->name);
    h_path(dir, sizeof(dir), what);
    snprintf(what, sizeof(what), "%s.state", lc->name);
    h_path(state, sizeof(state), what);
    snprintf(what, sizeof(what), "%s.lrconf", lc->name);
    h_path(conf, sizeof(conf), what);
    snprintf(what, sizeof(what), "%s.lrstate", lc->name);
    h_path(lrstate, sizeof(lrstate), what);
    snprintf(log, sizeof(log), "%s/app.log", dir);
    h_rm_tree(dir);
    h_rm_tree(state);
    assert_int_equal(mkdir(dir, 0755), 0);
    /* rotate 1000: nothing is deleted, so the disk holds every line that
     * any rotation kept. */
    h_write_text(conf, "%s {\n    rotate 1000\n    missingok\n%s}\n", log,
                 lc->directives);
    fc_start(&c);
    gl_writer_start(&wr, log, 0, lc->reopen, rate);
    h_sleep_ms(100);
    gl_start_weir(&w, lc->name, true, dir, state, "200ms", c.port, "");
    gl_wait_reading(&c, &w, 0, WAIT);
    for (unsigned k = 0; k < rotations; k++) {
        h_sleep_ms(lc->gap_ms);
        int rc = gl_run(
            (char *const[]){LOGROTATE, "-f", "-s", lrstate, conf, NULL}, WAIT);
        if (rc != 0)
            fail_msg("logrotate exited %d on rotation %u", rc, k + 1);
    }
    h_sleep_ms(lc->gap_ms);
    lines = gl_writer_stop(&wr);
    gl_account_init(&a, 1, lines + SLACK_SEQS);
    gl_account_disk(&a, dir, "app.log");
    snprintf(what, sizeof(what),
             "logrotate %s x%u at %u lines/s, %llu lines written", lc->name,
             rotations, rate, (unsigned long long)lines);
    if (!gl_wait_all(&a, &c, WAIT)) {
        h_show_log(&w);
        gl_account_show(&a, what);
        fail_msg("%llu lines on disk never arrived",
                 (unsigned long long)a.missing);
    }
    h_expect_exit(&w, 0, true, WAIT);
    fc_stop(&c);
    gl_account_received(&a, &c);
    gl_account_show(&a, what);
    assert_int_equal(a.missing, 0);
    assert_int_equal(a.twice, 0);
    assert_int_equal(a.disorder, 0);
    /* A line torn by a copy mid-write is the only line that may arrive
     * torn. */
    assert_true(a.bad <= a.torn);
    if (lc->reopen != GL_NEVER)
        assert_int_equal(a.stray, 0);
    gl_account_free(&a);
    fc_free(&c);
}

static void test_create(void **state)
{
    static const struct lr_case lc = {"create", "    create\n", GL_REOPEN_INODE,
                                      5, 300};
    (void)state;
    run_case(&lc);
}

static void test_copytruncate(void **state)
{
    static const struct lr_case lc = {"copytruncate", "    copytruncate\n",
                                      GL_NEVER, 5, 300};
    (void)state;
    run_case(&lc);
}

static void test_compress_delaycompress(void **state)
{
    static const struct lr_case lc = {
        "compress", "    create\n    compress\n    delaycompress\n",
        GL_REOPEN_INODE, 5, 300};
    (void)state;
    run_case(&lc);
}

static void test_dateext(void **state)
{
    /* A name per second: one rotation a second at most. */
    static const struct lr_case lc = {
        "dateext", "    create\n    dateext\n    dateformat -%Y%m%d-%H%M%S\n",
        GL_REOPEN_INODE, 3, 1100};
    (void)state;
    run_case(&lc);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_teardown(test_create, h_teardown),
        cmocka_unit_test_teardown(test_copytruncate, h_teardown),
        cmocka_unit_test_teardown(test_compress_delaycompress, h_teardown),
        cmocka_unit_test_teardown(test_dateext, h_teardown),
    };
    int rc;

    if (h_begin("glob-rotate") != 0)
        return 1;
    rc = cmocka_run_group_tests(tests, NULL, NULL);
    h_end();
    return rc;
}
