/*
 * test_file_set.c - the file-set source (weir/file_set.h) on a real
 * worker, over real files in a temporary directory, changed by this
 * thread (writes, renames, truncations, deletions) and by logrotate
 * itself where it is installed.
 *
 * Every line the tests write names its writer and its number ("a 17
 * ..."), so the reader, on the worker, checks what the source promises
 * without knowing where a chunk came from: each chunk is whole records
 * of one file, and each writer's lines arrive exactly once and in order.
 * The reader acknowledges what it read, so the ledger runs too. Nothing
 * here waits for a time to pass as an assertion: the tests wait for
 * lines or events to arrive, with a generous bound that only a failure
 * reaches.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <dirent.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "weir/file_set.h"
#include "weir/worker.h"

#define MS       (1000ull * 1000ull)
#define MAX_TAGS 32768 /* a power of two: the slots of a hash table */

static char top[] = "/tmp/weir-file-set-XXXXXX";
static char dir[600]; /* this test's directory, under top */

struct tag {
    char name[32];
    uint64_t next;        /* the number expected next */
    uint64_t bad;         /* lines out of order, repeated or missing */
    long first_chunk;     /* index of the chunk its first line came in */
    uint64_t first_bytes; /* stream bytes before that chunk */
    char last[160];       /* its last line, for messages */
};

struct env {
    pthread_mutex_t mu;
    struct weir_workers *w;
    struct weir_endpoint *ep;
    struct weir_reader rd;
    struct weir_file_set_options o;
    const char *inc[4], *exc[4];
    char incbuf[4][700], excbuf[4][700];
    /* resume: a file whose name ends so starts at this offset */
    const char *resume_suffix;
    uint64_t resume_off;
    /* Set by the test's thread under mu; the worker's flags below are
     * its own. Apart, so that no load of those reads it too. */
    bool paused;
    int err;
    bool reading, ended, destroyed;
    uint64_t bytes, chunks;
    uint64_t mixed; /* chunks with more than one writer or a cut line */
    struct tag tags[MAX_TAGS];
    size_t ntags;
    uint32_t slot[MAX_TAGS]; /* 1 + index into tags, by name's hash */
    uint64_t events[8], lost;
    char last_event_path[700];
    struct weir_file_set_stats stats;
    size_t known, known_open;
    uint64_t max_size; /* of the files known */
    uint64_t app_size; /* of the one named app.log */
    bool queried;
    struct weir_task t_start, t_stop, t_resume, t_query, t_block, t_end;
    bool blocked, unblock;
    pthread_cond_t cond;
};

static struct env E;

/* ---- the worker side ---- */

static void on_event(void *arg, enum weir_file_set_event ev, const char *path,
                     int err, uint64_t off)
{
    (void)arg;
    (void)err;
    pthread_mutex_lock(&E.mu);
    E.events[ev]++;
    if (getenv("FS_DEBUG"))
        fprintf(stderr, "event %d %s %llu chunks %llu\n", ev, path ? path : "-",
                (unsigned long long)off, (unsigned long long)E.chunks);
    if (ev == WEIR_FS_LOST)
        E.lost += off;
    if (path)
        snprintf(E.last_event_path, sizeof(E.last_event_path), "%s", path);
    pthread_mutex_unlock(&E.mu);
}

static bool on_resume(void *arg, const struct weir_file_set_file *f,
                      uint64_t *off)
{
    size_t n = strlen(f->path), k;

    (void)arg;
    if (!E.resume_suffix)
        return false;
    k = strlen(E.resume_suffix);
    if (n < k || strcmp(f->path + n - k, E.resume_suffix) != 0)
        return false;
    *off = E.resume_off;
    return true;
}

static uint32_t tag_hash(const char *name, size_t len)
{
    uint32_t h = 2166136261u;

    for (size_t i = 0; i < len; i++)
        h = (h ^ (uint8_t)name[i]) * 16777619u;
    return h;
}

static struct tag *tag_of(const char *name, size_t len)
{
    uint32_t h = tag_hash(name, len) & (MAX_TAGS - 1);

    for (; E.slot[h]; h = (h + 1) & (MAX_TAGS - 1)) {
        struct tag *t = &E.tags[E.slot[h] - 1];

        if (strlen(t->name) == len && memcmp(t->name, name, len) == 0)
            return t;
    }
    if (E.ntags == MAX_TAGS - 1 || len >= sizeof(E.tags[0].name))
        return NULL;
    E.slot[h] = (uint32_t)E.ntags + 1;
    memcpy(E.tags[E.ntags].name, name, len);
    E.tags[E.ntags].first_chunk = (long)E.chunks;
    E.tags[E.ntags].first_bytes = E.bytes;
    return &E.tags[E.ntags++];
}

/* One chunk: whole lines, all of one writer. */
static void take_chunk(struct weir_chunk c)
{
    const char *p = (const char *)c.data, *end = p + c.len;
    struct tag *first = NULL;

    pthread_mutex_lock(&E.mu);
    if (c.len == 0 || p[c.len - 1] != '\n')
        E.mixed++;
    while (p < end) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        const char *sp = memchr(p, ' ', (size_t)((nl ? nl : end) - p));
        struct tag *t;
        uint64_t n;

        if (!nl || !sp) {
            E.mixed++;
            break;
        }
        t = tag_of(p, (size_t)(sp - p));
        if (t) {
            n = strtoull(sp + 1, NULL, 10);
            if (n != t->next) {
                t->bad++;
                if (getenv("FS_DEBUG"))
                    fprintf(stderr, "writer %s: line %llu after %llu\n",
                            t->name, (unsigned long long)n,
                            (unsigned long long)t->next);
            }
            t->next = n + 1;
            snprintf(t->last, sizeof(t->last), "%.*s", (int)(nl - p), p);
            if (!first)
                first = t;
            else if (first != t)
                E.mixed++;
        }
        p = nl + 1;
    }
    E.chunks++;
    E.bytes += c.len;
    pthread_mutex_unlock(&E.mu);
    weir_chunk_unref(&c, weir_loop_slot(weir_loop_current()));
}

static void read_more(void);

static void read_cb(void *ctx, int rc, struct weir_chunk c)
{
    (void)ctx;
    E.reading = false;
    if (rc == 0) {
        take_chunk(c);
        weir_file_set_ack(E.ep, E.bytes);
        read_more();
        return;
    }
    pthread_mutex_lock(&E.mu);
    E.ended = true;
    E.err = rc == WEIR_DONE ? 0 : rc;
    pthread_mutex_unlock(&E.mu);
}

static void read_more(void)
{
    for (;;) {
        struct weir_chunk c;
        bool paused;
        int rc;

        pthread_mutex_lock(&E.mu);
        paused = E.paused;
        pthread_mutex_unlock(&E.mu);
        if (paused || E.reading || E.destroyed || !E.rd.stream)
            return;
        rc = weir_reader_read(&E.rd, &c, read_cb, NULL);
        if (rc == WEIR_PENDING) {
            E.reading = true;
            return;
        }
        if (rc != 0) {
            read_cb(NULL, rc, c);
            return;
        }
        take_chunk(c);
        weir_file_set_ack(E.ep, E.bytes);
    }
}

static void task_start(struct weir_task *t)
{
    int rc;

    (void)t;
    rc = weir_endpoint_file_set(&E.ep, weir_loop_current(), weir_worker_pool(),
                                &E.o);
    if (rc == 0)
        rc = weir_reader_acquire(&E.rd, weir_endpoint_readable(E.ep));
    pthread_mutex_lock(&E.mu);
    E.err = rc;
    E.queried = true;
    pthread_mutex_unlock(&E.mu);
    if (rc == 0)
        read_more();
}

static void task_resume(struct weir_task *t)
{
    (void)t;
    read_more();
}

static int count_file(void *arg, const struct weir_file_set_file *f)
{
    (void)arg;
    E.known++;
    E.known_open += f->open;
    if (f->size > E.max_size)
        E.max_size = f->size;
    if (strlen(f->path) >= 8 &&
        strcmp(f->path + strlen(f->path) - 8, "/app.log") == 0)
        E.app_size = f->size;
    return 0;
}

static void task_query(struct weir_task *t)
{
    struct weir_file_set_stats st;

    (void)t;
    weir_file_set_stats(E.ep, &st);
    pthread_mutex_lock(&E.mu);
    E.stats = st;
    E.known = E.known_open = 0;
    E.max_size = 0;
    weir_file_set_foreach(E.ep, count_file, NULL);
    E.queried = true;
    pthread_mutex_unlock(&E.mu);
}

/* Holds the worker's loop until the test lets go: nothing it watches is
 * read meanwhile. */
static void task_block(struct weir_task *t)
{
    (void)t;
    pthread_mutex_lock(&E.mu);
    E.blocked = true;
    while (!E.unblock)
        pthread_cond_wait(&E.cond, &E.mu);
    E.blocked = false;
    pthread_mutex_unlock(&E.mu);
}

static void task_end(struct weir_task *t)
{
    (void)t;
    weir_endpoint_stop(E.ep);
}

static void task_stop(struct weir_task *t)
{
    (void)t;
    weir_reader_release(&E.rd);
    weir_endpoint_destroy(E.ep);
    pthread_mutex_lock(&E.mu);
    E.destroyed = true;
    pthread_mutex_unlock(&E.mu);
}

/* ---- the test side ---- */

static void sleep_ms(unsigned ms)
{
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};

    nanosleep(&ts, NULL);
}

static void dump_tags(void)
{
    pthread_mutex_lock(&E.mu);
    for (size_t i = 0; i < E.ntags && i < 50; i++)
        fprintf(stderr, "writer %s: %llu lines, %llu out of order, last %s\n",
                E.tags[i].name, (unsigned long long)E.tags[i].next,
                (unsigned long long)E.tags[i].bad, E.tags[i].last);
    pthread_mutex_unlock(&E.mu);
}

/* Waits (up to 30 s) until cond holds, under the lock. */
#define WAIT_FOR(cond)                                                         \
    do {                                                                       \
        int waited_;                                                           \
        bool ok_ = false;                                                      \
        for (waited_ = 0; waited_ < 3000; waited_++) {                         \
            pthread_mutex_lock(&E.mu);                                         \
            ok_ = (cond);                                                      \
            pthread_mutex_unlock(&E.mu);                                       \
            if (ok_)                                                           \
                break;                                                         \
            sleep_ms(10);                                                      \
        }                                                                      \
        if (!ok_) {                                                            \
            dump_tags();                                                       \
            fail_msg("timed out waiting for %s", #cond);                       \
        }                                                                      \
    } while (0)

static void env_init(const char *name)
{
    char cmd[800];

    memset(&E.o, 0, sizeof(E.o));
    pthread_mutex_lock(&E.mu);
    memset(E.tags, 0, sizeof(E.tags));
    memset(E.slot, 0, sizeof(E.slot));
    E.ntags = 0;
    E.bytes = E.chunks = E.mixed = 0;
    memset(E.events, 0, sizeof(E.events));
    E.lost = 0;
    E.paused = E.reading = E.ended = E.destroyed = false;
    E.err = 0;
    E.resume_suffix = NULL;
    pthread_mutex_unlock(&E.mu);
    snprintf(dir, sizeof(dir), "%s/%s", top, name);
    snprintf(cmd, sizeof(cmd), "mkdir -p %s", dir);
    assert_int_equal(system(cmd), 0);
    E.o.on_event = on_event;
    E.o.resume = on_resume;
    E.o.rotate_wait_ns = 300 * MS;
    E.o.line_timeout_ns = 200 * MS;
    E.o.rescan_ns = 500 * MS;
    E.o.include = E.inc;
    E.o.exclude = E.exc;
}

static void include(const char *pattern)
{
    size_t i = E.o.ninclude++;

    snprintf(E.incbuf[i], sizeof(E.incbuf[i]), "%s/%s", dir, pattern);
    E.inc[i] = E.incbuf[i];
}

static void exclude(const char *pattern)
{
    size_t i = E.o.nexclude++;

    snprintf(E.excbuf[i], sizeof(E.excbuf[i]), "%s/%s", dir, pattern);
    E.exc[i] = E.excbuf[i];
}

static void start(void)
{
    struct weir_workers_options wo = {.count = 1, .pool_buffers = 256};

    assert_int_equal(weir_workers_start(&E.w, &wo), 0);
    weir_task_init(&E.t_start, task_start);
    weir_task_init(&E.t_stop, task_stop);
    weir_task_init(&E.t_resume, task_resume);
    weir_task_init(&E.t_query, task_query);
    weir_task_init(&E.t_block, task_block);
    weir_task_init(&E.t_end, task_end);
    pthread_mutex_lock(&E.mu);
    E.queried = false;
    pthread_mutex_unlock(&E.mu);
    weir_workers_post(E.w, 0, &E.t_start);
    WAIT_FOR(E.queried);
    assert_int_equal(E.err, 0);
}

static void stop(void)
{
    weir_workers_post(E.w, 0, &E.t_stop);
    WAIT_FOR(E.destroyed);
    assert_int_equal(weir_workers_stop(E.w), 0);
}

static void query(void)
{
    pthread_mutex_lock(&E.mu);
    E.queried = false;
    pthread_mutex_unlock(&E.mu);
    weir_workers_post(E.w, 0, &E.t_query);
    WAIT_FOR(E.queried);
}

static void pause_reader(bool on)
{
    pthread_mutex_lock(&E.mu);
    E.paused = on;
    pthread_mutex_unlock(&E.mu);
    if (!on)
        weir_workers_post(E.w, 0, &E.t_resume);
}

static void path_of(char *out, size_t cap, const char *name)
{
    snprintf(out, cap, "%s/%s", dir, name);
}

static int open_log(const char *name)
{
    char p[800];
    int fd;

    path_of(p, sizeof(p), name);
    fd = open(p, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    assert_true(fd >= 0);
    return fd;
}

/* Lines [from, to) of writer `tag` to fd, `pad` bytes of text each. */
static void write_lines(int fd, const char *tag, uint64_t from, uint64_t to,
                        size_t pad)
{
    char line[4096];

    for (uint64_t i = from; i < to; i++) {
        int n = snprintf(line, sizeof(line), "%s %llu ", tag,
                         (unsigned long long)i);

        memset(line + n, 'a' + (char)(i % 26), pad);
        line[n + pad] = '\n';
        assert_int_equal(write(fd, line, (size_t)n + pad + 1),
                         (ssize_t)((size_t)n + pad + 1));
    }
}

static void append_lines(const char *name, const char *tag, uint64_t from,
                         uint64_t to, size_t pad)
{
    int fd = open_log(name);

    write_lines(fd, tag, from, to, pad);
    close(fd);
}

/* How many of tag's lines arrived (in order: bad counts the others). */
static struct tag *find_tag(const char *tag)
{
    uint32_t h = tag_hash(tag, strlen(tag)) & (MAX_TAGS - 1);

    for (; E.slot[h]; h = (h + 1) & (MAX_TAGS - 1))
        if (strcmp(E.tags[E.slot[h] - 1].name, tag) == 0)
            return &E.tags[E.slot[h] - 1];
    return NULL;
}

static uint64_t got(const char *tag)
{
    struct tag *t = find_tag(tag);

    return t ? t->next : 0;
}

/* Every writer's lines arrived exactly once and in order, and every
 * chunk held whole lines of one writer. */
static void expect_clean(void)
{
    pthread_mutex_lock(&E.mu);
    for (size_t i = 0; i < E.ntags; i++)
        if (E.tags[i].bad)
            fail_msg("writer %s: %llu lines out of order (last: %s)",
                     E.tags[i].name, (unsigned long long)E.tags[i].bad,
                     E.tags[i].last);
    assert_int_equal(E.mixed, 0);
    pthread_mutex_unlock(&E.mu);
}

static void sh(const char *fmt, ...)
{
    char cmd[2048];
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(cmd, sizeof(cmd), fmt, ap);
    va_end(ap);
    assert_int_equal(system(cmd), 0);
}

/* ---- the tests ---- */

static void test_glob_and_late_file(void **state)
{
    (void)state;
    env_init("glob");
    include("*.log");
    append_lines("a.log", "a", 0, 100, 20);
    append_lines("b.log", "b", 0, 50, 20);
    append_lines("c.txt", "c", 0, 10, 20);
    start();
    WAIT_FOR(got("a") == 100 && got("b") == 50);
    /* A file that appears later, and growth of a known one. */
    append_lines("d.log", "d", 0, 30, 20);
    append_lines("a.log", "a", 100, 200, 20);
    WAIT_FOR(got("d") == 30 && got("a") == 200);
    pthread_mutex_lock(&E.mu);
    assert_int_equal(got("c"), 0);
    assert_int_equal(E.events[WEIR_FS_FOUND], 3);
    pthread_mutex_unlock(&E.mu);
    query();
    assert_int_equal(E.stats.watched, 3);
    assert_int_equal(E.stats.unread, 0);
    /* The reader acknowledged everything it read. */
    assert_int_equal(E.stats.behind, 0);
    assert_int_equal(E.stats.records.records, 280);
    stop();
    expect_clean();
}

static void test_globstar_and_exclude(void **state)
{
    (void)state;
    env_init("star");
    include("**/*.log");
    exclude("**/skip*.log");
    sh("mkdir -p %s/x/y", dir);
    append_lines("top.log", "top", 0, 10, 10);
    append_lines("x/y/deep.log", "deep", 0, 10, 10);
    append_lines("x/skip1.log", "skip", 0, 10, 10);
    append_lines("x/y/z.log.gz", "gz", 0, 10, 10);
    start();
    WAIT_FOR(got("top") == 10 && got("deep") == 10);
    /* A new subtree is watched as it appears. */
    sh("mkdir -p %s/n/m", dir);
    sleep_ms(50);
    append_lines("n/m/new.log", "new", 0, 10, 10);
    WAIT_FOR(got("new") == 10);
    pthread_mutex_lock(&E.mu);
    assert_int_equal(got("skip"), 0);
    assert_int_equal(got("gz"), 0);
    pthread_mutex_unlock(&E.mu);
    stop();
    expect_clean();
}

/* A pattern whose directory does not exist yet: its creation is seen. */
static void test_root_made_later(void **state)
{
    (void)state;
    env_init("later");
    include("not/yet/*.log");
    start();
    sh("mkdir -p %s/not/yet", dir);
    append_lines("not/yet/a.log", "a", 0, 10, 10);
    WAIT_FOR(got("a") == 10);
    stop();
    expect_clean();
}

/* Rename rotation with a writer that goes on appending to the renamed
 * file for a while, as a daemon that reopens late does. */
static void test_rename_late_writer(void **state)
{
    char a[800], b[800];
    int fd, fd2;

    (void)state;
    env_init("rename");
    include("app.log");
    fd = open_log("app.log");
    write_lines(fd, "old", 0, 1000, 40);
    start();
    WAIT_FOR(got("old") == 1000);
    path_of(a, sizeof(a), "app.log");
    path_of(b, sizeof(b), "app.log.1");
    assert_int_equal(rename(a, b), 0);
    fd2 = open_log("app.log");
    write_lines(fd2, "new", 0, 100, 40);
    /* The old writer has not reopened yet. */
    for (int i = 0; i < 5; i++) {
        write_lines(fd, "old", 1000 + (uint64_t)i * 100,
                    1100 + (uint64_t)i * 100, 40);
        sleep_ms(100); /* quieter than rotate_wait, each time */
    }
    close(fd);
    write_lines(fd2, "new", 100, 200, 40);
    close(fd2);
    WAIT_FOR(got("old") == 1500 && got("new") == 200);
    WAIT_FOR(E.events[WEIR_FS_DONE] == 1);
    pthread_mutex_lock(&E.mu);
    assert_int_equal(E.events[WEIR_FS_ROTATED], 1);
    assert_int_equal(E.lost, 0);
    pthread_mutex_unlock(&E.mu);
    /* Done and acknowledged: forgotten. */
    for (int i = 0; i < 3000; i++) {
        query();
        if (E.known == 1)
            break;
        sleep_ms(10);
    }
    assert_int_equal(E.known, 1);
    stop();
    expect_clean();
}

/* copytruncate by hand, while weir is behind (its reader paused): what it
 * had not read is read from the copy, then the file from its start. */
static void test_copytruncate_by_hand(void **state)
{
    int fd;

    (void)state;
    env_init("copytrunc");
    include("*.log");
    fd = open_log("app.log");
    write_lines(fd, "w", 0, 100, 50);
    start();
    WAIT_FOR(got("w") == 100);
    pause_reader(true);
    /* Much more than the stream holds: weir stops reading behind. */
    write_lines(fd, "w", 100, 30000, 50);
    sleep_ms(50);
    sh("cp %s/app.log %s/app.log.1", dir, dir);
    sh("truncate -s 0 %s/app.log", dir);
    write_lines(fd, "w", 30000, 31000, 50);
    pause_reader(false);
    WAIT_FOR(got("w") == 31000);
    pthread_mutex_lock(&E.mu);
    assert_int_equal(E.events[WEIR_FS_TRUNCATED], 1);
    assert_int_equal(E.events[WEIR_FS_COPY_READ], 1);
    assert_int_equal(E.lost, 0);
    pthread_mutex_unlock(&E.mu);
    close(fd);
    stop();
    expect_clean();
}

/* The patterns name the copies too, and a copy gets its name only after
 * weir saw the truncation and took the copy up (logrotate's copytruncate
 * with a slow reader, or a copy made under another name and renamed):
 * the copy is known as the truncated file's, and read once. */
static void test_copy_named_after_cut(void **state)
{
    int fd;

    (void)state;
    env_init("copylate");
    include("app.log*");
    fd = open_log("app.log");
    write_lines(fd, "w", 0, 100, 50);
    start();
    WAIT_FOR(got("w") == 100);
    pause_reader(true);
    write_lines(fd, "w", 100, 30000, 50);
    sh("cp %s/app.log %s/copy-of-app", dir, dir);
    sh("truncate -s 0 %s/app.log", dir);
    write_lines(fd, "w", 30000, 30010, 50);
    WAIT_FOR(E.events[WEIR_FS_TRUNCATED] == 1);
    sh("mv %s/copy-of-app %s/app.log.1", dir, dir);
    write_lines(fd, "w", 30010, 30020, 50);
    pause_reader(false);
    WAIT_FOR(got("w") == 30020);
    close(fd);
    stop();
    pthread_mutex_lock(&E.mu);
    assert_int_equal(E.events[WEIR_FS_COPY_READ], 1);
    assert_int_equal(E.lost, 0);
    pthread_mutex_unlock(&E.mu);
    expect_clean();
}

/* A file weir found but had not read yet (it was behind), cut by
 * copytruncate and written past its old size before weir looked again:
 * its head tells, and its copy is read from the start first. */
static void test_cut_before_first_read(void **state)
{
    struct stat st;
    char p[800];
    int fd;

    (void)state;
    env_init("cutunread");
    include("*.log");
    append_lines("fill.log", "f", 0, 100, 50);
    start();
    WAIT_FOR(got("f") == 100);
    pause_reader(true);
    append_lines("fill.log", "f", 100, 30000, 50);
    fd = open_log("app.log");
    write_lines(fd, "a", 0, 100, 50);
    path_of(p, sizeof(p), "app.log");
    assert_int_equal(stat(p, &st), 0);
    for (;;) { /* weir has seen app.log whole */
        bool seen;

        query();
        pthread_mutex_lock(&E.mu);
        seen = E.app_size == (uint64_t)st.st_size;
        pthread_mutex_unlock(&E.mu);
        if (seen)
            break;
        sleep_ms(5);
    }
    sh("cp %s/app.log %s/app.log.1", dir, dir);
    sh("truncate -s 0 %s/app.log", dir);
    write_lines(fd, "a", 100, 300, 50);
    pause_reader(false);
    WAIT_FOR(got("f") == 30000 && got("a") == 300);
    close(fd);
    stop();
    pthread_mutex_lock(&E.mu);
    assert_int_equal(E.events[WEIR_FS_COPY_READ], 1);
    assert_int_equal(E.lost, 0);
    pthread_mutex_unlock(&E.mu);
    expect_clean();
}

/* A file found while weir is behind, renamed twice before its first read
 * (a logrotate run that found a new file and one more at once): weir
 * holds it open from when it found it, and reads it to its end. */
static void test_renamed_twice_before_read(void **state)
{
    (void)state;
    env_init("renamed2");
    include("*.log");
    append_lines("fill.log", "f", 0, 100, 50);
    start();
    WAIT_FOR(got("f") == 100);
    pause_reader(true);
    /* Much more than the stream holds: weir stops reading behind. */
    append_lines("fill.log", "f", 100, 30000, 50);
    append_lines("new.log", "n", 0, 10, 50);
    WAIT_FOR(E.events[WEIR_FS_FOUND] == 2);
    sh("mv %s/new.log %s/new.log.1", dir, dir);
    sh("mv %s/new.log.1 %s/new.log.2", dir, dir);
    pause_reader(false);
    WAIT_FOR(got("f") == 30000 && got("n") == 10);
    pthread_mutex_lock(&E.mu);
    assert_int_equal(E.lost, 0);
    pthread_mutex_unlock(&E.mu);
    stop();
    expect_clean();
}

/* Waits until weir has seen `truncated` cuts and the size the file at
 * path has now (asked with query, every 5 ms, for at most 30 s). */
static void wait_seen(const char *path, unsigned truncated)
{
    struct stat st;

    assert_int_equal(stat(path, &st), 0);
    for (int tries = 0;; tries++) {
        bool seen;

        query();
        pthread_mutex_lock(&E.mu);
        seen = E.events[WEIR_FS_TRUNCATED] == truncated &&
               E.max_size == (uint64_t)st.st_size;
        pthread_mutex_unlock(&E.mu);
        if (seen)
            return;
        if (tries == 6000)
            fail_msg("weir never saw %s at %lld bytes after %u cuts", path,
                     (long long)st.st_size, truncated);
        sleep_ms(5);
    }
}

/* Cut twice while weir is behind on the first copy (rotations faster than
 * it reads): the second copy holds what the file got between the cuts,
 * and is read after the first, before the file itself. */
static void test_copytruncate_twice_behind(void **state)
{
    char p[800];
    int fd;

    (void)state;
    env_init("copytwice");
    include("*.log");
    path_of(p, sizeof(p), "app.log");
    fd = open_log("app.log");
    write_lines(fd, "w", 0, 100, 50);
    start();
    WAIT_FOR(got("w") == 100);
    pause_reader(true);
    write_lines(fd, "w", 100, 30000, 50);
    sh("cp %s/app.log %s/app.log.1", dir, dir);
    sh("truncate -s 0 %s/app.log", dir);
    write_lines(fd, "w", 30000, 31000, 50);
    /* weir has seen the cut, and what the file holds since. */
    wait_seen(p, 1);
    sh("cp %s/app.log %s/app.log.2", dir, dir);
    sh("truncate -s 0 %s/app.log", dir);
    write_lines(fd, "w", 31000, 31100, 50);
    pause_reader(false);
    WAIT_FOR(got("w") == 31100);
    pthread_mutex_lock(&E.mu);
    assert_int_equal(E.events[WEIR_FS_TRUNCATED], 2);
    assert_int_equal(E.events[WEIR_FS_COPY_READ], 2);
    assert_int_equal(E.lost, 0);
    pthread_mutex_unlock(&E.mu);
    close(fd);
    stop();
    expect_clean();
}

/* Cut five times while weir is behind on the first copy (its collector
 * down across several rotations): the copies are read in the order they
 * were made, each from its start, then the file; nothing is lost. */
static void test_copytruncate_many_behind(void **state)
{
    char p[800];
    uint64_t n = 100;
    int fd;

    (void)state;
    env_init("copymany");
    include("*.log");
    path_of(p, sizeof(p), "app.log");
    fd = open_log("app.log");
    write_lines(fd, "w", 0, n, 50);
    start();
    WAIT_FOR(got("w") == n);
    pause_reader(true);
    for (int cut = 1; cut <= 5; cut++) {
        write_lines(fd, "w", n, n + 5000, 50);
        n += 5000;
        /* weir has seen what the file holds before it is cut. */
        wait_seen(p, (unsigned)cut - 1);
        sh("cp %s/app.log %s/app.log.%d", dir, dir, cut);
        sh("truncate -s 0 %s/app.log", dir);
        WAIT_FOR(E.events[WEIR_FS_TRUNCATED] == (unsigned)cut);
    }
    write_lines(fd, "w", n, n + 100, 50);
    n += 100;
    pause_reader(false);
    WAIT_FOR(got("w") == n);
    pthread_mutex_lock(&E.mu);
    assert_int_equal(E.events[WEIR_FS_COPY_READ], 5);
    assert_int_equal(E.lost, 0);
    pthread_mutex_unlock(&E.mu);
    close(fd);
    stop();
    expect_clean();
}

/* Lines written between the copy and the truncation are in neither file:
 * weir has them only if it read them in time. Behind (paused), it says
 * how many bytes it lost; caught up, it loses none. */
static void test_copytruncate_window(void **state)
{
    int fd;

    (void)state;
    env_init("window");
    include("*.log");
    fd = open_log("app.log");
    write_lines(fd, "w", 0, 100, 50);
    start();
    WAIT_FOR(got("w") == 100);
    /* Caught up: the window's lines are read before the truncation. */
    sh("cp %s/app.log %s/app.log.1", dir, dir);
    write_lines(fd, "w", 100, 200, 50);
    WAIT_FOR(got("w") == 200);
    sh("truncate -s 0 %s/app.log", dir);
    write_lines(fd, "w", 200, 300, 50);
    WAIT_FOR(got("w") == 300);
    pthread_mutex_lock(&E.mu);
    assert_int_equal(E.lost, 0);
    pthread_mutex_unlock(&E.mu);

    /* Behind: the copy gives what weir had not read up to the copy; the
     * window's lines are lost, and exactly their bytes are reported. */
    pause_reader(true);
    write_lines(fd, "w", 300, 20000, 50);
    sh("cp %s/app.log %s/app.log.2", dir, dir);
    {
        struct stat a, b;
        char p[800];

        path_of(p, sizeof(p), "app.log");
        assert_int_equal(stat(p, &a), 0);
        write_lines(fd, "x", 0, 100, 50); /* the window */
        assert_int_equal(stat(p, &b), 0);
        /* weir has seen the window's size before the cut. */
        for (;;) {
            query();
            if (E.max_size >= (uint64_t)b.st_size)
                break;
            sleep_ms(5);
        }
        sh("truncate -s 0 %s/app.log", dir);
        write_lines(fd, "w", 20000, 20100, 50);
        pause_reader(false);
        WAIT_FOR(got("w") == 20100);
        pthread_mutex_lock(&E.mu);
        assert_int_equal(E.lost, (uint64_t)(b.st_size - a.st_size));
        assert_int_equal(got("x"), 0);
        pthread_mutex_unlock(&E.mu);
    }
    stop();
    expect_clean();
    close(fd);
}

/* Deleted while weir is behind: the rest is read through the descriptor
 * it holds, then the file is let go. */
static void test_delete_unread_tail(void **state)
{
    char p[800];
    int fd;

    (void)state;
    env_init("delete");
    include("*.log");
    fd = open_log("gone.log");
    write_lines(fd, "g", 0, 10, 50);
    start();
    WAIT_FOR(got("g") == 10);
    pause_reader(true);
    write_lines(fd, "g", 10, 20000, 50);
    close(fd);
    sleep_ms(50);
    path_of(p, sizeof(p), "gone.log");
    assert_int_equal(unlink(p), 0);
    pause_reader(false);
    WAIT_FOR(got("g") == 20000);
    WAIT_FOR(E.events[WEIR_FS_DONE] == 1);
    query();
    WAIT_FOR(E.stats.open == 0);
    stop();
    expect_clean();
}

static void test_long_line_and_line_timeout(void **state)
{
    char big[1000];
    int fd;

    (void)state;
    env_init("long");
    include("*.log");
    E.o.records.max_record = 100;
    fd = open_log("l.log");
    write_lines(fd, "l", 0, 5, 10);
    memset(big, 'x', sizeof(big));
    memcpy(big, "l 5 ", 4);
    big[sizeof(big) - 1] = '\n';
    assert_int_equal(write(fd, big, sizeof(big)), (ssize_t)sizeof(big));
    write_lines(fd, "l", 6, 10, 10);
    /* The last line, without its newline: held, then flushed. */
    assert_int_equal(write(fd, "l 10 partial", 12), 12);
    start();
    WAIT_FOR(got("l") == 11);
    query();
    assert_int_equal(E.stats.records.truncated, 1);
    assert_int_equal(E.stats.records.records, 11);
    pthread_mutex_lock(&E.mu);
    assert_string_equal(find_tag("l")->last, "l 10 partial");
    pthread_mutex_unlock(&E.mu);
    stop();
    expect_clean();
    close(fd);
}

static void test_resume_offset(void **state)
{
    (void)state;
    env_init("resume");
    include("*.log");
    /* "r N " plus 10 bytes and '\n': lines 0-9 are 15 bytes each. */
    append_lines("r.log", "r", 0, 10, 10);
    append_lines("r.log", "r", 10, 20, 9);
    append_lines("s.log", "s", 0, 5, 10);
    E.resume_suffix = "/r.log";
    E.resume_off = 10 * 15;
    start();
    WAIT_FOR(got("s") == 5 && got("r") == 20);
    pthread_mutex_lock(&E.mu);
    /* r's lines 0-9 were never sent: the first one seen was 10. */
    assert_int_equal(find_tag("r")->bad, 1);
    find_tag("r")->bad = 0;
    assert_int_equal(E.bytes, 5 * 15 + 10 * 15);
    pthread_mutex_unlock(&E.mu);
    stop();
    expect_clean();
}

static void test_once(void **state)
{
    (void)state;
    env_init("once");
    include("*.log");
    E.o.once = true;
    append_lines("1.log", "one", 0, 1000, 30);
    append_lines("2.log", "two", 0, 10, 30);
    sh("printf 'three 0 end' > %s/3.log", dir);
    start();
    WAIT_FOR(E.ended);
    pthread_mutex_lock(&E.mu);
    assert_int_equal(E.err, 0);
    assert_int_equal(got("one"), 1000);
    assert_int_equal(got("two"), 10);
    assert_int_equal(got("three"), 1);
    pthread_mutex_unlock(&E.mu);
    stop();
    expect_clean();
}

static int count_fds(void)
{
    DIR *d = opendir("/proc/self/fd");
    int n = 0;

    assert_non_null(d);
    while (readdir(d))
        n++;
    closedir(d);
    return n;
}

static void test_max_open_files(void **state)
{
    int base, peak = 0;

    (void)state;
    env_init("maxopen");
    include("*.log");
    E.o.max_open_files = 16;
    for (int i = 0; i < 200; i++) {
        char name[32], tag[32];

        snprintf(name, sizeof(name), "f%03d.log", i);
        snprintf(tag, sizeof(tag), "f%03d", i);
        append_lines(name, tag, 0, 200, 40);
    }
    base = count_fds();
    start();
    for (;;) {
        bool all = true;
        int n = count_fds();

        if (n > peak)
            peak = n;
        pthread_mutex_lock(&E.mu);
        all = E.ntags == 200;
        for (size_t i = 0; all && i < E.ntags; i++)
            all = E.tags[i].next == 200;
        pthread_mutex_unlock(&E.mu);
        if (all)
            break;
        sleep_ms(2);
    }
    /* The worker's loop and the inotify instance come on top of the
     * files' descriptors; a worker thread has a handful of its own. */
    if (peak > base + 16 + 12)
        fail_msg("%d descriptors open at the peak, %d before", peak, base);
    query();
    assert_true(E.stats.open <= 16);
    assert_int_equal(E.stats.watched, 200);
    stop();
    expect_clean();
}

/* A busy file and a quiet one: the quiet one's line does not wait for the
 * busy one to be read to its end. */
static void test_fairness(void **state)
{
    (void)state;
    env_init("fair");
    include("*.log");
    append_lines("busy.log", "busy", 0, 1, 100);
    start();
    WAIT_FOR(got("busy") == 1);
    pause_reader(true);
    append_lines("busy.log", "busy", 1, 100000, 100); /* ~10 MB */
    sleep_ms(100);
    append_lines("quiet.log", "quiet", 0, 1, 10);
    pause_reader(false);
    WAIT_FOR(got("quiet") == 1);
    pthread_mutex_lock(&E.mu);
    /* What the stream held when the reader came back (256 KiB), the read
     * in flight and the one being framed came first; busy's other 9 MB
     * did not. */
    if (find_tag("quiet")->first_bytes > 512 * 1024)
        fail_msg("quiet's line came after %llu bytes",
                 (unsigned long long)find_tag("quiet")->first_bytes);
    pthread_mutex_unlock(&E.mu);
    WAIT_FOR(got("busy") == 100000);
    stop();
    expect_clean();
}

/* logrotate itself, several ways, with a writer that reopens after each
 * rotation (create) or does not need to (copytruncate).
 *
 * The guarantee: with create, nothing is lost (the renamed file is read to
 * its end through the descriptor weir holds, compressed or not); with
 * copytruncate, nothing is lost that was written before the copy (read
 * from the copy when weir was behind) or that weir read before the
 * truncation; lines written between the copy and the truncation that
 * weir had not read yet are in neither file, and are counted as lost. This
 * writer writes nothing during logrotate's run, so nothing may be lost. */
static void run_logrotate(const char *name, const char *how, bool reopen,
                          bool behind, unsigned gap_ms, const char *pattern)
{
    char conf[800], st[800], log[800];
    FILE *c;
    int fd;
    uint64_t n = 0;

    env_init(name);
    include(pattern);
    path_of(conf, sizeof(conf), "lr.conf");
    path_of(st, sizeof(st), "lr.state");
    path_of(log, sizeof(log), "app.log");
    c = fopen(conf, "w");
    assert_non_null(c);
    fprintf(c, "%s {\n  rotate 5\n  missingok\n  %s\n}\n", log, how);
    fclose(c);
    fd = open_log("app.log");
    write_lines(fd, "g0", 0, 500, 60);
    n = 500;
    start();
    for (int round = 0; round < 3; round++) {
        char tag[8];

        snprintf(tag, sizeof(tag), "g%d", reopen ? round : 0);
        if (round == 1 && behind)
            pause_reader(true); /* once behind */
        if (!behind) {
            uint64_t want = n;

            WAIT_FOR(got(tag) == want);
        }
        if (round > 0)
            sleep_ms(gap_ms);
        write_lines(fd, tag, n, n + 3000, 60);
        n += 3000;
        sh("/usr/sbin/logrotate -f -s %s %s", st, conf);
        if (reopen) {
            /* A late writer: a few lines into the renamed file first. */
            write_lines(fd, tag, n, n + 100, 60);
            close(fd);
            fd = open_log("app.log");
            snprintf(tag, sizeof(tag), "g%d", round + 1);
            n = 0;
            write_lines(fd, tag, n, n + 10, 60);
            n += 10;
        } else {
            write_lines(fd, tag, n, n + 10, 60);
            n += 10;
        }
        pause_reader(false);
    }
    close(fd);
    if (reopen) {
        WAIT_FOR(got("g0") == 3600 && got("g1") == 3110 && got("g2") == 3110 &&
                 got("g3") == 10);
    } else {
        WAIT_FOR(got("g0") == 500 + 3 * 3010);
    }
    pthread_mutex_lock(&E.mu);
    assert_int_equal(E.lost, 0);
    pthread_mutex_unlock(&E.mu);
    stop();
    expect_clean();
}

static bool have_logrotate(void)
{
    return access("/usr/sbin/logrotate", X_OK) == 0;
}

static void test_logrotate_create(void **state)
{
    (void)state;
    if (!have_logrotate())
        skip();
    run_logrotate("lr-create", "create", true, true, 0, "app.log");
}

static void test_logrotate_create_compress_dateext(void **state)
{
    (void)state;
    if (!have_logrotate())
        skip();
    /* dateext names every rotation of a day alike: the hour and second
     * keep them apart. */
    run_logrotate("lr-datecompress",
                  "create\n  compress\n  delaycompress\n  dateext\n"
                  "  dateformat -%Y%m%d-%H%M%S",
                  true, true, 1100, "app.log");
}

static void test_logrotate_copytruncate(void **state)
{
    (void)state;
    if (!have_logrotate())
        skip();
    run_logrotate("lr-copytrunc", "copytruncate", false, true, 0, "app.log");
}

static void test_logrotate_copytruncate_compress(void **state)
{
    (void)state;
    if (!have_logrotate())
        skip();
    /* Without delaycompress the copy is compressed and deleted as soon as
     * it is made: weir reads from it only if it finds it first (and holds
     * it open from then on). What weir had not read when the copy went is
     * lost and counted as lost (WEIR_FS_LOST), never silently. Here weir
     * has caught up before each rotation, so nothing may be lost. */
    run_logrotate("lr-copycompress", "copytruncate\n  compress", false, false,
                  0, "app.log");
}

/* The patterns name the rotated copies too (app.log*): a copy is the
 * same file by its fingerprint, and is not read again. */
static void test_logrotate_copytruncate_named(void **state)
{
    (void)state;
    if (!have_logrotate())
        skip();
    run_logrotate("lr-named", "copytruncate", false, true, 0, "app.log*");
}

static void test_read_from_end_ignore_older(void **state)
{
    char p[800];
    struct timespec old[2] = {{1000000, 0}, {1000000, 0}};

    (void)state;
    env_init("fromend");
    include("*.log");
    E.o.read_from_end = true;
    append_lines("e.log", "e", 0, 10, 10);
    start();
    append_lines("e.log", "e", 10, 20, 10);
    /* A file that appears later is read from its start. */
    append_lines("late.log", "late", 0, 10, 10);
    WAIT_FOR(got("e") == 20 && got("late") == 10);
    pthread_mutex_lock(&E.mu);
    assert_int_equal(find_tag("e")->bad, 1); /* 10 came first */
    find_tag("e")->bad = 0;
    pthread_mutex_unlock(&E.mu);
    stop();
    expect_clean();

    env_init("older");
    include("*.log");
    E.o.ignore_older_ns = 3600ull * 1000 * MS;
    append_lines("old.log", "old", 0, 10, 10);
    path_of(p, sizeof(p), "old.log");
    assert_int_equal(utimensat(AT_FDCWD, p, old, 0), 0);
    append_lines("new.log", "new", 0, 10, 10);
    start();
    WAIT_FOR(got("new") == 10);
    /* What an old file gets from now on is read. */
    append_lines("old.log", "old", 10, 12, 10);
    WAIT_FOR(got("old") == 12);
    pthread_mutex_lock(&E.mu);
    assert_int_equal(find_tag("old")->bad, 1);
    find_tag("old")->bad = 0;
    pthread_mutex_unlock(&E.mu);
    stop();
    expect_clean();
}

/* Rotations as fast as the writer can make them (rename, then a new
 * file), each file renamed out of the pattern at once: every file is read,
 * also those weir sees only under their rotated names. */
static void test_fast_rotations(void **state)
{
    (void)state;
    env_init("fast");
    include("app.log");
    start();
    for (int r = 0; r < 50; r++) {
        char tag[16], to[32], a[800], b[800];
        int fd = open_log("app.log");

        snprintf(tag, sizeof(tag), "r%02d", r);
        write_lines(fd, tag, 0, 200, 40);
        close(fd);
        snprintf(to, sizeof(to), "app.log.%d", r);
        path_of(a, sizeof(a), "app.log");
        path_of(b, sizeof(b), to);
        assert_int_equal(rename(a, b), 0);
    }
    for (int r = 0; r < 50; r++) {
        char tag[16];

        snprintf(tag, sizeof(tag), "r%02d", r);
        WAIT_FOR(got(tag) == 200);
    }
    stop();
    expect_clean();
}

/* Quiet files are closed (idle_close) and opened again when they grow;
 * one renamed out of the patterns while closed is opened by its new
 * name, finished, and let go. */
static void test_idle_close_reopen(void **state)
{
    char a[800], b[800];

    (void)state;
    env_init("idle");
    include("*.log");
    E.o.idle_close_ns = 100 * MS;
    append_lines("i.log", "i", 0, 10, 10);
    append_lines("j.log", "j", 0, 10, 10);
    start();
    WAIT_FOR(got("i") == 10 && got("j") == 10);
    for (int n = 0; n < 3000; n++) {
        query();
        if (E.stats.open == 0)
            break;
        sleep_ms(10);
    }
    assert_int_equal(E.stats.open, 0);
    append_lines("i.log", "i", 10, 20, 10);
    WAIT_FOR(got("i") == 20);
    for (int n = 0; n < 3000; n++) {
        query();
        if (E.stats.open == 0)
            break;
        sleep_ms(10);
    }
    assert_int_equal(E.stats.open, 0);
    path_of(a, sizeof(a), "j.log");
    path_of(b, sizeof(b), "j.old");
    assert_int_equal(rename(a, b), 0);
    sleep_ms(50);
    append_lines("j.old", "j", 10, 20, 10);
    WAIT_FOR(got("j") == 20);
    WAIT_FOR(E.events[WEIR_FS_DONE] == 1);
    pthread_mutex_lock(&E.mu);
    assert_int_equal(E.events[WEIR_FS_ROTATED], 1);
    assert_int_equal(E.lost, 0);
    pthread_mutex_unlock(&E.mu);
    stop();
    expect_clean();
}

/* More events than inotify queues while the loop is held: it overflows,
 * weir says so once and rescans instead, and finds every file. */
static void test_inotify_overflow(void **state)
{
    FILE *q = fopen("/proc/sys/fs/inotify/max_queued_events", "r");
    unsigned max = 0, n;

    (void)state;
    if (!q || fscanf(q, "%u", &max) != 1 || max > 100000) {
        if (q)
            fclose(q);
        skip();
    }
    fclose(q);
    n = max + 1000;
    env_init("overflow");
    include("*.log");
    E.o.max_open_files = 32;
    start();
    pthread_mutex_lock(&E.mu);
    E.unblock = false;
    pthread_mutex_unlock(&E.mu);
    weir_workers_post(E.w, 0, &E.t_block);
    WAIT_FOR(E.blocked);
    for (unsigned i = 0; i < n; i++) {
        char name[32], tag[32];

        snprintf(name, sizeof(name), "o%05u.log", i);
        snprintf(tag, sizeof(tag), "o%05u", i);
        append_lines(name, tag, 0, 1, 4);
    }
    pthread_mutex_lock(&E.mu);
    E.unblock = true;
    pthread_cond_broadcast(&E.cond);
    pthread_mutex_unlock(&E.mu);
    WAIT_FOR(E.ntags == n);
    pthread_mutex_lock(&E.mu);
    assert_int_equal(E.events[WEIR_FS_NO_INOTIFY], 1);
    for (size_t i = 0; i < E.ntags; i++)
        assert_int_equal(E.tags[i].next, 1);
    pthread_mutex_unlock(&E.mu);
    query();
    assert_int_equal(E.stats.watched, n);
    assert_true(E.stats.open <= 32);
    stop();
    expect_clean();
}

/* weir_endpoint_stop ends the stream cleanly, after what was read. */
static void test_stop(void **state)
{
    (void)state;
    env_init("stop");
    include("*.log");
    append_lines("s.log", "s", 0, 1000, 20);
    start();
    WAIT_FOR(got("s") == 1000);
    weir_workers_post(E.w, 0, &E.t_end);
    WAIT_FOR(E.ended);
    assert_int_equal(E.err, 0);
    stop();
    expect_clean();
}

static void test_bad_options(void **state)
{
    struct weir_workers_options wo = {.count = 1, .pool_buffers = 8};

    (void)state;
    env_init("bad");
    E.inc[0] = "relative/*.log";
    E.o.ninclude = 1;
    assert_int_equal(weir_workers_start(&E.w, &wo), 0);
    weir_task_init(&E.t_start, task_start);
    pthread_mutex_lock(&E.mu);
    E.queried = false;
    pthread_mutex_unlock(&E.mu);
    weir_workers_post(E.w, 0, &E.t_start);
    WAIT_FOR(E.queried);
    assert_int_equal(E.err, -EINVAL);
    assert_int_equal(weir_workers_stop(E.w), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_glob_and_late_file),
        cmocka_unit_test(test_globstar_and_exclude),
        cmocka_unit_test(test_root_made_later),
        cmocka_unit_test(test_rename_late_writer),
        cmocka_unit_test(test_copytruncate_by_hand),
        cmocka_unit_test(test_copytruncate_twice_behind),
        cmocka_unit_test(test_copytruncate_many_behind),
        cmocka_unit_test(test_renamed_twice_before_read),
        cmocka_unit_test(test_copy_named_after_cut),
        cmocka_unit_test(test_cut_before_first_read),
        cmocka_unit_test(test_copytruncate_window),
        cmocka_unit_test(test_delete_unread_tail),
        cmocka_unit_test(test_long_line_and_line_timeout),
        cmocka_unit_test(test_resume_offset),
        cmocka_unit_test(test_once),
        cmocka_unit_test(test_max_open_files),
        cmocka_unit_test(test_fairness),
        cmocka_unit_test(test_logrotate_create),
        cmocka_unit_test(test_logrotate_create_compress_dateext),
        cmocka_unit_test(test_logrotate_copytruncate),
        cmocka_unit_test(test_logrotate_copytruncate_compress),
        cmocka_unit_test(test_logrotate_copytruncate_named),
        cmocka_unit_test(test_read_from_end_ignore_older),
        cmocka_unit_test(test_fast_rotations),
        cmocka_unit_test(test_idle_close_reopen),
        cmocka_unit_test(test_inotify_overflow),
        cmocka_unit_test(test_stop),
        cmocka_unit_test(test_bad_options),
    };
    char cmd[700];
    int rc;

    pthread_mutex_init(&E.mu, NULL);
    pthread_cond_init(&E.cond, NULL);
    if (getenv("FILE_SET_TEST")) /* one test, by name */
        cmocka_set_test_filter(getenv("FILE_SET_TEST"));
    if (!mkdtemp(top))
        return 1;
    rc = cmocka_run_group_tests(tests, NULL, NULL);
    snprintf(cmd, sizeof(cmd), "rm -rf %s", top);
    if (system(cmd) != 0)
        return 1;
    return rc;
}
