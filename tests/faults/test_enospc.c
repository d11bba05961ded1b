/*
 * test_enospc.c - a file sink on a full disk: the error names the disk's
 * complaint, the sink file holds a prefix of the source (nothing
 * garbled), the checkpoint never claims more than the disk holds, and
 * once there is room a restart completes the file from the checkpoint.
 *
 * The full disk is a 256 KiB tmpfs mounted for the test; where the test
 * may not mount (not root, no CAP_SYS_ADMIN, a container), it is skipped
 * and says why.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>
#include <sys/mount.h>

#include "../integration/harness.h"
#include "collector.h"

#define WAIT 30000u

static char small[256];

static int mount_small(void **state)
{
    (void)state;
    h_path(small, sizeof(small), "small");
    mkdir(small, 0755);
    if (mount("tmpfs", small, "tmpfs", MS_NOSUID | MS_NODEV,
              "size=256k,mode=0755") != 0) {
        printf("SKIP: cannot mount a small tmpfs at %s (%s): the full-disk "
               "tests need root (CAP_SYS_ADMIN)\n",
               small, strerror(errno));
        small[0] = '\0';
    }
    return 0;
}

static int unmount_small(void **state)
{
    h_teardown(state);
    if (small[0])
        umount2(small, MNT_DETACH);
    return 0;
}

/* A ballast file that leaves about `room` bytes free on the tmpfs. */
static void fill_but(const char *ballast, size_t room)
{
    static uint8_t zero[4096];
    int fd = open(ballast, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    size_t total = 256 * 1024 - room;

    assert_true(fd >= 0);
    for (size_t n = 0; n < total; n += sizeof(zero))
        assert_true(h_write_all(fd, zero, sizeof(zero)));
    close(fd);
}

static void test_pipe_to_full_disk(void **state)
{
    char src[256], out[300], log[256], s_arg[300], o_arg[320], want[400];
    char hex[65];
    uint8_t *a, *b;
    size_t alen, blen;
    struct h_weir w;

    (void)state;
    if (!small[0])
        skip();
    h_path(src, sizeof(src), "src.bin");
    h_path(log, sizeof(log), "pipe.log");
    snprintf(out, sizeof(out), "%s/out.bin", small);
    unlink(out);
    h_make_file(src, 1 << 20, 3, hex);
    snprintf(s_arg, sizeof(s_arg), "file:%s", src);
    snprintf(o_arg, sizeof(o_arg), "file:%s", out);
    h_spawn(&w, (char *const[]){"weir", "pipe", s_arg, o_arg, NULL}, log);
    h_expect_exit(&w, 1, false, WAIT);
    h_expect_log(&w, "No space left on device", WAIT);
    a = fc_read_file(src, &alen);
    b = fc_read_file(out, &blen);
    assert_non_null(a);
    assert_non_null(b);
    assert_true(blen > 0 && blen < alen);
    assert_memory_equal(a, b, blen);
    /* The summary says what the file holds. */
    snprintf(want, sizeof(want), "sink %s: %zu bytes delivered", o_arg, blen);
    h_expect_log(&w, want, WAIT);
    printf("weir pipe to a full disk: exit 1, %zu of %zu bytes written, "
           "a prefix of the source byte for byte\n",
           blen, alen);
    free(a);
    free(b);
    unlink(out);
}

static int64_t resumed_at(const struct h_weir *w)
{
    char *text = h_slurp(w->log);
    const char *at = text ? strstr(text, "resuming at byte ") : NULL;
    int64_t off = at ? strtoll(at + 17, NULL, 10) : -1;

    free(text);
    return off;
}

static void start(struct h_weir *w, const char *log, const char *out,
                  const char *state, uint16_t port)
{
    h_start_conf(w, "full", 0,
                 "[daemon]\nworkers = 2\nstate_directory = %s\n"
                 "checkpoint_interval = 50ms\n\n"
                 "[pipeline p]\nsource = file:%s\nfollow = yes\n"
                 "sink = file:%s\nsink = tcp:127.0.0.1:%u\n",
                 state, log, out, port);
}

static bool total_is(struct fc_collector *c, void *arg)
{
    return fc_total(c) >= *(uint64_t *)arg;
}

/* A followed log teed to a tcp collector and a file on a disk that
 * fills: the pipeline fails; with room again, a restart resumes from
 * the checkpoint and both sinks end with the whole log. */
static void test_follow_to_full_disk_then_room(void **state)
{
    char log[256], out[300], ballast[300], st[256];
    static struct fc_collector c; /* a failed check may leave its thread */
    struct h_weir w;
    uint8_t *src, *got;
    size_t slen, glen, first;
    int64_t resume;
    uint64_t rest;

    (void)state;
    if (!small[0])
        skip();
    h_path(log, sizeof(log), "follow.log");
    h_path(st, sizeof(st), "full.state");
    h_rm_tree(st);
    snprintf(out, sizeof(out), "%s/copy.log", small);
    snprintf(ballast, sizeof(ballast), "%s/ballast", small);
    unlink(out);
    fill_but(ballast, 64 * 1024);
    {
        char hex[65];

        h_make_file(log, 160 * 1024, 9, hex);
    }
    fc_start(&c);
    start(&w, log, out, st, c.port);
    h_expect_log(&w, "failed: No space left on device; the other sinks go on",
                 WAIT);
    src = fc_read_file(log, &slen);
    assert_non_null(src);
    /* The collector gets the whole log meanwhile. */
    {
        uint64_t want = slen;

        assert_true(fc_wait(&c, total_is, &want, WAIT));
    }
    h_expect_exit(&w, 1, true, WAIT);
    h_expect_log(&w, "pipeline p: failed: No space left on device", WAIT);
    got = fc_read_file(out, &first);
    assert_non_null(got);
    assert_true(first < slen);
    assert_memory_equal(got, src, first);
    free(got);
    /* Room again, and a restart. */
    unlink(ballast);
    start(&w, log, out, st, c.port);
    h_expect_log(&w, "resuming at byte", WAIT);
    resume = resumed_at(&w);
    /* The checkpoint never counted more than the disk held. */
    assert_true(resume >= 0 && (size_t)resume <= first);
    rest = first + (slen - (size_t)resume);
    for (int64_t end = h_now_ms() + WAIT;;) {
        struct stat sb;

        if (stat(out, &sb) == 0 && (uint64_t)sb.st_size >= rest)
            break;
        assert_true(h_now_ms() < end);
        h_sleep_ms(10);
    }
    h_expect_exit(&w, 0, true, WAIT);
    got = fc_read_file(out, &glen);
    assert_int_equal(glen, rest);
    assert_memory_equal(got, src, first);
    assert_memory_equal(got + first, src + resume, slen - (size_t)resume);
    /* The collector: the first run's prefix, then the rest from the
     * same checkpoint. */
    {
        uint64_t want = (uint64_t)c.conns[0].len + slen - (uint64_t)resume;

        assert_true(fc_wait(&c, total_is, &want, WAIT));
    }
    fc_stop(&c);
    assert_true(c.nconns >= 2);
    assert_true((size_t)resume <= c.conns[0].len);
    assert_memory_equal(c.conns[0].p, src, c.conns[0].len);
    assert_int_equal(c.conns[c.nconns - 1].len, slen - (size_t)resume);
    assert_memory_equal(c.conns[c.nconns - 1].p, src + resume,
                        slen - (size_t)resume);
    printf("follow to a full disk: the file sink took %zu of %zu bytes, the "
           "checkpoint said %lld; after a restart with room the file holds "
           "%zu bytes: the log whole, %zu bytes of it twice (after the "
           "checkpoint)\n",
           first, slen, (long long)resume, glen, first - (size_t)resume);
    free(got);
    free(src);
    fc_free(&c);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_teardown(test_pipe_to_full_disk, h_teardown),
        cmocka_unit_test_teardown(test_follow_to_full_disk_then_room,
                                  h_teardown),
    };
    int rc;

    if (h_begin("enospc") != 0)
        return 1;
    rc = cmocka_run_group_tests(tests, mount_small, unmount_small);
    h_end();
    return rc;
}
