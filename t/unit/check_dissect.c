/* check_dissect.c - the dissect stage: a table of tokenizers and real lines, config errors,
 * the whole event as encoded, and no allocation per event in steady state. */
#include "config.h"

#include "stage_fixture.h"

static enum lf_err
start(const char *tokenizer, const char *target, enum lf_trim trim, struct lf_errbuf *eb)
{
    struct lf_parser_conf pc = { .kind = LF_PARSER_DISSECT };
    pc.u.dissect.tokenizer = (char *)tokenizer;
    pc.u.dissect.target = (char *)target;
    pc.u.dissect.trim_values = trim;
    return fx_start(&lf_stage_dissect, &pc, eb);
}

#define NOFIT "\"error\":{\"message\":\"dissect: line does not fit the tokenizer\"}"

static const struct dissect_case {
    const char *tokenizer;
    const char *target;
    enum lf_trim trim;
    const char *line;
    const char *prior; /* extra before the stage */
    const char *msg;   /* the message after it */
    const char *extra; /* the extra after it */
} cases[] = {
    /* 0: the line, append joins with one space */
    { "%{ts} %{+ts} %{level} [%{component}] %{msg}", "", LF_TRIM_NONE,
      "2026-11-30 12:00:01.123 ERROR [db] timeout", "",
      "2026-11-30 12:00:01.123 ERROR [db] timeout",
      "\"ts\":\"2026-11-30 12:00:01.123\",\"level\":\"ERROR\",\"component\":\"db\","
      "\"msg\":\"timeout\"" },
    /* 1: shared/data/traces/java.log, first record's first line */
    { "%{ts} %{level} [%{logger}] %{message}", "", LF_TRIM_NONE,
      "2026-11-30T01:42:28.354Z SEVERE [shop.orders] batch 0 failed", "", "batch 0 failed",
      "\"ts\":\"2026-11-30T01:42:28.354Z\",\"level\":\"SEVERE\",\"logger\":\"shop.orders\"" },
    /* 2: shared/data/traces/python.log, under a target */
    { "%{date} %{+date} %{level} [%{logger}] %{msg}", "app", LF_TRIM_NONE,
      "2026-11-30 01:42:34,522 ERROR [billing.worker] job 0 crashed", "\"stream\":\"stderr\"",
      "2026-11-30 01:42:34,522 ERROR [billing.worker] job 0 crashed",
      "\"stream\":\"stderr\",\"app\":{\"date\":\"2026-11-30 01:42:34,522\",\"level\":\"ERROR\","
      "\"logger\":\"billing.worker\",\"msg\":\"job 0 crashed\"}" },
    /* 3: shared/data/traces/go.log; `: ` ends the component */
    { "%{day} %{+day} %{component}: %{msg}", "", LF_TRIM_NONE,
      "2026/11/30 01:42:48.630776 ingest: batch 0 accepted (0 items, cache=0)", "",
      "2026/11/30 01:42:48.630776 ingest: batch 0 accepted (0 items, cache=0)",
      "\"day\":\"2026/11/30 01:42:48.630776\",\"component\":\"ingest\","
      "\"msg\":\"batch 0 accepted (0 items, cache=0)\"" },
    /* 4: an nginx combined line with skips, named skips and quotes */
    { "%{client} %{} %{?user} [%{time}] \"%{method} %{path} %{?proto}\" %{status} %{bytes} "
      "\"%{referrer}\" \"%{agent}\"",
      "", LF_TRIM_NONE,
      "203.0.113.9 - - [30/Nov/2026:01:02:03 +0000] \"GET /cart?id=7 HTTP/1.1\" 200 512 \"-\" "
      "\"curl/8.4.0\"",
      "", NULL,
      "\"client\":\"203.0.113.9\",\"time\":\"30/Nov/2026:01:02:03 +0000\",\"method\":\"GET\","
      "\"path\":\"/cart?id=7\",\"status\":\"200\",\"bytes\":\"512\",\"referrer\":\"-\","
      "\"agent\":\"curl/8.4.0\"" },
    /* 5: a syslog line; `->` skips the second space of a one-digit day */
    { "%{mon} %{day->} %{time} %{hostname} %{prog}: %{msg}", "", LF_TRIM_NONE,
      "Dec  1 00:08:01 web-1 CRON[123]: (root) CMD (run-parts /etc/cron.hourly)", "", NULL,
      "\"mon\":\"Dec\",\"day\":\"\",\"time\":\"1\",\"hostname\":\"00:08:01\",\"prog\":\"web-1 CRON[123]\","
      "\"msg\":\"(root) CMD (run-parts /etc/cron.hourly)\"" },
    /* 6: padding on the field before the run of spaces */
    { "%{mon->} %{day} %{time} %{hostname} %{prog}: %{msg}", "", LF_TRIM_NONE,
      "Dec  1 00:08:01 web-1 CRON[123]: (root) CMD (run-parts /etc/cron.hourly)", "", NULL,
      "\"mon\":\"Dec\",\"day\":\"1\",\"time\":\"00:08:01\",\"hostname\":\"web-1\","
      "\"prog\":\"CRON[123]\",\"msg\":\"(root) CMD (run-parts /etc/cron.hourly)\"" },
    /* 7: padded columns with a multi-byte literal */
    { "%{a->}--%{b}", "", LF_TRIM_NONE, "x------y--z", "", NULL, "\"a\":\"x\",\"b\":\"y--z\"" },
    /* 8: append order by ordinal */
    { "%{+name/2} %{+name/1} %{+name/3}", "", LF_TRIM_NONE, "b a c", "", NULL,
      "\"name\":\"a b c\"" },
    /* 9-12: trim_values */
    { "%{a},%{b}", "", LF_TRIM_NONE, " x , y ", "", NULL, "\"a\":\" x \",\"b\":\" y \"" },
    { "%{a},%{b}", "", LF_TRIM_LEFT, " x , y ", "", NULL, "\"a\":\"x \",\"b\":\"y \"" },
    { "%{a},%{b}", "", LF_TRIM_RIGHT, " x ,\ty\t", "", NULL, "\"a\":\" x\",\"b\":\"\\ty\"" },
    { "%{a},%{b}", "", LF_TRIM_BOTH, " x ,\t", "", NULL, "\"a\":\"x\",\"b\":\"\"" },
    /* 13: empty fields, a literal prefix, the rest of the line after the last literal */
    { "<%{pri}>%{a}|%{b}|", "", LF_TRIM_NONE, "<13>||tail", "", NULL,
      "\"pri\":\"13\",\"a\":\"\",\"b\":\"\"" },
    /* 14: UTF-8 values and a UTF-8 literal; quotes and controls are escaped */
    { "%{k}\xc2\xbb%{v}", "", LF_TRIM_NONE, "gr\xc3\xbc\xc3\x9f\xc2\xbb\"q\"\x01\\", "", NULL,
      "\"k\":\"gr\xc3\xbc\xc3\x9f\",\"v\":\"\\\"q\\\"\\u0001\\\\\"" },
    /* 15-17: lines that do not fit keep message and extra, plus an error */
    { "%{a} %{b}", "", LF_TRIM_NONE, "nospace", "\"stream\":\"stdout\"", NULL,
      "\"stream\":\"stdout\"," NOFIT },
    { "[%{a}] %{b}", "", LF_TRIM_NONE, "a] b", "", NULL, NOFIT },
    { "%{a} %{b}", "", LF_TRIM_NONE, "", "", NULL, NOFIT },
    /* 18: an earlier error is kept, not doubled */
    { "%{a} %{b}", "", LF_TRIM_NONE, "x", "\"error\":{\"message\":\"earlier\"}", NULL,
      "\"error\":{\"message\":\"earlier\"}" },
    /* 19: a key an earlier stage added keeps its value (ndjson without overwrite_keys) */
    { "%{stream} %{b}", "", LF_TRIM_NONE, "mine x", "\"stream\":\"stdout\"", NULL,
      "\"stream\":\"stdout\",\"b\":\"x\"" },
    /* 20: ... and so does a target an earlier stage added */
    { "%{a} %{b}", "stream", LF_TRIM_NONE, "x y", "\"stream\":\"stdout\"", NULL,
      "\"stream\":\"stdout\"" },
    /* 21: an appended "message" key becomes the message */
    { "%{message} %{x} %{+message}", "", LF_TRIM_NONE, "hello x world", "", "hello world",
      "\"x\":\"x\"" },
};

START_TEST(each_case_gives_its_message_and_members)
{
    const struct dissect_case *c = &cases[_i];
    struct lf_errbuf eb = { "" };
    ck_assert_msg(start(c->tokenizer, c->target, c->trim, &eb) == LF_OK, "case %d: %s", _i, eb.msg);
    feed(c->line, strlen(c->line), c->prior, NULL);
    ck_assert_msg(strcmp(fx.extra, c->extra) == 0, "case %d: extra\n  got  %s\n  want %s", _i,
                  fx.extra, c->extra);
    const char *msg = c->msg != NULL ? c->msg : c->line;
    ck_assert_msg(strcmp(fx.msg, msg) == 0, "case %d: message\n  got  %s\n  want %s", _i, fx.msg,
                  msg);
}
END_TEST

START_TEST(the_state_is_reused_line_after_line)
{
    struct lf_errbuf eb = { "" };
    ck_assert_int_eq(start("%{a} %{b}", "", LF_TRIM_NONE, &eb), LF_OK);
    feed("one two", 7, "", NULL);
    ck_assert_str_eq(fx.extra, "\"a\":\"one\",\"b\":\"two\"");
    feed("nope", 4, "", NULL);
    ck_assert_str_eq(fx.extra, NOFIT);
    feed("three four five", 15, "", NULL);
    ck_assert_str_eq(fx.extra, "\"a\":\"three\",\"b\":\"four five\"");
}
END_TEST

START_TEST(a_nul_byte_in_the_line_is_data)
{
    struct lf_errbuf eb = { "" };
    ck_assert_int_eq(start("%{a}=%{b}", "", LF_TRIM_NONE, &eb), LF_OK);
    feed("k\0x=v", 5, "", NULL);
    ck_assert_str_eq(fx.extra, "\"a\":\"k\\u0000x\",\"b\":\"v\"");
}
END_TEST

START_TEST(the_encoded_event_carries_the_members_after_log)
{
    struct lf_errbuf eb = { "" };
    ck_assert_int_eq(start("%{level} %{message}", "", LF_TRIM_NONE, &eb), LF_OK);
    struct lf_source *src = NULL;
    ck_assert_int_eq(lf_source_new("/var/log/app.log", "app", "node-1", NULL, false, &src), LF_OK);
    const char *line = "WARN disk \"/\" at 91%";
    feed(line, strlen(line), "", src);
    lf_source_free(src);
    ck_assert_int_eq(lf_buf_append(&fx.json, "", 1), LF_OK);
    ck_assert_str_eq(
        fx.json.ptr,
        "{\"@timestamp\":\"1970-01-01T00:00:00.000Z\","
        "\"message\":\"disk \\\"/\\\" at 91%\","
        "\"log\":{\"file\":{\"path\":\"/var/log/app.log\"},\"offset\":0},"
        "\"level\":\"WARN\",\"input\":{\"id\":\"app\"},\"host\":{\"name\":\"node-1\"}}\n");
}
END_TEST

START_TEST(a_message_without_bytes_gives_an_empty_last_field)
{
    struct lf_errbuf eb = { "" };
    ck_assert_int_eq(start("%{a}", "", LF_TRIM_NONE, &eb), LF_OK);
    struct lf_event ev = { { NULL, 0 }, 42, 0, 1, 0, NULL, { NULL, 0 }, 0 };
    ck_assert_int_eq(lf_stage_dissect.process(fx.spec, fx.state, &ev, 0, &sink), LF_OK);
    ck_assert_str_eq(fx.extra, "\"a\":\"\"");
}
END_TEST

static const struct bad_case {
    const char *tokenizer;
    const char *target;
    const char *why;
} bad[] = {
    { "no fields", "", "dissect: tokenizer has no %{key} field" },
    { "%{a", "", "dissect: %{ without a closing }" },
    { "%{a}%{b}", "", "dissect: two fields with nothing between them cannot be split" },
    { "%{a} %{a}", "", "dissect: key \"a\" appears twice; write %{+a} to append" },
    { "%{} %{?x}", "", "dissect: tokenizer keeps no key (all fields skipped)" },
    { "%{*k} %{&k}", "", "dissect: %{*...} (reference keys) is not supported" },
    { "%{+a/x} b", "", "dissect: %{+key/N} needs a number after /" },
    { "%{host} %{b}", "", "dissect: key \"host\" is a key every event has already" },
    { "%{@timestamp} %{b}", "", "dissect: key \"@timestamp\" is a key every event has already" },
    { "%{a} %{b}", "log", "dissect: target \"log\" is a key every event has already" },
};

START_TEST(a_bad_tokenizer_is_a_config_error_that_says_why)
{
    struct lf_errbuf eb = { "" };
    ck_assert_int_eq(start(bad[_i].tokenizer, bad[_i].target, LF_TRIM_NONE, &eb), LF_ECONFIG);
    ck_assert_str_eq(eb.msg, bad[_i].why);
    ck_assert_ptr_null(fx.spec);
}
END_TEST

START_TEST(a_host_key_under_a_target_is_fine)
{
    struct lf_errbuf eb = { "" };
    ck_assert_int_eq(start("%{host} %{message}", "syslog", LF_TRIM_NONE, &eb), LF_OK);
    feed("web-1 hi", 8, "", NULL);
    ck_assert_str_eq(fx.extra, "\"syslog\":{\"host\":\"web-1\",\"message\":\"hi\"}");
    ck_assert_str_eq(fx.msg, "web-1 hi");
}
END_TEST

/* Run alone by check_dissect_alloc (see main). */
START_TEST(steady_state_allocates_nothing_per_event)
{
    struct lf_errbuf eb = { "" };
    ck_assert_int_eq(start(cases[0].tokenizer, "app", LF_TRIM_BOTH, &eb), LF_OK);
    const char *lines[] = { cases[0].line, "x", "2026-11-30 12:00:01.123 INFO [web] a longer ok" };
    for (int i = 0; i < 3; i++)
        feed(lines[i], strlen(lines[i]), "\"stream\":\"stdout\"", NULL);
    free(fx.msg); /* collect's copies are the test's, not the stage's */
    free(fx.extra);
    fx.msg = fx.extra = NULL;
    struct lf_event evs[3];
    for (size_t i = 0; i < 3; i++) {
        struct lf_event ev = { lf_str_make(lines[i], strlen(lines[i])),  42, 0, 1, 0, NULL,
                               lf_str_make("\"stream\":\"stdout\"", 17), 0 };
        evs[i] = ev;
    }
    enum lf_err err = LF_OK;
    uint64_t allocs = fx_steady_allocs(evs, 3, 334, &err);
    ck_assert_int_eq(err, LF_OK);
    ck_assert_uint_eq(allocs, 0);
}
END_TEST

static Suite *dissect_suite(void)
{
    Suite *s = suite_create("dissect");
    TCase *tc = tcase_create("lines");
    tcase_add_checked_fixture(tc, NULL, teardown);
    tcase_add_loop_test(tc, each_case_gives_its_message_and_members, 0,
                        (int)(sizeof(cases) / sizeof(cases[0])));
    tcase_add_test(tc, the_state_is_reused_line_after_line);
    tcase_add_test(tc, a_nul_byte_in_the_line_is_data);
    tcase_add_test(tc, a_message_without_bytes_gives_an_empty_last_field);
    tcase_add_test(tc, the_encoded_event_carries_the_members_after_log);
    tcase_add_test(tc, a_host_key_under_a_target_is_fine);
    suite_add_tcase(s, tc);
    TCase *conf = tcase_create("config errors");
    tcase_add_checked_fixture(conf, NULL, teardown);
    tcase_add_loop_test(conf, a_bad_tokenizer_is_a_config_error_that_says_why, 0,
                        (int)(sizeof(bad) / sizeof(bad[0])));
    suite_add_tcase(s, conf);
    TCase *alloc = tcase_create("alloc");
    tcase_set_tags(alloc, "alloc");
    tcase_add_checked_fixture(alloc, NULL, teardown);
    tcase_add_test(alloc, steady_state_allocates_nothing_per_event);
    suite_add_tcase(s, alloc);
    return s;
}

int main(void)
{
    return stage_fixture_main(dissect_suite());
}
