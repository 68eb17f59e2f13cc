/* sigv4_bench.c - cost of signing one request with AWS Signature Version 4 (src/output/
 * sigv4.c), beside signing it from scratch.
 *
 * The request is a bulk POST to an OpenSearch domain as an output would send it: a path, a
 * query of two parameters, host, content-type and content-length headers, a session token
 * of 600 bytes (IRSA's are that long), the body's hash computed once beforehand. Rows:
 * - kept signer: one signer for all requests (the day's key derived once, its HMAC states
 *   kept, buffers reused), as an output uses it; again without the session token;
 * - new signer each time: made, used once and freed per request (the key derived and the
 *   buffers allocated every time);
 * - key by HMAC(): the kept signer's canonical request and string to sign, then the key and
 *   the signature by five calls of libcrypto's one-shot HMAC(), a new HMAC object each.
 * Prints mean ns per signature (median of 5 runs), the 99th percentile of single
 * signatures, and allocations per signature counted by t/bench/alloc_count.c over all runs,
 * warm-up included ("n/a" under AddressSanitizer). Single thread. */
#include "config.h"

#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../../src/output/sigv4_int.h"
#include "alloc_count.h"

#define N    20000
#define RUNS 5

static const struct lf_sigv4_header HEADERS[] = {
    { "Host", 4, "search-logs-abc123.eu-west-1.es.amazonaws.com", 45 },
    { "Content-Type", 12, "application/x-ndjson", 20 },
    { "Content-Length", 14, "1048576", 7 },
};

static char token[601];
static char hash[LF_SIGV4_HEX_LEN + 1];
static int64_t lat[N];

static struct lf_sigv4_conf conf = { .region = "eu-west-1",
                                     .service = "es",
                                     .access_key_id = "ASIAEXAMPLEEXAMPLE12",
                                     .secret_key = "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY",
                                     .session_token = token };

static const struct lf_sigv4_req REQ = { .method = "POST",
                                         .path = "/_bulk",
                                         .path_len = 6,
                                         .query = "refresh=false&timeout=30s",
                                         .query_len = 25,
                                         .headers = HEADERS,
                                         .n_headers = 3,
                                         .payload_sha256 = hash,
                                         .amz_date = "20261203T170000Z" };

static int64_t mono_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static void die(const char *what)
{
    fprintf(stderr, "sigv4_bench: %s\n", what);
    exit(1);
}

static void sign_kept(struct lf_sigv4 *s, char *out, size_t size)
{
    if (lf_sigv4_sign(s, &REQ, out, size) != LF_OK)
        die("sign");
}

static void sign_new(struct lf_sigv4 *unused, char *out, size_t size)
{
    (void)unused;
    struct lf_errbuf eb;
    struct lf_sigv4 *s = lf_sigv4_new(&conf, "bench", &eb);
    if (s == NULL)
        die(eb.msg);
    sign_kept(s, out, size);
    lf_sigv4_free(s);
}

static void sign_hmac_calls(struct lf_sigv4 *s, char *out, size_t size)
{
    sign_kept(s, out, size);
    unsigned char k[EVP_MAX_MD_SIZE];
    unsigned int n = 0;
    char secret[64] = "AWS4";
    strcat(secret, conf.secret_key);
    const char *sts = lf_sigv4_string_to_sign(s);
    HMAC(EVP_sha256(), secret, (int)strlen(secret), (const unsigned char *)"20261203", 8, k, &n);
    HMAC(EVP_sha256(), k, 32, (const unsigned char *)conf.region, strlen(conf.region), k, &n);
    HMAC(EVP_sha256(), k, 32, (const unsigned char *)conf.service, strlen(conf.service), k, &n);
    HMAC(EVP_sha256(), k, 32, (const unsigned char *)"aws4_request", 12, k, &n);
    HMAC(EVP_sha256(), k, 32, (const unsigned char *)sts, strlen(sts), k, &n);
    if (n != 32)
        die("HMAC");
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static int cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

static void
row(const char *name, void (*sign)(struct lf_sigv4 *, char *, size_t), struct lf_sigv4 *s)
{
    char out[1024];
    double mean[RUNS];
    int64_t p99[RUNS];
    sign(s, out, sizeof(out)); /* warm-up: counted below as well */
    uint64_t calls0 = lf_alloc_count_now().calls;
    for (int r = 0; r < RUNS; r++) {
        int64_t t0 = mono_ns();
        for (size_t i = 0; i < N; i++) {
            int64_t a = mono_ns();
            sign(s, out, sizeof(out));
            lat[i] = mono_ns() - a;
        }
        mean[r] = (double)(mono_ns() - t0) / N;
        qsort(lat, N, sizeof(lat[0]), cmp_i64);
        p99[r] = lat[N * 99 / 100];
    }
    uint64_t calls = lf_alloc_count_now().calls - calls0;
    qsort(mean, RUNS, sizeof(mean[0]), cmp_double);
    qsort(p99, RUNS, sizeof(p99[0]), cmp_i64);
    char allocs[32] = "n/a";
    if (lf_alloc_count_enabled())
        snprintf(allocs, sizeof(allocs), "%.2f", (double)calls / ((double)N * RUNS));
    printf("| %-26s | %8.0f | %8lld | %-10s |\n", name, mean[RUNS / 2], (long long)p99[RUNS / 2],
           allocs);
}

int main(void)
{
    memset(token, 'T', sizeof(token) - 1);
    struct lf_errbuf eb;
    struct lf_sigv4 *s = lf_sigv4_new(&conf, "bench", &eb);
    if (s == NULL)
        die(eb.msg);
    char body[4096];
    memset(body, 'x', sizeof(body));
    lf_sigv4_sha256_hex(body, sizeof(body), hash);
    printf("one bulk POST signed (3 headers, 2 query parameters, a 600-byte session token), "
           "%d signatures a run, median of %d runs\n\n",
           N, RUNS);
    printf("| %-26s | %8s | %8s | %-10s |\n", "case", "ns/sig", "p99 ns", "allocs/sig");
    printf("|%s|---------:|---------:|------------|\n", "----------------------------");
    row("kept signer", sign_kept, s);
    conf.session_token = NULL;
    struct lf_sigv4 *plain = lf_sigv4_new(&conf, "bench", &eb);
    if (plain == NULL)
        die(eb.msg);
    row("kept signer, no token", sign_kept, plain);
    lf_sigv4_free(plain);
    conf.session_token = token;
    row("new signer each time", sign_new, s);
    row("key by HMAC() each time", sign_hmac_calls, s);
    lf_sigv4_free(s);
    return 0;
}
