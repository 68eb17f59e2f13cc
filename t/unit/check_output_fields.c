/* check_fields.c - event fields and %{field} templates of the outputs (src/output/fields.c):
 * lookups in whole events and in bare member lists, dotted keys, values skipped past
 * (strings holding braces and quotes, arrays, nested objects), plain and JSON rendering,
 * bounds, and the template errors a config gets. */
#include "config.h"

#include <check.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "../../src/output/fields_int.h"
#include "logferry/event.h"

static const char EVENT[] =
    "{\"@timestamp\":\"2026-12-01T00:00:00.000Z\",\"message\":\"a } \\\" { [ ] , msg\","
    "\"tags\":[\"x\",{\"in\":\"array\"},[1,2]],\"n\":42,\"ok\":true,\"nothing\":null,"
    "\"kubernetes\":{\"namespace\":\"shop\",\"labels\":{\"app.kubernetes.io/name\":\"cart\","
    "\"app\":{\"kubernetes\":\"nested\"}}},\"caf\\u00e9\":\"k\","
    "\"u\":\"caf\\u00e9 \\ud83d\\ude00 tab\\tend\",\"input\":{\"id\":\"app\"},"
    "\"last\":\"z\"}";

/* The value of path in EVENT as a C string ("<absent>" if not found). */
static char *value(const char *json, const char *path)
{
    static char out[256];
    struct lf_str v;
    if (!lf_fields_find(lf_str_make(json, strlen(json)), path, strlen(path), &v))
        return strcpy(out, "<absent>");
    ck_assert_uint_lt(v.len, sizeof(out));
    memcpy(out, v.ptr, v.len);
    out[v.len] = '\0';
    return out;
}

START_TEST(find_returns_raw_values_past_strings_arrays_and_objects)
{
    ck_assert_str_eq(value(EVENT, "n"), "42");
    ck_assert_str_eq(value(EVENT, "ok"), "true");
    ck_assert_str_eq(value(EVENT, "nothing"), "null");
    ck_assert_str_eq(value(EVENT, "kubernetes.namespace"), "\"shop\"");
    ck_assert_str_eq(value(EVENT, "input.id"), "\"app\"");
    ck_assert_str_eq(value(EVENT, "last"), "\"z\"");
    ck_assert_str_eq(value(EVENT, "tags"), "[\"x\",{\"in\":\"array\"},[1,2]]");
    ck_assert_str_eq(value(EVENT, "input"), "{\"id\":\"app\"}");
}
END_TEST

START_TEST(find_prefers_a_key_holding_dots_then_enters_objects)
{
    ck_assert_str_eq(value(EVENT, "kubernetes.labels.app.kubernetes.io/name"), "\"cart\"");
    ck_assert_str_eq(value(EVENT, "kubernetes.labels.app.kubernetes"), "\"nested\"");
}
END_TEST

START_TEST(find_misses_absent_fields_and_never_reads_into_other_values)
{
    ck_assert_str_eq(value(EVENT, "namespace"), "<absent>");
    ck_assert_str_eq(value(EVENT, "in"), "<absent>");  /* only inside an array */
    ck_assert_str_eq(value(EVENT, "n.x"), "<absent>"); /* not an object */
    ck_assert_str_eq(value(EVENT, "kubernetes.namespac"), "<absent>");
    ck_assert_str_eq(value(EVENT, ""), "<absent>");
    ck_assert_str_eq(value("", "a"), "<absent>");
    ck_assert_str_eq(value("{\"a\":", "a"), "");               /* cut short: an empty value */
    ck_assert_str_eq(value("{\"a\":\"open", "b"), "<absent>"); /* unterminated string */
    ck_assert_str_eq(value("{\"a", "a"), "<absent>");
}
END_TEST

START_TEST(find_reads_bare_member_lists_as_stages_keep_them)
{
    const char *members = ",\"level\":\"warn\",\"http\":{\"status\":503}}\n";
    ck_assert_str_eq(value(members, "level"), "\"warn\"");
    ck_assert_str_eq(value(members, "http.status"), "503");
    ck_assert_str_eq(value(members, "status"), "<absent>");
}
END_TEST

START_TEST(find_enters_at_most_the_depth_limit)
{
    char deep[256] = "";
    char path[64] = "";
    for (int i = 0; i <= LF_FIELDS_DEPTH_MAX + 1; i++) {
        strcat(deep, "{\"a\":");
        strcat(path, i ? ".a" : "a");
    }
    strcat(deep, "1");
    for (int i = 0; i <= LF_FIELDS_DEPTH_MAX + 1; i++)
        strcat(deep, "}");
    ck_assert_str_eq(value(deep, path), "<absent>");
    path[strlen(path) - 2] = '\0'; /* one level less: within the limit */
    ck_assert_str_eq(value(deep, path), "{\"a\":1}");
}
END_TEST

static char *render(const char *tpl, const char *json, size_t cap, bool *fits)
{
    static char out[256];
    struct lf_tmpl t = { 0 };
    struct lf_errbuf eb = { "" };
    ck_assert_int_eq(lf_tmpl_compile(&t, tpl, "o", "topic", &eb), LF_OK);
    size_t len = 0;
    *fits = lf_tmpl_render(&t, lf_str_make(json, strlen(json)), out, cap, &len);
    out[*fits ? len : 0] = '\0';
    lf_tmpl_release(&t);
    return out;
}

START_TEST(render_writes_plain_text_unescaped)
{
    bool fits;
    ck_assert_str_eq(render("logs-%{kubernetes.namespace}-%{n}", EVENT, 255, &fits),
                     "logs-shop-42");
    ck_assert(fits);
    ck_assert_str_eq(render("%{u}", EVENT, 255, &fits), "caf\xc3\xa9 \xf0\x9f\x98\x80 tab\tend");
    ck_assert_str_eq(render("[%{nothing}%{no.such}]%{ok}", EVENT, 255, &fits), "[]true");
    ck_assert_str_eq(render("%{message}", EVENT, 255, &fits), "a } \" { [ ] , msg");
    ck_assert_str_eq(render("plain", EVENT, 255, &fits), "plain");
    ck_assert_str_eq(render("", EVENT, 255, &fits), "");
}
END_TEST

START_TEST(render_reports_what_does_not_fit)
{
    bool fits;
    render("logs-%{kubernetes.namespace}", EVENT, 9, &fits);
    ck_assert(fits); /* exactly 9 bytes */
    render("logs-%{kubernetes.namespace}", EVENT, 8, &fits);
    ck_assert(!fits);
    render("0123456789", EVENT, 9, &fits);
    ck_assert(!fits);
}
END_TEST

START_TEST(render_json_keeps_string_escapes_and_escapes_the_rest)
{
    struct lf_tmpl t = { 0 };
    struct lf_errbuf eb = { "" };
    ck_assert_int_eq(
        lf_tmpl_compile(&t, "q\"%{message}|%{tags}|%{nothing}|%{none}", "o", "labels: x", &eb),
        LF_OK);
    struct lf_buf out;
    lf_buf_init(&out, 1024);
    ck_assert_int_eq(lf_tmpl_render_json(&t, lf_str_make(EVENT, strlen(EVENT)), &out), LF_OK);
    const char *want = "q\\\"a } \\\" { [ ] , msg|[\\\"x\\\",{\\\"in\\\":\\\"array\\\"},[1,2]]||";
    ck_assert_uint_eq(out.len, strlen(want));
    ck_assert(memcmp(out.ptr, want, out.len) == 0);
    lf_buf_release(&out);
    lf_tmpl_release(&t);
}
END_TEST

START_TEST(compile_names_the_output_the_key_and_the_column)
{
    struct lf_tmpl t = { 0 };
    struct lf_errbuf eb = { "" };
    ck_assert_int_eq(lf_tmpl_compile(&t, "logs-%{kubernetes", "bus", "topic", &eb), LF_ECONFIG);
    ck_assert_str_eq(eb.msg, "output bus: topic: %{ without its } at column 6");
    lf_tmpl_release(&t);
    ck_assert_int_eq(lf_tmpl_compile(&t, "a%{}", "bus", "key", &eb), LF_ECONFIG);
    ck_assert_str_eq(eb.msg, "output bus: key: empty %{} at column 2");
    lf_tmpl_release(&t);
    ck_assert_int_eq(lf_tmpl_compile(&t, "a}%{b}{c", "bus", "key", &eb), LF_OK);
    ck_assert_uint_eq(t.n, 3);
    ck_assert(!t.parts[0].field && t.parts[1].field && !t.parts[2].field);
    ck_assert_str_eq(t.parts[1].text, "b");
    lf_tmpl_release(&t);
    ck_assert_uint_eq(t.n, 0);
}
END_TEST

/* lf_json_quote_json() writes what lf_json_escape() writes, byte for byte, over text of
 * every length from 0 to 80 (the 16-byte steps, their tails and runs across them) drawn
 * from plain letters, quotes, backslashes, control characters, U+2028, U+2029, another
 * character led by 0xE2 (U+20AC) and two-byte UTF-8; each written after a prefix, which it
 * keeps. */
START_TEST(quote_json_writes_what_the_escaper_writes)
{
    static const char *const pieces[] = {
        "a",        "b",      "\"",           "\\",           "\n",
        "\x01",     "\x1f",   "\xe2\x80\xa8", "\xe2\x80\xa9", "\xe2\x82\xac",
        "\xc3\xa9", "{\"k\":"
    };
    const size_t n_pieces = sizeof(pieces) / sizeof(pieces[0]);
    unsigned seed = 7;
    for (int round = 0; round < 4000; round++) {
        char text[512];
        size_t len = 0;
        size_t want = (size_t)(round % 81);
        while (len < want) {
            seed = seed * 1103515245u + 12345u;
            /* Mostly letters: long plain runs between the special bytes. */
            const char *piece = (seed >> 16) % 4 != 0 ? "x" : pieces[(seed >> 20) % n_pieces];
            size_t pl = strlen(piece);
            memcpy(text + len, piece, pl);
            len += pl;
        }
        struct lf_buf a;
        struct lf_buf b;
        lf_buf_init(&a, 1 << 20);
        lf_buf_init(&b, 1 << 20);
        ck_assert_int_eq(lf_buf_append(&a, "pre", 3), LF_OK);
        ck_assert_int_eq(lf_buf_append(&b, "pre", 3), LF_OK);
        ck_assert_int_eq(lf_json_quote_json(&a, lf_str_make(text, len)), LF_OK);
        ck_assert_int_eq(lf_json_escape(&b, lf_str_make(text, len)), LF_OK);
        ck_assert_uint_eq(a.len, b.len);
        ck_assert_mem_eq(a.ptr, b.ptr, a.len);
        lf_buf_release(&a);
        lf_buf_release(&b);
    }
}
END_TEST

/* Out of room: LF_ETOOBIG, and the buffer as it was. */
START_TEST(quote_json_leaves_the_buffer_as_it_was_when_out_of_room)
{
    struct lf_buf b;
    lf_buf_init(&b, 40);
    ck_assert_int_eq(lf_buf_append(&b, "pre", 3), LF_OK);
    const char text[] = "{\"message\":\"a \\\"quoted\\\" word\"}";
    ck_assert_int_eq(lf_json_quote_json(&b, lf_str_make(text, strlen(text))), LF_ETOOBIG);
    ck_assert_uint_eq(b.len, 3);
    lf_buf_release(&b);
}
END_TEST

/* Decimal integers, the extremes included. */
START_TEST(append_i64_writes_decimal)
{
    struct lf_buf b;
    lf_buf_init(&b, 1024);
    const int64_t v[] = { 0, 7, -7, 1764554023401000000, INT64_MAX, INT64_MIN };
    const char *want = "0,7,-7,1764554023401000000,9223372036854775807,-9223372036854775808,";
    for (size_t i = 0; i < sizeof(v) / sizeof(v[0]); i++) {
        ck_assert_int_eq(lf_buf_append_i64(&b, v[i]), LF_OK);
        ck_assert_int_eq(lf_buf_append(&b, ",", 1), LF_OK);
    }
    ck_assert_uint_eq(b.len, strlen(want));
    ck_assert_mem_eq(b.ptr, want, b.len);
    lf_buf_release(&b);
}
END_TEST

static Suite *fields_suite(void)
{
    Suite *s = suite_create("fields");
    TCase *tc = tcase_create("find");
    tcase_add_test(tc, find_returns_raw_values_past_strings_arrays_and_objects);
    tcase_add_test(tc, find_prefers_a_key_holding_dots_then_enters_objects);
    tcase_add_test(tc, find_misses_absent_fields_and_never_reads_into_other_values);
    tcase_add_test(tc, find_reads_bare_member_lists_as_stages_keep_them);
    tcase_add_test(tc, find_enters_at_most_the_depth_limit);
    suite_add_tcase(s, tc);
    tc = tcase_create("templates");
    tcase_add_test(tc, render_writes_plain_text_unescaped);
    tcase_add_test(tc, render_reports_what_does_not_fit);
    tcase_add_test(tc, render_json_keeps_string_escapes_and_escapes_the_rest);
    tcase_add_test(tc, compile_names_the_output_the_key_and_the_column);
    suite_add_tcase(s, tc);
    tc = tcase_create("quote");
    tcase_add_test(tc, quote_json_writes_what_the_escaper_writes);
    tcase_add_test(tc, quote_json_leaves_the_buffer_as_it_was_when_out_of_room);
    tcase_add_test(tc, append_i64_writes_decimal);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(fields_suite());
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
