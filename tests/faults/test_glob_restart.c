/*
 * test_glob_restart.c - a glob source's log rotated fast while weir
 * itself goes away and comes back, every line accounted for, line by
 * line, against the files on disk:
 *
 *   SIGTERM   a writer at 50,000 lines/s across 20 rotations (rename and
 *             create; the writer reopens by inode), weir stopped cleanly
 *             at the tenth and started again after the eleventh: every
 *             line once, in order per file;
 *   kill -9   a writer at 20,000 lines/s, rotated every 200 ms; weir is
 *             killed right after a rotation and started again: no line
 *             lost, in order per file; lines arrive twice only for what
 *             the last checkpoint had not covered, at most the lines
 *             written in checkpoint_interval + 250 ms (200 ms + 250 ms
 *             at 20,000/s: 9,000), and at most one line cut by the kill.
 *
 * CI sizes: rotations 150 ms (SIGTERM) and 200 ms (kill -9) apart;
 * WEIR_SOAK=1: 500 ms apart and 40 rotations for the kill -9 case.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>

#include "../integration/harness.h"
#include "collector.h"
#include "glob_lines.h"

#define WAIT 30000u

struct rt {
    char dir[256], log[300], state[300];
    struct fc_collector c;
    struct gl_writer wr;
    struct gl_account a;
    struct h_weir w;
};

static void setup_dirs(struct rt *t, const char *name)
{
    char what[64];

    snprintf(what, sizeof(what), "%s.d", name);
    h_path(t->dir, sizeof(t->dir), what);
    snprintf(what, sizeof(what), "%s.state", name);
    h_path(t->state, sizeof(t->state), what);
    snprintf(t->log, sizeof(t->log), "%s/app.log", t->dir);
    h_rm_tree(t->dir);
    h_rm_tree(t->state);
    assert_int_equal(mkdir(t->dir, 0755), 0);
}

static void rotate(struct rt *t, unsigned k)
{
    char to[320];

    snprintf(to, sizeof(to), "%s.%u", t->log, k);
    gl_rotate(t->log, to);
}

/* Stops the writer and waits for every line the disk holds. */
static void settle(struct rt *t, const char *what)
{
    uint64_t lines = gl_writer_stop(&t->wr);

    gl_account_init(&t->a, 1, lines + 4096);
    gl_account_disk(&t->a, t->dir, "app.log");
    if (!gl_wait_all(&t->a, &t->c, WAIT)) {
        h_show_log(&t->w);
        gl_account_show(&t->a, what);
        fail_msg("%llu lines on disk never arrived",
                 (unsigned long long)t->a.missing);
    }
    h_expect_exit(&t->w, 0, true, WAIT);
    fc_stop(&t->c);
    gl_account_received(&t->a, &t->c);
    gl_account_show(&t->a, what);
}

static void test_sigterm_amid_rotations(void **state)
{
    static struct rt t; /* a failed check may leave its threads */
    unsigned gap = gl_soak() ? 500 : 150;
    uint64_t had;

    (void)state;
    setup_dirs(&t, "term");
    fc_start(&t.c);
    gl_writer_start(&t.wr, t.log, 0, GL_REOPEN_INODE, 50000);
    gl_start_weir(&t.w, "term", true, t.dir, t.state, "200ms", t.c.port, "");
    gl_wait_reading(&t.c, &t.w, 0, WAIT);
    for (unsigned k = 1; k <= 20; k++) {
        h_sleep_ms(gap);
        if (k == 11) {
            /* Stopped at the tenth, rotated once while down. */
            h_expect_exit(&t.w, 0, true, WAIT);
            rotate(&t, k);
            had = fc_total(&t.c);
            gl_start_weir(&t.w, "term", false, t.dir, t.state, "200ms",
                          t.c.port, "");
            gl_wait_reading(&t.c, &t.w, had, WAIT);
            continue;
        }
        rotate(&t, k);
    }
    h_sleep_ms(gap);
    settle(&t, "SIGTERM amid 20 rotations at 50,000 lines/s");
    assert_true(t.c.nconns >= 2);
    assert_int_equal(t.a.missing, 0);
    assert_int_equal(t.a.twice, 0);
    assert_int_equal(t.a.disorder, 0);
    assert_int_equal(t.a.bad, 0);
    assert_int_equal(t.a.stray, 0);
    gl_account_free(&t.a);
    fc_free(&t.c);
}

static void test_kill9_during_rotation(void **state)
{
    enum { RATE = 20000, CKPT_MS = 200 };
    /* What the last checkpoint may not cover: the lines written in one
     * interval and 250 ms more. */
    const uint64_t bound = (uint64_t)RATE * (CKPT_MS + 250) / 1000;
    static struct rt t; /* a failed check may leave its threads */
    unsigned gap = gl_soak() ? 500 : 200, rotations = gl_soak() ? 40 : 10;
    uint64_t had;

    (void)state;
    setup_dirs(&t, "kill9");
    fc_start(&t.c);
    gl_writer_start(&t.wr, t.log, 0, GL_REOPEN_INODE, RATE);
    gl_start_weir(&t.w, "kill9", true, t.dir, t.state, "200ms", t.c.port, "");
    gl_wait_reading(&t.c, &t.w, 0, WAIT);
    for (unsigned k = 1; k <= rotations; k++) {
        h_sleep_ms(gap);
        if (k == rotations / 2) {
            /* Caught up first (within 100 ms of the writer), so what
             * arrives twice is the checkpoint's lag, not a backlog. */
            uint64_t want = atomic_load(&t.wr.n) * GL_LINE;
            int64_t end = h_now_ms() + WAIT;

            while (fc_total(&t.c) + RATE / 10 * GL_LINE < want) {
                if (h_now_ms() > end) {
                    h_show_log(&t.w);
                    fail_msg("weir did not catch up with the writer");
                }
                h_sleep_ms(5);
            }
            rotate(&t, k);
            kill(t.w.pid, SIGKILL);
            assert_int_equal(h_wait(&t.w, WAIT), 128 + SIGKILL);
            had = fc_total(&t.c);
            gl_start_weir(&t.w, "kill9", false, t.dir, t.state, "200ms",
                          t.c.port, "");
            gl_wait_reading(&t.c, &t.w, had, WAIT);
            continue;
        }
        rotate(&t, k);
    }
    h_sleep_ms(gap);
    settle(&t, "kill -9 right after a rotation, 20,000 lines/s");
    printf("kill -9: %llu lines twice, bound %llu\n",
           (unsigned long long)t.a.twice, (unsigned long long)bound);
    assert_int_equal(t.a.missing, 0);
    assert_int_equal(t.a.disorder, 0);
    assert_true(t.a.twice <= bound);
    assert_true(t.a.bad <= 1);
    assert_int_equal(t.a.stray, 0);
    gl_account_free(&t.a);
    fc_free(&t.c);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_teardown(test_sigterm_amid_rotations, h_teardown),
        cmocka_unit_test_teardown(test_kill9_during_rotation, h_teardown),
    };
    int rc;

    if (h_begin("glob-restart") != 0)
        return 1;
    rc = cmocka_run_group_tests(tests, NULL, NULL);
    h_end();
    return rc;
}
