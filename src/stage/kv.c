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
 * Per event: the line is sorted into byte classes 64 bytes at a time (struct scan; SSE2
 * tests 16 bytes a step, a table does lines under 16 bytes): field_split bytes, the end of
 * a key, what ends a quoted value, and the bytes JSON escapes. Keys and values then end at
 * the lowest bit set from where they start, and a pair none of whose bytes JSON escapes is
 * copied into the members as it is; only one holding such a byte goes through
 * lf_json_escape(), and a quoted value through a reused scratch buffer only when it holds
 * a backslash. The keys seen so far, and those of the earlier stages' members (read once
 * per event), are kept in arrays grown by doubling. */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#ifdef __SSE2__
#include <emmintrin.h>
#endif

#include "stage_int.h"

/* The classes of bytes the line is sorted into (struct scan). */
enum {
    C_SPLIT = 1,  /* a field_split byte */
    C_VS = 2,     /* value_split's first byte */
    C_QUOTE = 4,  /* '"' or '\'' */
    C_BSLASH = 8, /* '\\' */
    C_JSON = 16   /* a byte lf_json_escape() may change: control, '"', '\\', 0xE2 */
};

struct kv_spec {
    struct lf_stage_head head;
    char *field_split;      /* owned */
    bool split[256];        /* field_split bytes */
    unsigned char cls[256]; /* each byte's classes (C_*), for lines under 16 bytes */
    char split_bytes[128];  /* the field_split bytes, each once */
    size_t n_split_bytes;
    char *value_split; /* owned */
    size_t value_split_len;
    struct lf_stage_name *include; /* owned; empty = all */
    size_t n_include;
    uint64_t include_bits;         /* lf_stage__names_bit() of each: a key without one is not in */
    struct lf_stage_name *exclude; /* owned */
    size_t n_exclude;
    uint64_t exclude_bits;
    char *prefix; /* owned; "" for none */
    size_t prefix_len;
    struct lf_buf prefix_json; /* prefix escaped for a JSON string */
    struct lf_stage_target target;
    /* At the root, the keys as written whose member would name one of the encoder's (the
     * rest of that name after prefix) or "message" (the message key): what wanted() and
     * render() compare with, instead of prefix + key. */
    struct lf_str drop[5];
    size_t n_drop;
    uint64_t drop_bits;        /* lf_stage__names_bit() of each */
    struct lf_str message_key; /* ptr NULL when prefix is not the start of "message" */
};

struct kv_state {
    struct lf_stage_head head;
    struct lf_buf extra;         /* the event's extra, rebuilt per event */
    struct lf_buf value;         /* a quoted value, unescaped */
    struct lf_buf message;       /* a "message" key's value */
    struct lf_stage_names seen;  /* keys taken from this line */
    struct lf_stage_names prior; /* the keys of the event's members before the stage */
};

static const struct lf_str encoder_keys[] = { LF_STR_LIT("@timestamp"), LF_STR_LIT("log"),
                                              LF_STR_LIT("input"), LF_STR_LIT("host"),
                                              LF_STR_LIT("fields") };

/* True when key is in the list, whose names have the bits set in bits. */
static inline bool
in_list(const struct lf_stage_name *list, size_t n, uint64_t bits, struct lf_str key)
{
    if ((bits & lf_stage__names_bit(key)) == 0)
        return false;
    for (size_t i = 0; i < n; i++) {
        if (list[i].len == key.len && memcmp(list[i].name, key.ptr, key.len) == 0)
            return true;
    }
    return false;
}

static uint64_t list_bits(const struct lf_stage_name *list, size_t n)
{
    uint64_t bits = 0;
    for (size_t i = 0; list != NULL && i < n; i++)
        bits |= lf_stage__names_bit(lf_str_make(list[i].name, list[i].len));
    return bits;
}

/* Fills sp->drop and sp->message_key from sp->prefix. */
static void root_keys(struct kv_spec *sp)
{
    struct lf_str pre = lf_str_make(sp->prefix, sp->prefix_len);
    for (size_t i = 0; i < sizeof(encoder_keys) / sizeof(encoder_keys[0]); i++) {
        struct lf_str k = encoder_keys[i];
        if (k.len >= pre.len && memcmp(k.ptr, pre.ptr, pre.len) == 0) {
            sp->drop[sp->n_drop] = lf_str_make(k.ptr + pre.len, k.len - pre.len);
            sp->drop_bits |= lf_stage__names_bit(sp->drop[sp->n_drop++]);
        }
    }
    if (pre.len <= 7 && memcmp("message", pre.ptr, pre.len) == 0)
        sp->message_key = lf_str_make(&"message"[pre.len], 7 - pre.len);
}

/* Fills sp->cls from sp->split and value_split's first byte vs0. */
static void set_classes(struct kv_spec *sp, char vs0)
{
    for (int c = 0; c < 256; c++) {
        unsigned char k = sp->split[c] ? C_SPLIT : 0;
        if (c == (unsigned char)vs0)
            k |= C_VS;
        if (c == '"' || c == '\'')
            k |= C_QUOTE;
        if (c == '\\')
            k |= C_BSLASH;
        if (c < 0x20 || c == '"' || c == '\\' || c == 0xe2)
            k |= C_JSON;
        sp->cls[c] = k;
    }
}

/* Checks the split bytes and fills the tables from them, after the rows. */
static enum lf_err build(void *spec, const struct lf_parser_conf *pc, struct lf_errbuf *eb)
{
    struct kv_spec *sp = spec;
    (void)pc;
    for (const char *c = sp->field_split; *c != '\0'; c++) {
        if ((unsigned char)*c >= 0x80) /* one byte of a UTF-8 character would cut others */
            return lf_fail(eb, LF_ECONFIG, "kv: field_split takes ASCII characters only");
    }
    if (strpbrk(sp->value_split, sp->field_split) != NULL)
        return lf_fail(eb, LF_ECONFIG, "kv: value_split \"%s\" holds a field_split byte",
                       sp->value_split);
    for (const char *p = sp->field_split; *p != '\0'; p++) {
        if (!sp->split[(unsigned char)*p])
            sp->split_bytes[sp->n_split_bytes++] = *p;
        sp->split[(unsigned char)*p] = true;
    }
    set_classes(sp, sp->value_split[0]);
    root_keys(sp);
    sp->include_bits = list_bits(sp->include, sp->n_include);
    sp->exclude_bits = list_bits(sp->exclude, sp->n_exclude);
    return LF_OK;
}

#define S struct kv_spec
#define EMPTY "field_split and value_split must not be empty"
static const struct lf_stage_opt opts[] = {
    LF_STAGE_TEXT("field_split", LF_STAGE_OPT_STRING, S, field_split, u.kv.field_split, " ", EMPTY),
    LF_STAGE_STRING("value_split", S, value_split, value_split_len, u.kv.value_split, "=", EMPTY),
    LF_STAGE_LIST("include_keys", LF_STAGE_OPT_NAMES, S, include, n_include, u.kv.include_keys,
                  u.kv.n_include_keys),
    LF_STAGE_LIST("exclude_keys", LF_STAGE_OPT_NAMES, S, exclude, n_exclude, u.kv.exclude_keys,
                  u.kv.n_exclude_keys),
    LF_STAGE_STRING("prefix", S, prefix, prefix_len, u.kv.prefix, "", NULL),
    LF_STAGE_TEXT("prefix", LF_STAGE_OPT_ESCAPED, S, prefix_json, u.kv.prefix, "", NULL),
    LF_STAGE_TEXT("target", LF_STAGE_OPT_TARGET, S, target, u.kv.target, "", NULL),
    LF_STAGE_OPT_END,
};
#undef EMPTY
#undef S
static const struct lf_stage_slot slots[] = {
    LF_STAGE_BUF(struct kv_state, extra),
    LF_STAGE_BUF(struct kv_state, value),
    LF_STAGE_BUF(struct kv_state, message),
    LF_STAGE_FREE(struct kv_state, seen.v),
    LF_STAGE_FREE(struct kv_state, prior.v),
    LF_STAGE_SLOT_END,
};
static const struct lf_stage_table table = {
    .name = "kv",
    .opts = opts,
    .spec_size = sizeof(struct kv_spec),
    .build = build,
    .state_size = sizeof(struct kv_state),
    .slots = slots,
};

/* The line, sorted into byte classes 64 bytes at a time: bit i of each mask stands for
 * base[i], for the bytes in [base, lim). Queries go forward through the line, so each byte
 * is classified once (a window starts where the query that needs it starts). */
struct scan {
    const struct kv_spec *sp;
    const char *line;
    const char *end;
    const char *base;
    const char *lim;
    uint64_t m[4]; /* by M_*, bits past lim clear */
};

enum {
    M_SPLIT,   /* field_split bytes */
    M_KEY_END, /* those and value_split's first byte */
    M_QUOTED,  /* '"', '\'' and '\\', where a quoted value may end */
    M_JSON     /* bytes lf_json_escape() may change: control, '"', '\\', 0xE2 */
};

#ifdef __SSE2__
/* Adds the classes of the 16 bytes at q to m, as bits at..at+16 after dropping the first
 * drop bytes' (which the block before has). */
static inline void
classify16(const struct kv_spec *sp, const char *q, unsigned drop, unsigned at, uint64_t m[4])
{
    __m128i v = _mm_loadu_si128((const __m128i *)(const void *)q);
    __m128i split = _mm_cmpeq_epi8(v, _mm_set1_epi8(sp->split_bytes[0]));
    for (size_t i = 1; i < sp->n_split_bytes; i++)
        split = _mm_or_si128(split, _mm_cmpeq_epi8(v, _mm_set1_epi8(sp->split_bytes[i])));
    __m128i vs = _mm_cmpeq_epi8(v, _mm_set1_epi8(sp->value_split[0]));
    __m128i dq = _mm_cmpeq_epi8(v, _mm_set1_epi8('"'));
    __m128i sq = _mm_cmpeq_epi8(v, _mm_set1_epi8('\''));
    __m128i bs = _mm_cmpeq_epi8(v, _mm_set1_epi8('\\'));
    __m128i ctl = _mm_cmpeq_epi8(_mm_max_epu8(v, _mm_set1_epi8(0x1f)), _mm_set1_epi8(0x1f));
    __m128i e2 = _mm_cmpeq_epi8(v, _mm_set1_epi8((char)0xe2));
    __m128i json = _mm_or_si128(_mm_or_si128(ctl, e2), _mm_or_si128(dq, bs));
    unsigned ms = (unsigned)_mm_movemask_epi8(split);
    unsigned mv = (unsigned)_mm_movemask_epi8(vs);
    unsigned mq = (unsigned)_mm_movemask_epi8(_mm_or_si128(_mm_or_si128(dq, sq), bs));
    unsigned mj = (unsigned)_mm_movemask_epi8(json);
    m[M_SPLIT] |= (uint64_t)(ms >> drop) << at;
    m[M_KEY_END] |= (uint64_t)((ms | mv) >> drop) << at;
    m[M_QUOTED] |= (uint64_t)(mq >> drop) << at;
    m[M_JSON] |= (uint64_t)(mj >> drop) << at;
}
#endif

/* Classifies the up to 64 bytes from p (< end). */
static void classify(struct scan *sc, const char *p)
{
    const struct kv_spec *sp = sc->sp;
    size_t n = (size_t)(sc->end - p) < 64 ? (size_t)(sc->end - p) : 64;
    uint64_t m[4] = { 0, 0, 0, 0 };
    sc->base = p;
    sc->lim = p + n;
#ifdef __SSE2__
    if (sc->end - sc->line >= 16) {
        size_t i = 0;
        for (; n - i >= 16; i += 16)
            classify16(sp, p + i, 0, (unsigned)i, m);
        if (i < n) /* the 16 bytes that end at lim: lim is end here, so they are the line's */
            classify16(sp, sc->lim - 16, (unsigned)(16 - (n - i)), (unsigned)i, m);
        memcpy(sc->m, m, sizeof(m));
        return;
    }
#endif
    for (size_t i = 0; i < n; i++) {
        unsigned k = sp->cls[(unsigned char)p[i]];
        uint64_t bit = (uint64_t)1 << i;
        m[M_SPLIT] |= k & C_SPLIT ? bit : 0;
        m[M_KEY_END] |= k & (C_SPLIT | C_VS) ? bit : 0;
        m[M_QUOTED] |= k & (C_QUOTE | C_BSLASH) ? bit : 0;
        m[M_JSON] |= k & C_JSON ? bit : 0;
    }
    memcpy(sc->m, m, sizeof(m));
}

/* The first byte from p (>= the window's base) in class want (M_*), or end; *plain is
 * cleared when a byte in [p, that byte) is one JSON escapes. */
static inline const char *find(struct scan *sc, const char *p, int want, bool *plain)
{
    for (;;) {
        if (p >= sc->lim) {
            if (p >= sc->end)
                return sc->end;
            classify(sc, p);
        }
        unsigned off = (unsigned)(p - sc->base); /* < 64 */
        uint64_t m = sc->m[want] >> off;
        uint64_t json = sc->m[M_JSON] >> off;
        if (m != 0) {
            *plain = *plain && (json & ((m & -m) - 1)) == 0;
            return p + __builtin_ctzll(m);
        }
        *plain = *plain && json == 0;
        p = sc->lim;
    }
}

/* The first byte from p that is no field_split byte, or end. */
static inline const char *skip_splits(struct scan *sc, const char *p)
{
    for (;;) {
        if (p >= sc->lim) {
            if (p >= sc->end)
                return sc->end;
            classify(sc, p);
        }
        unsigned off = (unsigned)(p - sc->base);
        uint64_t m = ~sc->m[M_SPLIT] >> off; /* bits past lim are set: tested below */
        size_t k = m != 0 ? (size_t)__builtin_ctzll(m) : 64 - off;
        if (k < (size_t)(sc->lim - p))
            return p + k;
        p = sc->lim;
    }
}

/* One pair as found in the line. */
struct pair {
    struct lf_str key;
    struct lf_str value; /* raw: between the quotes for a quoted value */
    bool key_plain;      /* key holds no byte JSON escapes */
    bool value_plain;    /* nor does value (raw: only when not escaped) */
    bool quoted;
    bool escaped; /* quoted, with a backslash in it */
    bool unterminated;
};

/* Reads the value at p (a quote starts a quoted one); returns where it ends. */
static const char *read_value(struct scan *sc, const char *p, struct pair *pr)
{
    const char *end = sc->end;
    pr->value_plain = true;
    if (p < end && (*p == '"' || *p == '\'')) {
        char q = *p;
        const char *v = p + 1;
        const char *s = v;
        for (;;) {
            s = find(sc, s, M_QUOTED, &pr->value_plain);
            if (s >= end || *s == q)
                break;
            if (*s == '\\') {
                pr->escaped = true;
                s += s + 1 < end ? 2 : 1; /* the backslash and the byte it escapes */
            } else {
                pr->value_plain = pr->value_plain && *s != '"'; /* the other quote */
                s++;
            }
        }
        pr->quoted = true;
        pr->unterminated = s >= end;
        pr->value = lf_str_make(v, (size_t)((s < end ? s : end) - v));
        return s < end ? s + 1 : end;
    }
    const char *s = find(sc, p, M_SPLIT, &pr->value_plain);
    pr->value = lf_str_make(p, (size_t)(s - p));
    return s;
}

/* Finds the next pair from *p; false at the end of the line. Tokens without value_split
 * or with an empty key are passed over. */
static bool next_pair(struct scan *sc, const char **p, struct pair *pr)
{
    const struct kv_spec *sp = sc->sp;
    const char *end = sc->end;
    while (*p < end) {
        const char *k = skip_splits(sc, *p);
        const char *s = k;
        pr->key_plain = true;
        for (;;) {
            s = find(sc, s, M_KEY_END, &pr->key_plain);
            /* A stop byte that is no field_split is value_split's first byte: with a
             * one-byte value_split (the usual "="), that is the whole of it. */
            if (s >= end || sp->split[(unsigned char)*s] || sp->value_split_len == 1 ||
                ((size_t)(end - s) >= sp->value_split_len &&
                 memcmp(s, sp->value_split, sp->value_split_len) == 0))
                break;
            pr->key_plain = pr->key_plain && !(sp->cls[(unsigned char)*s] & C_JSON);
            s++;
        }
        if (s >= end || sp->split[(unsigned char)*s] || s == k) {
            bool unused = true; /* no value_split in this token, or an empty key: skip it */
            *p = find(sc, s, M_SPLIT, &unused);
            continue;
        }
        pr->key = lf_str_make(k, (size_t)(s - k));
        pr->quoted = false;
        pr->escaped = false;
        pr->unterminated = false;
        *p = read_value(sc, s + sp->value_split_len, pr);
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

/* a and b are the same bytes; the first byte is compared before memcmp is called. */
static bool str_eq(struct lf_str a, struct lf_str b)
{
    return a.len == b.len &&
           (a.len == 0 || (a.ptr[0] == b.ptr[0] && memcmp(a.ptr, b.ptr, a.len) == 0));
}

/* Whether the member prefix+key may be added to the event, whose earlier members have the
 * keys in st->prior. key_plain: key holds no byte to escape (so no control byte). */
static bool
wanted(const struct kv_spec *sp, const struct kv_state *st, struct lf_str key, bool key_plain)
{
    if (sp->n_include > 0 && !in_list(sp->include, sp->n_include, sp->include_bits, key))
        return false;
    if (sp->n_exclude > 0 && in_list(sp->exclude, sp->n_exclude, sp->exclude_bits, key))
        return false;
    for (size_t i = 0; !key_plain && i < key.len; i++) {
        if ((unsigned char)key.ptr[i] < 0x20)
            return false; /* a control character names no member (JSON readers refuse NUL) */
    }
    if (sp->target.len != 0)
        return true;
    for (size_t i = 0; (sp->drop_bits & lf_stage__names_bit(key)) != 0 && i < sp->n_drop; i++) {
        if (str_eq(sp->drop[i], key))
            return false;
    }
    struct lf_str pre = lf_str_make(sp->prefix, sp->prefix_len);
    for (size_t i = 0; i < st->prior.n; i++) {
        if (name_eq(pre, key, st->prior.v[i].ptr, st->prior.v[i].len))
            return false;
    }
    return true;
}

/* Appends the member for pr: copied as it is when neither key nor value (raw, from the
 * line) holds a byte to escape, else through lf_json_escape(). */
static enum lf_err
add_member(const struct kv_spec *sp, struct kv_state *st, const struct pair *pr, bool *first)
{
    struct lf_buf *b = &st->extra;
    struct lf_str pre = lf_buf_str(&sp->prefix_json);
    struct lf_str v = pr->value;
    bool comma = !*first;
    *first = false;
    if (pr->key_plain && pr->value_plain && !pr->escaped) {
        size_t need = 6 + pre.len + pr->key.len + v.len; /* ,"" ":" "" and the bytes */
        if (lf_buf_avail(b) < need) {
            enum lf_err err = lf_buf_grow(b, need);
            if (err)
                return err;
        }
        char *d = b->ptr + b->len;
        if (comma)
            *d++ = ',';
        *d++ = '"';
        d = lf_stage__put(d, pre.ptr, pre.len);
        d = lf_stage__put(d, pr->key.ptr, pr->key.len);
        memcpy(d, "\":\"", 3);
        d += 3;
        d = lf_stage__put(d, v.ptr, v.len);
        *d++ = '"';
        b->len = (size_t)(d - b->ptr);
        return LF_OK;
    }
    enum lf_err err = LF_OK;
    if (pr->escaped) {
        err = unescape(&st->value, v);
        v = lf_buf_str(&st->value);
    }
    err = err ? err : !comma ? LF_OK : lf_buf_append(b, ",", 1);
    if (!err)
        err = lf_buf_append(b, "\"", 1);
    if (!err)
        err = lf_buf_append_str(b, pre);
    if (!err)
        err = lf_json_escape(b, pr->key);
    if (!err)
        err = lf_buf_append(b, "\":\"", 3);
    if (!err)
        err = lf_json_escape(b, v);
    if (!err)
        err = lf_buf_append(b, "\"", 1);
    return err;
}

/* Sets the message from a root "message" pair. */
static enum lf_err set_message(struct kv_state *st, struct pair *pr, struct lf_event *e)
{
    if (!pr->escaped) {
        e->message = pr->value;
        return LF_OK;
    }
    enum lf_err err = unescape(&st->message, pr->value);
    e->message = lf_buf_str(&st->message);
    return err;
}

/* Records the keys of the members in prior in st->prior (LF_ENOMEM). */
static enum lf_err read_prior(struct kv_state *st, struct lf_str prior)
{
    enum lf_err err = LF_OK;
    struct lf_str k;
    struct lf_str m;
    lf_stage__names_clear(&st->prior);
    while (!err && lf_stage__json_next_member(&prior, &k, &m))
        lf_stage__names_take(&st->prior, st->prior.n, k, &err); /* from n: no comparison */
    return err;
}

/* Renders the pairs of e's message after its prior extra; *why on a problem. */
static enum lf_err
render(const struct kv_spec *sp, struct kv_state *st, struct lf_event *e, const char **why)
{
    struct lf_buf *b = &st->extra;
    struct lf_str prior = e->extra;
    struct lf_str text = e->message.ptr != NULL ? e->message : lf_str_make("", 0);
    bool rooted = sp->target.len == 0;
    enum lf_err err = lf_buf_append_str(b, prior);
    size_t open_at = b->len;
    if (!rooted && !err) {
        if (b->len > 0)
            err = lf_buf_append(b, ",", 1);
        if (!err)
            err = lf_buf_append(b, sp->target.open, sp->target.open_len);
    }
    lf_stage__names_clear(&st->prior);
    if (!err && rooted)
        err = read_prior(st, prior);
    bool first = !rooted || b->len == 0;
    size_t n_pairs = 0;
    lf_stage__names_clear(&st->seen);
    struct scan sc = { sp, text.ptr, text.ptr + text.len, text.ptr, text.ptr, { 0, 0, 0, 0 } };
    const char *p = text.ptr;
    struct pair pr;
    while (!err && next_pair(&sc, &p, &pr)) {
        n_pairs++;
        if (pr.unterminated)
            *why = "kv: a quoted value has no closing quote; it takes the rest of the line";
        if (!wanted(sp, st, pr.key, pr.key_plain) ||
            !lf_stage__names_take(&st->seen, 0, pr.key, &err))
            continue;
        if (rooted && sp->message_key.ptr != NULL && str_eq(sp->message_key, pr.key))
            err = set_message(st, &pr, e);
        else
            err = add_member(sp, st, &pr, &first);
    }
    if (!err && !rooted) {
        if (first || lf_stage__extra_has(prior, sp->target.name, sp->target.len))
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
    return lf_stage__emit_members(&st->extra, ev, &e, why, err, out);
}

const struct lf_stage_ops lf_stage_kv = {
    .kind = LF_PARSER_KV,
    LF_STAGE_TABLE_OPS(table),
    .process = process,
};
