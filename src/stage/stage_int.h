/* stage_int.h - the stage types, shared within src/stage/ only. */
#ifndef LF_STAGE_INT_H
#define LF_STAGE_INT_H

#include <stdlib.h>
#include <string.h>
#ifdef __SSE2__
#include <emmintrin.h>
#endif

#include "logferry/fields.h"
#include "logferry/jsonmask.h"
#include "logferry/stage.h"
#include "options.h"

/* One per file in src/stage/; listed in the table in chain.c. */
extern const struct lf_stage_ops lf_stage_include_lines;
extern const struct lf_stage_ops lf_stage_exclude_lines;
extern const struct lf_stage_ops lf_stage_multiline;
extern const struct lf_stage_ops lf_stage_container;
extern const struct lf_stage_ops lf_stage_ndjson;
extern const struct lf_stage_ops lf_stage_dissect;
extern const struct lf_stage_ops lf_stage_kv;
extern const struct lf_stage_ops lf_stage_syslog;
extern const struct lf_stage_ops lf_stage_timestamp;
extern const struct lf_stage_ops lf_stage_regex;
extern const struct lf_stage_ops lf_stage_access_log;
extern const struct lf_stage_ops lf_stage_fields;
extern const struct lf_stage_ops lf_stage_throttle;
extern const struct lf_stage_ops lf_stage_sample;
extern const struct lf_stage_ops lf_stage_redact;
extern const struct lf_stage_ops lf_stage_drop;

/* The container stage bounds joined partials by the input's max_line_bytes, which its
 * parser entry does not carry: the chain compiles it through this instead of ops->compile.
 * Errors as lf_stage_ops.compile. */
LF_MUST_CHECK enum lf_err lf_stage__container_compile(const struct lf_parser_conf *pc,
                                                      size_t max_line_bytes,
                                                      void **spec,
                                                      struct lf_errbuf *eb);

/* The last RFC 3339 time read, to the day and to the second, and what they come to: lines
 * written close together share them, so that most times need only the rest read.
 * Zero-initialized: empty. */
struct lf_stage_time_memo {
    char head[19]; /* `yyyy-mm-ddThh:mm:ss` */
    int64_t secs;  /* its seconds since the epoch, local to the zone that follows */
    bool set;
    char date[10]; /* `yyyy-mm-dd` */
    int64_t days;  /* its days since 1970-01-01 */
    bool date_set;
};

/* Parses an RFC 3339 time (`2026-11-30T01:02:03.456789Z`, or a +hh:mm / -hh:mm offset;
 * 0 to 9 fraction digits, more are ignored) at p[0..n) to ns since the epoch in *ns_out.
 * false when it is not exactly one such time, or one that int64 ns cannot hold (before
 * 1677-09-21, after 2262-04-11): the caller keeps the read time. memo (NULL for none) is
 * used and updated. Defined in rfc3339.c. */
bool lf_stage__parse_rfc3339(struct lf_stage_time_memo *memo,
                             const char *p,
                             size_t n,
                             int64_t *ns_out);

/* Time and number pieces: n digits at p as a number in *out (false if one is no digit);
 * days from 1970-01-01 to y-m-d (proleptic Gregorian) (both defined in rfc3339.c); a hex
 * digit's value, -1 for none (container.c). */
bool lf_stage__digits(const char *p, size_t n, int *out);
int64_t lf_stage__days_from_civil(int64_t y, int m, int d);
int lf_stage__hexval(char ch);

/* The first '"' in [s, end), NULL for none: 16 bytes a step with SSE2, a tail under 16
 * bytes tested with the 16 that end at end when the buffer (from list) holds that many.
 * Shared by the stages that walk JSON members (members.c, cond.c). */
static inline const char *lf_stage__find_quote(const char *s, const char *list, const char *end)
{
#ifdef __SSE2__
    const __m128i q = _mm_set1_epi8('"');
    for (; end - s >= 16; s += 16) {
        __m128i v = _mm_loadu_si128((const __m128i *)(const void *)s);
        unsigned m = (unsigned)_mm_movemask_epi8(_mm_cmpeq_epi8(v, q));
        if (m != 0)
            return s + __builtin_ctz(m);
    }
    if (s < end && end - list >= 16) {
        __m128i v = _mm_loadu_si128((const __m128i *)(const void *)(end - 16));
        unsigned m = (unsigned)_mm_movemask_epi8(_mm_cmpeq_epi8(v, q)) >> (16 - (end - s));
        return m != 0 ? s + __builtin_ctz(m) : NULL;
    }
#else
    (void)list;
#endif
    return s < end ? memchr(s, '"', (size_t)(end - s)) : NULL;
}

/* Steps through a list of JSON members (an event's extra): *key gets the next key's body
 * (still escaped), *member the whole `"key":value`, and *rest moves past it. false at the
 * end or on bad JSON. Borrowed from *rest. Defined in container.c. */
bool lf_stage__json_next_member(struct lf_str *rest, struct lf_str *key, struct lf_str *member);

/* The ndjson stage's fast decoder is bypassed while this is true, so that tests can
 * compare its members with jansson's. Defined in ndjson.c. */
extern bool lf_stage__ndjson_jansson_only;

/* Conditions look every member path up alone (a walk of the members per test) instead of
 * through their index while this is true, so that tests can compare the two. Defined in
 * cond.c. */
extern bool lf_stage__cond_no_index;

/* Length of the run at s[0..n) without '"', '\\', control bytes or bytes >= 0x80: the
 * bytes a JSON string scanner can step over at once (16 at a time with SSE2). Defined in
 * container.c. */
size_t lf_stage__json_plain_run(const char *s, size_t n);

/* The byte the one-letter JSON escape \e stands for (e is the letter after the
 * backslash), NUL for none (and for 'u'). Defined in container.c. */
char lf_stage__json_simple_escape(char e);

/* The redact stage's pattern i (built-ins, then the user's regexes) of spec: *name and its
 * matches since the spec was compiled, summed over the chains that share it. false past
 * the last. Any thread. Defined in redact.c. */
bool lf_stage__redact_count(const void *spec, size_t i, const char **name, uint64_t *n);

/* Lines the container stage passed through as malformed since open (state from open). */
uint64_t lf_stage__container_malformed(const void *state);

/* Appends the member "error":{"message":"why"} to the JSON members in b, after a comma if
 * b holds some already. why is our own ASCII text: it is not escaped. */
LF_MUST_CHECK enum lf_err lf_stage__append_error(struct lf_buf *b, const char *why);

/* True when the members list extra has key (compared with its escaped body: our keys and
 * those of earlier stages have nothing to escape). */
bool lf_stage__extra_has(struct lf_str extra, const char *key, size_t len);

/* Starts b (empty) with a stage's members: the event's prior ones, then under a target
 * `,"target":{` (the caller closes it). false when the stage adds nothing: the target is a
 * member of prior already (b then holds prior). *err: LF_ENOMEM or LF_ETOOBIG. */
static inline bool lf_stage__open_members(struct lf_buf *b,
                                          struct lf_str prior,
                                          const struct lf_stage_target *t,
                                          enum lf_err *err)
{
    *err = lf_buf_append_str(b, prior);
    if (t->len == 0)
        return true;
    if (lf_stage__extra_has(prior, t->name, t->len))
        return false;
    if (!*err && b->len > 0)
        *err = lf_buf_append(b, ",", 1);
    if (!*err)
        *err = lf_buf_append(b, t->open, t->open_len);
    return true;
}

/* Ends the process() of a stage that rebuilt ev's members into b (e: ev as the stage
 * changed it): adds error.message why to b when why is not NULL and ev's members hold no
 * error yet, then emits e with b as its members. err, what the rebuilding returned, is
 * returned as it is, and then nothing is emitted. */
static inline enum lf_err lf_stage__emit_members(struct lf_buf *b,
                                                 const struct lf_event *ev,
                                                 struct lf_event *e,
                                                 const char *why,
                                                 enum lf_err err,
                                                 const struct lf_stage_out *out)
{
    if (!err && why != NULL && !lf_stage__extra_has(ev->extra, "error", 5))
        err = lf_stage__append_error(b, why);
    e->extra = lf_buf_str(b);
    return err ? err : out->emit(out->arg, e);
}

/* Appends the JSON string body raw (between its quotes, escaped) to out, unescaped; \u
 * escapes become UTF-8 and a lone surrogate U+FFFD. false on a bad escape or LF_ENOMEM
 * (out then holds a part). Defined in container.c. */
bool lf_stage__json_unescape(struct lf_str raw, struct lf_buf *out);

/* The names a stage has taken on the current line (kv's keys, syslog's SD-IDs and
 * PARAM-NAMEs), to keep the first of a repeated one. Grown by doubling and kept across
 * lines; lf_stage__names_clear() starts a line. */
struct lf_stage_names {
    struct lf_str *v; /* owned; borrowed bytes of the line */
    size_t n;
    size_t cap;
    uint64_t bits; /* a bit per name in v (lf_stage__names_bit()): a name whose bit is clear
                      is not there, so most names are taken without a comparison */
};

static inline void lf_stage__names_clear(struct lf_stage_names *s)
{
    s->n = 0;
    s->bits = 0;
}

/* name's bit in lf_stage_names.bits, from its length and its first and last bytes. */
static inline uint64_t lf_stage__names_bit(struct lf_str name)
{
    unsigned h = (unsigned)name.len;
    if (name.len > 0)
        h += (unsigned char)name.ptr[0] * 3u + (unsigned char)name.ptr[name.len - 1] * 5u;
    return (uint64_t)1 << (h & 63);
}

/* Records name among s->v[from..n); false when it is there already, or (with *err set to
 * LF_ENOMEM) when it cannot be recorded. */
static inline bool
lf_stage__names_take(struct lf_stage_names *s, size_t from, struct lf_str name, enum lf_err *err)
{
    uint64_t bit = lf_stage__names_bit(name);
    for (size_t i = from; (s->bits & bit) != 0 && i < s->n; i++) {
        if (s->v[i].len == name.len && memcmp(s->v[i].ptr, name.ptr, name.len) == 0)
            return false;
    }
    if (s->n == s->cap) {
        size_t cap = s->cap != 0 ? s->cap * 2 : 16;
        struct lf_str *v = realloc(s->v, cap * sizeof(*v));
        if (v == NULL) {
            *err = LF_ENOMEM;
            return false;
        }
        s->v = v;
        s->cap = cap;
    }
    s->v[s->n++] = name;
    s->bits |= bit;
    return true;
}

/* Copies the n bytes at s to d, returns d + n: short runs (keys, small values) without a
 * call, with two loads and stores that may overlap, reading and writing only those n. */
static inline char *lf_stage__put(char *d, const char *s, size_t n)
{
    if (n >= 8 && n <= 16) {
        uint64_t a;
        uint64_t b;
        memcpy(&a, s, 8);
        memcpy(&b, s + n - 8, 8);
        memcpy(d, &a, 8);
        memcpy(d + n - 8, &b, 8);
    } else if (n >= 4 && n < 8) {
        uint32_t a;
        uint32_t b;
        memcpy(&a, s, 4);
        memcpy(&b, s + n - 4, 4);
        memcpy(d, &a, 4);
        memcpy(d + n - 4, &b, 4);
    } else if (n > 0 && n < 4) {
        d[0] = s[0];
        d[n / 2] = s[n / 2];
        /* cppcheck-suppress arrayIndexOutOfBoundsCond ; n < 4 here, and s holds n bytes */
        d[n - 1] = s[n - 1];
    } else if (n > 16) {
        memcpy(d, s, n);
    }
    return d + n;
}

#ifdef __SSE2__
/* Bit i set where byte i of v is a or b (va, vb: them in every byte). */
static inline unsigned lf_stage__mask2(__m128i v, __m128i va, __m128i vb)
{
    return (unsigned)_mm_movemask_epi8(_mm_or_si128(_mm_cmpeq_epi8(v, va), _mm_cmpeq_epi8(v, vb)));
}

#endif

/* Scanning to the first of two bytes, 16 at a time with SSE2 (a byte loop elsewhere):
 * returns the first byte a or b in [p, end), end for none, and says in *plain whether the
 * bytes it passed over are all ones lf_json_escape() copies as they are (none is a control
 * byte, '"', '\\' or 0xE2). line..end is the whole buffer p lies in: a tail shorter than
 * 16 bytes is tested with the 16 bytes that end at end when the buffer holds that many, so
 * nothing outside it is read. Inlined at each call: the call and set-up cost more than the
 * scan of a short word. */
static inline __attribute__((always_inline)) const char *
lf_stage__find2_plain(const char *p, const char *line, const char *end, char a, char b, bool *plain)
{
    unsigned special = 0; /* the json bits of the bytes passed over, OR-ed */
#ifdef __SSE2__
    const __m128i va = _mm_set1_epi8(a);
    const __m128i vb = _mm_set1_epi8(b);
    for (; end - p >= 16; p += 16) {
        __m128i v = _mm_loadu_si128((const __m128i *)(const void *)p);
        unsigned m = lf_stage__mask2(v, va, vb);
        unsigned j = lf_json_special_mask(v);
        if (m != 0) {
            *plain = (special | (j & ((m & -m) - 1))) == 0; /* the bits below the first */
            return p + __builtin_ctz(m);
        }
        special |= j;
    }
    if (p < end && end - line >= 16) {
        __m128i v = _mm_loadu_si128((const __m128i *)(const void *)(end - 16));
        unsigned shift = 16 - (unsigned)(end - p); /* bit 0 is now p's byte */
        unsigned m = lf_stage__mask2(v, va, vb) >> shift;
        unsigned j = lf_json_special_mask(v) >> shift;
        *plain = (special | (m != 0 ? j & ((m & -m) - 1) : j)) == 0;
        return m != 0 ? p + __builtin_ctz(m) : end;
    }
#else
    (void)line;
#endif
    while (p < end && *p != a && *p != b)
        special |= lf_json_special_byte(*p++);
    *plain = special == 0;
    return p;
}

/* ---- members.c: what the regex, access_log and fields stages share ---- */

/* True for the keys the encoder writes itself at the root: @timestamp, log, input, host,
 * fields (not message, which a stage may replace). */
bool lf_stage__is_encoder_key(const char *key, size_t len);

/* Finds the member at the dotted path (each segment compared with the escaped key body)
 * in the JSON members list, descending into objects: *member gets `"key":value`, *value
 * the value. false when some segment is missing or a non-object is in the way. */
bool lf_stage__json_find(struct lf_str list,
                         struct lf_str path,
                         struct lf_str *member,
                         struct lf_str *value);

/* Appends v in decimal. Errors as lf_buf_append(). */
LF_MUST_CHECK enum lf_err lf_stage__append_int(struct lf_buf *b, int64_t v);

/* Appends `,` (unless *first, which it then clears) and `"key":` (key is plain ASCII,
 * nothing to escape). Errors as lf_buf_append(). */
LF_MUST_CHECK enum lf_err
lf_stage__append_key(struct lf_buf *b, bool *first, const char *key, size_t len);

/* ---- keys.c: what the throttle and sample stages share ---- */

/* Compiles the key template tmpl into t (zeroed; release with lf_tmpl_release() either
 * way). LF_ECONFIG (`stage: key: ...`) for a %{ without its }, an empty %{}, or a field the
 * agent writes itself after the stages (message, @timestamp, log, input, host, fields);
 * LF_ENOMEM. */
LF_MUST_CHECK enum lf_err
lf_stage__key_compile(const char *stage, const char *tmpl, struct lf_tmpl *t, struct lf_errbuf *eb);

/* Renders t over ev's members into scratch (grown as needed, kept: its first use
 * allocates) and points *key at it (borrowed: valid until scratch changes). A missing field
 * renders as nothing. LF_ENOMEM. */
LF_MUST_CHECK enum lf_err lf_stage__key_render(const struct lf_tmpl *t,
                                               const struct lf_event *ev,
                                               struct lf_buf *scratch,
                                               struct lf_str *key);

/* Emits ev dropped (never sent, acknowledged with its batch), with why (LF_EVENT_THROTTLED,
 * LF_EVENT_SAMPLED_OUT, or 0) for the input's counters. */
static inline enum lf_err
lf_stage__emit_dropped(const struct lf_event *ev, unsigned why, const struct lf_stage_out *out)
{
    struct lf_event dropped = *ev;
    dropped.flags |= LF_EVENT_DROPPED | why;
    return out->emit(out->arg, &dropped);
}

/* The key's fixed, seedless 64-bit hash (FNV-1a, then MurmurHash3's fmix64): the same on
 * every agent and in every run. */
uint64_t lf_stage__key_hash(struct lf_str key);

#endif
