/*
 * WPT streams/piping/transform-streams.any.js, ported to weir's C API.
 */
#include "wpt.h"

static const char *const abc[] = {"a", "b", "c", NULL};

static void identity_pipe(const struct weir_transform_options *o)
{
    struct rsrc s = {.on_start = start_enqueue, .user = (void *)abc, .n = 1};
    struct weir_readable *rs = rsrc_make(&s, 3, false);
    struct rsink k = {0};
    struct weir_writable *ws = rsink_new(&k);
    struct weir_transform *tf;
    struct done d1 = {0}, d2 = {0};

    assert_int_equal(weir_transform_create(&tf, NULL, NULL, o), 0);
    if (weir_pipe_through(rs, tf, NULL, done_cb, &d1) != WEIR_PENDING)
        d1.calls++;
    pipe_go(weir_transform_readable(tf), ws, 0, &d2);
    assert_int_equal(d1.calls, 1);
    assert_int_equal(d2.calls, 1);
    assert_int_equal(d2.rc, 0);
    assert_string_equal(k.ev.s, "write:a write:b write:c close");
    assert_true(weir_writable_closed(ws));
    weir_transform_destroy(tf);
    weir_writable_destroy(ws);
    weir_readable_destroy(rs);
}

/* piping/transform-streams.any.js: "Piping through an identity transform
 * stream should close the destination when the source closes" */
static void identity_closes_destination(void **state)
{
    (void)state;
    identity_pipe(NULL);
}

/* piping/transform-streams.any.js: "Piping through an identity transform
 * stream with writable HWM = 0 should work": the readable side's pull
 * releases the writable side's backpressure. */
static void identity_writable_hwm0(void **state)
{
    struct weir_transform_options o = {.writable = {.hwm = 0},
                                       .readable = {.hwm = 0}};

    (void)state;
    identity_pipe(&o);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        WPT(identity_closes_destination,
            "Piping through an identity transform stream should close the "
            "destination when the source closes"),
        WPT(identity_writable_hwm0, "Piping through an identity transform "
                                    "stream with writable HWM = 0 should "
                                    "work"),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
