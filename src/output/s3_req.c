/* s3_req.c - the s3 output's requests (see s3_int.h).
 *
 * One blocking libcurl easy handle, made once and reused (its connection kept alive), on
 * the output's thread; one request at a time, since an output puts its objects in order.
 * Each request is signed anew (SigV4, service "s3", the payload's SHA-256 as
 * x-amz-content-sha256, computed by the caller once per body, not per attempt). The signer
 * takes new credentials when the provider's change (their gen): at most once per refresh. */
#include "config.h"

#define LF_LOG_COMPONENT "output"

#include "netlib_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "awscred_int.h"
#include "httpc_int.h"
#include "logferry/buf.h"
#include "logferry/log.h"
#include "s3_int.h"
#include "sigv4_int.h"

#define S3_HEADER_MAX 512               /* one header line we build, token apart */
#define S3_RESP_MAX   ((size_t)8 << 10) /* an answer's body kept: the error or the XML */
#define S3_AUTHZ_MAX  1024

struct lf_s3req {
    const struct lf_output_conf *conf; /* borrowed */
    char *who;                         /* owned; "output NAME" */
    const bool *cancel;                /* borrowed */
    const char *region;                /* borrowed from conf or the environment */
    char *base;                        /* owned; "scheme://host[:port]", no slash */
    char *host;                        /* owned; the Host header's value */
    char *prefix;                      /* owned; "/BUCKET" path-style, else "" */
    CURL *easy;                        /* owned */
    struct lf_awscred *cred;           /* owned */
    struct lf_awscred_value *value;    /* owned; the credentials the signer holds */
    struct lf_sigv4 *signer;           /* owned */
    uint64_t signer_gen;               /* the credentials the signer holds (value->gen) */
    int64_t skew_s;                    /* the server's clock minus ours */
    struct lf_buf url, path, resp;     /* reused */
    struct lf_s3_reply *reply;         /* during a transfer: what the header callback fills */
    char err[CURL_ERROR_SIZE];
};

const char *lf_s3_default_key(enum lf_compression compression)
{
    switch (compression) {
    case LF_COMPRESS_ZSTD:
        return "logs/%{input.id}/%Y/%m/%d/%H/%{uuid}.ndjson.zst";
    case LF_COMPRESS_GZIP:
        return "logs/%{input.id}/%Y/%m/%d/%H/%{uuid}.ndjson.gz";
    case LF_COMPRESS_NONE:
        break;
    }
    return "logs/%{input.id}/%Y/%m/%d/%H/%{uuid}.ndjson";
}

/* ---- addressing ---- */

/* Appends key to out escaped as S3 wants it: every byte but the unreserved ones and '/' as
 * %XX, so the path is sent, and signed, exactly as written. */
static enum lf_err append_escaped(struct lf_buf *out, const char *key)
{
    static const char hex[] = "0123456789ABCDEF";
    for (const unsigned char *p = (const unsigned char *)key; *p; p++) {
        char e[3] = { (char)*p, 0, 0 };
        size_t n = 1;
        bool plain = (*p >= 'A' && *p <= 'Z') || (*p >= 'a' && *p <= 'z') ||
                     (*p >= '0' && *p <= '9') || strchr("-._~/", *p) != NULL;
        if (!plain) {
            e[0] = '%';
            e[1] = hex[*p >> 4];
            e[2] = hex[*p & 15];
            n = 3;
        }
        enum lf_err err = lf_buf_append(out, e, n);
        if (err)
            return err;
    }
    return LF_OK;
}

static char *dup_printf(const char *fmt, const char *a, const char *b, const char *c)
{
    size_t n = strlen(fmt) + strlen(a) + strlen(b) + strlen(c) + 1;
    char *s = malloc(n);
    if (s != NULL)
        snprintf(s, n, fmt, a, b, c);
    return s;
}

/* base, host and prefix from the endpoint (or AWS's) and the addressing style. */
static enum lf_err address(struct lf_s3req *r, struct lf_errbuf *eb)
{
    const struct lf_output_conf *conf = r->conf;
    bool path_style = conf->s3_path_style < 0 ? conf->s3_endpoint != NULL : conf->s3_path_style;
    const char *bucket = conf->s3_bucket;
    if (conf->s3_endpoint == NULL) {
        char aws[256];
        snprintf(aws, sizeof(aws), "s3.%s.amazonaws.com", r->region);
        r->host =
            path_style ? dup_printf("%s%s%s", aws, "", "") : dup_printf("%s.%s%s", bucket, aws, "");
        if (r->host != NULL)
            r->base = dup_printf("https://%s%s%s", r->host, "", "");
    } else {
        CURLU *u = curl_url();
        char *scheme = NULL, *host = NULL, *port = NULL;
        if (u == NULL)
            return lf_fail(eb, LF_ENOMEM, "%s: out of memory", r->who);
        if (curl_url_set(u, CURLUPART_URL, conf->s3_endpoint, 0) != CURLUE_OK ||
            curl_url_get(u, CURLUPART_SCHEME, &scheme, 0) != CURLUE_OK ||
            curl_url_get(u, CURLUPART_HOST, &host, 0) != CURLUE_OK ||
            (strcmp(scheme, "http") != 0 && strcmp(scheme, "https") != 0)) {
            curl_free(scheme);
            curl_free(host);
            curl_url_cleanup(u);
            return lf_fail(eb, LF_ECONFIG, "%s: endpoint: expected an http:// or https:// URL",
                           r->who);
        }
        if (curl_url_get(u, CURLUPART_PORT, &port, 0) != CURLUE_OK)
            port = NULL;
        char hp[512];
        snprintf(hp, sizeof(hp), "%s%s%s%s%s", path_style ? "" : bucket, path_style ? "" : ".",
                 host, port != NULL ? ":" : "", port != NULL ? port : "");
        r->host = dup_printf("%s%s%s", hp, "", "");
        r->base = dup_printf("%s://%s%s", scheme, hp, "");
        curl_free(scheme);
        curl_free(host);
        curl_free(port);
        curl_url_cleanup(u);
    }
    r->prefix =
        path_style ? dup_printf("/%s%s%s", bucket, "", "") : dup_printf("%s%s%s", "", "", "");
    if (r->host == NULL || r->base == NULL || r->prefix == NULL)
        return lf_fail(eb, LF_ENOMEM, "%s: out of memory", r->who);
    return LF_OK;
}

/* ---- libcurl callbacks ---- */

static size_t on_body(char *p, size_t size, size_t n, void *arg)
{
    struct lf_s3req *r = arg;
    size_t len = size * n;
    size_t room = S3_RESP_MAX - r->resp.len;
    lf_err_ignore(lf_buf_append(&r->resp, p, len < room ? len : room)); /* the start is enough */
    return len;
}

/* Copies the header value after name (case-insensitive) in line into out. */
static bool header_value(const char *line, size_t len, const char *name, char *out, size_t cap)
{
    size_t nl = strlen(name);
    if (len <= nl || strncasecmp(line, name, nl) != 0 || line[nl] != ':')
        return false;
    const char *v = line + nl + 1;
    const char *end = line + len;
    while (v < end && (*v == ' ' || *v == '\t'))
        v++;
    while (end > v && (end[-1] == '\r' || end[-1] == '\n' || end[-1] == ' '))
        end--;
    size_t n = (size_t)(end - v) < cap - 1 ? (size_t)(end - v) : cap - 1;
    memcpy(out, v, n);
    out[n] = '\0';
    return true;
}

static size_t on_header(char *p, size_t size, size_t n, void *arg)
{
    struct lf_s3req *r = arg;
    size_t len = size * n;
    char v[128];
    if (header_value(p, len, "ETag", v, sizeof(v)))
        snprintf(r->reply->etag, sizeof(r->reply->etag), "%s", v);
    else if (header_value(p, len, "Date", v, sizeof(v)))
        r->reply->date_s = (int64_t)curl_getdate(v, NULL);
    else if (header_value(p, len, "Retry-After", v, sizeof(v)))
        r->reply->retry_after_ms = strtoull(v, NULL, 10) * 1000;
    if (r->reply->date_s < 0)
        r->reply->date_s = 0;
    return len;
}

static int on_progress(void *arg, curl_off_t dt, curl_off_t dn, curl_off_t ut, curl_off_t un)
{
    (void)dt, (void)dn, (void)ut, (void)un;
    const struct lf_s3req *r = arg;
    return __atomic_load_n(r->cancel, __ATOMIC_RELAXED) ? 1 : 0;
}

/* ---- new and free ---- */

enum lf_err lf_s3req_new(const struct lf_output_conf *conf,
                         const char *who,
                         const bool *cancel,
                         struct lf_s3req **out,
                         struct lf_errbuf *eb)
{
    struct lf_s3req *r = calloc(1, sizeof(*r));
    if (r == NULL)
        return lf_fail(eb, LF_ENOMEM, "%s: out of memory", who);
    r->conf = conf;
    r->cancel = cancel;
    r->who = strdup(who);
    r->value = calloc(1, sizeof(*r->value));
    lf_buf_init(&r->url, (size_t)64 << 10);
    lf_buf_init(&r->path, (size_t)64 << 10);
    lf_buf_init(&r->resp, S3_RESP_MAX + 1);
    r->region = lf_awscred_region(conf);
    enum lf_err err = r->who == NULL || r->value == NULL
                          ? lf_fail(eb, LF_ENOMEM, "%s: out of memory", who)
                          : LF_OK;
    if (!err && r->region == NULL)
        err = lf_fail(eb, LF_ECONFIG,
                      "%s: no region: set region, or $AWS_REGION or $AWS_DEFAULT_REGION", who);
    if (!err)
        err = lf_netlib_load(LF_NETLIB_SSL, who, eb); /* the signer's SHA-256 */
    if (!err)
        err = address(r, eb);
    if (!err)
        err = lf_awscred_new(conf, r->region, who, &r->cred, eb);
    const struct lf_sigv4_conf sc = {
        .region = r->region, .service = "s3", .s3_paths = true, .sign_content_sha256 = true
    };
    if (!err && (r->signer = lf_sigv4_new(&sc, who, eb)) == NULL)
        err = LF_EIO;
    if (!err && (r->easy = curl_easy_init()) == NULL)
        err = lf_fail(eb, LF_ENOMEM, "%s: out of memory", who);
#define SET(opt, val) \
    (err = err ? err : (curl_easy_setopt(r->easy, opt, val) == CURLE_OK ? LF_OK : LF_EIO))
    if (!err)
        err = lf_httpc_easy_conf(r->easy, conf);
    SET(CURLOPT_ERRORBUFFER, r->err);
    SET(CURLOPT_WRITEFUNCTION, on_body);
    SET(CURLOPT_WRITEDATA, r);
    SET(CURLOPT_HEADERFUNCTION, on_header);
    SET(CURLOPT_HEADERDATA, r);
    SET(CURLOPT_XFERINFOFUNCTION, on_progress);
    SET(CURLOPT_XFERINFODATA, r);
    SET(CURLOPT_NOPROGRESS, 0L);
#undef SET
    if (err && eb->msg[0] == '\0') /* from libcurl */
        err = lf_fail(eb, err == LF_ENOMEM ? LF_ENOMEM : LF_EIO,
                      "%s: libcurl refused an option: %s", who, lf_err_str(err));
    if (err) {
        lf_s3req_free(r);
        return err;
    }
    *out = r;
    return LF_OK;
}

void lf_s3req_free(struct lf_s3req *r)
{
    if (r == NULL)
        return;
    if (r->easy != NULL)
        curl_easy_cleanup(r->easy);
    lf_sigv4_free(r->signer);
    lf_awscred_free(r->cred);
    if (r->value != NULL)
        lf_awscred_value_wipe(r->value);
    free(r->value);
    lf_buf_release(&r->url);
    lf_buf_release(&r->path);
    lf_buf_release(&r->resp);
    free(r->base);
    free(r->host);
    free(r->prefix);
    free(r->who);
    free(r);
}

void lf_s3req_set_skew(struct lf_s3req *r, int64_t offset_s)
{
    r->skew_s = offset_s;
}

void lf_s3req_refresh(struct lf_s3req *r)
{
    lf_awscred_refresh(r->cred);
}

/* ---- one request ---- */

/* Brings the signer up to the current credentials; LF_EAGAIN when there are none yet. */
static enum lf_err signer(struct lf_s3req *r, struct lf_errbuf *eb)
{
    enum lf_err err = lf_awscred_get(r->cred, r->value, eb);
    if (err || r->signer_gen == r->value->gen)
        return err;
    err = lf_sigv4_set_credentials(r->signer, r->value->access_key_id, r->value->secret_key,
                                   r->value->session_token);
    if (err)
        return lf_fail(eb, err, "%s: cannot take the AWS credentials: %s", r->who, lf_err_str(err));
    r->signer_gen = r->value->gen;
    return LF_OK;
}

static const char *content_type(enum lf_compression c)
{
    switch (c) {
    case LF_COMPRESS_ZSTD:
        return "application/zstd";
    case LF_COMPRESS_GZIP:
        return "application/gzip";
    case LF_COMPRESS_NONE:
        break;
    }
    return "application/x-ndjson";
}

/* Adds "Name: value" to *list and, when signed, to hs (room checked by the caller). */
static bool add_header(struct curl_slist **list,
                       struct lf_sigv4_header *hs,
                       size_t *n,
                       const char *name,
                       const char *value)
{
    size_t len = strlen(name) + strlen(value) + 3;
    char *line = malloc(len);
    if (line == NULL)
        return false;
    snprintf(line, len, "%s: %s", name, value);
    struct curl_slist *l = curl_slist_append(*list, line);
    memset(line, 0, len); /* it may be the token */
    free(line);
    if (l == NULL)
        return false;
    *list = l;
    if (hs != NULL)
        hs[(*n)++] = (struct lf_sigv4_header){ name, strlen(name), value, strlen(value) };
    return true;
}

/* The request's headers, signed. */
static enum lf_err headers(struct lf_s3req *r, const struct lf_s3_call *c, struct curl_slist **list)
{
    const struct lf_output_conf *conf = r->conf;
    struct lf_sigv4_header hs[8];
    size_t n = 0;
    char date[LF_SIGV4_DATE_LEN + 1];
    time_t now = time(NULL) + (time_t)r->skew_s;
    struct tm tm;
    gmtime_r(&now, &tm);
    strftime(date, sizeof(date), "%Y%m%dT%H%M%SZ", &tm);
    bool ok = add_header(list, hs, &n, "host", r->host);
    if (ok && c->object_headers) {
        ok = add_header(list, hs, &n, "content-type", content_type(conf->compression));
        if (ok && conf->s3_storage_class != NULL)
            ok = add_header(list, hs, &n, "x-amz-storage-class", conf->s3_storage_class);
        if (ok && conf->s3_sse != NULL)
            ok = add_header(list, hs, &n, "x-amz-server-side-encryption", conf->s3_sse);
        if (ok && conf->s3_sse_kms_key_id != NULL)
            ok = add_header(list, hs, &n, "x-amz-server-side-encryption-aws-kms-key-id",
                            conf->s3_sse_kms_key_id);
    } else if (ok) {
        ok = add_header(list, NULL, &n, "Content-Type", "application/xml");
    }
    char authz[S3_AUTHZ_MAX];
    const struct lf_sigv4_req req = { .method = c->method,
                                      .path = r->path.ptr,
                                      .path_len = r->path.len,
                                      .query = c->query,
                                      .query_len = strlen(c->query),
                                      .headers = hs,
                                      .n_headers = n,
                                      .payload_sha256 = c->sha256,
                                      .amz_date = date };
    enum lf_err err = ok ? lf_sigv4_sign(r->signer, &req, authz, sizeof(authz)) : LF_ENOMEM;
    ok = !err && add_header(list, NULL, &n, "x-amz-date", date) &&
         add_header(list, NULL, &n, "x-amz-content-sha256", c->sha256) &&
         add_header(list, NULL, &n, "Authorization", authz) &&
         add_header(list, NULL, &n, "Expect", "") &&
         (r->value->session_token[0] == '\0' ||
          add_header(list, NULL, &n, "x-amz-security-token", r->value->session_token));
    memset(authz, 0, sizeof(authz));
    return err ? err : ok ? LF_OK : LF_ENOMEM;
}

/* <Name>text</Name> of the answer's body into out, printable ASCII only. */
static void xml_field(const struct lf_buf *body, const char *name, char *out, size_t cap)
{
    char open[64], close[64];
    snprintf(open, sizeof(open), "<%s>", name);
    snprintf(close, sizeof(close), "</%s>", name);
    out[0] = '\0';
    if (body->len == 0)
        return;
    const char *b = memmem(body->ptr, body->len, open, strlen(open));
    if (b == NULL)
        return;
    b += strlen(open);
    const char *e = memmem(b, (size_t)(body->ptr + body->len - b), close, strlen(close));
    if (e == NULL)
        return;
    size_t n = 0;
    for (; b < e && n + 1 < cap; b++) {
        out[n] = '?';
        if (*b >= 0x20 && *b < 0x7f)
            out[n] = *b;
        n++;
    }
    out[n] = '\0';
}

enum lf_err lf_s3req_send(struct lf_s3req *r,
                          const struct lf_s3_call *c,
                          struct lf_s3_reply *reply,
                          struct lf_errbuf *eb)
{
    memset(reply, 0, sizeof(*reply));
    enum lf_err err = signer(r, eb);
    if (err)
        return err;
    lf_buf_reset(&r->path);
    lf_buf_reset(&r->url);
    lf_buf_reset(&r->resp);
    err = lf_buf_append_cstr(&r->path, r->prefix);
    if (!err)
        err = lf_buf_append(&r->path, "/", 1);
    if (!err)
        err = append_escaped(&r->path, c->key);
    if (!err)
        err = lf_buf_append_cstr(&r->url, r->base);
    if (!err)
        err = lf_buf_append(&r->url, r->path.ptr, r->path.len);
    if (!err && c->query[0] != '\0')
        err = lf_buf_append(&r->url, "?", 1);
    if (!err)
        err = lf_buf_append(&r->url, c->query, strlen(c->query) + 1); /* with its NUL */
    struct curl_slist *list = NULL;
    if (!err)
        err = headers(r, c, &list);
    if (err) {
        curl_slist_free_all(list);
        return lf_fail(eb, err, "%s: cannot build the request: %s", r->who, lf_err_str(err));
    }
    r->reply = reply;
    r->err[0] = '\0';
    curl_easy_setopt(r->easy, CURLOPT_URL, r->url.ptr);
    curl_easy_setopt(r->easy, CURLOPT_HTTPHEADER, list);
    curl_easy_setopt(r->easy, CURLOPT_POST, 1L);
    curl_easy_setopt(r->easy, CURLOPT_CUSTOMREQUEST, c->method);
    curl_easy_setopt(r->easy, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)c->len);
    curl_easy_setopt(r->easy, CURLOPT_POSTFIELDS, c->len > 0 ? c->body : "");
    CURLcode rc = curl_easy_perform(r->easy);
    curl_easy_setopt(r->easy, CURLOPT_HTTPHEADER, NULL);
    curl_slist_free_all(list);
    r->reply = NULL;
    if (rc != CURLE_OK) {
        snprintf(reply->error, sizeof(reply->error), "%s",
                 r->err[0] ? r->err : curl_easy_strerror(rc));
        return LF_OK;
    }
    curl_easy_getinfo(r->easy, CURLINFO_RESPONSE_CODE, &reply->status);
    xml_field(&r->resp, "Code", reply->code, sizeof(reply->code));
    xml_field(&r->resp, "Message", reply->message, sizeof(reply->message));
    xml_field(&r->resp, "UploadId", reply->upload_id, sizeof(reply->upload_id));
    return LF_OK;
}
