/*
 * test_scale.c - memory and scale of serving clients, asserted in bytes
 * and in weir's resident memory (never in time):
 *
 * - 1,000 clients of a 64 MiB file that read nothing cost weir at most
 *   64 KiB each, and the ones that then read get the whole file;
 * - 1,000 clients that read nothing, on the stream path (a transform),
 *   take no more than the pool promises them: the surplus is refused
 *   with a warning, a tcp-listen -> file pipeline that was running
 *   beside them delivers every byte, weir stays within the memory
 *   formula, and its RSS comes back near its idle size after they left;
 * - 10,000 concurrent clients of one listen sink, every byte compared.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>
#include <sys/epoll.h>
#include <sys/resource.h>

#include "harness.h"

#define WAIT 20000u

/* ThreadSanitizer maps shadow memory for the bytes the program touches,
 * several times their size (test_transforms' SHADOW_FACTOR), so in its
 * build what weir's stages write is scaled by this; the plain and ASan
 * builds check as written. */
#if defined(__SANITIZE_THREAD__)
#define SHADOW 6
#else
#define SHADOW 1
#endif
/* What may stay resident once the crowd has left, over the idle size.
 * AddressSanitizer keeps the shadow of the pages weir gives back (a byte
 * for every eight: 8 MiB for the two 32 MiB pools of the pool test), so
 * its build allows that much more. */
#if defined(__SANITIZE_ADDRESS__)
#define AFTER_KIB (16 * 1024 + 2 * 32 * 1024 / 8)
#else
#define AFTER_KIB (16 * 1024)
#endif
#define KiB 1024ull
#define MiB (1024ull * 1024ull)

/* The open-file limit raised to at least n (root may raise the hard one);
 * weir, started after, inherits it. */
static void raise_nofile(rlim_t n)
{
    struct rlimit rl;

    assert_int_equal(getrlimit(RLIMIT_NOFILE, &rl), 0);
    if (rl.rlim_max < n)
        rl.rlim_max = n;
    rl.rlim_cur = rl.rlim_max;
    if (setrlimit(RLIMIT_NOFILE, &rl) != 0) {
        assert_int_equal(getrlimit(RLIMIT_NOFILE, &rl), 0);
        rl.rlim_cur = rl.rlim_max;
        assert_int_equal(setrlimit(RLIMIT_NOFILE, &rl), 0);
    }
    assert_true(rl.rlim_cur >= n);
}

/* Opens n non-blocking connections to loopback:port, reading nothing. */
static void connect_all(int *fds, int n, uint16_t port)
{
    struct sockaddr_storage ss;
    socklen_t len = h_addr(&ss, false, port);

    for (int i = 0; i < n; i++) {
        fds[i] = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
        assert_true(fds[i] >= 0);
        assert_true(connect(fds[i], (struct sockaddr *)&ss, len) == 0 ||
                    errno == EINPROGRESS);
    }
}

/* Waits until every connection has bytes queued or has ended (weir
 * accepted it and served, or refused it); how many have bytes. */
static int wait_all_answered(const int *fds, int n)
{
    int64_t end = h_now_ms() + 4 * WAIT;
    int with_bytes = 0, answered = 0;

    while (h_now_ms() < end) {
        with_bytes = answered = 0;
        for (int i = 0; i < n; i++) {
            char c;
            ssize_t k = recv(fds[i], &c, 1, MSG_PEEK | MSG_DONTWAIT);

            if (k > 0)
                with_bytes++;
            if (k > 0 || k == 0 || (k < 0 && errno != EAGAIN))
                answered++;
        }
        if (answered == n)
            return with_bytes;
        h_sleep_ms(100);
    }
    fail_msg("%d of %d connections were answered", answered, n);
    return -1;
}

/* Waits until weir's RSS is at most kib; the last one read. */
static long wait_rss_at_most(pid_t pid, long kib)
{
    int64_t end = h_now_ms() + WAIT;
    long rss;

    while ((rss = h_status_kib(pid, "VmRSS")) > kib && h_now_ms() < end)
        h_sleep_ms(100);
    return rss;
}

/* The whole file of a connection made earlier, hashed. */
static void expect_whole(int fd, uint64_t size, const char *hex)
{
    char got[65];
    int fl = fcntl(fd, F_GETFL);

    assert_int_equal(fcntl(fd, F_SETFL, fl & ~O_NONBLOCK), 0);
    assert_int_equal(h_drain(fd, got, UINT64_MAX, WAIT), (int64_t)size);
    assert_string_equal(got, hex);
}

#define NONREADERS 1000

static void test_nonreaders_of_a_big_file_cost_little(void **state)
{
    static int fds[NONREADERS];
    char file[256], hex[65];
    struct h_weir w;
    uint16_t port = h_free_port(false);
    long base, held;

    (void)state;
    raise_nofile(4 * NONREADERS);
    h_path(file, sizeof(file), "big.bin");
    h_make_file(file, 64 * MiB, 3, hex);
    h_start_conf(&w, "big", H_CONF_FRESH_LOG,
                 "[pipeline big]\nsource = file:%s\n"
                 "sink = tcp-listen:127.0.0.1:%u\n",
                 file, port);
    h_expect_log(&w, "listening on", WAIT);
    h_expect_fetch(&w, port, WAIT, 64 * MiB, hex, WAIT);
    base = h_status_kib(w.pid, "VmRSS");
    assert_true(base > 0);

    connect_all(fds, NONREADERS, port);
    assert_int_equal(wait_all_answered(fds, NONREADERS), NONREADERS);
    held = h_status_kib(w.pid, "VmRSS");
    print_message("rss: idle %ld KiB, %d clients not reading %ld KiB\n", base,
                  NONREADERS, held);
    /* At most 64 KiB of weir's memory per client, whatever the size. */
    assert_true(held - base <= (long)(NONREADERS * 64));

    /* Some of them read now, and get all of it. */
    for (int i = 0; i < NONREADERS; i++) {
        if (i % 100 == 0)
            expect_whole(fds[i], 64 * MiB, hex);
        close(fds[i]);
    }
    h_expect_exit(&w, 0, true, WAIT);
}

static void test_nonreaders_leave_the_pool_to_others(void **state)
{
    static int fds[NONREADERS];
    char file[256], out[256], hex[65], sent[65], got[65];
    struct h_weir w;
    uint16_t serve = h_free_port(false), ingest = h_free_port(false);
    uint64_t size = 0, seed = 9;
    uint8_t *data = malloc(65 * MiB);
    struct sha256 sh;
    long base, held, after;
    int healthy, served;

    (void)state;
    raise_nofile(4 * NONREADERS);
    h_path(file, sizeof(file), "shout.bin");
    h_path(out, sizeof(out), "ingested.bin");
    h_make_file(file, 64 * MiB, 5, hex);
    assert_non_null(data);
    h_fill(data, 65 * MiB, &seed);
    sha256_init(&sh);
    sha256_update(&sh, data, 65 * MiB);
    sha256_hex(&sh, sent);
    h_start_conf(&w, "budget", H_CONF_VERBOSE | H_CONF_FRESH_LOG,
                 "[daemon]\nworkers = 2\npool_size = 32MiB\n"
                 "[pipeline shout]\nsource = file:%s\n"
                 "transform = uppercase\n"
                 "sink = tcp-listen:127.0.0.1:%u\n"
                 "[pipeline ingest]\nsource = tcp-listen:127.0.0.1:%u\n"
                 "sink = file:%s\n",
                 file, serve, ingest, out);
    h_expect_log_count(&w, "listening on", 2, WAIT);
    base = h_status_kib(w.pid, "VmRSS");

    /* The healthy stream runs first; then the crowd that reads nothing. */
    healthy = h_connect(false, ingest, NULL, WAIT);
    assert_true(healthy >= 0);
    assert_true(h_write_all(healthy, data, 1 * MiB));
    connect_all(fds, NONREADERS, serve);
    served = wait_all_answered(fds, NONREADERS);
    h_expect_log(&w, "refused client", WAIT);
    held = h_status_kib(w.pid, "VmRSS");
    print_message("rss: idle %ld KiB, %d streams held %ld KiB\n", base, served,
                  held);
    /* The pool promised them only what it has: some were refused. */
    assert_true(served > 0 && served < NONREADERS);
    /* The formula's worst case: every worker's pool, and the clients'
     * bookkeeping (64 KiB each is generous), over the idle size. */
    assert_true(held - base <=
                (long)(2 * 32 * 1024 + NONREADERS * 64) * SHADOW);

    /* The healthy stream goes on and delivers every byte. */
    assert_true(h_write_all(healthy, data + 1 * MiB, 64 * MiB));
    free(data);
    shutdown(healthy, SHUT_WR);
    assert_int_equal(h_drain(healthy, NULL, UINT64_MAX, WAIT), 0);
    close(healthy);
    h_expect_log(&w, "pipeline ingest: sink", WAIT);
    assert_true(h_file_sha(out, got, &size));
    assert_int_equal(size, 65 * MiB);
    assert_string_equal(got, sent);

    /* The refusals are told once a second at most, not once a client. */
    {
        char *log = h_slurp(w.log);

        assert_non_null(log);
        assert_int_equal(h_count(log, "No buffer space"), 0);
        assert_true(h_count(log, "refused client") < 100);
        free(log);
    }

    /* After they left, idle buffers go back: near the idle size again. */
    for (int i = 0; i < NONREADERS; i++)
        close(fds[i]);
    after = wait_rss_at_most(w.pid, base + AFTER_KIB);
    print_message("rss after they left: %ld KiB\n", after);
#if !defined(__SANITIZE_THREAD__)
    /* ThreadSanitizer keeps the shadow of the pages weir gives back, so
     * only the other builds can see the RSS come down. */
    assert_true(after <= base + AFTER_KIB);
#endif
    h_expect_exit(&w, 0, true, WAIT);
}

#define MANY      10000 /* a multiple of 500 */
#define MANY_SIZE (64u * 1024u)

struct many {
    int fd;
    uint32_t got;
    bool bad;
};

static void test_ten_thousand_clients(void **state)
{
    static struct many cl[MANY];
    static int fds[MANY];
    char file[256], hex[65];
    uint8_t *want, buf[16384];
    struct h_weir w;
    uint16_t port = h_free_port(false);
    int ep, left = MANY;
    long base, held;
    int64_t end;
    FILE *f;

    (void)state;
    /* The clients here, and one fd per client in weir (the served file's
     * fd is shared): within a hard limit of 20000, which only a
     * privileged process could raise. */
    raise_nofile(MANY + 2000);
    h_path(file, sizeof(file), "many.bin");
    h_make_file(file, MANY_SIZE, 13, hex);
    want = malloc(MANY_SIZE);
    assert_non_null(want);
    f = fopen(file, "rb");
    assert_non_null(f);
    assert_int_equal(fread(want, 1, MANY_SIZE, f), MANY_SIZE);
    fclose(f);
    h_start_conf(&w, "many", H_CONF_FRESH_LOG,
                 "[pipeline many]\nsource = file:%s\n"
                 "sink = tcp-listen:127.0.0.1:%u\n",
                 file, port);
    h_expect_log(&w, "listening on", WAIT);
    h_expect_fetch(&w, port, WAIT, MANY_SIZE, hex, WAIT);
    base = h_status_kib(w.pid, "VmRSS");

    /* All of them connected at once, each served before any reads. They
     * connect 500 at a time, each batch answered before the next, so
     * that no SYN waits out a retry behind a full listen queue. */
    for (int i = 0; i < MANY; i += 500) {
        connect_all(fds + i, 500, port);
        assert_int_equal(wait_all_answered(fds + i, 500), 500);
    }
    held = h_status_kib(w.pid, "VmRSS");
    print_message("rss: idle %ld KiB, %d clients %ld KiB\n", base, MANY, held);
    assert_true(held - base <= (long)(MANY * 64));

    /* Then every byte of every one, compared. */
    ep = epoll_create1(EPOLL_CLOEXEC);
    assert_true(ep >= 0);
    for (int i = 0; i < MANY; i++) {
        struct epoll_event ev = {.events = EPOLLIN | EPOLLRDHUP,
                                 .data.u32 = (uint32_t)i};

        cl[i] = (struct many){.fd = fds[i]};
        assert_int_equal(epoll_ctl(ep, EPOLL_CTL_ADD, fds[i], &ev), 0);
    }
    end = h_now_ms() + 6 * WAIT;
    while (left > 0 && h_now_ms() < end) {
        struct epoll_event evs[256];
        int k = epoll_wait(ep, evs, 256, 1000);

        for (int j = 0; j < k; j++) {
            struct many *c = &cl[evs[j].data.u32];
            ssize_t n;

            if (c->fd < 0)
                continue;
            while ((n = recv(c->fd, buf, sizeof(buf), 0)) > 0) {
                if (c->got + (size_t)n > MANY_SIZE ||
                    memcmp(buf, want + c->got, (size_t)n) != 0)
                    c->bad = true;
                c->got += (uint32_t)n;
            }
            if (n == 0 || (n < 0 && errno != EAGAIN)) {
                close(c->fd);
                c->fd = -1;
                left--;
            }
        }
    }
    close(ep);
    for (int i = 0; i < MANY; i++) {
        if (cl[i].fd >= 0)
            close(cl[i].fd);
        if (cl[i].bad || cl[i].got != MANY_SIZE)
            fail_msg("client %d: %u bytes%s", i, cl[i].got,
                     cl[i].bad ? ", wrong ones" : "");
    }
    free(want);
    h_expect_exit(&w, 0, true, WAIT);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_teardown(test_nonreaders_of_a_big_file_cost_little,
                                  h_teardown),
        cmocka_unit_test_teardown(test_nonreaders_leave_the_pool_to_others,
                                  h_teardown),
        cmocka_unit_test_teardown(test_ten_thousand_clients, h_teardown),
    };
    int rc;

    if (h_begin("scale") != 0)
        return 1;
    rc = cmocka_run_group_tests(tests, NULL, NULL);
    h_end();
    return rc;
}
