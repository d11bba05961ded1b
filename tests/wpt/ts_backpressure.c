/*
 * WPT streams/transform-streams/backpressure.any.js, ported to weir's C
 * API.
 */
#include "wpt_tf.h"

#define F "transform-streams/backpressure.any.js"

static int swallow(struct rtf *t, struct weir_chunk c)
{
    (void)t;
    (void)c;
    return 0;
}

/* F: "backpressure allows no transforms with a default identity transform
 * and no reader" */
static void no_transform_without_reader(void **state)
{
    struct fx f = {0};

    (void)state;
    fx_open(&f, 0);
    weir_writer_write(&f.w, S("a"), NULL, NULL);
    assert_string_equal(f.t.ev.s, "");
    fx_close(&f);
}

/* F: "backpressure only allows one transform() with a identity transform
 * with a readable HWM of 1 and no reader" */
static void one_transform_hwm1(void **state)
{
    struct fx f = {0};

    (void)state;
    fx_open(&f, 1);
    weir_writer_write(&f.w, S("a"), NULL, NULL);
    weir_writer_write(&f.w, S("b"), NULL, NULL);
    assert_string_equal(f.t.ev.s, "transform:a");
    fx_close(&f);
}

/* F: "transform() should keep being called as long as there is no
 * backpressure" */
static void keeps_transforming(void **state)
{
    struct fx f = {.t = {.on_transform = swallow}};
    const char *in[] = {"0", "1", "2", "3"};

    (void)state;
    fx_open(&f, 1);
    for (int i = 0; i < 4; i++)
        assert_int_equal(weir_writer_write(&f.w, S(in[i]), NULL, NULL), 0);
    assert_string_equal(f.t.ev.s,
                        "transform:0 transform:1 transform:2 transform:3");
    fx_close(&f);
}

/* F: "writes should resolve as soon as transform completes" */
static void writes_resolve_on_transform(void **state)
{
    struct weir_transform *tf;
    struct weir_transform_options o = {.writable = {.hwm = 1},
                                       .readable = {.hwm = 1}};
    struct weir_writer w;
    struct weir_reader r;
    struct done a = {0}, b = {0}, cd = {0};
    struct weir_chunk c;

    (void)state;
    assert_int_equal(weir_transform_create(&tf, NULL, NULL, &o), 0);
    weir_writer_acquire(&w, weir_transform_writable(tf));
    weir_reader_acquire(&r, weir_transform_readable(tf));
    assert_int_equal(weir_writer_write(&w, S("a"), done_cb, &a), 0);
    assert_int_equal(weir_writer_write(&w, S("b"), done_cb, &b), WEIR_PENDING);
    assert_int_equal(weir_writer_close(&w, done_cb, &cd), WEIR_PENDING);
    assert_int_equal(b.calls + cd.calls, 0);
    assert_read(&r, "a");
    assert_int_equal(b.calls, 1);
    assert_int_equal(cd.calls, 1);
    assert_read(&r, "b");
    assert_int_equal(weir_reader_read(&r, &c, never_read, NULL), WEIR_DONE);
    weir_reader_release(&r);
    weir_writer_release(&w);
    weir_transform_destroy(tf);
}

/* F: "calling pull() before the first write() with backpressure should
 * work" */
static void pull_before_write(void **state)
{
    struct weir_transform *tf;
    struct weir_writer w;
    struct weir_reader r;
    struct done rd = {0};
    struct weir_chunk c;

    (void)state;
    assert_int_equal(weir_transform_create(&tf, NULL, NULL, NULL), 0);
    weir_writer_acquire(&w, weir_transform_writable(tf));
    weir_reader_acquire(&r, weir_transform_readable(tf));
    assert_int_equal(weir_reader_read(&r, &c, read_cb, &rd), WEIR_PENDING);
    weir_writer_write(&w, S("a"), NULL, NULL);
    assert_int_equal(rd.rc, 0);
    assert_string_equal(rd.text, "a");
    weir_reader_release(&r);
    weir_writer_release(&w);
    weir_transform_destroy(tf);
}

/* F: "transform() should be able to read the chunk it just enqueued" */
static struct weir_reader *reader_of;
static int enqueue_and_read(struct rtf *t, struct weir_chunk c)
{
    weir_transform_enqueue(t->tf, c);
    assert_read(reader_of, "a");
    return 0;
}

static void read_own_enqueue(void **state)
{
    struct fx f = {.t = {.on_transform = enqueue_and_read}};

    (void)state;
    fx_open(&f, 1);
    reader_of = &f.r;
    assert_int_equal(weir_writer_write(&f.w, S("a"), NULL, NULL), 0);
    fx_close(&f);
}

/* F: "blocking transform() should cause backpressure" */
static int pending(struct rtf *t, struct weir_chunk c)
{
    (void)t;
    (void)c;
    return WEIR_PENDING;
}

static void blocking_backpressure(void **state)
{
    struct fx f = {.t = {.on_transform = pending}};

    (void)state;
    fx_open(&f, WEIR_HWM_UNLIMITED);
    assert_int_equal(weir_writer_desired_size(&f.w), 1);
    weir_writer_write(&f.w, S("a"), NULL, NULL);
    assert_string_equal(f.t.ev.s, "transform:a");
    assert_int_equal(weir_writer_desired_size(&f.w), 0);
    weir_transform_done(f.tf, 0);
    assert_int_equal(weir_writer_desired_size(&f.w), 1);
    fx_close(&f);
}

/* F: "writer.closed should resolve after readable is canceled during
 * start" */
static void cancel_during_start(void **state)
{
    struct fx f = {.t = {.start_rc = WEIR_PENDING}};

    (void)state;
    fx_open(&f, 0);
    weir_reader_cancel(&f.r, E1);
    weir_transform_done(f.tf, 0);
    assert_int_equal(ws_err(f.ws), E1);
    fx_close(&f);
}

/* F: "writer.closed should resolve after readable is canceled with
 * backpressure" */
static void cancel_with_backpressure(void **state)
{
    struct fx f = {0};

    (void)state;
    fx_open(&f, 0);
    weir_reader_cancel(&f.r, E1);
    assert_int_equal(ws_err(f.ws), E1);
    fx_close(&f);
}

/* F: "writer.closed should resolve after readable is canceled with no
 * backpressure" */
static void cancel_without_backpressure(void **state)
{
    struct fx f = {0};

    (void)state;
    fx_open(&f, 1);
    weir_reader_cancel(&f.r, E1);
    assert_int_equal(ws_err(f.ws), E1);
    fx_close(&f);
}

/* F: "cancelling the readable should cause a pending write to resolve" */
static void cancel_resolves_write(void **state)
{
    struct fx f = {0};
    struct done wd = {0};

    (void)state;
    fx_open(&f, 1);
    /* No backpressure yet: the write is transformed at once and settles
     * with success whatever the cancel does next. */
    wd.rc = 1;
    assert_int_equal(weir_writer_write(&f.w, S("a"), done_cb, &wd), 0);
    assert_int_equal(weir_reader_cancel(&f.r, E1), 0);
    assert_int_equal(wd.calls, 0);
    assert_int_equal(ws_err(f.ws), E1);
    fx_close(&f);
}

/* The pipe cases: an empty or full source piped into the transform whose
 * readable side is then cancelled. */
static const char *const abc[] = {"a", "b", "c", NULL};

static void pipe_then_cancel(bool full)
{
    struct weir_transform *tf;
    struct rsrc s = {.on_start = start_enqueue,
                     .user = full ? (void *)abc : NULL};
    struct weir_readable *rs = rsrc_make(&s, 3, false);
    struct weir_reader r;
    struct done d = {0};

    assert_int_equal(weir_transform_create(&tf, NULL, NULL, NULL), 0);
    pipe_go(rs, weir_transform_writable(tf), 0, &d);
    assert_int_equal(d.calls, 0);
    weir_reader_acquire(&r, weir_transform_readable(tf));
    weir_reader_cancel(&r, E1);
    assert_int_equal(d.calls, 1);
    assert_int_equal(d.rc, E1);
    assert_int_equal(s.cancel_reason, E1);
    weir_reader_release(&r);
    weir_readable_destroy(rs);
    weir_transform_destroy(tf);
}

/* F: "cancelling the readable side of a TransformStream should abort an
 * empty pipe" */
static void cancel_empty_pipe(void **state)
{
    (void)state;
    pipe_then_cancel(false);
}

/* F: "cancelling the readable side of a TransformStream should abort an
 * empty pipe after startup" */
static void cancel_empty_pipe_started(void **state)
{
    (void)state;
    pipe_then_cancel(false);
}

/* F: "cancelling the readable side of a TransformStream should abort a
 * full pipe" */
static void cancel_full_pipe(void **state)
{
    (void)state;
    pipe_then_cancel(true);
}

/* F: "calling pull() resolves writer.ready with a writable HWM of 0": the
 * readable side's pull releases the writable side's backpressure
 * (weir_writable_release_backpressure). */
static void pull_resolves_ready_hwm0(void **state)
{
    struct fx f = {0};
    struct weir_chunk c;
    struct done r1 = {0}, r2 = {0}, rd = {0};

    (void)state;
    f.tf = rtf_make(&f.t, 0, 0);
    f.rs = weir_transform_readable(f.tf);
    f.ws = weir_transform_writable(f.tf);
    assert_int_equal(weir_reader_acquire(&f.r, f.rs), 0);
    assert_int_equal(weir_writer_acquire(&f.w, f.ws), 0);
    assert_int_equal(weir_writer_desired_size(&f.w), 0);
    assert_int_equal(weir_writer_ready(&f.w, done_cb, &r1), WEIR_PENDING);
    assert_int_equal(r1.calls, 0);
    assert_int_equal(weir_reader_read(&f.r, &c, read_cb, &rd), WEIR_PENDING);
    assert_int_equal(r1.calls, 1);
    assert_int_equal(r1.rc, 0);
    assert_int_equal(weir_writer_desired_size(&f.w), 0);
    weir_writer_write(&f.w, S("a"), NULL, NULL);
    assert_int_equal(weir_writer_ready(&f.w, done_cb, &r2), WEIR_PENDING);
    assert_int_equal(r2.calls, 0);
    assert_int_equal(weir_writer_desired_size(&f.w), 0);
    assert_int_equal(rd.rc, 0);
    assert_string_equal(rd.text, "a");
    fx_close(&f);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        WPT(no_transform_without_reader,
            "backpressure allows no transforms with a default identity "
            "transform and no reader"),
        WPT(one_transform_hwm1,
            "backpressure only allows one transform() with a identity "
            "transform with a readable HWM of 1 and no reader"),
        WPT(keeps_transforming, "transform() should keep being called as "
                                "long as there is no backpressure"),
        WPT(writes_resolve_on_transform,
            "writes should resolve as soon as transform completes"),
        WPT(pull_before_write, "calling pull() before the first write() with "
                               "backpressure should work"),
        WPT(read_own_enqueue,
            "transform() should be able to read the chunk it just enqueued"),
        WPT(blocking_backpressure,
            "blocking transform() should cause backpressure"),
        WPT(cancel_during_start, "writer.closed should resolve after "
                                 "readable is canceled during start"),
        WPT(cancel_with_backpressure, "writer.closed should resolve after "
                                      "readable is canceled with "
                                      "backpressure"),
        WPT(cancel_without_backpressure,
            "writer.closed should resolve after readable is canceled with "
            "no backpressure"),
        WPT(cancel_resolves_write,
            "cancelling the readable should cause a pending write to "
            "resolve"),
        WPT(cancel_empty_pipe, "cancelling the readable side of a "
                               "TransformStream should abort an empty pipe"),
        WPT(cancel_empty_pipe_started,
            "cancelling the readable side of a TransformStream should abort "
            "an empty pipe after startup"),
        WPT(cancel_full_pipe, "cancelling the readable side of a "
                              "TransformStream should abort a full pipe"),
        WPT(pull_resolves_ready_hwm0, "calling pull() resolves writer.ready "
                                      "with a writable HWM of 0"),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
