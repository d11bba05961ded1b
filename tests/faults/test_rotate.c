/*
 * test_rotate.c - a followed log rotated under a writer that never stops
 * appending, every byte accounted for at the collector.
 *
 *   rename    logrotate's `create`, 10 times at 5 a second: the writer
 *             reopens the path after each; every line arrives once, in
 *             order, none missing;
 *   copytruncate, 5 times at 4 a second: the writer (O_APPEND) goes on
 *             in the cut file. Lines the cut took before weir read them
 *             are in the copy only, as for any follower; so every line
 *             arrives at most once and in order, those missing from each
 *             copy are its tail (what weir had not read yet), and every
 *             line of the live file arrives.
 *
 * The writer writes whole pages (512 lines of 8 bytes) to an O_APPEND
 * file, so the file's size never shows half a write.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>

#include "../integration/harness.h"
#include "collector.h"

#define WAIT  30000u
#define BURST 512u

static void start(struct h_weir *w, const char *name, const char *log,
                  uint16_t port)
{
    h_start_conf(w, name, H_CONF_FRESH_LOG,
                 "[pipeline p]\nsource = file:%s\nfollow = yes\n"
                 "sink = tcp:127.0.0.1:%u\n",
                 log, port);
}

static bool total_is(struct fc_collector *c, void *arg)
{
    return fc_total(c) >= *(uint64_t *)arg;
}

static void test_rename_rotation_fast(void **state)
{
    static struct fc_collector c; /* a failed check may leave its thread */
    static struct fc_writer wr;
    struct h_weir w;
    char log[256], old[300];
    uint64_t lines, bytes;
    const struct fc_conn *cn;

    (void)state;
    h_path(log, sizeof(log), "app-rename.txt");
    unlink(log);
    fc_start(&c);
    fc_writer_start(&wr, log, BURST, 2000);
    start(&w, "rename", log, c.port);
    /* weir has the file open once its first bytes arrive: a file renamed
     * away before weir ever opened it is not one it follows. */
    {
        uint64_t one = 1;

        assert_true(fc_wait(&c, total_is, &one, WAIT));
    }
    for (int k = 1; k <= 10; k++) {
        h_sleep_ms(200);
        snprintf(old, sizeof(old), "%s.%d", log, k);
        assert_int_equal(rename(log, old), 0);
        fc_writer_reopen(&wr);
    }
    h_sleep_ms(200);
    lines = fc_writer_stop(&wr);
    bytes = lines * FC_LINE;
    if (!fc_wait(&c, total_is, &bytes, WAIT)) {
        h_show_log(&w);
        fail_msg("%llu of %llu bytes arrived", (unsigned long long)fc_total(&c),
                 (unsigned long long)bytes);
    }
    h_expect_exit(&w, 0, true, WAIT);
    fc_stop(&c);
    assert_int_equal(c.nconns, 1);
    cn = &c.conns[0];
    assert_int_equal(cn->len, bytes);
    for (uint64_t i = 0; i < lines; i++) {
        char want[FC_LINE + 1];

        fc_line(i, want);
        if (memcmp(cn->p + i * FC_LINE, want, FC_LINE) != 0)
            fail_msg("line %llu is not the %llu-th line written",
                     (unsigned long long)i, (unsigned long long)i);
    }
    h_expect_log_count(&w, "was rotated", 10, WAIT);
    printf("rename x10 at 5/s: %llu lines (%llu bytes) written across 11 "
           "files; %zu bytes received, each line once, in order\n",
           (unsigned long long)lines, (unsigned long long)bytes, cn->len);
    fc_free(&c);
}

/* Copies path to dst and cuts path to 0, with the writer held. */
static void copytruncate(struct fc_writer *wr, const char *path,
                         const char *dst)
{
    uint8_t *p;
    size_t len;
    int fd;

    pthread_mutex_lock(&wr->lock);
    p = fc_read_file(path, &len);
    assert_non_null(p);
    fd = open(dst, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    assert_true(fd >= 0);
    assert_true(len == 0 || h_write_all(fd, p, len));
    close(fd);
    assert_int_equal(truncate(path, 0), 0);
    pthread_mutex_unlock(&wr->lock);
    free(p);
}

static void test_copytruncate_under_writer(void **state)
{
    enum { CUTS = 5 };
    static struct fc_collector c; /* a failed check may leave its thread */
    static struct fc_writer wr;
    struct h_weir w;
    char log[256], copy[CUTS][300];
    uint64_t lines, got_lines, in_copies = 0, missed = 0, last = 0;
    uint8_t *live;
    size_t live_len;
    const struct fc_conn *cn;
    uint64_t first_live, live_bytes;
    bool any = false;

    (void)state;
    h_path(log, sizeof(log), "app-cut.txt");
    unlink(log);
    fc_start(&c);
    fc_writer_start(&wr, log, BURST, 2000);
    start(&w, "cut", log, c.port);
    for (int k = 0; k < CUTS; k++) {
        h_sleep_ms(250);
        snprintf(copy[k], sizeof(copy[k]), "%s.%d", log, k + 1);
        copytruncate(&wr, log, copy[k]);
    }
    h_sleep_ms(250);
    lines = fc_writer_stop(&wr);
    live = fc_read_file(log, &live_len);
    assert_non_null(live);
    assert_true(live_len > 0);
    first_live = fc_line_number(live);
    /* Everything up to the live file's last line has arrived. */
    live_bytes = live_len;
    for (int64_t end = h_now_ms() + WAIT;;) {
        pthread_mutex_lock(&c.mu);
        bool done = c.nconns == 1 && c.conns[0].len >= live_bytes &&
                    c.conns[0].len % FC_LINE == 0 &&
                    fc_line_number(c.conns[0].p + c.conns[0].len - FC_LINE) ==
                        lines - 1;
        pthread_mutex_unlock(&c.mu);
        if (done)
            break;
        if (h_now_ms() > end) {
            h_show_log(&w);
            fail_msg("the live file's last line did not arrive");
        }
        h_sleep_ms(10);
    }
    h_expect_exit(&w, 0, true, WAIT);
    fc_stop(&c);
    assert_int_equal(c.nconns, 1);
    cn = &c.conns[0];
    assert_int_equal(cn->len % FC_LINE, 0);
    got_lines = cn->len / FC_LINE;
    /* At most once and in order. */
    for (uint64_t i = 0; i < got_lines; i++) {
        char want[FC_LINE + 1];
        uint64_t n = fc_line_number(cn->p + i * FC_LINE);

        fc_line(n, want);
        assert_memory_equal(cn->p + i * FC_LINE, want, FC_LINE);
        assert_true(!any || n > last);
        any = true;
        last = n;
    }
    /* What is missing is each copy's tail; the live file arrived whole. */
    uint64_t at = 0; /* next received line */
    for (int k = 0; k < CUTS; k++) {
        size_t len;
        uint8_t *p = fc_read_file(copy[k], &len);
        uint64_t n = len / FC_LINE, seen = 0;

        assert_non_null(p);
        in_copies += n;
        while (seen < n && at < got_lines &&
               memcmp(cn->p + at * FC_LINE, p + seen * FC_LINE, FC_LINE) == 0) {
            seen++;
            at++;
        }
        missed += n - seen;
        free(p);
    }
    assert_int_equal(got_lines - at, live_len / FC_LINE);
    assert_memory_equal(cn->p + at * FC_LINE, live, live_len);
    assert_int_equal(in_copies + live_len / FC_LINE, lines);
    assert_int_equal(fc_line_number(live), first_live);
    h_expect_log_count(&w, "was truncated", CUTS, WAIT);
    printf("copytruncate x%d at 4/s: %llu lines written; %llu received once "
           "each, in order; %llu only in the copies (cut before weir read "
           "them); 0 twice\n",
           CUTS, (unsigned long long)lines, (unsigned long long)got_lines,
           (unsigned long long)missed);
    free(live);
    fc_free(&c);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_teardown(test_rename_rotation_fast, h_teardown),
        cmocka_unit_test_teardown(test_copytruncate_under_writer, h_teardown),
    };
    int rc;

    if (h_begin("rotate") != 0)
        return 1;
    rc = cmocka_run_group_tests(tests, NULL, NULL);
    h_end();
    return rc;
}
