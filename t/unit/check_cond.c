/* check_cond.c - the condition language: every operator and their precedence, the
 * FILE:LINE:COL-ready offsets of parse errors, the type rules, fields found in the message,
 * in members stages added (extra), in the source (input, host, fields, log.file.path),
 * missing fields, regexes, `in` lists, numbers and strings with escapes and UTF-8, the
 * `when` of a stage and the drop stage through a chain, and no allocation per evaluation. */
#include "config.h"

#include "logferry/cond.h"

#include "stage_fixture.h"

/* What the parsers leave on a line: a level, a nested status, an escaped string, UTF-8. */
#define EXTRA                                                                                       \
    "\"level\":\"ERROR\",\"http\":{\"response\":{\"status_code\":503},\"method\":\"GET\"},"         \
    "\"count\":\"500\",\"ratio\":-1.5e2,\"ok\":false,\"none\":null,\"user\":\"O\\\"Brien\\u00e9\"," \
    "\"city\":\"Zürich\",\"tags\":[\"a\",\"b\"],\"big\":12345678901,\"esc\":\"a\\\\nb\""

static struct lf_source *src;

static void src_setup(void)
{
    ck_assert_int_eq(lf_source_new("/var/log/app/api.log", "api", "web-1",
                                   "{\"env\":\"prod\",\"team\":{\"name\":\"db\"}}", false, &src),
                     LF_OK);
}

static void src_teardown(void)
{
    lf_source_free(src);
    src = NULL;
}

static bool eval_on(const char *expr, const char *msg, const char *extra, unsigned flags)
{
    struct lf_cond *c = NULL;
    struct lf_errbuf eb = { "" };
    size_t at = 0;
    enum lf_err err = lf_cond_compile(expr, strlen(expr), &c, &at, &eb);
    ck_assert_msg(err == LF_OK, "%s: %s (at %zu)", expr, eb.msg, at);
    struct lf_cond_scratch *s = NULL;
    ck_assert_int_eq(lf_cond_scratch_new(&s), LF_OK);
    struct lf_event ev = { lf_str_make(msg, strlen(msg)),     42, 7, 20, flags, src,
                           lf_str_make(extra, strlen(extra)), 0 };
    bool r = lf_cond_eval(c, &ev, s);
    lf_cond_scratch_free(s);
    lf_cond_free(c);
    return r;
}

static const struct eval_case {
    const char *expr;
    bool want;
} eval_cases[] = {
    /* comparisons on strings */
    { "level == \"ERROR\"", true },
    { "level == 'ERROR'", true },
    { "level == \"error\"", false },
    { "level != \"INFO\"", true },
    { "level != \"ERROR\"", false },
    { "level < \"F\"", true },
    { "level >= \"ERROR\"", true },
    { "level > \"ERROR\"", false },
    { "level <= \"ERRO\"", false },
    /* nested members and numbers */
    { "http.response.status_code >= 500", true },
    { "http.response.status_code == 503", true },
    { "http.response.status_code == 503.0", true },
    { "http.response.status_code == 5.03e2", true },
    { "http.response.status_code < 500", false },
    { "http.response.status_code != 503", false },
    { "ratio == -150", true },
    { "ratio < -149.5", true },
    { "ratio > -1e3", true },
    { "big > 12345678900", true },
    /* a string that is wholly a number compares as one with a number */
    { "count == 500", true },
    { "count >= 499.5", true },
    { "count == \"500\"", true },
    /* a number never equals a string literal */
    { "http.response.status_code == \"503\"", false },
    { "http.response.status_code != \"503\"", true },
    /* a word is not a number */
    { "level > 1", false },
    { "level == 1", false },
    /* true, false, null */
    { "ok == false", true },
    { "ok == true", false },
    { "ok != true", true },
    { "none == null", true },
    { "level == null", false },
    { "exists(none)", true },
    /* escapes and UTF-8, in the event and in the literal */
    { "user == \"O\\\"Brien\\u00e9\"", true },
    { "user == 'O\"Brien\xc3\xa9'", true },
    { "user =~ '^O\"B.*\xc3\xa9$'", true },
    { "city == \"Z\xc3\xbcrich\"", true },
    { "city == \"Z\\u00fcrich\"", true },
    { "city =~ '^Z.rich$'", true },
    { "esc == \"a\\\\nb\"", true },
    { "esc =~ '^a\\\\nb$'", true },
    /* in */
    { "level in [\"WARN\", \"ERROR\"]", true },
    { "level in ['WARN']", false },
    { "http.response.status_code in [500, 502, 503]", true },
    { "http.response.status_code in [500, \"503\"]", false },
    { "none in [1, null]", true },
    { "missing in [null]", false },
    /* regex on the message, on members, on numbers */
    { "message =~ 'timeout|refused'", true },
    { "message =~ '^connection'", false },
    { "message !~ 'timeout'", false },
    { "message !~ 'TIMEOUT'", true },
    { "message =~ '(?i)TIMEOUT'", true },
    { "http.response.status_code =~ '^5\\d\\d$'", true },
    { "ok =~ 'false'", true },
    { "tags =~ 'a'", false },
    /* exists, missing fields */
    { "exists(level)", true },
    { "exists(http.response)", true },
    { "exists(http.response.nope)", false },
    { "exists(nope)", false },
    { "not exists(nope)", true },
    { "nope == 1", false },
    { "nope != 1", false },
    { "not nope == 1", true },
    { "nope =~ 'x'", false },
    { "nope !~ 'x'", false },
    { "level.sub == 1", false },
    /* the message and the source */
    { "message == \"upstream timeout after 30s\"", true },
    { "log.file.path == \"/var/log/app/api.log\"", true },
    { "log.file.path =~ '/api\\.log$'", true },
    { "log.offset == 7", true },
    { "input.id == \"api\"", true },
    { "host.name == \"web-1\"", true },
    { "fields.env == \"prod\"", true },
    { "fields.team.name in [\"db\", \"web\"]", true },
    { "exists(fields.nope)", false },
    /* and, or, not, precedence, parentheses */
    { "level == \"ERROR\" and http.response.status_code >= 500", true },
    { "level == \"ERROR\" and http.response.status_code < 500", false },
    { "level == \"INFO\" or http.response.status_code >= 500", true },
    { "level == \"INFO\" or ok == true", false },
    { "level == \"INFO\" and ok == true or exists(level)", true },
    { "exists(level) or level == \"INFO\" and ok == true", true },
    { "(exists(level) or level == \"INFO\") and ok == true", false },
    { "not level == \"INFO\" and not ok == true", true },
    { "not (level == \"ERROR\" and ok == false)", false },
    { "not not exists(level)", true },
    { "((((exists(level)))))", true },
    { "level == \"INFO\" or (ok == true or (none == null and not exists(x)))", true },
    { "exists(a) and exists(b) or exists(c) and exists(level) or exists(d)", false },
    { "exists(a) or exists(b) or exists(c) or exists(level)", true },
    { "exists(level) and exists(ok) and exists(none) and not exists(nope)", true },
    { "level==\"ERROR\"and(ok==false)", true },
};

START_TEST(test_eval)
{
    const struct eval_case *c = &eval_cases[_i];
    bool got = eval_on(c->expr, "upstream timeout after 30s", EXTRA, 0);
    ck_assert_msg(got == c->want, "case %d: %s: got %d", _i, c->expr, got);
}
END_TEST

/* An ndjson event with its own "fields" (overwrite_keys): the source's are not its. */
START_TEST(test_own_fields)
{
    const char *extra = "\"fields\":{\"tier\":\"gold\"}";
    ck_assert(eval_on("fields.tier == \"gold\"", "m", extra, LF_EVENT_OWN_FIELDS));
    ck_assert(!eval_on("exists(fields.env)", "m", extra, LF_EVENT_OWN_FIELDS));
    ck_assert(eval_on("exists(fields.env)", "m", "", 0));
    /* brackets and escaped quotes inside strings of an object skipped whole, past 16 bytes */
    const char *tricky = "\"a\":{\"s\":\"}{[\\\"]]\\\\\",\"l\":[{\"x\":\"]\"},[1,[2]]],"
                         "\"b\":1},\"z\":2";
    ck_assert(eval_on("z == 2 and a.b == 1 and a.s == \"}{[\\\"]]\\\\\"", "m", tricky, 0));
    ck_assert(!eval_on("exists(a.x) or exists(x)", "m", tricky, 0));
    /* stdin: no log.file.path */
    struct lf_source *keep = src;
    ck_assert_int_eq(lf_source_new(NULL, "in", NULL, NULL, false, &src), LF_OK);
    ck_assert(!eval_on("exists(log.file.path)", "m", "", 0));
    ck_assert(!eval_on("exists(host.name)", "m", "", 0));
    ck_assert(eval_on("input.id == \"in\"", "m", "", 0));
    lf_source_free(src);
    /* fields_under_root: the fields at the top */
    ck_assert_int_eq(
        lf_source_new("/a.log", "in", "h", "{\"env\":\"prod\",\"t\":{\"n\":1}}", true, &src),
        LF_OK);
    ck_assert(eval_on("env == \"prod\" and t.n == 1 and host.name == \"h\"", "m", "\"x\":1", 0));
    ck_assert(!eval_on("exists(fields.env)", "m", "", 0));
    lf_source_free(src);
    src = keep;
}
END_TEST

/* The member paths a condition names are indexed (one walk of the members per event, each
 * test reading its slot): every pair of these tests, joined each way, gives what the same
 * condition gives with each path looked up alone, on members that repeat names, nest,
 * break off, hold escaped keys, blanks, long keys and lists. */
START_TEST(test_index_agrees)
{
    static const char *const tests[] = {
        "exists(a)",
        "a == 1",
        "exists(a.b)",
        "a.b == 2",
        "a.b.c == \"x\"",
        "level == \"ERROR\"",
        "exists(k.l)",
        "z == 2",
        "long_key_over_sixteen_bytes == 1",
        "tags =~ 'a'",
        "exists(nope.deeper)",
        "http.response.status_code >= 500",
        "fields.team.name == \"db\"",
        "x.a == 1",
    };
    static const char extra0[] = EXTRA;
    static const char *const extras[] = {
        extra0,
        "\"a\":1,\"a\":{\"b\":2}",
        "\"a\":{\"b\":2,\"b\":3},\"a\":{\"b\":4}",
        "\"a\":{\"b\":{\"c\":\"x\"}},\"level\":\"ERROR\",\"z\":2",
        "\"long_key_over_sixteen_bytes\":1,\"x\\\"y\":{\"a\":1},\"a\" : { \"b\" : 2 } , \"z\":2",
        "\"a\":{\"b\":2,\"c\":\"unterminated",
        "\"z\":2,\"a\":{\"b\":}}},\"level\":\"ERROR\"",
        "\"a\":1",
        "",
        "\"a\":[{\"b\":2}],\"k\":{\"l\":null},\"x\":{\"a\":1}",
        "\"http\":{\"response\":{\"status_code\":503}},\"fields\":{\"team\":{\"name\":\"db\"}}",
    };
    static const char *const joins[] = { "%s and %s", "%s or %s", "not %s and %s",
                                         "not (%s or %s)" };
    size_t n_tests = sizeof(tests) / sizeof(tests[0]);
    size_t n_extras = sizeof(extras) / sizeof(extras[0]);
    struct lf_cond_scratch *s = NULL;
    ck_assert_int_eq(lf_cond_scratch_new(&s), LF_OK);
    size_t n_true = 0;
    for (size_t i = 0; i < n_tests; i++) {
        for (size_t j = 0; j < n_tests; j++) {
            for (size_t k = 0; k < sizeof(joins) / sizeof(joins[0]); k++) {
                char expr[256];
                snprintf(expr, sizeof(expr), joins[k], tests[i], tests[j]);
                struct lf_cond *c = NULL;
                struct lf_errbuf eb = { "" };
                ck_assert_int_eq(lf_cond_compile(expr, strlen(expr), &c, NULL, &eb), LF_OK);
                for (size_t e = 0; e < n_extras; e++) {
                    for (unsigned flags = 0; flags <= LF_EVENT_OWN_FIELDS;
                         flags += LF_EVENT_OWN_FIELDS) {
                        struct lf_event ev = {
                            .message = lf_str_make("m", 1),
                            .end_offset = 1,
                            .flags = flags,
                            .source = src,
                            .extra = lf_str_make(extras[e], strlen(extras[e])),
                        };
                        bool indexed = lf_cond_eval(c, &ev, s);
                        lf_stage__cond_no_index = true;
                        bool alone = lf_cond_eval(c, &ev, s);
                        lf_stage__cond_no_index = false;
                        ck_assert_msg(indexed == alone, "%s on %s (flags %u): %d indexed, %d alone",
                                      expr, extras[e], flags, indexed, alone);
                        n_true += indexed;
                    }
                }
                lf_cond_free(c);
            }
        }
    }
    ck_assert_uint_gt(n_true, 1000); /* not all false: the members were found */
    lf_cond_scratch_free(s);
}
END_TEST

/* What the index must keep of a lookup's rules, as known answers. */
START_TEST(test_index_rules)
{
    /* the first member of a name counts, even when a later one would match */
    ck_assert(!eval_on("a.b == 2", "m", "\"a\":1,\"a\":{\"b\":2}", 0));
    ck_assert(eval_on("a.b == 2 and not a.b == 3", "m", "\"a\":{\"b\":2,\"b\":3}", 0));
    /* a path and a path under it, in either order */
    ck_assert(eval_on("a.b == 2 and exists(a)", "m", "\"a\":{\"b\":2}", 0));
    ck_assert(eval_on("exists(a) and a.b == 2", "m", "\"a\":{\"b\":2}", 0));
    /* a test on a member already passed reads it; one on a member further on walks on */
    ck_assert(eval_on("z == 2 and a.b == 2 and level == \"ERROR\"", "m",
                      "\"level\":\"ERROR\",\"a\":{\"b\":2},\"z\":2", 0));
    /* a key of 16 bytes and more, a key with an escaped quote before the one we want */
    ck_assert(eval_on("long_key_over_sixteen_bytes == 1 and x.a == 1", "m",
                      "\"x\\\"y\":2,\"long_key_over_sixteen_bytes\":1,\"x\":{\"a\":1}", 0));
    /* more paths than the index holds: the rest looked up alone */
    char expr[2048] = "";
    char extra[2048] = "";
    size_t eo = 0, xo = 0;
    for (int i = 0; i < 70; i++) {
        eo +=
            (size_t)snprintf(expr + eo, sizeof(expr) - eo, "%sf%d.v == %d", i ? " and " : "", i, i);
        xo += (size_t)snprintf(extra + xo, sizeof(extra) - xo, "%s\"f%d\":{\"v\":%d}", i ? "," : "",
                               69 - i, 69 - i);
    }
    ck_assert(eval_on(expr, "m", extra, 0));
    ck_assert(!eval_on(expr, "m", extra + 11, 0)); /* f69 gone */
    /* a plain-text regex is a search for its bytes, anywhere in the message */
    ck_assert(eval_on("message =~ 'timeout'", "upstream timeout", "", 0));
    ck_assert(eval_on("message =~ 'ab'", "xxxxxxxxxxxxxxxxxxxxab", "", 0));
    ck_assert(eval_on("message =~ 'abc'", "abcxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx", "", 0));
    ck_assert(!eval_on("message =~ 'abc'", "abxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxbc", "", 0));
    ck_assert(eval_on("message !~ 'abd'", "abcxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxab", "", 0));
    ck_assert(eval_on("message =~ 'time out'", "a time out", "", 0));
}
END_TEST

static const struct error_case {
    const char *expr;
    size_t at;        /* byte offset of the token at fault */
    const char *text; /* part of the message */
} error_cases[] = {
    { "", 0, "expected a condition, got the end" },
    { "   ", 3, "expected a condition" },
    { "level", 5, "expected ==, !=, <, <=, >, >=, =~, !~ or in after the field, got the end" },
    { "level = \"x\"", 6, "expected ==, !=" },
    { "level == ", 9,
      "expected a value: a \"string\", a number, true, false or null, got the end" },
    { "level == ERROR", 9, "expected a value" },
    { "level == \"x", 9, "string not closed: expected \" before the end" },
    { "level == 'x", 9, "string not closed: expected ' before the end" },
    { "level == \"x\" and", 16, "expected a test" },
    { "level == \"x\" or or", 16, "expected a test" },
    { "level == \"x\" level == \"y\"", 13, "expected \"and\", \"or\" or the end, got \"level\"" },
    { "(level == \"x\"", 13, "expected \")\", \"and\" or \"or\", got the end" },
    { "level == \"x\")", 12, "expected \"and\", \"or\" or the end, got \")\"" },
    { "exists level", 7, "expected \"(\" after exists" },
    { "exists(level", 12, "expected \")\" after the field of exists(" },
    { "exists(1)", 7, "expected a field name" },
    { "level in \"x\"", 9, "expected \"[\" after in" },
    { "level in [\"x\" \"y\"]", 14, "expected \",\" or \"]\"" },
    { "level in []", 10, "expected a value" },
    { "message =~ 5", 11, "expected a regex in quotes after =~ or !~" },
    { "message =~ '('", 11, "bad regex at its character 2: missing closing parenthesis" },
    { "ok < true", 5, "expected a number or a string to order by" },
    { "level == 5x", 9, "expected a value" },
    { "level == -", 9, "expected a value" },
    { "a..b == 1", 0, "no empty part between dots" },
    { "a. == 1", 0, "no empty part between dots" },
    { "@timestamp > 1", 0, "@timestamp is set when the event is sent" },
    { "and == 1", 0, "expected a test" },
    { "level == \"\\q\"", 10, "expected an escape" },
    { "level == \"\\ud800\"", 10, "no surrogates" },
    { "level == 1 & ok == true", 11, "got \"&\"" },
    { "level === 1", 8, "expected a value" },
};

START_TEST(test_errors)
{
    const struct error_case *c = &error_cases[_i];
    struct lf_cond *cond = NULL;
    struct lf_errbuf eb = { "" };
    size_t at = 999;
    ck_assert_int_eq(lf_cond_compile(c->expr, strlen(c->expr), &cond, &at, &eb), LF_ECONFIG);
    ck_assert_ptr_null(cond);
    ck_assert_msg(strstr(eb.msg, c->text) != NULL, "case %d: %s: message %s", _i, c->expr, eb.msg);
    ck_assert_msg(at == c->at, "case %d: %s: at %zu, want %zu (%s)", _i, c->expr, at, c->at,
                  eb.msg);
}
END_TEST

START_TEST(test_depth)
{
    char expr[400];
    size_t n = 0;
    for (int i = 0; i < 70; i++)
        expr[n++] = '(';
    memcpy(expr + n, "exists(a)", 9);
    n += 9;
    for (int i = 0; i < 70; i++)
        expr[n++] = ')';
    struct lf_cond *cond = NULL;
    struct lf_errbuf eb = { "" };
    size_t at = 0;
    ck_assert_int_eq(lf_cond_compile(expr, n, &cond, &at, &eb), LF_ECONFIG);
    ck_assert_ptr_nonnull(strstr(eb.msg, "at most 64 nested"));
    ck_assert_uint_eq(at, 64);
    /* 60 deep is fine */
    ck_assert_int_eq(lf_cond_compile(expr + 10, n - 20, &cond, &at, &eb), LF_OK);
    lf_cond_free(cond);
}
END_TEST

/* A chain: kv applied only to lines with "k=", then drop when level is debug. */
static size_t n_out, n_dropped;
static char last_extra[256];

static enum lf_err chain_sink(void *arg, const struct lf_event *ev)
{
    (void)arg;
    if (ev->flags & LF_EVENT_DROPPED) {
        n_dropped++;
        return LF_OK;
    }
    n_out++;
    snprintf(last_extra, sizeof(last_extra), "%.*s", (int)ev->extra.len, ev->extra.ptr);
    return LF_OK;
}

START_TEST(test_chain_when_and_drop)
{
    struct lf_parser_conf pcs[2];
    memset(pcs, 0, sizeof(pcs));
    pcs[0].kind = LF_PARSER_KV;
    pcs[0].when = (char *)"message =~ '^k='";
    pcs[0].u.kv.field_split = (char *)" ";
    pcs[0].u.kv.value_split = (char *)"=";
    pcs[0].u.kv.prefix = (char *)"";
    pcs[0].u.kv.target = (char *)"";
    pcs[1].kind = LF_PARSER_DROP;
    pcs[1].when = (char *)"level == \"debug\" or k == \"debug\"";
    struct lf_input_conf in = {
        .id = (char *)"t", .parsers = pcs, .n_parsers = 2, .max_line_bytes = 1024
    };
    struct lf_chain_spec *spec = NULL;
    struct lf_errbuf eb = { "" };
    ck_assert_msg(lf_chain_spec_new(&in, 0, &spec, NULL, &eb) == LF_OK, "%s", eb.msg);
    struct lf_stage_out out = { chain_sink, NULL };
    struct lf_chain *ch = NULL;
    ck_assert_int_eq(lf_chain_new(spec, &out, &ch), LF_OK);
    static const struct {
        const char *msg;
        const char *extra;
        bool dropped;
        const char *want_extra;
    } lines[] = {
        { "k=v x=1", "", false, "\"k\":\"v\",\"x\":\"1\"" },
        { "x=1 k=v", "", false, "" }, /* kv not applied: no k= at the start */
        { "k=debug", "", true, NULL },
        { "plain", "\"level\":\"debug\"", true, NULL },
        { "plain", "\"level\":\"info\"", false, "\"level\":\"info\"" },
    };
    size_t want_dropped = 0;
    for (size_t i = 0; i < sizeof(lines) / sizeof(lines[0]); i++) {
        n_out = 0;
        last_extra[0] = '\0';
        struct lf_event ev = {
            lf_str_make(lines[i].msg, strlen(lines[i].msg)),     1, i * 10, i * 10 + 9, 0, src,
            lf_str_make(lines[i].extra, strlen(lines[i].extra)), 0
        };
        ck_assert_int_eq(lf_chain_process(ch, &ev, 0), LF_OK);
        want_dropped += lines[i].dropped;
        ck_assert_uint_eq(n_dropped, want_dropped);
        ck_assert_uint_eq(n_out, lines[i].dropped ? 0 : 1);
        if (!lines[i].dropped)
            ck_assert_str_eq(last_extra, lines[i].want_extra);
    }
    ck_assert_uint_eq(lf_chain_stats(ch)->events_filtered, 2);
    ck_assert_uint_eq(lf_chain_stats(ch)->events_out, 3);
    lf_chain_free(ch);
    lf_chain_spec_free(spec);
}
END_TEST

/* The steady state allocates nothing: three terms on a 200-byte event, escaped strings,
 * a regex, source fields. */
START_TEST(test_no_allocs)
{
    static const char *const exprs[] = {
        "level == \"ERROR\" and http.response.status_code >= 500 and message =~ 'timeout'",
        "user == 'O\"Brien\xc3\xa9' or esc =~ 'b$'",
        "fields.team.name in [\"db\"] and not exists(nope) and count > 2",
    };
    for (size_t k = 0; k < sizeof(exprs) / sizeof(exprs[0]); k++) {
        struct lf_cond *c = NULL;
        struct lf_errbuf eb = { "" };
        ck_assert_int_eq(lf_cond_compile(exprs[k], strlen(exprs[k]), &c, NULL, &eb), LF_OK);
        struct lf_cond_scratch *s = NULL;
        ck_assert_int_eq(lf_cond_scratch_new(&s), LF_OK);
        const char *msg = "upstream timeout after 30s";
        struct lf_event ev = { lf_str_make(msg, strlen(msg)),     42, 7, 20, 0, src,
                               lf_str_make(EXTRA, strlen(EXTRA)), 0 };
        bool first = lf_cond_eval(c, &ev, s);
        struct lf_alloc_count a0 = lf_alloc_count_now();
        bool same = true;
        for (int i = 0; i < 1000; i++)
            same = same && lf_cond_eval(c, &ev, s) == first;
        uint64_t calls = lf_alloc_count_now().calls - a0.calls;
        ck_assert(same);
        ck_assert_uint_eq(calls, 0);
        lf_cond_scratch_free(s);
        lf_cond_free(c);
    }
}
END_TEST

int main(void)
{
    (void)feed; /* the fixture's helpers for one stage alone: unused here */
    (void)fx_start;
    Suite *s = suite_create("cond");
    TCase *tc = fx_tcase(s, "eval", false);
    tcase_add_checked_fixture(tc, src_setup, src_teardown);
    tcase_add_loop_test(tc, test_eval, 0, (int)(sizeof(eval_cases) / sizeof(eval_cases[0])));
    tcase_add_test(tc, test_own_fields);
    tcase_add_test(tc, test_index_agrees);
    tcase_add_test(tc, test_index_rules);
    tcase_add_test(tc, test_chain_when_and_drop);
    tc = fx_tcase(s, "errors", false);
    tcase_add_loop_test(tc, test_errors, 0, (int)(sizeof(error_cases) / sizeof(error_cases[0])));
    tcase_add_test(tc, test_depth);
    tc = fx_tcase(s, "alloc", true);
    tcase_add_checked_fixture(tc, src_setup, src_teardown);
    tcase_add_test(tc, test_no_allocs);
    return stage_fixture_main(s);
}
