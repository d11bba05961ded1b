/*
 * js_tool.c - the test's own JetStream client (the nats CLI is not in
 * Debian), on the NATS C client:
 *
 *   js_tool create URLS STREAM SUBJECT [MAX_MSG_SIZE]
 *                                        a file-stored stream of SUBJECT
 *                                        with three replicas (retried
 *                                        while the cluster elects its
 *                                        leaders)
 *   js_tool count URLS STREAM            how many messages it holds
 *   js_tool leader URLS STREAM           the server that leads it
 *   js_tool dump URLS STREAM             every message's payload, one a
 *                                        line, in the stream's order
 *   js_tool publish URLS SUBJECT         each line of standard input a
 *                                        message (without its newline),
 *                                        every one acknowledged
 *   js_tool consumer URLS STREAM NAME    the consumer's ack floor (a
 *                                        stream sequence), its messages
 *                                        delivered and not acknowledged,
 *                                        and those not delivered yet
 *
 * URLS: nats://H:P[,nats://H:P...]. Exits 1 with the client's error.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <nats/nats.h>

static natsConnection *nc;
static jsCtx *js;

static void check(natsStatus st, const char *what)
{
    if (st == NATS_OK)
        return;
    fprintf(stderr, "js_tool: %s: %s\n", what, natsStatus_GetText(st));
    exit(1);
}

static void connect_to(char *urls)
{
    natsOptions *o;
    const char *list[16];
    int n = 0;

    for (char *u = strtok(urls, ","); u && n < 16; u = strtok(NULL, ","))
        list[n++] = u;
    check(natsOptions_Create(&o), "options");
    check(natsOptions_SetServers(o, list, n), "servers");
    check(natsOptions_SetTimeout(o, 2000), "timeout");
    check(natsConnection_Connect(&nc, o), "connect");
    check(natsConnection_JetStream(&js, nc, NULL), "jetstream");
    natsOptions_Destroy(o);
}

static void create(const char *stream, const char *subject,
                   int32_t max_msg_size)
{
    jsStreamConfig cfg;
    jsStreamInfo *si = NULL;
    natsStatus st = NATS_ERR;

    jsStreamConfig_Init(&cfg);
    cfg.Name = stream;
    cfg.Subjects = &subject;
    cfg.SubjectsLen = 1;
    cfg.Storage = js_FileStorage;
    cfg.Replicas = 3;
    if (max_msg_size)
        cfg.MaxMsgSize = max_msg_size;
    /* Until the cluster has a meta leader and three peers: bounded. */
    for (int i = 0; i < 150 && st != NATS_OK; i++) {
        st = js_AddStream(&si, js, &cfg, NULL, NULL);
        if (st != NATS_OK)
            usleep(100000);
    }
    check(st, "add stream");
    jsStreamInfo_Destroy(si);
}

static uint64_t last_seq(const char *stream, uint64_t *msgs)
{
    jsStreamInfo *si = NULL;
    uint64_t last;

    check(js_GetStreamInfo(&si, js, stream, NULL, NULL), "stream info");
    last = si->State.LastSeq;
    *msgs = si->State.Msgs;
    jsStreamInfo_Destroy(si);
    return last;
}

static void leader(const char *stream)
{
    jsStreamInfo *si = NULL;

    check(js_GetStreamInfo(&si, js, stream, NULL, NULL), "stream info");
    printf("%s\n",
           si->Cluster && si->Cluster->Leader ? si->Cluster->Leader : "");
    jsStreamInfo_Destroy(si);
}

static void dump(const char *stream)
{
    uint64_t msgs, last = last_seq(stream, &msgs);

    for (uint64_t seq = 1; seq <= last; seq++) {
        natsMsg *m = NULL;

        check(js_GetMsg(&m, js, stream, seq, NULL, NULL), "get");
        fwrite(natsMsg_GetData(m), 1, (size_t)natsMsg_GetDataLength(m), stdout);
        putchar('\n');
        natsMsg_Destroy(m);
    }
}

static void publish(const char *subject)
{
    char *line = NULL;
    size_t cap = 0;
    ssize_t n;
    jsPubOptions po;

    jsPubOptions_Init(&po);
    po.MaxWait = 10000;
    while ((n = getline(&line, &cap, stdin)) > 0) {
        if (line[n - 1] == '\n')
            n--;
        check(js_PublishAsync(js, subject, line, (int)n, NULL), "publish");
    }
    free(line);
    check(js_PublishAsyncComplete(js, &po), "publish complete");
}

static void consumer(const char *stream, const char *name)
{
    jsConsumerInfo *ci = NULL;

    check(js_GetConsumerInfo(&ci, js, stream, name, NULL, NULL),
          "consumer info");
    printf("%llu %lld %llu\n", (unsigned long long)ci->AckFloor.Stream,
           (long long)ci->NumAckPending, (unsigned long long)ci->NumPending);
    jsConsumerInfo_Destroy(ci);
}

int main(int argc, char **argv)
{
    uint64_t msgs;

    if (argc < 4) {
        fprintf(stderr, "usage: js_tool create|count|dump URLS STREAM "
                        "[SUBJECT]\n");
        return 2;
    }
    connect_to(argv[2]);
    if (strcmp(argv[1], "create") == 0 && (argc == 5 || argc == 6))
        create(argv[3], argv[4], argc == 6 ? atoi(argv[5]) : 0);
    else if (strcmp(argv[1], "count") == 0)
        (void)last_seq(argv[3], &msgs),
            printf("%llu\n", (unsigned long long)msgs);
    else if (strcmp(argv[1], "leader") == 0)
        leader(argv[3]);
    else if (strcmp(argv[1], "dump") == 0)
        dump(argv[3]);
    else if (strcmp(argv[1], "publish") == 0)
        publish(argv[3]);
    else if (strcmp(argv[1], "consumer") == 0 && argc == 5)
        consumer(argv[3], argv[4]);
    else
        return 2;
    fflush(stdout);
    jsCtx_Destroy(js);
    natsConnection_Destroy(nc);
    return 0;
}
