/*
 * test_restart.c - a followed log keeps every byte across restarts of
 * weir. A collector keeps each connection's bytes apart, a writer appends
 * numbered lines the whole time, and the bytes are accounted for end to
 * end: the first connection is the log's first bytes, the next one
 * starts where the checkpoint said (no gap) and runs to the log's end.
 *
 *   kill -9   what was sent after the last checkpoint arrives twice, and
 *             nothing else;
 *   SIGTERM   nothing arrives twice;
 *   rotated   the log was rotated while weir was down: the rest of the
 *             old file comes first, then the new one, nothing twice;
 *   gzip      behind a transform the checkpoint moves once the stream is
 *             at rest: kill -9 then, and the restart sends only what is
 *             new, as a gzip member of its own (decoded by gzip(1)).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>

#include "../integration/harness.h"
#include "collector.h"

#define WAIT 30000u

struct rs {
    char log[256], state[256], ckpt[300];
    struct fc_collector c;
    struct fc_writer wr;
    struct h_weir w;
};

static void start_weir(struct rs *t, const char *name)
{
    h_start_conf(&t->w, name, 0,
                 "[daemon]\nworkers = 2\nstate_directory = %s\n"
                 "checkpoint_interval = 100ms\n\n"
                 "[pipeline p]\nsource = file:%s\nfollow = yes\n"
                 "sink = tcp:127.0.0.1:%u\n",
                 t->state, t->log, t->c.port);
}

/* The checkpoint's offset, or -1 when there is none yet. */
static int64_t ckpt_offset(struct rs *t)
{
    char *text = h_slurp(t->ckpt);
    const char *at = text ? strstr(text, "\noffset ") : NULL;
    int64_t off = at ? strtoll(at + 8, NULL, 10) : -1;

    free(text);
    return off;
}

static void setup_run(struct rs *t, const char *name, unsigned lines)
{
    char dir[64];

    snprintf(dir, sizeof(dir), "%s.state", name);
    h_path(t->log, sizeof(t->log), "app.log");
    h_path(t->state, sizeof(t->state), dir);
    snprintf(t->ckpt, sizeof(t->ckpt), "%s/pipeline-p.ckpt", t->state);
    h_rm_tree(t->state);
    unlink(t->log);
    for (unsigned i = 0; i < lines; i += 1000) {
        char buf[1000 * FC_LINE], line[FC_LINE + 1];

        for (unsigned j = 0; j < 1000; j++) {
            fc_line(i + j, line);
            memcpy(buf + j * FC_LINE, line, FC_LINE);
        }
        int fd = open(t->log, O_WRONLY | O_APPEND | O_CREAT, 0644);
        assert_true(fd >= 0);
        assert_true(h_write_all(fd, buf, sizeof(buf)));
        close(fd);
    }
    fc_start(&t->c);
    start_weir(t, name);
}

struct until {
    unsigned conns;
    uint64_t bytes;
};

/* At least u->conns connections, the last one with u->bytes or more. */
static bool got_enough(struct fc_collector *c, void *arg)
{
    struct until *u = arg;
    bool ok;

    pthread_mutex_lock(&c->mu);
    ok = c->nconns >= u->conns && c->conns[u->conns - 1].len >= u->bytes;
    pthread_mutex_unlock(&c->mu);
    return ok;
}

static bool conn_ended(struct fc_collector *c, void *arg)
{
    unsigned ended, *k = arg;

    fc_conns(c, &ended);
    return ended >= *k;
}

/* Waits until the checkpoint is past `min`; its offset. */
static int64_t wait_ckpt(struct rs *t, int64_t min)
{
    int64_t end = h_now_ms() + WAIT, off;

    while ((off = ckpt_offset(t)) <= min) {
        if (h_now_ms() > end) {
            h_show_log(&t->w);
            fail_msg("no checkpoint past %lld in %s", (long long)min, t->ckpt);
        }
        h_sleep_ms(10);
    }
    return off;
}

/* The resumed pipeline's "resuming at byte N" from the log; -1: none. */
static int64_t resumed_at(const struct h_weir *w)
{
    char *text = h_slurp(w->log);
    const char *at = text ? strstr(text, "resuming at byte ") : NULL;
    int64_t off = at ? strtoll(at + 17, NULL, 10) : -1;

    free(text);
    return off;
}

/*
 * The bytes account: connection 0 is the file's first bytes; connection 1
 * is `expect` (the file from the resume point on) whole. Returns the bytes
 * that arrived twice.
 */
static uint64_t account(struct rs *t, const uint8_t *file, size_t flen,
                        const uint8_t *expect, size_t elen, int64_t resume)
{
    struct fc_conn *a = &t->c.conns[0], *b = &t->c.conns[1];

    assert_int_equal(t->c.nconns, 2);
    assert_true(a->len <= flen);
    assert_memory_equal(a->p, file, a->len);
    /* No gap: the second connection starts at or before the first one's
     * end. */
    assert_true(resume >= 0);
    assert_true((uint64_t)resume <= a->len);
    assert_int_equal(b->len, elen);
    assert_memory_equal(b->p, expect, elen);
    return a->len - (uint64_t)resume;
}

static void finish(struct rs *t)
{
    h_expect_exit(&t->w, 0, true, WAIT);
    fc_free(&t->c);
}

/* The second connection's bytes reach want. */
static void wait_second(struct rs *t, uint64_t want)
{
    struct until u = {2, want};

    if (!fc_wait(&t->c, got_enough, &u, WAIT)) {
        h_show_log(&t->w);
        fail_msg("the restarted weir sent %llu of %llu bytes",
                 (unsigned long long)(fc_total(&t->c) - t->c.conns[0].len),
                 (unsigned long long)want);
    }
}

static void test_kill9_resumes_from_checkpoint(void **state)
{
    static struct rs t; /* a failed check may leave its threads */
    struct until u = {1, 200000};
    unsigned one = 1;
    int64_t ck, resume;
    uint64_t dup;
    uint8_t *file;
    size_t flen;

    (void)state;
    setup_run(&t, "kill9", 50000);
    fc_writer_start(&t.wr, t.log, 20, 200);
    /* Mid-follow: bytes are flowing and a checkpoint has been written. */
    assert_true(fc_wait(&t.c, got_enough, &u, WAIT));
    wait_ckpt(&t, 0);
    kill(t.w.pid, SIGKILL);
    assert_int_equal(h_wait(&t.w, WAIT), 128 + SIGKILL);
    ck = ckpt_offset(&t);
    assert_true(fc_wait(&t.c, conn_ended, &one, WAIT));
    start_weir(&t, "kill9");
    h_expect_log(&t.w, "resuming at byte", WAIT);
    resume = resumed_at(&t.w);
    /* It resumed where the last checkpoint written said. */
    assert_int_equal(resume, ck);
    h_sleep_ms(300); /* the writer appends while weir runs again */
    fc_writer_stop(&t.wr);
    file = fc_read_file(t.log, &flen);
    assert_non_null(file);
    wait_second(&t, flen - (size_t)resume);
    dup = account(&t, file, flen, file + resume, flen - (size_t)resume, resume);
    printf("kill -9: log %zu bytes; first run sent %zu, checkpoint at %lld; "
           "second run sent %zu; %llu bytes twice (those after the "
           "checkpoint), 0 lost\n",
           flen, t.c.conns[0].len, (long long)ck, t.c.conns[1].len,
           (unsigned long long)dup);
    free(file);
    finish(&t);
}

static void test_clean_restart_sends_nothing_twice(void **state)
{
    static struct rs t; /* a failed check may leave its threads */
    struct until u = {1, 200000};
    unsigned one = 1;
    int64_t resume;
    uint8_t *file;
    size_t flen;

    (void)state;
    setup_run(&t, "clean", 50000);
    fc_writer_start(&t.wr, t.log, 20, 200);
    assert_true(fc_wait(&t.c, got_enough, &u, WAIT));
    h_expect_exit(&t.w, 0, true, WAIT);
    assert_true(fc_wait(&t.c, conn_ended, &one, WAIT));
    /* The last checkpoint is everything the first run sent. */
    assert_int_equal(ckpt_offset(&t), (int64_t)t.c.conns[0].len);
    start_weir(&t, "clean");
    h_expect_log(&t.w, "resuming at byte", WAIT);
    resume = resumed_at(&t.w);
    h_sleep_ms(300);
    fc_writer_stop(&t.wr);
    file = fc_read_file(t.log, &flen);
    assert_non_null(file);
    wait_second(&t, flen - (size_t)resume);
    assert_int_equal(
        account(&t, file, flen, file + resume, flen - (size_t)resume, resume),
        0);
    printf("SIGTERM: log %zu bytes; first run sent %zu, second %zu from "
           "byte %lld; 0 twice, 0 lost\n",
           flen, t.c.conns[0].len, t.c.conns[1].len, (long long)resume);
    free(file);
    finish(&t);
}

/* logrotate's `create` while weir is down: app.log -> app.log.1, the
 * writer goes on in app.log.1 a while, then reopens app.log. */
static void test_rotated_while_down(void **state)
{
    static struct rs t; /* a failed check may leave its threads */
    struct until u = {1, 100000};
    unsigned one = 1;
    char old[300];
    uint8_t *a, *b, *all;
    size_t alen, blen;
    int64_t ck;

    (void)state;
    setup_run(&t, "rotdown", 20000);
    fc_writer_start(&t.wr, t.log, 20, 500);
    assert_true(fc_wait(&t.c, got_enough, &u, WAIT));
    h_expect_exit(&t.w, 0, true, WAIT);
    assert_true(fc_wait(&t.c, conn_ended, &one, WAIT));
    ck = ckpt_offset(&t);
    assert_int_equal(ck, (int64_t)t.c.conns[0].len);
    snprintf(old, sizeof(old), "%s.1", t.log);
    assert_int_equal(rename(t.log, old), 0);
    h_sleep_ms(50); /* the writer appends to the renamed file meanwhile */
    fc_writer_reopen(&t.wr);
    h_sleep_ms(50);
    start_weir(&t, "rotdown");
    h_expect_log(&t.w, "was rotated since its checkpoint", WAIT);
    h_sleep_ms(300);
    fc_writer_stop(&t.wr);
    a = fc_read_file(old, &alen);
    b = fc_read_file(t.log, &blen);
    assert_non_null(a);
    assert_non_null(b);
    /* What the second run owes: the old file's rest, then the new one. */
    all = malloc(alen - (size_t)ck + blen);
    assert_non_null(all);
    memcpy(all, a + ck, alen - (size_t)ck);
    memcpy(all + alen - (size_t)ck, b, blen);
    wait_second(&t, alen - (size_t)ck + blen);
    assert_int_equal(account(&t, a, alen, all, alen - (size_t)ck + blen, ck),
                     0);
    printf("rotated while down: app.log.1 %zu bytes (resumed at %lld), "
           "app.log %zu bytes; second run sent %zu; 0 twice, 0 lost\n",
           alen, (long long)ck, blen, t.c.conns[1].len);
    free(all);
    free(a);
    free(b);
    finish(&t);
}

/* Waits until the checkpoint is exactly `off`. */
static void wait_ckpt_at(struct rs *t, int64_t off)
{
    for (int64_t end = h_now_ms() + WAIT; ckpt_offset(t) != off;) {
        if (h_now_ms() > end) {
            h_show_log(&t->w);
            fail_msg("the checkpoint is %lld, not %lld",
                     (long long)ckpt_offset(t), (long long)off);
        }
        h_sleep_ms(10);
    }
}

static void test_gzip_checkpoint_at_rest(void **state)
{
    static struct rs t; /* a failed check may leave its threads */
    char gz[300], dec[300], cmd[800];
    uint8_t *file, *got;
    size_t flen, glen, first;
    unsigned one = 1;
    FILE *f;

    (void)state;
    h_path(t.log, sizeof(t.log), "app.log");
    h_path(t.state, sizeof(t.state), "gzip.state");
    snprintf(t.ckpt, sizeof(t.ckpt), "%s/pipeline-p.ckpt", t.state);
    h_rm_tree(t.state);
    {
        char hex[65];

        h_make_file(t.log, 300000, 6, hex);
    }
    fc_start(&t.c);
    h_start_conf(&t.w, "gzip", 0,
                 "[daemon]\nworkers = 2\nstate_directory = %s\n"
                 "checkpoint_interval = 100ms\n\n"
                 "[pipeline p]\nsource = file:%s\nfollow = yes\n"
                 "transform = gzip\nsink = tcp:127.0.0.1:%u\n",
                 t.state, t.log, t.c.port);
    /* At rest: the whole file is out, in whole members. */
    wait_ckpt_at(&t, 300000);
    kill(t.w.pid, SIGKILL);
    assert_int_equal(h_wait(&t.w, WAIT), 128 + SIGKILL);
    assert_true(fc_wait(&t.c, conn_ended, &one, WAIT));
    first = t.c.conns[0].len;
    {
        int fd = open(t.log, O_WRONLY | O_APPEND);
        char line[FC_LINE + 1];

        assert_true(fd >= 0);
        for (unsigned i = 0; i < 5000; i++) {
            fc_line(i, line);
            assert_true(h_write_all(fd, line, FC_LINE));
        }
        close(fd);
    }
    h_start_conf(&t.w, "gzip", 0,
                 "[daemon]\nworkers = 2\nstate_directory = %s\n"
                 "checkpoint_interval = 100ms\n\n"
                 "[pipeline p]\nsource = file:%s\nfollow = yes\n"
                 "transform = gzip\nsink = tcp:127.0.0.1:%u\n",
                 t.state, t.log, t.c.port);
    h_expect_log(&t.w, "resuming at byte 300000", WAIT);
    wait_ckpt_at(&t, 300000 + 5000 * FC_LINE);
    h_expect_exit(&t.w, 0, true, WAIT);
    fc_stop(&t.c);
    assert_int_equal(t.c.nconns, 2);
    /* What the collector got, both connections end to end, is one
     * multi-member gzip stream of the log, each byte once. */
    h_path(gz, sizeof(gz), "got.gz");
    h_path(dec, sizeof(dec), "got.dec");
    f = fopen(gz, "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(t.c.conns[0].p, 1, first, f), first);
    assert_int_equal(fwrite(t.c.conns[1].p, 1, t.c.conns[1].len, f),
                     t.c.conns[1].len);
    fclose(f);
    snprintf(cmd, sizeof(cmd), "gzip -dc < %s > %s", gz, dec);
    assert_int_equal(system(cmd), 0);
    file = fc_read_file(t.log, &flen);
    got = fc_read_file(dec, &glen);
    assert_non_null(file);
    assert_non_null(got);
    assert_int_equal(glen, flen);
    assert_memory_equal(got, file, flen);
    printf("gzip: kill -9 at rest, checkpoint at 300000; the restart sent "
           "%zu compressed bytes for the %u new ones; gzip -dc of both "
           "connections gives the %zu-byte log, 0 twice\n",
           t.c.conns[1].len, 5000 * FC_LINE, flen);
    free(file);
    free(got);
    fc_free(&t.c);
}

static bool total_is(struct fc_collector *c, void *arg)
{
    return fc_total(c) >= *(uint64_t *)arg;
}

/* A state directory that cannot be written: a warning at --check and at
 * start, one when a checkpoint cannot be written, and the log ships
 * whole all the same. */
static void test_unwritable_state_dir_ships_on(void **state)
{
    static struct rs t; /* a failed check may leave its threads */
    char conf[300], log[300];
    struct h_weir chk;
    uint8_t *file;
    size_t flen;
    uint64_t want;

    (void)state;
    h_path(t.log, sizeof(t.log), "app.log");
    {
        char hex[65];

        h_make_file(t.log, 500000, 4, hex);
    }
    h_path(t.state, sizeof(t.state), "notadir");
    h_write_text(t.state, "a file, not a directory\n");
    strncat(t.state, "/state", sizeof(t.state) - strlen(t.state) - 1);
    fc_start(&t.c);
    start_weir(&t, "nostate");
    h_expect_log(&t.w, "cannot be written", WAIT);
    h_expect_log(&t.w, "cannot write its checkpoint", WAIT);
    file = fc_read_file(t.log, &flen);
    assert_non_null(file);
    want = flen;
    assert_true(fc_wait(&t.c, total_is, &want, WAIT));
    assert_int_equal(t.c.conns[0].len, flen);
    assert_memory_equal(t.c.conns[0].p, file, flen);
    h_expect_exit(&t.w, 0, true, WAIT);
    h_path(conf, sizeof(conf), "nostate.conf");
    h_path(log, sizeof(log), "nostate-check.log");
    h_spawn(&chk, (char *const[]){"weir", "--check", "-c", conf, NULL}, log);
    h_expect_exit(&chk, 0, false, WAIT);
    h_expect_log(&chk, "cannot be written", WAIT);
    printf("unwritable state directory: warned at --check and at start; "
           "%zu of %zu bytes shipped\n",
           t.c.conns[0].len, flen);
    free(file);
    fc_free(&t.c);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_teardown(test_kill9_resumes_from_checkpoint,
                                  h_teardown),
        cmocka_unit_test_teardown(test_clean_restart_sends_nothing_twice,
                                  h_teardown),
        cmocka_unit_test_teardown(test_rotated_while_down, h_teardown),
        cmocka_unit_test_teardown(test_unwritable_state_dir_ships_on,
                                  h_teardown),
        cmocka_unit_test_teardown(test_gzip_checkpoint_at_rest, h_teardown),
    };
    int rc;

    if (h_begin("restart") != 0)
        return 1;
    rc = cmocka_run_group_tests(tests, NULL, NULL);
    h_end();
    return rc;
}
