/* stage_bench.c - cost per event of each stage and of a Kubernetes-style chain.
 *
 * Each case builds a chain from a parsers list (as in the YAML) and pushes 200,000 lines
 * through it: 64 distinct lines of about 120 bytes, cycled. Prints ns per event (median of
 * 5 runs) and allocations per event in steady state: counted (t/bench/alloc_count.c) over
 * the timed runs only, after a warm-up run has grown the stages' buffers; "n/a" under
 * AddressSanitizer. A case whose stage the build does not have yet prints "not built".
 * An argument runs only the cases whose name contains it (`stage_bench syslog`). A name
 * with "1 pod" or "10,000 pods" in it gives event i the member "pod":"pod-K", K = i mod the
 * pods, as a container stage would (the throttle and sample rows: their cost alone). The
 * "cond:" rows time a condition alone (a `when`), on one 200-byte event with members. */
#include "config.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "alloc_count.h"
#include "logferry/cond.h"
#include "logferry/config.h"
#include "logferry/kube.h"
#include "logferry/stage.h"

#define N_LINES 64
#define EVENTS  200000
#define RUNS    5

enum line_kind {
    CRI,
    CRI_PARTIAL,
    DOCKER,
    JSON,
    PLAIN,
    JAVA,
    APP,
    LOGFMT,
    S3164,
    S3339,
    S5424,
    TS_LAYOUT,
    TS_RFC3339,
    TS_RFC3164,
    ACCESS,
    RD_CLEAN,  /* 200 bytes, nothing for redact */
    RD_SECRETS /* 200 bytes: an e-mail, an IPv4, a card, a password, an AWS key, a bearer */
};

struct bench_case {
    const char *name;
    const char *parsers;  /* YAML flow list */
    enum line_kind lines; /* a name with "kubernetes" in it runs with the pod's metadata
                             in a (filled) kubernetes cache */
};

static const struct bench_case cases[] = {
    { "container cri", "[{container: {format: cri}}]", CRI },
    { "container cri + kubernetes metadata", "[{container: {format: cri}}]", CRI },
    { "container cri, 1 in 4 partial", "[{container: {format: cri}}]", CRI_PARTIAL },
    { "container docker", "[{container: {format: docker}}]", DOCKER },
    { "container auto (docker lines)", "[{container: {}}]", DOCKER },
    { "include_lines (1 regex)", "[{include_lines: ['level\":\"(warn|error)']}]", JSON },
    { "exclude_lines (1 regex)", "[{exclude_lines: ['^DBG']}]", PLAIN },
    { "ndjson (root)", "[{ndjson: {}}]", JSON },
    { "ndjson (target)", "[{ndjson: {target: app}}]", JSON },
    { "multiline java", "[{multiline: {preset: java}}]", JAVA },
    { "dissect (5 keys, 1 append)",
      "[{dissect: {tokenizer: '%{ts} %{+ts} %{level} [%{component}] %{msg}'}}]", APP },
    { "dissect (target, trim both)",
      "[{dissect: {tokenizer: '%{ts} %{+ts} %{level} [%{component}] %{msg}', target: app, "
      "trim_values: both}}]",
      APP },
    { "kv (logfmt, 6 pairs, 1 quoted)", "[{kv: {}}]", LOGFMT },
    { "kv (target, include_keys)", "[{kv: {target: app, include_keys: [level, msg, ms]}}]",
      LOGFMT },
    { "syslog (rfc3164, Debian traditional)", "[{syslog: {}}]", S3164 },
    { "syslog (rfc3339 time, target)", "[{syslog: {target: syslog}}]", S3339 },
    { "syslog (rfc5424, 1 SD element, 3 params)", "[{syslog: {format: rfc5424}}]", S5424 },
    /* timestamp alone: field message is the time itself, so no other stage is timed */
    { "timestamp (layout %f, Europe/Berlin)",
      "[{timestamp: {field: message, formats: ['%Y-%m-%d %H:%M:%S.%f'], timezone: Europe/Berlin}}]",
      TS_LAYOUT },
    { "timestamp (rfc3339)", "[{timestamp: {field: message, formats: [rfc3339]}}]", TS_RFC3339 },
    { "timestamp (rfc3164, year inferred, Berlin)",
      "[{timestamp: {field: message, formats: [rfc3164], timezone: Europe/Berlin}}]", TS_RFC3164 },
    { "timestamp (3rd format: unix, rfc3339, layout)",
      "[{timestamp: {field: message, formats: [unix, rfc3339, '%Y-%m-%d %H:%M:%S.%f'], "
      "timezone: Europe/Berlin}}]",
      TS_LAYOUT },
    { "dissect+timestamp (member, remove_field)",
      "[{dissect: {tokenizer: '%{ts} %{+ts} %{level} [%{component}] %{msg}'}}, "
      "{timestamp: {field: ts, formats: ['%Y-%m-%d %H:%M:%S.%f'], timezone: Europe/Berlin, "
      "remove_field: true}}]",
      APP },
    { "regex (4 groups, 100-byte line)",
      "[{regex: {pattern: '^(?<ts>\\S+ \\S+) (?<level>\\w+) \\[(?<component>[^\\]]+)\\] "
      "(?<msg>.*)$'}}]",
      APP },
    { "regex (target, 6 groups, 1 int)",
      "[{regex: {pattern: '^(?<ts>\\S+ \\S+) (?<level>\\w+) \\[(?<component>[^\\]]+)\\] "
      "(?<method>[A-Z]+) (?<path>\\S+) (?<status:int>\\d+)', target: app}}]",
      APP },
    { "regex (no match, on_failure keep)", "[{regex: {pattern: '^(?<ts>\\d+) (?<x>nope)'}}]", APP },
    { "access_log combined", "[{access_log: {format: combined}}]", ACCESS },
    { "access_log common (combined lines)", "[{access_log: {format: common}}]", ACCESS },
    { "fields (add 2) on bare events", "[{fields: {add: {env: prod, team.owner: db}}}]", APP },
    { "dissect + fields (1 rename, 1 drop, 1 add)",
      "[{dissect: {tokenizer: '%{ts} %{+ts} %{level} [%{component}] %{msg}'}}, "
      "{fields: {rename: {msg: message}, drop: [ts], add: {env: prod}}}]",
      APP },
    { "access_log + fields (rename nested, drop)",
      "[{access_log: {}}, {fields: {rename: {source.ip: client.ip}, drop: [url]}}]", ACCESS },
    /* the chain of t/bench/e2e_bench.py's second table, on its kind of line */
    { "chain: syslog+timestamp+fields (e2e)",
      "[{syslog: {format: rfc3164}}, {timestamp: {formats: [rfc3164], timezone: UTC, "
      "remove_field: true}}, {fields: {rename: {appname: process.name}, add: {env: bench}}}]",
      S3164 },
    { "chain: container+multiline+exclude+ndjson",
      "[{container: {}}, {multiline: {preset: java}}, {exclude_lines: ['\"level\":\"debug\"']}, "
      "{ndjson: {}}]",
      CRI },
    { "chain: container+exclude+ndjson",
      "[{container: {}}, {exclude_lines: ['\"level\":\"debug\"']}, {ndjson: {}}]", CRI },
    { "throttle (no key: 1 bucket)", "[{throttle: {rate: 1000/s}}]", APP },
    { "throttle (key, 1 pod)", "[{throttle: {rate: 1000/s, key: '%{pod}'}}]", APP },
    { "throttle (key, 10,000 pods)", "[{throttle: {rate: 1000/s, key: '%{pod}'}}]", APP },
    { "throttle (10,000 pods, max_keys 1,000)",
      "[{throttle: {rate: 1000/s, key: '%{pod}', max_keys: 1000}}]", APP },
    { "sample (key, 10,000 pods)", "[{sample: {rate: 10, key: '%{pod}'}}]", APP },
    { "sample (no key: a counter)", "[{sample: {rate: 10}}]", APP },
    { "redact (every pattern, 200 bytes, nothing found)", "[{redact: {}}]", RD_CLEAN },
    { "redact (every pattern, 200 bytes, 6 found)", "[{redact: {}}]", RD_SECRETS },
    { "redact (hash: sha256, 6 found)", "[{redact: {hash: sha256, hash_key: bench-key}}]",
      RD_SECRETS },
};

#define MAX_PODS 10000
static char pods[MAX_PODS][24];
static size_t pod_lens[MAX_PODS];

/* The pods a case's events name (see the top). */
static size_t pods_of(const char *name)
{
    return strstr(name, "10,000 pods") != NULL ? MAX_PODS : strstr(name, "1 pod") != NULL;
}

static char lines[N_LINES][256];
static size_t lens[N_LINES];
static uint64_t sunk;

static int64_t mono_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static void make_lines(enum line_kind kind)
{
    static const char *const levels[] = { "info", "warn", "debug", "error" };
    for (size_t i = 0; i < N_LINES; i++) {
        char msg[160];
        snprintf(msg, sizeof(msg),
                 "{\"level\":\"%s\",\"msg\":\"GET /api/v1/items?id=%zu 200\",\"ms\":%zu.%zu,"
                 "\"trace\":\"0af7651916cd43dd8448eb211c80319c\"}",
                 levels[i % 4], i, i % 50, i % 10);
        int n = 0;
        switch (kind) {
        case CRI:
        case CRI_PARTIAL:
            n = snprintf(lines[i], sizeof(lines[i]), "2026-11-30T01:02:03.%09zuZ stdout %c %s", i,
                         kind == CRI_PARTIAL && i % 4 == 0 ? 'P' : 'F', msg);
            break;
        case DOCKER:
            n = snprintf(lines[i], sizeof(lines[i]),
                         "{\"log\":\"GET /api/v1/items?id=%zu 200 \\\"curl/8.0\\\" "
                         "trace=0af7651916cd43dd8448eb211c80319c\\n\",\"stream\":\"stdout\","
                         "\"time\":\"2026-11-30T01:02:03.%09zuZ\"}",
                         i, i);
            break;
        case JSON:
            n = snprintf(lines[i], sizeof(lines[i]), "%s", msg);
            break;
        case PLAIN:
            n = snprintf(lines[i], sizeof(lines[i]), "%s 2026-11-30 01:02:03 %s",
                         i % 8 == 0 ? "DBG" : "INF", msg);
            break;
        case APP:
            n = snprintf(lines[i], sizeof(lines[i]),
                         "2026-11-30 12:00:01.%03zu %s [db.pool-%zu] GET /api/v1/items?id=%zu 200 "
                         "trace=0af7651916cd43dd8448eb211c80319c",
                         i, levels[i % 4], i % 8, i);
            break;
        case LOGFMT:
            n = snprintf(lines[i], sizeof(lines[i]),
                         "ts=2026-11-30T12:00:01.%03zuZ level=%s msg=\"GET /api/v1/items?id=%zu\" "
                         "status=200 ms=%zu trace=0af7651916cd43dd8448eb211c80319c",
                         i, levels[i % 4], i, i % 50);
            break;
        case S3164:
            n = snprintf(lines[i], sizeof(lines[i]),
                         "Dec %2zu 00:08:%02zu web-1 sshd[%zu]: Accepted publickey for deploy "
                         "from 198.51.100.%zu port 52214 ssh2",
                         i % 28 + 1, i % 60, 4000 + i, i);
            break;
        case S3339:
            n = snprintf(lines[i], sizeof(lines[i]),
                         "2026-12-01T00:08:%02zu.%06zu+00:00 web-1 CRON[%zu]: (root) CMD "
                         "(command -v debian-sa1 > /dev/null && debian-sa1 1 1)",
                         i % 60, i, 4000 + i);
            break;
        case S5424:
            n = snprintf(lines[i], sizeof(lines[i]),
                         "<165>1 2026-12-01T00:08:%02zu.%03zuZ web-1 shop %zu ORDER "
                         "[ord@32473 id=\"%zu\" cur=\"EUR\" sum=\"19.90\"] order placed",
                         i % 60, i, 4000 + i, i);
            break;
        case TS_LAYOUT:
            n = snprintf(lines[i], sizeof(lines[i]), "2026-%02zu-%02zu 12:%02zu:01.%03zu",
                         i % 12 + 1, i % 28 + 1, i % 60, i);
            break;
        case TS_RFC3339:
            n = snprintf(lines[i], sizeof(lines[i]), "2026-11-%02zuT12:%02zu:01.%09zu+01:00",
                         i % 28 + 1, i % 60, i);
            break;
        case TS_RFC3164:
            n = snprintf(lines[i], sizeof(lines[i]), "%s %2zu 00:%02zu:01",
                         i % 2 == 0 ? "Dec" : "Mar", i % 28 + 1, i % 60);
            break;
        case ACCESS:
            n = snprintf(lines[i], sizeof(lines[i]),
                         "%s - - [30/Nov/2026:13:55:%02zu +0100] \"GET /api/v1/items?id=%zu "
                         "HTTP/1.1\" 200 %zu \"https://shop.example.com/cart\" \"Mozilla/5.0 "
                         "(X11; Linux x86_64; rv:120.0) Gecko/20100101 Firefox/120.0\"",
                         i % 2 ? "2001:db8::7" : "203.0.113.9", i % 60, i, 512 + i);
            break;
        case RD_CLEAN:
            n = snprintf(lines[i], sizeof(lines[i]),
                         "2026-11-30 12:00:01.%03zu INFO [db.pool-%zu] GET /api/v1/items?id=%zu "
                         "200 in %zu ms user_agent=\"curl/8.0\" "
                         "trace=0af7651916cd43dd8448eb211c80319c span=b7ad6b7169203331 "
                         "region=eu-west-1 cache=hit",
                         i, i % 8, i, i % 50);
            break;
        case RD_SECRETS:
            n = snprintf(lines[i], sizeof(lines[i]),
                         "2026-11-30 12:00:01.%03zu INFO [auth] login jane.doe%zu@example.com "
                         "from 203.0.113.%zu card 4111 1111 1111 1111 password=hunter%zu key "
                         "AKIAIOSFODNN7EXAMPLE Authorization: Bearer 9f8e7d6c5b4a3f2e1d",
                         i, i, i, i);
            break;
        case JAVA:
            if (i % 4 == 0)
                n = snprintf(lines[i], sizeof(lines[i]), "2026-11-30 ERROR failed %s", msg);
            else
                n = snprintf(lines[i], sizeof(lines[i]), "\tat com.example.Svc.run(Svc.java:%zu)",
                             i);
            break;
        }
        lens[i] = (size_t)n;
    }
}

static enum lf_err count(void *arg, const struct lf_event *ev)
{
    (void)arg;
    (void)ev;
    sunk++;
    return LF_OK;
}

static void push(struct lf_chain *c, struct lf_source *src, size_t n, size_t keys)
{
    uint64_t off = 0;
    for (size_t i = 0; i < n; i++) {
        size_t k = i % N_LINES;
        struct lf_str extra =
            keys > 0 ? lf_str_make(pods[i % keys], pod_lens[i % keys]) : lf_str_make(NULL, 0);
        struct lf_event ev = {
            lf_str_make(lines[k], lens[k]), 0, off, off + lens[k] + 1, 0, src, extra, 0
        };
        off += lens[k] + 1;
        if (lf_chain_process(c, &ev, 0)) {
            fprintf(stderr, "stage_bench: process failed\n");
            exit(1);
        }
    }
    if (lf_chain_flush(c)) {
        fprintf(stderr, "stage_bench: flush failed\n");
        exit(1);
    }
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a;
    double y = *(const double *)b;
    return (x > y) - (x < y);
}

/* A cache holding the bench file's pod as a Deployment's, with ten labels, two
 * annotations kept and two containers: what a busy node's pods look like. */
static struct lf_kube_cache *kube_cache(void)
{
    static const char pod[] =
        "{\"kind\":\"Pod\",\"apiVersion\":\"v1\",\"metadata\":{\"name\":\"web-7d4b9-xk2lp\","
        "\"namespace\":\"shop\",\"uid\":\"6f1c2b7e-3a4d-4e5f-8a9b-0c1d2e3f4a5b\","
        "\"labels\":{\"app\":\"web\",\"app.kubernetes.io/name\":\"web\","
        "\"app.kubernetes.io/instance\":\"web-prod\",\"app.kubernetes.io/version\":\"1.25.3\","
        "\"app.kubernetes.io/component\":\"frontend\",\"app.kubernetes.io/part-of\":\"shop\","
        "\"app.kubernetes.io/managed-by\":\"helm\",\"team\":\"payments\",\"tier\":\"web\","
        "\"pod-template-hash\":\"7d4b9\"},\"annotations\":{\"prometheus.io/scrape\":\"true\","
        "\"prometheus.io/port\":\"9113\"},\"ownerReferences\":[{\"apiVersion\":\"apps/v1\","
        "\"kind\":\"ReplicaSet\",\"name\":\"web-7d4b9\",\"uid\":\"1\",\"controller\":true}]},"
        "\"spec\":{\"nodeName\":\"node-1\",\"containers\":[{\"name\":\"nginx\",\"image\":"
        "\"nginx:1.25.3\"},{\"name\":\"exporter\",\"image\":\"nginx/nginx-prometheus-exporter:"
        "1.1\"}]},\"status\":{\"podIP\":\"10.244.1.17\",\"phase\":\"Running\"}}";
    static const char *const keep[] = { "prometheus.io/*" };
    struct lf_kube_render_opts opts = {
        .labels = true, .dedot = true, .ann_include = keep, .n_ann_include = 1
    };
    json_t *j = json_loads(pod, 0, NULL);
    struct lf_kube_pod *p = NULL;
    struct lf_kube_cache *c = NULL;
    struct lf_errbuf eb = { "" };
    if (j == NULL || lf_kube_pod_from_json(j, &opts, &p, &eb) || lf_kube_cache_new(60000, &c)) {
        fprintf(stderr, "stage_bench: kubernetes cache: %s\n", eb.msg);
        exit(1);
    }
    json_decref(j);
    lf_kube_cache_put_pod(c, p);
    return c;
}

static void run_case(const struct bench_case *bc, struct lf_source *src)
{
    struct lf_kube_cache *kc = strstr(bc->name, "kubernetes") != NULL ? kube_cache() : NULL;
    lf_kube_cache_set_current(kc);
    char yaml[1024];
    snprintf(yaml, sizeof(yaml),
             "inputs:\n  - id: b\n    paths: ['/x/*.log']\n    parsers: %s\noutputs:\n"
             "  - name: c\n    type: console\n",
             bc->parsers);
    struct lf_config *cfg = NULL;
    struct lf_buf errors;
    lf_buf_init(&errors, 1 << 16);
    if (lf_config_load_mem("bench.yml", yaml, strlen(yaml), &cfg, &errors)) {
        fprintf(stderr, "stage_bench: %.*s", (int)errors.len, errors.ptr);
        exit(1);
    }
    lf_buf_release(&errors);
    struct lf_chain_spec *spec = NULL;
    struct lf_errbuf eb = { "" };
    if (lf_chain_spec_new(&cfg->inputs[0], 0, &spec, NULL, &eb)) {
        printf("| %-44s | %10s | %13s |\n", bc->name, "not built", "-");
        lf_config_free(cfg);
        return;
    }
    struct lf_stage_out sink = { count, NULL };
    struct lf_chain *c = NULL;
    if (lf_chain_new(spec, &sink, &c)) {
        fprintf(stderr, "stage_bench: out of memory\n");
        exit(1);
    }
    make_lines(bc->lines);
    size_t keys = pods_of(bc->name);
    push(c, src, EVENTS / 10, keys); /* warm-up: buffers grow to the longest event */
    double ns[RUNS];
    struct lf_alloc_count a0 = lf_alloc_count_now();
    for (int r = 0; r < RUNS; r++) {
        int64_t t0 = mono_ns();
        push(c, src, EVENTS, keys);
        ns[r] = (double)(mono_ns() - t0) / EVENTS;
    }
    struct lf_alloc_count a1 = lf_alloc_count_now();
    qsort(ns, RUNS, sizeof(ns[0]), cmp_double);
    char allocs[32] = "n/a";
    if (lf_alloc_count_enabled())
        snprintf(allocs, sizeof(allocs), "%.2f", (double)(a1.calls - a0.calls) / (RUNS * EVENTS));
    printf("| %-44s | %10.0f | %13s |\n", bc->name, ns[RUNS / 2], allocs);
    lf_chain_free(c);
    lf_chain_spec_free(spec);
    lf_config_free(cfg);
    lf_kube_cache_set_current(NULL);
    lf_kube_cache_free(kc); /* after the chain, whose stage held its record */
}

/* A condition alone (lf_cond_eval(), as a stage's `when` or drop runs it) on a 200-byte
 * event: a 96-byte message, 104 bytes of members as ndjson and kubernetes would leave them. */
static void run_cond_case(const char *name, const char *expr, struct lf_source *src)
{
    static const char msg[] = "GET /api/v1/items?id=42 200 upstream timeout after 30 s "
                              "trace=0af7651916cd43dd8448eb211c80319c";
    static const char extra[] = "\"level\":\"error\",\"http\":{\"response\":{\"status_code\":"
                                "503}},\"kubernetes\":{\"namespace\":\"payments\",\"pod\":"
                                "{\"name\":\"web-7d4b9\"}}";
    struct lf_cond *c = NULL;
    struct lf_cond_scratch *s = NULL;
    struct lf_errbuf eb = { "" };
    if (lf_cond_compile(expr, strlen(expr), &c, NULL, &eb) || lf_cond_scratch_new(&s)) {
        fprintf(stderr, "stage_bench: %s: %s\n", expr, eb.msg);
        exit(1);
    }
    struct lf_event ev = { .message = lf_str_make(msg, sizeof(msg) - 1),
                           .end_offset = 1,
                           .source = src,
                           .extra = lf_str_make(extra, sizeof(extra) - 1) };
    for (int i = 0; i < EVENTS / 10; i++)
        sunk += lf_cond_eval(c, &ev, s);
    double ns[RUNS];
    struct lf_alloc_count a0 = lf_alloc_count_now();
    for (int r = 0; r < RUNS; r++) {
        int64_t t0 = mono_ns();
        for (int i = 0; i < EVENTS; i++) {
            ev.offset = (uint64_t)i; /* a store per event: the loop is not hoisted */
            sunk += lf_cond_eval(c, &ev, s);
        }
        ns[r] = (double)(mono_ns() - t0) / EVENTS;
    }
    struct lf_alloc_count a1 = lf_alloc_count_now();
    qsort(ns, RUNS, sizeof(ns[0]), cmp_double);
    char allocs[32] = "n/a";
    if (lf_alloc_count_enabled())
        snprintf(allocs, sizeof(allocs), "%.2f", (double)(a1.calls - a0.calls) / (RUNS * EVENTS));
    printf("| %-44s | %10.0f | %13s |\n", name, ns[RUNS / 2], allocs);
    lf_cond_scratch_free(s);
    lf_cond_free(c);
}

static const struct {
    const char *name;
    const char *expr;
} cond_cases[] = {
    { "cond: 3 terms (string, number, regex)",
      "level == \"error\" and http.response.status_code >= 500 and message =~ 'timeout'" },
    { "cond: in list + not exists + number",
      "kubernetes.namespace in [\"prod\", \"payments\"] and not exists(trace.id) and "
      "http.response.status_code != 200" },
    { "cond: 1 term, first member", "level == \"error\"" },
};

int main(int argc, char **argv)
{
    const char *only = argc > 1 ? argv[1] : NULL; /* run the cases whose name holds it */
    struct lf_source *src = NULL;
    const char *path = "/var/log/containers/web-7d4b9-xk2lp_shop_nginx-"
                       "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef.log";
    if (lf_source_new(path, "b", "node-1", NULL, false, &src)) {
        fprintf(stderr, "stage_bench: out of memory\n");
        return 1;
    }
    for (size_t i = 0; i < MAX_PODS; i++)
        pod_lens[i] = (size_t)snprintf(pods[i], sizeof(pods[i]), "\"pod\":\"pod-%05zu\"", i);
    printf("| %-44s | %10s | %13s |\n", "stage", "ns/event", "allocs/event");
    printf("|%.46s|%.12s|%.15s|\n", "----------------------------------------------",
           "-----------:", "--------------:");
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        if (only == NULL || strstr(cases[i].name, only) != NULL)
            run_case(&cases[i], src);
    }
    for (size_t i = 0; i < sizeof(cond_cases) / sizeof(cond_cases[0]); i++) {
        if (only == NULL || strstr(cond_cases[i].name, only) != NULL)
            run_cond_case(cond_cases[i].name, cond_cases[i].expr, src);
    }
    lf_source_free(src);
    return 0;
}
