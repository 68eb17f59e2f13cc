/* check_redact.c - the redact stage: real-looking secrets and personal data of each
 * built-in pattern, the near-misses that must stay (numbers failing Luhn, version strings,
 * octets above 255, random dotted words), members masked in place, keyed hash tokens, a
 * user regex, the per-pattern counts, config errors, and no allocation per event. */
#include "config.h"

#include <inttypes.h>

#include "stage_fixture.h"

/* HMAC-SHA256 of "jane@example.com" under the key "k3y-from-env", its first 16 hex
 * digits (python3: hmac.new(b"k3y-from-env", b"jane@example.com", "sha256").hexdigest()) */
#define JANE_K1 "068bc07d4b2c3416"

static enum lf_err start_with(const char *const *patterns,
                              size_t n_patterns,
                              const char *const *fields,
                              size_t n_fields,
                              const char *regex,
                              const char *replace,
                              const char *hash_key,
                              struct lf_errbuf *eb)
{
    struct lf_parser_conf pc = { .kind = LF_PARSER_REDACT };
    pc.u.redact.patterns = (char **)patterns;
    pc.u.redact.n_patterns = n_patterns;
    pc.u.redact.fields = (char **)fields;
    pc.u.redact.n_fields = n_fields;
    pc.u.redact.regex_json = (char *)regex;
    pc.u.redact.replace = (char *)replace;
    pc.u.redact.hash = hash_key != NULL ? LF_REDACT_HASH_SHA256 : LF_REDACT_HASH_NONE;
    pc.u.redact.hash_key = (char *)hash_key;
    return fx_start(&lf_stage_redact, &pc, eb);
}

/* Every built-in pattern on; a match shows as <its name>. */
static void start_all(void)
{
    struct lf_errbuf eb = { "" };
    ck_assert_int_eq(start_with(NULL, 0, NULL, 0, NULL, "<%{pattern}>", NULL, &eb), LF_OK);
}

static void feed_msg(const char *msg)
{
    feed(msg, strlen(msg), "", NULL);
}

static const struct masked {
    const char *in;
    const char *out; /* NULL: unchanged */
} masked[] = {
    /* cards of each brand (issuers' test numbers), plain, spaced and dashed */
    { "paid with 4111 1111 1111 1111 ok", "paid with <credit_card> ok" },
    { "visa=4111-1111-1111-1111;", "visa=<credit_card>;" },
    { "mc 5555555555554444, mc2 2223003122003222", "mc <credit_card>, mc2 <credit_card>" },
    { "amex 378282246310005 discover 6011111111111117",
      "amex <credit_card> discover <credit_card>" },
    { "jcb 3530111333300000 diners 30569309025904", "jcb <credit_card> diners <credit_card>" },
    { "card 4111111111111111 then 2026", "card <credit_card> then 2026" },
    /* near-misses: Luhn fails, a longer run of digits, letters around, mixed separators,
     * an issuer no card has, a millisecond timestamp */
    { "card 4111111111111112 declined", NULL },
    { "id 41111111111111110000 and 94111111111111111", NULL },
    { "ref x4111111111111111 and 4111111111111111y", NULL },
    { "4111 1111-1111 1111", NULL },
    { "order 1234567812345670 ts 1733250000000", NULL },
    /* IBANs: whole and in groups of four; a wrong check digit stays */
    { "iban DE89370400440532013000.", "iban <iban>." },
    { "to GB82 WEST 1234 5698 7654 32 today", "to <iban> today" },
    { "iban DE89370400440532013001 and DE8937040044053201300", NULL },
    { "AT611904300234573201 after an A, and BE71096123456769", "<iban> after an A, and <iban>" },
    /* e-mail addresses; a host without a dot is no address */
    { "from jane.doe+tag@example.co.uk: hi", "from <email>: hi" },
    { "<bob_99@mail.example.com>", "<<email>>" },
    { "user@localhost and @handle and a@b.c", NULL },
    /* IPv4, and what only looks like it */
    { "client 192.168.1.20:8080 and 10.0.0.1.", "client <ipv4>:8080 and <ipv4>." },
    { "version 1.2.3.4.5, v1.2.3, 999.1.1.1, 10.0.0.256, 1.2.3", NULL },
    /* IPv6, full and compressed; times and MAC addresses stay */
    { "src 2001:0db8:85a3:0000:0000:8a2e:0370:7334 dst fe80::1ff:fe23:4567:890a",
      "src <ipv6> dst <ipv6>" },
    { "[::1]:443 and 2001:db8::7", "[<ipv6>]:443 and <ipv6>" },
    { "at 12:30:45 mac 00:1a:2b:3c:4d:5e std::string", NULL },
    /* the byte filters before the matchers: a time with milliseconds beside an address,
     * a key-value pair after a time, IPv6 with exactly seven colons and with :: at the end */
    { "12:00:01.005 from 10.0.0.1 at 1.2.3", "12:00:01.005 from <ipv4> at 1.2.3" },
    { "at 01:02:03 secret: s 1:2:3:4:5:6:7:8 and a:b:c::",
      "at 01:02:03 secret: <secret_kv> <ipv6> and <ipv6>" },
    { "1:2:3:4:5:6:7 12.345.6.7 1.22.333.4444", NULL },
    /* a JWT; dotted words that start alike but decode to no header stay */
    { "jwt eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiIxMjM0NTY3ODkwIiwibmFtZSI6IkpvaG4g"
      "RG9lIiwiaWF0IjoxNTE2MjM5MDIyfQ.SflKxwRJSMeKKF2QT4fwpMeJf36POk6yJV_adQssw5c end",
      "jwt <jwt> end" },
    { "eyJfoo.barbaz.qux and eyJzdWIiOiIxMjM0NTY3ODkwIn0.eyJzdWIi.sig", NULL },
    /* key-value secrets: the value goes, the key and the quotes stay */
    { "login user=bob password=hunter2 ok", "login user=bob password=<secret_kv> ok" },
    { "DB_PASSWORD='s3cr3t value' next", "DB_PASSWORD='<secret_kv>' next" },
    { "{\"user\":\"bob\",\"password\":\"x\\\"y\",\"n\":1}",
      "{\"user\":\"bob\",\"password\":\"<secret_kv>\",\"n\":1}" },
    { "api_key: abc123XYZ&x=1 token=t0k passwd:pw",
      "api_key: <secret_kv>&x=1 token=<secret_kv> passwd:<secret_kv>" },
    { "X-Api-Key: k-1 client_secret=cs", "X-Api-Key: <secret_kv> client_secret=<secret_kv>" },
    { "tokens=5 max_tokens=7 a==b token==x passwordless=1 mytoken=abc", NULL },
    /* AWS access key ids */
    { "key AKIAIOSFODNN7EXAMPLE used, ASIAY34FZKBOKMUTVV7A too",
      "key <aws_access_key> used, <aws_access_key> too" },
    { "AKIAIOSFODNN7EXAMPLEX AKIAIOSFODNN7EXAMPL", NULL },
    /* bearer tokens: the token goes */
    { "Authorization: Bearer abc.def-123_xyz", "Authorization: Bearer <bearer_token>" },
    { "got bearer 9f8e7d6c5b4a", "got bearer <bearer_token>" },
    { "a Bearer token was missing; Bearer authentication", NULL },
    /* a private key block across the event's lines; a certificate stays */
    { "key: -----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEA1\nq83hd==\n-----END RSA PRIVATE "
      "KEY-----\ndone",
      "key: <private_key>\ndone" },
    { "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXk (cut)", "<private_key>" },
    { "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----", NULL },
    /* several kinds on one line */
    { "2026-12-03T19:10:06Z INFO login jane@example.com from 203.0.113.9 card 4111111111111111",
      "2026-12-03T19:10:06Z INFO login <email> from <ipv4> card <credit_card>" },
};

START_TEST(each_pattern_masks_its_matches_and_keeps_near_misses)
{
    start_all();
    feed_msg(masked[_i].in);
    const char *want = masked[_i].out != NULL ? masked[_i].out : masked[_i].in;
    ck_assert_msg(strcmp(fx.msg, want) == 0, "case %d\n  got  %s\n  want %s", _i, fx.msg, want);
    ck_assert_str_eq(fx.extra, "");
}
END_TEST

/* Texts ending in each trigger byte, in buffers of exactly their length: no matcher reads
 * past the end (ASan says so). */
START_TEST(a_text_ending_at_a_trigger_is_read_within_its_bytes)
{
    static const char *const ends[] = { "card 4", "x 41",        "ip 1.",
                                        "a@",     "k=",          "k:",
                                        "-",      "-----BEGIN",  "eyJ",
                                        "A",      "Bearer",      "GB8",
                                        "fe80:",  "password=\"", "jane@example.c" };
    start_all();
    for (size_t i = 0; i < sizeof(ends) / sizeof(ends[0]); i++) {
        size_t n = strlen(ends[i]);
        char *exact = malloc(n);
        ck_assert_ptr_nonnull(exact);
        memcpy(exact, ends[i], n);
        feed(exact, n, "", NULL);
        ck_assert_str_eq(fx.msg, ends[i]);
        free(exact);
    }
}
END_TEST

START_TEST(only_the_patterns_named_are_on)
{
    static const char *const p[] = { "email", "ipv4" };
    struct lf_errbuf eb = { "" };
    ck_assert_int_eq(start_with(p, 2, NULL, 0, NULL, NULL, NULL, &eb), LF_OK);
    feed_msg("jane@example.com at 10.1.2.3 paid 4111111111111111 password=x");
    ck_assert_str_eq(fx.msg, "[REDACTED] at [REDACTED] paid 4111111111111111 password=x");
}
END_TEST

START_TEST(named_members_are_masked_in_place_and_others_left)
{
    static const char *const f[] = { "message", "user.note", "token_field", "n" };
    struct lf_errbuf eb = { "" };
    ck_assert_int_eq(start_with(NULL, 0, f, 4, NULL, NULL, NULL, &eb), LF_OK);
    const char *prior = "\"user\":{\"name\":\"jane@example.com\",\"note\":\"mail "
                        "jane@example.com \\\"now\\\" \\u00e9\"},\"token_field\":\"tab\\t"
                        "4111111111111111\",\"n\":5,\"other\":\"10.0.0.1\"";
    feed("at 10.0.0.1", 11, prior, NULL);
    ck_assert_str_eq(fx.msg, "at [REDACTED]");
    ck_assert_str_eq(fx.extra, "\"user\":{\"name\":\"jane@example.com\",\"note\":\"mail "
                               "[REDACTED] \\\"now\\\" \xc3\xa9\"},\"token_field\":\"tab\\t"
                               "[REDACTED]\",\"n\":5,\"other\":\"10.0.0.1\"");
    /* fields without message: the message stays */
    teardown();
    ck_assert_int_eq(start_with(NULL, 0, f + 1, 1, NULL, NULL, NULL, &eb), LF_OK);
    feed("at 10.0.0.1", 11, prior, NULL);
    ck_assert_str_eq(fx.msg, "at 10.0.0.1");
}
END_TEST

static struct lf_event seen;

static enum lf_err capture(void *arg, const struct lf_event *ev)
{
    (void)arg;
    seen = *ev;
    return LF_OK;
}

START_TEST(an_event_with_nothing_found_passes_untouched)
{
    start_all();
    static const char line[] = "GET /index.html 200 in 12ms, version 1.2.3";
    static const char prior[] = "\"level\":\"info\"";
    struct lf_event ev = { lf_str_make(line, sizeof(line) - 1),   1, 0, 1, 0, NULL,
                           lf_str_make(prior, sizeof(prior) - 1), 0 };
    struct lf_stage_out out = { capture, NULL };
    ck_assert_int_eq(fx.ops->process(fx.spec, fx.state, &ev, 0, &out), LF_OK);
    ck_assert_ptr_eq(seen.message.ptr, line); /* the same bytes: no copy */
    ck_assert_ptr_eq(seen.extra.ptr, prior);
}
END_TEST

START_TEST(hash_gives_one_token_per_value_and_key)
{
    static const char *const p[] = { "email" };
    struct lf_errbuf eb = { "" };
    ck_assert_int_eq(start_with(p, 1, NULL, 0, NULL, NULL, "k3y-from-env", &eb), LF_OK);
    feed_msg("a jane@example.com b jane@example.com c bob@example.com");
    char want[256];
    snprintf(want, sizeof(want), "a [email:%s] b [email:%s] c [email:", JANE_K1, JANE_K1);
    ck_assert_msg(strncmp(fx.msg, want, strlen(want)) == 0, "got %s", fx.msg);
    ck_assert_ptr_null(strstr(fx.msg, "example.com"));
    char first[256];
    snprintf(first, sizeof(first), "%s", fx.msg);
    teardown();
    ck_assert_int_eq(start_with(p, 1, NULL, 0, NULL, NULL, "another-key", &eb), LF_OK);
    feed_msg("a jane@example.com b jane@example.com c bob@example.com");
    ck_assert_str_ne(fx.msg, first);
    ck_assert_ptr_null(strstr(fx.msg, JANE_K1));
}
END_TEST

START_TEST(a_user_regex_masks_what_no_built_in_took)
{
    static const char *const p[] = { "email" };
    struct lf_errbuf eb = { "" };
    ck_assert_int_eq(start_with(p, 1, NULL, 0,
                                "[{\"name\":\"order\",\"pattern\":\"ORD-\\\\d{8}\"},"
                                "{\"name\":\"mailish\",\"pattern\":\"\\\\S+@\\\\S+\"}]",
                                "[%{pattern}]", NULL, &eb),
                     LF_OK);
    feed_msg("ORD-12345678 by jane@example.com; ORD-1234 x@y");
    ck_assert_str_eq(fx.msg, "[order] by [email]; ORD-1234 [mailish]");
    const char *name;
    uint64_t n;
    ck_assert(lf_stage__redact_count(fx.spec, 0, &name, &n));
    ck_assert_str_eq(name, "email");
    ck_assert_uint_eq(n, 1);
    ck_assert(lf_stage__redact_count(fx.spec, 1, &name, &n));
    ck_assert_str_eq(name, "order");
    ck_assert_uint_eq(n, 1);
    ck_assert(lf_stage__redact_count(fx.spec, 2, &name, &n));
    ck_assert_str_eq(name, "mailish");
    ck_assert_uint_eq(n, 1);
    ck_assert(!lf_stage__redact_count(fx.spec, 3, &name, &n));
}
END_TEST

START_TEST(each_pattern_is_counted)
{
    start_all();
    for (size_t i = 0; i < sizeof(masked) / sizeof(masked[0]); i++)
        feed_msg(masked[i].in);
    static const struct {
        const char *name;
        uint64_t n;
    } want[] = { { "credit_card", 10 }, { "iban", 4 },           { "email", 3 },
                 { "ipv4", 4 },         { "ipv6", 6 },           { "jwt", 1 },
                 { "secret_kv", 9 },    { "aws_access_key", 2 }, { "bearer_token", 2 },
                 { "private_key", 2 } };
    for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
        const char *name;
        uint64_t n;
        ck_assert(lf_stage__redact_count(fx.spec, i, &name, &n));
        ck_assert_str_eq(name, want[i].name);
        ck_assert_msg(n == want[i].n, "%s: %" PRIu64 " counted, %" PRIu64 " wanted", name, n,
                      want[i].n);
    }
}
END_TEST

static const struct bad {
    const char *pattern; /* one, or NULL */
    const char *regex;
    const char *replace;
    bool hash;
    const char *key;
    const char *why;
} bad[] = {
    { "credit_cards", NULL, NULL, false, NULL,
      "redact: unknown pattern \"credit_cards\": expected credit_card, iban, email, ipv4, ipv6, "
      "jwt, secret_kv, aws_access_key, bearer_token or private_key (regex: for your own)" },
    { NULL, NULL, "x", true, "k", "redact: give replace or hash, not both" },
    { NULL, NULL, NULL, true, NULL,
      "redact: hash: sha256 needs hash_key (a secret, such as ${REDACT_KEY})" },
    { NULL, NULL, NULL, false, "k", "redact: hash_key is for hash: sha256" },
    { NULL, "{\"name\":\"a\"}", NULL, false, NULL,
      "redact: regex must be a list of at most 64 {name: ..., pattern: ...}" },
    { NULL, "[{\"name\":\"a\"}]", NULL, false, NULL,
      "redact: regex[0]: expected {name: ..., pattern: ...}, both non-empty strings" },
    { NULL, "[{\"name\":\"email\",\"pattern\":\"x\"}]", NULL, false, NULL,
      "redact: regex[0]: name \"email\": expected lower-case letters, digits and _, and no "
      "name used already" },
    { NULL, "[{\"name\":\"a\",\"pattern\":\"(x\"}]", NULL, false, NULL,
      "redact: regex a: missing closing parenthesis at offset 2 of \"(x\"" },
};

START_TEST(a_bad_setting_is_a_config_error_that_says_why)
{
    const struct bad *b = &bad[_i];
    const char *p[] = { b->pattern };
    struct lf_parser_conf pc = { .kind = LF_PARSER_REDACT };
    pc.u.redact.patterns = (char **)p;
    pc.u.redact.n_patterns = b->pattern != NULL ? 1 : 0;
    pc.u.redact.regex_json = (char *)b->regex;
    pc.u.redact.replace = (char *)b->replace;
    pc.u.redact.hash = b->hash ? LF_REDACT_HASH_SHA256 : LF_REDACT_HASH_NONE;
    pc.u.redact.hash_key = (char *)b->key;
    struct lf_errbuf eb = { "" };
    ck_assert_int_eq(fx_start(&lf_stage_redact, &pc, &eb), LF_ECONFIG);
    ck_assert_str_eq(eb.msg, b->why);
    ck_assert_ptr_null(fx.spec);
}
END_TEST

/* Run alone by check_redact_alloc (see main). */
START_TEST(steady_state_allocates_nothing_per_event)
{
    static const char *const f[] = { "message", "user.note" };
    struct lf_errbuf eb = { "" };
    ck_assert_int_eq(start_with(NULL, 0, f, 2, "[{\"name\":\"order\",\"pattern\":\"ORD-\\\\d+\"}]",
                                NULL, NULL, &eb),
                     LF_OK);
    const char *lines[] = { masked[0].in,
                            masked[14].in,
                            masked[22].in,
                            masked[35].in,
                            "nothing to see here at all",
                            "ORD-1 and ORD-22" };
    const char *extras[] = { "", "\"user\":{\"note\":\"jane@example.com\"}",   "", "\"a\":1",
                             "", "\"user\":{\"note\":\"password=x 10.0.0.1\"}" };
    fx_assert_no_allocs(lines, extras, 6);
}
END_TEST

static Suite *redact_suite(void)
{
    Suite *s = suite_create("redact");
    TCase *tc = fx_tcase(s, "patterns", false);
    tcase_add_loop_test(tc, each_pattern_masks_its_matches_and_keeps_near_misses, 0,
                        (int)(sizeof(masked) / sizeof(masked[0])));
    tcase_add_test(tc, a_text_ending_at_a_trigger_is_read_within_its_bytes);
    tcase_add_test(tc, only_the_patterns_named_are_on);
    tcase_add_test(tc, named_members_are_masked_in_place_and_others_left);
    tcase_add_test(tc, an_event_with_nothing_found_passes_untouched);
    tcase_add_test(tc, hash_gives_one_token_per_value_and_key);
    tcase_add_test(tc, a_user_regex_masks_what_no_built_in_took);
    tcase_add_test(tc, each_pattern_is_counted);
    tcase_add_loop_test(fx_tcase(s, "config errors", false),
                        a_bad_setting_is_a_config_error_that_says_why, 0,
                        (int)(sizeof(bad) / sizeof(bad[0])));
    tcase_add_test(fx_tcase(s, "alloc", true), steady_state_allocates_nothing_per_event);
    return s;
}

int main(void)
{
    return stage_fixture_main(redact_suite());
}
