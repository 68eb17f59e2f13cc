/* check_regex.c - the regex stage: a table of patterns and real lines (types, unset groups,
 * collisions, targets, failures), config errors with PCRE2's offsets, the encoded event,
 * and no allocation per event in steady state. */
#include "config.h"

#include "stage_fixture.h"

#define STREAM "\"stream\":\"stdout\""

struct regex_conf {
    const char *pattern;
    const char *target; /* NULL: the default */
    const char *field;  /* NULL: message */
    enum lf_on_failure on_failure;
    const char *types; /* JSON, or NULL */
};

static enum lf_err start(const struct regex_conf *c, struct lf_errbuf *eb)
{
    struct lf_parser_conf pc = { .kind = LF_PARSER_REGEX };
    pc.u.regex.pattern = (char *)c->pattern;
    pc.u.regex.target = (char *)c->target;
    pc.u.regex.field = (char *)c->field;
    pc.u.regex.on_failure = c->on_failure;
    pc.u.regex.types_json = (char *)c->types;
    return fx_start(&lf_stage_regex, &pc, eb);
}

#define NOMATCH "\"error\":{\"message\":\"regex: the pattern does not match\"}"
#define KEEP    LF_ON_FAILURE_KEEP

/* nginx's default error_log line */
#define NGINX_ERR                                                                 \
    "^(?<time>\\d{4}/\\d\\d/\\d\\d \\d\\d:\\d\\d:\\d\\d) \\[(?<level>\\w+)\\] "   \
    "(?<pid:int>\\d+)#(?<tid:int>\\d+): (?:\\*(?<cid:int>\\d+) )?(?<message>.*?)" \
    "(?:, client: (?<client>[^,]+))?(?:, server: (?<server>[^,]+))?"              \
    "(?:, request: \"(?<request>[^\"]*)\")?$"

static const struct regex_case {
    struct regex_conf conf;
    const char *line;
    const char *prior; /* extra before the stage */
    const char *msg;   /* the message after it; NULL: unchanged */
    const char *extra; /* the extra after it */
} cases[] = {
    /* 0: the line; groups in pattern order */
    { { "^(?<ts>\\S+ \\S+) (?<level>[A-Z]+) \\[(?<component>[^\\]]+)\\] (?<msg>.*)$", NULL, NULL,
        KEEP, NULL },
      "2026-11-30 12:00:01.123 ERROR [db] timeout",
      "",
      NULL,
      "\"ts\":\"2026-11-30 12:00:01.123\",\"level\":\"ERROR\",\"component\":\"db\","
      "\"msg\":\"timeout\"" },
    /* 1: an nginx error_log line: typed groups, message replaced, optional groups present */
    { { NGINX_ERR, NULL, NULL, KEEP, NULL },
      "2026/11/30 06:25:01 [error] 1234#1234: *5678 open() \"/srv/www/favicon.ico\" failed "
      "(2: No such file or directory), client: 2001:db8::42, server: shop.example.com, "
      "request: \"GET /favicon.ico HTTP/2.0\"",
      "",
      "open() \"/srv/www/favicon.ico\" failed (2: No such file or directory)",
      "\"time\":\"2026/11/30 06:25:01\",\"level\":\"error\",\"pid\":1234,\"tid\":1234,"
      "\"cid\":5678,\"client\":\"2001:db8::42\",\"server\":\"shop.example.com\","
      "\"request\":\"GET /favicon.ico HTTP/2.0\"" },
    /* 2: the same without a connection and a client: unset groups are left out */
    { { NGINX_ERR, NULL, NULL, KEEP, NULL },
      "2026/11/30 06:25:02 [notice] 1#1: signal 1 (SIGHUP) received from 4242, reconfiguring",
      "",
      "signal 1 (SIGHUP) received from 4242, reconfiguring",
      "\"time\":\"2026/11/30 06:25:02\",\"level\":\"notice\",\"pid\":1,\"tid\":1" },
    /* 3: types from the map, float and bool; JSON numbers as written */
    { { "took=(?<ms>\\S+) ok=(?<ok>\\S+) n=(?<n>\\S+)", NULL, NULL, KEEP,
        "{\"ms\":\"float\",\"ok\":\"bool\",\"n\":\"int\"}" },
      "GET /a took=12.5e-1 ok=TRUE n=-0042",
      "",
      NULL,
      "\"ms\":12.5e-1,\"ok\":true,\"n\":-42" },
    /* 4: floats that JSON does not write as they are become the shortest JSON number */
    { { "a=(?<a:float>\\S+) b=(?<b:float>\\S+) c=(?<c:float>\\S+) d=(?<d:bool>\\d)", NULL, NULL,
        KEEP, NULL },
      "a=+1.5 b=.25 c=7. d=0",
      "",
      NULL,
      "\"a\":1.5,\"b\":0.25,\"c\":7,\"d\":false" },
    /* 5: a float of 50 digits is written as a double JSON readers take (found by
     * fuzz_parsers: jansson refuses an integer that large); one a double cannot hold is
     * no float */
    { { "(?<a:float>\\d+) (?<b:float>\\S+)", NULL, NULL, KEEP, NULL },
      "22222222222222222222222222222222222222222222222222 1e999",
      "",
      NULL,
      "\"a\":2.2222222222222222e+49,\"b\":\"1e999\",\"error\":{\"message\":\"regex: group b "
      "is not a float\"}" },
    /* 6: a value that does not convert stays a string, and the event says so */
    { { "status=(?<status:int>\\S+) ratio=(?<r:float>\\S+)", NULL, NULL, KEEP, NULL },
      "status=2xx ratio=inf",
      "",
      NULL,
      "\"status\":\"2xx\",\"r\":\"inf\",\"error\":{\"message\":\"regex: group status is not an "
      "int\"}" },
    /* 7: int limits: INT64_MIN fits, one past INT64_MAX does not */
    { { "(?<lo:int>\\S+) (?<hi:int>\\S+)", NULL, NULL, KEEP, NULL },
      "-9223372036854775808 9223372036854775808",
      "",
      NULL,
      "\"lo\":-9223372036854775808,\"hi\":\"9223372036854775808\","
      "\"error\":{\"message\":\"regex: group hi is not an int\"}" },
    /* 8: a line that does not match: kept with error.message */
    { { "^\\d+ (?<w>\\w+)$", NULL, NULL, KEEP, NULL },
      "no digits here",
      "\"stream\":\"stdout\"",
      NULL,
      "\"stream\":\"stdout\"," NOMATCH },
    /* 9: keep_silent */
    { { "^\\d+ (?<w>\\w+)$", NULL, NULL, LF_ON_FAILURE_KEEP_SILENT, NULL },
      "no digits here",
      "\"stream\":\"stdout\"",
      NULL,
      "\"stream\":\"stdout\"" },
    /* 10: a key an earlier stage added keeps its value; an earlier error stays the only one */
    { { "(?<stream>\\w+) (?<n:int>\\w+)", NULL, NULL, KEEP, NULL },
      "fake x",
      "\"stream\":\"stdout\",\"error\":{\"message\":\"earlier\"}",
      NULL,
      "\"stream\":\"stdout\",\"error\":{\"message\":\"earlier\"},\"n\":\"x\"" },
    /* 11: a target; message and stream are plain members there */
    { { "(?<stream>\\w+) (?<message>.*)", "re", NULL, KEEP, NULL },
      "err boom",
      "\"stream\":\"stdout\"",
      NULL,
      "\"stream\":\"stdout\",\"re\":{\"stream\":\"err\",\"message\":\"boom\"}" },
    /* 12: a target an earlier stage added keeps its value */
    { { "(?<a>\\w+)", "stream", NULL, KEEP, NULL },
      "x",
      "\"stream\":\"stdout\"",
      NULL,
      "\"stream\":\"stdout\"" },
    /* 13: a target whose groups all took no part is left out */
    { { "^(?:(?<a>\\d+)|\\w+)$", "re", NULL, KEEP, NULL }, "word", "", NULL, "" },
    /* 14: UTF-8 in the line and in the match (\\w is ASCII, \\p{L} any letter); control
     * characters escaped */
    { { "^(?<city>\\p{L}+): (?<temp:float>-?[\\d.]+)\\x{00B0}C(?<rest>.*)", NULL, NULL, KEEP,
        NULL },
      "M\xc3\xbcnchen: -3.5\xc2\xb0"
      "C\tklar",
      "",
      NULL,
      "\"city\":\"M\xc3\xbcnchen\",\"temp\":-3.5,\"rest\":\"\\tklar\"" },
    /* 15: an empty group is an empty string; an empty int is not an int */
    { { "^(?<a>\\w*)=(?<b:int>\\d*)$", NULL, NULL, KEEP, NULL },
      "=",
      "",
      NULL,
      "\"a\":\"\",\"b\":\"\",\"error\":{\"message\":\"regex: group b is not an int\"}" },
    /* 16: field: a string member an earlier stage added (escapes are undone first) */
    { { "^(?<user>\\w+) \"(?<q>[^\"]*)\"$", NULL, "msg", KEEP, NULL },
      "the line",
      "\"msg\":\"ann \\\"x\\u00e4\\\"\"",
      NULL,
      "\"msg\":\"ann \\\"x\\u00e4\\\"\",\"user\":\"ann\",\"q\":\"x\xc3\xa4\"" },
    /* 17: field: a nested member */
    { { "^(?<major:int>\\d+)\\.", NULL, "http.version", KEEP, NULL },
      "line",
      "\"http\":{\"version\":\"2.0\"}",
      NULL,
      "\"http\":{\"version\":\"2.0\"},\"major\":2" },
    /* 18: field missing, or not a string */
    { { "(?<a>.)", NULL, "nope", KEEP, NULL },
      "line",
      "\"n\":1",
      NULL,
      "\"n\":1,\"error\":{\"message\":\"regex: the field to match is not a string member of "
      "the event\"}" },
    { { "(?<a>.)", NULL, "n", KEEP, NULL },
      "line",
      "\"n\":1",
      NULL,
      "\"n\":1,\"error\":{\"message\":\"regex: the field to match is not a string member of "
      "the event\"}" },
    /* 20: suffixes with (?P<..>) and (?'..') and a ':' inside a class are handled */
    { { "(?P<a:int>\\d+)[:<>](?'b:bool'\\w+)(?<c>[(?<x:int>]+)", NULL, NULL, KEEP, NULL },
      "7:true(?<x",
      "",
      NULL,
      "\"a\":7,\"b\":true,\"c\":\"(?<x\"" },
    /* 21: \Q..\E quotes a group-like text */
    { { "\\Q(?<q:int>\\E(?<n:int>\\d)", NULL, NULL, KEEP, NULL },
      "(?<q:int>5",
      "",
      NULL,
      "\"n\":5" },
    /* 22: field: an empty string member (found by fuzz_parsers: UBSan saw the unescape
     * write at the end of a buffer with no bytes yet) */
    { { "^(?<all>.*)$", NULL, "v", KEEP, NULL },
      "line",
      "\"v\":\"\"",
      NULL,
      "\"v\":\"\",\"all\":\"\"" },
    /* 23: an empty message against a pattern that matches empty */
    { { "^(?<all>.*)$", NULL, NULL, KEEP, NULL }, "", "", NULL, "\"all\":\"\"" },
};

START_TEST(each_case_gives_its_message_and_members)
{
    const struct regex_case *c = &cases[_i];
    struct lf_errbuf eb = { "" };
    ck_assert_msg(start(&c->conf, &eb) == LF_OK, "case %d: %s", _i, eb.msg);
    feed(c->line, strlen(c->line), c->prior, NULL);
    fx_assert_event(_i, c->extra, c->msg != NULL ? c->msg : c->line);
}
END_TEST

static struct lf_event dropped_ev;

static enum lf_err keep_flags(void *arg, const struct lf_event *ev)
{
    (void)arg;
    dropped_ev = *ev;
    return LF_OK;
}

START_TEST(on_failure_drop_marks_the_event_dropped)
{
    struct regex_conf conf = { "^(?<n:int>\\d+)$", NULL, NULL, LF_ON_FAILURE_DROP, NULL };
    struct lf_errbuf eb = { "" };
    ck_assert_int_eq(start(&conf, &eb), LF_OK);
    struct lf_stage_out out = { keep_flags, NULL };
    struct lf_event ev = { lf_str_make("abc", 3), 42, 0, 4, 0, NULL, { NULL, 0 }, 0 };
    ck_assert_int_eq(lf_stage_regex.process(fx.spec, fx.state, &ev, 0, &out), LF_OK);
    ck_assert_uint_eq(dropped_ev.flags & LF_EVENT_DROPPED, LF_EVENT_DROPPED);
    ev.message = lf_str_make("123", 3);
    ck_assert_int_eq(lf_stage_regex.process(fx.spec, fx.state, &ev, 0, &out), LF_OK);
    ck_assert_uint_eq(dropped_ev.flags & LF_EVENT_DROPPED, 0);
    ck_assert_int_eq((int)dropped_ev.extra.len, 7);
    ck_assert_int_eq(memcmp(dropped_ev.extra.ptr, "\"n\":123", 7), 0);
}
END_TEST

START_TEST(invalid_utf8_in_the_subject_does_not_break_the_match)
{
    struct regex_conf conf = { "^(?<a>\\w+) (?<b>\\w+)$", NULL, NULL, KEEP, NULL };
    struct lf_errbuf eb = { "" };
    ck_assert_int_eq(start(&conf, &eb), LF_OK);
    /* the reader turns such bytes into U+FFFD; a stage must not trip over them anyway */
    feed("ab\xff cd", 6, "", NULL);
    ck_assert_str_eq(fx.extra, NOMATCH);
    feed("ab cd", 5, "", NULL);
    ck_assert_str_eq(fx.extra, "\"a\":\"ab\",\"b\":\"cd\"");
}
END_TEST

START_TEST(the_encoded_event_carries_typed_members)
{
    struct regex_conf conf = { NGINX_ERR, NULL, NULL, KEEP, NULL };
    struct lf_errbuf eb = { "" };
    ck_assert_int_eq(start(&conf, &eb), LF_OK);
    struct lf_source *src = NULL;
    ck_assert_int_eq(lf_source_new("/var/log/nginx/error.log", "ngx", "node-1", NULL, false, &src),
                     LF_OK);
    const char *line = cases[2].line;
    feed(line, strlen(line), "", src);
    lf_source_free(src);
    ck_assert_int_eq(lf_buf_append(&fx.json, "", 1), LF_OK);
    ck_assert_str_eq(fx.json.ptr,
                     "{\"@timestamp\":\"1970-01-01T00:00:00.000Z\","
                     "\"message\":\"signal 1 (SIGHUP) received from 4242, reconfiguring\","
                     "\"log\":{\"file\":{\"path\":\"/var/log/nginx/error.log\"},\"offset\":0},"
                     "\"time\":\"2026/11/30 06:25:02\",\"level\":\"notice\",\"pid\":1,\"tid\":1,"
                     "\"input\":{\"id\":\"ngx\"},\"host\":{\"name\":\"node-1\"}}\n");
}
END_TEST

static const struct bad_case {
    struct regex_conf conf;
    const char *why;
} bad[] = {
    /* PCRE2's message, at the offset in the pattern as written (after a cut suffix) */
    { { "^(?<ts:int>\\d+) (?<lvl>[A-Z+)", NULL, NULL, KEEP, NULL },
      "regex: invalid pattern: missing terminating ] for character class at offset 29" },
    { { "(?<a>x))", NULL, NULL, KEEP, NULL },
      "regex: invalid pattern: unmatched closing parenthesis at offset 7" },
    { { "(?<a:date>x)", NULL, NULL, KEEP, NULL },
      "regex: group \"a\" has type \"date\": expected int, float, bool or string" },
    { { "(?<host>x)", NULL, NULL, KEEP, NULL },
      "regex: group \"host\" is a key every event has already" },
    { { "(?<message:int>x)", NULL, NULL, KEEP, NULL },
      "regex: group \"message\" replaces the message: it cannot have a type" },
    { { "(?<a>x)", "log", NULL, KEEP, NULL },
      "regex: target \"log\" is a key every event has already" },
    { { "(?<a>x)", NULL, NULL, KEEP, "{\"b\":\"int\"}" },
      "regex: types: \"b\" is no named group of the pattern" },
    { { "(?<a>x)", NULL, NULL, KEEP, "{\"a\":\"number\"}" },
      "regex: types: \"a\" must be int, float, bool or string" },
    { { "(?<a>x)", NULL, NULL, KEEP, "[\"a\"]" }, "regex: types must be a mapping of group: type" },
    { { "", NULL, NULL, KEEP, NULL }, "regex: pattern must not be empty" },
};

START_TEST(a_bad_setting_is_a_config_error_that_says_why)
{
    struct lf_errbuf eb = { "" };
    ck_assert_int_eq(start(&bad[_i].conf, &eb), LF_ECONFIG);
    ck_assert_str_eq(eb.msg, bad[_i].why);
    ck_assert_ptr_null(fx.spec);
}
END_TEST

/* Run alone by check_regex_alloc (see main). */
START_TEST(steady_state_allocates_nothing_per_event)
{
    struct regex_conf conf = { NGINX_ERR, "ngx", NULL, KEEP, NULL };
    struct lf_errbuf eb = { "" };
    ck_assert_int_eq(start(&conf, &eb), LF_OK);
    const char *lines[] = { cases[1].line, cases[2].line, "not nginx",
                            "2026/11/30 06:25:02 [x] 1#1: y" };
    const char *extras[] = { STREAM, STREAM, STREAM, STREAM };
    fx_assert_no_allocs(lines, extras, 4);
}
END_TEST

static Suite *regex_suite(void)
{
    Suite *s = suite_create("regex");
    TCase *tc = fx_tcase(s, "lines", false);
    tcase_add_loop_test(tc, each_case_gives_its_message_and_members, 0,
                        (int)(sizeof(cases) / sizeof(cases[0])));
    tcase_add_test(tc, on_failure_drop_marks_the_event_dropped);
    tcase_add_test(tc, invalid_utf8_in_the_subject_does_not_break_the_match);
    tcase_add_test(tc, the_encoded_event_carries_typed_members);
    tcase_add_loop_test(fx_tcase(s, "config errors", false),
                        a_bad_setting_is_a_config_error_that_says_why, 0,
                        (int)(sizeof(bad) / sizeof(bad[0])));
    tcase_add_test(fx_tcase(s, "alloc", true), steady_state_allocates_nothing_per_event);
    return s;
}

int main(void)
{
    return stage_fixture_main(regex_suite());
}
