/* http.c - the http output: each batch's NDJSON (zstd, gzip or plain) in one request.
 *
 *   lane thread                         the output's loop thread (libuv + libcurl multi)
 *   http_send ──► pending ring ──async──► a free request slot: its easy handle gets the
 *   (form computed once, cached in b)     batch's bytes and joins the multi handle
 *                                          uv_poll per socket ◄─► curl_multi_socket_action
 *                                          uv_timer          ◄─► CURLMOPT_TIMERFUNCTION
 *                                          transfer done ──► 2xx: LF_OK
 *                                                            429, 408, 5xx, no answer: LF_EAGAIN
 *                                                            other: dead letters, then LF_OK
 *
 * There are max_in_flight request slots, each with an easy handle made once and reused, so
 * connections (keep-alive, in the multi handle's pool), TLS sessions and DNS answers (in a
 * share handle) and the header list (with the Authorization header) outlive every batch;
 * a batch allocates nothing here. The lane never has more than max_in_flight batches out,
 * and a slot is freed before its batch is answered, so the pending ring never overflows.
 * A retried batch is sent from the same cached form: the same bytes.
 *
 * Secrets (the password, the bearer token, header values, the URL's user info and query)
 * appear in no message: messages name the URL as scheme://host:port/path only. */
#include "config.h"

#define LF_LOG_COMPONENT "output"

#include <curl/curl.h>
#include <errno.h>
#include <inttypes.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <uv.h>

#include "logferry/deadletter.h"
#include "logferry/log.h"
#include "output_int.h"

#define LF_HTTP_ZSTD_LEVEL 1   /* fast: batches are small and many */
#define LF_HTTP_GZIP_LEVEL 1
#define LF_HTTP_REASON_MAX 200 /* response body bytes kept for messages and dead letters */

struct http_out;

/* One request slot: an easy handle and the batch it carries, if any. Loop thread. */
struct http_req {
    struct http_out *h;
    CURL *easy;            /* owned; made at open, reused for every batch */
    struct lf_batch *b;    /* borrowed: the batch on the wire, or NULL when the slot is free */
    char err[CURL_ERROR_SIZE];
    char resp[LF_HTTP_REASON_MAX + 1]; /* the start of the response body, for messages */
    size_t resp_len;
};

/* A socket libcurl asked us to watch. */
struct http_sock {
    uv_poll_t poll; /* first: the close callback frees through it */
    curl_socket_t fd;
    struct http_out *h;
};

struct http_out {
    struct lf_output *out;
    const struct lf_output_conf *conf; /* borrowed */
    char *where;                       /* owned; "POST scheme://host:port/path", for messages */
    uv_loop_t loop;
    uv_async_t wake;    /* send() or close() has something for the loop */
    uv_timer_t timer;   /* libcurl's timeout */
    uv_thread_t thread;
    bool loop_ok;       /* loop, wake and timer initialized */
    bool thread_started;
    CURLM *multi;       /* owned */
    CURLSH *share;      /* owned; TLS sessions and DNS shared by the slots */
    struct curl_slist *headers; /* owned; the same for every request */
    struct http_req *reqs;      /* owned; n_reqs slots */
    size_t n_reqs;
    struct lf_deadletter *dl;   /* owned */
    bool curl_global;           /* curl_global_init() succeeded, so cleanup is due */

    uv_mutex_t mu;              /* guards what follows: written by send/close, read by loop */
    struct lf_batch **pending;  /* owned; a ring of n_reqs batches handed over, not started */
    size_t p_head;
    size_t p_len;
    bool stopping;
};

/* ---- messages ---- */

/* Copies the response body's start into r->resp as printable ASCII (valid UTF-8 and JSON
 * safe for dead letters, one line for logs). */
static size_t on_body(char *data, size_t size, size_t nmemb, void *arg)
{
    struct http_req *r = arg;
    size_t n = size * nmemb;
    for (size_t i = 0; i < n && r->resp_len < LF_HTTP_REASON_MAX; i++) {
        unsigned char c = (unsigned char)data[i];
        r->resp[r->resp_len++] = c >= 0x20 && c < 0x7f ? (char)c : ' ';
    }
    r->resp[r->resp_len] = '\0';
    return n;
}

/* "HTTP 400: <start of the body>" for a refused or failed request. */
static void status_reason(const struct http_req *r, long status, char *dst, size_t len)
{
    size_t n = r->resp_len;
    while (n > 0 && r->resp[n - 1] == ' ')
        n--;
    if (n == 0)
        snprintf(dst, len, "HTTP %ld", status);
    else
        snprintf(dst, len, "HTTP %ld: %.*s", status, (int)n, r->resp);
}

/* ---- the loop thread ---- */

static void on_closed(uv_handle_t *handle)
{
    if (handle->type == UV_POLL)
        free(handle); /* the struct http_sock it starts */
}

static void start_pending(struct http_out *h);

/* Answers r's batch from the transfer's outcome rc. Loop thread. */
static void finish(struct http_out *h, struct http_req *r, CURLcode rc)
{
    struct lf_batch *b = r->b;
    r->b = NULL; /* free before the answer: the lane may send again from inside done */
    long status = 0;
    if (rc == CURLE_OK)
        curl_easy_getinfo(r->easy, CURLINFO_RESPONSE_CODE, &status);
    char reason[LF_HTTP_REASON_MAX + 32];
    if (rc != CURLE_OK) {
        lf_warn("output %s: %s: %s; will retry", h->conf->name, h->where,
                r->err[0] != '\0' ? r->err : curl_easy_strerror(rc));
        lf_output_stats(h->out)->errors++;
        lf_output_done(h->out, b, LF_EAGAIN);
        return;
    }
    if (status >= 200 && status < 300) {
        lf_output_done(h->out, b, LF_OK);
        return;
    }
    status_reason(r, status, reason, sizeof(reason));
    lf_output_stats(h->out)->errors++;
    if (status == 408 || status == 429 || status >= 500) {
        lf_warn("output %s: %s: %s; will retry", h->conf->name, h->where, reason);
        lf_output_done(h->out, b, LF_EAGAIN);
        return;
    }
    /* Refused for good (4xx, or a redirect we do not follow): the dead letters keep it. */
    struct lf_str nd;
    struct lf_errbuf eb = { "" };
    size_t n_dead = 0;
    enum lf_err err = lf_batch_ndjson(b, &nd);
    if (!err)
        err = lf_deadletter_write(h->dl, nd, (int)status, reason, &n_dead, &eb);
    if (err) {
        lf_error("output %s: %s: %s; cannot keep the refused batch: %s; will retry",
                 h->conf->name, h->where, reason, eb.msg[0] ? eb.msg : lf_err_str(err));
        lf_output_done(h->out, b, LF_EAGAIN);
        return;
    }
    lf_error("output %s: %s: %s; %zu events written to dead letters %s", h->conf->name,
             h->where, reason, n_dead, lf_deadletter_path(h->dl));
    lf_output_done_dead(h->out, b, n_dead);
}

/* Answers every transfer libcurl reports finished, then starts what is pending. */
static void check_done(struct http_out *h)
{
    CURLMsg *m;
    int left;
    while ((m = curl_multi_info_read(h->multi, &left)) != NULL) {
        if (m->msg != CURLMSG_DONE)
            continue;
        CURL *easy = m->easy_handle;
        CURLcode rc = m->data.result; /* m is gone once the handle is removed */
        struct http_req *r = NULL;
        curl_easy_getinfo(easy, CURLINFO_PRIVATE, (char **)&r);
        curl_multi_remove_handle(h->multi, easy);
        finish(h, r, rc);
    }
    start_pending(h);
}

static void on_poll(uv_poll_t *poll, int status, int events)
{
    struct http_sock *sk = (struct http_sock *)poll;
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
    struct http_out *h = t->data;
    int running;
    curl_multi_socket_action(h->multi, CURL_SOCKET_TIMEOUT, 0, &running);
    check_done(h);
}

/* CURLMOPT_SOCKETFUNCTION: watch s for what libcurl waits on, or stop watching it. */
static int on_socket(CURL *easy, curl_socket_t s, int what, void *arg, void *socketp)
{
    (void)easy;
    struct http_out *h = arg;
    struct http_sock *sk = socketp;
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
    struct http_out *h = arg;
    if (timeout_ms < 0)
        uv_timer_stop(&h->timer);
    else
        uv_timer_start(&h->timer, on_timer, (uint64_t)timeout_ms, 0);
    return 0;
}

/* The body of b as this output sends it, computed once and cached in b. */
static enum lf_err http_form(const struct lf_output_conf *conf, struct lf_batch *b,
                             struct lf_str *body)
{
    switch (conf->compression) {
    case LF_COMPRESS_ZSTD:
        return lf_batch_zstd(b, LF_HTTP_ZSTD_LEVEL, body);
    case LF_COMPRESS_GZIP:
        return lf_batch_gzip(b, LF_HTTP_GZIP_LEVEL, body);
    case LF_COMPRESS_NONE:
        break;
    }
    return lf_batch_ndjson(b, body);
}

/* Starts a transfer for b on free slot r. */
static void start_one(struct http_out *h, struct http_req *r, struct lf_batch *b)
{
    struct lf_str body;
    r->b = b;
    r->err[0] = '\0';
    r->resp_len = 0;
    r->resp[0] = '\0';
    if (http_form(h->conf, b, &body)) { /* computed by send already: cannot fail now */
        finish(h, r, CURLE_OUT_OF_MEMORY);
        return;
    }
    curl_easy_setopt(r->easy, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)body.len);
    curl_easy_setopt(r->easy, CURLOPT_POSTFIELDS, body.ptr);
    CURLMcode mc = curl_multi_add_handle(h->multi, r->easy);
    if (mc != CURLM_OK) {
        snprintf(r->err, sizeof(r->err), "%s", curl_multi_strerror(mc));
        finish(h, r, CURLE_FAILED_INIT);
    }
}

/* Moves pending batches into free slots. Loop thread. */
static void start_pending(struct http_out *h)
{
    for (size_t i = 0; i < h->n_reqs; i++) {
        if (h->reqs[i].b != NULL)
            continue;
        uv_mutex_lock(&h->mu);
        struct lf_batch *b = NULL;
        if (h->p_len > 0 && !h->stopping) {
            b = h->pending[h->p_head];
            h->p_head = (h->p_head + 1) % h->n_reqs;
            h->p_len--;
        }
        uv_mutex_unlock(&h->mu);
        if (b == NULL)
            return;
        start_one(h, &h->reqs[i], b);
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
    struct http_out *h = a->data;
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
    curl_multi_cleanup(h->multi);
    h->multi = NULL;
    uv_walk(&h->loop, close_walk, NULL);
}

static void loop_main(void *arg)
{
    struct http_out *h = arg;
    uv_run(&h->loop, UV_RUN_DEFAULT);
}

/* ---- open: everything made once ---- */

/* "METHOD scheme://host:port/path" for messages: no user info, query or fragment. */
static enum lf_err describe_url(struct http_out *h, struct lf_errbuf *eb)
{
    const struct lf_output_conf *conf = h->conf;
    CURLU *u = curl_url();
    char *scheme = NULL;
    char *plain = NULL;
    if (u == NULL)
        return lf_fail(eb, LF_ENOMEM, "output %s: out of memory", conf->name);
    /* The URL itself is not quoted: it may come from the environment with a token in it. */
    enum lf_err err = LF_ECONFIG;
    if (curl_url_set(u, CURLUPART_URL, conf->url, 0) != CURLUE_OK ||
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
    size_t len = strlen(conf->method) + 1 + strlen(plain) + 1;
    h->where = malloc(len);
    if (h->where == NULL) {
        lf_fail(eb, err, "output %s: out of memory", conf->name);
        goto out;
    }
    snprintf(h->where, len, "%s %s", conf->method, plain);
    err = LF_OK;
out:
    curl_free(scheme);
    curl_free(plain);
    curl_url_cleanup(u);
    return err;
}

/* Appends "Name: value" to the header list. */
static enum lf_err add_header(struct http_out *h, const char *name, const char *value)
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
static enum lf_err add_user_headers(struct http_out *h, struct lf_errbuf *eb)
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
                          "one-line string value", name, header_safe(key, true) ? key : "?");
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

static enum lf_err make_headers(struct http_out *h, struct lf_errbuf *eb)
{
    const struct lf_output_conf *conf = h->conf;
    enum lf_err err = add_header(h, "Content-Type", conf->content_type);
    if (!err && conf->compression == LF_COMPRESS_ZSTD)
        err = add_header(h, "Content-Encoding", "zstd");
    if (!err && conf->compression == LF_COMPRESS_GZIP)
        err = add_header(h, "Content-Encoding", "gzip");
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

/* Sets every option that stays the same for all requests of slot r. */
static enum lf_err setup_easy(struct http_out *h, struct http_req *r)
{
    const struct lf_output_conf *conf = h->conf;
    CURL *e = curl_easy_init();
    if (e == NULL)
        return LF_ENOMEM;
    r->easy = e;
    r->h = h;
    CURLcode rc = CURLE_OK;
#define SET(opt, val)                                \
    do {                                             \
        if (rc == CURLE_OK)                          \
            rc = curl_easy_setopt(e, opt, val);      \
    } while (0)
    SET(CURLOPT_URL, conf->url);
    SET(CURLOPT_PROTOCOLS_STR, "http,https");
    SET(CURLOPT_NOSIGNAL, 1L);
    SET(CURLOPT_PRIVATE, r);
    SET(CURLOPT_ERRORBUFFER, r->err);
    SET(CURLOPT_WRITEFUNCTION, on_body);
    SET(CURLOPT_WRITEDATA, r);
    SET(CURLOPT_HTTPHEADER, h->headers);
    SET(CURLOPT_SHARE, h->share);
    SET(CURLOPT_POST, 1L);
    if (strcmp(conf->method, "POST") != 0)
        SET(CURLOPT_CUSTOMREQUEST, conf->method);
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
    if (conf->auth_user != NULL) {
        SET(CURLOPT_HTTPAUTH, (long)CURLAUTH_BASIC);
        SET(CURLOPT_USERNAME, conf->auth_user);
        SET(CURLOPT_PASSWORD, conf->auth_password);
    }
#undef SET
    return rc == CURLE_OK ? LF_OK : rc == CURLE_OUT_OF_MEMORY ? LF_ENOMEM : LF_EINVAL;
}

static enum lf_err make_curl(struct http_out *h, struct lf_errbuf *eb)
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
    enum lf_err err = make_headers(h, eb);
    if (err)
        return err;
    for (size_t i = 0; i < h->n_reqs; i++) {
        err = setup_easy(h, &h->reqs[i]);
        if (err == LF_ENOMEM)
            return lf_fail(eb, err, "output %s: out of memory", name);
        if (err) {
            return lf_fail(eb, LF_ECONFIG, "output %s: this libcurl cannot apply the settings "
                           "(method, tls or proxy)", name);
        }
    }
    return LF_OK;
}

static enum lf_err check_conf(const struct lf_output_conf *conf, struct lf_errbuf *eb)
{
    if (conf->url == NULL || conf->url[0] == '\0')
        return lf_fail(eb, LF_ECONFIG, "output %s: url is required", conf->name);
    if (conf->auth_user != NULL && conf->bearer_token != NULL) {
        return lf_fail(eb, LF_ECONFIG, "output %s: auth and bearer_token exclude each other",
                       conf->name);
    }
    if (conf->method == NULL || conf->content_type == NULL)
        return lf_fail(eb, LF_EINVAL, "output %s: method and content_type are unset", conf->name);
    /* Found now, not at the first batch: a typo should stop the start, not fill the log. */
    const struct {
        const char *key;
        const char *path;
    } files[] = { { "tls.ca_file", conf->tls_ca_file },
                  { "tls.cert_file", conf->tls_cert_file },
                  { "tls.key_file", conf->tls_key_file } };
    for (size_t i = 0; i < sizeof(files) / sizeof(files[0]); i++) {
        if (files[i].path != NULL && access(files[i].path, R_OK) != 0) {
            int e = errno;
            return lf_fail(eb, LF_ECONFIG, "output %s: %s %s: %s", conf->name, files[i].key,
                           files[i].path, lf_strerror(e));
        }
    }
    return LF_OK;
}

static void http_free(struct http_out *h);

static enum lf_err http_open(struct lf_output *out, struct lf_errbuf *eb)
{
    const struct lf_output_conf *conf = lf_output_conf(out);
    enum lf_err err = check_conf(conf, eb);
    if (err)
        return err;
    struct http_out *h = calloc(1, sizeof(*h));
    if (h == NULL)
        return lf_fail(eb, LF_ENOMEM, "output %s: out of memory", conf->name);
    h->out = out;
    h->conf = conf;
    h->n_reqs = conf->max_in_flight > 0 ? (size_t)conf->max_in_flight : 1;
    h->reqs = calloc(h->n_reqs, sizeof(*h->reqs));
    h->pending = calloc(h->n_reqs, sizeof(*h->pending));
    if (h->reqs == NULL || h->pending == NULL || uv_mutex_init(&h->mu) != 0) {
        free(h->reqs);
        free(h->pending);
        free(h);
        return lf_fail(eb, LF_ENOMEM, "output %s: out of memory", conf->name);
    }
    err = describe_url(h, eb);
    if (!err)
        err = lf_deadletter_new(conf->data_dir != NULL ? conf->data_dir : ".", conf->name, &h->dl,
                                eb);
    if (!err)
        err = make_curl(h, eb);
    if (!err && (uv_loop_init(&h->loop) != 0))
        err = lf_fail(eb, LF_EIO, "output %s: cannot create an event loop", conf->name);
    if (!err) {
        uv_async_init(&h->loop, &h->wake, on_wake); /* cannot fail on an initialized loop */
        uv_timer_init(&h->loop, &h->timer);
        h->wake.data = h;
        h->timer.data = h;
        h->loop_ok = true;
        if (uv_thread_create(&h->thread, loop_main, h) != 0)
            err = lf_fail(eb, LF_EIO, "output %s: cannot start its thread", conf->name);
        else
            h->thread_started = true;
    }
    if (err) {
        http_free(h);
        return err;
    }
    if (!conf->tls_verify)
        lf_warn("output %s: tls.verify is off: the server's identity is not checked", conf->name);
    lf_output_set_ctx(out, h);
    return LF_OK;
}

/* ---- the lane's side ---- */

static enum lf_err http_prepare(const struct lf_output *out, struct lf_batch *b)
{
    struct lf_str body;
    return http_form(lf_output_conf(out), b, &body);
}

static enum lf_err http_send(struct lf_output *out, struct lf_batch *b)
{
    struct http_out *h = lf_output_ctx(out);
    struct lf_str body;
    enum lf_err err = http_form(h->conf, b, &body);
    if (err) {
        lf_output_stats(out)->errors++;
        return err;
    }
    uv_mutex_lock(&h->mu);
    bool full = h->p_len == h->n_reqs;
    if (!full) {
        h->pending[(h->p_head + h->p_len) % h->n_reqs] = b;
        h->p_len++;
    }
    uv_mutex_unlock(&h->mu);
    if (full) { /* the lane keeps to max_in_flight, so this is a caller's bug: retry later */
        lf_output_done(out, b, LF_EAGAIN);
        return LF_OK;
    }
    lf_output_stats(out)->bytes_written += body.len;
    uv_async_send(&h->wake);
    return LF_OK;
}

/* Stops the loop thread (if any), then frees everything. */
static void http_free(struct http_out *h)
{
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
    if (h->multi != NULL)
        curl_multi_cleanup(h->multi);
    for (size_t i = 0; i < h->n_reqs; i++)
        curl_easy_cleanup(h->reqs[i].easy);
    if (h->share != NULL)
        curl_share_cleanup(h->share);
    curl_slist_free_all(h->headers);
    if (h->curl_global)
        curl_global_cleanup();
    lf_deadletter_free(h->dl);
    uv_mutex_destroy(&h->mu);
    free(h->where);
    free(h->reqs);
    free(h->pending);
    free(h);
}

static void http_close(struct lf_output *out)
{
    http_free(lf_output_ctx(out));
    lf_output_set_ctx(out, NULL);
}

const struct lf_output_ops lf_output_http = {
    .name = "http",
    .open = http_open,
    .send = http_send,
    .prepare = http_prepare,
    .close = http_close,
};
