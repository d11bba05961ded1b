/*
 * jetstream_impl.h - what the files of the jetstream sink share. Private
 * to lib/jetstream.
 *
 *   jetstream_box.c       where the NATS client's threads meet the loop:
 *                         the connect, acknowledgements as notes behind
 *                         an eventfd, the teardown
 *   endpoint_jetstream.c  the kind: its stream, message ids, what is
 *                         acknowledged, publishing again
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

#endif
