/*
 * WPT streams/writable-streams/write.any.js, ported to weir's C API.
 */
#include "wpt.h"

#define F "writable-streams/write.any.js"

struct fx {
    struct rsink k;
    struct weir_writable *ws;
    struct weir_writer w;
    int order;
};

static void fx_open(struct fx *f, size_t hwm)
{
    f->ws = rsink_make(&f->k, hwm);
    assert_int_equal(weir_writer_acquire(&f->w, f->ws), 0);
}

static void fx_close(struct fx *f)
{
    weir_writer_release(&f->w);
    weir_writable_destroy(f->ws);
}

/* F: "WritableStream should complete asynchronous writes before close
 * resolves" */
static void async_writes_before_close(void **state)
{
    struct fx f = {.k = {.write_rc = WEIR_PENDING, .close_rc = WEIR_PENDING}};
    struct done cd = {0};
    const char *in[] = {"1", "2", "3", "4", "5"};

    (void)state;
    fx_open(&f, 1);
    for (int i = 0; i < 5; i++)
        weir_writer_write(&f.w, S(in[i]), NULL, NULL);
    weir_writer_close(&f.w, done_cb, &cd);
    for (int i = 0; i < 5; i++) {
        assert_int_equal(cd.calls, 0);
        weir_writable_write_done(f.ws, 0);
    }
    weir_writable_close_done(f.ws, 0);
    assert_int_equal(cd.calls, 1);
    assert_int_equal(cd.rc, 0);
    assert_string_equal(f.k.ev.s,
                        "write:1 write:2 write:3 write:4 write:5 close");
    fx_close(&f);
}

/* F: "WritableStream should complete synchronous writes before close
 * resolves" */
static void sync_writes_before_close(void **state)
{
    struct fx f = {0};
    const char *in[] = {"1", "2", "3", "4", "5"};

    (void)state;
    fx_open(&f, 1);
    for (int i = 0; i < 5; i++)
        weir_writer_write(&f.w, S(in[i]), NULL, NULL);
    assert_int_equal(weir_writer_close(&f.w, done_cb, NULL), 0);
    assert_string_equal(f.k.ev.s,
                        "write:1 write:2 write:3 write:4 write:5 close");
    fx_close(&f);
}

/* F: "WritableStream should transition to waiting until write is
 * acknowledged" */
static void waiting_until_acknowledged(void **state)
{
    struct fx f = {.k = {.write_rc = WEIR_PENDING}};
    struct done wd = {0}, rd = {0};

    (void)state;
    fx_open(&f, 1);
    wd.order = rd.order = &f.order;
    assert_int_equal(weir_writer_desired_size(&f.w), 1);
    weir_writer_write(&f.w, S("a"), done_cb, &wd);
    assert_int_equal(weir_writer_desired_size(&f.w), 0);
    assert_int_equal(weir_writer_ready(&f.w, done_cb, &rd), WEIR_PENDING);
    weir_writable_write_done(f.ws, 0);
    assert_int_equal(wd.rc, 0);
    assert_int_equal(rd.rc, 0);
    assert_true(wd.at < rd.at);
    assert_int_equal(weir_writer_desired_size(&f.w), 1);
    fx_close(&f);
}

/* F: "when write returns a rejected promise, queued writes and close
 * should be cleared" */
static void rejected_clears_queue(void **state)
{
    struct fx f = {.k = {.write_rc = WEIR_PENDING}};
    struct done w1 = {0}, w2 = {0}, cd = {0};

    (void)state;
    fx_open(&f, 1);
    weir_writer_write(&f.w, S("a"), done_cb, &w1);
    assert_int_equal(weir_writer_desired_size(&f.w), 0);
    weir_writer_write(&f.w, S("b"), done_cb, &w2);
    assert_int_equal(weir_writer_desired_size(&f.w), -1);
    assert_int_equal(f.k.writes, 1);
    weir_writer_close(&f.w, done_cb, &cd);
    assert_int_equal(weir_writer_desired_size(&f.w), -1);
    weir_writable_write_done(f.ws, E1);
    assert_int_equal(w1.rc, E1);
    assert_int_equal(w2.rc, E1);
    assert_int_equal(cd.rc, E1);
    assert_int_equal(f.k.writes, 1);
    fx_close(&f);
}

/* The same, with the first write's callback writing again: the stream is
 * errored when the callback runs, so the new write is refused and the
 * failed sink gets nothing more. */
static struct weir_writer *again_writer;
static int again_rc;

static void write_again_cb(void *ctx, int rc)
{
    (void)ctx;
    assert_int_equal(rc, E1);
    again_rc = weir_writer_write(again_writer, S("c"), NULL, NULL);
}

static void rejected_callback_writes_again(void **state)
{
    struct fx f = {.k = {.write_rc = WEIR_PENDING}};

    (void)state;
    fx_open(&f, 4);
    again_writer = &f.w;
    weir_writer_write(&f.w, S("a"), write_again_cb, NULL);
    weir_writer_write(&f.w, S("b"), NULL, NULL);
    weir_writable_write_done(f.ws, E1);
    assert_int_equal(again_rc, E1);
    assert_int_equal(f.k.writes, 1);
    assert_string_equal(f.k.ev.s, "write:a");
    fx_close(&f);
}

/* F: "when sink's write throws an error, the stream should become errored
 * and the promise should reject" */
static void write_throws(void **state)
{
    struct fx f = {.k = {.write_rc = E1}};

    (void)state;
    fx_open(&f, 1);
    assert_int_equal(weir_writer_write(&f.w, S("a"), NULL, NULL), E1);
    assert_int_equal(ws_err(f.ws), E1);
    /* Departure (errors in place of TypeError): the stored error. */
    assert_int_equal(weir_writer_close(&f.w, NULL, NULL), E1);
    fx_close(&f);
}

/* F: "writer.write(), ready and closed reject with the error passed to
 * controller.error() made before sink.write rejection" */
static int error_then_throw(struct rsink *k, struct weir_chunk c)
{
    (void)c;
    weir_writable_error(k->ws, E1);
    return E2;
}

static void controller_error_wins(void **state)
{
    struct fx f = {.k = {.on_write = error_then_throw}};

    (void)state;
    fx_open(&f, 1);
    assert_int_equal(weir_writer_write(&f.w, S("a"), NULL, NULL), E2);
    assert_int_equal(weir_writer_ready(&f.w, NULL, NULL), E1);
    assert_int_equal(ws_err(f.ws), E1);
    fx_close(&f);
}

/* F: "a large queue of writes should be processed completely" */
static int first_pending(struct rsink *k, struct weir_chunk c)
{
    (void)c;
    return k->writes == 1 ? WEIR_PENDING : 0;
}

static void large_queue(void **state)
{
    struct fx f = {.k = {.on_write = first_pending}};
    struct done last = {0};

    (void)state;
    fx_open(&f, 1);
    for (int i = 1; i < 1000; i++)
        weir_writer_write(&f.w, S("a"), NULL, NULL);
    weir_writer_write(&f.w, S("a"), done_cb, &last);
    assert_int_equal(f.k.writes, 1);
    weir_writable_write_done(f.ws, 0);
    assert_int_equal(last.calls, 1);
    assert_int_equal(f.k.writes, 1000);
    assert_int_equal(weir_writable_queued(f.ws), 0);
    fx_close(&f);
}

/* F: "WritableStreamDefaultWriter should work when manually constructed" */
static void manual_writer(void **state)
{
    struct fx f = {0};
    struct weir_writer w2 = {0};

    (void)state;
    f.ws = rsink_new(&f.k);
    assert_int_equal(weir_writer_acquire(&w2, f.ws), 0);
    weir_writer_release(&w2);
    assert_int_equal(weir_writer_acquire(&f.w, f.ws), 0);
    assert_int_equal(weir_writer_ready(&f.w, NULL, NULL), 0);
    weir_writer_write(&f.w, S("a"), NULL, NULL);
    assert_string_equal(f.k.ev.s, "write:a");
    fx_close(&f);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        WPT(async_writes_before_close,
            "WritableStream should complete asynchronous writes before "
            "close resolves"),
        WPT(sync_writes_before_close, "WritableStream should complete "
                                      "synchronous writes before close "
                                      "resolves"),
        WPT(waiting_until_acknowledged, "WritableStream should transition "
                                        "to waiting until write is "
                                        "acknowledged"),
        WPT(rejected_clears_queue,
            "when write returns a rejected promise, queued writes and close "
            "should be cleared"),
        WPT(rejected_callback_writes_again,
            "when write returns a rejected promise, queued writes and close "
            "should be cleared (a write callback writes again)"),
        WPT(write_throws, "when sink's write throws an error, the stream "
                          "should become errored and the promise should "
                          "reject"),
        WPT(controller_error_wins,
            "writer.write(), ready and closed reject with the error passed "
            "to controller.error() made before sink.write rejection"),
        WPT(large_queue,
            "a large queue of writes should be processed completely"),
        WPT(manual_writer, "WritableStreamDefaultWriter should work when "
                           "manually constructed"),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
