/* regex.c - the regex stage: a PCRE2 pattern's named groups become members.
 *
 *   pattern '^(?<ip>\S+) took (?<ms:int>\d+)ms'   types {ok: bool}
 *            └ group ip ┘      └ group ms, an int ┘
 *
 * Compiled once per input: a group name may end in `:int`, `:float`, `:bool` or `:string`
 * (PCRE2 names cannot hold ':', so the suffix is cut before compiling, and an error offset
 * is moved back to the pattern as written), or the `types` map names the type. Then
 * pcre2_compile (UTF, invalid UTF-8 in subjects allowed) and pcre2_jit_compile. The named
 * groups are read from PCRE2's name table once and kept in group order, each with its
 * `"name":` head and its type.
 *
 * Per event: one match against the message (or the string member `field`) with the match
 * data made at open; each group that took part becomes a member, in group order: a string,
 * or for typed groups a JSON number or true/false. A value that does not convert stays a
 * string and the event gets error.message. Members go at the root or under target and meet
 * the event's members as dissect's do (docs/parsers.md): at the root a group "message"
 * replaces the message, groups named as the encoder's own keys are refused at load, and a
 * key an earlier stage added keeps its value. A line that does not match is kept with
 * error.message (on_failure keep), dropped and counted as filtered (drop), or kept as it is
 * (keep_silent). Buffers are reused: no allocation per event once they have grown. */
#include "config.h"

#define PCRE2_CODE_UNIT_WIDTH 8

#include <errno.h>
#include <jansson.h>
#include <math.h>
#include <pcre2.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "stage_int.h"

enum rtype {
    RT_STRING = 0,
    RT_INT,
    RT_FLOAT,
    RT_BOOL
};

static const char *const type_names[] = { "string", "int", "float", "bool" };

struct rgroup {
    uint32_t number;
    char *name; /* owned */
    size_t name_len;
    enum rtype type;
    bool is_message; /* at the root: replaces the message */
    char *bad;       /* owned; the error text when the value does not convert */
};

struct regex_spec {
    struct lf_stage_head head;
    char *pattern; /* owned; as configured */
    json_t *types; /* owned; the types map, or NULL */
    pcre2_code *re;
    bool jit;
    struct rgroup *groups; /* owned; in group order */
    size_t n_groups;
    char *field; /* owned; "message" or a dotted member path */
    size_t field_len;
    bool on_message;
    struct lf_stage_target target;
    enum lf_on_failure on_failure;
};

struct regex_state {
    struct lf_stage_head head;
    pcre2_match_data *md;
    struct lf_buf extra;   /* the event's extra, rebuilt per event */
    struct lf_buf subject; /* a string member's value, unescaped */
};

/* A `:type` cut from the pattern: at offset at of the cut pattern, cut bytes went. */
struct cut {
    size_t at;
    size_t len;
};

/* A group name and its type as the pattern writes them. */
struct named {
    char name[64];
    enum rtype type;
    bool typed;
};

struct scan {
    char *out; /* the pattern without type suffixes; owned */
    size_t len;
    struct cut *cuts; /* owned */
    size_t n_cuts;
    struct named *names; /* owned; typed names only */
    size_t n_names;
};

static void free_scan(struct scan *s)
{
    free(s->out);
    free(s->cuts);
    free(s->names);
}

/* Frees what build() made. */
static void release(void *spec)
{
    struct regex_spec *sp = spec;
    pcre2_code_free(sp->re);
    for (size_t i = 0; sp->groups != NULL && i < sp->n_groups; i++) {
        free(sp->groups[i].name);
        free(sp->groups[i].bad);
    }
    free(sp->groups);
}

static bool type_of(const char *s, size_t n, enum rtype *t)
{
    for (size_t i = 0; i < sizeof(type_names) / sizeof(type_names[0]); i++) {
        if (strlen(type_names[i]) == n && memcmp(type_names[i], s, n) == 0) {
            *t = (enum rtype)i;
            return true;
        }
    }
    return false;
}

static bool is_word(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
}

/* Length of a group opener at p that names a group ("(?<", "(?P<", "(?'"), else 0. */
static size_t name_opener(const char *p, const char *end, char *close)
{
    size_t n = (size_t)(end - p);
    size_t len = 0;
    if (n >= 3 && memcmp(p, "(?<", 3) == 0)
        len = 3, *close = '>';
    else if (n >= 4 && memcmp(p, "(?P<", 4) == 0)
        len = 4, *close = '>';
    else if (n >= 3 && memcmp(p, "(?'", 3) == 0)
        len = 3, *close = '\'';
    /* (?<= and (?<! are lookbehinds: a name starts with a letter or '_'. */
    if (len == 0 || len >= n || !is_word(p[len]) || (p[len] >= '0' && p[len] <= '9'))
        return 0;
    return len;
}

/* Copies pattern into s->out without the `:type` suffixes of group names, noting where
 * each was cut and which names were typed. Escapes, \Q..\E and [...] classes are passed
 * over, so their text is never taken for a group. */
static enum lf_err cut_types(const char *pattern, struct scan *s, struct lf_errbuf *eb)
{
    size_t n = strlen(pattern);
    s->out = malloc(n + 1);
    s->cuts = calloc(n / 4 + 1, sizeof(*s->cuts));
    s->names = calloc(n / 4 + 1, sizeof(*s->names));
    if (s->out == NULL || s->cuts == NULL || s->names == NULL)
        return LF_ENOMEM;
    const char *p = pattern;
    const char *end = pattern + n;
    bool in_class = false;
    while (p < end) {
        char close = '\0';
        size_t open = in_class ? 0 : name_opener(p, end, &close);
        if (*p == '\\' && p + 1 < end && p[1] == 'Q') {
            const char *e = strstr(p + 2, "\\E");
            const char *stop = e != NULL ? e + 2 : end;
            memcpy(s->out + s->len, p, (size_t)(stop - p));
            s->len += (size_t)(stop - p);
            p = stop;
        } else if (*p == '\\') {
            size_t k = p + 1 < end ? 2 : 1;
            memcpy(s->out + s->len, p, k);
            s->len += k;
            p += k;
        } else if (open > 0) {
            const char *name = p + open;
            const char *q = name;
            while (q < end && is_word(*q))
                q++;
            memcpy(s->out + s->len, p, (size_t)(q - p));
            s->len += (size_t)(q - p);
            if (q < end && *q == ':') {
                const char *t = q + 1;
                const char *te = t;
                while (te < end && *te != close && is_word(*te))
                    te++;
                struct named *nm = &s->names[s->n_names];
                if ((size_t)(q - name) >= sizeof(nm->name))
                    return lf_fail(eb, LF_ECONFIG, "regex: a group name is over 63 characters");
                if (te >= end || *te != close || !type_of(t, (size_t)(te - t), &nm->type))
                    return lf_fail(eb, LF_ECONFIG,
                                   "regex: group \"%.*s\" has type \"%.*s\": expected int, "
                                   "float, bool or string",
                                   (int)(q - name), name, (int)(te - t), t);
                memcpy(nm->name, name, (size_t)(q - name));
                nm->typed = true;
                s->n_names++;
                s->cuts[s->n_cuts++] = (struct cut){ s->len, (size_t)(te - q) };
                q = te;
            }
            p = q;
        } else {
            if (*p == '[' && !in_class) {
                in_class = true;
                s->out[s->len++] = *p++;
                if (p < end && *p == '^')
                    s->out[s->len++] = *p++;
                if (p < end && *p == ']') /* a ']' first in a class is a literal */
                    s->out[s->len++] = *p++;
                continue;
            }
            if (*p == ']')
                in_class = false;
            s->out[s->len++] = *p++;
        }
    }
    s->out[s->len] = '\0';
    return LF_OK;
}

/* The offset in the pattern as written of offset off in the cut one. */
static size_t written_offset(const struct scan *s, size_t off)
{
    size_t add = 0;
    for (size_t i = 0; i < s->n_cuts && s->cuts[i].at < off; i++)
        add += s->cuts[i].len;
    return off + add;
}

/* The type of name from the pattern's suffixes, then the types map; RT_STRING without. */
static enum lf_err group_type(
    const struct scan *s, json_t *types, const char *name, enum rtype *t, struct lf_errbuf *eb)
{
    *t = RT_STRING;
    for (size_t i = 0; i < s->n_names; i++) {
        if (strcmp(s->names[i].name, name) == 0)
            *t = s->names[i].type;
    }
    json_t *v = types != NULL ? json_object_get(types, name) : NULL;
    if (v == NULL)
        return LF_OK;
    const char *tn = json_string_value(v);
    if (tn == NULL || !type_of(tn, strlen(tn), t))
        return lf_fail(eb, LF_ECONFIG, "regex: types: \"%s\" must be int, float, bool or string",
                       name);
    return LF_OK;
}

static enum lf_err check_types_map(const struct regex_spec *sp, json_t *types, struct lf_errbuf *eb)
{
    if (types == NULL)
        return LF_OK;
    const char *key;
    json_t *v;
    json_object_foreach(types, key, v)
    {
        bool known = false;
        for (size_t i = 0; i < sp->n_groups && !known; i++)
            known = strcmp(sp->groups[i].name, key) == 0;
        if (!known)
            return lf_fail(eb, LF_ECONFIG, "regex: types: \"%s\" is no named group of the pattern",
                           key);
    }
    return LF_OK;
}

static int by_number(const void *a, const void *b)
{
    const struct rgroup *x = a;
    const struct rgroup *y = b;
    return x->number < y->number ? -1 : x->number > y->number;
}

/* Reads the named groups from PCRE2's name table into sp->groups, in group order. */
static enum lf_err
read_groups(struct regex_spec *sp, const struct scan *s, json_t *types, struct lf_errbuf *eb)
{
    uint32_t count = 0;
    uint32_t size = 0;
    PCRE2_SPTR table = NULL;
    if (pcre2_pattern_info(sp->re, PCRE2_INFO_NAMECOUNT, &count) != 0 ||
        pcre2_pattern_info(sp->re, PCRE2_INFO_NAMEENTRYSIZE, &size) != 0 ||
        pcre2_pattern_info(sp->re, PCRE2_INFO_NAMETABLE, &table) != 0)
        return lf_fail(eb, LF_ECONFIG, "regex: cannot read the pattern's group names");
    sp->groups = calloc(count + 1, sizeof(*sp->groups));
    if (sp->groups == NULL)
        return LF_ENOMEM;
    bool rooted = sp->target.len == 0;
    for (uint32_t i = 0; i < count; i++) {
        PCRE2_SPTR e = table + (size_t)i * size;
        struct rgroup *g = &sp->groups[sp->n_groups++];
        g->number = (uint32_t)e[0] << 8 | e[1];
        g->name = strdup((const char *)e + 2);
        if (g->name == NULL)
            return LF_ENOMEM;
        g->name_len = strlen(g->name);
        enum lf_err err = group_type(s, types, g->name, &g->type, eb);
        if (err)
            return err;
        if (rooted && lf_stage__is_encoder_key(g->name, g->name_len))
            return lf_fail(eb, LF_ECONFIG, "regex: group \"%s\" is a key every event has already",
                           g->name);
        g->is_message = rooted && strcmp(g->name, "message") == 0;
        if (g->is_message && g->type != RT_STRING)
            return lf_fail(eb, LF_ECONFIG,
                           "regex: group \"message\" replaces the message: it "
                           "cannot have a type");
        char bad[128];
        snprintf(bad, sizeof(bad), "regex: group %s is not %s %s", g->name,
                 g->type == RT_INT ? "an" : "a", type_names[g->type]);
        g->bad = strdup(bad);
        if (g->bad == NULL)
            return LF_ENOMEM;
    }
    qsort(sp->groups, sp->n_groups, sizeof(*sp->groups), by_number);
    return check_types_map(sp, types, eb);
}

static enum lf_err
compile_pattern(struct regex_spec *sp, const char *pattern, json_t *types, struct lf_errbuf *eb)
{
    struct scan s = { 0 };
    enum lf_err err = cut_types(pattern, &s, eb);
    if (!err) {
        char why[256];
        size_t off = 0;
        sp->re = lf_stage__pcre2(s.out, s.len,
                                 PCRE2_UTF | PCRE2_MATCH_INVALID_UTF | PCRE2_NEVER_BACKSLASH_C,
                                 &sp->jit, why, sizeof(why), &off);
        if (sp->re == NULL)
            err = lf_fail(eb, LF_ECONFIG, "regex: invalid pattern: %s at offset %zu", why,
                          written_offset(&s, off));
    }
    if (!err)
        err = read_groups(sp, &s, types, eb);
    free_scan(&s);
    return err;
}

/* Compiles the pattern and reads its groups, after the rows. */
static enum lf_err build(void *spec, const struct lf_parser_conf *pc, struct lf_errbuf *eb)
{
    struct regex_spec *sp = spec;
    (void)pc;
    sp->on_message = strcmp(sp->field, "message") == 0;
    return compile_pattern(sp, sp->pattern, sp->types, eb);
}

/* The match data, sized for the pattern's groups. */
static enum lf_err open_md(const void *spec, void *state)
{
    const struct regex_spec *sp = spec;
    struct regex_state *st = state;
    st->md = pcre2_match_data_create_from_pattern(sp->re, NULL);
    return st->md != NULL ? LF_OK : LF_ENOMEM;
}

static void close_md(void *state)
{
    struct regex_state *st = state;
    pcre2_match_data_free(st->md);
}

#define S struct regex_spec
static const struct lf_stage_opt opts[] = {
    LF_STAGE_TEXT("pattern", LF_STAGE_OPT_STRING, S, pattern, u.regex.pattern, "",
                  "pattern must not be empty"),
    LF_STAGE_STRING("field", S, field, field_len, u.regex.field, "message", NULL),
    LF_STAGE_TEXT("target", LF_STAGE_OPT_TARGET, S, target, u.regex.target, "", NULL),
    LF_STAGE_VALUE("on_failure", S, on_failure, u.regex.on_failure),
    LF_STAGE_TEXT("types", LF_STAGE_OPT_JSON, S, types, u.regex.types_json, NULL,
                  "types must be a mapping of group: type"),
    LF_STAGE_OPT_END,
};
#undef S
static const struct lf_stage_slot slots[] = {
    LF_STAGE_BUF(struct regex_state, extra),
    LF_STAGE_BUF(struct regex_state, subject),
    LF_STAGE_SLOT_END,
};
static const struct lf_stage_table table = {
    .name = "regex",
    .opts = opts,
    .spec_size = sizeof(struct regex_spec),
    .build = build,
    .release = release,
    .state_size = sizeof(struct regex_state),
    .slots = slots,
    .open = open_md,
    .close = close_md,
};

/* Appends v as a JSON integer; false (nothing appended) when it is not one that int64
 * holds: an optional sign and 1 to 19 digits. Leading zeros are dropped. */
static bool put_int(struct lf_buf *b, struct lf_str v, enum lf_err *err)
{
    size_t i = 0;
    bool neg = false;
    if (v.len > 0 && (v.ptr[0] == '-' || v.ptr[0] == '+'))
        neg = v.ptr[i++] == '-';
    if (i == v.len)
        return false;
    uint64_t u = 0;
    for (; i < v.len; i++) {
        unsigned d = (unsigned)(unsigned char)v.ptr[i] - '0';
        if (d > 9 || u > (UINT64_MAX - d) / 10)
            return false;
        u = u * 10 + d;
    }
    if (u > (uint64_t)INT64_MAX + (neg ? 1 : 0))
        return false;
    *err = lf_stage__append_int(b, neg ? (int64_t)(0 - u) : (int64_t)u);
    return true;
}

/* True when v is a number as JSON writes it. */
static bool json_number(struct lf_str v)
{
    const char *p = v.ptr;
    const char *end = v.ptr + v.len;
    if (p < end && *p == '-')
        p++;
    if (p >= end || *p < '0' || *p > '9')
        return false;
    if (*p == '0')
        p++;
    else
        while (p < end && *p >= '0' && *p <= '9')
            p++;
    if (p < end && *p == '.') {
        if (++p >= end || *p < '0' || *p > '9')
            return false;
        while (p < end && *p >= '0' && *p <= '9')
            p++;
    }
    if (p < end && (*p == 'e' || *p == 'E')) {
        p++;
        if (p < end && (*p == '+' || *p == '-'))
            p++;
        if (p >= end || *p < '0' || *p > '9')
            return false;
        while (p < end && *p >= '0' && *p <= '9')
            p++;
    }
    return p == end;
}

/* Appends v as a JSON number: as written when it is one already and JSON readers take it
 * as it is (a fraction or exponent, or an integer of at most 18 digits), else (`+1.5`,
 * `.5`, `7.`, `007`, 50 digits) as the shortest text that reads back to the same double;
 * false (nothing appended) for anything else, and for values a double does not hold
 * (infinities, overflow and underflow). */
static bool put_float(struct lf_buf *b, struct lf_str v, enum lf_err *err)
{
    char text[128];
    bool real = false; /* has a fraction or an exponent */
    size_t digits = 0;
    if (v.len == 0 || v.len >= sizeof(text))
        return false;
    for (size_t i = 0; i < v.len; i++) {
        char c = v.ptr[i];
        if (c >= '0' && c <= '9')
            digits++;
        else if (c == '.' || c == 'e' || c == 'E')
            real = true;
        else if (c != '+' && c != '-')
            return false;
    }
    memcpy(text, v.ptr, v.len);
    text[v.len] = '\0';
    char *end = NULL;
    errno = 0;
    double d = strtod(text, &end);
    if (end != text + v.len || !isfinite(d) || errno == ERANGE)
        return false;
    if (json_number(v) && (real || digits <= 18)) {
        *err = lf_buf_append_str(b, v);
        return true;
    }
    char out[32];
    for (int prec = 1; prec <= 17; prec++) {
        snprintf(out, sizeof(out), "%.*g", prec, d);
        if (strtod(out, NULL) == d)
            break;
    }
    if (!json_number(lf_str_make(out, strlen(out))))
        return false;
    *err = lf_buf_append_cstr(b, out);
    return true;
}

static bool word_is(struct lf_str v, const char *w)
{
    size_t n = strlen(w);
    if (v.len != n)
        return false;
    for (size_t i = 0; i < n; i++) {
        char c = v.ptr[i];
        if ((c >= 'A' && c <= 'Z' ? (char)(c + 32) : c) != w[i])
            return false;
    }
    return true;
}

/* Appends true or false for true/false (any case), 1 or 0; false for anything else. */
static bool put_bool(struct lf_buf *b, struct lf_str v, enum lf_err *err)
{
    bool t = word_is(v, "true") || word_is(v, "1");
    if (!t && !word_is(v, "false") && !word_is(v, "0"))
        return false;
    *err = t ? lf_buf_append(b, "true", 4) : lf_buf_append(b, "false", 5);
    return true;
}

/* Appends group g's member with value v; *why when a typed value did not convert. */
static enum lf_err
put_member(struct lf_buf *b, const struct rgroup *g, struct lf_str v, bool *first, const char **why)
{
    enum lf_err err = lf_stage__append_key(b, first, g->name, g->name_len);
    if (err)
        return err;
    bool done = false;
    if (g->type == RT_INT)
        done = put_int(b, v, &err);
    else if (g->type == RT_FLOAT)
        done = put_float(b, v, &err);
    else if (g->type == RT_BOOL)
        done = put_bool(b, v, &err);
    if (done || err)
        return err;
    if (g->type != RT_STRING && *why == NULL)
        *why = g->bad;
    err = lf_buf_append(b, "\"", 1);
    if (!err)
        err = lf_json_escape(b, v);
    return err ? err : lf_buf_append(b, "\"", 1);
}

/* Renders the matched groups after e's prior extra into st->extra. */
static enum lf_err render(const struct regex_spec *sp,
                          struct regex_state *st,
                          struct lf_str subject,
                          struct lf_event *e,
                          const char **why)
{
    struct lf_buf *b = &st->extra;
    struct lf_str prior = e->extra;
    bool rooted = sp->target.len == 0;
    size_t open_at = b->len + prior.len; /* past prior: where an empty target object starts */
    enum lf_err err;
    if (!lf_stage__open_members(b, prior, &sp->target, &err))
        return err;
    size_t body_at = b->len;
    bool first = !rooted || b->len == 0;
    const PCRE2_SIZE *ov = pcre2_get_ovector_pointer(st->md);
    for (size_t i = 0; i < sp->n_groups && !err; i++) {
        const struct rgroup *g = &sp->groups[i];
        PCRE2_SIZE s = ov[2 * g->number];
        PCRE2_SIZE t = ov[2 * g->number + 1];
        if (s == PCRE2_UNSET || t < s)
            continue; /* the group took no part in the match */
        struct lf_str v = lf_str_make(subject.ptr + s, t - s);
        if (g->is_message)
            e->message = v;
        else if (!rooted || prior.len == 0 || !lf_stage__extra_has(prior, g->name, g->name_len))
            err = put_member(b, g, v, &first, why);
    }
    if (!err && !rooted) {
        if (b->len == body_at)
            b->len = open_at; /* an empty object is left out */
        else
            err = lf_buf_append(b, "}", 1);
    }
    return err;
}

/* The text to match in *subject: the message, or the string member field. */
static bool find_subject(const struct regex_spec *sp,
                         struct regex_state *st,
                         const struct lf_event *ev,
                         struct lf_str *subject)
{
    if (sp->on_message) {
        *subject = ev->message.ptr != NULL ? ev->message : lf_str_make("", 0);
        return true;
    }
    struct lf_str m;
    struct lf_str v;
    if (!lf_stage__json_find(ev->extra, lf_str_make(sp->field, sp->field_len), &m, &v) ||
        v.len < 2 || v.ptr[0] != '"' || v.ptr[v.len - 1] != '"')
        return false;
    lf_buf_reset(&st->subject);
    if (!lf_stage__json_unescape(lf_str_make(v.ptr + 1, v.len - 2), &st->subject))
        return false;
    *subject = lf_buf_str(&st->subject);
    if (subject->ptr == NULL)
        *subject = lf_str_make("", 0);
    return true;
}

static enum lf_err process(const void *spec,
                           void *state,
                           const struct lf_event *ev,
                           int64_t now_ms,
                           const struct lf_stage_out *out)
{
    const struct regex_spec *sp = spec;
    struct regex_state *st = state;
    (void)now_ms;
    struct lf_event e = *ev;
    struct lf_str subject;
    const char *why = NULL;
    int rc = PCRE2_ERROR_NOMATCH;
    if (find_subject(sp, st, ev, &subject)) {
        rc = sp->jit
                 ? pcre2_jit_match(sp->re, (PCRE2_SPTR)subject.ptr, subject.len, 0, 0, st->md, NULL)
                 : pcre2_match(sp->re, (PCRE2_SPTR)subject.ptr, subject.len, 0, 0, st->md, NULL);
    } else {
        why = "regex: the field to match is not a string member of the event";
    }
    lf_buf_reset(&st->extra);
    enum lf_err err = LF_OK;
    if (rc > 0) {
        err = render(sp, st, subject, &e, &why);
    } else if (sp->on_failure == LF_ON_FAILURE_DROP) {
        e.flags |= LF_EVENT_DROPPED;
        return out->emit(out->arg, &e);
    } else if (sp->on_failure == LF_ON_FAILURE_KEEP_SILENT) {
        return out->emit(out->arg, ev);
    } else {
        err = lf_buf_append_str(&st->extra, ev->extra);
        if (why == NULL)
            why = rc == PCRE2_ERROR_NOMATCH ? "regex: the pattern does not match"
                                            : "regex: matching gave up (a PCRE2 limit)";
    }
    return lf_stage__emit_members(&st->extra, ev, &e, why, err, out);
}

const struct lf_stage_ops lf_stage_regex = {
    .kind = LF_PARSER_REGEX,
    LF_STAGE_TABLE_OPS(table),
    .process = process,
};
