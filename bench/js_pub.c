/*
 * js_pub.c - the NATS C client's own asynchronous JetStream publish loop,
 * the ceiling a jetstream sink is measured against: every line of a file
 * published to a subject with js_PublishAsync (a message id each, as
 * weir sends), then js_PublishAsyncComplete waits until the stream has
 * acknowledged them all. Prints the records per second.
 *
 *   js_pub URLS SUBJECT FILE
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <nats/nats.h>

static void check(natsStatus st, const char *what)
{
    if (st == NATS_OK)
        return;
    fprintf(stderr, "js_pub: %s: %s\n", what, natsStatus_GetText(st));
    exit(1);
}

static double now(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

int main(int argc, char **argv)
{
    natsConnection *nc;
    natsOptions *o;
    jsCtx *js;
    jsOptions jo;
    jsPubOptions po;
    const char *urls[16];
    char *line = NULL, id[64];
    size_t cap = 0;
    ssize_t len;
    long n = 0;
    int nurls = 0;
    FILE *f;
    double t0;

    if (argc != 4) {
        fprintf(stderr, "usage: js_pub URLS SUBJECT FILE\n");
        return 2;
    }
    for (char *u = strtok(argv[1], ","); u && nurls < 16; u = strtok(NULL, ","))
        urls[nurls++] = u;
    check(natsOptions_Create(&o), "options");
    check(natsOptions_SetServers(o, urls, nurls), "servers");
    check(natsConnection_Connect(&nc, o), "connect");
    jsOptions_Init(&jo);
    jo.PublishAsync.MaxPending = 65536;
    jo.PublishAsync.StallWait = 600000; /* a full window waits, never fails */
    check(natsConnection_JetStream(&js, nc, &jo), "jetstream");
    f = fopen(argv[3], "r");
    if (!f) {
        perror(argv[3]);
        return 1;
    }
    jsPubOptions_Init(&po);
    t0 = now();
    while ((len = getline(&line, &cap, f)) > 0) {
        if (line[len - 1] == '\n')
            len--;
        snprintf(id, sizeof(id), "b:%ld", n++);
        po.MsgId = id;
        check(js_PublishAsync(js, argv[2], line, (int)len, &po), "publish");
    }
    po.MsgId = NULL;
    po.MaxWait = 600000;
    check(js_PublishAsyncComplete(js, &po), "complete");
    printf("%ld records in %.3f s: %.0f records/s\n", n, now() - t0,
           (double)n / (now() - t0));
    fclose(f);
    free(line);
    jsCtx_Destroy(js);
    natsConnection_Destroy(nc);
    natsOptions_Destroy(o);
    return 0;
}
