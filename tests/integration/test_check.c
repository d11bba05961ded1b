/*
 * test_check.c - `weir --check` and `weir pipe` argument checking, driving
 * the real binary (WEIR_BIN): every bad config exits 78 and names the right
 * FILE:LINE for each of its errors, nothing else; good configs exit 0;
 * nothing dies of a signal.
 */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <spawn.h>
#include <stdbool.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "harness.h"

extern char **environ;

#define EX_USAGE  64
#define EX_CONFIG 78

struct run {
    int status;
    char out[65536]; /* stdout and stderr together */
};

/*
 * Runs weir with argv (argv[0] is replaced by WEIR_BIN), capturing its
 * output; the child's stdin is /dev/null. With `journal`, the child finds
 * JOURNAL_STREAM naming its stderr, as under systemd with
 * StandardError=journal.
 */
static void run_weir_env(char *argv[], struct run *r, bool journal)
{
    posix_spawn_file_actions_t fa;
    int fds[2];
    pid_t pid;
    size_t n = 0;
    ssize_t got;

    argv[0] = (char *)h_bin();
    assert_int_equal(pipe2(fds, O_CLOEXEC), 0);
    if (journal) {
        struct stat st;
        char value[64];
        assert_int_equal(fstat(fds[1], &st), 0);
        snprintf(value, sizeof(value), "%lu:%lu", (unsigned long)st.st_dev,
                 (unsigned long)st.st_ino);
        setenv("JOURNAL_STREAM", value, 1);
    }
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
    posix_spawn_file_actions_adddup2(&fa, fds[1], 1);
    posix_spawn_file_actions_adddup2(&fa, fds[1], 2);
    assert_int_equal(posix_spawn(&pid, argv[0], &fa, NULL, argv, environ), 0);
    posix_spawn_file_actions_destroy(&fa);
    unsetenv("JOURNAL_STREAM");
    close(fds[1]);
    while ((got = read(fds[0], r->out + n, sizeof(r->out) - 1 - n)) > 0)
        n += (size_t)got;
    r->out[n] = '\0';
    close(fds[0]);
    assert_int_equal(waitpid(pid, &r->status, 0), pid);
    if (WIFSIGNALED(r->status))
        fail_msg("weir died of signal %d; output:\n%s", WTERMSIG(r->status),
                 r->out);
    assert_true(WIFEXITED(r->status));
    /* UBSan reports and carries on unless told otherwise: catch it here. */
    if (strstr(r->out, "runtime error:") != NULL ||
        strstr(r->out, "Sanitizer") != NULL)
        fail_msg("sanitizer report:\n%s", r->out);
}

static void run_weir(char *argv[], struct run *r)
{
    run_weir_env(argv, r, false);
}

static void expect_exit(const struct run *r, int code)
{
    if (WEXITSTATUS(r->status) != code)
        fail_msg("exit %d, expected %d; output:\n%s", WEXITSTATUS(r->status),
                 code, r->out);
}

static void write_file(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");

    assert_non_null(f);
    assert_int_equal(fputs(text, f) >= 0, 1);
    assert_int_equal(fclose(f), 0);
}

/* How many output lines start with `prefix`. */
static unsigned count_lines(const char *out, const char *prefix)
{
    unsigned n = 0;
    size_t len = strlen(prefix);

    for (const char *l = out; *l;
         l = strchr(l, '\n') ? strchr(l, '\n') + 1 : l + strlen(l))
        if (strncmp(l, prefix, len) == 0)
            n++;
    return n;
}

/* Appended to cases whose own lines define no pipeline, which would be an
 * error of its own. */
#define OK_PIPELINE "[pipeline ok]\nsource = file:data.txt\nsink = null\n"

struct bad_case {
    const char *name;
    const char *text;
    unsigned lines[4];  /* the error lines expected, 0-terminated */
    const char *needle; /* a part of the first error's message */
};

/*
 * Each config is written to its own file in the temporary directory, where
 * data.txt exists; relative paths resolve against that directory.
 */
static const struct bad_case bad_cases[] = {
    {"bad_engine",
     "[daemon]\nengine = kqueue\n" OK_PIPELINE,
     {2},
     "engine: 'kqueue' is not an engine"},
    {"unknown_section",
     "[pipeline a]\nsource = file:data.txt\nsink = null\n"
     "[pipelines b]\n",
     {4},
     "unknown section '[pipelines b]'"},
    {"key_outside_section",
     "workers = 2\n[daemon]\n" OK_PIPELINE,
     {1},
     "outside a section"},
    {"unknown_pipeline_key",
     "[pipeline a]\nsource = file:data.txt\nsink = null\nspeed = 10\n",
     {4},
     "unknown key 'speed'"},
    {"unknown_daemon_key",
     "[daemon]\nthreads = 4\n" OK_PIPELINE,
     {2},
     "unknown key 'threads'"},
    {"key_in_wrong_section",
     "[daemon]\nsource = file:data.txt\n" OK_PIPELINE,
     {2},
     "belongs in [pipeline]"},
    {"misspelt_key_case",
     "[pipeline a]\nsource = file:data.txt\nSink = null\n",
     {1, 3},
     "did you mean 'sink'"},
    {"repeated_source",
     "[pipeline a]\nsource = file:data.txt\nsink = null\nsource = stdin\n",
     {4},
     "'source' is already set at line 2"},
    {"repeated_daemon_key",
     "[daemon]\nworkers = 1\n\nworkers = 2\n" OK_PIPELINE,
     {4},
     "already set at line 2"},
    {"no_source",
     "[pipeline a]\n; nothing\nsink = null\n",
     {1},
     "has no source"},
    {"no_sink",
     "[pipeline lonely]\nsource = file:data.txt\n",
     {1},
     "pipeline 'lonely' has no sink"},
    {"duplicate_pipeline",
     "[pipeline a]\nsource = file:data.txt\nsink = null\n"
     "[pipeline a]\nsource = file:data.txt\nsink = null\n",
     {4},
     "already defined at line 1"},
    {"source_missing_file",
     "[pipeline a]\nsource = file:missing.txt\nsink = null\n",
     {2},
     "cannot open"},
    {"source_is_directory",
     "[pipeline a]\nsource = file:sub\nsink = null\n",
     {2},
     "is a directory"},
    {"duplicate_listen",
     "[pipeline a]\nsource = file:data.txt\nsink = tcp-listen:127.0.0.1:7000\n"
     "[pipeline b]\nsource = file:data.txt\nsink = "
     "tcp-listen:127.0.0.1:7000\n",
     {6},
     "already listened on by a sink at line 3"},
    {"listen_wildcard_overlap",
     "[pipeline a]\nsource = tcp-listen:0.0.0.0:7000\nsink = null\n"
     "[pipeline b]\nsource = file:data.txt\nsink = tcp-listen:[::1]:7000\n",
     {6},
     "already listened on by a source at line 2"},
    {"listen_source_and_sink_unix",
     "[pipeline a]\nsource = unix-listen:s.sock\nsink = null\n"
     "[pipeline b]\nsource = file:data.txt\nsink = unix-listen:s.sock\n",
     {6},
     "already listened on"},
    {"stdin_as_sink",
     "[pipeline a]\nsource = file:data.txt\nsink = stdin\n",
     {3},
     "stdin cannot be a sink"},
    {"null_as_source",
     "[pipeline a]\nsource = null\nsink = stdout\n",
     {2},
     "null cannot be a source"},
    {"stdout_as_source",
     "[pipeline a]\nsource = stdout\nsink = null\n",
     {2},
     "stdout cannot be a source"},
    {"two_stdin_sources",
     "[pipeline a]\nsource = stdin\nsink = null\n"
     "[pipeline b]\nsource = stdin\nsink = null\n",
     {5},
     "stdin is already read at line 2"},
    {"hwm_zero",
     "[pipeline a]\nsource = file:data.txt\nsink = null\nhigh_water_mark = "
     "0\n",
     {4},
     "out of range"},
    {"hwm_absurd",
     "[pipeline a]\nsource = file:data.txt\nsink = null\nhigh_water_mark = "
     "1TiB\n",
     {4},
     "out of range"},
    {"hwm_decimal_unit",
     "[pipeline a]\nsource = file:data.txt\nsink = null,high_water_mark=4MB\n",
     {3},
     "write 4MiB"},
    {"size_garbage",
     "[pipeline a]\nsource = file:data.txt\nsink = null\nchunk_size = big\n",
     {4},
     "not a size"},
    {"chunk_too_small",
     "[pipeline a]\nsource = file:data.txt\nsink = null\nchunk_size = 16\n",
     {4},
     "chunk_size"},
    {"port_zero",
     "[pipeline a]\nsource = file:data.txt\nsink = tcp:127.0.0.1:0\n",
     {3},
     "bad port '0'"},
    {"port_too_big",
     "[pipeline a]\nsource = file:data.txt\nsink = tcp-listen:[::1]:65536\n",
     {3},
     "bad port '65536'"},
    {"port_missing",
     "[pipeline a]\nsource = file:data.txt\nsink = tcp:host\n",
     {3},
     "has no port"},
    {"ipv6_without_brackets",
     "[pipeline a]\nsource = file:data.txt\nsink = tcp:::1:9000\n",
     {3},
     "needs brackets"},
    {"bad_ipv4",
     "[pipeline a]\nsource = file:data.txt\nsink = tcp:300.1.2.3:9000\n",
     {3},
     "not an IPv4 address"},
    {"bad_ipv6",
     "[pipeline a]\nsource = file:data.txt\nsink = tcp:[::g]:9000\n",
     {3},
     "not an IPv6 address"},
    {"unknown_kind",
     "[pipeline a]\nsource = file:data.txt\nsink = udp:127.0.0.1:9000\n",
     {3},
     "unknown address kind 'udp'"},
    {"path_without_kind",
     "[pipeline a]\nsource = /etc/hostname\nsink = null\n",
     {2},
     "write file:/etc/hostname"},
    {"unknown_option",
     "[pipeline a]\nsource = file:data.txt\nsink = tcp:127.0.0.1:9,nodelay=1\n",
     {3},
     "unknown option 'nodelay'"},
    {"option_wrong_role",
     "[pipeline a]\nsource = file:data.txt,append=yes\nsink = null\n",
     {2},
     "applies to a file sink"},
    {"option_wrong_kind",
     "[pipeline a]\nsource = file:data.txt\nsink = "
     "tcp:127.0.0.1:9,max_clients=5\n",
     {3},
     "applies to tcp-listen"},
    {"bad_policy",
     "[pipeline a]\nsource = file:data.txt\nsink = null,on_full=sometimes\n",
     {3},
     "not a policy"},
    {"option_twice",
     "[pipeline a]\nsource = file:data.txt\nsink = "
     "file:out.txt,append=yes,append=no\n",
     {3},
     "given twice"},
    {"unknown_transform",
     "[pipeline a]\nsource = file:data.txt\ntransform = sharpen\nsink = "
     "null\n",
     {3},
     "unknown transform 'sharpen'"},
    {"bad_transform_level",
     "[pipeline a]\nsource = file:data.txt\ntransform = uppercase\n"
     "transform = gzip:12\nsink = null\n",
     {4},
     "gzip level '12' is out of range 1-9"},
    {"bad_workers", "[daemon]\nworkers = many\n" OK_PIPELINE, {2}, "workers"},
    {"bad_log_level",
     "[daemon]\nlog_level = verbose\n" OK_PIPELINE,
     {2},
     "not a level"},
    {"bad_drain_timeout",
     "[daemon]\ndrain_timeout = soon\n" OK_PIPELINE,
     {2},
     "not a duration"},
    {"metrics_port_clash",
     "[daemon]\nmetrics = 127.0.0.1:9464\n[pipeline a]\nsource = "
     "file:data.txt\nsink = tcp-listen:0.0.0.0:9464\n",
     {5},
     "already listened on by metrics at line 2"},
    {"syntax_no_equals",
     "[pipeline a]\nsource = file:data.txt\nsink null\n",
     {1, 3},
     "has no sink"},
    {"section_unclosed",
     "[pipeline a\nsource = file:data.txt\n" OK_PIPELINE,
     {1},
     "missing ']'"},
    {"empty_value",
     "[pipeline a]\nsource =\nsink = null\n" OK_PIPELINE,
     {2},
     "needs a value"},
    {"pipeline_without_name",
     "[pipeline]\nsource = stdin\n" OK_PIPELINE,
     {1},
     "needs a name"},
    {"pipeline_bad_name",
     "[pipeline a/b]\nsource = stdin\n" OK_PIPELINE,
     {1},
     "bad pipeline name"},
    {"duplicate_daemon",
     "[daemon]\nworkers = 1\n[daemon]\n" OK_PIPELINE,
     {3},
     "[daemon] is already defined"},
    {"follow_on_tcp",
     "[pipeline a]\nsource = tcp:127.0.0.1:9000\nsink = null\nfollow = yes\n",
     {4},
     "follow applies to a file source"},
    {"follow_contradiction",
     "[pipeline a]\nsource = file:data.txt,follow=no\nsink = null\nfollow = "
     "yes\n",
     {2},
     "contradicts"},
    {"unix_path_too_long",
     "[pipeline a]\nsource = file:data.txt\nsink = "
     "unix:/run/aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
     "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa.sock\n",
     {3},
     "longer than 107 bytes"},
    {"sink_dir_missing",
     "[pipeline a]\nsource = file:data.txt\nsink = file:nodir/out.txt\n",
     {3},
     "nodir"},
    {"sink_is_source",
     "[pipeline a]\nsource = file:data.txt\nsink = file:./data.txt\n",
     {3},
     "own source"},
    {"same_file_sink_twice",
     "[pipeline a]\nsource = file:data.txt\nsink = file:out.txt\n"
     "[pipeline b]\nsource = stdin\nsink = file:out.txt,append=yes\n",
     {6},
     "already written by the sink at line 3"},
    {"stdout_twice",
     "[pipeline a]\nsource = file:data.txt\nsink = stdout\nsink = stdout\n",
     {4},
     "stdout is already written"},
    /* A glob source (file: with * ? or [): its keys and their bounds. */
    {"glob_durations",
     "[pipeline a]\nsource = file:/tmp/*.weir-none.log\n"
     "rotate_wait = 2h\nline_timeout = 0\nrescan_interval = 10ms\n"
     "ignore_older = forever\nsink = null\n",
     {3, 4, 5, 6},
     "rotate_wait: duration '2h' is out of range"},
    {"glob_values",
     "[pipeline a]\nsource = file:/tmp/*.weir-none.log\n"
     "max_open_files = 0\nmax_record = 8\non_long = cut\nformat = xml\n"
     "sink = null\n",
     {3, 4, 5, 6},
     "max_open_files: '0' is out of range: 1 to 65536"},
    /* Two files' bytes in one stream would interleave mid-line. */
    {"glob_framing_bytes",
     "[pipeline a]\nsource = file:/tmp/*.weir-none.log\nframing = bytes\n"
     "framing = words\nsink = null\n",
     {3, 4},
     "framing = bytes cannot take a glob source"},
    {"glob_multiline",
     "[pipeline a]\nsource = file:/tmp/*.weir-none.log\n"
     "multiline_start = ^(abc\nsink = null\n",
     {3},
     "multiline_start: '^(abc' does not compile: "},
    {"glob_exclude",
     "[pipeline a]\nsource = file:/tmp/*.weir-none.log\n"
     "exclude = /tmp/x*.log relative.log\nsink = null\n",
     {3},
     "exclude: 'relative.log' is not an absolute pattern"},
    /* The keys of a glob source name their line on another source. */
    {"glob_keys_elsewhere",
     "[pipeline a]\nsource = file:data.txt\nrotate_wait = 1s\n"
     "format = json\nsink = null\n",
     {3, 4},
     "rotate_wait applies to a glob source (file:PATTERN"},
    {"glob_relative",
     "[pipeline a]\nsource = file:logs/*.log\nsink = null\n",
     {2},
     "the pattern 'logs/*.log' is not an absolute path"},
    /* A listen sink serves one file from its start. */
    {"glob_listen_sink",
     "[pipeline a]\nsource = file:/tmp/*.weir-none.log\n"
     "sink = unix-listen:glob.sock\n",
     {3},
     "a listen sink serves one file"},
    /* A file sink the pattern matches would be read back. */
    {"glob_sink_matched",
     "[pipeline a]\nsource = file:/tmp/*.weir-none.log\n"
     "sink = file:/tmp/out.weir-none.log\n",
     {3},
     "matches the pipeline's own source"},
    /* The series call a sink by its address without options: two that
     * differ only there need a name= each could be told apart by. */
    {"same_label",
     "[pipeline a]\nsource = file:data.txt\n"
     "sink = tcp:127.0.0.1:9,on_full=drop-newest\n"
     "sink = tcp:127.0.0.1:9,on_full=drop-oldest\n",
     {4},
     "already has a sink called 'tcp:127.0.0.1:9'"},
    {"bad_name",
     "[pipeline a]\nsource = file:data.txt\nsink = tcp:127.0.0.1:9,name=a b\n",
     {3},
     "name: 'a b' is not a name"},
    /* "Did you mean": Damerau-Levenshtein distance, at most 2 and a third
     * of the word; case alone always. */
    {"suggest_key",
     "[pipeline a]\nsource = file:data.txt\nsnk = null\nsink = null\n",
     {3},
     "unknown key 'snk' in [pipeline] (did you mean 'sink'?)"},
    {"suggest_key_swapped",
     "[daemon]\nwokrers = 2\n" OK_PIPELINE,
     {2},
     "(did you mean 'workers'?)"},
    {"suggest_key_underscore",
     "[pipeline a]\nsource = file:data.txt\nsink = null\nchunksize = 1MiB\n",
     {4},
     "(did you mean 'chunk_size'?)"},
    {"suggest_section",
     "[deamon]\nworkers = 2\n" OK_PIPELINE,
     {1},
     "unknown section '[deamon]' (did you mean '[daemon]'?)"},
    {"suggest_section_name",
     "[pipelines b]\nsource = file:data.txt\n" OK_PIPELINE,
     {1},
     "(did you mean '[pipeline b]'?)"},
    {"suggest_transform",
     "[pipeline a]\nsource = file:data.txt\ntransform = gzp:1\nsink = null\n",
     {3},
     "unknown transform 'gzp' (did you mean 'gzip:1'?)"},
    {"suggest_transform_case",
     "[pipeline a]\nsource = file:data.txt\ntransform = Zstd\nsink = null\n",
     {3},
     "(did you mean 'zstd'?)"},
    {"suggest_kind",
     "[pipeline a]\nsource = file:data.txt\nsink = tpc:127.0.0.1:9000\n",
     {3},
     "unknown address kind 'tpc' in 'tpc:127.0.0.1:9000' (did you mean "
     "'tcp:127.0.0.1:9000'?)"},
    {"suggest_kind_listen",
     "[pipeline a]\nsource = unix-listne:in.sock\nsink = null\n",
     {2},
     "(did you mean 'unix-listen:in.sock'?)"},
    {"suggest_option",
     "[pipeline a]\nsource = file:data.txt\nsink = null,on-full=block\n",
     {3},
     "unknown option 'on-full' for a null sink (did you mean 'on_full'?)"},
    {"suggest_policy",
     "[pipeline a]\nsource = file:data.txt\nsink = null,on_full=drop_oldest\n",
     {3},
     "on_full: 'drop_oldest' is not a policy (did you mean 'drop-oldest'?)"},
    /* socat's spellings that weir answers with its own. */
    {"socat_tcp_listen_port",
     "[pipeline a]\nsource = file:data.txt\nsink = TCP-LISTEN:7000\n",
     {3},
     "did you mean tcp-listen:0.0.0.0:7000?"},
    {"socat_tcp_listen_port_lower",
     "[pipeline a]\nsource = tcp-listen:7000\nsink = null\n",
     {2},
     "'tcp-listen:7000' has no host to listen on: did you mean "
     "tcp-listen:0.0.0.0:7000?"},
    {"socat_tcp6_listen",
     "[pipeline a]\nsource = TCP6-LISTEN:7000,fork\nsink = null\n",
     {2},
     "'TCP6-LISTEN' is socat's; weir needs the host to listen on: did you "
     "mean tcp-listen:[::]:7000?"},
    {"socat_tcp_l",
     "[pipeline a]\nsource = file:data.txt\nsink = tcp-l:7000\n",
     {3},
     "did you mean tcp-listen:0.0.0.0:7000?"},
    {"socat_tcp4",
     "[pipeline a]\nsource = file:data.txt\nsink = TCP4:localhost:9000\n",
     {3},
     "'TCP4' is socat's: did you mean tcp:localhost:9000?"},
    {"socat_tcp_port_only",
     "[pipeline a]\nsource = file:data.txt\nsink = tcp:9000\n",
     {3},
     "'tcp:9000' has no host: did you mean tcp:127.0.0.1:9000?"},
    {"socat_open",
     "[pipeline a]\nsource = OPEN:data.txt\nsink = null\n",
     {2},
     "'OPEN' is socat's: did you mean file:data.txt?"},
    {"socat_create",
     "[pipeline a]\nsource = file:data.txt\nsink = CREATE:out.txt\n",
     {3},
     "did you mean file:out.txt?"},
    {"socat_unix_client",
     "[pipeline a]\nsource = file:data.txt\nsink = UNIX-CLIENT:/run/x.sock\n",
     {3},
     "did you mean unix:/run/x.sock?"},
    {"socat_fork",
     "[pipeline a]\nsource = file:data.txt\nsink = "
     "tcp-listen:127.0.0.1:7000,fork\n",
     {3},
     "option 'fork' is not needed: a listen address serves every client"},
    {"socat_reuseaddr",
     "[pipeline a]\nsource = file:data.txt\nsink = "
     "tcp-listen:127.0.0.1:7000,reuseaddr\n",
     {3},
     "option 'reuseaddr' is not needed"},
    /* `-` is stdin as a source and stdout as a sink. */
    {"dash_is_stdin",
     "[pipeline a]\nsource = -\nsink = null\n"
     "[pipeline b]\nsource = stdin\nsink = null\n",
     {5},
     "stdin is already read at line 2"},
    {"dash_is_stdout",
     "[pipeline a]\nsource = file:data.txt\nsink = -\nsink = STDOUT\n",
     {4},
     "stdout is already written"},
    {"stdio_sink_is_stdout",
     "[pipeline a]\nsource = file:data.txt\nsink = stdio\nsink = -\n",
     {4},
     "stdout is already written"},
    /* The name is tried on a socket; the message lists those that do. */
    {"unknown_congestion",
     "[pipeline a]\nsource = file:data.txt\nsink = null\n"
     "tcp_congestion = nosuch\n",
     {4},
     "tcp_congestion: 'nosuch' is not a congestion control this kernel has "
     "(available: "},
    {"long_congestion",
     "[pipeline a]\nsource = file:data.txt\nsink = null\n"
     "tcp_congestion = abcdefghijklmnop\n",
     {4},
     "'abcdefghijklmnop' is not a congestion control name"},
    {"no_pipeline",
     "; only a comment\n[daemon]\nworkers = auto\n",
     {1},
     "no pipeline"},
    /* Line numbers stay right after comments, blank lines, CRLF, indented
     * lines (continuations are off), inline comments, a byte-order mark
     * and a line longer than inih's own 200-byte buffer. */
    {"line_numbers_survive",
     "\xEF\xBB\xBF; a comment\r\n"
     "# another comment\r\n"
     "\r\n"
     "[pipeline a] ; inline\r\n"
     "; ccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccc"
     "ccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccc"
     "ccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccc"
     "cccccccccccccccccccccccccccccccccccccccccccccccccccccccccc\r\n"
     "source = file:data.txt ; the input\r\n"
     "   sink = null\r\n"
     "  more = data\r\n"
     "high_water_mark = 1 MiB\r\n"
     "chunk_size = 1 TiB\r\n",
     {8, 10},
     "unknown key 'more'"},
    {"http_bad_preset",
     "[pipeline a]\nsource = file:data.txt\n"
     "sink = http://127.0.0.1:8123/?query=x,preset=clickhose\n",
     {3},
     "preset: 'clickhose' is not a preset (did you mean 'clickhouse'?)"},
    {"http_bad_compression",
     "[pipeline a]\nsource = file:data.txt\n"
     "sink = https://127.0.0.1:9200/_bulk,compression=brotli\n",
     {3},
     "compression: 'brotli' is not a compression: use none, gzip, zstd"},
    {"http_labels",
     "[pipeline a]\nsource = file:data.txt\n"
     "sink = http://127.0.0.1:3100/loki/api/v1/push,preset=loki,"
     "label=9x=y\n"
     "sink = http://127.0.0.1:1/,label=job=x,name=b\n",
     {3, 4},
     "label= applies to preset=loki and preset=otlp"},
    {"http_loki_dotted_label",
     "[pipeline a]\nsource = file:data.txt\n"
     "sink = http://127.0.0.1:4318/v1/logs,preset=otlp,label=host.name=a\n"
     "sink = http://127.0.0.1:3100/loki/api/v1/push,preset=loki,"
     "label=host.name=a,name=b\n",
     {4},
     "label host.name=a: a Loki label name has no '.'"},
    {"http_bad_retries",
     "[pipeline a]\nsource = file:data.txt\n"
     "sink = http://127.0.0.1:1/,retries=0\n"
     "sink = http://127.0.0.1:1/,retries=never,name=b\n",
     {3, 4},
     "retries"},
    {"http_options",
     "[pipeline a]\nsource = file:data.txt\n"
     "sink = http://127.0.0.1:1/,user=me\n"
     "sink = http:127.0.0.1:1,name=b\n"
     "sink = http://127.0.0.1:1/,ca=x.pem,name=c\n",
     {3, 4, 5},
     "user= and password_file= go together"},
    {"http_misplaced",
     "[pipeline a]\nsource = file:data.txt\n"
     "sink = tcp:127.0.0.1:1,preset=raw\n"
     "sink = http://127.0.0.1:1/,header=nocolon,name=e\n",
     {3, 4},
     "option 'preset' applies to http and https"},
    {"kafka_address",
     "[pipeline a]\nsource = file:data.txt\n"
     "sink = kafka:127.0.0.1:9092\n"
     "sink = kafka:127.0.0.1:9092,k2/logs,name=b\n"
     "sink = kafka:127.0.0.1:9092/a/b,name=c\n",
     {3, 4, 5},
     "names no topic: write kafka:HOST:PORT[,HOST:PORT...]/TOPIC"},
    {"kafka_options",
     "[pipeline a]\nsource = file:data.txt\n"
     "sink = kafka:127.0.0.1:9092/logs,key=pid\n"
     "sink = kafka:127.0.0.1:9092/logs,compression=brotli,name=b\n"
     "sink = kafka:127.0.0.1:9092/logs,rdkafka.acks=2,rdkafka.acks=1,"
     "name=c\n"
     "sink = tcp:127.0.0.1:1,rdkafka.acks=all,name=d\n",
     {3, 4, 5, 6},
     "key: 'pid' is not a key: use file, host or none"},
    /* librdkafka's own verdict, the setting named as written. */
    {"kafka_rdkafka",
     "[pipeline a]\nsource = file:data.txt\n"
     "sink = kafka:127.0.0.1:9092/logs,rdkafka.no.such.thing=1\n"
     "sink = kafka:127.0.0.1:9092/logs,rdkafka.acks=most,name=b\n",
     {3, 4},
     "rdkafka.no.such.thing=1: No such configuration property"},
    {"jetstream_address",
     "[pipeline a]\nsource = file:data.txt\n"
     "sink = jetstream:nats://127.0.0.1:4222\n"
     "sink = jetstream:127.0.0.1:4222/logs,name=b\n"
     "sink = jetstream:nats://127.0.0.1:4222/logs.*,name=c\n"
     "sink = jetstream:nats://127.0.0.1:4222/logs,creds=/nonexistent,"
     "name=d\n",
     {3, 4, 5, 6},
     "names no subject: write jetstream:nats://HOST:PORT"},
    {"jetstream_dead_letter",
     "[pipeline a]\nsource = file:data.txt\n"
     "sink = jetstream:nats://127.0.0.1:4222/logs,"
     "dead_letter=/nonexistent/dir/dead.jsonl\n"
     "sink = jetstream:nats://127.0.0.1:4222/logs,retries=never,name=b\n",
     {3, 4},
     "sink: dead_letter directory '/nonexistent/dir'"},
    {"jetstream_source_address",
     "[pipeline a]\nsource = jetstream:nats://127.0.0.1:4222\nsink = null\n"
     "[pipeline b]\nsource = jetstream:nats://127.0.0.1:4222/lo.gs\n"
     "sink = null\n"
     "[pipeline c]\nsource = jetstream:127.0.0.1:4222/LOGS\nsink = null\n"
     "[pipeline d]\nsource = jetstream:nats://127.0.0.1:4222/LOGS,"
     "creds=/nonexistent\nsink = null\n",
     {2, 5, 8, 11},
     "names no stream: write jetstream:nats://HOST:PORT[,nats://HOST:PORT"
     "...]/STREAM"},
    {"jetstream_source_options",
     "[pipeline a]\nsource = jetstream:nats://127.0.0.1:4222/LOGS,"
     "consumer=x.y\nsink = null\n"
     "[pipeline b]\nsource = jetstream:nats://127.0.0.1:4222/LOGS,"
     "ack_wait=10ms\nsink = null\n"
     "[pipeline c]\nsource = jetstream:nats://127.0.0.1:4222/LOGS,"
     "subject=a..b\nsink = null\n"
     "[pipeline d]\nsource = file:data.txt\n"
     "sink = jetstream:nats://127.0.0.1:4222/logs,consumer=x\n",
     {2, 5, 8, 12},
     "consumer: 'x.y' is not a consumer's name"},
    {"http_listen_options",
     "[pipeline a]\nsource = file:data.txt\n"
     "sink = http-listen:127.0.0.1:1,header_timeout=soon\n"
     "sink = http-listen:127.0.0.1:2,path=no-slash,name=b\n"
     "sink = tcp-listen:127.0.0.1:3,dotfiles=yes,name=c\n",
     {3, 4, 5},
     "header_timeout: "},
    {"http_listen_access_log",
     "[pipeline a]\nsource = file:data.txt\n"
     "sink = http-listen:127.0.0.1:1,request_log=relative.log\n"
     "sink = http-listen:127.0.0.1:2,request_log_format=json,name=b\n"
     "sink = http-listen:127.0.0.1:3,request_log=stdout,request_log_format=xml,"
     "name=c\n",
     {3, 4, 5},
     "is not an absolute path or stdout"},
    {"http_listen_sources",
     "[pipeline a]\nsource = dir:.\nsink = tcp:127.0.0.1:1\n"
     "[pipeline b]\nsource = stdin\nsink = http-listen:127.0.0.1:4\n"
     "[pipeline c]\nsource = dir:.\n"
     "sink = http-listen:127.0.0.1:5,path=/x\n"
     "[pipeline d]\nsource = dir:data.txt\nsink = http-listen:127.0.0.1:6\n",
     {3, 6, 9, 11},
     "a dir source is served by http-listen sinks only"},
    {"https_listen_tls",
     "[pipeline a]\nsource = dir:.\n"
     "sink = https-listen:127.0.0.1:1,cert=/nonexistent/cert.pem\n"
     "sink = https-listen:127.0.0.1:2,name=b\n"
     "sink = http-listen:127.0.0.1:3,cert=/nonexistent/cert.pem,name=c\n",
     {3, 4, 5},
     "cert /nonexistent/cert.pem"},
    {"http_listen_index",
     "[pipeline a]\nsource = file:data.txt\n"
     "sink = http-listen:127.0.0.1:1,index=yes\n"
     "[pipeline b]\nsource = dir:.\n"
     "sink = http-listen:127.0.0.1:2,index=maybe\n"
     "sink = tcp-listen:127.0.0.1:3,index=yes,name=c\n",
     {3, 6, 7},
     "index= lists a dir source's directories"},
    {"three_errors",
     "[daemon]\nworkers = none\n\n[pipeline a]\nsource = file:data.txt\n"
     "sink = tcp:localhost:http\nfollow = perhaps\n",
     {2, 6, 7},
     "workers"},
};

#define NBAD (sizeof(bad_cases) / sizeof(bad_cases[0]))

static void test_bad_config(void **state)
{
    const struct bad_case *c = *state;
    char path[256], prefix[300], *argv[] = {NULL, "--check", "-c", path, NULL};
    struct run *r = calloc(1, sizeof(*r));
    unsigned expected = 0;

    assert_non_null(r);
    snprintf(path, sizeof(path), "%s/%s.conf", h_dir, c->name);
    write_file(path, c->text);
    run_weir(argv, r);
    expect_exit(r, EX_CONFIG);
    for (; expected < 4 && c->lines[expected] != 0; expected++) {
        snprintf(prefix, sizeof(prefix), "%s:%u: ", path, c->lines[expected]);
        if (strstr(r->out, prefix) == NULL)
            fail_msg("no error at line %u; output:\n%s", c->lines[expected],
                     r->out);
    }
    snprintf(prefix, sizeof(prefix), "%s:", path);
    if (count_lines(r->out, prefix) != expected)
        fail_msg("%u errors expected; output:\n%s", expected, r->out);
    if (strstr(r->out, c->needle) == NULL)
        fail_msg("'%s' not in the output:\n%s", c->needle, r->out);
    free(r);
}

/* The file alone: --syntax-only, so that a port some other program on
 * the machine holds does not fail a case about parsing. */
static void check_ok(const char *name, const char *text)
{
    char path[256],
        *argv[] = {NULL, "--check", "--syntax-only", "-c", path, NULL};
    struct run *r = calloc(1, sizeof(*r));

    assert_non_null(r);
    snprintf(path, sizeof(path), "%s/%s.conf", h_dir, name);
    write_file(path, text);
    run_weir(argv, r);
    expect_exit(r, 0);
    assert_non_null(strstr(r->out, "configuration OK"));
    free(r);
}

static void test_good_configs(void **state)
{
    (void)state;
    check_ok("minimal", "[pipeline a]\nsource = file:data.txt\nsink = null\n");
    check_ok("http_listen",
             "[pipeline files]\nsource = dir:.\n"
             "sink = http-listen:127.0.0.1:7080,header_timeout=2s,"
             "dotfiles=no,follow_symlinks=no,server=no,max_clients=100,"
             "request_log=stdout,request_log_format=json\n"
             "[pipeline one]\nsource = file:data.txt\n"
             "sink = http-listen:127.0.0.1:7081,path=/data.txt\n"
             "[pipeline listed]\nsource = dir:.\n"
             "sink = http-listen:127.0.0.1:7082,index=yes,dotfiles=yes\n");
    check_ok("everything",
             "; every key and option the parser knows\n"
             "[daemon]\n"
             "workers = 2\n"
             "log_level = debug\n"
             "drain_timeout = 1500ms\n"
             "metrics = [::1]:9464\n"
             "\n"
             "[pipeline serve]\n"
             "source = file:data.txt,follow=yes\n"
             "sink = tcp-listen:127.0.0.1:7000,max_clients=50,backlog=128,"
             "on_full=disconnect,high_water_mark=256KiB\n"
             "sink = file:copy.txt, append = yes , on_full = drop-oldest\n"
             "high_water_mark = 4 MiB\n"
             "chunk_size = 128KiB\n"
             "follow = yes\n"
             "\n"
             "[pipeline proxy.v6]\n"
             "source = tcp-listen:[::1]:7001,max_clients=10\n"
             "sink = tcp:localhost:9000,on_full=block\n"
             "sink = unix:relay.sock,on_full=drop-newest\n"
             "sink = stdout\n"
             "\n"
             "[pipeline unix-in]\n"
             "source = unix-listen:in.sock,backlog=4\n"
             "sink = null,high_water_mark=1\n"
             "\n"
             "[pipeline stdin]\n"
             "source = STDIN\n"
             "sink = unix-listen:out.sock\n"
             "sink = file:/dev/null\n");
    /* socat's names that mean a weir kind exactly. */
    check_ok("socat_accepted",
             "[pipeline in]\nsource = -\nsink = UNIX-CONNECT:relay.sock\n"
             "sink = TCP-CONNECT:localhost:9000\nsink = -\n"
             "[pipeline listen]\nsource = UNIX-LISTEN:in.sock\n"
             "sink = TCP:[::1]:9001\nsink = FILE:copy.txt\n");
    /* An http sink with every option; headers repeat. */
    check_ok("http",
             "[pipeline a]\nsource = file:data.txt\n"
             "sink = http://127.0.0.1:8123/?query=INSERT INTO t FORMAT "
             "JSONEachRow,preset=clickhouse,compression=gzip,"
             "header=X-A: 1,header=X-B: 2,batch_bytes=2MiB,"
             "batch_records=500,batch_age=250ms,concurrency=4,timeout=5s,"
             "dead_letter=/tmp/dead.jsonl,name=ch\n"
             "sink = HTTPS://localhost:9200/_bulk,preset=elasticsearch,"
             "index=logs,compression=zstd,ca=/etc/ssl/certs/"
             "ca-certificates.crt,verify=no,name=es\n"
             "sink = http://127.0.0.1:3100/loki/api/v1/push,preset=loki,"
             "label=job=app,label=env=a=b,name=loki\n"
             "sink = http://127.0.0.1:8088/services/collector/event,"
             "preset=splunk_hec,name=hec,retries=forever\n"
             "sink = http://127.0.0.1:4318/v1/logs,preset=otlp,retries=10,"
             "label=service.name=app,name=otel\n");
    /* A kafka sink with every option; the brokers a list. */
    check_ok("kafka",
             "[pipeline a]\nsource = file:data.txt\n"
             "sink = kafka:k1:9092,127.0.0.1:9093,[::1]:9094/app.logs-1,"
             "key=host,compression=zstd,dead_letter=/tmp/dead.jsonl,"
             "rdkafka.linger.ms=20,rdkafka.security.protocol=plaintext\n"
             "sink = KAFKA:k1:9092/x,key=none,name=b\n");
    /* A jetstream sink: the servers a list of URLs. */
    check_ok("jetstream",
             "[pipeline a]\nsource = file:data.txt\n"
             "sink = jetstream:nats://n1:4222,nats://127.0.0.1:4223,"
             "tls://[::1]:4224/logs.app.1,ca=/etc/ssl/certs/"
             "ca-certificates.crt,dead_letter=/tmp/js.dead,retries=10\n");
    /* A jetstream source with every option, into a file; and one served
     * to tcp-listen clients. */
    check_ok("jetstream_source",
             "[pipeline a]\nsource = jetstream:nats://n1:4222,"
             "tls://127.0.0.1:4223/LOGS,consumer=ship-1,subject=logs.>,"
             "ack_wait=2min,ca=/etc/ssl/certs/ca-certificates.crt\n"
             "sink = file:out.txt\n"
             "[pipeline b]\nsource = jetstream:nats://127.0.0.1:4222/LOGS\n"
             "sink = tcp-listen:127.0.0.1:7001\n");
    /* Two listeners on one port but different specific hosts are fine. */
    check_ok("two_hosts",
             "[pipeline a]\nsource = file:data.txt\nsink = "
             "tcp-listen:127.0.0.1:7000\nsink = tcp-listen:127.0.0.2:7000\n");
}

/* Without -c, weir checks the demo it carries. */
static void test_embedded_demo(void **state)
{
    char *argv[] = {NULL, "--check", "--syntax-only", NULL};
    struct run *r = calloc(1, sizeof(*r));

    (void)state;
    assert_non_null(r);
    run_weir(argv, r);
    expect_exit(r, 0);
    assert_non_null(strstr(r->out, "demo.conf: configuration OK"));
    free(r);
}

/* A file that cannot be read is an error of its own, not a crash. */
static void test_missing_config(void **state)
{
    char path[256], *argv[] = {NULL, "--check", "-c", path, NULL};
    struct run *r = calloc(1, sizeof(*r));

    (void)state;
    assert_non_null(r);
    snprintf(path, sizeof(path), "%s/absent.conf", h_dir);
    run_weir(argv, r);
    expect_exit(r, EX_CONFIG);
    assert_non_null(strstr(r->out, "No such file"));
    free(r);
}

static void expect_pipe(int code, const char *needle, ...)
{
    char *argv[16] = {NULL, "--check", "pipe"};
    struct run *r = calloc(1, sizeof(*r));
    va_list ap;
    int n = 3;

    assert_non_null(r);
    va_start(ap, needle);
    while (n < 15 && (argv[n] = va_arg(ap, char *)) != NULL)
        n++;
    va_end(ap);
    run_weir(argv, r);
    expect_exit(r, code);
    if (needle != NULL && strstr(r->out, needle) == NULL)
        fail_msg("'%s' not in the output:\n%s", needle, r->out);
    free(r);
}

static void test_pipe_arguments(void **state)
{
    char data[300];

    (void)state;
    snprintf(data, sizeof(data), "file:%s/data.txt", h_dir);
    /* argv: weir --check pipe SRC SINK...: SRC is argument 3. */
    expect_pipe(0, "configuration OK", data, "tcp:[::1]:9000", "null", NULL);
    expect_pipe(0, "configuration OK", "--chunk-size=1MiB", "-f", data,
                "--high-water-mark", "2MiB", "stdout", NULL);
    expect_pipe(EX_CONFIG, "argument 4: sink: ", data, "tcp:nowhere", NULL);
    expect_pipe(EX_CONFIG, "argument 3: source: cannot open",
                "file:/nonexistent", "null", NULL);
    expect_pipe(EX_CONFIG, "argument 4: unknown transform 'gunzap'", "-t",
                "gunzap", data, "null", NULL);
    expect_pipe(EX_CONFIG, "argument 4: zstd level '20' is out of range 1-19",
                "-t", "zstd:20", data, "null", NULL);
    expect_pipe(0, "configuration OK", "-t", "uppercase", "-t", "gzip:1", data,
                "null", NULL);
    expect_pipe(EX_CONFIG, "argument 4: sink: stdin cannot be a sink", data,
                "stdin", NULL);
    expect_pipe(EX_CONFIG, "argument 3: high_water_mark", "--high-water-mark=0",
                data, "null", NULL);
    expect_pipe(EX_USAGE, "missing SINK", data, NULL);
    expect_pipe(EX_USAGE, "missing SOURCE", NULL);
    expect_pipe(EX_USAGE, "unknown option '--frobnicate'", "--frobnicate", data,
                "null", NULL);
    expect_pipe(EX_USAGE, "--transform needs a value", data, "null", "-t",
                NULL);
}

/* getopt_long's spellings: attached and separate values, --name=value,
 * bundled flags, unique prefixes; errors still name the argument that
 * holds the bad value. */
static void test_pipe_getopt(void **state)
{
    char data[300];

    (void)state;
    snprintf(data, sizeof(data), "file:%s/data.txt", h_dir);
    expect_pipe(0, "configuration OK", "-tgzip", data, "null", NULL);
    expect_pipe(0, "configuration OK", "-t", "gzip", data, "null", NULL);
    expect_pipe(0, "configuration OK", "--transform=gzip", data, "null", NULL);
    expect_pipe(0, "configuration OK", "--transform", "gzip", data, "null",
                NULL);
    expect_pipe(0, "configuration OK", "--trans=zstd:3", data, "null", NULL);
    expect_pipe(0, "configuration OK", "-w2", data, "null", NULL);
    expect_pipe(0, "configuration OK", "--workers=2", data, "null", NULL);
    expect_pipe(0, "configuration OK", "-fw2", data, "null", NULL);
    /* Options after the addresses, and `--` before an address. */
    expect_pipe(0, "configuration OK", data, "null", "-tuppercase", NULL);
    expect_pipe(0, "configuration OK", "--", data, "null", NULL);
    /* argv: weir --check pipe ...: the first word after pipe is 3. */
    expect_pipe(EX_CONFIG, "argument 3: zstd level '30'", "-tzstd:30", data,
                "null", NULL);
    expect_pipe(EX_CONFIG, "argument 4: zstd level '30'", "-t", "zstd:30", data,
                "null", NULL);
    expect_pipe(EX_CONFIG, "argument 5: unknown transform 'gunzap'", data,
                "null", "--transform=gunzap", NULL);
    expect_pipe(EX_CONFIG, "argument 3: workers: '0' is out of range", "-w0",
                data, "null", NULL);
    expect_pipe(EX_CONFIG, "argument 3: workers", "-fw0", data, "null", NULL);
    expect_pipe(EX_CONFIG, "argument 6: sink: unknown address kind", "-tgzip",
                data, "--", "--null", NULL);
    expect_pipe(EX_USAGE, "unknown option '-x'", "-fx", data, "null", NULL);
    expect_pipe(EX_USAGE, "--follow takes no value", "--follow=yes", data,
                "null", NULL);
    expect_pipe(EX_USAGE, "--workers needs a value", data, "null", "-w", NULL);
}

/*
 * The same errors under journald start with the sd-daemon prefix <3>
 * (error); when weir runs a config rather than checking it, they carry a
 * timestamp and the level's name instead.
 */
/* Suggestions only for near misses: three edits, or two in a word of
 * three letters, are a different word. */
static void test_no_far_suggestion(void **state)
{
    char path[256], *argv[] = {NULL, "--check", "-c", path, NULL};
    struct run *r = calloc(1, sizeof(*r));

    (void)state;
    assert_non_null(r);
    snprintf(path, sizeof(path), "%s/far.conf", h_dir);
    write_file(path, "[daemon]\nspeed = 1\n[pipeline a]\nsrc = file:data.txt\n"
                     "source = file:data.txt\ntransform = sharpen\n"
                     "sink = udp:127.0.0.1:9\n[section]\n");
    run_weir(argv, r);
    expect_exit(r, EX_CONFIG);
    assert_int_equal(count_lines(r->out, path), 5);
    if (strstr(r->out, "did you mean") != NULL)
        fail_msg("a suggestion for a far word:\n%s", r->out);
    free(r);
}

/* `weir pipe - -`: socat's stdin to stdout, every byte. */
static void test_pipe_dash(void **state)
{
    char in[256], out[256], log[256], hex_in[65], hex_out[65];
    uint64_t size_in, size_out;
    struct h_weir w;

    (void)state;
    h_path(in, sizeof(in), "dash.in");
    h_path(out, sizeof(out), "dash.out");
    h_path(log, sizeof(log), "dash.log");
    h_make_file(in, 3 * 1024 * 1024 + 17, 13, hex_in);
    h_spawn_io(&w, (char *const[]){"weir", "pipe", "-w1", "-", "-", NULL}, log,
               in, out);
    h_expect_exit(&w, 0, false, 30000);
    assert_true(h_file_sha(in, hex_in, &size_in));
    assert_true(h_file_sha(out, hex_out, &size_out));
    assert_int_equal(size_out, size_in);
    assert_string_equal(hex_out, hex_in);
}

/* --version: the version alone on the first line (packagers grep it),
 * then the engine and every library of the build with the version meson
 * found (WEIR_BUILD_VERSIONS: "NAME VERSION;..."). */
static void test_version(void **state)
{
    char *argv[] = {NULL, "--version", NULL};
    const char *versions = getenv("WEIR_BUILD_VERSIONS");
    struct run *r = calloc(1, sizeof(*r));
    char *copy, *item, *save = NULL;

    (void)state;
    assert_non_null(r);
    assert_non_null(versions);
    run_weir(argv, r);
    expect_exit(r, 0);
    assert_int_equal(strncmp(r->out, "weir ", 5), 0);
    assert_non_null(strstr(r->out, "engines: io_uring (liburing "));
    assert_non_null(strstr(r->out, ", epoll; "));
    copy = strdup(versions);
    assert_non_null(copy);
    for (item = strtok_r(copy, ";", &save); item != NULL;
         item = strtok_r(NULL, ";", &save)) {
        if (strstr(r->out, item) == NULL)
            fail_msg("'%s' not in --version:\n%s", item, r->out);
    }
    free(copy);
    free(r);
}

/* --dump-defaults (for the docs test): the parser's defaults. */
static void test_dump_defaults(void **state)
{
    char *argv[] = {NULL, "--dump-defaults", NULL};
    struct run *r = calloc(1, sizeof(*r));

    (void)state;
    assert_non_null(r);
    run_weir(argv, r);
    expect_exit(r, 0);
    assert_non_null(strstr(r->out, "\nchunk_size=262144\n"));
    assert_non_null(strstr(r->out, "\nhigh_water_mark=1048576\n"));
    assert_non_null(strstr(r->out, "\nbacklog=4096\n"));
    assert_non_null(strstr(r->out, "\nnotsent_lowat=auto\n"));
    assert_non_null(strstr(r->out, "\ndrain_timeout=5000ms\n"));
    assert_int_equal(strncmp(r->out, "workers=auto\n", 13), 0);
    free(r);
}

static void test_log_formats(void **state)
{
    char path[256], *check[] = {NULL, "--check", "-c", path, NULL};
    char *start[] = {NULL, "-c", path, NULL}, want[300];
    struct run *r = calloc(1, sizeof(*r));
    int year, mon, day, h, m, sec, ms, n = 0;

    (void)state;
    assert_non_null(r);
    snprintf(path, sizeof(path), "%s/journal.conf", h_dir);
    write_file(path, "[daemon]\nworkers = -1\n" OK_PIPELINE);
    run_weir_env(check, r, true);
    expect_exit(r, EX_CONFIG);
    snprintf(want, sizeof(want), "<3>%s:2: workers", path);
    if (strncmp(r->out, want, strlen(want)) != 0)
        fail_msg("expected '%s...', got:\n%s", want, r->out);
    assert_int_equal(count_lines(r->out, "<3>"), count_lines(r->out, ""));

    run_weir(start, r);
    expect_exit(r, EX_CONFIG);
    assert_int_equal(sscanf(r->out, "%4d-%2d-%2dT%2d:%2d:%2d.%3d%*[+-]%*4d %n",
                            &year, &mon, &day, &h, &m, &sec, &ms, &n),
                     7);
    snprintf(want, sizeof(want), "error: %s:2: workers", path);
    if (n == 0 || strncmp(r->out + n, want, strlen(want)) != 0)
        fail_msg("expected a timestamp and '%s...', got:\n%s", want, r->out);
    free(r);
}

/* A config of n pipelines, each a file into its own file sink; with
 * `repeat`, the last one's sink names the first one's through another
 * spelling (sub/../sub/). */
static void write_many(const char *path, unsigned n, bool repeat)
{
    FILE *f = fopen(path, "w");

    assert_non_null(f);
    for (unsigned i = 0; i < n; i++)
        fprintf(
            f,
            "[pipeline p%u]\nsource = file:data.txt\nsink = file:%s/%u.out\n",
            i, repeat && i == n - 1 ? "sub/../sub" : "sub",
            repeat && i == n - 1 ? 0 : i);
    fclose(f);
}

/* Every pipeline is checked against the others by lookup, not pair by
 * pair; the output stops at 100 errors and counts the rest. */
static void test_many_pipelines(void **state)
{
    char path[256], prefix[300], *argv[] = {NULL, "--check", "-c", path, NULL};
    struct run *r = calloc(1, sizeof(*r));
    FILE *f;

    (void)state;
    assert_non_null(r);
    snprintf(path, sizeof(path), "%s/many.conf", h_dir);
    write_many(path, 10000, false);
    run_weir(argv, r);
    expect_exit(r, 0);

    /* Pipeline 9999 starts at line 29998; its sink is line 30000. */
    write_many(path, 10000, true);
    run_weir(argv, r);
    expect_exit(r, EX_CONFIG);
    snprintf(prefix, sizeof(prefix), "%s:30000: ", path);
    if (!strstr(r->out, prefix) ||
        !strstr(r->out, "already written by the sink at line 3"))
        fail_msg("the repeated sink is not named; output:\n%s", r->out);
    snprintf(prefix, sizeof(prefix), "%s:", path);
    assert_int_equal(count_lines(r->out, prefix), 1);

    f = fopen(path, "w");
    assert_non_null(f);
    for (unsigned i = 0; i < 1000; i++)
        fprintf(f, "bogus%u = 1\n", i);
    fclose(f);
    run_weir(argv, r);
    expect_exit(r, EX_CONFIG);
    snprintf(prefix, sizeof(prefix), "%s:", path);
    /* 100 FILE:LINE lines, and the count of the other 901 (the 1000
     * lines and the missing pipeline). */
    assert_int_equal(count_lines(r->out, prefix), 101);
    if (!strstr(r->out, "and 901 more errors"))
        fail_msg("no count of the errors not shown; output:\n%s", r->out);
    free(r);
}

/* A listening socket on a port the kernel chose. */
static int listening(uint16_t *port)
{
    struct sockaddr_storage ss;
    socklen_t len = h_addr(&ss, false, 0);
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

    assert_true(fd >= 0);
    assert_int_equal(bind(fd, (struct sockaddr *)&ss, len), 0);
    assert_int_equal(listen(fd, 4), 0);
    len = sizeof(ss);
    assert_int_equal(getsockname(fd, (struct sockaddr *)&ss, &len), 0);
    *port = ntohs(((struct sockaddr_in *)&ss)->sin_port);
    return fd;
}

/* --check looks at what the file names: a listen address another
 * program holds, a source the service cannot read, a sink directory it
 * cannot write, port 80 without the socket unit; all reported at once,
 * each at its line. --syntax-only passes the same file. */
static void test_environment(void **state)
{
    char dir[200], path[300], text[2048], want[1024];
    char *argv[] = {NULL, "--check", "-c", path, NULL};
    char *syntax[] = {NULL, "--check", "--syntax-only", "-c", path, NULL};
    bool root = geteuid() == 0;
    struct run *r = calloc(1, sizeof(*r));
    uint16_t held;
    int fd = listening(&held);

    (void)state;
    assert_non_null(r);
    /* As root the checks are judged for the service's user: nobody here.
     * The suite's directory must let that user through. */
    assert_int_equal(chmod(h_dir, 0755), 0);
    snprintf(dir, sizeof(dir), "%s/env", h_dir);
    assert_int_equal(mkdir(dir, 0755), 0);
    snprintf(path, sizeof(path), "%s/ro", dir);
    assert_int_equal(mkdir(path, 0555), 0);
    snprintf(path, sizeof(path), "%s/rw", dir);
    assert_int_equal(mkdir(path, 0777), 0);
    assert_int_equal(chmod(path, 0777), 0);
    snprintf(path, sizeof(path), "%s/secret", dir);
    write_file(path, "for root only\n");
    assert_int_equal(chmod(path, 0600), 0);
    snprintf(path, sizeof(path), "%s/public", dir);
    write_file(path, "for all\n");
    assert_int_equal(chmod(path, 0644), 0);
    snprintf(text, sizeof(text),
             "[pipeline a]\n"                   /* 1 */
             "source = file:%s/secret\n"        /* 2 */
             "sink = file:%s/ro/out\n"          /* 3 */
             "sink = file:%s/rw/out\n"          /* 4 */
             "[pipeline b]\n"                   /* 5 */
             "source = file:%s/public\n"        /* 6 */
             "sink = tcp-listen:127.0.0.1:%u\n" /* 7 */
             "%s",                              /* 8 */
             dir, dir, dir, dir, held,
             root ? "sink = tcp-listen:127.0.0.1:80\n" : "");
    snprintf(path, sizeof(path), "%s/env.conf", h_dir);
    write_file(path, text);
    if (root)
        setenv("WEIR_SERVICE_USER", "nobody", 1);
    run_weir(argv, r);
    unsetenv("WEIR_SERVICE_USER");
    expect_exit(r, EX_CONFIG);
    snprintf(want, sizeof(want), "%s:3: sink: '%s/ro/out' cannot be created",
             path, dir);
    assert_non_null(strstr(r->out, want));
    snprintf(want, sizeof(want),
             "%s:7: sink: tcp-listen:127.0.0.1:%u is in use by pid %d "
             "(test_check)",
             path, held, (int)getpid());
    if (!strstr(r->out, want))
        fail_msg("no '%s' in:\n%s", want, r->out);
    snprintf(want, sizeof(want), "%s:4:", path);
    assert_null(strstr(r->out, want));
    snprintf(want, sizeof(want), "%s:6:", path);
    assert_null(strstr(r->out, want));
    if (root) {
        snprintf(want, sizeof(want),
                 "%s:2: source: '%s/secret' cannot be read by user nobody",
                 path, dir);
        assert_non_null(strstr(r->out, want));
        snprintf(want, sizeof(want), "%s:8: sink: port 80 needs weir.socket",
                 path);
        assert_non_null(strstr(r->out, want));
        assert_non_null(strstr(r->out, "4 errors in what the configuration"));
    } else {
        assert_non_null(strstr(r->out, "2 errors in what the configuration"));
    }
    run_weir(syntax, r);
    expect_exit(r, 0);
    assert_non_null(strstr(r->out, "configuration OK"));
    /* Once the port is free, the same sink passes. */
    close(fd);
    snprintf(text, sizeof(text),
             "[pipeline b]\nsource = file:%s/public\n"
             "sink = tcp-listen:127.0.0.1:%u\nsink = file:%s/rw/out\n",
             dir, held, dir);
    write_file(path, text);
    run_weir(argv, r);
    expect_exit(r, 0);
    free(r);
}

/* How many lines of the file at path contain needle. */
static unsigned count_in_file(const char *path, const char *needle)
{
    char line[1024];
    unsigned n = 0;
    FILE *f = fopen(path, "r");

    assert_non_null(f);
    while (fgets(line, sizeof(line), f))
        if (strstr(line, needle))
            n++;
    fclose(f);
    return n;
}

/* --check of many listen addresses binds each once and looks for the
 * holder (through /proc/net/tcp, which costs far more than a bind) only
 * of a port that is taken: traced with strace, a config of free ports
 * opens no /proc/net/tcp, and one taken port is looked up and named. */
static void test_listen_owner_only_when_taken(void **state)
{
    char conf[256], trace[256], cmd[1024], *text;
    uint16_t ports[64], taken;
    size_t len = 0, cap;
    int fd, rc;

    (void)state;
    if (system("command -v strace >/dev/null 2>&1") != 0) {
        print_message("skip: strace is not installed\n");
        skip();
    }
    snprintf(conf, sizeof(conf), "%s/listen.conf", h_dir);
    snprintf(trace, sizeof(trace), "%s/listen.trace", h_dir);
    /* Each pipeline is its header, the binary's path and the sink line;
     * the path is as long as the build directory makes it. */
    cap = 65 * (strlen(h_bin()) + 96) + 1;
    text = malloc(cap);
    assert_non_null(text);
    for (size_t i = 0; i < 64; i++) {
        bool dup;

        do {
            ports[i] = h_free_port(false);
            dup = false;
            for (size_t j = 0; j < i; j++)
                dup = dup || ports[j] == ports[i];
        } while (dup);
        assert_true(len < cap);
        len += (size_t)snprintf(text + len, cap - len,
                                "[pipeline p%zu]\nsource = file:%s\n"
                                "sink = tcp-listen:127.0.0.1:%u\n",
                                i, h_bin(), ports[i]);
    }
    write_file(conf, text);
    /* LeakSanitizer cannot run under ptrace: the sanitizer build's
     * leak check is off for the traced run (the other tests keep it). */
    snprintf(cmd, sizeof(cmd),
             "ASAN_OPTIONS=\"${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0\" "
             "strace -f -qq -e trace=openat -o %s %s --check -c %s "
             ">/dev/null 2>&1",
             trace, h_bin(), conf);
    rc = system(cmd);
    assert_true(WIFEXITED(rc));
    assert_int_equal(WEXITSTATUS(rc), 0);
    assert_int_equal(count_in_file(trace, "/proc/net/tcp"), 0);

    /* The same with one more sink on a port someone listens on. */
    fd = h_listen_any(&taken);
    snprintf(text + len, cap - len,
             "[pipeline taken]\nsource = file:%s\n"
             "sink = tcp-listen:127.0.0.1:%u\n",
             h_bin(), taken);
    write_file(conf, text);
    rc = system(cmd);
    close(fd);
    assert_true(WIFEXITED(rc));
    assert_int_equal(WEXITSTATUS(rc), EX_CONFIG);
    assert_true(count_in_file(trace, "/proc/net/tcp") >= 1);
    free(text);
}

/* Where `needle` starts in out, failing the test when it is not there. */
static const char *must_find(const char *out, const char *needle)
{
    const char *at = strstr(out, needle);

    if (at == NULL)
        fail_msg("no '%s' in:\n%s", needle, out);
    return at;
}

/* --check reports in the order of the lines, whichever pass found the
 * problem (a key as it is read, a whole pipeline after, what the config
 * names on this machine last), keeps the warnings of names that do not
 * resolve beside the errors, and shows control bytes of the file as
 * \xNN instead of sending them to the terminal. */
static void test_messages_in_line_order(void **state)
{
    char path[256], text[1024], want[320],
        *argv[] = {NULL, "--check", "-c", path, NULL};
    struct run *r = calloc(1, sizeof(*r));
    uint16_t mport, sport;
    int mfd, sfd;

    (void)state;
    assert_non_null(r);
    snprintf(path, sizeof(path), "%s/order.conf", h_dir);
    write_file(path, "[pipeline a]\n"                       /* 1 */
                     "source = file:/etc/hostname\n"        /* 2 */
                     "sink = tcp:weir-check.invalid:9000\n" /* 3 */
                     "[pipeline b]\n"                       /* 4 */
                     "source = file:/etc/hostname\n"        /* 5 */
                     "[pipeline c]\n"                       /* 6 */
                     "source = file:/etc/hostname\n"        /* 7 */
                     "sink = null\n"                        /* 8 */
                     "b\x1b[2Jog\rus = 1\n");               /* 9 */
    run_weir(argv, r);
    expect_exit(r, EX_CONFIG);
    snprintf(want, sizeof(want), "%s:3: warning: sink tcp:weir-check.invalid",
             path);
    const char *l3 = must_find(r->out, want);
    snprintf(want, sizeof(want), "%s:4: pipeline 'b' has no sink", path);
    const char *l4 = must_find(r->out, want);
    snprintf(want, sizeof(want), "%s:9: unknown key 'b\\x1b[2Jog us'", path);
    const char *l9 = must_find(r->out, want);
    assert_true(l3 < l4 && l4 < l9);
    assert_null(strchr(r->out, '\x1b'));
    assert_null(strchr(r->out, '\r'));

    /* What the config names: the metrics address of [daemon] (line 2)
     * before the sink of the pipeline below it (line 5), though the
     * pipelines are looked at first. */
    mfd = h_listen_any(&mport);
    sfd = h_listen_any(&sport);
    snprintf(text, sizeof(text),
             "[daemon]\n"                        /* 1 */
             "metrics = 127.0.0.1:%u\n"          /* 2 */
             "[pipeline a]\n"                    /* 3 */
             "source = file:/etc/hostname\n"     /* 4 */
             "sink = tcp-listen:127.0.0.1:%u\n", /* 5 */
             mport, sport);
    write_file(path, text);
    run_weir(argv, r);
    close(mfd);
    close(sfd);
    expect_exit(r, EX_CONFIG);
    snprintf(want, sizeof(want), "%s:2: metrics:", path);
    l3 = must_find(r->out, want);
    snprintf(want, sizeof(want), "%s:5: sink:", path);
    l4 = must_find(r->out, want);
    assert_true(l3 < l4);
    free(r);
}

/* The listen address of a running weir is no error: a reload hands its
 * socket over. The running weir says so on its control socket. */
static void test_held_by_running(void **state)
{
    uint16_t port = h_free_port(false);
    char path[300], *argv[] = {NULL, "--check", "-c", path, NULL};
    struct run *r = calloc(1, sizeof(*r));
    struct h_weir w;

    (void)state;
    assert_non_null(r);
    h_start_conf(&w, "running", H_CONF_FRESH_LOG,
                 "[daemon]\nworkers = 1\ncontrol_socket = %s/running.sock\n"
                 "[pipeline a]\nsource = file:%s/data.txt\n"
                 "sink = tcp-listen:127.0.0.1:%u\n",
                 h_dir, h_dir, port);
    h_expect_log(&w, "pipeline a: listening on", 30000);
    snprintf(path, sizeof(path), "%s/running.conf", h_dir);
    run_weir(argv, r);
    expect_exit(r, 0);
    h_expect_exit(&w, 0, true, 30000);
    free(r);
}

/* A start that fails names every error with its FILE:LINE at once, not
 * the first alone. */
static void test_start_errors(void **state)
{
    uint16_t p1, p2;
    int f1 = listening(&p1), f2 = listening(&p2);
    char want[400];
    struct h_weir w;

    (void)state;
    h_start_conf(&w, "start", H_CONF_FRESH_LOG,
                 "[daemon]\nworkers = 1\ncontrol_socket = no\n" /* 1-3 */
                 "[pipeline a]\nsource = file:%s/data.txt\n"    /* 4-5 */
                 "sink = tcp-listen:127.0.0.1:%u\n"             /* 6 */
                 "[pipeline b]\nsource = file:%s/data.txt\n"    /* 7-8 */
                 "sink = tcp-listen:127.0.0.1:%u\n",            /* 9 */
                 h_dir, p1, h_dir, p2);
    h_expect_exit(&w, 1, false, 30000);
    /* Each names the process that holds its port: this test. */
    snprintf(want, sizeof(want),
             "%s/start.conf:6: pipeline a: cannot listen on "
             "tcp-listen:127.0.0.1:%u: it is in use by pid %ld (",
             h_dir, p1, (long)getpid());
    h_expect_log(&w, want, 1);
    snprintf(want, sizeof(want),
             "%s/start.conf:9: pipeline b: cannot listen on "
             "tcp-listen:127.0.0.1:%u: it is in use by pid %ld (",
             h_dir, p2, (long)getpid());
    h_expect_log(&w, want, 1);
    h_expect_log(&w, "2 pipelines could not start; exiting", 1);
    close(f1);
    close(f2);
}

static int setup(void **state)
{
    char path[300];

    (void)state;
    snprintf(path, sizeof(path), "%s/data.txt", h_dir);
    write_file(path, "some data\n");
    snprintf(path, sizeof(path), "%s/sub", h_dir);
    return mkdir(path, 0700);
}

/* A file sink named without a directory that does not exist yet, from
 * the current directory: weir pipe copies the file (it read past a NULL
 * when it keyed the sink by its directory). */
static void test_pipe_relative_sink(void **state)
{
    char cmd[2048], in[600], hex[65], got[65];
    uint64_t size;
    int st;

    (void)state;
    h_path(in, sizeof(in), "rel.in");
    h_make_file(in, 70000, 3, hex);
    snprintf(cmd, sizeof(cmd),
             "cd '%s' && rm -f rel.out && '%s' pipe file:rel.in file:rel.out",
             h_dir, h_bin());
    st = system(cmd);
    assert_true(WIFEXITED(st));
    assert_int_equal(WEXITSTATUS(st), 0);
    h_path(in, sizeof(in), "rel.out");
    assert_true(h_file_sha(in, got, &size));
    assert_int_equal(size, 70000);
    assert_string_equal(got, hex);
}

/* A glob source with every key of its own passes; a directory of the
 * pattern that does not exist yet is a warning naming the line (the
 * files are picked up once it does), not an error. */
static void test_glob_source(void **state)
{
    char path[256], want[400], *argv[] = {NULL, "--check", "-c", path, NULL};
    struct run *r = calloc(1, sizeof(*r));

    (void)state;
    assert_non_null(r);
    snprintf(path, sizeof(path), "%s/glob.conf", h_dir);
    write_file(path, "[pipeline a]\n"                            /* 1 */
                     "source = file:/tmp/weir-none-*/app*.log\n" /* 2 */
                     "exclude = /tmp/x*.log /tmp/**/y.log\n"     /* 3 */
                     "read_from = end\n"                         /* 4 */
                     "follow = yes\n"                            /* 5 */
                     "ignore_older = 1h\n"                       /* 6 */
                     "rotate_wait = 0\n"                         /* 7 */
                     "line_timeout = 250ms\n"                    /* 8 */
                     "max_open_files = 65536\n"                  /* 9 */
                     "rescan_interval = 1min\n"                  /* 10 */
                     "framing = lines\n"                         /* 11 */
                     "max_record = 64 MiB\n"                     /* 12 */
                     "on_long = skip\n"                          /* 13 */
                     "multiline_start = ^\\d{4}-\\d{2}-\\d{2}\n" /* 14 */
                     "format = json\n"                           /* 15 */
                     "sink = null\n"                             /* 16 */
                     "[pipeline b]\n"                            /* 17 */
                     "source = file:/tmp/[0-9]?.weir-none.log\n" /* 18 */
                     "sink = null\n");                           /* 19 */
    run_weir(argv, r);
    expect_exit(r, 0);
    /* /tmp/weir-none-* is a pattern: its fixed directory, /tmp, exists. */
    if (strstr(r->out, "warning") != NULL)
        fail_msg("no warning expected:\n%s", r->out);
    write_file(path, "[pipeline a]\n"
                     "source = file:/tmp/weir-none-dir/*.log\n"
                     "sink = null\n");
    run_weir(argv, r);
    expect_exit(r, 0);
    snprintf(want, sizeof(want),
             "%s:2: warning: source: directory '/tmp/weir-none-dir' does not "
             "exist",
             path);
    if (!strstr(r->out, want))
        fail_msg("no '%s' in:\n%s", want, r->out);
    /* framing = lines on one named file makes it a glob source of that
     * path: the keys of one are accepted. */
    write_file(path, "[pipeline a]\n"
                     "source = file:data.txt\n"
                     "framing = lines\n"
                     "rotate_wait = 1s\n"
                     "format = json\n"
                     "sink = null\n");
    run_weir(argv, r);
    expect_exit(r, 0);
    free(r);
}

int main(void)
{
    static const struct CMUnitTest fixed[] = {
        cmocka_unit_test(test_glob_source),
        cmocka_unit_test(test_good_configs),
        cmocka_unit_test(test_embedded_demo),
        cmocka_unit_test(test_missing_config),
        cmocka_unit_test(test_pipe_arguments),
        cmocka_unit_test(test_pipe_getopt),
        cmocka_unit_test(test_no_far_suggestion),
        cmocka_unit_test(test_version),
        cmocka_unit_test(test_dump_defaults),
        cmocka_unit_test_teardown(test_pipe_dash, h_teardown),
        cmocka_unit_test(test_log_formats),
        cmocka_unit_test(test_many_pipelines),
        cmocka_unit_test(test_environment),
        cmocka_unit_test(test_listen_owner_only_when_taken),
        cmocka_unit_test(test_messages_in_line_order),
        cmocka_unit_test_teardown(test_start_errors, h_teardown),
        cmocka_unit_test_teardown(test_held_by_running, h_teardown),
        cmocka_unit_test(test_pipe_relative_sink),
    };
    size_t nfixed = sizeof(fixed) / sizeof(fixed[0]);
    struct CMUnitTest *tests = calloc(NBAD + nfixed, sizeof(*tests));
    int failed;

    if (tests == NULL || h_begin("check") != 0)
        return 1;
    for (size_t i = 0; i < NBAD; i++) {
        tests[i] = (struct CMUnitTest)cmocka_unit_test_prestate(
            test_bad_config, (void *)&bad_cases[i]);
        tests[i].name = bad_cases[i].name;
    }
    memcpy(tests + NBAD, fixed, sizeof(fixed));
    failed =
        _cmocka_run_group_tests("check", tests, NBAD + nfixed, setup, NULL);
    free(tests);
    h_end();
    return failed;
}
