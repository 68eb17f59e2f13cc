/* httpc.c - the HTTP client of the HTTP-based outputs (see httpc_int.h).
 *
 * A libuv loop on a thread of the client's own drives libcurl's multi interface: one
 * uv_poll per socket libcurl names (CURLMOPT_SOCKETFUNCTION), one uv_timer for its timeout
 * (CURLMOPT_TIMERFUNCTION), one uv_async through which lf_httpc_submit() hands batches
 * over. A slot is freed before its batch is answered, so a lane that sends again from
 * inside the answer finds room, and the pending ring (as long as the slots) never
 * overflows while the lane keeps to max_in_flight. Nothing here allocates per batch: the
 * response buffers grow to the largest answer and stay. */
#include "config.h"

#define LF_LOG_COMPONENT "output"

#include "netlib_int.h"

#include <errno.h>
#include <inttypes.h>
#include <jansson.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>
#include <uv.h>
#include <zlib.h>

#include "awscred_int.h"
#include "httpc_int.h"
#include "logferry/buf.h"
#include "logferry/deadletter.h"
#include "logferry/log.h"
#include "logferry/output.h"
#include "output_int.h"
#include "sigv4_int.h"

#define LF_HTTPC_SIDE_MAX ((size_t)64 << 10) /* a side answer's bytes kept */

/* A signed request's own headers (`aws_sigv4`), in a slot: list nodes and their lines
 * made once, the lines rewritten per request, the last node linked to the client's shared
 * list; so signing allocates nothing per request. Also the slot's last payload hash. */
enum {
    SIG_DATE,
    SIG_SHA,
    SIG_TOKEN,
    SIG_AUTHZ,
    SIG_N
};
struct httpc_sig {
    struct curl_slist nodes[SIG_N];
    char date[48];                         /* "x-amz-date: ..." */
    char sha[32 + LF_SIGV4_HEX_LEN];       /* "x-amz-content-sha256: ..." */
    char token[32 + LF_AWSCRED_TOKEN_MAX]; /* "x-amz-security-token: ...": a secret */
    char authz[1024];                      /* "Authorization: AWS4-HMAC-SHA256 ..." */
    uint64_t gen;                          /* the credentials token was made from */
    const struct lf_batch *hash_b;         /* the body hash_hex is of: its batch, */
    const char *hash_ptr;                  /* bytes and length; NULL: none */
    size_t hash_len;
    char hash_hex[LF_SIGV4_HEX_LEN + 1];
};

/* One request slot: an easy handle and the batch it carries, if any. Loop thread. */
struct httpc_req {
    struct lf_httpc *h;
    CURL *easy;         /* owned; made at start, reused for every batch */
    struct lf_batch *b; /* borrowed: the batch on the wire, or NULL when the slot is free */
    char err[CURL_ERROR_SIZE];
    struct lf_buf resp;    /* the start of the response body, up to max_body */
    struct httpc_sig *sig; /* owned; NULL: not signed */
};

/* `aws_sigv4`: the credentials, the signer and what every request signs alike. Loop thread
 * but the provider's own thread. */
struct httpc_aws {
    struct lf_awscred *cred;       /* owned */
    struct lf_sigv4 *signer;       /* owned */
    struct lf_awscred_value value; /* the latest credentials: secrets */
    uint64_t signer_gen;           /* value.gen the signer holds; 0: none */
    char *host;                    /* owned; as libcurl sends it: with a port not the default */
    char *path;                    /* owned; as on the request line, "/" when none */
    char *query;                   /* owned; "" when none */
    char *ctype, *cenc;            /* owned; Content-Type and Content-Encoding values, or NULL */
    struct lf_sigv4_header hdrs[3];
    size_t n_hdrs;
};

/* A socket libcurl asked us to watch. */
struct httpc_sock {
    uv_poll_t poll; /* first: the close callback frees through it */
    curl_socket_t fd;
    struct lf_httpc *h;
};

/* A batch handed over by the lane, not started yet. */
struct httpc_job {
    struct lf_batch *b;
    struct lf_str body;
};

struct lf_httpc {
    const struct lf_output_conf *conf; /* borrowed */
    char *url;                         /* owned; what is requested */
    char *method;                      /* owned */
    char *where;                       /* owned; "METHOD scheme://host:port/path" */
    lf_httpc_done_fn *done;
    void *arg;
    uv_loop_t loop;
    uv_async_t wake;  /* submit() or free() has something for the loop */
    uv_timer_t timer; /* libcurl's timeout */
    uv_timer_t tick;  /* spec.tick's */
    void (*tick_fn)(void *arg);
    struct httpc_req side;           /* spec.side_url's request; side.easy NULL: none */
    struct curl_slist *side_headers; /* owned; headers but Content-Encoding: sent plain */
    bool side_busy;
    void (*side_done)(void *arg, const struct lf_httpc_reply *r);
    uv_thread_t thread;
    bool loop_ok; /* loop, wake and timer initialized */
    bool thread_started;
    CURLM *multi;               /* owned */
    CURLSH *share;              /* owned; TLS sessions and DNS shared by the slots */
    struct curl_slist *headers; /* owned; the same for every request */
    struct httpc_req *reqs;     /* owned; n_reqs slots */
    size_t n_reqs;
    struct httpc_aws *aws; /* owned; NULL: requests are not signed */
    bool curl_global;      /* curl_global_init() succeeded, so cleanup is due */

    uv_mutex_t mu;             /* guards what follows: written by submit/free, read by loop */
    struct httpc_job *pending; /* owned; a ring of n_reqs jobs */
    size_t p_head;
    size_t p_len;
    bool stopping;
};

/* Keeps the start of the response body. */
static size_t on_body(char *data, size_t size, size_t nmemb, void *arg)
{
    struct httpc_req *r = arg;
    size_t n = size * nmemb;
    size_t room = r->resp.max - r->resp.len;
    if (lf_buf_append(&r->resp, data, n < room ? n : room))
        return 0; /* out of memory: the transfer fails and is retried */
    return n;
}

bool lf_httpc_status_retryable(long status)
{
    return status == 408 || status == 429 || status >= 500;
}

void lf_httpc_reason(const struct lf_httpc *h,
                     const struct lf_httpc_reply *r,
                     char *dst,
                     size_t len)
{
    int n = snprintf(dst, len, "HTTP %ld", r->status);
    size_t at = n > 0 && (size_t)n < len ? (size_t)n : len - 1;
    size_t blen = r->body.len;
    while (blen > 0 && (unsigned char)r->body.ptr[blen - 1] <= ' ')
        blen--;
    if (blen > 0 && at + 3 < len) {
        dst[at++] = ':';
        dst[at++] = ' ';
        for (size_t i = 0; i < blen && at + 1 < len; i++) {
            unsigned char c = (unsigned char)r->body.ptr[i];
            dst[at++] = (char)(c >= 0x20 && c < 0x7f ? c : ' ');
        }
        dst[at] = '\0';
    }
    lf_config_scrub(&h->conf->env, dst, len);
}

/* ---- aws_sigv4 ---- */

/* What an AWS service answers when the credentials expired or are unknown, or the clock is
 * off: the batch is not at fault. A signature that does not match is not among them: the
 * secret is wrong, and fetching again would not help. */
static const char *const AWS_REFUSALS[] = {
    "ExpiredToken", /* and ExpiredTokenException */
    "InvalidClientTokenId",
    "UnrecognizedClient",
    "RequestTimeTooSkewed",
    "Signature expired",
    "security token included in the request is expired",
    "security token included in the request is invalid",
};

/* A 401 or 403 naming one of AWS_REFUSALS in its body: the credentials are fetched again
 * and the reply becomes an error, so every output retries the batch as after a failed
 * connection and never dead-letters it. The one place that decides this. Not a 400: its
 * body may quote the batch's own text (a mapping error), which may hold these words. */
static bool aws_refused(struct lf_httpc *h, struct httpc_req *r, struct lf_httpc_reply *reply)
{
    if (reply->error != NULL || reply->body.ptr == NULL || reply->body.len == 0 ||
        (reply->status != 401 && reply->status != 403))
        return false;
    for (size_t i = 0; i < sizeof(AWS_REFUSALS) / sizeof(AWS_REFUSALS[0]); i++) {
        const char *what = AWS_REFUSALS[i];
        if (memmem(reply->body.ptr, reply->body.len, what, strlen(what)) == NULL)
            continue;
        char reason[LF_HTTPC_REASON_MAX + 32];
        lf_httpc_reason(h, reply, reason, sizeof(reason));
        snprintf(r->err, sizeof(r->err),
                 "AWS refused the credentials or the clock (%s): %.160s; fetching credentials "
                 "again",
                 what, reason);
        reply->error = r->err;
        lf_awscred_refresh(h->aws->cred);
        return true;
    }
    return false;
}

/* After a signed request: a refusal of the credentials becomes an error, and the body's
 * hash is forgotten unless the same body is likely sent again (no answer, 408, 429, 5xx, a
 * refusal of the credentials): a batch's buffer may carry another body of the same length
 * next. */
static void aws_answered(struct lf_httpc *h, struct httpc_req *r, struct lf_httpc_reply *reply)
{
    bool again = aws_refused(h, r, reply) || reply->error != NULL ||
                 lf_httpc_status_retryable(reply->status);
    if (!again)
        r->sig->hash_ptr = NULL;
}

/* The hex SHA-256 of body: a slot's kept one when it hashed these bytes of b before (a
 * retry, maybe on another slot), else computed into r's. */
static const char *
body_hash(struct lf_httpc *h, struct httpc_req *r, const struct lf_batch *b, struct lf_str body)
{
    for (size_t i = 0; i < h->n_reqs; i++) {
        struct httpc_sig *g = h->reqs[i].sig;
        if (g->hash_ptr != NULL && g->hash_b == b && g->hash_ptr == body.ptr &&
            g->hash_len == body.len) {
            if (g != r->sig) {
                memcpy(r->sig->hash_hex, g->hash_hex, sizeof(g->hash_hex));
                g->hash_ptr = NULL;
            }
            r->sig->hash_b = b;
            r->sig->hash_ptr = body.ptr;
            r->sig->hash_len = body.len;
            return r->sig->hash_hex;
        }
    }
    lf_sigv4_sha256_hex(body.len > 0 ? body.ptr : "", body.len, r->sig->hash_hex);
    r->sig->hash_b = b;
    r->sig->hash_ptr = body.ptr;
    r->sig->hash_len = body.len;
    return r->sig->hash_hex;
}

/* Writes head and value into dst as a header line; false when it does not fit. */
static bool put_line(char *dst, size_t cap, const char *head, const char *value, size_t len)
{
    size_t hl = strlen(head);
    if (hl + len + 1 > cap)
        return false;
    memcpy(dst, head, hl);
    memcpy(dst + hl, value, len);
    dst[hl + len] = '\0';
    return true;
}

/* Signs the request of slot r carrying body, and points its header list at the signed
 * lines. LF_EAGAIN with r->err filled when there are no credentials yet (or they expired);
 * another error when the request cannot be signed. Loop thread. */
static enum lf_err
aws_sign(struct lf_httpc *h, struct httpc_req *r, const struct lf_batch *b, struct lf_str body)
{
    struct httpc_aws *a = h->aws;
    struct httpc_sig *g = r->sig;
    struct lf_errbuf eb = { "" };
    enum lf_err err = lf_awscred_get(a->cred, &a->value, &eb);
    if (err) {
        /* "output NAME: no AWS credentials yet: ...": the output's message names it */
        const char *msg = eb.msg;
        size_t skip = strlen("output ") + strlen(h->conf->name) + 2;
        if (strncmp(msg, "output ", 7) == 0 && strlen(msg) > skip)
            msg += skip;
        snprintf(r->err, sizeof(r->err), "%s", msg);
        return err;
    }
    if (a->signer_gen != a->value.gen) { /* new credentials: the signer takes them */
        err = lf_sigv4_set_credentials(a->signer, a->value.access_key_id, a->value.secret_key,
                                       a->value.session_token);
        if (err) {
            snprintf(r->err, sizeof(r->err), "cannot take the AWS credentials: %s",
                     lf_err_str(err));
            return err;
        }
        a->signer_gen = a->value.gen;
    }
    if (g->gen != a->value.gen) { /* and each slot its token line, as it starts */
        put_line(g->token, sizeof(g->token), "x-amz-security-token: ", a->value.session_token,
                 strlen(a->value.session_token)); /* fits: LF_AWSCRED_TOKEN_MAX bounds it */
        g->gen = a->value.gen;
    }
    char date[LF_SIGV4_DATE_LEN + 1];
    time_t now = time(NULL);
    struct tm tm;
    gmtime_r(&now, &tm);
    strftime(date, sizeof(date), "%Y%m%dT%H%M%SZ", &tm);
    const char *hash = body_hash(h, r, b, body);
    put_line(g->date, sizeof(g->date), "x-amz-date: ", date, LF_SIGV4_DATE_LEN);
    put_line(g->sha, sizeof(g->sha), "x-amz-content-sha256: ", hash, LF_SIGV4_HEX_LEN);
    struct lf_sigv4_req req = { .method = h->method,
                                .path = a->path,
                                .path_len = strlen(a->path),
                                .query = a->query,
                                .query_len = strlen(a->query),
                                .headers = a->hdrs,
                                .n_headers = a->n_hdrs,
                                .payload_sha256 = hash,
                                .amz_date = date };
    static const char AUTHZ[] = "Authorization: ";
    memcpy(g->authz, AUTHZ, sizeof(AUTHZ) - 1);
    err = lf_sigv4_sign(a->signer, &req, g->authz + sizeof(AUTHZ) - 1,
                        sizeof(g->authz) - (sizeof(AUTHZ) - 1));
    if (err) {
        snprintf(r->err, sizeof(r->err), "cannot sign the request: %s", lf_err_str(err));
        return err;
    }
    /* date, sha, [token,] authz, then the shared list */
    g->nodes[SIG_DATE].next = &g->nodes[SIG_SHA];
    g->nodes[SIG_SHA].next =
        a->value.session_token[0] != '\0' ? &g->nodes[SIG_TOKEN] : &g->nodes[SIG_AUTHZ];
    g->nodes[SIG_TOKEN].next = &g->nodes[SIG_AUTHZ];
    g->nodes[SIG_AUTHZ].next = h->headers;
    curl_easy_setopt(r->easy, CURLOPT_HTTPHEADER, &g->nodes[SIG_DATE]);
    return LF_OK;
}

/* The header value of name among the caller's lines, copied; NULL when absent. */
static char *line_value(const char *const *lines, const char *name, bool *ok)
{
    size_t n = strlen(name);
    for (size_t i = 0; lines != NULL && lines[i] != NULL; i++) {
        if (strncasecmp(lines[i], name, n) == 0 && lines[i][n] == ':') {
            const char *v = lines[i] + n + 1;
            while (*v == ' ')
                v++;
            char *d = strdup(v);
            *ok &= d != NULL;
            return d;
        }
    }
    return NULL;
}

/* The host, path and query the signature covers, from the URL as libcurl reads it. */
static enum lf_err aws_url_parts(struct httpc_aws *a, const char *url)
{
    CURLU *u = curl_url();
    char *host = NULL, *port = NULL, *path = NULL, *query = NULL, *scheme = NULL;
    enum lf_err err = LF_ENOMEM;
    if (u != NULL && curl_url_set(u, CURLUPART_URL, url, 0) == CURLUE_OK &&
        curl_url_get(u, CURLUPART_HOST, &host, 0) == CURLUE_OK &&
        curl_url_get(u, CURLUPART_SCHEME, &scheme, 0) == CURLUE_OK &&
        curl_url_get(u, CURLUPART_PATH, &path, 0) == CURLUE_OK) {
        if (curl_url_get(u, CURLUPART_PORT, &port, 0) != CURLUE_OK)
            port = NULL; /* none given: the scheme's */
        if (curl_url_get(u, CURLUPART_QUERY, &query, 0) != CURLUE_OK)
            query = NULL;
        bool dflt = port == NULL || (strcmp(scheme, "http") == 0 && strcmp(port, "80") == 0) ||
                    (strcmp(scheme, "https") == 0 && strcmp(port, "443") == 0);
        size_t len = strlen(host) + (port != NULL ? strlen(port) : 0) + 2;
        a->host = malloc(len);
        if (a->host != NULL)
            snprintf(a->host, len, "%s%s%s", host, dflt ? "" : ":", dflt ? "" : port);
        a->path = strdup(path[0] != '\0' ? path : "/");
        a->query = strdup(query != NULL ? query : "");
        if (a->host != NULL && a->path != NULL && a->query != NULL)
            err = LF_OK;
    }
    curl_free(host);
    curl_free(port);
    curl_free(path);
    curl_free(query);
    curl_free(scheme);
    curl_url_cleanup(u);
    return err;
}

static void aws_free(struct lf_httpc *h)
{
    struct httpc_aws *a = h->aws;
    for (size_t i = 0; i < h->n_reqs; i++) {
        if (h->reqs[i].sig != NULL)
            explicit_bzero(h->reqs[i].sig, sizeof(*h->reqs[i].sig));
        free(h->reqs[i].sig);
    }
    if (a == NULL)
        return;
    lf_awscred_free(a->cred);
    lf_sigv4_free(a->signer);
    lf_awscred_value_wipe(&a->value);
    free(a->host);
    free(a->path);
    free(a->query);
    free(a->ctype);
    free(a->cenc);
    free(a);
    h->aws = NULL;
}

/* `aws_sigv4` set (a region and a service): the provider, the signer, the signed parts of
 * the URL and headers, and each slot's lines. */
static enum lf_err aws_make(struct lf_httpc *h, const char *const *lines, struct lf_errbuf *eb)
{
    const struct lf_output_conf *conf = h->conf;
    char who[300];
    snprintf(who, sizeof(who), "output %s", conf->name);
    struct httpc_aws *a = calloc(1, sizeof(*a));
    if (a == NULL)
        return lf_fail(eb, LF_ENOMEM, "%s: out of memory", who);
    h->aws = a;
    bool ok = aws_url_parts(a, h->url) == LF_OK;
    a->ctype = line_value(lines, "Content-Type", &ok);
    a->cenc = line_value(lines, "Content-Encoding", &ok);
    for (size_t i = 0; i < h->n_reqs && ok; i++) {
        h->reqs[i].sig = calloc(1, sizeof(struct httpc_sig));
        ok = h->reqs[i].sig != NULL;
        if (ok) {
            struct httpc_sig *g = h->reqs[i].sig;
            g->nodes[SIG_DATE].data = g->date;
            g->nodes[SIG_SHA].data = g->sha;
            g->nodes[SIG_TOKEN].data = g->token;
            g->nodes[SIG_AUTHZ].data = g->authz;
        }
    }
    if (!ok || a->host == NULL)
        return lf_fail(eb, LF_ENOMEM, "%s: out of memory", who);
    a->hdrs[a->n_hdrs++] = (struct lf_sigv4_header){ "host", 4, a->host, strlen(a->host) };
    if (a->ctype != NULL)
        a->hdrs[a->n_hdrs++] =
            (struct lf_sigv4_header){ "content-type", 12, a->ctype, strlen(a->ctype) };
    if (a->cenc != NULL)
        a->hdrs[a->n_hdrs++] =
            (struct lf_sigv4_header){ "content-encoding", 16, a->cenc, strlen(a->cenc) };
    const struct lf_sigv4_conf sc = { .region = conf->aws_region,
                                      .service = conf->aws_service,
                                      .sign_content_sha256 = true };
    a->signer = lf_sigv4_new(&sc, who, eb);
    if (a->signer == NULL)
        return LF_EIO;
    enum lf_err err = lf_awscred_new(conf, conf->aws_region, who, &a->cred, eb);
    if (!err)
        lf_info("%s: requests signed with AWS Signature Version 4 (region %s, service %s), "
                "credentials from %s",
                who, conf->aws_region, conf->aws_service, lf_awscred_source(a->cred));
    return err;
}

/* Answers r's batch from the transfer's outcome rc. Loop thread. */
static void finish(struct lf_httpc *h, struct httpc_req *r, CURLcode rc)
{
    struct lf_batch *b = r->b;
    r->b = NULL; /* free before the answer: the lane may submit again from inside done */
    h->side_busy &= r != &h->side;
    struct lf_httpc_reply reply = { NULL, 0, lf_buf_str(&r->resp), 0 };
    if (rc != CURLE_OK) {
        if (r->err[0] == '\0')
            snprintf(r->err, sizeof(r->err), "%s", curl_easy_strerror(rc));
        lf_config_scrub(&h->conf->env, r->err, sizeof(r->err)); /* it may name a host, a file */
        reply.error = r->err;
    } else {
        curl_easy_getinfo(r->easy, CURLINFO_RESPONSE_CODE, &reply.status);
        curl_off_t after = 0;
        if (curl_easy_getinfo(r->easy, CURLINFO_RETRY_AFTER, &after) == CURLE_OK && after > 0) {
            uint64_t ms = (uint64_t)after * 1000;
            reply.retry_after_ms = ms < h->conf->backoff_max_ms ? ms : h->conf->backoff_max_ms;
        }
    }
    if (h->aws != NULL && r->sig != NULL)
        aws_answered(h, r, &reply);
    if (r == &h->side)
        h->side_done(h->arg, &reply);
    else
        h->done(h->arg, b, &reply);
}

static void on_closed(uv_handle_t *handle)
{
    if (handle->type == UV_POLL)
        free(handle); /* the struct httpc_sock it starts */
}

static void start_pending(struct lf_httpc *h);

/* Answers every transfer libcurl reports finished, then starts what is pending. */
static void check_done(struct lf_httpc *h)
{
    CURLMsg *m;
    int left;
    while ((m = curl_multi_info_read(h->multi, &left)) != NULL) {
        if (m->msg != CURLMSG_DONE)
            continue;
        CURL *easy = m->easy_handle;
        CURLcode rc = m->data.result; /* m is gone once the handle is removed */
        struct httpc_req *r = NULL;
        curl_easy_getinfo(easy, CURLINFO_PRIVATE, (char **)&r);
        curl_multi_remove_handle(h->multi, easy);
        finish(h, r, rc);
    }
    start_pending(h);
}

static void on_poll(uv_poll_t *poll, int status, int events)
{
    struct httpc_sock *sk = (struct httpc_sock *)poll;
    int flags = 0;
    if (status < 0)
        flags = CURL_CSELECT_ERR;
    if (events & UV_READABLE)
        flags |= CURL_CSELECT_IN;
    if (events & UV_WRITABLE)
        flags |= CURL_CSELECT_OUT;
    int running;
    curl_multi_socket_action(sk->h->multi, sk->fd, flags, &running);
    check_done(sk->h);
}

static void on_timer(uv_timer_t *t)
{
    struct lf_httpc *h = t->data;
    int running;
    curl_multi_socket_action(h->multi, CURL_SOCKET_TIMEOUT, 0, &running);
    check_done(h);
}

/* CURLMOPT_SOCKETFUNCTION: watch s for what libcurl waits on, or stop watching it. */
static int on_socket(CURL *easy, curl_socket_t s, int what, void *arg, void *socketp)
{
    (void)easy;
    struct lf_httpc *h = arg;
    struct httpc_sock *sk = socketp;
    if (what == CURL_POLL_REMOVE) {
        if (sk != NULL) {
            uv_poll_stop(&sk->poll);
            uv_close((uv_handle_t *)&sk->poll, on_closed);
            curl_multi_assign(h->multi, s, NULL);
        }
        return 0;
    }
    if (sk == NULL) {
        sk = calloc(1, sizeof(*sk)); /* per connection, not per batch */
        if (sk == NULL)
            return -1;
        if (uv_poll_init_socket(&h->loop, &sk->poll, s) != 0) {
            free(sk);
            return -1;
        }
        sk->fd = s;
        sk->h = h;
        curl_multi_assign(h->multi, s, sk);
    }
    int events = 0;
    if (what & CURL_POLL_IN)
        events |= UV_READABLE;
    if (what & CURL_POLL_OUT)
        events |= UV_WRITABLE;
    return uv_poll_start(&sk->poll, events, on_poll) == 0 ? 0 : -1;
}

/* CURLMOPT_TIMERFUNCTION: libcurl wants on_timer in timeout_ms (-1: never). */
static int on_curl_timer(CURLM *multi, long timeout_ms, void *arg)
{
    (void)multi;
    struct lf_httpc *h = arg;
    if (timeout_ms < 0)
        uv_timer_stop(&h->timer);
    else
        uv_timer_start(&h->timer, on_timer, (uint64_t)timeout_ms, 0);
    return 0;
}

/* Starts job on free slot r. */
static void start_one(struct lf_httpc *h, struct httpc_req *r, struct httpc_job job)
{
    r->b = job.b;
    r->err[0] = '\0';
    lf_buf_reset(&r->resp);
    curl_easy_setopt(r->easy, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)job.body.len);
    curl_easy_setopt(r->easy, CURLOPT_POSTFIELDS, job.body.ptr);
    if (r->sig != NULL && aws_sign(h, r, job.b, job.body) != LF_OK) {
        finish(h, r, CURLE_LOGIN_DENIED); /* r->err says why: retried as a failed connection */
        return;
    }
    CURLMcode mc = curl_multi_add_handle(h->multi, r->easy);
    if (mc != CURLM_OK) {
        snprintf(r->err, sizeof(r->err), "%s", curl_multi_strerror(mc));
        finish(h, r, CURLE_FAILED_INIT);
    }
}

/* Moves pending batches into free slots. Loop thread. */
static void start_pending(struct lf_httpc *h)
{
    for (size_t i = 0; i < h->n_reqs; i++) {
        if (h->reqs[i].b != NULL)
            continue;
        uv_mutex_lock(&h->mu);
        struct httpc_job job = { NULL, { NULL, 0 } };
        if (h->p_len > 0 && !h->stopping) {
            job = h->pending[h->p_head];
            h->p_head = (h->p_head + 1) % h->n_reqs;
            h->p_len--;
        }
        uv_mutex_unlock(&h->mu);
        if (job.b == NULL)
            return;
        start_one(h, &h->reqs[i], job);
    }
}

static void close_walk(uv_handle_t *handle, void *arg)
{
    (void)arg;
    if (!uv_is_closing(handle))
        uv_close(handle, on_closed);
}

static void on_wake(uv_async_t *a)
{
    struct lf_httpc *h = a->data;
    uv_mutex_lock(&h->mu);
    bool stopping = h->stopping;
    uv_mutex_unlock(&h->mu);
    if (!stopping) {
        start_pending(h);
        return;
    }
    /* The pipeline closes an output only once every batch is answered: nothing is on the
     * wire. Closing the multi handle closes its connections, and with them their polls. */
    for (size_t i = 0; i < h->n_reqs; i++) {
        if (h->reqs[i].b != NULL)
            curl_multi_remove_handle(h->multi, h->reqs[i].easy);
    }
    if (h->side_busy)
        curl_multi_remove_handle(h->multi, h->side.easy);
    curl_multi_cleanup(h->multi);
    h->multi = NULL;
    uv_walk(&h->loop, close_walk, NULL);
}

static void loop_main(void *arg)
{
    struct lf_httpc *h = arg;
    uv_run(&h->loop, UV_RUN_DEFAULT);
}

/* "METHOD scheme://host:port/path" for messages: no user info, query or fragment. */
static enum lf_err describe_url(struct lf_httpc *h, struct lf_errbuf *eb)
{
    const struct lf_output_conf *conf = h->conf;
    CURLU *u = curl_url();
    char *scheme = NULL;
    char *plain = NULL;
    if (u == NULL)
        return lf_fail(eb, LF_ENOMEM, "output %s: out of memory", conf->name);
    /* The URL itself is not quoted: it may come from the environment with a token in it. */
    enum lf_err err = LF_ECONFIG;
    if (curl_url_set(u, CURLUPART_URL, h->url, 0) != CURLUE_OK ||
        curl_url_get(u, CURLUPART_SCHEME, &scheme, 0) != CURLUE_OK) {
        lf_fail(eb, err, "output %s: url is not a valid URL", conf->name);
        goto out;
    }
    if (strcmp(scheme, "http") != 0 && strcmp(scheme, "https") != 0) {
        lf_fail(eb, err, "output %s: url must start with http:// or https://", conf->name);
        goto out;
    }
    curl_url_set(u, CURLUPART_USER, NULL, 0);
    curl_url_set(u, CURLUPART_PASSWORD, NULL, 0);
    curl_url_set(u, CURLUPART_QUERY, NULL, 0);
    curl_url_set(u, CURLUPART_FRAGMENT, NULL, 0);
    err = LF_ENOMEM;
    if (curl_url_get(u, CURLUPART_URL, &plain, 0) != CURLUE_OK) {
        lf_fail(eb, err, "output %s: out of memory", conf->name);
        goto out;
    }
    size_t len = strlen(h->method) + 1 + strlen(plain) + 1;
    h->where = malloc(len);
    if (h->where == NULL) {
        lf_fail(eb, err, "output %s: out of memory", conf->name);
        goto out;
    }
    snprintf(h->where, len, "%s %s", h->method, plain);
    err = LF_OK;
out:
    curl_free(scheme);
    curl_free(plain);
    curl_url_cleanup(u);
    return err;
}

/* Appends "Name: value" to the header list. */
static enum lf_err add_header(struct lf_httpc *h, const char *name, const char *value)
{
    size_t len = strlen(name) + 2 + strlen(value) + 1;
    char *line = malloc(len);
    if (line == NULL)
        return LF_ENOMEM;
    snprintf(line, len, "%s: %s", name, value);
    struct curl_slist *l = curl_slist_append(h->headers, line);
    memset(line, 0, len); /* it may hold a token */
    free(line);
    if (l == NULL)
        return LF_ENOMEM;
    h->headers = l;
    return LF_OK;
}

static bool header_safe(const char *s, bool name)
{
    for (; *s != '\0'; s++) {
        unsigned char c = (unsigned char)*s;
        if (c < 0x20 || c == 0x7f || (name && (c == ':' || c == ' ')))
            return false;
    }
    return true;
}

/* The `headers` object: string values only, no line breaks. Values are never quoted back. */
static enum lf_err add_user_headers(struct lf_httpc *h, struct lf_errbuf *eb)
{
    const char *name = h->conf->name;
    if (h->conf->headers_json == NULL)
        return LF_OK;
    json_t *obj = json_loads(h->conf->headers_json, 0, NULL);
    if (!json_is_object(obj)) {
        json_decref(obj);
        return lf_fail(eb, LF_ECONFIG, "output %s: headers must be a mapping of names to values",
                       name);
    }
    const char *key;
    json_t *v;
    enum lf_err err = LF_OK;
    json_object_foreach(obj, key, v)
    {
        if (!json_is_string(v) || key[0] == '\0' || !header_safe(key, true) ||
            !header_safe(json_string_value(v), false)) {
            err = lf_fail(eb, LF_ECONFIG,
                          "output %s: headers: \"%.64s\" must be a header name with a "
                          "one-line string value",
                          name, header_safe(key, true) ? key : "?");
            break;
        }
        err = add_header(h, key, json_string_value(v));
        if (err) {
            lf_fail(eb, err, "output %s: out of memory", name);
            break;
        }
    }
    json_decref(obj);
    return err;
}

#define SET(opt, val)                           \
    do {                                        \
        if (rc == CURLE_OK)                     \
            rc = curl_easy_setopt(e, opt, val); \
    } while (0)

enum lf_err lf_httpc_easy_conf(void *easy, const struct lf_output_conf *conf)
{
    CURL *e = easy;
    CURLcode rc = CURLE_OK;
    SET(CURLOPT_PROTOCOLS_STR, "http,https");
    SET(CURLOPT_NOSIGNAL, 1L);
    SET(CURLOPT_TIMEOUT_MS, (long)conf->timeout_ms);
    SET(CURLOPT_CONNECTTIMEOUT_MS, (long)conf->timeout_ms);
    SET(CURLOPT_TCP_KEEPALIVE, 1L);
    if (conf->proxy != NULL)
        SET(CURLOPT_PROXY, conf->proxy);
    if (conf->tls_ca_file != NULL)
        SET(CURLOPT_CAINFO, conf->tls_ca_file);
    if (conf->tls_cert_file != NULL)
        SET(CURLOPT_SSLCERT, conf->tls_cert_file);
    if (conf->tls_key_file != NULL)
        SET(CURLOPT_SSLKEY, conf->tls_key_file);
    SET(CURLOPT_SSL_VERIFYPEER, conf->tls_verify ? 1L : 0L);
    SET(CURLOPT_SSL_VERIFYHOST, conf->tls_verify ? 2L : 0L);
    return rc == CURLE_OK ? LF_OK : rc == CURLE_OUT_OF_MEMORY ? LF_ENOMEM : LF_EINVAL;
}

/* Sets every option that stays the same for all requests of slot r. */
static enum lf_err setup_easy(struct lf_httpc *h, struct httpc_req *r)
{
    const struct lf_output_conf *conf = h->conf;
    CURL *e = curl_easy_init();
    if (e == NULL)
        return LF_ENOMEM;
    r->easy = e;
    r->h = h;
    enum lf_err err = lf_httpc_easy_conf(e, conf);
    if (err)
        return err;
    CURLcode rc = CURLE_OK;
    SET(CURLOPT_URL, h->url);
    SET(CURLOPT_PRIVATE, r);
    SET(CURLOPT_ERRORBUFFER, r->err);
    SET(CURLOPT_WRITEFUNCTION, on_body);
    SET(CURLOPT_WRITEDATA, r);
    SET(CURLOPT_HTTPHEADER, h->headers);
    SET(CURLOPT_SHARE, h->share);
    SET(CURLOPT_POST, 1L);
    if (strcmp(h->method, "POST") != 0)
        SET(CURLOPT_CUSTOMREQUEST, h->method);
    if (conf->auth_user != NULL) {
        SET(CURLOPT_HTTPAUTH, (long)CURLAUTH_BASIC);
        SET(CURLOPT_USERNAME, conf->auth_user);
        SET(CURLOPT_PASSWORD, conf->auth_password);
    }
    return rc == CURLE_OK ? LF_OK : rc == CURLE_OUT_OF_MEMORY ? LF_ENOMEM : LF_EINVAL;
}
#undef SET

/* The header list: the caller's, then bearer token and `headers`. */
static enum lf_err make_headers(struct lf_httpc *h, const char *const *lines, struct lf_errbuf *eb)
{
    const struct lf_output_conf *conf = h->conf;
    enum lf_err err = LF_OK;
    for (size_t i = 0; lines != NULL && lines[i] != NULL && !err; i++) {
        struct curl_slist *l = curl_slist_append(h->headers, lines[i]);
        if (l == NULL)
            err = LF_ENOMEM;
        else
            h->headers = l;
    }
    if (!err)
        err = add_header(h, "Expect", ""); /* no 100-continue round trip: "Expect:" drops it */
    if (!err && conf->bearer_token != NULL) {
        size_t len = strlen(conf->bearer_token) + sizeof("Bearer ");
        char *v = malloc(len);
        if (v == NULL)
            return lf_fail(eb, LF_ENOMEM, "output %s: out of memory", conf->name);
        snprintf(v, len, "Bearer %s", conf->bearer_token);
        err = add_header(h, "Authorization", v);
        memset(v, 0, len);
        free(v);
    }
    if (err)
        return lf_fail(eb, err, "output %s: out of memory", conf->name);
    return add_user_headers(h, eb);
}

static enum lf_err make_curl(struct lf_httpc *h, const char *const *lines, struct lf_errbuf *eb)
{
    const char *name = h->conf->name;
    if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK)
        return lf_fail(eb, LF_EIO, "output %s: cannot initialize libcurl", name);
    h->curl_global = true;
    h->multi = curl_multi_init();
    h->share = curl_share_init();
    if (h->multi == NULL || h->share == NULL)
        return lf_fail(eb, LF_ENOMEM, "output %s: out of memory", name);
    /* Every handle lives on the loop thread: the share needs no locks. */
    curl_share_setopt(h->share, CURLSHOPT_SHARE, CURL_LOCK_DATA_SSL_SESSION);
    curl_share_setopt(h->share, CURLSHOPT_SHARE, CURL_LOCK_DATA_DNS);
    curl_multi_setopt(h->multi, CURLMOPT_SOCKETFUNCTION, on_socket);
    curl_multi_setopt(h->multi, CURLMOPT_SOCKETDATA, h);
    curl_multi_setopt(h->multi, CURLMOPT_TIMERFUNCTION, on_curl_timer);
    curl_multi_setopt(h->multi, CURLMOPT_TIMERDATA, h);
    curl_multi_setopt(h->multi, CURLMOPT_MAXCONNECTS, (long)h->n_reqs);
    enum lf_err err = make_headers(h, lines, eb);
    if (err)
        return err;
    for (size_t i = 0; i < h->n_reqs; i++) {
        err = setup_easy(h, &h->reqs[i]);
        if (err == LF_ENOMEM)
            return lf_fail(eb, err, "output %s: out of memory", name);
        if (err) {
            return lf_fail(eb, LF_ECONFIG,
                           "output %s: this libcurl cannot apply the settings "
                           "(method, tls or proxy)",
                           name);
        }
    }
    return LF_OK;
}

/* url: http or https, a host, a port from 1 to 65535 if one is given. The URL is never
 * quoted: it may come from the environment with a token in it. */
/* A URL's explicit port: digits only, 1 to 65535. */
static bool port_in_range(const char *port)
{
    char *end = NULL;
    errno = 0;
    long n = strtol(port, &end, 10);
    return errno == 0 && end != port && *end == '\0' && n >= 1 && n <= 65535;
}

static void check_url(const char *url, struct lf_config_report *rep)
{
    CURLU *u = curl_url();
    char *scheme = NULL;
    char *host = NULL;
    char *port = NULL;
    if (u == NULL)
        return; /* out of memory: open says so */
    if (curl_url_set(u, CURLUPART_URL, url, 0) != CURLUE_OK ||
        curl_url_get(u, CURLUPART_SCHEME, &scheme, 0) != CURLUE_OK ||
        curl_url_get(u, CURLUPART_HOST, &host, 0) != CURLUE_OK || host[0] == '\0') {
        lf_config_report(rep, "url",
                         "not a valid URL: expected http(s)://HOST[:PORT][/PATH] "
                         "(a port is at most 65535)");
    } else if (strcmp(scheme, "http") != 0 && strcmp(scheme, "https") != 0) {
        lf_config_report(rep, "url", "the scheme must be http:// or https://");
    } else if (curl_url_get(u, CURLUPART_PORT, &port, 0) == CURLUE_OK && !port_in_range(port)) {
        lf_config_report(rep, "url", "the port must be from 1 to 65535");
    }
    curl_free(scheme);
    curl_free(host);
    curl_free(port);
    curl_url_cleanup(u);
}

/* headers: a mapping of header names to one-line string values (after ${VAR} too: a line
 * break would start a header of the value's choosing). Values are never quoted. */
static void check_headers(const char *headers_json, struct lf_config_report *rep)
{
    if (headers_json == NULL)
        return;
    json_t *obj = json_loads(headers_json, 0, NULL);
    if (!json_is_object(obj)) {
        lf_config_report(rep, "headers", "expected a mapping of header names to values");
        json_decref(obj);
        return;
    }
    const char *key;
    json_t *v;
    json_object_foreach(obj, key, v)
    {
        char at[300];
        snprintf(at, sizeof(at), "headers.%s", key);
        if (key[0] == '\0' || !header_safe(key, true))
            lf_config_report(rep, "headers", "\"%.64s\" is not a header name",
                             header_safe(key, false) ? key : "?");
        else if (!json_is_string(v))
            lf_config_report(rep, at, "expected a string value");
        else if (!header_safe(json_string_value(v), false))
            lf_config_report(rep, at,
                             "the value must be one line of text: no CR, LF or other "
                             "control bytes");
    }
    json_decref(obj);
}

void lf_httpc_check(const struct lf_output_conf *conf, struct lf_config_report *rep)
{
    if (conf->url != NULL)
        check_url(conf->url, rep);
    check_headers(conf->headers_json, rep);
    if (conf->auth_user != NULL && conf->bearer_token != NULL)
        lf_config_report(rep, "bearer_token",
                         "auth and bearer_token exclude each other: give one of them");
    if (conf->aws_region != NULL && conf->aws_service != NULL) {
        const char *other = conf->auth_user != NULL      ? "auth"
                            : conf->bearer_token != NULL ? "bearer_token"
                            : conf->api_key != NULL      ? "api_key"
                                                         : NULL;
        if (other != NULL)
            lf_config_report(rep, other, "aws_sigv4 signs the requests: drop %s", other);
    }
    lf_output__check_tls_files(conf, rep);
}

void lf_httpc_free(struct lf_httpc *h)
{
    if (h == NULL)
        return;
    if (h->thread_started) {
        uv_mutex_lock(&h->mu);
        h->stopping = true;
        uv_mutex_unlock(&h->mu);
        uv_async_send(&h->wake);
        uv_thread_join(&h->thread);
    } else if (h->loop_ok) {
        uv_walk(&h->loop, close_walk, NULL);
        uv_run(&h->loop, UV_RUN_DEFAULT);
    }
    if (h->loop_ok && uv_loop_close(&h->loop) != 0)
        lf_error("output %s: its event loop did not close cleanly", h->conf->name);
    aws_free(h);
    if (h->multi != NULL)
        curl_multi_cleanup(h->multi);
    for (size_t i = 0; i < h->n_reqs; i++)
        curl_easy_cleanup(h->reqs[i].easy);
    curl_easy_cleanup(h->side.easy);
    curl_slist_free_all(h->side_headers);
    lf_buf_release(&h->side.resp);
    if (h->share != NULL)
        curl_share_cleanup(h->share);
    curl_slist_free_all(h->headers);
    if (h->curl_global)
        curl_global_cleanup();
    for (size_t i = 0; i < h->n_reqs; i++)
        lf_buf_release(&h->reqs[i].resp);
    uv_mutex_destroy(&h->mu);
    free(h->url);
    free(h->method);
    free(h->where);
    free(h->reqs);
    free(h->pending);
    free(h);
}

static void on_tick(uv_timer_t *t)
{
    struct lf_httpc *h = t->data;
    h->tick_fn(h->arg);
}

/* The side request's handle: a slot's settings, its own URL, its body plain. */
static enum lf_err
make_side(struct lf_httpc *h, const struct lf_httpc_spec *spec, struct lf_errbuf *eb)
{
    h->side_done = spec->side_done;
    lf_buf_init(&h->side.resp, LF_HTTPC_SIDE_MAX);
    enum lf_err err = setup_easy(h, &h->side);
    for (const struct curl_slist *l = h->headers; l != NULL && !err; l = l->next) {
        struct curl_slist *n = strncmp(l->data, "Content-Encoding:", 17) == 0
                                   ? h->side_headers
                                   : curl_slist_append(h->side_headers, l->data);
        err = n == NULL ? LF_ENOMEM : LF_OK;
        h->side_headers = n;
    }
    if (!err && (curl_easy_setopt(h->side.easy, CURLOPT_URL, spec->side_url) != CURLE_OK ||
                 curl_easy_setopt(h->side.easy, CURLOPT_HTTPHEADER, h->side_headers) != CURLE_OK))
        err = LF_ENOMEM;
    return err ? lf_fail(eb, err, "output %s: cannot set up its second request", h->conf->name)
               : LF_OK;
}

enum lf_err lf_httpc_new(const struct lf_output_conf *conf,
                         const struct lf_httpc_spec *spec,
                         struct lf_httpc **out,
                         struct lf_errbuf *eb)
{
    enum lf_err err = LF_OK; /* conf passed lf_httpc_check() in lf_output_open() */
    struct lf_httpc *h = calloc(1, sizeof(*h));
    if (h == NULL)
        return lf_fail(eb, LF_ENOMEM, "output %s: out of memory", conf->name);
    h->conf = conf;
    h->done = spec->done;
    h->arg = spec->arg;
    h->n_reqs = conf->max_in_flight > 0 ? (size_t)conf->max_in_flight : 1;
    h->reqs = calloc(h->n_reqs, sizeof(*h->reqs));
    h->pending = calloc(h->n_reqs, sizeof(*h->pending));
    h->url = strdup(spec->url);
    h->method = strdup(spec->method);
    if (h->reqs == NULL || h->pending == NULL || h->url == NULL || h->method == NULL ||
        uv_mutex_init(&h->mu) != 0) {
        free(h->reqs);
        free(h->pending);
        free(h->url);
        free(h->method);
        free(h);
        return lf_fail(eb, LF_ENOMEM, "output %s: out of memory", conf->name);
    }
    for (size_t i = 0; i < h->n_reqs; i++)
        lf_buf_init(&h->reqs[i].resp, spec->max_body);
    err = describe_url(h, eb);
    if (!err)
        err = make_curl(h, spec->headers, eb);
    if (!err && spec->side_url != NULL)
        err = make_side(h, spec, eb);
    if (!err && conf->aws_region != NULL && conf->aws_service != NULL)
        err = aws_make(h, spec->headers, eb);
    if (!err && (uv_loop_init(&h->loop) != 0))
        err = lf_fail(eb, LF_EIO, "output %s: cannot create an event loop", conf->name);
    if (!err) {
        uv_async_init(&h->loop, &h->wake, on_wake); /* cannot fail on an initialized loop */
        uv_timer_init(&h->loop, &h->timer);
        uv_timer_init(&h->loop, &h->tick);
        h->wake.data = h;
        h->timer.data = h;
        h->tick.data = h;
        h->tick_fn = spec->tick;
        if (spec->tick != NULL)
            uv_timer_start(&h->tick, on_tick, spec->tick_ms, spec->tick_ms);
        h->loop_ok = true;
        if (uv_thread_create(&h->thread, loop_main, h) != 0)
            err = lf_fail(eb, LF_EIO, "output %s: cannot start its thread", conf->name);
        else
            h->thread_started = true;
    }
    if (err) {
        lf_httpc_free(h);
        return err;
    }
    *out = h;
    return LF_OK;
}

bool lf_httpc_side(struct lf_httpc *h, struct lf_str body)
{
    if (h->side.easy == NULL || h->side_busy || h->multi == NULL)
        return false;
    h->side_busy = true;
    start_one(h, &h->side, (struct httpc_job){ NULL, body });
    return true;
}

void lf_httpc_submit(struct lf_httpc *h, struct lf_batch *b, struct lf_str body)
{
    uv_mutex_lock(&h->mu);
    bool full = h->p_len == h->n_reqs;
    if (!full) {
        h->pending[(h->p_head + h->p_len) % h->n_reqs] = (struct httpc_job){ b, body };
        h->p_len++;
    }
    uv_mutex_unlock(&h->mu);
    if (full) { /* more than max_in_flight: a caller's bug; answer it as not sent */
        struct lf_httpc_reply r = { "too many requests in flight", 0, { "", 0 }, 0 };
        h->done(h->arg, b, &r);
        return;
    }
    uv_async_send(&h->wake);
}

const char *lf_httpc_where(const struct lf_httpc *h)
{
    return h->where;
}

void lf_httpc_answer(struct lf_httpc *c,
                     struct lf_output *out,
                     struct lf_deadletter *dl,
                     struct lf_batch *b,
                     const struct lf_httpc_reply *r)
{
    const char *name = c->conf->name;
    char reason[LF_HTTPC_REASON_MAX + 32];
    if (r->error == NULL && r->status >= 200 && r->status < 300) {
        lf_output_done(out, b, LF_OK);
        return;
    }
    lf_output_stats(out)->errors++;
    if (r->error != NULL) {
        lf_warn("output %s: %s: %s; will retry", name, c->where, r->error);
        lf_output_done(out, b, LF_EAGAIN);
        return;
    }
    lf_httpc_reason(c, r, reason, sizeof(reason));
    if (lf_httpc_status_retryable(r->status)) {
        if (r->retry_after_ms > 0)
            lf_warn("output %s: %s: %s; will retry in %" PRIu64 " ms at the earliest (Retry-After)",
                    name, c->where, reason, r->retry_after_ms);
        else
            lf_warn("output %s: %s: %s; will retry", name, c->where, reason);
        lf_output_done_later(out, b, r->retry_after_ms);
        return;
    }
    /* Refused for good (4xx, or a redirect we do not follow): the dead letters keep it. */
    struct lf_str nd;
    struct lf_errbuf eb = { "" };
    size_t n_dead = 0;
    enum lf_err err = lf_batch_ndjson(b, &nd);
    if (!err)
        err = lf_deadletter_write(dl, nd, (int)r->status, reason, &n_dead, &eb);
    if (err) {
        lf_error("output %s: %s: %s; cannot keep the refused batch: %s; will retry", name, c->where,
                 reason, eb.msg[0] ? eb.msg : lf_err_str(err));
        lf_output_done(out, b, LF_EAGAIN);
        return;
    }
    lf_error("output %s: %s: %s; %zu events written to dead letters %s", name, c->where, reason,
             n_dead, lf_deadletter_path(dl));
    lf_output_done_dead(out, b, n_dead);
}

struct z_stream_s *lf_httpc_gzip_new(void)
{
    z_stream *zs = calloc(1, sizeof(*zs));
    /* Level 1: request bodies are many and small; windowBits 15 + 16: a gzip wrapper. */
    if (zs != NULL && deflateInit2(zs, 1, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK) {
        free(zs);
        zs = NULL;
    }
    return zs;
}

void lf_httpc_gzip_free(struct z_stream_s *zs)
{
    if (zs == NULL)
        return;
    deflateEnd(zs);
    free(zs);
}

enum lf_err lf_httpc_gzip(struct z_stream_s *zs, struct lf_str src, struct lf_buf *dst)
{
    if (deflateReset(zs) != Z_OK || src.len > UINT_MAX)
        return LF_EINVAL;
    uLong bound = deflateBound(zs, (uLong)src.len);
    lf_buf_reset(dst);
    enum lf_err err = lf_buf_grow(dst, bound);
    if (err)
        return err;
    zs->next_in = (Bytef *)(uintptr_t)src.ptr; /* zlib does not write through next_in */
    zs->avail_in = (uInt)src.len;
    zs->next_out = (Bytef *)dst->ptr;
    zs->avail_out = (uInt)bound;
    if (deflate(zs, Z_FINISH) != Z_STREAM_END)
        return LF_EINVAL;
    dst->len = bound - zs->avail_out;
    return LF_OK;
}

char *lf_httpc_url(const char *base, const char *path)
{
    size_t blen = strlen(base);
    while (blen > 0 && base[blen - 1] == '/')
        blen--;
    size_t len = blen + strlen(path) + 1;
    char *url = malloc(len);
    if (url != NULL)
        snprintf(url, len, "%.*s%s", (int)blen, base, path);
    return url;
}

enum lf_err lf_httpc_line(const char *head, const char *value, char **out)
{
    *out = NULL;
    if (value == NULL)
        return LF_OK;
    size_t len = strlen(head) + strlen(value) + 1;
    *out = malloc(len);
    if (*out == NULL)
        return LF_ENOMEM;
    snprintf(*out, len, "%s%s", head, value);
    return LF_OK;
}

void lf_httpc_line_free(char *line)
{
    if (line == NULL)
        return;
    memset(line, 0, strlen(line));
    free(line);
}

void lf_httpc_headers(const char **lines,
                      const char *content_type,
                      enum lf_compression compression,
                      const char *extra)
{
    size_t n = 0;
    lines[n++] = content_type;
    if (compression == LF_COMPRESS_ZSTD)
        lines[n++] = "Content-Encoding: zstd";
    else if (compression == LF_COMPRESS_GZIP)
        lines[n++] = "Content-Encoding: gzip";
    if (extra != NULL)
        lines[n++] = extra;
    lines[n] = NULL;
}

enum lf_err lf_httpc_open(const struct lf_output_conf *conf,
                          const struct lf_httpc_spec *spec,
                          struct lf_deadletter **dl,
                          struct lf_httpc **client,
                          struct lf_errbuf *eb)
{
    enum lf_err err =
        lf_deadletter_new(conf->data_dir != NULL ? conf->data_dir : ".", conf->name, dl, eb);
    if (!err)
        err = lf_httpc_new(conf, spec, client, eb);
    if (!err && !conf->tls_verify)
        lf_warn("output %s: tls.verify is off: the server's identity is not checked", conf->name);
    return err;
}
