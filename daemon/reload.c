/*
 * reload.c - SIGHUP: read the config file again and move the running
 * pipelines to it without touching the ones that did not change.
 *
 * Three steps, and nothing changes before the third:
 *   1. load: parse and check the whole file (FILE:LINE: message for each
 *      error), plus what only the running daemon can check;
 *   2. prepare: match pipelines by name; an unchanged one (compared field
 *      by field, addresses by their parsed values) is kept as it runs; a
 *      new or changed one is built up to its listening sockets. A listen
 *      address that a replaced or removed pipeline holds is not bound
 *      again: the new pipeline takes the socket over at the commit, so
 *      clients are never refused, and connections waiting in its backlog
 *      go to the new definition;
 *   3. commit: start the new pipelines, drain the removed and replaced
 *      ones (no new clients; their streams finish, up to drain_timeout).
 * Any failure in 1 or 2 undoes 2 and leaves the running config alone.
 *
 * The reload runs on the main loop, in one go. SIGHUPs that arrive
 * meanwhile stay pending in the signalfd, where the kernel merges them
 * into one: one more reload follows.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "notify.h"
#include "pipeline_same.h"
#include "runtime.h"

void conf_ref_put(struct conf_ref *c)
{
    if (c == NULL || --c->refs > 0)
        return;
    config_free(c->conf);
    free(c);
}

/* What the file cannot say wrong by itself but this run cannot take. */
static unsigned check_against_run(const struct run *r,
                                  const struct weir_config *conf)
{
    struct conf_diag diag = {0};

    for (size_t i = 0; i < conf->npipelines; i++) {
        const struct weir_pipeline *p = conf->pipelines[i];

        if (p->chunk_size > r->bufsz)
            config_error(&diag,
                         conf_loc_set(&p->chunk_size_loc) ? &p->chunk_size_loc
                                                          : &p->loc,
                         "pipeline %s: chunk_size %llu is larger than the "
                         "%zu-byte buffers this run allocated; restart weir "
                         "for it",
                         p->name, (unsigned long long)p->chunk_size, r->bufsz);
    }
    /* The worker threads and their pools stay as they started. */
    if (conf->daemon.workers != r->cref->conf->daemon.workers) {
        if (conf_loc_set(&conf->daemon.workers_loc))
            log_warnx("%s:%u: workers changed; that takes effect at the "
                      "next start",
                      conf->file, conf->daemon.workers_loc.line);
        else
            log_warnx("%s: workers changed; that takes effect at the next "
                      "start",
                      conf->file);
    }
    return diag.errors;
}

/* The running pipeline named `name`, or NULL. */
static struct pipeline_rt *running(struct run *r, const char *name)
{
    for (struct pipeline_rt *pl = r->pls; pl; pl = pl->next)
        if (!pl->draining && strcmp(pl->p->name, name) == 0)
            return pl;
    return NULL;
}

struct plan {
    struct pipeline_rt **fresh; /* new or changed, prepared */
    size_t nfresh;
    unsigned kept, changed, added, removed;
};

static void plan_undo(struct run *r, struct plan *pn)
{
    for (size_t i = 0; i < pn->nfresh; i++)
        pipeline_free(pn->fresh[i]);
    free(pn->fresh);
    for (struct pipeline_rt *pl = r->pls; pl; pl = pl->next)
        pl->replaced = false;
}

/* Step 2. Marks the running pipelines to drop, prepares the new ones. */
static int plan_make(struct run *r, struct conf_ref *cref, struct plan *pn)
{
    struct weir_config *conf = cref->conf;
    int rc = 0;

    pn->fresh = calloc(conf->npipelines + 1, sizeof(*pn->fresh));
    if (pn->fresh == NULL)
        return -ENOMEM;
    for (struct pipeline_rt *pl = r->pls; pl; pl = pl->next)
        pl->replaced = !pl->draining;
    for (size_t i = 0; i < conf->npipelines; i++) {
        struct pipeline_rt *old = running(r, conf->pipelines[i]->name);

        if (old && pipeline_same(old->p, conf->pipelines[i])) {
            old->replaced = false;
            pn->kept++;
        } else if (old) {
            pn->changed++;
        } else {
            pn->added++;
        }
    }
    pn->removed = 0;
    for (struct pipeline_rt *pl = r->pls; pl; pl = pl->next)
        pn->removed += pl->replaced;
    pn->removed -= pn->changed;
    for (size_t i = 0; rc == 0 && i < conf->npipelines; i++) {
        struct pipeline_rt *old = running(r, conf->pipelines[i]->name);
        struct pipeline_rt *pl;

        if (old && !old->replaced)
            continue;
        pl = calloc(1, sizeof(*pl));
        if (pl == NULL)
            return -ENOMEM;
        pl->p = conf->pipelines[i];
        pl->cref = cref;
        cref->refs++;
        pn->fresh[pn->nfresh++] = pl;
        rc = pipeline_prepare(r, pl, r->pls);
        if (rc)
            log_errx("%s:%u: pipeline %s cannot be set up", pl->p->loc.file,
                     pl->p->loc.line, pl->p->name);
    }
    return rc;
}

/* Step 3. */
static void plan_commit(struct run *r, struct conf_ref *cref, struct plan *pn)
{
    struct pipeline_rt **tail = &r->pls;

    conf_ref_put(r->cref);
    r->cref = cref;
    cref->refs++;
    r->conf = cref->conf;
    if (!r->verbose)
        log_set_level(r->conf->daemon.log_level);
    while (*tail)
        tail = &(*tail)->next;
    for (size_t i = 0; i < pn->nfresh; i++) {
        *tail = pn->fresh[i];
        tail = &pn->fresh[i]->next;
    }
    /* New first: they take the sockets over before the old ones close
     * theirs, so that a listen address never goes unserved. */
    for (size_t i = 0; i < pn->nfresh; i++)
        pipeline_start(pn->fresh[i]);
    for (struct pipeline_rt *pl = r->pls; pl; pl = pl->next)
        if (pl->replaced) {
            pl->replaced = false;
            pipeline_drain(pl);
        }
    free(pn->fresh);
}

static void reload_file(struct run *r)
{
    struct plan pn = {0};
    struct conf_ref *cref;
    struct weir_config *conf;
    unsigned errors = 0;
    int rc;

    conf = config_load_file(r->conffile, &errors);
    if (conf != NULL)
        errors = check_against_run(r, conf);
    if (errors) {
        log_errx("reload: %u error%s in %s; the running configuration "
                 "stays",
                 errors, errors == 1 ? "" : "s", r->conffile);
        config_free(conf);
        return;
    }
    cref = calloc(1, sizeof(*cref));
    if (cref == NULL) {
        log_errx("reload: out of memory; the running configuration stays");
        config_free(conf);
        return;
    }
    cref->conf = conf;
    cref->refs = 1; /* ours, until the commit or the undo */
    rc = plan_make(r, cref, &pn);
    if (rc) {
        plan_undo(r, &pn);
        conf_ref_put(cref);
        log_errx("reload: %s; the running configuration stays", strerror(-rc));
        return;
    }
    plan_commit(r, cref, &pn);
    conf_ref_put(cref);
    log_info("reloaded %s: %u pipeline%s unchanged, %u changed, %u new, "
             "%u removed",
             r->conffile, pn.kept, pn.kept == 1 ? "" : "s", pn.changed,
             pn.added, pn.removed);
}

void reload(struct run *r)
{
    int rc = notify_reloading();

    if (rc < 0)
        log_debug("sd_notify: %s", strerror(-rc));
    if (r->conffile == NULL) {
        log_info("SIGHUP: running the embedded demo, no file to read again");
    } else {
        log_info("SIGHUP: reloading %s", r->conffile);
        reload_file(r);
    }
    notify_ready();
    status_update(r);
}
