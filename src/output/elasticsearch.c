/* elasticsearch.c - the elasticsearch output: the _bulk API with `create` actions.
 *
 *   send (lane thread):  the events of b not done yet ──► one _bulk body, per event
 *       {"create":{"_index":"<index, strftime of @timestamp in UTC>","_id":"<stream><offset>"}}
 *       <the event's JSON>
 *       gzip'd ──► lf_httpc_submit()
 *   on_reply (loop thread): per item of the answer
 *       2xx, or 409 (a create of an _id that exists: delivered before) ──► done
 *       429, 5xx ──► sent again, alone, when the lane retries the batch (LF_EAGAIN)
 *       anything else (a mapping error) ──► dead letters, done
 *   and for the request as a whole: no answer, 408, 429, 5xx retry it; other statuses
 *   dead-letter what was sent.
 *
 * With document_id: auto, _id is the source's stream id (one per content generation, see
 * document_id()) and the event's offset, in hex, so a batch sent again
 * after a retry, a crash, a restart or from the spool creates nothing twice: the copies are
 * answered 409, also when the file was renamed (rotated) in between; and a 409 never
 * answers a new event, which names a document no one created.
 *
 * What is left of a batch lives in an entry found by the batch's address: the lane never
 * sends a batch again before it was answered, and after it is given up on (shutdown, or
 * --once out of retries) the pipeline cuts no new batch that could reuse the address.
 * Entries and their buffers are kept for the next batches: nothing is allocated per batch
 * in the steady state. The lane finds and claims entries, the loop thread finds and frees
 * them (requests_int.h: a mutex guards the table and each entry's batch pointer), and an
 * entry's contents belong to whichever side holds the batch at the time (the lane while
 * sending, the loop while reading the answer).
 *
 * An action line costs a few copies: its head (the create verb and the index, rendered by
 * strftime once per second of @timestamp) from a cache, the _id's hex digits written from
 * two integers, and its end. */
#include "config.h"

#define LF_LOG_COMPONENT "output"

#include "netlib_int.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <uv.h>

#include "httpc_int.h"
#include "logferry/deadletter.h"
#include "logferry/jsonmask.h"
#include "logferry/log.h"
#include "output_int.h"
#include "requests_int.h"

#define LF_ES_MAX_RESPONSE ((size_t)64 << 20) /* a _bulk answer of 4096 items is ~1 MiB */
#define LF_ES_BUF_MAX      ((size_t)1 << 31)
#define LF_ES_ID_MAX       32 /* hex digits of an _id */

/* What is left to deliver of one batch. */
struct es_batch {
    struct lf_request r; /* r.b: NULL when the entry is free; r.body: the _bulk request */
    unsigned char *done; /* owned; per event of b: created, conflicted or dead-lettered */
    size_t *sent;        /* owned; request item k is event sent[k] */
    size_t *line;        /* owned; per kept event of b: where its line starts in b's NDJSON */
    size_t n_sent;
    size_t cap;    /* slots of done and sent */
    size_t n_dead; /* events dead-lettered so far */
    bool stale;    /* body no longer holds what is left to send: build it again */
};

struct es_out {
    struct lf_output *out;
    const struct lf_output_conf *conf; /* borrowed */
    struct lf_httpc *client;           /* owned */
    struct lf_deadletter *dl;          /* owned; loop thread */
    struct z_stream_s *zs;             /* owned; gzip writer, lane thread */
    struct lf_requests ents;           /* of struct es_batch */
    /* The action lines' head for the @timestamp second head_secs (render_head()); lane
     * thread. */
    struct lf_buf head;
    int64_t head_secs;
    bool head_ok; /* head holds head_secs's rendering */
};

/* ---- the entries ---- */

/* b's entry, or a free one claimed for b (n_sent SIZE_MAX: not set up yet); NULL if out of
 * memory. */
static struct es_batch *entry_of(struct es_out *es, struct lf_batch *b)
{
    bool fresh;
    struct es_batch *e = lf_requests_of(&es->ents, b, &fresh);
    if (e != NULL && fresh)
        e->n_sent = SIZE_MAX; /* claimed: set up by the caller */
    return e;
}

static void release(struct es_out *es, struct es_batch *e)
{
    lf_requests_release(&es->ents, &e->r);
}

/* Makes room for n events in e and marks none done. */
static enum lf_err entry_start(struct es_batch *e, size_t n)
{
    if (n > e->cap) {
        unsigned char *d = realloc(e->done, n);
        if (d == NULL)
            return LF_ENOMEM;
        e->done = d;
        size_t *s = realloc(e->sent, n * sizeof(*s));
        if (s == NULL)
            return LF_ENOMEM;
        e->sent = s;
        size_t *l = realloc(e->line, n * sizeof(*l));
        if (l == NULL)
            return LF_ENOMEM;
        e->line = l;
        e->cap = n;
    }
    memset(e->done, 0, n);
    e->n_dead = 0;
    e->n_sent = 0;
    return LF_OK;
}

/* ---- the request ---- */

/* FNV-1a 64 of p, continuing from h[0] and, apart, from h[1]: one pass, two chains. */
static void fnv1a2(uint64_t h[2], const void *p, size_t n)
{
    const unsigned char *c = p;
    uint64_t a = h[0];
    uint64_t b = h[1];
    for (size_t i = 0; i < n; i++) {
        a = (a ^ c[i]) * UINT64_C(0x100000001b3);
        b = (b ^ c[i]) * UINT64_C(0x100000001b3);
    }
    h[0] = a;
    h[1] = b;
}

/* Appends v to p[*n], little-endian: the hash input is the same on every machine. */
static void put_u64(unsigned char *p, size_t *n, uint64_t v)
{
    for (int i = 0; i < 8; i++)
        p[(*n)++] = (unsigned char)(v >> (8 * i));
}

/* Writes v in lowercase hex to out: 16 digits if fixed, else without leading zeros (at
 * least one). Returns the digits written. */
static size_t put_hex(char *out, uint64_t v, bool fixed)
{
    static const char digits[] = "0123456789abcdef";
    size_t n = fixed ? 16 : 1;
    while (!fixed && n < 16 && (v >> (4 * n)) != 0)
        n++;
    for (size_t i = 0; i < n; i++)
        out[i] = digits[(v >> (4 * (n - 1 - i))) & 0xf];
    return n;
}

/* The _id of an event spooled by a version without stream ids (stream id 0): 32 hex digits
 * from two hashes of the input id, the path and the offset, as that version named it. */
static size_t legacy_id(const struct lf_event *ev, char out[LF_ES_ID_MAX])
{
    const struct lf_source *src = ev->source;
    unsigned char key[16];
    size_t n = 0;
    put_u64(key, &n, src->stream_id);
    put_u64(key, &n, ev->offset);
    uint64_t h[2] = { UINT64_C(0xcbf29ce484222325), UINT64_C(0x84222325cbf29ce4) };
    fnv1a2(h, src->input_id, strlen(src->input_id) + 1);
    fnv1a2(h, key, n);
    if (src->path != NULL)
        fnv1a2(h, src->path, strlen(src->path) + 1);
    for (int k = 0; k < 2; k++) { /* each chain ends on its own number (a byte of k) */
        uint64_t one[2] = { h[k], 0 };
        fnv1a2(one, &k, 1);
        h[k] = one[0];
    }
    return put_hex(out, h[0], true) + put_hex(out + 16, h[1], true);
}

/* The event's _id, written to out; returns its length: the source's stream id in 16 hex
 * digits, then the event's offset in hex without leading zeros (17 to 32 digits; the
 * stream id's fixed width keeps the two apart). A stream id names one content generation
 * of one source of one input (a file as first seen, a file after a truncation or an inode
 * reused, one run's stdin, drawn at random: see lf_stream_id_new()), kept in the registry
 * and in the spool, so a resend of an event (a retry, a restart, a replay from the spool, a
 * rename in between) names the same document and is answered 409, while a new event never
 * does, whatever its text: the message, the path, the device and the inode are not in it.
 * Within a stream no two events share an offset (an event's offset is that of its first
 * line: a multiline or a CRI partial join is one event, an overlong line is truncated, not
 * split, and no stage makes two events of one). The legacy 32-digit form (stream id 0)
 * shares no _id with this one but at offsets past 2^60. */
static size_t document_id(const struct lf_event *ev, char out[LF_ES_ID_MAX])
{
    const struct lf_source *src = ev->source;
    if (src->stream_id == 0) /* spooled by a version without streams */
        return legacy_id(ev, out);
    size_t n = put_hex(out, src->stream_id, true);
    return n + put_hex(out + n, ev->offset, false);
}

/* Renders the head of the action lines of events stamped in second secs into es->head:
 * `{"create":{"_index":"<index>` and, with document_id auto, `","_id":"`. strftime runs
 * once per second of @timestamp seen, not once per event. */
static enum lf_err render_head(struct es_out *es, int64_t secs)
{
    char index[256];
    time_t t = (time_t)secs;
    struct tm tm;
    gmtime_r(&t, &tm);
    size_t n = strftime(index, sizeof(index), es->conf->index, &tm);
    lf_buf_reset(&es->head);
    enum lf_err err = lf_buf_append(&es->head, "{\"create\":{\"_index\":\"", 21);
    if (!err)
        err = lf_json_escape(&es->head, lf_str_make(index, n));
    if (!err && es->conf->document_id_auto)
        err = lf_buf_append(&es->head, "\",\"_id\":\"", 9);
    es->head_ok = !err;
    es->head_secs = secs;
    return err;
}

/* Appends the action line of ev: create, with its index and, with document_id auto, _id. */
static enum lf_err append_action(struct es_out *es, struct lf_buf *body, const struct lf_event *ev)
{
    int64_t secs = ev->timestamp_ns / 1000000000;
    if (!es->head_ok || secs != es->head_secs) {
        enum lf_err err = render_head(es, secs);
        if (err)
            return err;
    }
    char tail[LF_ES_ID_MAX + 4];
    size_t n = es->conf->document_id_auto ? document_id(ev, tail) : 0;
    memcpy(tail + n, "\"}}\n", 4);
    enum lf_err err = lf_buf_append(body, es->head.ptr, es->head.len);
    return err ? err : lf_buf_append(body, tail, n + 4);
}

/* The _bulk body of b's events not done yet, in order; e->sent maps its items back. */
static enum lf_err build_body(struct es_out *es, struct es_batch *e, struct lf_batch *b)
{
    struct lf_str nd;
    enum lf_err err = lf_batch_ndjson(b, &nd);
    const char *p = nd.ptr;
    const char *end = nd.ptr + nd.len;
    lf_buf_reset(&e->r.body);
    e->n_sent = 0;
    for (size_t i = 0; i < lf_batch_count(b) && !err; i++) {
        const struct lf_event *ev = lf_batch_event(b, i);
        if (ev->flags & LF_EVENT_DROPPED) {
            e->done[i] = 1;
            continue;
        }
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        if (nl == NULL)
            return LF_EINVAL; /* one line per event kept: cannot happen */
        size_t len = (size_t)(nl - p) + 1;
        e->line[i] = (size_t)(p - nd.ptr);
        if (!e->done[i]) {
            err = append_action(es, &e->r.body, ev);
            if (!err)
                err = lf_buf_append(&e->r.body, p, len);
            e->sent[e->n_sent++] = i;
        }
        p += len;
    }
    return err;
}

static enum lf_err es_send(struct lf_output *out, struct lf_batch *b)
{
    struct es_out *es = lf_output_ctx(out);
    struct es_batch *e = entry_of(es, b);
    if (e == NULL)
        return LF_ENOMEM;
    enum lf_err err = LF_OK;
    if (e->n_sent == SIZE_MAX) { /* first send of b */
        err = entry_start(e, lf_batch_count(b));
        e->stale = true;
    }
    /* A retry of the whole request sends the same bytes; after a partial answer, the body
     * is built again from the items left (429 or 5xx). */
    if (!err && e->stale) {
        err = build_body(es, e, b);
        if (!err && es->conf->compression == LF_COMPRESS_GZIP)
            err = lf_httpc_gzip(es->zs, lf_buf_str(&e->r.body), &e->r.gz);
        if (!err)
            lf_debug("output %s: batch of %zu events: body of %zu items built", es->conf->name,
                     lf_batch_count(b), e->n_sent);
    }
    if (err) {
        release(es, e);
        lf_output_stats(out)->errors++;
        return err;
    }
    e->stale = false;
    if (e->n_sent == 0) { /* nothing to send: all dropped */
        release(es, e);
        lf_output_done(out, b, LF_OK);
        return LF_OK;
    }
    struct lf_buf *sent = es->conf->compression == LF_COMPRESS_GZIP ? &e->r.gz : &e->r.body;
    lf_output_stats(out)->bytes_written += sent->len;
    lf_httpc_submit(es->client, b, lf_buf_str(sent));
    return LF_OK;
}

/* ---- the answer ---- */

/* The JSON line of event i of e's batch (without its newline), for the dead letters: found
 * by the index build_body made of the NDJSON. */
static struct lf_str event_line(const struct es_batch *e, size_t i)
{
    struct lf_str nd;
    if (lf_batch_ndjson(e->r.b, &nd) || e->line[i] >= nd.len) /* cached since send: cannot fail */
        return lf_str_make("{}", 2);
    const char *p = nd.ptr + e->line[i];
    const char *nl = memchr(p, '\n', nd.len - e->line[i]);
    return lf_str_make(p, nl != NULL ? (size_t)(nl - p) : nd.len - e->line[i]);
}

/* Ends b: every event done, some perhaps dead-lettered. */
static void finish_batch(struct es_out *es, struct es_batch *e)
{
    struct lf_batch *b = e->r.b;
    size_t n_dead = e->n_dead;
    release(es, e);
    if (n_dead > 0)
        lf_output_done_dead(es->out, b, n_dead);
    else
        lf_output_done(es->out, b, LF_OK);
}

/* Writes the records added to the dead letters; false (logged) if that failed. */
static bool commit_dead(struct es_out *es, size_t added)
{
    struct lf_errbuf eb = { "" };
    size_t n = 0;
    if (added == 0)
        return true;
    if (lf_deadletter_commit(es->dl, &n, &eb)) {
        lf_error("output %s: cannot keep %zu refused events: %s; will retry them", es->conf->name,
                 added, eb.msg);
        return false;
    }
    lf_error("output %s: %zu events refused for good; written to dead letters %s", es->conf->name,
             n, lf_deadletter_path(es->dl));
    return true;
}

/* ---- a scanner of the answer's top level ----
 *
 * Elasticsearch answers {"errors":false,"took":N,"items":[...]} (7.x writes took first);
 * `errors` false means every item succeeded, so the common answer needs no tree: the
 * scanner reads the top-level members, takes `errors` and counts the elements of `items`,
 * skipping every other value unread. It checks what it skips only as far as strings,
 * escapes and the nesting of brackets go; anything else (no `errors`, errors true, a count
 * other than the request's) is left to the per-item reading. */

#define LF_ES_SCAN_DEPTH 64 /* nesting the scanner follows; deeper: not a _bulk answer */

struct scan {
    const char *p;
    const char *end;
};

static void scan_ws(struct scan *s)
{
    while (s->p < s->end && (*s->p == ' ' || *s->p == '\t' || *s->p == '\n' || *s->p == '\r'))
        s->p++;
}

/* Past the string at s->p (its opening quote); false if it is not one or never ends. */
static bool scan_string(struct scan *s)
{
    if (s->p >= s->end || *s->p != '"')
        return false;
    for (s->p++; s->p < s->end; s->p++) {
#ifdef __SSE2__
        /* 16 bytes a step to the next byte that needs a look: most of an answer is names
         * and values in strings (0xE2 stops it too, and is passed over below). */
        while (s->end - s->p >= 16) {
            unsigned m = lf_json_special_mask(_mm_loadu_si128((const __m128i *)(const void *)s->p));
            if (m != 0) {
                s->p += __builtin_ctz(m);
                break;
            }
            s->p += 16;
        }
        if (s->p >= s->end)
            break;
#endif
        if (*s->p == '\\') {
            if (s->end - s->p < 2)
                return false;
            s->p++; /* the escaped character is skipped with it; \u's digits are plain */
        } else if (*s->p == '"') {
            s->p++;
            return true;
        } else if ((unsigned char)*s->p < 0x20)
            return false;
    }
    return false;
}

/* Past the literal word (true, false, null) or number at s->p; false if there is none. */
static bool scan_scalar(struct scan *s)
{
    const char *start = s->p;
    for (; s->p < s->end; s->p++) {
        char c = *s->p;
        if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || c == '-' || c == '+' ||
              c == '.' || c == 'E'))
            break;
    }
    return s->p > start;
}

/* Past one value of any kind, objects and arrays with all they hold. */
static bool scan_value(struct scan *s)
{
    char open[LF_ES_SCAN_DEPTH]; /* the closing bracket expected at each depth */
    size_t depth = 0;
    do {
        scan_ws(s);
        if (s->p >= s->end)
            return false;
        char c = *s->p;
        if (c == '"') {
            if (!scan_string(s))
                return false;
        } else if (c == '{' || c == '[') {
            if (depth == LF_ES_SCAN_DEPTH)
                return false;
            open[depth++] = c == '{' ? '}' : ']';
            s->p++;
        } else if (c == '}' || c == ']') {
            if (depth == 0 || open[depth - 1] != c)
                return false;
            depth--;
            s->p++;
        } else if (c == ',' || c == ':') {
            if (depth == 0)
                return false;
            s->p++;
        } else if (!scan_scalar(s)) {
            return false;
        }
    } while (depth > 0);
    return true;
}

/* Reads the answer's top-level members: *errors 0 or 1 (-1: no `errors`), *n_items the
 * elements of `items` (SIZE_MAX: none). False if the answer is not a JSON object as far as
 * the scanner reads. */
static bool scan_answer(struct lf_str body, int *errors, size_t *n_items)
{
    struct scan s = { body.ptr, body.ptr + body.len };
    *errors = -1;
    *n_items = SIZE_MAX;
    scan_ws(&s);
    if (s.p >= s.end || *s.p++ != '{')
        return false;
    scan_ws(&s);
    bool more = s.p < s.end && *s.p != '}';
    while (more) {
        scan_ws(&s);
        const char *name = s.p; /* compared as written: Elasticsearch escapes neither */
        if (!scan_string(&s))
            return false;
        size_t n_name = (size_t)(s.p - name) - 2;
        bool is_errors = n_name == 6 && memcmp(name + 1, "errors", 6) == 0;
        bool is_items = n_name == 5 && memcmp(name + 1, "items", 5) == 0;
        scan_ws(&s);
        if (s.p >= s.end || *s.p++ != ':')
            return false;
        scan_ws(&s);
        if (is_errors) {
            const char *v = s.p;
            if (!scan_scalar(&s))
                return false;
            if (s.p - v == 4 && memcmp(v, "true", 4) == 0)
                *errors = 1;
            else if (s.p - v == 5 && memcmp(v, "false", 5) == 0)
                *errors = 0;
            else
                return false;
        } else if (is_items && s.p < s.end && *s.p == '[') {
            size_t n = 0;
            s.p++;
            scan_ws(&s);
            bool next = s.p < s.end && *s.p != ']';
            while (next) {
                if (!scan_value(&s))
                    return false;
                n++;
                scan_ws(&s);
                next = s.p < s.end && *s.p == ',';
                s.p += next;
            }
            if (s.p >= s.end || *s.p++ != ']')
                return false;
            *n_items = n;
        } else if (!scan_value(&s)) {
            return false;
        }
        scan_ws(&s);
        more = s.p < s.end && *s.p == ',';
        s.p += more;
    }
    if (s.p >= s.end || *s.p++ != '}')
        return false;
    scan_ws(&s);
    return s.p == s.end;
}

/* Reads the _bulk answer's items; marks e's events done, dead-letters refused ones.
 * Returns the items to send again, or SIZE_MAX if the answer could not be read. */
static size_t read_items(struct es_out *es, struct es_batch *e, const struct lf_httpc_reply *r)
{
    int errors = -1;
    size_t n_items = SIZE_MAX;
    if (scan_answer(r->body, &errors, &n_items) && errors == 0 && n_items == e->n_sent) {
        for (size_t k = 0; k < e->n_sent; k++) /* errors false: every item succeeded */
            e->done[e->sent[k]] = 1;
        return 0;
    }
    json_t *root = json_loadb(r->body.ptr, r->body.len, 0, NULL);
    json_t *items = json_object_get(root, "items");
    if (!json_is_array(items) || json_array_size(items) != e->n_sent) {
        json_decref(root);
        return SIZE_MAX;
    }
    size_t again = 0;
    size_t added = 0;
    bool add_failed = false;
    for (size_t k = 0; k < e->n_sent; k++) {
        json_t *item = json_array_get(items, k);
        json_t *res = json_is_object(item) ? json_object_iter_value(json_object_iter(item)) : NULL;
        long status = (long)json_integer_value(json_object_get(res, "status"));
        size_t i = e->sent[k];
        if ((status >= 200 && status < 300) || status == 409) {
            e->done[i] = 1;
        } else if (status == 0 || lf_httpc_status_retryable(status)) {
            again++;
        } else {
            json_t *err = json_object_get(res, "error");
            char reason[512];
            snprintf(reason, sizeof(reason), "%s: %s",
                     json_string_value(json_object_get(err, "type")) ?: "error",
                     json_string_value(json_object_get(err, "reason")) ?: "no reason given");
            lf_config_scrub(&es->conf->env, reason, sizeof(reason)); /* it may quote a value */
            if (add_failed || lf_deadletter_add(es->dl, event_line(e, i), (int)status, reason)) {
                add_failed = true;
                again++;
                continue;
            }
            e->done[i] = 2; /* dead-lettered once committed */
            added++;
        }
    }
    json_decref(root);
    bool kept = !add_failed && commit_dead(es, added);
    for (size_t k = 0; k < e->n_sent; k++) {
        size_t i = e->sent[k];
        if (e->done[i] == 2 && kept) {
            e->done[i] = 1;
            e->n_dead++;
        } else if (e->done[i] == 2) {
            e->done[i] = 0;
            again++;
        }
    }
    return again;
}

/* The whole request was refused for good: every event sent goes to the dead letters. */
static bool dead_letter_all(struct es_out *es, struct es_batch *e, const char *reason, long st)
{
    for (size_t k = 0; k < e->n_sent; k++) {
        if (lf_deadletter_add(es->dl, event_line(e, e->sent[k]), (int)st, reason))
            return false;
    }
    if (!commit_dead(es, e->n_sent))
        return false;
    for (size_t k = 0; k < e->n_sent; k++)
        e->done[e->sent[k]] = 1;
    e->n_dead += e->n_sent;
    return true;
}

static void on_reply(void *arg, struct lf_batch *b, const struct lf_httpc_reply *r)
{
    struct es_out *es = arg;
    const char *name = es->conf->name;
    const char *where = lf_httpc_where(es->client);
    struct es_batch *e = entry_of(es, b);
    char reason[256];
    if (e == NULL || e->n_sent == SIZE_MAX) { /* out of memory: the entry was lost */
        if (e != NULL)
            release(es, e);
        lf_output_done(es->out, b, LF_EAGAIN);
        return;
    }
    if (r->error != NULL) {
        lf_warn("output %s: %s: %s; will retry", name, where, r->error);
    } else if (r->status < 200 || r->status >= 300) {
        lf_httpc_reason(es->client, r, reason, sizeof(reason));
        if (!lf_httpc_status_retryable(r->status) && dead_letter_all(es, e, reason, r->status)) {
            finish_batch(es, e);
            return;
        }
        lf_warn("output %s: %s: %s; will retry", name, where, reason);
    } else {
        size_t again = read_items(es, e, r);
        if (again != SIZE_MAX && again < e->n_sent)
            e->stale = true; /* some items are done: resend only the others */
        if (again == 0) {
            finish_batch(es, e);
            return;
        }
        if (again == SIZE_MAX)
            lf_warn("output %s: %s: an unreadable _bulk answer; will retry", name, where);
        else
            lf_warn("output %s: %s: %zu of %zu items to be sent again (429 or 5xx)", name, where,
                    again, e->n_sent);
    }
    lf_output_stats(es->out)->errors++;
    lf_output_done(es->out, b, LF_EAGAIN);
}

/* ---- open and close ---- */

/* What an entry owns besides its request. */
static void entry_free(void *state)
{
    struct es_batch *e = state;
    free(e->done);
    free(e->sent);
    free(e->line);
}

static void es_free(struct es_out *es)
{
    lf_httpc_free(es->client);
    lf_deadletter_free(es->dl);
    lf_httpc_gzip_free(es->zs);
    lf_requests_free(&es->ents, entry_free);
    lf_buf_release(&es->head);
    free(es);
}

/* What the answer is asked to hold: whether any item failed, each item's status and error,
 * and, for a request refused as a whole, its error (Elasticsearch filters those too). The
 * rest of an item (index, _id, version, shards, sequence numbers) is 4/5 of its bytes, which
 * the scanner would walk only to count the items. Written percent-encoded (',' %2C, '*'
 * %2A), the form SigV4 signs: a signer or verifier that takes the query as sent (botocore
 * does) agrees with one that encodes it again (sigv4.c, AWS). */
#define LF_ES_FILTER "filter_path=errors%2Citems.%2A.status%2Citems.%2A.error%2Cerror%2Cstatus"

/* <url>/_bulk?filter_path=..., with &pipeline=<name> if one is set. */
static char *bulk_url(const struct lf_output_conf *conf)
{
    char *pipe = conf->es_pipeline != NULL ? curl_easy_escape(NULL, conf->es_pipeline, 0) : NULL;
    size_t len = sizeof("/_bulk?" LF_ES_FILTER "&pipeline=") + (pipe != NULL ? strlen(pipe) : 0);
    char *path = malloc(len);
    char *url = NULL;
    if (path != NULL) {
        snprintf(path, len, "/_bulk?%s%s%s", LF_ES_FILTER, pipe ? "&pipeline=" : "",
                 pipe ? pipe : "");
        url = lf_httpc_url(conf->url, path);
    }
    free(path);
    curl_free(pipe);
    return url;
}

static enum lf_err es_open(struct lf_output *out, struct lf_errbuf *eb)
{
    const struct lf_output_conf *conf = lf_output_conf(out);
    if (conf->api_key != NULL && (conf->auth_user != NULL || conf->bearer_token != NULL))
        return lf_fail(eb, LF_ECONFIG, "output %s: api_key excludes auth and bearer_token",
                       conf->name);
    if (conf->url == NULL || conf->index == NULL)
        return lf_fail(eb, LF_ECONFIG, "output %s: url and index are required", conf->name);
    struct es_out *es = calloc(1, sizeof(*es));
    if (es == NULL || lf_requests_init(&es->ents, sizeof(struct es_batch), LF_ES_BUF_MAX)) {
        free(es);
        return lf_fail(eb, LF_ENOMEM, "output %s: out of memory", conf->name);
    }
    es->out = out;
    es->conf = conf;
    lf_buf_init(&es->head, 4096);
    char *url = bulk_url(conf);
    char *key = NULL;
    es->zs = lf_httpc_gzip_new();
    enum lf_err err = LF_OK;
    if (url == NULL || lf_httpc_line("Authorization: ApiKey ", conf->api_key, &key) ||
        es->zs == NULL)
        err = lf_fail(eb, LF_ENOMEM, "output %s: out of memory", conf->name);
    if (!err) {
        const char *headers[4];
        lf_httpc_headers(headers, "Content-Type: application/x-ndjson", conf->compression, key);
        const struct lf_httpc_spec spec = { .url = url,
                                            .method = "POST",
                                            .headers = headers,
                                            .max_body = LF_ES_MAX_RESPONSE,
                                            .done = on_reply,
                                            .arg = es };
        err = lf_httpc_open(conf, &spec, &es->dl, &es->client, eb);
    }
    lf_httpc_line_free(key); /* it holds the api key */
    free(url);
    if (err) {
        es_free(es);
        return err;
    }
    lf_output_set_ctx(out, es);
    return LF_OK;
}

static void es_close(struct lf_output *out)
{
    es_free(lf_output_ctx(out));
    lf_output_set_ctx(out, NULL);
}

const struct lf_output_ops lf_output_elasticsearch = {
    .name = "elasticsearch",
    .open = es_open,
    .send = es_send,
    .close = es_close,
    .check = lf_httpc_check,
};
