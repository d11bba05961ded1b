/*
 * collector.c - see collector.h.
 */
#include "collector.h"

#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "../integration/harness.h"

#include <setjmp.h>
#include <stdarg.h>

#include <cmocka.h>

static void conn_add(struct fc_collector *c, const uint8_t *p, size_t n,
                     unsigned k)
{
    struct fc_conn *cn = &c->conns[k];

    pthread_mutex_lock(&c->mu);
    if (cn->len + n > cn->cap) {
        size_t cap = cn->cap ? cn->cap : 65536;

        while (cap < cn->len + n)
            cap *= 2;
        cn->p = realloc(cn->p, cap);
        if (!cn->p)
            abort();
        cn->cap = cap;
    }
    memcpy(cn->p + cn->len, p, n);
    cn->len += n;
    pthread_mutex_unlock(&c->mu);
}

static void *collect(void *arg)
{
    struct fc_collector *c = arg;
    static uint8_t buf[1 << 16];

    while (!atomic_load(&c->stop)) {
        struct pollfd pl = {.fd = c->lfd, .events = POLLIN};
        unsigned k;
        int fd;

        if (poll(&pl, 1, 20) <= 0)
            continue;
        fd = accept4(c->lfd, NULL, NULL, SOCK_CLOEXEC);
        if (fd < 0)
            continue;
        pthread_mutex_lock(&c->mu);
        k = c->nconns < FC_MAX_CONNS ? c->nconns++ : FC_MAX_CONNS - 1;
        pthread_mutex_unlock(&c->mu);
        for (;;) {
            struct pollfd pc = {.fd = fd, .events = POLLIN};
            ssize_t n;

            if (poll(&pc, 1, 20) <= 0) {
                if (atomic_load(&c->stop))
                    break;
                continue;
            }
            n = read(fd, buf, sizeof(buf));
            if (n <= 0)
                break;
            conn_add(c, buf, (size_t)n, k);
        }
        close(fd);
        pthread_mutex_lock(&c->mu);
        c->conns[k].ended = true;
        pthread_mutex_unlock(&c->mu);
    }
    return NULL;
}

void fc_start(struct fc_collector *c)
{
    struct sockaddr_in a = {.sin_family = AF_INET,
                            .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t len = sizeof(a);

    memset(c, 0, sizeof(*c));
    pthread_mutex_init(&c->mu, NULL);
    c->lfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    assert_true(c->lfd >= 0);
    assert_int_equal(bind(c->lfd, (struct sockaddr *)&a, sizeof(a)), 0);
    assert_int_equal(listen(c->lfd, 16), 0);
    assert_int_equal(getsockname(c->lfd, (struct sockaddr *)&a, &len), 0);
    c->port = ntohs(a.sin_port);
    assert_int_equal(pthread_create(&c->th, NULL, collect, c), 0);
}

void fc_stop(struct fc_collector *c)
{
    if (c->lfd < 0)
        return;
    atomic_store(&c->stop, true);
    pthread_join(c->th, NULL);
    close(c->lfd);
    c->lfd = -1;
}

void fc_free(struct fc_collector *c)
{
    fc_stop(c);
    for (unsigned k = 0; k < c->nconns; k++)
        free(c->conns[k].p);
    pthread_mutex_destroy(&c->mu);
}

uint64_t fc_total(struct fc_collector *c)
{
    uint64_t n = 0;

    pthread_mutex_lock(&c->mu);
    for (unsigned k = 0; k < c->nconns; k++)
        n += c->conns[k].len;
    pthread_mutex_unlock(&c->mu);
    return n;
}

unsigned fc_conns(struct fc_collector *c, unsigned *ended)
{
    unsigned n, e = 0;

    pthread_mutex_lock(&c->mu);
    n = c->nconns;
    for (unsigned k = 0; k < n; k++)
        e += c->conns[k].ended;
    pthread_mutex_unlock(&c->mu);
    if (ended)
        *ended = e;
    return n;
}

bool fc_wait(struct fc_collector *c, bool (*fn)(struct fc_collector *, void *),
             void *arg, unsigned timeout_ms)
{
    int64_t end = h_now_ms() + timeout_ms;

    while (!fn(c, arg)) {
        if (h_now_ms() > end)
            return false;
        h_sleep_ms(10);
    }
    return true;
}

void fc_line(uint64_t i, char out[FC_LINE + 1])
{
    snprintf(out, FC_LINE + 1, "%07llu", (unsigned long long)(i % 10000000));
    out[FC_LINE - 1] = '\n';
}

uint64_t fc_line_number(const uint8_t *p)
{
    uint64_t n = 0;

    for (int i = 0; i < FC_LINE - 1; i++)
        n = n * 10 + (uint64_t)(p[i] - '0');
    return n;
}

static void *write_lines(void *arg)
{
    struct fc_writer *w = arg;
    char *buf = malloc((size_t)w->burst * FC_LINE);
    int fd = open(w->path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
    uint64_t n = atomic_load(&w->n);

    if (!buf || fd < 0)
        abort();
    while (!atomic_load(&w->stop)) {
        char line[FC_LINE + 1];

        if (atomic_load(&w->reopen)) {
            close(fd);
            fd = open(w->path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
            if (fd < 0)
                abort();
            atomic_store(&w->reopen, false);
            atomic_fetch_add(&w->at, 1);
        }
        for (unsigned i = 0; i < w->burst; i++) {
            fc_line(n + i, line);
            memcpy(buf + (size_t)i * FC_LINE, line, FC_LINE);
        }
        pthread_mutex_lock(&w->lock);
        if (write(fd, buf, (size_t)w->burst * FC_LINE) !=
            (ssize_t)w->burst * FC_LINE)
            abort();
        pthread_mutex_unlock(&w->lock);
        n += w->burst;
        atomic_store(&w->n, n);
        if (w->pause_us)
            usleep(w->pause_us);
    }
    close(fd);
    free(buf);
    return NULL;
}

void fc_writer_start(struct fc_writer *w, const char *path, unsigned burst,
                     unsigned pause_us)
{
    size_t len;
    uint8_t *old = fc_read_file(path, &len);

    free(old);
    memset(w, 0, sizeof(*w));
    snprintf(w->path, sizeof(w->path), "%s", path);
    w->burst = burst;
    w->pause_us = pause_us;
    /* Goes on from the lines the file already has. */
    atomic_store(&w->n, old ? len / FC_LINE : 0);
    pthread_mutex_init(&w->lock, NULL);
    assert_int_equal(pthread_create(&w->th, NULL, write_lines, w), 0);
}

void fc_writer_reopen(struct fc_writer *w)
{
    uint64_t at = atomic_load(&w->at);

    atomic_store(&w->reopen, true);
    while (atomic_load(&w->at) == at)
        h_sleep_ms(1);
}

uint64_t fc_writer_stop(struct fc_writer *w)
{
    atomic_store(&w->stop, true);
    pthread_join(w->th, NULL);
    pthread_mutex_destroy(&w->lock);
    return atomic_load(&w->n);
}

uint8_t *fc_log_lines(unsigned first, unsigned n)
{
    uint8_t *p = malloc((size_t)n * FC_LOG_LINE + 1);

    assert_non_null(p);
    for (unsigned i = 0; i < n; i++)
        snprintf((char *)p + (size_t)i * FC_LOG_LINE, FC_LOG_LINE + 1,
                 "line %08u of the log\n", first + i);
    return p;
}

void fc_append(const char *path, const uint8_t *p, size_t n)
{
    int fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);

    assert_true(fd >= 0);
    assert_true(h_write_all(fd, p, n));
    close(fd);
}

uint8_t *fc_read_file(const char *path, size_t *len)
{
    struct stat st;
    uint8_t *p;
    size_t got = 0;
    int fd = open(path, O_RDONLY | O_CLOEXEC);

    *len = 0;
    if (fd < 0)
        return NULL;
    if (fstat(fd, &st) != 0 || !(p = malloc((size_t)st.st_size + 1))) {
        close(fd);
        return NULL;
    }
    while (got < (size_t)st.st_size) {
        ssize_t n = read(fd, p + got, (size_t)st.st_size - got);

        if (n <= 0)
            break;
        got += (size_t)n;
    }
    close(fd);
    *len = got;
    return p;
}
