/*
 * relay.c - the proxy carries both directions, and sockets connect on the
 * workers.
 *
 * A listen source whose pipeline has one tcp/unix sink is a proxy (socat's
 * TCP-LISTEN,fork TCP:..., nginx's stream proxy): each client gets its own
 * upstream connection, and what the upstream sends comes back to the
 * client. The forward direction is the stream's usual pipe (client ->
 * transforms -> upstream); the reverse is a second pipe on the same
 * worker (upstream -> client), with the pipeline's high_water_mark and the
 * same backpressure. Transforms apply to the forward direction only: they
 * describe what the pipeline does to its source's bytes, and the replies
 * are not that.
 *
 * Each socket is a source in one direction and a sink in the other, so
 * each direction's endpoints hold their own dup of it: an EOF read from
 * one side becomes shutdown(SHUT_WR) on the other once the queued bytes
 * are out (the sink's close), and the fds close only when the stream is
 * torn down, after both pipes ended. An error on either direction shuts
 * both sockets down, which ends the other direction's reads and writes at
 * once; the stream then logs one line for the pair.
 *
 * A connect (the upstream of a relayed stream, or a tcp/unix source) is
 * an io_uring connect on the stream's worker: the main thread only makes
 * the socket, so a slow or dead peer never holds up accepts, signals or a
 * reload.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "stream/relay.h"

#include "stream/stream_impl.h"
#include "sys/log.h"

int relay_open(struct stream *s)
{
    const struct stream_sink_res *up = &s->sp->res[0];
    int fd = socket(up->addr.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);

    if (fd < 0)
        return -errno;
    s->kill_up_fd = fcntl(fd, F_DUPFD_CLOEXEC, 0);
    s->up_fd = fd;
    s->conn_fd = fd;
    s->conn_addr = up->addr;
    s->conn_addrlen = up->addrlen;
    s->relay = true;
    return 0;
}

void relay_free(struct stream *s)
{
    if (s->up_fd >= 0)
        close(s->up_fd);
    if (s->kill_up_fd >= 0)
        close(s->kill_up_fd);
    s->up_fd = -1;
    s->kill_up_fd = -1;
}

void relay_prepare(struct stream *s)
{
    struct stream_home *h = &s->home;

    h->rfd_up = s->up_fd >= 0 ? fcntl(s->up_fd, F_DUPFD_CLOEXEC, 0) : -1;
    h->rfd_cli = s->src_fd >= 0 ? fcntl(s->src_fd, F_DUPFD_CLOEXEC, 0) : -1;
}

static void relay_done(void *ctx, int rc)
{
    struct pipe_ctx *pc = ctx;
    struct stream *s = pc->s;

    if (rc < 0) {
        relay_cut(pc->s);
        if (s->src_rc == 0)
            s->src_rc = rc;
    }
    stream_put(pc->s);
}

void relay_start(struct stream *s)
{
    struct stream_home *h = &s->home;
    const struct weir_pipeline *p = s->sp->p;
    struct weir_fd_source_options so = {
        .chunk_size = (uint32_t)p->chunk_size,
        .own_fd = true,
    };
    struct weir_fd_sink_options ko = {
        .hwm = p->high_water_mark,
        .own_fd = true,
    };
    int fd, rc;

    /* The source listens, so no TCP options: both fds are dups of
     * connections tuned already (the upstream by its sink). */
    stream_peer_options(p, p->source, &so.peer);
    ko.peer = so.peer;
    if (h->rfd_up < 0 || h->rfd_cli < 0) {
        rc = -EMFILE;
        goto fail;
    }
    fd = h->rfd_up;
    so.tls = h->tls_up;
    rc =
        weir_endpoint_fd_source(&h->rsrc, h->loop, weir_worker_pool(), fd, &so);
    if (rc) {
        h->rsrc = NULL;
        h->rfd_up = -1; /* closed by the endpoint */
        goto fail;
    }
    fd = h->rfd_cli;
    ko.tls = h->tls_src;
    rc = weir_endpoint_fd_sink(&h->rsink, h->loop, fd, &ko);
    if (rc) {
        h->rsink = NULL;
        h->rfd_cli = -1;
        goto fail;
    }
    h->rpc = (struct pipe_ctx){.s = s, .idx = 0};
    h->pipes++;
    rc = weir_pipe_to(weir_endpoint_readable(h->rsrc),
                      weir_endpoint_writable(h->rsink), NULL, relay_done,
                      &h->rpc);
    if (rc != WEIR_PENDING)
        relay_done(&h->rpc, rc);
    return;
fail:
    /* No way back to the client: the forward direction ends too. */
    if (s->src_rc == 0)
        s->src_rc = rc;
    relay_cut(s);
}
