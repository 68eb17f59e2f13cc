/* ndjson.c - the ndjson stage: a message holding a JSON object becomes event members.
 *
 * The message is decoded with jansson (its json_t tree is the one allocation per event
 * this stage makes; rendering goes into a buffer the state reuses). Members are merged
 * into the event's extra, at the root (target "") or as one object under target:
 *
 *   decoded key             target ""                        with a target
 *   message_key (string)    replaces the message             replaces it, also kept
 *   @timestamp              overwrite_keys and RFC 3339:     under target
 *                           replaces the time; else dropped
 *   input, host, fields     overwrite_keys: replace the      under target
 *                           agent's (LF_EVENT_OWN_* tells
 *                           the encoder); else dropped
 *   message, log            dropped: the encoder writes them under target
 *   a key already in extra  overwrite_keys: ours replaces    the same, for target
 *   (stream, kubernetes..)  it; else ours is dropped
 *
 * Duplicate keys in the input: the last one wins (jansson's default), as in most parsers.
 * Bounds: messages over 1 MiB are not decoded, nor objects nested deeper than 64 levels
 * (checked by a scan before jansson recurses). A message that is not JSON, or JSON but not
 * an object, is kept as it is and gets "error":{"message":...} (unless add_error_key is
 * false); an extra that already has an error keeps the first one. */
#include "config.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "stage_int.h"

#define NDJSON_MAX_BYTES (1024 * 1024) /* larger messages are not decoded */
#define NDJSON_MAX_DEPTH 64            /* deeper nesting is refused */

struct ndjson_spec {
    char *target;      /* owned; "" = merge at the root */
    char *message_key; /* owned; "" = none */
    bool overwrite_keys;
    bool add_error_key;
};

struct ndjson_state {
    struct lf_buf extra;      /* the event's extra, rendered per event and reused */
    struct lf_buf with_error; /* extra plus error.message, when there is one */
};

static const char *const encoder_keys[] = { "@timestamp", "message", "log", "input", "host",
                                            "fields" };

static bool key_is(const char *key, size_t len, const char *name)
{
    return len == strlen(name) && memcmp(key, name, len) == 0;
}

static bool is_encoder_key(const char *key, size_t len)
{
    for (size_t i = 0; i < sizeof(encoder_keys) / sizeof(encoder_keys[0]); i++) {
        if (key_is(key, len, encoder_keys[i]))
            return true;
    }
    return false;
}

/* The LF_EVENT_OWN_* flag for a decoded key that may replace the agent's own member of
 * that name (overwrite_keys), else 0. */
static unsigned agent_member_flag(const char *key, size_t len)
{
    if (key_is(key, len, "input"))
        return LF_EVENT_OWN_INPUT;
    if (key_is(key, len, "host"))
        return LF_EVENT_OWN_HOST;
    if (key_is(key, len, "fields"))
        return LF_EVENT_OWN_FIELDS;
    return 0;
}

/* Nesting depth of the JSON text, strings skipped; stops counting past limit. */
static size_t json_depth(struct lf_str s, size_t limit)
{
    size_t depth = 0;
    size_t max = 0;
    for (size_t i = 0; i < s.len && max <= limit; i++) {
        char ch = s.ptr[i];
        if (ch == '"') {
            for (i++; i < s.len && s.ptr[i] != '"'; i++) {
                if (s.ptr[i] == '\\')
                    i++;
            }
        } else if (ch == '{' || ch == '[') {
            if (++depth > max)
                max = depth;
        } else if ((ch == '}' || ch == ']') && depth > 0) {
            depth--;
        }
    }
    return max;
}

/* The shortest %g form that reads back as the same double, always with a '.' or exponent
 * so that it stays a real. */
static enum lf_err render_real(struct lf_buf *b, double v)
{
    char num[40];
    for (int prec = 15; prec <= 17; prec++) {
        snprintf(num, sizeof(num), "%.*g", prec, v);
        if (strtod(num, NULL) == v)
            break;
    }
    enum lf_err err = lf_buf_append_cstr(b, num);
    if (!err && strpbrk(num, ".eE") == NULL)
        err = lf_buf_append_cstr(b, ".0");
    return err;
}

static enum lf_err render_string(struct lf_buf *b, const char *s, size_t len)
{
    enum lf_err err = lf_buf_append(b, "\"", 1);
    if (!err)
        err = lf_json_escape(b, lf_str_make(s, len));
    if (!err)
        err = lf_buf_append(b, "\"", 1);
    return err;
}

static enum lf_err render_value(struct lf_buf *b, json_t *v);

static enum lf_err render_object(struct lf_buf *b, json_t *obj)
{
    enum lf_err err = lf_buf_append(b, "{", 1);
    const char *sep = "";
    for (void *it = json_object_iter(obj); it != NULL && !err;
         it = json_object_iter_next(obj, it)) {
        err = lf_buf_append_cstr(b, sep);
        if (!err)
            err = render_string(b, json_object_iter_key(it), json_object_iter_key_len(it));
        if (!err)
            err = lf_buf_append(b, ":", 1);
        if (!err)
            err = render_value(b, json_object_iter_value(it));
        sep = ",";
    }
    if (!err)
        err = lf_buf_append(b, "}", 1);
    return err;
}

static enum lf_err render_value(struct lf_buf *b, json_t *v)
{
    char num[32];
    enum lf_err err = LF_OK;
    switch (json_typeof(v)) {
    case JSON_OBJECT:
        return render_object(b, v);
    case JSON_ARRAY:
        err = lf_buf_append(b, "[", 1);
        for (size_t i = 0; i < json_array_size(v) && !err; i++) {
            if (i > 0)
                err = lf_buf_append(b, ",", 1);
            if (!err)
                err = render_value(b, json_array_get(v, i));
        }
        return err ? err : lf_buf_append(b, "]", 1);
    case JSON_STRING:
        return render_string(b, json_string_value(v), json_string_length(v));
    case JSON_INTEGER:
        snprintf(num, sizeof(num), "%" JSON_INTEGER_FORMAT, json_integer_value(v));
        return lf_buf_append_cstr(b, num);
    case JSON_REAL:
        return render_real(b, json_real_value(v));
    case JSON_TRUE:
        return lf_buf_append_cstr(b, "true");
    case JSON_FALSE:
        return lf_buf_append_cstr(b, "false");
    case JSON_NULL:
    default:
        return lf_buf_append_cstr(b, "null");
    }
}

/* Copies the members of prior to b, leaving out those obj replaces. */
static enum lf_err copy_prior(const struct ndjson_spec *sp, struct lf_buf *b, struct lf_str prior,
                              json_t *obj)
{
    struct lf_str k;
    struct lf_str m;
    enum lf_err err = LF_OK;
    while (!err && lf_stage__json_next_member(&prior, &k, &m)) {
        if (sp->overwrite_keys) {
            bool replaced = sp->target[0] != '\0'
                                ? key_is(k.ptr, k.len, sp->target)
                                : json_object_getn(obj, k.ptr, k.len) != NULL &&
                                      (!is_encoder_key(k.ptr, k.len) ||
                                       agent_member_flag(k.ptr, k.len) != 0);
            if (replaced)
                continue;
        }
        if (b->len > 0)
            err = lf_buf_append(b, ",", 1);
        if (!err)
            err = lf_buf_append_str(b, m);
    }
    return err;
}

static enum lf_err member(struct lf_buf *b, const char *key, size_t len, json_t *v)
{
    enum lf_err err = b->len > 0 ? lf_buf_append(b, ",", 1) : LF_OK;
    if (!err)
        err = render_string(b, key, len);
    if (!err)
        err = lf_buf_append(b, ":", 1);
    if (!err)
        err = render_value(b, v);
    return err;
}

/* Merges obj into e (extra rendered in b; message and time replaced as the table at the
 * top says). *why is set when @timestamp could not be used. */
static enum lf_err merge(const struct ndjson_spec *sp, struct lf_buf *b, json_t *obj,
                         struct lf_event *e, const char **why)
{
    struct lf_str prior = e->extra;
    enum lf_err err = copy_prior(sp, b, prior, obj);
    json_t *msg = sp->message_key[0] != '\0' ? json_object_get(obj, sp->message_key) : NULL;
    if (json_is_string(msg))
        e->message = lf_str_make(json_string_value(msg), json_string_length(msg));
    if (sp->target[0] != '\0') {
        size_t tlen = strlen(sp->target);
        if (!err && (sp->overwrite_keys || !lf_stage__extra_has(prior, sp->target, tlen)))
            err = member(b, sp->target, tlen, obj);
        return err;
    }
    for (void *it = json_object_iter(obj); it != NULL && !err;
         it = json_object_iter_next(obj, it)) {
        const char *k = json_object_iter_key(it);
        size_t klen = json_object_iter_key_len(it);
        json_t *v = json_object_iter_value(it);
        if (json_is_string(msg) && v == msg)
            continue;
        if (key_is(k, klen, "@timestamp")) {
            int64_t ns;
            if (sp->overwrite_keys && json_is_string(v) &&
                lf_stage__parse_rfc3339(json_string_value(v), json_string_length(v), &ns))
                e->timestamp_ns = ns;
            else if (sp->overwrite_keys)
                *why = "ndjson: @timestamp is not an RFC 3339 string; kept the event time";
            continue;
        }
        unsigned own = sp->overwrite_keys ? agent_member_flag(k, klen) : 0;
        if ((own == 0 && is_encoder_key(k, klen)) ||
            (!sp->overwrite_keys && lf_stage__extra_has(prior, k, klen)))
            continue;
        e->flags |= own; /* the encoder leaves out its own member of that name */
        err = member(b, k, klen, v);
    }
    return err;
}

/* e's extra plus "error":{"message":why} unless it has one already. */
static enum lf_err add_error(struct lf_buf *b, struct lf_event *e, const char *why)
{
    lf_buf_reset(b);
    enum lf_err err = lf_buf_append_str(b, e->extra);
    if (!err && !lf_stage__extra_has(e->extra, "error", 5))
        err = lf_stage__append_error(b, why);
    e->extra = lf_buf_str(b);
    return err;
}

/* Decodes e's message; NULL with *why set when it cannot be merged. */
static json_t *decode(struct lf_str msg, const char **why, char *whybuf, size_t whylen)
{
    if (msg.len > NDJSON_MAX_BYTES) {
        *why = "ndjson: message over 1 MiB; not decoded";
        return NULL;
    }
    if (json_depth(msg, NDJSON_MAX_DEPTH) > NDJSON_MAX_DEPTH) {
        *why = "ndjson: JSON nested deeper than 64 levels; not decoded";
        return NULL;
    }
    json_error_t jerr;
    json_t *root = json_loadb(msg.ptr, msg.len, JSON_DECODE_ANY | JSON_ALLOW_NUL, &jerr);
    if (root == NULL) {
        snprintf(whybuf, whylen, "ndjson: invalid JSON at byte %d", jerr.position);
        *why = whybuf;
        return NULL;
    }
    if (!json_is_object(root)) {
        json_decref(root);
        *why = "ndjson: JSON is not an object";
        return NULL;
    }
    return root;
}

static enum lf_err process(const void *spec, void *state, const struct lf_event *ev,
                           int64_t now_ms, const struct lf_stage_out *out)
{
    const struct ndjson_spec *sp = spec;
    struct ndjson_state *st = state;
    (void)now_ms;
    struct lf_event e = *ev;
    char whybuf[64];
    const char *why = NULL;
    json_t *root = decode(ev->message, &why, whybuf, sizeof(whybuf));
    enum lf_err err = LF_OK;
    if (root != NULL) {
        lf_buf_reset(&st->extra);
        err = merge(sp, &st->extra, root, &e, &why);
        e.extra = lf_buf_str(&st->extra);
    }
    if (!err && why != NULL && sp->add_error_key)
        err = add_error(&st->with_error, &e, why);
    if (!err)
        err = out->emit(out->arg, &e);
    json_decref(root);
    return err;
}

static void free_spec(void *spec)
{
    struct ndjson_spec *sp = spec;
    if (sp == NULL)
        return;
    free(sp->target);
    free(sp->message_key);
    free(sp);
}

static enum lf_err compile(const struct lf_parser_conf *pc, void **spec, struct lf_errbuf *eb)
{
    const char *target = pc->u.ndjson.target != NULL ? pc->u.ndjson.target : "";
    const char *mkey = pc->u.ndjson.message_key != NULL ? pc->u.ndjson.message_key : "";
    if (is_encoder_key(target, strlen(target)))
        return lf_fail(eb, LF_ECONFIG, "ndjson: target \"%s\" is a key every event has already",
                       target);
    struct ndjson_spec *sp = calloc(1, sizeof(*sp));
    if (sp == NULL)
        return LF_ENOMEM;
    sp->target = strdup(target);
    sp->message_key = strdup(mkey);
    sp->overwrite_keys = pc->u.ndjson.overwrite_keys;
    sp->add_error_key = pc->u.ndjson.add_error_key;
    if (sp->target == NULL || sp->message_key == NULL) {
        free_spec(sp);
        return LF_ENOMEM;
    }
    *spec = sp;
    return LF_OK;
}

static enum lf_err open_state(const void *spec, void **state)
{
    (void)spec;
    struct ndjson_state *st = calloc(1, sizeof(*st));
    if (st == NULL)
        return LF_ENOMEM;
    lf_buf_init(&st->extra, SIZE_MAX);
    lf_buf_init(&st->with_error, SIZE_MAX);
    *state = st;
    return LF_OK;
}

static void close_state(void *state)
{
    struct ndjson_state *st = state;
    if (st == NULL)
        return;
    lf_buf_release(&st->extra);
    lf_buf_release(&st->with_error);
    free(st);
}

const struct lf_stage_ops lf_stage_ndjson = {
    .kind = LF_PARSER_NDJSON,
    .compile = compile,
    .free_spec = free_spec,
    .open = open_state,
    .close = close_state,
    .process = process,
};
