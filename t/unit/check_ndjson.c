/* check_ndjson.c - the ndjson stage: merging, target, keys, errors and bounds. */
#include "config.h"

#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../src/stage/stage_int.h"
#include "logferry/event.h"

static struct {
    void *spec;
    void *state;
    char *msg;
    size_t msg_len;
    char *extra;
    int64_t ts_ns;
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
}

/* Runs one message with the given prior extra through the stage. */
static void feed_len(const char *msg, size_t len, const char *extra)
{
    struct lf_event ev = { lf_str_make(msg, len), 42, 0, len + 1, 0, NULL,
                           lf_str_make(extra, strlen(extra)) };
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
        struct lf_event ev = { lf_str_make(msg, strlen(msg)), 42, 0, 30, 0, NULL, { NULL, 0 } };
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
    ck_assert_int_eq(lf_source_new("/p", "app", "node-1", "{\"env\":\"prod\"}",
                                   fields_under_root, &src),
                     LF_OK);
    struct lf_event ev = { lf_str_make(msg, strlen(msg)), 42, 0, strlen(msg) + 1, 0, src,
                           lf_str_make("", 0) };
    ck_assert_int_eq(lf_stage_ndjson.process(fx.spec, fx.state, &ev, 0, &sink), LF_OK);
    lf_source_free(src);
    ck_assert_uint_gt(fx.json.len, 0);
    ck_assert_int_eq(lf_buf_append(&fx.json, "", 1), LF_OK);
    return fx.json.ptr;
}

#define AGENT_DOC                                                                            \
    "{\"msg\":\"hi\",\"host\":{\"name\":\"from-log\"},\"input\":{\"id\":\"x\"},"                 \
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
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(ndjson_suite());
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
