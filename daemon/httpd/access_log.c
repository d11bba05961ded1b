/*
 * access_log.c - see access_log.h. Two buffers per log: workers fill
 * one under the mutex while the writer thread writes the other out, then
 * they swap. The buffer is bounded (ACCESS_LOG_BUF), so a disk that
 * stalls costs lines, counted, never a worker's time or unbounded memory.
 */
#include "httpd/access_log.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define ACCESS_LOG_BUF (1u << 20)
#define LINE_MAX_LEN   4096

struct access_log {
    char *path; /* NULL: standard output */
    int fd;
    enum access_log_format format;
    pthread_t thread;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    char *fill, *out; /* the buffer workers fill, the one written */
    size_t len;       /* bytes in fill */
    bool stop, reopen;
    struct access_log *next; /* in the list of open logs */
};

static pthread_mutex_t logs_mu = PTHREAD_MUTEX_INITIALIZER;
static struct access_log *logs;
static _Atomic uint64_t dropped;

static int open_path(const char *path)
{
    return open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0640);
}

static void write_all(int fd, const char *p, size_t n)
{
    while (n > 0) {
        ssize_t k = write(fd, p, n);

        if (k < 0 && errno == EINTR)
            continue;
        if (k <= 0)
            return; /* a full disk: the lines are lost, weir goes on */
        p += k;
        n -= (size_t)k;
    }
}

static void *writer(void *arg)
{
    struct access_log *l = arg;

    pthread_mutex_lock(&l->mu);
    for (;;) {
        char *b;
        size_t n;
        bool reopen;

        while (!l->len && !l->stop && !l->reopen)
            pthread_cond_wait(&l->cv, &l->mu);
        if (!l->len && l->stop)
            break;
        b = l->fill;
        n = l->len;
        l->fill = l->out;
        l->out = b;
        l->len = 0;
        reopen = l->reopen;
        l->reopen = false;
        pthread_mutex_unlock(&l->mu);
        if (reopen && l->path) {
            int fd = open_path(l->path);

            if (fd >= 0) {
                close(l->fd);
                l->fd = fd;
            }
        }
        write_all(l->fd, b, n);
        pthread_mutex_lock(&l->mu);
    }
    pthread_mutex_unlock(&l->mu);
    return NULL;
}

int access_log_open(struct access_log **out, const char *path,
                    enum access_log_format format)
{
    struct access_log *l = calloc(1, sizeof(*l));
    int rc;

    *out = NULL;
    if (!l)
        return -ENOMEM;
    l->format = format;
    l->fill = malloc(ACCESS_LOG_BUF);
    l->out = malloc(ACCESS_LOG_BUF);
    if (strcmp(path, "stdout") == 0) {
        l->fd = STDOUT_FILENO;
    } else {
        l->path = strdup(path);
        l->fd = l->path ? open_path(path) : -1;
    }
    if (!l->fill || !l->out || l->fd < 0) {
        rc = l->fd < 0 && errno ? -errno : -ENOMEM;
        goto fail;
    }
    pthread_mutex_init(&l->mu, NULL);
    pthread_cond_init(&l->cv, NULL);
    rc = -pthread_create(&l->thread, NULL, writer, l);
    if (rc) {
        pthread_mutex_destroy(&l->mu);
        pthread_cond_destroy(&l->cv);
        goto fail;
    }
    pthread_mutex_lock(&logs_mu);
    l->next = logs;
    logs = l;
    pthread_mutex_unlock(&logs_mu);
    *out = l;
    return 0;
fail:
    if (l->path && l->fd >= 0)
        close(l->fd);
    free(l->path);
    free(l->fill);
    free(l->out);
    free(l);
    return rc;
}

void access_log_close(struct access_log *l)
{
    struct access_log **p;

    if (!l)
        return;
    pthread_mutex_lock(&logs_mu);
    for (p = &logs; *p && *p != l; p = &(*p)->next)
        ;
    if (*p)
        *p = l->next;
    pthread_mutex_unlock(&logs_mu);
    pthread_mutex_lock(&l->mu);
    l->stop = true;
    pthread_cond_signal(&l->cv);
    pthread_mutex_unlock(&l->mu);
    pthread_join(l->thread, NULL);
    pthread_mutex_destroy(&l->mu);
    pthread_cond_destroy(&l->cv);
    if (l->path)
        close(l->fd);
    free(l->path);
    free(l->fill);
    free(l->out);
    free(l);
}

void access_log_reopen_all(void)
{
    pthread_mutex_lock(&logs_mu);
    for (struct access_log *l = logs; l; l = l->next) {
        pthread_mutex_lock(&l->mu);
        l->reopen = true;
        pthread_cond_signal(&l->cv);
        pthread_mutex_unlock(&l->mu);
    }
    pthread_mutex_unlock(&logs_mu);
}

uint64_t access_log_dropped(void)
{
    return atomic_load_explicit(&dropped, memory_order_relaxed);
}

/* Appends s[0..n) to buf (at *at, below cap) as the format quotes it:
 * CLF escapes '"', '\' and bytes outside printable ASCII as \xHH; JSON
 * escapes them as a JSON string must (other bytes >= 0x80 pass, as
 * \u00HH would change them). */
static void put_str(char *buf, size_t *at, size_t cap, const char *s, size_t n,
                    enum access_log_format f)
{
    /* Each field takes at most a quarter of a line, escaped: a long
     * request or agent is cut, and the line stays whole (and its JSON
     * valid). */
    size_t end =
        *at + (LINE_MAX_LEN / 4) < cap ? *at + (LINE_MAX_LEN / 4) : cap;

    static const char hexd[] = "0123456789abcdef";

    if (!s || !n) {
        /* CLF's "none"; JSON's is the empty string. */
        if (f == ACCESS_LOG_CLF && *at + 1 < cap)
            buf[(*at)++] = '-';
        return;
    }
    for (size_t i = 0; i < n && *at + 6 < end; i++) {
        unsigned char c = (unsigned char)s[i];

        if (c == '"' || c == '\\') {
            buf[(*at)++] = '\\';
            buf[(*at)++] = (char)c;
        } else if (c < 0x20 || c == 0x7f ||
                   (f == ACCESS_LOG_CLF && c >= 0x80)) {
            if (f == ACCESS_LOG_JSON) {
                memcpy(buf + *at, "\\u00", 4);
                *at += 4;
            } else {
                memcpy(buf + *at, "\\x", 2);
                *at += 2;
            }
            buf[(*at)++] = hexd[c >> 4];
            buf[(*at)++] = hexd[c & 15];
        } else {
            buf[(*at)++] = (char)c;
        }
    }
}

/* Appends to b (at *n, below cap); what does not fit is cut. */
__attribute__((format(printf, 4, 5))) static void
app(char *b, size_t *n, size_t cap, const char *fmt, ...)
{
    va_list ap;
    int k;

    if (*n >= cap)
        return;
    va_start(ap, fmt);
    k = vsnprintf(b + *n, cap - *n, fmt, ap);
    va_end(ap);
    if (k > 0)
        *n = *n + (size_t)k < cap ? *n + (size_t)k : cap - 1;
}

static size_t format_line(char *b, const struct access_entry *e,
                          enum access_log_format f)
{
    const size_t cap = LINE_MAX_LEN - 2;
    char when[64];
    struct timespec ts;
    struct tm tm;
    size_t n;

    clock_gettime(CLOCK_REALTIME, &ts);
    gmtime_r(&ts.tv_sec, &tm);
    if (f == ACCESS_LOG_JSON) {
        strftime(when, sizeof(when), "%Y-%m-%dT%H:%M:%S", &tm);
        n = 0;
        app(b, &n, cap, "{\"time\":\"%s.%03ldZ\",\"client\":\"", when,
            ts.tv_nsec / 1000000);
        put_str(b, &n, cap, e->client, e->client ? strlen(e->client) : 0, f);
        app(b, &n, cap, "\",\"request\":\"");
        put_str(b, &n, cap, e->request, e->request_len, f);
        app(b, &n, cap,
            "\",\"status\":%d,\"bytes\":%llu,\"duration\":%.6f,\"range\":\"",
            e->status, (unsigned long long)e->bytes,
            (double)e->duration_us / 1e6);
        put_str(b, &n, cap, e->range, e->range_len, f);
        app(b, &n, cap, "\",\"user_agent\":\"");
        put_str(b, &n, cap, e->user_agent, e->user_agent_len, f);
        app(b, &n, cap, "\"}");
    } else {
        /* Common log format, then the answer's time, its Range and the
         * user agent, quoted. The client is its address without the
         * port, as httpd and nginx write it. */
        const char *colon = e->client ? strrchr(e->client, ':') : NULL;
        size_t hl = e->client ? (colon ? (size_t)(colon - e->client)
                                       : strlen(e->client))
                              : 0;

        strftime(when, sizeof(when), "%d/%b/%Y:%H:%M:%S +0000", &tm);
        n = 0;
        put_str(b, &n, cap, e->client, hl, f);
        app(b, &n, cap, " - - [%s] \"", when);
        put_str(b, &n, cap, e->request, e->request_len, f);
        app(b, &n, cap, "\" %d %llu %.6f \"", e->status,
            (unsigned long long)e->bytes, (double)e->duration_us / 1e6);
        put_str(b, &n, cap, e->range, e->range_len, f);
        app(b, &n, cap, "\" \"");
        put_str(b, &n, cap, e->user_agent, e->user_agent_len, f);
        app(b, &n, cap, "\"");
    }
    if (n > cap)
        n = cap;
    b[n++] = '\n';
    return n;
}

void access_log_put(struct access_log *l, const struct access_entry *e)
{
    char line[LINE_MAX_LEN];
    size_t n = format_line(line, e, l->format);

    pthread_mutex_lock(&l->mu);
    if (l->len + n > ACCESS_LOG_BUF) {
        pthread_mutex_unlock(&l->mu);
        /* Relaxed: a statistic; it orders nothing. */
        atomic_fetch_add_explicit(&dropped, 1, memory_order_relaxed);
        return;
    }
    memcpy(l->fill + l->len, line, n);
    l->len += n;
    if (l->len == n)
        pthread_cond_signal(&l->cv); /* it was empty: the writer sleeps */
    pthread_mutex_unlock(&l->mu);
}
