/* check_kv.c - the kv stage: a table of logfmt and key=value lines, config errors, the
 * whole event as encoded, and no allocation per event in steady state. */
#include "config.h"

#include "stage_fixture.h"

struct kv_conf {
    const char *field_split; /* NULL: the default */
    const char *value_split;
    const char *include; /* one key, or NULL */
    const char *exclude; /* one key, or NULL */
    const char *prefix;
    const char *target;
};

static enum lf_err start(const struct kv_conf *c, struct lf_errbuf *eb)
{
    static char *inc[1];
    static char *exc[1];
    struct lf_parser_conf pc = { .kind = LF_PARSER_KV };
    inc[0] = (char *)c->include;
    exc[0] = (char *)c->exclude;
    pc.u.kv.field_split = (char *)c->field_split;
    pc.u.kv.value_split = (char *)c->value_split;
    pc.u.kv.include_keys = inc;
    pc.u.kv.n_include_keys = c->include != NULL ? 1 : 0;
    pc.u.kv.exclude_keys = exc;
    pc.u.kv.n_exclude_keys = c->exclude != NULL ? 1 : 0;
    pc.u.kv.prefix = (char *)c->prefix;
    pc.u.kv.target = (char *)c->target;
    return fx_start(&lf_stage_kv, &pc, eb);
}

#define NOPAIR "\"error\":{\"message\":\"kv: no key=value pair in the line\"}"
#define UNTERM \
    "\"error\":{\"message\":\"kv: a quoted value has no closing quote; it takes the rest of the line\"}"
#define DEFAULT                            \
    {                                      \
        NULL, NULL, NULL, NULL, NULL, NULL \
    }

static const struct kv_case {
    struct kv_conf conf;
    const char *line;
    const char *prior; /* extra before the stage */
    const char *msg;   /* the message after it; NULL: unchanged */
    const char *extra; /* the extra after it */
} cases[] = {
    /* 0: logfmt as Go's log/slog TextHandler writes it */
    { DEFAULT, "time=2026-11-30T12:00:01.123Z level=WARN msg=\"disk \\\"/\\\" at 91%\" free_mb=812",
      "", NULL,
      "\"time\":\"2026-11-30T12:00:01.123Z\",\"level\":\"WARN\",\"msg\":\"disk \\\"/\\\" at 91%\","
      "\"free_mb\":\"812\"" },
    /* 1: a Heroku router line: runs of spaces, a value with '=' in it; host is the agent's
     * member, so it is dropped here (case 12 keeps it with a prefix) */
    { DEFAULT,
      "at=info method=GET path=\"/cart?id=7&x=1\"  host=shop.example.com fwd=\"203.0.113.9\" "
      "status=200 bytes=512",
      "", NULL,
      "\"at\":\"info\",\"method\":\"GET\",\"path\":\"/cart?id=7&x=1\","
      "\"fwd\":\"203.0.113.9\",\"status\":\"200\",\"bytes\":\"512\"" },
    /* 2: words without '=' and empty keys are passed over; empty values are kept */
    { DEFAULT, "INFO starting worker=3 =x queue= ok", "", NULL, "\"worker\":\"3\",\"queue\":\"\"" },
    /* 3: escapes in quotes: \n \t \\ \' kept, unknown escapes kept as written */
    { DEFAULT, "a=\"l1\\nl2\\tend\\\\ \\q\" b='it\\'s'", "", NULL,
      "\"a\":\"l1\\nl2\\tend\\\\ \\\\q\",\"b\":\"it's\"" },
    /* 4: an unterminated quote takes the rest of the line and says so */
    { DEFAULT, "a=1 b=\"open ended c=3", "", NULL, "\"a\":\"1\",\"b\":\"open ended c=3\"," UNTERM },
    /* 5: the first occurrence of a key wins */
    { DEFAULT, "k=1 k=2 j=3", "", NULL, "\"k\":\"1\",\"j\":\"3\"" },
    /* 6: keys the agent writes are dropped; a key "message" replaces the message */
    { DEFAULT, "host=evil @timestamp=x message=\"the text\" fields=1 log=2 input=3 n=1", "",
      "the text", "\"n\":\"1\"" },
    /* 7: keys an earlier stage added keep their value */
    { DEFAULT, "stream=fake n=1", "\"stream\":\"stdout\"", NULL,
      "\"stream\":\"stdout\",\"n\":\"1\"" },
    /* 8: custom splits: '&' and ';' between pairs, ':' between key and value */
    { { "&;", ":", NULL, NULL, NULL, NULL },
      "user:ann&role:admin;ip:10.0.0.1",
      "",
      NULL,
      "\"user\":\"ann\",\"role\":\"admin\",\"ip\":\"10.0.0.1\"" },
    /* 9: a multi-byte value_split */
    { { NULL, "=>", NULL, NULL, NULL, NULL },
      "a=>1 b=2 c=>x=>y",
      "",
      NULL,
      "\"a\":\"1\",\"c\":\"x=>y\"" },
    /* 10: include_keys */
    { { NULL, NULL, "level", NULL, NULL, NULL },
      "level=info msg=hi",
      "",
      NULL,
      "\"level\":\"info\"" },
    /* 11: exclude_keys */
    { { NULL, NULL, NULL, "msg", NULL, NULL },
      "level=info msg=hi",
      "",
      NULL,
      "\"level\":\"info\"" },
    /* 12: prefix, which also lets "host" through */
    { { NULL, NULL, NULL, NULL, "kv_", NULL },
      "host=a message=b",
      "",
      NULL,
      "\"kv_host\":\"a\",\"kv_message\":\"b\"" },
    /* 13: target, where every key is fine */
    { { NULL, NULL, NULL, NULL, NULL, "app" },
      "host=a message=b",
      "\"stream\":\"stdout\"",
      NULL,
      "\"stream\":\"stdout\",\"app\":{\"host\":\"a\",\"message\":\"b\"}" },
    /* 14: a target an earlier stage added is kept */
    { { NULL, NULL, NULL, NULL, NULL, "stream" },
      "a=1",
      "\"stream\":\"stdout\"",
      NULL,
      "\"stream\":\"stdout\"" },
    /* 15-16: lines without pairs */
    { DEFAULT, "just words here", "", NULL, NOPAIR },
    { DEFAULT, "", "\"stream\":\"stdout\"", NULL, "\"stream\":\"stdout\"," NOPAIR },
    /* 17: an earlier error is kept */
    { DEFAULT, "nothing", "\"error\":{\"message\":\"earlier\"}", NULL,
      "\"error\":{\"message\":\"earlier\"}" },
    /* 18: UTF-8 keys and values; control bytes escaped */
    { DEFAULT,
      "st\xc3\xa4"
      "dt=M\xc3\xbcnchen note=\"tab\there\"",
      "", NULL,
      "\"st\xc3\xa4"
      "dt\":\"M\xc3\xbcnchen\",\"note\":\"tab\\there\"" },
    /* 19: an include list with a prefix selects by the key as written */
    { { NULL, NULL, "a", NULL, "p.", NULL }, "a=1 b=2", "", NULL, "\"p.a\":\"1\"" },
    /* 20-21: a target object that would be empty is left out */
    { { NULL, NULL, NULL, NULL, NULL, "app" }, "no pairs", "", NULL, NOPAIR },
    { { NULL, NULL, "level", NULL, NULL, "app" }, "a=1 b=2", "", NULL, "" },
};

START_TEST(each_case_gives_its_message_and_members)
{
    const struct kv_case *c = &cases[_i];
    struct lf_errbuf eb = { "" };
    ck_assert_msg(start(&c->conf, &eb) == LF_OK, "case %d: %s", _i, eb.msg);
    feed(c->line, strlen(c->line), c->prior, NULL);
    ck_assert_msg(strcmp(fx.extra, c->extra) == 0, "case %d: extra\n  got  %s\n  want %s", _i,
                  fx.extra, c->extra);
    const char *msg = c->msg != NULL ? c->msg : c->line;
    ck_assert_msg(strcmp(fx.msg, msg) == 0, "case %d: message\n  got  %s\n  want %s", _i, fx.msg,
                  msg);
}
END_TEST

START_TEST(many_pairs_grow_the_seen_keys_and_keep_them)
{
    struct kv_conf conf = DEFAULT;
    struct lf_errbuf eb = { "" };
    ck_assert_int_eq(start(&conf, &eb), LF_OK);
    char line[1024] = "";
    char want[2048] = "";
    for (int i = 0; i < 40; i++) {
        char pair[32];
        snprintf(pair, sizeof(pair), "k%d=%d ", i, i);
        strcat(line, pair);
        snprintf(pair, sizeof(pair), "%s\"k%d\":\"%d\"", i > 0 ? "," : "", i, i);
        strcat(want, pair);
    }
    strcat(line, "k0=dup");
    feed(line, strlen(line), "", NULL);
    ck_assert_str_eq(fx.extra, want);
    feed("a=1", 3, "", NULL);
    ck_assert_str_eq(fx.extra, "\"a\":\"1\"");
}
END_TEST

START_TEST(a_nul_byte_in_a_value_is_data)
{
    struct kv_conf conf = DEFAULT;
    struct lf_errbuf eb = { "" };
    ck_assert_int_eq(start(&conf, &eb), LF_OK);
    feed("a=x\0y b=2", 9, "", NULL);
    ck_assert_str_eq(fx.extra, "\"a\":\"x\\u0000y\",\"b\":\"2\"");
}
END_TEST

START_TEST(the_encoded_event_carries_the_members_after_log)
{
    struct kv_conf conf = DEFAULT;
    struct lf_errbuf eb = { "" };
    ck_assert_int_eq(start(&conf, &eb), LF_OK);
    struct lf_source *src = NULL;
    ck_assert_int_eq(lf_source_new("/var/log/app.log", "app", "node-1", NULL, false, &src), LF_OK);
    const char *line = "level=info message=\"user \\\"ann\\\" logged in\" took_ms=3";
    feed(line, strlen(line), "", src);
    lf_source_free(src);
    ck_assert_int_eq(lf_buf_append(&fx.json, "", 1), LF_OK);
    ck_assert_str_eq(fx.json.ptr, "{\"@timestamp\":\"1970-01-01T00:00:00.000Z\","
                                  "\"message\":\"user \\\"ann\\\" logged in\","
                                  "\"log\":{\"file\":{\"path\":\"/var/log/app.log\"},\"offset\":0},"
                                  "\"level\":\"info\",\"took_ms\":\"3\",\"input\":{\"id\":\"app\"},"
                                  "\"host\":{\"name\":\"node-1\"}}\n");
}
END_TEST

START_TEST(a_key_with_a_control_character_is_skipped)
{
    struct kv_conf conf = DEFAULT;
    struct lf_errbuf eb = { "" };
    ck_assert_int_eq(start(&conf, &eb), LF_OK);
    /* found by fuzz_parsers: jansson (and Elasticsearch) refuse "\u0000" in a key */
    feed("a\0b=1 c\td=2 e=3", 15, "", NULL);
    ck_assert_str_eq(fx.extra, "\"e\":\"3\"");
}
END_TEST

START_TEST(a_message_without_bytes_has_no_pair)
{
    struct kv_conf conf = DEFAULT;
    struct lf_errbuf eb = { "" };
    ck_assert_int_eq(start(&conf, &eb), LF_OK);
    struct lf_event ev = { { NULL, 0 }, 42, 0, 1, 0, NULL, { NULL, 0 }, 0 };
    ck_assert_int_eq(lf_stage_kv.process(fx.spec, fx.state, &ev, 0, &sink), LF_OK);
    ck_assert_str_eq(fx.extra, NOPAIR);
}
END_TEST

static const struct bad_case {
    struct kv_conf conf;
    const char *why;
} bad[] = {
    { { "", NULL, NULL, NULL, NULL, NULL }, "kv: field_split and value_split must not be empty" },
    { { " ", " = ", NULL, NULL, NULL, NULL }, "kv: value_split \" = \" holds a field_split byte" },
    { { "\xc2\xbb", NULL, NULL, NULL, NULL, NULL }, "kv: field_split takes ASCII characters only" },
    { { NULL, NULL, NULL, NULL, NULL, "host" },
      "kv: target \"host\" is a key every event has already" },
    { { NULL, NULL, NULL, NULL, NULL, "message" },
      "kv: target \"message\" is a key every event has already" },
};

START_TEST(a_bad_setting_is_a_config_error_that_says_why)
{
    struct lf_errbuf eb = { "" };
    ck_assert_int_eq(start(&bad[_i].conf, &eb), LF_ECONFIG);
    ck_assert_str_eq(eb.msg, bad[_i].why);
    ck_assert_ptr_null(fx.spec);
}
END_TEST

/* ---- A model of the stage for the scanning tests: the byte-by-byte reading the stage had
 * before it scanned 16 bytes at a time (docs/parsers.md), for empty prior members, no
 * prefix, target or key lists. */

struct model {
    struct lf_buf extra;
    struct lf_buf msg;
    struct lf_buf value;
    bool has_msg;
};

static bool model_split(const char *fs, char c)
{
    return c != '\0' && strchr(fs, c) != NULL;
}

static void model_unescape(struct lf_buf *b, const char *v, size_t n)
{
    lf_buf_reset(b);
    for (size_t i = 0; i < n; i++) {
        char c = v[i];
        if (c == '\\' && i + 1 < n) {
            char e = v[++i];
            char out = e == 'n' ? '\n' : e == 't' ? '\t' : e == 'r' ? '\r' : e;
            if (out == e && e != '"' && e != '\'' && e != '\\')
                ck_assert_int_eq(lf_buf_append(b, "\\", 1), LF_OK);
            ck_assert_int_eq(lf_buf_append(b, &out, 1), LF_OK);
        } else {
            ck_assert_int_eq(lf_buf_append(b, &c, 1), LF_OK);
        }
    }
}

/* True when key k (of line, at at[k], len[k] bytes) is among the n before it. */
static bool model_taken(size_t n, const char *line, const size_t *at, const size_t *len, size_t k)
{
    for (size_t i = 0; i < n; i++) {
        if (len[i] == len[k] && memcmp(line + at[i], line + at[k], len[k]) == 0)
            return true;
    }
    return false;
}

/* What the stage gives for line (n bytes) with field_split fs and value_split vs. */
static void model_run(struct model *m, const char *fs, const char *vs, const char *line, size_t n)
{
    static const char *const own[] = { "@timestamp", "log", "input", "host", "fields" };
    size_t vsl = strlen(vs);
    size_t key_at[256];
    size_t key_len[256];
    size_t n_keys = 0;
    size_t n_pairs = 0;
    bool unterminated = false;
    lf_buf_reset(&m->extra);
    m->has_msg = false;
    size_t i = 0;
    while (i < n) {
        while (i < n && model_split(fs, line[i]))
            i++;
        size_t k = i;
        while (i < n && !model_split(fs, line[i]) &&
               !(n - i >= vsl && memcmp(line + i, vs, vsl) == 0))
            i++;
        if (i >= n || model_split(fs, line[i]) || i == k) {
            while (i < n && !model_split(fs, line[i]))
                i++;
            continue;
        }
        size_t klen = i - k;
        i += vsl;
        n_pairs++;
        if (i < n && (line[i] == '"' || line[i] == '\'')) {
            char q = line[i++];
            size_t v = i;
            while (i < n && line[i] != q)
                i += line[i] == '\\' && i + 1 < n ? 2 : 1;
            size_t vend = i < n ? i : n;
            unterminated = unterminated || i >= n;
            i = i < n ? i + 1 : n;
            model_unescape(&m->value, line + v, vend - v);
        } else {
            size_t v = i;
            while (i < n && !model_split(fs, line[i]))
                i++;
            lf_buf_reset(&m->value);
            ck_assert_int_eq(lf_buf_append(&m->value, line + v, i - v), LF_OK);
        }
        bool ctl = false;
        for (size_t j = k; j < k + klen; j++)
            ctl = ctl || (unsigned char)line[j] < 0x20;
        bool drop = ctl;
        for (size_t j = 0; j < 5; j++)
            drop = drop || (strlen(own[j]) == klen && memcmp(own[j], line + k, klen) == 0);
        ck_assert_uint_lt(n_keys, 256);
        key_at[n_keys] = k;
        key_len[n_keys] = klen;
        if (drop || model_taken(n_keys, line, key_at, key_len, n_keys))
            continue;
        n_keys++;
        if (klen == 7 && memcmp(line + k, "message", 7) == 0) {
            lf_buf_reset(&m->msg);
            ck_assert_int_eq(lf_buf_append_str(&m->msg, lf_buf_str(&m->value)), LF_OK);
            m->has_msg = true;
            continue;
        }
        if (m->extra.len > 0)
            ck_assert_int_eq(lf_buf_append(&m->extra, ",", 1), LF_OK);
        ck_assert_int_eq(lf_buf_append(&m->extra, "\"", 1), LF_OK);
        ck_assert_int_eq(lf_json_escape(&m->extra, lf_str_make(line + k, klen)), LF_OK);
        ck_assert_int_eq(lf_buf_append(&m->extra, "\":\"", 3), LF_OK);
        ck_assert_int_eq(lf_json_escape(&m->extra, lf_buf_str(&m->value)), LF_OK);
        ck_assert_int_eq(lf_buf_append(&m->extra, "\"", 1), LF_OK);
    }
    const char *why = unterminated ? UNTERM : n_pairs == 0 ? NOPAIR : NULL;
    if (why != NULL && m->extra.len > 0)
        ck_assert_int_eq(lf_buf_append(&m->extra, ",", 1), LF_OK);
    if (why != NULL)
        ck_assert_int_eq(lf_buf_append_cstr(&m->extra, why), LF_OK);
}

/* Runs line through the stage from a buffer of exactly its n bytes (so that a read past
 * the end is caught under ASan) and asserts the model's members and message. */
static void
assert_as_model(struct model *m, const char *fs, const char *vs, const char *line, size_t n)
{
    char *exact = malloc(n > 0 ? n : 1);
    ck_assert_ptr_nonnull(exact);
    memcpy(exact, line, n);
    feed(exact, n, "", NULL);
    model_run(m, fs, vs, exact, n);
    char *want = strndup(m->extra.ptr != NULL ? m->extra.ptr : "", m->extra.len);
    char *want_msg =
        m->has_msg ? strndup(m->msg.ptr != NULL ? m->msg.ptr : "", m->msg.len) : strndup(exact, n);
    ck_assert_msg(strcmp(fx.extra, want) == 0, "line (%zu bytes) %.*s\n  got  %s\n  want %s", n,
                  (int)n, exact, fx.extra, want);
    ck_assert_msg(strcmp(fx.msg, want_msg) == 0, "line %.*s: message\n  got  %s\n  want %s", (int)n,
                  exact, fx.msg, want_msg);
    free(want);
    free(want_msg);
    free(exact);
}

static void model_init(struct model *m)
{
    lf_buf_init(&m->extra, SIZE_MAX);
    lf_buf_init(&m->msg, SIZE_MAX);
    lf_buf_init(&m->value, SIZE_MAX);
}

static void model_release(struct model *m)
{
    lf_buf_release(&m->extra);
    lf_buf_release(&m->msg);
    lf_buf_release(&m->value);
}

/* What may stand at any offset of a line: the bytes the scan looks for and the ones JSON
 * escapes, and bytes that are not UTF-8. */
static const char *const odd[] = {
    "\"",   "'",    "\\",       "\\\"",         "\\\\",         "=",        " ",
    "\t",   "\x01", "\x1f",     "\xe2\x80\xa8", "\xe2\x80\xa9", "\xe2x",    "\xe2",
    "\xff", "\xc3", "\xc3\xa4", "\x80",         "=\"",          "message=",
};

START_TEST(every_byte_the_scan_stops_at_is_found_at_every_offset)
{
    /* Offsets 0..140 cross 16-byte blocks, the 64-byte windows the line is sorted in, and
     * the end of the line (where the last block overlaps the one before), for keys, plain
     * values, quoted values and lines shorter than one block. */
    struct kv_conf conf = DEFAULT;
    struct lf_errbuf eb = { "" };
    ck_assert_int_eq(start(&conf, &eb), LF_OK);
    struct model m;
    model_init(&m);
    static const char *const shapes[] = {
        "a=%s%s z=1", "a=\"%s%s\" z=1",   "%s%s=v z=1", "a=%s%s",     "a=\"%s%s\"",
        "a=\"%s%s",   "a='%s%s' z=\"q\"", "%s%s",       "k=1 %s%s=2",
    };
    char pad[160];
    char line[400];
    for (size_t shape = 0; shape < sizeof(shapes) / sizeof(shapes[0]); shape++) {
        for (size_t n = 0; n <= 140; n++) {
            memset(pad, 'x', n);
            pad[n] = '\0';
            for (size_t o = 0; o < sizeof(odd) / sizeof(odd[0]); o++) {
                int len = snprintf(line, sizeof(line), shapes[shape], pad, odd[o]);
                assert_as_model(&m, " ", "=", line, (size_t)len);
            }
        }
    }
    model_release(&m);
}
END_TEST

START_TEST(random_lines_read_as_the_byte_by_byte_model_does)
{
    static const struct {
        const char *fs;
        const char *vs;
    } splits[] = { { " ", "=" }, { "&; ", ":" }, { " ", "=>" }, { ",", "=" } };
    /* Tokens the scan treats apart, so that random lines hit its cases often. */
    static const char *const bits[] = {
        "a",    "bb",   "key",      "message",
        "host", "=",    "=>",       ":",
        " ",    "  ",   "&",        ";",
        ",",    "\"",   "'",        "\\",
        "\\\"", "\t",   "\x01",     "\xe2\x80\xa8",
        "\xe2", "\xff", "\xc3\xa4", "0123456789abcdef",
        "x=1",
    };
    struct model m;
    model_init(&m);
    uint64_t seed = 0x9e3779b97f4a7c15u;
    char line[512];
    for (size_t sp = 0; sp < sizeof(splits) / sizeof(splits[0]); sp++) {
        struct kv_conf conf = { splits[sp].fs, splits[sp].vs, NULL, NULL, NULL, NULL };
        struct lf_errbuf eb = { "" };
        teardown();
        ck_assert_int_eq(start(&conf, &eb), LF_OK);
        for (int round = 0; round < 3000; round++) {
            size_t len = 0;
            seed = seed * 6364136223846793005u + 1442695040888963407u;
            size_t tokens = (size_t)(seed >> 33) % 60;
            for (size_t t = 0; t < tokens; t++) {
                seed = seed * 6364136223846793005u + 1442695040888963407u;
                const char *b = bits[(seed >> 33) % (sizeof(bits) / sizeof(bits[0]))];
                size_t bl = strlen(b);
                if (len + bl > sizeof(line))
                    break;
                memcpy(line + len, b, bl);
                len += bl;
            }
            assert_as_model(&m, splits[sp].fs, splits[sp].vs, line, len);
        }
    }
    model_release(&m);
}
END_TEST

/* Run alone by check_kv_alloc (see main). */
START_TEST(steady_state_allocates_nothing_per_event)
{
    struct kv_conf conf = { NULL, NULL, NULL, NULL, NULL, "app" };
    struct lf_errbuf eb = { "" };
    ck_assert_int_eq(start(&conf, &eb), LF_OK);
    const char *lines[] = { cases[0].line, cases[1].line, cases[3].line, "no pairs" };
    const char *extras[] = { "\"stream\":\"stdout\"", "\"stream\":\"stdout\"",
                             "\"stream\":\"stdout\"", "\"stream\":\"stdout\"" };
    fx_assert_no_allocs(lines, extras, 4);
}
END_TEST

static Suite *kv_suite(void)
{
    Suite *s = suite_create("kv");
    TCase *tc = tcase_create("lines");
    tcase_add_checked_fixture(tc, NULL, teardown);
    tcase_add_loop_test(tc, each_case_gives_its_message_and_members, 0,
                        (int)(sizeof(cases) / sizeof(cases[0])));
    tcase_add_test(tc, many_pairs_grow_the_seen_keys_and_keep_them);
    tcase_add_test(tc, a_nul_byte_in_a_value_is_data);
    tcase_add_test(tc, a_message_without_bytes_has_no_pair);
    tcase_add_test(tc, a_key_with_a_control_character_is_skipped);
    tcase_add_test(tc, the_encoded_event_carries_the_members_after_log);
    suite_add_tcase(s, tc);
    TCase *scan = tcase_create("scanning");
    tcase_add_checked_fixture(scan, NULL, teardown);
    tcase_set_timeout(scan, 60);
    tcase_add_test(scan, every_byte_the_scan_stops_at_is_found_at_every_offset);
    tcase_add_test(scan, random_lines_read_as_the_byte_by_byte_model_does);
    suite_add_tcase(s, scan);
    TCase *conf = tcase_create("config errors");
    tcase_add_checked_fixture(conf, NULL, teardown);
    tcase_add_loop_test(conf, a_bad_setting_is_a_config_error_that_says_why, 0,
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
    return stage_fixture_main(kv_suite());
}
