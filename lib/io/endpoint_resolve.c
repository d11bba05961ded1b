/*
 * endpoint_resolve.c - a socket sink's host name, looked up off the
 * loop's thread (endpoint_resolve.h).
 *
 * getaddrinfo blocks (for as long as the resolver's timeouts say, seconds
 * when a DNS server does not answer), so each lookup runs on a detached
 * thread of its own, made for it: lookups happen once per connect
 * attempt, after a backoff, so a thread each costs nothing that matters,
 * and no thread waits around between them. The thread posts the answer
 * to the sink's loop as a task.
 *
 * The lookup outlives the endpoint if it must: both hold a reference, and
 * a mutex orders the two ends. An endpoint destroyed before the answer
 * abandons the lookup (the thread then posts nothing and frees it); once
 * the answer is posted, the task runs on the loop and takes its
 * reference back (the endpoint counts the lookup as an op in flight, so
 * it is not freed before).
 */
#include <errno.h>
#include <netdb.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "endpoint_resolve.h"

#define LOOKUP_MAX_ADDRS 16

struct ep_lookup {
    pthread_mutex_t mu;
    unsigned refs;  /* the thread's and the endpoint's */
    bool abandoned; /* the endpoint went first: post nothing */
    bool posted;    /* the task is on its way */
    struct weir_task task;
    struct weir_loop *loop;
    struct ep_resolve *r;
    char port[8];
    int eai;
    unsigned n;
    struct sockaddr_storage addrs[LOOKUP_MAX_ADDRS];
    socklen_t lens[LOOKUP_MAX_ADDRS];
    char host[]; /* NUL-terminated */
};

/* Drops one reference; the last frees. */
static void lookup_put(struct ep_lookup *l)
{
    bool last;

    pthread_mutex_lock(&l->mu);
    last = --l->refs == 0;
    pthread_mutex_unlock(&l->mu);
    if (last) {
        pthread_mutex_destroy(&l->mu);
        free(l);
    }
}

static void *lookup_run(void *arg)
{
    struct ep_lookup *l = arg;
    struct addrinfo hints = {.ai_socktype = SOCK_STREAM}, *res, *ai;

    l->eai = getaddrinfo(l->host, l->port, &hints, &res);
    if (l->eai == 0) {
        for (ai = res; ai && l->n < LOOKUP_MAX_ADDRS; ai = ai->ai_next) {
            if (ai->ai_addrlen > sizeof(l->addrs[0]))
                continue;
            memcpy(&l->addrs[l->n], ai->ai_addr, ai->ai_addrlen);
            l->lens[l->n++] = ai->ai_addrlen;
        }
        freeaddrinfo(res);
        if (l->n == 0)
            l->eai = EAI_NONAME;
    }
    /* The answer (eai, addrs) is published by the post: the loop's inbox
     * orders it before the task runs. */
    pthread_mutex_lock(&l->mu);
    if (!l->abandoned) {
        l->posted = true;
        weir_loop_post(l->loop, &l->task);
    }
    pthread_mutex_unlock(&l->mu);
    lookup_put(l);
    return NULL;
}

static void lookup_done(struct weir_task *t)
{
    struct ep_lookup *l = EP_CONTAINER(t, struct ep_lookup, task);
    struct ep_resolve *r = l->r;
    int eai = l->eai;

    r->lookup = NULL;
    if (weir__ep_op_done(r->ep)) {
        lookup_put(l);
        return;
    }
    if (eai == 0) {
        free(r->addrs);
        free(r->addrlens);
        r->addrs = malloc(l->n * sizeof(*r->addrs));
        r->addrlens = malloc(l->n * sizeof(*r->addrlens));
        if (!r->addrs || !r->addrlens) {
            eai = EAI_MEMORY;
            r->naddrs = 0;
        } else {
            memcpy(r->addrs, l->addrs, l->n * sizeof(*r->addrs));
            memcpy(r->addrlens, l->lens, l->n * sizeof(*r->addrlens));
            r->naddrs = l->n;
        }
        r->addr_at = 0;
    }
    lookup_put(l);
    r->done(r, eai);
}

int weir__ep_lookup_start(struct ep_resolve *r)
{
    size_t hl = strlen(r->host);
    struct ep_lookup *l = calloc(1, sizeof(*l) + hl + 1);
    pthread_attr_t attr;
    pthread_t th;
    int rc;

    if (!l)
        return -ENOMEM;
    pthread_mutex_init(&l->mu, NULL);
    l->refs = 2;
    l->loop = r->ep->loop;
    l->r = r;
    memcpy(l->host, r->host, hl + 1);
    snprintf(l->port, sizeof(l->port), "%u", r->port);
    weir_task_init(&l->task, lookup_done);
    r->lookup = l;
    ep_op_started(r->ep);
    pthread_attr_init(&attr);
    pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
    rc = pthread_create(&th, &attr, lookup_run, l);
    pthread_attr_destroy(&attr);
    if (rc) {
        r->lookup = NULL;
        ep_op_unstarted(r->ep);
        pthread_mutex_destroy(&l->mu);
        free(l);
        return -rc;
    }
    return 0;
}

void weir__ep_lookup_drop(struct ep_resolve *r)
{
    struct ep_lookup *l = r->lookup;
    bool mine;

    if (!l)
        return;
    pthread_mutex_lock(&l->mu);
    mine = !l->posted;
    l->abandoned = true;
    pthread_mutex_unlock(&l->mu);
    if (!mine)
        return; /* the task runs and finishes the op */
    r->lookup = NULL;
    ep_op_unstarted(r->ep);
    lookup_put(l);
}

void weir__ep_resolve_free(struct ep_resolve *r)
{
    free(r->host);
    free(r->addrs);
    free(r->addrlens);
}
