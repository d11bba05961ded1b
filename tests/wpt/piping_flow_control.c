/*
 * WPT streams/piping/flow-control.any.js, ported to weir's C API.
 */
#include "wpt.h"

#define F "piping/flow-control.any.js"

static const char *const ab[] = {"a", "b", NULL};
static const char *const b[] = {"b", NULL};

/* F: "Piping from a non-empty ReadableStream into a WritableStream that
 * does not desire chunks" */
static void nonempty_into_undesiring(void **state)
{
    struct rsrc s = {.on_start = start_enqueue, .user = (void *)ab, .n = 1};
    struct rsink k = {0};
    struct weir_readable *rs = rsrc_new(&s);
    struct weir_writable *ws = rsink_make(&k, 0);
    struct weir_reader r;
    struct weir_chunk c;
    struct done d = {0};

    (void)state;
    pipe_go(rs, ws, P_CANCEL, &d);
    assert_int_equal(d.calls, 0);
    weir_writable_error(ws, E1);
    assert_int_equal(d.rc, E1);
    assert_string_equal(s.nopull.s, "");
    assert_string_equal(k.ev.s, "");
    weir_reader_acquire(&r, rs);
    assert_read(&r, "a");
    assert_read(&r, "b");
    assert_int_equal(weir_reader_read(&r, &c, never_read, NULL), WEIR_DONE);
    weir_reader_release(&r);
    weir_readable_destroy(rs);
    weir_writable_destroy(ws);
}

/* F: "Piping from a non-empty ReadableStream into a WritableStream that
 * does not desire chunks, but then does" */
static int first_write_pending(struct rsink *k, struct weir_chunk c)
{
    (void)c;
    return k->writes == 1 ? WEIR_PENDING : 0;
}

static void undesiring_then_desiring(void **state)
{
    struct rsrc s = {.on_start = start_enqueue, .user = (void *)b, .n = 1};
    struct rsink k = {.on_write = first_write_pending};
    struct weir_readable *rs = rsrc_new(&s);
    struct weir_writable *ws = rsink_new(&k);
    struct weir_writer w;
    struct done d = {0}, wd = {0};

    (void)state;
    weir_writer_acquire(&w, ws);
    weir_writer_write(&w, S("a"), done_cb, &wd);
    assert_int_equal(weir_writer_desired_size(&w), 0);
    weir_writer_release(&w);
    pipe_go(rs, ws, 0, &d);
    assert_int_equal(d.calls, 0);
    weir_writable_write_done(ws, 0);
    assert_int_equal(wd.rc, 0);
    assert_int_equal(d.rc, 0);
    assert_string_equal(k.ev.s, "write:a write:b close");
    assert_string_equal(s.nopull.s, "");
    weir_readable_destroy(rs);
    weir_writable_destroy(ws);
}

/* F: "Piping from a ReadableStream to a WritableStream that does not
 * desire chunks, but then does using releaseBackpressure()" */
static void release_backpressure(void **state)
{
    struct rsrc s = {.on_start = start_enqueue, .user = (void *)ab, .n = 1};
    struct rsink k = {0};
    struct weir_readable *rs = rsrc_new(&s);
    struct weir_writable *ws = rsink_make(&k, 0);
    struct weir_writer w;
    struct done d = {0};

    (void)state;
    weir_writer_acquire(&w, ws);
    assert_int_equal(weir_writer_desired_size(&w), 0);
    weir_writer_release(&w);
    pipe_go(rs, ws, 0, &d);
    assert_string_equal(k.ev.s, "");
    weir_writable_release_backpressure(ws);
    assert_string_equal(k.ev.s, "write:a");
    assert_int_equal(d.calls, 0);
    weir_writable_release_backpressure(ws);
    assert_int_equal(d.calls, 1);
    assert_int_equal(d.rc, 0);
    assert_string_equal(s.nopull.s, "");
    assert_string_equal(k.ev.s, "write:a write:b close");
    weir_readable_destroy(rs);
    weir_writable_destroy(ws);
}

/* F: "Piping from an empty ReadableStream into a WritableStream that does
 * not desire chunks, but then the readable stream becomes non-empty and
 * the writable stream starts desiring chunks" */
static void empty_then_both(void **state)
{
    struct rsrc s = {0};
    struct rsink k = {.on_write = first_write_pending};
    struct weir_readable *rs = rsrc_new(&s);
    struct weir_writable *ws = rsink_new(&k);
    struct weir_writer w;
    struct done d = {0};

    (void)state;
    weir_writer_acquire(&w, ws);
    weir_writer_write(&w, S("a"), NULL, NULL);
    assert_string_equal(k.ev.s, "write:a");
    weir_writer_release(&w);
    pipe_go(rs, ws, 0, &d);
    weir_readable_enqueue(rs, S("b"));
    weir_writable_write_done(ws, 0);
    weir_readable_close(rs);
    assert_int_equal(d.rc, 0);
    assert_string_equal(k.ev.s, "write:a write:b close");
    weir_readable_destroy(rs);
    weir_writable_destroy(ws);
}

/* F: "Piping from a ReadableStream to a WritableStream that desires more
 * chunks before finishing with previous ones" */
static int pull_bcd(struct rsrc *s)
{
    static const char *const v[] = {"b", "c", "d"};

    weir_readable_enqueue(s->rs, S(v[s->n++]));
    if (s->n == 3)
        weir_readable_close(s->rs);
    return 0;
}

static void desires_more_before_finishing(void **state)
{
    struct rsrc s = {.on_pull = pull_bcd};
    struct rsink k = {.on_write = first_write_pending};
    struct weir_readable *rs = rsrc_make(&s, 0, false);
    struct weir_writable *ws = rsink_make(&k, 3);
    struct weir_writer w;
    struct done d = {0}, wd = {0};

    (void)state;
    weir_writer_acquire(&w, ws);
    weir_writer_write(&w, S("a"), done_cb, &wd);
    assert_int_equal(weir_writer_desired_size(&w), 2);
    weir_writer_release(&w);
    pipe_go(rs, ws, 0, &d);
    assert_string_equal(k.ev.s, "write:a");
    /* Chunks were read until the destination's mark was reached. */
    assert_int_equal(s.n, 2);
    weir_writable_write_done(ws, 0);
    assert_int_equal(d.rc, 0);
    assert_string_equal(s.ev.s, "pull pull pull");
    assert_string_equal(k.ev.s, "write:a write:b write:c write:d close");
    weir_readable_destroy(rs);
    weir_writable_destroy(ws);
}

/* F: "Piping to a WritableStream that does not consume the writes fast
 * enough exerts backpressure on the ReadableStream" (the WPT's steps, in
 * order, with the source's desired size recorded at each enqueue) */
static void exerts_backpressure(void **state)
{
    struct rsrc s = {0};
    struct rsink k = {.write_rc = WEIR_PENDING};
    struct weir_readable *rs = rsrc_new(&s);
    struct weir_writable *ws = rsink_new(&k);
    struct done d = {0};
    int64_t sizes[4];
    const char *in[] = {"a", "b", "c", "d"};

    (void)state;
    pipe_go(rs, ws, 0, &d);
    for (int i = 0; i < 4; i++) {
        weir_readable_enqueue(rs, S(in[i]));
        sizes[i] = weir_readable_desired_size(rs);
        assert_string_equal(k.ev.s, "write:a");
    }
    assert_int_equal(sizes[0], 1);
    assert_int_equal(sizes[1], 0);
    assert_int_equal(sizes[2], -1);
    assert_int_equal(sizes[3], -2);
    weir_writable_write_done(ws, 0);
    assert_string_equal(k.ev.s, "write:a write:b");
    assert_int_equal(weir_readable_desired_size(rs), -1);
    weir_readable_close(rs);
    weir_writable_write_done(ws, 0);
    weir_writable_write_done(ws, 0);
    weir_writable_write_done(ws, 0);
    assert_int_equal(d.rc, 0);
    assert_string_equal(k.ev.s, "write:a write:b write:c write:d close");
    assert_string_equal(s.nopull.s, "");
    weir_readable_destroy(rs);
    weir_writable_destroy(ws);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        WPT(nonempty_into_undesiring,
            "Piping from a non-empty ReadableStream into a WritableStream "
            "that does not desire chunks"),
        WPT(undesiring_then_desiring,
            "Piping from a non-empty ReadableStream into a WritableStream "
            "that does not desire chunks, but then does"),
        WPT(release_backpressure,
            "Piping from a ReadableStream to a WritableStream that does not "
            "desire chunks, but then does using releaseBackpressure()"),
        WPT(empty_then_both,
            "Piping from an empty ReadableStream into a WritableStream that "
            "does not desire chunks, but then the readable stream becomes "
            "non-empty and the writable stream starts desiring chunks"),
        WPT(desires_more_before_finishing,
            "Piping from a ReadableStream to a WritableStream that desires "
            "more chunks before finishing with previous ones"),
        WPT(exerts_backpressure,
            "Piping to a WritableStream that does not consume the writes "
            "fast enough exerts backpressure on the ReadableStream"),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
