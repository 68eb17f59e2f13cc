/* kv.c - the kv stage: key=value pairs (logfmt and friends) become string members.
 *
 *   level=warn msg="disk \"/\" at 91%" took_ms=12
 *   └pair┘     └──── quoted value ────┘ └pair─┘   field_split " ", value_split "="
 *
 * One pass over the message: pairs are separated by any byte of field_split (runs count as
 * one); a pair's key runs up to the first value_split, its value to the next field_split
 * byte, or, when it starts with " or ', to the matching unescaped quote, with \" \' \\ \n
 * \r \t unescaped (any other backslash is kept as it is). A pair without value_split, or
 * with an empty key, or with a control character in its key, is skipped. The first
 * occurrence of a key wins.
 *
 * include_keys / exclude_keys select by the key as written; prefix is then put before it.
 * Members are strings, at the root or under target, and meet the event's members as the
 * dissect stage's do (docs/parsers.md): at the root a key "message" replaces the message,
 * the keys the encoder writes itself (@timestamp, log, input, host, fields) are dropped,
 * and keys an earlier stage added keep their value. An unterminated quote takes the rest
 * of the line and adds error.message; so does a line without any pair. A target object
 * that would be empty is left out.
 * Per event: unquoted values go straight into the members buffer; quoted ones through a
 * reused scratch buffer; the keys seen so far in an array grown by doubling and kept. */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "stage_int.h"

struct kv_name {
    char *name; /* owned */
    size_t len;
};

struct kv_spec {
    bool split[256];   /* field_split bytes */
    bool stop[256];    /* field_split bytes and value_split's first byte: a key ends there */
    int split_one;     /* the field_split byte when there is one only, else -1 (memchr) */
    char *value_split; /* owned */
    size_t value_split_len;
    struct kv_name *include; /* owned; empty = all */
    size_t n_include;
    struct kv_name *exclude; /* owned */
    size_t n_exclude;
    char *prefix; /* owned; "" for none */
    size_t prefix_len;
    char *target; /* owned; "" = root */
    size_t target_len;
};

struct kv_state {
    struct lf_buf extra;   /* the event's extra, rebuilt per event */
    struct lf_buf value;   /* a quoted value, unescaped */
    struct lf_buf message; /* a "message" key's value */
    struct lf_stage_names seen; /* keys taken from this line */
};

static const struct lf_str encoder_keys[] = { LF_STR_LIT("@timestamp"), LF_STR_LIT("log"),
                                              LF_STR_LIT("input"), LF_STR_LIT("host"),
                                              LF_STR_LIT("fields") };

static bool in_list(const struct kv_name *list, size_t n, struct lf_str key)
{
    for (size_t i = 0; i < n; i++) {
        if (list[i].len == key.len && memcmp(list[i].name, key.ptr, key.len) == 0)
            return true;
    }
    return false;
}

static bool is_encoder_key(struct lf_str key)
{
    for (size_t i = 0; i < sizeof(encoder_keys) / sizeof(encoder_keys[0]); i++) {
        if (encoder_keys[i].len == key.len && memcmp(encoder_keys[i].ptr, key.ptr, key.len) == 0)
            return true;
    }
    return false;
}

static void free_list(struct kv_name *list, size_t n)
{
    for (size_t i = 0; list != NULL && i < n; i++)
        free(list[i].name);
    free(list);
}

static void free_spec(void *spec)
{
    struct kv_spec *sp = spec;
    if (sp == NULL)
        return;
    free(sp->value_split);
    free_list(sp->include, sp->n_include);
    free_list(sp->exclude, sp->n_exclude);
    free(sp->prefix);
    free(sp->target);
    free(sp);
}

static struct kv_name *copy_list(char *const *list, size_t n)
{
    struct kv_name *out = calloc(n + 1, sizeof(*out));
    for (size_t i = 0; out != NULL && i < n; i++) {
        out[i].name = strdup(list[i]);
        out[i].len = strlen(list[i]);
        if (out[i].name == NULL) {
            free_list(out, i);
            return NULL;
        }
    }
    return out;
}

static enum lf_err compile(const struct lf_parser_conf *pc, void **spec, struct lf_errbuf *eb)
{
    const char *fs = pc->u.kv.field_split != NULL ? pc->u.kv.field_split : " ";
    const char *vs = pc->u.kv.value_split != NULL ? pc->u.kv.value_split : "=";
    const char *target = pc->u.kv.target != NULL ? pc->u.kv.target : "";
    const char *prefix = pc->u.kv.prefix != NULL ? pc->u.kv.prefix : "";
    if (fs[0] == '\0' || vs[0] == '\0')
        return lf_fail(eb, LF_ECONFIG, "kv: field_split and value_split must not be empty");
    for (const char *c = fs; *c != '\0'; c++) {
        if ((unsigned char)*c >= 0x80) /* one byte of a UTF-8 character would cut others */
            return lf_fail(eb, LF_ECONFIG, "kv: field_split takes ASCII characters only");
    }
    if (strpbrk(vs, fs) != NULL)
        return lf_fail(eb, LF_ECONFIG, "kv: value_split \"%s\" holds a field_split byte", vs);
    if (strcmp(target, "message") == 0 || is_encoder_key(lf_str_make(target, strlen(target))))
        return lf_fail(eb, LF_ECONFIG, "kv: target \"%s\" is a key every event has already",
                       target);
    struct kv_spec *sp = calloc(1, sizeof(*sp));
    if (sp == NULL)
        return LF_ENOMEM;
    for (const char *p = fs; *p != '\0'; p++) {
        sp->split[(unsigned char)*p] = true;
        sp->stop[(unsigned char)*p] = true;
    }
    sp->stop[(unsigned char)vs[0]] = true;
    sp->split_one = fs[1] == '\0' ? (unsigned char)fs[0] : -1;
    sp->value_split = strdup(vs);
    sp->value_split_len = strlen(vs);
    sp->include = copy_list(pc->u.kv.include_keys, pc->u.kv.n_include_keys);
    sp->n_include = pc->u.kv.n_include_keys;
    sp->exclude = copy_list(pc->u.kv.exclude_keys, pc->u.kv.n_exclude_keys);
    sp->n_exclude = pc->u.kv.n_exclude_keys;
    sp->prefix = strdup(prefix);
    sp->prefix_len = strlen(prefix);
    sp->target = strdup(target);
    sp->target_len = strlen(target);
    if (sp->value_split == NULL || sp->include == NULL || sp->exclude == NULL ||
        sp->prefix == NULL || sp->target == NULL) {
        free_spec(sp);
        return LF_ENOMEM;
    }
    *spec = sp;
    return LF_OK;
}

static enum lf_err open_state(const void *spec, void **state)
{
    (void)spec;
    struct kv_state *st = calloc(1, sizeof(*st));
    if (st == NULL)
        return LF_ENOMEM;
    lf_buf_init(&st->extra, SIZE_MAX);
    lf_buf_init(&st->value, SIZE_MAX);
    lf_buf_init(&st->message, SIZE_MAX);
    *state = st;
    return LF_OK;
}

static void close_state(void *state)
{
    struct kv_state *st = state;
    if (st == NULL)
        return;
    lf_buf_release(&st->extra);
    lf_buf_release(&st->value);
    lf_buf_release(&st->message);
    free(st->seen.v);
    free(st);
}

/* One pair as found in the line. */
struct pair {
    struct lf_str key;
    struct lf_str value; /* raw: between the quotes for a quoted value */
    bool quoted;
    bool unterminated;
};

/* Reads the value at *p (a quote starts a quoted one) and moves *p past it. */
static void read_value(const struct kv_spec *sp, const char **p, const char *end, struct pair *pr)
{
    const char *s = *p;
    if (s < end && (*s == '"' || *s == '\'')) {
        char q = *s++;
        const char *v = s;
        while (s < end && *s != q)
            s += *s == '\\' && s + 1 < end ? 2 : 1;
        pr->quoted = true;
        pr->unterminated = s >= end;
        pr->value = lf_str_make(v, (size_t)((s < end ? s : end) - v));
        *p = s < end ? s + 1 : end;
        return;
    }
    if (sp->split_one >= 0) {
        s = memchr(s, sp->split_one, (size_t)(end - s));
        s = s != NULL ? s : end;
    }
    while (s < end && !sp->split[(unsigned char)*s])
        s++;
    pr->value = lf_str_make(*p, (size_t)(s - *p));
    *p = s;
}

/* Finds the next pair from *p; false at the end of the line. Tokens without value_split
 * or with an empty key are passed over. */
static bool next_pair(const struct kv_spec *sp, const char **p, const char *end, struct pair *pr)
{
    while (*p < end) {
        while (*p < end && sp->split[(unsigned char)**p])
            (*p)++;
        const char *k = *p;
        while (*p < end) {
            unsigned char c = (unsigned char)**p;
            /* A stop byte that is no field_split is value_split's first byte: with a
             * one-byte value_split (the usual "="), that is the whole of it. */
            if (sp->stop[c] &&
                (sp->split[c] || sp->value_split_len == 1 ||
                 ((size_t)(end - *p) >= sp->value_split_len &&
                  memcmp(*p, sp->value_split, sp->value_split_len) == 0)))
                break;
            (*p)++;
        }
        if (*p >= end || sp->split[(unsigned char)**p] || *p == k) {
            while (*p < end && !sp->split[(unsigned char)**p])
                (*p)++; /* no value_split in this token, or an empty key: skip it */
            continue;
        }
        pr->key = lf_str_make(k, (size_t)(*p - k));
        *p += sp->value_split_len;
        memset(&pr->value, 0, sizeof(pr->value));
        pr->quoted = false;
        pr->unterminated = false;
        read_value(sp, p, end, pr);
        return true;
    }
    return false;
}

/* Unescapes a quoted value into b. */
static enum lf_err unescape(struct lf_buf *b, struct lf_str v)
{
    lf_buf_reset(b);
    enum lf_err err = LF_OK;
    size_t i = 0;
    while (i < v.len && !err) {
        const char *bs = memchr(v.ptr + i, '\\', v.len - i);
        size_t run = bs != NULL ? (size_t)(bs - (v.ptr + i)) : v.len - i;
        err = lf_buf_append(b, v.ptr + i, run);
        i += run;
        if (err || i + 1 >= v.len) {
            if (!err && i < v.len)
                err = lf_buf_append(b, "\\", 1); /* a lone backslash at the end */
            break;
        }
        char c = v.ptr[i + 1];
        const char *out = c == 'n' ? "\n" : c == 't' ? "\t" : c == 'r' ? "\r" : NULL;
        if (out != NULL)
            err = lf_buf_append(b, out, 1);
        else if (c == '"' || c == '\'' || c == '\\')
            err = lf_buf_append(b, &c, 1);
        else
            err = lf_buf_append(b, v.ptr + i, 2);
        i += 2;
    }
    return err;
}

/* True when prefix followed by key spells name (n bytes). */
static bool name_eq(struct lf_str prefix, struct lf_str key, const char *name, size_t n)
{
    return prefix.len + key.len == n && memcmp(name, prefix.ptr, prefix.len) == 0 &&
           memcmp(name + prefix.len, key.ptr, key.len) == 0;
}

/* Whether the member prefix+key may be added to an event whose extra is prior. */
static bool wanted(const struct kv_spec *sp, struct lf_str prior, struct lf_str key)
{
    for (size_t i = 0; i < key.len; i++) {
        if ((unsigned char)key.ptr[i] < 0x20)
            return false; /* a control character names no member (JSON readers refuse NUL) */
    }
    if (sp->n_include > 0 && !in_list(sp->include, sp->n_include, key))
        return false;
    if (in_list(sp->exclude, sp->n_exclude, key))
        return false;
    if (sp->target[0] != '\0')
        return true;
    struct lf_str pre = lf_str_make(sp->prefix, sp->prefix_len);
    for (size_t i = 0; i < sizeof(encoder_keys) / sizeof(encoder_keys[0]); i++) {
        if (name_eq(pre, key, encoder_keys[i].ptr, encoder_keys[i].len))
            return false;
    }
    struct lf_str k;
    struct lf_str m;
    while (lf_stage__json_next_member(&prior, &k, &m)) {
        if (name_eq(pre, key, k.ptr, k.len))
            return false;
    }
    return true;
}

static enum lf_err
add_member(const struct kv_spec *sp, struct kv_state *st, struct pair *pr, bool *first)
{
    struct lf_buf *b = &st->extra;
    struct lf_str v = pr->value;
    enum lf_err err = LF_OK;
    if (pr->quoted) {
        err = unescape(&st->value, v);
        v = lf_buf_str(&st->value);
    }
    err = err ? err : *first ? LF_OK : lf_buf_append(b, ",", 1);
    if (!err)
        err = lf_buf_append(b, "\"", 1);
    if (!err && sp->prefix_len > 0)
        err = lf_json_escape(b, lf_str_make(sp->prefix, sp->prefix_len));
    if (!err)
        err = lf_json_escape(b, pr->key);
    if (!err)
        err = lf_buf_append(b, "\":\"", 3);
    if (!err)
        err = lf_json_escape(b, v);
    if (!err)
        err = lf_buf_append(b, "\"", 1);
    *first = false;
    return err;
}

/* Sets the message from a root "message" pair. */
static enum lf_err set_message(struct kv_state *st, struct pair *pr, struct lf_event *e)
{
    if (!pr->quoted) {
        e->message = pr->value;
        return LF_OK;
    }
    enum lf_err err = unescape(&st->message, pr->value);
    e->message = lf_buf_str(&st->message);
    return err;
}

/* Renders the pairs of e's message after its prior extra; *why on a problem. */
static enum lf_err
render(const struct kv_spec *sp, struct kv_state *st, struct lf_event *e, const char **why)
{
    struct lf_buf *b = &st->extra;
    struct lf_str prior = e->extra;
    struct lf_str line = e->message.ptr != NULL ? e->message : lf_str_make("", 0);
    bool rooted = sp->target[0] == '\0';
    enum lf_err err = lf_buf_append_str(b, prior);
    size_t open_at = b->len;
    if (!rooted && !err) {
        if (b->len > 0)
            err = lf_buf_append(b, ",", 1);
        if (!err)
            err = lf_buf_append(b, "\"", 1);
        if (!err)
            err = lf_json_escape(b, lf_str_make(sp->target, sp->target_len));
        if (!err)
            err = lf_buf_append(b, "\":{", 3);
    }
    bool first = !rooted || b->len == 0;
    size_t n_pairs = 0;
    st->seen.n = 0;
    const char *p = line.ptr;
    const char *end = line.ptr + line.len;
    struct pair pr;
    while (!err && next_pair(sp, &p, end, &pr)) {
        n_pairs++;
        if (pr.unterminated)
            *why = "kv: a quoted value has no closing quote; it takes the rest of the line";
        if (!wanted(sp, prior, pr.key) || !lf_stage__names_take(&st->seen, 0, pr.key, &err))
            continue;
        if (rooted && name_eq(lf_str_make(sp->prefix, sp->prefix_len), pr.key, "message", 7))
            err = set_message(st, &pr, e);
        else
            err = add_member(sp, st, &pr, &first);
    }
    if (!err && !rooted) {
        if (first || lf_stage__extra_has(prior, sp->target, sp->target_len))
            b->len = open_at; /* nothing to add, or an earlier stage's member of that name */
        else
            err = lf_buf_append(b, "}", 1);
    }
    if (!err && n_pairs == 0)
        *why = "kv: no key=value pair in the line";
    return err;
}

static enum lf_err process(const void *spec,
                           void *state,
                           const struct lf_event *ev,
                           int64_t now_ms,
                           const struct lf_stage_out *out)
{
    const struct kv_spec *sp = spec;
    struct kv_state *st = state;
    (void)now_ms;
    struct lf_event e = *ev;
    const char *why = NULL;
    lf_buf_reset(&st->extra);
    enum lf_err err = render(sp, st, &e, &why);
    if (!err && why != NULL && !lf_stage__extra_has(ev->extra, "error", 5))
        err = lf_stage__append_error(&st->extra, why);
    e.extra = lf_buf_str(&st->extra);
    return err ? err : out->emit(out->arg, &e);
}

const struct lf_stage_ops lf_stage_kv = {
    .kind = LF_PARSER_KV,
    .compile = compile,
    .free_spec = free_spec,
    .open = open_state,
    .close = close_state,
    .process = process,
};
