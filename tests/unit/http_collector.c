/*
 * http_collector.c - see http_collector.h. One thread, poll(2) over the
 * listening socket and its connections; each connection's bytes are
 * gathered until a whole request (headers and Content-Length bytes of
 * body) is there.
 */
#include "http_collector.h"

#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <unistd.h>

#include <zlib.h>
#include <zstd.h>

#define MAXC 32

struct conn {
    int fd;
    bool hung;
    char *buf;
    size_t len, cap;
};

static void die(const char *what)
{
    fprintf(stderr, "collector: %s: %s\n", what, strerror(errno));
    abort();
}

/* The buffers are kept NUL-terminated past their bytes: the parsing
 * below uses the str* functions. */
static void put(struct conn *k, const char *p, size_t n)
{
    if (k->len + n + 1 > k->cap) {
        k->cap = (k->len + n) * 2 + 1;
        k->buf = realloc(k->buf, k->cap);
        if (!k->buf)
            die("realloc");
    }
    memcpy(k->buf + k->len, p, n);
    k->len += n;
    k->buf[k->len] = '\0';
}

static const char *header(const char *h, size_t hlen, const char *name)
{
    size_t n = strlen(name);

    for (const char *p = h; p && p < h + hlen;) {
        if (strncasecmp(p, name, n) == 0 && p[n] == ':') {
            p += n + 1;
            while (*p == ' ')
                p++;
            return p;
        }
        p = memchr(p, '\n', (size_t)(h + hlen - p));
        if (p)
            p++;
    }
    return NULL;
}

static char *gunzip(const char *p, size_t n, size_t *out)
{
    z_stream z = {0};
    size_t cap = n * 8 + 4096;
    char *o = malloc(cap);

    if (inflateInit2(&z, 16 + 15) != Z_OK)
        die("inflateInit2");
    z.next_in = (Bytef *)p;
    z.avail_in = (uInt)n;
    for (;;) {
        int r;

        z.next_out = (Bytef *)o + z.total_out;
        z.avail_out = (uInt)(cap - z.total_out);
        r = inflate(&z, Z_FINISH);
        if (r == Z_STREAM_END)
            break;
        if (r != Z_BUF_ERROR && r != Z_OK)
            die("inflate");
        cap *= 2;
        o = realloc(o, cap);
    }
    *out = z.total_out;
    inflateEnd(&z);
    if (*out == cap)
        o = realloc(o, cap + 1);
    o[*out] = '\0';
    return o;
}

static char *unzstd(const char *p, size_t n, size_t *out)
{
    unsigned long long sz = ZSTD_getFrameContentSize(p, n);
    char *o;

    if (sz == ZSTD_CONTENTSIZE_ERROR || sz == ZSTD_CONTENTSIZE_UNKNOWN)
        die("zstd size");
    o = malloc(sz + 1);
    *out = ZSTD_decompress(o, sz + 1, p, n);
    if (ZSTD_isError(*out))
        die("zstd");
    o[*out] = '\0';
    return o;
}

/* The record number in a line: "r" and 7 digits; -1: none. *at: where
 * it ends (the next one may follow: Loki's body is one line). */
static long rec_at(const char *l, size_t n, size_t *at)
{
    for (size_t i = *at; i + 8 <= n; i++) {
        size_t d = 0;

        if (l[i] != 'r')
            continue;
        while (d < 7 && isdigit((unsigned char)l[i + 1 + d]))
            d++;
        if (d == 7) {
            *at = i + 8;
            return strtol(l + i + 1, NULL, 10);
        }
    }
    *at = n;
    return -1;
}

static long rec_of(const char *l, size_t n)
{
    size_t at = 0;

    return rec_at(l, n, &at);
}

static void take(struct coll *c, long rec)
{
    if (rec < 0 || (unsigned long)rec >= c->o.nrec)
        c->bad_lines++;
    else
        c->got[rec]++;
}

/* Every line of a plain body; bulk: the items, answered one by one. */
static char *answer_body(struct coll *c, const char *b, size_t n, bool keep)
{
    size_t cap = 64, len = 0;
    char *ans = NULL;
    bool first = true;

    if (c->o.bulk) {
        ans = malloc(cap);
        len = (size_t)sprintf(ans, "{\"took\":1,\"errors\":true,\"items\":[");
    }
    for (const char *p = b, *e; p < b + n; p = e + 1) {
        long rec;
        int st = 201;

        e = memchr(p, '\n', (size_t)(b + n - p));
        if (!e)
            e = b + n;
        if (e == p)
            continue;
        if (c->o.bulk && strncmp(p, "{\"create\":", 10) == 0)
            continue;
        rec = rec_of(p, (size_t)(e - p));
        if (c->o.bulk && c->o.item_status && rec >= 0)
            st = c->o.item_status(c, (unsigned)rec);
        if (keep && c->o.bulk && st >= 200 && st < 300)
            take(c, rec);
        /* Plain: every record of the line; a line with none is bad. */
        if (keep && !c->o.bulk) {
            size_t at = 0, found = 0;
            long k;

            while ((k = rec_at(p, (size_t)(e - p), &at)) >= 0) {
                take(c, k);
                found++;
            }
            if (!found)
                take(c, -1);
        }
        if (c->o.bulk) {
            char item[128];
            int k =
                snprintf(item, sizeof(item),
                         "%s{\"create\":{\"_index\":\"x\",\"status\":%d%s}}",
                         first ? "" : ",", st,
                         st >= 300 ? ",\"error\":{\"type\":\"t\","
                                     "\"reason\":\"status: 1\"}"
                                   : "");

            while (len + (size_t)k + 4 > cap)
                ans = realloc(ans, cap *= 2);
            memcpy(ans + len, item, (size_t)k);
            len += (size_t)k;
            first = false;
        }
    }
    if (ans)
        memcpy(ans + len, "]}", 3);
    return ans;
}

static void reset(int fd)
{
    struct linger l = {.l_onoff = 1, .l_linger = 0};

    setsockopt(fd, SOL_SOCKET, SO_LINGER, &l, sizeof(l));
}

/* One write: head and body in two would meet Nagle and the sink's
 * delayed ACK (40 ms a request). */
static void reply(int fd, int st, const char *extra, const char *body)
{
    size_t blen = body ? strlen(body) : 2;
    char *msg = malloc(blen + 256);
    int n = snprintf(msg, 256, "HTTP/1.1 %d X\r\nContent-Length: %zu\r\n%s\r\n",
                     st, blen, extra);

    memcpy(msg + n, body ? body : "ok", blen);
    if (write(fd, msg, (size_t)n + blen) != (ssize_t)((size_t)n + blen))
        fprintf(stderr, "collector: short answer\n"); /* the sink went */
    free(msg);
}

/* One whole request at the front of k->buf: handled and consumed.
 * false: not whole yet, or the connection is to be closed. */
static bool serve(struct coll *c, struct conn *k, bool *close_it)
{
    char *end = memmem(k->buf, k->len, "\r\n\r\n", 4);
    const char *cl, *ce;
    size_t hlen, blen, dlen;
    char *dec = NULL, *ans = NULL;
    const char *body;
    int st = 200;
    unsigned n;

    if (!end)
        return false;
    hlen = (size_t)(end - k->buf) + 4;
    cl = header(k->buf, hlen, "Content-Length");
    blen = cl ? strtoul(cl, NULL, 10) : 0;
    if (k->len < hlen + blen)
        return false;
    body = k->buf + hlen;
    dlen = blen;
    ce = header(k->buf, hlen, "Content-Encoding");
    pthread_mutex_lock(&c->lock);
    if (ce && strncmp(ce, "gzip", 4) == 0) {
        body = dec = gunzip(body, blen, &dlen);
        c->gzip_seen = true;
    } else if (ce && strncmp(ce, "zstd", 4) == 0) {
        body = dec = unzstd(body, blen, &dlen);
        c->zstd_seen = true;
    }
    if ((cl = header(k->buf, hlen, "Authorization"))) {
        c->auth_seen = true;
        snprintf(c->auth, sizeof(c->auth), "%.*s", (int)strcspn(cl, "\r\n"),
                 cl);
    }
    if (!c->first[0]) {
        /* The body is not NUL-terminated: its first line within dlen. */
        const char *nl = memchr(body, '\n', dlen);
        size_t fl = nl ? (size_t)(nl - body) : dlen;

        snprintf(c->first, sizeof(c->first), "%.*s", (int)fl, body);
    }
    n = c->requests++;
    if (c->o.batch_status)
        st = c->o.batch_status(c, n, body, dlen);
    if ((st >= 200 && st < 300) || st == COLL_STORE_RESET)
        ans = answer_body(c, body, dlen, true);
    pthread_mutex_unlock(&c->lock);
    if (st == COLL_RESET || st == COLL_STORE_RESET) {
        reset(k->fd);
        *close_it = true;
    } else if (st == COLL_HANG) {
        k->hung = true;
    } else {
        reply(k->fd, st, st == 429 ? "Retry-After: 1\r\n" : "",
              st < 300 ? ans : "{\"error\":\"no\"}");
    }
    free(dec);
    free(ans);
    memmove(k->buf, k->buf + hlen + blen, k->len - hlen - blen);
    k->len -= hlen + blen;
    k->buf[k->len] = '\0';
    return !*close_it && !k->hung;
}

static void *run(void *arg)
{
    struct coll *c = arg;
    struct conn cs[MAXC];
    unsigned nc = 0;

    for (;;) {
        struct pollfd p[MAXC + 2];
        char buf[65536];

        p[0] = (struct pollfd){.fd = c->wake[0], .events = POLLIN};
        p[1] = (struct pollfd){.fd = c->lfd, .events = POLLIN};
        for (unsigned i = 0; i < nc; i++)
            p[2 + i] = (struct pollfd){.fd = cs[i].fd, .events = POLLIN};
        if (poll(p, nc + 2, -1) < 0) {
            if (errno == EINTR)
                continue;
            die("poll");
        }
        if (p[0].revents)
            break;
        if ((p[1].revents & POLLIN) && nc < MAXC) {
            int fd = accept4(c->lfd, NULL, NULL, SOCK_CLOEXEC);

            if (fd >= 0)
                cs[nc++] = (struct conn){.fd = fd};
        }
        for (unsigned i = 0; i < nc; i++) {
            bool close_it = false;
            ssize_t r;

            if (!(p[2 + i].revents & (POLLIN | POLLHUP | POLLERR)))
                continue;
            r = read(cs[i].fd, buf, sizeof(buf));
            if (r <= 0)
                close_it = true;
            else if (!cs[i].hung) {
                put(&cs[i], buf, (size_t)r);
                while (serve(c, &cs[i], &close_it))
                    ;
            }
            if (close_it) {
                close(cs[i].fd);
                free(cs[i].buf);
                cs[i] = cs[--nc];
                p[2 + i] = p[2 + nc];
                i--;
            }
        }
    }
    for (unsigned i = 0; i < nc; i++) {
        close(cs[i].fd);
        free(cs[i].buf);
    }
    return NULL;
}

struct coll *coll_start(const struct coll_opts *o)
{
    struct coll *c = calloc(1, sizeof(*c));
    struct sockaddr_in sa = {.sin_family = AF_INET};
    socklen_t len = sizeof(sa);

    c->o = *o;
    c->got = calloc(o->nrec + 1, sizeof(*c->got));
    pthread_mutex_init(&c->lock, NULL);
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    c->lfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (c->lfd < 0 || bind(c->lfd, (struct sockaddr *)&sa, sizeof(sa)) ||
        getsockname(c->lfd, (struct sockaddr *)&sa, &len) ||
        listen(c->lfd, 64) || pipe(c->wake))
        die("listen");
    c->port = ntohs(sa.sin_port);
    if (pthread_create(&c->th, NULL, run, c))
        die("pthread_create");
    return c;
}

void coll_stop(struct coll *c)
{
    if (write(c->wake[1], "x", 1) != 1)
        die("wake");
    pthread_join(c->th, NULL);
    close(c->lfd);
    close(c->wake[0]);
    close(c->wake[1]);
    free(c->got);
    free(c);
}

unsigned coll_got(struct coll *c, unsigned rec)
{
    unsigned n;

    pthread_mutex_lock(&c->lock);
    n = c->got[rec];
    pthread_mutex_unlock(&c->lock);
    return n;
}
