/*
 * glob_lines.c - see glob_lines.h.
 */
#include "glob_lines.h"

#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../integration/harness.h"

#include <setjmp.h>
#include <stdarg.h>

#include <cmocka.h>

#define GL_GENS                                                                \
    1024u /* incarnations of one writer's file the order                       \
           * check tells apart */

void gl_line(char out[GL_LINE], unsigned w, unsigned gen, uint64_t seq)
{
    char tmp[GL_LINE + 1];

    snprintf(tmp, sizeof(tmp), "w%05u g%04u %010llu\n", w % 100000u,
             gen % 10000u, (unsigned long long)(seq % 10000000000ull));
    memcpy(out, tmp, GL_LINE);
}

static bool num(const uint8_t *p, size_t n, uint64_t *v)
{
    *v = 0;
    for (size_t i = 0; i < n; i++) {
        if (p[i] < '0' || p[i] > '9')
            return false;
        *v = *v * 10 + (uint64_t)(p[i] - '0');
    }
    return true;
}

bool gl_parse(const uint8_t *p, unsigned *w, unsigned *gen, uint64_t *seq)
{
    uint64_t a, b;

    if (p[0] != 'w' || p[6] != ' ' || p[7] != 'g' || p[12] != ' ' ||
        p[GL_LINE - 1] != '\n' || !num(p + 1, 5, &a) || !num(p + 8, 4, &b) ||
        !num(p + 13, 10, seq))
        return false;
    *w = (unsigned)a;
    *gen = (unsigned)b;
    return true;
}

/* ---- writers ---- */

static int open_log(const char *path)
{
    return open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
}

/* The path names another file than fd now (and one exists). */
static bool moved(int fd, const char *path)
{
    struct stat a, b;

    return fstat(fd, &a) == 0 && stat(path, &b) == 0 &&
           (a.st_ino != b.st_ino || a.st_dev != b.st_dev);
}

static void *write_lines(void *arg)
{
    struct gl_writer *w = arg;
    int64_t t0 = h_now_ms();
    uint64_t n = 0;
    unsigned gen = 0;
    size_t cap = 4096;
    char *buf = malloc(cap * GL_LINE);
    int fd = open_log(w->path);

    if (!buf || fd < 0)
        abort();
    while (!atomic_load(&w->stop)) {
        /* As many lines as the rate owes by now: the pace holds whatever
         * a write or a sleep costs. */
        uint64_t due = (uint64_t)(h_now_ms() - t0) * w->rate / 1000, k = 0;

        if (w->reopen == GL_REOPEN_INODE && moved(fd, w->path)) {
            close(fd);
            fd = open_log(w->path);
            if (fd < 0)
                abort();
            atomic_store(&w->gen, ++gen);
        }
        for (; n + k < due && k < cap; k++)
            gl_line(buf + k * GL_LINE, w->id, gen, n + k);
        if (k && write(fd, buf, k * GL_LINE) != (ssize_t)(k * GL_LINE))
            abort();
        n += k;
        atomic_store(&w->n, n);
        usleep(2000);
    }
    close(fd);
    free(buf);
    return NULL;
}

void gl_writer_start(struct gl_writer *w, const char *path, unsigned id,
                     enum gl_reopen reopen, unsigned rate)
{
    memset(w, 0, sizeof(*w));
    snprintf(w->path, sizeof(w->path), "%s", path);
    w->id = id;
    w->reopen = reopen;
    w->rate = rate;
    assert_int_equal(pthread_create(&w->th, NULL, write_lines, w), 0);
}

uint64_t gl_writer_stop(struct gl_writer *w)
{
    atomic_store(&w->stop, true);
    pthread_join(w->th, NULL);
    return atomic_load(&w->n);
}

void gl_append(const char *path, unsigned w, uint64_t first, unsigned n)
{
    char *buf = malloc((size_t)n * GL_LINE);
    int fd = open_log(path);

    assert_non_null(buf);
    assert_true(fd >= 0);
    for (unsigned i = 0; i < n; i++)
        gl_line(buf + (size_t)i * GL_LINE, w, 0, first + i);
    assert_true(h_write_all(fd, buf, (size_t)n * GL_LINE));
    close(fd);
    free(buf);
}

void gl_rotate(const char *path, const char *to)
{
    int fd;

    assert_int_equal(rename(path, to), 0);
    fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    assert_true(fd >= 0);
    close(fd);
}

/* ---- weir and other programs ---- */

bool gl_soak(void)
{
    const char *s = getenv("WEIR_SOAK");

    return s && strcmp(s, "1") == 0;
}

void gl_start_weir(struct h_weir *w, const char *name, bool fresh,
                   const char *dir, const char *state, const char *ckpt,
                   uint16_t port, const char *extra)
{
    h_start_conf(w, name, fresh ? H_CONF_FRESH_LOG : 0,
                 "[daemon]\nworkers = 2\nstate_directory = %s\n"
                 "checkpoint_interval = %s\n\n"
                 "[pipeline logs]\nsource = file:%s/*.log\n"
                 "read_from = beginning\nrotate_wait = 2s\n%s"
                 "sink = tcp:127.0.0.1:%u\n",
                 state, ckpt, dir, extra, port);
}

int gl_run(char *const argv[], unsigned timeout_ms)
{
    int64_t end = h_now_ms() + timeout_ms;
    pid_t pid = fork();
    int st;

    assert_true(pid >= 0);
    if (pid == 0) {
        int null = open("/dev/null", O_RDWR);

        dup2(null, 0);
        dup2(null, 1);
        execv(argv[0], argv);
        _exit(127);
    }
    while (waitpid(pid, &st, WNOHANG) == 0) {
        if (h_now_ms() > end) {
            kill(pid, SIGKILL);
            waitpid(pid, &st, 0);
            return -1;
        }
        h_sleep_ms(5);
    }
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

/* ---- the account ---- */

void gl_account_init(struct gl_account *a, unsigned writers, uint64_t max_seq)
{
    memset(a, 0, sizeof(*a));
    a->writers = writers;
    a->max_seq = max_seq;
    a->on_disk = calloc((size_t)writers * max_seq, 1);
    a->file_of = calloc((size_t)writers * max_seq, sizeof(uint16_t));
    assert_non_null(a->file_of);
    a->got = calloc((size_t)writers * max_seq, sizeof(uint32_t));
    assert_non_null(a->on_disk);
    assert_non_null(a->got);
}

void gl_account_free(struct gl_account *a)
{
    free(a->on_disk);
    free(a->file_of);
    free(a->got);
}

static void note_disk(struct gl_account *a, const uint8_t *p, size_t len,
                      uint16_t file)
{
    for (size_t at = 0, n; at < len; at += n) {
        const uint8_t *nl = memchr(p + at, '\n', len - at);
        unsigned w, gen;
        uint64_t seq;

        n = nl ? (size_t)(nl - (p + at)) + 1 : len - at;
        if (n != GL_LINE) {
            /* A copy taken in the middle of a write (copytruncate). */
            a->torn++;
            continue;
        }
        if (!gl_parse(p + at, &w, &gen, &seq) || w >= a->writers ||
            seq >= a->max_seq)
            fail_msg("a file on disk holds a line that is not ours");
        if (!a->on_disk[w * a->max_seq + seq]) {
            a->on_disk[w * a->max_seq + seq] = 1;
            a->file_of[w * a->max_seq + seq] = file;
            a->disk++;
        }
    }
}

static uint8_t *gunzip(const char *path, size_t *len)
{
    char cmd[1200];
    size_t cap = 1 << 20;
    uint8_t *p = malloc(cap);
    FILE *f;

    snprintf(cmd, sizeof(cmd), "gzip -dc '%s'", path);
    f = popen(cmd, "r");
    assert_non_null(f);
    assert_non_null(p);
    *len = 0;
    for (;;) {
        size_t n;

        if (*len == cap) {
            cap *= 2;
            p = realloc(p, cap);
            assert_non_null(p);
        }
        n = fread(p + *len, 1, cap - *len, f);
        if (n == 0)
            break;
        *len += n;
    }
    assert_int_equal(pclose(f), 0);
    return p;
}

void gl_account_disk(struct gl_account *a, const char *dir, const char *prefix)
{
    DIR *d = opendir(dir);
    struct dirent *de;

    assert_non_null(d);
    while ((de = readdir(d))) {
        char path[1024];
        size_t len, nl = strlen(de->d_name);
        uint8_t *p;

        if (strncmp(de->d_name, prefix, strlen(prefix)) != 0)
            continue;
        snprintf(path, sizeof(path), "%s/%s", dir, de->d_name);
        if (nl > 3 && strcmp(de->d_name + nl - 3, ".gz") == 0)
            p = gunzip(path, &len);
        else
            p = fc_read_file(path, &len);
        assert_non_null(p);
        if (a->nnames < 256)
            snprintf(a->names[a->nnames++], sizeof(a->names[0]), "%s",
                     de->d_name);
        note_disk(a, p, len, (uint16_t)a->nnames);
        free(p);
    }
    closedir(d);
}

void gl_account_received(struct gl_account *a, struct fc_collector *c)
{
    uint64_t *last = malloc((size_t)a->writers * GL_GENS * sizeof(uint64_t));

    assert_non_null(last);
    /* UINT64_MAX: nothing of that file seen yet. */
    memset(last, 0xff, (size_t)a->writers * GL_GENS * sizeof(uint64_t));
    memset(a->got, 0, (size_t)a->writers * a->max_seq * sizeof(uint32_t));
    a->received = a->missing = a->twice = a->stray = a->bad = 0;
    a->disorder = 0;
    pthread_mutex_lock(&c->mu);
    for (unsigned k = 0; k < c->nconns; k++) {
        const struct fc_conn *cn = &c->conns[k];

        for (size_t at = 0, len; at < cn->len; at += len) {
            const uint8_t *nl = memchr(cn->p + at, '\n', cn->len - at);
            unsigned w, gen;
            uint64_t seq, *l;

            /* Split at newlines, so a line cut short (a connection
             * killed mid-line) is one bad line, not the rest. */
            len = nl ? (size_t)(nl - (cn->p + at)) + 1 : cn->len - at;
            if (len != GL_LINE || !gl_parse(cn->p + at, &w, &gen, &seq) ||
                w >= a->writers || seq >= a->max_seq || gen >= GL_GENS) {
                a->bad++;
                continue;
            }
            a->received++;
            if (a->got[w * a->max_seq + seq]++) {
                a->twice++;
                continue;
            }
            l = &last[w * GL_GENS + gen];
            if (*l != UINT64_MAX && seq < *l)
                a->disorder++;
            *l = seq;
        }
    }
    pthread_mutex_unlock(&c->mu);
    for (uint64_t i = 0; i < (uint64_t)a->writers * a->max_seq; i++) {
        if (a->on_disk[i] && !a->got[i])
            a->missing++;
        if (!a->on_disk[i] && a->got[i])
            a->stray++;
    }
    free(last);
}

void gl_wait_reading(struct fc_collector *c, struct h_weir *w, uint64_t had,
                     unsigned timeout_ms)
{
    int64_t end = h_now_ms() + timeout_ms;

    while (fc_total(c) <= had) {
        if (h_now_ms() > end) {
            h_show_log(w);
            fail_msg("weir read nothing after its start");
        }
        h_sleep_ms(5);
    }
}

bool gl_wait_all(struct gl_account *a, struct fc_collector *c,
                 unsigned timeout_ms)
{
    int64_t end = h_now_ms() + timeout_ms;

    for (;;) {
        gl_account_received(a, c);
        if (a->missing == 0)
            return true;
        if (h_now_ms() > end)
            return false;
        h_sleep_ms(100);
    }
}

void gl_account_show(const struct gl_account *a, const char *what)
{
    unsigned runs = 0;

    printf("%s: %llu lines on disk (%llu torn); received %llu: %llu missing, "
           "%llu twice, %llu out of order, %llu on no file now, %llu not "
           "ours\n",
           what, (unsigned long long)a->disk, (unsigned long long)a->torn,
           (unsigned long long)a->received, (unsigned long long)a->missing,
           (unsigned long long)a->twice, (unsigned long long)a->disorder,
           (unsigned long long)a->stray, (unsigned long long)a->bad);
    for (uint64_t i = 0, n = (uint64_t)a->writers * a->max_seq;
         i < n && a->missing && runs < 8; i++) {
        uint64_t j = i;
        unsigned f;

        if (!a->on_disk[i] || a->got[i])
            continue;
        while (j + 1 < n && (j + 1) % a->max_seq && a->on_disk[j + 1] &&
               !a->got[j + 1] && a->file_of[j + 1] == a->file_of[i])
            j++;
        f = a->file_of[i];
        printf("  missing: writer %llu lines %llu..%llu, in %s\n",
               (unsigned long long)(i / a->max_seq),
               (unsigned long long)(i % a->max_seq),
               (unsigned long long)(j % a->max_seq),
               f ? a->names[f - 1] : "(no file named)");
        runs++;
        i = j;
    }
    fflush(stdout);
}
