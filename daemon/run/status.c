/*
 * status.c - what systemd hears while weir runs: a STATUS= line for
 * `systemctl status`, renewed every few seconds (pipelines, live streams,
 * bytes/s since the last one; sinks that are down first, with how long),
 * and WATCHDOG=1 at half of WATCHDOG_USEC.
 * Both timers run on the main loop, so a stuck main loop stops the
 * watchdog pings, which is what the watchdog is for. Without
 * NOTIFY_SOCKET no timer is started at all.
 */
#include <errno.h>
#include <string.h>

#include "run/run_impl.h"
#include "sys/clock.h"
#include "sys/notify.h"

#define STATUS_NS (2ull * 1000 * 1000 * 1000)

static uint64_t bytes_total(const struct run *r)
{
    const struct weir_list *pos;
    uint64_t b = r->bytes_done;

    for (pos = r->pls.next; pos != &r->pls; pos = pos->next)
        b += pipeline_bytes_live(
            weir_list_entry(pos, const struct pipeline, link));
    return b;
}

/* Sinks that are not connected, the first of them named: what an
 * operator looking at `systemctl status` wants to see before the rest. */
struct down {
    unsigned n;
    const char *pipeline, *sink;
    enum sink_state state;
};

static void down_scan(void *arg, const struct stream *s)
{
    struct down *d = arg;
    const struct stream_spec *sp = stream_spec(s);

    for (unsigned i = 0; i < sp->nsinks; i++) {
        /* Relaxed: a statistic, written by the sink's worker. */
        enum sink_state st = (enum sink_state)atomic_load_explicit(
            &stream_sink_live(s, i)->state, memory_order_relaxed);

        if (st == SINK_UP)
            continue;
        if (d->n++ == 0) {
            d->pipeline = sp->p->name;
            d->sink = sp->p->sinks[i]->label;
            d->state = st;
        }
    }
}

static void down_line(const struct run *r, char *buf, size_t len)
{
    const struct weir_list *pos;
    struct down d = {0};
    const char *state;
    double down_s;

    buf[0] = '\0';
    for (pos = r->pls.next; pos != &r->pls; pos = pos->next)
        pipeline_each_stream(weir_list_entry(pos, const struct pipeline, link),
                             down_scan, &d);
    if (d.n == 0)
        return;
    down_s = board_down_seconds(r, d.pipeline, d.sink);
    state = d.state == SINK_RETRYING ? "retrying"
            : d.state == SINK_CUT    ? "cut loose (on_full=disconnect)"
                                     : "connecting";
    if (d.n == 1)
        snprintf(buf, len, "1 sink %s: %s -> %s, down %.0f s; ", state,
                 d.pipeline, d.sink, down_s);
    else
        snprintf(buf, len, "%u sinks down, first %s: %s -> %s, down %.0f s; ",
                 d.n, state, d.pipeline, d.sink, down_s);
}

static int status_send(struct run *r)
{
    char down[256];
    uint64_t b = bytes_total(r);
    int64_t now = clock_now_ns();
    double secs = (double)(now - r->status_ns) / 1e9;
    double rate = secs > 0 && b >= r->status_bytes
                      ? (double)(b - r->status_bytes) / secs
                      : 0;
    unsigned npl = run_pipelines(r), nlive = run_streams(r);

    r->status_bytes = b;
    r->status_ns = now;
    down_line(r, down, sizeof(down));
    return notify_status(
        "%s%s%u pipeline%s, %u live stream%s, %.1f MB/s, on %s",
        r->stopping ? "stopping: " : "", down, npl, npl == 1 ? "" : "s", nlive,
        nlive == 1 ? "" : "s", rate / 1e6,
        weir_engine_name(weir_loop_engine(r->main)));
}

static void status_tick(struct weir_op *op, int res, uint32_t flags)
{
    struct run *r = weir_container_of(op, struct run, status.op);

    (void)flags;
    if (res == -ECANCELED || r->finished)
        return;
    status_send(r);
    weir_loop_timer_start(r->main, &r->status, STATUS_NS);
}

static void watchdog_tick(struct weir_op *op, int res, uint32_t flags)
{
    struct run *r = weir_container_of(op, struct run, watchdog.op);

    (void)flags;
    if (res == -ECANCELED || r->finished)
        return;
    notify_watchdog();
    weir_loop_timer_start(r->main, &r->watchdog, r->watchdog_ns);
}

void status_update(struct run *r)
{
    /* Only while the timer runs: under systemd, and not yet exiting. */
    if (r->status.op.pending)
        status_send(r);
}

void status_start(struct run *r)
{
    int rc;

    r->status_ns = clock_now_ns();
    rc = status_send(r);
    if (rc == 0)
        return; /* no NOTIFY_SOCKET */
    if (rc < 0)
        log_debug("sd_notify: %s", strerror(-rc));
    r->status.op.fn = status_tick;
    weir_loop_timer_start(r->main, &r->status, STATUS_NS);
    r->watchdog_ns = notify_watchdog_usec() * 1000;
    if (r->watchdog_ns == 0)
        return;
    log_debug("watchdog: a ping every %llu ms",
              (unsigned long long)(r->watchdog_ns / 1000000));
    notify_watchdog();
    r->watchdog.op.fn = watchdog_tick;
    weir_loop_timer_start(r->main, &r->watchdog, r->watchdog_ns);
}
