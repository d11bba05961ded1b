/*
 * test_reload.c - reload on SIGHUP and the drain on SIGTERM, with the real
 * binary (WEIR_BIN): transfers in flight across a reload that keeps one
 * pipeline, changes one, removes one and adds one; a reload with a broken
 * config; a removed pipeline whose stalled client is cut at the drain
 * timeout; SIGTERM during a transfer; a second SIGTERM. Clients pause in
 * the middle of a transfer (they stop reading; the daemon's queues fill
 * and it waits), so "in flight" needs no timing. Every byte is checked by
 * SHA-256 and every wait is bounded.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>

#include "harness.h"

#define BIG   (32u << 20)
#define SMALL (1u << 20)
#define WAIT  30000 /* ms: generous for sanitizer builds on a busy box */

static char big[300], small[300], big_hex[65], small_hex[65];

static void conf_path(char *out, size_t len, const char *name)
{
    snprintf(out, len, "%s/%s.conf", h_dir, name);
}

static void start(struct h_weir *w, const char *name)
{
    char conf[400], log[400];

    conf_path(conf, sizeof(conf), name);
    snprintf(log, sizeof(log), "%s/%s.log", h_dir, name);
    h_spawn(w, (char *const[]){"weir", "-v", "-c", conf, NULL}, log);
}

/* A client that reads part of a file, pauses, and reads the rest later,
 * hashing all of it. */
struct reader {
    int fd;
    struct sha256 sha;
    uint64_t got;
};

static void reader_open(struct reader *rd, uint16_t port)
{
    rd->fd = h_connect(false, port, NULL, WAIT);
    assert_true(rd->fd >= 0);
    sha256_init(&rd->sha);
    rd->got = 0;
}

/* Reads up to `max` bytes in all; stops at EOF. False on an error or a
 * timeout (a reset counts as an error). */
static bool reader_read(struct reader *rd, uint64_t max)
{
    static uint8_t buf[1 << 16];

    while (rd->got < max) {
        struct pollfd p = {.fd = rd->fd, .events = POLLIN};
        size_t want = max - rd->got < sizeof(buf) ? max - rd->got : sizeof(buf);
        ssize_t n;

        if (poll(&p, 1, WAIT) != 1)
            return false;
        n = read(rd->fd, buf, want);
        if (n < 0)
            return false;
        if (n == 0)
            return true;
        sha256_update(&rd->sha, buf, (size_t)n);
        rd->got += (uint64_t)n;
    }
    return true;
}

/* Reads to EOF and checks length and hash. */
static void reader_finish(struct reader *rd, uint64_t size, const char *hex)
{
    char got_hex[65];

    assert_true(reader_read(rd, UINT64_MAX));
    close(rd->fd);
    sha256_hex(&rd->sha, got_hex);
    assert_int_equal(rd->got, size);
    assert_string_equal(got_hex, hex);
}

static void fetch(uint16_t port, uint64_t size, const char *hex)
{
    struct reader rd;

    reader_open(&rd, port);
    reader_finish(&rd, size, hex);
}

/* One connect attempt: true when it was refused. */
static bool refused_once(uint16_t port)
{
    struct sockaddr_storage ss;
    socklen_t len = h_addr(&ss, false, port);
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    bool refused =
        connect(fd, (struct sockaddr *)&ss, len) != 0 && errno == ECONNREFUSED;

    close(fd);
    return refused;
}

/* The port stops accepting: connections are refused within WAIT. */
static bool becomes_refused(uint16_t port)
{
    int64_t end = h_now_ms() + WAIT;

    do {
        if (refused_once(port))
            return true;
        h_sleep_ms(20);
    } while (h_now_ms() < end);
    return false;
}

/* SIGHUP, then the nth "reloaded" line. */
static void reload_and_wait(struct h_weir *w, unsigned nth)
{
    assert_int_equal(kill(w->pid, SIGHUP), 0);
    h_expect_log_count(w, "reloaded ", nth, WAIT);
}

/*
 * keep (unchanged), change (a new high_water_mark, same port), gone
 * (removed), and then added (new). A transfer of keep and one of change
 * are paused across the reload and must complete whole; change's port
 * serves the new definition at once; gone refuses; added serves.
 */
static void test_reload_add_remove_inflight(void **state)
{
    struct h_weir w;
    char conf[400];
    uint16_t pk = h_free_port(false), pc = h_free_port(false);
    uint16_t pg = h_free_port(false), pa = h_free_port(false);
    struct reader rk, rc;

    (void)state;
    conf_path(conf, sizeof(conf), "inflight");
    h_write_text(conf,
                 "[daemon]\nworkers = 2\ndrain_timeout = 60s\n\n"
                 "[pipeline keep]\nsource = file:%s\n"
                 "sink = tcp-listen:127.0.0.1:%u\n\n"
                 "[pipeline change]\nsource = file:%s\n"
                 "sink = tcp-listen:127.0.0.1:%u\n\n"
                 "[pipeline gone]\nsource = file:%s\n"
                 "sink = tcp-listen:127.0.0.1:%u\n",
                 big, pk, big, pc, small, pg);
    start(&w, "inflight");
    h_expect_log(&w, "listening on 127.0.0.1:", WAIT);
    reader_open(&rk, pk);
    reader_open(&rc, pc);
    assert_true(reader_read(&rk, 1u << 20));
    assert_true(reader_read(&rc, 1u << 20));
    assert_int_equal(rk.got, 1u << 20);
    assert_int_equal(rc.got, 1u << 20);

    h_write_text(conf,
                 "[daemon]\nworkers = 2\ndrain_timeout = 60s\n\n"
                 "[pipeline keep]\nsource = file:%s\n"
                 "sink = tcp-listen:127.0.0.1:%u\n\n"
                 "[pipeline change]\nsource = file:%s\n"
                 "sink = tcp-listen:127.0.0.1:%u\n"
                 "high_water_mark = 512KiB\n\n"
                 "[pipeline added]\nsource = file:%s\n"
                 "sink = tcp-listen:127.0.0.1:%u\n",
                 big, pk, big, pc, small, pa);
    reload_and_wait(&w, 1);
    h_expect_log(&w, "1 pipeline unchanged, 1 changed, 1 new, 1 removed", WAIT);
    h_expect_log(&w, "pipeline change: took over", WAIT);

    /* The new pipeline serves, the changed one serves on its old port,
     * the removed one refuses. */
    fetch(pa, SMALL, small_hex);
    fetch(pc, BIG, big_hex);
    if (!becomes_refused(pg)) {
        h_show_log(&w);
        fail();
    }
    /* The paused transfers complete, each whole. */
    reader_finish(&rk, BIG, big_hex);
    reader_finish(&rc, BIG, big_hex);
    h_expect_log(&w, "pipeline change: drained", WAIT);
    fetch(pk, BIG, big_hex);
    h_expect_exit(&w, 0, true, WAIT);
}

/* A config with an error: nothing changes, the log says FILE:LINE. */
static void test_reload_broken_config(void **state)
{
    struct h_weir w;
    char conf[400], needle[500];
    uint16_t port = h_free_port(false), other = h_free_port(false);
    struct reader rd;

    (void)state;
    conf_path(conf, sizeof(conf), "broken");
    h_write_text(conf,
                 "[daemon]\nworkers = 2\n\n"
                 "[pipeline a]\nsource = file:%s\n"
                 "sink = tcp-listen:127.0.0.1:%u\n",
                 small, port);
    start(&w, "broken");
    h_expect_log(&w, "listening on 127.0.0.1:", WAIT);
    reader_open(&rd, port);
    assert_true(reader_read(&rd, 4096));

    /* Line 7 is wrong; pipeline a would be removed and b added. */
    h_write_text(conf,
                 "[daemon]\nworkers = 2\n\n"
                 "[pipeline b]\nsource = file:%s\n"
                 "sink = tcp-listen:127.0.0.1:%u\n"
                 "high_water_mark = lots\n",
                 small, other);
    assert_int_equal(kill(w.pid, SIGHUP), 0);
    snprintf(needle, sizeof(needle), "%s:7: ", conf);
    h_expect_log(&w, needle, WAIT);
    h_expect_log(&w, "the running configuration stays", WAIT);
    reader_finish(&rd, SMALL, small_hex);
    fetch(port, SMALL, small_hex);
    assert_true(refused_once(other));

    /* A config that parses but cannot run (its port is taken) changes
     * nothing either. */
    int busy = h_listen(false, other);
    assert_true(busy >= 0);
    h_write_text(conf,
                 "[daemon]\nworkers = 2\n\n"
                 "[pipeline b]\nsource = file:%s\n"
                 "sink = tcp-listen:127.0.0.1:%u\n",
                 small, other);
    assert_int_equal(kill(w.pid, SIGHUP), 0);
    h_expect_log(&w, "pipeline b cannot be set up", WAIT);
    close(busy);
    fetch(port, SMALL, small_hex);

    /* Fixed: the reload goes through. */
    reload_and_wait(&w, 1);
    fetch(other, SMALL, small_hex);
    if (!becomes_refused(port)) {
        h_show_log(&w);
        fail();
    }
    h_expect_exit(&w, 0, true, WAIT);
}

/* A removed pipeline's client that stops reading is cut at the drain
 * timeout; the rest of the daemon runs on. */
static void test_reload_drain_timeout(void **state)
{
    struct h_weir w;
    char conf[400];
    uint16_t pg = h_free_port(false), pa = h_free_port(false);
    struct reader rd;

    (void)state;
    conf_path(conf, sizeof(conf), "cut");
    h_write_text(conf,
                 "[daemon]\nworkers = 2\ndrain_timeout = 200ms\n\n"
                 "[pipeline gone]\nsource = file:%s\n"
                 "sink = tcp-listen:127.0.0.1:%u\n",
                 big, pg);
    start(&w, "cut");
    h_expect_log(&w, "listening on 127.0.0.1:", WAIT);
    reader_open(&rd, pg);
    assert_true(reader_read(&rd, 1u << 20));
    h_write_text(conf,
                 "[daemon]\nworkers = 2\ndrain_timeout = 200ms\n\n"
                 "[pipeline added]\nsource = file:%s\n"
                 "sink = tcp-listen:127.0.0.1:%u\n",
                 small, pa);
    reload_and_wait(&w, 1);
    h_expect_log(&w,
                 "pipeline gone: 1 stream still running after the drain "
                 "timeout; closed 1",
                 WAIT);
    /* The stalled client finds its connection ended short of the file. */
    reader_read(&rd, UINT64_MAX);
    close(rd.fd);
    assert_true(rd.got < BIG);
    h_expect_log(&w, "pipeline gone: drained", WAIT);
    fetch(pa, SMALL, small_hex);
    h_expect_exit(&w, 0, true, WAIT);
}

/* A unix-listen socket passes from the old definition to the new one (its
 * path stays, the paused client completes); removed, its path goes. */
static void test_reload_unix_handover(void **state)
{
    struct h_weir w;
    char conf[400], sock[400];
    struct reader rd;
    struct stat st;
    int fd;
    char hex[65];

    (void)state;
    conf_path(conf, sizeof(conf), "unix");
    h_path(sock, sizeof(sock), "serve.sock");
    h_write_text(conf,
                 "[daemon]\nworkers = 2\ndrain_timeout = 60s\n\n"
                 "[pipeline u]\nsource = file:%s\nsink = unix-listen:%s\n",
                 big, sock);
    start(&w, "unix");
    h_expect_log(&w, "listening on", WAIT);
    rd.fd = h_connect(false, 0, sock, WAIT);
    assert_true(rd.fd >= 0);
    sha256_init(&rd.sha);
    rd.got = 0;
    assert_true(reader_read(&rd, 1u << 20));

    h_write_text(conf,
                 "[daemon]\nworkers = 2\ndrain_timeout = 60s\n\n"
                 "[pipeline u]\nsource = file:%s\nsink = unix-listen:%s\n"
                 "chunk_size = 64KiB\n",
                 small, sock);
    reload_and_wait(&w, 1);
    h_expect_log(&w, "pipeline u: took over", WAIT);
    /* The new definition serves on the same path. */
    fd = h_connect(false, 0, sock, WAIT);
    assert_true(fd >= 0);
    assert_int_equal(h_drain(fd, hex, UINT64_MAX, WAIT), SMALL);
    close(fd);
    assert_string_equal(hex, small_hex);
    reader_finish(&rd, BIG, big_hex);
    h_expect_log(&w, "pipeline u: drained", WAIT);
    assert_int_equal(stat(sock, &st), 0);

    h_write_text(conf,
                 "[daemon]\nworkers = 2\n\n"
                 "[pipeline other]\nsource = file:%s\n"
                 "sink = tcp-listen:127.0.0.1:%u\n",
                 small, h_free_port(false));
    reload_and_wait(&w, 2);
    h_expect_log(&w, "pipeline u: drained", WAIT);
    for (int64_t end = h_now_ms() + WAIT;
         stat(sock, &st) == 0 && h_now_ms() < end; h_sleep_ms(20))
        ;
    assert_int_not_equal(stat(sock, &st), 0);
    h_expect_exit(&w, 0, true, WAIT);
}

/* A client that connects again and again (one attempt each, no retry)
 * while the pipeline is replaced under it. */
struct hammer {
    pthread_t th;
    uint16_t port;
    atomic_bool stop;
    unsigned ok, refused, bad;
};

static void *hammer_run(void *arg)
{
    struct hammer *h = arg;

    while (!atomic_load(&h->stop)) {
        struct sockaddr_storage ss;
        socklen_t len = h_addr(&ss, false, h->port);
        int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
        char hex[65];

        if (connect(fd, (struct sockaddr *)&ss, len) != 0) {
            h->refused++;
        } else if (h_drain(fd, hex, UINT64_MAX, WAIT) == SMALL &&
                   strcmp(hex, small_hex) == 0) {
            h->ok++;
        } else {
            h->bad++;
        }
        close(fd);
    }
    return NULL;
}

/* Six reloads that each replace the pipeline on a port: no client is
 * refused or cut short meanwhile. */
static void test_reload_refuses_no_client(void **state)
{
    struct h_weir w;
    char conf[400];
    uint16_t port = h_free_port(false);
    struct hammer h = {.port = port};

    (void)state;
    conf_path(conf, sizeof(conf), "hammer");
    h_write_text(conf,
                 "[daemon]\nworkers = 2\n\n"
                 "[pipeline p]\nsource = file:%s\n"
                 "sink = tcp-listen:127.0.0.1:%u\n",
                 small, port);
    start(&w, "hammer");
    h_expect_log(&w, "listening on 127.0.0.1:", WAIT);
    atomic_init(&h.stop, false);
    assert_int_equal(pthread_create(&h.th, NULL, hammer_run, &h), 0);
    for (unsigned i = 1; i <= 6; i++) {
        h_write_text(conf,
                     "[daemon]\nworkers = 2\n\n"
                     "[pipeline p]\nsource = file:%s\n"
                     "sink = tcp-listen:127.0.0.1:%u\n"
                     "high_water_mark = %uMiB\n",
                     small, port, 1 + i % 2);
        reload_and_wait(&w, i);
        h_sleep_ms(50); /* let a few clients through each definition */
    }
    atomic_store(&h.stop, true);
    pthread_join(h.th, NULL);
    fprintf(stderr, "%u clients served, %u refused, %u short\n", h.ok,
            h.refused, h.bad);
    assert_int_equal(h.refused, 0);
    assert_int_equal(h.bad, 0);
    assert_true(h.ok > 0);
    h_expect_log(&w, "0 pipelines unchanged, 1 changed, 0 new, 0 removed",
                 WAIT);
    h_expect_exit(&w, 0, true, WAIT);
}

/* SIGTERM while a transfer is paused half-way: it completes, exit 0. */
static void test_sigterm_drains(void **state)
{
    struct h_weir w;
    char conf[400];
    uint16_t port = h_free_port(false);
    struct reader rd;

    (void)state;
    conf_path(conf, sizeof(conf), "term");
    h_write_text(conf,
                 "[daemon]\nworkers = 2\ndrain_timeout = 60s\n\n"
                 "[pipeline big]\nsource = file:%s\n"
                 "sink = tcp-listen:127.0.0.1:%u\n",
                 big, port);
    start(&w, "term");
    h_expect_log(&w, "listening on 127.0.0.1:", WAIT);
    reader_open(&rd, port);
    assert_true(reader_read(&rd, 1u << 20));
    assert_int_equal(kill(w.pid, SIGTERM), 0);
    h_expect_log(&w, "SIGTERM: stopping", WAIT);
    /* No new clients once stopping. */
    if (!becomes_refused(port)) {
        h_show_log(&w);
        fail();
    }
    reader_finish(&rd, BIG, big_hex);
    h_expect_exit(&w, 0, false, WAIT);
}

/* A client that never reads: the drain timeout ends the wait, exit 0; and
 * a second SIGTERM does not wait for the drain at all. */
static void test_sigterm_timeout_and_second(void **state)
{
    struct h_weir w;
    char conf[400];
    uint16_t port = h_free_port(false);
    struct reader rd;

    (void)state;
    conf_path(conf, sizeof(conf), "stall");
    h_write_text(conf,
                 "[daemon]\nworkers = 2\ndrain_timeout = 300ms\n\n"
                 "[pipeline big]\nsource = file:%s\n"
                 "sink = tcp-listen:127.0.0.1:%u\n",
                 big, port);
    start(&w, "stall");
    h_expect_log(&w, "listening on 127.0.0.1:", WAIT);
    reader_open(&rd, port);
    assert_true(reader_read(&rd, 1u << 20));
    h_expect_exit(&w, 0, true, WAIT);
    close(rd.fd);
    {
        char *t = h_slurp(w.log);
        bool said = strstr(t, "still running after the drain timeout");

        free(t);
        assert_true(said);
    }

    /* An hour's drain: only the second signal can end it within WAIT. */
    conf_path(conf, sizeof(conf), "stall2");
    h_write_text(conf,
                 "[daemon]\nworkers = 2\ndrain_timeout = 1h\n\n"
                 "[pipeline big]\nsource = file:%s\n"
                 "sink = tcp-listen:127.0.0.1:%u\n",
                 big, port);
    start(&w, "stall2");
    h_expect_log(&w, "listening on 127.0.0.1:", WAIT);
    reader_open(&rd, port);
    assert_true(reader_read(&rd, 1u << 20));
    assert_int_equal(kill(w.pid, SIGTERM), 0);
    h_expect_log(&w, "SIGTERM: stopping", WAIT);
    assert_int_equal(kill(w.pid, SIGTERM), 0);
    h_expect_exit(&w, 0, false, WAIT);
    close(rd.fd);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_teardown(test_reload_add_remove_inflight, h_teardown),
        cmocka_unit_test_teardown(test_reload_broken_config, h_teardown),
        cmocka_unit_test_teardown(test_reload_drain_timeout, h_teardown),
        cmocka_unit_test_teardown(test_reload_unix_handover, h_teardown),
        cmocka_unit_test_teardown(test_reload_refuses_no_client, h_teardown),
        cmocka_unit_test_teardown(test_sigterm_drains, h_teardown),
        cmocka_unit_test_teardown(test_sigterm_timeout_and_second, h_teardown),
    };
    int rc;

    if (h_begin("reload") != 0)
        return 1;
    h_path(big, sizeof(big), "big");
    h_path(small, sizeof(small), "small");
    h_make_file(big, BIG, 11, big_hex);
    h_make_file(small, SMALL, 12, small_hex);
    rc = cmocka_run_group_tests(tests, NULL, NULL);
    h_end();
    return rc;
}
