/*
 * test_flush.c - a followed log that grows steadily and never goes quiet,
 * compressed with gzip or zstd on its way to a collector: its lines must
 * arrive while it is still being written (flush_interval ends the member
 * or frame), not at the next 256 KiB nor at shutdown. At the end, what
 * the collector received, decoded by the real gzip or zstd tool, is the
 * log byte for byte.
 */
#include <inttypes.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>
#include <stdatomic.h>

#include "harness.h"

#define WAIT     20000u
#define LINE_LEN 25 /* "line 00000000 of the log\n" */

struct writer {
    char path[300];
    atomic_bool stop;
    atomic_uint lines; /* read by the test while the writer runs */
    unsigned errors;
    pthread_t th;
};

/* A line every 5 ms: never quiet for the half second that counts as idle. */
static void *writer_run(void *arg)
{
    struct writer *wr = arg;
    int fd = open(wr->path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    char line[64];

    if (fd < 0)
        wr->errors++;
    while (fd >= 0 && !atomic_load(&wr->stop)) {
        int len = snprintf(line, sizeof(line), "line %08u of the log\n",
                           atomic_load(&wr->lines));

        if (len != LINE_LEN || !h_write_all(fd, line, (size_t)len))
            wr->errors++;
        atomic_fetch_add(&wr->lines, 1);
        h_sleep_ms(5);
    }
    if (fd >= 0)
        close(fd);
    return NULL;
}

/* Appends what is readable now (waiting at most ms) to the file out;
 * the bytes read, 0 at EOF, -1 on timeout. */
static ssize_t save_some(int fd, int out, unsigned ms)
{
    struct pollfd p = {.fd = fd, .events = POLLIN};
    char buf[65536];
    ssize_t n;

    if (poll(&p, 1, (int)ms) != 1)
        return -1;
    n = recv(fd, buf, sizeof(buf), 0);
    if (n > 0)
        assert_true(h_write_all(out, buf, (size_t)n));
    return n;
}

/* tool -dc < in > out; its exit status. */
static int decode(const char *tool, const char *in, const char *out)
{
    char cmd[1024];

    snprintf(cmd, sizeof(cmd), "%s -dc < '%s' > '%s'", tool, in, out);
    return system(cmd);
}

static void shipped_while_growing(const char *xf, const char *tool)
{
    struct h_weir w;
    struct writer wr = {0};
    char got[300], dec[300], hex_log[65], hex_dec[65];
    uint64_t log_size, dec_size;
    uint16_t port;
    int lfd = h_listen_any(&port), c, out;
    ssize_t n;
    int64_t end;
    size_t early = 0;
    bool decoded = false;
    unsigned early_lines = 0;

    snprintf(wr.path, sizeof(wr.path), "%s/%s.src", h_dir, xf);
    snprintf(got, sizeof(got), "%s/%s.got", h_dir, xf);
    snprintf(dec, sizeof(dec), "%s/%s.dec", h_dir, xf);
    h_write_text(wr.path, "%s", "");
    h_start_conf(&w, xf, 0,
                 "[pipeline ship]\n"
                 "source = file:%s,follow=yes\n"
                 "transform = %s\n"
                 "sink = tcp:127.0.0.1:%u\n",
                 wr.path, xf, port);
    assert_int_equal(pthread_create(&wr.th, NULL, writer_run, &wr), 0);
    c = h_accept(lfd, WAIT);
    assert_true(c >= 0);
    out = open(got, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    assert_true(out >= 0);
    /* While the writer writes, whole members or frames must come: what
     * arrived decodes (the tool exits 0) to the start of the log. */
    end = h_now_ms() + WAIT;
    while (!decoded && h_now_ms() < end) {
        if ((n = save_some(c, out, WAIT)) <= 0)
            break;
        early += (size_t)n;
        if (decode(tool, got, dec) == 0) {
            char *t = h_slurp(dec);

            decoded = t && strlen(t) >= LINE_LEN &&
                      strncmp(t, "line 00000000 of the log\n", LINE_LEN) == 0;
            free(t);
        }
    }
    early_lines = atomic_load(&wr.lines);
    assert_true(decoded);
    atomic_store(&wr.stop, true);
    pthread_join(wr.th, NULL);
    assert_int_equal(wr.errors, 0);
    /* The rest comes without a stop (the source goes quiet); then the
     * stop ends the stream with nothing more. */
    assert_true(h_file_sha(wr.path, hex_log, &log_size));
    end = h_now_ms() + WAIT;
    dec_size = 0;
    while (dec_size < log_size && h_now_ms() < end) {
        if (save_some(c, out, WAIT) <= 0)
            break;
        if (decode(tool, got, dec) == 0)
            assert_true(h_file_sha(dec, hex_dec, &dec_size));
    }
    assert_int_equal(dec_size, log_size);
    h_expect_exit(&w, 0, true, WAIT);
    while ((n = save_some(c, out, WAIT)) > 0)
        ;
    assert_int_equal(n, 0);
    close(out);
    close(c);
    close(lfd);
    assert_int_equal(decode(tool, got, dec), 0);
    assert_true(h_file_sha(dec, hex_dec, &dec_size));
    assert_int_equal(dec_size, log_size);
    assert_string_equal(hex_dec, hex_log);
    printf("%s: %zu bytes arrived after %u lines, while the log grew; "
           "%" PRIu64 " bytes in all, decoded by %s\n",
           xf, early, early_lines, log_size, tool);
}

static void test_gzip(void **state)
{
    (void)state;
    shipped_while_growing("gzip", "gzip");
}

static void test_zstd(void **state)
{
    (void)state;
    shipped_while_growing("zstd", "zstd -q");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_teardown(test_gzip, h_teardown),
        cmocka_unit_test_teardown(test_zstd, h_teardown),
    };
    int rc;

    if (h_begin("flush") != 0)
        return 1;
    rc = cmocka_run_group_tests(tests, NULL, NULL);
    h_end();
    return rc;
}
