/* s3.c - the s3 output: batches gathered into objects, each put once (PUT, or a multipart
 * upload above 16 MiB), the batches acknowledged only after the store answered 200.
 *
 *   send (lane thread): the batch's bytes as the object stores them (a zstd frame, a gzip
 *   member or plain NDJSON: concatenated, each a valid stream) are appended to the open
 *   object of its key prefix (the key rendered without %{uuid}: fields of the batch's first
 *   event, strftime of its @timestamp in UTC); the batch is held (lf_output_hold()). An
 *   object closes at object_bytes, at 1024 batches, object_interval after its first batch,
 *   or at a drain.
 *   the output's thread: puts closed objects in the order they closed, one request at a
 *   time; an object past 16 MiB (when object_bytes allows it) starts a multipart upload and
 *   sends each part_bytes as it fills, so it holds about one part, not the object. 200:
 *   its batches are answered LF_OK. 408, 429, 5xx and no answer: the same bytes again to
 *   the same key after the backoff (Retry-After respected). RequestTimeTooSkewed: signed
 *   again on the server's clock. ExpiredToken, InvalidToken: new credentials, again. Any
 *   other answer: a single PUT's batches go to the dead letters, answered as delivered; a
 *   multipart upload's earlier parts are no longer here, so it is aborted and its batches
 *   answered with an error (read again at the next start).
 *
 * Locks: mu guards the open objects and the closed queue (the lane appends, the thread
 * takes); answers (lf_output_done_held(), lf_output_done_later()) are made under
 * answer_mu alone, never under mu, so the owner's callback may take its own locks. */
#include "config.h"

#define LF_LOG_COMPONENT "output"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>
#include <uv.h>
#include <zlib.h>
#include <zstd.h>

#include "awscred_int.h"
#include "fields_int.h"
#include "logferry/buf.h"
#include "logferry/deadletter.h"
#include "logferry/log.h"
#include "output_int.h"
#include "s3_int.h"
#include "sigv4_int.h"

#define S3_MULTIPART_MIN  ((size_t)16 << 20) /* objects past this go up in parts */
#define S3_MAX_BATCHES    1024               /* batches in one object at most */
#define S3_BACKLOG        4                  /* closed objects waiting: more, and send waits */
#define S3_BEHIND_WAIT_MS 1000               /* how long, at most, per batch */
#define S3_OBJECT_MAX     ((size_t)5 << 30)  /* S3's largest single PUT */
#define S3_KEY_MAX        1024               /* S3's longest key */
#define S3_UUID_MARK      '\x01'             /* where the uuid goes in a prefix */
#define S3_SPARE_MAX      ((size_t)32 << 20) /* a body buffer kept between objects, at most */
#define S3_KEY_FIELD_CUT  128 /* a field's bytes in a key that would be too long */
#define S3_ZSTD_LEVEL     1 /* as the http output: fast, the batch may cache it for both */
#define S3_GZIP_LEVEL     6 /* archives are kept long: zlib's default */
#define S3_DEAD_MAX       ((size_t)1 << 30) /* NDJSON of an object refused, at most */

struct s3_obj {
    struct s3_obj *next;
    char *prefix;         /* owned; the rendered key with S3_UUID_MARK for the uuid */
    char *key;            /* owned; with the uuid: the same for every retry */
    struct lf_buf data;   /* bytes not yet sent (all of a single PUT; the filling part) */
    struct lf_held *held; /* owned; the batches whose answers are owed */
    size_t n_held, cap_held;
    size_t total;                  /* bytes of the object so far, parts sent included */
    int64_t deadline_ms;           /* monotonic: when it closes at the latest */
    char *upload_id;               /* owned; multipart: the upload's id; NULL: not multipart */
    char (*etags)[LF_S3_ETAG_MAX]; /* owned; parts sent */
    size_t n_parts, cap_parts;
    bool failed;    /* a part was refused for good: answered with an error at its turn */
    size_t pending; /* batches copied in whose answer send has not stored yet */
};

struct s3_out {
    struct lf_output *out;
    const struct lf_output_conf *conf; /* borrowed */
    char who[128];                     /* "output NAME" */
    struct lf_tmpl tmpl;               /* the key template */
    struct lf_s3req *req;              /* owned; the thread's */
    struct lf_deadletter *dl;          /* owned; the thread's */
    bool warned_key;                   /* a key's fields were cut: said once (lane thread) */
    uv_mutex_t mu;
    uv_cond_t cond;
    uv_mutex_t answer_mu;
    struct lf_buf spare; /* mu; the body buffer of the last object put, for the next one:
                            its pages are in already (fresh ones cost a fault each) */
    struct s3_obj *open;   /* open objects, the oldest first */
    struct s3_obj *closed; /* closed, in closing order: put by the thread */
    size_t n_closed;
    bool drain_now, stop;
    bool give_up; /* also read without mu by the transfer in progress */
    uv_thread_t thread;
    bool started;
    /* the thread's */
    struct lf_buf part;
    uint64_t n_put;
    bool told_skew, told_creds;
};

static int64_t now_ms(void)
{
    return (int64_t)(uv_hrtime() / 1000000);
}

/* ---- the objects ---- */

static void obj_free(struct s3_obj *o)
{
    if (o == NULL)
        return;
    free(o->prefix);
    free(o->key);
    lf_buf_release(&o->data);
    free(o->held);
    free(o->upload_id);
    free(o->etags);
    free(o);
}

/* A random version 4 UUID into out (37 bytes). */
static void uuid4(char out[37])
{
    unsigned char u[16];
    size_t got = 0;
    while (got < sizeof(u)) {
        ssize_t n = getrandom(u + got, sizeof(u) - got, 0);
        if (n > 0)
            got += (size_t)n;
    }
    u[6] = (unsigned char)((u[6] & 0x0f) | 0x40);
    u[8] = (unsigned char)((u[8] & 0x3f) | 0x80);
    snprintf(out, 37, "%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", u[0],
             u[1], u[2], u[3], u[4], u[5], u[6], u[7], u[8], u[9], u[10], u[11], u[12], u[13],
             u[14], u[15]);
}

static struct s3_obj *obj_new(const char *prefix, uint64_t interval_ms, struct lf_buf *spare)
{
    struct s3_obj *o = calloc(1, sizeof(*o));
    if (o == NULL)
        return NULL;
    char uuid[37];
    uuid4(uuid);
    size_t plen = strlen(prefix);
    o->prefix = strdup(prefix);
    o->key = malloc(plen + 37);
    if (o->prefix == NULL || o->key == NULL) {
        obj_free(o);
        return NULL;
    }
    size_t k = 0;
    for (size_t i = 0; i < plen; i++) {
        if (prefix[i] == S3_UUID_MARK) {
            memcpy(o->key + k, uuid, 36);
            k += 36;
        } else {
            o->key[k++] = prefix[i];
        }
    }
    o->key[k] = '\0';
    o->data = *spare; /* empty, or a former object's buffer */
    lf_buf_init(spare, S3_OBJECT_MAX);
    o->deadline_ms = now_ms() + (int64_t)interval_ms;
    return o;
}

/* The length of out[start..n) cut back to whole UTF-8 characters. */
static size_t utf8_whole(const char *out, size_t start, size_t n)
{
    size_t k = n;
    while (k > start && ((unsigned char)out[k - 1] & 0xC0) == 0x80)
        k--; /* continuation bytes: k - 1 is their lead byte, if any */
    if (k == start || (unsigned char)out[k - 1] < 0xC0)
        return n;
    unsigned char lead = (unsigned char)out[k - 1];
    size_t want = lead >= 0xF0 ? 4 : lead >= 0xE0 ? 3 : 2;
    return n - (k - 1) >= want ? n : k - 1;
}

/* The prefix of b into out: the key template over its first event, the uuid marked, each
 * field's text cut to field_max bytes (whole characters). */
static enum lf_err
render_prefix(struct s3_out *s, struct lf_batch *b, char *out, size_t cap, size_t field_max)
{
    const struct lf_event *first = NULL;
    for (size_t i = 0; i < lf_batch_count(b) && first == NULL; i++) {
        if (!(lf_batch_event(b, i)->flags & LF_EVENT_DROPPED))
            first = lf_batch_event(b, i);
    }
    struct lf_str nd;
    enum lf_err err = lf_batch_ndjson(b, &nd);
    if (err)
        return err;
    const char *eol = memchr(nd.ptr, '\n', nd.len);
    struct lf_str line = lf_str_make(nd.ptr, eol != NULL ? (size_t)(eol - nd.ptr) : nd.len);
    time_t secs = (time_t)((first != NULL ? first->timestamp_ns : 0) / 1000000000);
    struct tm tm;
    gmtime_r(&secs, &tm);
    size_t n = 0;
    for (size_t i = 0; i < s->tmpl.n; i++) {
        const struct lf_tmpl_part *p = &s->tmpl.parts[i];
        if (p->field && strcmp(p->text, "uuid") == 0) {
            if (n + 1 >= cap)
                return LF_ETOOBIG;
            out[n++] = S3_UUID_MARK;
        } else if (p->field) {
            struct lf_str v;
            size_t start = n;
            size_t lim = cap - n > field_max ? n + field_max : cap;
            if (lf_fields_find(line, p->text, p->len, &v) && !lf_fields_text(v, out, &n, lim)) {
                if (lim == cap)
                    return LF_ETOOBIG;
                n = utf8_whole(out, start, n); /* cut at field_max */
            }
        } else {
            char lit[S3_KEY_MAX + 1];
            size_t w = strftime(out + n, cap - n, p->text, &tm);
            if (w == 0 && p->len > 0 && strftime(lit, sizeof(lit), p->text, &tm) != 0)
                return LF_ETOOBIG;
            n += w;
        }
    }
    if (n >= cap)
        return LF_ETOOBIG;
    out[n] = '\0';
    return LF_OK;
}

/* Moves o from the open list to the end of the closed queue. mu held. */
static void close_locked(struct s3_out *s, struct s3_obj *o)
{
    struct s3_obj **pp = &s->open;
    while (*pp != o)
        pp = &(*pp)->next;
    *pp = o->next;
    o->next = NULL;
    pp = &s->closed;
    while (*pp != NULL)
        pp = &(*pp)->next;
    *pp = o;
    s->n_closed++;
    uv_cond_broadcast(&s->cond);
}

static struct s3_obj *find_open_locked(struct s3_out *s, const char *prefix)
{
    for (struct s3_obj *o = s->open; o != NULL; o = o->next) {
        if (strcmp(o->prefix, prefix) == 0)
            return o;
    }
    return NULL;
}

/* ---- answers ---- */

/* Answers every batch o holds with res; dead: they are in the dead letters (answered as
 * delivered, counted as dead). */
static void answer_all(struct s3_out *s, struct s3_obj *o, enum lf_err res, bool dead)
{
    uv_mutex_lock(&s->answer_mu);
    struct lf_output_stats *st = lf_output_stats(s->out);
    for (size_t i = 0; i < o->n_held; i++) {
        size_t events = o->held[i].events;
        lf_output_done_held(s->out, &o->held[i], res);
        if (dead) { /* lf_output_done_held() cannot say so: move them over */
            st->events_acked -= events;
            st->events_dead += events;
        }
    }
    if (res == LF_OK && !dead)
        st->bytes_written += o->total;
    else if (res != LF_OK)
        st->errors++;
    uv_mutex_unlock(&s->answer_mu);
    o->n_held = 0;
}

/* ---- send (lane thread) ---- */

static enum lf_err
s3_form(const struct lf_output_conf *conf, struct lf_batch *b, struct lf_str *out)
{
    switch (conf->compression) {
    case LF_COMPRESS_ZSTD:
        return lf_batch_zstd(b, S3_ZSTD_LEVEL, out);
    case LF_COMPRESS_GZIP:
        return lf_batch_gzip(b, S3_GZIP_LEVEL, out);
    case LF_COMPRESS_NONE:
        break;
    }
    return lf_batch_ndjson(b, out);
}

static enum lf_err s3_prepare(const struct lf_output *out, struct lf_batch *b)
{
    struct lf_str form;
    return s3_form(lf_output_conf(out), b, &form);
}

/* Copies form into the open object of prefix (made if none) and keeps a slot for the
 * batch's answer, filled in by send once it holds the batch (*out, its index in *slot:
 * the object is not put while o->pending); closes it when full. mu held. */
static enum lf_err gather_locked(
    struct s3_out *s, const char *prefix, struct lf_str form, struct s3_obj **out, size_t *slot)
{
    const struct lf_output_conf *conf = s->conf;
    struct s3_obj *o = find_open_locked(s, prefix);
    if (o == NULL) {
        o = obj_new(prefix, conf->s3_object_interval_ms, &s->spare);
        if (o == NULL)
            return LF_ENOMEM;
        struct s3_obj **pp = &s->open;
        while (*pp != NULL)
            pp = &(*pp)->next;
        *pp = o;
        uv_cond_broadcast(&s->cond); /* a new deadline for the thread */
    }
    enum lf_err err = lf_array_grow(&o->held, &o->cap_held, o->n_held, sizeof(*o->held), 16);
    if (!err)
        err = lf_buf_append(&o->data, form.ptr, form.len);
    if (err)
        return err;
    *out = o;
    *slot = o->n_held++;
    o->pending++;
    o->total += form.len;
    if (o->total >= conf->s3_object_bytes || o->n_held >= S3_MAX_BATCHES)
        close_locked(s, o);
    else if (o->total > S3_MULTIPART_MIN && o->data.len >= conf->s3_part_bytes)
        uv_cond_broadcast(&s->cond); /* a part to send */
    return LF_OK;
}

/* True when the thread is behind: the lane should wait before giving more. mu held. */
static bool behind_locked(const struct s3_out *s)
{
    if (s->n_closed >= S3_BACKLOG)
        return true;
    for (const struct s3_obj *o = s->open; o != NULL; o = o->next) {
        if (o->total > S3_MULTIPART_MIN && o->data.len >= 2 * s->conf->s3_part_bytes)
            return true;
    }
    return false;
}

static enum lf_err s3_send(struct lf_output *out, struct lf_batch *b)
{
    struct s3_out *s = lf_output_ctx(out);
    if (lf_batch_count(b) == lf_batch_dropped(b)) { /* nothing to store: never an empty object */
        uv_mutex_lock(&s->answer_mu);
        lf_output_done(out, b, LF_OK);
        uv_mutex_unlock(&s->answer_mu);
        return LF_OK;
    }
    struct lf_str form;
    char prefix[S3_KEY_MAX + 1] = { 0 };
    enum lf_err err = s3_form(s->conf, b, &form);
    if (!err)
        err = render_prefix(s, b, prefix, sizeof(prefix) - 35, sizeof(prefix)); /* + uuid */
    if (err == LF_ETOOBIG) {
        /* A field's value too long for a key: the events still go, under a key whose
         * fields are cut, rather than a batch that can never be sent. */
        if (!s->warned_key)
            lf_warn("%s: an object key would be over %d bytes; its fields are cut to %d bytes",
                    s->who, S3_KEY_MAX, S3_KEY_FIELD_CUT);
        s->warned_key = true;
        err = render_prefix(s, b, prefix, sizeof(prefix) - 35, S3_KEY_FIELD_CUT);
    }
    if (err == LF_ETOOBIG)
        lf_error("%s: the key template's own text makes keys over %d bytes", s->who,
                 S3_KEY_MAX);
    if (err)
        return err;
    /* The store is slower than the input: hold the lane back a little (a second at most
     * per batch, so a drain or a stop is never kept waiting long) rather than let memory
     * grow at the input's pace. */
    uv_mutex_lock(&s->mu);
    int64_t until = now_ms() + S3_BEHIND_WAIT_MS;
    for (int64_t now = now_ms(); behind_locked(s) && !s->give_up && now < until; now = now_ms())
        uv_cond_timedwait(&s->cond, &s->mu, (uint64_t)(until - now) * 1000000);
    uv_mutex_unlock(&s->mu);
    /* The bytes are copied first: once held, the batch's memory may be given back. */
    struct s3_obj *o = NULL;
    size_t slot = 0;
    uv_mutex_lock(&s->mu);
    err = gather_locked(s, prefix, form, &o, &slot);
    uv_mutex_unlock(&s->mu);
    if (err)
        return err; /* not held: the pipeline's to retry */
    struct lf_held h;
    lf_output_hold(out, b, &h); /* b is not touched from here on */
    uv_mutex_lock(&s->mu);
    o->held[slot] = h; /* o stays: the thread puts no object with answers pending */
    o->pending--;
    uv_cond_broadcast(&s->cond);
    uv_mutex_unlock(&s->mu);
    return LF_OK;
}

/* ---- requests with retries (the output's thread) ---- */

enum s3_outcome {
    S3_DONE,    /* 2xx */
    S3_REFUSED, /* for good: reason says why */
    S3_GAVE_UP, /* a drain gave up, or the output closes */
};

/* Waits ms, or less if the output gives up. */
static void pause_ms(struct s3_out *s, uint64_t ms)
{
    int64_t until = now_ms() + (int64_t)ms;
    uv_mutex_lock(&s->mu);
    for (int64_t now = now_ms(); now < until && !s->give_up; now = now_ms())
        uv_cond_timedwait(&s->cond, &s->mu, (uint64_t)(until - now) * 1000000);
    uv_mutex_unlock(&s->mu);
}

static bool gave_up(struct s3_out *s)
{
    uv_mutex_lock(&s->mu);
    bool g = s->give_up;
    uv_mutex_unlock(&s->mu);
    return g;
}

/* "HTTP 503 SlowDown: message" or the transfer's error into dst. */
static void describe(const struct lf_s3_reply *r, char *dst, size_t cap)
{
    if (r->status == 0)
        snprintf(dst, cap, "no answer: %s", r->error);
    else
        snprintf(dst, cap, "HTTP %ld%s%s%s%s", r->status, r->code[0] ? " " : "", r->code,
                 r->message[0] ? ": " : "", r->message);
}

/* Sends c until the store takes it, refuses it for good or the output gives up. what
 * names the step for messages ("PUT", "UploadPart 3"). */
static enum s3_outcome call(struct s3_out *s,
                            const struct s3_obj *o,
                            const char *what,
                            const struct lf_s3_call *c,
                            struct lf_s3_reply *r,
                            char *reason,
                            size_t reason_cap)
{
    const struct lf_output_conf *conf = s->conf;
    uint64_t delay = conf->backoff_initial_ms;
    for (;;) {
        if (gave_up(s))
            return S3_GAVE_UP;
        struct lf_errbuf eb = { "" };
        enum lf_err err = lf_s3req_send(s->req, c, r, &eb);
        uint64_t wait = delay;
        if (err == LF_EAGAIN) {
            if (!s->told_creds)
                lf_warn("%s: %s; s3://%s/%s waits", s->who, eb.msg, conf->s3_bucket, o->key);
            s->told_creds = true;
        } else if (err) {
            lf_warn("%s: s3://%s/%s: %s; retrying", s->who, conf->s3_bucket, o->key, eb.msg);
        } else if (r->status >= 200 && r->status < 300 && r->code[0] == '\0') {
            s->told_creds = false;
            return S3_DONE;
        } else {
            describe(r, reason, reason_cap);
            if (r->status == 403 && strcmp(r->code, "RequestTimeTooSkewed") == 0 && r->date_s > 0) {
                int64_t skew = r->date_s - (int64_t)time(NULL);
                if (!s->told_skew)
                    lf_warn("%s: the store's clock is %" PRId64 " s off ours; signing on its "
                            "time from now on",
                            s->who, skew);
                s->told_skew = true;
                lf_s3req_set_skew(s->req, skew);
                wait = 0;
            } else if (strcmp(r->code, "ExpiredToken") == 0 ||
                       strcmp(r->code, "InvalidToken") == 0) {
                lf_warn("%s: s3://%s/%s: %s: %s; new credentials asked for", s->who,
                        conf->s3_bucket, o->key, what, reason);
                lf_s3req_refresh(s->req);
            } else if (r->status == 0 || r->status == 408 || r->status == 429 || r->status >= 500 ||
                       (r->status < 300 && r->code[0] != '\0')) {
                if (r->retry_after_ms > wait)
                    wait = r->retry_after_ms < conf->backoff_max_ms ? r->retry_after_ms
                                                                    : conf->backoff_max_ms;
                lf_warn("%s: s3://%s/%s: %s: %s; retrying in %" PRIu64 " ms", s->who,
                        conf->s3_bucket, o->key, what, reason, wait);
            } else {
                return S3_REFUSED;
            }
        }
        if (wait > 0) {
            pause_ms(s, wait);
            delay = delay * 2 < conf->backoff_max_ms ? delay * 2 : conf->backoff_max_ms;
        }
    }
}

/* ---- multipart ---- */

static enum s3_outcome create_upload(struct s3_out *s, struct s3_obj *o, char *reason, size_t cap)
{
    char sha[LF_SIGV4_HEX_LEN + 1];
    lf_sigv4_sha256_hex("", 0, sha);
    const struct lf_s3_call c = { "POST", o->key, "uploads=", "", 0, sha, true };
    struct lf_s3_reply r;
    enum s3_outcome res = call(s, o, "CreateMultipartUpload", &c, &r, reason, cap);
    if (res == S3_DONE && r.upload_id[0] == '\0') {
        snprintf(reason, cap, "CreateMultipartUpload answered no UploadId");
        return S3_REFUSED;
    }
    if (res == S3_DONE && (o->upload_id = strdup(r.upload_id)) == NULL) {
        snprintf(reason, cap, "out of memory");
        return S3_REFUSED;
    }
    return res;
}

/* The query "uploadId=..." of o (escaped) into q. */
static void upload_query(const struct s3_obj *o, char *q, size_t cap)
{
    int n = snprintf(q, cap, "uploadId=");
    for (const unsigned char *p = (const unsigned char *)o->upload_id; *p && (size_t)n + 4 < cap;
         p++) {
        bool plain = (*p >= 'A' && *p <= 'Z') || (*p >= 'a' && *p <= 'z') ||
                     (*p >= '0' && *p <= '9') || strchr("-._~", *p) != NULL;
        n += snprintf(q + n, cap - (size_t)n, plain ? "%c" : "%%%02X", *p);
    }
}

/* Sends body as o's next part, its upload made first if need be. */
static enum s3_outcome
upload_part(struct s3_out *s, struct s3_obj *o, struct lf_str body, char *reason, size_t cap)
{
    enum s3_outcome res = o->upload_id == NULL ? create_upload(s, o, reason, cap) : S3_DONE;
    if (res != S3_DONE)
        return res;
    if (lf_array_grow(&o->etags, &o->cap_parts, o->n_parts, sizeof(*o->etags), 8)) {
        snprintf(reason, cap, "out of memory");
        return S3_REFUSED;
    }
    char sha[LF_SIGV4_HEX_LEN + 1];
    lf_sigv4_sha256_hex(body.ptr, body.len, sha);
    char query[LF_S3_UPLOADID_MAX * 3 + 64];
    char what[64];
    int qn = snprintf(query, sizeof(query), "partNumber=%zu&", o->n_parts + 1);
    upload_query(o, query + qn, sizeof(query) - (size_t)qn);
    snprintf(what, sizeof(what), "UploadPart %zu", o->n_parts + 1);
    const struct lf_s3_call c = { "PUT", o->key, query, body.ptr, body.len, sha, false };
    struct lf_s3_reply r;
    res = call(s, o, what, &c, &r, reason, cap);
    if (res == S3_DONE)
        snprintf(o->etags[o->n_parts++], LF_S3_ETAG_MAX, "%s", r.etag);
    return res;
}

static enum s3_outcome complete_upload(struct s3_out *s, struct s3_obj *o, char *reason, size_t cap)
{
    struct lf_buf xml;
    lf_buf_init(&xml, (size_t)16 << 20);
    enum lf_err err = lf_buf_append_cstr(&xml, "<CompleteMultipartUpload>");
    for (size_t i = 0; i < o->n_parts && !err; i++) {
        char part[LF_S3_ETAG_MAX + 96];
        snprintf(part, sizeof(part), "<Part><PartNumber>%zu</PartNumber><ETag>%s</ETag></Part>",
                 i + 1, o->etags[i]);
        err = lf_buf_append_cstr(&xml, part);
    }
    if (!err)
        err = lf_buf_append_cstr(&xml, "</CompleteMultipartUpload>");
    if (err) {
        lf_buf_release(&xml);
        snprintf(reason, cap, "out of memory");
        return S3_REFUSED;
    }
    char sha[LF_SIGV4_HEX_LEN + 1];
    lf_sigv4_sha256_hex(xml.ptr, xml.len, sha);
    char query[LF_S3_UPLOADID_MAX * 3 + 16];
    upload_query(o, query, sizeof(query));
    const struct lf_s3_call c = { "POST", o->key, query, xml.ptr, xml.len, sha, false };
    struct lf_s3_reply r;
    enum s3_outcome res = call(s, o, "CompleteMultipartUpload", &c, &r, reason, cap);
    lf_buf_release(&xml);
    return res;
}

/* One attempt: an upload given up leaves no parts behind to pay for. */
static void abort_upload(struct s3_out *s, struct s3_obj *o)
{
    char sha[LF_SIGV4_HEX_LEN + 1];
    lf_sigv4_sha256_hex("", 0, sha);
    char query[LF_S3_UPLOADID_MAX * 3 + 16];
    upload_query(o, query, sizeof(query));
    const struct lf_s3_call c = { "DELETE", o->key, query, "", 0, sha, false };
    struct lf_s3_reply r;
    struct lf_errbuf eb = { "" };
    char why[LF_S3_MESSAGE_MAX + 64] = "";
    if (lf_s3req_send(s->req, &c, &r, &eb) == LF_OK && r.status >= 200 && r.status < 300)
        return;
    describe(&r, why, sizeof(why));
    lf_warn("%s: s3://%s/%s: AbortMultipartUpload: %s; its parts stay until a lifecycle rule "
            "removes them",
            s->who, s->conf->s3_bucket, o->key, eb.msg[0] ? eb.msg : why);
}

/* ---- dead letters ---- */

/* o's bytes as NDJSON into out: its zstd frames or gzip members decompressed. */
static enum lf_err object_ndjson(const struct s3_out *s, const struct s3_obj *o, struct lf_buf *out)
{
    if (s->conf->compression == LF_COMPRESS_NONE)
        return lf_buf_append(out, o->data.ptr, o->data.len);
    char chunk[64 << 10];
    enum lf_err err = LF_OK;
    if (s->conf->compression == LF_COMPRESS_ZSTD) {
        ZSTD_DStream *z = ZSTD_createDStream();
        ZSTD_inBuffer in = { o->data.ptr, o->data.len, 0 };
        while (z != NULL && !err && in.pos < in.size) {
            ZSTD_outBuffer ob = { chunk, sizeof(chunk), 0 };
            size_t rc = ZSTD_decompressStream(z, &ob, &in);
            err = ZSTD_isError(rc) ? LF_EIO : lf_buf_append(out, chunk, ob.pos);
        }
        ZSTD_freeDStream(z);
        return z == NULL ? LF_ENOMEM : err;
    }
    z_stream zs;
    memset(&zs, 0, sizeof(zs));
    if (inflateInit2(&zs, 15 + 16) != Z_OK)
        return LF_ENOMEM;
    zs.next_in = (Bytef *)o->data.ptr;
    zs.avail_in = (uInt)o->data.len;
    while (!err && zs.avail_in > 0) {
        zs.next_out = (Bytef *)chunk;
        zs.avail_out = sizeof(chunk);
        int rc = inflate(&zs, Z_NO_FLUSH);
        err = rc != Z_OK && rc != Z_STREAM_END
                  ? LF_EIO
                  : lf_buf_append(out, chunk, sizeof(chunk) - zs.avail_out);
        if (!err && rc == Z_STREAM_END && inflateReset(&zs) != Z_OK) /* the next member */
            err = LF_EIO;
    }
    inflateEnd(&zs);
    return err;
}

/* A single PUT refused for good: o's events go to the dead letters, answered as delivered;
 * if they cannot be kept, answered with an error (read again at the next start). */
static void bury(struct s3_out *s, struct s3_obj *o, long status, const char *reason)
{
    struct lf_buf nd;
    lf_buf_init(&nd, S3_DEAD_MAX);
    struct lf_errbuf eb = { "" };
    size_t n_dead = 0;
    enum lf_err err = object_ndjson(s, o, &nd);
    if (err)
        lf_fail(&eb, err, "cannot read the object back: %s", lf_err_str(err));
    else
        err = lf_deadletter_write(s->dl, lf_buf_str(&nd), (int)status, reason, &n_dead, &eb);
    lf_buf_release(&nd);
    if (err) {
        lf_error("%s: s3://%s/%s: %s; cannot keep its events: %s; they are read again at the "
                 "next start",
                 s->who, s->conf->s3_bucket, o->key, reason, eb.msg);
        answer_all(s, o, LF_EIO, false);
        return;
    }
    lf_error("%s: s3://%s/%s: %s; %zu events written to dead letters %s", s->who,
             s->conf->s3_bucket, o->key, reason, n_dead, lf_deadletter_path(s->dl));
    answer_all(s, o, LF_OK, true);
}

/* ---- the output's thread ---- */

/* Puts a closed object whole, or ends its multipart upload, and answers its batches. */
static void deliver(struct s3_out *s, struct s3_obj *o)
{
    char reason[LF_S3_MESSAGE_MAX + LF_S3_CODE_MAX + 64] = "";
    enum s3_outcome res = o->failed ? S3_REFUSED : S3_DONE;
    struct lf_s3_reply r = { 0 };
    if (res == S3_DONE && o->upload_id == NULL) {
        char sha[LF_SIGV4_HEX_LEN + 1];
        lf_sigv4_sha256_hex(o->data.ptr, o->data.len, sha); /* once, for every attempt */
        const struct lf_s3_call c = { "PUT", o->key, "", o->data.ptr, o->data.len, sha, true };
        res = call(s, o, "PUT", &c, &r, reason, sizeof(reason));
        if (res == S3_REFUSED) {
            bury(s, o, r.status, reason);
            return;
        }
    } else if (res == S3_DONE) {
        /* what is left, in parts of part_bytes but the last: no part but the last may be
         * under 5 MiB, and none needs to be larger */
        for (size_t off = 0; res == S3_DONE && off < o->data.len;) {
            size_t n = o->data.len - off;
            n = n < s->conf->s3_part_bytes ? n : s->conf->s3_part_bytes;
            res = upload_part(s, o, lf_str_make(o->data.ptr + off, n), reason, sizeof(reason));
            off += n;
        }
        if (res == S3_DONE)
            res = complete_upload(s, o, reason, sizeof(reason));
    }
    if (res == S3_DONE) {
        s->n_put++;
        lf_debug("%s: put s3://%s/%s: %zu bytes, %zu batches, %zu parts (%" PRIu64 " objects)",
                 s->who, s->conf->s3_bucket, o->key, o->total, o->n_held, o->n_parts, s->n_put);
        answer_all(s, o, LF_OK, false);
        return;
    }
    if (o->upload_id != NULL)
        abort_upload(s, o);
    if (res == S3_REFUSED)
        lf_error("%s: s3://%s/%s: %s; the multipart upload is aborted, its %zu batches are read "
                 "again at the next start",
                 s->who, s->conf->s3_bucket, o->key, reason, o->n_held);
    answer_all(s, o, LF_EIO, false);
}

/* An open multipart-sized object with a full part, or NULL. mu held. */
static struct s3_obj *part_due_locked(const struct s3_out *s)
{
    for (struct s3_obj *o = s->open; o != NULL; o = o->next) {
        if (!o->failed && o->total > S3_MULTIPART_MIN && o->data.len >= s->conf->s3_part_bytes)
            return o;
    }
    return NULL;
}

/* Sends the first part_bytes of open object o; the lane keeps appending meanwhile. Enters
 * and leaves with mu held. */
static void send_part_locked(struct s3_out *s, struct s3_obj *o)
{
    size_t n = s->conf->s3_part_bytes;
    lf_buf_reset(&s->part);
    if (lf_buf_append(&s->part, o->data.ptr, n))
        return; /* out of memory: the object goes up whole at its close */
    memmove(o->data.ptr, o->data.ptr + n, o->data.len - n);
    o->data.len -= n;
    uv_mutex_unlock(&s->mu);
    char reason[LF_S3_MESSAGE_MAX + LF_S3_CODE_MAX + 64] = "";
    enum s3_outcome res = upload_part(s, o, lf_buf_str(&s->part), reason, sizeof(reason));
    uv_mutex_lock(&s->mu);
    uv_cond_broadcast(&s->cond); /* a send waiting for the parts to leave */
    if (res == S3_DONE)
        return;
    o->failed = true; /* answered with an error when its turn comes */
    if (res == S3_REFUSED)
        lf_error("%s: s3://%s/%s: %s", s->who, s->conf->s3_bucket, o->key, reason);
    struct s3_obj *x = s->open;
    while (x != NULL && x != o)
        x = x->next;
    if (x != NULL) /* still open: what comes next goes to a new object */
        close_locked(s, o);
}

/* Closes the open objects whose time has come (all at a drain); returns the next deadline
 * of those left, or INT64_MAX. mu held. */
static int64_t close_due_locked(struct s3_out *s)
{
    int64_t next = INT64_MAX;
    int64_t now = now_ms();
    struct s3_obj *o = s->open;
    while (o != NULL) {
        struct s3_obj *after = o->next;
        if (s->drain_now || s->stop || o->deadline_ms <= now)
            close_locked(s, o);
        else if (o->deadline_ms < next)
            next = o->deadline_ms;
        o = after;
    }
    s->drain_now = false;
    return next;
}

static void s3_main(void *arg)
{
    struct s3_out *s = arg;
    uv_mutex_lock(&s->mu);
    for (;;) {
        struct s3_obj *o = s->closed;
        if (o != NULL && o->pending == 0) {
            uv_mutex_unlock(&s->mu);
            if (o->n_held > 0)
                deliver(s, o);
            uv_mutex_lock(&s->mu);
            s->closed = o->next;
            s->n_closed--;
            if (s->spare.ptr == NULL && o->data.cap <= (size_t)S3_SPARE_MAX) {
                s->spare = o->data; /* kept for the next object */
                lf_buf_reset(&s->spare);
                lf_buf_init(&o->data, S3_OBJECT_MAX);
            }
            obj_free(o);
            uv_cond_broadcast(&s->cond); /* a send waiting for the backlog to shrink */
            continue;
        }
        o = part_due_locked(s);
        if (o != NULL && !s->give_up) {
            send_part_locked(s, o);
            continue;
        }
        int64_t next = close_due_locked(s);
        if (s->closed != NULL && s->closed->pending == 0)
            continue;
        if (s->stop && s->closed == NULL)
            break;
        int64_t now = now_ms();
        if (next == INT64_MAX)
            uv_cond_wait(&s->cond, &s->mu);
        else if (next > now)
            uv_cond_timedwait(&s->cond, &s->mu, (uint64_t)(next - now) * 1000000);
    }
    uv_mutex_unlock(&s->mu);
}

/* ---- drain, open, close ---- */

static void s3_drain(struct lf_output *out, bool give_up)
{
    struct s3_out *s = lf_output_ctx(out);
    uv_mutex_lock(&s->mu);
    s->drain_now = true;
    if (give_up)
        __atomic_store_n(&s->give_up, true, __ATOMIC_RELAXED); /* read by the transfer too */
    uv_cond_broadcast(&s->cond);
    uv_mutex_unlock(&s->mu);
}

static void s3_free(struct s3_out *s)
{
    if (s->started) {
        uv_mutex_lock(&s->mu);
        s->stop = true; /* everything was answered, or nothing will wait for it: give up */
        __atomic_store_n(&s->give_up, true, __ATOMIC_RELAXED);
        uv_cond_broadcast(&s->cond);
        uv_mutex_unlock(&s->mu);
        uv_thread_join(&s->thread);
        uv_mutex_destroy(&s->mu);
        uv_mutex_destroy(&s->answer_mu);
        uv_cond_destroy(&s->cond);
    }
    lf_buf_release(&s->spare);
    lf_s3req_free(s->req);
    lf_deadletter_free(s->dl);
    lf_tmpl_release(&s->tmpl);
    lf_buf_release(&s->part);
    free(s);
}

static enum lf_err s3_open(struct lf_output *out, struct lf_errbuf *eb)
{
    const struct lf_output_conf *conf = lf_output_conf(out);
    struct s3_out *s = calloc(1, sizeof(*s));
    if (s == NULL)
        return lf_fail(eb, LF_ENOMEM, "output %s: out of memory", conf->name);
    s->out = out;
    s->conf = conf;
    snprintf(s->who, sizeof(s->who), "output %s", conf->name);
    lf_buf_init(&s->part, conf->s3_part_bytes);
    lf_buf_init(&s->spare, S3_OBJECT_MAX);
    const char *key = conf->s3_key != NULL ? conf->s3_key : lf_s3_default_key(conf->compression);
    enum lf_err err = lf_tmpl_compile(&s->tmpl, key, conf->name, "key", eb);
    if (!err)
        err = lf_s3req_new(conf, s->who, &s->give_up, &s->req, eb);
    if (!err)
        err = lf_deadletter_new(conf->data_dir != NULL ? conf->data_dir : ".", conf->name, &s->dl,
                                eb);
    if (!err && (uv_mutex_init(&s->mu) != 0 || uv_mutex_init(&s->answer_mu) != 0 ||
                 uv_cond_init(&s->cond) != 0 || uv_thread_create(&s->thread, s3_main, s) != 0))
        err = lf_fail(eb, LF_EIO, "output %s: cannot start its thread", conf->name);
    if (err) {
        s3_free(s); /* a failed init above leaks nothing: libuv's are plain pthread objects */
        return err;
    }
    s->started = true;
    if (!conf->tls_verify)
        lf_warn("output %s: tls.verify is off: the store's certificate is not checked", conf->name);
    lf_output_set_ctx(out, s);
    return LF_OK;
}

static void s3_close(struct lf_output *out)
{
    s3_free(lf_output_ctx(out));
    lf_output_set_ctx(out, NULL);
}

/* The key holds %{uuid} (else a restart would overwrite an object), the sizes agree. */
static void s3_check(const struct lf_output_conf *conf, struct lf_config_report *rep)
{
    lf_output__check_tls_files(conf, rep);
    if (conf->s3_key != NULL && strstr(conf->s3_key, "%{uuid}") == NULL)
        lf_config_report(rep, "key", "must hold %%{uuid}, so that no object overwrites another");
    if (conf->s3_key != NULL && strlen(conf->s3_key) > S3_KEY_MAX)
        lf_config_report(rep, "key", "longer than S3's %d bytes", S3_KEY_MAX);
    if (conf->s3_object_bytes > S3_OBJECT_MAX)
        lf_config_report(rep, "object_bytes", "at most 5GiB");
    if (conf->s3_sse_kms_key_id != NULL &&
        (conf->s3_sse == NULL || strcmp(conf->s3_sse, "aws:kms") != 0))
        lf_config_report(rep, "sse_kms_key_id", "needs server_side_encryption: aws:kms");
    if (lf_awscred_region(conf) == NULL)
        lf_config_report(rep, "region", "no region: set it, or $AWS_REGION");
}

const struct lf_output_ops lf_output_s3 = {
    .name = "s3",
    .open = s3_open,
    .send = s3_send,
    .prepare = s3_prepare,
    .close = s3_close,
    .check = s3_check,
    .drain = s3_drain,
};
