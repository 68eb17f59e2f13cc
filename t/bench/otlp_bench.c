/* otlp_bench.c - cost of the otlp output's encoder: an ExportLogsServiceRequest written from
 * events' JSON lines (protobuf and JSON), per event.
 *
 * Events are those of a container log with pod metadata, as the agent writes them (one
 * line: @timestamp, message of 100 bytes, log.file.path/offset, stream, input, host,
 * kubernetes with labels, level), 8 pods, batches of 4096 in 8 resources. Prints ns per
 * event, MB/s of request produced, and allocations per event counted by
 * t/bench/alloc_count.c over all runs, warm-up (the buffers' first growth) included;
 * "n/a" under AddressSanitizer. Median of 5 runs. Single thread. */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../../src/output/otlp_int.h"
#include "alloc_count.h"

#define BATCH_SIZE 4096
#define RUNS       5
#define PODS       8

static char *lines[BATCH_SIZE];
static size_t lens[BATCH_SIZE];

static int64_t mono_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static void make_lines(void)
{
    static const char *levels[] = { "info", "warn", "error", "debug" };
    for (size_t i = 0; i < BATCH_SIZE; i++) {
        size_t p = i % PODS;
        char *l = malloc(1024);
        if (l == NULL)
            exit(1);
        snprintf(l, 1024,
                 "{\"@timestamp\":\"2026-12-01T02:33:43.401Z\",\"message\":\"GET /api/v1/items?"
                 "id=%zu 200 0.013s user=alice agent=\\\"curl/8.0\\\" trace=0af7651916cd43dd84\","
                 "\"log\":{\"file\":{\"path\":\"/var/log/containers/cart-%zu_shop_cart-0a1b2c"
                 ".log\"},\"offset\":%zu,\"level\":\"%s\"},\"stream\":\"stdout\","
                 "\"input\":{\"id\":\"containers\"},\"host\":{\"name\":\"node-1\"},"
                 "\"kubernetes\":{\"namespace\":\"shop\",\"pod\":{\"name\":\"cart-%zu\","
                 "\"uid\":\"5f0c-%zu\"},\"container\":{\"name\":\"cart\"},\"node\":{\"name\":"
                 "\"node-1\"},\"labels\":{\"app\":\"cart\",\"tier\":\"web\"}},"
                 "\"http\":{\"status\":200,\"duration\":0.013}}",
                 i, p, i * 180, levels[i % 4], p, p);
        lines[i] = l;
        lens[i] = strlen(l);
    }
}

struct result {
    double ns_per_event;
    double mb_per_s;
};

/* n events through the encoder, grouped by pod as the output groups them; with lookup,
 * each event's resource members are also found (lf_otlp_resource_values()), as the output
 * does before grouping. */
static struct result bench(struct lf_otlp_enc *e, size_t n, bool lookup)
{
    struct lf_buf out;
    lf_buf_init(&out, (size_t)1 << 30);
    size_t bytes = 0;
    int64_t t0 = mono_ns();
    for (size_t done = 0; done < n; done += BATCH_SIZE) {
        enum lf_err err = lf_otlp_begin(e, &out);
        for (size_t p = 0; p < PODS && !err; p++) {
            struct lf_str vals[LF_OTLP_N_RES] = {
                LF_STR_LIT("\"node-1\""), LF_STR_LIT("\"shop\""), LF_STR_LIT("\"cart-1\""),
                LF_STR_LIT("\"cart\""),   LF_STR_LIT("\"5f0c\""), LF_STR_LIT("\"node-1\""),
            };
            err = lf_otlp_resource(e, p == 0, vals);
            for (size_t i = p; i < BATCH_SIZE && lookup; i += PODS)
                lf_otlp_resource_values(lf_str_make(lines[i], lens[i]), vals);
            for (size_t i = p; i < BATCH_SIZE && !err; i += PODS)
                err = lf_otlp_record(e, i == p, lf_str_make(lines[i], lens[i]),
                                     INT64_C(1764554023401000000) + (int64_t)i,
                                     INT64_C(1764554023501000000));
            if (!err)
                err = lf_otlp_resource_end(e);
        }
        if (!err)
            err = lf_otlp_end(e);
        if (err) {
            fprintf(stderr, "otlp_bench: %s\n", lf_err_str(err));
            exit(1);
        }
        bytes += out.len;
    }
    int64_t dt = mono_ns() - t0;
    lf_buf_release(&out);
    return (struct result){ (double)dt / (double)n, (double)bytes / ((double)dt / 1e9) / 1e6 };
}

static int cmp_result(const void *a, const void *b)
{
    double x = ((const struct result *)a)->ns_per_event;
    double y = ((const struct result *)b)->ns_per_event;
    return (x > y) - (x < y);
}

static void row(const char *name, bool json, bool lookup, size_t n)
{
    struct lf_otlp_enc e;
    memset(&e, 0, sizeof(e));
    if (lf_otlp_enc_init(&e, json, "log.level", "{\"service.name\":\"shop\"}")) {
        fprintf(stderr, "otlp_bench: init\n");
        exit(1);
    }
    struct result r[RUNS];
    uint64_t calls0 = lf_alloc_count_now().calls;
    for (int k = 0; k < RUNS; k++)
        r[k] = bench(&e, n, lookup);
    uint64_t calls = lf_alloc_count_now().calls - calls0;
    lf_otlp_enc_release(&e);
    qsort(r, RUNS, sizeof(r[0]), cmp_result);
    char allocs[16] = "n/a";
    if (lf_alloc_count_enabled())
        snprintf(allocs, sizeof(allocs), "%.6f", (double)calls / ((double)n * RUNS));
    printf("| %-32s | %8.1f | %8.0f | %-9s |\n", name, r[RUNS / 2].ns_per_event,
           r[RUNS / 2].mb_per_s, allocs);
}

int main(int argc, char **argv)
{
    size_t n = argc > 1 ? (size_t)strtoull(argv[1], NULL, 10) : 409600;
    n = (n + BATCH_SIZE - 1) / BATCH_SIZE * BATCH_SIZE;
    make_lines();
    printf("events: %zu container events (~%zu bytes of JSON each), batches of %d in %d "
           "resources, median of %d runs\n\n",
           n, strlen(lines[0]), BATCH_SIZE, PODS, RUNS);
    printf("| %-32s | %8s | %8s | %-9s |\n", "case", "ns/event", "MB/s", "allocs/ev");
    printf("|%s|---------:|---------:|----------:|\n", "----------------------------------");
    row("otlp protobuf, from the JSON line", false, false, n);
    row("otlp JSON, from the JSON line", true, false, n);
    row("otlp protobuf + resource lookup", false, true, n);
    for (size_t i = 0; i < BATCH_SIZE; i++)
        free(lines[i]);
    return 0;
}
