/* check_container.c - the container stage: CRI and Docker lines, partials, streams,
 * Kubernetes metadata, malformed lines, RFC 3339 times. */
#include "config.h"

#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../../src/stage/stage_int.h"
#include "logferry/tail.h"

#define MAX_GOT 64

struct got {
    char *msg;
    size_t msg_len;
    char *extra;
    uint64_t offset;
    uint64_t end_offset;
    unsigned flags;
    int64_t ts_ns;
};

static struct {
    struct lf_config *cfg;
    struct lf_chain_spec *spec;
    struct lf_chain *chain;
    struct lf_source *src;
    struct got got[MAX_GOT];
    size_t n;
    uint64_t next_off;
} fx;

static enum lf_err collect(void *arg, const struct lf_event *ev)
{
    (void)arg;
    ck_assert_uint_lt(fx.n, MAX_GOT);
    struct got *g = &fx.got[fx.n++];
    g->msg = malloc(ev->message.len + 1);
    memcpy(g->msg, ev->message.ptr, ev->message.len);
    g->msg[ev->message.len] = '\0';
    g->msg_len = ev->message.len;
    g->extra = strndup(ev->extra.ptr != NULL ? ev->extra.ptr : "", ev->extra.len);
    g->offset = ev->offset;
    g->end_offset = ev->end_offset;
    g->flags = ev->flags;
    g->ts_ns = ev->timestamp_ns;
    return LF_OK;
}

static const struct lf_stage_out sink = { collect, NULL };

/* Builds a chain of the given parsers (YAML flow list) for a source at path. */
static void start(const char *parsers, const char *max_line_bytes, const char *path)
{
    char yaml[2048];
    snprintf(yaml, sizeof(yaml),
             "inputs:\n  - id: k8s\n    paths: ['/x/*.log']\n    max_line_bytes: %s\n"
             "    parsers: %s\noutputs:\n  - name: c\n    type: console\n",
             max_line_bytes, parsers);
    struct lf_buf errors;
    lf_buf_init(&errors, 1 << 16);
    enum lf_err err = lf_config_load_mem("test.yml", yaml, strlen(yaml), &fx.cfg, &errors);
    if (err)
        fprintf(stderr, "%.*s", (int)errors.len, errors.ptr);
    ck_assert_int_eq(err, LF_OK);
    lf_buf_release(&errors);
    struct lf_errbuf eb = { "" };
    ck_assert_int_eq(lf_chain_spec_new(&fx.cfg->inputs[0], 0, &fx.spec, NULL, &eb), LF_OK);
    ck_assert_int_eq(lf_chain_new(fx.spec, &sink, &fx.chain), LF_OK);
    ck_assert_int_eq(lf_source_new(path, "k8s", "node-1", NULL, false, &fx.src), LF_OK);
}

static void teardown(void)
{
    lf_chain_free(fx.chain);
    lf_chain_spec_free(fx.spec);
    lf_config_free(fx.cfg);
    lf_source_free(fx.src);
    for (size_t i = 0; i < fx.n; i++) {
        free(fx.got[i].msg);
        free(fx.got[i].extra);
    }
    memset(&fx, 0, sizeof(fx));
}

/* Feeds one line as the reader would make it: offsets run on from the previous line. */
static void feed(const char *line)
{
    size_t len = strlen(line);
    struct lf_event ev = {
        lf_str_make(line, len), 42, fx.next_off, fx.next_off + len + 1, 0, fx.src, { NULL, 0 }, 0
    };
    fx.next_off += len + 1;
    ck_assert_int_eq(lf_chain_process(fx.chain, &ev, 0), LF_OK);
}

#define T1    "2026-11-30T01:02:03.456789012Z"
#define T1_NS (INT64_C(1796000523) * 1000000000 + 456789012)
#define T2    "2026-11-30T01:02:04Z"
#define T2_NS (INT64_C(1796000524) * 1000000000)

START_TEST(cri_line_becomes_its_message_with_the_runtime_time_and_stream)
{
    start("[{container: {format: cri}}]", "1MiB", "/var/log/app.log");
    feed(T1 " stdout F hello world");
    ck_assert_uint_eq(fx.n, 1);
    ck_assert_str_eq(fx.got[0].msg, "hello world");
    ck_assert_int_eq(fx.got[0].ts_ns, T1_NS);
    ck_assert_str_eq(fx.got[0].extra, "\"stream\":\"stdout\"");
    ck_assert_uint_eq(fx.got[0].offset, 0);
    ck_assert_uint_eq(fx.got[0].end_offset, strlen(T1) + 22);
    ck_assert_uint_eq(fx.got[0].flags, 0);
}
END_TEST

START_TEST(cri_final_line_with_empty_message_needs_no_trailing_space)
{
    start("[{container: {format: cri}}]", "1MiB", "/var/log/app.log");
    feed(T1 " stderr F");
    feed(T1 " stderr F ");
    ck_assert_uint_eq(fx.n, 2);
    ck_assert_uint_eq(fx.got[0].msg_len, 0);
    ck_assert_uint_eq(fx.got[1].msg_len, 0);
    ck_assert_str_eq(fx.got[1].extra, "\"stream\":\"stderr\"");
}
END_TEST

START_TEST(cri_partials_join_until_the_final_line_into_one_flagged_event)
{
    start("[{container: {}}]", "1MiB", "/var/log/app.log");
    feed(T1 " stdout P abc");
    feed(T2 " stdout P def");
    ck_assert_uint_eq(fx.n, 0);
    ck_assert(lf_chain_holding(fx.chain));
    ck_assert_uint_eq(lf_chain_held_offset(fx.chain), 0);
    feed(T2 " stdout F ghi");
    ck_assert_uint_eq(fx.n, 1);
    ck_assert_str_eq(fx.got[0].msg, "abcdefghi");
    ck_assert_uint_eq(fx.got[0].flags, LF_EVENT_PARTIAL_JOINED);
    ck_assert_uint_eq(fx.got[0].offset, 0);
    ck_assert_uint_eq(fx.got[0].end_offset, fx.next_off);
    ck_assert_int_eq(fx.got[0].ts_ns, T1_NS);
    ck_assert(!lf_chain_holding(fx.chain));
    ck_assert_uint_eq(lf_chain_held_offset(fx.chain), UINT64_MAX);
}
END_TEST

START_TEST(stdout_and_stderr_partials_are_joined_apart_and_the_other_stream_overtakes)
{
    start("[{container: {format: cri}}]", "1MiB", "/var/log/app.log");
    feed(T1 " stdout P out-1 ");
    uint64_t err_off = fx.next_off;
    feed(T1 " stderr P err-1 ");
    feed(T1 " stderr F err-2");
    uint64_t err_end = fx.next_off;
    ck_assert_uint_eq(fx.n, 1);
    ck_assert_str_eq(fx.got[0].msg, "err-1 err-2");
    /* The joined event spans its own lines: from the first stderr partial to the end of the
     * stderr final line, whatever the stdout partial before it. */
    ck_assert_uint_eq(fx.got[0].offset, err_off);
    ck_assert_uint_eq(fx.got[0].end_offset, err_end);
    ck_assert_uint_eq(lf_chain_held_offset(fx.chain), 0);
    feed(T1 " stderr F alone");
    uint64_t alone_end = fx.next_off;
    feed(T1 " stdout F out-2");
    ck_assert_uint_eq(fx.n, 3);
    ck_assert_str_eq(fx.got[1].msg, "alone");
    ck_assert_uint_eq(fx.got[1].flags, 0);
    ck_assert_uint_eq(fx.got[1].offset, err_end);
    ck_assert_uint_eq(fx.got[1].end_offset, alone_end);
    ck_assert_str_eq(fx.got[2].msg, "out-1 out-2");
    ck_assert_str_eq(fx.got[2].extra, "\"stream\":\"stdout\"");
    ck_assert_uint_eq(fx.got[2].offset, 0);
    ck_assert_uint_eq(fx.got[2].end_offset, fx.next_off);
    ck_assert_uint_eq(lf_chain_held_offset(fx.chain), UINT64_MAX);
}
END_TEST

/* The mirror image: a held stderr partial keeps the registry from passing it while stdout
 * lines go out after it; with both streams holding, the earlier partial's offset counts. */
START_TEST(a_held_stderr_partial_holds_the_offset_while_stdout_overtakes)
{
    start("[{container: {format: cri}}]", "1MiB", "/var/log/app.log");
    feed(T1 " stdout F before");
    uint64_t err_off = fx.next_off;
    feed(T1 " stderr P err-1 ");
    feed(T1 " stdout F out-1");
    feed(T1 " stdout F out-2");
    ck_assert_uint_eq(fx.n, 3);
    ck_assert_str_eq(fx.got[2].msg, "out-2");
    ck_assert_uint_gt(fx.got[2].end_offset, err_off);
    ck_assert_uint_eq(lf_chain_held_offset(fx.chain), err_off);
    uint64_t out_off = fx.next_off;
    feed(T1 " stdout P out-3 ");
    ck_assert_uint_eq(lf_chain_held_offset(fx.chain), err_off);
    feed(T1 " stderr F err-2");
    ck_assert_uint_eq(fx.n, 4);
    ck_assert_str_eq(fx.got[3].msg, "err-1 err-2");
    ck_assert_uint_eq(fx.got[3].offset, err_off);
    ck_assert_uint_eq(lf_chain_held_offset(fx.chain), out_off);
}
END_TEST

START_TEST(joined_partials_are_cut_at_max_line_bytes_on_a_character_boundary)
{
    start("[{container: {format: cri}}]", "10", "/var/log/app.log");
    feed(T1 " stdout P 12345678");
    feed(T1 " stdout P \xc3\xa9\xc3\xa9"); /* é é: the first fits up to byte 10 */
    feed(T1 " stdout P more");
    feed(T1 " stdout F end");
    ck_assert_uint_eq(fx.n, 1);
    ck_assert_str_eq(fx.got[0].msg, "12345678\xc3\xa9");
    ck_assert_uint_eq(fx.got[0].flags, LF_EVENT_PARTIAL_JOINED | LF_EVENT_TRUNCATED);
    ck_assert_uint_eq(fx.got[0].end_offset, fx.next_off);
}
END_TEST

START_TEST(docker_log_loses_its_newline_and_json_escapes_are_decoded)
{
    start("[{container: {format: docker}}]", "1MiB", "/var/log/app.log");
    feed("{\"log\":\"tab\\there \\\"q\\\" \\u00e9 \\ud83d\\ude00 \\\\ \\/\\r\\n\","
         "\"stream\":\"stderr\",\"time\":\"" T1 "\"}");
    ck_assert_uint_eq(fx.n, 1);
    ck_assert_str_eq(fx.got[0].msg, "tab\there \"q\" \xc3\xa9 \xf0\x9f\x98\x80 \\ /");
    ck_assert_str_eq(fx.got[0].extra, "\"stream\":\"stderr\"");
    ck_assert_int_eq(fx.got[0].ts_ns, T1_NS);
}
END_TEST

START_TEST(docker_log_without_a_newline_joins_the_next_of_its_stream)
{
    start("[{container: {format: docker}}]", "1MiB", "/var/log/app.log");
    feed("{\"log\":\"part one, \",\"stream\":\"stdout\",\"time\":\"" T1 "\"}");
    feed("{\"log\":\"other\\n\",\"stream\":\"stderr\",\"time\":\"" T2 "\"}");
    feed("{\"attrs\":{\"a\":[1,{\"b\":null}]},\"log\":\"part two\\n\",\"stream\":\"stdout\","
         "\"time\":\"" T2 "\"}");
    ck_assert_uint_eq(fx.n, 2);
    ck_assert_str_eq(fx.got[0].msg, "other");
    ck_assert_str_eq(fx.got[1].msg, "part one, part two");
    ck_assert_uint_eq(fx.got[1].flags, LF_EVENT_PARTIAL_JOINED);
    ck_assert_int_eq(fx.got[1].ts_ns, T1_NS);
}
END_TEST

START_TEST(auto_format_decides_per_line)
{
    start("[{container: {format: auto}}]", "1MiB", "/var/log/app.log");
    feed("{\"log\":\"from docker\\n\",\"stream\":\"stdout\",\"time\":\"" T1 "\"}");
    feed(T2 " stdout F from cri");
    ck_assert_uint_eq(fx.n, 2);
    ck_assert_str_eq(fx.got[0].msg, "from docker");
    ck_assert_str_eq(fx.got[1].msg, "from cri");
    ck_assert_int_eq(fx.got[1].ts_ns, T2_NS);
}
END_TEST

START_TEST(stream_option_drops_the_other_stream_with_the_dropped_flag)
{
    start("[{container: {stream: stderr}}]", "1MiB", "/var/log/app.log");
    feed(T1 " stdout F not wanted");
    feed(T1 " stdout P not wanted either");
    feed(T1 " stderr F wanted");
    ck_assert_uint_eq(fx.n, 3);
    ck_assert_uint_eq(fx.got[0].flags, LF_EVENT_DROPPED);
    ck_assert_uint_eq(fx.got[1].flags, LF_EVENT_DROPPED);
    ck_assert_uint_eq(fx.got[1].offset, fx.got[0].end_offset);
    ck_assert_str_eq(fx.got[2].msg, "wanted");
    ck_assert_uint_eq(fx.got[2].flags, 0);
    ck_assert(!lf_chain_holding(fx.chain));
}
END_TEST

#define K8S_ID "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"

START_TEST(kubernetes_names_come_from_a_var_log_containers_path)
{
    start("[{container: {}}]", "1MiB",
          "/tmp/x/var/log/containers/web-7d4b9-xk2lp_shop_nginx-proxy-" K8S_ID ".log");
    feed(T1 " stdout F a");
    feed(T1 " stderr F b");
    ck_assert_uint_eq(fx.n, 2);
    ck_assert_str_eq(fx.got[0].extra,
                     "\"stream\":\"stdout\",\"kubernetes\":{\"pod\":{\"name\":\"web-7d4b9-xk2lp\"},"
                     "\"namespace\":\"shop\",\"container\":{\"name\":\"nginx-proxy\"}},"
                     "\"container\":{\"id\":\"" K8S_ID "\"}");
    ck_assert_str_eq(fx.got[1].extra + strlen("\"stream\":\"stderr\""),
                     fx.got[0].extra + strlen("\"stream\":\"stdout\""));
}
END_TEST

START_TEST(paths_outside_the_kubernetes_layout_get_no_kubernetes_members)
{
    static const char *const paths[] = {
        "/var/log/pods/shop_web_1/nginx/0.log",
        "/var/log/containers/no-underscores-" K8S_ID ".log",
        "/var/log/containers/pod_ns_ctr-NOTHEX.log",
        "/var/log/containers/pod_ns_ctr-" K8S_ID ".txt",
    };
    for (size_t i = 0; i < sizeof(paths) / sizeof(paths[0]); i++) {
        start("[{container: {}}]", "1MiB", paths[i]);
        feed(T1 " stdout F a");
        ck_assert_uint_eq(fx.n, 1);
        ck_assert_str_eq(fx.got[0].extra, "\"stream\":\"stdout\"");
        teardown();
    }
}
END_TEST

START_TEST(malformed_lines_pass_through_unchanged_with_an_error_and_are_counted)
{
    struct lf_parser_conf pc = { .kind = LF_PARSER_CONTAINER };
    void *spec = NULL;
    void *state = NULL;
    struct lf_errbuf eb = { "" };
    ck_assert_int_eq(lf_stage__container_compile(&pc, 1024, &spec, &eb), LF_OK);
    ck_assert_int_eq(lf_stage_container.open(spec, &state), LF_OK);
    static const char *const bad[] = {
        "plain text line",
        "2026-13-30T01:02:03Z stdout F bad month",
        T1 " stdin F bad stream",
        T1 " stdout X bad tag",
        "{\"log\":\"x\\n\",\"stream\":\"stdout\"}",
        "{\"log\":\"x\\n\",\"stream\":\"stdout\",\"time\":\"yesterday\"}",
        "{\"log\":\"x\\q\",\"stream\":\"stdout\",\"time\":\"" T1 "\"}",
        "{\"log\":\"unterminated",
    };
    static const char *const why[] = {
        "no RFC 3339 time at the start of the line",
        "no RFC 3339 time at the start of the line",
        "no stdout or stderr after the time",
        "CRI tag is neither P nor F",
        "Docker JSON lacks log, stream or time",
        "Docker time is not RFC 3339",
        "bad escape in Docker log",
        "invalid Docker JSON",
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        struct lf_event ev = {
            lf_str_make(bad[i], strlen(bad[i])), 42, 100 * i, 100 * i + 50, 0, NULL, { NULL, 0 }, 0
        };
        ck_assert_int_eq(lf_stage_container.process(spec, state, &ev, 0, &sink), LF_OK);
        ck_assert_uint_eq(fx.n, i + 1);
        ck_assert_str_eq(fx.got[i].msg, bad[i]);
        ck_assert_int_eq(fx.got[i].ts_ns, 42);
        ck_assert_uint_eq(fx.got[i].offset, 100 * i);
        char want[256];
        snprintf(want, sizeof(want), "\"error\":{\"message\":\"container: %s\"}", why[i]);
        ck_assert_str_eq(fx.got[i].extra, want);
    }
    ck_assert_uint_eq(lf_stage__container_malformed(state), 8);
    lf_stage_container.close(state);
    lf_stage_container.free_spec(spec);
}
END_TEST

START_TEST(flush_emits_held_partials_earliest_first)
{
    start("[{container: {}}]", "1MiB", "/var/log/app.log");
    feed(T1 " stderr P first");
    feed(T1 " stdout P second");
    ck_assert_int_eq(lf_chain_flush(fx.chain), LF_OK);
    ck_assert_uint_eq(fx.n, 2);
    ck_assert_str_eq(fx.got[0].msg, "first");
    ck_assert_str_eq(fx.got[0].extra, "\"stream\":\"stderr\"");
    ck_assert_uint_eq(fx.got[0].flags, LF_EVENT_PARTIAL_JOINED);
    ck_assert_str_eq(fx.got[1].msg, "second");
    ck_assert(!lf_chain_holding(fx.chain));
}
END_TEST

/* Reads a fixture through the engine's harvester (the real reader) with a 16-byte buffer,
 * so every read chunk ends mid-line and fragments arrive in pieces. */
static void harvest_fixture(const char *name)
{
    char path[1024];
    const char *dir = getenv("LF_TEST_DATA");
    snprintf(path, sizeof(path), "%s/container/%s", dir != NULL ? dir : "t/data", name);
    struct lf_errbuf eb = { "" };
    struct lf_chain_spec *specs[1] = { fx.spec };
    ck_assert_int_eq(lf_tail_read_file(fx.cfg, specs, 0, path, &sink, &eb), LF_OK);
}

START_TEST(cri_partials_split_across_read_chunks_join_whole)
{
    start("[{container: {}}]\n    buffer_size: 16", "1MiB", "/var/log/app.log");
    harvest_fixture("cri_partials.log");
    ck_assert_uint_eq(fx.n, 3);
    ck_assert_str_eq(fx.got[0].msg, "stderr alone");
    ck_assert_str_eq(fx.got[1].msg, "a long line, split by the runtime into three fragments");
    ck_assert_uint_eq(fx.got[1].flags, LF_EVENT_PARTIAL_JOINED);
    ck_assert_uint_eq(fx.got[1].offset, 0);
    ck_assert_str_eq(fx.got[2].msg, "short");
    ck_assert_uint_eq(fx.got[2].end_offset, 276);
}
END_TEST

START_TEST(docker_partials_split_across_read_chunks_join_whole)
{
    start("[{container: {}}]\n    buffer_size: 16", "1MiB", "/var/log/app.log");
    harvest_fixture("docker_partials.log");
    ck_assert_uint_eq(fx.n, 2);
    ck_assert_str_eq(fx.got[0].msg, "{\"level\":\"info\",\"msg\":\"joined \\u00e9\"}");
    ck_assert_uint_eq(fx.got[0].flags, LF_EVENT_PARTIAL_JOINED);
    ck_assert_str_eq(fx.got[1].msg, "next");
    ck_assert_uint_eq(fx.got[1].flags, 0);
}
END_TEST

/* Each case runs without a memo (_i 0) and with one shared by the calls (_i 1), which must
 * give the same answers: a date or time remembered stands only for the same bytes. */
START_TEST(rfc3339_times_parse_with_offsets_and_any_fraction)
{
    struct lf_stage_time_memo m = { { 0 }, 0, false, { 0 }, 0, false };
    struct lf_stage_time_memo *memo = _i == 1 ? &m : NULL;
    int64_t ns = 0;
    ck_assert(lf_stage__parse_rfc3339(memo, "1970-01-01T00:00:00Z", 20, &ns));
    ck_assert_int_eq(ns, 0);
    ck_assert(lf_stage__parse_rfc3339(memo, "1970-01-01T01:00:00.5+01:00", 27, &ns));
    ck_assert_int_eq(ns, 500000000);
    ck_assert(lf_stage__parse_rfc3339(memo, "2024-02-29T23:59:59.123456789123-02:30", 38, &ns));
    ck_assert_int_eq(ns, (INT64_C(1709251199) + 9000) * 1000000000 + 123456789);
    ck_assert(lf_stage__parse_rfc3339(memo, "1969-12-31T23:59:59z", 20, &ns));
    ck_assert_int_eq(ns, -1000000000);
    ck_assert(!lf_stage__parse_rfc3339(memo, "2023-02-29T00:00:00Z", 20, &ns));
    ck_assert(!lf_stage__parse_rfc3339(memo, "2023-01-01T00:00:00", 19, &ns));
    ck_assert(!lf_stage__parse_rfc3339(memo, "2023-01-01T00:00:00.Z", 21, &ns));
    ck_assert(!lf_stage__parse_rfc3339(memo, "2023-01-01T24:00:00Z", 20, &ns));
    ck_assert(!lf_stage__parse_rfc3339(memo, "2023-01-01T00:00:00+0100", 24, &ns));
    /* the same date again, its clock or the time after it wrong */
    ck_assert(lf_stage__parse_rfc3339(memo, "2023-01-01T00:00:00Z", 20, &ns));
    ck_assert(!lf_stage__parse_rfc3339(memo, "2023-01-01T00:60:00Z", 20, &ns));
    ck_assert(!lf_stage__parse_rfc3339(memo, "2023-01-01 00:00:01Z", 20, &ns));
    ck_assert(!lf_stage__parse_rfc3339(memo, "2023-01-01T00:00:00+25:00", 25, &ns));
    ck_assert(lf_stage__parse_rfc3339(memo, "2023-01-01T00:00:01.25Z", 23, &ns));
    ck_assert_int_eq(ns, INT64_C(1672531201) * 1000000000 + 250000000);
    /* a day that is no date, after one that is, in the same month */
    ck_assert(lf_stage__parse_rfc3339(memo, "2023-02-28T00:00:00Z", 20, &ns));
    ck_assert(!lf_stage__parse_rfc3339(memo, "2023-02-29T00:00:00Z", 20, &ns));
}
END_TEST

/* issue 7: a year from log content must not overflow int64 ns (UB, caught by UBSan). */
START_TEST(rfc3339_times_beyond_int64_nanoseconds_are_refused)
{
    struct lf_stage_time_memo m = { { 0 }, 0, false, { 0 }, 0, false };
    struct lf_stage_time_memo *memo = _i == 1 ? &m : NULL;
    int64_t ns = 7;
    ck_assert(lf_stage__parse_rfc3339(memo, "2262-04-11T23:47:16.854775807Z", 30, &ns));
    ck_assert_int_eq(ns, INT64_MAX);
    ck_assert(lf_stage__parse_rfc3339(memo, "1677-09-21T00:12:43.145224192Z", 30, &ns));
    ck_assert_int_eq(ns, INT64_MIN);
    ns = 7;
    ck_assert(!lf_stage__parse_rfc3339(memo, "2262-04-11T23:47:16.854775808Z", 30, &ns));
    ck_assert(!lf_stage__parse_rfc3339(memo, "1677-09-21T00:12:43.145224191Z", 30, &ns));
    ck_assert(!lf_stage__parse_rfc3339(memo, "2263-01-01T00:00:00Z", 20, &ns));
    ck_assert(!lf_stage__parse_rfc3339(memo, "9999-12-31T23:59:59.999999999-23:59", 35, &ns));
    ck_assert(!lf_stage__parse_rfc3339(memo, "0000-01-01T00:00:00+23:59", 25, &ns));
    ck_assert_int_eq(ns, 7);
}
END_TEST

START_TEST(cri_line_with_a_time_out_of_range_keeps_the_read_time)
{
    start("[{container: {}}]", "1MiB", "/var/log/app.log");
    feed("9999-12-31T23:59:59.999999999Z stdout F far future");
    ck_assert_uint_eq(fx.n, 1);
    ck_assert_str_eq(fx.got[0].msg, "9999-12-31T23:59:59.999999999Z stdout F far future");
    ck_assert_int_eq(fx.got[0].ts_ns, 42);
    ck_assert_str_eq(
        fx.got[0].extra,
        "\"error\":{\"message\":\"container: no RFC 3339 time at the start of the line\"}");
    feed("{\"log\":\"x\\n\",\"stream\":\"stdout\",\"time\":\"1000-01-01T00:00:00Z\"}");
    ck_assert_uint_eq(fx.n, 2);
    ck_assert_int_eq(fx.got[1].ts_ns, 42);
    ck_assert_str_eq(fx.got[1].extra,
                     "\"error\":{\"message\":\"container: Docker time is not RFC 3339\"}");
}
END_TEST

static Suite *container_suite(void)
{
    Suite *s = suite_create("container");
    TCase *cri = tcase_create("cri");
    tcase_add_checked_fixture(cri, NULL, teardown);
    tcase_add_test(cri, cri_line_becomes_its_message_with_the_runtime_time_and_stream);
    tcase_add_test(cri, cri_final_line_with_empty_message_needs_no_trailing_space);
    tcase_add_test(cri, cri_partials_join_until_the_final_line_into_one_flagged_event);
    tcase_add_test(cri, stdout_and_stderr_partials_are_joined_apart_and_the_other_stream_overtakes);
    tcase_add_test(cri, a_held_stderr_partial_holds_the_offset_while_stdout_overtakes);
    tcase_add_test(cri, joined_partials_are_cut_at_max_line_bytes_on_a_character_boundary);
    tcase_add_test(cri, flush_emits_held_partials_earliest_first);
    suite_add_tcase(s, cri);
    TCase *docker = tcase_create("docker");
    tcase_add_checked_fixture(docker, NULL, teardown);
    tcase_add_test(docker, docker_log_loses_its_newline_and_json_escapes_are_decoded);
    tcase_add_test(docker, docker_log_without_a_newline_joins_the_next_of_its_stream);
    tcase_add_test(docker, auto_format_decides_per_line);
    suite_add_tcase(s, docker);
    TCase *meta = tcase_create("metadata and filtering");
    tcase_add_checked_fixture(meta, NULL, teardown);
    tcase_add_test(meta, stream_option_drops_the_other_stream_with_the_dropped_flag);
    tcase_add_test(meta, kubernetes_names_come_from_a_var_log_containers_path);
    tcase_add_test(meta, paths_outside_the_kubernetes_layout_get_no_kubernetes_members);
    tcase_add_test(meta, malformed_lines_pass_through_unchanged_with_an_error_and_are_counted);
    suite_add_tcase(s, meta);
    TCase *chunks = tcase_create("read chunks");
    tcase_add_checked_fixture(chunks, NULL, teardown);
    tcase_add_test(chunks, cri_partials_split_across_read_chunks_join_whole);
    tcase_add_test(chunks, docker_partials_split_across_read_chunks_join_whole);
    suite_add_tcase(s, chunks);
    TCase *time = tcase_create("time");
    tcase_add_loop_test(time, rfc3339_times_parse_with_offsets_and_any_fraction, 0, 2);
    tcase_add_loop_test(time, rfc3339_times_beyond_int64_nanoseconds_are_refused, 0, 2);
    tcase_add_test(time, cri_line_with_a_time_out_of_range_keeps_the_read_time);
    suite_add_tcase(s, time);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(container_suite());
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
