/*
 * http_serve.c - see http_serve.h. The connection's options come from
 * the listen address the client came through (its path=, server=,
 * dotfiles=, follow_symlinks=, index=, header_timeout=, and for https-listen
 * its TLS context) and the pipeline's send_timeout; the client's socket stays
 * the stream's, which closes it.
 */
#include "stream/http_serve.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>

#include "httpd/http_file_cache.h"
#include "stream/stream_impl.h"
#include "stream/tail.h"
#include "sys/log.h"

/* An idle client's socket goes to the park (a dup: the stream closes
 * its own), and the stream ends without a line of its own. */
static void park(struct stream *s)
{
    struct stream_http *site = s->sp->http;
    const struct weir_address *a = s->via ? s->via : s->sp->p->sinks[0];
    int fd = fcntl(s->sink_fd, F_DUPFD_CLOEXEC, 0);

    /* Without a descriptor to spare the client is closed, as one idle
     * past its header_timeout would be. */
    if (fd < 0)
        return;
    struct http_parked pc = {
        .via = a,
        .deadline = http_conn_deadline(s->home.http),
        .started_ns = s->t_start_ns,
        /* Relaxed: this thread's own counter. */
        .bytes = s->carried_bytes +
                 atomic_load_explicit(&s->bytes_out, memory_order_relaxed),
        .requests = (uint32_t)http_conn_requests(s->home.http),
        .idle_since = http_conn_idle_since(s->home.http),
        .fd = fd,
    };

    site->park(site->park_arg, s->home.loop, &pc);
    s->quiet = true;
}

static void conn_done(void *ctx, int rc)
{
    struct stream *s = ctx;

    if (rc == HTTP_CONN_PARKED) {
        park(s);
        rc = 0;
    }

    /* A client that idles past header_timeout is the server's choice,
     * not a failure worth a warning. */
    s->sink_rc[0] = rc == -ETIMEDOUT ? 0 : rc;
    stream_put(s);
}

int stream_http_prepare(struct stream_http *site, const struct weir_pipeline *p)
{
    const uint64_t ms = 1000 * 1000;

    site->conn_opts = calloc(p->nsinks, sizeof(*site->conn_opts));
    if (!site->conn_opts)
        return -ENOMEM;
    for (size_t i = 0; i < p->nsinks; i++) {
        const struct weir_address *a = p->sinks[i];

        site->conn_opts[i] = (struct http_conn_options){
            .root_fd = site->root_fd,
            .follow_symlinks = a->follow_symlinks,
            .file_path = site->root_fd < 0 ? p->source->path : NULL,
            .url_path = a->url_path,
            .dotfiles = a->dotfiles,
            .index = a->dir_index,
            .server = a->server_header,
            .header_timeout_ns = a->header_timeout_ms * ms,
            .send_timeout_ns = p->send_timeout_ms * ms,
            .park_after_ns = site->park && !a->tls ? site->park_after_ns : 0,
            .mime = site->mime,
            .counts = &site->counts,
            .log = site->logs ? site->logs[i] : NULL,
        };
    }
    return 0;
}

void http_serve_start(struct stream *s)
{
    const struct weir_pipeline *p = s->sp->p;
    const struct weir_address *a = s->via ? s->via : p->sinks[0];
    struct stream_http *site = s->sp->http;
    const struct http_conn_options *o = &site->conn_opts[0];
    struct http_client cl = {
        .requests = s->carried_requests,
        .idle_since = s->carried_idle_since,
        .peer = s->peer,
        .bytes_out = &s->bytes_out,
    };
    unsigned w = s->home.worker;
    int rc;

    if (site->files && w < site->nworkers) {
        if (!site->files[w])
            site->files[w] = http_file_cache_new(); /* NULL: none kept */
        cl.files = site->files[w];
    }

    for (size_t i = 0; i < p->nsinks; i++)
        if (p->sinks[i] == a)
            o = &site->conn_opts[i];
    stream_hold(s);
    /* https-listen: the connection owns the session from here. */
    rc = stream_tls_open(s, a, s->sink_fd, &cl.tls);
    if (rc) {
        log_warnx("pipeline %s: client %s: TLS: %s", p->name, s->peer,
                  strerror(-rc));
        conn_done(s, rc);
        return;
    }
    rc = http_conn_start(&s->home.http, s->home.loop, s->sink_fd, o, &cl,
                         conn_done, s);
    if (rc) {
        s->home.http = NULL;
        log_warnx("pipeline %s: client %s: %s", p->name, s->peer,
                  strerror(-rc));
        conn_done(s, rc);
    }
}
