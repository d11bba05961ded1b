/*
 * endpoint_resolve.c - a socket sink's host name, looked up off the
 * loop's thread.
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

#include "endpoint_impl.h"

#define LOOKUP_MAX_ADDRS 16

struct ep_lookup {
    pthread_mutex_t mu;
    unsigned refs;  /* the thread's and the endpoint's */
    bool abandoned; /* the endpoint went first: post nothing */
    bool posted;    /* the task is on its way */
    struct weir_task task;
    struct weir_loop *loop;
    struct weir_endpoint *ep;
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
    struct weir_endpoint *ep = l->ep;
    int eai = l->eai;

    ep->lookup = NULL;
    if (weir__ep_op_done(ep)) {
        lookup_put(l);
        return;
    }
    if (eai == 0) {
        free(ep->addrs);
        free(ep->addrlens);
        ep->addrs = malloc(l->n * sizeof(*ep->addrs));
        ep->addrlens = malloc(l->n * sizeof(*ep->addrlens));
        if (!ep->addrs || !ep->addrlens) {
            eai = EAI_MEMORY;
            ep->naddrs = 0;
        } else {
            memcpy(ep->addrs, l->addrs, l->n * sizeof(*ep->addrs));
            memcpy(ep->addrlens, l->lens, l->n * sizeof(*ep->addrlens));
            ep->naddrs = l->n;
        }
        ep->addr_at = 0;
    }
    lookup_put(l);
    weir__ep_resolved(ep, eai);
}

int weir__ep_lookup_start(struct weir_endpoint *ep)
{
    size_t hl = strlen(ep->host);
    struct ep_lookup *l = calloc(1, sizeof(*l) + hl + 1);
    pthread_attr_t attr;
    pthread_t th;
    int rc;

    if (!l)
        return -ENOMEM;
    pthread_mutex_init(&l->mu, NULL);
    l->refs = 2;
    l->loop = ep->loop;
    l->ep = ep;
    memcpy(l->host, ep->host, hl + 1);
    snprintf(l->port, sizeof(l->port), "%u", ep->so.port);
    weir_task_init(&l->task, lookup_done);
    ep->lookup = l;
    ep_op_started(ep);
    pthread_attr_init(&attr);
    pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
    rc = pthread_create(&th, &attr, lookup_run, l);
    pthread_attr_destroy(&attr);
    if (rc) {
        ep->lookup = NULL;
        ep->inflight--;
        pthread_mutex_destroy(&l->mu);
        free(l);
        return -rc;
    }
    return 0;
}

void weir__ep_lookup_drop(struct weir_endpoint *ep)
{
    struct ep_lookup *l = ep->lookup;
    bool mine;

    if (!l)
        return;
    pthread_mutex_lock(&l->mu);
    mine = !l->posted;
    l->abandoned = true;
    pthread_mutex_unlock(&l->mu);
    if (!mine)
        return; /* the task runs and finishes the op */
    ep->lookup = NULL;
    ep->inflight--;
    lookup_put(l);
}
