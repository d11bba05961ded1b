/*
 * test_transforms.c - transforms and fan-out in the real binary
 * (WEIR_BIN), judged by the system's own tools: gzip -dc, zstd -dc and
 * tr a-z A-Z give the expected bytes, compared with cmp. Tee: identical
 * copies; drop policies: delivered + dropped = produced per sink, read
 * from the counters weir prints; the memory bound: VmRSS from /proc while
 * a receiver reads about 1 MB/s.
 */
#include <inttypes.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>

#include <cmocka.h>

#include "harness.h"

#define TEXT  (6u << 20)  /* the text input */
#define BIG   (48u << 20) /* the input of the drop tests */
#define WAIT  60000       /* ms: generous for sanitizer builds */
#define CHUNK (256u << 10)

static char text[600], upper[600], big[600], big_hex[65];

/* Runs a shell command; its exit status. */
static int sh(const char *fmt, ...)
{
    char cmd[4096];
    va_list ap;
    int st;

    va_start(ap, fmt);
    vsnprintf(cmd, sizeof(cmd), fmt, ap);
    va_end(ap);
    st = system(cmd);
    if (st == -1 || !WIFEXITED(st))
        return -1;
    return WEXITSTATUS(st);
}

/* Text with upper and lower case, digits and punctuation, compressible
 * but not trivially (seeded: the same every run). */
static void make_text(const char *p, size_t size)
{
    static const char alpha[] = "abcdefghijklmnopqrstuvwxyz ABCDEFGHIJ,.\n0123";
    FILE *f = fopen(p, "w");
    uint64_t seed = 42;

    if (!f)
        abort();
    for (size_t i = 0; i < size; i++) {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        fputc(alpha[(seed >> 20) % (sizeof(alpha) - 1)], f);
    }
    fclose(f);
}

/* weir pipe ARGS... (NULL-terminated), logging to name.log; its status. */
static int weir_pipe(struct h_weir *w, const char *name, ...)
{
    char *argv[32] = {"weir", "-v", "pipe"};
    char log[600];
    va_list ap;
    int n = 3, rc;

    va_start(ap, name);
    while (n < 31 && (argv[n] = va_arg(ap, char *)) != NULL)
        n++;
    va_end(ap);
    argv[n] = NULL;
    snprintf(log, sizeof(log), "%s/%s.log", h_dir, name);
    unlink(log);
    h_spawn(w, argv, log);
    rc = h_wait(w, WAIT);
    if (rc != 0)
        h_show_log(w);
    h_expect_clean(w);
    return rc;
}

/* The counters of the sink written `sink` in the log: 0 when found. */
static int counters(const struct h_weir *w, const char *sink,
                    unsigned long long *delivered, unsigned long long *dropped)
{
    char needle[700], *t = h_slurp(w->log), *p;
    int rc = -1;

    snprintf(needle, sizeof(needle), "sink %s: ", sink);
    p = t ? strstr(t, needle) : NULL;
    if (p && sscanf(p + strlen(needle), "%llu bytes delivered, %llu dropped",
                    delivered, dropped) == 2)
        rc = 0;
    if (rc)
        fprintf(stderr, "no counters for '%s' in:\n%s\n", sink, t);
    free(t);
    return rc;
}

static int64_t file_size(const char *p)
{
    struct stat st;

    return stat(p, &st) == 0 ? (int64_t)st.st_size : -1;
}

/* Reads fd to EOF into the file at p; the byte count or -1. */
static int64_t drain_to(int fd, const char *p)
{
    static uint8_t buf[1 << 16];
    FILE *f = fopen(p, "w");
    int64_t total = 0;
    ssize_t n;

    if (!f)
        return -1;
    while ((n = read(fd, buf, sizeof(buf))) > 0) {
        fwrite(buf, 1, (size_t)n, f);
        total += n;
    }
    fclose(f);
    return n < 0 ? -1 : total;
}

/* ---- one transform at a time, with weir pipe ---- */

static void test_uppercase(void **state)
{
    char src[620], dst[620], out[600];
    struct h_weir w;

    (void)state;
    h_path(out, sizeof(out), "upper.out");
    snprintf(src, sizeof(src), "file:%s", text);
    snprintf(dst, sizeof(dst), "file:%s", out);
    assert_int_equal(
        weir_pipe(&w, "uppercase", "-t", "uppercase", src, dst, NULL), 0);
    assert_int_equal(sh("tr a-z A-Z < %s | cmp -s - %s", text, out), 0);
}

static void test_gzip(void **state)
{
    static const char *levels[] = {"gzip", "gzip:1", "gzip:9"};
    char src[620], dst[620], out[600];
    struct h_weir w;

    (void)state;
    snprintf(src, sizeof(src), "file:%s", text);
    for (unsigned i = 0; i < 3; i++) {
        h_path(out, sizeof(out), "out.gz");
        snprintf(dst, sizeof(dst), "file:%s", out);
        assert_int_equal(weir_pipe(&w, "gzip", "-t", levels[i], src, dst, NULL),
                         0);
        assert_int_equal(sh("gzip -dc %s | cmp -s - %s", out, text), 0);
        assert_int_equal(sh("python3 -c 'import gzip,sys; "
                            "sys.stdout.buffer.write(gzip.open(\"%s\").read())'"
                            " | cmp -s - %s",
                            out, text),
                         0);
    }
}

static void test_zstd(void **state)
{
    char src[620], dst[620], out[600], in[600];
    struct h_weir w;

    (void)state;
    h_path(out, sizeof(out), "out.zst");
    snprintf(src, sizeof(src), "file:%s", text);
    snprintf(dst, sizeof(dst), "file:%s", out);
    assert_int_equal(weir_pipe(&w, "zstd", "-t", "zstd:1", src, dst, NULL), 0);
    assert_int_equal(sh("zstd -dcq %s | cmp -s - %s", out, text), 0);
    /* unzstd reads what zstd(1) wrote, two frames in a row. */
    h_path(in, sizeof(in), "two.zst");
    assert_int_equal(
        sh("zstd -qc %s > %s && zstd -qc -19 %s >> %s", text, in, upper, in),
        0);
    h_path(out, sizeof(out), "unzstd.out");
    snprintf(src, sizeof(src), "file:%s", in);
    snprintf(dst, sizeof(dst), "file:%s", out);
    assert_int_equal(weir_pipe(&w, "unzstd", "-t", "unzstd", src, dst, NULL),
                     0);
    assert_int_equal(sh("cat %s %s | cmp -s - %s", text, upper, out), 0);
}

/* A frame written with a 32 MiB window (zstd --long=25, from a pipe so
 * zstd cannot shrink it to the input) is refused, and the message says
 * what the frame needs and what weir takes, not strerror(EMSGSIZE). */
static void test_zstd_window(void **state)
{
    char src[620], dst[620], out[600], in[600], *log;
    struct h_weir w;

    (void)state;
    h_path(in, sizeof(in), "long.zst");
    h_path(out, sizeof(out), "long.out");
    assert_int_equal(sh("cat %s | zstd -q -1 --long=25 -c > %s", text, in), 0);
    assert_int_equal(
        sh("zstd -lv %s 2>&1 | grep -q 'Window Size: 32.0 MiB'", in), 0);
    snprintf(src, sizeof(src), "file:%s", in);
    snprintf(dst, sizeof(dst), "file:%s", out);
    assert_int_equal(weir_pipe(&w, "window", "-t", "unzstd", src, dst, NULL),
                     1);
    log = h_slurp(w.log);
    assert_non_null(log);
    if (!strstr(log, "weir pipe: failed: zstd frame needs a 32 MiB window; "
                     "weir allows 8 MiB"))
        fprintf(stderr, "%s\n", log);
    assert_non_null(strstr(log, "weir pipe: failed: zstd frame needs a 32 MiB "
                                "window; weir allows 8 MiB"));
    assert_null(strstr(log, "Message too long"));
    free(log);
    assert_int_equal(file_size(out), 0);
}

/* gunzip reads what gzip(1) wrote, two members in a row; gzip then
 * gunzip in one pipeline gives the input back. */
static void test_gunzip_roundtrip(void **state)
{
    char src[620], dst[620], out[600], in[600];
    struct h_weir w;

    (void)state;
    h_path(in, sizeof(in), "two.gz");
    assert_int_equal(
        sh("gzip -c %s > %s && gzip -1c %s >> %s", text, in, upper, in), 0);
    h_path(out, sizeof(out), "gunzip.out");
    snprintf(src, sizeof(src), "file:%s", in);
    snprintf(dst, sizeof(dst), "file:%s", out);
    assert_int_equal(weir_pipe(&w, "gunzip", "-t", "gunzip", src, dst, NULL),
                     0);
    assert_int_equal(sh("cat %s %s | cmp -s - %s", text, upper, out), 0);

    h_path(out, sizeof(out), "roundtrip.out");
    snprintf(src, sizeof(src), "file:%s", text);
    snprintf(dst, sizeof(dst), "file:%s", out);
    assert_int_equal(weir_pipe(&w, "roundtrip", "-t", "uppercase", "-t",
                               "gzip:3", "-t", "gunzip", "-t", "zstd", "-t",
                               "unzstd", src, dst, NULL),
                     0);
    assert_int_equal(sh("cmp -s %s %s", upper, out), 0);
}

/* With two workers, weir's own gzip members and zstd frames are decoded
 * on both (members whose size the header says): the file weir wrote
 * comes back byte for byte, and so does the same file after gzip(1)'s
 * or zstd(1)'s output, which the decoder streams. */
static void test_two_workers_decode_weirs_members(void **state)
{
    static const char *const kinds[][3] = {{"gzip:1", "gunzip", "gzip -c"},
                                           {"zstd:1", "unzstd", "zstd -qc"}};
    char src[620], dst[620], packed[600], out[600];
    struct h_weir w;

    (void)state;
    for (unsigned k = 0; k < 2; k++) {
        h_path(packed, sizeof(packed), "members.z");
        snprintf(src, sizeof(src), "file:%s", text);
        snprintf(dst, sizeof(dst), "file:%s", packed);
        assert_int_equal(
            weir_pipe(&w, "pack", "-w", "2", "-t", kinds[k][0], src, dst, NULL),
            0);
        assert_int_equal(sh("%s %s >> %s", kinds[k][2], upper, packed), 0);
        h_path(out, sizeof(out), "members.out");
        snprintf(src, sizeof(src), "file:%s", packed);
        snprintf(dst, sizeof(dst), "file:%s", out);
        assert_int_equal(weir_pipe(&w, "unpack", "-w", "2", "-t", kinds[k][1],
                                   src, dst, NULL),
                         0);
        assert_int_equal(sh("cat %s %s | cmp -s - %s", text, upper, out), 0);
    }
}

/* The daemon: file -> uppercase -> gzip -> tcp, checked with gzip -dc. */
static void test_daemon_to_tcp(void **state)
{
    uint16_t port = h_free_port(false);
    int lfd = h_listen(false, port), fd;
    char got[600];
    struct h_weir w;

    (void)state;
    assert_true(lfd >= 0);
    h_path(got, sizeof(got), "tcp.gz");
    h_start_conf(&w, "daemon_tcp", H_CONF_FRESH_LOG,
                 "[pipeline up]\nsource = file:%s\ntransform = uppercase\n"
                 "transform = gzip:1\nsink = tcp:127.0.0.1:%u\n",
                 text, port);
    fd = h_accept(lfd, WAIT);
    assert_true(fd >= 0);
    assert_true(drain_to(fd, got) > 0);
    close(fd);
    close(lfd);
    if (h_wait(&w, WAIT) != 0)
        h_show_log(&w);
    h_expect_clean(&w);
    assert_int_equal(sh("gzip -dc %s | cmp -s - %s", got, upper), 0);
}

/* Corrupt input to gunzip errors that stream only: the other pipeline
 * finishes, and the log names the pipeline and the offset. */
static void test_corrupt_gunzip(void **state)
{
    char bad[600], good[600], out_bad[600], needle[128], *log, *at;
    long long gz, off;
    struct h_weir w;

    (void)state;
    h_path(bad, sizeof(bad), "corrupt.gz");
    h_path(out_bad, sizeof(out_bad), "corrupt.out");
    h_path(good, sizeof(good), "good.gz");
    assert_int_equal(sh("gzip -c %s > %s", text, bad), 0);
    gz = file_size(bad);
    assert_int_equal(sh("printf 'not gzip at all' >> %s", bad), 0);
    h_start_conf(&w, "corrupt", H_CONF_FRESH_LOG,
                 "[pipeline broken]\nsource = file:%s\ntransform = gunzip\n"
                 "sink = file:%s\n"
                 "[pipeline fine]\nsource = file:%s\ntransform = gzip\n"
                 "sink = file:%s\n",
                 bad, out_bad, text, good);
    /* One pipeline failed: weir exits 1 once both are done. */
    if (h_wait(&w, WAIT) != 1)
        h_show_log(&w);
    h_expect_clean(&w);
    /* The offset is where the decoder noticed: inside the garbage's
     * first bytes (zlib reads a header's worth before it can tell). */
    snprintf(needle, sizeof(needle),
             "pipeline broken: corrupt gzip input at byte ");
    assert_true(h_wait_log(w.log, needle, 1000));
    log = h_slurp(w.log);
    at = strstr(log, needle);
    assert_non_null(at);
    assert_int_equal(sscanf(at + strlen(needle), "%lld", &off), 1);
    free(log);
    assert_true(off >= gz && off <= gz + 16);
    assert_true(h_wait_log(w.log, "pipeline fine: done", 1000));
    assert_int_equal(sh("gzip -dc %s | cmp -s - %s", good, text), 0);
}

/* Reads what is there on fd into the file at p (appending) until the
 * shell check `cond` passes or WAIT ms passed; the check's last status. */
static int read_until(int fd, const char *p, const char *cond)
{
    int64_t end = h_now_ms() + WAIT;
    uint8_t buf[1 << 16];
    int st = -1;

    while (h_now_ms() < end) {
        struct pollfd pf = {.fd = fd, .events = POLLIN};
        ssize_t n;

        if (poll(&pf, 1, 200) == 1) {
            FILE *f = fopen(p, "a");

            n = read(fd, buf, sizeof(buf));
            if (n > 0 && f)
                fwrite(buf, 1, (size_t)n, f);
            if (f)
                fclose(f);
            if (n <= 0)
                break;
        }
        if ((st = sh("%s", cond)) == 0)
            break;
    }
    return st;
}

/* A followed file through gzip: what was written so far can be decoded
 * while the stream goes on (the member ends when the file goes quiet). */
static void test_follow_sync(void **state)
{
    uint16_t port = h_free_port(false);
    int lfd = h_listen(false, port), fd;
    char live[600], got[600], want[600], cond[2000];
    struct h_weir w;

    (void)state;
    assert_true(lfd >= 0);
    h_path(live, sizeof(live), "live.txt");
    h_path(got, sizeof(got), "live.gz");
    h_path(want, sizeof(want), "live.want");
    unlink(got);
    h_write_text(live, "first line\n");
    h_start_conf(&w, "follow_sync", H_CONF_FRESH_LOG,
                 "[pipeline live]\nsource = file:%s\nfollow = yes\n"
                 "transform = uppercase\ntransform = gzip\n"
                 "sink = tcp:127.0.0.1:%u\n",
                 live, port);
    fd = h_accept(lfd, WAIT);
    assert_true(fd >= 0);
    h_write_text(want, "FIRST LINE\n");
    snprintf(cond, sizeof(cond), "gzip -dc %s 2>/dev/null | cmp -s - %s", got,
             want);
    assert_int_equal(read_until(fd, got, cond), 0);
    assert_int_equal(sh("printf 'second line\\n' >> %s", live), 0);
    h_write_text(want, "FIRST LINE\nSECOND LINE\n");
    assert_int_equal(read_until(fd, got, cond), 0);
    close(fd);
    close(lfd);
    kill(w.pid, SIGKILL);
    h_wait(&w, WAIT);
    h_expect_clean(&w);
}

/* ---- fan-out ---- */

static void test_tee_files(void **state)
{
    char src[620], a[600], b[600], da[620], db[620];
    unsigned long long del, drop;
    struct h_weir w;

    (void)state;
    h_path(a, sizeof(a), "tee_a");
    h_path(b, sizeof(b), "tee_b");
    snprintf(src, sizeof(src), "file:%s", big);
    snprintf(da, sizeof(da), "file:%s", a);
    snprintf(db, sizeof(db), "file:%s", b);
    assert_int_equal(weir_pipe(&w, "tee", src, da, db, NULL), 0);
    assert_int_equal(sh("cmp -s %s %s && cmp -s %s %s", a, b, a, big), 0);
    assert_int_equal(counters(&w, da, &del, &drop), 0);
    assert_int_equal(del, BIG);
    assert_int_equal(drop, 0);
    assert_int_equal(counters(&w, db, &del, &drop), 0);
    assert_int_equal(del, BIG);
    assert_int_equal(drop, 0);
}

/*
 * A tcp sink with a drop policy whose receiver reads nothing until the
 * other (file) sink has everything: the file sink is never held back, the
 * tcp sink drops, and delivered + dropped = produced for both.
 */
static void drop_case(const char *policy, int status)
{
    uint16_t port = h_free_port(false);
    int lfd = h_listen(false, port), fd;
    char src[620], tcp[128], out[600], dout[620], got[600];
    unsigned long long del, drop;
    int64_t end, received;
    struct h_weir w;
    char log[600];

    assert_true(lfd >= 0);
    h_path(out, sizeof(out), "drop_file");
    h_path(got, sizeof(got), "drop_tcp");
    h_path(log, sizeof(log), "drop.log");
    unlink(log);
    snprintf(src, sizeof(src), "file:%s", big);
    snprintf(tcp, sizeof(tcp), "tcp:127.0.0.1:%u,on_full=%s", port, policy);
    snprintf(dout, sizeof(dout), "file:%s", out);
    h_spawn(&w, (char *const[]){"weir", "-v", "pipe", src, tcp, dout, NULL},
            log);
    fd = h_accept(lfd, WAIT);
    assert_true(fd >= 0);
    end = h_now_ms() + WAIT;
    while (file_size(out) < (int64_t)BIG && h_now_ms() < end)
        h_sleep_ms(20);
    assert_int_equal(file_size(out), BIG);
    received = drain_to(fd, got);
    close(fd);
    close(lfd);
    if (h_wait(&w, WAIT) != status)
        h_show_log(&w), fail();
    h_expect_clean(&w);
    assert_int_equal(sh("cmp -s %s %s", out, big), 0);
    assert_int_equal(counters(&w, dout, &del, &drop), 0);
    assert_int_equal(del, BIG);
    assert_int_equal(drop, 0);
    assert_int_equal(counters(&w, tcp, &del, &drop), 0);
    assert_int_equal(del + drop, BIG);
    assert_int_equal((unsigned long long)received, del);
    /* The socket buffers hold a few MiB at most: much was dropped. */
    assert_true(drop > 0);
    if (strcmp(policy, "disconnect") == 0)
        assert_true(h_wait_log(w.log, "disconnected (queue full)", 1000));
}

static void test_drop_newest(void **state)
{
    (void)state;
    drop_case("drop-newest", 0);
}

static void test_drop_oldest(void **state)
{
    (void)state;
    drop_case("drop-oldest", 0);
}

/* disconnect: the tcp sink is cut loose, as asked, the file sink gets
 * everything, so weir pipe succeeds; the cut sink's counters still add
 * up. */
static void test_disconnect(void **state)
{
    (void)state;
    drop_case("disconnect", 0);
}

/* Block (the default) never drops: both sinks get every byte. */
static void test_block_never_drops(void **state)
{
    uint16_t port = h_free_port(false);
    int lfd = h_listen(false, port), fd;
    char src[620], tcp[128], out[600], dout[620], hex[65];
    unsigned long long del, drop;
    struct h_weir w;
    char log[600];

    (void)state;
    assert_true(lfd >= 0);
    h_path(out, sizeof(out), "block_file");
    h_path(log, sizeof(log), "block.log");
    unlink(log);
    snprintf(src, sizeof(src), "file:%s", big);
    snprintf(tcp, sizeof(tcp), "tcp:127.0.0.1:%u", port);
    snprintf(dout, sizeof(dout), "file:%s", out);
    h_spawn(&w, (char *const[]){"weir", "-v", "pipe", src, tcp, dout, NULL},
            log);
    fd = h_accept(lfd, WAIT);
    assert_true(fd >= 0);
    assert_int_equal(h_drain(fd, hex, UINT64_MAX, WAIT), BIG);
    assert_string_equal(hex, big_hex);
    close(fd);
    close(lfd);
    if (h_wait(&w, WAIT) != 0)
        h_show_log(&w);
    h_expect_clean(&w);
    assert_int_equal(sh("cmp -s %s %s", out, big), 0);
    assert_int_equal(counters(&w, dout, &del, &drop), 0);
    assert_int_equal(del, BIG);
    assert_int_equal(drop, 0);
    assert_int_equal(counters(&w, tcp, &del, &drop), 0);
    assert_int_equal(del, BIG);
    assert_int_equal(drop, 0);
}

/* ---- the memory bound ---- */

/* A receiver on a thread: reads `rate` bytes a second in 10 steps, or as
 * fast as it can when rate is 0, until told to stop. */
struct reader {
    pthread_t th;
    int fd;
    size_t rate;
    _Atomic bool stop;
    _Atomic int64_t got;
};

static void *reader_run(void *arg)
{
    struct reader *r = arg;
    static _Thread_local uint8_t buf[1 << 16];

    while (!atomic_load(&r->stop)) {
        size_t want = r->rate ? r->rate / 10 : sizeof(buf);
        size_t have = 0;

        while (have < want && !atomic_load(&r->stop)) {
            struct pollfd p = {.fd = r->fd, .events = POLLIN};
            size_t n = want - have < sizeof(buf) ? want - have : sizeof(buf);
            ssize_t k;

            if (poll(&p, 1, 100) != 1)
                continue;
            k = read(r->fd, buf, n);
            if (k <= 0)
                return NULL;
            have += (size_t)k;
            atomic_fetch_add(&r->got, k);
        }
        if (r->rate)
            h_sleep_ms(100);
    }
    return NULL;
}

/* The RSS of a weir with the same workers and nothing running. */
static int64_t idle_rss(void)
{
    uint16_t port = h_free_port(false);
    struct h_weir w;
    int64_t kib;

    h_start_conf(&w, "idle", H_CONF_FRESH_LOG,
                 "[pipeline idle]\nsource = tcp-listen:127.0.0.1:%u\n"
                 "sink = null\n",
                 port);
    if (!h_wait_log(w.log, "listening on", WAIT))
        h_show_log(&w);
    h_sleep_ms(300);
    kib = h_status_kib(w.pid, "VmRSS");
    kill(w.pid, SIGKILL);
    h_wait(&w, WAIT);
    return kib;
}

/*
 * The RSS of one run: the bound every sample must stay within, and how
 * much the last sample may exceed the first (after a second of warm-up):
 * two chunks and `made`, what the stream may still make on first use
 * within the window.
 */
struct rss_watch {
    int64_t bound, made;
    int64_t first, peak, last;
    bool lost; /* a sample could not be read */
};

/* Samples the daemon's RSS for `secs` seconds while its receivers run.
 * Asserts nothing, so the caller stops its receivers first. */
static void watch_rss(pid_t pid, struct rss_watch *rw, unsigned secs)
{
    int64_t end;

    h_sleep_ms(1000);
    rw->first = rw->peak = h_status_kib(pid, "VmRSS");
    end = h_now_ms() + (int64_t)secs * 1000;
    while (h_now_ms() < end) {
        int64_t kib = h_status_kib(pid, "VmRSS");

        rw->lost = rw->lost || kib <= 0;
        if (kib > rw->peak)
            rw->peak = kib;
        h_sleep_ms(250);
    }
    rw->last = h_status_kib(pid, "VmRSS");
}

static void rss_check(const struct rss_watch *rw)
{
    fprintf(stderr, "# rss: bound %lld KiB, first %lld, peak %lld, last %lld\n",
            (long long)rw->bound, (long long)rw->first, (long long)rw->peak,
            (long long)rw->last);
    assert_false(rw->lost);
    assert_true(rw->first > 0 && rw->last > 0);
    assert_true(rw->peak <= rw->bound);
    assert_true(rw->last <= rw->first + (int64_t)(CHUNK / 1024) * 2 + rw->made);
}

/*
 * The documented formula (config/weir.conf.md, "Sizing memory"): idle +
 * the sinks' high-water marks + the source's read-ahead (5 chunks) + one
 * chunk per other stage + each tee branch's chunk, plus a slack of 8 MiB
 * for the allocator's and the pool's pages outside buffers (per-thread
 * caches, the rings, a stream's objects) and page rounding.
 */
#define SLACK_KIB (8 * 1024)

/* ThreadSanitizer maps shadow and meta memory for every byte the program
 * touches: in the TSan build the gzip stage's memory shows several times
 * over in the RSS, a little under this factor. What a stage makes is
 * scaled by it there; the plain and ASan builds check the formula as
 * written. */
#if defined(__SANITIZE_THREAD__)
#define SHADOW_FACTOR 6
#else
#define SHADOW_FACTOR 1
#endif

/* On the epoll engine the buffers are filled and drained by read and send
 * calls, which ThreadSanitizer intercepts and shadows; io_uring's kernel
 * side touches them out of its sight. So in the TSan build on epoll the
 * buffers of the formula are scaled too. */
static int64_t buffer_factor(void)
{
    const char *e = getenv("WEIR_ENGINE");

    return e && strcmp(e, "epoll") == 0 ? SHADOW_FACTOR : 1;
}

static int64_t bound_kib(int64_t idle, unsigned sinks, bool tee)
{
    int64_t chunks = 5 + sinks + (tee ? sinks : 0);

    return idle + (sinks * 1024 + chunks * (CHUNK / 1024)) * buffer_factor() +
           SLACK_KIB;
}

static void make_sparse(char *out, size_t len)
{
    /* 64 GiB of holes: no disk, and more than any run reads. */
    h_path(out, len, "sparse.bin");
    if (file_size(out) < 0)
        assert_int_equal(sh("truncate -s 64G %s", out), 0);
}

/*
 * One file source behind a receiver reading ~1 MB/s, through `transform`
 * (NULL: none): the RSS stays within the formula's bound plus `extra_kib`
 * and grows by no more than `made_kib` over the window.
 */
static void slow_sink_memory(const char *src, const char *transform,
                             int64_t extra_kib, int64_t made_kib)
{
    uint16_t port = h_free_port(false);
    int lfd = h_listen(false, port);
    struct reader r = {.rate = 1000 * 1000};
    struct rss_watch rw = {.made = made_kib * SHADOW_FACTOR};
    int64_t idle;
    struct h_weir w;

    assert_true(lfd >= 0);
    idle = idle_rss();
    assert_true(idle > 0);
    h_start_conf(&w, "memory", H_CONF_FRESH_LOG,
                 "[pipeline slow]\nsource = file:%s\nhigh_water_mark = 1MiB\n"
                 "%s%s%ssink = tcp:127.0.0.1:%u\n",
                 src, transform ? "transform = " : "",
                 transform ? transform : "", transform ? "\n" : "", port);
    r.fd = h_accept(lfd, WAIT);
    assert_true(r.fd >= 0);
    pthread_create(&r.th, NULL, reader_run, &r);
    rw.bound = bound_kib(idle, 1, false) + extra_kib * SHADOW_FACTOR;
    watch_rss(w.pid, &rw, 5);
    atomic_store(&r.stop, true);
    pthread_join(r.th, NULL);
    kill(w.pid, SIGKILL);
    h_wait(&w, WAIT);
    close(r.fd);
    close(lfd);
    rss_check(&rw);
    /* ~1 MB/s for ~6 s: the receiver did read, slowly, and far less than
     * the source holds (gzip cannot shrink the noise): the receiver was
     * what held the stream back. */
    assert_true(atomic_load(&r.got) > 0);
    assert_true(atomic_load(&r.got) < (int64_t)(32u << 20));
}

static void test_memory_slow_sink(void **state)
{
    char sparse[600];

    (void)state;
    make_sparse(sparse, sizeof(sparse));
    slow_sink_memory(sparse, NULL, 0, 0);
}

/*
 * The same through gzip:1, on incompressible bytes so the slow receiver
 * holds the source back through the transform. The bound adds the
 * transform stage's two chunks and gzip's codec with a helper worker as
 * config/weir.conf.md gives it (six members in flight and two
 * compressors: up to 4.3 MiB), rounded up. gzip makes its member slots as
 * more members are in flight at once, which may happen after the warm-up.
 */
#define GZIP_CODEC_KIB (4400)

/* The tcp sink's resend copy behind a transform (config/weir.conf.md,
 * "Sizing memory"): what the peer has not acknowledged, at most the
 * sink's 2 MiB send buffer, plus the acknowledged part of one member
 * (gzip's compressed bound of 256 KiB), rounded up. It fills as the
 * receiver falls behind, after the warm-up too. */
#define RESEND_COPY_KIB (2 * 1024 + 260)

static void test_memory_gzip_slow_sink(void **state)
{
    char noise[600];

    (void)state;
    h_path(noise, sizeof(noise), "noise.bin");
    if (file_size(noise) < 0)
        assert_int_equal(sh("head -c 64M /dev/urandom > %s", noise), 0);
    slow_sink_memory(noise, "gzip:1",
                     2 * (CHUNK / 1024) + GZIP_CODEC_KIB + RESEND_COPY_KIB,
                     GZIP_CODEC_KIB + RESEND_COPY_KIB);
}

/* A fast and a slow sink: under block the fast one waits (memory stays
 * bounded); under drop-oldest it runs on and receives far more. */
static void tee_memory(const char *policy, bool fast_runs)
{
    uint16_t pf = h_free_port(false), ps = h_free_port(false);
    int lf = h_listen(false, pf), ls = h_listen(false, ps);
    struct reader fast = {.rate = 0}, slow = {.rate = 1000 * 1000};
    char sparse[600];
    struct rss_watch rw = {0};
    char slow_held[128], fast_held[96], *log;
    int64_t idle;
    bool warned;
    struct h_weir w;

    assert_true(lf >= 0 && ls >= 0);
    make_sparse(sparse, sizeof(sparse));
    idle = idle_rss();
    assert_true(idle > 0);
    h_start_conf(
        &w, "tee_memory", H_CONF_FRESH_LOG,
        "[pipeline tee]\nsource = file:%s\nhigh_water_mark = 1MiB\n"
        "sink = tcp:127.0.0.1:%u\nsink = tcp:127.0.0.1:%u,on_full=%s\n",
        sparse, pf, ps, policy);
    fast.fd = h_accept(lf, WAIT);
    slow.fd = h_accept(ls, WAIT);
    assert_true(fast.fd >= 0 && slow.fd >= 0);
    pthread_create(&fast.th, NULL, reader_run, &fast);
    pthread_create(&slow.th, NULL, reader_run, &slow);
    rw.bound = bound_kib(idle, 2, true);
    watch_rss(w.pid, &rw, 5);
    /* Under block the slow sink holds the fast one back: a warning that
     * names the slow sink, never the fast one. */
    snprintf(slow_held, sizeof(slow_held),
             "sink tcp:127.0.0.1:%u,on_full=%s has held the source back", ps,
             policy);
    snprintf(fast_held, sizeof(fast_held),
             "sink tcp:127.0.0.1:%u has held the source back", pf);
    warned = fast_runs || h_wait_log(w.log, slow_held, WAIT);
    if (!warned)
        h_show_log(&w);
    atomic_store(&fast.stop, true);
    atomic_store(&slow.stop, true);
    pthread_join(fast.th, NULL);
    pthread_join(slow.th, NULL);
    kill(w.pid, SIGKILL);
    h_wait(&w, WAIT);
    close(fast.fd);
    close(slow.fd);
    close(lf);
    close(ls);
    rss_check(&rw);
    assert_true(warned);
    log = h_slurp(w.log);
    assert_int_equal(h_count(log, fast_held), 0);
    free(log);
    fprintf(stderr, "# %s: fast got %lld, slow got %lld\n", policy,
            (long long)atomic_load(&fast.got),
            (long long)atomic_load(&slow.got));
    assert_true(atomic_load(&slow.got) > 0);
    if (fast_runs)
        assert_true(atomic_load(&fast.got) > 10 * atomic_load(&slow.got));
    else
        assert_true(atomic_load(&fast.got) <
                    4 * atomic_load(&slow.got) + (int64_t)(32u << 20));
}

static void test_memory_tee_block(void **state)
{
    (void)state;
    tee_memory("block", false);
}

static void test_memory_tee_drop_oldest(void **state)
{
    (void)state;
    tee_memory("drop-oldest", true);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_teardown(test_uppercase, h_teardown),
        cmocka_unit_test_teardown(test_gzip, h_teardown),
        cmocka_unit_test_teardown(test_zstd, h_teardown),
        cmocka_unit_test_teardown(test_zstd_window, h_teardown),
        cmocka_unit_test_teardown(test_gunzip_roundtrip, h_teardown),
        cmocka_unit_test_teardown(test_two_workers_decode_weirs_members,
                                  h_teardown),
        cmocka_unit_test_teardown(test_daemon_to_tcp, h_teardown),
        cmocka_unit_test_teardown(test_corrupt_gunzip, h_teardown),
        cmocka_unit_test_teardown(test_follow_sync, h_teardown),
        cmocka_unit_test_teardown(test_tee_files, h_teardown),
        cmocka_unit_test_teardown(test_drop_newest, h_teardown),
        cmocka_unit_test_teardown(test_drop_oldest, h_teardown),
        cmocka_unit_test_teardown(test_disconnect, h_teardown),
        cmocka_unit_test_teardown(test_block_never_drops, h_teardown),
        cmocka_unit_test_teardown(test_memory_slow_sink, h_teardown),
        cmocka_unit_test_teardown(test_memory_gzip_slow_sink, h_teardown),
        cmocka_unit_test_teardown(test_memory_tee_block, h_teardown),
        cmocka_unit_test_teardown(test_memory_tee_drop_oldest, h_teardown),
    };
    int rc;

    if (h_begin("xf") != 0)
        return 1;
    h_path(text, sizeof(text), "text.txt");
    h_path(upper, sizeof(upper), "text.upper");
    h_path(big, sizeof(big), "big.bin");
    make_text(text, TEXT);
    if (sh("tr a-z A-Z < %s > %s", text, upper) != 0)
        return 1;
    h_make_file(big, BIG, 3, big_hex);
    rc = cmocka_run_group_tests(tests, NULL, NULL);
    h_end();
    return rc;
}
