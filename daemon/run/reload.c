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
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "conf/keymap.h"
#include "conf/pipeline_same.h"
#include "conf/tls.h"
#include "httpd/access_log.h"
#include "sys/statelock.h"
#include "conf/sockaddr.h"
#include "run/run_impl.h"
#include "sys/notify.h"

static struct pipeline *pipeline_of(struct weir_list *node)
{
    return weir_list_entry(node, struct pipeline, link);
}

/* Two optional addresses, as written. */
static bool same_text(const struct weir_address *a,
                      const struct weir_address *b)
{
    if (!a || !b)
        return a == b;
    return strcmp(a->text, b->text) == 0;
}

static bool same_str(const char *a, const char *b)
{
    if (!a || !b)
        return a == b;
    return strcmp(a, b) == 0;
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
    config_diag_flush(&diag);
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
    if (conf->daemon.log_format != r->cref->conf->daemon.log_format ||
        conf->daemon.log_target != r->cref->conf->daemon.log_target)
        log_warnx("%s: log_format or log_target changed; that takes effect "
                  "at the next start",
                  conf->file);
    if (!same_str(conf->daemon.control_socket,
                  r->cref->conf->daemon.control_socket))
        log_warnx("%s: control_socket changed; that takes effect at the next "
                  "start",
                  conf->file);
    if (conf->daemon.pool_size != r->cref->conf->daemon.pool_size)
        log_warnx("%s: pool_size changed; that takes effect at the next start",
                  conf->file);
    if (!same_text(conf->daemon.metrics, r->cref->conf->daemon.metrics))
        log_warnx("%s: metrics changed; that takes effect at the next start",
                  conf->file);
    return diag.errors;
}

/* The reload's lookups, so that matching the new config to the running
 * one costs one lookup per pipeline and per listen address, not a scan of
 * the running pipelines each. */
struct reload_maps {
    struct keymap names;     /* name: running pipeline, not draining */
    struct keymap listeners; /* listen address: a replaced one's listener */
};

/* The running pipeline named `name`, or NULL. */
static struct pipeline *running(struct run *r, const char *name)
{
    return (struct pipeline *)keymap_get(&r->reload_maps->names, name);
}

/* What names a listen address the way listener_same_addr compares them:
 * a unix path, or the kind and the resolved socket address. False when it
 * does not resolve (then it matches nothing). */
static bool listen_key(const struct weir_address *a, char *key, size_t len)
{
    struct sockaddr_storage ss;
    const uint8_t *b = (const uint8_t *)&ss;
    socklen_t sl;
    size_t at;

    if (a->kind == ADDR_UNIX_LISTEN) {
        snprintf(key, len, "u:%s", a->path);
        return true;
    }
    if (sockaddr_resolve(a, &ss, &sl) != 0 || len < 2 * (size_t)sl + 16)
        return false;
    at = (size_t)snprintf(key, len, "%d:", (int)a->kind);
    for (socklen_t i = 0; i < sl; i++)
        at += (size_t)snprintf(key + at, len - at, "%02x", b[i]);
    return true;
}

/* The listener a pipeline that the reload replaces holds on a's address,
 * for a new pipeline to take over; or NULL. */
static struct listener *taken(void *owner, const struct weir_address *a)
{
    struct run *r = owner;
    char key[PATH_MAX + 16];

    if (!listen_key(a, key, sizeof(key)))
        return NULL;
    return (struct listener *)keymap_get(&r->reload_maps->listeners, key);
}

static void maps_free(struct reload_maps *m)
{
    keymap_free(&m->names);
    keymap_free(&m->listeners);
}

/* The names of the running pipelines; 0 or -ENOMEM. */
static int maps_names(struct run *r, struct reload_maps *m)
{
    struct weir_list *pos, *tmp;

    weir_list_for_each(pos, tmp, &r->pls)
    {
        struct pipeline *pl = pipeline_of(pos);

        if (pl->draining)
            continue;
        if (keymap_put(&m->names, pl->p->name, pl) == NULL &&
            keymap_get(&m->names, pl->p->name) != pl)
            return -ENOMEM;
    }
    return 0;
}

/* The listeners of the pipelines to be replaced; 0 or -ENOMEM. */
static int maps_listeners(struct run *r, struct reload_maps *m)
{
    struct weir_list *pos, *tmp;
    char key[PATH_MAX + 16];

    weir_list_for_each(pos, tmp, &r->pls)
    {
        struct pipeline *pl = pipeline_of(pos);

        for (unsigned j = 0; pl->replaced && j < pl->nls; j++) {
            struct listener *l = &pl->ls[j];

            if (l->fd < 0 || !listen_key(l->addr, key, sizeof(key)))
                continue;
            /* The first one holds the key, as a scan would find it. */
            if (keymap_put(&m->listeners, key, l) == NULL &&
                keymap_get(&m->listeners, key) != l)
                return -ENOMEM;
        }
    }
    return 0;
}

/* Marks every running pipeline as to be replaced, or none. */
static void mark_replaced(struct run *r, bool on)
{
    struct weir_list *pos, *tmp;

    weir_list_for_each(pos, tmp, &r->pls)
    {
        struct pipeline *pl = pipeline_of(pos);

        pl->replaced = on && !pl->draining;
    }
}

struct plan {
    struct pipeline **fresh; /* new or changed, prepared */
    size_t nfresh;
    unsigned kept, changed, added, removed;
};

static void plan_undo(struct run *r, struct plan *pn)
{
    for (size_t i = 0; i < pn->nfresh; i++)
        pipeline_free(pn->fresh[i]);
    free(pn->fresh);
    mark_replaced(r, false);
}

/* Step 2. Marks the running pipelines to drop, prepares the new ones. */
static int plan_make(struct run *r, struct conf_ref *cref, struct plan *pn)
{
    struct weir_config *conf = cref->conf;
    struct weir_list *pos, *tmp;
    int rc = 0;

    pn->fresh = calloc(conf->npipelines + 1, sizeof(*pn->fresh));
    if (pn->fresh == NULL)
        return -ENOMEM;
    mark_replaced(r, true);
    if ((rc = maps_names(r, r->reload_maps)) != 0)
        return rc;
    for (size_t i = 0; i < conf->npipelines; i++) {
        struct pipeline *old = running(r, conf->pipelines[i]->name);

        if (old && config_pipeline_same(old->p, conf->pipelines[i])) {
            old->replaced = false;
            pn->kept++;
        } else if (old) {
            pn->changed++;
        } else {
            pn->added++;
        }
    }
    pn->removed = 0;
    weir_list_for_each(pos, tmp, &r->pls) pn->removed +=
        pipeline_of(pos)->replaced;
    pn->removed -= pn->changed;
    if ((rc = maps_listeners(r, r->reload_maps)) != 0)
        return rc;
    for (size_t i = 0; rc == 0 && i < conf->npipelines; i++) {
        const struct weir_pipeline *p = conf->pipelines[i];
        struct pipeline *old = running(r, p->name);
        struct pipeline *pl;

        if (old && !old->replaced)
            continue;
        rc = pipeline_prepare(&pl, &r->env, p, cref, taken);
        if (pl)
            pn->fresh[pn->nfresh++] = pl;
        if (rc)
            log_errx("%s:%u: pipeline %s cannot be set up", p->loc.file,
                     p->loc.line, p->name);
    }
    return rc;
}

/* Step 3. */
static void plan_commit(struct run *r, struct conf_ref *cref, struct plan *pn)
{
    struct weir_list *pos, *tmp;

    conf_ref_put(r->cref);
    r->cref = conf_ref_get(cref);
    r->conf = cref->conf;
    if (!r->verbose)
        log_set_level(r->conf->daemon.log_level);
    /* Kept pipelines run on: their TLS files are read again, so a renewed
     * certificate serves the next handshakes. */
    weir_list_for_each(pos, tmp, &r->pls)
    {
        if (!pipeline_of(pos)->replaced)
            conf_tls_reload(pipeline_of(pos)->p);
    }
    for (size_t i = 0; i < pn->nfresh; i++)
        weir_list_push_tail(&r->pls, &pn->fresh[i]->link);
    /* New first: they take the sockets over before the old ones close
     * theirs, so that a listen address never goes unserved. */
    for (size_t i = 0; i < pn->nfresh; i++)
        if (pipeline_start(pn->fresh[i]) != 0)
            r->failures++;
    weir_list_for_each(pos, tmp, &r->pls)
    {
        struct pipeline *pl = pipeline_of(pos);

        if (!pl->replaced)
            continue;
        pl->replaced = false;
        pipeline_drain(pl, r->conf->daemon.drain_timeout_ms);
    }
    free(pn->fresh);
}

static void reload_file(struct run *r)
{
    struct reload_maps maps = {0};
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
    /* A config that follows files now, or elsewhere, needs its state
     * directory to itself, as a start does (main.c). */
    if (config_follows(conf) && conf->daemon.state_directory) {
        pid_t holder;

        rc = statelock_take(conf->daemon.state_directory, &holder);
        if (rc == -EWOULDBLOCK) {
            log_errx("reload: state_directory %s is in use by another weir "
                     "(pid %ld); the running configuration stays",
                     conf->daemon.state_directory, (long)holder);
            config_free(conf);
            return;
        }
    }
    cref = conf_ref_new(conf); /* ours, until the commit or the undo */
    if (cref == NULL) {
        log_errx("reload: out of memory; the running configuration stays");
        return;
    }
    r->reload_maps = &maps;
    rc = plan_make(r, cref, &pn);
    r->reload_maps = NULL;
    maps_free(&maps);
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
    /* logrotate's postrotate: every access log opens its path again. */
    access_log_reopen_all();
    if (r->conffile == NULL) {
        log_info("SIGHUP: running the embedded demo, no file to read again");
    } else {
        log_info("SIGHUP: reloading %s", r->conffile);
        reload_file(r);
    }
    notify_ready();
    status_update(r);
}
