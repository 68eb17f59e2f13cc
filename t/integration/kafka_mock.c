/* kafka_mock.c - a Kafka cluster for the kafka output's tests: librdkafka's mock cluster
 * (the real protocol: metadata, idempotent produce, fetch) with 3 brokers in this process.
 *
 * Prints the bootstrap address as its first line on stdout, then reads one command a line
 * on stdin and answers each with one line, "ok ..." or "error ...":
 *
 *   down ID|all        disconnects the broker(s) and refuses new connections
 *   up ID|all          lets them back
 *   rtt ID|all MS      delays every answer of the broker(s) by MS
 *   errors CNT CODE    the next CNT produce requests fail with Kafka error CODE (numeric)
 *   create TOPIC N     creates TOPIC with N partitions
 *   count TOPIC        answers "ok N": messages ever appended to TOPIC (high watermarks
 *                      summed; the mock cluster drops old log segments, so fewer may be left)
 *   dump TOPIC FILE    writes every message of TOPIC to FILE, one line each:
 *                      partition TAB offset TAB key in hex ("-" for none) TAB payload
 *                      and answers "ok N"; an error if old segments were dropped
 *   quit               ends
 *
 * End of input ends it too, so a test that dies takes its cluster with it. */
#include "config.h"

#include <inttypes.h>
#include <librdkafka/rdkafka.h>
#include <librdkafka/rdkafka_mock.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define BROKERS     3
#define WAIT_MS     20000 /* a dump or count gives up after this long */
#define LINE_MAX_SZ 4096

static rd_kafka_t *new_handle(rd_kafka_type_t type, const char *bootstrap)
{
    char why[512];
    rd_kafka_conf_t *conf = rd_kafka_conf_new();
    const char *const props[][2] = {
        { "bootstrap.servers", bootstrap },  { "group.id", "kafka_mock" },
        { "enable.auto.commit", "false" },   { "enable.partition.eof", "true" },
        { "auto.offset.reset", "earliest" }, { "log_level", "2" },
    };
    /* The cluster's host handle gets only the last: it connects to nothing. */
    size_t n = sizeof(props) / sizeof(props[0]);
    size_t first = type == RD_KAFKA_CONSUMER ? 0 : n - 1;
    for (size_t i = first; i < n; i++) {
        if (props[i][1] != NULL &&
            rd_kafka_conf_set(conf, props[i][0], props[i][1], why, sizeof(why)) != 0) {
            fprintf(stderr, "kafka_mock: %s\n", why);
            exit(1);
        }
    }
    rd_kafka_t *rk = rd_kafka_new(type, conf, why, sizeof(why));
    if (rk == NULL) {
        fprintf(stderr, "kafka_mock: %s\n", why);
        exit(1);
    }
    return rk;
}

/* The partitions of topic, from the cluster's metadata; -1 if it does not exist. */
static int partition_count(rd_kafka_t *rk, const char *topic)
{
    rd_kafka_topic_t *rkt = rd_kafka_topic_new(rk, topic, NULL);
    const struct rd_kafka_metadata *md = NULL;
    int n = -1;
    if (rd_kafka_metadata(rk, 0, rkt, &md, WAIT_MS) == RD_KAFKA_RESP_ERR_NO_ERROR &&
        md->topic_cnt == 1 && md->topics[0].err == RD_KAFKA_RESP_ERR_NO_ERROR)
        n = md->topics[0].partition_cnt;
    if (md != NULL)
        rd_kafka_metadata_destroy(md);
    rd_kafka_topic_destroy(rkt);
    return n;
}

static void cmd_count(rd_kafka_t *consumer, const char *topic)
{
    int parts = partition_count(consumer, topic);
    if (parts < 0) {
        printf("ok 0\n");
        return;
    }
    int64_t total = 0;
    for (int p = 0; p < parts; p++) {
        int64_t lo = 0;
        int64_t hi = 0;
        rd_kafka_resp_err_t err =
            rd_kafka_query_watermark_offsets(consumer, topic, p, &lo, &hi, WAIT_MS);
        if (err) {
            printf("error %s\n", rd_kafka_err2str(err));
            return;
        }
        total += hi; /* appended ever: the mock drops old segments, moving lo */
    }
    printf("ok %" PRId64 "\n", total);
}

static void write_message(FILE *f, const rd_kafka_message_t *m)
{
    fprintf(f, "%" PRId32 "\t%" PRId64 "\t", m->partition, m->offset);
    if (m->key == NULL)
        fputc('-', f);
    for (size_t i = 0; m->key != NULL && i < m->key_len; i++)
        fprintf(f, "%02x", ((const unsigned char *)m->key)[i]);
    fputc('\t', f);
    fwrite(m->payload, 1, m->len, f);
    fputc('\n', f);
}

static void cmd_dump(rd_kafka_t *consumer, const char *topic, const char *path)
{
    int parts = partition_count(consumer, topic);
    FILE *f = fopen(path, "w");
    if (f == NULL) {
        printf("error cannot write %s\n", path);
        return;
    }
    if (parts <= 0) {
        fclose(f);
        printf("ok 0\n");
        return;
    }
    for (int p = 0; p < parts; p++) {
        int64_t lo = 0;
        int64_t hi = 0;
        if (rd_kafka_query_watermark_offsets(consumer, topic, p, &lo, &hi, WAIT_MS) == 0 &&
            lo > 0) {
            /* a dump missing messages would pass for a loss: say so instead */
            fclose(f);
            printf("error partition %d starts at %" PRId64 ": old segments dropped\n", p, lo);
            return;
        }
    }
    rd_kafka_topic_partition_list_t *list = rd_kafka_topic_partition_list_new(parts);
    for (int p = 0; p < parts; p++)
        rd_kafka_topic_partition_list_add(list, topic, p)->offset = RD_KAFKA_OFFSET_BEGINNING;
    rd_kafka_resp_err_t err = rd_kafka_assign(consumer, list);
    rd_kafka_topic_partition_list_destroy(list);
    if (err) {
        fclose(f);
        printf("error assign: %s\n", rd_kafka_err2str(err));
        return;
    }
    int eof = 0;
    long n = 0;
    time_t give_up = time(NULL) + WAIT_MS / 1000;
    while (eof < parts && time(NULL) < give_up) {
        rd_kafka_message_t *m = rd_kafka_consumer_poll(consumer, 100);
        if (m == NULL)
            continue;
        if (m->err == RD_KAFKA_RESP_ERR__PARTITION_EOF) {
            eof++;
        } else if (m->err == RD_KAFKA_RESP_ERR_NO_ERROR) {
            write_message(f, m);
            n++;
        }
        rd_kafka_message_destroy(m);
    }
    err = rd_kafka_assign(consumer, NULL);
    fclose(f);
    if (eof < parts)
        printf("error only %d of %d partitions read to their end\n", eof, parts);
    else
        printf("ok %ld\n", n);
}

/* Applies down/up/rtt to broker id, or to every broker for "all". */
static void cmd_broker(rd_kafka_mock_cluster_t *mc, const char *verb, const char *which, int ms)
{
    int first = 1;
    int last = BROKERS;
    if (strcmp(which, "all") != 0)
        first = last = atoi(which);
    for (int id = first; id <= last; id++) {
        rd_kafka_resp_err_t err = RD_KAFKA_RESP_ERR_NO_ERROR;
        if (strcmp(verb, "down") == 0)
            err = rd_kafka_mock_broker_set_down(mc, id);
        else if (strcmp(verb, "up") == 0)
            err = rd_kafka_mock_broker_set_up(mc, id);
        else
            err = rd_kafka_mock_broker_set_rtt(mc, id, ms);
        if (err) {
            printf("error broker %d: %s\n", id, rd_kafka_err2str(err));
            return;
        }
    }
    printf("ok\n");
}

int main(void)
{
    rd_kafka_t *host = new_handle(RD_KAFKA_PRODUCER, NULL);
    rd_kafka_mock_cluster_t *mc = rd_kafka_mock_cluster_new(host, BROKERS);
    if (mc == NULL) {
        fprintf(stderr, "kafka_mock: cannot start the mock cluster\n");
        return 1;
    }
    const char *bootstrap = rd_kafka_mock_cluster_bootstraps(mc);
    rd_kafka_t *consumer = new_handle(RD_KAFKA_CONSUMER, bootstrap);
    printf("%s\n", bootstrap);
    fflush(stdout);

    char line[LINE_MAX_SZ];
    while (fgets(line, sizeof(line), stdin) != NULL) {
        char verb[32] = "";
        char a[1024] = "";
        char b[2048] = "";
        int n = sscanf(line, "%31s %1023s %2047s", verb, a, b);
        if (n < 1)
            continue;
        if (strcmp(verb, "quit") == 0) {
            printf("ok\n");
            fflush(stdout);
            break;
        } else if ((strcmp(verb, "down") == 0 || strcmp(verb, "up") == 0) && n >= 2) {
            cmd_broker(mc, verb, a, 0);
        } else if (strcmp(verb, "rtt") == 0 && n == 3) {
            cmd_broker(mc, verb, a, atoi(b));
        } else if (strcmp(verb, "errors") == 0 && n == 3) {
            rd_kafka_resp_err_t codes[1] = { (rd_kafka_resp_err_t)atoi(b) };
            size_t cnt = (size_t)atol(a);
            for (size_t i = 0; i < cnt; i++)
                rd_kafka_mock_push_request_errors_array(mc, 0 /* Produce */, 1, codes);
            printf("ok\n");
        } else if (strcmp(verb, "create") == 0 && n == 3) {
            rd_kafka_resp_err_t err = rd_kafka_mock_topic_create(mc, a, atoi(b), 1);
            if (err)
                printf("error %s\n", rd_kafka_err2str(err));
            else
                printf("ok\n");
        } else if (strcmp(verb, "count") == 0 && n == 2) {
            cmd_count(consumer, a);
        } else if (strcmp(verb, "dump") == 0 && n == 3) {
            cmd_dump(consumer, a, b);
        } else {
            printf("error unknown command: %s", line);
        }
        fflush(stdout);
    }
    rd_kafka_consumer_close(consumer);
    rd_kafka_destroy(consumer);
    rd_kafka_mock_cluster_destroy(mc);
    rd_kafka_destroy(host);
    return 0;
}
