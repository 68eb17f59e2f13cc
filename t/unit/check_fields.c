/* check_fields.c - the fields stage: a table of renames, drops and adds on members as the
 * parsers leave them (nested, escaped, UTF-8), collisions with members already there, the
 * message as a rename's destination, config errors, and no allocation per event in steady
 * state. */
#include "config.h"

#include "stage_fixture.h"

struct fields_conf {
    const char *add;    /* JSON object, or NULL */
    const char *drop;   /* one path, or NULL */
    const char *drop2;  /* a second one, or NULL */
    const char *rename; /* JSON object, or NULL */
};

static enum lf_err start(const struct fields_conf *c, struct lf_errbuf *eb)
{
    static char *drop[2];
    struct lf_parser_conf pc = { .kind = LF_PARSER_FIELDS };
    drop[0] = (char *)c->drop;
    drop[1] = (char *)c->drop2;
    pc.u.fields.add_json = (char *)c->add;
    pc.u.fields.drop = drop;
    pc.u.fields.n_drop = c->drop2 != NULL ? 2 : c->drop != NULL ? 1 : 0;
    pc.u.fields.rename_json = (char *)c->rename;
    return fx_start(&lf_stage_fields, &pc, eb);
}

/* What access_log leaves on an nginx line. */
#define ACCESS                                                                               \
    "\"source\":{\"address\":\"2001:db8::7\",\"ip\":\"2001:db8::7\"},\"http\":{\"request\":" \
    "{\"method\":\"GET\",\"referrer\":\"https://example.com/\"},\"version\":\"1.1\","        \
    "\"response\":{\"status_code\":200,\"body\":{\"bytes\":512}}},\"url\":{\"original\":\"/\"}"

static const struct fields_case {
    struct fields_conf conf;
    const char *prior; /* extra before the stage */
    const char *msg;   /* the message after it; NULL: unchanged */
    const char *extra; /* the extra after it */
} cases[] = {
    /* 0: add at the root and nested, with JSON values of each kind */
    { { "{\"env\":\"prod\",\"team.owner\":\"db\",\"n\":3,\"on\":true,\"o\":{\"a\":[1]}}", NULL,
        NULL, NULL },
      "\"level\":\"info\"",
      NULL,
      "\"level\":\"info\",\"env\":\"prod\",\"team\":{\"owner\":\"db\"},\"n\":3,\"on\":true,"
      "\"o\":{\"a\":[1]}" },
    /* 1: add into an object that exists, and to an empty extra */
    { { "{\"http.request.id\":\"r-1\"}", NULL, NULL, NULL },
      ACCESS,
      NULL,
      "\"source\":{\"address\":\"2001:db8::7\",\"ip\":\"2001:db8::7\"},\"http\":{\"request\":"
      "{\"method\":\"GET\",\"referrer\":\"https://example.com/\",\"id\":\"r-1\"},\"version\":"
      "\"1.1\",\"response\":{\"status_code\":200,\"body\":{\"bytes\":512}}},"
      "\"url\":{\"original\":\"/\"}" },
    { { "{\"a.b.c\":1}", NULL, NULL, NULL }, "", NULL, "\"a\":{\"b\":{\"c\":1}}" },
    /* 3: add never replaces: the earlier value wins; a parent that is no object blocks */
    { { "{\"level\":\"x\",\"level.sub\":1,\"http.version\":\"9\"}", NULL, NULL, NULL },
      "\"level\":\"info\",\"http\":{\"version\":\"1.1\"}",
      NULL,
      "\"level\":\"info\",\"http\":{\"version\":\"1.1\"}" },
    /* 5: drop nested members (first, middle, last, only) and a missing one */
    { { NULL, "http.request.referrer", "source", NULL },
      ACCESS,
      NULL,
      "\"http\":{\"request\":{\"method\":\"GET\"},\"version\":\"1.1\",\"response\":"
      "{\"status_code\":200,\"body\":{\"bytes\":512}}},\"url\":{\"original\":\"/\"}" },
    { { NULL, "url.original", "nope.x", NULL },
      ACCESS,
      NULL,
      "\"source\":{\"address\":\"2001:db8::7\",\"ip\":\"2001:db8::7\"},\"http\":{\"request\":"
      "{\"method\":\"GET\",\"referrer\":\"https://example.com/\"},\"version\":\"1.1\","
      "\"response\":{\"status_code\":200,\"body\":{\"bytes\":512}}},\"url\":{}" },
    { { NULL, "a", NULL, NULL }, "\"a\":1", NULL, "" },
    /* 7: rename flat to nested, nested to flat */
    { { NULL, NULL, NULL, "{\"level\":\"app.level\",\"http.response.status_code\":\"status\"}" },
      "\"level\":\"warn\",\"http\":{\"response\":{\"status_code\":503}}",
      NULL,
      "\"http\":{\"response\":{}},\"app\":{\"level\":\"warn\"},\"status\":503" },
    /* 8: rename onto a member that exists: nothing moves */
    { { NULL, NULL, NULL, "{\"a\":\"b\"}" }, "\"a\":1,\"b\":2", NULL, "\"a\":1,\"b\":2" },
    /* 9: rename a missing member: nothing */
    { { NULL, NULL, NULL, "{\"x\":\"y\"}" }, "\"a\":1", NULL, "\"a\":1" },
    /* 10: rename to message: the string (escapes undone) replaces the message */
    { { NULL, NULL, NULL, "{\"msg\":\"message\"}" },
      "\"level\":\"info\",\"msg\":\"disk \\\"/\\\" at 91% \\u00e4\\n\"",
      "disk \"/\" at 91% \xc3\xa4\n",
      "\"level\":\"info\"" },
    /* 11: rename a non-string to message: left alone, error.message */
    { { NULL, NULL, NULL, "{\"n\":\"message\"}" },
      "\"n\":5",
      NULL,
      "\"n\":5,\"error\":{\"message\":\"fields: only a string member can become the "
      "message\"}" },
    /* 12: the order: renames, then drops, then adds; a renamed member goes last; escaped
     * keys match as written */
    { { "{\"a\":\"added\"}", "b", NULL, "{\"a\":\"b\",\"k\\\"q\":\"kq\"}" },
      "\"a\":1,\"k\\\"q\":2,\"c\":3",
      NULL,
      "\"c\":3,\"kq\":2,\"a\":\"added\"" },
    /* 13: UTF-8 keys and values */
    { { "{\"st\xc3\xa4"
        "dt\":\"M\xc3\xbcnchen\"}",
        NULL, NULL, "{\"\xc3\xa9t\xc3\xa9\":\"summer\"}" },
      "\"\xc3\xa9t\xc3\xa9\":\"chaud\"",
      NULL,
      "\"summer\":\"chaud\",\"st\xc3\xa4"
      "dt\":\"M\xc3\xbcnchen\"" },
    /* 14-15: the only member dropped or renamed, then an add into what is left (found by
     * fuzz_parsers: UBSan saw arithmetic on the empty list's NULL pointer) */
    { { "{\"b\":1}", "a", NULL, NULL }, "\"a\":1", NULL, "\"b\":1" },
    { { NULL, NULL, NULL, "{\"a\":\"b.c\"}" }, "\"a\":1", NULL, "\"b\":{\"c\":1}" },
    /* 16: an earlier error is kept, and no second one added */
    { { NULL, NULL, NULL, "{\"n\":\"message\"}" },
      "\"n\":5,\"error\":{\"message\":\"earlier\"}",
      NULL,
      "\"n\":5,\"error\":{\"message\":\"earlier\"}" },
    /* 17: rename into an object that exists without the key: the member moves into it
     * (the lookup of the destination used to leave the object in place of the member, so
     * the object moved into itself and the member stayed) */
    { { NULL, NULL, NULL, "{\"a\":\"x.y\"}" },
      "\"a\":\"1\",\"x\":{\"z\":2}",
      NULL,
      "\"x\":{\"z\":2,\"y\":\"1\"}" },
};

START_TEST(each_case_gives_its_message_and_members)
{
    const struct fields_case *c = &cases[_i];
    struct lf_errbuf eb = { "" };
    ck_assert_msg(start(&c->conf, &eb) == LF_OK, "case %d: %s", _i, eb.msg);
    feed("the line", 8, c->prior, NULL);
    fx_assert_event(_i, c->extra, c->msg != NULL ? c->msg : "the line");
}
END_TEST

/* Runs the stage on an event whose members are the n bytes at prior, from a buffer of
 * exactly that size (ASan catches a read past it). */
static void feed_exact(const char *prior, size_t n)
{
    char *exact = malloc(n > 0 ? n : 1);
    ck_assert_ptr_nonnull(exact);
    memcpy(exact, prior, n);
    struct lf_event ev = { LF_STR_LIT("the line"), 42, 0, 9, 0, NULL, lf_str_make(exact, n), 0 };
    ck_assert_int_eq(fx.ops->process(fx.spec, fx.state, &ev, 0, &sink), LF_OK);
    free(exact);
}

START_TEST(strings_are_skipped_whatever_the_offset_of_their_quotes)
{
    /* Members are looked up past strings whose closing quote is found 16 bytes a step (a
     * tail under 16 bytes with the 16 that end the list), escaped quotes and backslashes
     * before it at every offset, the list ending in the string or after it. */
    struct fields_conf conf = { "{\"w\":2}", "z", NULL, NULL };
    struct lf_errbuf eb = { "" };
    ck_assert_int_eq(start(&conf, &eb), LF_OK);
    static const char *const odd[] = { "\\\"", "\\\\", "\\\\\\\"", "\\u0022", "x" };
    char pad[64];
    char first[256];
    char prior[512];
    char want[512];
    for (size_t n = 0; n <= 40; n++) {
        memset(pad, 'p', n);
        pad[n] = '\0';
        for (size_t k = 0; k < sizeof(odd) / sizeof(odd[0]); k++) {
            snprintf(first, sizeof(first), "\"k%s%s\":\"%s%s%s\"", pad, odd[k], odd[k], pad,
                     odd[k]);
            snprintf(prior, sizeof(prior), "%s,\"z\":1", first);
            snprintf(want, sizeof(want), "%s,\"w\":2", first);
            feed_exact(prior, strlen(prior));
            ck_assert_str_eq(fx.extra, want);
            feed_exact(first, strlen(first)); /* no z to drop; the list ends in the string */
            ck_assert_str_eq(fx.extra, want);
        }
    }
}
END_TEST

START_TEST(the_encoded_event_is_one_json_object)
{
    struct fields_conf conf = { "{\"labels.env\":\"prod\"}", "url", NULL,
                                "{\"source.ip\":\"client.ip\"}" };
    struct lf_errbuf eb = { "" };
    ck_assert_int_eq(start(&conf, &eb), LF_OK);
    struct lf_source *src = NULL;
    ck_assert_int_eq(lf_source_new("/var/log/nginx/access.log", "web", "node-1", NULL, false, &src),
                     LF_OK);
    feed("l", 1, ACCESS, src);
    lf_source_free(src);
    ck_assert_int_eq(lf_buf_append(&fx.json, "", 1), LF_OK);
    ck_assert_str_eq(
        fx.json.ptr,
        "{\"@timestamp\":\"1970-01-01T00:00:00.000Z\",\"message\":\"l\",\"log\":{\"file\":"
        "{\"path\":\"/var/log/nginx/access.log\"},\"offset\":0},\"source\":{\"address\":"
        "\"2001:db8::7\"},\"http\":{\"request\":{\"method\":\"GET\",\"referrer\":"
        "\"https://example.com/\"},\"version\":\"1.1\",\"response\":{\"status_code\":200,"
        "\"body\":{\"bytes\":512}}},\"client\":{\"ip\":\"2001:db8::7\"},\"labels\":{\"env\":"
        "\"prod\"},\"input\":{\"id\":\"web\"},\"host\":{\"name\":\"node-1\"}}\n");
}
END_TEST

static const struct bad_case {
    struct fields_conf conf;
    const char *why;
} bad[] = {
    { { NULL, NULL, NULL, NULL }, "fields: give at least one of add, drop or rename" },
    { { "{\"host.name\":\"x\"}", NULL, NULL, NULL },
      "fields: add \"host.name\": the agent writes that key itself; it is no member" },
    { { "{\"message\":\"x\"}", NULL, NULL, NULL },
      "fields: add \"message\": the agent writes that key itself; it is no member" },
    { { NULL, "@timestamp", NULL, NULL },
      "fields: drop \"@timestamp\": the agent writes that key itself; it is no member" },
    { { NULL, "a..b", NULL, NULL }, "fields: drop \"a..b\": expected a dotted path such as a.b" },
    { { NULL, "a\tb", NULL, NULL }, "fields: drop \"a\tb\": expected a dotted path such as a.b" },
    { { NULL, NULL, NULL, "{\"a\":\"b.\"}" },
      "fields: rename to \"b.\": expected a dotted path such as a.b" },
    { { NULL, NULL, NULL, "{\"message\":\"b\"}" },
      "fields: rename \"message\": the agent writes that key itself; it is no member" },
    { { NULL, NULL, NULL, "{\"a\":\"message.x\"}" },
      "fields: rename to \"message.x\": the agent writes that key itself; it is no member" },
    { { NULL, NULL, NULL, "{\"a\":1}" }, "fields: rename \"a\": the new name must be a string" },
    { { "[1]", NULL, NULL, NULL }, "fields: add must be a mapping of paths" },
};

START_TEST(a_bad_setting_is_a_config_error_that_says_why)
{
    struct lf_errbuf eb = { "" };
    ck_assert_int_eq(start(&bad[_i].conf, &eb), LF_ECONFIG);
    ck_assert_str_eq(eb.msg, bad[_i].why);
    ck_assert_ptr_null(fx.spec);
}
END_TEST

/* Run alone by check_fields_alloc (see main). */
START_TEST(steady_state_allocates_nothing_per_event)
{
    struct fields_conf conf = { "{\"labels.env\":\"prod\",\"http.request.id\":\"r\"}",
                                "http.request.referrer", "url",
                                "{\"source.ip\":\"client.ip\",\"msg\":\"message\"}" };
    struct lf_errbuf eb = { "" };
    ck_assert_int_eq(start(&conf, &eb), LF_OK);
    const char *extras[] = { ACCESS, "", "\"msg\":\"hello \\\"x\\\"\"", "\"msg\":1" };
    const char *lines[] = { "line", "line", "line", "line" };
    fx_assert_no_allocs(lines, extras, 4);
}
END_TEST

static Suite *fields_suite(void)
{
    Suite *s = suite_create("fields");
    TCase *tc = fx_tcase(s, "edits", false);
    tcase_add_loop_test(tc, each_case_gives_its_message_and_members, 0,
                        (int)(sizeof(cases) / sizeof(cases[0])));
    tcase_add_test(tc, the_encoded_event_is_one_json_object);
    tcase_add_test(tc, strings_are_skipped_whatever_the_offset_of_their_quotes);
    tcase_add_loop_test(fx_tcase(s, "config errors", false),
                        a_bad_setting_is_a_config_error_that_says_why, 0,
                        (int)(sizeof(bad) / sizeof(bad[0])));
    tcase_add_test(fx_tcase(s, "alloc", true), steady_state_allocates_nothing_per_event);
    return s;
}

int main(void)
{
    return stage_fixture_main(fields_suite());
}
