/*
 * test_follow.c - a followed log shipped to a collector while it is
 * rotated under a writer that never stops: by rename and create (several
 * times a second), by copytruncate with the log growing past its old size
 * at once, and a log that does not exist yet when weir starts. The
 * collector must receive every line the writer wrote, in order, each
 * once: the lines are numbered, so a gap or a repeat names itself.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>
#include <stdatomic.h>

#include "harness.h"

#define WAIT 10000u

enum rotation { ROT_RENAME, ROT_COPYTRUNCATE, ROT_NONE };

struct writer {
    char path[256];
    enum rotation how;
    unsigned lines;     /* to write in all */
    unsigned rotations; /* spread over the run */
    unsigned delay_ms;  /* before the first line */
    pthread_t thread;
};

static int open_log(const char *path)
{
    return open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
}

#define LINE_LEN 25 /* "line 00000000 of the log\n" */

/* The writer runs on its own thread, where cmocka cannot fail a test:
 * it counts what went wrong instead. */
static unsigned writer_errors;
/* What the collector has received so far. */
static _Atomic size_t received;

static void write_line(int fd, unsigned n)
{
    char line[64];
    int len = snprintf(line, sizeof(line), "line %08u of the log\n", n);

    if (len != LINE_LEN || !h_write_all(fd, line, (size_t)len))
        writer_errors++;
}

/* logrotate's copytruncate: copy what is there, then cut it to 0 (the
 * writer is held meanwhile, as the copy and the cut race it otherwise). */
static void copy_truncate(const char *path, unsigned k)
{
    char dst[300], buf[65536];
    int in = open(path, O_RDONLY | O_CLOEXEC), out;
    ssize_t n;

    snprintf(dst, sizeof(dst), "%s.%u", path, k);
    out = open(dst, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (in < 0 || out < 0)
        writer_errors++;
    while ((n = read(in, buf, sizeof(buf))) > 0)
        if (!h_write_all(out, buf, (size_t)n))
            writer_errors++;
    close(in);
    close(out);
    if (truncate(path, 0) != 0)
        writer_errors++;
}

static void *writer_run(void *arg)
{
    struct writer *wr = arg;
    unsigned every = wr->lines / (wr->rotations + 1), k = 0;
    int fd;

    h_sleep_ms(wr->delay_ms);
    fd = open_log(wr->path);
    if (fd < 0)
        writer_errors++;
    for (unsigned n = 0; n < wr->lines; n++) {
        if (wr->how != ROT_NONE && n > 0 && n % every == 0 &&
            k < wr->rotations) {
            k++;
            /* weir has the log open once its first bytes arrived: a file
             * renamed away before weir ever opened it is not one it
             * follows (a slow start under a sanitizer was such a case). */
            for (int64_t end = h_now_ms() + WAIT;
                 received == 0 && h_now_ms() < end;)
                h_sleep_ms(5);
            if (wr->how == ROT_RENAME) {
                char old[300];

                /* The writer keeps its old fd for a few more lines, as
                 * a program does until it is told to reopen. */
                snprintf(old, sizeof(old), "%s.%u", wr->path, k);
                if (rename(wr->path, old) != 0)
                    writer_errors++;
                for (unsigned i = 0; i < 20 && n < wr->lines; i++)
                    write_line(fd, n++);
                close(fd);
                fd = open_log(wr->path);
                if (fd < 0)
                    writer_errors++;
            } else {
                /* What the cut takes away unread is in the copy only, as
                 * with any follower: the test cuts once weir has it all,
                 * and what it checks is that weir sees the cut although
                 * the log grows past its old size within a poll. */
                for (int64_t end = h_now_ms() + WAIT;
                     received < (size_t)n * LINE_LEN && h_now_ms() < end;)
                    h_sleep_ms(5);
                copy_truncate(wr->path, k);
                /* At once more than the log held before the cut. */
                for (unsigned i = 0, m = n + 64; i < m && n < wr->lines; i++)
                    write_line(fd, n++);
                if (n == wr->lines)
                    break;
            }
        }
        write_line(fd, n);
        /* About 16,000 lines a second: a rotation every ~250 ms. */
        if (n % 16 == 0)
            h_sleep_ms(1);
    }
    close(fd);
    return NULL;
}

/* Reads the collector's connection until `want` bytes arrived. */
static char *collect(int lfd, size_t want)
{
    char *got = malloc(want + 1);
    size_t have = 0;
    int fd = h_accept(lfd, WAIT);

    assert_non_null(got);
    assert_true(fd >= 0);
    while (have < want) {
        struct pollfd p = {.fd = fd, .events = POLLIN};
        ssize_t n;

        if (poll(&p, 1, (int)WAIT) <= 0)
            break;
        n = read(fd, got + have, want - have);
        if (n <= 0)
            break;
        have += (size_t)n;
        received = have;
    }
    got[have] = '\0';
    close(fd);
    return got;
}

/* Every line 0..lines-1 once, in order, and nothing else. */
static void expect_lines(const char *got, unsigned lines)
{
    const char *p = got;

    for (unsigned n = 0; n < lines; n++) {
        char want[64];
        int len = snprintf(want, sizeof(want), "line %08u of the log\n", n);

        if (strncmp(p, want, (size_t)len) != 0)
            fail_msg("line %u is missing or out of order; got \"%.40s\"", n, p);
        p += len;
    }
    assert_string_equal(p, "");
}

static void ship(enum rotation how, unsigned rotations, unsigned delay_ms,
                 const char *expect_line)
{
    enum { LINES = 20000 };
    struct writer wr = {.how = how,
                        .lines = LINES,
                        .rotations = rotations,
                        .delay_ms = delay_ms};
    uint16_t port = h_free_port(false);
    int lfd = h_listen(false, port);
    struct h_weir w;
    char *got;

    assert_true(lfd >= 0);
    h_path(wr.path, sizeof(wr.path), "app.log");
    unlink(wr.path);
    if (delay_ms == 0)
        close(open_log(wr.path));
    h_start_conf(&w, "follow", H_CONF_FRESH_LOG,
                 "[pipeline logs]\nsource = file:%s\nfollow = yes\n"
                 "sink = tcp:127.0.0.1:%u\n",
                 wr.path, port);
    writer_errors = 0;
    received = 0;
    assert_int_equal(pthread_create(&wr.thread, NULL, writer_run, &wr), 0);
    got = collect(lfd, (size_t)LINES * LINE_LEN);
    pthread_join(wr.thread, NULL);
    assert_int_equal(writer_errors, 0);
    expect_lines(got, LINES);
    free(got);
    if (expect_line)
        h_expect_log_count(&w, expect_line, rotations ? rotations : 1, WAIT);
    h_expect_exit(&w, 0, true, WAIT);
    close(lfd);
}

static void test_rename_rotation(void **state)
{
    (void)state;
    ship(ROT_RENAME, 5, 0, "was rotated");
}

static void test_copytruncate(void **state)
{
    (void)state;
    ship(ROT_COPYTRUNCATE, 2, 0, "was truncated");
}

static void test_log_that_appears_later(void **state)
{
    (void)state;
    ship(ROT_NONE, 0, 500, "exists now");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_teardown(test_rename_rotation, h_teardown),
        cmocka_unit_test_teardown(test_copytruncate, h_teardown),
        cmocka_unit_test_teardown(test_log_that_appears_later, h_teardown),
    };
    int rc;

    if (h_begin("follow") != 0)
        return 1;
    rc = cmocka_run_group_tests(tests, NULL, NULL);
    h_end();
    return rc;
}
