/*
 * series.c - the numbers /metrics serves, in the Prometheus text
 * exposition format (version 0.0.4).
 *
 * A counter is what the streams that ended added up (kept here by
 * pipeline name and sink, across reloads) plus what the live streams'
 * relaxed counters say at the scrape. Both run on the main thread: a
 * stream's numbers move into the totals in the same step that marks it
 * ended (done_seen), and the scan skips ended streams, so a counter never
 * goes back. The workers are never asked anything: reading costs them
 * nothing.
 */
#include <dirent.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "run/run_impl.h"
#include "run/series.h"
#include "run/text.h"
#include "weir/worker.h"

static const char *const err_kind_name[ERR_KINDS] = {
    "source",
    "sink",
    "client",
    "transform",
};

static const char *const sink_state_name[SINK_STATES] = {
    "up",
    "connecting",
    "retrying",
    "cut",
};

struct series *series_new(void)
{
    return calloc(1, sizeof(struct series));
}

static void pls_free(struct pl_num *v, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        for (size_t j = 0; j < v[i].nsinks; j++)
            free(v[i].sinks[j].name);
        free(v[i].sinks);
        for (size_t j = 0; j < v[i].nxfs; j++)
            free(v[i].xfs[j].spec);
        free(v[i].xfs);
        free(v[i].name);
    }
    free(v);
}

void series_free(struct series *t)
{
    if (!t)
        return;
    pls_free(t->pls, t->npls);
    free(t);
}

/* The entry for name, made if missing; NULL when out of memory. */
static struct pl_num *pl_of(struct series *t, const char *name)
{
    struct pl_num *v;

    for (size_t i = 0; i < t->npls; i++)
        if (strcmp(t->pls[i].name, name) == 0)
            return &t->pls[i];
    v = realloc(t->pls, (t->npls + 1) * sizeof(*v));
    if (!v)
        return NULL;
    t->pls = v;
    v = &t->pls[t->npls];
    *v = (struct pl_num){.name = strdup(name)};
    if (!v->name)
        return NULL;
    t->npls++;
    return v;
}

static struct sink_num *sink_of(struct pl_num *pn, const char *name)
{
    struct sink_num *v;

    for (size_t i = 0; i < pn->nsinks; i++)
        if (strcmp(pn->sinks[i].name, name) == 0)
            return &pn->sinks[i];
    v = realloc(pn->sinks, (pn->nsinks + 1) * sizeof(*v));
    if (!v)
        return NULL;
    pn->sinks = v;
    v = &pn->sinks[pn->nsinks];
    *v = (struct sink_num){.name = strdup(name)};
    if (!v->name)
        return NULL;
    pn->nsinks++;
    return v;
}

static struct xf_num *xf_of(struct pl_num *pn, unsigned pos, const char *spec)
{
    struct xf_num *v;

    for (size_t i = 0; i < pn->nxfs; i++)
        if (pn->xfs[i].pos == pos && strcmp(pn->xfs[i].spec, spec) == 0)
            return &pn->xfs[i];
    v = realloc(pn->xfs, (pn->nxfs + 1) * sizeof(*v));
    if (!v)
        return NULL;
    pn->xfs = v;
    v = &pn->xfs[pn->nxfs];
    *v = (struct xf_num){.pos = pos, .spec = strdup(spec)};
    if (!v->spec)
        return NULL;
    pn->nxfs++;
    return v;
}

/* A stream's transforms' bytes so far (relaxed: statistics). */
static bool add_xforms(struct pl_num *pn, const struct stream *s)
{
    const struct weir_pipeline *p = stream_spec(s)->p;

    for (size_t k = 0; k < p->ntransforms; k++) {
        struct xf_num *x = xf_of(pn, (unsigned)k + 1, p->transforms[k].spec);
        struct xf_live *xl = stream_xf_live(s, (unsigned)k);

        if (!x)
            return false;
        x->in += atomic_load_explicit(&xl->in, memory_order_relaxed);
        x->out += atomic_load_explicit(&xl->out, memory_order_relaxed);
    }
    return true;
}

/* A failed pipe that is not a cancel (the other side's end). */
static bool failed(int rc)
{
    return rc < 0 && rc != -ECANCELED;
}

/* The splice stage moves a file to its socket without reading it into
 * the stream: what it read is what it sent. Relaxed: a statistic (at the
 * end, the post that brought the end ordered the workers' last adds). */
static uint64_t bytes_read(const struct stream *s)
{
    uint64_t in = stream_bytes_in(s);

    return in == 0 && stream_zero_copy(s) ? stream_sink_out(s, 0) : in;
}

static uint64_t max_u64(uint64_t a, uint64_t b)
{
    return a > b ? a : b;
}

static void files_counters(struct files_num *f, const struct files_num *a)
{
    f->any = f->any || a->any;
    f->truncated += a->truncated;
    f->skipped += a->skipped;
    f->rotations += a->rotations;
    f->lost += a->lost;
}

/* x among the files most behind, kept most first. */
static void top_insert(struct files_num *f, const struct stream_fs_file *x)
{
    unsigned k;

    if (f->ntop == STREAM_FS_TOP &&
        f->top[STREAM_FS_TOP - 1].behind >= x->behind)
        return;
    k = f->ntop < STREAM_FS_TOP ? f->ntop++ : STREAM_FS_TOP - 1;
    for (; k > 0 && f->top[k - 1].behind < x->behind; k--)
        f->top[k] = f->top[k - 1];
    f->top[k] = *x;
}

/* The stream's view as files_num's: counters, and with `live` the
 * gauges and its files most behind merged in, most first. */
static void files_add(struct files_num *f, const struct stream *s, bool live)
{
    struct stream_fs_view v;
    struct files_num a = {.any = true};

    if (!stream_fs_view(s, &v))
        return;
    a.truncated = v.truncated;
    a.skipped = v.skipped;
    a.rotations = v.rotations;
    a.lost = v.lost;
    files_counters(f, &a);
    if (!live)
        return;
    f->watched += v.watched;
    f->open += v.open;
    f->behind += v.behind;
    f->unread += v.unread;
    for (unsigned i = 0; i < v.ntop; i++)
        top_insert(f, &v.top[i]);
}

void series_stream_ended(struct series *t, const struct stream *s)
{
    const struct stream_spec *sp = stream_spec(s);
    const struct weir_pipeline *p = sp->p;
    struct pl_num *pn = pl_of(t, p->name);

    if (!pn)
        return;
    pn->streams++;
    pn->read += bytes_read(s);
    (void)add_xforms(pn, s);
    files_add(&pn->files, s, false);
    if (p->source->kind == ADDR_JETSTREAM)
        jss_num_add(&pn->js_source, stream_src_js(s), false);
    if (failed(stream_src_rc(s)))
        pn->errors[stream_peer(s)[0] && !sp->client_sink ? ERR_CLIENT
                                                         : ERR_SOURCE]++;
    if (failed(stream_xf_err(s)))
        pn->errors[ERR_TRANSFORM]++;
    for (unsigned i = 0; i < sp->nsinks; i++) {
        const struct sink_stats *st = stream_sink_stats(s, i);
        struct sink_live *sl = stream_sink_live(s, i);
        struct sink_num *sn = sink_of(pn, p->sinks[i]->label);
        uint64_t bytes = stream_sink_bytes(s, i);
        uint64_t dropped;

        if (failed(stream_sink_rc(s, i)))
            pn->errors[sp->client_sink && i == 0 ? ERR_CLIENT : ERR_SINK]++;
        if (!sn)
            continue;
        sn->delivered += stream_sink_out(s, i);
        /* As the closing line counts them (report.c); never less than a
         * scrape saw while it ran. */
        dropped = st->disconnected && st->produced > bytes
                      ? st->produced - bytes
                      : st->dropped;
        sn->dropped += max_u64(
            dropped, atomic_load_explicit(&sl->dropped, memory_order_relaxed));
        sn->blocked_ns +=
            max_u64(st->blocked_ns, atomic_load_explicit(&sl->blocked_ns,
                                                         memory_order_relaxed));
        sn->reconnects +=
            atomic_load_explicit(&sl->reconnects, memory_order_relaxed);
        if (p->sinks[i]->kind == ADDR_HTTP)
            http_num_add(&sn->http, &sl->http, false);
        if (p->sinks[i]->kind == ADDR_KAFKA)
            kafka_num_add(&sn->kafka, &sl->kafka, false);
        if (p->sinks[i]->kind == ADDR_JETSTREAM)
            js_num_add(&sn->jetstream, &sl->jetstream, false);
    }
}

void series_pipeline_gone(struct series *t, const struct pipeline *pl)
{
    struct pl_num *pn = pl_of(t, pl->p->name);

    if (!pn)
        return;
    pn->accepted += pl->clients.accepted;
    pn->refused += pl->clients.refused;
    if (pl->spec.http)
        httpd_num_add(&pn->httpd, &pl->spec.http->counts);
}

/* A scrape's numbers: the totals, then the live pipelines on top. */

static bool snap_add(struct series *snap, const struct series *t)
{
    for (size_t i = 0; i < t->npls; i++) {
        const struct pl_num *a = &t->pls[i];
        struct pl_num *b = pl_of(snap, a->name);

        if (!b)
            return false;
        b->read += a->read;
        b->streams += a->streams;
        b->accepted += a->accepted;
        b->refused += a->refused;
        for (int k = 0; k < ERR_KINDS; k++)
            b->errors[k] += a->errors[k];
        files_counters(&b->files, &a->files);
        httpd_num_merge(&b->httpd, &a->httpd);
        jss_num_merge(&b->js_source, &a->js_source);
        for (size_t j = 0; j < a->nsinks; j++) {
            struct sink_num *sn = sink_of(b, a->sinks[j].name);

            if (!sn)
                return false;
            sn->delivered += a->sinks[j].delivered;
            sn->dropped += a->sinks[j].dropped;
            sn->blocked_ns += a->sinks[j].blocked_ns;
            sn->reconnects += a->sinks[j].reconnects;
            http_num_merge(&sn->http, &a->sinks[j].http);
            kafka_num_merge(&sn->kafka, &a->sinks[j].kafka);
            js_num_merge(&sn->jetstream, &a->sinks[j].jetstream);
        }
        for (size_t j = 0; j < a->nxfs; j++) {
            struct xf_num *x = xf_of(b, a->xfs[j].pos, a->xfs[j].spec);

            if (!x)
                return false;
            x->in += a->xfs[j].in;
            x->out += a->xfs[j].out;
        }
    }
    return true;
}

struct live_scan {
    struct pl_num *pn;
    bool oom;
};

static void live_stream(void *arg, const struct stream *s)
{
    struct live_scan *ls = arg;
    const struct weir_pipeline *p = stream_spec(s)->p;

    if (stream_done(s))
        return; /* already in the totals */
    ls->pn->active++;
    ls->pn->streams++;
    ls->pn->read += bytes_read(s);
    files_add(&ls->pn->files, s, true);
    if (p->source->kind == ADDR_JETSTREAM)
        jss_num_add(&ls->pn->js_source, stream_src_js(s), true);
    if (!add_xforms(ls->pn, s)) {
        ls->oom = true;
        return;
    }
    for (unsigned i = 0; i < stream_spec(s)->nsinks; i++) {
        struct sink_num *sn = sink_of(ls->pn, p->sinks[i]->label);
        struct sink_live *sl = stream_sink_live(s, i);

        if (!sn) {
            ls->oom = true;
            return;
        }
        uint32_t st = atomic_load_explicit(&sl->state, memory_order_relaxed);

        sn->delivered += stream_sink_out(s, i);
        sn->dropped += atomic_load_explicit(&sl->dropped, memory_order_relaxed);
        sn->blocked_ns +=
            atomic_load_explicit(&sl->blocked_ns, memory_order_relaxed);
        sn->reconnects +=
            atomic_load_explicit(&sl->reconnects, memory_order_relaxed);
        sn->queued += atomic_load_explicit(&sl->queued, memory_order_relaxed);
        if (p->sinks[i]->kind == ADDR_HTTP)
            http_num_add(&sn->http, &sl->http, true);
        if (p->sinks[i]->kind == ADDR_KAFKA)
            kafka_num_add(&sn->kafka, &sl->kafka, true);
        if (p->sinks[i]->kind == ADDR_JETSTREAM)
            js_num_add(&sn->jetstream, &sl->jetstream, true);
        if (st < SINK_STATES)
            sn->in_state[st]++;
    }
}

static bool snap_live(struct series *snap, const struct run *r)
{
    const struct weir_list *pos;

    for (pos = r->pls.next; pos != &r->pls; pos = pos->next) {
        const struct pipeline *pl =
            weir_list_entry(pos, const struct pipeline, link);
        struct live_scan ls = {.pn = pl_of(snap, pl->p->name)};

        if (!ls.pn)
            return false;
        /* Its sinks appear before any stream has sent a byte. */
        for (size_t i = 0; i < pl->p->nsinks; i++) {
            struct sink_num *sn = sink_of(ls.pn, pl->p->sinks[i]->label);

            if (!sn)
                return false;
            if (stream_sink_hwm(pl->p, (unsigned)i) > sn->hwm)
                sn->hwm = stream_sink_hwm(pl->p, (unsigned)i);
        }
        /* A glob pipeline shows its files before the first sample. */
        if (pl->p->source->kind == ADDR_FILE_SET)
            ls.pn->files.any = true;
        ls.pn->accepted += pl->clients.accepted;
        ls.pn->refused += pl->clients.refused;
        ls.pn->clients += pipeline_clients(pl);
        if (pl->spec.http)
            httpd_num_add(&ls.pn->httpd, &pl->spec.http->counts);
        pipeline_each_stream(pl, live_stream, &ls);
        if (ls.oom)
            return false;
    }
    return true;
}

/* A label value with \, " and newline escaped. */
static void put_label(struct text *t, const char *v)
{
    text_prom_label(t, v);
}

static void family(struct text *t, const char *name, const char *type,
                   const char *help)
{
    text_put(t, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

static void sample_pl(struct text *t, const char *name, const char *pl,
                      const char *sink, uint64_t v)
{
    text_put(t, "%s{pipeline=\"", name);
    put_label(t, pl);
    if (sink) {
        text_put(t, "\",sink=\"");
        put_label(t, sink);
    }
    text_put(t, "\"} %llu\n", (unsigned long long)v);
}

enum pl_field {
    F_READ,
    F_STREAMS,
    F_ACTIVE,
    F_CLIENTS,
    F_ACCEPTED,
    F_REFUSED,
};

static uint64_t pl_field(const struct pl_num *pn, enum pl_field f)
{
    switch (f) {
    case F_READ:
        return pn->read;
    case F_STREAMS:
        return pn->streams;
    case F_ACTIVE:
        return pn->active;
    case F_CLIENTS:
        return pn->clients;
    case F_ACCEPTED:
        return pn->accepted;
    default:
        return pn->refused;
    }
}

static const struct {
    const char *name, *type, *help;
    enum pl_field f;
} pl_families[] = {
    {"weir_bytes_read_total", "counter", "Bytes the pipeline's sources read.",
     F_READ},
    {"weir_streams_total", "counter",
     "Streams the pipeline started (one per client in the modes that "
     "serve clients).",
     F_STREAMS},
    {"weir_streams_active", "gauge", "Streams of the pipeline running now.",
     F_ACTIVE},
    {"weir_connected_clients", "gauge",
     "Clients connected to the pipeline's listen addresses now.", F_CLIENTS},
    {"weir_clients_accepted_total", "counter",
     "Connections the pipeline's listeners took in.", F_ACCEPTED},
    {"weir_clients_refused_total", "counter",
     "Connections turned away (max_clients, out of memory, a broadcast "
     "whose source has ended).",
     F_REFUSED},
};

static void put_pipelines(struct text *t, const struct series *snap)
{
    for (size_t k = 0; k < sizeof(pl_families) / sizeof(pl_families[0]); k++) {
        family(t, pl_families[k].name, pl_families[k].type,
               pl_families[k].help);
        for (size_t i = 0; i < snap->npls; i++)
            sample_pl(t, pl_families[k].name, snap->pls[i].name, NULL,
                      pl_field(&snap->pls[i], pl_families[k].f));
    }
    family(t, "weir_errors_total", "counter",
           "Pipes of the pipeline's streams that failed, by the side that "
           "failed.");
    for (size_t i = 0; i < snap->npls; i++)
        for (int e = 0; e < ERR_KINDS; e++) {
            text_put(t, "weir_errors_total{pipeline=\"");
            put_label(t, snap->pls[i].name);
            text_put(t, "\",kind=\"%s\"} %llu\n", err_kind_name[e],
                     (unsigned long long)snap->pls[i].errors[e]);
        }
}

/* A glob source's figures, by pipeline: not by file, whose names would
 * make a series each (and thousands of series of a directory). */
enum files_field {
    FF_WATCHED,
    FF_OPEN,
    FF_BEHIND,
    FF_TRUNCATED,
    FF_SKIPPED,
    FF_ROTATIONS,
    FF_LOST,
};

static uint64_t files_field(const struct files_num *f, enum files_field k)
{
    switch (k) {
    case FF_WATCHED:
        return f->watched;
    case FF_OPEN:
        return f->open;
    case FF_BEHIND:
        return f->behind;
    case FF_TRUNCATED:
        return f->truncated;
    case FF_SKIPPED:
        return f->skipped;
    case FF_ROTATIONS:
        return f->rotations;
    default:
        return f->lost;
    }
}

static const struct {
    const char *name, *type, *help;
    enum files_field f;
} files_families[] = {
    {"weir_files_watched", "gauge",
     "Files the pipeline's glob source knows now (also those rotated and "
     "still being finished).",
     FF_WATCHED},
    {"weir_files_open", "gauge",
     "Descriptors the pipeline's glob source holds now (at most "
     "max_open_files).",
     FF_OPEN},
    {"weir_file_bytes_behind", "gauge",
     "Bytes of the glob source's files read but not yet acknowledged by "
     "every sink.",
     FF_BEHIND},
    {"weir_lines_truncated_total", "counter",
     "Lines longer than max_record cut to it (on_long=truncate).",
     FF_TRUNCATED},
    {"weir_lines_skipped_total", "counter",
     "Lines longer than max_record dropped (on_long=skip).", FF_SKIPPED},
    {"weir_file_rotations_total", "counter",
     "Renames and truncations of the glob source's files seen.", FF_ROTATIONS},
    {"weir_file_bytes_lost_total", "counter",
     "Bytes of the glob source's files that could not be read (deleted or "
     "truncated before weir read them, with no copy to be found).",
     FF_LOST},
};

static void put_files(struct text *t, const struct series *snap)
{
    for (size_t k = 0; k < sizeof(files_families) / sizeof(files_families[0]);
         k++) {
        family(t, files_families[k].name, files_families[k].type,
               files_families[k].help);
        for (size_t i = 0; i < snap->npls; i++)
            if (snap->pls[i].files.any)
                sample_pl(
                    t, files_families[k].name, snap->pls[i].name, NULL,
                    files_field(&snap->pls[i].files, files_families[k].f));
    }
}

static void put_httpd(struct text *t, const struct series *snap)
{
    const char **names = calloc(snap->npls + 1, sizeof(*names));
    const struct httpd_num **nums = calloc(snap->npls + 1, sizeof(*nums));
    size_t n = 0;

    if (!names || !nums) {
        t->oom = true;
    } else {
        for (size_t i = 0; i < snap->npls; i++)
            if (snap->pls[i].httpd.any) {
                names[n] = snap->pls[i].name;
                nums[n++] = &snap->pls[i].httpd;
            }
        if (n)
            httpd_put(t, names, nums, n);
    }
    free(names);
    free(nums);
}

static void put_sink_states(struct text *t, const struct series *snap)
{
    family(t, "weir_sink_reconnects_total", "counter",
           "Connections the sink made again after losing one.");
    for (size_t i = 0; i < snap->npls; i++)
        for (size_t j = 0; j < snap->pls[i].nsinks; j++)
            sample_pl(t, "weir_sink_reconnects_total", snap->pls[i].name,
                      snap->pls[i].sinks[j].name,
                      snap->pls[i].sinks[j].reconnects);
    family(t, "weir_sink_state", "gauge",
           "Live streams whose sink is up, connecting for the first time, "
           "retrying after losing its connection, or cut loose by "
           "on_full=disconnect.");
    for (size_t i = 0; i < snap->npls; i++)
        for (size_t j = 0; j < snap->pls[i].nsinks; j++)
            for (int k = 0; k < SINK_STATES; k++) {
                text_put(t, "weir_sink_state{pipeline=\"");
                put_label(t, snap->pls[i].name);
                text_put(t, "\",sink=\"");
                put_label(t, snap->pls[i].sinks[j].name);
                text_put(t, "\",state=\"%s\"} %llu\n", sink_state_name[k],
                         (unsigned long long)snap->pls[i].sinks[j].in_state[k]);
            }
}

/* The http sinks' families, each with every http sink's samples. */
static void put_http(struct text *t, const struct series *snap)
{
    bool any = false;

    for (size_t i = 0; i < snap->npls; i++)
        for (size_t j = 0; j < snap->pls[i].nsinks; j++)
            any |= snap->pls[i].sinks[j].http.is_http;
    for (unsigned k = 0; any && k < http_families(); k++) {
        http_family_head(t, k);
        for (size_t i = 0; i < snap->npls; i++)
            for (size_t j = 0; j < snap->pls[i].nsinks; j++)
                http_family_put(t, k, &snap->pls[i].sinks[j].http,
                                snap->pls[i].name, snap->pls[i].sinks[j].name);
    }
}

/* The kafka sinks' families, the same way. */
static void put_kafka(struct text *t, const struct series *snap)
{
    bool any = false;

    for (size_t i = 0; i < snap->npls; i++)
        for (size_t j = 0; j < snap->pls[i].nsinks; j++)
            any |= snap->pls[i].sinks[j].kafka.is_kafka;
    for (unsigned k = 0; any && k < kafka_families(); k++) {
        kafka_family_head(t, k);
        for (size_t i = 0; i < snap->npls; i++)
            for (size_t j = 0; j < snap->pls[i].nsinks; j++)
                kafka_family_put(t, k, &snap->pls[i].sinks[j].kafka,
                                 snap->pls[i].name, snap->pls[i].sinks[j].name);
    }
}

/* The jetstream sinks' families, the same way. */
/* The jetstream sources' families, by pipeline. */
static void put_js_sources(struct text *t, const struct series *snap)
{
    bool any = false;

    for (size_t i = 0; i < snap->npls; i++)
        any |= snap->pls[i].js_source.any;
    for (unsigned k = 0; any && k < jss_families(); k++) {
        jss_family_head(t, k);
        for (size_t i = 0; i < snap->npls; i++)
            jss_family_put(t, k, &snap->pls[i].js_source, snap->pls[i].name);
    }
}

static void put_jetstream(struct text *t, const struct series *snap)
{
    bool any = false;

    for (size_t i = 0; i < snap->npls; i++)
        for (size_t j = 0; j < snap->pls[i].nsinks; j++)
            any |= snap->pls[i].sinks[j].jetstream.is_js;
    for (unsigned k = 0; any && k < js_families(); k++) {
        js_family_head(t, k);
        for (size_t i = 0; i < snap->npls; i++)
            for (size_t j = 0; j < snap->pls[i].nsinks; j++)
                js_family_put(t, k, &snap->pls[i].sinks[j].jetstream,
                              snap->pls[i].name, snap->pls[i].sinks[j].name);
    }
}

static void put_xform(struct text *t, const char *name, const char *pl,
                      const struct xf_num *x, uint64_t v)
{
    text_put(t, "%s{pipeline=\"", name);
    put_label(t, pl);
    text_put(t, "\",transform=\"");
    put_label(t, x->spec);
    text_put(t, "\",position=\"%u\"} %llu\n", x->pos, (unsigned long long)v);
}

static void put_xforms(struct text *t, const struct series *snap)
{
    family(t, "weir_transform_bytes_in_total", "counter",
           "Bytes the transform took in (position 1 is the first of the "
           "chain).");
    for (size_t i = 0; i < snap->npls; i++)
        for (size_t j = 0; j < snap->pls[i].nxfs; j++)
            put_xform(t, "weir_transform_bytes_in_total", snap->pls[i].name,
                      &snap->pls[i].xfs[j], snap->pls[i].xfs[j].in);
    family(t, "weir_transform_bytes_out_total", "counter",
           "Bytes the transform handed on.");
    for (size_t i = 0; i < snap->npls; i++)
        for (size_t j = 0; j < snap->pls[i].nxfs; j++)
            put_xform(t, "weir_transform_bytes_out_total", snap->pls[i].name,
                      &snap->pls[i].xfs[j], snap->pls[i].xfs[j].out);
}

static void put_sink_queues(struct text *t, const struct series *snap)
{
    family(t, "weir_sink_queue_bytes", "gauge",
           "Bytes waiting in the sink's queues (its live streams'), sampled "
           "every 250 ms.");
    for (size_t i = 0; i < snap->npls; i++)
        for (size_t j = 0; j < snap->pls[i].nsinks; j++)
            sample_pl(t, "weir_sink_queue_bytes", snap->pls[i].name,
                      snap->pls[i].sinks[j].name, snap->pls[i].sinks[j].queued);
    family(t, "weir_sink_high_water_mark_bytes", "gauge",
           "The high-water mark of each of the sink's queues.");
    for (size_t i = 0; i < snap->npls; i++)
        for (size_t j = 0; j < snap->pls[i].nsinks; j++)
            if (snap->pls[i].sinks[j].hwm)
                sample_pl(t, "weir_sink_high_water_mark_bytes",
                          snap->pls[i].name, snap->pls[i].sinks[j].name,
                          snap->pls[i].sinks[j].hwm);
}

static void put_sinks(struct text *t, const struct series *snap)
{
    family(t, "weir_bytes_delivered_total", "counter",
           "Bytes the sink delivered (written to its file or socket).");
    for (size_t i = 0; i < snap->npls; i++)
        for (size_t j = 0; j < snap->pls[i].nsinks; j++)
            sample_pl(t, "weir_bytes_delivered_total", snap->pls[i].name,
                      snap->pls[i].sinks[j].name,
                      snap->pls[i].sinks[j].delivered);
    family(t, "weir_bytes_dropped_total", "counter",
           "Bytes the sink's on_full policy dropped, or lost when it was "
           "disconnected.");
    for (size_t i = 0; i < snap->npls; i++)
        for (size_t j = 0; j < snap->pls[i].nsinks; j++)
            sample_pl(t, "weir_bytes_dropped_total", snap->pls[i].name,
                      snap->pls[i].sinks[j].name,
                      snap->pls[i].sinks[j].dropped);
    family(t, "weir_blocked_seconds_total", "counter",
           "Seconds the sink's full queue held its source back "
           "(on_full=block).");
    for (size_t i = 0; i < snap->npls; i++)
        for (size_t j = 0; j < snap->pls[i].nsinks; j++) {
            text_put(t, "weir_blocked_seconds_total{pipeline=\"");
            put_label(t, snap->pls[i].name);
            text_put(t, "\",sink=\"");
            put_label(t, snap->pls[i].sinks[j].name);
            text_put(t, "\"} %.3f\n",
                     (double)snap->pls[i].sinks[j].blocked_ns / 1e9);
        }
}

static unsigned long long resident_bytes(void)
{
    unsigned long long size = 0, resident = 0;
    FILE *f = fopen("/proc/self/statm", "re");

    if (!f)
        return 0;
    if (fscanf(f, "%llu %llu", &size, &resident) != 2)
        resident = 0;
    fclose(f);
    return resident * (unsigned long long)sysconf(_SC_PAGESIZE);
}

static unsigned open_fds(void)
{
    DIR *d = opendir("/proc/self/fd");
    struct dirent *e;
    unsigned n = 0;

    if (!d)
        return 0;
    while ((e = readdir(d)) != NULL)
        n += e->d_name[0] != '.';
    closedir(d);
    return n - 1; /* the directory's own */
}

static void put_process(struct text *t, const struct run *r)
{
    struct weir_pool_stats st;
    unsigned n = r->cx.nworkers;

    family(t, "weir_process_resident_memory_bytes", "gauge",
           "Resident memory of the weir process.");
    text_put(t, "weir_process_resident_memory_bytes %llu\n", resident_bytes());
    family(t, "weir_process_open_fds", "gauge",
           "File descriptors the weir process holds open.");
    text_put(t, "weir_process_open_fds %u\n", open_fds());
    family(t, "weir_workers", "gauge", "Worker threads.");
    text_put(t, "weir_workers %u\n", n);
    family(t, "weir_worker_loop_turns_total", "counter",
           "Turns of the worker's event loop (one per batch of "
           "completions).");
    for (unsigned i = 0; i < n; i++)
        text_put(t, "weir_worker_loop_turns_total{worker=\"%u\"} %llu\n", i,
                 (unsigned long long)weir_loop_turns(
                     weir_workers_loop(r->cx.workers, i)));
    family(t, "weir_worker_busy_seconds_total", "counter",
           "CPU time the worker's thread used (user and system).");
    for (unsigned i = 0; i < n; i++) {
        uint64_t ns = 0;

        (void)weir_workers_cpu_ns(r->cx.workers, i, &ns);
        text_put(t, "weir_worker_busy_seconds_total{worker=\"%u\"} %.6f\n", i,
                 (double)ns / 1e9);
    }
    family(t, "weir_pool_buffers", "gauge",
           "Buffers of the worker's pool (address space reserved).");
    for (unsigned i = 0; i < n; i++) {
        weir_pool_stats(weir_workers_pool(r->cx.workers, i), &st);
        text_put(t, "weir_pool_buffers{worker=\"%u\"} %u\n", i, st.allocated);
    }
    family(t, "weir_pool_buffers_in_use", "gauge",
           "Buffers of the worker's pool taken now.");
    for (unsigned i = 0; i < n; i++) {
        weir_pool_stats(weir_workers_pool(r->cx.workers, i), &st);
        text_put(t, "weir_pool_buffers_in_use{worker=\"%u\"} %u\n", i,
                 st.in_use);
    }
    family(t, "weir_pool_buffers_peak", "gauge",
           "The most buffers of the worker's pool taken at once.");
    for (unsigned i = 0; i < n; i++) {
        weir_pool_stats(weir_workers_pool(r->cx.workers, i), &st);
        text_put(t, "weir_pool_buffers_peak{worker=\"%u\"} %u\n", i, st.peak);
    }
}

struct series *series_snapshot(const struct run *r)
{
    struct series *snap = series_new();

    if (snap && (!snap_add(snap, r->series) || !snap_live(snap, r))) {
        series_free(snap);
        return NULL;
    }
    return snap;
}

char *series_render(const struct run *r, size_t *len)
{
    struct series *sp = series_snapshot(r);
    struct series snap;
    struct text t = {0};

    if (!sp)
        return NULL;
    snap = *sp;
    free(sp);
    family(&t, "weir_build_info", "gauge",
           "The running weir: its version and I/O engine.");
    text_put(&t, "weir_build_info{version=\"%s\",engine=\"%s\"} 1\n",
             WEIR_VERSION, weir_engine_name(weir_loop_engine(r->main)));
    family(&t, "weir_ready", "gauge",
           "1 once every pipeline started, 0 before and while stopping.");
    text_put(&t, "weir_ready %d\n", run_ready(r));
    family(&t, "weir_pipelines", "gauge", "Pipelines running (not draining).");
    text_put(&t, "weir_pipelines %u\n", run_pipelines(r));
    family(&t, "weir_checkpoint_write_failures_total", "counter",
           "Checkpoint files of followed files that could not be written.");
    text_put(&t, "weir_checkpoint_write_failures_total %llu\n",
             (unsigned long long)ckpt_write_failures());
    put_pipelines(&t, &snap);
    put_sinks(&t, &snap);
    put_sink_states(&t, &snap);
    put_http(&t, &snap);
    put_kafka(&t, &snap);
    put_jetstream(&t, &snap);
    put_sink_queues(&t, &snap);
    put_xforms(&t, &snap);
    put_files(&t, &snap);
    put_js_sources(&t, &snap);
    put_httpd(&t, &snap);
    put_process(&t, r);
    pls_free(snap.pls, snap.npls);
    if (t.oom) {
        free(t.p);
        return NULL;
    }
    *len = t.len;
    return t.p;
}
