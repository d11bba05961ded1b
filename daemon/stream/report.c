/*
 * report.c - what a stream tells the operator when it ends: the
 * transform that failed (with the input offset of corrupt data) and, per
 * sink, the bytes delivered and dropped and the time it held the source
 * back. The daemon logs them; a run that wants them elsewhere (weir pipe,
 * after its summary line) sets stream_ctx.report_line.
 */
#include "stream/report.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "stream/stream_impl.h"
#include "weir/xform.h"
#include "sys/log.h"

/* "gunzip" fails on gzip input, "unzstd" on zstd input. */
static const char *input_format(const char *xform)
{
    if (strcmp(xform, "gunzip") == 0)
        return "gzip";
    if (strcmp(xform, "unzstd") == 0)
        return "zstd";
    return xform;
}

/* A zstd frame refused for its window. */
static bool window_refused(const struct stream *s, int err)
{
    return err == -EMSGSIZE && s->xf_err == -EMSGSIZE &&
           strcmp(s->xf_name, "unzstd") == 0;
}

const char *stream_error_text(const struct stream *s, int err, char *buf,
                              size_t len)
{
    if (!window_refused(s, err))
        return strerror(-err);
    if (s->xf_off == 0)
        snprintf(buf, len,
                 "zstd frame needs a window larger than %llu MiB, "
                 "the most weir allows",
                 WEIR_UNZSTD_WINDOW_MAX >> 20);
    else
        snprintf(buf, len,
                 "zstd frame needs a %llu MiB window; weir allows "
                 "%llu MiB",
                 (unsigned long long)((s->xf_off + (1 << 20) - 1) >> 20),
                 WEIR_UNZSTD_WINDOW_MAX >> 20);
    return buf;
}

static void report_xform(const struct stream *s)
{
    const char *name = s->sp->p->name;
    char text[128];

    if (s->xf_err == 0 || s->xf_err == -ECANCELED)
        return;
    if (s->xf_err == -EBADMSG)
        log_warnx("pipeline %s: corrupt %s input at byte %llu%s%s%s", name,
                  input_format(s->xf_name), (unsigned long long)s->xf_off,
                  s->peer[0] ? " (client " : "", s->peer,
                  s->peer[0] ? ")" : "");
    else
        log_warnx("pipeline %s: transform %s: %s%s%s%s", name, s->xf_name,
                  stream_error_text(s, s->xf_err, text, sizeof(text)),
                  s->peer[0] ? " (client " : "", s->peer,
                  s->peer[0] ? ")" : "");
}

bool stream_sink_cut(const struct stream *s, unsigned i)
{
    return s->ss[i].disconnected ||
           (s->sp->p->sinks[i]->on_full != ON_FULL_BLOCK &&
            s->sink_rc[i] == -ETIMEDOUT);
}

static void sink_line(const struct stream *s, unsigned i, char *buf, size_t len)
{
    const struct sink_stats *st = &s->ss[i];
    const struct weir_address *a = s->sp->p->sinks[i];
    /* A sink cut loose lost everything it did not deliver. */
    uint64_t dropped = st->disconnected && st->produced > s->sink_bytes[i]
                           ? st->produced - s->sink_bytes[i]
                           : st->dropped;

    snprintf(buf, len,
             "sink %s: %llu bytes delivered, %llu dropped, blocked %.1f s%s",
             s->sp->client_sink && s->peer[0] ? s->peer : a->text,
             (unsigned long long)s->sink_bytes[i], (unsigned long long)dropped,
             (double)st->blocked_ns / 1e9,
             st->disconnected        ? ", disconnected (queue full)"
             : stream_sink_cut(s, i) ? ", cut at its send timeout"
                                     : "");
}

void stream_report(struct stream *s)
{
    void (*emit)(const struct stream *, const char *) = s->cx->report_line;
    const char *name = s->sp->p->name;
    char line[256];

    if (s->quiet)
        return;
    report_xform(s);
    for (unsigned i = 0; i < s->sp->nsinks; i++) {
        sink_line(s, i, line, sizeof(line));
        if (emit)
            emit(s, line);
        else if (stream_sink_cut(s, i))
            log_warnx("pipeline %s: %s", name, line);
        else if (s->peer[0])
            log_debug("pipeline %s: %s", name, line);
        else
            log_info("pipeline %s: %s", name, line);
    }
    if (!s->relay)
        return;
    if (emit) {
        snprintf(line, sizeof(line), "%llu bytes relayed back to the client",
                 (unsigned long long)s->rev_bytes);
        emit(s, line);
    } else {
        log_debug("pipeline %s: client %s: %llu bytes relayed back", name,
                  s->peer, (unsigned long long)s->rev_bytes);
    }
}
