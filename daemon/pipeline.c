/*
 * pipeline.c - a pipeline of the config at run time: its listeners, its
 * resolved sinks, and its life across reloads. A pipeline is prepared
 * (everything that can fail: resolving, opening files, binding) before it
 * is started, so that a reload can give up without having changed
 * anything; a pipeline that a reload removed or replaced drains, and is
 * freed once its last stream has ended.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "address.h"
#include "runtime.h"

/* A source that has no beginning to serve from: a followed file, a
 * connection. */
static bool source_live(const struct weir_pipeline *p)
{
    const struct weir_address *a = p->source;

    if (a->kind == ADDR_FILE)
        return p->follow || a->follow;
    return a->kind == ADDR_TCP || a->kind == ADDR_UNIX;
}

static enum pl_mode pipeline_mode(const struct weir_pipeline *p)
{
    if (addr_kind_listens(p->source->kind))
        return PL_ACCEPT;
    for (size_t i = 0; i < p->nsinks; i++)
        if (addr_kind_listens(p->sinks[i]->kind))
            return source_live(p) ? PL_BROADCAST : PL_SERVE;
    return PL_ONCE;
}

/* The listener of `old` (a pipeline the reload drops) on the same address,
 * or NULL. */
static struct listener *old_listener(struct pipeline_rt *old,
                                     const struct weir_address *a)
{
    for (struct pipeline_rt *o = old; o; o = o->next) {
        if (!o->replaced)
            continue;
        for (unsigned j = 0; j < o->nls; j++)
            if (o->ls[j].fd >= 0 && listener_same_addr(o->ls[j].addr, a))
                return &o->ls[j];
    }
    return NULL;
}

static int check_sink(const struct pipeline_rt *pl,
                      const struct weir_address *a)
{
    const struct weir_pipeline *p = pl->p;

    if ((pl->mode == PL_SERVE || pl->mode == PL_BROADCAST) &&
        !addr_kind_listens(a->kind)) {
        log_errx("pipeline %s: a listen sink must be the pipeline's "
                 "only kind of sink (%s)",
                 p->name, a->text);
        return -ENOTSUP;
    }
    if (pl->mode == PL_SERVE && p->source->kind != ADDR_FILE) {
        log_errx("pipeline %s: a listen sink serves a file source; "
                 "%s is not one",
                 p->name, p->source->text);
        return -ENOTSUP;
    }
    return 0;
}

static int open_sink(struct pipeline_rt *pl, size_t i)
{
    const struct weir_pipeline *p = pl->p;
    const struct weir_address *a = p->sinks[i];
    int rc;

    if (a->kind == ADDR_FILE) {
        int fd = open(a->path,
                      O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC |
                          (a->append ? 0 : O_TRUNC),
                      0644);

        if (fd < 0) {
            log_err("pipeline %s: %s", p->name, a->path);
            return -errno;
        }
        pl->sink_file_fd[i] = fd;
    } else if (a->kind == ADDR_TCP || a->kind == ADDR_UNIX) {
        rc = sockaddr_resolve(a, &pl->sink_addr[i], &pl->sink_addrlen[i]);
        if (rc) {
            log_errx("pipeline %s: cannot resolve %s: %s", p->name, a->text,
                     strerror(-rc));
            return rc;
        }
    }
    return 0;
}

int pipeline_prepare(struct run *r, struct pipeline_rt *pl,
                     struct pipeline_rt *old)
{
    const struct weir_pipeline *p = pl->p;
    size_t n = p->nsinks;
    int rc;

    pl->run = r;
    pl->mode = pipeline_mode(p);
    pl->sink_addr = calloc(n, sizeof(*pl->sink_addr));
    pl->sink_addrlen = calloc(n, sizeof(*pl->sink_addrlen));
    pl->sink_file_fd = calloc(n, sizeof(int));
    pl->ls = calloc(n + 1, sizeof(*pl->ls));
    if (!pl->sink_addr || !pl->sink_addrlen || !pl->sink_file_fd || !pl->ls)
        return -ENOMEM;
    for (size_t i = 0; i < n; i++)
        pl->sink_file_fd[i] = -1;
    for (size_t i = 0; i < n; i++) {
        const struct weir_address *a = p->sinks[i];

        rc = check_sink(pl, a);
        if (rc)
            return rc;
        if (addr_kind_listens(a->kind)) {
            pl->ls[pl->nls++] =
                (struct listener){.pl = pl, .addr = a, .fd = -1};
            continue;
        }
        rc = open_sink(pl, i);
        if (rc)
            return rc;
    }
    if (pl->mode == PL_ACCEPT)
        pl->ls[pl->nls++] =
            (struct listener){.pl = pl, .addr = p->source, .fd = -1};
    for (unsigned j = 0; j < pl->nls; j++) {
        struct listener *l = &pl->ls[j];

        l->from = old_listener(old, l->addr);
        if (l->from)
            continue;
        rc = listener_open(l);
        if (rc) {
            log_errx("pipeline %s: cannot listen on %s: %s", p->name,
                     l->addr->text, strerror(-rc));
            return rc;
        }
    }
    return 0;
}

void pipeline_start(struct pipeline_rt *pl)
{
    struct run *r = pl->run;

    for (unsigned j = 0; j < pl->nls; j++) {
        struct listener *l = &pl->ls[j];

        if (l->from) {
            listener_take_over(l, l->from);
            l->from = NULL;
        }
        listener_arm(l);
    }
    if (pl->mode == PL_ONCE) {
        struct stream *s = stream_new(pl, -1, -1, NULL);

        if (!s) {
            log_errx("pipeline %s: out of memory", pl->p->name);
            r->failures++;
            return;
        }
        if (r->conf->oneshot)
            r->one = s;
        stream_start(s);
    }
    if (pl->mode == PL_BROADCAST && broadcast_start(pl) != 0) {
        log_errx("pipeline %s: out of memory", pl->p->name);
        r->failures++;
    }
}

static void drain_expired(struct weir_op *op, int res, uint32_t flags)
{
    struct pipeline_rt *pl =
        (struct pipeline_rt *)(void *)((char *)op -
                                       offsetof(struct pipeline_rt, drain.op));
    struct run *r = pl->run;

    (void)flags;
    if (res != -ECANCELED && pl->clients > 0) {
        unsigned cut = run_cut_streams(r, pl);

        log_warnx("pipeline %s: %u stream%s still running after the drain "
                  "timeout; closed %u",
                  pl->p->name, pl->clients, pl->clients == 1 ? "" : "s", cut);
    }
    pipeline_reap_later(r);
}

void pipeline_drain(struct pipeline_rt *pl)
{
    struct run *r = pl->run;

    pl->draining = true;
    for (unsigned j = 0; j < pl->nls; j++)
        listener_close(&pl->ls[j]);
    for (struct stream *s = r->live; s; s = s->next)
        if (s->pl == pl)
            stream_stop(s);
    broadcast_stop(pl);
    if (pl->clients > 0) {
        pl->drain.op.fn = drain_expired;
        weir_loop_timer_start(r->main, &pl->drain,
                              r->conf->daemon.drain_timeout_ms * 1000000ull);
    }
    pipeline_reap_later(r);
}

void pipeline_free(struct pipeline_rt *pl)
{
    for (unsigned j = 0; pl->ls && j < pl->nls; j++) {
        struct listener *l = &pl->ls[j];

        if (l->fd < 0)
            continue;
        close(l->fd);
        if (l->addr->kind == ADDR_UNIX_LISTEN && !l->systemd)
            unlink(l->addr->path);
    }
    for (size_t i = 0; pl->sink_file_fd && i < pl->p->nsinks; i++)
        if (pl->sink_file_fd[i] >= 0)
            close(pl->sink_file_fd[i]);
    free(pl->sink_addr);
    free(pl->sink_addrlen);
    free(pl->sink_file_fd);
    free(pl->ls);
    broadcast_free(pl);
    conf_ref_put(pl->cref);
    free(pl);
}

/* Whether nothing of a draining pipeline is left in flight: no stream, no
 * accept, no timer. */
static bool drained(struct pipeline_rt *pl)
{
    if (pl->clients > 0)
        return false;
    if (pl->drain.op.pending) {
        weir_loop_timer_stop(pl->run->main, &pl->drain);
        return false; /* its -ECANCELED comes back here */
    }
    for (unsigned j = 0; j < pl->nls; j++)
        if (pl->ls[j].fd >= 0 || pl->ls[j].op.pending)
            return false;
    return true;
}

static void reap(struct weir_reap *rp)
{
    struct run *r =
        (struct run *)(void *)((char *)rp - offsetof(struct run, reap));
    struct pipeline_rt **pp = &r->pls;

    r->reap_queued = false;
    while (*pp) {
        struct pipeline_rt *pl = *pp;

        if (pl->draining && drained(pl)) {
            *pp = pl->next;
            log_debug("pipeline %s: drained", pl->p->name);
            pipeline_free(pl);
        } else {
            pp = &pl->next;
        }
    }
}

/* Deferred to the end of the loop's batch: a completion later in the same
 * batch may still name a listener of the pipeline. */
void pipeline_reap_later(struct run *r)
{
    if (r->reap_queued || r->stopping)
        return;
    r->reap_queued = true;
    r->reap.fn = reap;
    weir_loop_defer(r->main, &r->reap);
}

unsigned pipeline_count(const struct run *r)
{
    unsigned n = 0;

    for (const struct pipeline_rt *pl = r->pls; pl; pl = pl->next)
        n += !pl->draining;
    return n;
}
