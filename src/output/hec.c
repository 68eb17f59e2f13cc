/* hec.c - the splunk_hec output: Splunk's HTTP Event Collector
 * (POST <url>/services/collector/event).
 *
 *   send (lane thread): one request per batch, the events as concatenated JSON objects,
 *       {"time":1764547200.123456,"host":"web-1","index":"app","sourcetype":"logferry",
 *        "fields":{"kubernetes.namespace":"shop"},"event":<the event's JSON>}
 *       gzip'd by default ──► lf_httpc_submit()
 *   on_reply (loop thread): 200 {"text":"Success","code":0} ──► done; with ack: true the
 *       answer's ackId is kept instead, and the batch is done only once Splunk says that
 *       id is indexed. 401/403 (the token), 400 codes 10/11 (the channel), 408, 429, 5xx:
 *       sent again. Other 400s (bad data): the event the answer names ("invalid-event-
 *       number") goes to the dead letters, the ones before it were taken, the ones after it
 *       are sent again; without a number, every event of the request is dead-lettered.
 *   on_tick (loop thread, every ack_interval): ackIds out longer than ack_timeout are given
 *       up (their batches sent again: at least once), the others asked for in one request,
 *       POST <url>/services/collector/ack {"acks":[3,4,7]} ──► on_acks: {"acks":{"3":true}}
 *
 * The event is sent whole, as the encoder wrote it: time, host and fields are copies of
 * its members, not taken out of it. A batch's body is built once and kept in its slot
 * (requests_int.h) until the batch is done for good, so a retry sends the same bytes. The
 * ackIds out and the ack request belong to the loop thread. Buffers are kept for the next
 * batch: nothing is allocated per event. */
#include "config.h"

#define LF_LOG_COMPONENT "output"

#include <inttypes.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <uv.h>

#include "fields_int.h"
#include "httpc_int.h"
#include "logferry/clock.h"
#include "logferry/deadletter.h"
#include "logferry/log.h"
#include "output_int.h"
#include "requests_int.h"

#define LF_HEC_BUF_MAX ((size_t)1 << 31)
#define LF_HEC_ANSWER  512 /* answer bytes kept: {"text","code","ackId"} and a bit */
#define LF_HEC_META    4   /* index, source, sourcetype, host */

/* One batch's request; it lives until the batch is done for good. */
struct slot {
    struct lf_request r; /* r.b: NULL when free; r.body, r.gz: the request */
    bool built;          /* r.body (and r.gz) hold the request for what is left of b */
    size_t from;         /* the batch's kept events before this one are done */
    size_t n_sent;       /* events in the request */
    size_t n_dead;       /* events dead-lettered so far */
};

/* A batch Splunk took and has not yet said it indexed. Loop thread. */
struct pending {
    struct lf_batch *b;
    uint64_t ack_id;
    int64_t since_ms;
};

struct meta {
    const char *key; /* "index"... */
    bool on;         /* configured */
    struct lf_tmpl tpl;
};

struct hec_out {
    struct lf_output *out;
    const struct lf_output_conf *conf; /* borrowed */
    struct lf_httpc *client;           /* owned */
    struct lf_deadletter *dl;          /* owned; loop thread */
    struct meta meta[LF_HEC_META];
    /* lane thread: */
    struct lf_buf scratch;    /* a rendered template */
    struct z_stream_s *zs;    /* owned; gzip writer */
    struct lf_requests slots; /* of struct slot */
    /* loop thread: */
    struct pending *pend; /* owned; max_in_flight of them */
    size_t n_pend;
    size_t cap_pend;
    struct lf_buf ack_body; /* the ack request (sent plain) */
    bool asking;            /* the ack request is out */
    bool warned_no_id;
};

/* ---- the request ---- */

/* `,"key":"<rendered>"` for each configured template that renders non-empty. */
static enum lf_err add_meta(struct hec_out *h, struct lf_str line, struct lf_buf *body)
{
    enum lf_err err = LF_OK;
    for (size_t i = 0; i < LF_HEC_META && !err; i++) {
        if (!h->meta[i].on)
            continue;
        lf_buf_reset(&h->scratch);
        err = lf_tmpl_render_json(&h->meta[i].tpl, line, &h->scratch);
        if (err || h->scratch.len == 0)
            continue;
        err = lf_buf_append(body, ",\"", 2);
        if (!err)
            err = lf_buf_append(body, h->meta[i].key, strlen(h->meta[i].key));
        if (!err)
            err = lf_buf_append(body, "\":\"", 3);
        if (!err)
            err = lf_buf_append_str(body, lf_buf_str(&h->scratch));
        if (!err)
            err = lf_buf_append(body, "\"", 1);
    }
    return err;
}

/* `,"fields":{"name":"value",...}` for the configured fields the event has (not null);
 * values other than strings as their JSON text, in a string. */
static enum lf_err add_fields(struct hec_out *h, struct lf_str line, struct lf_buf *body)
{
    enum lf_err err = LF_OK;
    bool any = false;
    for (size_t i = 0; i < h->conf->n_hec_fields && !err; i++) {
        const char *path = h->conf->hec_fields[i];
        struct lf_str v;
        if (!lf_fields_find(line, path, strlen(path), &v) ||
            (v.len == 4 && memcmp(v.ptr, "null", 4) == 0))
            continue;
        err = lf_buf_append(body, any ? ",\"" : ",\"fields\":{\"", any ? 2 : 12);
        any = true;
        if (!err)
            err = lf_json_escape(body, lf_str_make(path, strlen(path)));
        if (!err)
            err = lf_buf_append(body, "\":", 2);
        if (!err && v.len > 0 && v.ptr[0] == '"') {
            err = lf_buf_append_str(body, v);
        } else if (!err) {
            err = lf_buf_append(body, "\"", 1);
            if (!err)
                err = lf_json_escape(body, v);
            if (!err)
                err = lf_buf_append(body, "\"", 1);
        }
    }
    if (!err && any)
        err = lf_buf_append(body, "}", 1);
    return err;
}

static enum lf_err
add_event(struct hec_out *h, const struct lf_event *ev, struct lf_str line, struct lf_buf *body)
{
    char ts[48];
    int64_t ns = ev->timestamp_ns > 0 ? ev->timestamp_ns : 0;
    int n = snprintf(ts, sizeof(ts), "{\"time\":%" PRId64 ".%06" PRId64, ns / 1000000000,
                     ns % 1000000000 / 1000);
    enum lf_err err = lf_buf_append(body, ts, (size_t)n);
    if (!err)
        err = add_meta(h, line, body);
    if (!err)
        err = add_fields(h, line, body);
    if (!err)
        err = lf_buf_append(body, ",\"event\":", 9);
    if (!err)
        err = lf_buf_append_str(body, line);
    if (!err)
        err = lf_buf_append(body, "}\n", 2);
    return err;
}

/* Calls each(h, k, ev, line, arg) for every kept event k of b (k counts kept events only),
 * until it returns an error. */
typedef enum lf_err
each_fn(struct hec_out *h, size_t k, const struct lf_event *ev, struct lf_str line, void *arg);

static enum lf_err each_kept(struct hec_out *h, struct lf_batch *b, each_fn *fn, void *arg)
{
    struct lf_str nd;
    enum lf_err err = lf_batch_ndjson(b, &nd);
    const char *p = nd.ptr;
    const char *end = nd.ptr + nd.len;
    size_t k = 0;
    for (size_t i = 0; i < lf_batch_count(b) && !err; i++) {
        const struct lf_event *ev = lf_batch_event(b, i);
        if (ev->flags & LF_EVENT_DROPPED)
            continue;
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        if (nl == NULL)
            return LF_EINVAL; /* one line per kept event: cannot happen */
        err = fn(h, k++, ev, lf_str_make(p, (size_t)(nl - p)), arg);
        p = nl + 1;
    }
    return err;
}

static enum lf_err
build_one(struct hec_out *h, size_t k, const struct lf_event *ev, struct lf_str line, void *arg)
{
    struct slot *sl = arg;
    if (k < sl->from)
        return LF_OK;
    sl->n_sent++;
    return add_event(h, ev, line, &sl->r.body);
}

/* ---- the slots ---- */

static struct slot *slot_of(struct hec_out *h, struct lf_batch *b)
{
    bool fresh;
    struct slot *sl = lf_requests_of(&h->slots, b, &fresh);
    if (sl != NULL && fresh)
        *sl = (struct slot){ .r = sl->r };
    return sl;
}

static enum lf_err hec_send(struct lf_output *out, struct lf_batch *b)
{
    struct hec_out *h = lf_output_ctx(out);
    struct slot *sl = slot_of(h, b);
    if (sl == NULL)
        return LF_ENOMEM;
    bool gzip = h->conf->compression == LF_COMPRESS_GZIP;
    enum lf_err err = LF_OK;
    if (!sl->built) {
        lf_buf_reset(&sl->r.body);
        sl->n_sent = 0;
        err = each_kept(h, b, build_one, sl);
        if (!err && gzip)
            err = lf_httpc_gzip(h->zs, lf_buf_str(&sl->r.body), &sl->r.gz);
    }
    if (err) {
        lf_requests_release(&h->slots, &sl->r);
        lf_output_stats(out)->errors++;
        return err;
    }
    sl->built = true;
    if (sl->n_sent == 0) { /* every event dropped by a stage */
        size_t n_dead = sl->n_dead;
        lf_requests_release(&h->slots, &sl->r);
        lf_output_done_dead(out, b, n_dead);
        return LF_OK;
    }
    struct lf_str body = lf_buf_str(gzip ? &sl->r.gz : &sl->r.body);
    lf_output_stats(out)->bytes_written += body.len;
    lf_httpc_submit(h->client, b, body);
    return LF_OK;
}

/* ---- answers ---- */

/* b is done for good: its slot freed, its dead-lettered events counted. Loop thread. */
static void finish(struct hec_out *h, struct slot *sl)
{
    struct lf_batch *b = sl->r.b;
    size_t n_dead = sl->n_dead;
    lf_requests_release(&h->slots, &sl->r);
    if (n_dead > 0)
        lf_output_done_dead(h->out, b, n_dead);
    else
        lf_output_done(h->out, b, LF_OK);
}

/* HEC's answer: {"text":"...","code":N[,"ackId":N][,"invalid-event-number":N]}. */
struct answer {
    char text[128];
    long code;        /* -1: none */
    long long ack_id; /* -1: none */
    long long bad;    /* invalid-event-number, -1: none */
};

static void read_answer(struct lf_str body, struct answer *a)
{
    *a = (struct answer){ .code = -1, .ack_id = -1, .bad = -1 };
    json_t *o = json_loadb(body.ptr, body.len, 0, NULL);
    json_t *text = json_object_get(o, "text");
    json_t *code = json_object_get(o, "code");
    json_t *ack_id = json_object_get(o, "ackId");
    json_t *bad = json_object_get(o, "invalid-event-number");
    if (json_is_string(text))
        snprintf(a->text, sizeof(a->text), "%s", json_string_value(text));
    if (json_is_integer(code))
        a->code = (long)json_integer_value(code);
    if (json_is_integer(ack_id))
        a->ack_id = json_integer_value(ack_id);
    if (json_is_integer(bad))
        a->bad = json_integer_value(bad);
    json_decref(o);
}

/* Dead-letters the kept events of b from first up to last. */
struct dead_range {
    size_t first;
    size_t last;
    long status;
    const char *reason;
};

static enum lf_err
dead_one(struct hec_out *h, size_t k, const struct lf_event *ev, struct lf_str line, void *arg)
{
    (void)ev;
    const struct dead_range *d = arg;
    if (k < d->first || k >= d->last)
        return LF_OK;
    return lf_deadletter_add(h->dl, line, (int)d->status, d->reason);
}

/* Dead-letters what the answer refused of sl's request: the event it names alone (HEC took
 * those before it), else every event sent. Moves sl past what is done; sl->n_sent is left
 * as the events still to send. false (logged) if the dead letters could not be written. */
static bool dead_letter(
    struct hec_out *h, struct slot *sl, const struct answer *a, long status, const char *reason)
{
    struct dead_range d = { sl->from, sl->from + sl->n_sent, status, reason };
    size_t taken = sl->n_sent;
    if (a->bad >= 0 && (size_t)a->bad < sl->n_sent) {
        d.first = sl->from + (size_t)a->bad;
        d.last = d.first + 1;
        taken = (size_t)a->bad + 1;
    }
    struct lf_errbuf eb = { "" };
    size_t n = 0;
    enum lf_err err = each_kept(h, sl->r.b, dead_one, &d);
    if (!err)
        err = lf_deadletter_commit(h->dl, &n, &eb);
    if (err) {
        lf_error("output %s: %s: %s; cannot keep the refused events: %s; will retry", h->conf->name,
                 lf_httpc_where(h->client), reason, eb.msg[0] ? eb.msg : lf_err_str(err));
        return false;
    }
    lf_error("output %s: %s: %s; %zu events written to dead letters %s", h->conf->name,
             lf_httpc_where(h->client), reason, n, lf_deadletter_path(h->dl));
    sl->n_dead += d.last - d.first;
    sl->from += taken;
    sl->n_sent -= taken;
    sl->built = false; /* what is left, if anything, is another request */
    return true;
}

/* The reason of a refusal: HEC's text and code when it gave them, else the HTTP answer. */
static void refusal(struct hec_out *h,
                    const struct lf_httpc_reply *r,
                    const struct answer *a,
                    char *dst,
                    size_t len)
{
    if (a->text[0] == '\0' || a->code < 0) {
        lf_httpc_reason(h->client, r, dst, len);
        return;
    }
    snprintf(dst, len, "HTTP %ld: %s (HEC code %ld)", r->status, a->text, a->code);
    lf_config_scrub(&h->conf->env, dst, len); /* a peer's text */
}

/* An answer other than 2xx. */
static void refused(struct hec_out *h, struct slot *sl, const struct lf_httpc_reply *r)
{
    const char *name = h->conf->name;
    const char *where = lf_httpc_where(h->client);
    struct lf_batch *b = sl->r.b;
    lf_output_stats(h->out)->errors++;
    if (r->error != NULL) {
        lf_warn("output %s: %s: %s; will retry", name, where, r->error);
        lf_output_done(h->out, b, LF_EAGAIN);
        return;
    }
    struct answer a;
    char reason[LF_HTTPC_REASON_MAX + 64];
    read_answer(r->body, &a);
    refusal(h, r, &a, reason, sizeof(reason));
    if (r->status == 401 || r->status == 403) {
        lf_error("output %s: %s: %s: Splunk refused the token (see `token`); will retry", name,
                 where, reason);
    } else if (r->status == 400 && (a.code == 10 || a.code == 11)) {
        lf_error("output %s: %s: %s: the token has indexer acknowledgement on: set ack: true; "
                 "will retry",
                 name, where, reason);
    } else if (lf_httpc_status_retryable(r->status)) {
        lf_warn("output %s: %s: %s; will retry", name, where, reason);
    } else if (dead_letter(h, sl, &a, r->status, reason)) {
        if (sl->n_sent == 0) {
            finish(h, sl);
            return;
        }
    }
    lf_output_done(h->out, b, LF_EAGAIN);
}

/* A 2xx: done, or with ack: true, kept until its ackId is indexed. */
static void taken(struct hec_out *h, struct slot *sl, const struct lf_httpc_reply *r)
{
    if (!h->conf->hec_ack) {
        finish(h, sl);
        return;
    }
    struct answer a;
    read_answer(r->body, &a);
    if (a.ack_id < 0) {
        if (!h->warned_no_id)
            lf_warn("output %s: %s: answers carry no ackId: indexer acknowledgement is off for "
                    "the token; batches count as delivered on Splunk's 200",
                    h->conf->name, lf_httpc_where(h->client));
        h->warned_no_id = true;
        finish(h, sl);
        return;
    }
    if (h->n_pend == h->cap_pend) { /* more than max_in_flight: cannot happen */
        lf_output_done(h->out, sl->r.b, LF_EAGAIN);
        return;
    }
    h->pend[h->n_pend++] = (struct pending){ sl->r.b, (uint64_t)a.ack_id, lf_mono_ms() };
}

static void on_reply(void *arg, struct lf_batch *b, const struct lf_httpc_reply *r)
{
    struct hec_out *h = arg;
    struct slot *sl = slot_of(h, b);
    if (sl == NULL || !sl->built) { /* out of memory: the slot was lost */
        if (sl != NULL)
            lf_requests_release(&h->slots, &sl->r);
        lf_output_done(h->out, b, LF_EAGAIN);
        return;
    }
    if (r->error == NULL && r->status >= 200 && r->status < 300)
        taken(h, sl, r);
    else
        refused(h, sl, r);
}

/* ---- indexer acknowledgement (loop thread) ---- */

/* POST .../ack {"acks":[every ackId out]}, unless one is out already. */
static void ask_acks(struct hec_out *h)
{
    if (h->asking)
        return;
    struct lf_buf *body = &h->ack_body;
    lf_buf_reset(body);
    enum lf_err err = lf_buf_append(body, "{\"acks\":[", 9);
    for (size_t i = 0; i < h->n_pend && !err; i++) {
        char id[32];
        int n = snprintf(id, sizeof(id), "%s%" PRIu64, i ? "," : "", h->pend[i].ack_id);
        err = lf_buf_append(body, id, (size_t)n);
    }
    if (!err)
        err = lf_buf_append(body, "]}", 2);
    if (!err)
        h->asking = lf_httpc_side(h->client, lf_buf_str(body));
}

/* Gives up the ackIds out longer than ack_timeout: their batches are sent again. */
static void expire(struct hec_out *h)
{
    int64_t now = lf_mono_ms();
    for (size_t i = h->n_pend; i-- > 0;) {
        struct pending p = h->pend[i];
        if ((uint64_t)(now - p.since_ms) < h->conf->hec_ack_timeout_ms)
            continue;
        h->pend[i] = h->pend[--h->n_pend];
        lf_warn("output %s: ackId %" PRIu64 " not indexed within %" PRIu64 " ms; its batch of "
                "%zu events will be sent again",
                h->conf->name, p.ack_id, h->conf->hec_ack_timeout_ms, lf_batch_count(p.b));
        lf_output_stats(h->out)->errors++;
        lf_output_done(h->out, p.b, LF_EAGAIN); /* its slot keeps the same bytes */
    }
}

static void on_tick(void *arg)
{
    struct hec_out *h = arg;
    expire(h);
    if (h->n_pend > 0)
        ask_acks(h);
}

/* The ack request's answer: {"acks":{"3":true,"4":false}}; the batches of true ones done. */
static void on_acks(void *arg, const struct lf_httpc_reply *r)
{
    struct hec_out *h = arg;
    h->asking = false;
    if (r->error != NULL || r->status != 200) {
        char reason[LF_HTTPC_REASON_MAX + 64];
        struct answer a;
        read_answer(r->body, &a);
        if (r->error != NULL)
            snprintf(reason, sizeof(reason), "%s", r->error);
        else
            refusal(h, r, &a, reason, sizeof(reason));
        lf_warn("output %s: asking for %zu acknowledgements: %s; will ask again", h->conf->name,
                h->n_pend, reason);
        return;
    }
    json_t *root = json_loadb(r->body.ptr, r->body.len, 0, NULL);
    json_t *acks = json_object_get(root, "acks");
    for (size_t i = h->n_pend; i-- > 0 && json_is_object(acks);) {
        char id[32];
        snprintf(id, sizeof(id), "%" PRIu64, h->pend[i].ack_id);
        if (!json_is_true(json_object_get(acks, id)))
            continue;
        struct lf_batch *b = h->pend[i].b;
        h->pend[i] = h->pend[--h->n_pend];
        struct slot *sl = slot_of(h, b);
        if (sl != NULL)
            finish(h, sl);
        else
            lf_output_done(h->out, b, LF_EAGAIN);
    }
    json_decref(root);
}

/* ---- open and close ---- */

static void hec_free(struct hec_out *h)
{
    lf_httpc_free(h->client);
    lf_deadletter_free(h->dl);
    for (size_t i = 0; i < LF_HEC_META; i++)
        lf_tmpl_release(&h->meta[i].tpl);
    lf_buf_release(&h->scratch);
    lf_buf_release(&h->ack_body);
    lf_requests_free(&h->slots, NULL);
    lf_httpc_gzip_free(h->zs);
    free(h->pend);
    free(h);
}

/* A random (version 4) UUID for the X-Splunk-Request-Channel header. */
static enum lf_err channel_line(char **out)
{
    unsigned char r[16];
    if (uv_random(NULL, NULL, r, sizeof(r), 0, NULL) != 0)
        return LF_EIO;
    r[6] = (unsigned char)((r[6] & 0x0f) | 0x40);
    r[8] = (unsigned char)((r[8] & 0x3f) | 0x80);
    char uuid[40];
    snprintf(uuid, sizeof(uuid),
             "%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", r[0], r[1],
             r[2], r[3], r[4], r[5], r[6], r[7], r[8], r[9], r[10], r[11], r[12], r[13], r[14],
             r[15]);
    return lf_httpc_line("X-Splunk-Request-Channel: ", uuid, out);
}

/* The templates of index, source, sourcetype and host. */
static enum lf_err load_meta(struct hec_out *h, struct lf_errbuf *eb)
{
    const struct lf_output_conf *conf = h->conf;
    const char *keys[LF_HEC_META] = { "index", "source", "sourcetype", "host" };
    const char *vals[LF_HEC_META] = { conf->index, conf->hec_source, conf->hec_sourcetype,
                                      conf->hec_host };
    enum lf_err err = LF_OK;
    for (size_t i = 0; i < LF_HEC_META && !err; i++) {
        h->meta[i].key = keys[i];
        h->meta[i].on = vals[i] != NULL;
        if (vals[i] != NULL)
            err = lf_tmpl_compile(&h->meta[i].tpl, vals[i], conf->name, keys[i], eb);
    }
    return err;
}

/* The client: events to .../event, with ack: true a channel and .../ack polled. */
static enum lf_err open_client(struct hec_out *h, struct lf_errbuf *eb)
{
    const struct lf_output_conf *conf = h->conf;
    char *url = lf_httpc_url(conf->url, "/services/collector/event");
    char *ack_url = lf_httpc_url(conf->url, "/services/collector/ack");
    char *auth = NULL;
    char *channel = NULL;
    enum lf_err err = LF_OK;
    if (url == NULL || ack_url == NULL ||
        lf_httpc_line("Authorization: Splunk ", conf->hec_token, &auth))
        err = lf_fail(eb, LF_ENOMEM, "output %s: out of memory", conf->name);
    if (!err && conf->hec_ack && channel_line(&channel))
        err = lf_fail(eb, LF_EIO, "output %s: cannot make a channel id", conf->name);
    if (!err) {
        const char *headers[5];
        lf_httpc_headers(headers, "Content-Type: application/json", conf->compression, auth);
        size_t n = 0;
        while (headers[n] != NULL)
            n++;
        headers[n++] = channel; /* NULL without ack: the end */
        headers[n] = NULL;
        const struct lf_httpc_spec spec = {
            .url = url,
            .method = "POST",
            .headers = headers,
            .max_body = LF_HEC_ANSWER,
            .done = on_reply,
            .arg = h,
            .side_url = conf->hec_ack ? ack_url : NULL,
            .side_done = on_acks,
            .tick = conf->hec_ack ? on_tick : NULL,
            .tick_ms = conf->hec_ack_interval_ms,
        };
        err = lf_httpc_open(conf, &spec, &h->dl, &h->client, eb);
    }
    free(url);
    free(ack_url);
    lf_httpc_line_free(auth); /* it holds the token */
    lf_httpc_line_free(channel);
    return err;
}

static enum lf_err hec_open(struct lf_output *out, struct lf_errbuf *eb)
{
    const struct lf_output_conf *conf = lf_output_conf(out);
    struct hec_out *h = calloc(1, sizeof(*h));
    if (h == NULL || lf_requests_init(&h->slots, sizeof(struct slot), LF_HEC_BUF_MAX)) {
        free(h);
        return lf_fail(eb, LF_ENOMEM, "output %s: out of memory", conf->name);
    }
    h->out = out;
    h->conf = conf;
    lf_buf_init(&h->scratch, LF_HEC_BUF_MAX);
    lf_buf_init(&h->ack_body, LF_HEC_BUF_MAX);
    h->cap_pend = conf->max_in_flight > 0 ? (size_t)conf->max_in_flight : 1;
    h->pend = calloc(h->cap_pend, sizeof(*h->pend));
    h->zs = lf_httpc_gzip_new();
    enum lf_err err = LF_OK;
    if (h->pend == NULL || h->zs == NULL)
        err = lf_fail(eb, LF_ENOMEM, "output %s: out of memory", conf->name);
    if (!err)
        err = load_meta(h, eb);
    if (!err)
        err = open_client(h, eb);
    if (err) {
        hec_free(h);
        return err;
    }
    lf_output_set_ctx(out, h);
    return LF_OK;
}

static void hec_close(struct lf_output *out)
{
    hec_free(lf_output_ctx(out));
    lf_output_set_ctx(out, NULL);
}

/* The http checks, and one Authorization header only. */
static void hec_check(const struct lf_output_conf *conf, struct lf_config_report *rep)
{
    lf_httpc_check(conf, rep);
    if (conf->auth_user != NULL || conf->bearer_token != NULL)
        lf_config_report(rep, conf->auth_user != NULL ? "auth" : "bearer_token",
                         "the token is the authorization: auth and bearer_token do not apply");
}

const struct lf_output_ops lf_output_splunk_hec = {
    .name = "splunk_hec",
    .open = hec_open,
    .send = hec_send,
    .close = hec_close,
    .check = hec_check,
};
