/*
 * test_pipeline_same.c - what a reload counts as an unchanged pipeline:
 * the same definition however it is written (spacing, order of keys,
 * defaults spelled out, sizes in other units, another line), and a
 * changed one for any key that differs.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>

#include <cmocka.h>

#include "conf/config.h"
#include "conf/pipeline_same.h"

static const char base[] = "[pipeline p]\n"
                           "source = file:/etc/passwd\n"
                           "sink = tcp-listen:127.0.0.1:7000\n"
                           "sink = file:/tmp/weir-same-copy\n";

static struct weir_config *load(const char *text)
{
    unsigned errors = 0;
    struct weir_config *c = config_load_string(text, "t.conf", "/tmp", &errors);

    assert_non_null(c);
    assert_int_equal(errors, 0);
    assert_int_equal(c->npipelines, 1);
    return c;
}

static bool same_as_base(const char *text)
{
    struct weir_config *a = load(base), *b = load(text);
    bool same = config_pipeline_same(a->pipelines[0], b->pipelines[0]);

    config_free(a);
    config_free(b);
    return same;
}

static void test_written_differently(void **state)
{
    (void)state;
    assert_true(same_as_base(base));
    /* Another line, spacing, a comment, defaults written out. */
    assert_true(same_as_base("; moved down\n\n[pipeline p]\n"
                             "source=file:/etc/passwd\n"
                             "sink = tcp-listen:127.0.0.1:7000,backlog=4096,"
                             "notsent_lowat=auto\n"
                             "sink = file:/tmp/weir-same-copy\n"
                             "high_water_mark = 1024KiB\n"
                             "chunk_size = 262144\n"));
    /* A relative path that resolves to the same file. */
    assert_true(same_as_base("[pipeline p]\n"
                             "source = file:/etc/passwd\n"
                             "sink = tcp-listen:127.0.0.1:7000\n"
                             "sink = file:weir-same-copy\n"));
}

static void test_changed(void **state)
{
    static const char *const changed[] = {
        /* the name */
        "[pipeline q]\nsource = file:/etc/passwd\n"
        "sink = tcp-listen:127.0.0.1:7000\nsink = file:/tmp/weir-same-copy\n",
        /* the source */
        "[pipeline p]\nsource = file:/etc/group\n"
        "sink = tcp-listen:127.0.0.1:7000\nsink = file:/tmp/weir-same-copy\n",
        /* a port */
        "[pipeline p]\nsource = file:/etc/passwd\n"
        "sink = tcp-listen:127.0.0.1:7001\nsink = file:/tmp/weir-same-copy\n",
        /* an option of a sink */
        "[pipeline p]\nsource = file:/etc/passwd\n"
        "sink = tcp-listen:127.0.0.1:7000,max_clients=3\n"
        "sink = file:/tmp/weir-same-copy\n",
        "[pipeline p]\nsource = file:/etc/passwd\n"
        "sink = tcp-listen:127.0.0.1:7000,notsent_lowat=64KiB\n"
        "sink = file:/tmp/weir-same-copy\n",
        "[pipeline p]\nsource = file:/etc/passwd\n"
        "sink = tcp-listen:127.0.0.1:7000\n"
        "sink = file:/tmp/weir-same-copy,append=no\n",
        /* the order of the sinks */
        "[pipeline p]\nsource = file:/etc/passwd\n"
        "sink = file:/tmp/weir-same-copy\nsink = tcp-listen:127.0.0.1:7000\n",
        /* one sink fewer */
        "[pipeline p]\nsource = file:/etc/passwd\n"
        "sink = tcp-listen:127.0.0.1:7000\n",
        /* pipeline keys */
        "[pipeline p]\nsource = file:/etc/passwd\n"
        "sink = tcp-listen:127.0.0.1:7000\nsink = file:/tmp/weir-same-copy\n"
        "high_water_mark = 2MiB\n",
        "[pipeline p]\nsource = file:/etc/passwd\n"
        "sink = tcp-listen:127.0.0.1:7000\nsink = file:/tmp/weir-same-copy\n"
        "chunk_size = 64KiB\n",
        "[pipeline p]\nsource = file:/etc/passwd\n"
        "sink = tcp-listen:127.0.0.1:7000\nsink = file:/tmp/weir-same-copy\n"
        "follow = yes\n",
        "[pipeline p]\nsource = file:/etc/passwd\n"
        "transform = uppercase\n"
        "sink = tcp-listen:127.0.0.1:7000\nsink = file:/tmp/weir-same-copy\n",
    };

    (void)state;
    for (size_t i = 0; i < sizeof(changed) / sizeof(changed[0]); i++) {
        if (same_as_base(changed[i]))
            fail_msg("counted as unchanged:\n%s", changed[i]);
    }
}

static const char glob[] = "[pipeline g]\n"
                           "source = file:/var/log/app/*.log\n"
                           "sink = tcp:127.0.0.1:9000\n";

static bool same_as_glob(const char *keys)
{
    char text[1024];
    struct weir_config *a = load(glob), *b;
    bool same;

    snprintf(text, sizeof(text), "%s%s", glob, keys);
    b = load(text);
    same = config_pipeline_same(a->pipelines[0], b->pipelines[0]);
    config_free(a);
    config_free(b);
    return same;
}

/* A glob source's keys: each default written out is the same pipeline,
 * any other value a changed one. */
static void test_glob_keys(void **state)
{
    static const char *const changed[] = {
        "exclude = /var/log/app/x.log\n",
        "ignore_older = 1h\n",
        "rotate_wait = 1s\n",
        "line_timeout = 2s\n",
        "max_open_files = 8\n",
        "rescan_interval = 1s\n",
        "max_record = 1KiB\n",
        "on_long = skip\n",
        "multiline_start = ^\\S\n",
        "format = json\n",
        "read_from = end\n",
        "follow = no\n",
    };

    (void)state;
    assert_true(same_as_glob(""));
    assert_true(same_as_glob("rotate_wait = 5s\nline_timeout = 1000ms\n"
                             "max_open_files = 32\nrescan_interval = 10s\n"
                             "framing = lines\nmax_record = 64KiB\n"
                             "on_long = truncate\nformat = raw\n"
                             "ignore_older = 0\nfollow = yes\n"));
    for (size_t i = 0; i < sizeof(changed) / sizeof(changed[0]); i++)
        if (same_as_glob(changed[i]))
            fail_msg("counted as unchanged: %s", changed[i]);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_written_differently),
        cmocka_unit_test(test_changed),
        cmocka_unit_test(test_glob_keys),
    };

    /* config_load_string logs its errors; keep them plain. */
    log_init(LOG_LEVEL_WARNING, false);
    return cmocka_run_group_tests(tests, NULL, NULL);
}
