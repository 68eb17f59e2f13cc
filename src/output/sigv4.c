/* sigv4.c - AWS Signature Version 4: canonical request, string to sign, signature (see
 * sigv4_int.h).
 *
 * The signer owns copies of its credentials and three buffers: the canonical request, the
 * string to sign and a scratch area for the request's query parameters and headers in
 * their canonical forms, plus two arrays to sort them. Each buffer is grown once per
 * request to a bound computed from the request's sizes, so the writers below write through
 * a pointer without checking room, and nothing moves while pointers into it are held.
 * Used by one thread at a time. */
#include "config.h"

#include "sigv4_int.h"

#include <stdlib.h>
#include <string.h>

#include "logferry/buf.h"
#include "netlib_int.h"

#define BUF_MAX  ((size_t)64 << 20) /* no request to sign is larger */
#define SHA_LEN  32
#define SHA_BLK  64
#define ALGO     "AWS4-HMAC-SHA256"
#define TERMINAL "aws4_request"

struct item { /* a query parameter or a header, in canonical form, in scratch */
    const char *name;
    size_t name_len;
    const char *value;
    size_t value_len;
};

struct lf_sigv4 {
    char *region, *service, *akid, *token; /* owned */
    size_t token_len;
    char *secret; /* owned: "AWS4" and the secret key */
    size_t secret_len;
    bool s3_paths, sign_content_sha256;
    char day[9];             /* the day whose key is cached; "" before the first */
    SHA256_CTX inner, outer; /* HMAC with the signing key: after the padded key block */
    struct lf_buf cr, sts, scratch;
    struct item *params, *headers;
    size_t params_cap, headers_cap;
};

static const char HEX_LOWER[] = "0123456789abcdef";
static const char HEX_UPPER[] = "0123456789ABCDEF";

void lf_sigv4_sha256_hex(const void *p, size_t len, char *hex)
{
    unsigned char md[SHA_LEN];
    SHA256_CTX c;
    SHA256_Init(&c);
    SHA256_Update(&c, p, len);
    SHA256_Final(md, &c);
    for (size_t i = 0; i < SHA_LEN; i++) {
        hex[2 * i] = HEX_LOWER[md[i] >> 4];
        hex[2 * i + 1] = HEX_LOWER[md[i] & 15];
    }
    hex[LF_SIGV4_HEX_LEN] = '\0';
}

/* inner and outer: SHA-256 after the key's ipad and opad blocks (RFC 2104). */
void lf_sigv4_hmac_key(SHA256_CTX *inner, SHA256_CTX *outer, const void *key, size_t key_len)
{
    unsigned char k[SHA_BLK] = { 0 }, pad[SHA_BLK];
    if (key_len > SHA_BLK) {
        SHA256_CTX c;
        SHA256_Init(&c);
        SHA256_Update(&c, key, key_len);
        SHA256_Final(k, &c);
    } else {
        memcpy(k, key, key_len);
    }
    for (size_t i = 0; i < SHA_BLK; i++)
        pad[i] = k[i] ^ 0x36;
    SHA256_Init(inner);
    SHA256_Update(inner, pad, SHA_BLK);
    for (size_t i = 0; i < SHA_BLK; i++)
        pad[i] = k[i] ^ 0x5c;
    SHA256_Init(outer);
    SHA256_Update(outer, pad, SHA_BLK);
    explicit_bzero(k, sizeof(k));
    explicit_bzero(pad, sizeof(pad));
}

/* The two hash passes of an HMAC from kept states. */
void lf_sigv4_hmac_from(const SHA256_CTX *inner,
                        const SHA256_CTX *outer,
                        const void *msg,
                        size_t len,
                        unsigned char *mac)
{
    unsigned char ih[SHA_LEN];
    SHA256_CTX c = *inner;
    SHA256_Update(&c, msg, len);
    SHA256_Final(ih, &c);
    c = *outer;
    SHA256_Update(&c, ih, SHA_LEN);
    SHA256_Final(mac, &c);
}

static void hmac(const void *key, size_t key_len, const char *msg, unsigned char *mac)
{
    SHA256_CTX inner, outer;
    lf_sigv4_hmac_key(&inner, &outer, key, key_len);
    lf_sigv4_hmac_from(&inner, &outer, msg, strlen(msg), mac);
}

/* kDate, kRegion, kService, kSigning for day; keeps the HMAC states of kSigning. */
static void derive_key(struct lf_sigv4 *s, const char *day)
{
    unsigned char k[SHA_LEN];
    memcpy(s->day, day, 8);
    s->day[8] = '\0';
    hmac(s->secret, s->secret_len, s->day, k);
    hmac(k, SHA_LEN, s->region, k);
    hmac(k, SHA_LEN, s->service, k);
    hmac(k, SHA_LEN, TERMINAL, k);
    lf_sigv4_hmac_key(&s->inner, &s->outer, k, SHA_LEN);
    explicit_bzero(k, sizeof(k));
}

static char *put_folded(char *w, const char *v, size_t len);

static char *dup_or_null(const char *p, bool *ok)
{
    if (p == NULL || *p == '\0')
        return NULL;
    char *d = strdup(p);
    if (d == NULL)
        *ok = false;
    return d;
}

/* Wipes and frees the credentials' copies. */
static void drop_credentials(struct lf_sigv4 *s)
{
    if (s->secret != NULL)
        explicit_bzero(s->secret, s->secret_len);
    if (s->token != NULL)
        explicit_bzero(s->token, s->token_len);
    explicit_bzero(&s->inner, sizeof(s->inner));
    explicit_bzero(&s->outer, sizeof(s->outer));
    free(s->secret);
    free(s->token);
    free(s->akid);
    s->secret = s->token = s->akid = NULL;
    s->secret_len = s->token_len = 0;
    s->day[0] = '\0'; /* the day's key was the old secret's */
}

enum lf_err lf_sigv4_set_credentials(struct lf_sigv4 *s,
                                     const char *access_key_id,
                                     const char *secret_key,
                                     const char *session_token)
{
    drop_credentials(s);
    if (access_key_id == NULL || *access_key_id == '\0' || secret_key == NULL ||
        *secret_key == '\0')
        return LF_EINVAL;
    bool ok = true;
    s->akid = dup_or_null(access_key_id, &ok);
    s->token = dup_or_null(session_token, &ok);
    if (s->token != NULL) /* folded once here, as every request would fold it */
        s->token_len = (size_t)(put_folded(s->token, s->token, strlen(s->token)) - s->token);
    s->secret_len = 4 + strlen(secret_key);
    s->secret = ok ? malloc(s->secret_len + 1) : NULL;
    if (s->secret == NULL) {
        drop_credentials(s);
        return LF_ENOMEM;
    }
    memcpy(s->secret, "AWS4", 4);
    memcpy(s->secret + 4, secret_key, s->secret_len - 4 + 1);
    return LF_OK;
}

struct lf_sigv4 *
lf_sigv4_new(const struct lf_sigv4_conf *conf, const char *who, struct lf_errbuf *eb)
{
    if (lf_netlib_load(LF_NETLIB_SSL, who, eb) != LF_OK)
        return NULL;
    bool no_key = conf->access_key_id == NULL || *conf->access_key_id == '\0';
    if (conf->region == NULL || *conf->region == '\0' || conf->service == NULL ||
        *conf->service == '\0' ||
        (!no_key && (conf->secret_key == NULL || *conf->secret_key == '\0'))) {
        lf_fail(eb, LF_EINVAL, "%s: aws signing needs a region, a service and credentials", who);
        return NULL;
    }
    struct lf_sigv4 *s = calloc(1, sizeof(*s));
    if (s == NULL) {
        lf_fail(eb, LF_ENOMEM, "%s: out of memory", who);
        return NULL;
    }
    bool ok = true;
    s->region = dup_or_null(conf->region, &ok);
    s->service = dup_or_null(conf->service, &ok);
    if (!ok || (!no_key && lf_sigv4_set_credentials(s, conf->access_key_id, conf->secret_key,
                                                    conf->session_token) != LF_OK)) {
        lf_sigv4_free(s);
        lf_fail(eb, LF_ENOMEM, "%s: out of memory", who);
        return NULL;
    }
    s->s3_paths = conf->s3_paths;
    s->sign_content_sha256 = conf->sign_content_sha256;
    lf_buf_init(&s->cr, BUF_MAX);
    lf_buf_init(&s->sts, BUF_MAX);
    lf_buf_init(&s->scratch, BUF_MAX);
    return s;
}

void lf_sigv4_free(struct lf_sigv4 *s)
{
    if (s == NULL)
        return;
    drop_credentials(s);
    free(s->service);
    free(s->region);
    lf_buf_release(&s->cr);
    lf_buf_release(&s->sts);
    lf_buf_release(&s->scratch);
    free(s->params);
    free(s->headers);
    free(s);
}

const char *lf_sigv4_canonical_request(const struct lf_sigv4 *s)
{
    return s->cr.ptr != NULL ? s->cr.ptr : "";
}

const char *lf_sigv4_string_to_sign(const struct lf_sigv4 *s)
{
    return s->sts.ptr != NULL ? s->sts.ptr : "";
}

/* --- writers: w has room (the bounds in lf_sigv4_sign) --- */

static bool unreserved(unsigned char c)
{
    return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' ||
           c == '_' || c == '.' || c == '~';
}

/* SigV4's URI encoding of n bytes; '/' kept when keep_slash. */
static char *put_enc(char *w, const char *p, size_t n, bool keep_slash)
{
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)p[i];
        if (unreserved(c) || (keep_slash && c == '/')) {
            *w++ = (char)c;
        } else {
            *w++ = '%';
            *w++ = HEX_UPPER[c >> 4];
            *w++ = HEX_UPPER[c & 15];
        }
    }
    return w;
}

static char *put(char *w, const char *p, size_t n)
{
    memcpy(w, p, n);
    return w + n;
}

static int hexval(char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}

/* n bytes of a query part, percent-escapes decoded, then encoded as SigV4 wants: one form
 * whatever escapes the sender chose. */
static char *put_query_part(char *w, const char *p, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        char c = p[i];
        if (c == '%' && i + 2 < n && hexval(p[i + 1]) >= 0 && hexval(p[i + 2]) >= 0) {
            c = (char)(hexval(p[i + 1]) * 16 + hexval(p[i + 2]));
            i += 2;
        }
        w = put_enc(w, &c, 1, false);
    }
    return w;
}

/* The canonical URI: the path as given (S3), or without empty, "." and ".." segments and
 * each segment encoded (again). Bound: 3 * len + 1. */
static char *put_path(char *w, const char *p, size_t len, bool s3)
{
    if (len == 0)
        return put(w, "/", 1);
    if (s3)
        return put(w, p, len);
    char *start = w;
    size_t i = 0;
    while (i < len) {
        size_t j = i;
        while (j < len && p[j] != '/')
            j++;
        size_t n = j - i;
        if (n == 2 && p[i] == '.' && p[i + 1] == '.') {
            while (w > start && *--w != '/')
                ;
        } else if (n > 0 && !(n == 1 && p[i] == '.')) {
            *w++ = '/';
            w = put_enc(w, p + i, n, false);
        }
        i = j + 1;
    }
    if (w == start)
        return put(w, "/", 1);
    if (p[len - 1] == '/')
        *w++ = '/';
    return w;
}

static int cmp_bytes(const char *a, size_t an, const char *b, size_t bn)
{
    int c = memcmp(a, b, an < bn ? an : bn);
    if (c != 0)
        return c;
    return an < bn ? -1 : an > bn;
}

static int cmp_param(const struct item *a, const struct item *b)
{
    int c = cmp_bytes(a->name, a->name_len, b->name, b->name_len);
    return c != 0 ? c : cmp_bytes(a->value, a->value_len, b->value, b->value_len);
}

static int cmp_header(const struct item *a, const struct item *b)
{
    return cmp_bytes(a->name, a->name_len, b->name, b->name_len);
}

/* Insertion sort, stable (a header's values keep their order): the lists are short, and
 * qsort() may allocate. */
static void
sort_items(struct item *v, size_t n, int (*cmp)(const struct item *, const struct item *))
{
    for (size_t i = 1; i < n; i++) {
        struct item x = v[i];
        size_t j = i;
        for (; j > 0 && cmp(&v[j - 1], &x) > 0; j--)
            v[j] = v[j - 1];
        v[j] = x;
    }
}

/* Splits the query at '&' into s->params, each part encoded into scratch at *sw. Empty
 * parts are left out. */
static enum lf_err parse_query(struct lf_sigv4 *s, const char *q, size_t len, char **sw, size_t *n)
{
    *n = 0;
    size_t i = 0;
    while (i < len) {
        size_t j = i;
        while (j < len && q[j] != '&')
            j++;
        if (j > i) {
            if (lf_array_grow(&s->params, &s->params_cap, *n, sizeof(struct item), 8) != LF_OK)
                return LF_ENOMEM;
            const char *eq = memchr(q + i, '=', j - i);
            size_t name_end = eq != NULL ? (size_t)(eq - q) : j;
            struct item *it = &s->params[(*n)++];
            it->name = *sw;
            *sw = put_query_part(*sw, q + i, name_end - i);
            it->name_len = (size_t)(*sw - it->name);
            it->value = *sw;
            if (eq != NULL)
                *sw = put_query_part(*sw, eq + 1, j - name_end - 1);
            it->value_len = (size_t)(*sw - it->value);
        }
        i = j + 1;
    }
    sort_items(s->params, *n, cmp_param);
    return LF_OK;
}

static char lower(char c)
{
    unsigned char u = (unsigned char)c;
    return (char)(u >= 'A' && u <= 'Z' ? u | 0x20u : u);
}

static bool is_space(char c)
{
    return c == ' ' || c == '\t' || c == '\r' || c == '\n' || c == '\v' || c == '\f';
}

/* Writes v trimmed, inner runs of white space folded to one space; returns the end. */
static char *put_folded(char *w, const char *v, size_t len)
{
    size_t i = 0;
    while (i < len && is_space(v[i]))
        i++;
    while (i < len) {
        size_t j = i;
        while (j < len && !is_space(v[j]))
            j++;
        w = put(w, v + i, j - i);
        while (j < len && is_space(v[j]))
            j++;
        if (j < len)
            *w++ = ' ';
        i = j;
    }
    return w;
}

/* One header into s->headers, its name lower-cased and its value folded (unless plain:
 * known to need no folding), both written at *sw. */
static enum lf_err add_header(struct lf_sigv4 *s,
                              size_t *n,
                              const char *name,
                              size_t nlen,
                              const char *v,
                              size_t vlen,
                              bool plain,
                              char **sw)
{
    if (lf_array_grow(&s->headers, &s->headers_cap, *n, sizeof(struct item), 8) != LF_OK)
        return LF_ENOMEM;
    struct item *it = &s->headers[(*n)++];
    char *w = *sw;
    it->name = w;
    for (size_t i = 0; i < nlen; i++)
        *w++ = lower(name[i]);
    it->name_len = nlen;
    it->value = w;
    w = plain ? put(w, v, vlen) : put_folded(w, v, vlen);
    it->value_len = (size_t)(w - it->value);
    *sw = w;
    return LF_OK;
}

static enum lf_err
collect_headers(struct lf_sigv4 *s, const struct lf_sigv4_req *req, char **sw, size_t *n)
{
    *n = 0;
    enum lf_err err = LF_OK;
    for (size_t i = 0; i < req->n_headers && err == LF_OK; i++) {
        const struct lf_sigv4_header *h = &req->headers[i];
        err = add_header(s, n, h->name, h->name_len, h->value, h->value_len, false, sw);
    }
    if (err == LF_OK)
        err = add_header(s, n, "x-amz-date", 10, req->amz_date, LF_SIGV4_DATE_LEN, true, sw);
    if (err == LF_OK && s->token != NULL)
        err = add_header(s, n, "x-amz-security-token", 20, s->token, s->token_len, true, sw);
    if (err == LF_OK && s->sign_content_sha256)
        err = add_header(s, n, "x-amz-content-sha256", 20, req->payload_sha256, LF_SIGV4_HEX_LEN,
                         true, sw);
    if (err == LF_OK)
        sort_items(s->headers, *n, cmp_header);
    return err;
}

/* "name:v1,v2\n" per name, then the blank line's end; then "a;b;c". */
static char *
put_headers(char *w, const struct item *h, size_t n, const char **signed_p, size_t *signed_len)
{
    for (size_t i = 0; i < n; i++) {
        bool same =
            i > 0 && cmp_bytes(h[i].name, h[i].name_len, h[i - 1].name, h[i - 1].name_len) == 0;
        if (same) {
            w[-1] = ',';
        } else {
            w = put(w, h[i].name, h[i].name_len);
            *w++ = ':';
        }
        w = put(w, h[i].value, h[i].value_len);
        *w++ = '\n';
    }
    *w++ = '\n';
    *signed_p = w;
    for (size_t i = 0; i < n; i++) {
        if (i > 0 && cmp_bytes(h[i].name, h[i].name_len, h[i - 1].name, h[i - 1].name_len) == 0)
            continue;
        if (w > *signed_p)
            *w++ = ';';
        w = put(w, h[i].name, h[i].name_len);
    }
    *signed_len = (size_t)(w - *signed_p);
    return w;
}

static bool valid_input(const struct lf_sigv4_req *req)
{
    const char *d = req->amz_date;
    if (d == NULL || strnlen(d, LF_SIGV4_DATE_LEN + 1) != LF_SIGV4_DATE_LEN || d[8] != 'T' ||
        d[15] != 'Z')
        return false;
    for (size_t i = 0; i < LF_SIGV4_DATE_LEN; i++)
        if (i != 8 && i != 15 && (d[i] < '0' || d[i] > '9'))
            return false;
    if (req->payload_sha256 == NULL)
        return false;
    for (size_t i = 0; i < LF_SIGV4_HEX_LEN; i++)
        if (hexval(req->payload_sha256[i]) < 0)
            return false;
    return req->method != NULL;
}

/* Room for every writer: each input byte becomes at most 3 (encoded) and headers are
 * written twice (canonical headers, then signed names). */
static enum lf_err grow_for(struct lf_sigv4 *s, const struct lf_sigv4_req *req)
{
    size_t hdr = 20 + LF_SIGV4_DATE_LEN + 40 + LF_SIGV4_HEX_LEN + 128;
    hdr += s->token_len;
    for (size_t i = 0; i < req->n_headers; i++)
        hdr += req->headers[i].name_len + req->headers[i].value_len + 4;
    size_t q = 3 * req->query_len + 2;
    size_t cr = strlen(req->method) + 3 * req->path_len + 8 + q + 2 * hdr + LF_SIGV4_HEX_LEN;
    if (hdr > BUF_MAX || q > BUF_MAX || cr > BUF_MAX)
        return LF_ETOOBIG;
    size_t sts = sizeof(ALGO) + LF_SIGV4_DATE_LEN + strlen(s->region) + strlen(s->service) +
                 sizeof(TERMINAL) + LF_SIGV4_HEX_LEN + 16;
    lf_buf_reset(&s->cr);
    lf_buf_reset(&s->sts);
    lf_buf_reset(&s->scratch);
    enum lf_err err = lf_buf_grow(&s->cr, cr);
    if (err == LF_OK)
        err = lf_buf_grow(&s->sts, sts);
    if (err == LF_OK)
        err = lf_buf_grow(&s->scratch, q + hdr);
    return err;
}

static enum lf_err build_canonical(struct lf_sigv4 *s,
                                   const struct lf_sigv4_req *req,
                                   const char **signed_p,
                                   size_t *signed_len)
{
    char *sw = s->scratch.ptr;
    size_t n_params, n_headers;
    enum lf_err err = parse_query(s, req->query, req->query_len, &sw, &n_params);
    if (err == LF_OK)
        err = collect_headers(s, req, &sw, &n_headers);
    if (err != LF_OK)
        return err;
    char *w = s->cr.ptr;
    w = put(w, req->method, strlen(req->method));
    *w++ = '\n';
    w = put_path(w, req->path, req->path_len, s->s3_paths);
    *w++ = '\n';
    for (size_t i = 0; i < n_params; i++) {
        if (i > 0)
            *w++ = '&';
        w = put(w, s->params[i].name, s->params[i].name_len);
        *w++ = '=';
        w = put(w, s->params[i].value, s->params[i].value_len);
    }
    *w++ = '\n';
    w = put_headers(w, s->headers, n_headers, signed_p, signed_len);
    *w++ = '\n';
    w = put(w, req->payload_sha256, LF_SIGV4_HEX_LEN);
    s->cr.len = (size_t)(w - s->cr.ptr);
    *w = '\0';
    return LF_OK;
}

static void build_sts(struct lf_sigv4 *s, const struct lf_sigv4_req *req)
{
    char *w = s->sts.ptr;
    w = put(w, ALGO "\n", sizeof(ALGO));
    w = put(w, req->amz_date, LF_SIGV4_DATE_LEN);
    *w++ = '\n';
    w = put(w, req->amz_date, 8);
    *w++ = '/';
    w = put(w, s->region, strlen(s->region));
    *w++ = '/';
    w = put(w, s->service, strlen(s->service));
    w = put(w, "/" TERMINAL "\n", sizeof(TERMINAL) + 1);
    lf_sigv4_sha256_hex(s->cr.ptr, s->cr.len, w);
    w += LF_SIGV4_HEX_LEN;
    s->sts.len = (size_t)(w - s->sts.ptr);
    *w = '\0';
}

/* "AWS4-HMAC-SHA256 Credential=AKID/DAY/REGION/SERVICE/aws4_request, SignedHeaders=...,
 * Signature=..." and a NUL, written without printf (which took a fifth of a signature). */
static enum lf_err put_authz(const struct lf_sigv4 *s,
                             const char *date,
                             const char *signed_p,
                             size_t signed_len,
                             const unsigned char *mac,
                             char *out,
                             size_t out_size)
{
    static const char A[] = ALGO " Credential=", B[] = "/" TERMINAL ", SignedHeaders=",
                      C[] = ", Signature=";
    size_t akid = strlen(s->akid), region = strlen(s->region), service = strlen(s->service);
    size_t need = sizeof(A) - 1 + akid + 1 + 8 + 1 + region + 1 + service + sizeof(B) - 1 +
                  signed_len + sizeof(C) - 1 + 2 * SHA_LEN + 1;
    if (need > out_size)
        return LF_ETOOBIG;
    char *w = put(out, A, sizeof(A) - 1);
    w = put(w, s->akid, akid);
    *w++ = '/';
    w = put(w, date, 8);
    *w++ = '/';
    w = put(w, s->region, region);
    *w++ = '/';
    w = put(w, s->service, service);
    w = put(w, B, sizeof(B) - 1);
    w = put(w, signed_p, signed_len);
    w = put(w, C, sizeof(C) - 1);
    for (size_t i = 0; i < SHA_LEN; i++) {
        *w++ = HEX_LOWER[mac[i] >> 4];
        *w++ = HEX_LOWER[mac[i] & 15];
    }
    *w = '\0';
    return LF_OK;
}

enum lf_err
lf_sigv4_sign(struct lf_sigv4 *s, const struct lf_sigv4_req *req, char *out, size_t out_size)
{
    if (!valid_input(req) || s->akid == NULL)
        return LF_EINVAL; /* no credentials yet, or the last set_credentials() failed */
    enum lf_err err = grow_for(s, req);
    const char *signed_p = NULL;
    size_t signed_len = 0;
    if (err == LF_OK)
        err = build_canonical(s, req, &signed_p, &signed_len);
    if (err != LF_OK)
        return err;
    build_sts(s, req);
    if (memcmp(s->day, req->amz_date, 8) != 0)
        derive_key(s, req->amz_date);
    unsigned char mac[SHA_LEN];
    lf_sigv4_hmac_from(&s->inner, &s->outer, s->sts.ptr, s->sts.len, mac);
    return put_authz(s, req->amz_date, signed_p, signed_len, mac, out, out_size);
}
