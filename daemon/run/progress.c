/*
 * progress.c - `weir pipe`'s progress line on a terminal and its summary
 * line at the end, both on stderr.
 */
#include <errno.h>
#include <stdio.h>
#include <unistd.h>

#include "run/run_impl.h"
#include "sys/clock.h"

#define PROGRESS_NS (250ull * 1000 * 1000)

static double seconds_since(const struct run *r)
{
    return (double)(clock_now_ns() - r->t_start_ns) / 1e9;
}

static void human(uint64_t b, char *buf, size_t len)
{
    static const char *unit[] = {"B", "KiB", "MiB", "GiB", "TiB"};
    double v = (double)b;
    unsigned u = 0;

    while (v >= 1024 && u < 4) {
        v /= 1024;
        u++;
    }
    snprintf(buf, len, u ? "%.1f %s" : "%.0f %s", v, unit[u]);
}

static uint64_t bytes_now(const struct run *r)
{
    return r->one ? stream_sink_out(r->one, 0) : 0;
}

static void progress_tick(struct weir_op *op, int res, uint32_t flags)
{
    struct run *r = weir_container_of(op, struct run, progress.op);
    uint64_t b = bytes_now(r);
    double t = seconds_since(r);
    double rate = t > 0 ? (double)b / t : 0;
    char hb[32], line[160];
    int n;

    (void)flags;
    if (res == -ECANCELED || r->finished)
        return;
    human(b, hb, sizeof(hb));
    n = snprintf(line, sizeof(line), "\r%s  %.1f MB/s", hb, rate / 1e6);
    if (r->total && n > 0 && (size_t)n < sizeof(line)) {
        double pct = 100.0 * (double)b / (double)r->total;
        double eta = rate > 0 ? (double)(r->total - b) / rate : 0;

        snprintf(line + n, sizeof(line) - (size_t)n, "  %.0f%%  ETA %u:%02u",
                 pct, (unsigned)eta / 60, (unsigned)eta % 60);
    }
    fprintf(stderr, "%s\033[K", line);
    fflush(stderr);
    weir_loop_timer_start(r->main, &r->progress, PROGRESS_NS);
}

void progress_start(struct run *r)
{
    r->tty = isatty(2);
    if (!r->tty)
        return;
    r->progress.op.fn = progress_tick;
    weir_loop_timer_start(r->main, &r->progress, PROGRESS_NS);
}

void progress_summary(struct run *r)
{
    double t = seconds_since(r);
    uint64_t b = bytes_now(r);

    if (r->tty) {
        if (r->progress.op.pending)
            weir_loop_timer_stop(r->main, &r->progress);
        fprintf(stderr, "\r\033[K");
    }
    fprintf(stderr, "weir pipe: %llu bytes in %.3f s, %.1f MB/s\n",
            (unsigned long long)b, t, t > 0 ? (double)b / t / 1e6 : 0.0);
    /* With transforms the two ends differ (gzip makes 1 GiB of text a few
     * MB): the rate that says how fast the pipeline went is the input's. */
    if (r->one && stream_spec(r->one)->p->ntransforms) {
        /* A statistic, as bytes_now. */
        uint64_t in = stream_bytes_in(r->one);

        fprintf(stderr, "weir pipe: %llu bytes read, %.1f MB/s\n",
                (unsigned long long)in, t > 0 ? (double)in / t / 1e6 : 0.0);
    }
}
