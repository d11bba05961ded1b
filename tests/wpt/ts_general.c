/*
 * WPT streams/transform-streams/general.any.js, ported to weir's C API.
 */
#include "wpt_tf.h"

#define F "transform-streams/general.any.js"

/* The uppercaser: "a" becomes "A" (chunks are string literals here). */
static struct weir_chunk upper(struct weir_chunk c)
{
    return chunk_is(c, "a") ? S("A") : c;
}

static int swallow(struct rtf *t, struct weir_chunk c)
{
    (void)t;
    (void)c;
    return 0;
}

/* F: "TransformStream can be constructed with a transform function" */
static int nothing(struct weir_transform *tf, void *ctx, struct weir_chunk c)
{
    (void)tf;
    (void)ctx;
    (void)c;
    return 0;
}

static void construct_with_transform(void **state)
{
    static const struct weir_transformer_ops ops = {.transform = nothing};
    struct weir_transform *tf;

    (void)state;
    assert_int_equal(weir_transform_create(&tf, &ops, NULL, NULL), 0);
    weir_transform_destroy(tf);
}

/* F: "TransformStream can be constructed with no transform function" */
static void construct_without(void **state)
{
    static const struct weir_transformer_ops none = {0};
    struct weir_transform *tf;

    (void)state;
    assert_int_equal(weir_transform_create(&tf, NULL, NULL, NULL), 0);
    weir_transform_destroy(tf);
    assert_int_equal(weir_transform_create(&tf, &none, NULL, NULL), 0);
    weir_transform_destroy(tf);
}

/* F: "TransformStream writable starts in the writable state" */
static void writable_starts_writable(void **state)
{
    struct fx f = {.t = {.on_transform = swallow}};

    (void)state;
    fx_open(&f, 0);
    assert_int_equal(weir_writer_desired_size(&f.w), 1);
    fx_close(&f);
}

/* F: "Identity TransformStream: can read from readable what is put into
 * writable" */
static void identity(void **state)
{
    struct weir_transform *tf;
    struct weir_writer w;
    struct weir_reader r;

    (void)state;
    assert_int_equal(weir_transform_create(&tf, NULL, NULL, NULL), 0);
    weir_writer_acquire(&w, weir_transform_writable(tf));
    weir_reader_acquire(&r, weir_transform_readable(tf));
    weir_writer_write(&w, S("a"), NULL, NULL);
    assert_int_equal(weir_writer_desired_size(&w), 0);
    assert_read(&r, "a");
    assert_int_equal(weir_writer_desired_size(&w), 1);
    weir_reader_release(&r);
    weir_writer_release(&w);
    weir_transform_destroy(tf);
}

static int uppercase(struct rtf *t, struct weir_chunk c)
{
    weir_transform_enqueue(t->tf, upper(c));
    return 0;
}

static int uppercase_twice(struct rtf *t, struct weir_chunk c)
{
    weir_transform_enqueue(t->tf, upper(c));
    weir_transform_enqueue(t->tf, upper(c));
    return 0;
}

/* F: "Uppercaser sync TransformStream: can read from readable transformed
 * version of what is put into writable" */
static void uppercaser_sync(void **state)
{
    struct fx f = {.t = {.on_transform = uppercase}};

    (void)state;
    fx_open(&f, 0);
    weir_writer_write(&f.w, S("a"), NULL, NULL);
    assert_read(&f.r, "A");
    fx_close(&f);
}

/* F: "Uppercaser-doubler sync TransformStream: can read both chunks put
 * into the readable" */
static void doubler_sync(void **state)
{
    struct fx f = {.t = {.on_transform = uppercase_twice}};

    (void)state;
    fx_open(&f, 0);
    weir_writer_write(&f.w, S("a"), NULL, NULL);
    assert_read(&f.r, "A");
    assert_read(&f.r, "A");
    fx_close(&f);
}

/* F: "Uppercaser async TransformStream: can read from readable transformed
 * version of what is put into writable" */
static struct weir_chunk held;
static int hold(struct rtf *t, struct weir_chunk c)
{
    (void)t;
    held = c;
    return WEIR_PENDING;
}

static void uppercaser_async(void **state)
{
    struct fx f = {.t = {.on_transform = hold}};
    struct done rd = {0};
    struct weir_chunk c;

    (void)state;
    fx_open(&f, 0);
    weir_writer_write(&f.w, S("a"), NULL, NULL);
    assert_int_equal(weir_reader_read(&f.r, &c, read_cb, &rd), WEIR_PENDING);
    weir_transform_enqueue(f.tf, upper(held));
    weir_transform_done(f.tf, 0);
    assert_int_equal(rd.rc, 0);
    assert_string_equal(rd.text, "A");
    fx_close(&f);
}

/* F: "Uppercaser-doubler async TransformStream: can read both chunks put
 * into the readable" */
static void doubler_async(void **state)
{
    struct fx f = {.t = {.on_transform = hold}};
    struct done r1 = {0}, r2 = {0};
    struct weir_chunk c;

    (void)state;
    fx_open(&f, 0);
    weir_writer_write(&f.w, S("a"), NULL, NULL);
    assert_int_equal(weir_reader_read(&f.r, &c, read_cb, &r1), WEIR_PENDING);
    weir_transform_enqueue(f.tf, upper(held));
    assert_string_equal(r1.text, "A");
    assert_int_equal(weir_reader_read(&f.r, &c, read_cb, &r2), WEIR_PENDING);
    weir_transform_enqueue(f.tf, upper(held));
    assert_string_equal(r2.text, "A");
    weir_transform_done(f.tf, 0);
    fx_close(&f);
}

/* F: "TransformStream: by default, closing the writable closes the
 * readable (when there are no queued writes)" */
static void close_closes_readable(void **state)
{
    struct fx f = {.t = {.on_transform = swallow}};

    (void)state;
    fx_open(&f, 0);
    assert_int_equal(weir_writer_close(&f.w, NULL, NULL), 0);
    assert_true(weir_writable_closed(f.ws));
    assert_true(weir_readable_closed(f.rs));
    fx_close(&f);
}

/* F: "TransformStream: by default, closing the writable waits for
 * transforms to finish before closing both" */
static int pending(struct rtf *t, struct weir_chunk c)
{
    (void)t;
    (void)c;
    return WEIR_PENDING;
}

static void close_waits_for_transforms(void **state)
{
    struct fx f = {.t = {.on_transform = pending}};
    struct done cd = {0};

    (void)state;
    fx_open(&f, 1);
    weir_writer_write(&f.w, S("a"), NULL, NULL);
    weir_writer_close(&f.w, done_cb, &cd);
    assert_false(weir_readable_closed(f.rs));
    weir_transform_done(f.tf, 0);
    assert_int_equal(cd.rc, 0);
    assert_true(weir_readable_closed(f.rs));
    fx_close(&f);
}

/* Reads everything left into one line ("x y"), synchronously. */
static void read_all(struct weir_reader *r, char *out, size_t cap)
{
    char one[64];

    out[0] = '\0';
    while (read_now(r, one, sizeof(one)) == 0) {
        if (out[0])
            strncat(out, " ", cap - strlen(out) - 1);
        strncat(out, one, cap - strlen(out) - 1);
    }
}

static int enqueue_xy_pending(struct rtf *t, struct weir_chunk c)
{
    (void)c;
    weir_transform_enqueue(t->tf, S("x"));
    weir_transform_enqueue(t->tf, S("y"));
    return WEIR_PENDING;
}

/* F: "TransformStream: by default, closing the writable closes the
 * readable after sync enqueues and async done" */
static void close_after_sync_enqueues(void **state)
{
    struct fx f = {.t = {.on_transform = enqueue_xy_pending}};
    struct done cd = {0};
    char all[64];

    (void)state;
    fx_open(&f, 0);
    weir_writer_write(&f.w, S("a"), NULL, NULL);
    weir_writer_close(&f.w, done_cb, &cd);
    assert_read(&f.r, "x");
    weir_transform_done(f.tf, 0);
    assert_int_equal(cd.rc, 0);
    read_all(&f.r, all, sizeof(all));
    assert_string_equal(all, "y");
    assert_true(weir_readable_closed(f.rs));
    fx_close(&f);
}

/* F: "TransformStream: by default, closing the writable closes the
 * readable after async enqueues and async done" */
static void close_after_async_enqueues(void **state)
{
    struct fx f = {.t = {.on_transform = pending}};
    struct done cd = {0}, rd = {0};
    struct weir_chunk c;
    char all[64];

    (void)state;
    fx_open(&f, 0);
    weir_writer_write(&f.w, S("a"), NULL, NULL);
    weir_writer_close(&f.w, done_cb, &cd);
    assert_int_equal(weir_reader_read(&f.r, &c, read_cb, &rd), WEIR_PENDING);
    weir_transform_enqueue(f.tf, S("x"));
    weir_transform_enqueue(f.tf, S("y"));
    weir_transform_done(f.tf, 0);
    assert_string_equal(rd.text, "x");
    assert_int_equal(cd.rc, 0);
    read_all(&f.r, all, sizeof(all));
    assert_string_equal(all, "y");
    fx_close(&f);
}

/* F: "Transform stream should call transformer methods as methods" (the
 * transformer's context reaches each of its calls) */
static int suffix_start(struct rtf *t)
{
    weir_transform_enqueue(t->tf, S("start-suffix"));
    return 0;
}

static int suffix_transform(struct rtf *t, struct weir_chunk c)
{
    (void)c;
    weir_transform_enqueue(t->tf, S("a-suffix"));
    return 0;
}

static int suffix_flush(struct rtf *t)
{
    weir_transform_enqueue(t->tf, S("flushed-suffix"));
    return 0;
}

static void methods_as_methods(void **state)
{
    struct fx f = {.t = {.on_start = suffix_start,
                         .on_transform = suffix_transform,
                         .on_flush = suffix_flush}};
    char all[128];

    (void)state;
    fx_open(&f, WEIR_HWM_UNLIMITED);
    weir_writer_write(&f.w, S("a"), NULL, NULL);
    assert_int_equal(weir_writer_close(&f.w, NULL, NULL), 0);
    read_all(&f.r, all, sizeof(all));
    assert_string_equal(all, "start-suffix a-suffix flushed-suffix");
    fx_close(&f);
}

/* F: "TransformStream start, transform, and flush should be strictly
 * ordered" */
static int order_transform(struct rtf *t, struct weir_chunk c)
{
    (void)c;
    assert_int_equal(t->n, 1); /* start done */
    return WEIR_PENDING;
}

static int order_flush(struct rtf *t)
{
    assert_int_equal(t->n, 2); /* transform done */
    return WEIR_PENDING;
}

static void strictly_ordered(void **state)
{
    struct fx f = {.t = {.start_rc = WEIR_PENDING,
                         .on_transform = order_transform,
                         .on_flush = order_flush}};
    struct done wd = {0}, cd = {0};

    (void)state;
    fx_open(&f, 1);
    weir_writer_write(&f.w, S("a"), done_cb, &wd);
    weir_writer_close(&f.w, done_cb, &cd);
    assert_int_equal(f.t.transforms, 0);
    f.t.n = 1;
    weir_transform_done(f.tf, 0);
    assert_int_equal(f.t.transforms, 1);
    assert_int_equal(f.t.flushes, 0);
    f.t.n = 2;
    weir_transform_done(f.tf, 0);
    assert_int_equal(f.t.flushes, 1);
    assert_int_equal(cd.calls, 0);
    weir_transform_done(f.tf, 0);
    assert_int_equal(wd.rc, 0);
    assert_int_equal(cd.rc, 0);
    fx_close(&f);
}

/* F: "it should be possible to call transform() synchronously" */
static void transform_synchronously(void **state)
{
    struct fx f = {.t = {.on_transform = swallow}};

    (void)state;
    fx_open(&f, WEIR_HWM_UNLIMITED);
    assert_int_equal(weir_writer_write(&f.w, S("a"), NULL, NULL), 0);
    assert_int_equal(f.t.transforms, 1);
    fx_close(&f);
}

/* F: "closing the writable should close the readable when there are no
 * queued chunks, even with backpressure" */
static void close_with_backpressure(void **state)
{
    struct fx f = {0};

    (void)state;
    fx_open(&f, 0);
    assert_int_equal(weir_writer_close(&f.w, NULL, NULL), 0);
    assert_true(weir_readable_closed(f.rs));
    fx_close(&f);
}

/* F: "enqueue() should throw after controller.terminate()" */
static int start_terminate(struct rtf *t)
{
    weir_transform_terminate(t->tf);
    assert_int_equal(weir_transform_enqueue(t->tf, S("x")), -EINVAL);
    weir_transform_terminate(t->tf); /* a second time: nothing */
    t->n = 1;
    return 0;
}

static void enqueue_after_terminate(void **state)
{
    struct fx f = {.t = {.on_start = start_terminate}};

    (void)state;
    fx_open(&f, 0);
    assert_int_equal(f.t.n, 1);
    fx_close(&f);
}

/* F: "controller.terminate() should do nothing the second time it is
 * called" */
static void terminate_twice(void **state)
{
    struct fx f = {.t = {.on_start = start_terminate}};

    (void)state;
    fx_open(&f, 0);
    assert_true(weir_readable_closed(f.rs));
    assert_int_equal(ws_err(f.ws), -EPIPE);
    fx_close(&f);
}

/* F: "enqueue() should throw after readable.cancel()" */
static void enqueue_after_cancel(void **state)
{
    struct fx f = {0};

    (void)state;
    fx_open(&f, 0);
    assert_int_equal(weir_reader_cancel(&f.r, E1), 0);
    assert_int_equal(weir_transform_enqueue(f.tf, S("x")), -EINVAL);
    fx_close(&f);
}

/* F: "terminate() should do nothing after readable.cancel()" */
static void terminate_after_cancel(void **state)
{
    struct fx f = {0};

    (void)state;
    fx_open(&f, 0);
    assert_int_equal(weir_reader_cancel(&f.r, E1), 0);
    weir_transform_terminate(f.tf);
    assert_int_equal(ws_err(f.ws), E1);
    fx_close(&f);
}

/* F: "start() should not be called twice" */
static int count_start(struct rtf *t)
{
    t->n++;
    return 0;
}

static void start_once(void **state)
{
    struct fx f = {.t = {.on_start = count_start}};

    (void)state;
    fx_open(&f, 0);
    weir_writer_write(&f.w, S("a"), NULL, NULL);
    read_now(&f.r, NULL, 0);
    assert_int_equal(f.t.n, 1);
    fx_close(&f);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        WPT(construct_with_transform,
            "TransformStream can be constructed with a transform function"),
        WPT(construct_without,
            "TransformStream can be constructed with no transform function"),
        WPT(writable_starts_writable,
            "TransformStream writable starts in the writable state"),
        WPT(identity, "Identity TransformStream: can read from readable what "
                      "is put into writable"),
        WPT(uppercaser_sync,
            "Uppercaser sync TransformStream: can read from readable "
            "transformed version of what is put into writable"),
        WPT(doubler_sync, "Uppercaser-doubler sync TransformStream: can read "
                          "both chunks put into the readable"),
        WPT(uppercaser_async,
            "Uppercaser async TransformStream: can read from readable "
            "transformed version of what is put into writable"),
        WPT(doubler_async, "Uppercaser-doubler async TransformStream: can "
                           "read both chunks put into the readable"),
        WPT(close_closes_readable,
            "TransformStream: by default, closing the writable closes the "
            "readable (when there are no queued writes)"),
        WPT(close_waits_for_transforms,
            "TransformStream: by default, closing the writable waits for "
            "transforms to finish before closing both"),
        WPT(close_after_sync_enqueues,
            "TransformStream: by default, closing the writable closes the "
            "readable after sync enqueues and async done"),
        WPT(close_after_async_enqueues,
            "TransformStream: by default, closing the writable closes the "
            "readable after async enqueues and async done"),
        WPT(methods_as_methods,
            "Transform stream should call transformer methods as methods"),
        WPT(strictly_ordered, "TransformStream start, transform, and flush "
                              "should be strictly ordered"),
        WPT(transform_synchronously,
            "it should be possible to call transform() synchronously"),
        WPT(close_with_backpressure,
            "closing the writable should close the readable when there are "
            "no queued chunks, even with backpressure"),
        WPT(enqueue_after_terminate,
            "enqueue() should throw after controller.terminate()"),
        WPT(enqueue_after_cancel,
            "enqueue() should throw after readable.cancel()"),
        WPT(terminate_twice, "controller.terminate() should do nothing the "
                             "second time it is called"),
        WPT(terminate_after_cancel,
            "terminate() should do nothing after readable.cancel()"),
        WPT(start_once, "start() should not be called twice"),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
