/* check_sigv4.c - the SigV4 signer (src/output/sigv4.c) against cases of AWS's published
 * Signature Version 4 test suite: each case's canonical request, string to sign and
 * Authorization value, to the byte. Credentials, region, service and time are the suite's.
 * Also: the signing key cached across days, and the payload hash. */
#include "config.h"

#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "../../src/output/sigv4_int.h"

#define DATE   "20150830T123600Z"
#define SCOPE  "20150830/us-east-1/service/aws4_request"
#define CRED   "AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/" SCOPE ", "
#define STS(h) "AWS4-HMAC-SHA256\n" DATE "\n" SCOPE "\n" h
#define EMPTY  "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
#define HOST   "Host:example.amazonaws.com\n"
#define HOST_C "host:example.amazonaws.com\n"
#define DATE_C "x-amz-date:" DATE "\n"
#define TOKEN                                                                                   \
    "AQoDYXdzEPT//////////wEXAMPLEtc764bNrC9SAPBSM22wDOk4x4HIZ8j4FZTwdQWLWsKWHGBuFqwAeMicRXmxf" \
    "pSPfIeoIYRqTflfKD8YUuwthAx7mSEI/qkPpKPi/kMcGdQrmGdeehM4IC1NtBmUpp2wUE8phUZampKsburEDy0KPk" \
    "yQDYwT7WZ0wq5VSXDvp75YU9HFvlRd8Tx6q6fE8YQcHNVXAkiY9q6d+xo0rKwT38xVqr7ZD0u0iPPkUL64lIZbqBA" \
    "z+scqKmlzm8FDrypNC9Yjc8fPOLn9FX9KSYvKTr4rvx3iSIlTJabIQwj2ICCR/oLxBA=="

struct suite_case {
    const char *name;
    const char *method, *path, *query;
    const char *headers; /* "Name:value\n" each, as the .req file has them */
    const char *body;
    const char *token; /* NULL: none */
    const char *creq, *sts, *authz;
};

static const struct suite_case CASES[] = {
    { "get-vanilla", "GET", "/", "", HOST, "", NULL,
      "GET\n/\n\n" HOST_C DATE_C "\nhost;x-amz-date\n" EMPTY,
      STS("bb579772317eb040ac9ed261061d46c1f17a8133879d6129b6e1c25292927e63"),
      CRED "SignedHeaders=host;x-amz-date, "
           "Signature=5fa00fa31553b73ebf1942676e86291e8372ff2a2260956d9b8aae1d763fbf31" },
    { "post-vanilla", "POST", "/", "", HOST, "", NULL,
      "POST\n/\n\n" HOST_C DATE_C "\nhost;x-amz-date\n" EMPTY,
      STS("553f88c9e4d10fc9e109e2aeb65f030801b70c2f6468faca261d401ae622fc87"),
      CRED "SignedHeaders=host;x-amz-date, "
           "Signature=5da7c1a2acd57cee7505fc6676e4e544621c30862966e37dddb68e92efbe5d6b" },
    { "get-vanilla-query-order-key-case", "GET", "/", "Param2=value2&Param1=value1", HOST, "", NULL,
      "GET\n/\nParam1=value1&Param2=value2\n" HOST_C DATE_C "\nhost;x-amz-date\n" EMPTY,
      STS("816cd5b414d056048ba4f7c5386d6e0533120fb1fcfa93762cf0fc39e2cf19e0"),
      CRED "SignedHeaders=host;x-amz-date, "
           "Signature=b97d918cfa904a5beff61c982a1b6f458b799221646efd99d3219ec94cdf2500" },
    { "get-vanilla-query-order-key", "GET", "/", "Param1=value2&Param1=Value1", HOST, "", NULL,
      "GET\n/\nParam1=Value1&Param1=value2\n" HOST_C DATE_C "\nhost;x-amz-date\n" EMPTY,
      STS("704b4cef673542d84cdff252633f065e8daeba5f168b77116f8b1bcaf3d38f89"),
      CRED "SignedHeaders=host;x-amz-date, "
           "Signature=eedbc4e291e521cf13422ffca22be7d2eb8146eecf653089df300a15b2382bd1" },
    { "get-vanilla-query-order-value", "GET", "/", "Param1=value2&Param1=value1", HOST, "", NULL,
      "GET\n/\nParam1=value1&Param1=value2\n" HOST_C DATE_C "\nhost;x-amz-date\n" EMPTY,
      STS("c968629d70850097a2d8781c9bf7edcb988b04cac14cca9be4acc3595f884606"),
      CRED "SignedHeaders=host;x-amz-date, "
           "Signature=5772eed61e12b33fae39ee5e7012498b51d56abc0abb7c60486157bd471c4694" },
    { "get-vanilla-utf8-query", "GET", "/", "\xe1\x88\xb4=bar", HOST, "", NULL,
      "GET\n/\n%E1%88%B4=bar\n" HOST_C DATE_C "\nhost;x-amz-date\n" EMPTY,
      STS("eb30c5bed55734080471a834cc727ae56beb50e5f39d1bff6d0d38cb192a7073"),
      CRED "SignedHeaders=host;x-amz-date, "
           "Signature=2cdec8eed098649ff3a119c94853b13c643bcf08f8b0a1d91e12c9027818dd04" },
    { "get-unreserved", "GET",
      "/-._~0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz", "", HOST, "", NULL,
      "GET\n/-._~0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz\n\n" HOST_C DATE_C
      "\nhost;x-amz-date\n" EMPTY,
      STS("6a968768eefaa713e2a6b16b589a8ea192661f098f37349f4e2c0082757446f9"),
      CRED "SignedHeaders=host;x-amz-date, "
           "Signature=07ef7494c76fa4850883e2b006601f940f8a34d404d0cfa977f52a65bbf5f24f" },
    { "get-header-value-trim", "GET", "/", "",
      HOST "My-Header1: value1\nMy-Header2: \"a   b   c\"\n", "", NULL,
      "GET\n/\n\n" HOST_C "my-header1:value1\nmy-header2:\"a b c\"\n" DATE_C
      "\nhost;my-header1;my-header2;x-amz-date\n" EMPTY,
      STS("a726db9b0df21c14f559d0a978e563112acb1b9e05476f0a6a1c7d68f28605c7"),
      CRED "SignedHeaders=host;my-header1;my-header2;x-amz-date, "
           "Signature=acc3ed3afb60bb290fc8d2dd0098b9911fcaa05412b367055dee359757a9c736" },
    { "get-header-key-duplicate", "GET", "/", "",
      HOST "My-Header1:value2\nMy-Header1:value2\nMy-Header1:value1\n", "", NULL,
      "GET\n/\n\n" HOST_C "my-header1:value2,value2,value1\n" DATE_C
      "\nhost;my-header1;x-amz-date\n" EMPTY,
      STS("dc7f04a3abfde8d472b0ab1a418b741b7c67174dad1551b4117b15527fbe966c"),
      CRED "SignedHeaders=host;my-header1;x-amz-date, "
           "Signature=c9d5ea9f3f72853aea855b47ea873832890dbdd183b4468f858259531a5138ea" },
    { "get-header-value-order", "GET", "/", "",
      HOST "My-Header1:value4\nMy-Header1:value1\nMy-Header1:value3\nMy-Header1:value2\n", "", NULL,
      "GET\n/\n\n" HOST_C "my-header1:value4,value1,value3,value2\n" DATE_C
      "\nhost;my-header1;x-amz-date\n" EMPTY,
      STS("31ce73cd3f3d9f66977ad3dd957dc47af14df92fcd8509f59b349e9137c58b86"),
      CRED "SignedHeaders=host;my-header1;x-amz-date, "
           "Signature=08c7e5a9acfcfeb3ab6b2185e75ce8b1deb5e634ec47601a50643f830c755c01" },
    { "post-header-value-case", "POST", "/", "", HOST "My-Header1:VALUE1\n", "", NULL,
      "POST\n/\n\n" HOST_C "my-header1:VALUE1\n" DATE_C "\nhost;my-header1;x-amz-date\n" EMPTY,
      STS("d51ced243e649e3de6ef63afbbdcbca03131a21a7103a1583706a64618606a93"),
      CRED "SignedHeaders=host;my-header1;x-amz-date, "
           "Signature=cdbc9802e29d2942e5e10b5bccfdd67c5f22c7c4e8ae67b53629efa58b974b7d" },
    /* The suite's .creq of this case lists content-length, which its .authz does not sign;
     * its .sts and .authz agree with the request signed without it, as here. */
    { "post-x-www-form-urlencoded", "POST", "/", "",
      "Content-Type:application/x-www-form-urlencoded\n" HOST, "Param1=value1", NULL,
      "POST\n/\n\ncontent-type:application/x-www-form-urlencoded\n" HOST_C DATE_C
      "\ncontent-type;host;x-amz-date\n"
      "9095672bbd1f56dfc5b65f3e153adc8731a4a654192329106275f4c7b24d0b6e",
      STS("42a5e5bb34198acb3e84da4f085bb7927f2bc277ca766e6d19c73c2154021281"),
      CRED "SignedHeaders=content-type;host;x-amz-date, "
           "Signature=ff11897932ad3f4e8b18135d722051e5ac45fc38421b1da7b9d196a0fe09473a" },
    { "post-x-www-form-urlencoded-parameters", "POST", "/", "",
      "Content-Type:application/x-www-form-urlencoded; charset=utf8\n" HOST, "Param1=value1", NULL,
      "POST\n/\n\ncontent-type:application/x-www-form-urlencoded; charset=utf8\n" HOST_C DATE_C
      "\ncontent-type;host;x-amz-date\n"
      "9095672bbd1f56dfc5b65f3e153adc8731a4a654192329106275f4c7b24d0b6e",
      STS("2e1cf7ed91881a30569e46552437e4156c823447bf1781b921b5d486c568dd1c"),
      CRED "SignedHeaders=content-type;host;x-amz-date, "
           "Signature=1a72ec8f64bd914b0e42e42607c7fbce7fb2c7465f63e3092b3b0d39fa77a6fe" },
    { "post-sts-header-before", "POST", "/", "", HOST, "", TOKEN,
      "POST\n/\n\n" HOST_C DATE_C "x-amz-security-token:" TOKEN
      "\n\nhost;x-amz-date;x-amz-security-token\n" EMPTY,
      NULL,
      CRED "SignedHeaders=host;x-amz-date;x-amz-security-token, "
           "Signature=85d96828115b5dc0cfc3bd16ad9e210dd772bbebba041836c64533a82be05ead" },
};

static struct lf_sigv4 *signer(const char *token)
{
    struct lf_sigv4_conf conf = { .region = "us-east-1",
                                  .service = "service",
                                  .access_key_id = "AKIDEXAMPLE",
                                  .secret_key = "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY",
                                  .session_token = token };
    struct lf_errbuf eb = { "" };
    struct lf_sigv4 *s = lf_sigv4_new(&conf, "test", &eb);
    ck_assert_msg(s != NULL, "%s", eb.msg);
    return s;
}

/* Splits "Name:value\n..." at each line's first ':' (the value untouched). */
static size_t split_headers(const char *text, struct lf_sigv4_header *h, size_t max)
{
    size_t n = 0;
    for (const char *p = text; *p != '\0' && n < max; n++) {
        const char *colon = strchr(p, ':'), *nl = strchr(p, '\n');
        h[n] =
            (struct lf_sigv4_header){ p, (size_t)(colon - p), colon + 1, (size_t)(nl - colon - 1) };
        p = nl + 1;
    }
    return n;
}

static void sign_case(struct lf_sigv4 *s, const struct suite_case *c, char *authz, size_t size)
{
    struct lf_sigv4_header h[8];
    char hash[LF_SIGV4_HEX_LEN + 1];
    lf_sigv4_sha256_hex(c->body, strlen(c->body), hash);
    struct lf_sigv4_req req = { .method = c->method,
                                .path = c->path,
                                .path_len = strlen(c->path),
                                .query = c->query,
                                .query_len = strlen(c->query),
                                .headers = h,
                                .n_headers = split_headers(c->headers, h, 8),
                                .payload_sha256 = hash,
                                .amz_date = DATE };
    ck_assert_int_eq(lf_sigv4_sign(s, &req, authz, size), LF_OK);
}

START_TEST(test_suite_case)
{
    const struct suite_case *c = &CASES[_i];
    struct lf_sigv4 *s = signer(c->token);
    char authz[512];
    sign_case(s, c, authz, sizeof(authz));
    ck_assert_msg(strcmp(lf_sigv4_canonical_request(s), c->creq) == 0, "%s: creq\n%s", c->name,
                  lf_sigv4_canonical_request(s));
    if (c->sts != NULL)
        ck_assert_msg(strcmp(lf_sigv4_string_to_sign(s), c->sts) == 0, "%s: sts\n%s", c->name,
                      lf_sigv4_string_to_sign(s));
    else
        ck_assert_msg(strncmp(lf_sigv4_string_to_sign(s), STS(""), strlen(STS(""))) == 0,
                      "%s: sts\n%s", c->name, lf_sigv4_string_to_sign(s));
    ck_assert_msg(strcmp(authz, c->authz) == 0, "%s: authz\n%s", c->name, authz);
    /* Signed again with the cached key and grown buffers: the same value. */
    char again[512];
    sign_case(s, c, again, sizeof(again));
    ck_assert_str_eq(again, authz);
    lf_sigv4_free(s);
}
END_TEST

/* A new day derives a new key; the day before signs as before when it comes back. */
START_TEST(test_key_follows_the_day)
{
    struct lf_sigv4 *s = signer(NULL);
    struct lf_sigv4_header h[1] = { { "Host", 4, "example.amazonaws.com", 21 } };
    struct lf_sigv4_req req = { .method = "GET",
                                .path = "/",
                                .path_len = 1,
                                .query = "",
                                .headers = h,
                                .n_headers = 1,
                                .payload_sha256 = EMPTY,
                                .amz_date = "20150831T123600Z" };
    char a[512], b[512];
    ck_assert_int_eq(lf_sigv4_sign(s, &req, a, sizeof(a)), LF_OK);
    ck_assert_ptr_nonnull(
        strstr(a, "Credential=AKIDEXAMPLE/20150831/us-east-1/service/aws4_request"));
    req.amz_date = DATE;
    ck_assert_int_eq(lf_sigv4_sign(s, &req, b, sizeof(b)), LF_OK);
    ck_assert_str_eq(b, CASES[0].authz);
    ck_assert_str_ne(a, b);
    /* Too small a buffer and a malformed date are refused. */
    ck_assert_int_eq(lf_sigv4_sign(s, &req, a, 40), LF_ETOOBIG);
    req.amz_date = "2015-08-30T12:36";
    ck_assert_int_eq(lf_sigv4_sign(s, &req, a, sizeof(a)), LF_EINVAL);
    lf_sigv4_free(s);
}
END_TEST

/* Credentials replaced: the next signature is the new secret's (the day's key derived
 * again), with the new token; a signer made without credentials signs nothing until set. */
START_TEST(test_credentials_change)
{
    const struct suite_case *plain = &CASES[0],
                            *with_token = &CASES[sizeof(CASES) / sizeof(CASES[0]) - 1];
    struct lf_sigv4 *s = signer(NULL);
    char a[512], b[512];
    ck_assert_int_eq(lf_sigv4_set_credentials(s, "AKIDOTHER", "another secret", NULL), LF_OK);
    sign_case(s, plain, a, sizeof(a));
    ck_assert_ptr_nonnull(strstr(a, "Credential=AKIDOTHER/"));
    ck_assert_str_ne(strstr(a, "Signature="), strstr(plain->authz, "Signature="));
    ck_assert_int_eq(lf_sigv4_set_credentials(s, "AKIDEXAMPLE",
                                              "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY",
                                              with_token->token),
                     LF_OK);
    sign_case(s, with_token, b, sizeof(b));
    ck_assert_str_eq(b, with_token->authz);
    ck_assert_int_eq(lf_sigv4_set_credentials(s, "", "x", NULL), LF_EINVAL);
    struct lf_sigv4_header h[1] = { { "Host", 4, "example.amazonaws.com", 21 } };
    struct lf_sigv4_req req = { .method = "GET",
                                .path = "/",
                                .path_len = 1,
                                .query = "",
                                .headers = h,
                                .n_headers = 1,
                                .payload_sha256 = EMPTY,
                                .amz_date = DATE };
    ck_assert_int_eq(lf_sigv4_sign(s, &req, a, sizeof(a)), LF_EINVAL);
    lf_sigv4_free(s);

    struct lf_sigv4_conf conf = { .region = "us-east-1", .service = "service" };
    struct lf_errbuf eb = { "" };
    s = lf_sigv4_new(&conf, "test", &eb);
    ck_assert_msg(s != NULL, "%s", eb.msg);
    ck_assert_int_eq(lf_sigv4_sign(s, &req, a, sizeof(a)), LF_EINVAL);
    ck_assert_int_eq(
        lf_sigv4_set_credentials(s, "AKIDEXAMPLE", "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY", ""),
        LF_OK);
    sign_case(s, plain, a, sizeof(a));
    ck_assert_str_eq(a, plain->authz);
    lf_sigv4_free(s);
}
END_TEST

START_TEST(test_payload_hash)
{
    lf_sigv4_free(signer(NULL)); /* loads libcrypto */
    char hex[LF_SIGV4_HEX_LEN + 1];
    lf_sigv4_sha256_hex("", 0, hex);
    ck_assert_str_eq(hex, EMPTY);
    lf_sigv4_sha256_hex("Param1=value1", 13, hex);
    ck_assert_str_eq(hex, "9095672bbd1f56dfc5b65f3e153adc8731a4a654192329106275f4c7b24d0b6e");
}
END_TEST

int main(void)
{
    Suite *s = suite_create("sigv4");
    TCase *tc = tcase_create("core");
    tcase_add_loop_test(tc, test_suite_case, 0, (int)(sizeof(CASES) / sizeof(CASES[0])));
    tcase_add_test(tc, test_key_follows_the_day);
    tcase_add_test(tc, test_credentials_change);
    tcase_add_test(tc, test_payload_hash);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
