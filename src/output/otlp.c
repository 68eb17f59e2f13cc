/* otlp.c - the otlp output: OTLP/HTTP logs (POST to the collector's .../v1/logs), an
 * ExportLogsServiceRequest per batch, protobuf (default) or JSON, gzip'd by default (or
 * zstd, which the OpenTelemetry Collector takes).
 *
 *   send (lane thread): the batch's events grouped by resource (host.name and the pod's
 *   kubernetes.* members), one ResourceLogs per distinct resource in the order first seen,
 *   each with one ScopeLogs ("logferry") holding its events' LogRecords in read order;
 *   encoded by otlp_enc.c straight from the events' JSON lines into the batch's slot.
 *   on_reply (the client's loop thread): 2xx answers the batch, honouring partial_success:
 *     every record rejected: the batch goes to the dead letters (with the collector's
 *     message); some rejected: delivered, the rejected count logged and counted
 *     (OTLP does not say which ones, so none can be kept aside);
 *   429, 502, 503, 504 and no answer: retried (Retry-After is the least delay); any other
 *   status: dead letters, as the http output does.
 *
 * Like loki.c, a batch's bytes stay in its slot (requests_int.h) until it is answered for
 * good, so a retry sends the very same request; every buffer is kept between batches. */
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
#include "logferry/deadletter.h"
#include "logferry/log.h"
#include "otlp_int.h"
#include "output_int.h"
#include "requests_int.h"

#define LF_OTLP_REQ_MAX  ((size_t)1 << 31)
#define LF_OTLP_RESP_MAX 1024 /* an answer's partial_success fits */

/* One event's place in the request. */
struct entry {
    size_t res; /* index into the batch's resources */
    int64_t ts_ns;
    struct lf_str line; /* the event's JSON; borrowed from the batch */
};

/* A distinct resource: its members' raw JSON, in keys. */
struct resource {
    size_t off[LF_OTLP_N_RES];
    size_t len[LF_OTLP_N_RES];
    size_t n;    /* its events */
    size_t next; /* counting sort: where its next event goes */
};

struct otlp_out {
    struct lf_output *out;
    const struct lf_output_conf *conf; /* borrowed */
    struct lf_httpc *client;           /* owned */
    struct lf_deadletter *dl;          /* owned; loop thread */
    /* lane thread, kept between batches: */
    struct lf_otlp_enc enc;
    struct entry *entries;
    struct entry *sorted;
    size_t cap_entries;
    struct resource *res;
    size_t n_res;
    size_t cap_res;
    struct lf_buf keys;
    struct z_stream_s *zs;
    struct lf_requests slots; /* of struct lf_request: claimed on the lane, freed on the loop */
};

/* ---- grouping ---- */

/* The resource of the event line, added if new; SIZE_MAX if out of memory. */
static size_t resource_of(struct otlp_out *o, struct lf_str line)
{
    struct lf_str v[LF_OTLP_N_RES];
    lf_otlp_resource_values(line, v);
    for (size_t i = o->n_res; i-- > 0;) { /* the latest first: events come in runs */
        const struct resource *rs = &o->res[i];
        int r = 0;
        while (r < LF_OTLP_N_RES && rs->len[r] == v[r].len &&
               memcmp(o->keys.ptr + rs->off[r], v[r].ptr, v[r].len) == 0)
            r++;
        if (r == LF_OTLP_N_RES)
            return i;
    }
    if (lf_array_grow(&o->res, &o->cap_res, o->n_res, sizeof(*o->res), 8))
        return SIZE_MAX;
    struct resource *rs = &o->res[o->n_res];
    *rs = (struct resource){ .n = 0 };
    for (int r = 0; r < LF_OTLP_N_RES; r++) {
        rs->off[r] = o->keys.len;
        rs->len[r] = v[r].len;
        if (lf_buf_append(&o->keys, v[r].ptr, v[r].len))
            return SIZE_MAX;
    }
    return o->n_res++;
}

/* b's kept events into o->sorted, grouped by resource, in read order within each. */
static enum lf_err collect(struct otlp_out *o, struct lf_batch *b, size_t *n)
{
    size_t count = lf_batch_count(b);
    if (count > o->cap_entries) {
        struct entry *e = realloc(o->entries, count * sizeof(*e));
        struct entry *s = e != NULL ? realloc(o->sorted, count * sizeof(*s)) : NULL;
        if (e != NULL)
            o->entries = e;
        if (s == NULL)
            return LF_ENOMEM;
        o->sorted = s;
        o->cap_entries = count;
    }
    struct lf_batch_lines it;
    enum lf_err err = lf_batch_lines_start(&it, b);
    o->n_res = 0;
    lf_buf_reset(&o->keys);
    *n = 0;
    const struct lf_event *ev;
    size_t i;
    struct lf_str line;
    while (!err && lf_batch_lines_next(&it, &ev, &i, &line)) {
        size_t r = resource_of(o, line);
        if (r == SIZE_MAX)
            return LF_ENOMEM;
        o->res[r].n++;
        o->entries[(*n)++] = (struct entry){ r, ev->timestamp_ns, line };
    }
    size_t at = 0;
    for (size_t r = 0; r < o->n_res; r++) {
        o->res[r].next = at;
        at += o->res[r].n;
    }
    for (size_t k = 0; k < *n && !err; k++)
        o->sorted[o->res[o->entries[k].res].next++] = o->entries[k];
    return err;
}

/* lf_requests_build_fn: b's ExportLogsServiceRequest into body. */
static enum lf_err build_body(void *arg, struct lf_batch *b, struct lf_buf *body)
{
    struct otlp_out *o = arg;
    size_t n = 0;
    enum lf_err err = collect(o, b, &n);
    int64_t observed = lf_now_ns();
    if (!err)
        err = lf_otlp_begin(&o->enc, body);
    for (size_t k = 0; k < n && !err; k++) {
        const struct entry *e = &o->sorted[k];
        bool first = k == 0 || o->sorted[k - 1].res != e->res;
        if (first) {
            const struct resource *rs = &o->res[e->res];
            struct lf_str vals[LF_OTLP_N_RES];
            for (int r = 0; r < LF_OTLP_N_RES; r++)
                vals[r] = lf_str_make(o->keys.ptr + rs->off[r], rs->len[r]);
            if (k > 0)
                err = lf_otlp_resource_end(&o->enc);
            if (!err)
                err = lf_otlp_resource(&o->enc, k == 0, vals);
        }
        if (!err)
            err = lf_otlp_record(&o->enc, first, e->line, e->ts_ns, observed);
    }
    if (!err && n > 0)
        err = lf_otlp_resource_end(&o->enc);
    if (!err)
        err = lf_otlp_end(&o->enc);
    return err;
}

/* ---- send and answers ---- */

static enum lf_err otlp_send(struct lf_output *out, struct lf_batch *b)
{
    struct otlp_out *o = lf_output_ctx(out);
    return lf_requests_send(&o->slots, out, o->client, o->zs, o->conf->compression, b, build_body,
                            o);
}

/* ---- partial_success, protobuf or JSON ---- */

/* ExportLogsServiceResponse: partial_success 1; ExportLogsPartialSuccess:
 * rejected_log_records 1 (int64), error_message 2. Wire types: */
enum {
    WIRE_VARINT = 0,
    WIRE_LEN = 2
};

/* Reads a varint at *p (< end). false if cut. */
static bool get_varint(const unsigned char **p, const unsigned char *end, uint64_t *v)
{
    *v = 0;
    for (unsigned shift = 0; *p < end && shift < 64; shift += 7) {
        unsigned char c = *(*p)++;
        *v |= (uint64_t)(c & 0x7F) << shift;
        if (!(c & 0x80))
            return true;
    }
    return false;
}

/* The fields of an ExportLogsPartialSuccess. */
static void pb_partial(
    const unsigned char *p, const unsigned char *end, int64_t *rejected, char *msg, size_t cap)
{
    uint64_t tag, v;
    while (p < end && get_varint(&p, end, &tag)) {
        unsigned wire = tag & 7;
        if (wire == WIRE_VARINT) {
            if (!get_varint(&p, end, &v))
                return;
            if (tag >> 3 == 1)
                *rejected = (int64_t)v;
        } else if (wire == WIRE_LEN) {
            if (!get_varint(&p, end, &v) || v > (uint64_t)(end - p))
                return;
            if (tag >> 3 == 2)
                snprintf(msg, cap, "%.*s", (int)v, (const char *)p);
            p += v;
        } else {
            return;
        }
    }
}

bool lf_otlp_partial(struct lf_str body, bool json, int64_t *rejected, char *msg, size_t cap)
{
    *rejected = 0;
    msg[0] = '\0';
    if (body.len > 0 && body.ptr[0] == '{')
        json = true;
    if (json) {
        struct lf_str ps, v;
        if (!lf_fields_find(body, "partialSuccess", 14, &ps))
            return false;
        if (lf_fields_find(ps, "rejectedLogRecords", 18, &v)) {
            char tmp[32];
            size_t n = 0;
            if (lf_fields_text(v, tmp, &n, sizeof(tmp) - 1)) {
                tmp[n] = '\0';
                *rejected = strtoll(tmp, NULL, 10);
            }
        }
        if (lf_fields_find(ps, "errorMessage", 12, &v)) {
            size_t n = 0;
            lf_fields_text(v, msg, &n, cap - 1);
            msg[n] = '\0';
        }
        return true;
    }
    const unsigned char *p = (const unsigned char *)body.ptr;
    const unsigned char *end = p + body.len;
    uint64_t tag, len;
    while (p < end && get_varint(&p, end, &tag)) {
        if ((tag & 7) != WIRE_LEN || !get_varint(&p, end, &len) || len > (uint64_t)(end - p))
            return false;
        if (tag >> 3 == 1) {
            pb_partial(p, p + len, rejected, msg, cap);
            return true;
        }
        p += len;
    }
    return false;
}

/* A 2xx answer with a partial_success: true if it answered b. Loop thread. */
static bool partial(struct otlp_out *o, struct lf_batch *b, const struct lf_httpc_reply *r)
{
    int64_t rejected;
    char msg[LF_OTLP_RESP_MAX];
    bool json = o->conf->otlp_json;
    if (!lf_otlp_partial(r->body, json, &rejected, msg, sizeof(msg)) ||
        (rejected <= 0 && msg[0] == '\0'))
        return false;
    lf_config_scrub(&o->conf->env, msg, sizeof(msg));
    size_t sent = lf_batch_count(b) - lf_batch_dropped(b);
    if (rejected <= 0) {
        lf_warn("output %s: %s: the collector accepted every record and warns: %s", o->conf->name,
                lf_httpc_where(o->client), msg);
        return false;
    }
    if ((uint64_t)rejected < sent) {
        lf_warn("output %s: %s: the collector rejected %" PRId64 " of %zu records (which "
                "ones, OTLP does not say; not kept): %s",
                o->conf->name, lf_httpc_where(o->client), rejected, sent,
                msg[0] ? msg : "no message");
        lf_output_done_rejected(o->out, b, (size_t)rejected);
        return true;
    }
    /* Every record refused: the batch is kept in the dead letters, as for a 400. */
    char reason[LF_OTLP_RESP_MAX + 64];
    snprintf(reason, sizeof(reason), "partial_success: %" PRId64 " rejected: %s", rejected,
             msg[0] ? msg : "no message");
    struct lf_str nd;
    struct lf_errbuf eb = { "" };
    size_t n_dead = 0;
    enum lf_err err = lf_batch_ndjson(b, &nd);
    if (!err)
        err = lf_deadletter_write(o->dl, nd, (int)r->status, reason, &n_dead, &eb);
    if (err) {
        lf_error("output %s: %s: %s; cannot keep the refused batch: %s; will retry", o->conf->name,
                 lf_httpc_where(o->client), reason, eb.msg[0] ? eb.msg : lf_err_str(err));
        lf_output_done(o->out, b, LF_EAGAIN);
        return true;
    }
    lf_error("output %s: %s: %s; %zu events written to dead letters %s", o->conf->name,
             lf_httpc_where(o->client), reason, n_dead, lf_deadletter_path(o->dl));
    lf_output_done_dead(o->out, b, n_dead);
    return true;
}

static void on_reply(void *arg, struct lf_batch *b, const struct lf_httpc_reply *r)
{
    struct otlp_out *o = arg;
    lf_requests_answered(&o->slots, b, r);
    if (r->error == NULL && r->status >= 200 && r->status < 300 && partial(o, b, r))
        return;
    lf_httpc_answer(o->client, o->out, o->dl, b, r);
}

/* ---- open and close ---- */

static void otlp_free(struct otlp_out *o)
{
    lf_httpc_free(o->client);
    lf_deadletter_free(o->dl);
    lf_otlp_enc_release(&o->enc);
    free(o->entries);
    free(o->sorted);
    free(o->res);
    lf_buf_release(&o->keys);
    lf_requests_free(&o->slots, NULL);
    lf_httpc_gzip_free(o->zs);
    free(o);
}

static enum lf_err otlp_open(struct lf_output *out, struct lf_errbuf *eb)
{
    const struct lf_output_conf *conf = lf_output_conf(out);
    struct otlp_out *o = calloc(1, sizeof(*o));
    if (o == NULL || lf_requests_init(&o->slots, sizeof(struct lf_request), LF_OTLP_REQ_MAX)) {
        free(o);
        return lf_fail(eb, LF_ENOMEM, "output %s: out of memory", conf->name);
    }
    o->out = out;
    o->conf = conf;
    lf_buf_init(&o->keys, LF_OTLP_REQ_MAX);
    o->zs = lf_httpc_gzip_new();
    enum lf_err err = o->zs == NULL ? LF_ENOMEM : LF_OK;
    if (!err)
        err = lf_otlp_enc_init(&o->enc, conf->otlp_json, conf->otlp_severity_field,
                               conf->otlp_resource_json);
    if (err == LF_EINVAL)
        err = lf_fail(eb, LF_ECONFIG,
                      "output %s: resource: values must be strings, numbers "
                      "or booleans",
                      conf->name);
    else if (err)
        err = lf_fail(eb, err, "output %s: out of memory", conf->name);
    if (!err) {
        const char *headers[4];
        lf_httpc_headers(headers,
                         conf->otlp_json ? "Content-Type: application/json"
                                         : "Content-Type: application/x-protobuf",
                         conf->compression, NULL);
        const struct lf_httpc_spec spec = { .url = conf->url,
                                            .method = "POST",
                                            .headers = headers,
                                            .max_body = LF_OTLP_RESP_MAX,
                                            .done = on_reply,
                                            .arg = o };
        err = lf_httpc_open(conf, &spec, &o->dl, &o->client, eb);
    }
    if (err) {
        otlp_free(o);
        return err;
    }
    lf_output_set_ctx(out, o);
    return LF_OK;
}

static void otlp_close(struct lf_output *out)
{
    otlp_free(lf_output_ctx(out));
    lf_output_set_ctx(out, NULL);
}

/* The http checks, and `resource`: names to strings, numbers or booleans. */
static void otlp_check(const struct lf_output_conf *conf, struct lf_config_report *rep)
{
    lf_httpc_check(conf, rep);
    if (conf->otlp_resource_json == NULL)
        return;
    json_t *obj = json_loads(conf->otlp_resource_json, 0, NULL);
    const char *key;
    json_t *v;
    if (!json_is_object(obj))
        lf_config_report(rep, "resource", "expected a mapping of attribute names to values");
    json_object_foreach(obj, key, v)
    {
        if (!json_is_string(v) && !json_is_number(v) && !json_is_boolean(v))
            lf_config_report(rep, "resource", "%.64s: expected a string, a number or a bool", key);
    }
    json_decref(obj);
}

const struct lf_output_ops lf_output_otlp = {
    .name = "otlp",
    .open = otlp_open,
    .send = otlp_send,
    .close = otlp_close,
    .check = otlp_check,
};
