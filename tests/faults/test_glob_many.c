/*
 * test_glob_many.c - many files created, grown and deleted under a glob
 * source that may hold 32 of them open: every line of every file arrives
 * once, in order per file.
 *
 * The files come in waves: a wave's files are made with 5 lines each
 * (120 bytes, less than the fingerprint's 256: known by inode alone at
 * first), the files of the wave before are deleted once all their lines
 * arrived, and then the new wave's files grow to 20 lines each. Deleted
 * inodes come back as new files of the next waves: a new file on an old
 * inode is read from its first byte, not from where the old one ended.
 * At the end weir holds fewer than 64 descriptors.
 *
 * CI: 1,000 files in waves of 250; WEIR_SOAK=1: 10,000 in waves of 1,000.
 */
#include <dirent.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>

#include "../integration/harness.h"
#include "collector.h"
#include "glob_lines.h"

#define WAIT  60000u
#define FIRST 5u
#define LINES 20u

static void file_path(const char *dir, unsigned i, char *out, size_t len)
{
    snprintf(out, len, "%s/f%05u.log", dir, i);
}

static bool total_is(struct fc_collector *c, void *arg)
{
    return fc_total(c) >= *(uint64_t *)arg;
}

static int open_fds(pid_t pid)
{
    char path[64];
    struct dirent *de;
    int n = 0;
    DIR *d;

    snprintf(path, sizeof(path), "/proc/%d/fd", (int)pid);
    d = opendir(path);
    if (!d)
        return -1;
    while ((de = readdir(d)))
        n += de->d_name[0] != '.';
    closedir(d);
    return n;
}

static void test_created_grown_deleted(void **state)
{
    static struct fc_collector c; /* a failed check may leave its thread */
    unsigned files = gl_soak() ? 10000 : 1000;
    unsigned wave = gl_soak() ? 1000 : 250;
    struct gl_account a;
    struct h_weir w;
    char dir[256], st[256], path[320];
    uint64_t want;
    int fds = -1;

    (void)state;
    h_path(dir, sizeof(dir), "many.d");
    h_path(st, sizeof(st), "many.state");
    h_rm_tree(dir);
    h_rm_tree(st);
    assert_int_equal(mkdir(dir, 0755), 0);
    fc_start(&c);
    gl_start_weir(&w, "many", true, dir, st, "1s", c.port,
                  "max_open_files = 32\n");
    for (unsigned at = 0; at < files; at += wave) {
        unsigned end = at + wave < files ? at + wave : files;

        for (unsigned i = at; i < end; i++) {
            file_path(dir, i, path, sizeof(path));
            gl_append(path, i, 0, FIRST);
        }
        if (at > 0) {
            /* Everything before this wave arrived: its files go. */
            want = (uint64_t)at * LINES * GL_LINE +
                   (uint64_t)(end - at) * FIRST * GL_LINE;
            if (!fc_wait(&c, total_is, &want, WAIT)) {
                h_show_log(&w);
                fail_msg("%llu of %llu bytes arrived",
                         (unsigned long long)fc_total(&c),
                         (unsigned long long)want);
            }
            for (unsigned i = at - wave; i < at; i++) {
                file_path(dir, i, path, sizeof(path));
                assert_int_equal(unlink(path), 0);
            }
        }
        for (unsigned i = at; i < end; i++) {
            file_path(dir, i, path, sizeof(path));
            gl_append(path, i, FIRST, LINES - FIRST);
        }
    }
    gl_account_init(&a, files, LINES);
    /* The truth is everything written: nothing was deleted unread. */
    memset(a.on_disk, 1, (size_t)files * LINES);
    a.disk = (uint64_t)files * LINES;
    if (!gl_wait_all(&a, &c, WAIT)) {
        h_show_log(&w);
        gl_account_show(&a, "many files");
        fail_msg("%llu lines never arrived", (unsigned long long)a.missing);
    }
    /* Deleted files are read to their end and closed, idle ones closed:
     * the descriptors come down under the bound. */
    for (int64_t end = h_now_ms() + WAIT; h_now_ms() < end; h_sleep_ms(100))
        if ((fds = open_fds(w.pid)) < 64)
            break;
    h_expect_exit(&w, 0, true, WAIT);
    fc_stop(&c);
    gl_account_received(&a, &c);
    gl_account_show(&a, "many files created, grown and deleted");
    printf("%u files in waves of %u; weir's descriptors at the end: %d\n",
           files, wave, fds);
    assert_int_equal(a.missing, 0);
    assert_int_equal(a.twice, 0);
    assert_int_equal(a.disorder, 0);
    assert_int_equal(a.bad, 0);
    assert_true(fds >= 0 && fds < 64);
    gl_account_free(&a);
    fc_free(&c);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_teardown(test_created_grown_deleted, h_teardown),
    };
    int rc;

    if (h_begin("glob-many") != 0)
        return 1;
    rc = cmocka_run_group_tests(tests, NULL, NULL);
    h_end();
    return rc;
}
