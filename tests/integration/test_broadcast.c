/*
 * test_broadcast.c - a followed file into a tcp-listen sink: every client
 * receives what was appended from the moment it joined, and exactly that
 * (its bytes are the file's tail, starting no earlier than the file's size
 * when it connected); a client that stops reading meets on_full: evicted
 * with a log line under disconnect, dropped for under drop-oldest and
 * drop-newest, while a client that keeps reading receives every byte.
 */
#include <ftw.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "harness.h"

#define WAIT                                                                   \
    (getenv("TEST_WAIT") ? 5000 : 60000) /* ms: generous for sanitizer builds  \
                                          */
#define BLOCK (128u << 10) /* one append of the slow-client tests */
#define TOTAL (12u << 20)  /* appended in those tests */

static char dir[] = "/tmp/weir-bc-XXXXXX";

static void path(char *out, size_t len, const char *name)
{
    snprintf(out, len, "%s/%s", dir, name);
}

static void show_log(const struct h_weir *w)
{
    char *t = h_slurp(w->log);

    fprintf(stderr, "log of weir:\n%s\n", t ? t : "(none)");
    free(t);
}

/* A client: what it received, kept in memory. */
struct client {
    int fd;
    int64_t joined; /* the file's size when it connected */
    char *got;
    size_t len, cap;
    bool eof;
};

/* Reads what is there now, waiting at most ms for the first byte. */
static void pump(struct client *c, int ms)
{
    struct pollfd pf = {.fd = c->fd, .events = POLLIN};

    while (!c->eof && poll(&pf, 1, ms) == 1) {
        ssize_t n;

        if (c->cap - c->len < 65536) {
            c->cap = c->cap ? c->cap * 2 : 1 << 20;
            c->got = realloc(c->got, c->cap);
            assert_non_null(c->got);
        }
        n = read(c->fd, c->got + c->len, c->cap - c->len);
        if (n <= 0) {
            c->eof = true;
            break;
        }
        c->len += (size_t)n;
        ms = 0;
    }
}

struct feed {
    int fd;
    int64_t size;
};

static void append(struct feed *f, const char *data, size_t len)
{
    assert_int_equal(write(f->fd, data, len), (ssize_t)len);
    f->size += (int64_t)len;
}

static void appendf(struct feed *f, const char *fmt, ...)
{
    char line[256];
    va_list ap;
    int n;

    va_start(ap, fmt);
    n = vsnprintf(line, sizeof(line), fmt, ap);
    va_end(ap);
    append(f, line, (size_t)n);
}

static bool ends_with(const struct client *c, const char *s)
{
    size_t n = strlen(s);

    return c->len >= n && memcmp(c->got + c->len - n, s, n) == 0;
}

/* Waits until c has received a fresh line: the daemon has read the file
 * to its end, so a client that connects next sees nothing older. */
static void sync_on(struct client *c, struct feed *f)
{
    static unsigned n;
    char line[64];
    int64_t end = h_now_ms() + WAIT;

    snprintf(line, sizeof(line), "sync %u\n", n++);
    appendf(f, "%s", line);
    while (!ends_with(c, line) && !c->eof && h_now_ms() < end)
        pump(c, 20);
    assert_true(ends_with(c, line));
}

/* A client that has received something; probe lines go to the file
 * until then, since its joining completes on the daemon's worker a
 * moment after the connect returns. */
static void join(struct client *c, struct feed *f, uint16_t port, int rcvbuf,
                 const char *name)
{
    struct sockaddr_storage ss;
    socklen_t len = h_addr(&ss, false, port);
    int64_t end = h_now_ms() + WAIT;

    memset(c, 0, sizeof(*c));
    c->fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    assert_true(c->fd >= 0);
    if (rcvbuf)
        setsockopt(c->fd, SOL_SOCKET, SO_RCVBUF, &rcvbuf, sizeof(rcvbuf));
    c->joined = f->size;
    assert_int_equal(connect(c->fd, (struct sockaddr *)&ss, len), 0);
    for (unsigned k = 0; c->len == 0 && h_now_ms() < end; k++) {
        appendf(f, "probe %s %u\n", name, k);
        pump(c, 20);
    }
    assert_true(c->len > 0);
}

/* c's bytes are the file's last c->len bytes, starting no earlier than
 * where the file ended when c connected. */
static void expect_tail(const struct client *c, const char *file)
{
    char *all = h_slurp(file);
    size_t size = strlen(all);

    assert_true(c->len <= size);
    assert_true((int64_t)(size - c->len) >= c->joined);
    assert_memory_equal(c->got, all + size - c->len, c->len);
    free(all);
}

/* Reads until c's bytes end with the end marker. */
static void read_to_end(struct client *c, const char *marker)
{
    int64_t end = h_now_ms() + WAIT;

    while (!ends_with(c, marker) && !c->eof && h_now_ms() < end)
        pump(c, 50);
    if (!ends_with(c, marker)) {
        fprintf(stderr, "got %zu bytes, eof %d, last: %.*s\n", c->len, c->eof,
                (int)(c->len < 200 ? c->len : 200),
                c->got + (c->len < 200 ? 0 : c->len - 200));
        fail();
    }
}

static void start(struct h_weir *w, const char *name, const char *file,
                  uint16_t port, const char *sink_opts)
{
    char conf[600], log[600], ready[64];

    path(conf, sizeof(conf), name);
    strcat(conf, ".conf");
    path(log, sizeof(log), name);
    strcat(log, ".weir");
    unlink(log);
    h_write_text(conf,
                 "[daemon]\nworkers = 2\nlog_level = debug\n\n"
                 "[pipeline live]\nsource = file:%s\nfollow = yes\n"
                 "sink = tcp-listen:127.0.0.1:%u%s\n",
                 file, port, sink_opts);
    h_spawn(w, (char *const[]){"weir", "-c", conf, NULL}, log);
    snprintf(ready, sizeof(ready), "listening on 127.0.0.1:%u", port);
    if (!h_wait_log(w->log, ready, WAIT))
        show_log(w), fail();
}

static void stop(struct h_weir *w)
{
    char *t;

    if (h_stop(w, WAIT) != 0)
        show_log(w), fail();
    t = h_slurp(w->log);
    if (strstr(t, "runtime error:") || strstr(t, "Sanitizer"))
        show_log(w), fail();
    free(t);
}

static void test_clients_get_what_follows_their_joining(void **state)
{
    uint16_t port = h_free_port(false);
    char file[600];
    struct client wc, a, b;
    struct feed f;
    struct h_weir w;

    (void)state;
    path(file, sizeof(file), "join.txt");
    f.fd = open(file, O_WRONLY | O_CREAT | O_TRUNC | O_APPEND, 0644);
    f.size = 0;
    assert_true(f.fd >= 0);
    appendf(&f, "before anyone\n");
    start(&w, "join", file, port, "");
    /* w is the first client: nothing to sync its joining on, so only its
     * tail is checked; a and b join once w has seen the file's end. */
    join(&wc, &f, port, 0, "w");
    wc.joined = 0;
    for (unsigned i = 0; i < 50; i++)
        appendf(&f, "w alone %u\n", i), pump(&wc, 0);
    sync_on(&wc, &f);
    join(&a, &f, port, 0, "a");
    for (unsigned i = 0; i < 100; i++)
        appendf(&f, "w and a %u\n", i), pump(&wc, 0), pump(&a, 0);
    sync_on(&a, &f);
    join(&b, &f, port, 0, "b");
    for (unsigned i = 0; i < 100; i++)
        appendf(&f, "all %u\n", i), pump(&wc, 0), pump(&a, 0), pump(&b, 0);
    appendf(&f, "END\n");
    read_to_end(&wc, "END\n");
    read_to_end(&a, "END\n");
    read_to_end(&b, "END\n");
    expect_tail(&wc, file);
    expect_tail(&a, file);
    expect_tail(&b, file);
    assert_true(wc.len > a.len && a.len > b.len);
    assert_non_null(memmem(wc.got, wc.len, "w alone 49\n", 11));
    assert_null(memmem(a.got, a.len, "w alone", 7));
    assert_non_null(memmem(a.got, a.len, "w and a 99\n", 11));
    assert_null(memmem(b.got, b.len, "w and a", 7));
    assert_non_null(memmem(b.got, b.len, "all 99\n", 7));
    close(wc.fd);
    free(wc.got);
    close(a.fd);
    close(b.fd);
    free(a.got);
    free(b.got);
    close(f.fd);
    stop(&w);
}

static bool tail_is(const struct client *c, const char *block)
{
    return c->len >= BLOCK &&
           memcmp(c->got + c->len - BLOCK, block, BLOCK) == 0;
}

/* A client that stops reading at once (a small receive buffer) and one
 * that reads everything appended before the next append; the file grows
 * by TOTAL bytes. Returns the stalled client (still open). */
static void slow_and_fast(const char *name, const char *policy,
                          struct h_weir *w, struct client *slow,
                          struct client *fast, char *file, size_t flen)
{
    uint16_t port = h_free_port(false);
    char opts[128], *block = malloc(BLOCK);
    struct feed f;

    if (!block)
        abort();
    path(file, flen, name);
    strcat(file, ".txt");
    f.fd = open(file, O_WRONLY | O_CREAT | O_TRUNC | O_APPEND, 0644);
    f.size = 0;
    assert_true(f.fd >= 0);
    snprintf(opts, sizeof(opts), ",on_full=%s,high_water_mark=64KiB", policy);
    start(w, name, file, port, opts);
    join(fast, &f, port, 0, "fast");
    fast->joined = 0; /* the first client: see join's test */
    sync_on(fast, &f);
    join(slow, &f, port, 4096, "slow");
    for (unsigned i = 0; i * BLOCK < TOTAL; i++) {
        int64_t end = h_now_ms() + WAIT;

        memset(block, 'a' + (int)(i % 26), BLOCK);
        snprintf(block, 32, "block %u ", i);
        block[strlen(block)] = ' ';
        block[BLOCK - 1] = '\n';
        append(&f, block, BLOCK);
        /* The fast client has everything before the next append. */
        while (!tail_is(fast, block) && !fast->eof && h_now_ms() < end)
            pump(fast, 50);
        assert_true(tail_is(fast, block));
    }
    appendf(&f, "END\n");
    read_to_end(fast, "END\n");
    expect_tail(fast, file);
    close(f.fd);
    free(block);
}

static void test_disconnect_evicts_the_stalled_client(void **state)
{
    struct client slow, fast;
    char file[600];
    struct h_weir w;

    (void)state;
    slow_and_fast("evict", "disconnect", &w, &slow, &fast, file, sizeof(file));
    if (!h_wait_log(w.log, "evicted client", WAIT))
        show_log(&w), fail();
    /* The evicted client's connection ends after what it had queued. */
    pump(&slow, 0);
    close(slow.fd);
    close(fast.fd);
    free(slow.got);
    free(fast.got);
    stop(&w);
    {
        char *t = h_slurp(w.log);

        assert_int_equal(h_count(t, "evicted client"), 1);
        free(t);
    }
}

/* The stalled client's counters: dropped > 0. */
static void drop_case(const char *name, const char *policy)
{
    struct client slow, fast;
    char file[600];
    struct h_weir w;
    char *t;

    slow_and_fast(name, policy, &w, &slow, &fast, file, sizeof(file));
    close(slow.fd);
    close(fast.fd);
    free(slow.got);
    free(fast.got);
    stop(&w);
    t = h_slurp(w.log);
    /* Nothing was evicted; the stalled client's line says it dropped. */
    assert_null(strstr(t, "evicted"));
    assert_non_null(strstr(t, "bytes delivered, "));
    {
        unsigned long long del, drop;
        unsigned with_drops = 0;

        for (const char *p = t; (p = strstr(p, "sink 127.0.0.1:")) != NULL; p++)
            if (sscanf(strchr(p, ' ') + 1,
                       "%*[^ ] %llu bytes delivered, "
                       "%llu dropped",
                       &del, &drop) == 2 &&
                drop > 0)
                with_drops++;
        assert_int_equal(with_drops, 1);
    }
    free(t);
}

static void test_drop_oldest_spares_the_fast_client(void **state)
{
    (void)state;
    drop_case("oldest", "drop-oldest");
}

static void test_drop_newest_spares_the_fast_client(void **state)
{
    (void)state;
    drop_case("newest", "drop-newest");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_teardown(test_clients_get_what_follows_their_joining,
                                  h_teardown),
        cmocka_unit_test_teardown(test_disconnect_evicts_the_stalled_client,
                                  h_teardown),
        cmocka_unit_test_teardown(test_drop_oldest_spares_the_fast_client,
                                  h_teardown),
        cmocka_unit_test_teardown(test_drop_newest_spares_the_fast_client,
                                  h_teardown),
    };
    int rc;

    /* The harness's helpers this file has no use for. */
    (void)h_send_file;
    (void)h_connect;
    (void)h_file_sha;
    (void)h_make_file;
    (void)h_drain;
    (void)h_listen;
    (void)h_accept;
    signal(SIGPIPE, SIG_IGN);
    if (getenv("TEST_FILTER"))
        cmocka_set_test_filter(getenv("TEST_FILTER"));
    if (!mkdtemp(dir)) {
        perror("mkdtemp");
        return 1;
    }
    rc = cmocka_run_group_tests(tests, NULL, NULL);
    h_rm_tree(dir);
    return rc;
}
