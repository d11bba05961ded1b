/*
 * board.c - the status board: what `weir status`, `weir top` and SIGUSR1
 * show. One row per sink of each running pipeline, with its state, its
 * bytes and rate, and how full its queues are; a JSON document with the
 * same numbers (schema 1, described in weir(8)).
 *
 * The numbers are series.c's snapshot (the totals of ended streams plus
 * the live ones), so they agree with /metrics. Rates and outage lengths
 * need a past: a timer on the main loop samples every second, keeping
 * each sink's bytes and when it was first seen down. Reading the board
 * costs the workers nothing.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "run/run_impl.h"
#include "run/board_files.h"
#include "run/series.h"
#include "run/text.h"
#include "sys/clock.h"

#define TICK_NS (1000ull * 1000 * 1000)

/* What the sampler remembers of one sink (sink NULL: the pipeline's
 * source). */
struct mark {
    char *pl, *sink;
    uint64_t bytes;
    double rate;        /* bytes/s over the last tick */
    int64_t down_since; /* first tick that saw it down; 0: up */
    bool seen;          /* in the last tick's snapshot */
};

struct board {
    struct run *r;
    struct mark *v;
    size_t n;
    int64_t last_ns;
    struct weir_timer tick;
};

static bool same(const char *a, const char *b)
{
    return (a == NULL && b == NULL) || (a && b && strcmp(a, b) == 0);
}

static struct mark *mark_find(const struct board *b, const char *pl,
                              const char *sink)
{
    for (size_t i = 0; i < b->n; i++)
        if (strcmp(b->v[i].pl, pl) == 0 && same(b->v[i].sink, sink))
            return &b->v[i];
    return NULL;
}

static struct mark *mark_of(struct board *b, const char *pl, const char *sink,
                            uint64_t bytes)
{
    struct mark *m = mark_find(b, pl, sink);

    if (m)
        return m;
    m = realloc(b->v, (b->n + 1) * sizeof(*m));
    if (!m)
        return NULL;
    b->v = m;
    m = &b->v[b->n];
    *m = (struct mark){.pl = strdup(pl), .sink = sink ? strdup(sink) : NULL};
    if (!m->pl || (sink && !m->sink)) {
        free(m->pl);
        free(m->sink);
        return NULL;
    }
    m->bytes = bytes; /* no rate from before it was seen */
    b->n++;
    return m;
}

static void mark_sample(struct mark *m, uint64_t bytes, double secs)
{
    m->rate =
        secs > 0 && bytes >= m->bytes ? (double)(bytes - m->bytes) / secs : 0;
    m->bytes = bytes;
    m->seen = true;
}

static uint64_t down_streams(const struct sink_num *sn)
{
    return sn->in_state[SINK_CONNECTING] + sn->in_state[SINK_RETRYING];
}

static void sample(struct board *b)
{
    struct series *snap = series_snapshot(b->r);
    int64_t now = clock_now_ns();
    double secs = (double)(now - b->last_ns) / 1e9;

    if (!snap)
        return; /* out of memory: the next tick tries again */
    for (size_t i = 0; i < b->n; i++)
        b->v[i].seen = false;
    for (size_t i = 0; i < snap->npls; i++) {
        const struct pl_num *pn = &snap->pls[i];
        struct mark *m = mark_of(b, pn->name, NULL, pn->read);

        if (m)
            mark_sample(m, pn->read, secs);
        for (size_t j = 0; j < pn->nsinks; j++) {
            const struct sink_num *sn = &pn->sinks[j];

            m = mark_of(b, pn->name, sn->name, sn->delivered);
            if (!m)
                continue;
            mark_sample(m, sn->delivered, secs);
            if (down_streams(sn) == 0)
                m->down_since = 0;
            else if (m->down_since == 0)
                m->down_since = now;
        }
    }
    /* What the snapshot no longer has (a pipeline gone) is forgotten. */
    for (size_t i = 0; i < b->n;) {
        if (b->v[i].seen) {
            i++;
            continue;
        }
        free(b->v[i].pl);
        free(b->v[i].sink);
        b->v[i] = b->v[--b->n];
    }
    series_free(snap);
    b->last_ns = now;
}

static void ticked(struct weir_op *op, int res, uint32_t flags)
{
    struct board *b = weir_container_of(op, struct board, tick.op);

    (void)flags;
    if (res == -ECANCELED || b->r->finished)
        return;
    sample(b);
    weir_loop_timer_start(b->r->main, &b->tick, TICK_NS);
}

int board_start(struct run *r)
{
    struct board *b = calloc(1, sizeof(*b));

    if (!b)
        return -ENOMEM;
    b->r = r;
    b->last_ns = clock_now_ns();
    b->tick.op.fn = ticked;
    r->board = b;
    sample(b);
    return weir_loop_timer_start(r->main, &b->tick, TICK_NS);
}

void board_free(struct run *r)
{
    struct board *b = r->board;

    if (!b)
        return;
    for (size_t i = 0; i < b->n; i++) {
        free(b->v[i].pl);
        free(b->v[i].sink);
    }
    free(b->v);
    free(b);
    r->board = NULL;
}

double board_down_seconds(const struct run *r, const char *pl, const char *sink)
{
    const struct mark *m = r->board ? mark_find(r->board, pl, sink) : NULL;

    if (!m || !m->down_since)
        return 0;
    return (double)(clock_now_ns() - m->down_since) / 1e9;
}

/* One row of the board. */

enum row_state {
    ROW_IDLE, /* no live stream uses the sink */
    ROW_UP,
    ROW_DRAINING, /* its pipeline is stopping or being replaced */
    ROW_CONNECTING,
    ROW_RETRYING,
    ROW_CUT,
};

static const char *const row_state_name[] = {
    [ROW_IDLE] = "idle",         [ROW_UP] = "up",
    [ROW_DRAINING] = "draining", [ROW_CONNECTING] = "connecting",
    [ROW_RETRYING] = "retrying", [ROW_CUT] = "cut",
};

struct row {
    const struct pipeline *pl;
    const struct pl_num *pn;   /* NULL: nothing counted yet */
    const struct sink_num *sn; /* NULL: likewise */
    const char *sink;
    enum row_state state;
    double rate, down_s, fill;
    unsigned idx;   /* the sink's index in its pipeline */
    unsigned order; /* the config's, over all rows */
};

static const struct sink_num *sink_num_of(const struct pl_num *pn,
                                          const char *name)
{
    for (size_t i = 0; pn && i < pn->nsinks; i++)
        if (strcmp(pn->sinks[i].name, name) == 0)
            return &pn->sinks[i];
    return NULL;
}

static const struct pl_num *pl_num_of(const struct series *snap,
                                      const char *name)
{
    for (size_t i = 0; i < snap->npls; i++)
        if (strcmp(snap->pls[i].name, name) == 0)
            return &snap->pls[i];
    return NULL;
}

/* The pipelines to show: the running ones, each name once. A reload's
 * replacement stands for the one it drains; of a removed pipeline's
 * draining ones, the first. */
static bool shown(const struct run *r, const struct pipeline *pl)
{
    const struct weir_list *pos;
    bool before = true;

    if (pl->gone)
        return false;
    for (pos = r->pls.next; pos != &r->pls; pos = pos->next) {
        const struct pipeline *o =
            weir_list_entry(pos, const struct pipeline, link);

        if (o == pl) {
            before = false;
            continue;
        }
        if (o->gone || strcmp(o->p->name, pl->p->name) != 0 || !pl->draining)
            continue;
        if (!o->draining || before)
            return false;
    }
    return true;
}

static enum row_state state_of(const struct run *r, const struct pipeline *pl,
                               const struct sink_num *sn)
{
    uint64_t live = 0;

    if (sn) {
        if (sn->in_state[SINK_CUT])
            return ROW_CUT;
        if (sn->in_state[SINK_RETRYING])
            return ROW_RETRYING;
        if (sn->in_state[SINK_CONNECTING])
            return ROW_CONNECTING;
        for (int k = 0; k < SINK_STATES; k++)
            live += sn->in_state[k];
    }
    if (r->stopping || pl->draining)
        return ROW_DRAINING;
    return live ? ROW_UP : ROW_IDLE;
}

static uint64_t live_streams(const struct sink_num *sn)
{
    uint64_t n = 0;

    for (int k = 0; sn && k < SINK_STATES; k++)
        n += sn->in_state[k];
    return n;
}

struct rows {
    struct row *v;
    size_t n;
};

static int rows_make(const struct run *r, const struct series *snap,
                     struct rows *out)
{
    const struct weir_list *pos;
    int64_t now = clock_now_ns();
    size_t cap = 0;

    *out = (struct rows){0};
    for (pos = r->pls.next; pos != &r->pls; pos = pos->next) {
        const struct pipeline *pl =
            weir_list_entry(pos, const struct pipeline, link);

        if (shown(r, pl))
            cap += pl->p->nsinks;
    }
    out->v = calloc(cap ? cap : 1, sizeof(*out->v));
    if (!out->v)
        return -ENOMEM;
    for (pos = r->pls.next; pos != &r->pls; pos = pos->next) {
        const struct pipeline *pl =
            weir_list_entry(pos, const struct pipeline, link);
        const struct pl_num *pn = pl_num_of(snap, pl->p->name);

        if (!shown(r, pl))
            continue;
        for (size_t i = 0; i < pl->p->nsinks; i++) {
            struct row *w = &out->v[out->n];
            const struct mark *m = r->board ? mark_find(r->board, pl->p->name,
                                                        pl->p->sinks[i]->label)
                                            : NULL;
            uint64_t nlive;

            w->pl = pl;
            w->pn = pn;
            w->sink = pl->p->sinks[i]->label;
            w->sn = sink_num_of(pn, w->sink);
            w->state = state_of(r, pl, w->sn);
            w->idx = (unsigned)i;
            w->order = (unsigned)out->n++;
            w->rate = m ? m->rate : 0;
            w->down_s =
                m && m->down_since &&
                        (w->state == ROW_RETRYING || w->state == ROW_CONNECTING)
                    ? (double)(now - m->down_since) / 1e9
                    : -1;
            nlive = live_streams(w->sn);
            w->fill = nlive && w->sn->hwm
                          ? (double)w->sn->queued /
                                ((double)w->sn->hwm * (double)nlive)
                          : 0;
        }
    }
    return 0;
}

/* Worst first: trouble, then the fullest queues; else the config's
 * order. */
static int row_cmp_worst(const void *pa, const void *pb)
{
    const struct row *a = pa, *b = pb;

    if (a->state != b->state)
        return a->state > b->state ? -1 : 1;
    if (a->fill != b->fill)
        return a->fill > b->fill ? -1 : 1;
    return a->order < b->order ? -1 : a->order > b->order;
}

/* Numbers a person reads: text_human_bytes (text.h), and the same in at
 * most six characters ("3.8K", "812M"), for a narrow
 * terminal: the unit's letter, one decimal below 10. */
static void short_bytes(char *out, size_t len, double v, const char *suffix)
{
    static const char unit[] = "BKMGTP";
    unsigned u = 0;

    while (v >= 999.5 && u < 5) {
        v /= 1024;
        u++;
    }
    if (u == 0)
        snprintf(out, len, "%.0f%s", v, suffix);
    else if (v < 9.95)
        snprintf(out, len, "%.1f%c%s", v, unit[u], suffix);
    else
        snprintf(out, len, "%.0f%c%s", v, unit[u], suffix);
}

static void human_secs(char *out, size_t len, double s)
{
    unsigned long long t = (unsigned long long)(s + 0.5);

    if (t < 60)
        snprintf(out, len, "%llus", t);
    else if (t < 3600)
        snprintf(out, len, "%llum%02llus", t / 60, t % 60);
    else if (t < 86400)
        snprintf(out, len, "%lluh%02llum", t / 3600, t / 60 % 60);
    else
        snprintf(out, len, "%llud%02lluh", t / 86400, t / 3600 % 24);
}

static uint64_t delivered_total(const struct series *snap)
{
    uint64_t b = 0;

    for (size_t i = 0; i < snap->npls; i++)
        if (snap->pls[i].nsinks > 0)
            b += snap->pls[i].sinks[0].delivered;
    return b;
}

/* The summary line: what SIGUSR1 logged before the board had rows. */
static void put_summary(struct text *t, const struct run *r,
                        const struct series *snap, size_t width)
{
    unsigned npl = run_pipelines(r), nlive = run_streams(r), ncl = 0;
    const struct weir_list *pos;
    char sent[32], up[32], line[160], about[96];

    for (pos = r->pls.next; pos != &r->pls; pos = pos->next)
        ncl +=
            pipeline_clients(weir_list_entry(pos, const struct pipeline, link));
    text_human_bytes(sent, sizeof(sent), (double)delivered_total(snap), "");
    human_secs(up, sizeof(up), (double)(clock_now_ns() - r->t_start_ns) / 1e9);
    snprintf(line, sizeof(line),
             "%s%u pipeline%s, %u live stream%s, %u client%s, %s sent, up "
             "%s",
             r->stopping ? "stopping, " : "", npl, npl == 1 ? "" : "s", nlive,
             nlive == 1 ? "" : "s", ncl, ncl == 1 ? "" : "s", sent, up);
    snprintf(about, sizeof(about), "weir %s, engine %s, %u worker%s",
             WEIR_VERSION, weir_engine_name(weir_loop_engine(r->main)),
             r->cx.nworkers, r->cx.nworkers == 1 ? "" : "s");
    /* On a narrow terminal, the two halves on lines of their own. */
    if (width && strlen(line) + strlen(about) + 2 > width)
        text_put(t, "%s\n%s\n", line, about);
    else
        text_put(t, "%s; %s\n", line, about);
}

enum col {
    C_PIPELINE,
    C_SINK,
    C_STATE,
    C_STREAMS,
    C_DELIVERED,
    C_RATE,
    C_QUEUE,
    C_FILL,
    C_DROPPED,
    C_COLS,
};

static const char *const col_head[C_COLS] = {
    "PIPELINE", "SINK",  "STATE", "STREAMS", "DELIVERED",
    "RATE",     "QUEUE", "FILL",  "DROPPED",
};

/* The same, on a terminal too narrow for the table: shorter heads. */
static const char *const col_head_short[C_COLS] = {
    "PIPELINE", "SINK", "STATE", "N", "SENT", "RATE", "QUEUE", "FILL", "DROP",
};

/* Numbers are right-aligned, names left. */
static const bool col_right[C_COLS] = {
    [C_STREAMS] = true, [C_DELIVERED] = true, [C_RATE] = true,
    [C_QUEUE] = true,   [C_FILL] = true,      [C_DROPPED] = true,
};

#define CELL           48
#define NAME_MAX_SHOWN 40

struct cells {
    char c[C_COLS][CELL];
};

/* A name longer than the column may be: its head and "~". */
static void cell_name(char *out, const char *s)
{
    size_t n = strlen(s);

    if (n <= NAME_MAX_SHOWN) {
        snprintf(out, CELL, "%s", s);
        return;
    }
    snprintf(out, CELL, "%.*s~", NAME_MAX_SHOWN - 1, s);
}

/* A sink's address without its options (",max_clients=500"): what a
 * narrow table has room for. */
static void cell_address(char *out, const char *s)
{
    size_t n = strcspn(s, ",");

    snprintf(out, CELL, "%.*s", (int)(n < CELL - 1 ? n : CELL - 1), s);
}

static void row_cells(const struct row *w, struct cells *c, bool narrow)
{
    void (*bytes)(char *, size_t, double, const char *) =
        narrow ? short_bytes : text_human_bytes;
    char down[24];

    cell_name(c->c[C_PIPELINE], w->pl->p->name);
    if (narrow)
        cell_address(c->c[C_SINK], w->sink);
    else
        cell_name(c->c[C_SINK], w->sink);
    if (w->down_s >= 0) {
        human_secs(down, sizeof(down), w->down_s);
        snprintf(c->c[C_STATE], CELL, "%s %s", row_state_name[w->state], down);
    } else {
        snprintf(c->c[C_STATE], CELL, "%s", row_state_name[w->state]);
    }
    snprintf(c->c[C_STREAMS], CELL, "%llu",
             (unsigned long long)live_streams(w->sn));
    bytes(c->c[C_DELIVERED], CELL, (double)(w->sn ? w->sn->delivered : 0), "");
    bytes(c->c[C_RATE], CELL, w->rate, "/s");
    bytes(c->c[C_QUEUE], CELL, (double)(w->sn ? w->sn->queued : 0), "");
    if (live_streams(w->sn))
        snprintf(c->c[C_FILL], CELL, "%.0f%%", w->fill * 100);
    else
        snprintf(c->c[C_FILL], CELL, "-");
    bytes(c->c[C_DROPPED], CELL, (double)(w->sn ? w->sn->dropped : 0), "");
}

/* s cut to n characters: its head and tail around a "~", so that both the
 * kind and the port of an address stay (n >= 3). */
static void cut_middle(char *s, size_t n)
{
    size_t len = strlen(s), head = (n - 1) / 2, tail = n - 1 - head;

    if (len <= n)
        return;
    memmove(s + head + 1, s + len - tail, tail + 1);
    s[head] = '~';
}

static void put_cells(struct text *t, const struct cells *c,
                      const size_t width[C_COLS], const char *gap)
{
    for (int k = 0; k < C_COLS; k++) {
        const char *sep = k + 1 < C_COLS ? gap : "";

        if (k + 1 == C_COLS && !col_right[k])
            text_put(t, "%s", c->c[k]);
        else if (col_right[k])
            text_put(t, "%*s%s", (int)width[k], c->c[k], sep);
        else
            text_put(t, "%-*s%s", (int)width[k], c->c[k], sep);
    }
    text_put(t, "\n");
}

/* Each column's width: its widest cell, heads included. The total. */
static size_t measure(const struct cells *head, const struct cells *cells,
                      size_t n, size_t width[C_COLS], size_t gap)
{
    size_t total = gap * (C_COLS - 1);

    for (int k = 0; k < C_COLS; k++) {
        width[k] = strlen(head->c[k]);
        for (size_t i = 0; i < n; i++)
            if (strlen(cells[i].c[k]) > width[k])
                width[k] = strlen(cells[i].c[k]);
        total += width[k];
    }
    return total;
}

/*
 * The table, fitted to `fit` columns when it is not 0 (weir top's
 * terminal). Too wide, it goes narrow: shorter heads, byte counts in six
 * characters, one space between columns, sinks without their options;
 * then the two name columns give way, cut in the middle. The figures
 * are never cut: QUEUE, FILL and DROPPED are what shows trouble.
 */
static void put_table(struct text *t, const struct rows *rows, size_t fit)
{
    struct cells head, *cells = calloc(rows->n ? rows->n : 1, sizeof(*cells));
    size_t width[C_COLS], total;
    bool narrow = false;

    if (!cells) {
        t->oom = true;
        return;
    }
    for (int k = 0; k < C_COLS; k++)
        snprintf(head.c[k], CELL, "%s", col_head[k]);
    for (size_t i = 0; i < rows->n; i++)
        row_cells(&rows->v[i], &cells[i], false);
    total = measure(&head, cells, rows->n, width, 2);
    if (fit && total > fit) {
        narrow = true;
        for (int k = 0; k < C_COLS; k++)
            snprintf(head.c[k], CELL, "%s", col_head_short[k]);
        for (size_t i = 0; i < rows->n; i++)
            row_cells(&rows->v[i], &cells[i], true);
        total = measure(&head, cells, rows->n, width, 1);
    }
    if (narrow && total > fit) {
        size_t names = width[C_PIPELINE] + width[C_SINK];
        size_t room = names > total - fit ? names - (total - fit) : 0;
        size_t pl = width[C_PIPELINE], sk;

        /* The pipeline keeps up to a third of the room, at least 8. */
        if (pl > room / 3)
            pl = room / 3 > 8 ? room / 3 : 8;
        sk = room > pl + 8 ? room - pl : 8;
        if (sk > width[C_SINK])
            sk = width[C_SINK];
        width[C_PIPELINE] = pl;
        width[C_SINK] = sk;
        for (size_t i = 0; i < rows->n; i++) {
            cut_middle(cells[i].c[C_PIPELINE], pl);
            cut_middle(cells[i].c[C_SINK], sk);
        }
    }
    put_cells(t, &head, width, narrow ? " " : "  ");
    for (size_t i = 0; i < rows->n; i++)
        put_cells(t, &cells[i], width, narrow ? " " : "  ");
    free(cells);
}

/* The JSON document (schema 1). Keys are never renamed or removed within
 * a schema; new ones may appear. */

static void json_u(struct text *t, const char *key, uint64_t v, bool comma)
{
    text_put(t, "\"%s\":%llu%s", key, (unsigned long long)v, comma ? "," : "");
}

/* An http sink's requests and answers (series_http.h). */
static void json_http(struct text *t, const struct http_num *h)
{
    text_put(t, ",\"http\":{");
    json_u(t, "requests", h->v[HN_REQUESTS], true);
    json_u(t, "in_flight", h->v[HN_IN_FLIGHT], true);
    json_u(t, "batches_acked", h->v[HN_BATCHES], true);
    json_u(t, "records_acked", h->v[HN_RECORDS], true);
    json_u(t, "body_bytes_acked", h->v[HN_BYTES], true);
    json_u(t, "dead_letter_records", h->v[HN_DEAD_LETTER], true);
    text_put(t, "\"retries\":{");
    json_u(t, "connect", h->v[HN_RETRY_CONNECT], true);
    json_u(t, "timeout", h->v[HN_RETRY_TIMEOUT], true);
    json_u(t, "429", h->v[HN_RETRY_429], true);
    json_u(t, "5xx", h->v[HN_RETRY_5XX], false);
    text_put(t, "}}");
}

static void json_sink(struct text *t, const struct row *w)
{
    const struct sink_num *sn = w->sn;
    static const struct sink_num zero;

    if (!sn)
        sn = &zero;
    text_put(t, "{\"sink\":");
    text_json_str(t, w->sink);
    text_put(t, ",\"state\":\"%s\",", row_state_name[w->state]);
    if (w->down_s >= 0)
        text_put(t, "\"down_seconds\":%.1f,", w->down_s);
    else
        text_put(t, "\"down_seconds\":null,");
    text_put(t, "\"streams\":{");
    json_u(t, "up", sn->in_state[SINK_UP], true);
    json_u(t, "connecting", sn->in_state[SINK_CONNECTING], true);
    json_u(t, "retrying", sn->in_state[SINK_RETRYING], true);
    json_u(t, "cut", sn->in_state[SINK_CUT], false);
    text_put(t, "},");
    json_u(t, "bytes_delivered", sn->delivered, true);
    text_put(t, "\"bytes_per_second\":%.0f,", w->rate);
    json_u(t, "bytes_dropped", sn->dropped, true);
    text_put(t, "\"blocked_seconds\":%.3f,", (double)sn->blocked_ns / 1e9);
    json_u(t, "reconnects", sn->reconnects, true);
    json_u(t, "queue_bytes", sn->queued, true);
    json_u(t, "high_water_mark", stream_sink_hwm(w->pl->p, w->idx), true);
    text_put(t, "\"queue_fill\":%.4f", w->fill);
    if (sn->http.is_http)
        json_http(t, &sn->http);
    if (sn->kafka.is_kafka)
        kafka_json(t, &sn->kafka);
    if (sn->jetstream.is_js)
        js_json(t, &sn->jetstream);
    text_put(t, "}");
}

static void json_pipeline(struct text *t, const struct run *r,
                          const struct rows *rows, size_t first, size_t n)
{
    const struct row *w = &rows->v[first];
    const struct pl_num *pn = w->pn;
    static const struct pl_num zero;
    const struct mark *m =
        r->board ? mark_find(r->board, w->pl->p->name, NULL) : NULL;

    if (!pn)
        pn = &zero;
    text_put(t, "{\"name\":");
    text_json_str(t, w->pl->p->name);
    text_put(t, ",\"source\":");
    text_json_str(t, w->pl->p->source->text);
    text_put(t, ",\"draining\":%s,", w->pl->draining ? "true" : "false");
    json_u(t, "streams_active", pn->active, true);
    json_u(t, "streams_total", pn->streams, true);
    json_u(t, "clients", pipeline_clients(w->pl), true);
    json_u(t, "clients_accepted", pn->accepted, true);
    json_u(t, "clients_refused", pn->refused, true);
    json_u(t, "bytes_read", pn->read, true);
    text_put(t, "\"read_bytes_per_second\":%.0f,", m ? m->rate : 0);
    text_put(t, "\"errors\":{");
    json_u(t, "source", pn->errors[ERR_SOURCE], true);
    json_u(t, "sink", pn->errors[ERR_SINK], true);
    json_u(t, "client", pn->errors[ERR_CLIENT], true);
    json_u(t, "transform", pn->errors[ERR_TRANSFORM], false);
    text_put(t, "},");
    board_files_json(t, &pn->files);
    jss_json(t, &pn->js_source);
    text_put(t, "\"sinks\":[");
    for (size_t i = 0; i < n; i++) {
        json_sink(t, &rows->v[first + i]);
        if (i + 1 < n)
            text_put(t, ",");
    }
    text_put(t, "]}");
}

static void put_json(struct text *t, const struct run *r,
                     const struct rows *rows)
{
    text_put(t, "{\"schema\":1,\"version\":\"%s\",\"engine\":\"%s\",",
             WEIR_VERSION, weir_engine_name(weir_loop_engine(r->main)));
    text_put(t, "\"pid\":%ld,\"workers\":%u,", (long)getpid(), r->cx.nworkers);
    text_put(t, "\"uptime_seconds\":%.1f,",
             (double)(clock_now_ns() - r->t_start_ns) / 1e9);
    text_put(t, "\"metrics\":");
    if (r->conf->daemon.metrics)
        text_json_str(t, r->conf->daemon.metrics->text);
    else
        text_put(t, "null");
    text_put(t, ",\"ready\":%s,\"stopping\":%s,\"pipelines\":[",
             run_ready(r) ? "true" : "false", r->stopping ? "true" : "false");
    for (size_t i = 0; i < rows->n;) {
        size_t n = 1;

        /* A pipeline's rows are together, in order, before any sorting. */
        while (i + n < rows->n && rows->v[i + n].pl == rows->v[i].pl)
            n++;
        json_pipeline(t, r, rows, i, n);
        i += n;
        if (i < rows->n)
            text_put(t, ",");
    }
    text_put(t, "]}\n");
}

char *board_render(const struct run *r, bool json, bool worst, size_t width,
                   size_t *len)
{
    struct series *snap = series_snapshot(r);
    struct text t = {0};
    struct rows rows;

    if (!snap)
        return NULL;
    if (rows_make(r, snap, &rows) != 0) {
        series_free(snap);
        return NULL;
    }
    if (json) {
        put_json(&t, r, &rows);
    } else {
        put_summary(&t, r, snap, width);
        if (worst)
            qsort(rows.v, rows.n, sizeof(*rows.v), row_cmp_worst);
        put_table(&t, &rows, width);
        board_files_text(&t, snap);
        for (size_t i = 0; i < snap->npls; i++)
            jss_text(&t, &snap->pls[i].js_source, snap->pls[i].name);
    }
    free(rows.v);
    series_free(snap);
    if (t.oom) {
        free(t.p);
        return NULL;
    }
    *len = t.len;
    return t.p;
}

void board_log(const struct run *r)
{
    size_t len;
    char *doc = board_render(r, false, false, 0, &len);

    if (!doc) {
        log_warnx("status: out of memory");
        return;
    }
    for (char *line = doc, *nl; *line; line = nl + 1) {
        nl = strchr(line, '\n');
        if (!nl)
            break;
        *nl = '\0';
        log_info("status: %s", line);
    }
    free(doc);
}
