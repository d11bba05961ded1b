/*
 * test_records.c - the record framer (weir/records.h): whole lines out
 * whatever the feeds' sizes, long lines cut or skipped across feeds, a
 * partial line flushed, a Java stack trace as one record, JSON that
 * Python parses back to the bytes fed (invalid UTF-8 as U+FFFD), emit
 * stopping a feed and the rest fed later, and the offsets a checkpoint
 * would take.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "weir/records.h"

/* 2026-12-06T12:00:00.123Z */
#define NOW 1796558400123000000ull

struct col {
    char *buf;
    size_t len, cap;
    unsigned calls;
    bool stop;         /* every emit asks to stop */
    uint64_t consumed; /* the last emit's */
    uint64_t offs[64]; /* each emit's consumed, the first 64 */
};

/* Records must end in '\n' and consumed must never move back. */
static int collect(void *arg, const uint8_t *rec, size_t len, uint64_t consumed)
{
    struct col *c = arg;

    assert_true(len > 0);
    assert_int_equal(rec[len - 1], '\n');
    assert_true(consumed >= c->consumed);
    if (c->len + len + 1 > c->cap) {
        c->cap = (c->len + len + 1) * 2;
        c->buf = realloc(c->buf, c->cap);
        assert_non_null(c->buf);
    }
    memcpy(c->buf + c->len, rec, len);
    c->len += len;
    c->buf[c->len] = '\0';
    if (c->calls < 64)
        c->offs[c->calls] = consumed;
    c->calls++;
    c->consumed = consumed;
    return c->stop;
}

static struct weir_records *make(struct weir_records_options o)
{
    struct weir_records *r;
    char err[256] = "";

    assert_int_equal(weir_records_new(&r, &o, err, sizeof(err)), 0);
    return r;
}

/* Feeds p in pieces cut at cuts[0..n) (ascending), each piece until it
 * is all taken, then flushes until nothing is held. */
static void run(struct weir_records *r, struct col *c, const char *p,
                size_t len, const size_t *cuts, size_t n)
{
    size_t at = 0;

    for (size_t k = 0; k <= n; k++) {
        size_t end = k < n ? cuts[k] : len;

        while (at < end) {
            size_t took = weir_records_feed(r, (const uint8_t *)p + at,
                                            end - at, NOW, collect, c);

            assert_true(took <= end - at);
            /* Only a stopping emit leaves bytes untaken. */
            if (took < end - at)
                assert_true(c->stop);
            at += took;
        }
    }
    /* Non-zero: an emit stopped it, more may be held. */
    while (weir_records_flush(r, NOW, collect, c))
        ;
    assert_int_equal(weir_records_pending(r), 0);
}

static void col_free(struct col *c)
{
    free(c->buf);
    memset(c, 0, sizeof(*c));
}

static const char mixed[] = "one\n"
                            "\n"
                            "two\r\n"
                            "a line longer than sixteen bytes\n"
                            "2026-01-01 start\n"
                            "\tat frame one\n"
                            "\tat frame two that is long enough\n"
                            "\n"
                            "2026-01-02 next\n"
                            "\xe2\x82\xac euro \xff\n"
                            "tail without newline";

static struct weir_records_options mode(int m)
{
    struct weir_records_options o = {.max_record = 16};

    switch (m) {
    case 1:
        o.on_long = WEIR_RECORDS_SKIP;
        break;
    case 2:
        o.multiline_start = "^\\d{4}-";
        o.max_record = 48;
        break;
    case 3:
        o.multiline_start = "^\\d{4}-";
        break;
    case 4:
        o.multiline_start = "^\\d{4}-";
        o.on_long = WEIR_RECORDS_SKIP;
        o.max_record = 30;
        break;
    case 5:
        o.format = WEIR_RECORDS_JSON;
        o.path = "/var/log/a.log";
        o.host = "h";
        break;
    case 6:
        o.format = WEIR_RECORDS_JSON;
        o.multiline_start = "^\\d{4}-";
        o.max_record = 48;
        o.host = "h";
        break;
    }
    return o;
}

#define MODES 7

/* What one feed and a flush give, in each mode; checked by hand for the
 * raw ones. */
static void one_feed_output_is_as_expected(void **state)
{
    static const char *want[] = {
        "one\n\ntwo\r\na line longer th\n2026-01-01 start\n\tat frame one\n"
        "\tat frame two th\n\n2026-01-02 next\n\xe2\x82\xac euro \xff\n"
        "tail without new\n",
        "one\n\ntwo\r\n2026-01-01 start\n\tat frame one\n\n"
        "2026-01-02 next\n\xe2\x82\xac euro \xff\n",
        "one\n\ntwo\r\na line longer than sixteen bytes\n"
        "2026-01-01 start\n\tat frame one\n\tat frame two tha\n"
        "2026-01-02 next\n\xe2\x82\xac euro \xff\ntail without newline\n",
        /* A record full at its first line keeps that line alone. */
        "one\n\ntwo\r\na line longer th\n2026-01-01 start\n"
        "2026-01-02 next\n",
        /* Both records pass 30 bytes with their third line. */
        "one\n\ntwo\r\n",
    };
    (void)state;
    for (int m = 0; m < 5; m++) {
        struct weir_records *r = make(mode(m));
        struct col c = {0};

        run(r, &c, mixed, sizeof(mixed) - 1, NULL, 0);
        assert_string_equal(c.buf, want[m]);
        weir_records_free(r);
        col_free(&c);
    }
}

/* Every cut into two feeds, and every pair of cuts into three, gives
 * the bytes of one feed, the same counts, and ends at the same offset. */
static void every_split_gives_the_same_records(void **state)
{
    size_t len = sizeof(mixed) - 1;

    (void)state;
    for (int m = 0; m < MODES; m++) {
        struct weir_records *r = make(mode(m));
        struct weir_records_stats one, st;
        struct col ref = {0};

        run(r, &ref, mixed, len, NULL, 0);
        weir_records_stats(r, &one);
        assert_int_equal(weir_records_consumed(r), len);
        for (size_t i = 0; i <= len; i++) {
            for (size_t j = i; j <= len; j++) {
                size_t cuts[2] = {i, j};
                struct col c = {0};

                weir_records_reset(r, 0);
                run(r, &c, mixed, len, cuts, 2);
                assert_int_equal(c.len, ref.len);
                assert_memory_equal(c.buf, ref.buf, ref.len);
                assert_int_equal(c.consumed, ref.consumed);
                assert_int_equal(weir_records_consumed(r), len);
                col_free(&c);
            }
        }
        weir_records_stats(r, &st);
        /* One feed, then (len + 1)(len + 2) / 2 more, all alike. */
        assert_int_equal(st.records,
                         one.records * (1 + (len + 1) * (len + 2) / 2));
        assert_int_equal(st.truncated,
                         one.truncated * (1 + (len + 1) * (len + 2) / 2));
        weir_records_free(r);
        col_free(&ref);
    }
}

/* A byte at a time, the way a slow writer's line arrives. */
static void feed_bytes(struct weir_records *r, struct col *c, const char *s)
{
    for (size_t i = 0; s[i]; i++)
        assert_int_equal(
            weir_records_feed(r, (const uint8_t *)s + i, 1, NOW, collect, c),
            1);
}

static void long_lines_across_feeds(void **state)
{
    struct weir_records_stats st;
    struct weir_records *r;
    struct col c = {0};

    (void)state;
    r = make((struct weir_records_options){.max_record = 8});
    feed_bytes(r, &c, "0123456789abcdefghij");
    assert_int_equal(c.calls, 0);
    assert_int_equal(weir_records_pending(r), 8);
    feed_bytes(r, &c, "klmnop\nok\n");
    assert_string_equal(c.buf, "01234567\nok\n");
    /* The cut record's consumed is past the whole line, newline too. */
    assert_int_equal(c.offs[0], 27);
    weir_records_stats(r, &st);
    assert_int_equal(st.truncated, 1);
    assert_int_equal(st.records, 2);
    weir_records_free(r);
    col_free(&c);

    r = make((struct weir_records_options){.max_record = 8,
                                           .on_long = WEIR_RECORDS_SKIP});
    feed_bytes(r, &c, "1\n0123456789abcdefghij");
    /* Nothing of the long line is emitted, nor counted as consumed. */
    assert_int_equal(weir_records_consumed(r), 2);
    feed_bytes(r, &c, "klmn\n");
    assert_int_equal(c.calls, 1);
    assert_int_equal(weir_records_consumed(r), 27);
    feed_bytes(r, &c, "ok\n");
    assert_string_equal(c.buf, "1\nok\n");
    assert_int_equal(c.offs[1], 30);
    /* Exactly max_record bytes is not too long. */
    feed_bytes(r, &c, "01234567\n");
    assert_string_equal(c.buf, "1\nok\n01234567\n");
    weir_records_stats(r, &st);
    assert_int_equal(st.skipped, 1);
    assert_int_equal(st.records, 3);
    weir_records_free(r);
    col_free(&c);
}

static void flush_emits_a_partial_line(void **state)
{
    struct weir_records *r = make((struct weir_records_options){0});
    struct col c = {0};

    (void)state;
    weir_records_reset(r, 100);
    feed_bytes(r, &c, "abc");
    assert_int_equal(c.calls, 0);
    assert_int_equal(weir_records_pending(r), 3);
    assert_int_equal(weir_records_consumed(r), 100);
    assert_int_equal(weir_records_flush(r, NOW, collect, &c), 0);
    assert_string_equal(c.buf, "abc\n");
    assert_int_equal(c.offs[0], 103);
    assert_int_equal(weir_records_pending(r), 0);
    /* Nothing held: a flush emits nothing. */
    assert_int_equal(weir_records_flush(r, NOW, collect, &c), 0);
    assert_int_equal(c.calls, 1);
    feed_bytes(r, &c, "def\n");
    assert_string_equal(c.buf, "abc\ndef\n");
    assert_int_equal(c.offs[1], 107);
    weir_records_free(r);
    col_free(&c);
}

static const char java[] =
    "starting up\n"
    "2026-12-06 12:00:00.001 ERROR [main] request failed\n"
    "java.lang.IllegalStateException: connection pool exhausted\n"
    "\tat com.example.db.Pool.take(Pool.java:142)\n"
    "\tat com.example.api.Handler.handle(Handler.java:57)\n"
    "Caused by: java.net.SocketTimeoutException: Read timed out\n"
    "\tat java.base/java.net.SocketInputStream.read(SocketInputStream.java:"
    "168)\n"
    "\t... 12 more\n"
    "2026-12-06 12:00:01.000 INFO [main] retrying\n"
    "2026-12-06 12:00:02.000 INFO [main] ok";

static void multiline_groups_a_stack_trace(void **state)
{
    struct weir_records_options o = {.multiline_start =
                                         "^\\d{4}-\\d\\d-\\d\\d \\d\\d:"};
    struct weir_records *r = make(o);
    const char *second = strstr(java, "2026-12-06 12:00:01");
    const char *third = strstr(java, "2026-12-06 12:00:02");
    struct col c = {0};
    struct weir_records_stats st;

    (void)state;
    assert_int_equal(weir_records_feed(r, (const uint8_t *)java,
                                       sizeof(java) - 1, NOW, collect, &c),
                     sizeof(java) - 1);
    /* The line before the first start is its own record; the trace is
     * one record, out when the next start line came; that record is
     * held until a line after it starts another, and the last line has
     * no newline yet. */
    assert_int_equal(c.calls, 2);
    assert_int_equal(c.offs[0], 12);
    assert_memory_equal(c.buf, java, (size_t)(second - java));
    assert_int_equal(c.offs[1], second - java);
    assert_int_equal(weir_records_consumed(r), second - java);
    assert_int_equal(weir_records_pending(r), strlen(second));
    /* The flush ends the last line, which closes the one before. */
    assert_int_equal(weir_records_flush(r, NOW, collect, &c), 0);
    assert_int_equal(c.len, sizeof(java));
    assert_memory_equal(c.buf, java, sizeof(java) - 1);
    assert_int_equal(c.buf[c.len - 1], '\n');
    assert_int_equal(c.offs[2], third - java);
    assert_int_equal(c.offs[3], sizeof(java) - 1);
    assert_int_equal(weir_records_consumed(r), sizeof(java) - 1);
    weir_records_stats(r, &st);
    assert_int_equal(st.records, 4);
    assert_int_equal(st.truncated, 0);
    weir_records_free(r);
    col_free(&c);

    /* A record too long is cut at max_record, continuation lines and
     * all, and the next start line still starts the next record. */
    o.max_record = 100;
    r = make(o);
    run(r, &c, java, sizeof(java) - 1, NULL, 0);
    assert_memory_equal(c.buf, java, 12 + 100);
    assert_int_equal(c.buf[112], '\n');
    assert_int_equal(c.len, 113 + strlen(second) + 1);
    assert_memory_equal(c.buf + 113, second, strlen(second));
    weir_records_stats(r, &st);
    assert_int_equal(st.truncated, 1);
    weir_records_free(r);
    col_free(&c);
}

static void a_bad_pattern_says_where(void **state)
{
    struct weir_records_options o = {.multiline_start = "^(\\d+"};
    struct weir_records *r = (void *)1;
    char err[256] = "";

    (void)state;
    assert_int_equal(weir_records_new(&r, &o, err, sizeof(err)), -EINVAL);
    assert_null(r);
    assert_string_equal(err, "multiline_start: missing closing parenthesis at "
                             "offset 5");
    o = (struct weir_records_options){.max_record = 0xffffffffu};
    assert_int_equal(weir_records_new(&r, &o, NULL, 0), -EINVAL);
}

static const char json_in[] =
    "plain \"quoted\" back\\slash\ttab\n"
    "ctl \x01\x1f\x7f\b\f end\n"
    "cr\r\n"
    "bad \xff|\xe2\x82|\xed\xa0\x80|\xc0\xaf|\xf0\x9f\x98\x80|\xf4\x90\x80\x80|"
    "\xe2\x82\xac\n"
    "2026 first\n"
    " more\n"
    "\n";

/* Python's json module reads every line; it prints each message as
 * UTF-8 in hex, after checking the other members. */
static void json_parses_and_keeps_the_text(void **state)
{
    struct weir_records_options o = {.format = WEIR_RECORDS_JSON,
                                     .path = "/var/log/\"odd\"\\\x01.log",
                                     .host = "host-1",
                                     .multiline_start = "^2026"};
    static const char *want[] = {
        "706c61696e202271756f74656422206261636b5c736c61736809746162",
        "63746c20011f7f080c20656e64",
        "63720d",
        /* ff | e2 82 | ed a0 80 | c0 af | emoji | f4 90 80 80 | euro */
        "62616420efbfbd7cefbfbd7cefbfbdefbfbdefbfbd7cefbfbdefbfbd7cf09f9880"
        "7cefbfbdefbfbdefbfbdefbfbd7ce282ac",
        "323032362066697273740a206d6f72650a",
    };
    char path[] = "/tmp/weir-records-XXXXXX", cmd[512], line[512];
    struct weir_records *r = make(o);
    struct col c = {0};
    FILE *fp;
    int fd;

    (void)state;
    run(r, &c, json_in, sizeof(json_in) - 1, NULL, 0);
    fd = mkstemp(path);
    assert_true(fd >= 0);
    assert_int_equal(write(fd, c.buf, c.len), (ssize_t)c.len);
    close(fd);
    snprintf(
        cmd, sizeof(cmd),
        "python3 -c 'import json,sys\n"
        "for l in open(sys.argv[1], \"rb\"):\n"
        "  assert l.endswith(b\"\\n\") and l.count(b\"\\n\") == 1\n"
        "  d = json.loads(l)\n"
        "  assert sorted(d) == [\"file\", \"host\", \"message\", "
        "\"timestamp\"], d\n"
        "  assert d[\"file\"] == \"/var/log/\\\"odd\\\"\\\\\\x01.log\", d\n"
        "  assert d[\"host\"] == \"host-1\"\n"
        "  assert d[\"timestamp\"] == \"2026-12-06T12:00:00.123Z\"\n"
        "  print(d[\"message\"].encode().hex())\n' %s",
        path);
    fp = popen(cmd, "r");
    assert_non_null(fp);
    for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
        assert_non_null(fgets(line, sizeof(line), fp));
        line[strcspn(line, "\n")] = '\0';
        assert_string_equal(line, want[i]);
    }
    /* The empty line after the multiline record joined it. */
    assert_null(fgets(line, sizeof(line), fp));
    assert_int_equal(pclose(fp), 0);
    unlink(path);
    weir_records_free(r);
    col_free(&c);
}

/* The timestamp is each feed's now_ns, to the millisecond, in UTC. */
static void json_timestamps_follow_now(void **state)
{
    struct weir_records *r = make((struct weir_records_options){
        .format = WEIR_RECORDS_JSON, .path = "p", .host = "h"});
    static const uint64_t at[] = {NOW, NOW + 1500000000ull,
                                  NOW + 1500000000ull + 86399000000000ull,
                                  NOW + 7000000ull};
    static const char *want =
        "{\"message\":\"a\",\"file\":\"p\",\"host\":\"h\",\"timestamp\":"
        "\"2026-12-06T12:00:00.123Z\"}\n"
        "{\"message\":\"a\",\"file\":\"p\",\"host\":\"h\",\"timestamp\":"
        "\"2026-12-06T12:00:01.623Z\"}\n"
        "{\"message\":\"a\",\"file\":\"p\",\"host\":\"h\",\"timestamp\":"
        "\"2026-12-07T12:00:00.623Z\"}\n"
        "{\"message\":\"a\",\"file\":\"p\",\"host\":\"h\",\"timestamp\":"
        "\"2026-12-06T12:00:00.130Z\"}\n";
    struct col c = {0};

    (void)state;
    for (size_t i = 0; i < sizeof(at) / sizeof(at[0]); i++)
        assert_int_equal(
            weir_records_feed(r, (const uint8_t *)"a\n", 2, at[i], collect, &c),
            2);
    assert_string_equal(c.buf, want);
    weir_records_free(r);
    col_free(&c);
}

/* Each emit stops the feed; the rest fed later gives the same bytes. */
static void emit_stops_and_the_rest_resumes(void **state)
{
    size_t len = sizeof(mixed) - 1;

    (void)state;
    for (int m = 0; m < MODES; m++) {
        struct weir_records *r = make(mode(m));
        struct col ref = {0}, c = {.stop = true};
        size_t at = 0;
        unsigned feeds = 0;

        run(r, &ref, mixed, len, NULL, 0);
        weir_records_reset(r, 0);
        while (at < len) {
            unsigned before = c.calls;

            at += weir_records_feed(r, (const uint8_t *)mixed + at, len - at,
                                    NOW, collect, &c);
            /* A feed ends at an emit that said stop, or takes all. */
            assert_true(c.calls == before + 1 || at == len);
            feeds++;
        }
        while (weir_records_flush(r, NOW, collect, &c))
            ;
        assert_int_equal(c.len, ref.len);
        assert_memory_equal(c.buf, ref.buf, ref.len);
        assert_true(feeds > 1);
        weir_records_free(r);
        col_free(&ref);
        col_free(&c);
    }
}

/* Each emit's consumed is the offset past the lines behind it, counted
 * from the reset's offset; skipped lines are covered by the next. */
static void consumed_offsets_are_exact(void **state)
{
    struct weir_records *r = make((struct weir_records_options){
        .max_record = 4, .on_long = WEIR_RECORDS_SKIP});
    static const char in[] = "ab\ntoo long\ncd\n";
    struct col c = {0};

    (void)state;
    weir_records_reset(r, 1000);
    assert_int_equal(weir_records_consumed(r), 1000);
    assert_int_equal(
        weir_records_feed(r, (const uint8_t *)in, 7, NOW, collect, &c), 7);
    assert_int_equal(c.offs[0], 1003);
    assert_int_equal(weir_records_consumed(r), 1003);
    /* The skipped line's bytes: nothing emitted, consumed moves past
     * them at its newline. */
    assert_int_equal(
        weir_records_feed(r, (const uint8_t *)in + 7, 5, NOW, collect, &c), 5);
    assert_int_equal(c.calls, 1);
    assert_int_equal(weir_records_consumed(r), 1012);
    assert_int_equal(
        weir_records_feed(r, (const uint8_t *)in + 12, 3, NOW, collect, &c), 3);
    assert_int_equal(c.offs[1], 1015);
    assert_string_equal(c.buf, "ab\ncd\n");
    /* A reset forgets what is held and starts over at its offset. */
    feed_bytes(r, &c, "held");
    weir_records_reset(r, 5);
    c.consumed = 0;
    assert_int_equal(weir_records_pending(r), 0);
    feed_bytes(r, &c, "x\n");
    assert_int_equal(c.offs[2], 7);
    assert_string_equal(c.buf, "ab\ncd\nx\n");
    weir_records_free(r);
    col_free(&c);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(one_feed_output_is_as_expected),
        cmocka_unit_test(every_split_gives_the_same_records),
        cmocka_unit_test(long_lines_across_feeds),
        cmocka_unit_test(flush_emits_a_partial_line),
        cmocka_unit_test(multiline_groups_a_stack_trace),
        cmocka_unit_test(a_bad_pattern_says_where),
        cmocka_unit_test(json_parses_and_keeps_the_text),
        cmocka_unit_test(json_timestamps_follow_now),
        cmocka_unit_test(emit_stops_and_the_rest_resumes),
        cmocka_unit_test(consumed_offsets_are_exact),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
