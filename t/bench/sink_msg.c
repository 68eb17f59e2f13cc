/* sink_msg.c - the messages the output benchmarks' sink (sink.c) finds in what it is sent:
 * buffers and hashing, a JSON walker that finds a document's message by --keys without
 * building anything, the bodies of _bulk, Loki's push, OTLP (JSON and protobuf) and of
 * lines, their decompression (zlib, zstd: one stream each, reused), and syslog messages.
 * Nothing here allocates per message: strings are unescaped into buffers kept in struct
 * sink_msgs. The sink's loop thread only. */
#include "config.h"

#include "sink_int.h"

#include <ctype.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define HASH_K1 0x9e3779b97f4a7c15ULL
#define HASH_K2 0xff51afd7ed558ccdULL
#define HASH_K3 0xc4ceb9fe1a85ec53ULL

/* ---- buffers, hashing ------------------------------------------------------------- */

int sink_buf_reserve(struct buf *b, size_t more)
{
    if (more > SINK_MAX_BODY_BYTES || b->len > SINK_MAX_BODY_BYTES - more)
        return -1;
    size_t need = b->len + more;
    if (need <= b->cap)
        return 0;
    size_t cap = b->cap ? b->cap : 4096;
    while (cap < need)
        cap *= 2;
    char *p = realloc(b->ptr, cap);
    if (!p)
        return -1;
    b->ptr = p;
    b->cap = cap;
    return 0;
}

int sink_buf_add(struct buf *b, const void *p, size_t n)
{
    if (sink_buf_reserve(b, n))
        return -1;
    if (n > 0)
        memcpy(b->ptr + b->len, p, n);
    b->len += n;
    return 0;
}

int sink_buf_vprintf(struct buf *b, const char *fmt, va_list ap)
{
    for (;;) {
        va_list aq;
        va_copy(aq, ap);
        size_t room = b->cap - b->len;
        int n = vsnprintf(b->ptr ? b->ptr + b->len : NULL, room, fmt, aq);
        va_end(aq);
        if (n < 0)
            return -1;
        if ((size_t)n < room) {
            b->len += (size_t)n;
            return 0;
        }
        if (sink_buf_reserve(b, (size_t)n + 1))
            return -1;
    }
}

int sink_buf_printf(struct buf *b, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int rc = sink_buf_vprintf(b, fmt, ap);
    va_end(ap);
    return rc;
}

void sink_buf_release(struct buf *b)
{
    free(b->ptr);
    b->ptr = NULL;
    b->len = 0;
    b->cap = 0;
}

static uint64_t rotl64(uint64_t x, int r)
{
    return (x << r) | (x >> (64 - r));
}

/* One multiplication per 8 bytes instead of FNV-1a's one per byte: hashing was a third of
 * the sink's CPU. Words are read little-endian whatever the host, the tail zero-padded, the
 * length mixed in first, so "a" and "a\0" differ; the end is murmur3's fmix64. */
uint64_t sink_hash(const char *p, size_t n)
{
    const unsigned char *u = (const unsigned char *)p;
    uint64_t h = SINK_HASH_SEED ^ ((uint64_t)n * HASH_K1);
    for (; n >= 8; u += 8, n -= 8) {
        uint64_t w = (uint64_t)u[0] | (uint64_t)u[1] << 8 | (uint64_t)u[2] << 16 |
                     (uint64_t)u[3] << 24 | (uint64_t)u[4] << 32 | (uint64_t)u[5] << 40 |
                     (uint64_t)u[6] << 48 | (uint64_t)u[7] << 56;
        h = rotl64(h ^ w, 27) * HASH_K1;
    }
    if (n > 0) {
        uint64_t w = 0;
        for (size_t i = 0; i < n; i++)
            w |= (uint64_t)u[i] << (8 * i);
        h = rotl64(h ^ w, 27) * HASH_K1;
    }
    h ^= h >> 33;
    h *= HASH_K2;
    h ^= h >> 33;
    h *= HASH_K3;
    h ^= h >> 33;
    return h;
}

void sink_tally_add_now(struct tally *t, const char *p, size_t n)
{
    t->lines++;
    t->sum += sink_hash(p, n);
    t->bytes += n;
}

void sink_tally_flush(struct tally *t)
{
    for (size_t i = 0; i < t->n_pending; i++)
        t->sum += sink_hash(t->pending[i], t->pending_len[i]);
    t->n_pending = 0;
    t->stage_len = 0;
}

void sink_tally_add(struct tally *t, const char *p, size_t n)
{
    if (t->n_pending == SINK_PENDING)
        sink_tally_flush(t);
    t->lines++;
    t->bytes += n;
    t->pending[t->n_pending] = p;
    t->pending_len[t->n_pending++] = n;
}

void sink_tally_add_copy(struct tally *t, const char *p, size_t n)
{
    if (n > sizeof(t->stage) / 4) {
        sink_tally_add_now(t, p, n);
        return;
    }
    if (t->stage_len + n > sizeof(t->stage) || t->n_pending == SINK_PENDING)
        sink_tally_flush(t); /* first: a flush empties the stage */
    char *copy = t->stage + t->stage_len;
    memcpy(copy, p, n);
    t->stage_len += n;
    sink_tally_add(t, copy, n);
}

/* ---- JSON: just enough to find messages ------------------------------------------- */

static const char *ws(const char *p, const char *e)
{
    while (p < e && (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r'))
        p++;
    return p;
}

/* Bytes that end a number or a literal; bytes that matter inside an object or an array. */
static const bool value_end[256] = {
    [','] = 1, ['}'] = 1, [']'] = 1, [' '] = 1, ['\t'] = 1, ['\r'] = 1, ['\n'] = 1
};
static const bool structural[256] = { ['"'] = 1, ['{'] = 1, ['}'] = 1, ['['] = 1, [']'] = 1 };

/* p is after a string's opening quote: returns the byte after its closing one, or NULL.
 * memchr finds the quotes (most strings hold no escape); a quote after an odd run of
 * backslashes is escaped. */
static const char *str_end(const char *p, const char *e)
{
    for (;;) {
        const char *q = memchr(p, '"', (size_t)(e - p));
        if (!q)
            return NULL;
        const char *b = q;
        while (b > p && b[-1] == '\\')
            b--;
        if (((q - b) & 1) == 0)
            return q + 1;
        p = q + 1;
    }
}

/* A value's end (not a validation: brackets are counted, strings skipped). NULL: cut. */
static const char *skip_value(const char *p, const char *e)
{
    p = ws(p, e);
    if (p == e)
        return NULL;
    if (*p == '"')
        return str_end(p + 1, e);
    if (*p != '{' && *p != '[') {
        const char *q = p;
        while (q < e && !value_end[(unsigned char)*q])
            q++;
        return q > p ? q : NULL;
    }
    size_t depth = 0;
    while (p < e) {
        unsigned char c = (unsigned char)*p;
        if (!structural[c]) {
            p++;
        } else if (c == '"') {
            p = str_end(p + 1, e);
            if (!p)
                return NULL;
        } else if (c == '{' || c == '[') {
            depth++;
            p++;
        } else if (--depth == 0) {
            return p + 1;
        } else {
            p++;
        }
    }
    return NULL;
}

static int hex4(const char *p, uint32_t *v)
{
    *v = 0;
    for (int i = 0; i < 4; i++) {
        int c = (unsigned char)p[i];
        int d = isdigit(c)                               ? c - '0'
                : (c | 0x20) >= 'a' && (c | 0x20) <= 'f' ? (c | 0x20) - 'a' + 10
                                                         : -1;
        if (d < 0)
            return -1;
        *v = *v << 4 | (uint32_t)d;
    }
    return 0;
}

/* cp as UTF-8 at o; returns the bytes written (1 to 4). */
static size_t put_utf8(char *o, uint32_t cp)
{
    if (cp < 0x80) {
        o[0] = (char)cp;
        return 1;
    }
    if (cp < 0x800) {
        o[0] = (char)(0xc0 | cp >> 6);
        o[1] = (char)(0x80 | (cp & 0x3f));
        return 2;
    }
    if (cp < 0x10000) {
        o[0] = (char)(0xe0 | cp >> 12);
        o[1] = (char)(0x80 | (cp >> 6 & 0x3f));
        o[2] = (char)(0x80 | (cp & 0x3f));
        return 3;
    }
    o[0] = (char)(0xf0 | cp >> 18);
    o[1] = (char)(0x80 | (cp >> 12 & 0x3f));
    o[2] = (char)(0x80 | (cp >> 6 & 0x3f));
    o[3] = (char)(0x80 | (cp & 0x3f));
    return 4;
}

/* The escape at p (after its backslash) written at *o, which moves past it; returns the
 * byte after the escape, or NULL. */
static const char *unescape_one(const char *p, const char *e, char **o)
{
    static const char unescaped[256] = { ['"'] = '"',  ['\\'] = '\\', ['/'] = '/',  ['b'] = '\b',
                                         ['f'] = '\f', ['n'] = '\n',  ['r'] = '\r', ['t'] = '\t' };
    if (p == e)
        return NULL;
    if (unescaped[(unsigned char)*p]) {
        *(*o)++ = unescaped[(unsigned char)*p];
        return p + 1;
    }
    uint32_t cp;
    if (*p != 'u' || e - p < 5 || hex4(p + 1, &cp))
        return NULL;
    p += 5;
    if (cp >= 0xd800 && cp < 0xdc00 && e - p >= 6 && p[0] == '\\' && p[1] == 'u') {
        uint32_t lo;
        if (!hex4(p + 2, &lo) && lo >= 0xdc00 && lo < 0xe000) {
            cp = 0x10000 + ((cp - 0xd800) << 10) + (lo - 0xdc00);
            p += 6;
        }
    }
    *o += put_utf8(*o, cp);
    return p;
}

/* The string's content [p, e) unescaped into out (emptied first), reserved once: no
 * escape is shorter than what it stands for (\uXXXX, six bytes, is at most three). */
static int unescape(const char *p, const char *e, struct buf *out)
{
    out->len = 0;
    if (sink_buf_reserve(out, (size_t)(e - p)))
        return -1;
    char *o = out->ptr;
    while (p < e) {
        const char *bs = memchr(p, '\\', (size_t)(e - p));
        const char *q = bs ? bs : e;
        memcpy(o, p, (size_t)(q - p));
        o += q - p;
        if (!bs)
            break;
        p = unescape_one(bs + 1, e, &o);
        if (!p)
            return -1;
    }
    out->len = (size_t)(o - out->ptr);
    return 0;
}

/* The string whose opening quote is at p, unescaped: in *str, *len, borrowed from the JSON
 * text when it holds no escape, else from scratch (valid until its next use). Returns the
 * byte after the closing quote, or NULL. */
static const char *
str_value(const char *p, const char *e, struct buf *scratch, const char **str, size_t *len)
{
    const char *end = str_end(p + 1, e);
    if (!end)
        return NULL;
    const char *body = p + 1;
    size_t n = (size_t)(end - 1 - body);
    if (!memchr(body, '\\', n)) {
        *str = body;
        *len = n;
        return end;
    }
    if (unescape(body, end - 1, scratch))
        return NULL;
    *str = scratch->ptr;
    *len = scratch->len;
    return end;
}

/* Steps through an array or an object whose opening bracket is behind *pp: 1 with *pp at
 * the next element (or member's key), 0 past the closing bracket, -1 when cut. */
static int seq_next(const char **pp, const char *e, char close)
{
    const char *p = ws(*pp, e);
    if (p < e && *p == ',')
        p = ws(p + 1, e);
    if (p == e)
        return -1;
    if (*p == close) {
        *pp = p + 1;
        return 0;
    }
    *pp = p;
    return 1;
}

/* The next member of an object (see seq_next): its key's raw bytes in *key, *klen, and
 * *pp at its value. */
static int member_next(const char **pp, const char *e, const char **key, size_t *klen)
{
    int r = seq_next(pp, e, '}');
    if (r <= 0)
        return r;
    const char *p = *pp;
    if (*p != '"')
        return -1;
    const char *k = str_end(p + 1, e);
    if (!k)
        return -1;
    *key = p + 1;
    *klen = (size_t)(k - p - 2);
    p = ws(k, e);
    if (p == e || *p != ':')
        return -1;
    *pp = ws(p + 1, e);
    return 1;
}

/* *pp at an opening bracket: moves past it. -1 if it is not c. */
static int open_seq(const char **pp, const char *e, char c)
{
    const char *p = ws(*pp, e);
    if (p == e || *p != c)
        return -1;
    *pp = p + 1;
    return 0;
}

static bool key_is(const char *k, size_t klen, const char *name)
{
    return strlen(name) == klen && memcmp(k, name, klen) == 0;
}

/* The JSON object in [p, e): its message (the first --keys member holding a string) added
 * to t. -1: not an object, or no such member. */
static int
doc_message(struct sink_msgs *m, const char *p, const char *e, bool stable, struct tally *t)
{
    if (open_seq(&p, e, '{'))
        return -1;
    const char *best = NULL;
    size_t rank = m->n_keys;
    const char *k;
    size_t klen;
    while (member_next(&p, e, &k, &klen) > 0) {
        if (*p == '"') {
            for (size_t i = 0; i < rank; i++) {
                if (klen == m->key_len[i] && memcmp(k, m->keys[i], klen) == 0) {
                    best = p;
                    rank = i;
                    break;
                }
            }
            if (rank == 0)
                break; /* the first key: nothing can rank higher */
        }
        p = skip_value(p, e);
        if (!p)
            return -1;
    }
    const char *str;
    size_t len;
    if (!best || !str_value(best, e, &m->str, &str, &len))
        return -1;
    if (stable && str != m->str.ptr)
        sink_tally_add(t, str, len);
    else
        sink_tally_add_copy(t, str, len);
    return 0;
}

/* A line of text that is either a JSON object (its message by --keys) or the message. */
static int line_message(struct sink_msgs *m, const char *p, size_t n, bool stable, struct tally *t)
{
    if (n > 0 && *p == '{')
        return doc_message(m, p, p + n, stable, t);
    if (stable)
        sink_tally_add(t, p, n);
    else
        sink_tally_add_copy(t, p, n);
    return 0;
}

/* ---- bodies ------------------------------------------------------------------------ */

/* The lines of [p, p + n) (a last line without its LF counts), each through line_message. */
int sink_text_lines(struct sink_msgs *m, const char *p, size_t n, struct tally *t)
{
    const char *e = p + n;
    while (p < e) {
        const char *nl = memchr(p, '\n', (size_t)(e - p));
        const char *end = nl ? nl : e;
        if (line_message(m, p, (size_t)(end - p), true, t))
            return -1;
        p = nl ? nl + 1 : e;
    }
    return 0;
}

/* A generic POST: a JSON array of objects (or strings), or lines. */
int sink_generic_body(struct sink_msgs *m, const char *p, size_t n, struct tally *t)
{
    const char *e = p + n;
    const char *q = ws(p, e);
    if (q == e || *q != '[')
        return sink_text_lines(m, p, n, t);
    q++;
    int r;
    while ((r = seq_next(&q, e, ']')) > 0) {
        const char *end = skip_value(q, e);
        if (!end)
            return -1;
        if (*q == '"') {
            const char *str;
            size_t len;
            if (!str_value(q, e, &m->str, &str, &len))
                return -1;
            sink_tally_add_copy(t, str, len);
        } else if (doc_message(m, q, end, true, t)) {
            return -1;
        }
        q = end;
    }
    return r;
}

/* The string value at p (raw, quotes included) of member name in the object at [p, e), if
 * it has one; else NULL. */
static const char *member_str(const char *p, const char *e, const char *name, size_t *len)
{
    if (open_seq(&p, e, '{'))
        return NULL;
    const char *k;
    size_t klen;
    while (member_next(&p, e, &k, &klen) > 0) {
        const char *v = skip_value(p, e);
        if (!v)
            return NULL;
        if (*p == '"' && key_is(k, klen, name)) {
            *len = (size_t)(v - p);
            return p;
        }
        p = v;
    }
    return NULL;
}

static int add_text(struct buf *b, const char *text)
{
    return sink_buf_add(b, text, strlen(text));
}

/* One _bulk action line: its item added to the answer in m->resp. *has_doc: a document
 * line follows (all verbs but delete). */
static int bulk_action(struct sink_msgs *m, const char *p, const char *e, bool *has_doc)
{
    const char *verb;
    size_t vlen;
    if (open_seq(&p, e, '{') || member_next(&p, e, &verb, &vlen) <= 0)
        return -1;
    const char *end = skip_value(p, e);
    if (!end)
        return -1;
    size_t ilen = 0;
    size_t dlen = 0;
    const char *index = member_str(p, end, "_index", &ilen);
    const char *id = member_str(p, end, "_id", &dlen);
    *has_doc = !key_is(verb, vlen, "delete");
    bool created = *has_doc && !key_is(verb, vlen, "update");
    /* appended piece by piece, not printf'd: an item per event */
    struct buf *b = &m->resp;
    int rc = add_text(b, b->len > 1 ? ",{\"" : "{\""); /* b starts with '[' */
    rc = rc ? rc : sink_buf_add(b, verb, vlen);
    rc = rc ? rc : add_text(b, "\":{\"_index\":");
    rc = rc ? rc : index ? sink_buf_add(b, index, ilen) : add_text(b, "\"i\"");
    rc = rc ? rc : add_text(b, ",\"_id\":");
    rc = rc   ? rc
         : id ? sink_buf_add(b, id, dlen)
              : sink_buf_printf(b, "\"s%" PRIu64 "\"", ++m->next_id);
    return rc        ? rc
           : created ? add_text(b, ",\"_version\":1,\"result\":\"created\",\"status\":201}}")
                     : add_text(b, ",\"_version\":1,\"result\":\"updated\",\"status\":200}}");
}

/* _bulk: action and document lines; the items of the answer go to m->resp. */
int sink_bulk_body(struct sink_msgs *m, const char *p, size_t n, struct tally *t)
{
    const char *e = p + n;
    bool want_doc = false;
    m->resp.len = 0;
    if (sink_buf_add(&m->resp, "[", 1))
        return -1;
    while (p < e) {
        const char *nl = memchr(p, '\n', (size_t)(e - p));
        const char *end = nl ? nl : e;
        if (ws(p, end) < end) {
            if (want_doc) {
                if (doc_message(m, p, end, true, t))
                    return -1;
                want_doc = false;
            } else if (bulk_action(m, p, end, &want_doc)) {
                return -1;
            }
        }
        p = nl ? nl + 1 : e;
    }
    return want_doc ? -1 : sink_buf_add(&m->resp, "]", 1);
}

typedef int elem_fn(struct sink_msgs *m, const char **pp, const char *e, struct tally *t);

/* The object at *pp: fn on each element of its member name, an array (other members are
 * skipped); *pp moves past the object. */
static int each_in(struct sink_msgs *m,
                   const char **pp,
                   const char *e,
                   const char *name,
                   elem_fn *fn,
                   struct tally *t)
{
    const char *p = *pp;
    const char *k;
    size_t klen;
    int r;
    if (open_seq(&p, e, '{'))
        return -1;
    while ((r = member_next(&p, e, &k, &klen)) > 0) {
        if (!key_is(k, klen, name)) {
            p = skip_value(p, e);
            if (!p)
                return -1;
            continue;
        }
        if (open_seq(&p, e, '['))
            return -1;
        while ((r = seq_next(&p, e, ']')) > 0) {
            if (fn(m, &p, e, t))
                return -1;
        }
        if (r < 0)
            return -1;
    }
    *pp = p;
    return r;
}

/* A Loki value, [ "ns", "line" (, {structured metadata}) ]: the line is a message. */
static int loki_value(struct sink_msgs *m, const char **pp, const char *e, struct tally *t)
{
    const char *v = *pp;
    const char *line;
    size_t len;
    int r;
    if (open_seq(&v, e, '[') || seq_next(&v, e, ']') <= 0)
        return -1;
    v = skip_value(v, e);
    if (!v || seq_next(&v, e, ']') <= 0 || *v != '"')
        return -1;
    v = str_value(v, e, &m->inner, &line, &len);
    /* a line unescaped into m->inner is overwritten by the next one */
    if (!v || line_message(m, line, len, line != m->inner.ptr, t))
        return -1;
    while ((r = seq_next(&v, e, ']')) > 0) { /* structured metadata */
        v = skip_value(v, e);
        if (!v)
            return -1;
    }
    *pp = v;
    return r;
}

static int loki_stream(struct sink_msgs *m, const char **pp, const char *e, struct tally *t)
{
    return each_in(m, pp, e, "values", loki_value, t);
}

/* Loki's push, JSON: every value's line (the event's JSON, or plain text) is a message. */
int sink_loki_body(struct sink_msgs *m, const char *p, size_t n, struct tally *t)
{
    return each_in(m, &p, p + n, "streams", loki_stream, t);
}

/* An OTLP JSON LogRecord: its body.stringValue is a message; a record without one is not
 * understood. */
static int otlp_record(struct sink_msgs *m, const char **pp, const char *e, struct tally *t)
{
    const char *p = *pp;
    const char *k;
    size_t klen;
    int r;
    bool found = false;
    if (open_seq(&p, e, '{'))
        return -1;
    while ((r = member_next(&p, e, &k, &klen)) > 0) {
        const char *v = skip_value(p, e);
        if (!v)
            return -1;
        if (key_is(k, klen, "body")) {
            size_t len;
            const char *body = member_str(p, v, "stringValue", &len);
            const char *str;
            if (!body || !str_value(body, v, &m->str, &str, &len))
                return -1;
            sink_tally_add_copy(t, str, len);
            found = true;
        }
        p = v;
    }
    *pp = p;
    return r < 0 || !found ? -1 : 0;
}

static int otlp_scope(struct sink_msgs *m, const char **pp, const char *e, struct tally *t)
{
    return each_in(m, pp, e, "logRecords", otlp_record, t);
}

static int otlp_resource(struct sink_msgs *m, const char **pp, const char *e, struct tally *t)
{
    return each_in(m, pp, e, "scopeLogs", otlp_scope, t);
}

/* OTLP JSON: resourceLogs[].scopeLogs[].logRecords[].body.stringValue. */
int sink_otlp_json(struct sink_msgs *m, const char *p, size_t n, struct tally *t)
{
    return each_in(m, &p, p + n, "resourceLogs", otlp_resource, t);
}

static int varint(const unsigned char **pp, const unsigned char *e, uint64_t *v)
{
    *v = 0;
    for (int shift = 0; shift < 64 && *pp < e; shift += 7) {
        unsigned char b = *(*pp)++;
        *v |= (uint64_t)(b & 0x7f) << shift;
        if (!(b & 0x80))
            return 0;
    }
    return -1;
}

/* The next field of a protobuf message: 1 with its number in *num and, for a
 * length-delimited one, its bytes in *val and *len (else *val NULL); 0 at the end; -1 cut. */
static int pb_next(const unsigned char **pp,
                   const unsigned char *e,
                   uint64_t *num,
                   const unsigned char **val,
                   size_t *len)
{
    uint64_t tag;
    uint64_t v;
    if (*pp == e)
        return 0;
    if (varint(pp, e, &tag))
        return -1;
    *num = tag >> 3;
    *val = NULL;
    switch (tag & 7) {
    case 0:
        return varint(pp, e, &v) ? -1 : 1;
    case 1:
    case 5: {
        size_t w = (tag & 7) == 1 ? 8 : 4;
        if ((size_t)(e - *pp) < w)
            return -1;
        *pp += w;
        return 1;
    }
    case 2:
        if (varint(pp, e, &v) || v > (uint64_t)(e - *pp))
            return -1;
        *val = *pp;
        *len = (size_t)v;
        *pp += v;
        return 1;
    default:
        return -1;
    }
}

/* OTLP protobuf: ExportLogsServiceRequest.resource_logs(1) -> ResourceLogs.scope_logs(2)
 * -> ScopeLogs.log_records(2) -> LogRecord.body(5) -> AnyValue.string_value(1). */
static int otlp_pb(const unsigned char *p, const unsigned char *e, int level, struct tally *t)
{
    static const uint64_t want[] = { 1, 2, 2, 5, 1 };
    uint64_t num;
    const unsigned char *v;
    size_t len = 0;
    int r;
    int found = 0;
    while ((r = pb_next(&p, e, &num, &v, &len)) > 0) {
        if (num != want[level] || !v)
            continue;
        found = 1;
        if (level == 4)
            sink_tally_add(t, (const char *)v, len);
        else if (otlp_pb(v, v + len, level + 1, t))
            return -1;
    }
    return r < 0 || (level >= 3 && !found) ? -1 : 0;
}

int sink_otlp_pb(const char *p, size_t n, struct tally *t)
{
    const unsigned char *u = (const unsigned char *)p;
    return otlp_pb(u, u + n, 0, t);
}

/* ---- decompression ------------------------------------------------------------------ */

static int inflate_body(struct sink_msgs *m, const char *p, size_t n, int window)
{
    z_stream *z = &m->z;
    if (inflateReset2(z, window) != Z_OK)
        return -1;
    z->next_in = (Bytef *)(uintptr_t)p;
    z->avail_in = 0;
    size_t left = n;
    for (;;) {
        if (z->avail_in == 0 && left > 0) {
            z->avail_in = left > UINT32_MAX ? UINT32_MAX : (uInt)left;
            left -= z->avail_in;
        }
        if (sink_buf_reserve(&m->dec, 256 * 1024))
            return -1;
        size_t room = m->dec.cap - m->dec.len;
        z->next_out = (Bytef *)m->dec.ptr + m->dec.len;
        z->avail_out = room > UINT32_MAX ? UINT32_MAX : (uInt)room;
        uInt before = z->avail_out;
        int rc = inflate(z, Z_NO_FLUSH);
        m->dec.len += before - z->avail_out;
        if (rc == Z_STREAM_END) {
            if (z->avail_in == 0 && left == 0)
                return 0;
            /* gzip members appended one after another (an S3 object) are one stream */
            const Bytef *next = z->next_in;
            uInt avail = z->avail_in;
            if (inflateReset(z) != Z_OK)
                return -1;
            z->next_in = (Bytef *)(uintptr_t)next;
            z->avail_in = avail;
        } else if (rc != Z_OK && rc != Z_BUF_ERROR) {
            return -1;
        } else if (rc == Z_BUF_ERROR && z->avail_in == 0 && left == 0) {
            return -1; /* cut short */
        }
    }
}

static int unzstd_body(struct sink_msgs *m, const char *p, size_t n)
{
    if (ZSTD_isError(ZSTD_DCtx_reset(m->zd, ZSTD_reset_session_only)))
        return -1;
    ZSTD_inBuffer in = { p, n, 0 };
    size_t last = 0;
    while (in.pos < in.size) {
        if (sink_buf_reserve(&m->dec, 256 * 1024))
            return -1;
        ZSTD_outBuffer out = { m->dec.ptr + m->dec.len, m->dec.cap - m->dec.len, 0 };
        last = ZSTD_decompressStream(m->zd, &out, &in);
        if (ZSTD_isError(last))
            return -1;
        m->dec.len += out.pos;
    }
    for (;;) { /* flush what the context still holds */
        if (last == 0)
            return 0;
        if (sink_buf_reserve(&m->dec, 256 * 1024))
            return -1;
        ZSTD_outBuffer out = { m->dec.ptr + m->dec.len, m->dec.cap - m->dec.len, 0 };
        last = ZSTD_decompressStream(m->zd, &out, &in);
        if (ZSTD_isError(last) || (out.pos == 0 && last != 0))
            return -1;
        m->dec.len += out.pos;
    }
}

/* The body decoded as encoding says ("" or identity: as it is) into *out. -1: an unknown
 * encoding, or bytes that do not decode. */
int sink_decode(struct sink_msgs *m,
                const char *encoding,
                const char *p,
                size_t n,
                const char **out,
                size_t *out_len)
{
    m->dec.len = 0;
    int rc;
    if (!*encoding || !strcmp(encoding, "identity")) {
        *out = p;
        *out_len = n;
        return 0;
    }
    if (!strcmp(encoding, "gzip") || !strcmp(encoding, "x-gzip")) {
        rc = inflate_body(m, p, n, 15 + 16);
    } else if (!strcmp(encoding, "deflate")) {
        rc = inflate_body(m, p, n, 15); /* zlib's wrapper, as RFC 9110 says; else raw */
        if (rc) {
            m->dec.len = 0;
            rc = inflate_body(m, p, n, -15);
        }
    } else if (!strcmp(encoding, "zstd")) {
        rc = unzstd_body(m, p, n);
    } else {
        return -1;
    }
    *out = m->dec.ptr ? m->dec.ptr : "";
    *out_len = m->dec.len;
    return rc;
}

/* ---- syslog --------------------------------------------------------------------------- */

static const char *skip_token(const char *p, const char *e)
{
    const char *sp = memchr(p, ' ', (size_t)(e - p));
    return sp ? sp + 1 : NULL;
}

/* One syslog message (a frame's bytes): its MSG added to t. */
int sink_syslog_msg(const char *p, const char *e, struct tally *t)
{
    if (p == e || *p != '<')
        return -1;
    const char *gt = memchr(p, '>', (size_t)(e - p) < 6 ? (size_t)(e - p) : 6);
    if (!gt)
        return -1;
    p = gt + 1;
    if (e - p >= 2 && p[0] == '1' && p[1] == ' ') { /* RFC 5424 */
        p += 2;
        for (int i = 0; i < 5 && p; i++) /* TIMESTAMP HOSTNAME APP-NAME PROCID MSGID */
            p = skip_token(p, e);
        if (!p || p == e)
            return -1;
        if (*p == '-') {
            p++;
        } else {
            while (p < e && *p == '[') {
                bool quoted = false; /* a ']' in a value should be escaped; not all are */
                for (p++; p < e && (quoted || *p != ']'); p++) {
                    if (*p == '\\')
                        p++;
                    else if (*p == '"')
                        quoted = !quoted;
                }
                if (p >= e)
                    return -1;
                p++;
            }
        }
        if (p < e && *p == ' ')
            p++;
        else if (p != e)
            return -1;
    } else { /* RFC 3164: TIMESTAMP HOSTNAME TAG: MSG */
        if (e - p >= 16 && isalpha((unsigned char)*p) && p[3] == ' ')
            p += 16; /* "Mmm dd hh:mm:ss " */
        else if (!(p = skip_token(p, e)))
            return -1;
        if (p > e || !(p = skip_token(p, e)) || !(p = skip_token(p, e)))
            return -1;
    }
    if (e - p >= 3 && !memcmp(p, "\xef\xbb\xbf", 3))
        p += 3;
    sink_tally_add(t, p, (size_t)(e - p));
    return 0;
}

/* ---- set-up --------------------------------------------------------------------------- */

int sink_msgs_init(struct sink_msgs *m)
{
    memset(m, 0, sizeof(*m));
    m->zd = ZSTD_createDCtx();
    if (!m->zd)
        return -1;
    if (inflateInit2(&m->z, 15 + 32) != Z_OK) {
        ZSTD_freeDCtx(m->zd);
        m->zd = NULL;
        return -1;
    }
    return 0;
}

int sink_msgs_set_keys(struct sink_msgs *m, char *list)
{
    m->n_keys = 0;
    for (char *save = NULL, *k = strtok_r(list, ",", &save); k; k = strtok_r(NULL, ",", &save)) {
        if (m->n_keys == SINK_MAX_KEYS)
            return -1;
        m->keys[m->n_keys] = k;
        m->key_len[m->n_keys++] = strlen(k);
    }
    return m->n_keys > 0 ? 0 : -1;
}

void sink_msgs_release(struct sink_msgs *m)
{
    sink_buf_release(&m->dec);
    sink_buf_release(&m->str);
    sink_buf_release(&m->inner);
    sink_buf_release(&m->resp);
    if (m->zd) {
        inflateEnd(&m->z);
        ZSTD_freeDCtx(m->zd);
    }
}
