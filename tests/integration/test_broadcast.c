/*
 * test_broadcast.c - a followed file into a tcp-listen sink: every client
 * receives what was appended from the moment it joined, and exactly that
 * (its bytes are the file's tail, starting no earlier than the file's size
 * when it connected); a client that stops reading meets on_full: evicted
 * with a log line under disconnect, dropped for under drop-oldest and
 * drop-newest, while a client that keeps reading receives every byte.
 * Two hundred clients of one broadcast each get exactly what followed
 * their joining; a block client that holds the source back is warned
 * about. A tcp source that closes is connected again, and a client that
 * came while it was down gets the new upstream's bytes. Clients joining a
 * gzip or zstd broadcast at different times each decode their own output
 * whole, to exactly the text appended after they joined. A FIFO source
 * (fifo=yes) is a broadcast too: two clients each get every byte a
 * writer puts in after they joined, not a share of them.
 */
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "harness.h"

#define WAIT                                                                   \
    (getenv("TEST_WAIT") ? 5000 : 60000) /* ms: generous for sanitizer builds  \
                                          */
/* One append of the slow-client tests: one read of the followed file
 * (chunk_size), so each poll hands the clients one chunk. */
#define BLOCK (256u << 10)
#define TOTAL (12u << 20) /* appended in those tests */

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

static void start_x(struct h_weir *w, const char *name, const char *file,
                    uint16_t port, const char *sink_opts, const char *extra)
{
    char ready[64];

    h_start_conf(w, name, H_CONF_FRESH_LOG,
                 "[daemon]\nworkers = 2\nlog_level = debug\n"
                 "drain_timeout = 1s\n\n"
                 "[pipeline live]\nsource = file:%s\nfollow = yes\n"
                 "sink = tcp-listen:127.0.0.1:%u%s\n%s",
                 file, port, sink_opts, extra);
    snprintf(ready, sizeof(ready), "listening on 127.0.0.1:%u", port);
    h_expect_log(w, ready, WAIT);
}

static void start(struct h_weir *w, const char *name, const char *file,
                  uint16_t port, const char *sink_opts)
{
    start_x(w, name, file, port, sink_opts, "");
}

static void test_clients_get_what_follows_their_joining(void **state)
{
    uint16_t port = h_free_port(false);
    char file[600];
    struct client wc, a, b;
    struct feed f;
    struct h_weir w;

    (void)state;
    h_path(file, sizeof(file), "join.txt");
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
    h_expect_exit(&w, 0, true, WAIT);
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
    h_path(file, flen, name);
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
    h_expect_log(&w, "evicted client", WAIT);
    /* The evicted client's connection ends after what it had queued. */
    pump(&slow, 0);
    close(slow.fd);
    close(fast.fd);
    free(slow.got);
    free(fast.got);
    h_expect_exit(&w, 0, true, WAIT);
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
    h_expect_exit(&w, 0, true, WAIT);
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

static unsigned log_count(const struct h_weir *w, const char *needle)
{
    char *t = h_slurp(w->log);
    unsigned n = t ? h_count(t, needle) : 0;

    free(t);
    return n;
}

static void expect_count(const struct h_weir *w, const char *needle, unsigned n)
{
    unsigned got = log_count(w, needle);

    if (got != n) {
        fprintf(stderr, "%u lines '%s', want %u\n", got, needle, n);
        h_show_log(w);
        fail();
    }
}

/* A client that connected; f (may be NULL) gives the file's size then.
 * The daemon says when it is a branch ("is a branch of the broadcast"). */
static void connect_rcvbuf(struct client *c, const struct feed *f,
                           uint16_t port, int rcvbuf)
{
    struct sockaddr_storage ss;
    socklen_t len = h_addr(&ss, false, port);

    memset(c, 0, sizeof(*c));
    c->fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    assert_true(c->fd >= 0);
    if (rcvbuf)
        setsockopt(c->fd, SOL_SOCKET, SO_RCVBUF, &rcvbuf, sizeof(rcvbuf));
    c->joined = f ? f->size : 0;
    assert_int_equal(connect(c->fd, (struct sockaddr *)&ss, len), 0);
}

static void connect_client(struct client *c, const struct feed *f,
                           uint16_t port)
{
    connect_rcvbuf(c, f, port, 0);
}

/* Reads whatever the n clients have, waiting at most ms for any. */
static void pump_all(struct client *cs, unsigned n, int ms)
{
    struct pollfd *pf = calloc(n, sizeof(*pf));

    assert_non_null(pf);
    for (unsigned i = 0; i < n; i++)
        pf[i] =
            (struct pollfd){.fd = cs[i].eof ? -1 : cs[i].fd, .events = POLLIN};
    if (poll(pf, n, ms) > 0)
        for (unsigned i = 0; i < n; i++)
            if (pf[i].revents)
                pump(&cs[i], 0);
    free(pf);
}

static void read_all_to(struct client *cs, unsigned n, const char *marker)
{
    int64_t end = h_now_ms() + WAIT;
    unsigned done = 0;

    while (h_now_ms() < end) {
        done = 0;
        for (unsigned i = 0; i < n; i++)
            done += ends_with(&cs[i], marker);
        if (done == n)
            return;
        pump_all(cs, n, 50);
    }
    fprintf(stderr, "%u of %u clients got '%s'\n", done, n, marker);
    fail();
}

/* got (len bytes) is exactly the file from byte `from` to its end. */
static void expect_from(const char *got, size_t len, int64_t from,
                        const char *file)
{
    char *all = h_slurp(file);
    size_t size = strlen(all);
    char want[65], have[65];

    assert_true(from >= 0 && (size_t)from <= size);
    h_sha_hex(all + from, size - (size_t)from, want);
    h_sha_hex(got, len, have);
    if (len != size - (size_t)from || strcmp(want, have) != 0) {
        fprintf(stderr,
                "got %zu bytes (sha256 %s), want %zu from byte %lld "
                "(sha256 %s)\n",
                len, have, size - (size_t)from, (long long)from, want);
        fail();
    }
    free(all);
}

/* A burst far past every queue (16 MiB appended at once, a 256 KiB mark)
 * with on_full=disconnect: the clients that keep up are paced through it
 * and get every byte; only the one that reads nothing is evicted. Before,
 * the burst filled every queue at once and every client was evicted. */
static void test_disconnect_paces_a_burst(void **state)
{
    enum { HEALTHY = 3, BURST = 16 << 20 };
    uint16_t port = h_free_port(false);
    struct client ok[HEALTHY], slow;
    char file[600], *burst = malloc(BURST);
    struct feed f;
    struct h_weir w;
    char *t;

    (void)state;
    assert_non_null(burst);
    h_path(file, sizeof(file), "burst.txt");
    f.fd = open(file, O_WRONLY | O_CREAT | O_TRUNC | O_APPEND, 0644);
    f.size = 0;
    assert_true(f.fd >= 0);
    start(&w, "burst", file, port,
          ",on_full=disconnect,high_water_mark=256KiB");
    for (int i = 0; i < HEALTHY; i++) {
        char name[16];

        snprintf(name, sizeof(name), "ok%d", i);
        join(&ok[i], &f, port, 0, name);
        sync_on(&ok[i], &f);
    }
    join(&slow, &f, port, 4096, "slow");
    for (size_t i = 0; i < BURST; i += 64) {
        snprintf(burst + i, 65, "%-63zu", i);
        burst[i + 63] = '\n';
    }
    append(&f, burst, BURST);
    appendf(&f, "END\n");
    read_all_to(ok, HEALTHY, "END\n");
    for (int i = 0; i < HEALTHY; i++) {
        expect_tail(&ok[i], file);
        assert_true(ok[i].len > (size_t)BURST);
        close(ok[i].fd);
        free(ok[i].got);
    }
    h_expect_log(&w, "evicted client", WAIT);
    close(slow.fd);
    free(slow.got);
    h_expect_exit(&w, 0, true, WAIT);
    t = h_slurp(w.log);
    assert_int_equal(h_count(t, "evicted client"), 1);
    free(t);
    close(f.fd);
    free(burst);
}

#define NCLIENTS 200u
#define WAVE     (NCLIENTS / 2)

/* Two waves of a hundred clients; each wave's clients are all branches
 * before anything is appended for them, so each client's bytes are
 * exactly the file from where it was when that client connected. */
static void
test_two_hundred_clients_get_what_follows_their_joining(void **state)
{
    uint16_t port = h_free_port(false);
    struct client *cs = calloc(NCLIENTS, sizeof(*cs));
    char file[600];
    struct feed f;
    struct h_weir w;

    (void)state;
    assert_non_null(cs);
    h_path(file, sizeof(file), "many.txt");
    f.fd = open(file, O_WRONLY | O_CREAT | O_TRUNC | O_APPEND, 0644);
    f.size = 0;
    assert_true(f.fd >= 0);
    appendf(&f, "before anyone\n"); /* the broadcast starts past it */
    start(&w, "many", file, port, "");
    for (unsigned wave = 0; wave < 2; wave++) {
        for (unsigned i = wave * WAVE; i < (wave + 1) * WAVE; i++)
            connect_client(&cs[i], &f, port);
        h_expect_log_count(&w, "is a branch of the broadcast",
                           (wave + 1) * WAVE, WAIT);
        for (unsigned k = 0; k < 200; k++) {
            appendf(&f, "wave %u line %u: the quick brown fox\n", wave, k);
            if (k % 50 == 0)
                pump_all(cs, (wave + 1) * WAVE, 0);
        }
        /* Everything is out before the next wave connects. */
        appendf(&f, "MARK %u\n", wave);
        read_all_to(cs, (wave + 1) * WAVE, wave ? "MARK 1\n" : "MARK 0\n");
    }
    appendf(&f, "END\n");
    read_all_to(cs, NCLIENTS, "END\n");
    for (unsigned i = 0; i < NCLIENTS; i++) {
        expect_from(cs[i].got, cs[i].len, cs[i].joined, file);
        close(cs[i].fd);
        free(cs[i].got);
    }
    free(cs);
    close(f.fd);
    h_expect_exit(&w, 0, true, WAIT);
    expect_count(&w, "refused 127.0.0.1", 0);
}

/* A block client that stops reading holds the source back: after 5 s it
 * is named in a warning line; once it leaves, the other client gets
 * everything. */
static void test_block_client_holding_the_source_is_warned_about(void **state)
{
    uint16_t port = h_free_port(false);
    char file[600], *block = malloc(BLOCK);
    struct client fast, slow;
    struct feed f;
    struct h_weir w;

    (void)state;
    assert_non_null(block);
    h_path(file, sizeof(file), "held.txt");
    f.fd = open(file, O_WRONLY | O_CREAT | O_TRUNC | O_APPEND, 0644);
    f.size = 0;
    assert_true(f.fd >= 0);
    start(&w, "held", file, port, ",high_water_mark=64KiB");
    connect_client(&fast, &f, port);
    connect_rcvbuf(&slow, &f, port, 4096);
    h_expect_log_count(&w, "is a branch of the broadcast", 2, WAIT);
    /* More than the slow client's socket buffers take (several MiB on
     * loopback, whatever its receive buffer). */
    for (unsigned i = 0; i * BLOCK < TOTAL; i++) {
        memset(block, 'a' + (int)(i % 26), BLOCK);
        block[BLOCK - 1] = '\n';
        append(&f, block, BLOCK);
        pump(&fast, 0);
    }
    for (int64_t end = h_now_ms() + WAIT;
         !log_count(&w, "has held the source back") && h_now_ms() < end;)
        pump(&fast, 100);
    assert_int_equal(log_count(&w, "has held the source back"), 1);
    close(slow.fd);
    free(slow.got);
    appendf(&f, "END\n");
    read_to_end(&fast, "END\n");
    expect_from(fast.got, fast.len, fast.joined, file);
    close(fast.fd);
    free(fast.got);
    free(block);
    close(f.fd);
    h_expect_exit(&w, 0, true, WAIT);
}

/* What an upstream sends: n distinct lines and an end line. */
static char *upstream_text(const char *tag, unsigned n)
{
    size_t cap = (size_t)n * 48 + 64, len = 0;
    char *t = malloc(cap);

    assert_non_null(t);
    for (unsigned k = 0; k < n; k++)
        len += (size_t)snprintf(t + len, cap - len, "%s line %u\n", tag, k);
    snprintf(t + len, cap - len, "%s END\n", tag);
    return t;
}

static void read_to_eof(struct client *c)
{
    int64_t end = h_now_ms() + WAIT;

    while (!c->eof && h_now_ms() < end)
        pump(c, 50);
    assert_true(c->eof);
}

/*
 * A tcp source: down at start (the first client is held, not refused),
 * then up (the held client gets the upstream's bytes from its first one),
 * then closed by its peer (the client gets a clean end), down again while
 * a second client connects, then a new upstream whose bytes the second
 * client gets, exactly. One warning per outage, not per attempt.
 */
static void test_tcp_source_restarts_and_held_clients_join(void **state)
{
    uint16_t port = h_free_port(false), up = h_free_port(false);
    char *u1 = upstream_text("u1", 300), *u2 = upstream_text("u2", 300);
    struct client a, b;
    struct h_weir w;
    int lfd, ufd;

    (void)state;
    h_start_conf(&w, "restart", H_CONF_FRESH_LOG,
                 "log_level = debug\n\n[pipeline live]\n"
                 "source = tcp:127.0.0.1:%u\n"
                 "sink = tcp-listen:127.0.0.1:%u\n",
                 up, port);
    h_expect_log(&w, "cannot connect to source", WAIT);
    connect_client(&a, NULL, port);
    h_expect_log_count(&w, "held until the source is up", 1, WAIT);
    lfd = h_listen(false, up);
    assert_true(lfd >= 0);
    ufd = h_accept(lfd, WAIT);
    assert_true(ufd >= 0);
    h_expect_log_count(&w, "is a branch of the broadcast", 1, WAIT);
    assert_true(h_write_all(ufd, u1, strlen(u1)));
    read_to_end(&a, "u1 END\n");
    assert_int_equal(a.len, strlen(u1));
    assert_memory_equal(a.got, u1, a.len);
    /* The upstream leaves; the client's stream ends cleanly. */
    close(ufd);
    close(lfd);
    read_to_eof(&a);
    assert_int_equal(a.len, strlen(u1));
    h_expect_log(&w, "closed the connection; reconnecting", WAIT);
    connect_client(&b, NULL, port);
    h_expect_log_count(&w, "held until the source is up", 2, WAIT);
    lfd = h_listen(false, up);
    assert_true(lfd >= 0);
    ufd = h_accept(lfd, WAIT);
    assert_true(ufd >= 0);
    h_expect_log_count(&w, "is a branch of the broadcast", 2, WAIT);
    assert_true(h_write_all(ufd, u2, strlen(u2)));
    read_to_end(&b, "u2 END\n");
    assert_int_equal(b.len, strlen(u2));
    assert_memory_equal(b.got, u2, b.len);
    close(b.fd);
    h_expect_exit(&w, 0, true, WAIT);
    close(ufd);
    close(lfd);
    close(a.fd);
    expect_count(&w, "cannot connect to source", 1);
    expect_count(&w, "reconnecting", 1);
    expect_count(&w, "is up again", 2);
    expect_count(&w, "refused 127.0.0.1", 0);
    free(a.got);
    free(b.got);
    free(u1);
    free(u2);
}

/* A stop while the source is down: the held client is closed (it got
 * nothing) and weir exits cleanly. */
static void test_stop_closes_held_clients(void **state)
{
    uint16_t port = h_free_port(false), up = h_free_port(false);
    struct client a;
    struct h_weir w;

    (void)state;
    h_start_conf(&w, "held-stop", H_CONF_FRESH_LOG,
                 "log_level = debug\n\n[pipeline live]\n"
                 "source = tcp:127.0.0.1:%u\n"
                 "sink = tcp-listen:127.0.0.1:%u\n",
                 up, port);
    h_expect_log(&w, "cannot connect to source", WAIT);
    connect_client(&a, NULL, port);
    h_expect_log_count(&w, "held until the source is up", 1, WAIT);
    h_expect_exit(&w, 0, true, WAIT);
    read_to_eof(&a);
    assert_int_equal(a.len, 0);
    expect_count(&w, "it was waiting for the source", 1);
    close(a.fd);
    free(a.got);
}

/* c's bytes through `cmd` (gzip -dc, zstd -dc): the decoded text, and the
 * command's exit status. */
static char *decode(const struct client *c, const char *cmd, size_t *len,
                    int *status)
{
    char in[600], line[800];
    size_t cap = 1 << 16;
    char *out = malloc(cap);
    FILE *p;
    int fd;

    assert_non_null(out);
    h_path(in, sizeof(in), "decode.in");
    fd = open(in, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    assert_true(fd >= 0);
    assert_int_equal(write(fd, c->got, c->len), (ssize_t)c->len);
    close(fd);
    snprintf(line, sizeof(line), "%s < %s 2>/dev/null", cmd, in);
    p = popen(line, "r");
    assert_non_null(p);
    *len = 0;
    for (;;) {
        size_t n;

        if (cap - *len < 4096) {
            cap *= 2;
            out = realloc(out, cap);
            assert_non_null(out);
        }
        n = fread(out + *len, 1, cap - *len - 1, p);
        if (n == 0)
            break;
        *len += n;
    }
    out[*len] = 0;
    *status = pclose(p);
    return out;
}

/* Reads c until what it decodes so far holds `text` (the idle sync sends
 * a quiet source's compressed tail out within a second or so). */
static void decode_until(struct client *c, const char *cmd, const char *text)
{
    int64_t end = h_now_ms() + WAIT;
    size_t len;
    int status;

    for (;;) {
        char *out = decode(c, cmd, &len, &status);
        bool found = strstr(out, text) != NULL;

        free(out);
        if (found)
            return;
        if (h_now_ms() > end || c->eof)
            break;
        pump(c, 200);
    }
    fprintf(stderr, "'%s' not in what the client decodes (%zu bytes)\n", text,
            c->len);
    fail();
}

static void compressed_case(const char *name, const char *xform,
                            const char *cmd)
{
    uint16_t port = h_free_port(false);
    char file[600], extra[64];
    struct client a, b, c;
    struct feed f;
    struct h_weir w;
    size_t len;
    int status;
    char *out;

    h_path(file, sizeof(file), name);
    strcat(file, ".txt");
    f.fd = open(file, O_WRONLY | O_CREAT | O_TRUNC | O_APPEND, 0644);
    f.size = 0;
    assert_true(f.fd >= 0);
    appendf(&f, "before anyone\n");
    snprintf(extra, sizeof(extra), "transform = %s\n", xform);
    start_x(&w, name, file, port, "", extra);
    connect_client(&a, &f, port);
    h_expect_log_count(&w, "is a branch of the broadcast", 1, WAIT);
    for (unsigned k = 0; k < 300; k++)
        appendf(&f, "after a joined, line %u\n", k);
    /* a decodes all of it: the daemon has read and sent it. */
    decode_until(&a, cmd, "line 299\n");
    connect_client(&b, &f, port);
    h_expect_log_count(&w, "is a branch of the broadcast", 2, WAIT);
    for (unsigned k = 0; k < 300; k++)
        appendf(&f, "after b joined, line %u\n", k);
    /* c joins while lines keep coming, so the compressor is likely in
     * the middle of a member or frame: its join waits for a sync point. */
    for (unsigned k = 0; k < 3000; k++) {
        if (k == 1000)
            connect_client(&c, &f, port);
        appendf(&f, "line %u of the flow\n", k);
        if (k % 100 == 99) {
            pump(&a, 0), pump(&b, 0);
            if (k > 1000)
                pump(&c, 0);
            h_sleep_ms(10);
        }
    }
    h_expect_log_count(&w, "is a branch of the broadcast", 3, WAIT);
    appendf(&f, "END\n");
    decode_until(&a, cmd, "END\n");
    decode_until(&b, cmd, "END\n");
    decode_until(&c, cmd, "END\n");
    /* The stop ends each client's compressed stream properly. */
    h_expect_exit(&w, 0, true, WAIT);
    read_to_eof(&a);
    read_to_eof(&b);
    read_to_eof(&c);
    /* c's text: a tail of the file (where it starts depends on how much
     * of the flow the daemon had read when c's join took effect), decoded
     * whole from c's first byte. */
    out = decode(&c, cmd, &len, &status);
    assert_int_equal(status, 0);
    {
        char *all = h_slurp(file);
        size_t size = strlen(all);

        assert_true(len > 0 && len <= size);
        assert_memory_equal(out, all + size - len, len);
        free(all);
    }
    free(out);
    out = decode(&a, cmd, &len, &status);
    assert_int_equal(status, 0);
    expect_from(out, len, a.joined, file);
    free(out);
    out = decode(&b, cmd, &len, &status);
    assert_int_equal(status, 0);
    expect_from(out, len, b.joined, file);
    assert_null(strstr(out, "after a joined"));
    free(out);
    close(a.fd);
    close(b.fd);
    close(c.fd);
    free(a.got);
    free(b.got);
    free(c.got);
    close(f.fd);
}

static void test_gzip_joins_decode_whole(void **state)
{
    (void)state;
    compressed_case("gz", "gzip:1", "gzip -dc");
}

static void test_zstd_joins_decode_whole(void **state)
{
    (void)state;
    compressed_case("zst", "zstd:1", "zstd -q -dc");
}

/* Opened once per client, a FIFO would give each byte to one of them. */
static void test_fifo_source_is_broadcast(void **state)
{
    static const char end[] = "fifo end\n";
    uint16_t port = h_free_port(false);
    char fifo[300], ready[64], *text;
    struct client a, b;
    struct feed f = {0};
    size_t len = 0, cap = 256u << 10;
    struct h_weir w;

    (void)state;
    h_path(fifo, sizeof(fifo), "bc.fifo");
    unlink(fifo);
    assert_int_equal(mkfifo(fifo, 0600), 0);
    h_start_conf(&w, "bcfifo", H_CONF_FRESH_LOG,
                 "[pipeline live]\nsource = file:%s,fifo=yes\n"
                 "sink = tcp-listen:127.0.0.1:%u\n",
                 fifo, port);
    snprintf(ready, sizeof(ready), "listening on 127.0.0.1:%u", port);
    h_expect_log(&w, ready, WAIT);
    /* A broadcast holds the FIFO open from its start: without a reader
     * there the open fails (ENXIO) rather than waits. The listener may
     * say it listens a moment before the stream has opened the FIFO (a
     * start under a sanitizer): ENXIO is tried again, for WAIT at most.
     * Writes block. */
    for (int64_t end = h_now_ms() + WAIT;;) {
        f.fd = open(fifo, O_WRONLY | O_NONBLOCK | O_CLOEXEC);
        if (f.fd >= 0 || errno != ENXIO || h_now_ms() > end)
            break;
        h_sleep_ms(5);
    }
    assert_true(f.fd >= 0);
    assert_int_equal(fcntl(f.fd, F_SETFL, 0), 0);
    join(&a, &f, port, 0, "a");
    join(&b, &f, port, 0, "b");
    sync_on(&a, &f);
    sync_on(&b, &f);
    text = malloc(cap);
    assert_non_null(text);
    for (unsigned i = 0; len + 64 < cap - sizeof(end); i++)
        len +=
            (size_t)snprintf(text + len, cap - len, "line %u of the fifo\n", i);
    memcpy(text + len, end, sizeof(end));
    len += sizeof(end) - 1;
    append(&f, text, len);
    read_to_end(&a, end);
    read_to_end(&b, end);
    assert_true(a.len >= len && b.len >= len);
    assert_memory_equal(a.got + a.len - len, text, len);
    assert_memory_equal(b.got + b.len - len, text, len);
    close(f.fd);
    close(a.fd);
    close(b.fd);
    free(a.got);
    free(b.got);
    free(text);
    h_expect_exit(&w, 0, true, WAIT);
    unlink(fifo);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_teardown(test_clients_get_what_follows_their_joining,
                                  h_teardown),
        cmocka_unit_test_teardown(test_disconnect_evicts_the_stalled_client,
                                  h_teardown),
        cmocka_unit_test_teardown(test_disconnect_paces_a_burst, h_teardown),
        cmocka_unit_test_teardown(test_drop_oldest_spares_the_fast_client,
                                  h_teardown),
        cmocka_unit_test_teardown(test_drop_newest_spares_the_fast_client,
                                  h_teardown),
        cmocka_unit_test_teardown(
            test_two_hundred_clients_get_what_follows_their_joining,
            h_teardown),
        cmocka_unit_test_teardown(
            test_block_client_holding_the_source_is_warned_about, h_teardown),
        cmocka_unit_test_teardown(
            test_tcp_source_restarts_and_held_clients_join, h_teardown),
        cmocka_unit_test_teardown(test_stop_closes_held_clients, h_teardown),
        cmocka_unit_test_teardown(test_gzip_joins_decode_whole, h_teardown),
        cmocka_unit_test_teardown(test_zstd_joins_decode_whole, h_teardown),
        cmocka_unit_test_teardown(test_fifo_source_is_broadcast, h_teardown),
    };
    int rc;

    if (h_begin("bc") != 0)
        return 1;
    rc = cmocka_run_group_tests(tests, NULL, NULL);
    h_end();
    return rc;
}
