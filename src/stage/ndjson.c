/* ndjson.c - the ndjson stage: a message holding a JSON object becomes event members.
 *
 * Two decoders give the same members. The fast one reads the message once, checks it and
 * renders each top-level value straight into a buffer the state reuses (no allocation in
 * steady state). It takes the common subset only: no \u escapes, no escaped or duplicate
 * keys, no integer over 18 digits, nesting up to 32 levels; for anything else it gives up
 * and the message goes to jansson (a json_t tree per event), which also words every error.
 * Numbers render as jansson's values would: integers as %lld, reals in their shortest %g
 * form that reads back the same (a short plain decimal is already that, and is copied).
 * Members are merged into the event's extra, at the root (target "") or as one object
 * under target:
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
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "logferry/utf8.h"
#include "stage_int.h"

#define NDJSON_MAX_BYTES (1024 * 1024) /* larger messages are not decoded */
#define NDJSON_MAX_DEPTH 64            /* deeper nesting is refused */

struct ndjson_spec {
    struct lf_stage_head head;
    struct lf_stage_target target;
    char *message_key; /* owned; "" = none */
    size_t message_key_len;
    bool overwrite_keys;
    bool add_error_key;
};

/* One top-level member of the decoded object. */
struct nd_member {
    struct lf_str key; /* decoded (the fast decoder takes unescaped keys only) */
    size_t voff;       /* the value as rendered, at vals[voff, voff + vlen) */
    size_t vlen;
    bool is_str;
    bool esc;          /* str is the string's raw body, still escaped */
    struct lf_str str; /* when is_str: the string (decoded unless esc) */
};

struct ndjson_state {
    struct lf_stage_head head;
    struct lf_buf extra;      /* the event's extra, rendered per event and reused */
    struct lf_buf with_error; /* extra plus error.message, when there is one */
    struct lf_buf vals;       /* the top-level values, rendered */
    struct lf_buf tmp;        /* one escaped string, decoded */
    struct lf_buf strs;       /* decoded message_key and @timestamp strings */
    struct nd_member *mem;    /* the object's members in their order */
    size_t n_mem;
    size_t cap_mem;
    struct lf_str *prior;     /* the keys of the event's extra, as found (escaped) */
    size_t n_prior;
    size_t cap_prior;
};

#define ND_FAST_DEPTH 32 /* deeper nesting goes to jansson */
#define ND_FAST_KEYS  64 /* keys of open nested objects held for the duplicate check */
#define ND_FAST_INT   18 /* integer digits that always fit in int64 */
#define ND_FAST_REAL  15 /* significant digits that a double gives back unchanged */

static const struct lf_str encoder_keys[] = { LF_STR_LIT("@timestamp"), LF_STR_LIT("message"),
                                              LF_STR_LIT("log"),        LF_STR_LIT("input"),
                                              LF_STR_LIT("host"),       LF_STR_LIT("fields") };

static bool key_is(const char *key, size_t len, const char *name)
{
    return len == strlen(name) && memcmp(key, name, len) == 0;
}

static bool is_encoder_key(const char *key, size_t len)
{
    for (size_t i = 0; i < sizeof(encoder_keys) / sizeof(encoder_keys[0]); i++) {
        if (len == encoder_keys[i].len && memcmp(key, encoder_keys[i].ptr, len) == 0)
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

/* Makes room for one more element in the array *arr of *cap elements of size bytes, n of
 * them used (doubling). false when out of memory. */
static bool room_for_one(void *arr, size_t *cap, size_t n, size_t size)
{
    if (n < *cap)
        return true;
    size_t ncap = *cap == 0 ? 16 : *cap * 2;
    void *p = realloc(*(void **)arr, ncap * size);
    if (p == NULL)
        return false;
    *(void **)arr = p;
    *cap = ncap;
    return true;
}

/* Appends a member slot to st->mem; NULL when out of memory. */
static struct nd_member *add_member(struct ndjson_state *st)
{
    if (!room_for_one(&st->mem, &st->cap_mem, st->n_mem, sizeof(*st->mem)))
        return NULL;
    struct nd_member *m = &st->mem[st->n_mem++];
    memset(m, 0, sizeof(*m));
    return m;
}

static const struct nd_member *find_member(const struct ndjson_state *st, const char *key,
                                           size_t len)
{
    for (size_t i = 0; i < st->n_mem; i++) {
        if (st->mem[i].key.len == len && memcmp(st->mem[i].key.ptr, key, len) == 0)
            return &st->mem[i];
    }
    return NULL;
}

/* Decodes the raw string body s (simple escapes only, as the fast decoder checked) to b. */
static enum lf_err unescape_to(struct lf_buf *b, struct lf_str s)
{
    enum lf_err err = LF_OK;
    size_t run = 0;
    for (size_t i = 0; i < s.len && !err; i++) {
        if (s.ptr[i] != '\\')
            continue;
        char c = lf_stage__json_simple_escape(s.ptr[i + 1]);
        err = lf_buf_append(b, s.ptr + run, i - run);
        if (!err)
            err = lf_buf_append(b, &c, 1);
        run = ++i + 1;
    }
    return err ? err : lf_buf_append(b, s.ptr + run, s.len - run);
}

/* The string value of m, decoded (into st->strs, which process() sized to the message so
 * that it never moves while the event is out). */
static struct lf_str member_string(struct ndjson_state *st, const struct nd_member *m)
{
    if (!m->esc)
        return m->str;
    size_t start = st->strs.len;
    if (unescape_to(&st->strs, m->str))
        return lf_str_make(NULL, 0);
    return lf_str_make(st->strs.ptr + start, st->strs.len - start);
}

struct nd_parse {
    const char *p;
    const char *end;
    struct ndjson_state *st;
    int depth;
    size_t n_keys;
    struct lf_str keys[ND_FAST_KEYS];
};

static void nd_ws(struct nd_parse *ps)
{
    while (ps->p < ps->end &&
           (*ps->p == ' ' || *ps->p == '\t' || *ps->p == '\n' || *ps->p == '\r'))
        ps->p++;
}

/* Scans the string at ps->p (at its '"'): *raw gets its body, *esc whether it has escapes.
 * false for what jansson would refuse and for \u escapes. */
static bool nd_scan_string(struct nd_parse *ps, struct lf_str *raw, bool *esc)
{
    const unsigned char *p = (const unsigned char *)ps->p + 1;
    const unsigned char *end = (const unsigned char *)ps->end;
    const unsigned char *start = p;
    *esc = false;
    while (p < end) {
        p += lf_stage__json_plain_run((const char *)p, (size_t)(end - p));
        if (p >= end)
            break;
        unsigned char c = *p;
        if (c == '"') {
            *raw = lf_str_make((const char *)start, (size_t)(p - start));
            ps->p = (const char *)p + 1;
            return true;
        }
        if (c >= 0x20 && c < 0x80 && c != '\\') {
            p++;
        } else if (c == '\\') {
            if (end - p < 2 || lf_stage__json_simple_escape((char)p[1]) == 0)
                return false;
            *esc = true;
            p += 2;
        } else if (c < 0x20) {
            return false;
        } else {
            int n = lf_utf8_char(p, (size_t)(end - p));
            if (n <= 0)
                return false;
            p += n;
        }
    }
    return false;
}

/* Appends the string whose raw body is raw, as render_string() would its decoded bytes. */
static bool nd_render_string(struct nd_parse *ps, struct lf_buf *out, struct lf_str raw, bool esc)
{
    if (!esc)
        return render_string(out, raw.ptr, raw.len) == LF_OK;
    struct lf_buf *tmp = &ps->st->tmp;
    lf_buf_reset(tmp);
    return unescape_to(tmp, raw) == LF_OK && render_string(out, tmp->ptr, tmp->len) == LF_OK;
}

static size_t nd_digits(const char *p, const char *end)
{
    size_t n = 0;
    while (p + n < end && p[n] >= '0' && p[n] <= '9')
        n++;
    return n;
}

/* Appends the number at ps->p as jansson's value renders. */
static bool nd_number(struct nd_parse *ps, struct lf_buf *out)
{
    const char *start = ps->p;
    const char *p = start + (*start == '-');
    size_t int_len = nd_digits(p, ps->end);
    if (int_len == 0 || (p[0] == '0' && int_len > 1))
        return false;
    const char *frac = p + int_len;
    size_t frac_len = 0;
    if (frac < ps->end && *frac == '.') {
        frac_len = nd_digits(frac + 1, ps->end);
        if (frac_len == 0)
            return false;
    }
    const char *after = frac_len > 0 ? frac + 1 + frac_len : frac;
    bool exp = after < ps->end && (*after == 'e' || *after == 'E');
    if (exp) {
        after++;
        if (after < ps->end && (*after == '+' || *after == '-'))
            after++;
        size_t exp_len = nd_digits(after, ps->end);
        if (exp_len == 0)
            return false;
        after += exp_len;
    }
    ps->p = after;
    size_t len = (size_t)(after - start);
    if (frac_len == 0 && !exp) { /* an integer */
        if (int_len > ND_FAST_INT)
            return false;
        if (int_len == 1 && p[0] == '0') /* -0 is 0 */
            return lf_buf_append(out, "0", 1) == LF_OK;
        return lf_buf_append(out, start, len) == LF_OK;
    }
    /* A plain decimal of up to 15 significant digits, kept in %g's fixed form (value at
     * least 1e-4 and under 1e15), ending in a non-zero digit or being d.0: %.15g gives it
     * back as it is (with ".0" put back on d.0). */
    const char *fp = frac + 1;
    size_t zeros = 0;
    if (!exp && p[0] == '0') {
        while (zeros < frac_len && fp[zeros] == '0')
            zeros++;
    }
    size_t sig = p[0] == '0' ? frac_len - zeros : int_len + frac_len;
    bool d0 = frac_len == 1 && fp[0] == '0';
    if (!exp && sig <= ND_FAST_REAL && zeros <= 3 && (d0 || fp[frac_len - 1] != '0'))
        return lf_buf_append(out, start, len) == LF_OK;
    char num[64];
    if (len >= sizeof(num))
        return false;
    memcpy(num, start, len);
    num[len] = '\0';
    double v = strtod(num, NULL);
    if (v == HUGE_VAL || v == -HUGE_VAL) /* jansson: real number overflow */
        return false;
    return render_real(out, v) == LF_OK;
}

static bool nd_value(struct nd_parse *ps, struct lf_buf *out);

/* The object or array at ps->p, nested inside the top-level object. */
static bool nd_container(struct nd_parse *ps, struct lf_buf *out)
{
    bool obj = *ps->p == '{';
    char close = obj ? '}' : ']';
    size_t keys0 = ps->n_keys;
    if (++ps->depth > ND_FAST_DEPTH || lf_buf_append(out, ps->p, 1))
        return false;
    ps->p++;
    nd_ws(ps);
    if (ps->p < ps->end && *ps->p == close) {
        ps->p++;
        ps->depth--;
        return lf_buf_append(out, &close, 1) == LF_OK;
    }
    for (;;) {
        if (obj) {
            struct lf_str key;
            bool esc;
            if (ps->p >= ps->end || *ps->p != '"' || !nd_scan_string(ps, &key, &esc) || esc ||
                ps->n_keys == ND_FAST_KEYS)
                return false;
            for (size_t i = keys0; i < ps->n_keys; i++) {
                if (ps->keys[i].len == key.len && memcmp(ps->keys[i].ptr, key.ptr, key.len) == 0)
                    return false; /* a duplicate: jansson keeps the last value */
            }
            ps->keys[ps->n_keys++] = key;
            nd_ws(ps);
            if (ps->p >= ps->end || *ps->p != ':' || !nd_render_string(ps, out, key, false) ||
                lf_buf_append(out, ":", 1))
                return false;
            ps->p++;
            nd_ws(ps);
        }
        if (!nd_value(ps, out))
            return false;
        nd_ws(ps);
        if (ps->p >= ps->end)
            return false;
        char c = *ps->p++;
        if (c == close)
            break;
        if (c != ',' || lf_buf_append(out, ",", 1))
            return false;
        nd_ws(ps);
    }
    ps->n_keys = keys0;
    ps->depth--;
    return lf_buf_append(out, &close, 1) == LF_OK;
}

static bool nd_literal(struct nd_parse *ps, struct lf_buf *out, const char *word)
{
    size_t len = strlen(word);
    if ((size_t)(ps->end - ps->p) < len || memcmp(ps->p, word, len) != 0)
        return false;
    ps->p += len;
    return lf_buf_append(out, word, len) == LF_OK;
}

static bool nd_value(struct nd_parse *ps, struct lf_buf *out)
{
    if (ps->p >= ps->end)
        return false;
    struct lf_str raw;
    bool esc;
    switch (*ps->p) {
    case '{':
    case '[':
        return nd_container(ps, out);
    case '"':
        return nd_scan_string(ps, &raw, &esc) && nd_render_string(ps, out, raw, esc);
    case 't':
        return nd_literal(ps, out, "true");
    case 'f':
        return nd_literal(ps, out, "false");
    case 'n':
        return nd_literal(ps, out, "null");
    default:
        return (*ps->p == '-' || (*ps->p >= '0' && *ps->p <= '9')) && nd_number(ps, out);
    }
}

/* The fast decoder: the members of the object in msg into st->mem, values rendered into
 * st->vals. false when it gave up (the message is left to jansson). */
static bool fast_decode(struct ndjson_state *st, struct lf_str msg)
{
    if (msg.len == 0 || msg.len > NDJSON_MAX_BYTES)
        return false;
    struct nd_parse ps = { msg.ptr, msg.ptr + msg.len, st, 1, 0, { { NULL, 0 } } };
    nd_ws(&ps);
    if (ps.p >= ps.end || *ps.p != '{')
        return false;
    ps.p++;
    nd_ws(&ps);
    if (ps.p >= ps.end)
        return false;
    bool more = *ps.p != '}';
    if (!more)
        ps.p++;
    while (more) {
        struct lf_str key;
        bool esc;
        if (ps.p >= ps.end || *ps.p != '"' || !nd_scan_string(&ps, &key, &esc) || esc ||
            find_member(st, key.ptr, key.len) != NULL)
            return false;
        struct nd_member *m = add_member(st);
        nd_ws(&ps);
        if (m == NULL || ps.p >= ps.end || *ps.p != ':')
            return false;
        ps.p++;
        nd_ws(&ps);
        m->key = key;
        m->voff = st->vals.len;
        if (ps.p < ps.end && *ps.p == '"') {
            m->is_str = true;
            if (!nd_scan_string(&ps, &m->str, &m->esc) ||
                !nd_render_string(&ps, &st->vals, m->str, m->esc))
                return false;
        } else if (!nd_value(&ps, &st->vals)) {
            return false;
        }
        m->vlen = st->vals.len - m->voff;
        nd_ws(&ps);
        if (ps.p >= ps.end)
            return false;
        char c = *ps.p++;
        more = c == ',';
        if (!more && c != '}')
            return false;
        nd_ws(&ps);
    }
    nd_ws(&ps);
    return ps.p == ps.end;
}

/* The members of jansson's obj into st->mem, values rendered into st->vals. */
static enum lf_err tree_members(struct ndjson_state *st, json_t *obj)
{
    enum lf_err err = LF_OK;
    for (void *it = json_object_iter(obj); it != NULL && !err;
         it = json_object_iter_next(obj, it)) {
        struct nd_member *m = add_member(st);
        if (m == NULL)
            return LF_ENOMEM;
        json_t *v = json_object_iter_value(it);
        m->key = lf_str_make(json_object_iter_key(it), json_object_iter_key_len(it));
        m->voff = st->vals.len;
        err = render_value(&st->vals, v);
        m->vlen = st->vals.len - m->voff;
        m->is_str = json_is_string(v);
        if (m->is_str)
            m->str = lf_str_make(json_string_value(v), json_string_length(v));
    }
    return err;
}

/* Notes k as a key of the event's extra. */
static enum lf_err add_prior(struct ndjson_state *st, struct lf_str k)
{
    if (!room_for_one(&st->prior, &st->cap_prior, st->n_prior, sizeof(*st->prior)))
        return LF_ENOMEM;
    st->prior[st->n_prior++] = k;
    return LF_OK;
}

/* lf_stage__extra_has() on the extra copy_prior() went through, without scanning it again. */
static bool prior_has(const struct ndjson_state *st, const char *key, size_t len)
{
    for (size_t i = 0; i < st->n_prior; i++) {
        if (st->prior[i].len == len && memcmp(st->prior[i].ptr, key, len) == 0)
            return true;
    }
    return false;
}

/* Copies the members of prior to b, leaving out those the decoded object replaces, and
 * notes prior's keys. */
static enum lf_err copy_prior(const struct ndjson_spec *sp, struct ndjson_state *st,
                              struct lf_buf *b, struct lf_str prior)
{
    struct lf_str k;
    struct lf_str m;
    enum lf_err err = LF_OK;
    st->n_prior = 0;
    while (!err && lf_stage__json_next_member(&prior, &k, &m)) {
        err = add_prior(st, k);
        if (err)
            break;
        if (sp->overwrite_keys) {
            bool replaced = sp->target.len != 0
                                ? key_is(k.ptr, k.len, sp->target.name)
                                : find_member(st, k.ptr, k.len) != NULL &&
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

static enum lf_err member_key(struct lf_buf *b, const char *key, size_t len)
{
    enum lf_err err = b->len > 0 ? lf_buf_append(b, ",", 1) : LF_OK;
    if (!err)
        err = render_string(b, key, len);
    if (!err)
        err = lf_buf_append(b, ":", 1);
    return err;
}

/* Merges the decoded members (st->mem) into e (extra rendered in b; message and time
 * replaced as the table at the top says). *why is set when @timestamp could not be used. */
static enum lf_err merge(const struct ndjson_spec *sp, struct ndjson_state *st, struct lf_buf *b,
                         struct lf_event *e, const char **why)
{
    struct lf_str prior = e->extra;
    enum lf_err err = copy_prior(sp, st, b, prior);
    const struct nd_member *msg =
        sp->message_key_len != 0 ? find_member(st, sp->message_key, sp->message_key_len)
                                   : NULL;
    if (msg != NULL && !msg->is_str)
        msg = NULL;
    if (msg != NULL)
        e->message = member_string(st, msg);
    if (sp->target.len != 0) {
        if (err || (!sp->overwrite_keys && prior_has(st, sp->target.name, sp->target.len)))
            return err;
        err = member_key(b, sp->target.name, sp->target.len);
        const char *sep = "{";
        for (size_t i = 0; i < st->n_mem && !err; i++) {
            const struct nd_member *m = &st->mem[i];
            err = lf_buf_append_cstr(b, sep);
            if (!err)
                err = render_string(b, m->key.ptr, m->key.len);
            if (!err)
                err = lf_buf_append(b, ":", 1);
            if (!err)
                err = lf_buf_append(b, st->vals.ptr + m->voff, m->vlen);
            sep = ",";
        }
        return err ? err : lf_buf_append_cstr(b, st->n_mem == 0 ? "{}" : "}");
    }
    for (size_t i = 0; i < st->n_mem && !err; i++) {
        const struct nd_member *m = &st->mem[i];
        const char *k = m->key.ptr;
        size_t klen = m->key.len;
        if (m == msg)
            continue;
        if (key_is(k, klen, "@timestamp")) {
            int64_t ns;
            struct lf_str ts = m->is_str ? member_string(st, m) : lf_str_make(NULL, 0);
            if (sp->overwrite_keys && m->is_str && lf_stage__parse_rfc3339(NULL, ts.ptr, ts.len, &ns))
                e->timestamp_ns = ns;
            else if (sp->overwrite_keys)
                *why = "ndjson: @timestamp is not an RFC 3339 string; kept the event time";
            continue;
        }
        unsigned own = sp->overwrite_keys ? agent_member_flag(k, klen) : 0;
        if ((own == 0 && is_encoder_key(k, klen)) ||
            (!sp->overwrite_keys && prior_has(st, k, klen)))
            continue;
        e->flags |= own; /* the encoder leaves out its own member of that name */
        err = member_key(b, k, klen);
        if (!err)
            err = lf_buf_append(b, st->vals.ptr + m->voff, m->vlen);
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

/* Exposed to the tests through stage_int.h: true sends every message to jansson. */
bool lf_stage__ndjson_jansson_only;

static enum lf_err process(const void *spec, void *state, const struct lf_event *ev,
                           int64_t now_ms, const struct lf_stage_out *out)
{
    const struct ndjson_spec *sp = spec;
    struct ndjson_state *st = state;
    (void)now_ms;
    struct lf_event e = *ev;
    char whybuf[64];
    const char *why = NULL;
    json_t *root = NULL;
    st->n_mem = 0;
    lf_buf_reset(&st->vals);
    lf_buf_reset(&st->strs);
    enum lf_err err = lf_buf_grow(&st->strs, ev->message.len);
    bool fast = !err && !lf_stage__ndjson_jansson_only && fast_decode(st, ev->message);
    if (!err && !fast) {
        st->n_mem = 0;
        lf_buf_reset(&st->vals);
        root = decode(ev->message, &why, whybuf, sizeof(whybuf));
        if (root != NULL)
            err = tree_members(st, root);
    }
    if (!err && (fast || root != NULL)) {
        lf_buf_reset(&st->extra);
        err = merge(sp, st, &st->extra, &e, &why);
        e.extra = lf_buf_str(&st->extra);
    }
    if (!err && why != NULL && sp->add_error_key)
        err = add_error(&st->with_error, &e, why);
    if (!err)
        err = out->emit(out->arg, &e);
    json_decref(root);
    return err;
}

#define S struct ndjson_spec
static const struct lf_stage_opt opts[] = {
    LF_STAGE_TEXT("target", LF_STAGE_OPT_TARGET, S, target, u.ndjson.target, "", NULL),
    LF_STAGE_STRING("message_key", S, message_key, message_key_len, u.ndjson.message_key, "",
                    NULL),
    LF_STAGE_VALUE("overwrite_keys", S, overwrite_keys, u.ndjson.overwrite_keys),
    LF_STAGE_VALUE("add_error_key", S, add_error_key, u.ndjson.add_error_key),
    LF_STAGE_OPT_END,
};
#undef S
#define B(f) LF_STAGE_BUF(struct ndjson_state, f)
static const struct lf_stage_slot slots[] = {
    B(extra), B(with_error), B(vals), B(tmp), B(strs),
    LF_STAGE_FREE(struct ndjson_state, mem),
    LF_STAGE_FREE(struct ndjson_state, prior),
    LF_STAGE_SLOT_END,
};
#undef B
static const struct lf_stage_table table = {
    .name = "ndjson",
    .opts = opts,
    .spec_size = sizeof(struct ndjson_spec),
    .state_size = sizeof(struct ndjson_state),
    .slots = slots,
};

const struct lf_stage_ops lf_stage_ndjson = {
    .kind = LF_PARSER_NDJSON,
    LF_STAGE_TABLE_OPS(table),
    .process = process,
};
