/* check_access_log.c - the access_log stage: a table of nginx and Apache lines in common and
 * combined format (IPv6 clients, escaped quotes, `-` fields, odd requests, UTF-8, lines
 * that are not access logs), the time each sets, the encoded event, and no allocation per
 * event in steady state. */
#include "config.h"

#include "stage_fixture.h"

#define STREAM "\"stream\":\"stdout\""

static enum lf_err start(enum lf_access_format format, const char *target, struct lf_errbuf *eb)
{
    struct lf_parser_conf pc = { .kind = LF_PARSER_ACCESS_LOG };
    pc.u.access_log.format = format;
    pc.u.access_log.target = (char *)target;
    return fx_start(&lf_stage_access_log, &pc, eb);
}

#define CMB LF_ACCESS_COMBINED
#define CLF LF_ACCESS_COMMON

#define NOT_COMBINED \
    "\"error\":{\"message\":\"access_log: the line is not in combined log format\"}"
#define NOT_COMMON "\"error\":{\"message\":\"access_log: the line is not in common log format\"}"

/* @timestamp the stage leaves alone: the time read, as feed() gives it */
#define READ_TIME 42

static const struct access_case {
    enum lf_access_format format;
    const char *target;
    const char *line;
    const char *prior; /* extra before the stage */
    int64_t ts;        /* @timestamp after it, ns */
    const char *extra; /* the extra after it */
} cases[] = {
    /* 0: nginx combined, the default log_format */
    { CMB, NULL,
      "203.0.113.9 - - [30/Nov/2026:13:55:36 +0100] \"GET /index.html?q=1 HTTP/1.1\" 200 2326 "
      "\"https://example.com/start\" \"Mozilla/5.0 (X11; Linux x86_64; rv:120.0) Gecko/20100101 "
      "Firefox/120.0\"",
      "", INT64_C(1796043336) * 1000000000,
      "\"source\":{\"address\":\"203.0.113.9\",\"ip\":\"203.0.113.9\"},"
      "\"http\":{\"request\":{\"method\":\"GET\",\"referrer\":\"https://example.com/start\"},"
      "\"version\":\"1.1\",\"response\":{\"status_code\":200,\"body\":{\"bytes\":2326}}},"
      "\"url\":{\"original\":\"/index.html?q=1\"},\"user_agent\":{\"original\":\"Mozilla/5.0 "
      "(X11; Linux x86_64; rv:120.0) Gecko/20100101 Firefox/120.0\"}" },
    /* 1: an IPv6 client, a user, bytes "-", referrer "-", Apache's \" in the agent */
    { CMB, NULL,
      "2001:db8:85a3::8a2e:370:7334 - ann [01/Dec/2026:00:00:01 -0700] \"POST /api/login "
      "HTTP/2.0\" 401 - \"-\" \"curl/8.4.0 \\\"quoted\\\" \\\\ end\"",
      "", INT64_C(1796108401) * 1000000000,
      "\"source\":{\"address\":\"2001:db8:85a3::8a2e:370:7334\",\"ip\":\"2001:db8:85a3::8a2e:"
      "370:7334\"},\"user\":{\"name\":\"ann\"},\"http\":{\"request\":{\"method\":\"POST\"},"
      "\"version\":\"2.0\",\"response\":{\"status_code\":401,\"body\":{\"bytes\":0}}},"
      "\"url\":{\"original\":\"/api/login\"},\"user_agent\":{\"original\":\"curl/8.4.0 "
      "\\\"quoted\\\" \\\\ end\"}" },
    /* 2: nginx's \xHH escapes: a TLS handshake to the HTTP port stays as written (the bytes
     * are no UTF-8), an escaped quote and UTF-8 are decoded */
    { CMB, NULL,
      "198.51.100.23 - - [30/Nov/2026:13:55:38 +0000] \"\\x16\\x03\\x01\\x00\\xC8\\x01\" 400 157 "
      "\"-\" \"say \\x22hi\\x22 \\xC3\\xA4\"",
      "", INT64_C(1796046938) * 1000000000,
      "\"source\":{\"address\":\"198.51.100.23\",\"ip\":\"198.51.100.23\"},"
      "\"http\":{\"response\":{\"status_code\":400,\"body\":{\"bytes\":157}}},"
      "\"url\":{\"original\":\"\\\\x16\\\\x03\\\\x01\\\\x00\\\\xC8\\\\x01\"},"
      "\"user_agent\":{\"original\":\"say \\\"hi\\\" \xc3\xa4\"}" },
    /* 3: Apache common log format (the example of Apache's documentation); a host name,
     * an ident */
    { CLF, NULL,
      "client-7.example.net ident frank [10/Oct/2000:13:55:36 -0700] \"GET /apache_pb.gif "
      "HTTP/1.0\" 200 2326",
      "", INT64_C(971211336) * 1000000000,
      "\"source\":{\"address\":\"client-7.example.net\"},\"user\":{\"name\":\"frank\"},"
      "\"ident\":\"ident\",\"http\":{\"request\":{\"method\":\"GET\"},\"version\":\"1.0\",\"response\":{\"status_code\":200,"
      "\"body\":{\"bytes\":2326}}},\"url\":{\"original\":\"/apache_pb.gif\"}" },
    /* 4: common reads a combined line and ignores the rest; request "-" */
    { CLF, NULL, "10.0.0.1 - - [29/Feb/2028:23:59:59 +0000] \"-\" 408 0 \"-\" \"-\"", "",
      INT64_C(1835481599) * 1000000000,
      "\"source\":{\"address\":\"10.0.0.1\",\"ip\":\"10.0.0.1\"},"
      "\"http\":{\"response\":{\"status_code\":408,\"body\":{\"bytes\":0}}}" },
    /* 5: nginx with extra fields after the agent ($request_time $upstream...): ignored;
     * HTTP/0.9 style request without a version */
    { CMB, NULL,
      "192.0.2.1 - - [30/Nov/2026:13:55:36 +0000] \"GET /old\" 200 12 \"-\" \"-\" 0.004 "
      "\"10.1.1.1:8080\"",
      "", INT64_C(1796046936) * 1000000000,
      "\"source\":{\"address\":\"192.0.2.1\",\"ip\":\"192.0.2.1\"},"
      "\"http\":{\"request\":{\"method\":\"GET\"},\"response\":{\"status_code\":200,"
      "\"body\":{\"bytes\":12}}},\"url\":{\"original\":\"/old\"}" },
    /* 6: a path with spaces (nginx logs the request line as received) */
    { CMB, NULL,
      "192.0.2.1 - - [30/Nov/2026:13:55:36 +0000] \"GET /a b c HTTP/1.1\" 404 0 \"-\" \"x\"", "",
      INT64_C(1796046936) * 1000000000,
      "\"source\":{\"address\":\"192.0.2.1\",\"ip\":\"192.0.2.1\"},"
      "\"http\":{\"request\":{\"method\":\"GET\"},\"version\":\"1.1\",\"response\":"
      "{\"status_code\":404,\"body\":{\"bytes\":0}}},\"url\":{\"original\":\"/a b c\"},"
      "\"user_agent\":{\"original\":\"x\"}" },
    /* 7: under a target, after an earlier stage's member */
    { CMB, "web", "::1 - - [30/Nov/2026:13:55:36 +0000] \"HEAD / HTTP/1.1\" 200 0 \"\" \"\"",
      "\"stream\":\"stdout\"", INT64_C(1796046936) * 1000000000,
      "\"stream\":\"stdout\",\"web\":{\"source\":{\"address\":\"::1\",\"ip\":\"::1\"},"
      "\"http\":{\"request\":{\"method\":\"HEAD\",\"referrer\":\"\"},\"version\":\"1.1\","
      "\"response\":{\"status_code\":200,\"body\":{\"bytes\":0}}},\"url\":{\"original\":\"/\"},"
      "\"user_agent\":{\"original\":\"\"}}" },
    /* 8: at the root, a top-level name an earlier stage added keeps its value */
    { CMB, NULL, "::1 - - [30/Nov/2026:13:55:36 +0000] \"HEAD / HTTP/1.1\" 200 0 \"-\" \"-\"",
      "\"http\":{\"x\":1}", INT64_C(1796046936) * 1000000000,
      "\"http\":{\"x\":1},\"source\":{\"address\":\"::1\",\"ip\":\"::1\"},"
      "\"url\":{\"original\":\"/\"}" },
    /* 9-16: not access log lines: kept, with error.message */
    { CMB, NULL, "not an access log line", "", READ_TIME, NOT_COMBINED },
    { CMB, NULL, "", "", READ_TIME, NOT_COMBINED },
    { CLF, NULL, "1.2.3.4 - - [30/Nov/2026:13:55:36 +0000] \"GET / HTTP/1.1\" 2x0 5", "", READ_TIME,
      NOT_COMMON },
    { CMB, NULL, "1.2.3.4 - - [30/Nov/2026:13:55:36 +0000] \"GET / HTTP/1.1\" 200 5", "", READ_TIME,
      NOT_COMBINED },
    { CMB, NULL, "1.2.3.4 - - [31/Nov/2026:13:55:36 +0000] \"GET /\" 200 5 \"-\" \"-\"", "",
      READ_TIME, NOT_COMBINED },
    { CMB, NULL, "1.2.3.4 - - [29/Feb/2027:13:55:36 +0000] \"GET /\" 200 5 \"-\" \"-\"", "",
      READ_TIME, NOT_COMBINED },
    { CMB, NULL, "1.2.3.4 - - [30/Nov/2026:13:55:36 +0000] \"GET / 200 5 \"-\" \"-", "", READ_TIME,
      NOT_COMBINED },
    { CMB, NULL, "1.2.3.4 - - [30/Nov/2026:13:55:36] \"GET /\" 200 5 \"-\" \"-\"",
      "\"error\":{\"message\":\"earlier\"}", READ_TIME, "\"error\":{\"message\":\"earlier\"}" },
    /* 17: a year int64 nanoseconds cannot hold: parsed, the time read kept */
    { CLF, NULL, "1.2.3.4 - - [30/Nov/2300:13:55:36 +0000] \"GET / HTTP/1.1\" 200 5", "", READ_TIME,
      "\"source\":{\"address\":\"1.2.3.4\",\"ip\":\"1.2.3.4\"},\"http\":{\"request\":"
      "{\"method\":\"GET\"},\"version\":\"1.1\",\"response\":{\"status_code\":200,\"body\":"
      "{\"bytes\":5}}},\"url\":{\"original\":\"/\"},\"error\":{\"message\":\"access_log: the "
      "time is out of range; @timestamp is the time read\"}" },
    /* 18: an IPv4-mapped IPv6 client and a user with UTF-8 */
    { CLF, NULL,
      "::ffff:192.0.2.5 - j\xc3\xbcrgen [30/Nov/2026:13:55:36 +0000] \"GET / HTTP/1.1\" 200 5", "",
      INT64_C(1796046936) * 1000000000,
      "\"source\":{\"address\":\"::ffff:192.0.2.5\",\"ip\":\"::ffff:192.0.2.5\"},"
      "\"user\":{\"name\":\"j\xc3\xbcrgen\"},\"http\":{\"request\":{\"method\":\"GET\"},"
      "\"version\":\"1.1\",\"response\":{\"status_code\":200,\"body\":{\"bytes\":5}}},"
      "\"url\":{\"original\":\"/\"}" },
};

static int64_t last_ts;

static enum lf_err keep_ts(void *arg, const struct lf_event *ev)
{
    last_ts = ev->timestamp_ns;
    return collect(arg, ev);
}

START_TEST(each_case_gives_its_time_and_members)
{
    const struct access_case *c = &cases[_i];
    struct lf_errbuf eb = { "" };
    ck_assert_msg(start(c->format, c->target, &eb) == LF_OK, "case %d: %s", _i, eb.msg);
    struct lf_event ev = { lf_str_make(c->line, strlen(c->line)),   READ_TIME, 0, 1, 0, NULL,
                           lf_str_make(c->prior, strlen(c->prior)), 0 };
    struct lf_stage_out out = { keep_ts, NULL };
    ck_assert_int_eq(lf_stage_access_log.process(fx.spec, fx.state, &ev, 0, &out), LF_OK);
    fx_assert_event(_i, c->extra, c->line);
    ck_assert_msg(last_ts == c->ts, "case %d: @timestamp %lld, want %lld", _i, (long long)last_ts,
                  (long long)c->ts);
}
END_TEST

START_TEST(the_encoded_event_has_the_lines_time)
{
    struct lf_errbuf eb = { "" };
    ck_assert_int_eq(start(CMB, NULL, &eb), LF_OK);
    struct lf_source *src = NULL;
    ck_assert_int_eq(lf_source_new("/var/log/nginx/access.log", "web", "node-1", NULL, false, &src),
                     LF_OK);
    const char *line =
        "2001:db8::7 - - [30/Nov/2026:13:55:37 +0100] \"GET /health HTTP/1.1\" 204 0 \"-\" "
        "\"kube-probe/1.29\"";
    feed(line, strlen(line), "", src);
    lf_source_free(src);
    ck_assert_int_eq(lf_buf_append(&fx.json, "", 1), LF_OK);
    ck_assert_str_eq(
        fx.json.ptr,
        "{\"@timestamp\":\"2026-11-30T12:55:37.000Z\",\"message\":\"2001:db8::7 - - "
        "[30/Nov/2026:13:55:37 +0100] \\\"GET /health HTTP/1.1\\\" 204 0 \\\"-\\\" "
        "\\\"kube-probe/1.29\\\"\",\"log\":{\"file\":{\"path\":\"/var/log/nginx/access.log\"},"
        "\"offset\":0},\"source\":{\"address\":\"2001:db8::7\",\"ip\":\"2001:db8::7\"},"
        "\"http\":{\"request\":{\"method\":\"GET\"},\"version\":\"1.1\",\"response\":"
        "{\"status_code\":204,\"body\":{\"bytes\":0}}},\"url\":{\"original\":\"/health\"},"
        "\"user_agent\":{\"original\":\"kube-probe/1.29\"},\"input\":{\"id\":\"web\"},"
        "\"host\":{\"name\":\"node-1\"}}\n");
}
END_TEST

START_TEST(a_target_every_event_has_is_a_config_error)
{
    struct lf_errbuf eb = { "" };
    ck_assert_int_eq(start(CMB, "host", &eb), LF_ECONFIG);
    ck_assert_str_eq(eb.msg, "access_log: target \"host\" is a key every event has already");
    ck_assert_ptr_null(fx.spec);
}
END_TEST

/* Run alone by check_access_log_alloc (see main). */
START_TEST(steady_state_allocates_nothing_per_event)
{
    struct lf_errbuf eb = { "" };
    ck_assert_int_eq(start(CMB, "web", &eb), LF_OK);
    const char *lines[] = { cases[0].line, cases[1].line, cases[2].line, "garbage" };
    const char *extras[] = { STREAM, STREAM, STREAM, STREAM };
    fx_assert_no_allocs(lines, extras, 4);
}
END_TEST

static Suite *access_log_suite(void)
{
    Suite *s = suite_create("access_log");
    TCase *tc = fx_tcase(s, "lines", false);
    tcase_add_loop_test(tc, each_case_gives_its_time_and_members, 0,
                        (int)(sizeof(cases) / sizeof(cases[0])));
    tcase_add_test(tc, the_encoded_event_has_the_lines_time);
    tcase_add_test(tc, a_target_every_event_has_is_a_config_error);
    tcase_add_test(fx_tcase(s, "alloc", true), steady_state_allocates_nothing_per_event);
    return s;
}

int main(void)
{
    return stage_fixture_main(access_log_suite());
}
