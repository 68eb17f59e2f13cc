/* check_event.c - sources, the JSON encoder, escaping and timestamps. */
#include "config.h"

#include <check.h>
#include <jansson.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "logferry/event.h"

#define TS_NS (INT64_C(1796000523456) * 1000000 + 789) /* 2026-11-30T01:02:03.456Z */

static struct lf_buf out;

static void setup(void)
{
    lf_buf_init(&out, 1 << 24);
}

static void teardown(void)
{
    lf_buf_release(&out);
}

static struct lf_source *source(const char *path, const char *fields, bool under_root)
{
    struct lf_source *src = NULL;
    ck_assert_int_eq(lf_source_new(path, "app", "node-1", fields, under_root, &src), LF_OK);
    return src;
}

static struct lf_event
event(struct lf_source *src, const char *msg, size_t len, uint64_t off, unsigned flags)
{
    struct lf_event ev = { lf_str_make(msg, len), TS_NS, off, off + len + 1, flags, src,
                           { NULL, 0 },           0 };
    return ev;
}

/* Encodes one event and asserts the exact line. */
static void assert_encodes(const struct lf_event *ev, const char *want)
{
    lf_buf_reset(&out);
    ck_assert_int_eq(lf_event_encode(&out, ev), LF_OK);
    ck_assert_uint_eq(out.len, strlen(want));
    ck_assert_mem_eq(out.ptr, want, out.len);
}

static void assert_escapes(const char *in, size_t len, const char *want)
{
    lf_buf_reset(&out);
    ck_assert_int_eq(lf_json_escape(&out, lf_str_make(in, len)), LF_OK);
    ck_assert_uint_eq(out.len, strlen(want));
    ck_assert_mem_eq(out.ptr, want, out.len);
}

START_TEST(stage_members_go_after_log_and_dropped_events_encode_to_nothing)
{
    struct lf_source *src = source("/p", "{\"env\":\"prod\"}", false);
    struct lf_event ev = event(src, "hi", 2, 7, 0);
    ev.extra = LF_STR_LIT("\"stream\":\"stderr\",\"error\":{\"message\":\"bad\"}");
    assert_encodes(&ev, "{\"@timestamp\":\"2026-11-30T01:02:03.456Z\",\"message\":\"hi\","
                        "\"log\":{\"file\":{\"path\":\"/p\"},\"offset\":7},"
                        "\"stream\":\"stderr\",\"error\":{\"message\":\"bad\"},"
                        "\"input\":{\"id\":\"app\"},\"host\":{\"name\":\"node-1\"},"
                        "\"fields\":{\"env\":\"prod\"}}\n");
    ev.flags = LF_EVENT_DROPPED;
    lf_buf_reset(&out);
    ck_assert_int_eq(lf_event_encode(&out, &ev), LF_OK);
    ck_assert_uint_eq(out.len, 0);
    lf_source_free(src);
}
END_TEST

START_TEST(event_with_flags_and_nested_fields_matches_spec_example)
{
    struct lf_source *src = source("/p", "{\"env\":\"prod\"}", false);
    struct lf_event ev = event(src, "...", 3, 1234, LF_EVENT_MULTILINE | LF_EVENT_TRUNCATED);
    assert_encodes(&ev, "{\"@timestamp\":\"2026-11-30T01:02:03.456Z\",\"message\":\"...\","
                        "\"log\":{\"file\":{\"path\":\"/p\"},\"offset\":1234,"
                        "\"flags\":[\"multiline\",\"truncated\"]},\"input\":{\"id\":\"app\"},"
                        "\"host\":{\"name\":\"node-1\"},\"fields\":{\"env\":\"prod\"}}\n");
    lf_source_free(src);
}
END_TEST

START_TEST(event_without_flags_or_fields_has_neither_key)
{
    struct lf_source *src = source("/var/log/a.log", NULL, false);
    struct lf_event ev = event(src, "hello", 5, 0, 0);
    assert_encodes(&ev, "{\"@timestamp\":\"2026-11-30T01:02:03.456Z\",\"message\":\"hello\","
                        "\"log\":{\"file\":{\"path\":\"/var/log/a.log\"},\"offset\":0},"
                        "\"input\":{\"id\":\"app\"},\"host\":{\"name\":\"node-1\"}}\n");
    lf_source_free(src);
}
END_TEST

START_TEST(flags_are_listed_in_fixed_order_whatever_the_bits)
{
    struct lf_source *src = source("/p", NULL, false);
    struct lf_event ev = event(src, "", 0, 7, LF_EVENT_PARTIAL_JOINED | LF_EVENT_MULTILINE);
    assert_encodes(&ev, "{\"@timestamp\":\"2026-11-30T01:02:03.456Z\",\"message\":\"\","
                        "\"log\":{\"file\":{\"path\":\"/p\"},\"offset\":7,"
                        "\"flags\":[\"multiline\",\"partial_joined\"]},"
                        "\"input\":{\"id\":\"app\"},\"host\":{\"name\":\"node-1\"}}\n");
    lf_source_free(src);
}
END_TEST

START_TEST(fields_under_root_are_spliced_after_host)
{
    struct lf_source *src = source("/p", " { \"env\" : \"prod\", \"n\": [1, 2] } ", true);
    struct lf_event ev = event(src, "m", 1, UINT64_MAX, 0);
    assert_encodes(&ev, "{\"@timestamp\":\"2026-11-30T01:02:03.456Z\",\"message\":\"m\","
                        "\"log\":{\"file\":{\"path\":\"/p\"},\"offset\":18446744073709551615},"
                        "\"input\":{\"id\":\"app\"},\"host\":{\"name\":\"node-1\"},"
                        "\"env\" : \"prod\", \"n\": [1, 2]}\n");
    lf_source_free(src);
}
END_TEST

START_TEST(empty_fields_under_root_add_nothing)
{
    struct lf_source *src = source("/p", "{ }", true);
    struct lf_event ev = event(src, "m", 1, 1, 0);
    assert_encodes(&ev, "{\"@timestamp\":\"2026-11-30T01:02:03.456Z\",\"message\":\"m\","
                        "\"log\":{\"file\":{\"path\":\"/p\"},\"offset\":1},"
                        "\"input\":{\"id\":\"app\"},\"host\":{\"name\":\"node-1\"}}\n");
    lf_source_free(src);
}
END_TEST

START_TEST(stdin_source_has_offset_but_no_file)
{
    struct lf_source *src = source(NULL, "{}", false);
    struct lf_event ev = event(src, "x", 1, 42, 0);
    assert_encodes(&ev, "{\"@timestamp\":\"2026-11-30T01:02:03.456Z\",\"message\":\"x\","
                        "\"log\":{\"offset\":42},\"input\":{\"id\":\"app\"},"
                        "\"host\":{\"name\":\"node-1\"},\"fields\":{}}\n");
    lf_source_free(src);
}
END_TEST

START_TEST(source_metadata_is_escaped_and_invalid_utf8_replaced)
{
    struct lf_source *src = NULL;
    ck_assert_int_eq(lf_source_new("/a\"b\\c\xff.log", "i\nd", NULL, NULL, false, &src), LF_OK);
    struct lf_event ev = event(src, "x", 1, 0, 0);
    assert_encodes(&ev, "{\"@timestamp\":\"2026-11-30T01:02:03.456Z\",\"message\":\"x\","
                        "\"log\":{\"file\":{\"path\":\"/a\\\"b\\\\c\xef\xbf\xbd.log\"},"
                        "\"offset\":0},\"input\":{\"id\":\"i\\nd\"}}\n");
    lf_source_free(src);
}
END_TEST

START_TEST(source_rejects_fields_that_are_not_an_object)
{
    struct lf_source *src = NULL;
    ck_assert_int_eq(lf_source_new("/p", "app", "h", "[1]", false, &src), LF_EINVAL);
    ck_assert_int_eq(lf_source_new("/p", "app", "h", "{\"a\":", true, &src), LF_EINVAL);
    ck_assert_int_eq(lf_source_new("/p", NULL, "h", NULL, true, &src), LF_EINVAL);
    ck_assert_ptr_null(src);
}
END_TEST

START_TEST(every_control_character_is_escaped)
{
    char in[32];
    for (int i = 0; i < 32; i++)
        in[i] = (char)i;
    assert_escapes(in, 32,
                   "\\u0000\\u0001\\u0002\\u0003\\u0004\\u0005\\u0006\\u0007"
                   "\\b\\t\\n\\u000b\\f\\r\\u000e\\u000f"
                   "\\u0010\\u0011\\u0012\\u0013\\u0014\\u0015\\u0016\\u0017"
                   "\\u0018\\u0019\\u001a\\u001b\\u001c\\u001d\\u001e\\u001f");
}
END_TEST

START_TEST(quotes_backslash_and_del_are_handled)
{
    assert_escapes("say \"hi\" C:\\dir\x7f", 16, "say \\\"hi\\\" C:\\\\dir\x7f");
}
END_TEST

START_TEST(line_separators_are_escaped_other_e2_sequences_are_not)
{
    /* U+2028, U+2029, then U+2027 and U+20AC (euro) which stay raw. */
    assert_escapes("a\xe2\x80\xa8"
                   "b\xe2\x80\xa9"
                   "c\xe2\x80\xa7\xe2\x82\xac",
                   15, "a\\u2028b\\u2029c\xe2\x80\xa7\xe2\x82\xac");
}
END_TEST

START_TEST(multibyte_utf8_passes_through_unchanged)
{
    const char *s = "h\xc3\xa9llo \xe4\xb8\x96\xe7\x95\x8c \xf0\x9f\x98\x80 and a long tail";
    assert_escapes(s, strlen(s), s);
}
END_TEST

START_TEST(nul_inside_a_message_becomes_u0000)
{
    struct lf_source *src = source("/p", NULL, false);
    struct lf_event ev = event(src, "a\0b", 3, 0, 0);
    lf_buf_reset(&out);
    ck_assert_int_eq(lf_event_encode(&out, &ev), LF_OK);
    const char *want = "\"message\":\"a\\u0000b\"";
    ck_assert_ptr_nonnull(memmem(out.ptr, out.len, want, strlen(want)));
    lf_source_free(src);
}
END_TEST

START_TEST(escape_leaves_buffer_unchanged_when_it_hits_the_cap)
{
    struct lf_buf small;
    lf_buf_init(&small, 8);
    ck_assert_int_eq(lf_buf_append(&small, "ab", 2), LF_OK);
    ck_assert_int_eq(lf_json_escape(&small, LF_STR_LIT("\n\n\n\n")), LF_ETOOBIG);
    ck_assert_uint_eq(small.len, 2);
    lf_buf_release(&small);
}
END_TEST

START_TEST(a_special_byte_is_found_at_every_offset_of_short_and_long_strings)
{
    /* The plain-run scan takes 16 bytes a step and tests a tail under 16 bytes with the
     * 16 that end the string: every length to 70 and every offset, read from a buffer of
     * exactly the string's bytes (ASan catches a read past it). */
    static const char *const specials[] = { "\"",           "\\",    "\n",   "\x01", "\x1f",
                                            "\xe2\x80\xa8", "\xe2x", "\xe2", "\xff" };
    static const char *const escaped[] = { "\\\"",    "\\\\",  "\\n",  "\\u0001", "\\u001f",
                                           "\\u2028", "\xe2x", "\xe2", "\xff" };
    for (size_t len = 1; len <= 70; len++) {
        for (size_t at = 0; at < len; at++) {
            for (size_t k = 0; k < sizeof(specials) / sizeof(specials[0]); k++) {
                size_t sl = strlen(specials[k]);
                if (at + sl > len)
                    continue;
                char *in = malloc(len);
                char want[160];
                ck_assert_ptr_nonnull(in);
                memset(in, 'a', len);
                memcpy(in + at, specials[k], sl);
                memset(want, 'a', at);
                size_t el = strlen(escaped[k]);
                memcpy(want + at, escaped[k], el);
                memset(want + at + el, 'a', len - at - sl);
                want[at + el + len - at - sl] = '\0';
                /* 0xE2 stops the run even where it is copied as it is; 0xFF never does */
                ck_assert_uint_eq(lf_json_plain_len(lf_str_make(in, len)), k < 8 ? at : len);
                assert_escapes(in, len, want);
                free(in);
            }
        }
    }
}
END_TEST

START_TEST(timestamp_formats_spec_example)
{
    char buf[25];
    lf_format_timestamp(TS_NS, buf);
    ck_assert_str_eq(buf, "2026-11-30T01:02:03.456Z");
    lf_format_timestamp(0, buf);
    ck_assert_str_eq(buf, "1970-01-01T00:00:00.000Z");
}
END_TEST

START_TEST(timestamp_handles_leap_days)
{
    char buf[25];
    lf_format_timestamp(INT64_C(1709251199999) * 1000000, buf);
    ck_assert_str_eq(buf, "2024-02-29T23:59:59.999Z");
    lf_format_timestamp(INT64_C(1709251199999) * 1000000 + 1000000, buf);
    ck_assert_str_eq(buf, "2024-03-01T00:00:00.000Z");
    lf_format_timestamp(INT64_C(951825600000) * 1000000, buf);
    ck_assert_str_eq(buf, "2000-02-29T12:00:00.000Z");
    lf_format_timestamp((INT64_C(4107456000000) + 86400000) * 1000000, buf);
    ck_assert_str_eq(buf, "2100-03-01T00:00:00.000Z"); /* 2100 is not a leap year */
}
END_TEST

START_TEST(timestamp_drops_sub_millisecond_digits)
{
    char buf[25];
    lf_format_timestamp(INT64_C(1709251199999) * 1000000 + 999999, buf);
    ck_assert_str_eq(buf, "2024-02-29T23:59:59.999Z");
    lf_format_timestamp(-1, buf);
    ck_assert_str_eq(buf, "1969-12-31T23:59:59.999Z");
}
END_TEST

START_TEST(timestamp_cache_follows_the_millisecond)
{
    struct lf_source *src = source(NULL, NULL, false);
    struct lf_ts_cache c;
    lf_ts_cache_init(&c);
    struct lf_event ev = event(src, "x", 1, 0, 0);
    ck_assert_int_eq(lf_event_encode_cached(&out, &ev, &c), LF_OK);
    ev.timestamp_ns += 1000000;
    ck_assert_int_eq(lf_event_encode_cached(&out, &ev, &c), LF_OK);
    ck_assert_ptr_nonnull(memmem(out.ptr, out.len, "03.456Z", 7));
    ck_assert_ptr_nonnull(memmem(out.ptr, out.len, "03.457Z", 7));
    lf_source_free(src);
}
END_TEST

START_TEST(now_is_after_2024)
{
    ck_assert_int_gt(lf_now_ns(), INT64_C(1704067200) * 1000000000);
}
END_TEST

/* Appends one random code point (never a surrogate) as UTF-8; biased towards specials. */
static size_t random_utf8(char *p, unsigned *seed)
{
    static const uint32_t specials[] = { 0, '\n', '"', '\\', 0x7f, 0x2028, 0x2029, 0x2027 };
    unsigned r = (unsigned)rand_r(seed);
    uint32_t cp;
    switch (r % 6) {
    case 0:
        cp = specials[(r >> 3) % 8];
        break;
    case 1:
        cp = 0x80 + (r >> 3) % 0x780;
        break;
    case 2:
        cp = 0x800 + (r >> 3) % 0xf800;
        break;
    case 3:
        cp = 0x10000 + (r >> 3) % 0x100000;
        break;
    default:
        cp = (r >> 3) % 0x80;
        break;
    }
    if (cp >= 0xd800 && cp < 0xe000)
        cp = 'x';
    if (cp < 0x80) {
        p[0] = (char)cp;
        return 1;
    }
    if (cp < 0x800) {
        p[0] = (char)(0xc0 | cp >> 6);
        p[1] = (char)(0x80 | (cp & 0x3f));
        return 2;
    }
    if (cp < 0x10000) {
        p[0] = (char)(0xe0 | cp >> 12);
        p[1] = (char)(0x80 | (cp >> 6 & 0x3f));
        p[2] = (char)(0x80 | (cp & 0x3f));
        return 3;
    }
    p[0] = (char)(0xf0 | cp >> 18);
    p[1] = (char)(0x80 | (cp >> 12 & 0x3f));
    p[2] = (char)(0x80 | (cp >> 6 & 0x3f));
    p[3] = (char)(0x80 | (cp & 0x3f));
    return 4;
}

START_TEST(random_messages_round_trip_through_jansson)
{
    struct lf_source *src = source("/p", "{\"env\":\"prod\"}", true);
    unsigned seed = 12345;
    char msg[512];
    for (int iter = 0; iter < 2000; iter++) {
        size_t len = 0;
        size_t chars = (size_t)rand_r(&seed) % 100;
        for (size_t i = 0; i < chars; i++)
            len += random_utf8(msg + len, &seed);
        struct lf_event ev = event(src, msg, len, (uint64_t)iter, (unsigned)iter & 7);
        lf_buf_reset(&out);
        ck_assert_int_eq(lf_event_encode(&out, &ev), LF_OK);
        ck_assert_ptr_null(memchr(out.ptr, '\n', out.len - 1));
        json_error_t jerr;
        json_t *obj = json_loadb(out.ptr, out.len, JSON_ALLOW_NUL, &jerr);
        ck_assert_msg(obj != NULL, "iteration %d: %s", iter, jerr.text);
        json_t *m = json_object_get(obj, "message");
        ck_assert_uint_eq(json_string_length(m), len);
        ck_assert_mem_eq(json_string_value(m), msg, len);
        ck_assert_str_eq(json_string_value(json_object_get(obj, "env")), "prod");
        json_decref(obj);
    }
    lf_source_free(src);
}
END_TEST

static Suite *event_suite(void)
{
    Suite *s = suite_create("event");
    TCase *tc = tcase_create("encode");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, event_with_flags_and_nested_fields_matches_spec_example);
    tcase_add_test(tc, stage_members_go_after_log_and_dropped_events_encode_to_nothing);
    tcase_add_test(tc, event_without_flags_or_fields_has_neither_key);
    tcase_add_test(tc, flags_are_listed_in_fixed_order_whatever_the_bits);
    tcase_add_test(tc, fields_under_root_are_spliced_after_host);
    tcase_add_test(tc, empty_fields_under_root_add_nothing);
    tcase_add_test(tc, stdin_source_has_offset_but_no_file);
    tcase_add_test(tc, source_metadata_is_escaped_and_invalid_utf8_replaced);
    tcase_add_test(tc, source_rejects_fields_that_are_not_an_object);
    tcase_add_test(tc, nul_inside_a_message_becomes_u0000);
    tcase_add_test(tc, random_messages_round_trip_through_jansson);
    suite_add_tcase(s, tc);

    tc = tcase_create("escape");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, every_control_character_is_escaped);
    tcase_add_test(tc, quotes_backslash_and_del_are_handled);
    tcase_add_test(tc, line_separators_are_escaped_other_e2_sequences_are_not);
    tcase_add_test(tc, multibyte_utf8_passes_through_unchanged);
    tcase_add_test(tc, escape_leaves_buffer_unchanged_when_it_hits_the_cap);
    tcase_add_test(tc, a_special_byte_is_found_at_every_offset_of_short_and_long_strings);
    suite_add_tcase(s, tc);

    tc = tcase_create("timestamp");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, timestamp_formats_spec_example);
    tcase_add_test(tc, timestamp_handles_leap_days);
    tcase_add_test(tc, timestamp_drops_sub_millisecond_digits);
    tcase_add_test(tc, timestamp_cache_follows_the_millisecond);
    tcase_add_test(tc, now_is_after_2024);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(event_suite());
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
