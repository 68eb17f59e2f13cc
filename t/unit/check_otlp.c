/* check_otlp.c - the otlp output's encoder (src/output/otlp_enc.c): the JSON form of a
 * record written out whole, the protobuf's nested lengths (guessed, then moved) checked by
 * a wire walk, severity names, partial_success answers in both forms, and a line that is
 * not an object refused. */
#include "config.h"

#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "../../src/output/otlp_int.h"

static const char LINE[] =
    "{\"@timestamp\":\"2026-12-01T00:00:00.000Z\",\"message\":\"hi \\\"you\\\"\","
    "\"log\":{\"file\":{\"path\":\"/var/log/a.log\"},\"offset\":7,\"level\":\"WARNING\"},"
    "\"host\":{\"name\":\"node-1\"},\"n\":-3,\"r\":1.5,\"ok\":false,\"z\":null,"
    "\"a\":[1,\"x\"],\"e\":{},\"k\\u00e9y\":\"v\","
    "\"kubernetes\":{\"namespace\":\"shop\",\"pod\":{\"name\":\"p\",\"uid\":\"u\"},"
    "\"labels\":{\"app\":\"cart\"}}}";

/* The whole request for LINE, in one resource. */
static void encode(bool json, const char *line, struct lf_buf *out)
{
    struct lf_otlp_enc e;
    memset(&e, 0, sizeof(e));
    ck_assert_int_eq(lf_otlp_enc_init(&e, json, "log.level", "{\"service.name\":\"s\"}"), LF_OK);
    struct lf_str vals[LF_OTLP_N_RES] = { LF_STR_LIT("\"node-1\""), LF_STR_LIT("\"shop\""),
                                          LF_STR_LIT("\"p\""),      { "", 0 },
                                          LF_STR_LIT("\"u\""),      { "", 0 } };
    ck_assert_int_eq(lf_otlp_begin(&e, out), LF_OK);
    ck_assert_int_eq(lf_otlp_resource(&e, true, vals), LF_OK);
    ck_assert_int_eq(lf_otlp_record(&e, true, lf_str_make(line, strlen(line)), 5, 6), LF_OK);
    ck_assert_int_eq(lf_otlp_resource_end(&e), LF_OK);
    ck_assert_int_eq(lf_otlp_end(&e), LF_OK);
    lf_otlp_enc_release(&e);
}

START_TEST(json_maps_every_member)
{
    struct lf_buf out;
    lf_buf_init(&out, 1 << 20);
    encode(true, LINE, &out);
    const char *want =
        "{\"resourceLogs\":[{\"resource\":{\"attributes\":["
        "{\"key\":\"service.name\",\"value\":{\"stringValue\":\"s\"}},"
        "{\"key\":\"host.name\",\"value\":{\"stringValue\":\"node-1\"}},"
        "{\"key\":\"k8s.namespace.name\",\"value\":{\"stringValue\":\"shop\"}},"
        "{\"key\":\"k8s.pod.name\",\"value\":{\"stringValue\":\"p\"}},"
        "{\"key\":\"k8s.pod.uid\",\"value\":{\"stringValue\":\"u\"}}]},"
        "\"scopeLogs\":[{\"scope\":{\"name\":\"logferry\",\"version\":\"" PACKAGE_VERSION "\"},"
        "\"logRecords\":[{\"timeUnixNano\":\"5\",\"observedTimeUnixNano\":\"6\",\"attributes\":["
        "{\"key\":\"log.file.path\",\"value\":{\"stringValue\":\"/var/log/a.log\"}},"
        "{\"key\":\"log.offset\",\"value\":{\"intValue\":\"7\"}},"
        "{\"key\":\"n\",\"value\":{\"intValue\":\"-3\"}},"
        "{\"key\":\"r\",\"value\":{\"doubleValue\":1.5}},"
        "{\"key\":\"ok\",\"value\":{\"boolValue\":false}},"
        "{\"key\":\"z\",\"value\":{}},"
        "{\"key\":\"a\",\"value\":{\"arrayValue\":{\"values\":[{\"intValue\":\"1\"},"
        "{\"stringValue\":\"x\"}]}}},"
        "{\"key\":\"e\",\"value\":{\"kvlistValue\":{\"values\":[]}}},"
        "{\"key\":\"k\xc3\xa9y\",\"value\":{\"stringValue\":\"v\"}},"
        "{\"key\":\"kubernetes\",\"value\":{\"kvlistValue\":{\"values\":["
        "{\"key\":\"labels\",\"value\":{\"kvlistValue\":{\"values\":["
        "{\"key\":\"app\",\"value\":{\"stringValue\":\"cart\"}}]}}}]}}}],"
        "\"severityNumber\":13,\"severityText\":\"WARNING\","
        "\"body\":{\"stringValue\":\"hi \\\"you\\\"\"}}]}]}]}";
    ck_assert_int_eq(lf_buf_append(&out, "", 1), LF_OK); /* NUL-terminated */
    ck_assert_str_eq(out.ptr, want);
    lf_buf_release(&out);
}
END_TEST

static uint64_t varint(const unsigned char **p, const unsigned char *end)
{
    uint64_t v = 0;
    for (unsigned s = 0; *p < end && s < 64; s += 7) {
        unsigned char c = *(*p)++;
        v |= (uint64_t)(c & 0x7F) << s;
        if (!(c & 0x80))
            break;
    }
    return v;
}

/* The first length-delimited field numbered num of the message m (n bytes), every field's
 * length checked to end within m on the way: its bytes in *sub. */
static bool field(const unsigned char *m, size_t n, unsigned num, struct lf_str *sub)
{
    const unsigned char *p = m;
    const unsigned char *end = m + n;
    bool found = false;
    while (p < end) {
        uint64_t tag = varint(&p, end);
        if ((tag & 7) == 0) {
            (void)varint(&p, end);
        } else if ((tag & 7) == 1) {
            p += 8;
        } else {
            ck_assert_uint_eq(tag & 7, 2);
            uint64_t len = varint(&p, end);
            ck_assert_uint_le(len, (uint64_t)(end - p));
            if (!found && tag >> 3 == num) {
                *sub = lf_str_make((const char *)p, (size_t)len);
                found = true;
            }
            p += len;
        }
    }
    ck_assert(p == end);
    return found;
}

START_TEST(protobuf_lengths_hold_past_one_and_two_byte_guesses)
{
    /* A message of 20,000 bytes: its AnyValue, body and record outgrow their guesses. */
    size_t big = 20000;
    char *line = malloc(big + 64);
    ck_assert_ptr_nonnull(line);
    strcpy(line, "{\"message\":\"");
    memset(line + 12, 'x', big);
    strcpy(line + 12 + big, "\",\"n\":1}");
    struct lf_buf out;
    lf_buf_init(&out, 1 << 24);
    encode(false, line, &out);
    struct lf_str rl, sl, rec, body, str, res;
    const unsigned char *u = (const unsigned char *)out.ptr;
    ck_assert(field(u, out.len, 1, &rl));
    ck_assert(field((const unsigned char *)rl.ptr, rl.len, 1, &res));
    ck_assert(field((const unsigned char *)rl.ptr, rl.len, 2, &sl));
    ck_assert(field((const unsigned char *)sl.ptr, sl.len, 2, &rec));
    ck_assert(field((const unsigned char *)rec.ptr, rec.len, 5, &body));
    ck_assert(field((const unsigned char *)body.ptr, body.len, 1, &str));
    ck_assert_uint_eq(str.len, big);
    ck_assert(str.ptr[0] == 'x' && str.ptr[big - 1] == 'x');
    ck_assert_ptr_eq(rl.ptr + rl.len, out.ptr + out.len);
    lf_buf_release(&out);
    free(line);
}
END_TEST

START_TEST(a_line_that_is_not_an_object_is_refused)
{
    struct lf_otlp_enc e;
    memset(&e, 0, sizeof(e));
    struct lf_buf out;
    lf_buf_init(&out, 1 << 20);
    ck_assert_int_eq(lf_otlp_enc_init(&e, false, "level", NULL), LF_OK);
    ck_assert_int_eq(lf_otlp_begin(&e, &out), LF_OK);
    ck_assert_int_eq(lf_otlp_record(&e, true, LF_STR_LIT("[1,2]"), 1, 1), LF_EINVAL);
    lf_otlp_enc_release(&e);
    memset(&e, 0, sizeof(e));
    ck_assert_int_eq(lf_otlp_enc_init(&e, false, "level", "{\"a\":{\"b\":1}}"), LF_EINVAL);
    lf_otlp_enc_release(&e);
    lf_buf_release(&out);
}
END_TEST

START_TEST(severity_names_map_case_insensitively)
{
    const struct {
        const char *s;
        int n;
    } cases[] = { { "TRACE", 1 },     { "debug", 5 },   { "Info", 9 },   { "WARN", 13 },
                  { "warning", 13 },  { "err", 17 },    { "ERROR", 17 }, { "fatal", 21 },
                  { "Critical", 21 }, { "verbose", 0 }, { "", 0 } };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
        ck_assert_int_eq(lf_otlp_severity_number(cases[i].s, strlen(cases[i].s)), cases[i].n);
}
END_TEST

START_TEST(partial_success_is_read_in_both_forms)
{
    int64_t rejected = -1;
    char msg[64];
    /* field 1 (len 9): rejected_log_records 5, error_message "bad" */
    static const char pb[] = "\x0a\x07\x08\x05\x12\x03\x62\x61\x64";
    ck_assert(lf_otlp_partial(lf_str_make(pb, sizeof(pb) - 1), false, &rejected, msg, sizeof(msg)));
    ck_assert_int_eq(rejected, 5);
    ck_assert_str_eq(msg, "bad");
    ck_assert(lf_otlp_partial(
        LF_STR_LIT(
            "{\"partialSuccess\":{\"rejectedLogRecords\":\"7\",\"errorMessage\":\"x\\ty\"}}"),
        true, &rejected, msg, sizeof(msg)));
    ck_assert_int_eq(rejected, 7);
    ck_assert_str_eq(msg, "x\ty");
    ck_assert(!lf_otlp_partial(LF_STR_LIT("{}"), true, &rejected, msg, sizeof(msg)));
    ck_assert(!lf_otlp_partial(LF_STR_LIT(""), false, &rejected, msg, sizeof(msg)));
    ck_assert_int_eq(rejected, 0);
    /* a length past the end is no partial success */
    ck_assert(!lf_otlp_partial(LF_STR_LIT("\x0a\x7f\x08"), false, &rejected, msg, sizeof(msg)));
}
END_TEST

START_TEST(resource_members_are_found_nested_or_as_dotted_keys)
{
    struct lf_str v[LF_OTLP_N_RES];
    lf_otlp_resource_values(
        LF_STR_LIT("{\"message\":\"kubernetes\",\"host\":{\"name\":\"h\"},\"x\":[{\"a\":1}],"
                   "\"kubernetes\":{\"namespace\":\"ns\",\"pod\":{\"uid\":null,\"name\":\"p\"},"
                   "\"labels\":{\"node\":{\"name\":\"no\"}}},\"kubernetes.node.name\":\"n1\"}"),
        v);
    const char *want[LF_OTLP_N_RES] = { "\"h\"", "\"ns\"", "\"p\"", "", "", "\"n1\"" };
    for (int r = 0; r < LF_OTLP_N_RES; r++) {
        ck_assert_uint_eq(v[r].len, strlen(want[r]));
        ck_assert(memcmp(v[r].ptr, want[r], v[r].len) == 0);
    }
}
END_TEST

int main(void)
{
    Suite *s = suite_create("otlp");
    TCase *tc = tcase_create("encoder");
    tcase_add_test(tc, json_maps_every_member);
    tcase_add_test(tc, protobuf_lengths_hold_past_one_and_two_byte_guesses);
    tcase_add_test(tc, a_line_that_is_not_an_object_is_refused);
    tcase_add_test(tc, severity_names_map_case_insensitively);
    tcase_add_test(tc, partial_success_is_read_in_both_forms);
    tcase_add_test(tc, resource_members_are_found_nested_or_as_dotted_keys);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
