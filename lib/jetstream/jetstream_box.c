/*
 * jetstream_box.c - where the NATS client's threads meet a weir loop.
 *
 * The client connects with blocking calls and answers publishes on
 * threads of its own; a worker must never wait for either. So the
 * connect runs on a short-lived thread, and every acknowledgement (or
 * error, or timeout) is a note appended under a lock; the first note of
 * an empty box writes the eventfd the worker's loop polls, and the
 * worker takes every note at once. The connection is destroyed on a
 * thread too, since closing it flushes and joins the client's threads.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "jetstream_impl.h"

static void wake(struct js_box *b)
{
    uint64_t one = 1;

    /* Nonblocking: a counter at its limit is readable anyway. */
    if (write(b->efd, &one, sizeof(one)) < 0) {
    }
}

static void free_box(struct js_box *b)
{
    for (size_t i = 0; i < b->n; i++)
        natsMsg_Destroy(b->notes[i].msg);
    free(b->notes);
    if (b->opts)
        natsOptions_Destroy(b->opts);
    close(b->efd);
    pthread_mutex_destroy(&b->mu);
    free(b);
}

/* The client's thread: one publish answered (pa), failed or timed out
 * (pae). The message is kept, to count or to send again. */
static void on_ack(jsCtx *js, natsMsg *msg, jsPubAck *pa, jsPubAckErr *pae,
                   void *closure)
{
    struct js_box *b = closure;
    struct js_note note = {
        .msg = msg,
        .st = pa ? NATS_OK : (pae ? pae->Err : NATS_ERR),
        .jerr = pae ? (int)pae->ErrCode : 0,
        .duplicate = pa && pa->Duplicate,
    };
    bool was_empty;

    (void)js;
    pthread_mutex_lock(&b->mu);
    if (b->gone) {
        pthread_mutex_unlock(&b->mu);
        natsMsg_Destroy(msg);
        return;
    }
    if (b->n == b->cap) {
        size_t cap = b->cap ? b->cap * 2 : 256;
        struct js_note *v = realloc(b->notes, cap * sizeof(*v));

        if (!v) {
            /* Never heard of, so never acknowledged: the sink's close
             * waits for it, bounded by the drain. */
            pthread_mutex_unlock(&b->mu);
            natsMsg_Destroy(msg);
            return;
        }
        b->notes = v;
        b->cap = cap;
    }
    was_empty = b->n == 0;
    b->notes[b->n++] = note;
    pthread_mutex_unlock(&b->mu);
    if (was_empty)
        wake(b);
}

int weir__js_box_new(struct js_box **out, natsOptions *opts,
                     int64_t max_pending)
{
    struct js_box *b = calloc(1, sizeof(*b));

    if (!b)
        return -ENOMEM;
    b->efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    if (b->efd < 0) {
        int err = -errno;

        free(b);
        return err;
    }
    pthread_mutex_init(&b->mu, NULL);
    b->opts = opts;
    jsOptions_Init(&b->jo);
    b->jo.PublishAsync.AckHandler = on_ack;
    b->jo.PublishAsync.AckHandlerClosure = b;
    b->jo.PublishAsync.MaxPending = max_pending;
    *out = b;
    return 0;
}

static void destroy_conn(natsConnection *nc, jsCtx *js)
{
    if (js)
        jsCtx_Destroy(js);
    if (nc)
        natsConnection_Destroy(nc);
}

static void *connect_thread(void *arg)
{
    struct js_box *b = arg;
    natsConnection *nc = NULL;
    jsCtx *js = NULL;
    /* With retry on a failed connect, an unreachable server is no error:
     * the connection is made, and reconnects, in the background. */
    natsStatus st = natsConnection_Connect(&nc, b->opts);

    if (st == NATS_NOT_YET_CONNECTED)
        st = NATS_OK;
    if (st == NATS_OK)
        st = natsConnection_JetStream(&js, nc, &b->jo);
    pthread_mutex_lock(&b->mu);
    b->connecting = false;
    if (b->gone) {
        pthread_mutex_unlock(&b->mu);
        destroy_conn(nc, js);
        free_box(b);
        return NULL;
    }
    b->conn_st = st;
    b->nc = nc;
    b->js = js;
    b->ready = true;
    pthread_mutex_unlock(&b->mu);
    wake(b);
    return NULL;
}

static int spawn(void *(*fn)(void *), void *arg)
{
    pthread_attr_t at;
    pthread_t t;
    int rc = pthread_attr_init(&at);

    if (rc)
        return -rc;
    pthread_attr_setdetachstate(&at, PTHREAD_CREATE_DETACHED);
    rc = pthread_create(&t, &at, fn, arg);
    pthread_attr_destroy(&at);
    return -rc;
}

int weir__js_box_connect(struct js_box *b)
{
    int rc;

    b->connecting = true;
    rc = spawn(connect_thread, b);
    if (rc)
        b->connecting = false;
    return rc;
}

struct js_note *weir__js_box_take(struct js_box *b, size_t *n,
                                  natsConnection **nc, jsCtx **js,
                                  natsStatus *conn_st)
{
    struct js_note *v;
    uint64_t count;

    if (read(b->efd, &count, sizeof(count)) < 0) {
        /* Nothing written since the last take: nothing to clear. */
    }
    pthread_mutex_lock(&b->mu);
    v = b->notes;
    *n = b->n;
    b->notes = NULL;
    b->n = b->cap = 0;
    if (b->ready) {
        b->ready = false;
        *nc = b->nc;
        *js = b->js;
        *conn_st = b->conn_st;
        b->nc = NULL;
        b->js = NULL;
    }
    pthread_mutex_unlock(&b->mu);
    return v;
}

struct js_end {
    struct js_box *b;
    natsConnection *nc;
    jsCtx *js;
};

static void *teardown_thread(void *arg)
{
    struct js_end *e = arg;

    destroy_conn(e->nc, e->js);
    free_box(e->b);
    free(e);
    return NULL;
}

void weir__js_box_release(struct js_box *b, natsConnection *nc, jsCtx *js)
{
    struct js_end *e;
    bool connecting;

    pthread_mutex_lock(&b->mu);
    b->gone = true;
    connecting = b->connecting;
    if (b->ready) {
        /* Connected after the loop's last take. */
        nc = b->nc;
        js = b->js;
        b->ready = false;
    }
    pthread_mutex_unlock(&b->mu);
    if (connecting)
        return; /* the connect thread finds it gone and ends it all */
    e = malloc(sizeof(*e));
    if (e) {
        *e = (struct js_end){b, nc, js};
        if (spawn(teardown_thread, e) == 0)
            return;
        free(e);
    }
    /* No thread to spare: here, then. */
    destroy_conn(nc, js);
    free_box(b);
}

/* The client's options: every server of the list, reconnecting for ever,
 * its buffers sized by the mark. */
natsOptions *weir__js_client_options(const char *servers, const char *creds,
                                     const char *ca, uint64_t hwm)
{
    natsOptions *no = NULL;
    char *list = strdup(servers), *save = NULL;
    const char *urls[64];
    int n = 0;
    int buf = hwm * 2 > (1u << 30) ? (1 << 30) : (int)(hwm * 2);
    natsStatus st = list ? natsOptions_Create(&no) : NATS_NO_MEMORY;

    for (char *u = strtok_r(list, ",", &save); st == NATS_OK && u && n < 64;
         u = strtok_r(NULL, ",", &save))
        urls[n++] = u;
    if (st == NATS_OK)
        st = natsOptions_SetServers(no, urls, n);
    if (st == NATS_OK)
        st = natsOptions_SetMaxReconnect(no, -1);
    if (st == NATS_OK)
        st = natsOptions_SetReconnectWait(no, 250);
    if (st == NATS_OK)
        st = natsOptions_SetRetryOnFailedConnect(no, true, NULL, NULL);
    if (st == NATS_OK)
        st = natsOptions_SetReconnectBufSize(no,
                                             buf < (8 << 20) ? 8 << 20 : buf);
    if (st == NATS_OK)
        st = natsOptions_SetIOBufSize(no, buf < (1 << 20) ? 1 << 20 : buf);
    if (st == NATS_OK && creds)
        st = natsOptions_SetUserCredentialsFromFiles(no, creds, NULL);
    if (st == NATS_OK && ca)
        st = natsOptions_LoadCATrustedCertificates(no, ca);
    free(list);
    if (st != NATS_OK && no) {
        natsOptions_Destroy(no);
        no = NULL;
    }
    return no;
}
