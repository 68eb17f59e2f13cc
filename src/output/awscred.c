/* awscred.c - AWS credentials for signed requests (see awscred_int.h).
 *
 * Fixed credentials (config, environment) are copied once at lf_awscred_new() and never
 * change. Temporary ones (web identity, instance metadata) are fetched by a thread of the
 * provider's own with libcurl's multi interface (loaded through netlib), one request at a
 * time: the thread waits on a condition variable until the next fetch is due, a refresh is
 * asked for, or the provider is freed; a request in progress polls at most 200 ms at a
 * time and gives up when the provider is freed, so lf_awscred_free() returns within a
 * second. lf_awscred_get() only copies under the mutex.
 *
 * Threads: lf_awscred_new() and lf_awscred_free() on the owner's thread; lf_awscred_get()
 * and lf_awscred_refresh() on any; everything named fetch_* and http_* on the provider's
 * thread. Secrets (the secret key, session tokens, the web identity token, the metadata
 * service's token) are wiped after use and never written into a message; the access key
 * id and the role may be. */
#include "config.h"

#define LF_LOG_COMPONENT "output"

#include "netlib_int.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <jansson.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>
#include <uv.h>

#include "awscred_int.h"
#include "awscred_parse_int.h"
#include "logferry/buf.h"
#include "logferry/clock.h"
#include "logferry/event.h"
#include "logferry/log.h"

#define RESP_MAX        ((size_t)64 << 10) /* an answer's bytes kept: STS's are ~2 KiB */
#define TOKEN_FILE_MAX  ((size_t)16 << 10) /* a web identity token (a JWT, ~1 KiB) */
#define REASON_MAX      256
#define POLL_MS         200 /* a request's longest wait before it looks at stop again */
#define IMDS_TTL_S      21600
#define IMDS_CONNECT_MS 1000L /* as the SDKs: a host without IMDS fails fast */
#define IMDS_TOTAL_MS   5000L
#define STS_CONNECT_MS  5000L
#define STS_TOTAL_MS    30000L

enum source {
    SRC_CONFIG,
    SRC_ENV,
    SRC_WEB_IDENTITY,
    SRC_IMDS
};

static const char *const source_names[] = { "config", "environment", "web identity",
                                            "instance metadata" };

struct lf_awscred {
    const struct lf_output_conf *conf; /* borrowed */
    enum source src;
    char *who;          /* owned; "output archive" */
    char *role_arn;     /* owned; web identity */
    char *token_file;   /* owned; web identity */
    char *session_name; /* owned; web identity */
    char *url;          /* owned; STS's URL, or the metadata service's base */

    uv_mutex_t mu; /* guards what follows, up to the thread's own */
    uv_cond_t cond;
    struct lf_awscred_value cur;
    char reason[REASON_MAX]; /* the last fetch's failure; "" after a success */
    bool wake;               /* lf_awscred_refresh() asked for a fetch now */
    int64_t woken_ms;        /* monotonic: the last wake, at most one a second */
    int64_t next_ms;         /* monotonic: when the next fetch is due */
    atomic_bool stop;

    bool thread_started;
    uv_thread_t thread;
    bool curl_global;
    /* The thread's own. */
    CURLM *multi;
    struct lf_buf resp;
    char curl_err[CURL_ERROR_SIZE];
    struct lf_awscred_value next; /* a fetch's result before it becomes cur */
    char imds_token[256];         /* a secret; "" when none */
    int64_t imds_token_ms;        /* monotonic: when it was issued */
    unsigned failures;            /* in a row */
    uint32_t rnd;                 /* jitter's state */
    bool announced;               /* the first success was logged at info */
};

static const char *env_nonempty(const char *name)
{
    const char *v = getenv(name);
    return v != NULL && v[0] != '\0' ? v : NULL;
}

const char *lf_awscred_region(const struct lf_output_conf *conf)
{
    if (conf->aws_region != NULL)
        return conf->aws_region;
    const char *r = env_nonempty("AWS_REGION");
    return r != NULL ? r : env_nonempty("AWS_DEFAULT_REGION");
}

static int64_t wall_ms(void)
{
    return lf_now_ns() / 1000000;
}

/* ---- parsing and arithmetic (awscred_parse_int.h) ---- */

/* Days from 1970-01-01 to y-m-d of the proleptic Gregorian calendar. */
static int64_t days_from_civil(int64_t y, int64_t m, int64_t d)
{
    y -= m <= 2;
    int64_t era = (y >= 0 ? y : y - 399) / 400;
    int64_t yoe = y - era * 400;
    int64_t doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
    int64_t doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    return era * 146097 + doe - 719468;
}

/* n digits at s as a number; -1 if one is not a digit. */
static int64_t digits(const char *s, size_t n)
{
    int64_t v = 0;
    for (size_t i = 0; i < n; i++) {
        if (s[i] < '0' || s[i] > '9')
            return -1;
        v = v * 10 + (s[i] - '0');
    }
    return v;
}

int64_t lf_awscred__parse_time(const char *s, size_t len)
{
    while (len > 0 && (s[len - 1] == ' ' || s[len - 1] == '\n' || s[len - 1] == '\r'))
        len--;
    if (len < 19 || s[4] != '-' || s[7] != '-' || (s[10] != 'T' && s[10] != ' ') || s[13] != ':' ||
        s[16] != ':')
        return -1;
    int64_t y = digits(s, 4), mo = digits(s + 5, 2), d = digits(s + 8, 2);
    int64_t h = digits(s + 11, 2), mi = digits(s + 14, 2), sec = digits(s + 17, 2);
    if (y < 1970 || mo < 1 || mo > 12 || d < 1 || d > 31 || h < 0 || h > 23 || mi < 0 || mi > 59 ||
        sec < 0 || sec > 60)
        return -1;
    int64_t ms = 0;
    size_t i = 19;
    if (i < len && s[i] == '.') {
        int64_t scale = 100;
        for (i++; i < len && s[i] >= '0' && s[i] <= '9'; i++) {
            ms += (s[i] - '0') * scale;
            scale /= 10;
        }
    }
    const char *z = s + i;
    size_t zlen = len - i;
    if (!((zlen == 1 && z[0] == 'Z') || (zlen == 6 && memcmp(z, "+00:00", 6) == 0) ||
          (zlen == 5 && memcmp(z, "+0000", 5) == 0)))
        return -1;
    return ((days_from_civil(y, mo, d) * 24 + h) * 60 + mi) * 60000 + sec * 1000 + ms;
}

/* Appends one decoded character of the XML text at *p (an entity or a byte) to dst. */
static size_t xml_char(const char *p, const char *end, char *out)
{
    static const struct {
        const char *ent;
        char c;
    } ents[] = {
        { "&amp;", '&' }, { "&lt;", '<' }, { "&gt;", '>' }, { "&quot;", '"' }, { "&apos;", '\'' }
    };
    if (*p == '&') {
        for (size_t i = 0; i < sizeof(ents) / sizeof(ents[0]); i++) {
            size_t n = strlen(ents[i].ent);
            if ((size_t)(end - p) >= n && memcmp(p, ents[i].ent, n) == 0) {
                *out = ents[i].c;
                return n;
            }
        }
    }
    *out = *p;
    return 1;
}

/* The text of the first <name>...</name> in xml, trimmed and decoded, into dst: false when
 * missing or longer than cap - 1. */
static bool xml_text(const char *xml, size_t len, const char *name, char *dst, size_t cap)
{
    char open[64], close[64];
    int on = snprintf(open, sizeof(open), "<%s>", name);
    int cn = snprintf(close, sizeof(close), "</%s>", name);
    const char *a = memmem(xml, len, open, (size_t)on);
    if (a == NULL)
        return false;
    a += on;
    const char *b = memmem(a, len - (size_t)(a - xml), close, (size_t)cn);
    if (b == NULL)
        return false;
    while (a < b && (unsigned char)*a <= ' ')
        a++;
    while (b > a && (unsigned char)b[-1] <= ' ')
        b--;
    size_t n = 0;
    while (a < b) {
        if (n + 1 >= cap)
            return false;
        a += xml_char(a, b, &dst[n++]);
    }
    dst[n] = '\0';
    return true;
}

/* Copies src into dst as printable ASCII, cut to fit. */
static void printable(char *dst, size_t cap, const char *src)
{
    size_t n = 0;
    for (; *src != '\0' && n + 1 < cap; src++) {
        unsigned char c = (unsigned char)*src;
        dst[n++] = (char)(c >= 0x20 && c < 0x7f ? c : ' ');
    }
    dst[n] = '\0';
}

enum lf_err lf_awscred__parse_sts(
    const char *xml, size_t len, struct lf_awscred_value *v, char *reason, size_t reason_len)
{
    char code[128], msg[512], exp[64] = "";
    if (memmem(xml, len, "<Error>", 7) != NULL) {
        if (!xml_text(xml, len, "Code", code, sizeof(code)))
            snprintf(code, sizeof(code), "an error without a code");
        if (!xml_text(xml, len, "Message", msg, sizeof(msg)))
            msg[0] = '\0';
        char c2[128], m2[200];
        printable(c2, sizeof(c2), code);
        printable(m2, sizeof(m2), msg);
        snprintf(reason, reason_len, "%s%s%s", c2, m2[0] ? ": " : "", m2);
        return LF_EREJECTED;
    }
    const char *missing = NULL;
    if (!xml_text(xml, len, "AccessKeyId", v->access_key_id, sizeof(v->access_key_id)))
        missing = "AccessKeyId";
    else if (!xml_text(xml, len, "SecretAccessKey", v->secret_key, sizeof(v->secret_key)))
        missing = "SecretAccessKey";
    else if (!xml_text(xml, len, "SessionToken", v->session_token, sizeof(v->session_token)))
        missing = "SessionToken";
    else if (!xml_text(xml, len, "Expiration", exp, sizeof(exp)))
        missing = "Expiration";
    if (missing != NULL) {
        snprintf(reason, reason_len, "the answer has no %s (or it is too long)", missing);
        return LF_EINVAL;
    }
    v->expires_ms = lf_awscred__parse_time(exp, strlen(exp));
    if (v->expires_ms < 0 || v->access_key_id[0] == '\0' || v->secret_key[0] == '\0') {
        snprintf(reason, reason_len, "the answer's credentials or Expiration are not valid");
        return LF_EINVAL;
    }
    return LF_OK;
}

/* The string member key of obj into dst: false when missing, empty or too long. */
static bool json_str(json_t *obj, const char *key, char *dst, size_t cap)
{
    const char *s = json_string_value(json_object_get(obj, key));
    if (s == NULL || s[0] == '\0' || strlen(s) >= cap)
        return false;
    memcpy(dst, s, strlen(s) + 1);
    return true;
}

enum lf_err lf_awscred__parse_imds(
    const char *json, size_t len, struct lf_awscred_value *v, char *reason, size_t reason_len)
{
    json_t *o = json_loadb(json, len, 0, NULL);
    enum lf_err err = LF_EINVAL;
    char exp[64] = "";
    const char *code = json_string_value(json_object_get(o, "Code"));
    if (!json_is_object(o)) {
        snprintf(reason, reason_len, "the credentials are not a JSON object");
    } else if (code != NULL && strcmp(code, "Success") != 0) {
        char c2[64];
        printable(c2, sizeof(c2), code);
        snprintf(reason, reason_len, "the credentials' Code is %s", c2);
    } else if (!json_str(o, "AccessKeyId", v->access_key_id, sizeof(v->access_key_id)) ||
               !json_str(o, "SecretAccessKey", v->secret_key, sizeof(v->secret_key)) ||
               !json_str(o, "Token", v->session_token, sizeof(v->session_token)) ||
               !json_str(o, "Expiration", exp, sizeof(exp))) {
        snprintf(reason, reason_len,
                 "the credentials lack AccessKeyId, SecretAccessKey, Token or Expiration");
    } else if ((v->expires_ms = lf_awscred__parse_time(exp, strlen(exp))) < 0) {
        snprintf(reason, reason_len, "the credentials' Expiration is not an ISO 8601 time");
    } else {
        err = LF_OK;
    }
    json_decref(o); /* jansson keeps no copy of the strings past this */
    return err;
}

int64_t lf_awscred__refresh_in_ms(int64_t now_ms, int64_t expires_ms)
{
    int64_t life = expires_ms - now_ms;
    int64_t in = life > LF_AWSCRED_SHORT_MS ? life - LF_AWSCRED_EARLY_MS : life * 2 / 3;
    return in > 1000 ? in : 1000;
}

int64_t lf_awscred__backoff_ms(unsigned failures, uint32_t rnd)
{
    int64_t ms = LF_AWSCRED_BACKOFF_MS;
    for (unsigned i = 1; i < failures && ms < LF_AWSCRED_BACKOFF_MAX_MS; i++)
        ms *= 2;
    if (ms > LF_AWSCRED_BACKOFF_MAX_MS)
        ms = LF_AWSCRED_BACKOFF_MAX_MS;
    return ms - (int64_t)(rnd % (uint32_t)(ms / 5 + 1)); /* apart, should many restart */
}

/* ---- HTTP on the thread ---- */

static size_t on_body(char *data, size_t size, size_t nmemb, void *arg)
{
    struct lf_awscred *c = arg;
    size_t n = size * nmemb;
    size_t room = RESP_MAX - 1 - c->resp.len;
    if (lf_buf_append(&c->resp, data, n < room ? n : room))
        return 0;
    return n;
}

struct http_req {
    const char *method; /* "GET", "PUT", "POST" */
    const char *url;
    const char *header; /* one "Name: value" line, or NULL */
    const char *body;   /* NULL: none */
    long connect_ms, total_ms;
    bool direct; /* no proxy (the metadata service is link-local) */
};

/* Runs q to its end; c->resp holds the answer's body, NUL-ended. LF_OK with *status, or
 * LF_EIO with reason (the transfer failed, or the provider is being freed). */
static enum lf_err
http_do(struct lf_awscred *c, const struct http_req *q, long *status, char *reason, size_t rlen)
{
    CURL *e = curl_easy_init();
    struct curl_slist *hdr = NULL;
    if (q->header != NULL)
        hdr = curl_slist_append(NULL, q->header);
    if (e == NULL || (q->header != NULL && hdr == NULL)) {
        curl_easy_cleanup(e);
        snprintf(reason, rlen, "out of memory");
        return LF_EIO;
    }
    lf_buf_reset(&c->resp);
    c->curl_err[0] = '\0';
    curl_easy_setopt(e, CURLOPT_URL, q->url);
    curl_easy_setopt(e, CURLOPT_PROTOCOLS_STR, "http,https");
    curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(e, CURLOPT_ERRORBUFFER, c->curl_err);
    curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, on_body);
    curl_easy_setopt(e, CURLOPT_WRITEDATA, c);
    curl_easy_setopt(e, CURLOPT_CONNECTTIMEOUT_MS, q->connect_ms);
    curl_easy_setopt(e, CURLOPT_TIMEOUT_MS, q->total_ms);
    curl_easy_setopt(e, CURLOPT_HTTPHEADER, hdr);
    if (q->direct)
        curl_easy_setopt(e, CURLOPT_PROXY, "");
    else if (c->conf->proxy != NULL)
        curl_easy_setopt(e, CURLOPT_PROXY, c->conf->proxy);
    if (q->body != NULL) {
        curl_easy_setopt(e, CURLOPT_POSTFIELDS, q->body);
        curl_easy_setopt(e, CURLOPT_POSTFIELDSIZE, (long)strlen(q->body));
    }
    if (strcmp(q->method, "PUT") == 0) {
        curl_easy_setopt(e, CURLOPT_POSTFIELDS, "");
        curl_easy_setopt(e, CURLOPT_CUSTOMREQUEST, "PUT");
    }
    enum lf_err err = LF_OK;
    CURLcode rc = CURLE_OK;
    curl_multi_add_handle(c->multi, e);
    for (int running = 1; running;) {
        if (atomic_load(&c->stop)) {
            err = LF_EIO;
            snprintf(reason, rlen, "stopping");
            break;
        }
        curl_multi_perform(c->multi, &running);
        if (running)
            curl_multi_poll(c->multi, NULL, 0, POLL_MS, NULL);
    }
    int left = 0;
    const CURLMsg *m;
    while ((m = curl_multi_info_read(c->multi, &left)) != NULL)
        if (m->msg == CURLMSG_DONE)
            rc = m->data.result;
    curl_multi_remove_handle(c->multi, e);
    if (!err && rc != CURLE_OK) {
        err = LF_EIO;
        snprintf(reason, rlen, "%s", c->curl_err[0] ? c->curl_err : curl_easy_strerror(rc));
    }
    if (!err)
        curl_easy_getinfo(e, CURLINFO_RESPONSE_CODE, status);
    curl_easy_cleanup(e);
    curl_slist_free_all(hdr);        /* the metadata token's line: libcurl copied nothing else */
    c->resp.ptr[c->resp.len] = '\0'; /* on_body keeps a byte free; the buffer exists */
    return err;
}

/* ---- web identity ---- */

/* The token file's content, trimmed, into a new string (wipe and free it). */
static char *read_token(const char *path, char *reason, size_t rlen)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        int e = errno;
        snprintf(reason, rlen, "cannot read the web identity token file %s: %s", path,
                 lf_strerror(e));
        return NULL;
    }
    char *tok = malloc(TOKEN_FILE_MAX + 1);
    size_t n = 0;
    ssize_t r = 0;
    while (tok != NULL && n < TOKEN_FILE_MAX && (r = read(fd, tok + n, TOKEN_FILE_MAX - n)) != 0) {
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0)
            break;
        n += (size_t)r;
    }
    int e = errno;
    close(fd);
    if (tok == NULL || r < 0) {
        snprintf(reason, rlen, "cannot read the web identity token file %s: %s", path,
                 tok == NULL ? "out of memory" : lf_strerror(e));
        free(tok);
        return NULL;
    }
    while (n > 0 && (unsigned char)tok[n - 1] <= ' ')
        n--;
    tok[n] = '\0';
    if (n == 0) {
        snprintf(reason, rlen, "the web identity token file %s is empty", path);
        free(tok);
        return NULL;
    }
    return tok;
}

static void wipe_free(char *s)
{
    if (s != NULL) {
        explicit_bzero(s, strlen(s));
        free(s);
    }
}

/* "Action=...&WebIdentityToken=..." with the token of the file read now (it rotates). */
static char *sts_body(struct lf_awscred *c, char *reason, size_t rlen)
{
    char *tok = read_token(c->token_file, reason, rlen);
    if (tok == NULL)
        return NULL;
    char *etok = curl_easy_escape(NULL, tok, 0);
    char *earn = curl_easy_escape(NULL, c->role_arn, 0);
    char *ename = curl_easy_escape(NULL, c->session_name, 0);
    char *body = NULL;
    if (etok != NULL && earn != NULL && ename != NULL) {
        size_t len = strlen(etok) + strlen(earn) + strlen(ename) + 128;
        body = malloc(len);
        if (body != NULL)
            snprintf(body, len,
                     "Action=AssumeRoleWithWebIdentity&Version=2011-06-15&RoleArn=%s"
                     "&RoleSessionName=%s&WebIdentityToken=%s",
                     earn, ename, etok);
    }
    if (body == NULL)
        snprintf(reason, rlen, "out of memory");
    if (etok != NULL)
        explicit_bzero(etok, strlen(etok));
    curl_free(etok);
    curl_free(earn);
    curl_free(ename);
    wipe_free(tok);
    return body;
}

static enum lf_err fetch_web_identity(struct lf_awscred *c, char *reason, size_t rlen)
{
    char *body = sts_body(c, reason, rlen);
    if (body == NULL)
        return LF_EIO;
    struct http_req q = { "POST",       c->url, "Accept: application/xml", body, STS_CONNECT_MS,
                          STS_TOTAL_MS, false };
    long status = 0;
    enum lf_err err = http_do(c, &q, &status, reason, rlen);
    wipe_free(body);
    if (err)
        return err;
    char why[REASON_MAX / 2];
    err = lf_awscred__parse_sts(c->resp.ptr, c->resp.len, &c->next, why, sizeof(why));
    if (status != 200 || err) {
        if (status != 200 && err == LF_EREJECTED)
            snprintf(reason, rlen, "STS answered HTTP %ld: %s", status, why);
        else if (status != 200)
            snprintf(reason, rlen, "STS answered HTTP %ld", status);
        else
            snprintf(reason, rlen, "STS: %s", why);
        return LF_EIO;
    }
    return LF_OK;
}

/* ---- instance metadata (IMDSv2) ---- */

/* GET base + path with the session token, taking a new token first when there is none or
 * it is old, and once more when the service answers 401. */
static enum lf_err
imds_get(struct lf_awscred *c, const char *path, long *status, char *reason, size_t rlen)
{
    char url[1024], line[320];
    for (int attempt = 0; attempt < 2; attempt++) {
        if (c->imds_token[0] == '\0' ||
            lf_mono_ms() - c->imds_token_ms > (IMDS_TTL_S - 60) * (int64_t)1000) {
            snprintf(url, sizeof(url), "%s/latest/api/token", c->url);
            struct http_req q = { "PUT",
                                  url,
                                  "X-aws-ec2-metadata-token-ttl-seconds: 21600",
                                  NULL,
                                  IMDS_CONNECT_MS,
                                  IMDS_TOTAL_MS,
                                  true };
            enum lf_err err = http_do(c, &q, status, reason, rlen);
            if (err)
                return err;
            size_t n = c->resp.len;
            while (n > 0 && (unsigned char)c->resp.ptr[n - 1] <= ' ')
                n--;
            if (*status != 200 || n == 0 || n >= sizeof(c->imds_token)) {
                snprintf(reason, rlen,
                         "the instance metadata service answered HTTP %ld to the token "
                         "request",
                         *status);
                return LF_EIO;
            }
            memcpy(c->imds_token, c->resp.ptr, n);
            c->imds_token[n] = '\0';
            c->imds_token_ms = lf_mono_ms();
            explicit_bzero(c->resp.ptr, c->resp.len);
        }
        snprintf(url, sizeof(url), "%s%s", c->url, path);
        snprintf(line, sizeof(line), "X-aws-ec2-metadata-token: %s", c->imds_token);
        struct http_req q = { "GET", url, line, NULL, IMDS_CONNECT_MS, IMDS_TOTAL_MS, true };
        enum lf_err err = http_do(c, &q, status, reason, rlen);
        explicit_bzero(line, sizeof(line));
        if (err || *status != 401)
            return err;
        explicit_bzero(c->imds_token, sizeof(c->imds_token)); /* expired or refused */
    }
    return LF_OK; /* the second 401 is the caller's to report */
}

static bool role_name_ok(const char *s)
{
    for (; *s != '\0'; s++)
        if (!((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') || (*s >= '0' && *s <= '9') ||
              strchr("+=,.@_-", *s) != NULL))
            return false;
    return true;
}

static enum lf_err fetch_imds(struct lf_awscred *c, char *reason, size_t rlen)
{
    static const char base[] = "/latest/meta-data/iam/security-credentials/";
    long status = 0;
    enum lf_err err = imds_get(c, base, &status, reason, rlen);
    if (err)
        return err;
    if (status != 200) {
        snprintf(reason, rlen,
                 "the instance metadata service answered HTTP %ld for the role's name%s", status,
                 status == 404 ? " (no IAM role attached to this instance?)" : "");
        return LF_EIO;
    }
    char role[96];
    size_t n = strcspn(c->resp.ptr, "\r\n");
    if (n == 0 || n >= sizeof(role)) {
        snprintf(reason, rlen, "the instance metadata service names no IAM role");
        return LF_EIO;
    }
    memcpy(role, c->resp.ptr, n);
    role[n] = '\0';
    if (!role_name_ok(role)) {
        snprintf(reason, rlen, "the instance metadata service's role name is not one");
        return LF_EIO;
    }
    char path[sizeof(base) + sizeof(role)];
    snprintf(path, sizeof(path), "%s%s", base, role);
    err = imds_get(c, path, &status, reason, rlen);
    if (err)
        return err;
    if (status != 200) {
        snprintf(reason, rlen,
                 "the instance metadata service answered HTTP %ld for the credentials of role "
                 "%s",
                 status, role);
        return LF_EIO;
    }
    char why[REASON_MAX / 2];
    err = lf_awscred__parse_imds(c->resp.ptr, c->resp.len, &c->next, why, sizeof(why));
    explicit_bzero(c->resp.ptr, c->resp.len);
    if (err) {
        snprintf(reason, rlen, "instance metadata (role %s): %s", role, why);
        return LF_EIO;
    }
    return LF_OK;
}

/* ---- the thread ---- */

static void format_time(int64_t ms, char *dst, size_t len)
{
    time_t t = (time_t)(ms / 1000);
    struct tm tm;
    if (gmtime_r(&t, &tm) == NULL || strftime(dst, len, "%Y-%m-%dT%H:%M:%SZ", &tm) == 0)
        snprintf(dst, len, "?");
}

static uint32_t next_rnd(struct lf_awscred *c)
{
    uint32_t x = c->rnd;
    x ^= x << 13;
    x ^= x >> 17;
    x ^= x << 5;
    return c->rnd = x;
}

/* One fetch; its result becomes cur (a new generation) or the reason, and the next fetch
 * is scheduled. Logs the outcome. */
static void fetch_once(struct lf_awscred *c)
{
    char reason[REASON_MAX] = "";
    lf_awscred_value_wipe(&c->next);
    enum lf_err err = c->src == SRC_WEB_IDENTITY ? fetch_web_identity(c, reason, sizeof(reason))
                                                 : fetch_imds(c, reason, sizeof(reason));
    explicit_bzero(c->resp.ptr, c->resp.len); /* the answer held the secret */
    if (atomic_load(&c->stop))
        return;
    int64_t now = wall_ms();
    if (!err && c->next.expires_ms <= now) {
        char at[32];
        format_time(c->next.expires_ms, at, sizeof(at));
        snprintf(reason, sizeof(reason),
                 "the credentials given expired already at %s (is the clock right?)", at);
        err = LF_EINVAL;
    }
    lf_config_scrub(&c->conf->env, reason, sizeof(reason));
    int64_t in_ms;
    bool first = false;
    uv_mutex_lock(&c->mu);
    if (!err) {
        c->next.gen = c->cur.gen + 1;
        memcpy(&c->cur, &c->next, sizeof(c->cur));
        c->reason[0] = '\0';
        c->failures = 0;
        in_ms = lf_awscred__refresh_in_ms(now, c->cur.expires_ms);
        first = !c->announced;
        c->announced = true;
    } else {
        snprintf(c->reason, sizeof(c->reason), "%s", reason);
        c->failures++;
        in_ms = lf_awscred__backoff_ms(c->failures, next_rnd(c));
    }
    c->next_ms = lf_mono_ms() + in_ms;
    uv_mutex_unlock(&c->mu);
    char until[32];
    format_time(c->next.expires_ms, until, sizeof(until));
    const char *what = c->src == SRC_WEB_IDENTITY ? "role " : "";
    const char *role = c->src == SRC_WEB_IDENTITY ? c->role_arn : c->url;
    if (!err)
        lf_log_at(first ? LF_LOG_INFO : LF_LOG_DEBUG,
                  "%s: AWS credentials from %s (%s%s), key id %s, valid until %s; fetching "
                  "again in %" PRId64 " s",
                  c->who, source_names[c->src], what, role, c->next.access_key_id, until,
                  in_ms / 1000);
    else
        lf_warn("%s: cannot get AWS credentials from %s (%s%s): %s; trying again in %" PRId64 " ms",
                c->who, source_names[c->src], what, role, reason, in_ms);
    lf_awscred_value_wipe(&c->next);
}

static void run(void *arg)
{
    struct lf_awscred *c = arg;
    uv_mutex_lock(&c->mu);
    while (!atomic_load(&c->stop)) {
        int64_t now = lf_mono_ms();
        if (c->wake || now >= c->next_ms) {
            c->wake = false;
            uv_mutex_unlock(&c->mu);
            fetch_once(c);
            uv_mutex_lock(&c->mu);
            continue;
        }
        uint64_t wait_ns = (uint64_t)(c->next_ms - now) * 1000000u;
        uv_cond_timedwait(&c->cond, &c->mu, wait_ns); /* woken, or due: the loop looks */
    }
    uv_mutex_unlock(&c->mu);
}

/* ---- making and freeing ---- */

/* Copies fixed credentials into c->cur. */
static enum lf_err set_fixed(struct lf_awscred *c,
                             const char *akid,
                             const char *secret,
                             const char *token,
                             struct lf_errbuf *eb)
{
    struct lf_awscred_value *v = &c->cur;
    if (strlen(akid) >= sizeof(v->access_key_id) || strlen(secret) >= sizeof(v->secret_key) ||
        (token != NULL && strlen(token) >= sizeof(v->session_token)))
        return lf_fail(eb, LF_ECONFIG, "%s: the AWS credentials from the %s are too long", c->who,
                       source_names[c->src]);
    snprintf(v->access_key_id, sizeof(v->access_key_id), "%s", akid);
    snprintf(v->secret_key, sizeof(v->secret_key), "%s", secret);
    snprintf(v->session_token, sizeof(v->session_token), "%s", token != NULL ? token : "");
    v->expires_ms = 0;
    v->gen = 1;
    return LF_OK;
}

static char *dup_trim_slash(const char *s)
{
    char *d = strdup(s);
    if (d != NULL) {
        size_t n = strlen(d);
        while (n > 0 && d[n - 1] == '/')
            d[--n] = '\0';
    }
    return d;
}

static bool imds_disabled(const struct lf_output_conf *conf)
{
    const char *off = env_nonempty("AWS_EC2_METADATA_DISABLED");
    return !conf->aws_imds || (off != NULL && strcasecmp(off, "true") == 0);
}

/* Picks a temporary source (web identity, else the metadata service) and resolves its
 * settings into c. */
static enum lf_err pick_temporary(struct lf_awscred *c, const char *region, struct lf_errbuf *eb)
{
    const struct lf_output_conf *conf = c->conf;
    const char *arn = conf->aws_role_arn, *file = conf->aws_web_identity_token_file;
    if ((arn != NULL) != (file != NULL))
        return lf_fail(eb, LF_ECONFIG,
                       "%s: give role_arn and web_identity_token_file together, or neither",
                       c->who);
    if (arn == NULL) {
        arn = env_nonempty("AWS_ROLE_ARN");
        file = env_nonempty("AWS_WEB_IDENTITY_TOKEN_FILE");
        if ((arn != NULL) != (file != NULL))
            return lf_fail(eb, LF_ECONFIG,
                           "%s: AWS_ROLE_ARN and AWS_WEB_IDENTITY_TOKEN_FILE go together: %s is "
                           "not set",
                           c->who, arn == NULL ? "AWS_ROLE_ARN" : "AWS_WEB_IDENTITY_TOKEN_FILE");
    }
    char url[512];
    if (arn != NULL) {
        c->src = SRC_WEB_IDENTITY;
        const char *name = conf->aws_role_session_name;
        if (name == NULL)
            name = env_nonempty("AWS_ROLE_SESSION_NAME");
        const char *sts = conf->aws_sts_endpoint;
        if (sts == NULL)
            sts = env_nonempty("AWS_ENDPOINT_URL_STS");
        if (sts == NULL && region != NULL)
            snprintf(url, sizeof(url), "https://sts.%s.amazonaws.com", region);
        else
            snprintf(url, sizeof(url), "%s", sts != NULL ? sts : "https://sts.amazonaws.com");
        c->role_arn = strdup(arn);
        c->token_file = strdup(file);
        c->session_name = strdup(name != NULL ? name : "logferry");
        c->url = strdup(url);
        if (c->role_arn == NULL || c->token_file == NULL || c->session_name == NULL ||
            c->url == NULL)
            return lf_fail(eb, LF_ENOMEM, "%s: out of memory", c->who);
        return LF_OK;
    }
    if (imds_disabled(conf))
        return lf_fail(eb, LF_ECONFIG,
                       "%s: no AWS credentials: give access_key_id and secret_access_key, set "
                       "AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, give role_arn and "
                       "web_identity_token_file (or set AWS_ROLE_ARN and "
                       "AWS_WEB_IDENTITY_TOKEN_FILE), or let the instance metadata service "
                       "give them (imds: true and AWS_EC2_METADATA_DISABLED not true)",
                       c->who);
    c->src = SRC_IMDS;
    const char *ep = conf->aws_imds_endpoint;
    if (ep == NULL)
        ep = env_nonempty("AWS_EC2_METADATA_SERVICE_ENDPOINT");
    c->url = dup_trim_slash(ep != NULL ? ep : "http://169.254.169.254");
    return c->url == NULL ? lf_fail(eb, LF_ENOMEM, "%s: out of memory", c->who) : LF_OK;
}

/* The thread and what it uses: libcurl, a multi handle, the answer's buffer. */
static enum lf_err start_thread(struct lf_awscred *c, struct lf_errbuf *eb)
{
    enum lf_err err = lf_netlib_load(LF_NETLIB_CURL, c->who, eb);
    if (err)
        return err;
    if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK)
        return lf_fail(eb, LF_EIO, "%s: cannot initialize libcurl", c->who);
    c->curl_global = true;
    c->multi = curl_multi_init();
    lf_buf_init(&c->resp, RESP_MAX);
    if (c->multi == NULL || lf_buf_grow(&c->resp, RESP_MAX) != LF_OK)
        return lf_fail(eb, LF_ENOMEM, "%s: out of memory", c->who);
    if (uv_cond_init(&c->cond) != 0)
        return lf_fail(eb, LF_EIO, "%s: cannot create a condition variable", c->who);
    c->rnd = (uint32_t)lf_mono_ms() ^ (uint32_t)(uintptr_t)c ^ 0x9e3779b9u;
    if (c->rnd == 0)
        c->rnd = 1;
    c->next_ms = lf_mono_ms(); /* the first fetch at once, on the thread */
    if (uv_thread_create(&c->thread, run, c) != 0) {
        uv_cond_destroy(&c->cond);
        return lf_fail(eb, LF_EIO, "%s: cannot start the AWS credentials thread", c->who);
    }
    c->thread_started = true;
    return LF_OK;
}

enum lf_err lf_awscred_new(const struct lf_output_conf *conf,
                           const char *region,
                           const char *who,
                           struct lf_awscred **out,
                           struct lf_errbuf *eb)
{
    if ((conf->aws_access_key_id != NULL) != (conf->aws_secret_access_key != NULL))
        return lf_fail(eb, LF_ECONFIG,
                       "%s: give access_key_id and secret_access_key together, or neither", who);
    struct lf_awscred *c = calloc(1, sizeof(*c));
    if (c == NULL)
        return lf_fail(eb, LF_ENOMEM, "%s: out of memory", who);
    c->conf = conf;
    c->who = strdup(who);
    atomic_init(&c->stop, false);
    if (c->who == NULL || uv_mutex_init(&c->mu) != 0) {
        free(c->who);
        free(c);
        return lf_fail(eb, LF_ENOMEM, "%s: out of memory", who);
    }
    enum lf_err err;
    const char *env_akid = env_nonempty("AWS_ACCESS_KEY_ID");
    const char *env_secret = env_nonempty("AWS_SECRET_ACCESS_KEY");
    if (conf->aws_access_key_id != NULL) {
        c->src = SRC_CONFIG;
        err = set_fixed(c, conf->aws_access_key_id, conf->aws_secret_access_key,
                        conf->aws_session_token, eb);
    } else if (env_akid != NULL && env_secret != NULL) {
        c->src = SRC_ENV;
        err = set_fixed(c, env_akid, env_secret, env_nonempty("AWS_SESSION_TOKEN"), eb);
    } else {
        err = pick_temporary(c, region, eb);
        if (!err)
            err = start_thread(c, eb);
    }
    if (err) {
        lf_awscred_free(c);
        return err;
    }
    *out = c;
    return LF_OK;
}

void lf_awscred_free(struct lf_awscred *c)
{
    if (c == NULL)
        return;
    if (c->thread_started) {
        uv_mutex_lock(&c->mu);
        atomic_store(&c->stop, true);
        uv_cond_signal(&c->cond);
        uv_mutex_unlock(&c->mu);
        curl_multi_wakeup(c->multi);
        uv_thread_join(&c->thread);
        uv_cond_destroy(&c->cond);
    }
    if (c->multi != NULL)
        curl_multi_cleanup(c->multi);
    if (c->curl_global)
        curl_global_cleanup();
    if (c->resp.ptr != NULL)
        explicit_bzero(c->resp.ptr, c->resp.len);
    lf_buf_release(&c->resp);
    explicit_bzero(c->imds_token, sizeof(c->imds_token));
    lf_awscred_value_wipe(&c->next);
    lf_awscred_value_wipe(&c->cur);
    uv_mutex_destroy(&c->mu);
    free(c->who);
    free(c->role_arn);
    free(c->token_file);
    free(c->session_name);
    free(c->url);
    free(c);
}

enum lf_err lf_awscred_get(struct lf_awscred *c, struct lf_awscred_value *v, struct lf_errbuf *eb)
{
    enum lf_err err = LF_OK;
    uv_mutex_lock(&c->mu);
    if (c->cur.gen == 0) {
        err = lf_fail(eb, LF_EAGAIN, "%s: no AWS credentials yet: %s", c->who,
                      c->reason[0] ? c->reason : "being fetched");
    } else if (c->cur.expires_ms != 0 && wall_ms() >= c->cur.expires_ms) {
        char at[32];
        format_time(c->cur.expires_ms, at, sizeof(at));
        err = lf_fail(eb, LF_EAGAIN, "%s: no AWS credentials yet: the last expired at %s%s%s",
                      c->who, at, c->reason[0] ? " and fetching new ones fails: " : "", c->reason);
    } else if (v->gen != c->cur.gen) {
        memcpy(v, &c->cur, sizeof(*v));
    }
    uv_mutex_unlock(&c->mu);
    return err;
}

const char *lf_awscred_source(const struct lf_awscred *c)
{
    return source_names[c->src];
}

void lf_awscred_refresh(struct lf_awscred *c)
{
    if (!c->thread_started)
        return; /* fixed credentials: nothing to fetch */
    uv_mutex_lock(&c->mu);
    int64_t now = lf_mono_ms();
    if (c->woken_ms == 0 || now - c->woken_ms >= 1000) {
        c->woken_ms = now;
        c->wake = true;
        uv_cond_signal(&c->cond);
    }
    uv_mutex_unlock(&c->mu);
}

void lf_awscred_value_wipe(struct lf_awscred_value *v)
{
    explicit_bzero(v, sizeof(*v));
}
