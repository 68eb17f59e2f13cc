/* check_ndjson.c - the ndjson stage: merging, target, keys, errors and bounds. */
#include "config.h"

#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../src/stage/stage_int.h"
#include "../bench/alloc_count.h"
#include "logferry/event.h"

static struct {
    void *spec;
    void *state;
    char *msg;
    size_t msg_len;
    char *extra;
    int64_t ts_ns;
    unsigned flags;
    size_t n;
    struct lf_buf json; /* the last event encoded, when it had a source */
} fx;

static enum lf_err collect(void *arg, const struct lf_event *ev)
{
    (void)arg;
    free(fx.msg);
    free(fx.extra);
    fx.msg = malloc(ev->message.len + 1);
    memcpy(fx.msg, ev->message.ptr, ev->message.len);
    fx.msg[ev->message.len] = '\0';
    fx.msg_len = ev->message.len;
    fx.extra = strndup(ev->extra.ptr != NULL ? ev->extra.ptr : "", ev->extra.len);
    fx.ts_ns = ev->timestamp_ns;
    fx.flags = ev->flags;
    fx.n++;
    lf_buf_reset(&fx.json);
    if (ev->source != NULL)
        ck_assert_int_eq(lf_event_encode(&fx.json, ev), LF_OK);
    return LF_OK;
}

static const struct lf_stage_out sink = { collect, NULL };

static void start(const char *target, bool overwrite, bool add_error, const char *message_key)
{
    lf_buf_init(&fx.json, SIZE_MAX);
    struct lf_parser_conf pc = { .kind = LF_PARSER_NDJSON };
    pc.u.ndjson.target = (char *)target;
    pc.u.ndjson.overwrite_keys = overwrite;
    pc.u.ndjson.add_error_key = add_error;
    pc.u.ndjson.message_key = (char *)message_key;
    struct lf_errbuf eb = { "" };
    ck_assert_int_eq(lf_stage_ndjson.compile(&pc, &fx.spec, &eb), LF_OK);
    ck_assert_int_eq(lf_stage_ndjson.open(fx.spec, &fx.state), LF_OK);
}

static void teardown(void)
{
    if (fx.state != NULL)
        lf_stage_ndjson.close(fx.state);
    if (fx.spec != NULL)
        lf_stage_ndjson.free_spec(fx.spec);
    free(fx.msg);
    free(fx.extra);
    lf_buf_release(&fx.json);
    memset(&fx, 0, sizeof(fx));
    lf_stage__ndjson_jansson_only = false;
}

/* Runs one message with the given prior extra through the stage. */
static void feed_len(const char *msg, size_t len, const char *extra)
{
    struct lf_event ev = {
        lf_str_make(msg, len), 42, 0, len + 1, 0, NULL, lf_str_make(extra, strlen(extra)), 0
    };
    size_t before = fx.n;
    ck_assert_int_eq(lf_stage_ndjson.process(fx.spec, fx.state, &ev, 0, &sink), LF_OK);
    ck_assert_uint_eq(fx.n, before + 1);
}

static void feed(const char *msg, const char *extra)
{
    feed_len(msg, strlen(msg), extra);
}

START_TEST(object_members_merge_at_the_root_in_their_order)
{
    start("", false, true, "message");
    feed("{\"level\":\"info\",\"n\":3,\"ok\":true,\"none\":null,\"list\":[1,\"two\",{}],"
         "\"obj\":{\"a\":{\"b\":-1}}}",
         "");
    ck_assert_str_eq(fx.extra, "\"level\":\"info\",\"n\":3,\"ok\":true,\"none\":null,"
                               "\"list\":[1,\"two\",{}],\"obj\":{\"a\":{\"b\":-1}}");
    ck_assert_int_eq(fx.ts_ns, 42);
}
END_TEST

/* Found by fuzz_ndjson: the harvester's events carry extra { NULL, 0 }, and walking that
 * empty members list computed NULL + 0 (undefined; clang's UBSan stops there). */
START_TEST(events_without_extra_as_the_harvester_makes_them_merge_too)
{
    static const bool overwrite[] = { false, true };
    for (size_t i = 0; i < 2; i++) {
        teardown();
        start("", overwrite[i], true, "message");
        const char *msg = "{\"message\":\"m\",\"n\":1}";
        struct lf_event ev = { lf_str_make(msg, strlen(msg)), 42, 0, 30, 0, NULL, { NULL, 0 }, 0 };
        ck_assert_int_eq(lf_stage_ndjson.process(fx.spec, fx.state, &ev, 0, &sink), LF_OK);
        ck_assert_uint_eq(fx.n, 1);
        ck_assert_str_eq(fx.msg, "m");
        ck_assert_str_eq(fx.extra, "\"n\":1");
    }
}
END_TEST

START_TEST(reals_keep_their_shortest_form_and_strings_are_escaped)
{
    start("", false, true, "message");
    feed("{\"r\":0.1,\"big\":1e300,\"whole\":2.0,\"s\":\"a\\u0000b\\n\\\"\\u00e9\"}", "");
    ck_assert_str_eq(fx.extra, "\"r\":0.1,\"big\":1e+300,\"whole\":2.0,"
                               "\"s\":\"a\\u0000b\\n\\\"\xc3\xa9\"");
}
END_TEST

START_TEST(target_puts_the_object_under_one_member)
{
    start("json", false, true, "");
    feed("{\"message\":\"inner\",\"log\":1}", "\"stream\":\"stdout\"");
    ck_assert_str_eq(fx.extra, "\"stream\":\"stdout\",\"json\":{\"message\":\"inner\",\"log\":1}");
    ck_assert_str_eq(fx.msg, "{\"message\":\"inner\",\"log\":1}");
}
END_TEST

START_TEST(message_key_replaces_the_message)
{
    start("", false, true, "msg");
    feed("{\"msg\":\"the real text\",\"level\":\"warn\"}", "");
    ck_assert_str_eq(fx.msg, "the real text");
    ck_assert_str_eq(fx.extra, "\"level\":\"warn\"");
}
END_TEST

START_TEST(message_key_that_is_not_a_string_leaves_the_message_alone)
{
    start("", false, true, "msg");
    feed("{\"msg\":{\"x\":1}}", "");
    ck_assert_str_eq(fx.msg, "{\"msg\":{\"x\":1}}");
    ck_assert_str_eq(fx.extra, "\"msg\":{\"x\":1}");
}
END_TEST

START_TEST(without_overwrite_keys_colliding_keys_are_dropped)
{
    start("", false, true, "message");
    feed("{\"@timestamp\":\"2001-01-01T00:00:00Z\",\"log\":1,\"input\":2,\"host\":3,"
         "\"fields\":4,\"stream\":\"fake\",\"kept\":5}",
         "\"stream\":\"stdout\"");
    ck_assert_str_eq(fx.extra, "\"stream\":\"stdout\",\"kept\":5");
    ck_assert_int_eq(fx.ts_ns, 42);
}
END_TEST

START_TEST(with_overwrite_keys_decoded_keys_replace_stage_keys_and_the_time)
{
    start("", true, true, "message");
    feed("{\"@timestamp\":\"1970-01-01T00:00:01.5Z\",\"stream\":\"fake\",\"log\":1}",
         "\"stream\":\"stdout\",\"kubernetes\":{\"pod\":{\"name\":\"p\"}}");
    ck_assert_str_eq(fx.extra, "\"kubernetes\":{\"pod\":{\"name\":\"p\"}},\"stream\":\"fake\"");
    ck_assert_int_eq(fx.ts_ns, 1500000000);
}
END_TEST

/* Encodes msg, decoded by the stage, as an event of /p read by input app on node-1 with
 * fields {env: prod}; returns the JSON line (borrowed: valid until the next call). */
static const char *encode_decoded(const char *msg, bool fields_under_root)
{
    struct lf_source *src = NULL;
    ck_assert_int_eq(
        lf_source_new("/p", "app", "node-1", "{\"env\":\"prod\"}", fields_under_root, &src), LF_OK);
    struct lf_event ev = {
        lf_str_make(msg, strlen(msg)), 42, 0, strlen(msg) + 1, 0, src, lf_str_make("", 0), 0
    };
    ck_assert_int_eq(lf_stage_ndjson.process(fx.spec, fx.state, &ev, 0, &sink), LF_OK);
    lf_source_free(src);
    ck_assert_uint_gt(fx.json.len, 0);
    ck_assert_int_eq(lf_buf_append(&fx.json, "", 1), LF_OK);
    return fx.json.ptr;
}

#define AGENT_DOC                                                                \
    "{\"msg\":\"hi\",\"host\":{\"name\":\"from-log\"},\"input\":{\"id\":\"x\"}," \
    "\"fields\":{\"env\":\"dev\"},\"@timestamp\":\"2001-02-03T04:05:06.007Z\",\"a\":1}"

/* issue 7, contract: overwrite_keys lets decoded keys replace the agent's own members too,
 * as Filebeat's decode_json_fields does. */
START_TEST(with_overwrite_keys_decoded_keys_replace_host_input_fields_and_timestamp)
{
    start("", true, true, "msg");
    ck_assert_str_eq(encode_decoded(AGENT_DOC, false),
                     "{\"@timestamp\":\"2001-02-03T04:05:06.007Z\",\"message\":\"hi\","
                     "\"log\":{\"file\":{\"path\":\"/p\"},\"offset\":0},"
                     "\"host\":{\"name\":\"from-log\"},\"input\":{\"id\":\"x\"},"
                     "\"fields\":{\"env\":\"dev\"},\"a\":1}\n");
    /* fields_under_root: the agent has no "fields" member, its fields stay at the root. */
    ck_assert_str_eq(encode_decoded(AGENT_DOC, true),
                     "{\"@timestamp\":\"2001-02-03T04:05:06.007Z\",\"message\":\"hi\","
                     "\"log\":{\"file\":{\"path\":\"/p\"},\"offset\":0},"
                     "\"host\":{\"name\":\"from-log\"},\"input\":{\"id\":\"x\"},"
                     "\"fields\":{\"env\":\"dev\"},\"a\":1,\"env\":\"prod\"}\n");
}
END_TEST

START_TEST(without_overwrite_keys_the_agents_members_win)
{
    start("", false, true, "msg");
    ck_assert_str_eq(encode_decoded(AGENT_DOC, false),
                     "{\"@timestamp\":\"1970-01-01T00:00:00.000Z\",\"message\":\"hi\","
                     "\"log\":{\"file\":{\"path\":\"/p\"},\"offset\":0},\"a\":1,"
                     "\"input\":{\"id\":\"app\"},\"host\":{\"name\":\"node-1\"},"
                     "\"fields\":{\"env\":\"prod\"}}\n");
}
END_TEST

START_TEST(with_overwrite_keys_a_bad_timestamp_keeps_the_time_and_says_so)
{
    start("", true, true, "message");
    feed("{\"@timestamp\":\"last tuesday\",\"a\":1}", "");
    ck_assert_int_eq(fx.ts_ns, 42);
    ck_assert_str_eq(fx.extra, "\"a\":1,\"error\":{\"message\":\"ndjson: @timestamp is not an "
                               "RFC 3339 string; kept the event time\"}");
}
END_TEST

START_TEST(invalid_json_keeps_the_message_and_adds_an_error)
{
    start("", false, true, "message");
    feed("{\"a\":1,,}", "\"stream\":\"stderr\"");
    ck_assert_str_eq(fx.msg, "{\"a\":1,,}");
    ck_assert_str_eq(fx.extra, "\"stream\":\"stderr\","
                               "\"error\":{\"message\":\"ndjson: invalid JSON at byte 8\"}");
}
END_TEST

START_TEST(json_that_is_not_an_object_keeps_the_message_and_adds_an_error)
{
    static const char *const msgs[] = { "[1,2]", "\"str\"", "42", "null" };
    start("", false, true, "message");
    for (size_t i = 0; i < sizeof(msgs) / sizeof(msgs[0]); i++) {
        feed(msgs[i], "");
        ck_assert_str_eq(fx.msg, msgs[i]);
        ck_assert_str_eq(fx.extra, "\"error\":{\"message\":\"ndjson: JSON is not an object\"}");
    }
}
END_TEST

START_TEST(without_add_error_key_a_bad_message_passes_unchanged)
{
    start("", false, false, "message");
    feed("plain words", "\"stream\":\"stdout\"");
    ck_assert_str_eq(fx.msg, "plain words");
    ck_assert_str_eq(fx.extra, "\"stream\":\"stdout\"");
}
END_TEST

START_TEST(an_earlier_error_is_kept_instead_of_a_second_one)
{
    start("", false, true, "message");
    feed("nope", "\"error\":{\"message\":\"container: first\"}");
    ck_assert_str_eq(fx.extra, "\"error\":{\"message\":\"container: first\"}");
}
END_TEST

/* Nesting of n arrays around 0: "[[...0...]]" inside {"a":...}. */
static char *nested(size_t n)
{
    char *s = malloc(2 * n + 16);
    size_t len = 0;
    len += (size_t)sprintf(s, "{\"a\":");
    memset(s + len, '[', n);
    len += n;
    s[len++] = '0';
    memset(s + len, ']', n);
    len += n;
    s[len++] = '}';
    s[len] = '\0';
    return s;
}

START_TEST(nesting_up_to_64_levels_decodes_and_deeper_is_refused)
{
    start("", false, true, "message");
    char *ok = nested(63);
    feed(ok, "");
    ck_assert_uint_eq(strlen(fx.extra), 4 + 63 * 2 + 1);
    char *deep = nested(64);
    feed(deep, "");
    ck_assert_str_eq(fx.msg, deep);
    ck_assert_str_eq(fx.extra, "\"error\":{\"message\":"
                               "\"ndjson: JSON nested deeper than 64 levels; not decoded\"}");
    free(ok);
    free(deep);
}
END_TEST

START_TEST(messages_over_one_mib_are_not_decoded)
{
    start("", false, true, "message");
    size_t len = 1024 * 1024 + 16;
    char *big = malloc(len);
    memset(big, ' ', len);
    memcpy(big, "{\"a\":1}", 7);
    feed_len(big, len, "");
    ck_assert_uint_eq(fx.msg_len, len);
    ck_assert_str_eq(fx.extra,
                     "\"error\":{\"message\":\"ndjson: message over 1 MiB; not decoded\"}");
    feed_len(big, 1024 * 1024, "");
    ck_assert_str_eq(fx.extra, "\"a\":1");
    free(big);
}
END_TEST

START_TEST(duplicate_keys_keep_the_last_value)
{
    start("", false, true, "message");
    feed("{\"a\":1,\"a\":2}", "");
    ck_assert_str_eq(fx.extra, "\"a\":2");
}
END_TEST

START_TEST(a_target_that_every_event_has_is_a_config_error)
{
    lf_buf_init(&fx.json, SIZE_MAX);
    struct lf_parser_conf pc = { .kind = LF_PARSER_NDJSON };
    pc.u.ndjson.target = (char *)"log";
    pc.u.ndjson.message_key = (char *)"message";
    struct lf_errbuf eb = { "" };
    void *spec = NULL;
    ck_assert_int_eq(lf_stage_ndjson.compile(&pc, &spec, &eb), LF_ECONFIG);
    ck_assert_str_eq(eb.msg, "ndjson: target \"log\" is a key every event has already");
    ck_assert_ptr_null(spec);
}
END_TEST

/* Messages the fast decoder takes and messages it leaves to jansson, at its edges. */
static const char *const agree_msgs[] = {
    "{\"level\":\"info\",\"msg\":\"GET /a 200\",\"ms\":12.5,\"ok\":true,\"n\":null}",
    " {\"a\" : [ 1 , 2 ,{ \"b\":false} ] ,\"c\":{}, \"d\":[]}\r\n",
    "{\"s\":\"tab\\there \\\"q\\\" back\\\\slash \\/ \\b\\f\\n\\r\"}",
    "{\"u\":\"\\u00e9\\u2028\\ud83d\\ude00\",\"z\":\"\\u0000\"}",
    "{\"lone\":\"\\ud800\"}",
    "{\"k\\u0061\":1,\"k\\/\":2}",
    "{\"utf8\":\"caf\xc3\xa9 \xe2\x80\xa8 \xf0\x9f\x98\x80\",\"\xc3\xa9\":1}",
    "{\"bad\":\"\xc3\x28\"}",
    "{\"overlong\":\"\xc0\xaf\"}",
    "{\"surrogate\":\"\xed\xa0\x80\"}",
    "{\"ctl\":\"a\x01 b\"}",
    "{\"i\":[0,-0,7,-7,123456789012345678,-123456789012345678]}",
    "{\"i\":1234567890123456789}",
    "{\"i\":9223372036854775807}",
    "{\"i\":-9223372036854775808}",
    "{\"i\":9223372036854775808}",
    "{\"i\":-9223372036854775809}",
    "{\"r\":[0.0,-0.0,1.0,10.0,1.50,1.5,0.1,0.0001,0.00001,0.000,100.25,-3.25,0.30000000000000004]}",
    "{\"r\":[123456789012345.6,12345678901234.5,1234567890123456.0,123456789012345.0]}",
    "{\"r\":[1e5,1E+2,2.5e-3,-1e-400,0.0012300,99999999999999.9,0.000123456789012345]}",
    "{\"r\":1e400}",
    "{\"r\":-1e400}",
    "{\"r\":123456789012345678.0}",
    "{\"bad\":01}",
    "{\"bad\":1.}",
    "{\"bad\":-}",
    "{\"bad\":.5}",
    "{\"bad\":1e}",
    "{\"bad\":tru}",
    "{\"bad\":truex}",
    "{\"bad\":nul}",
    "{\"a\":1,}",
    "{\"a\":[1,]}",
    "{,}",
    "{\"a\"}",
    "{\"a\":1}x",
    "{\"a\":1} {}",
    "{}",
    " { } ",
    "{",
    "",
    "[1,2]",
    "\"str\"",
    "{\"a\":1,\"a\":2,\"b\":3}",
    "{\"o\":{\"x\":1,\"y\":2,\"x\":3}}",
    "{\"o\":{\"x\":1},\"p\":{\"x\":2}}",
    "{\"@timestamp\":\"2026-11-30T01:02:03.5Z\",\"msg\":\"hello\",\"host\":\"h\","
    "\"input\":{\"type\":\"x\"},\"fields\":{\"f\":1},\"message\":\"m\",\"log\":\"l\"}",
    "{\"@timestamp\":\"2026-11-30T01:02:03\\u002e5Z\",\"msg\":\"esc\\naped\"}",
    "{\"@timestamp\":12,\"msg\":7}",
    "{\"@timestamp\":\"not a time\",\"msg\":\"x\\\"y\"}",
    "{\"stream\":\"stderr\",\"level\":\"debug\",\"app\":1}",
    "{\"app\":{\"deep\":[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[1]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]}}",
    "{\"\":\"empty key\",\"t\":\"\\t\"}",
};

struct agree_conf {
    const char *target;
    bool overwrite;
    bool add_error;
    const char *message_key;
};

static const struct agree_conf agree_confs[] = {
    { "", false, true, "" },     { "", true, true, "msg" },      { "app", true, true, "msg" },
    { "app", false, false, "" }, { "", false, true, "message" },
};

/* One message through the stage as it is now: its outcome, as text, in out. */
static void outcome(const char *msg, size_t len, char *out, size_t cap)
{
    feed_len(msg, len, "\"stream\":\"stdout\",\"level\":\"x\",\"app\":0");
    snprintf(out, cap, "msg=[%s] extra=[%s] ts=%lld flags=%u", fx.msg, fx.extra,
             (long long)fx.ts_ns, fx.flags);
}

/* Each message of agree_msgs, cut by drop bytes at its end, fast and through jansson. */
static void agree_all(size_t drop)
{
    for (size_t i = 0; i < sizeof(agree_msgs) / sizeof(agree_msgs[0]); i++) {
        static char fast[4096];
        static char tree[4096];
        size_t len = strlen(agree_msgs[i]);
        if (len < drop || (drop > 0 && len == drop))
            continue;
        lf_stage__ndjson_jansson_only = false;
        outcome(agree_msgs[i], len - drop, fast, sizeof(fast));
        lf_stage__ndjson_jansson_only = true;
        outcome(agree_msgs[i], len - drop, tree, sizeof(tree));
        ck_assert_msg(strcmp(fast, tree) == 0, "%s (less %zu bytes)\n fast: %s\n tree: %s",
                      agree_msgs[i], drop, fast, tree);
    }
}

START_TEST(the_fast_decoder_and_jansson_give_the_same_event)
{
    const struct agree_conf *c = &agree_confs[_i];
    start(c->target, c->overwrite, c->add_error, c->message_key);
    agree_all(0);
    agree_all(1); /* every message becomes invalid or shorter */
    agree_all(2);
}
END_TEST

START_TEST(reals_and_integers_render_as_their_values)
{
    start("", false, true, "");
    feed("{\"a\":1.50,\"b\":-0,\"c\":1e2,\"d\":0.00001,\"e\":1.0,\"f\":12.25}", "");
    ck_assert_str_eq(fx.extra, "\"a\":1.5,\"b\":0,\"c\":100.0,\"d\":1e-05,\"e\":1.0,\"f\":12.25");
}
END_TEST

static enum lf_err discard(void *arg, const struct lf_event *ev)
{
    (void)arg;
    (void)ev;
    return LF_OK;
}

/* Run alone by check_ndjson_alloc (see main). */
START_TEST(steady_state_allocates_nothing_per_event)
{
    const char *lines[] = {
        "{\"level\":\"info\",\"msg\":\"GET /api/v1/items?id=7 200\",\"ms\":12.5,"
        "\"trace\":\"0af7651916cd43dd8448eb211c80319c\"}",
        "{\"level\":\"warn\",\"msg\":\"caf\xc3\xa9 \\\"quoted\\\"\\n\",\"n\":[1,2,{\"x\":null}],"
        "\"@timestamp\":\"2026-11-30T01:02:03.5Z\",\"ok\":true}",
        "{\"level\":\"error\",\"ms\":0.00001,\"host\":\"h\",\"obj\":{\"a\":{\"b\":[]}}}",
        "{}",
    };
    for (int t = 0; t < 2; t++) {
        start(t == 0 ? "" : "app", t == 0, true, "msg");
        struct lf_stage_out quiet = { discard, NULL };
        enum lf_err err = LF_OK;
        struct lf_alloc_count a0 = { 0, 0 };
        /* No ck_assert inside the measured loop: Check's assertions allocate. */
        for (int r = 0; r < 1000 && !err; r++) {
            if (r == 4)
                a0 = lf_alloc_count_now(); /* after one pass over the lines */
            const char *l = lines[r % 4];
            struct lf_event ev = { lf_str_make(l, strlen(l)),
                                   42,
                                   0,
                                   1,
                                   0,
                                   NULL,
                                   lf_str_make("\"stream\":\"stdout\"", 17),
                                   0 };
            err = lf_stage_ndjson.process(fx.spec, fx.state, &ev, 0, &quiet);
        }
        struct lf_alloc_count a1 = lf_alloc_count_now();
        ck_assert_int_eq(err, LF_OK);
        ck_assert_uint_eq(a1.calls - a0.calls, 0);
        teardown();
    }
}
END_TEST

static Suite *ndjson_suite(void)
{
    Suite *s = suite_create("ndjson");
    TCase *merge = tcase_create("merge");
    tcase_add_checked_fixture(merge, NULL, teardown);
    tcase_add_test(merge, object_members_merge_at_the_root_in_their_order);
    tcase_add_test(merge, reals_keep_their_shortest_form_and_strings_are_escaped);
    tcase_add_test(merge, target_puts_the_object_under_one_member);
    tcase_add_test(merge, message_key_replaces_the_message);
    tcase_add_test(merge, message_key_that_is_not_a_string_leaves_the_message_alone);
    tcase_add_test(merge, duplicate_keys_keep_the_last_value);
    tcase_add_test(merge, events_without_extra_as_the_harvester_makes_them_merge_too);
    suite_add_tcase(s, merge);
    TCase *keys = tcase_create("colliding keys");
    tcase_add_checked_fixture(keys, NULL, teardown);
    tcase_add_test(keys, without_overwrite_keys_colliding_keys_are_dropped);
    tcase_add_test(keys, with_overwrite_keys_decoded_keys_replace_stage_keys_and_the_time);
    tcase_add_test(keys, with_overwrite_keys_decoded_keys_replace_host_input_fields_and_timestamp);
    tcase_add_test(keys, without_overwrite_keys_the_agents_members_win);
    tcase_add_test(keys, with_overwrite_keys_a_bad_timestamp_keeps_the_time_and_says_so);
    tcase_add_test(keys, a_target_that_every_event_has_is_a_config_error);
    suite_add_tcase(s, keys);
    TCase *errors = tcase_create("errors and bounds");
    tcase_add_checked_fixture(errors, NULL, teardown);
    tcase_add_test(errors, invalid_json_keeps_the_message_and_adds_an_error);
    tcase_add_test(errors, json_that_is_not_an_object_keeps_the_message_and_adds_an_error);
    tcase_add_test(errors, without_add_error_key_a_bad_message_passes_unchanged);
    tcase_add_test(errors, an_earlier_error_is_kept_instead_of_a_second_one);
    tcase_add_test(errors, nesting_up_to_64_levels_decodes_and_deeper_is_refused);
    tcase_add_test(errors, messages_over_one_mib_are_not_decoded);
    suite_add_tcase(s, errors);
    TCase *fast = tcase_create("fast decoder");
    tcase_add_checked_fixture(fast, NULL, teardown);
    tcase_add_loop_test(fast, the_fast_decoder_and_jansson_give_the_same_event, 0,
                        (int)(sizeof(agree_confs) / sizeof(agree_confs[0])));
    tcase_add_test(fast, reals_and_integers_render_as_their_values);
    suite_add_tcase(s, fast);
    TCase *alloc = tcase_create("alloc");
    tcase_set_tags(alloc, "alloc");
    tcase_add_checked_fixture(alloc, NULL, teardown);
    tcase_add_test(alloc, steady_state_allocates_nothing_per_event);
    suite_add_tcase(s, alloc);
    return s;
}

/* Built twice. t/unit/check_ndjson runs every case but the one tagged alloc;
 * t/unit/check_ndjson_alloc (LF_CHECK_ALLOC) runs that one alone and exits 77 (skipped, not
 * passed) where allocations cannot be counted (under ASan). */
int main(void)
{
#ifdef LF_CHECK_ALLOC
    if (!lf_alloc_count_enabled()) {
        printf("SKIP: allocation counting unavailable (sanitizer build): "
               "steady_state_allocates_nothing_per_event not run\n");
        return 77;
    }
    const char *include = "alloc", *exclude = NULL;
#else
    const char *include = NULL, *exclude = "alloc";
#endif
    SRunner *sr = srunner_create(ndjson_suite());
    srunner_run_tagged(sr, NULL, NULL, include, exclude, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
