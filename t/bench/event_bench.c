/* event_bench.c - cost of event encoding, batching and batch compression, and of turning a
 * journal entry's items into an event's message and "journald" member (lf_jentry).
 *
 * Prints one table row per case: ns per event and MB/s of NDJSON produced (for zstd, of
 * NDJSON consumed). Messages are 100 bytes of log-like ASCII; timestamps advance 1 us per
 * event, so 1,000 events share a millisecond, as in a busy file. Median of 5 runs.
 * Allocations per event come from t/bench/alloc_count.c over all runs of a case, warm-up
 * (first buffer growth, first zstd context) included; "n/a" under AddressSanitizer.
 * The journal rows convert 12-item entries (MESSAGE and eleven mapped fields, as journald
 * writes them for a syslog daemon; 4 units, 16 pids, 64 messages), then the same with 4
 * more fields under journald.custom (include_fields: ["*"]); MB/s is message and member
 * bytes produced. */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "alloc_count.h"
#include "logferry/batch.h"
#include "logferry/jentry.h"

#define MSG_LEN    100
#define BATCH_SIZE 4096
#define RUNS       5

struct result {
    double ns_per_event;
    double mb_per_s;
};

static int64_t mono_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* 64 distinct messages, made before timing starts. */
static char messages[64][MSG_LEN];

static void make_messages(void)
{
    static const char words[] = "GET /api/v1/items?id=42 200 0.013s user=alice "
                                "agent=\"curl/8.0\" trace=0af7651916cd43dd8448eb211c80319c ";
    for (size_t i = 0; i < 64; i++) {
        for (size_t k = 0; k < MSG_LEN; k++)
            messages[i][k] = words[(k + i) % (sizeof(words) - 1)];
    }
}

static void die(const char *what, enum lf_err err)
{
    fprintf(stderr, "event_bench: %s: %s\n", what, lf_err_str(err));
    exit(1);
}

/* lf_event_encode_cached() of n events into a buffer reset every batch. */
static struct result bench_encode(struct lf_source *src, size_t n)
{
    struct lf_buf out;
    struct lf_ts_cache tsc;
    lf_buf_init(&out, (size_t)1 << 30);
    lf_ts_cache_init(&tsc);
    size_t bytes = 0;
    int64_t t0 = mono_ns();
    for (size_t i = 0; i < n; i++) {
        if (i % BATCH_SIZE == 0) {
            bytes += out.len;
            lf_buf_reset(&out);
        }
        const char *msg = messages[i & 63];
        struct lf_event ev = { lf_str_make(msg, MSG_LEN),
                               INT64_C(1796000523456000000) + (int64_t)i * 1000,
                               i * 101,
                               i * 101 + 101,
                               0,
                               src,
                               { NULL, 0 },
                               0 };
        enum lf_err err = lf_event_encode_cached(&out, &ev, &tsc);
        if (err)
            die("encode", err);
    }
    bytes += out.len;
    int64_t dt = mono_ns() - t0;
    lf_buf_release(&out);
    return (struct result){ (double)dt / (double)n, (double)bytes / ((double)dt / 1e9) / 1e6 };
}

/* lf_batch_add() of n events and lf_batch_ndjson() (and lf_batch_zstd() if level > 0) of each
 * full batch; with zstd, only the compression time is counted. */
static struct result bench_batch(struct lf_source *src, size_t n, int level)
{
    struct lf_batch *b = lf_batch_new(BATCH_SIZE, (size_t)BATCH_SIZE * MSG_LEN);
    if (b == NULL)
        die("batch", LF_ENOMEM);
    size_t bytes = 0;
    int64_t spent = 0;
    int64_t t0 = mono_ns();
    for (size_t i = 0; i < n; i++) {
        const char *msg = messages[i & 63];
        struct lf_event ev = { lf_str_make(msg, MSG_LEN),
                               INT64_C(1796000523456000000) + (int64_t)i * 1000,
                               i * 101,
                               i * 101 + 101,
                               0,
                               src,
                               { NULL, 0 },
                               0 };
        enum lf_err err = lf_batch_add(b, &ev);
        if (err)
            die("add", err);
        if (lf_batch_count(b) < BATCH_SIZE && i + 1 < n)
            continue;
        struct lf_str nd;
        err = lf_batch_ndjson(b, &nd);
        if (err)
            die("ndjson", err);
        bytes += nd.len;
        if (level > 0) {
            struct lf_str z;
            int64_t z0 = mono_ns();
            err = lf_batch_zstd(b, level, &z);
            if (err)
                die("zstd", err);
            spent += mono_ns() - z0;
        }
        lf_batch_reset(b);
    }
    int64_t dt = level > 0 ? spent : mono_ns() - t0;
    lf_batch_free(b);
    return (struct result){ (double)dt / (double)n, (double)bytes / ((double)dt / 1e9) / 1e6 };
}

#define J_ITEMS 16 /* 12 items, and 4 custom ones */

/* 64 journal entries' items, made before timing starts. */
static char j_items[64][J_ITEMS][160];

static void make_entries(void)
{
    static const char *const units[] = { "ssh.service", "cron.service", "nginx.service",
                                         "systemd-logind.service" };
    for (size_t i = 0; i < 64; i++) {
        const char *unit = units[i % 4];
        char(*it)[160] = j_items[i];
        snprintf(it[0], 160, "_BOOT_ID=5d1e3c0a9b8f4e7d8c6b5a4f3e2d1c0b");
        snprintf(it[1], 160, "_MACHINE_ID=4a1f0e0b5c6d4e7f8091a2b3c4d5e6f7");
        snprintf(it[2], 160, "_HOSTNAME=node-1");
        snprintf(it[3], 160, "PRIORITY=%zu", 3 + i % 4);
        snprintf(it[4], 160, "SYSLOG_FACILITY=%d", i % 8 == 0 ? 10 : 3);
        snprintf(it[5], 160, "SYSLOG_IDENTIFIER=%.*s", (int)(strchr(unit, '.') - unit), unit);
        snprintf(it[6], 160, "_PID=%zu", 1000 + i % 16);
        snprintf(it[7], 160, "_UID=0");
        snprintf(it[8], 160, "_COMM=%.*s", (int)(strchr(unit, '.') - unit), unit);
        snprintf(it[9], 160, "_TRANSPORT=syslog");
        snprintf(it[10], 160, "_SYSTEMD_UNIT=%s", unit);
        snprintf(it[11], 160, "MESSAGE=%.*s", MSG_LEN, messages[i]);
        snprintf(it[12], 160, "_SYSTEMD_CGROUP=/system.slice/%s", unit);
        snprintf(it[13], 160, "_SYSTEMD_SLICE=system.slice");
        snprintf(it[14], 160, "_SYSTEMD_INVOCATION_ID=8e1c7b2a3d4f4a5b9c6d7e8f9a0b1c%02zu", i % 16);
        snprintf(it[15], 160, "_CAP_EFFECTIVE=1ffffffffff");
    }
}

/* lf_jentry_begin/add/end of n entries of items items each. */
static struct result bench_jentry(size_t n, size_t items)
{
    static char *all[] = { (char *)"*" };
    struct lf_input_conf in;
    memset(&in, 0, sizeof(in));
    in.max_line_bytes = (size_t)1 << 20;
    if (items > 12) {
        in.include_fields = all;
        in.n_include_fields = 1;
    }
    struct lf_jentry *j = NULL;
    enum lf_err err = lf_jentry_new(&in, &j);
    if (err)
        die("jentry", err);
    size_t lens[64][J_ITEMS];
    for (size_t i = 0; i < 64; i++)
        for (size_t k = 0; k < J_ITEMS; k++)
            lens[i][k] = strlen(j_items[i][k]);
    size_t bytes = 0;
    int64_t t0 = mono_ns();
    for (size_t i = 0; i < n; i++) {
        lf_jentry_begin(j, UINT64_C(1796000523456000) + i);
        for (size_t k = 0; k < items && !err; k++)
            err = lf_jentry_add(j, j_items[i & 63][k], lens[i & 63][k]);
        struct lf_jentry_out out;
        if (!err)
            err = lf_jentry_end(j, &out);
        if (err)
            die("jentry", err);
        bytes += out.message.len + out.extra.len;
    }
    int64_t dt = mono_ns() - t0;
    lf_jentry_free(j);
    return (struct result){ (double)dt / (double)n, (double)bytes / ((double)dt / 1e9) / 1e6 };
}

static int cmp_result(const void *a, const void *b)
{
    double x = ((const struct result *)a)->ns_per_event;
    double y = ((const struct result *)b)->ns_per_event;
    return (x > y) - (x < y);
}

static void row(const char *name, struct lf_source *src, size_t n, int which)
{
    struct result r[RUNS];
    uint64_t calls0 = lf_alloc_count_now().calls;
    for (int k = 0; k < RUNS; k++)
        r[k] = which == 0   ? bench_encode(src, n)
               : which <= 2 ? bench_batch(src, n, which == 1 ? 0 : 1)
                            : bench_jentry(n, which == 3 ? 12 : J_ITEMS);
    uint64_t calls = lf_alloc_count_now().calls - calls0;
    qsort(r, RUNS, sizeof(r[0]), cmp_result);
    char allocs[16] = "n/a";
    if (lf_alloc_count_enabled())
        snprintf(allocs, sizeof(allocs), "%.6f", (double)calls / ((double)n * RUNS));
    printf("| %-32s | %8.1f | %8.0f | %-9s |\n", name, r[RUNS / 2].ns_per_event,
           r[RUNS / 2].mb_per_s, allocs);
}

int main(int argc, char **argv)
{
    make_messages();
    make_entries();
    size_t n = argc > 1 ? (size_t)strtoull(argv[1], NULL, 10) : 1000000;
    struct lf_source *src = NULL;
    enum lf_err err = lf_source_new("/var/log/app/access.log", "app", "node-1",
                                    "{\"env\":\"prod\"}", false, &src);
    if (err)
        die("source", err);
    printf("events: %zu x %d-byte messages, batches of %d, median of %d runs\n\n", n, MSG_LEN,
           BATCH_SIZE, RUNS);
    printf("| %-32s | %8s | %8s | %-9s |\n", "case", "ns/event", "MB/s", "allocs/ev");
    printf("|%s|---------:|---------:|----------:|\n", "----------------------------------");
    row("lf_event_encode (ts cached)", src, n, 0);
    row("lf_batch_add + lf_batch_ndjson", src, n, 1);
    row("lf_batch_zstd level 1", src, n, 2);
    row("lf_jentry, 12 items", src, n, 3);
    row("lf_jentry, 12 items + 4 custom", src, n, 4);
    lf_source_free(src);
    return 0;
}
