/*
 * WPT streams/readable-streams/general.any.js, ported to weir's C API.
 * A start or pull "promise" is WEIR_PENDING and the matching *_done call.
 */
#include "wpt.h"

#define F "readable-streams/general.any.js"

static struct weir_reader rd;

static struct weir_readable *open_src(struct rsrc *s, size_t hwm)
{
    struct weir_readable *rs = rsrc_make(s, hwm, false);

    assert_int_equal(weir_reader_acquire(&rd, rs), 0);
    return rs;
}

static void shut(struct weir_readable *rs)
{
    weir_reader_release(&rd);
    weir_readable_destroy(rs);
}

/* F: "ReadableStream can be constructed with no errors" */
static void construct(void **state)
{
    static const struct weir_source_ops none = {0};
    struct weir_readable *rs;

    (void)state;
    assert_int_equal(weir_readable_create(&rs, NULL, NULL, NULL), 0);
    weir_readable_destroy(rs);
    assert_int_equal(weir_readable_create(&rs, &none, NULL, NULL), 0);
    weir_readable_destroy(rs);
}

/* F: "ReadableStream start should be able to return a promise" */
static void start_promise(void **state)
{
    struct rsrc s = {.start_rc = WEIR_PENDING};
    struct weir_readable *rs = open_src(&s, 1);
    struct done d = {0};
    struct weir_chunk c;

    (void)state;
    assert_int_equal(weir_reader_read(&rd, &c, read_cb, &d), WEIR_PENDING);
    weir_readable_enqueue(rs, S("a"));
    weir_readable_close(rs);
    weir_readable_start_done(rs, 0);
    assert_int_equal(d.rc, 0);
    assert_string_equal(d.text, "a");
    assert_true(weir_readable_closed(rs));
    shut(rs);
}

/* F: "ReadableStream start should be able to return a promise and reject
 * it" */
static void start_promise_reject(void **state)
{
    struct rsrc s = {.start_rc = WEIR_PENDING};
    struct weir_readable *rs = open_src(&s, 1);

    (void)state;
    weir_readable_start_done(rs, E1);
    assert_int_equal(rs_err(rs), E1);
    shut(rs);
}

/* F: "ReadableStream should be able to enqueue different objects." (chunks
 * of different sizes and contents) */
static const char *const objs[] = {"{potato: Give me more!}", "test", "1",
                                   NULL};

static void different_objects(void **state)
{
    struct rsrc s = {.on_start = start_enqueue, .user = (void *)objs, .n = 1};
    struct weir_readable *rs = open_src(&s, 1);
    struct weir_chunk c;

    (void)state;
    assert_read(&rd, objs[0]);
    assert_read(&rd, objs[1]);
    assert_read(&rd, objs[2]);
    assert_int_equal(weir_reader_read(&rd, &c, never_read, NULL), WEIR_DONE);
    shut(rs);
}

/* F: "ReadableStream: if pull rejects, it should error the stream" */
static void pull_rejects(void **state)
{
    struct rsrc s = {.pull_rc = WEIR_PENDING};
    struct weir_readable *rs = open_src(&s, 1);
    struct done d = {0};
    struct weir_chunk c;

    (void)state;
    assert_int_equal(weir_reader_read(&rd, &c, read_cb, &d), WEIR_PENDING);
    weir_readable_pull_done(rs, E1);
    assert_int_equal(d.rc, E1);
    assert_int_equal(rs_err(rs), E1);
    shut(rs);
}

/* F: "ReadableStream: should only call pull once upon starting the
 * stream" */
static void pull_once_on_start(void **state)
{
    struct rsrc s = {.start_rc = WEIR_PENDING};
    struct weir_readable *rs = rsrc_new(&s);

    (void)state;
    assert_int_equal(s.pulls, 0);
    weir_readable_start_done(rs, 0);
    assert_int_equal(s.pulls, 1);
    weir_readable_destroy(rs);
}

/* F: "ReadableStream: should call pull when trying to read from a started,
 * empty stream" */
static int enqueue_count_after_first(struct rsrc *s)
{
    if (s->pulls > 1) {
        static const char *const num[] = {"0", "1", "2", "3", "4"};

        weir_readable_enqueue(s->rs, S(num[s->pulls - 1]));
    }
    return 0;
}

static void pull_on_empty_read(void **state)
{
    struct rsrc s = {.on_pull = enqueue_count_after_first};
    struct weir_readable *rs = open_src(&s, 1);

    (void)state;
    assert_int_equal(s.pulls, 1);
    assert_read(&rd, "1");
    assert_int_equal(s.pulls, 3);
    shut(rs);
}

/* F: "ReadableStream: should only call pull once on a non-empty stream
 * read from before start fulfills" */
static const char *const a[] = {"a", NULL};

static void pull_once_read_before_start(void **state)
{
    struct rsrc s = {.start_rc = WEIR_PENDING};
    struct weir_readable *rs = open_src(&s, 1);

    (void)state;
    weir_readable_enqueue(rs, S("a"));
    assert_read(&rd, "a");
    assert_int_equal(s.pulls, 0);
    weir_readable_start_done(rs, 0);
    assert_int_equal(s.pulls, 1);
    shut(rs);
}

/* F: "ReadableStream: should only call pull once on a non-empty stream
 * read from after start fulfills" */
static void pull_once_read_after_start(void **state)
{
    struct rsrc s = {.on_start = start_enqueue, .user = (void *)a};
    struct weir_readable *rs = open_src(&s, 1);

    (void)state;
    assert_int_equal(s.pulls, 0);
    assert_read(&rd, "a");
    assert_int_equal(s.pulls, 1);
    shut(rs);
}

/* F: "ReadableStream: should call pull in reaction to read()ing the last
 * chunk, if not draining" */
static void pull_after_last_not_draining(void **state)
{
    struct rsrc s = {0};
    struct weir_readable *rs = open_src(&s, 1);

    (void)state;
    assert_int_equal(s.pulls, 1);
    weir_readable_enqueue(rs, S("a"));
    assert_int_equal(s.pulls, 1);
    assert_read(&rd, "a");
    assert_int_equal(s.pulls, 2);
    shut(rs);
}

/* F: "ReadableStream: should not call pull() in reaction to read()ing the
 * last chunk, if draining" */
static void no_pull_after_last_draining(void **state)
{
    struct rsrc s = {0};
    struct weir_readable *rs = open_src(&s, 1);

    (void)state;
    weir_readable_enqueue(rs, S("a"));
    weir_readable_close(rs);
    assert_read(&rd, "a");
    assert_int_equal(s.pulls, 1);
    assert_true(weir_readable_closed(rs));
    shut(rs);
}

/* F: "ReadableStream: should not call pull until the previous pull call's
 * promise fulfills" */
static int enqueue_and_pend(struct rsrc *s)
{
    static const char *const num[] = {"1", "2", "3"};

    weir_readable_enqueue(s->rs, S(num[s->pulls - 1]));
    return WEIR_PENDING;
}

static void no_pull_until_previous(void **state)
{
    struct rsrc s = {.on_pull = enqueue_and_pend};
    struct weir_readable *rs = open_src(&s, 1);

    (void)state;
    assert_read(&rd, "1");
    assert_int_equal(s.pulls, 1);
    weir_readable_pull_done(rs, 0);
    assert_int_equal(s.pulls, 2);
    shut(rs);
}

/* F: "ReadableStream: should pull after start, and after every read" */
static const char *const abc[] = {"a", "b", "c", NULL};

static void pull_after_every_read(void **state)
{
    struct rsrc s = {.on_start = start_enqueue, .user = (void *)abc};
    struct weir_readable *rs = open_src(&s, WEIR_HWM_UNLIMITED);

    (void)state;
    assert_int_equal(s.pulls, 1);
    assert_read(&rd, "a");
    assert_read(&rd, "b");
    assert_read(&rd, "c");
    assert_int_equal(s.pulls, 4);
    shut(rs);
}

/* F: "ReadableStream: should not call pull after start if the stream is
 * now closed" */
static void no_pull_when_closed(void **state)
{
    struct rsrc s = {.on_start = start_enqueue, .user = (void *)a, .n = 1};
    struct weir_readable *rs = open_src(&s, 1);
    struct weir_chunk c;

    (void)state;
    assert_int_equal(s.pulls, 0);
    assert_read(&rd, "a");
    assert_int_equal(weir_reader_read(&rd, &c, never_read, NULL), WEIR_DONE);
    assert_int_equal(s.pulls, 0);
    shut(rs);
}

/* F: "ReadableStream: should call pull after enqueueing from inside pull
 * (with no read requests), if strategy allows" */
static int enqueue_count(struct rsrc *s)
{
    return weir_readable_enqueue(s->rs, S("n"));
}

static void pull_again_inside_pull(void **state)
{
    struct rsrc s = {.on_pull = enqueue_count};
    struct weir_readable *rs = rsrc_make(&s, 4, false);

    (void)state;
    assert_int_equal(s.pulls, 4);
    assert_int_equal(weir_readable_queued(rs), 4);
    weir_readable_destroy(rs);
}

/* F: "ReadableStream pull should be able to close a stream." */
static int pull_closes(struct rsrc *s)
{
    return weir_readable_close(s->rs);
}

static void pull_can_close(void **state)
{
    struct rsrc s = {.on_pull = pull_closes};
    struct weir_readable *rs = rsrc_new(&s);

    (void)state;
    assert_int_equal(s.pulls, 1);
    assert_true(weir_readable_closed(rs));
    weir_readable_destroy(rs);
}

/* F: "ReadableStream pull should be able to error a stream." */
static int pull_errors(struct rsrc *s)
{
    weir_readable_error(s->rs, E1);
    return s->n;
}

static void pull_can_error(void **state)
{
    struct rsrc s = {.on_pull = pull_errors};
    struct weir_readable *rs = rsrc_new(&s);

    (void)state;
    assert_int_equal(rs_err(rs), E1);
    weir_readable_destroy(rs);
}

/* F: "ReadableStream pull should be able to error a stream and throw." */
static void pull_can_error_and_throw(void **state)
{
    struct rsrc s = {.on_pull = pull_errors, .n = E2};
    struct weir_readable *rs = rsrc_new(&s);

    (void)state;
    assert_int_equal(rs_err(rs), E1);
    weir_readable_destroy(rs);
}

/* F: "ReadableStream: enqueue should throw when the stream is readable but
 * draining" */
static int enqueue_close_enqueue(struct rsrc *s)
{
    assert_int_equal(weir_readable_enqueue(s->rs, S("a")), 0);
    weir_readable_close(s->rs);
    assert_int_equal(weir_readable_enqueue(s->rs, S("b")), -EINVAL);
    s->n = 1;
    return 0;
}

static void enqueue_when_draining(void **state)
{
    struct rsrc s = {.on_start = enqueue_close_enqueue};
    struct weir_readable *rs = rsrc_new(&s);

    (void)state;
    assert_int_equal(s.n, 1);
    weir_readable_destroy(rs);
}

/* F: "ReadableStream: enqueue should throw when the stream is closed" */
static int close_enqueue(struct rsrc *s)
{
    weir_readable_close(s->rs);
    assert_int_equal(weir_readable_enqueue(s->rs, S("a")), -EINVAL);
    s->n = 1;
    return 0;
}

static void enqueue_when_closed(void **state)
{
    struct rsrc s = {.on_start = close_enqueue};
    struct weir_readable *rs = rsrc_new(&s);

    (void)state;
    assert_int_equal(s.n, 1);
    weir_readable_destroy(rs);
}

/* F: "ReadableStream: should call underlying source methods as methods"
 * (each call gets the source's context) */
static int start_a(struct rsrc *s)
{
    weir_readable_enqueue(s->rs, S("a"));
    return 0;
}

static void methods_as_methods(void **state)
{
    struct rsrc s = {.on_start = start_a};
    struct weir_readable *rs = rsrc_new(&s);
    struct weir_reader r;

    (void)state;
    weir_reader_acquire(&r, rs);
    assert_read(&r, "a");
    weir_reader_release(&r);
    weir_reader_acquire(&r, rs);
    weir_reader_cancel(&r, E1);
    weir_reader_release(&r);
    assert_int_equal(s.starts, 1);
    assert_int_equal(s.pulls, 1);
    assert_int_equal(s.cancels, 1);
    weir_readable_destroy(rs);
}

/* F: "ReadableStream: desiredSize when closed" */
static int desired_close(struct rsrc *s)
{
    assert_int_equal(weir_readable_desired_size(s->rs), 10);
    weir_readable_close(s->rs);
    assert_int_equal(weir_readable_desired_size(s->rs), 0);
    s->n = 1;
    return 0;
}

static void desired_when_closed(void **state)
{
    struct rsrc s = {.on_start = desired_close};
    struct weir_readable *rs = rsrc_make(&s, 10, false);

    (void)state;
    assert_int_equal(s.n, 1);
    weir_readable_destroy(rs);
}

/* F: "ReadableStream: desiredSize when errored" */
static int desired_error(struct rsrc *s)
{
    assert_int_equal(weir_readable_desired_size(s->rs), 10);
    weir_readable_error(s->rs, E1);
    assert_true(weir_readable_desired_size(s->rs) == WEIR_DESIRED_NONE);
    s->n = 1;
    return 0;
}

static void desired_when_errored(void **state)
{
    struct rsrc s = {.on_start = desired_error};
    struct weir_readable *rs = rsrc_make(&s, 10, false);

    (void)state;
    assert_int_equal(s.n, 1);
    weir_readable_destroy(rs);
}

/* F: "ReadableStream strategies: the default strategy should give
 * desiredSize of 1 to start, decreasing by 1 per enqueue" */
static int desired_steps(struct rsrc *s)
{
    const char *in[] = {"a", "b", "c", "d"};

    for (int i = 0; i < 4; i++) {
        assert_int_equal(weir_readable_desired_size(s->rs), 1 - i);
        weir_readable_enqueue(s->rs, S(in[i]));
    }
    assert_int_equal(weir_readable_desired_size(s->rs), -3);
    s->n = 1;
    return 0;
}

static void default_strategy_desired(void **state)
{
    struct rsrc s = {.on_start = desired_steps};
    struct weir_readable *rs = rsrc_new(&s);

    (void)state;
    assert_int_equal(s.n, 1);
    weir_readable_destroy(rs);
}

/* F: "ReadableStream strategies: the default strategy should continue
 * giving desiredSize of 1 if the chunks are read immediately" */
static void desired_read_immediately(void **state)
{
    struct weir_readable *rs;
    struct weir_reader r;
    const char *in[] = {"a", "b", "c"};

    (void)state;
    assert_int_equal(weir_readable_create(&rs, NULL, NULL, NULL), 0);
    weir_reader_acquire(&r, rs);
    for (int i = 0; i < 3; i++) {
        assert_int_equal(weir_readable_desired_size(rs), 1);
        weir_readable_enqueue(rs, S(in[i]));
        assert_int_equal(weir_readable_desired_size(rs), 0);
        assert_read(&r, in[i]);
    }
    assert_int_equal(weir_readable_desired_size(rs), 1);
    weir_reader_release(&r);
    weir_readable_destroy(rs);
}

/* F: "ReadableStream integration test: adapting a sync pull source" */
static int sequential(struct rsrc *s)
{
    static const char *const num[] = {"1", "2", "3", "4", "5",
                                      "6", "7", "8", "9", "10"};

    if (s->n == 10)
        return weir_readable_close(s->rs);
    if (s->user) { /* async: answer later */
        s->n++;
        return WEIR_PENDING;
    }
    return weir_readable_enqueue(s->rs, S(num[s->n++]));
}

static void sync_pull_source(void **state)
{
    struct rsrc s = {.on_pull = sequential};
    struct weir_readable *rs = open_src(&s, 1);
    char got[8], all[64] = "";
    int rc;

    (void)state;
    while ((rc = read_now(&rd, got, sizeof(got))) == 0) {
        strcat(all, got);
        strcat(all, " ");
    }
    assert_int_equal(rc, WEIR_DONE);
    assert_string_equal(all, "1 2 3 4 5 6 7 8 9 10 ");
    shut(rs);
}

/* F: "ReadableStream integration test: adapting an async pull source" */
static void async_pull_source(void **state)
{
    static const char *const num[] = {"1", "2", "3", "4", "5",
                                      "6", "7", "8", "9", "10"};
    struct rsrc s = {.on_pull = sequential, .user = (void *)num};
    struct weir_readable *rs = open_src(&s, 1);
    struct done d = {0};
    struct weir_chunk c = {0};
    char all[64] = "";

    (void)state;
    for (;;) {
        int rc = weir_reader_read(&rd, &c, read_cb, &d);

        if (rc == WEIR_DONE)
            break;
        if (rc == WEIR_PENDING) {
            /* The pull in flight answers now. */
            assert_int_equal(d.calls, 0);
            weir_readable_enqueue(rs, S(num[s.n - 1]));
            weir_readable_pull_done(rs, 0);
            assert_int_equal(d.calls, 1);
            d.calls = 0;
            strcat(all, d.text);
        } else {
            assert_int_equal(rc, 0);
            strncat(all, (const char *)c.data, c.len);
        }
        strcat(all, " ");
    }
    assert_string_equal(all, "1 2 3 4 5 6 7 8 9 10 ");
    shut(rs);
}

/* F: "ReadableStream integration test: adapting a random push source":
 * a push source of eight 128-byte chunks, started by pull (readStart) and
 * stopped (readStop) whenever the stream's desired size falls to 0; each
 * of its ticks, which the JS source's timers make, pushes one chunk. */
struct push8 {
    struct weir_readable *rs;
    bool reading;
    int sent, pulls;
};

static uint8_t bytes128[128];

static int push8_pull(struct weir_readable *rs, void *ctx)
{
    struct push8 *p = ctx;

    (void)rs;
    p->pulls++;
    p->reading = true; /* readStart */
    return 0;
}

static void push8_tick(struct push8 *p)
{
    if (!p->reading)
        return;
    if (p->sent == 8) {
        p->reading = false;
        assert_int_equal(weir_readable_close(p->rs), 0); /* onend */
        return;
    }
    p->sent++;
    assert_int_equal(
        weir_readable_enqueue(p->rs, (struct weir_chunk){NULL, bytes128, 128}),
        0);
    if (weir_readable_desired_size(p->rs) <= 0)
        p->reading = false; /* readStop */
}

static void random_push_source(void **state)
{
    static const struct weir_source_ops ops = {.pull = push8_pull};
    struct push8 p = {0};
    struct weir_reader r;
    struct weir_chunk c;
    struct done d = {0};
    bool waiting = false, ended = false;
    int chunks = 0;

    (void)state;
    assert_int_equal(weir_readable_create(&p.rs, &ops, &p, NULL), 0);
    weir_reader_acquire(&r, p.rs);
    for (int tick = 0; tick < 100 && !ended; tick++) {
        push8_tick(&p);
        for (;;) {
            int rc;

            if (waiting) {
                if (d.calls == 0)
                    break;
                waiting = false;
                d.calls = 0;
                if (d.rc == WEIR_DONE) {
                    ended = true;
                    break;
                }
                assert_int_equal(d.rc, 0);
                assert_int_equal(d.chunk.len, 128);
                chunks++;
            }
            rc = weir_reader_read(&r, &c, read_cb, &d);
            if (rc == WEIR_PENDING) {
                waiting = true;
                break;
            }
            if (rc == WEIR_DONE) {
                ended = true;
                break;
            }
            assert_int_equal(rc, 0);
            assert_int_equal(c.len, 128);
            chunks++;
        }
    }
    assert_true(ended);
    assert_int_equal(chunks, 8);
    /* The source was stopped by backpressure and started by pull again. */
    assert_true(p.pulls > 1);
    weir_reader_release(&r);
    weir_readable_destroy(p.rs);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        WPT(construct, "ReadableStream can be constructed with no errors"),
        WPT(start_promise,
            "ReadableStream start should be able to return a promise"),
        WPT(start_promise_reject, "ReadableStream start should be able to "
                                  "return a promise and reject it"),
        WPT(different_objects,
            "ReadableStream should be able to enqueue different objects."),
        WPT(pull_rejects,
            "ReadableStream: if pull rejects, it should error the stream"),
        WPT(pull_once_on_start, "ReadableStream: should only call pull once "
                                "upon starting the stream"),
        WPT(pull_on_empty_read, "ReadableStream: should call pull when "
                                "trying to read from a started, empty "
                                "stream"),
        WPT(pull_once_read_before_start,
            "ReadableStream: should only call pull once on a non-empty "
            "stream read from before start fulfills"),
        WPT(pull_once_read_after_start,
            "ReadableStream: should only call pull once on a non-empty "
            "stream read from after start fulfills"),
        WPT(pull_after_last_not_draining,
            "ReadableStream: should call pull in reaction to read()ing the "
            "last chunk, if not draining"),
        WPT(no_pull_after_last_draining,
            "ReadableStream: should not call pull() in reaction to "
            "read()ing the last chunk, if draining"),
        WPT(no_pull_until_previous,
            "ReadableStream: should not call pull until the previous pull "
            "call's promise fulfills"),
        WPT(pull_after_every_read,
            "ReadableStream: should pull after start, and after every read"),
        WPT(no_pull_when_closed, "ReadableStream: should not call pull after "
                                 "start if the stream is now closed"),
        WPT(pull_again_inside_pull,
            "ReadableStream: should call pull after enqueueing from inside "
            "pull (with no read requests), if strategy allows"),
        WPT(pull_can_close, "ReadableStream pull should be able to close a "
                            "stream."),
        WPT(pull_can_error, "ReadableStream pull should be able to error a "
                            "stream."),
        WPT(pull_can_error_and_throw, "ReadableStream pull should be able to "
                                      "error a stream and throw."),
        WPT(enqueue_when_draining, "ReadableStream: enqueue should throw "
                                   "when the stream is readable but "
                                   "draining"),
        WPT(enqueue_when_closed,
            "ReadableStream: enqueue should throw when the stream is closed"),
        WPT(methods_as_methods, "ReadableStream: should call underlying "
                                "source methods as methods"),
        WPT(desired_when_closed, "ReadableStream: desiredSize when closed"),
        WPT(desired_when_errored, "ReadableStream: desiredSize when errored"),
        WPT(default_strategy_desired,
            "ReadableStream strategies: the default strategy should give "
            "desiredSize of 1 to start, decreasing by 1 per enqueue"),
        WPT(desired_read_immediately,
            "ReadableStream strategies: the default strategy should "
            "continue giving desiredSize of 1 if the chunks are read "
            "immediately"),
        WPT(sync_pull_source,
            "ReadableStream integration test: adapting a sync pull source"),
        WPT(random_push_source, "ReadableStream integration test: adapting a "
                                "random push source"),
        WPT(async_pull_source,
            "ReadableStream integration test: adapting an async pull source"),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
