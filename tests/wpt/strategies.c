/*
 * The queuing-strategy integration files of WPT streams, ported to weir's
 * C API (struct weir_strategy: a count or a byte length):
 *   readable-streams/count-queuing-strategy-integration.any.js
 *   writable-streams/count-queuing-strategy.any.js
 *   writable-streams/byte-length-queuing-strategy.any.js
 *   transform-streams/strategies.any.js
 */
#include "wpt.h"

#define RQ "readable-streams/count-queuing-strategy-integration.any.js"
#define WQ "writable-streams/count-queuing-strategy.any.js"
#define WB "writable-streams/byte-length-queuing-strategy.any.js"
#define TS "transform-streams/strategies.any.js"

/* RQ: "Can construct a readable stream with a valid CountQueuingStrategy" */
static void rs_construct(void **state)
{
    struct weir_readable_options o = {.strategy = {.hwm = 4}};
    struct weir_readable *rs;

    (void)state;
    assert_int_equal(weir_readable_create(&rs, NULL, NULL, &o), 0);
    assert_int_equal(weir_readable_desired_size(rs), 4);
    weir_readable_destroy(rs);
}

/* The three "Correctly governs" cases: enqueue and read in the WPT's
 * order, checking the desired size at each step. */
static struct weir_readable *rs_hwm(size_t hwm, struct weir_reader *r)
{
    struct weir_readable_options o = {.strategy = {.hwm = hwm}};
    struct weir_readable *rs;

    assert_int_equal(weir_readable_create(&rs, NULL, NULL, &o), 0);
    assert_int_equal(weir_reader_acquire(r, rs), 0);
    return rs;
}

static void enq(struct weir_readable *rs, const char *s, int64_t want)
{
    assert_int_equal(weir_readable_enqueue(rs, S(s)), 0);
    assert_int_equal(weir_readable_desired_size(rs), want);
}

/* RQ: "Correctly governs a ReadableStreamController's desiredSize property
 * (HWM = 0)" */
static void rs_governs_0(void **state)
{
    struct weir_reader r;
    struct weir_readable *rs = rs_hwm(0, &r);

    (void)state;
    assert_int_equal(weir_readable_desired_size(rs), 0);
    enq(rs, "a", -1);
    enq(rs, "b", -2);
    enq(rs, "c", -3);
    enq(rs, "d", -4);
    assert_read(&r, "a");
    assert_read(&r, "b");
    assert_read(&r, "c");
    assert_int_equal(weir_readable_desired_size(rs), -1);
    enq(rs, "e", -2);
    assert_read(&r, "d");
    assert_read(&r, "e");
    assert_int_equal(weir_readable_desired_size(rs), 0);
    enq(rs, "f", -1);
    enq(rs, "g", -2);
    weir_reader_release(&r);
    weir_readable_destroy(rs);
}

/* RQ: "Correctly governs a ReadableStreamController's desiredSize property
 * (HWM = 1)" */
static void rs_governs_1(void **state)
{
    struct weir_reader r;
    struct weir_readable *rs = rs_hwm(1, &r);

    (void)state;
    assert_int_equal(weir_readable_desired_size(rs), 1);
    enq(rs, "a", 0);
    enq(rs, "b", -1);
    enq(rs, "c", -2);
    enq(rs, "d", -3);
    assert_read(&r, "a");
    assert_read(&r, "b");
    assert_read(&r, "c");
    assert_int_equal(weir_readable_desired_size(rs), 0);
    enq(rs, "e", -1);
    assert_read(&r, "d");
    assert_read(&r, "e");
    assert_int_equal(weir_readable_desired_size(rs), 1);
    enq(rs, "f", 0);
    enq(rs, "g", -1);
    weir_reader_release(&r);
    weir_readable_destroy(rs);
}

/* RQ: "Correctly governs a ReadableStreamController's desiredSize property
 * (HWM = 4)" */
static void rs_governs_4(void **state)
{
    struct weir_reader r;
    struct weir_readable *rs = rs_hwm(4, &r);

    (void)state;
    assert_int_equal(weir_readable_desired_size(rs), 4);
    enq(rs, "a", 3);
    enq(rs, "b", 2);
    enq(rs, "c", 1);
    enq(rs, "d", 0);
    enq(rs, "e", -1);
    enq(rs, "f", -2);
    assert_read(&r, "a");
    assert_read(&r, "b");
    assert_int_equal(weir_readable_desired_size(rs), 0);
    enq(rs, "g", -1);
    assert_read(&r, "c");
    assert_read(&r, "d");
    assert_read(&r, "e");
    assert_read(&r, "f");
    assert_int_equal(weir_readable_desired_size(rs), 3);
    enq(rs, "h", 2);
    enq(rs, "i", 1);
    enq(rs, "j", 0);
    enq(rs, "k", -1);
    weir_reader_release(&r);
    weir_readable_destroy(rs);
}

/* WQ: "Can construct a writable stream with a valid CountQueuingStrategy" */
static void ws_construct(void **state)
{
    struct weir_writable_options o = {.strategy = {.hwm = 4}};
    struct weir_writable *ws;

    (void)state;
    assert_int_equal(weir_writable_create(&ws, NULL, NULL, &o), 0);
    assert_int_equal(weir_writable_desired_size(ws), 4);
    weir_writable_destroy(ws);
}

static void wr(struct weir_writer *w, const char *s, int64_t want)
{
    weir_writer_write(w, S(s), NULL, NULL);
    assert_int_equal(weir_writer_desired_size(w), want);
}

static void done_one(struct weir_writable *ws, struct weir_writer *w,
                     int64_t want)
{
    weir_writable_write_done(ws, 0);
    assert_int_equal(weir_writer_desired_size(w), want);
}

/* WQ: "Correctly governs the value of a WritableStream's state property
 * (HWM = 0)" */
static void ws_governs_0(void **state)
{
    struct rsink k = {.write_rc = WEIR_PENDING};
    struct weir_writable *ws = rsink_make(&k, 0);
    struct weir_writer w;

    (void)state;
    weir_writer_acquire(&w, ws);
    assert_int_equal(weir_writer_desired_size(&w), 0);
    wr(&w, "a", -1);
    wr(&w, "b", -2);
    done_one(ws, &w, -1);
    done_one(ws, &w, 0);
    wr(&w, "c", -1);
    done_one(ws, &w, 0);
    weir_writer_release(&w);
    weir_writable_destroy(ws);
}

/* WQ: "Correctly governs the value of a WritableStream's state property
 * (HWM = 4)" */
static void ws_governs_4(void **state)
{
    struct rsink k = {.write_rc = WEIR_PENDING};
    struct weir_writable *ws = rsink_make(&k, 4);
    struct weir_writer w;

    (void)state;
    weir_writer_acquire(&w, ws);
    assert_int_equal(weir_writer_desired_size(&w), 4);
    wr(&w, "a", 3);
    wr(&w, "b", 2);
    wr(&w, "c", 1);
    wr(&w, "d", 0);
    wr(&w, "e", -1);
    wr(&w, "f", -2);
    wr(&w, "g", -3);
    done_one(ws, &w, -2);
    done_one(ws, &w, -1);
    done_one(ws, &w, 0);
    wr(&w, "h", -1);
    done_one(ws, &w, 0);
    wr(&w, "i", -1);
    weir_writer_release(&w);
    weir_writable_destroy(ws);
}

/* WB: "Closing a writable stream with in-flight writes below the high
 * water mark delays the close call properly" */
static int close_after_write(struct rsink *k)
{
    assert_int_equal(k->n, 1);
    return 0;
}

static void ws_bytes_close_waits(void **state)
{
    struct rsink k = {.write_rc = WEIR_PENDING, .on_close = close_after_write};
    struct weir_writable_options o = {
        .strategy = {.hwm = 16384, .bytes = true}};
    struct weir_writable *ws;
    struct weir_writer w;
    struct done cd = {0};
    static uint8_t kib[1024];

    (void)state;
    assert_int_equal(weir_writable_create(&ws, &rsink_ops, &k, &o), 0);
    weir_writer_acquire(&w, ws);
    weir_writer_write(&w, (struct weir_chunk){NULL, kib, 1024}, NULL, NULL);
    assert_int_equal(weir_writer_desired_size(&w), 16384 - 1024);
    assert_int_equal(weir_writer_close(&w, done_cb, &cd), WEIR_PENDING);
    assert_int_equal(k.closes, 0);
    k.n = 1;
    weir_writable_write_done(ws, 0);
    assert_int_equal(k.closes, 1);
    assert_int_equal(cd.rc, 0);
    weir_writer_release(&w);
    weir_writable_destroy(ws);
}

/* TS: "writableStrategy highWaterMark should work" */
static void ts_writable_hwm(void **state)
{
    struct weir_transform_options o = {.writable = {.hwm = 17}};
    struct weir_transform *tf;
    struct weir_writer w;

    (void)state;
    assert_int_equal(weir_transform_create(&tf, NULL, NULL, &o), 0);
    weir_writer_acquire(&w, weir_transform_writable(tf));
    assert_int_equal(weir_writer_desired_size(&w), 17);
    weir_writer_release(&w);
    weir_transform_destroy(tf);
}

/* TS: "readableStrategy highWaterMark should work" */
static void ts_readable_hwm(void **state)
{
    static const char *const d[] = {"0", "1", "2", "3", "4",
                                    "5", "6", "7", "8", "9"};
    struct rtf t = {0};
    struct weir_transform *tf = rtf_make(&t, 1, 9);
    struct weir_writer w;

    (void)state;
    weir_writer_acquire(&w, weir_transform_writable(tf));
    for (int i = 0; i < 10; i++)
        weir_writer_write(&w, S(d[i]), NULL, NULL);
    assert_int_equal(t.transforms, 9);
    assert_string_equal(t.ev.s, "transform:0 transform:1 transform:2 "
                                "transform:3 transform:4 transform:5 "
                                "transform:6 transform:7 transform:8");
    weir_writer_release(&w);
    weir_transform_destroy(tf);
}

/* TS: "default writable strategy should be equivalent to { highWaterMark:
 * 1 }" */
static void ts_default_writable(void **state)
{
    struct weir_transform *tf;
    struct weir_writer w;

    (void)state;
    assert_int_equal(weir_transform_create(&tf, NULL, NULL, NULL), 0);
    weir_writer_acquire(&w, weir_transform_writable(tf));
    assert_int_equal(weir_writer_desired_size(&w), 1);
    weir_writer_write(&w, S("x"), NULL, NULL);
    assert_int_equal(weir_writer_desired_size(&w), 0);
    weir_writer_release(&w);
    weir_transform_destroy(tf);
}

/* TS: "default readable strategy should be equivalent to { highWaterMark:
 * 0 }" */
static int enqueue_twice_checking(struct rtf *t, struct weir_chunk c)
{
    (void)c;
    assert_int_equal(weir_transform_desired_size(t->tf), 0);
    weir_transform_enqueue(t->tf, S("u"));
    /* The first chunk went to the waiting read. */
    assert_int_equal(weir_transform_desired_size(t->tf), 0);
    weir_transform_enqueue(t->tf, S("u"));
    assert_int_equal(weir_transform_desired_size(t->tf), -1);
    t->n = 1;
    return 0;
}

static void ts_default_readable(void **state)
{
    static const struct weir_transformer_ops ops = {.transform = rtf_transform};
    struct rtf t = {.on_transform = enqueue_twice_checking};
    struct weir_transform *tf;
    struct weir_writer w;
    struct weir_reader r;
    struct done rd = {0};
    struct weir_chunk c;

    (void)state;
    assert_int_equal(weir_transform_create(&tf, &ops, &t, NULL), 0);
    weir_writer_acquire(&w, weir_transform_writable(tf));
    weir_reader_acquire(&r, weir_transform_readable(tf));
    weir_writer_write(&w, S("x"), NULL, NULL);
    assert_int_equal(weir_reader_read(&r, &c, read_cb, &rd), 0);
    assert_int_equal(t.n, 1);
    weir_reader_release(&r);
    weir_writer_release(&w);
    weir_transform_destroy(tf);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        WPT(rs_construct, "Can construct a readable stream with a valid "
                          "CountQueuingStrategy"),
        WPT(rs_governs_0, "Correctly governs a ReadableStreamController's "
                          "desiredSize property (HWM = 0)"),
        WPT(rs_governs_1, "Correctly governs a ReadableStreamController's "
                          "desiredSize property (HWM = 1)"),
        WPT(rs_governs_4, "Correctly governs a ReadableStreamController's "
                          "desiredSize property (HWM = 4)"),
        WPT(ws_construct, "Can construct a writable stream with a valid "
                          "CountQueuingStrategy"),
        WPT(ws_governs_0, "Correctly governs the value of a WritableStream's "
                          "state property (HWM = 0)"),
        WPT(ws_governs_4, "Correctly governs the value of a WritableStream's "
                          "state property (HWM = 4)"),
        WPT(ws_bytes_close_waits,
            "Closing a writable stream with in-flight writes below the high "
            "water mark delays the close call properly"),
        WPT(ts_writable_hwm, "writableStrategy highWaterMark should work"),
        WPT(ts_readable_hwm, "readableStrategy highWaterMark should work"),
        WPT(ts_default_writable, "default writable strategy should be "
                                 "equivalent to { highWaterMark: 1 }"),
        WPT(ts_default_readable, "default readable strategy should be "
                                 "equivalent to { highWaterMark: 0 }"),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
