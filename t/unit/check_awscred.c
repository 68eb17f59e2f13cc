/* check_awscred.c - the AWS credentials provider (src/output/awscred.c) without a server:
 * which source it picks from the output's keys and the environment, the messages of a
 * source half given or of none at all, STS's XML and the metadata service's JSON read into
 * credentials, and when it fetches again (ahead of expiry, backoff after failures). Also a
 * provider whose STS is a closed port: lf_awscred_get() says why it has nothing, with no
 * secret, and freeing it takes less than a second. */
#include "config.h"

#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../../src/output/awscred_parse_int.h"
#include "logferry/clock.h"

static const char *const ENV_VARS[] = {
    "AWS_ACCESS_KEY_ID",    "AWS_SECRET_ACCESS_KEY",       "AWS_SESSION_TOKEN",
    "AWS_ROLE_ARN",         "AWS_WEB_IDENTITY_TOKEN_FILE", "AWS_ROLE_SESSION_NAME",
    "AWS_ENDPOINT_URL_STS", "AWS_EC2_METADATA_DISABLED",   "AWS_EC2_METADATA_SERVICE_ENDPOINT",
    "AWS_REGION",           "AWS_DEFAULT_REGION"
};

static struct lf_output_conf conf;

static void setup(void)
{
    for (size_t i = 0; i < sizeof(ENV_VARS) / sizeof(ENV_VARS[0]); i++)
        unsetenv(ENV_VARS[i]);
    memset(&conf, 0, sizeof(conf));
    conf.name = (char *)"signed";
    conf.aws_imds = true;
}

/* lf_awscred_new()'s result; on failure eb's message in msg. */
static enum lf_err make(struct lf_awscred **c, char *msg, size_t len)
{
    struct lf_errbuf eb = { "" };
    *c = NULL;
    enum lf_err err = lf_awscred_new(&conf, "eu-west-1", "output signed", c, &eb);
    snprintf(msg, len, "%s", eb.msg);
    return err;
}

START_TEST(test_config_first)
{
    setenv("AWS_ACCESS_KEY_ID", "AKIDENV", 1);
    setenv("AWS_SECRET_ACCESS_KEY", "envsecret", 1);
    conf.aws_access_key_id = (char *)"AKIDCONF";
    conf.aws_secret_access_key = (char *)"confsecret";
    conf.aws_session_token = (char *)"conftoken";
    struct lf_awscred *c;
    char msg[512];
    ck_assert_int_eq(make(&c, msg, sizeof(msg)), LF_OK);
    ck_assert_str_eq(lf_awscred_source(c), "config");
    struct lf_awscred_value v = { .gen = 0 };
    struct lf_errbuf eb = { "" };
    ck_assert_int_eq(lf_awscred_get(c, &v, &eb), LF_OK);
    ck_assert_str_eq(v.access_key_id, "AKIDCONF");
    ck_assert_str_eq(v.secret_key, "confsecret");
    ck_assert_str_eq(v.session_token, "conftoken");
    ck_assert_int_eq(v.expires_ms, 0);
    ck_assert_uint_eq(v.gen, 1);
    lf_awscred_refresh(c); /* fixed: nothing happens */
    lf_awscred_free(c);
    lf_awscred_value_wipe(&v);
    ck_assert_str_eq(v.secret_key, "");
}
END_TEST

START_TEST(test_environment_second)
{
    setenv("AWS_ACCESS_KEY_ID", "AKIDENV", 1);
    setenv("AWS_SECRET_ACCESS_KEY", "envsecret", 1);
    setenv("AWS_SESSION_TOKEN", "envtoken", 1);
    setenv("AWS_ROLE_ARN", "arn:aws:iam::1:role/r", 1); /* behind the environment's keys */
    setenv("AWS_WEB_IDENTITY_TOKEN_FILE", "/nonexistent", 1);
    struct lf_awscred *c;
    char msg[512];
    ck_assert_int_eq(make(&c, msg, sizeof(msg)), LF_OK);
    ck_assert_str_eq(lf_awscred_source(c), "environment");
    struct lf_awscred_value v = { .gen = 0 };
    struct lf_errbuf eb = { "" };
    ck_assert_int_eq(lf_awscred_get(c, &v, &eb), LF_OK);
    ck_assert_str_eq(v.access_key_id, "AKIDENV");
    ck_assert_str_eq(v.session_token, "envtoken");
    lf_awscred_free(c);
}
END_TEST

START_TEST(test_half_given)
{
    struct lf_awscred *c;
    char msg[512];
    conf.aws_access_key_id = (char *)"AKIDCONF";
    ck_assert_int_eq(make(&c, msg, sizeof(msg)), LF_ECONFIG);
    ck_assert_str_eq(msg, "output signed: give access_key_id and secret_access_key together, "
                          "or neither");
    conf.aws_access_key_id = NULL;
    conf.aws_role_arn = (char *)"arn:aws:iam::1:role/r";
    ck_assert_int_eq(make(&c, msg, sizeof(msg)), LF_ECONFIG);
    ck_assert_ptr_nonnull(strstr(msg, "give role_arn and web_identity_token_file together"));
    conf.aws_role_arn = NULL;
    setenv("AWS_WEB_IDENTITY_TOKEN_FILE", "/var/run/token", 1);
    ck_assert_int_eq(make(&c, msg, sizeof(msg)), LF_ECONFIG);
    ck_assert_ptr_nonnull(strstr(msg, "AWS_ROLE_ARN is not set"));
    ck_assert_ptr_null(c);
}
END_TEST

START_TEST(test_nothing_gives_credentials)
{
    struct lf_awscred *c;
    char msg[512];
    conf.aws_imds = false;
    ck_assert_int_eq(make(&c, msg, sizeof(msg)), LF_ECONFIG);
    const char *ways[] = { "access_key_id and secret_access_key",
                           "AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY",
                           "role_arn and web_identity_token_file",
                           "AWS_ROLE_ARN and AWS_WEB_IDENTITY_TOKEN_FILE",
                           "imds: true",
                           "AWS_EC2_METADATA_DISABLED" };
    for (size_t i = 0; i < sizeof(ways) / sizeof(ways[0]); i++)
        ck_assert_msg(strstr(msg, ways[i]) != NULL, "%s lacks %s", msg, ways[i]);
    conf.aws_imds = true;
    setenv("AWS_EC2_METADATA_DISABLED", "TRUE", 1);
    ck_assert_int_eq(make(&c, msg, sizeof(msg)), LF_ECONFIG);
    ck_assert_ptr_nonnull(strstr(msg, "no AWS credentials: "));
}
END_TEST

/* A temporary source: new() returns at once; until a fetch succeeds, get() says why. The
 * endpoint is a closed port, so the thread's fetch fails fast. */
static void check_waits(const char *source, const char *secret)
{
    struct lf_awscred *c;
    char msg[512];
    int64_t t0 = lf_mono_ms();
    ck_assert_int_eq(make(&c, msg, sizeof(msg)), LF_OK);
    ck_assert_int_lt(lf_mono_ms() - t0, 1000); /* no network in new(): a loaded CI box too */
    ck_assert_str_eq(lf_awscred_source(c), source);
    struct lf_awscred_value v = { .gen = 0 };
    struct lf_errbuf eb = { "" };
    ck_assert_int_eq(lf_awscred_get(c, &v, &eb), LF_EAGAIN);
    ck_assert_ptr_nonnull(strstr(eb.msg, "output signed: no AWS credentials yet: "));
    for (int i = 0; i < 50 && strstr(eb.msg, "being fetched") != NULL; i++) {
        usleep(20000);
        ck_assert_int_eq(lf_awscred_get(c, &v, &eb), LF_EAGAIN);
    }
    ck_assert_msg(strstr(eb.msg, "being fetched") == NULL, "%s", eb.msg);
    ck_assert_msg(strstr(eb.msg, "127.0.0.1") != NULL || strstr(eb.msg, "onnect") != NULL, "%s",
                  eb.msg);
    if (secret != NULL)
        ck_assert_msg(strstr(eb.msg, secret) == NULL, "%s", eb.msg);
    ck_assert_uint_eq(v.gen, 0);
    lf_awscred_refresh(c);
    t0 = lf_mono_ms();
    lf_awscred_free(c);
    ck_assert_int_lt(lf_mono_ms() - t0, 1000);
}

START_TEST(test_web_identity_waits)
{
    char path[] = "/tmp/check_awscred_XXXXXX";
    int fd = mkstemp(path);
    ck_assert_int_ge(fd, 0);
    ck_assert_int_eq(write(fd, "eyJSECRETJWT\n", 13), 13);
    close(fd);
    conf.aws_role_arn = (char *)"arn:aws:iam::1:role/r";
    conf.aws_web_identity_token_file = path;
    conf.aws_sts_endpoint = (char *)"http://127.0.0.1:1/";
    check_waits("web identity", "eyJSECRETJWT");
    /* From the environment, as EKS sets it. */
    conf.aws_role_arn = NULL;
    conf.aws_web_identity_token_file = NULL;
    setenv("AWS_ROLE_ARN", "arn:aws:iam::1:role/r", 1);
    setenv("AWS_WEB_IDENTITY_TOKEN_FILE", path, 1);
    setenv("AWS_ENDPOINT_URL_STS", "http://127.0.0.1:1", 1);
    conf.aws_sts_endpoint = NULL;
    check_waits("web identity", "eyJSECRETJWT");
    unlink(path);
}
END_TEST

START_TEST(test_imds_waits)
{
    conf.aws_imds_endpoint = (char *)"http://127.0.0.1:1";
    check_waits("instance metadata", NULL);
    conf.aws_imds_endpoint = NULL;
    setenv("AWS_EC2_METADATA_SERVICE_ENDPOINT", "http://127.0.0.1:1/", 1);
    check_waits("instance metadata", NULL);
}
END_TEST

START_TEST(test_region)
{
    ck_assert_ptr_null(lf_awscred_region(&conf));
    setenv("AWS_DEFAULT_REGION", "us-west-2", 1);
    ck_assert_str_eq(lf_awscred_region(&conf), "us-west-2");
    setenv("AWS_REGION", "eu-central-1", 1);
    ck_assert_str_eq(lf_awscred_region(&conf), "eu-central-1");
    conf.aws_region = (char *)"ap-south-1";
    ck_assert_str_eq(lf_awscred_region(&conf), "ap-south-1");
}
END_TEST

#define T(s) lf_awscred__parse_time(s, strlen(s))

START_TEST(test_time)
{
    ck_assert_int_eq(T("1970-01-01T00:00:00Z"), 0);
    ck_assert_int_eq(T("2026-12-03T19:20:00Z"), INT64_C(1796325600000));
    ck_assert_int_eq(T("2026-12-03T19:20:00.250Z"), INT64_C(1796325600250));
    ck_assert_int_eq(T("2026-12-03T19:20:00+00:00"), INT64_C(1796325600000));
    ck_assert_int_eq(T("2024-02-29T00:00:00Z"), INT64_C(1709164800000));
    ck_assert_int_eq(T("2026-12-03T19:20:00Z\n"), INT64_C(1796325600000));
    ck_assert_int_eq(T("2026-12-03T19:20:00+02:00"), -1); /* not UTC: refused, not guessed */
    ck_assert_int_eq(T("2026-12-03 19:20"), -1);
    ck_assert_int_eq(T("2026-13-03T19:20:00Z"), -1);
    ck_assert_int_eq(T("1796325600"), -1);
    ck_assert_int_eq(T(""), -1);
}
END_TEST

#define STS_OK                                                                                  \
    "<AssumeRoleWithWebIdentityResponse xmlns=\"https://sts.amazonaws.com/doc/2011-06-15/\">\n" \
    "  <AssumeRoleWithWebIdentityResult>\n"                                                     \
    "    <SubjectFromWebIdentityToken>system:serviceaccount:logs:logferry"                      \
    "</SubjectFromWebIdentityToken>\n"                                                          \
    "    <Credentials>\n"                                                                       \
    "      <SessionToken>FwoGZXIvYXdzE+/token==</SessionToken>\n"                               \
    "      <SecretAccessKey>wJalr/K7&amp;MDENG</SecretAccessKey>\n"                             \
    "      <Expiration>2026-12-03T20:20:00Z</Expiration>\n"                                     \
    "      <AccessKeyId> ASIAEXAMPLE1 </AccessKeyId>\n"                                         \
    "    </Credentials>\n"                                                                      \
    "  </AssumeRoleWithWebIdentityResult>\n"                                                    \
    "</AssumeRoleWithWebIdentityResponse>\n"

START_TEST(test_sts_answer)
{
    struct lf_awscred_value v = { .gen = 7 };
    char why[256] = "";
    ck_assert_int_eq(lf_awscred__parse_sts(STS_OK, strlen(STS_OK), &v, why, sizeof(why)), LF_OK);
    ck_assert_str_eq(v.access_key_id, "ASIAEXAMPLE1");
    ck_assert_str_eq(v.secret_key, "wJalr/K7&MDENG");
    ck_assert_str_eq(v.session_token, "FwoGZXIvYXdzE+/token==");
    ck_assert_int_eq(v.expires_ms, T("2026-12-03T20:20:00Z"));
    ck_assert_uint_eq(v.gen, 7);

    static const char err[] =
        "<ErrorResponse xmlns=\"https://sts.amazonaws.com/doc/2011-06-15/\"><Error>"
        "<Type>Sender</Type><Code>InvalidIdentityToken</Code>"
        "<Message>Incorrect token audience</Message></Error>"
        "<RequestId>c6104cbe</RequestId></ErrorResponse>";
    ck_assert_int_eq(lf_awscred__parse_sts(err, strlen(err), &v, why, sizeof(why)), LF_EREJECTED);
    ck_assert_str_eq(why, "InvalidIdentityToken: Incorrect token audience");

    char cut[sizeof(STS_OK)];
    memcpy(cut, STS_OK, sizeof(cut));
    char *exp = strstr(cut, "<Expiration>");
    memcpy(exp, "<Expirat1on>", 12);
    ck_assert_int_eq(lf_awscred__parse_sts(cut, strlen(cut), &v, why, sizeof(why)), LF_EINVAL);
    ck_assert_str_eq(why, "the answer has no Expiration (or it is too long)");
    ck_assert_int_eq(lf_awscred__parse_sts("<html>proxy</html>", 18, &v, why, sizeof(why)),
                     LF_EINVAL);
    ck_assert_ptr_nonnull(strstr(why, "AccessKeyId"));
    /* A token longer than the value holds is refused, not cut. */
    size_t big = LF_AWSCRED_TOKEN_MAX + 200;
    char *xml = malloc(big + 200);
    int n = snprintf(xml, 200,
                     "<AccessKeyId>A</AccessKeyId><SecretAccessKey>S</SecretAccessKey>"
                     "<SessionToken>");
    memset(xml + n, 'T', LF_AWSCRED_TOKEN_MAX);
    snprintf(xml + n + LF_AWSCRED_TOKEN_MAX, 200,
             "</SessionToken><Expiration>2026-12-03T20:20:00Z</Expiration>");
    ck_assert_int_eq(lf_awscred__parse_sts(xml, strlen(xml), &v, why, sizeof(why)), LF_EINVAL);
    ck_assert_ptr_nonnull(strstr(why, "SessionToken"));
    free(xml);
}
END_TEST

START_TEST(test_imds_answer)
{
    static const char ok[] = "{\n  \"Code\" : \"Success\",\n  \"LastUpdated\" : "
                             "\"2026-12-03T18:00:00Z\",\n  \"Type\" : \"AWS-HMAC\",\n"
                             "  \"AccessKeyId\" : \"ASIAIMDS\",\n  \"SecretAccessKey\" : "
                             "\"imds/secret\",\n  \"Token\" : \"IQoJb3JpZ2luX2Vj\",\n"
                             "  \"Expiration\" : \"2026-12-04T00:33:07Z\"\n}";
    struct lf_awscred_value v = { .gen = 0 };
    char why[256] = "";
    ck_assert_int_eq(lf_awscred__parse_imds(ok, strlen(ok), &v, why, sizeof(why)), LF_OK);
    ck_assert_str_eq(v.access_key_id, "ASIAIMDS");
    ck_assert_str_eq(v.secret_key, "imds/secret");
    ck_assert_str_eq(v.session_token, "IQoJb3JpZ2luX2Vj");
    ck_assert_int_eq(v.expires_ms, T("2026-12-04T00:33:07Z"));
    static const char bad_code[] = "{\"Code\":\"AssumeRoleUnauthorizedAccess\"}";
    ck_assert_int_eq(lf_awscred__parse_imds(bad_code, strlen(bad_code), &v, why, sizeof(why)),
                     LF_EINVAL);
    ck_assert_str_eq(why, "the credentials' Code is AssumeRoleUnauthorizedAccess");
    static const char no_token[] = "{\"AccessKeyId\":\"A\",\"SecretAccessKey\":\"S\","
                                   "\"Expiration\":\"2026-12-04T00:33:07Z\"}";
    ck_assert_int_eq(lf_awscred__parse_imds(no_token, strlen(no_token), &v, why, sizeof(why)),
                     LF_EINVAL);
    static const char bad_time[] = "{\"AccessKeyId\":\"A\",\"SecretAccessKey\":\"S\","
                                   "\"Token\":\"T\",\"Expiration\":\"tomorrow\"}";
    ck_assert_int_eq(lf_awscred__parse_imds(bad_time, strlen(bad_time), &v, why, sizeof(why)),
                     LF_EINVAL);
    ck_assert_str_eq(why, "the credentials' Expiration is not an ISO 8601 time");
    ck_assert_int_eq(lf_awscred__parse_imds("not json", 8, &v, why, sizeof(why)), LF_EINVAL);
}
END_TEST

START_TEST(test_refresh_timing)
{
    const int64_t now = INT64_C(1796325600000), min = 60000;
    /* An hour's credentials (STS's default): 5 minutes before expiry. */
    ck_assert_int_eq(lf_awscred__refresh_in_ms(now, now + 60 * min), 55 * min);
    /* 6 hours (IMDS): also 5 minutes before. */
    ck_assert_int_eq(lf_awscred__refresh_in_ms(now, now + 360 * min), 355 * min);
    /* Shorter than 15 minutes: at two thirds of the life. */
    ck_assert_int_eq(lf_awscred__refresh_in_ms(now, now + 15 * min), 10 * min);
    ck_assert_int_eq(lf_awscred__refresh_in_ms(now, now + 20000), 13333);
    /* Almost expired, or expired: a second, not a busy loop. */
    ck_assert_int_eq(lf_awscred__refresh_in_ms(now, now + 900), 1000);
    ck_assert_int_eq(lf_awscred__refresh_in_ms(now, now - min), 1000);
}
END_TEST

START_TEST(test_backoff)
{
    ck_assert_int_eq(lf_awscred__backoff_ms(1, 0), 1000);
    ck_assert_int_eq(lf_awscred__backoff_ms(2, 0), 2000);
    ck_assert_int_eq(lf_awscred__backoff_ms(6, 0), 32000);
    ck_assert_int_eq(lf_awscred__backoff_ms(7, 0), 60000);
    ck_assert_int_eq(lf_awscred__backoff_ms(1000, 0), 60000);
    /* Jitter: up to a fifth less, never more. */
    int64_t lo = 60000, hi = 0;
    for (uint32_t r = 0; r < 100000; r += 7) {
        int64_t ms = lf_awscred__backoff_ms(9, r * 2654435761u);
        lo = ms < lo ? ms : lo;
        hi = ms > hi ? ms : hi;
    }
    ck_assert_int_ge(lo, 48000);
    ck_assert_int_lt(lo, 49000);
    ck_assert_int_eq(hi, 60000);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("awscred");
    TCase *tc = tcase_create("core");
    tcase_add_checked_fixture(tc, setup, NULL);
    tcase_set_timeout(tc, 30);
    tcase_add_test(tc, test_config_first);
    tcase_add_test(tc, test_environment_second);
    tcase_add_test(tc, test_half_given);
    tcase_add_test(tc, test_nothing_gives_credentials);
    tcase_add_test(tc, test_web_identity_waits);
    tcase_add_test(tc, test_imds_waits);
    tcase_add_test(tc, test_region);
    tcase_add_test(tc, test_time);
    tcase_add_test(tc, test_sts_answer);
    tcase_add_test(tc, test_imds_answer);
    tcase_add_test(tc, test_refresh_timing);
    tcase_add_test(tc, test_backoff);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
