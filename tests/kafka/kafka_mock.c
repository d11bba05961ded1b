/*
 * kafka_mock.c - a Kafka cluster for the tests: librdkafka's mock
 * cluster, three brokers on 127.0.0.1 ephemeral ports, one topic with
 * three partitions replicated three times, each led by broker 1.
 *
 *   kafka_mock TOPIC
 *
 * Prints the bootstrap servers as its first line, then reads commands
 * from standard input, one a line, answering "ok" (or "error ...") to
 * each, and exits at the end of its input:
 *
 *   produce-errors N NAME   the next N Produce requests fail with NAME:
 *                           not_leader, request_timed_out, or drop (the
 *                           broker closes the connection)
 *   down ID | up ID         broker ID stops or starts taking connections
 *   topic NAME              another topic, made as the first
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <librdkafka/rdkafka.h>
#include <librdkafka/rdkafka_mock.h>

#define PRODUCE_API 0
#define PARTITIONS  3
#define REPLICAS    3

static void die(const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
    exit(1);
}

static int error_named(const char *name, rd_kafka_resp_err_t *e)
{
    if (strcmp(name, "not_leader") == 0)
        *e = RD_KAFKA_RESP_ERR_NOT_LEADER_FOR_PARTITION;
    else if (strcmp(name, "request_timed_out") == 0)
        *e = RD_KAFKA_RESP_ERR_REQUEST_TIMED_OUT;
    else if (strcmp(name, "drop") == 0)
        *e = RD_KAFKA_RESP_ERR__TRANSPORT;
    else
        return -1;
    return 0;
}

static int make_topic(rd_kafka_mock_cluster_t *mc, const char *topic)
{
    if (rd_kafka_mock_topic_create(mc, topic, PARTITIONS, REPLICAS) != 0)
        return -1;
    for (int p = 0; p < PARTITIONS; p++)
        rd_kafka_mock_partition_set_leader(mc, topic, p, 1);
    return 0;
}

static void command(rd_kafka_mock_cluster_t *mc, char *line)
{
    char name[64];
    unsigned n;
    int id;
    rd_kafka_resp_err_t e;

    if (sscanf(line, "produce-errors %u %63s", &n, name) == 2) {
        if (error_named(name, &e) != 0 || n > 64) {
            printf("error: produce-errors N not_leader|request_timed_out|"
                   "drop\n");
            return;
        }
        for (unsigned i = 0; i < n; i++)
            rd_kafka_mock_push_request_errors(mc, PRODUCE_API, 1, e);
    } else if (sscanf(line, "down %d", &id) == 1) {
        rd_kafka_mock_broker_set_down(mc, id);
    } else if (sscanf(line, "up %d", &id) == 1) {
        rd_kafka_mock_broker_set_up(mc, id);
    } else if (sscanf(line, "topic %63s", name) == 1) {
        if (make_topic(mc, name) != 0) {
            printf("error: cannot create topic %s\n", name);
            return;
        }
    } else {
        printf("error: unknown command\n");
        return;
    }
    printf("ok\n");
}

int main(int argc, char **argv)
{
    char err[512], line[256];
    rd_kafka_conf_t *conf = rd_kafka_conf_new();
    rd_kafka_mock_cluster_t *mc;
    rd_kafka_t *rk;

    if (argc != 2)
        die("usage: kafka_mock TOPIC");
    /* The cluster needs a handle of its own; it sends nothing. */
    rd_kafka_conf_set(conf, "log_level", "3", err, sizeof(err));
    rk = rd_kafka_new(RD_KAFKA_PRODUCER, conf, err, sizeof(err));
    if (!rk)
        die("kafka_mock: %s", err);
    mc = rd_kafka_mock_cluster_new(rk, 3);
    if (!mc)
        die("kafka_mock: no mock cluster");
    if (make_topic(mc, argv[1]) != 0)
        die("kafka_mock: cannot create topic %s", argv[1]);
    setvbuf(stdout, NULL, _IOLBF, 0);
    printf("%s\n", rd_kafka_mock_cluster_bootstraps(mc));
    while (fgets(line, sizeof(line), stdin))
        command(mc, line);
    rd_kafka_mock_cluster_destroy(mc);
    rd_kafka_destroy(rk);
    return 0;
}
