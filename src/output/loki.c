/* loki.c - the loki output: Loki's push API (POST <url>/loki/api/v1/push, JSON, gzip).
 *
 *   send (lane thread): per event, its labels rendered from the templates over the event's
 *   own JSON ("%{kubernetes.namespace}", "%{input.id}"); events grouped into one stream per
 *   distinct label set, each stream's entries ordered by @timestamp (then by read order):
 *
 *   {"streams":[{"stream":{"job":"logferry","namespace":"shop"},
 *                "values":[["1764554023401000000","<the event's JSON>"],...]},...]}
 *
 *   The answer is taken for the batch as a whole (lf_httpc_answer()).
 *
 * Field values are found by scanning the event's JSON text, not by decoding it, and every
 * buffer is kept for the next batch: nothing is allocated per event. The event's JSON goes
 * into its string by lf_json_quote_json() (a backslash before each quote, 16 bytes a step),
 * the timestamp's digits are written by hand, and the entries are sorted only when a pass
 * finds them out of order (a batch is usually one stream in time order). A batch's body is
 * built and compressed once: it stays in the batch's slot until the batch is answered for
 * good, so a retry sends the very same bytes. Slots are found by the batch's address (the
 * lane never sends a batch again before it was answered; a batch in backoff keeps its slot
 * while others are sent, so there are as many slots as batches out). With more than one request in
 * flight, two batches of one stream may reach Loki in either order (Loki accepts that
 * since 2.4, unordered_writes); max_in_flight: 1 keeps every stream in order. */
#include "config.h"

#define LF_LOG_COMPONENT "output"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <uv.h>

#include "fields_int.h"
#include "httpc_int.h"
#include "logferry/deadletter.h"
#include "logferry/log.h"
#include "output_int.h"
#include "requests_int.h"

#define LF_LOKI_BUF_MAX    ((size_t)1 << 31)
#define LF_LOKI_MAX_LABELS 15 /* Loki's default limit per stream */

struct label {
    char *name;         /* owned */
    struct lf_tmpl tpl; /* literal text with %{dotted.field} references */
};

/* One event's place in the request. */
struct entry {
    size_t stream; /* index into the batch's streams */
    int64_t ts_ns;
    size_t event;       /* index in the batch: ties keep the read order */
    struct lf_str line; /* the event's JSON, without its newline; borrowed from the batch */
};

struct stream {
    size_t key_off; /* its label object in keys */
    size_t key_len;
};

struct loki_out {
    struct lf_output *out;
    const struct lf_output_conf *conf; /* borrowed */
    struct lf_httpc *client;           /* owned */
    struct lf_deadletter *dl;          /* owned; loop thread */
    struct label labels[LF_LOKI_MAX_LABELS];
    size_t n_labels;
    bool labels_fixed; /* no label names a field: every event is in one stream */
    /* lane thread, kept between batches: */
    struct entry *entries;
    size_t cap_entries;
    struct stream *streams;
    size_t n_streams;
    size_t cap_streams;
    struct lf_buf keys;       /* every stream's label object, back to back */
    struct lf_buf scratch;    /* the label object of the event at hand */
    struct z_stream_s *zs;    /* owned; gzip writer */
    struct lf_requests slots; /* of struct lf_request: claimed on the lane, freed on the loop */
};

/* ---- the request ---- */

/* The label object of the event into lo->scratch. */
static enum lf_err label_object(struct loki_out *lo, struct lf_str line)
{
    struct lf_buf *s = &lo->scratch;
    lf_buf_reset(s);
    enum lf_err err = lf_buf_append(s, "{", 1);
    for (size_t i = 0; i < lo->n_labels && !err; i++) {
        err = lf_buf_append(s, i == 0 ? "\"" : ",\"", i == 0 ? 1 : 2);
        if (!err)
            err = lf_buf_append(s, lo->labels[i].name, strlen(lo->labels[i].name));
        if (!err)
            err = lf_buf_append(s, "\":\"", 3);
        if (!err)
            err = lf_tmpl_render_json(&lo->labels[i].tpl, line, s);
        if (!err)
            err = lf_buf_append(s, "\"", 1);
    }
    if (!err)
        err = lf_buf_append(s, "}", 1);
    return err;
}

/* The stream of the label object in lo->scratch, added if new; SIZE_MAX if out of memory. */
static size_t stream_of(struct loki_out *lo)
{
    struct lf_str key = lf_buf_str(&lo->scratch);
    for (size_t i = 0; i < lo->n_streams; i++) {
        const struct stream *st = &lo->streams[i];
        if (st->key_len == key.len && memcmp(lo->keys.ptr + st->key_off, key.ptr, key.len) == 0)
            return i;
    }
    if (lf_array_grow(&lo->streams, &lo->cap_streams, lo->n_streams, sizeof(*lo->streams), 8))
        return SIZE_MAX;
    size_t off = lo->keys.len;
    if (lf_buf_append(&lo->keys, key.ptr, key.len))
        return SIZE_MAX;
    lo->streams[lo->n_streams] = (struct stream){ off, key.len };
    return lo->n_streams++;
}

static int entry_cmp(const void *a, const void *b)
{
    const struct entry *x = a;
    const struct entry *y = b;
    if (x->stream != y->stream)
        return x->stream < y->stream ? -1 : 1;
    if (x->ts_ns != y->ts_ns)
        return x->ts_ns < y->ts_ns ? -1 : 1;
    return x->event < y->event ? -1 : x->event > y->event;
}

/* Groups b's events into streams, ordered; returns how many entries. */
static enum lf_err collect(struct loki_out *lo, struct lf_batch *b, size_t *n)
{
    size_t count = lf_batch_count(b);
    if (count > lo->cap_entries) {
        struct entry *e = realloc(lo->entries, count * sizeof(*e));
        if (e == NULL)
            return LF_ENOMEM;
        lo->entries = e;
        lo->cap_entries = count;
    }
    struct lf_batch_lines it;
    enum lf_err err = lf_batch_lines_start(&it, b);
    lo->n_streams = 0;
    lf_buf_reset(&lo->keys);
    *n = 0;
    const struct lf_event *ev;
    size_t i;
    struct lf_str line;
    while (!err && lf_batch_lines_next(&it, &ev, &i, &line)) {
        size_t st = 0; /* with fixed labels, the first event's stream is everyone's */
        if (!lo->labels_fixed || *n == 0) {
            err = label_object(lo, line);
            st = err ? 0 : stream_of(lo);
        }
        if (st == SIZE_MAX)
            err = LF_ENOMEM;
        lo->entries[(*n)++] = (struct entry){ st, ev->timestamp_ns, i, line };
    }
    /* Usually in order already (one stream, read in time order): a pass tells. */
    bool sorted = true;
    for (size_t k = 1; k < *n && sorted; k++)
        sorted = entry_cmp(&lo->entries[k - 1], &lo->entries[k]) < 0;
    if (!err && !sorted)
        qsort(lo->entries, *n, sizeof(*lo->entries), entry_cmp);
    return err;
}

/* lf_requests_build_fn: b's push request into body. */
static enum lf_err build_body(void *arg, struct lf_batch *b, struct lf_buf *body)
{
    struct loki_out *lo = arg;
    size_t n = 0;
    enum lf_err err = collect(lo, b, &n);
    lf_buf_reset(body);
    if (!err)
        err = lf_buf_append(body, "{\"streams\":[", 12);
    for (size_t k = 0; k < n && !err; k++) {
        const struct entry *e = &lo->entries[k];
        bool first = k == 0 || lo->entries[k - 1].stream != e->stream;
        if (first) {
            const struct stream *st = &lo->streams[e->stream];
            if (k > 0)
                err = lf_buf_append(body, "]},", 3);
            if (!err)
                err = lf_buf_append(body, "{\"stream\":", 10);
            if (!err)
                err = lf_buf_append(body, lo->keys.ptr + st->key_off, st->key_len);
            if (!err)
                err = lf_buf_append(body, ",\"values\":[", 11);
        } else {
            err = lf_buf_append(body, ",", 1);
        }
        if (!err)
            err = lf_buf_append(body, "[\"", 2);
        if (!err)
            err = lf_buf_append_i64(body, e->ts_ns);
        if (!err)
            err = lf_buf_append(body, "\",\"", 3);
        if (!err)
            err = lf_json_quote_json(body, e->line);
        if (!err)
            err = lf_buf_append(body, "\"]", 2);
    }
    if (!err && n > 0)
        err = lf_buf_append(body, "]}", 2);
    if (!err)
        err = lf_buf_append(body, "]}", 2);
    return err;
}

static enum lf_err loki_send(struct lf_output *out, struct lf_batch *b)
{
    struct loki_out *lo = lf_output_ctx(out);
    return lf_requests_send(&lo->slots, out, lo->client, lo->zs, lo->conf->compression, b,
                            build_body, lo);
}

static void on_reply(void *arg, struct lf_batch *b, const struct lf_httpc_reply *r)
{
    struct loki_out *lo = arg;
    lf_requests_answered(&lo->slots, b, r);
    lf_httpc_answer(lo->client, lo->out, lo->dl, b, r);
}

/* ---- open and close ---- */

static void loki_free(struct loki_out *lo)
{
    lf_httpc_free(lo->client);
    lf_deadletter_free(lo->dl);
    for (size_t i = 0; i < lo->n_labels; i++) {
        free(lo->labels[i].name);
        lf_tmpl_release(&lo->labels[i].tpl);
    }
    free(lo->entries);
    free(lo->streams);
    lf_buf_release(&lo->keys);
    lf_buf_release(&lo->scratch);
    lf_requests_free(&lo->slots, NULL);
    lf_httpc_gzip_free(lo->zs);
    free(lo);
}

static bool label_name_ok(const char *s)
{
    if (!((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') || *s == '_'))
        return false;
    for (s++; *s != '\0'; s++) {
        if (!((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') || *s == '_' ||
              (*s >= '0' && *s <= '9')))
            return false;
    }
    return true;
}

/* Adds label name with template tpl. LF_ECONFIG or LF_ENOMEM with eb filled. */
static enum lf_err
add_label(struct loki_out *lo, const char *name, const char *tpl, struct lf_errbuf *eb)
{
    struct label *l = &lo->labels[lo->n_labels++];
    l->name = strdup(name);
    if (l->name == NULL)
        return lf_fail(eb, LF_ENOMEM, "out of memory");
    char what[96];
    snprintf(what, sizeof(what), "labels: %.64s", name);
    enum lf_err err = lf_tmpl_compile(&l->tpl, tpl, lo->conf->name, what, eb);
    for (size_t i = 0; i < l->tpl.n && !err; i++)
        lo->labels_fixed &= !l->tpl.parts[i].field;
    return err;
}

/* `labels`: a mapping of label names to templates; default {job: logferry}. */
static enum lf_err load_labels(struct loki_out *lo, struct lf_errbuf *eb)
{
    const char *name = lo->conf->name;
    if (lo->conf->labels_json == NULL)
        return add_label(lo, "job", "logferry", eb);
    json_t *obj = json_loads(lo->conf->labels_json, 0, NULL);
    enum lf_err err = LF_OK;
    if (!json_is_object(obj) || json_object_size(obj) == 0 ||
        json_object_size(obj) > LF_LOKI_MAX_LABELS) {
        err = lf_fail(eb, LF_ECONFIG,
                      "output %s: labels must map 1 to %d label names to "
                      "templates",
                      name, LF_LOKI_MAX_LABELS);
    }
    const char *key;
    json_t *v;
    json_object_foreach(obj, key, v)
    {
        if (err)
            break;
        if (!label_name_ok(key) || !json_is_string(v)) {
            err = lf_fail(eb, LF_ECONFIG,
                          "output %s: labels: \"%.64s\" must be a label name "
                          "([a-zA-Z_][a-zA-Z0-9_]*) with a string template",
                          name, key);
        } else {
            err = add_label(lo, key, json_string_value(v), eb);
        }
    }
    json_decref(obj);
    return err;
}

static enum lf_err loki_open(struct lf_output *out, struct lf_errbuf *eb)
{
    const struct lf_output_conf *conf = lf_output_conf(out);
    struct loki_out *lo = calloc(1, sizeof(*lo));
    if (lo == NULL || lf_requests_init(&lo->slots, sizeof(struct lf_request), LF_LOKI_BUF_MAX)) {
        free(lo);
        return lf_fail(eb, LF_ENOMEM, "output %s: out of memory", conf->name);
    }
    lo->out = out;
    lo->conf = conf;
    lo->labels_fixed = true; /* until a label names a field (add_label()) */
    lf_buf_init(&lo->keys, LF_LOKI_BUF_MAX);
    lf_buf_init(&lo->scratch, LF_LOKI_BUF_MAX);
    char *url = lf_httpc_url(conf->url, "/loki/api/v1/push");
    char *tenant = NULL;
    lo->zs = lf_httpc_gzip_new();
    enum lf_err err = LF_OK;
    if (url == NULL || lf_httpc_line("X-Scope-OrgID: ", conf->tenant_id, &tenant) || lo->zs == NULL)
        err = lf_fail(eb, LF_ENOMEM, "output %s: out of memory", conf->name);
    if (!err)
        err = load_labels(lo, eb);
    if (!err) {
        const char *headers[4];
        lf_httpc_headers(headers, "Content-Type: application/json", conf->compression, tenant);
        const struct lf_httpc_spec spec = { .url = url,
                                            .method = "POST",
                                            .headers = headers,
                                            .max_body = LF_HTTPC_REASON_MAX,
                                            .done = on_reply,
                                            .arg = lo };
        err = lf_httpc_open(conf, &spec, &lo->dl, &lo->client, eb);
    }
    free(url);
    lf_httpc_line_free(tenant);
    if (err) {
        loki_free(lo);
        return err;
    }
    lf_output_set_ctx(out, lo);
    return LF_OK;
}

static void loki_close(struct lf_output *out)
{
    loki_free(lf_output_ctx(out));
    lf_output_set_ctx(out, NULL);
}

const struct lf_output_ops lf_output_loki = {
    .name = "loki",
    .open = loki_open,
    .send = loki_send,
    .close = loki_close,
    .check = lf_httpc_check,
};
