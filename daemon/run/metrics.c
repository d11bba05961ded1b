/*
 * metrics.c - [daemon] metrics = HOST:PORT: an HTTP endpoint on the main
 * loop, answering GET /metrics (series.c), /health (200 while the main
 * loop turns) and /ready (200 once every pipeline started, 503 before
 * that and while stopping).
 *
 * libmicrohttpd parses HTTP. It runs without a thread of its own: its
 * epoll fd is polled by the main loop, and a once-a-second tick lets it
 * expire idle connections. So a scrape reads the run's state on the
 * thread that owns it, with no lock, and the workers never hear of it.
 * Requests are bounded: a connection has 16 KiB for its request, 5 s of
 * idleness, and at most 32 are open at once.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <microhttpd.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "conf/sockaddr.h"
#include "run/run_impl.h"

#define TICK_NS        (1000ull * 1000 * 1000)
#define CONN_LIMIT     32
#define CONN_TIMEOUT_S 5
#define CONN_MEMORY    (16u * 1024)
/* MHD_run calls in one turn while it says it has more to do at once. */
#define RUN_ROUNDS 8

struct metrics {
    struct run *r;
    struct MHD_Daemon *d;
    int epfd;
    struct weir_op poll;
    struct weir_op again; /* a nop: MHD has more to do right away */
    struct weir_timer tick;
};

static enum MHD_Result reply(struct MHD_Connection *c, unsigned status,
                             const char *type, char *body, size_t len,
                             enum MHD_ResponseMemoryMode mode)
{
    struct MHD_Response *resp =
        MHD_create_response_from_buffer(len, body, mode);
    enum MHD_Result rc;

    if (!resp) {
        if (mode == MHD_RESPMEM_MUST_FREE)
            free(body);
        return MHD_NO;
    }
    MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, type);
    rc = MHD_queue_response(c, status, resp);
    MHD_destroy_response(resp);
    return rc;
}

static enum MHD_Result reply_text(struct MHD_Connection *c, unsigned status,
                                  const char *text)
{
    return reply(c, status, "text/plain; charset=utf-8", (char *)text,
                 strlen(text), MHD_RESPMEM_PERSISTENT);
}

static enum MHD_Result answer(void *cls, struct MHD_Connection *c,
                              const char *url, const char *method,
                              const char *version, const char *upload_data,
                              size_t *upload_data_size, void **req_cls)
{
    struct metrics *m = cls;
    char *body;
    size_t len;

    (void)version;
    (void)upload_data;
    (void)upload_data_size;
    (void)req_cls;
    if (strcmp(method, MHD_HTTP_METHOD_GET) != 0 &&
        strcmp(method, MHD_HTTP_METHOD_HEAD) != 0)
        return reply_text(c, MHD_HTTP_METHOD_NOT_ALLOWED,
                          "only GET and HEAD\n");
    if (strcmp(url, "/metrics") == 0) {
        body = series_render(m->r, &len);
        if (!body)
            return reply_text(c, MHD_HTTP_INTERNAL_SERVER_ERROR,
                              "out of memory\n");
        return reply(c, MHD_HTTP_OK, "text/plain; version=0.0.4; charset=utf-8",
                     body, len, MHD_RESPMEM_MUST_FREE);
    }
    if (strcmp(url, "/health") == 0)
        return reply_text(c, MHD_HTTP_OK, "ok\n");
    if (strcmp(url, "/ready") == 0) {
        if (run_ready(m->r))
            return reply_text(c, MHD_HTTP_OK, "ready\n");
        return reply_text(c, MHD_HTTP_SERVICE_UNAVAILABLE,
                          m->r->stopping ? "stopping\n" : "starting\n");
    }
    return reply_text(c, MHD_HTTP_NOT_FOUND,
                      "not found: /metrics, /health, /ready\n");
}

/* MHD's own complaints (a malformed request, a full connection table):
 * a client's trouble, not the operator's. */
static void mhd_log(void *cls, const char *fmt, va_list ap)
{
    char line[256];
    size_t n;

    (void)cls;
    vsnprintf(line, sizeof(line), fmt, ap);
    n = strlen(line);
    while (n > 0 && line[n - 1] == '\n')
        line[--n] = '\0';
    log_debug("metrics: %s", line);
}

static void poll_arm(struct metrics *m);

static void process(struct metrics *m)
{
    MHD_UNSIGNED_LONG_LONG to;

    for (int i = 0; i < RUN_ROUNDS; i++) {
        MHD_run(m->d);
        if (MHD_get_timeout(m->d, &to) != MHD_YES || to > 0)
            return;
    }
    if (!m->again.pending)
        weir_loop_nop(m->r->main, &m->again);
}

static void polled(struct weir_op *op, int res, uint32_t flags)
{
    struct metrics *m = weir_container_of(op, struct metrics, poll);

    (void)flags;
    if (res == -ECANCELED)
        return;
    process(m);
    poll_arm(m);
}

static void again(struct weir_op *op, int res, uint32_t flags)
{
    (void)res;
    (void)flags;
    process(weir_container_of(op, struct metrics, again));
}

static void ticked(struct weir_op *op, int res, uint32_t flags)
{
    struct metrics *m = weir_container_of(op, struct metrics, tick.op);

    (void)flags;
    if (res == -ECANCELED)
        return;
    process(m);
    weir_loop_timer_start(m->r->main, &m->tick, TICK_NS);
}

static void poll_arm(struct metrics *m)
{
    m->poll.fn = polled;
    if (weir_loop_poll(m->r->main, &m->poll, m->epfd, POLLIN) != 0)
        log_warnx("metrics: cannot watch the endpoint; it stops answering");
}

/* The listening socket, bound here so that its errors read like the
 * pipelines' and the port the kernel chose can be logged. */
static int listen_on(const struct weir_address *a, char *name, size_t len)
{
    struct sockaddr_storage ss;
    socklen_t sl;
    int fd, one = 1, rc;

    rc = sockaddr_resolve(a, &ss, &sl);
    if (rc)
        return rc;
    fd = socket(ss.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return -errno;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    if (bind(fd, (struct sockaddr *)&ss, sl) != 0 || listen(fd, 64) != 0) {
        rc = -errno;
        close(fd);
        return rc;
    }
    sl = sizeof(ss);
    if (getsockname(fd, (struct sockaddr *)&ss, &sl) == 0)
        sockaddr_format((struct sockaddr *)&ss, sl, name, len);
    return fd;
}

int metrics_start(struct run *r)
{
    const struct weir_address *a = r->conf->daemon.metrics;
    const union MHD_DaemonInfo *info;
    struct metrics *m;
    char name[128] = "";
    int fd;

    if (!a)
        return 0;
    fd = listen_on(a, name, sizeof(name));
    if (fd < 0) {
        log_errx("metrics: cannot listen on %s: %s", a->text, strerror(-fd));
        return fd;
    }
    m = calloc(1, sizeof(*m));
    if (!m) {
        close(fd);
        log_errx("metrics: out of memory");
        return -ENOMEM;
    }
    m->r = r;
    m->d = MHD_start_daemon(
        MHD_USE_EPOLL | MHD_USE_ERROR_LOG | (a->ipv6 ? MHD_USE_IPv6 : 0), 0,
        NULL, NULL, answer, m, MHD_OPTION_EXTERNAL_LOGGER, mhd_log, NULL,
        MHD_OPTION_LISTEN_SOCKET, fd, MHD_OPTION_CONNECTION_LIMIT,
        (unsigned)CONN_LIMIT, MHD_OPTION_CONNECTION_TIMEOUT,
        (unsigned)CONN_TIMEOUT_S, MHD_OPTION_CONNECTION_MEMORY_LIMIT,
        (size_t)CONN_MEMORY, MHD_OPTION_END);
    info = m->d ? MHD_get_daemon_info(m->d, MHD_DAEMON_INFO_EPOLL_FD) : NULL;
    if (!info) {
        log_errx("metrics: the HTTP server did not start on %s", a->text);
        if (m->d)
            MHD_stop_daemon(m->d);
        else
            close(fd);
        free(m);
        return -EIO;
    }
    m->epfd = info->epoll_fd;
    m->again.fn = again;
    m->tick.op.fn = ticked;
    r->metrics = m;
    poll_arm(m);
    weir_loop_timer_start(r->main, &m->tick, TICK_NS);
    log_info("metrics: http://%s/metrics", name);
    return 0;
}

void metrics_free(struct run *r)
{
    struct metrics *m = r->metrics;

    if (!m)
        return;
    MHD_stop_daemon(m->d); /* closes the listening socket too */
    free(m);
    r->metrics = NULL;
}
