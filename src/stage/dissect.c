/* dissect.c - the dissect stage: a tokenizer of literals and %{key} fields splits the
 * message into string members, with no regex (Filebeat's dissect).
 *
 * The tokenizer is compiled once into a leading literal and a list of fields, each with
 * the literal that ends it ("" for the last field, which takes the rest of the line):
 *
 *   '%{ts} %{+ts} %{level->} [%{component}] %{msg}'
 *    prefix ""   fields: ts " ", +ts " ", level " " (padded), component "] ", msg ""
 *
 * Matching walks the message once: each field's value runs up to the first occurrence of
 * its literal (memmem), a padded field (`->`) also skips repeats of that literal, and the
 * last field takes what is left. Field forms:
 *
 *   %{key}      the value becomes member key
 *   %{+key}     appended to key with one space between (`%{+key/2}`: in ordinal order)
 *   %{?key} %{} matched and dropped
 *   %{key->}    as %{key}, then skips repeats of the literal that follows (column padding)
 *
 * Members are strings, in the order their keys first appear, at the root or as one object
 * under target. They meet the event's members as ndjson's do without overwrite_keys: a key
 * "message" replaces the message (ndjson's message_key), the other keys the encoder writes
 * itself (@timestamp, log, input, host, fields) are refused when the config loads, and a
 * key (or target) an earlier stage added already keeps the earlier value. A line that does
 * not fit keeps its message and gets error.message, unless it has an error already.
 * Per event: value slices in an array made at open, members in a buffer the state reuses. */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "stage_int.h"

#define DISSECT_NO_KEY SIZE_MAX

struct dfield {
    size_t key;       /* index in keys, DISSECT_NO_KEY for a skipped field */
    unsigned ordinal; /* %{+key/N}; 0 without */
    bool pad;         /* -> */
    char *delim;      /* owned; the literal ending the field, "" for the last */
    size_t delim_len;
};

struct dkey {
    char *name; /* owned */
    size_t name_len;
    size_t member_len;
    char *member;  /* owned; `"name":"` escaped, ready to append */
    size_t *parts; /* owned; field indexes in append order */
    size_t n_parts;
    bool is_message;
};

struct dissect_spec {
    struct lf_stage_head head;
    char *tokenizer; /* owned; as configured */
    char *prefix;    /* owned; literal before the first field */
    size_t prefix_len;
    struct dfield *fields; /* owned */
    size_t n_fields;
    size_t max_fields; /* the %{ count, for the arrays */
    struct dkey *keys; /* owned */
    size_t n_keys;
    struct lf_stage_target target;
    enum lf_trim trim;
};

struct dissect_state {
    struct lf_stage_head head;
    struct lf_str *vals; /* owned; n_fields slices of the message, made at open */
    struct lf_buf extra; /* the event's extra, rebuilt per event */
    struct lf_buf msg;   /* a joined "message" key */
};

/* Frees what build() made. */
static void release(void *spec)
{
    struct dissect_spec *sp = spec;
    for (size_t i = 0; i < sp->n_fields; i++)
        free(sp->fields[i].delim);
    for (size_t i = 0; i < sp->n_keys; i++) {
        free(sp->keys[i].name);
        free(sp->keys[i].member);
        free(sp->keys[i].parts);
    }
    free(sp->fields);
    free(sp->keys);
    free(sp->prefix);
}

/* Finds or adds key name (len bytes) and gives its index in *idx. */
static enum lf_err add_key(struct dissect_spec *sp,
                           const char *name,
                           size_t len,
                           bool append,
                           size_t *idx,
                           struct lf_errbuf *eb)
{
    for (size_t i = 0; i < sp->n_keys; i++) {
        if (sp->keys[i].name_len == len && memcmp(sp->keys[i].name, name, len) == 0) {
            if (!append)
                return lf_fail(eb, LF_ECONFIG,
                               "dissect: key \"%s\" appears twice; write %%{+%s} to append",
                               sp->keys[i].name, sp->keys[i].name);
            *idx = i;
            return LF_OK;
        }
    }
    struct dkey *k = &sp->keys[sp->n_keys];
    k->name = strndup(name, len);
    if (k->name == NULL)
        return LF_ENOMEM;
    k->name_len = len;
    sp->n_keys++;
    if (sp->target.len == 0 && lf_stage__is_encoder_key(name, len))
        return lf_fail(eb, LF_ECONFIG, "dissect: key \"%s\" is a key every event has already",
                       k->name);
    k->is_message = sp->target.len == 0 && strcmp(k->name, "message") == 0;
    enum lf_err err = lf_stage__member_head(k->name, "\"", &k->member);
    k->member_len = k->member != NULL ? strlen(k->member) : 0;
    k->parts = calloc(sp->max_fields + 1, sizeof(*k->parts));
    if (err || k->parts == NULL)
        return LF_ENOMEM;
    *idx = sp->n_keys - 1;
    return LF_OK;
}

/* Parses the body of one %{...} (len bytes at s) into field f. */
static enum lf_err parse_field(struct dissect_spec *sp,
                               struct dfield *f,
                               size_t fi,
                               const char *s,
                               size_t len,
                               struct lf_errbuf *eb)
{
    bool append = false;
    bool skip = false;
    if (len >= 2 && memcmp(s + len - 2, "->", 2) == 0) {
        f->pad = true;
        len -= 2;
    }
    if (len > 0 && (s[0] == '+' || s[0] == '?')) {
        append = s[0] == '+';
        skip = s[0] == '?';
        s++;
        len--;
    } else if (len > 0 && (s[0] == '*' || s[0] == '&')) {
        return lf_fail(eb, LF_ECONFIG, "dissect: %%{%c...} (reference keys) is not supported",
                       s[0]);
    }
    const char *slash = memchr(s, '/', len);
    if (append && slash != NULL) {
        unsigned long n = 0;
        const char *p = slash + 1;
        if (p == s + len)
            return lf_fail(eb, LF_ECONFIG, "dissect: %%{+key/N} needs a number after /");
        for (; p < s + len; p++) {
            if (*p < '0' || *p > '9' || n > 100000)
                return lf_fail(eb, LF_ECONFIG, "dissect: %%{+key/N} needs a number after /");
            n = n * 10 + (unsigned long)(*p - '0');
        }
        f->ordinal = (unsigned)n;
        len = (size_t)(slash - s);
    }
    f->key = DISSECT_NO_KEY;
    if (skip || len == 0)
        return LF_OK;
    if (memchr(s, '%', len) != NULL || memchr(s, '{', len) != NULL)
        return lf_fail(eb, LF_ECONFIG, "dissect: a field name holds %% or {; is a } missing?");
    enum lf_err err = add_key(sp, s, len, append, &f->key, eb);
    if (err)
        return err;
    /* Insert fi into the key's parts by ordinal, after equal ones (stable). */
    struct dkey *k = &sp->keys[f->key];
    size_t at = k->n_parts;
    while (at > 0 && sp->fields[k->parts[at - 1]].ordinal > f->ordinal) {
        k->parts[at] = k->parts[at - 1];
        at--;
    }
    k->parts[at] = fi;
    k->n_parts++;
    return LF_OK;
}

static size_t count_fields(const char *t)
{
    size_t n = 0;
    for (const char *p = strstr(t, "%{"); p != NULL; p = strstr(p + 2, "%{"))
        n++;
    return n;
}

static enum lf_err parse_tokenizer(struct dissect_spec *sp, const char *t, struct lf_errbuf *eb)
{
    const char *open = strstr(t, "%{");
    if (open == NULL)
        return lf_fail(eb, LF_ECONFIG, "dissect: tokenizer has no %%{key} field");
    sp->prefix_len = (size_t)(open - t);
    sp->prefix = strndup(t, sp->prefix_len);
    if (sp->prefix == NULL)
        return LF_ENOMEM;
    while (open != NULL) {
        const char *close = strchr(open + 2, '}');
        if (close == NULL)
            return lf_fail(eb, LF_ECONFIG, "dissect: %%{ without a closing }");
        size_t fi = sp->n_fields++;
        struct dfield *f = &sp->fields[fi];
        enum lf_err err = parse_field(sp, f, fi, open + 2, (size_t)(close - open - 2), eb);
        if (err)
            return err;
        const char *lit = close + 1;
        open = strstr(lit, "%{");
        f->delim_len = open != NULL ? (size_t)(open - lit) : strlen(lit);
        f->delim = strndup(lit, f->delim_len);
        if (f->delim == NULL)
            return LF_ENOMEM;
        if (open != NULL && f->delim_len == 0)
            return lf_fail(eb, LF_ECONFIG,
                           "dissect: two fields with nothing between them cannot be split");
    }
    if (sp->n_keys == 0)
        return lf_fail(eb, LF_ECONFIG, "dissect: tokenizer keeps no key (all fields skipped)");
    return LF_OK;
}

/* Parses the tokenizer into fields and keys, after the rows. */
static enum lf_err build(void *spec, const struct lf_parser_conf *pc, struct lf_errbuf *eb)
{
    struct dissect_spec *sp = spec;
    (void)pc;
    size_t n = count_fields(sp->tokenizer);
    sp->max_fields = n;
    sp->fields = calloc(n + 1, sizeof(*sp->fields));
    sp->keys = calloc(n + 1, sizeof(*sp->keys));
    if (sp->fields == NULL || sp->keys == NULL)
        return LF_ENOMEM;
    return parse_tokenizer(sp, sp->tokenizer, eb);
}

/* The value slices, one per field. */
static enum lf_err open_vals(const void *spec, void *state)
{
    const struct dissect_spec *sp = spec;
    struct dissect_state *st = state;
    st->vals = calloc(sp->n_fields, sizeof(*st->vals));
    return st->vals != NULL ? LF_OK : LF_ENOMEM;
}

#define S struct dissect_spec
static const struct lf_stage_opt opts[] = {
    LF_STAGE_TEXT("target", LF_STAGE_OPT_TARGET, S, target, u.dissect.target, "", NULL),
    LF_STAGE_TEXT("tokenizer", LF_STAGE_OPT_STRING, S, tokenizer, u.dissect.tokenizer, "", NULL),
    LF_STAGE_VALUE("trim_values", S, trim, u.dissect.trim_values),
    LF_STAGE_OPT_END,
};
#undef S
static const struct lf_stage_slot slots[] = {
    LF_STAGE_FREE(struct dissect_state, vals),
    LF_STAGE_BUF(struct dissect_state, extra),
    LF_STAGE_BUF(struct dissect_state, msg),
    LF_STAGE_SLOT_END,
};
static const struct lf_stage_table table = {
    .name = "dissect",
    .opts = opts,
    .spec_size = sizeof(struct dissect_spec),
    .build = build,
    .release = release,
    .state_size = sizeof(struct dissect_state),
    .slots = slots,
    .open = open_vals,
};

static bool is_blank(char c)
{
    return c == ' ' || c == '\t';
}

static struct lf_str trim(struct lf_str v, enum lf_trim how)
{
    if (how == LF_TRIM_LEFT || how == LF_TRIM_BOTH) {
        while (v.len > 0 && is_blank(v.ptr[0])) {
            v.ptr++;
            v.len--;
        }
    }
    if (how == LF_TRIM_RIGHT || how == LF_TRIM_BOTH) {
        while (v.len > 0 && is_blank(v.ptr[v.len - 1]))
            v.len--;
    }
    return v;
}

/* Splits line into st->vals; false when it does not fit the tokenizer. */
static bool split(const struct dissect_spec *sp, struct dissect_state *st, struct lf_str line)
{
    if (line.ptr == NULL)
        line = lf_str_make("", 0); /* no arithmetic or memcmp on NULL */
    if (line.len < sp->prefix_len || memcmp(line.ptr, sp->prefix, sp->prefix_len) != 0)
        return false;
    const char *p = line.ptr + sp->prefix_len;
    const char *end = line.ptr + line.len;
    for (size_t i = 0; i < sp->n_fields; i++) {
        const struct dfield *f = &sp->fields[i];
        if (f->delim_len == 0) {
            st->vals[i] = trim(lf_str_make(p, (size_t)(end - p)), sp->trim);
            p = end;
            continue;
        }
        const char *d = f->delim_len == 1 ? memchr(p, f->delim[0], (size_t)(end - p))
                                          : memmem(p, (size_t)(end - p), f->delim, f->delim_len);
        if (d == NULL)
            return false;
        st->vals[i] = trim(lf_str_make(p, (size_t)(d - p)), sp->trim);
        p = d + f->delim_len;
        while (f->pad && (size_t)(end - p) >= f->delim_len &&
               memcmp(p, f->delim, f->delim_len) == 0)
            p += f->delim_len;
    }
    return true;
}

/* Appends key k's value (its parts joined by spaces) to b, escaped or raw. */
static enum lf_err
append_value(struct lf_buf *b, const struct dkey *k, const struct lf_str *vals, bool escape)
{
    enum lf_err err = LF_OK;
    for (size_t j = 0; j < k->n_parts && !err; j++) {
        if (j > 0)
            err = lf_buf_append(b, " ", 1);
        if (!err)
            err = escape ? lf_json_escape(b, vals[k->parts[j]])
                         : lf_buf_append_str(b, vals[k->parts[j]]);
    }
    return err;
}

/* Appends the members for the keys to st->extra after prior's; sets e->message for a
 * "message" key. */
static enum lf_err
render(const struct dissect_spec *sp, struct dissect_state *st, struct lf_event *e)
{
    struct lf_buf *b = &st->extra;
    struct lf_str prior = e->extra;
    bool rooted = sp->target.len == 0;
    enum lf_err err;
    if (!lf_stage__open_members(b, prior, &sp->target, &err))
        return err;
    bool first = !rooted || b->len == 0;
    for (size_t i = 0; i < sp->n_keys && !err; i++) {
        const struct dkey *k = &sp->keys[i];
        if (k->is_message) {
            if (k->n_parts == 1) {
                e->message = st->vals[k->parts[0]];
            } else {
                lf_buf_reset(&st->msg);
                err = append_value(&st->msg, k, st->vals, false);
                e->message = lf_buf_str(&st->msg);
            }
            continue;
        }
        if (rooted && prior.len > 0 && lf_stage__extra_has(prior, k->name, k->name_len))
            continue;
        err = first ? LF_OK : lf_buf_append(b, ",", 1);
        if (!err)
            err = lf_buf_append(b, k->member, k->member_len);
        if (!err)
            err = append_value(b, k, st->vals, true);
        if (!err)
            err = lf_buf_append(b, "\"", 1);
        first = false;
    }
    if (!err && !rooted)
        err = lf_buf_append(b, "}", 1);
    return err;
}

static enum lf_err process(const void *spec,
                           void *state,
                           const struct lf_event *ev,
                           int64_t now_ms,
                           const struct lf_stage_out *out)
{
    const struct dissect_spec *sp = spec;
    struct dissect_state *st = state;
    (void)now_ms;
    struct lf_event e = *ev;
    const char *why = NULL;
    lf_buf_reset(&st->extra);
    enum lf_err err;
    if (split(sp, st, ev->message)) {
        err = render(sp, st, &e);
    } else {
        err = lf_buf_append_str(&st->extra, ev->extra);
        why = "dissect: line does not fit the tokenizer";
    }
    return lf_stage__emit_members(&st->extra, ev, &e, why, err, out);
}

const struct lf_stage_ops lf_stage_dissect = {
    .kind = LF_PARSER_DISSECT,
    LF_STAGE_TABLE_OPS(table),
    .process = process,
};
