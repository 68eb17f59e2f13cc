/* otlp_enc.c - the OTLP logs encoder (see otlp_int.h): protobuf wire format or OTLP JSON,
 * written while walking each event's JSON line once.
 *
 * Field numbers are those of opentelemetry/proto (logs/v1, common/v1, resource/v1):
 *   ExportLogsServiceRequest: resource_logs 1
 *   ResourceLogs: resource 1, scope_logs 2          Resource: attributes 1
 *   ScopeLogs: scope 1, log_records 2               InstrumentationScope: name 1, version 2
 *   LogRecord: time_unix_nano 1 (fixed64), severity_number 2, severity_text 3, body 5,
 *              attributes 6, trace_id 9, span_id 10, observed_time_unix_nano 11 (fixed64)
 *   KeyValue: key 1, value 2     KeyValueList / ArrayValue: values 1
 *   AnyValue: string 1, bool 2, int 3, double 4 (fixed64), array 5, kvlist 6
 *
 * Mapping of an event's members: @timestamp and message go to time and body; the severity
 * field to severity_text/number; trace.id or trace_id (32 hex digits) and span.id or
 * span_id (16) to trace_id and span_id; the resource members to the resource; `log` is flattened
 * into dotted attributes (log.file.path, log.offset: the OTel semantic conventions); every
 * other member is an attribute, objects as kvlists (an object whose members all went
 * elsewhere is left out), arrays as arrays, numbers as int or double. The walk trusts the
 * line to be JSON as the agent wrote it and never reads past its end. */
#include "config.h"

#include "otlp_int.h"

#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "fields_int.h"
#include "logferry/event.h"

#define LF_OTLP_BUF_MAX ((size_t)1 << 31)

enum {
    WIRE_VARINT = 0,
    WIRE_I64 = 1,
    WIRE_LEN = 2
};

#define RES_PATHS                  \
    X("host.name")                 \
    X("kubernetes.namespace")      \
    X("kubernetes.pod.name")       \
    X("kubernetes.container.name") \
    X("kubernetes.pod.uid")        \
    X("kubernetes.node.name")
#define X(s) s,
static const char *const res_paths[LF_OTLP_N_RES] = { RES_PATHS };
#undef X
#define X(s) sizeof(s) - 1,
static const size_t res_path_len[LF_OTLP_N_RES] = { RES_PATHS };
#undef X
static const char *const res_names[LF_OTLP_N_RES] = {
    "host.name",          "k8s.namespace.name", "k8s.pod.name",
    "k8s.container.name", "k8s.pod.uid",        "k8s.node.name",
};

const char *lf_otlp_res_name(enum lf_otlp_res r)
{
    return res_names[r];
}

/* ---- protobuf wire ---- */

static size_t varint_len(uint64_t v)
{
    size_t n = 1;
    while (v >= 0x80) {
        v >>= 7;
        n++;
    }
    return n;
}

static void varint_put(char *p, uint64_t v)
{
    while (v >= 0x80) {
        *p++ = (char)(0x80 | (v & 0x7F));
        v >>= 7;
    }
    *p = (char)v;
}

static enum lf_err pb_varint(struct lf_otlp_enc *e, uint64_t v)
{
    char tmp[10];
    size_t n = varint_len(v);
    varint_put(tmp, v);
    return lf_buf_append(e->out, tmp, n);
}

static enum lf_err pb_tag(struct lf_otlp_enc *e, unsigned field, unsigned wire)
{
    return pb_varint(e, ((uint64_t)field << 3) | wire);
}

static enum lf_err pb_fixed64(struct lf_otlp_enc *e, unsigned field, uint64_t v)
{
    char tmp[8];
    for (int i = 0; i < 8; i++)
        tmp[i] = (char)(v >> (8 * i));
    enum lf_err err = pb_tag(e, field, WIRE_I64);
    return err ? err : lf_buf_append(e->out, tmp, 8);
}

static enum lf_err pb_bytes(struct lf_otlp_enc *e, unsigned field, const char *p, size_t n)
{
    enum lf_err err = pb_tag(e, field, WIRE_LEN);
    if (!err)
        err = pb_varint(e, n);
    return err ? err : lf_buf_append(e->out, p, n);
}

/* Opens a length-delimited field, guess bytes reserved for its length. */
static enum lf_err pb_open(struct lf_otlp_enc *e, unsigned field, unsigned char guess)
{
    if (e->depth >= LF_OTLP_DEPTH_MAX)
        return LF_ETOOBIG;
    enum lf_err err = pb_tag(e, field, WIRE_LEN);
    if (!err)
        err = lf_buf_grow(e->out, guess);
    if (err)
        return err;
    e->open[e->depth] = e->out->len;
    e->guess[e->depth++] = guess;
    e->out->len += guess;
    return LF_OK;
}

/* Closes the innermost open field: its length written, its bytes moved if the guess was
 * wrong. */
static enum lf_err pb_close(struct lf_otlp_enc *e)
{
    size_t at = e->open[--e->depth];
    size_t guess = e->guess[e->depth];
    size_t len = e->out->len - at - guess;
    size_t need = varint_len(len);
    if (need > guess) {
        enum lf_err err = lf_buf_grow(e->out, need - guess);
        if (err)
            return err;
    }
    if (need != guess) {
        memmove(e->out->ptr + at + need, e->out->ptr + at + guess, len);
        e->out->len = at + need + len;
    }
    varint_put(e->out->ptr + at, len);
    return LF_OK;
}

/* ---- JSON text ---- */

static enum lf_err put_n(struct lf_otlp_enc *e, const char *s, size_t n)
{
    return lf_buf_append(e->out, s, n);
}

#define put(e, lit) put_n((e), (lit), strlen(lit)) /* literals: strlen is folded */

/* s as a JSON string, quotes included. */
static enum lf_err put_qstr(struct lf_otlp_enc *e, struct lf_str s)
{
    enum lf_err err = lf_buf_append(e->out, "\"", 1);
    if (!err)
        err = lf_json_escape_lossy(e->out, s);
    return err ? err : lf_buf_append(e->out, "\"", 1);
}

/* ---- values ---- */

/* The text of JSON string v without escapes: its bytes between the quotes. */
static bool plain_string(struct lf_str v, struct lf_str *text)
{
    if (v.len < 2 || v.ptr[0] != '"' || memchr(v.ptr + 1, '\\', v.len - 2) != NULL)
        return false;
    *text = lf_str_make(v.ptr + 1, v.len - 2);
    return true;
}

/* The JSON string or scalar v as plain text in e->text. */
static enum lf_err unescape(struct lf_otlp_enc *e, struct lf_str v)
{
    lf_buf_reset(&e->text);
    enum lf_err err = lf_buf_grow(&e->text, v.len + 1);
    size_t n = 0;
    if (!err && !lf_fields_text(v, e->text.ptr, &n, e->text.cap))
        err = LF_EINVAL; /* unescaping never makes text longer: cannot happen */
    e->text.len = n;
    return err;
}

static bool is_number(struct lf_str v)
{
    return v.len > 0 && (v.ptr[0] == '-' || (v.ptr[0] >= '0' && v.ptr[0] <= '9'));
}

/* A JSON number as an int (true) or a double. */
static bool number_of(struct lf_str v, long long *i, double *d)
{
    char tmp[64];
    size_t n = v.len < sizeof(tmp) - 1 ? v.len : sizeof(tmp) - 1;
    memcpy(tmp, v.ptr, n);
    tmp[n] = '\0';
    bool integral = strpbrk(tmp, ".eE") == NULL;
    if (integral) {
        char *end;
        errno = 0;
        *i = strtoll(tmp, &end, 10);
        if (errno == 0 && *end == '\0')
            return true;
    }
    *d = strtod(tmp, NULL);
    return false;
}

/* p at '"': the byte after the closing quote, or end. memchr's pace: strings are most of
 * an event's bytes. */
static const char *string_end(const char *p, const char *end)
{
    for (p++; p < end;) {
        const char *q = memchr(p, '"', (size_t)(end - p));
        if (q == NULL)
            return end;
        const char *b = q;
        while (b > p && b[-1] == '\\')
            b--;
        if ((q - b) % 2 == 0)
            return q + 1;
        p = q + 1;
    }
    return end;
}

/* p at a value: the byte after it, or end. Containers are matched by counting brackets
 * outside strings; a scalar ends at the first ',', '}', ']' or white space. */
static const char *value_end(const char *p, const char *end)
{
    if (p >= end)
        return end;
    if (*p == '"')
        return string_end(p, end);
    if (*p != '{' && *p != '[') {
        while (p < end && *p != ',' && *p != '}' && *p != ']' && *p != ' ' && *p != '\n')
            p++;
        return p;
    }
    size_t depth = 0;
    while (p < end) {
        char c = *p;
        if (c == '"') {
            p = string_end(p, end);
            continue;
        }
        if (c == '{' || c == '[') {
            depth++;
        } else if ((c == '}' || c == ']') && --depth == 0) {
            return p + 1;
        }
        p++;
    }
    return end;
}

static enum lf_err any_value(struct lf_otlp_enc *e, struct lf_str v);

/* The elements of array v into an open ArrayValue. */
static enum lf_err array_values(struct lf_otlp_enc *e, struct lf_str v)
{
    const char *p = v.ptr + 1;
    const char *end = v.ptr + v.len;
    enum lf_err err = LF_OK;
    bool first = true;
    while (!err) {
        p = lf_fields_skip_ws(p, end);
        while (p < end && *p == ',')
            p = lf_fields_skip_ws(p + 1, end);
        if (p >= end || *p == ']')
            break;
        const char *q = value_end(p, end);
        if (q == p)
            return LF_EINVAL;
        struct lf_str el = lf_str_make(p, (size_t)(q - p));
        if (e->json) {
            err = put(e, first ? "{" : ",{");
            if (!err)
                err = any_value(e, el);
            if (!err)
                err = put(e, "}");
        } else {
            err = pb_open(e, 1, 1);
            if (!err)
                err = any_value(e, el);
            if (!err)
                err = pb_close(e);
        }
        first = false;
        p = q;
    }
    return err;
}

static enum lf_err
members(struct lf_otlp_enc *e, struct lf_str obj, unsigned field, bool flatten, size_t *n);

/* The members of v written as a kvlist (an open AnyValue); *n: how many. */
static enum lf_err kvlist(struct lf_otlp_enc *e, struct lf_str v, size_t *n)
{
    enum lf_err err;
    if (e->json) {
        err = put(e, "\"kvlistValue\":{\"values\":[");
        if (!err)
            err = members(e, v, 1, false, n);
        return err ? err : put(e, "]}");
    }
    err = pb_open(e, 6, 2);
    if (!err)
        err = members(e, v, 1, false, n);
    return err ? err : pb_close(e);
}

/* The AnyValue fields of the JSON value v, into an open AnyValue. null: none. */
static enum lf_err any_value(struct lf_otlp_enc *e, struct lf_str v)
{
    if (v.len == 0 || memcmp(v.ptr, "null", v.len < 4 ? v.len : 4) == 0)
        return LF_OK;
    char c = v.ptr[0];
    enum lf_err err = LF_OK;
    if (c == '"') {
        if (e->json) {
            err = put(e, "\"stringValue\":");
            return err ? err : lf_buf_append(e->out, v.ptr, v.len);
        }
        struct lf_str text;
        if (plain_string(v, &text))
            return pb_bytes(e, 1, text.ptr, text.len);
        err = unescape(e, v);
        return err ? err : pb_bytes(e, 1, e->text.ptr, e->text.len);
    }
    if (c == 't' || c == 'f') {
        if (e->json)
            return put(e, c == 't' ? "\"boolValue\":true" : "\"boolValue\":false");
        err = pb_tag(e, 2, WIRE_VARINT);
        return err ? err : pb_varint(e, c == 't');
    }
    if (c == '[') {
        if (e->json) {
            err = put(e, "\"arrayValue\":{\"values\":[");
            if (!err)
                err = array_values(e, v);
            return err ? err : put(e, "]}");
        }
        err = pb_open(e, 5, 2);
        if (!err)
            err = array_values(e, v);
        return err ? err : pb_close(e);
    }
    if (c == '{') {
        size_t n = 0;
        return kvlist(e, v, &n);
    }
    if (!is_number(v))
        return LF_EINVAL;
    long long i;
    double d;
    char tmp[32];
    if (number_of(v, &i, &d)) {
        if (e->json) {
            snprintf(tmp, sizeof(tmp), "\"intValue\":\"%lld\"", i);
            return put(e, tmp);
        }
        err = pb_tag(e, 3, WIRE_VARINT);
        return err ? err : pb_varint(e, (uint64_t)i);
    }
    if (e->json) {
        err = put(e, "\"doubleValue\":");
        return err ? err : lf_buf_append(e->out, v.ptr, v.len);
    }
    uint64_t bits;
    memcpy(&bits, &d, sizeof(bits));
    return pb_fixed64(e, 4, bits);
}

/* One KeyValue (in field `field` for protobuf) named key with the JSON value v. An object
 * left with no member is taken back: *written false. */
static enum lf_err key_value(struct lf_otlp_enc *e,
                             unsigned field,
                             struct lf_str key,
                             struct lf_str v,
                             bool comma,
                             bool *written)
{
    size_t mark = e->out->len;
    size_t depth = e->depth;
    bool obj = v.len > 0 && v.ptr[0] == '{';
    size_t n = obj ? 0 : 1; /* members written of an object */
    enum lf_err err;
    if (e->json) {
        err = put(e, comma ? ",{\"key\":" : "{\"key\":");
        if (!err)
            err = put_qstr(e, key);
        if (!err)
            err = put(e, ",\"value\":{");
        if (!err)
            err = obj ? kvlist(e, v, &n) : any_value(e, v);
        if (!err)
            err = put(e, "}}");
    } else {
        err = pb_open(e, field, 1);
        if (!err)
            err = pb_bytes(e, 1, key.ptr, key.len);
        if (!err)
            err = pb_open(e, 2, 1);
        if (!err)
            err = obj ? kvlist(e, v, &n) : any_value(e, v);
        if (!err)
            err = pb_close(e);
        if (!err)
            err = pb_close(e);
    }
    /* An object whose members all went elsewhere is taken back; {} as written stays. */
    *written = true;
    if (!err && obj && n == 0 && v.len > 2) {
        e->out->len = mark;
        e->depth = depth;
        *written = false;
    }
    return err;
}

/* True if the member at e->path is written elsewhere (severity, resource). */
/* raw is a JSON string of exactly digits hex digits: *hex its digits. */
static bool hex_id(struct lf_str raw, size_t digits, struct lf_str *hex)
{
    if (raw.len != digits + 2 || raw.ptr[0] != '"')
        return false;
    for (size_t i = 1; i <= digits; i++) {
        char c = raw.ptr[i];
        if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F')))
            return false;
    }
    *hex = lf_str_make(raw.ptr + 1, digits);
    return true;
}

/* The path at hand is one of the two names of an id (ECS's dotted one, or the flat one):
 * string literals, their lengths known at compile time. */
#define PATH_IS(path, a, b)                                                     \
    (((path).len == sizeof(a) - 1 && memcmp((path).ptr, a, (path).len) == 0) || \
     ((path).len == sizeof(b) - 1 && memcmp((path).ptr, b, (path).len) == 0))

static bool taken(struct lf_otlp_enc *e, struct lf_str raw)
{
    struct lf_str path = lf_buf_str(&e->path);
    if (PATH_IS(path, "trace.id", "trace_id") && hex_id(raw, 32, &e->trace))
        return true;
    if (PATH_IS(path, "span.id", "span_id") && hex_id(raw, 16, &e->span))
        return true;
    if (e->severity_len == path.len && memcmp(e->severity_field, path.ptr, path.len) == 0) {
        e->sev = raw;
        return true;
    }
    for (int r = 0; r < LF_OTLP_N_RES; r++) {
        if (res_path_len[r] == path.len && memcmp(res_paths[r], path.ptr, path.len) == 0)
            return true;
    }
    return false;
}

/* Appends key (raw JSON string) to e->path, after a '.' unless at the root. */
static enum lf_err path_push(struct lf_otlp_enc *e, struct lf_str key)
{
    enum lf_err err = e->path.len > 0 ? lf_buf_append(&e->path, ".", 1) : LF_OK;
    if (err)
        return err;
    struct lf_str text;
    if (plain_string(key, &text))
        return lf_buf_append(&e->path, text.ptr, text.len);
    err = lf_buf_grow(&e->path, key.len);
    size_t n = e->path.len;
    if (!err && !lf_fields_text(key, e->path.ptr, &n, e->path.cap))
        err = LF_EINVAL;
    e->path.len = n;
    return err;
}

/* One member: kept aside, flattened (inside `log`), or a KeyValue. */
static enum lf_err
member(struct lf_otlp_enc *e, unsigned field, bool flatten, size_t seg, struct lf_str v, size_t *n)
{
    if (taken(e, v))
        return LF_OK;
    if (flatten && v.len > 0 && v.ptr[0] == '{')
        return members(e, v, field, true, n);
    struct lf_str path = lf_buf_str(&e->path);
    struct lf_str key = flatten ? path : lf_str_make(path.ptr + seg, path.len - seg);
    bool written = false;
    enum lf_err err = key_value(e, field, key, v, e->json && *n > 0, &written);
    if (!err && written)
        (*n)++;
    return err;
}

/* The members of the JSON object obj as KeyValues, each in field `field`; at the root, the
 * event's own members are sorted out. *n: how many KeyValues were written. */
static enum lf_err
members(struct lf_otlp_enc *e, struct lf_str obj, unsigned field, bool flatten, size_t *n)
{
    const char *p = obj.ptr + 1;
    const char *end = obj.ptr + obj.len;
    bool root = e->path.len == 0;
    enum lf_err err = LF_OK;
    while (!err) {
        p = lf_fields_skip_ws(p, end);
        while (p < end && *p == ',')
            p = lf_fields_skip_ws(p + 1, end);
        if (p >= end || *p == '}')
            break;
        if (*p != '"')
            return LF_EINVAL;
        const char *k = p;
        p = string_end(p, end);
        struct lf_str key = lf_str_make(k, (size_t)(p - k));
        p = lf_fields_skip_ws(p, end);
        if (p >= end || *p != ':')
            return LF_EINVAL;
        const char *v = lf_fields_skip_ws(p + 1, end);
        p = value_end(v, end);
        struct lf_str val = lf_str_make(v, (size_t)(p - v));
        if (root && key.len == 12 && memcmp(key.ptr, "\"@timestamp\"", 12) == 0)
            continue;
        if (root && key.len == 9 && memcmp(key.ptr, "\"message\"", 9) == 0) {
            e->body = val;
            continue;
        }
        size_t len = e->path.len;
        size_t seg = len > 0 ? len + 1 : 0;
        err = path_push(e, key);
        bool flat = flatten || (root && key.len == 5 && memcmp(key.ptr, "\"log\"", 5) == 0);
        if (!err)
            err = member(e, field, flat, seg, val, n);
        e->path.len = len;
    }
    return err;
}

/* The resource members under obj, an object at path prefix (plen bytes, ending in '.';
 * "" at the root), into vals: each member is a resource path, or the head of some (then
 * entered), or neither (skipped at value_end()'s pace). A key holding dots counts as its
 * parts. */
static void resource_walk(struct lf_str obj,
                          const char *prefix,
                          size_t plen,
                          struct lf_str vals[LF_OTLP_N_RES],
                          int depth)
{
    const char *p = obj.ptr + 1;
    const char *end = obj.ptr + obj.len;
    char path[128];
    if (plen >= sizeof(path) - 1)
        return;
    memcpy(path, prefix, plen);
    for (;;) {
        p = lf_fields_skip_ws(p, end);
        while (p < end && *p == ',')
            p = lf_fields_skip_ws(p + 1, end);
        if (p >= end || *p != '"')
            return;
        const char *k = p + 1;
        p = string_end(p, end);
        size_t klen = (size_t)(p - 1 - k);
        p = lf_fields_skip_ws(p, end);
        if (p >= end || *p != ':')
            return;
        const char *v = lf_fields_skip_ws(p + 1, end);
        p = value_end(v, end);
        size_t n = plen + klen;
        if (n >= sizeof(path) - 1 || p <= v)
            continue;
        memcpy(path + plen, k, klen);
        bool head = false;
        for (int r = 0; r < LF_OTLP_N_RES; r++) {
            if (res_path_len[r] < n || memcmp(res_paths[r], path, n) != 0)
                continue;
            if (res_paths[r][n] == '\0')
                vals[r] = *v == 'n' ? lf_str_make("", 0) : lf_str_make(v, (size_t)(p - v));
            else if (res_paths[r][n] == '.')
                head = true;
        }
        if (head && *v == '{' && depth < 4) {
            path[n] = '.';
            resource_walk(lf_str_make(v, (size_t)(p - v)), path, n + 1, vals, depth + 1);
        }
    }
}

void lf_otlp_resource_values(struct lf_str line, struct lf_str vals[LF_OTLP_N_RES])
{
    for (int r = 0; r < LF_OTLP_N_RES; r++)
        vals[r] = lf_str_make("", 0);
    if (line.len > 0 && line.ptr[0] == '{')
        resource_walk(line, "", 0, vals, 0);
}

/* ---- the request ---- */

/* The configured resource attributes, encoded once into e->fixed. */
static enum lf_err fixed_resource(struct lf_otlp_enc *e, const char *resource_json)
{
    json_t *obj = json_loads(resource_json, 0, NULL);
    if (!json_is_object(obj)) {
        json_decref(obj);
        return LF_EINVAL;
    }
    struct lf_buf *out = e->out;
    e->out = &e->fixed;
    const char *k;
    json_t *v;
    enum lf_err err = LF_OK;
    size_t n = 0;
    json_object_foreach(obj, k, v)
    {
        if (err)
            break;
        if (!json_is_string(v) && !json_is_number(v) && !json_is_boolean(v)) {
            err = LF_EINVAL;
            break;
        }
        char *text = json_dumps(v, JSON_ENCODE_ANY | JSON_COMPACT);
        if (text == NULL) {
            err = LF_ENOMEM;
            break;
        }
        bool written = false;
        err = key_value(e, 1, lf_str_make(k, strlen(k)), lf_str_make(text, strlen(text)),
                        e->json && n > 0, &written);
        n++;
        free(text);
        for (int r = 0; r < LF_OTLP_N_RES; r++) {
            if (strcmp(k, res_names[r]) == 0)
                e->res_fixed[r] = true;
        }
    }
    e->out = out;
    json_decref(obj);
    return err;
}

enum lf_err lf_otlp_enc_init(struct lf_otlp_enc *e,
                             bool json,
                             const char *severity_field,
                             const char *resource_json)
{
    e->json = json;
    e->severity_field = severity_field != NULL ? severity_field : "";
    e->severity_len = strlen(e->severity_field);
    lf_buf_init(&e->path, 4096);
    lf_buf_init(&e->text, LF_OTLP_BUF_MAX);
    lf_buf_init(&e->fixed, 1 << 20);
    return resource_json != NULL ? fixed_resource(e, resource_json) : LF_OK;
}

void lf_otlp_enc_release(struct lf_otlp_enc *e)
{
    lf_buf_release(&e->path);
    lf_buf_release(&e->text);
    lf_buf_release(&e->fixed);
}

enum lf_err lf_otlp_begin(struct lf_otlp_enc *e, struct lf_buf *out)
{
    e->out = out;
    e->depth = 0;
    lf_buf_reset(out);
    return e->json ? put(e, "{\"resourceLogs\":[") : LF_OK;
}

/* The resource's attributes (an open Resource). */
static enum lf_err resource_attrs(struct lf_otlp_enc *e, const struct lf_str vals[LF_OTLP_N_RES])
{
    enum lf_err err = lf_buf_append(e->out, e->fixed.ptr, e->fixed.len);
    bool comma = e->fixed.len > 0;
    for (int r = 0; r < LF_OTLP_N_RES && !err; r++) {
        if (vals[r].len == 0 || e->res_fixed[r])
            continue;
        const char *name = res_names[r];
        bool written = false;
        err = key_value(e, 1, lf_str_make(name, strlen(name)), vals[r], e->json && comma, &written);
        comma = comma || written;
    }
    return err;
}

enum lf_err
lf_otlp_resource(struct lf_otlp_enc *e, bool first, const struct lf_str vals[LF_OTLP_N_RES])
{
    static const char scope_name[] = "logferry";
    static const char version[] = PACKAGE_VERSION;
    enum lf_err err;
    if (e->json) {
        err =
            put(e, first ? "{\"resource\":{\"attributes\":[" : ",{\"resource\":{\"attributes\":[");
        if (!err)
            err = resource_attrs(e, vals);
        if (!err)
            err = put(
                e,
                "]},\"scopeLogs\":[{\"scope\":{\"name\":\"logferry\",\"version\":\"" PACKAGE_VERSION
                "\"},\"logRecords\":[");
        return err;
    }
    err = pb_open(e, 1, 3);
    if (!err)
        err = pb_open(e, 1, 2);
    if (!err)
        err = resource_attrs(e, vals);
    if (!err)
        err = pb_close(e);
    if (!err)
        err = pb_open(e, 2, 3);
    if (!err)
        err = pb_open(e, 1, 1);
    if (!err)
        err = pb_bytes(e, 1, scope_name, sizeof(scope_name) - 1);
    if (!err)
        err = pb_bytes(e, 2, version, sizeof(version) - 1);
    return err ? err : pb_close(e);
}

enum lf_err lf_otlp_resource_end(struct lf_otlp_enc *e)
{
    if (e->json)
        return put(e, "]}]}");
    enum lf_err err = pb_close(e);
    return err ? err : pb_close(e);
}

enum lf_err lf_otlp_end(struct lf_otlp_enc *e)
{
    return e->json ? put(e, "]}") : LF_OK;
}

/* The severity fields of a record from e->sev. */
static enum lf_err severity(struct lf_otlp_enc *e)
{
    if (e->sev.len == 0 || e->sev.ptr[0] == 'n')
        return LF_OK;
    enum lf_err err = unescape(e, e->sev);
    if (err)
        return err;
    int num = lf_otlp_severity_number(e->text.ptr, e->text.len);
    if (e->json) {
        char tmp[40];
        snprintf(tmp, sizeof(tmp), ",\"severityNumber\":%d,\"severityText\":", num);
        err = put(e, tmp);
        return err ? err : put_qstr(e, lf_buf_str(&e->text));
    }
    if (num > 0) {
        err = pb_tag(e, 2, WIRE_VARINT);
        if (!err)
            err = pb_varint(e, (uint64_t)num);
    }
    return err ? err : pb_bytes(e, 3, e->text.ptr, e->text.len);
}

/* hex (an even count of hex digits) as bytes, in field `field`. */
static enum lf_err pb_hex(struct lf_otlp_enc *e, unsigned field, struct lf_str hex)
{
    char bytes[16];
    size_t n = hex.len / 2 < sizeof(bytes) ? hex.len / 2 : sizeof(bytes);
    for (size_t i = 0; i < n; i++) {
        unsigned v = 0;
        for (int k = 0; k < 2; k++) {
            char c = hex.ptr[2 * i + (size_t)k];
            v = v * 16 + (unsigned)(c <= '9' ? c - '0' : (c | 0x20) - 'a' + 10);
        }
        bytes[i] = (char)v;
    }
    return pb_bytes(e, field, bytes, n);
}

/* The record's trace and span ids, when the event has them: bytes in protobuf, hex text
 * (lowercase) in JSON, as OTLP's JSON mapping writes them. */
static enum lf_err trace_ids(struct lf_otlp_enc *e)
{
    enum lf_err err = LF_OK;
    const struct {
        struct lf_str hex;
        unsigned field;
        const char *name;
    } ids[] = { { e->trace, 9, ",\"traceId\":\"" }, { e->span, 10, ",\"spanId\":\"" } };
    for (size_t i = 0; i < 2 && !err; i++) {
        if (ids[i].hex.len == 0)
            continue;
        if (!e->json) {
            err = pb_hex(e, ids[i].field, ids[i].hex);
            continue;
        }
        err = put_n(e, ids[i].name, strlen(ids[i].name));
        for (size_t k = 0; k < ids[i].hex.len && !err; k++) {
            char c = (char)(ids[i].hex.ptr[k] | (ids[i].hex.ptr[k] >= 'A' ? 0x20 : 0));
            err = lf_buf_append(e->out, &c, 1);
        }
        if (!err)
            err = put(e, "\"");
    }
    return err;
}

/* The record's body from e->body. */
static enum lf_err body(struct lf_otlp_enc *e)
{
    if (e->json) {
        enum lf_err err = put(e, ",\"body\":{");
        if (!err)
            err = any_value(e, e->body);
        return err ? err : put(e, "}");
    }
    enum lf_err err = pb_open(e, 5, 2);
    if (!err)
        err = any_value(e, e->body);
    return err ? err : pb_close(e);
}

enum lf_err lf_otlp_record(
    struct lf_otlp_enc *e, bool first, struct lf_str line, int64_t time_ns, int64_t observed_ns)
{
    while (line.len > 0 && (line.ptr[line.len - 1] == '\n' || line.ptr[line.len - 1] == ' '))
        line.len--;
    if (line.len < 2 || line.ptr[0] != '{')
        return LF_EINVAL;
    e->sev = lf_str_make("", 0);
    e->body = lf_str_make("", 0);
    e->trace = lf_str_make("", 0);
    e->span = lf_str_make("", 0);
    lf_buf_reset(&e->path);
    enum lf_err err;
    size_t n = 0;
    if (e->json) {
        char tmp[96];
        snprintf(tmp, sizeof(tmp), "%s{\"timeUnixNano\":\"%lld\",\"observedTimeUnixNano\":\"%lld\"",
                 first ? "" : ",", (long long)time_ns, (long long)observed_ns);
        err = put(e, tmp);
        if (!err)
            err = put(e, ",\"attributes\":[");
        if (!err)
            err = members(e, line, 6, false, &n);
        if (!err)
            err = put(e, "]");
        if (!err)
            err = severity(e);
        if (!err)
            err = trace_ids(e);
        if (!err)
            err = body(e);
        return err ? err : put(e, "}");
    }
    err = pb_open(e, 2, 2);
    if (!err)
        err = pb_fixed64(e, 1, (uint64_t)time_ns);
    if (!err)
        err = pb_fixed64(e, 11, (uint64_t)observed_ns);
    if (!err)
        err = members(e, line, 6, false, &n);
    if (!err)
        err = severity(e);
    if (!err)
        err = trace_ids(e);
    if (!err)
        err = body(e);
    return err ? err : pb_close(e);
}

/* ---- severity ---- */

int lf_otlp_severity_number(const char *s, size_t len)
{
    static const struct {
        const char *name;
        int num;
    } names[] = {
        { "trace", 1 },       { "debug", 5 },         { "dbg", 5 },     { "info", 9 },
        { "information", 9 }, { "informational", 9 }, { "notice", 10 }, { "warn", 13 },
        { "warning", 13 },    { "error", 17 },        { "err", 17 },    { "fatal", 21 },
        { "critical", 21 },   { "crit", 21 },         { "alert", 22 },  { "emerg", 23 },
        { "emergency", 23 },  { "panic", 24 },
    };
    for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
        if (strlen(names[i].name) == len && strncasecmp(names[i].name, s, len) == 0)
            return names[i].num;
    }
    return 0;
}
