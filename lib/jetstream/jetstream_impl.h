/*
 * jetstream_impl.h - what the files of the jetstream sink share. Private
 * to lib/jetstream.
 *
 *   jetstream_box.c       where the NATS client's threads meet the loop:
 *                         the connect, acknowledgements as notes behind
 *                         an eventfd, the teardown
 *   endpoint_jetstream.c  the kind: its stream, message ids, what is
 *                         acknowledged, publishing again
 *   jetstream_fetch.c     the source's thread: the consumer, fetches,
 *                         acknowledgements
 *   endpoint_jetstream_source.c  the source: messages into the stream's
 *                         buffers, what is acknowledged
 */
#ifndef WEIR_JETSTREAM_IMPL_H
#define WEIR_JETSTREAM_IMPL_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include <nats/nats.h>

#include "../io/endpoint_base.h"
#include "../io/endpoint_ledger.h"

/* What a publish came to: the message back, and the stream's answer. */
struct js_note {
    natsMsg *msg;
    natsStatus st;  /* NATS_OK: acknowledged */
    int jerr;       /* the stream's error code, when it answered one */
    bool duplicate; /* acknowledged as one the stream had already */
};

/*
 * The box: filled by the client's threads (the connect, the acks),
 * emptied by the loop's, which polls efd. Locked; the client never waits
 * on the loop nor the loop on the client, but for the lock.
 */
struct js_box {
    pthread_mutex_t mu;
    int efd; /* readable while notes or the connection wait */
    struct js_note *notes;
    size_t n, cap;
    bool connecting; /* the connect thread runs */
    bool ready;      /* nc and js are the loop's to take */
    natsStatus conn_st;
    natsConnection *nc;
    jsCtx *js;
    natsOptions *opts; /* the connect thread's, then destroyed */
    jsOptions jo;
    bool gone; /* the sink let go: notes are dropped, the last frees */
};

/* A box and its eventfd; the acks of js contexts made with its jsOptions
 * come to it. 0, -errno. */
int weir__js_box_new(struct js_box **out, natsOptions *opts,
                     int64_t max_pending);
/* Connects on a thread of its own; efd is signalled when done. */
int weir__js_box_connect(struct js_box *b);
/* The loop's turn: the notes so far (*n of them, the caller frees the
 * array and owns the messages), and the connection once it is ready
 * (*nc and *js are set once, else left). */
struct js_note *weir__js_box_take(struct js_box *b, size_t *n,
                                  natsConnection **nc, jsCtx **js,
                                  natsStatus *conn_st);
/* The sink lets go: nc and js (which it took, or NULL) are destroyed on
 * a thread of their own, the box with them, or by the connect thread
 * when it is still running. */
void weir__js_box_release(struct js_box *b, natsConnection *nc, jsCtx *js);

/*
 * The source's fetcher: a thread of its own that connects, sets the
 * consumer up, fetches while the credit allows, and sends the
 * acknowledgements the loop hands it. What it fetched waits in `in` for
 * the loop (efd is written when `in` was empty); everything under mu.
 */
struct js_fetch {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int efd;
    /* Set before the thread starts, then read only. */
    natsOptions *opts;
    char *stream, *consumer, *filter;
    int64_t ack_wait_ns;
    int batch;
    uint64_t hwm;
    int *sync_fds;
    unsigned nsync;
    /* Thread to loop. */
    natsMsg **in;
    size_t nin, cap_in;
    natsStatus st;                /* the last failure, NATS_OK once reading */
    bool st_new;                  /* st changed since the loop last took it */
    uint64_t redelivered, errors; /* since the loop last took them */
    /* Loop to thread. */
    natsMsg **acks;
    size_t nacks, cap_acks;
    uint64_t held; /* payload bytes fetched and not acknowledged */
    bool gone;     /* the loop let go: the thread acks what it has, ends */
};

/* A fetcher for o (its strings copied, its fds dup'd) and its thread;
 * opts becomes the fetcher's. 0, -errno. */
int weir__js_fetch_start(struct js_fetch **out, natsOptions *opts,
                         const struct weir_jetstream_source_options *o);
/* The loop's turn: the messages fetched so far (*n of them; the caller
 * frees the array and owns them), and news of the thread. */
natsMsg **weir__js_fetch_take(struct js_fetch *f, size_t *n, natsStatus *st,
                              bool *st_new, uint64_t *redelivered,
                              uint64_t *errors);
/* Hands n messages (their payloads `bytes` in all) to be acknowledged;
 * the array is the caller's still, the messages the thread's. 0, -ENOMEM
 * (then the messages are destroyed, unacknowledged). */
int weir__js_fetch_ack(struct js_fetch *f, natsMsg **m, size_t n,
                       uint64_t bytes);
/* The loop lets go: the thread sends the acknowledgements it was handed,
 * then closes the connection and frees the fetcher. */
void weir__js_fetch_release(struct js_fetch *f);
/* The client's options for a server list, shared with the sink. */
natsOptions *weir__js_client_options(const char *servers, const char *creds,
                                     const char *ca, uint64_t hwm);

#endif
