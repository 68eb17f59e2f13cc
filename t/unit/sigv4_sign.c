/* sigv4_sign.c - signs requests read from stdin with the SigV4 signer (src/output/sigv4.c)
 * and prints each one's Authorization value: the C side of t/integration/sigv4_botocore.py.
 *
 * One request a line, tab-separated fields, each in hex (any byte may occur): service,
 * "1" for S3 (path as given, x-amz-content-sha256 signed) else "0", session token (empty:
 * none), x-amz-date, method, path, query, body, then header name and value pairs. The
 * payload hash is computed here, as a caller of the signer would. Exits 1 on any error. */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../src/output/sigv4_int.h"

#define MAX_FIELDS   64
#define LINE_MAX_LEN (1 << 20)

static int nibble(char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    return -1;
}

/* Decodes the hex field at p (up to a tab, newline or NUL) in place; its length in *len. */
static char *unhex(char *p, size_t *len, char **next)
{
    char *w = p, *r = p;
    while (nibble(r[0]) >= 0 && nibble(r[1]) >= 0) {
        *w++ = (char)(nibble(r[0]) * 16 + nibble(r[1]));
        r += 2;
    }
    *next = *r == '\t' ? r + 1 : NULL;
    *w = '\0';
    *len = (size_t)(w - p);
    return p;
}

static int sign_line(char *line)
{
    char *f[MAX_FIELDS];
    size_t len[MAX_FIELDS], n = 0;
    for (char *p = line; p != NULL && n < MAX_FIELDS; n++)
        f[n] = unhex(p, &len[n], &p);
    if (n < 8 || (n - 8) % 2 != 0)
        return -1;
    struct lf_sigv4_conf conf = { .region = "us-east-1",
                                  .service = f[0],
                                  .access_key_id = "AKIDEXAMPLE",
                                  .secret_key = "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY",
                                  .session_token = f[2],
                                  .s3_paths = f[1][0] == '1',
                                  .sign_content_sha256 = f[1][0] == '1' };
    struct lf_errbuf eb = { "" };
    struct lf_sigv4 *s = lf_sigv4_new(&conf, "sigv4_sign", &eb);
    if (s == NULL) {
        fprintf(stderr, "%s\n", eb.msg);
        return -1;
    }
    struct lf_sigv4_header h[MAX_FIELDS / 2];
    size_t nh = 0;
    for (size_t i = 8; i + 1 < n; i += 2)
        h[nh++] = (struct lf_sigv4_header){ f[i], len[i], f[i + 1], len[i + 1] };
    char hash[LF_SIGV4_HEX_LEN + 1], authz[1024];
    lf_sigv4_sha256_hex(f[7], len[7], hash);
    struct lf_sigv4_req req = { .method = f[4],
                                .path = f[5],
                                .path_len = len[5],
                                .query = f[6],
                                .query_len = len[6],
                                .headers = h,
                                .n_headers = nh,
                                .payload_sha256 = hash,
                                .amz_date = f[3] };
    enum lf_err err = lf_sigv4_sign(s, &req, authz, sizeof(authz));
    if (err == LF_OK)
        printf("%s\n", authz);
    lf_sigv4_free(s);
    return err == LF_OK ? 0 : -1;
}

int main(void)
{
    static char line[LINE_MAX_LEN];
    while (fgets(line, sizeof(line), stdin) != NULL) {
        if (sign_line(line) != 0) {
            fprintf(stderr, "sigv4_sign: cannot sign: %.80s\n", line);
            return 1;
        }
    }
    return 0;
}
