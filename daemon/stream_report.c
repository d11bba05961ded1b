/*
 * stream_report.c - what a stream tells the operator when it ends: the
 * transform that failed (with the input offset of corrupt data) and, per
 * sink, the bytes delivered and dropped and the time it held the source
 * back. The daemon logs them; weir pipe
 * prints the counters after its summary line.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "runtime.h"

/* "gunzip" fails on gzip input, "unzstd" on zstd input. */
static const char *input_format(const char *xform)
{
    if (strcmp(xform, "gunzip") == 0)
        return "gzip";
    if (strcmp(xform, "unzstd") == 0)
        return "zstd";
    return xform;
}

static void report_xform(const struct stream *s)
{
    const char *name = s->pl->p->name;

    if (s->xf_err == 0 || s->xf_err == -ECANCELED)
        return;
    if (s->xf_err == -EBADMSG)
        log_warnx("pipeline %s: corrupt %s input at byte %llu%s%s%s", name,
                  input_format(s->xf_name), (unsigned long long)s->xf_off,
                  s->peer[0] ? " (client " : "", s->peer,
                  s->peer[0] ? ")" : "");
    else
        log_warnx("pipeline %s: transform %s: %s%s%s%s", name, s->xf_name,
                  strerror(-s->xf_err), s->peer[0] ? " (client " : "", s->peer,
                  s->peer[0] ? ")" : "");
}

static void sink_line(const struct stream *s, unsigned i, char *buf, size_t len)
{
    const struct sink_stats *st = &s->ss[i];
    const struct weir_address *a = s->pl->p->sinks[i];
    /* A sink cut loose lost everything it did not deliver. */
    uint64_t dropped = st->disconnected && st->produced > s->sink_bytes[i]
                           ? st->produced - s->sink_bytes[i]
                           : st->dropped;

    snprintf(buf, len,
             "sink %s: %llu bytes delivered, %llu dropped, blocked %.1f s%s",
             s->pl->mode == PL_SERVE && s->peer[0] ? s->peer : a->text,
             (unsigned long long)s->sink_bytes[i], (unsigned long long)dropped,
             (double)st->blocked_ns / 1e9,
             st->disconnected ? ", disconnected (queue full)" : "");
}

void stream_report(struct stream *s)
{
    unsigned n = s->pl->mode == PL_SERVE ? 1 : (unsigned)s->pl->p->nsinks;
    char line[256];

    if (s->quiet)
        return;
    report_xform(s);
    for (unsigned i = 0; i < n; i++) {
        sink_line(s, i, line, sizeof(line));
        if (s->run->conf->oneshot)
            fprintf(stderr, "weir pipe: %s\n", line);
        else if (s->peer[0])
            log_debug("pipeline %s: %s", s->pl->p->name, line);
        else
            log_info("pipeline %s: %s", s->pl->p->name, line);
    }
    if (s->relay && s->run->conf->oneshot)
        fprintf(stderr, "weir pipe: %llu bytes relayed back to the client\n",
                (unsigned long long)s->rev_bytes);
    else if (s->relay)
        log_debug("pipeline %s: client %s: %llu bytes relayed back",
                  s->pl->p->name, s->peer, (unsigned long long)s->rev_bytes);
}
