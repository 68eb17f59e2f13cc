/* watch.c - the watcher thread: this node's pods (and namespaces) from the API server into
 * the cache, by a LIST then a WATCH from the LIST's resourceVersion; a 410 lists again at
 * once, a failure after a backoff, a WATCH that ended is made again from its RV. The states,
 * failures and their messages: docs/architecture.md, "The watcher thread".
 *
 * A stream is one resource (pods on this node; namespaces when their labels are wanted),
 * with one easy handle reused for each of its requests. One curl multi handle drives both
 * on a thread of the watcher's own; curl_multi_poll() waits at most a second and
 * curl_multi_wakeup() ends the wait, so lf_kube_watch_stop() returns within a second
 * whatever the API server does. A LIST's pages are kept as JSON until the last one: the
 * cache sees the whole list between list_begin and list_end, or nothing of it.
 *
 * The token is read from token_file before each request (a projected token rotates),
 * handed to libcurl and wiped from our buffer; on a 401 it is read again and the request
 * made again at once, once. It is sent over https only, and never logged: messages name
 * the URL without its query.
 *
 * Ownership: the watcher owns its copy of the conf, the curl handles, the buffers and a
 * LIST's items until they become records; the cache (borrowed) owns each record it is given.
 * Threads: start and stop on the caller's thread; everything else on the watcher thread. */
#include "config.h"

#define LF_LOG_COMPONENT "kubernetes"

#include "../output/netlib_int.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <jansson.h>
#include <malloc.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <uv.h>

#include "logferry/clock.h"
#include "logferry/kube.h"
#include "logferry/log.h"
#include "logferry/watchdog.h"

#define ANSWER_MAX_BYTES     ((size_t)256 << 20) /* a LIST page, or one watch event */
#define ERROR_BODY_MAX_BYTES ((size_t)64 << 10)  /* what is kept of a failed answer */
#define TOKEN_MAX_BYTES      ((size_t)64 << 10)
#define BACKOFF_FIRST_MS     500
#define BACKOFF_MAX_MS       30000
#define WATCH_RESETS_MS      10000 /* a WATCH that ran this long resets the backoff */
#define WATCH_TOO_SHORT_MS   1000  /* a WATCH that ended sooner is made again after a backoff */
#define WATCH_MIN_S          240
#define WATCH_MAX_S          360
#define POLL_MAX_MS          1000 /* the longest stop waits for the thread */
#define SWEEP_EVERY_MS       1000

enum stream_kind {
    STREAM_PODS,
    STREAM_NAMESPACES,
};

enum request {
    REQ_LIST,
    REQ_WATCH,
};

/* One resource watched: its requests, one at a time, on one easy handle. */
struct stream {
    struct lf_kube_watch *w;
    enum stream_kind kind;
    const char *resource; /* "pods", "namespaces" */
    CURL *easy;           /* owned; made at start, reused for every request */
    bool busy;            /* easy is in the multi handle */
    enum request req;     /* the running request, or the next one while !busy */
    int64_t start_ms;     /* while !busy: when the next request starts (monotonic) */
    int64_t began_ms;     /* while busy: when it started */
    unsigned watch_s;     /* the running WATCH's timeoutSeconds */
    long status;          /* the answer's HTTP status, once its headers are in; else 0 */
    struct lf_buf body;   /* a LIST page, a WATCH's unfinished line, or a failed answer's start */
    json_t *items;        /* owned; the items of the LIST's pages so far, or NULL */
    char *cont;           /* owned; metadata.continue of the last page, NULL on the first */
    char *rv;             /* owned; the resourceVersion to watch from */
    uint64_t backoff_ms;  /* ceiling of the next backoff's jitter */
    bool listed;          /* a LIST completed since the last failure */
    bool open;            /* listed, and a WATCH answered 200 since: the cache follows it */
    bool retried_401;     /* this request is the at-once retry after a 401 */
    bool gone;            /* an ERROR 410 event arrived: LIST again at once */
    char why[512];        /* a failure found while reading the answer (bad JSON), or "" */
    char err[CURL_ERROR_SIZE];
};

struct lf_kube_watch {
    struct lf_kube_cache *cache; /* borrowed */
    char *base;                  /* owned; "https://host:port", no trailing '/' */
    char *node;                  /* owned */
    char *node_esc;              /* owned; node, URL-escaped */
    char *token_file;            /* owned; "" sends no token */
    char *ca_file;               /* owned; "" uses the system's CAs */
    uint64_t timeout_ms;
    char **ann;                      /* owned; the include globs, then the exclude ones */
    struct lf_kube_render_opts opts; /* points into ann */
    bool https;                      /* the token is sent over https only */
    bool curl_global;                /* curl_global_init() succeeded, so cleanup is due */
    CURLM *multi;                    /* owned */
    struct curl_slist *headers;      /* owned; the same for every request */
    struct stream streams[2];
    size_t n_streams;    /* 1, or 2 with namespace labels */
    struct lf_buf token; /* the token while a request is made; wiped after */
    struct lf_buf url;   /* the URL of the request being made */
    uint64_t rng;        /* xorshift state for the jitter */
    int64_t swept_ms;
    bool synced; /* what the cache was last told */
    uv_thread_t thread;
    bool started; /* thread runs: join it */
    atomic_bool stop;
};

/* ---- small helpers ---- */

static uint64_t next_rand(struct lf_kube_watch *w)
{
    w->rng ^= w->rng << 13;
    w->rng ^= w->rng >> 7;
    w->rng ^= w->rng << 17;
    return w->rng;
}

/* A string of obj, or NULL. */
static const char *str_of(const json_t *obj, const char *key)
{
    return json_string_value(json_object_get(obj, key));
}

static bool replace_str(char **dst, const char *src)
{
    char *copy = src != NULL ? strdup(src) : NULL;
    if (src != NULL && copy == NULL)
        return false;
    free(*dst);
    *dst = copy;
    return true;
}

/* "https://host:port/api/v1/pods": the URL of s's requests without the query, for
 * messages. */
static void where(const struct stream *s, char *buf, size_t len)
{
    snprintf(buf, len, "%s/api/v1/%s", s->w->base, s->resource);
}

/* The token file's content, trailing whitespace trimmed, NUL-terminated in w->token. */
static enum lf_err read_token(struct lf_kube_watch *w, struct lf_errbuf *eb)
{
    lf_buf_reset(&w->token);
    int fd = open(w->token_file, O_RDONLY | O_CLOEXEC);
    int e = fd < 0 ? errno : 0;
    enum lf_err err = LF_OK;
    while (fd >= 0) {
        err = lf_buf_grow(&w->token, 4096);
        if (err)
            break;
        ssize_t n = read(fd, w->token.ptr + w->token.len, lf_buf_avail(&w->token));
        e = n < 0 ? errno : 0;
        if (n <= 0 && e != EINTR)
            break;
        if (n > 0)
            w->token.len += (size_t)n;
    }
    if (fd >= 0)
        close(fd);
    if (e != 0)
        return lf_fail(eb, lf_err_from_errno(e), "token_file %s: %s", w->token_file,
                       lf_strerror(e));
    if (err)
        return lf_fail(eb, err, "token_file %s: over %zu KiB", w->token_file,
                       TOKEN_MAX_BYTES >> 10);
    while (w->token.len > 0 && strchr(" \t\r\n", w->token.ptr[w->token.len - 1]) != NULL)
        w->token.len--;
    return lf_buf_append(&w->token, "", 1);
}

static void wipe_token(struct lf_kube_watch *w)
{
    if (w->token.ptr != NULL)
        memset(w->token.ptr, 0, w->token.cap);
    lf_buf_reset(&w->token);
}

/* Appends what fmt makes, NUL-terminated (the NUL not counted in b->len). */
LF_PRINTF(2, 3) static enum lf_err put_fmt(struct lf_buf *b, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    enum lf_err err = n < 0 ? LF_EINVAL : lf_buf_grow(b, (size_t)n + 1);
    if (err)
        return err;
    va_start(ap, fmt);
    vsnprintf(b->ptr + b->len, (size_t)n + 1, fmt, ap);
    va_end(ap);
    b->len += (size_t)n;
    return LF_OK;
}

/* The URL of s's next request into w->url, NUL-terminated; a WATCH's timeoutSeconds drawn. */
static enum lf_err make_url(struct stream *s)
{
    struct lf_kube_watch *w = s->w;
    bool list = s->req == REQ_LIST;
    bool pods = s->kind == STREAM_PODS;
    char *arg = curl_easy_escape(
        NULL, list ? (s->cont != NULL ? s->cont : "") : (s->rv != NULL ? s->rv : "0"), 0);
    if (arg == NULL)
        return LF_ENOMEM;
    if (!list)
        s->watch_s = WATCH_MIN_S + (unsigned)(next_rand(w) % (WATCH_MAX_S - WATCH_MIN_S + 1));
    lf_buf_reset(&w->url);
    enum lf_err err = put_fmt(&w->url, "%s/api/v1/%s?%s%s%s", w->base, s->resource,
                              pods ? "fieldSelector=spec.nodeName%3D" : "", pods ? w->node_esc : "",
                              pods ? "&" : "");
    if (!err && list)
        err = put_fmt(&w->url, "limit=500%s%s", arg[0] != '\0' ? "&continue=" : "", arg);
    else if (!err)
        err = put_fmt(&w->url,
                      "watch=1&allowWatchBookmarks=true&resourceVersion=%s&timeoutSeconds=%u", arg,
                      s->watch_s);
    curl_free(arg);
    return err;
}

/* ---- scheduling and failures ---- */

/* The cache is synced while every stream is open: with namespace labels, a file read
 * before the namespaces are listed would ship without them, so new files wait for both. */
static void update_synced(struct lf_kube_watch *w)
{
    bool all = true;
    for (size_t i = 0; i < w->n_streams; i++)
        all = all && w->streams[i].open;
    if (all != w->synced)
        lf_kube_cache_set_synced(w->cache, all);
    w->synced = all;
}

/* The next request of s starts at at_ms. */
static void schedule(struct stream *s, enum request req, int64_t at_ms)
{
    s->req = req;
    s->start_ms = at_ms;
}

/* The next request of s, req, starts after a backoff with full jitter. */
static void back_off(struct stream *s, enum request req, int64_t now)
{
    uint64_t ceiling = s->backoff_ms;
    uint64_t delay = 1 + next_rand(s->w) % ceiling;
    s->backoff_ms = ceiling * 2 < BACKOFF_MAX_MS ? ceiling * 2 : BACKOFF_MAX_MS;
    schedule(s, req, now + (int64_t)delay);
}

static void drop_list(struct stream *s)
{
    json_decref(s->items);
    s->items = NULL;
    free(s->cont);
    s->cont = NULL;
}

/* A request of s failed (reason says how): one warning, the cache is no longer synced, and
 * a LIST follows after a backoff. */
static void fail(struct stream *s, const char *reason, int64_t now)
{
    char url[512];
    where(s, url, sizeof(url));
    lf_warn("GET %s: %s; listing again after a backoff", url, reason);
    drop_list(s);
    s->listed = false;
    s->open = false;
    update_synced(s->w);
    lf_kube_cache_count(s->w->cache, 0, 0, 1);
    back_off(s, REQ_LIST, now);
}

/* ---- applying what the API server says ---- */

/* An object of s's resource into a record, and the record into the cache; one the record
 * cannot be made of is skipped with a warning (from says where it was). */
static void put_object(struct stream *s, const json_t *obj, const char *from)
{
    struct lf_kube_pod *p = NULL;
    struct lf_kube_ns *ns = NULL;
    struct lf_errbuf eb = { "" };
    enum lf_err err = s->kind == STREAM_PODS ? lf_kube_pod_from_json(obj, &s->w->opts, &p, &eb)
                                             : lf_kube_ns_from_json(obj, &s->w->opts, &ns, &eb);
    if (err)
        lf_warn("%s of %s: %s: skipped", from, s->resource, eb.msg);
    else if (p != NULL)
        lf_kube_cache_put_pod(s->w->cache, p);
    else
        lf_kube_cache_put_ns(s->w->cache, ns);
}

/* The LIST's items, all pages, into the cache in one go. */
static void apply_list(struct stream *s, int64_t now)
{
    struct lf_kube_cache *c = s->w->cache;
    size_t i;
    const json_t *item;
    if (s->kind == STREAM_PODS)
        lf_kube_cache_list_begin(c);
    else
        lf_kube_cache_ns_list_begin(c);
    json_array_foreach(s->items, i, item)
    {
        put_object(s, item, "LIST");
    }
    if (s->kind == STREAM_PODS)
        lf_kube_cache_list_end(c, now);
    else
        lf_kube_cache_ns_list_end(c);
    lf_kube_cache_count(c, 1, 0, 0);
    lf_debug("LIST of %s: %zu items at resourceVersion %s", s->resource, json_array_size(s->items),
             s->rv);
    drop_list(s);
    /* The pages' JSON trees (megabytes for a node of hundreds of pods) are freed in small
     * pieces the allocator keeps; hand them back: the records are all that stays. */
    malloc_trim(0);
    s->listed = true;
}

/* Keeps the items of a LIST page (doc); the next page's token, or the list's
 * resourceVersion, kept too. NULL, or why the page is no list. */
static const char *keep_page(struct stream *s, const json_t *doc, bool *last)
{
    const json_t *items = json_object_get(doc, "items");
    const json_t *meta = json_object_get(doc, "metadata");
    const char *rv = str_of(meta, "resourceVersion");
    const char *cont = str_of(meta, "continue");
    *last = cont == NULL || cont[0] == '\0';
    if (!json_is_object(doc) || !(items == NULL || json_is_null(items) || json_is_array(items)))
        return "bad list: no items array";
    if (*last && rv == NULL)
        return "bad list: no metadata.resourceVersion";
    if (s->items == NULL)
        s->items = json_array();
    if (s->items == NULL || (json_is_array(items) && json_array_extend(s->items, (json_t *)items)))
        return lf_err_str(LF_ENOMEM);
    if (!replace_str(*last ? &s->rv : &s->cont, *last ? rv : cont))
        return lf_err_str(LF_ENOMEM);
    return NULL;
}

/* A LIST page answered 200: its items kept, then the next page, or the list applied and the
 * WATCH started. */
static void list_page(struct stream *s, int64_t now)
{
    json_error_t jerr;
    json_t *doc = json_loadb(s->body.ptr, s->body.len, 0, &jerr);
    lf_buf_release(&s->body); /* the largest answers: not kept for the watch's lines */
    bool last = false;
    const char *why = "bad JSON";
    if (doc != NULL)
        why = keep_page(s, doc, &last);
    else
        snprintf(s->why, sizeof(s->why), "bad JSON in the list: %s", jerr.text);
    if (why != NULL)
        fail(s, doc != NULL ? why : s->why, now);
    else if (!last)
        schedule(s, REQ_LIST, now);
    else {
        apply_list(s, now);
        schedule(s, REQ_WATCH, now);
    }
    json_decref(doc);
}

/* One watch event. False (s->why or s->gone set) ends the stream. */
static bool watch_event(struct stream *s, const json_t *ev, int64_t now)
{
    const char *type = str_of(ev, "type");
    const json_t *obj = json_object_get(ev, "object");
    if (type == NULL || !json_is_object(obj)) {
        snprintf(s->why, sizeof(s->why), "bad watch event: no type or object");
        return false;
    }
    if (strcmp(type, "ERROR") == 0) {
        json_int_t code = json_integer_value(json_object_get(obj, "code"));
        const char *msg = str_of(obj, "message");
        if (code == 410) {
            s->gone = true;
            return false;
        }
        snprintf(s->why, sizeof(s->why), "ERROR event: %" JSON_INTEGER_FORMAT ": %s", code,
                 msg != NULL ? msg : "(no message)");
        return false;
    }
    const json_t *meta = json_object_get(obj, "metadata");
    const char *rv = str_of(meta, "resourceVersion");
    if (rv != NULL && !replace_str(&s->rv, rv)) {
        snprintf(s->why, sizeof(s->why), "%s", lf_err_str(LF_ENOMEM));
        return false;
    }
    bool pods = s->kind == STREAM_PODS;
    struct lf_kube_cache *c = s->w->cache;
    if (strcmp(type, "ADDED") == 0 || strcmp(type, "MODIFIED") == 0) {
        put_object(s, obj, type);
    } else if (strcmp(type, "DELETED") == 0) {
        const char *key = str_of(meta, pods ? "uid" : "name");
        if (key != NULL && pods)
            lf_kube_cache_delete_pod(c, key, now);
        else if (key != NULL)
            lf_kube_cache_delete_ns(c, key);
    } else {
        return true; /* BOOKMARK (the resourceVersion only), or a type of a later API */
    }
    lf_kube_cache_count(c, 0, 1, 0);
    return true;
}

/* The complete lines of a WATCH answer in s->body, each one event; the unfinished last
 * line stays. False ends the stream. */
static bool watch_lines(struct stream *s)
{
    if (s->body.len == 0)
        return true;
    int64_t now = lf_mono_ms();
    size_t start = 0;
    bool go = true;
    while (go) {
        const char *nl = memchr(s->body.ptr + start, '\n', s->body.len - start);
        if (nl == NULL)
            break;
        size_t len = (size_t)(nl - (s->body.ptr + start));
        if (len > 0 && !(len == 1 && s->body.ptr[start] == '\r')) {
            json_error_t jerr;
            json_t *ev = json_loadb(s->body.ptr + start, len, 0, &jerr);
            if (ev == NULL) {
                snprintf(s->why, sizeof(s->why), "bad JSON in the watch: %s", jerr.text);
                go = false;
            } else {
                go = watch_event(s, ev, now);
                json_decref(ev);
            }
        }
        start += len + 1;
    }
    memmove(s->body.ptr, s->body.ptr + start, s->body.len - start);
    s->body.len -= start;
    return go;
}

/* ---- libcurl's callbacks ---- */

/* The end of the headers: the status is known; a WATCH that answers 200 is open. */
static size_t on_header(char *p, size_t size, size_t n, void *arg)
{
    struct stream *s = arg;
    size_t len = size * n;
    if (!(len == 2 && p[0] == '\r') && !(len == 1 && p[0] == '\n'))
        return len;
    curl_easy_getinfo(s->easy, CURLINFO_RESPONSE_CODE, &s->status);
    if (s->status == 200 && s->req == REQ_WATCH && s->listed && !s->open) {
        s->open = true;
        update_synced(s->w);
    }
    return len;
}

static size_t on_body(char *p, size_t size, size_t n, void *arg)
{
    struct stream *s = arg;
    size_t len = size * n;
    if (s->status != 200) { /* a failed answer: its start says why */
        size_t room = ERROR_BODY_MAX_BYTES - s->body.len;
        lf_err_ignore(lf_buf_append(&s->body, p, len < room ? len : room)); /* cut short */
        return len;
    }
    enum lf_err err = lf_buf_append(&s->body, p, len);
    if (err) {
        snprintf(s->why, sizeof(s->why), "answer over %zu MiB: %s", ANSWER_MAX_BYTES >> 20,
                 lf_err_str(err));
        return 0; /* aborts the transfer */
    }
    if (s->req == REQ_WATCH && !watch_lines(s))
        return 0;
    return len;
}

/* ---- requests ---- */

static void set_easy(struct stream *s)
{
    struct lf_kube_watch *w = s->w;
    CURL *e = s->easy;
    curl_easy_setopt(e, CURLOPT_PROTOCOLS_STR, "http,https");
    curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(e, CURLOPT_PRIVATE, s);
    curl_easy_setopt(e, CURLOPT_ERRORBUFFER, s->err);
    curl_easy_setopt(e, CURLOPT_HEADERFUNCTION, on_header);
    curl_easy_setopt(e, CURLOPT_HEADERDATA, s);
    curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, on_body);
    curl_easy_setopt(e, CURLOPT_WRITEDATA, s);
    curl_easy_setopt(e, CURLOPT_HTTPHEADER, w->headers);
    curl_easy_setopt(e, CURLOPT_USERAGENT, PACKAGE_NAME "/" PACKAGE_VERSION);
    curl_easy_setopt(e, CURLOPT_CONNECTTIMEOUT_MS, (long)w->timeout_ms);
    curl_easy_setopt(e, CURLOPT_TCP_KEEPALIVE, 1L);
    curl_easy_setopt(e, CURLOPT_SSL_VERIFYPEER, 1L);
    curl_easy_setopt(e, CURLOPT_SSL_VERIFYHOST, 2L);
    curl_easy_setopt(e, CURLOPT_HTTPAUTH, (long)CURLAUTH_BEARER);
}

/* Starts s's next request (s->req), or fails it at once (no token). */
static void begin(struct stream *s, int64_t now)
{
    struct lf_kube_watch *w = s->w;
    struct lf_errbuf eb = { "" };
    enum lf_err err = make_url(s);
    if (err) {
        fail(s, lf_err_str(err), now);
        return;
    }
    bool token = w->https && w->token_file[0] != '\0';
    if (token && read_token(w, &eb)) {
        fail(s, eb.msg, now);
        return;
    }
    CURL *e = s->easy;
    curl_easy_setopt(e, CURLOPT_URL, w->url.ptr);
    curl_easy_setopt(e, CURLOPT_XOAUTH2_BEARER, token ? w->token.ptr : NULL); /* copied */
    wipe_token(w);
    /* Without it, the system's CAs (an api_server with a public certificate); NULL would
     * not bring them back but disable the bundle, so a file that went away stays named
     * and its absence is what the failure says. */
    if (w->ca_file[0] != '\0' && access(w->ca_file, R_OK) == 0)
        curl_easy_setopt(e, CURLOPT_CAINFO, w->ca_file);
    uint64_t limit = w->timeout_ms;
    if (s->req == REQ_WATCH)
        limit += (uint64_t)s->watch_s * 1000;
    curl_easy_setopt(e, CURLOPT_TIMEOUT_MS, (long)limit);
    lf_buf_reset(&s->body);
    s->status = 0;
    s->gone = false;
    s->why[0] = '\0';
    s->err[0] = '\0';
    CURLMcode mc = curl_multi_add_handle(w->multi, e);
    if (mc != CURLM_OK) {
        fail(s, curl_multi_strerror(mc), now);
        return;
    }
    s->busy = true;
    s->began_ms = now;
    lf_debug("%s of %s started", s->req == REQ_LIST ? "LIST" : "WATCH", s->resource);
}

/* Why a failed answer failed: its status, and the message of the Status object it holds. */
static void answer_reason(struct stream *s, char *buf, size_t len)
{
    json_t *st = json_loadb(s->body.ptr, s->body.len, 0, NULL);
    const char *msg = str_of(st, "message");
    int n = snprintf(buf, len, "HTTP %ld: %s", s->status, msg != NULL ? msg : "(no message)");
    bool sent = s->w->https && s->w->token_file[0] != '\0';
    if (s->status == 401 && n > 0 && (size_t)n < len && sent)
        snprintf(buf + n, len - (size_t)n, ": the token in %s, read again, was refused again",
                 s->w->token_file);
    else if (s->status == 401 && n > 0 && (size_t)n < len)
        snprintf(buf + n, len - (size_t)n,
                 ": no token was sent (token_file is empty or "
                 "api_server is not https)");
    if (s->status == 403 && n > 0 && (size_t)n < len)
        snprintf(buf + n, len - (size_t)n,
                 ": the service account may not list or watch %s%s: see "
                 "packaging/kubernetes/base/rbac.yaml",
                 s->resource, s->kind == STREAM_NAMESPACES ? " (namespace_labels)" : "");
    json_decref(st);
}

/* Why a transfer that ended with rc failed. */
static void transfer_reason(struct stream *s, CURLcode rc, char *buf, size_t len)
{
    struct lf_kube_watch *w = s->w;
    if (s->why[0] != '\0') {
        snprintf(buf, len, "%s", s->why);
    } else if (rc == CURLE_OPERATION_TIMEDOUT && s->req == REQ_WATCH && s->status == 200) {
        snprintf(buf, len, "the watch went on past its timeoutSeconds=%u and timeout", s->watch_s);
    } else if (rc == CURLE_OPERATION_TIMEDOUT) {
        snprintf(buf, len, "no %sanswer within %" PRId64 " s", s->status != 0 ? "whole " : "",
                 (lf_mono_ms() - s->began_ms + 500) / 1000);
    } else if (rc == CURLE_PEER_FAILED_VERIFICATION || rc == CURLE_SSL_CONNECT_ERROR ||
               rc == CURLE_SSL_CACERT_BADFILE) {
        bool no_ca = w->ca_file[0] != '\0' && access(w->ca_file, R_OK) != 0;
        snprintf(buf, len, "%s%s%s%s", s->err[0] != '\0' ? s->err : curl_easy_strerror(rc),
                 no_ca ? " (ca_file " : "", no_ca ? w->ca_file : "",
                 no_ca ? " cannot be read)" : "");
    } else {
        snprintf(buf, len, "%s", curl_easy_strerror(rc)); /* without s->err's varying ms */
    }
}

/* Whether a WATCH that ended with rc merely ended: the server closed it at timeoutSeconds,
 * or the connection was cut after a 200 (an API server restarting, a load balancer's idle
 * timeout). Either way it is made again from the resourceVersion, as clients do. */
static bool watch_ended(const struct stream *s, CURLcode rc)
{
    return s->req == REQ_WATCH && s->status == 200 && s->why[0] == '\0' &&
           (rc == CURLE_OK || rc == CURLE_PARTIAL_FILE || rc == CURLE_RECV_ERROR ||
            rc == CURLE_HTTP2 || rc == CURLE_HTTP2_STREAM);
}

/* The answer to s's request is complete (rc: how the transfer ended). */
static void finish(struct stream *s, CURLcode rc, int64_t now)
{
    curl_multi_remove_handle(s->w->multi, s->easy);
    s->busy = false;
    int64_t ran_ms = now - s->began_ms;
    char reason[768];
    if (s->req == REQ_WATCH && ran_ms >= WATCH_RESETS_MS)
        s->backoff_ms = BACKOFF_FIRST_MS;
    if (s->gone || s->status == 410) {
        lf_info("%s of %s: resourceVersion %s is gone (410): listing again",
                s->req == REQ_LIST ? "LIST" : "WATCH", s->resource, s->rv != NULL ? s->rv : "");
        drop_list(s);
        schedule(s, REQ_LIST, now);
    } else if (watch_ended(s, rc)) {
        lf_debug("WATCH of %s ended after %" PRId64 " ms (%s): watching again from %s", s->resource,
                 ran_ms, curl_easy_strerror(rc), s->rv);
        if (ran_ms < WATCH_TOO_SHORT_MS)
            back_off(s, REQ_WATCH, now);
        else
            schedule(s, REQ_WATCH, now);
    } else if (rc != CURLE_OK || s->why[0] != '\0') {
        transfer_reason(s, rc, reason, sizeof(reason));
        fail(s, reason, now);
    } else if (s->status == 401 && !s->retried_401) {
        s->retried_401 = true; /* the token may have rotated since it was read */
        schedule(s, s->req, now);
        return;
    } else if (s->status != 200) {
        answer_reason(s, reason, sizeof(reason));
        fail(s, reason, now);
    } else {
        list_page(s, now);
    }
    s->retried_401 = false;
}

/* Gives up a WATCH whose headers have not come within timeout_ms: until they do, the
 * cache may say it is synced while nothing arrives. */
static void check_silent(struct stream *s, int64_t now)
{
    if (s->busy && s->req == REQ_WATCH && s->status == 0 &&
        now - s->began_ms > (int64_t)s->w->timeout_ms)
        finish(s, CURLE_OPERATION_TIMEDOUT, now);
}

/* ---- the thread ---- */

static void turn(struct lf_kube_watch *w)
{
    int64_t now = lf_mono_ms();
    for (size_t i = 0; i < w->n_streams; i++) {
        struct stream *s = &w->streams[i];
        if (!s->busy && now >= s->start_ms)
            begin(s, now);
        check_silent(s, now);
    }
    if (now - w->swept_ms >= SWEEP_EVERY_MS) {
        lf_kube_cache_sweep(w->cache, now);
        w->swept_ms = now;
    }
    int running = 0;
    curl_multi_perform(w->multi, &running);
    int left = 0;
    for (;;) {
        const CURLMsg *m = curl_multi_info_read(w->multi, &left);
        if (m == NULL)
            break;
        if (m->msg != CURLMSG_DONE)
            continue;
        char *priv = NULL;
        curl_easy_getinfo(m->easy_handle, CURLINFO_PRIVATE, &priv);
        CURLcode rc = m->data.result; /* m is dead once the handle is removed */
        finish((struct stream *)(void *)priv, rc, lf_mono_ms());
    }
}

/* How long the thread may wait for the sockets: until the next request is due, at most
 * POLL_MAX_MS. */
static int poll_ms(const struct lf_kube_watch *w)
{
    int64_t now = lf_mono_ms();
    int64_t wait = POLL_MAX_MS;
    for (size_t i = 0; i < w->n_streams; i++) {
        const struct stream *s = &w->streams[i];
        if (!s->busy && s->start_ms - now < wait)
            wait = s->start_ms - now;
    }
    return wait > 0 ? (int)wait : 0;
}

static void run(void *arg)
{
    struct lf_kube_watch *w = arg;
    lf_watchdog_enter("kubernetes"); /* stamped each turn: a turn waits a second at most */
    while (!atomic_load(&w->stop)) {
        turn(w);
        if (atomic_load(&w->stop))
            break;
        curl_multi_poll(w->multi, NULL, 0, poll_ms(w), NULL);
        lf_watchdog_stamp();
    }
    for (size_t i = 0; i < w->n_streams; i++) {
        if (w->streams[i].busy)
            curl_multi_remove_handle(w->multi, w->streams[i].easy);
        w->streams[i].busy = false;
    }
    lf_kube_cache_set_synced(w->cache, false);
    lf_watchdog_leave();
}

/* ---- start and stop ---- */

/* conf->api_server, else https://$KUBERNETES_SERVICE_HOST:$KUBERNETES_SERVICE_PORT. */
static enum lf_err find_base(const struct lf_kube_conf *conf, char **out, struct lf_errbuf *eb)
{
    char buf[1024];
    const char *host = getenv("KUBERNETES_SERVICE_HOST");
    const char *port = getenv("KUBERNETES_SERVICE_PORT");
    if (conf->api_server != NULL && conf->api_server[0] != '\0') {
        snprintf(buf, sizeof(buf), "%s", conf->api_server);
    } else if (host != NULL && host[0] != '\0') {
        bool v6 = strchr(host, ':') != NULL;
        snprintf(buf, sizeof(buf), "https://%s%s%s:%s", v6 ? "[" : "", host, v6 ? "]" : "",
                 port != NULL && port[0] != '\0' ? port : "443");
    } else {
        return lf_fail(eb, LF_ECONFIG,
                       "kubernetes: no API server: set kubernetes.api_server, or run in a pod "
                       "(KUBERNETES_SERVICE_HOST is not set)");
    }
    size_t len = strlen(buf);
    while (len > 0 && buf[len - 1] == '/')
        buf[--len] = '\0';
    *out = strdup(buf);
    return *out != NULL ? LF_OK : lf_fail(eb, LF_ENOMEM, "kubernetes: out of memory");
}

/* conf->node_name, else $NODE_NAME, else the host name. */
static enum lf_err find_node(const struct lf_kube_conf *conf, char **out, struct lf_errbuf *eb)
{
    char host[256] = "";
    const char *node = conf->node_name;
    if (node == NULL || node[0] == '\0')
        node = getenv("NODE_NAME");
    if ((node == NULL || node[0] == '\0') && gethostname(host, sizeof(host) - 1) != 0) {
        int e = errno;
        return lf_fail(eb, LF_EIO, "kubernetes: no node name and gethostname: %s", lf_strerror(e));
    }
    *out = strdup(node != NULL && node[0] != '\0' ? node : host);
    return *out != NULL ? LF_OK : lf_fail(eb, LF_ENOMEM, "kubernetes: out of memory");
}

/* The conf's strings and globs, copied (what is copied is freed by watch_free()). */
static enum lf_err copy_conf(struct lf_kube_watch *w, const struct lf_kube_conf *conf)
{
    w->token_file = strdup(conf->token_file != NULL ? conf->token_file : "");
    w->ca_file = strdup(conf->ca_file != NULL ? conf->ca_file : "");
    w->timeout_ms = conf->timeout_ms > 0 ? conf->timeout_ms : 30000;
    size_t n = conf->n_ann_include + conf->n_ann_exclude;
    w->ann = calloc(n > 0 ? n : 1, sizeof(*w->ann));
    if (w->token_file == NULL || w->ca_file == NULL || w->ann == NULL)
        return LF_ENOMEM;
    w->opts = (struct lf_kube_render_opts){
        .labels = conf->labels,
        .dedot = conf->dedot,
        .ann_include = (const char *const *)w->ann,
        .n_ann_include = conf->n_ann_include,
        .ann_exclude = (const char *const *)w->ann + conf->n_ann_include,
        .n_ann_exclude = conf->n_ann_exclude,
    };
    for (size_t i = 0; i < n; i++) {
        w->ann[i] = strdup(i < conf->n_ann_include ? conf->ann_include[i]
                                                   : conf->ann_exclude[i - conf->n_ann_include]);
        if (w->ann[i] == NULL)
            return LF_ENOMEM;
    }
    return LF_OK;
}

static enum lf_err make_curl(struct lf_kube_watch *w, bool namespaces, struct lf_errbuf *eb)
{
    size_t n = namespaces ? 2 : 1;
    if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK)
        return lf_fail(eb, LF_EIO, "kubernetes: cannot initialize libcurl");
    w->curl_global = true;
    w->multi = curl_multi_init();
    w->headers = curl_slist_append(NULL, "Accept: application/json");
    w->node_esc = curl_easy_escape(NULL, w->node, 0);
    if (w->multi == NULL || w->headers == NULL || w->node_esc == NULL)
        return lf_fail(eb, LF_ENOMEM, "kubernetes: out of memory");
    static const char *const resources[] = { "pods", "namespaces" };
    for (size_t i = 0; i < n; i++) {
        struct stream *s = &w->streams[i];
        w->n_streams = i + 1; /* watch_free() frees what is made */
        s->w = w;
        s->kind = i == 0 ? STREAM_PODS : STREAM_NAMESPACES;
        s->resource = resources[i];
        s->backoff_ms = BACKOFF_FIRST_MS;
        lf_buf_init(&s->body, ANSWER_MAX_BYTES);
        schedule(s, REQ_LIST, 0);
        s->easy = curl_easy_init();
        if (s->easy == NULL)
            return lf_fail(eb, LF_ENOMEM, "kubernetes: out of memory");
        set_easy(s);
    }
    return LF_OK;
}

static void watch_free(struct lf_kube_watch *w)
{
    for (size_t i = 0; i < w->n_streams; i++) {
        struct stream *s = &w->streams[i];
        if (s->easy != NULL)
            curl_easy_cleanup(s->easy);
        lf_buf_release(&s->body);
        drop_list(s);
        free(s->rv);
    }
    if (w->multi != NULL)
        curl_multi_cleanup(w->multi);
    if (w->headers != NULL)
        curl_slist_free_all(w->headers);
    if (w->node_esc != NULL)
        curl_free(w->node_esc);
    if (w->curl_global)
        curl_global_cleanup();
    wipe_token(w);
    lf_buf_release(&w->token);
    lf_buf_release(&w->url);
    for (size_t i = 0; w->ann != NULL && i < w->opts.n_ann_include + w->opts.n_ann_exclude; i++)
        free(w->ann[i]);
    free(w->ann);
    free(w->token_file);
    free(w->ca_file);
    free(w->node);
    free(w->base);
    free(w);
}

enum lf_err lf_kube_watch_start(const struct lf_kube_conf *conf,
                                struct lf_kube_cache *c,
                                struct lf_kube_watch **out,
                                struct lf_errbuf *eb)
{
    struct lf_kube_watch *w = calloc(1, sizeof(*w));
    if (w == NULL)
        return lf_fail(eb, LF_ENOMEM, "kubernetes: out of memory");
    w->cache = c;
    w->rng = (uv_hrtime() ^ (uint64_t)(uintptr_t)w) | 1;
    lf_buf_init(&w->token, TOKEN_MAX_BYTES);
    lf_buf_init(&w->url, 64 << 10);
    atomic_init(&w->stop, false);
    enum lf_err err = find_base(conf, &w->base, eb);
    if (!err) {
        w->https = strncmp(w->base, "https://", 8) == 0;
        err = find_node(conf, &w->node, eb);
    }
    if (!err && copy_conf(w, conf))
        err = lf_fail(eb, LF_ENOMEM, "kubernetes: out of memory");
    if (!err)
        err = lf_netlib_load(LF_NETLIB_CURL, "kubernetes", eb);
    if (!err)
        err = make_curl(w, conf->namespace_labels, eb);
    if (!err && uv_thread_create(&w->thread, run, w) != 0)
        err = lf_fail(eb, LF_EIO, "kubernetes: cannot start the watcher thread");
    if (err) {
        watch_free(w);
        return err;
    }
    w->started = true;
    if (!w->https && w->token_file[0] != '\0')
        lf_warn("api_server %s is not https: the token is not sent", w->base);
    lf_info("watching the pods of node %s at %s%s", w->node, w->base,
            conf->namespace_labels ? ", and namespaces" : "");
    *out = w;
    return LF_OK;
}

void lf_kube_watch_stop(struct lf_kube_watch *w)
{
    if (w == NULL)
        return;
    if (w->started) {
        atomic_store(&w->stop, true);
        curl_multi_wakeup(w->multi);
        uv_thread_join(&w->thread);
    }
    watch_free(w);
}
