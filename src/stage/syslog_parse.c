/* syslog_parse.c - the syslog stage: RFC 3164 (BSD, what rsyslog writes to /var/log/syslog,
 * auth.log, kern.log) and RFC 5424 lines become members; the message becomes the MSG part.
 *
 *   [<PRI>]Mmm dd hh:mm:ss [HOST ]TAG[PID]: MSG                      RFC 3164
 *   [<PRI>]YYYY-MM-DDThh:mm:ss.ffffff+hh:mm [HOST ]TAG[PID]: MSG     rsyslog high precision
 *   <PRI>VERSION TIME HOST APP PROCID MSGID SD [MSG]                 RFC 5424 (- for nil)
 *
 * One pass over the line, no copy of it: every member is a slice of the message (SD values
 * are unescaped while they are JSON-escaped into the members buffer), and the new message
 * is the MSG slice. Words and SD values end at the first of two bytes found 16 at a time
 * (lf_stage__find2_plain()), which also says whether the bytes passed need JSON escaping:
 * most do not and are copied as they are. STRUCTURED-DATA is checked once, recording each
 * SD-ID and PARAM as slices in a list kept in the state, and written from that list. format auto
 * takes a line as RFC 5424 when a PRI is followed by a version number and a space, else as RFC
 * 3164.
 *
 * RFC 3164 has no year and no zone: its time goes, as written, into the member
 * "timestamp" for the timestamp stage (format rfc3164) to place; an RFC 3339 time (RFC 5424,
 * rsyslog's high-precision form) sets @timestamp here. Host or tag may be missing in RFC
 * 3164: the first word after the time is a tag when it ends in ':' or "[pid]" (then there
 * is no host), else the host, and the word after the host is a tag under the same rule
 * (else it starts MSG). A line that fits neither format passes unchanged with
 * error.message. Members meet the event's as those of dissect and kv do (docs/parsers.md).
 * Per event: the members buffer, the list of the line's SD parts and of the SD names seen,
 * and the last RFC 3339 time read (struct lf_stage_time_memo), all kept in the state; the
 * members of each PRI value are rendered once per spec. */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "stage_int.h"

struct syslog_spec {
    struct lf_stage_head head;
    enum lf_syslog_parse format;
    /* `"priority":N,"facility":{...},"severity":{...}` for each PRI N, rendered once: the
     * one for N at pri_json.ptr + pri_at[N], up to pri_at[N + 1]. */
    struct lf_buf pri_json;
    size_t pri_at[193];
    struct lf_stage_target target;
    bool keep_original; /* the whole line goes to event.original */
};

/* An SD-ID (an element's start) or a PARAM of the line's STRUCTURED-DATA, as checked. */
struct sd_tok {
    struct lf_str name;  /* SD-ID or PARAM-NAME */
    struct lf_str value; /* PARAM-VALUE's body, still escaped; ptr NULL for an SD-ID */
    bool name_plain;     /* no byte of name needs JSON escaping (a name's only one is '\\') */
    bool value_plain;    /* nor of value, which then holds no backslash either */
};

struct syslog_state {
    struct lf_stage_head head;
    struct lf_buf extra;        /* the event's extra, rebuilt per event */
    struct lf_stage_names seen; /* SD-IDs, then the current element's PARAM-NAMEs */
    struct sd_tok *sd;          /* owned; the line's SD-IDs and PARAMs, in order */
    size_t n_sd;
    size_t cap_sd;                  /* grown by doubling and kept across lines */
    struct lf_stage_time_memo memo; /* of the last RFC 3339 time read */
};

/* What a line holds; a member whose ptr is NULL is absent. */
struct sl_msg {
    int pri;            /* -1: none */
    int version;        /* 0: RFC 3164 */
    struct lf_str time; /* RFC 3164 time as written (no year, no zone) */
    bool has_ts;        /* ts_ns set from an RFC 3339 time */
    int64_t ts_ns;
    struct lf_str hostname;
    struct lf_str appname;
    struct lf_str procid;
    struct lf_str msgid;
    unsigned plain;   /* P_*: which of hostname .. msgid need no JSON escaping */
    struct lf_str sd; /* RFC 5424 STRUCTURED-DATA, checked (its parts in state->sd); ptr
                         NULL for nil */
    struct lf_str msg;
};

#define P_HOST   1u
#define P_APP    2u
#define P_PROCID 4u
#define P_MSGID  8u

/* facility and severity as written: {"code":N,"name":"text"}, with rsyslog's names. */
#define CODE(n, name) LF_STR_LIT("{\"code\":" #n ",\"name\":\"" name "\"}")
static const struct lf_str facility_json[24] = {
    CODE(0, "kern"),    CODE(1, "user"),    CODE(2, "mail"),      CODE(3, "daemon"),
    CODE(4, "auth"),    CODE(5, "syslog"),  CODE(6, "lpr"),       CODE(7, "news"),
    CODE(8, "uucp"),    CODE(9, "cron"),    CODE(10, "authpriv"), CODE(11, "ftp"),
    CODE(12, "ntp"),    CODE(13, "audit"),  CODE(14, "alert"),    CODE(15, "clock"),
    CODE(16, "local0"), CODE(17, "local1"), CODE(18, "local2"),   CODE(19, "local3"),
    CODE(20, "local4"), CODE(21, "local5"), CODE(22, "local6"),   CODE(23, "local7"),
};
static const struct lf_str severity_json[8] = {
    CODE(0, "emerg"),   CODE(1, "alert"),  CODE(2, "crit"), CODE(3, "err"),
    CODE(4, "warning"), CODE(5, "notice"), CODE(6, "info"), CODE(7, "debug"),
};
#undef CODE
/* The bytes of an SD-ID or PARAM-NAME: printable ASCII but '=', ']', '"' and space. */
static const bool sd_name_byte[256] = {
    [0x21] = true,
    [0x23 ... 0x3c] = true, /* '"' (0x22) */
    [0x3e ... 0x5c] = true, /* '=' (0x3d) */
    [0x5e ... 0x7e] = true, /* ']' (0x5d) */
};

static const char months[] = "JanFebMarAprMayJunJulAugSepOctNovDec";

/* ---- config ---- */

static void release(void *spec)
{
    struct syslog_spec *sp = spec;
    lf_buf_release(&sp->pri_json);
}

/* Renders sp->pri_json (LF_ENOMEM), after the rows. */
static enum lf_err build(void *spec, const struct lf_parser_conf *pc, struct lf_errbuf *eb)
{
    struct syslog_spec *sp = spec;
    (void)pc;
    (void)eb;
    lf_buf_init(&sp->pri_json, SIZE_MAX);
    enum lf_err err = LF_OK;
    for (int pri = 0; pri < 192 && !err; pri++) {
        char num[48];
        sp->pri_at[pri] = sp->pri_json.len;
        snprintf(num, sizeof(num), "\"priority\":%d,\"facility\":", pri);
        err = lf_buf_append_cstr(&sp->pri_json, num);
        if (!err)
            err = lf_buf_append_str(&sp->pri_json, facility_json[pri / 8]);
        if (!err)
            err = lf_buf_append_cstr(&sp->pri_json, ",\"severity\":");
        if (!err)
            err = lf_buf_append_str(&sp->pri_json, severity_json[pri % 8]);
    }
    sp->pri_at[192] = sp->pri_json.len;
    return err;
}

#define S struct syslog_spec
static const struct lf_stage_opt opts[] = {
    LF_STAGE_TEXT("target", LF_STAGE_OPT_TARGET, S, target, u.syslog.target, "", NULL),
    LF_STAGE_VALUE("format", S, format, u.syslog.format),
    LF_STAGE_VALUE("keep_original", S, keep_original, u.syslog.keep_original),
    LF_STAGE_OPT_END,
};
#undef S
static const struct lf_stage_slot slots[] = {
    LF_STAGE_BUF(struct syslog_state, extra),
    LF_STAGE_FREE(struct syslog_state, seen.v),
    LF_STAGE_FREE(struct syslog_state, sd),
    LF_STAGE_SLOT_END,
};
static const struct lf_stage_table table = {
    .name = "syslog",
    .opts = opts,
    .spec_size = sizeof(struct syslog_spec),
    .build = build,
    .release = release,
    .state_size = sizeof(struct syslog_state),
    .slots = slots,
};

/* ---- scanning ---- */

/* A cursor over the line. */
struct cur {
    const char *p;
    const char *end;
    const char *start; /* of the line, for lf_stage__find2_plain() */
};

static bool at(const struct cur *c, char ch)
{
    return c->p < c->end && *c->p == ch;
}

static bool is_digit(char ch)
{
    return ch >= '0' && ch <= '9';
}

/* Reads n digits at p into *v. */
static bool digits(const char *p, size_t n, int *v)
{
    int x = 0;
    for (size_t i = 0; i < n; i++) {
        if (!is_digit(p[i]))
            return false;
        x = x * 10 + (p[i] - '0');
    }
    *v = x;
    return true;
}

/* The word at c up to the next space or the end (c moves past it, not past the space);
 * *plain: it needs no JSON escaping. */
static struct lf_str word(struct cur *c, bool *plain)
{
    const char *e = lf_stage__find2_plain(c->p, c->start, c->end, ' ', ' ', plain);
    struct lf_str w = lf_str_make(c->p, (size_t)(e - c->p));
    c->p = e;
    return w;
}

/* `<N>` with N in 0..191 (at most three digits); no '<' leaves *pri at -1. */
static const char *parse_pri(struct cur *c, int *pri)
{
    *pri = -1;
    if (!at(c, '<'))
        return NULL;
    const char *p = c->p + 1;
    int v = 0;
    size_t n = 0;
    while (p < c->end && n < 4 && is_digit(*p)) {
        v = v * 10 + (*p++ - '0');
        n++;
    }
    if (n == 0 || n > 3 || p >= c->end || *p != '>')
        return "syslog: the line starts with '<' but not with a PRI such as <13>";
    if (v > 191)
        return "syslog: PRI is over 191 (facility 23, severity 7)";
    *pri = v;
    c->p = p + 1;
    return NULL;
}

/* `Mmm dd hh:mm:ss`, the day padded with a space or a zero (or one digit alone). */
static bool parse_bsd_time(struct cur *c, struct lf_str *time)
{
    const char *p = c->p;
    size_t left = (size_t)(c->end - p);
    if (left < 14 || p[3] != ' ')
        return false;
    bool month = false;
    for (size_t m = 0; m < 12 && !month; m++)
        month = memcmp(p, months + 3 * m, 3) == 0;
    if (!month)
        return false;
    size_t i = 4;
    int day;
    if (p[i] == ' ' && digits(p + i + 1, 1, &day))
        i += 2;
    else if (digits(p + i, 2, &day))
        i += 2;
    else if (digits(p + i, 1, &day))
        i += 1;
    else
        return false;
    int h, mi, s;
    if (day < 1 || day > 31 || left < i + 9 || p[i] != ' ' || !digits(p + i + 1, 2, &h) ||
        p[i + 3] != ':' || !digits(p + i + 4, 2, &mi) || p[i + 6] != ':' ||
        !digits(p + i + 7, 2, &s) || h > 23 || mi > 59 || s > 60)
        return false;
    *time = lf_str_make(p, i + 9);
    c->p = p + i + 9;
    return true;
}

/* An RFC 3339 time ending at the next space or the end. */
static const char *parse_full_time(struct cur *c, struct lf_stage_time_memo *memo, struct sl_msg *m)
{
    bool plain;
    struct lf_str w = word(c, &plain);
    if (!lf_stage__parse_rfc3339(memo, w.ptr, w.len, &m->ts_ns))
        return "syslog: the time is not an RFC 3339 time between 1677 and 2262";
    m->has_ts = true;
    return NULL;
}

/* A tag `app:`, `app[pid]:` or `app[pid]` (w, one word, plain: needing no JSON escaping):
 * fills appname and procid. */
static bool parse_tag(struct lf_str w, bool plain, struct sl_msg *m)
{
    if (w.len > 0 && w.ptr[w.len - 1] == ':')
        w.len--;
    else if (w.len == 0 || w.ptr[w.len - 1] != ']')
        return false;
    const char *open = w.len > 0 && w.ptr[w.len - 1] == ']' ? memchr(w.ptr, '[', w.len) : NULL;
    size_t app_len = open != NULL ? (size_t)(open - w.ptr) : w.len;
    if (app_len == 0 || (open == NULL && w.ptr[w.len - 1] == ']'))
        return false;
    m->appname = lf_str_make(w.ptr, app_len);
    if (open != NULL && w.len - app_len > 2)
        m->procid = lf_str_make(open + 1, w.len - app_len - 2);
    if (plain)
        m->plain |= P_APP | P_PROCID;
    return true;
}

/* After the time: `[HOST ]TAG: MSG`, with host and tag each optional. */
static void parse_bsd_rest(struct cur *c, struct sl_msg *m)
{
    struct cur save = *c;
    bool plain;
    struct lf_str w = word(c, &plain);
    if (w.len > 0 && !parse_tag(w, plain, m)) {
        m->hostname = w;
        m->plain |= plain ? P_HOST : 0;
        if (at(c, ' '))
            c->p++;
        save = *c;
        w = word(c, &plain);
        if (!parse_tag(w, plain, m))
            *c = save;
    } else if (w.len == 0) {
        *c = save;
    }
    if (m->appname.ptr != NULL && at(c, ' '))
        c->p++;
    m->msg = lf_str_make(c->p, (size_t)(c->end - c->p));
}

static const char *parse_3164(struct cur *c, struct lf_stage_time_memo *memo, struct sl_msg *m)
{
    if (c->end - c->p >= 5 && is_digit(c->p[0]) && c->p[4] == '-') {
        const char *why = parse_full_time(c, memo, m);
        if (why != NULL)
            return why;
    } else if (!parse_bsd_time(c, &m->time)) {
        return "syslog: no RFC 3164 or RFC 3339 time where the header starts";
    }
    if (!at(c, ' '))
        return "syslog: the header ends after the time";
    c->p++;
    parse_bsd_rest(c, m);
    return NULL;
}

/* A header field of RFC 5424 and the space after it; "-" leaves *f absent. plain_bit goes
 * into m->plain when the field needs no JSON escaping. */
static bool field_5424(struct cur *c, struct sl_msg *m, struct lf_str *f, unsigned plain_bit)
{
    bool plain;
    struct lf_str w = word(c, &plain);
    if (w.len == 0 || !at(c, ' '))
        return false;
    c->p++;
    if (w.len != 1 || w.ptr[0] != '-')
        *f = w;
    m->plain |= plain ? plain_bit : 0;
    return true;
}

/* SD-NAME: printable US-ASCII but '=', ']', '"' and space; at least one byte. *t gets it
 * as its name. */
static bool sd_name(struct cur *c, struct sd_tok *t)
{
    const char *s = c->p;
    bool bs = false;
    while (c->p < c->end && sd_name_byte[(unsigned char)*c->p])
        bs |= *c->p++ == '\\';
    t->name = lf_str_make(s, (size_t)(c->p - s));
    t->name_plain = !bs;
    return t->name.len > 0;
}

/* Skips a PARAM-VALUE's body up to its closing quote (c then at the quote) into t. */
static bool sd_value(struct cur *c, struct sd_tok *t)
{
    const char *s = c->p;
    bool plain = true;
    for (;;) {
        bool run_plain;
        c->p = lf_stage__find2_plain(c->p, c->start, c->end, '"', '\\', &run_plain);
        plain = plain && run_plain;
        if (c->p >= c->end || *c->p == '"')
            break;
        plain = false; /* a backslash: the value is unescaped as it is written */
        c->p += c->p + 1 < c->end ? 2 : 1;
    }
    t->value = lf_str_make(s, (size_t)(c->p - s));
    t->value_plain = plain;
    return c->p < c->end;
}

/* Appends a slot to st->sd for the next SD-ID or PARAM (sd_name() fills its name; its
 * value is absent until sd_value()); NULL (and *err) on LF_ENOMEM. */
static inline struct sd_tok *sd_push(struct syslog_state *st, enum lf_err *err)
{
    if (lf_array_grow(&st->sd, &st->cap_sd, st->n_sd, sizeof(*st->sd), 16)) {
        *err = LF_ENOMEM;
        return NULL;
    }
    struct sd_tok *t = &st->sd[st->n_sd++];
    t->value = lf_str_make(NULL, 0);
    return t;
}

/* STRUCTURED-DATA: "-" or one or more [ID name="value" ...] elements, whose SD-IDs and
 * PARAMs go to st->sd. false when it is neither (or on LF_ENOMEM, with *err set). */
static bool check_sd(struct cur *c, struct syslog_state *st, struct lf_str *sd, enum lf_err *err)
{
    const char *s = c->p;
    st->n_sd = 0;
    if (at(c, '-')) {
        c->p++;
        return true;
    }
    if (!at(c, '['))
        return false;
    while (at(c, '[')) {
        c->p++;
        struct sd_tok *t = sd_push(st, err);
        if (t == NULL || !sd_name(c, t))
            return false;
        while (at(c, ' ')) {
            c->p++;
            t = sd_push(st, err);
            if (t == NULL || !sd_name(c, t) || !at(c, '='))
                return false;
            c->p++;
            if (!at(c, '"'))
                return false;
            c->p++;
            if (!sd_value(c, t))
                return false;
            c->p++;
        }
        if (!at(c, ']'))
            return false;
        c->p++;
    }
    *sd = lf_str_make(s, (size_t)(c->p - s));
    return true;
}

static const char *
parse_5424(struct cur *c, struct syslog_state *st, struct sl_msg *m, enum lf_err *err)
{
    const char *early = "syslog: the RFC 5424 header ends early or has an empty field";
    if (at(c, '-')) {
        c->p++;
    } else {
        const char *why = parse_full_time(c, &st->memo, m);
        if (why != NULL)
            return why;
    }
    if (!at(c, ' '))
        return early;
    c->p++;
    if (!field_5424(c, m, &m->hostname, P_HOST) || !field_5424(c, m, &m->appname, P_APP) ||
        !field_5424(c, m, &m->procid, P_PROCID) || !field_5424(c, m, &m->msgid, P_MSGID))
        return early;
    if (!check_sd(c, st, &m->sd, err) && !*err)
        return "syslog: the RFC 5424 STRUCTURED-DATA is neither - nor well-formed elements";
    if (*err)
        return NULL;
    if (c->p < c->end && !at(c, ' '))
        return "syslog: no space between STRUCTURED-DATA and MSG";
    if (at(c, ' '))
        c->p++;
    if (c->end - c->p >= 3 && memcmp(c->p, "\xef\xbb\xbf", 3) == 0)
        c->p += 3; /* the BOM that says MSG is UTF-8 */
    m->msg = lf_str_make(c->p, (size_t)(c->end - c->p));
    return NULL;
}

/* Parses line into *m (its SD parts into st->sd); the reason on failure, NULL on success
 * (or on LF_ENOMEM, in *err). */
static const char *parse(const struct syslog_spec *sp,
                         struct syslog_state *st,
                         struct lf_str line,
                         struct sl_msg *m,
                         enum lf_err *err)
{
    struct cur c = { line.ptr, line.ptr + line.len, line.ptr };
    memset(m, 0, sizeof(*m));
    const char *why = parse_pri(&c, &m->pri);
    if (why != NULL)
        return why;
    bool v5424 = m->pri >= 0 && c.end - c.p >= 2 && c.p[0] >= '1' && c.p[0] <= '9' &&
                 (c.p[1] == ' ' || (is_digit(c.p[1]) && c.end - c.p >= 3 && c.p[2] == ' '));
    if (sp->format == LF_SYSLOG_PARSE_RFC5424 && !v5424)
        return "syslog: not an RFC 5424 line (<PRI>VERSION at its start)";
    if (sp->format == LF_SYSLOG_PARSE_RFC3164 || !v5424)
        return parse_3164(&c, &st->memo, m);
    m->version = c.p[0] - '0';
    c.p++;
    if (is_digit(*c.p))
        m->version = m->version * 10 + (*c.p++ - '0');
    c.p++;
    return parse_5424(&c, st, m, err);
}

/* ---- rendering ---- */

#define LIT(s) s, sizeof(s) - 1 /* a literal and its length */

/* Appends into b through a cursor, keeping the first error: [d, lim) is b's free room,
 * written into without a call per piece, and b->len is brought up to date before anything
 * else appends to b (lf_json_escape()) and by out_end(). */
struct out {
    struct lf_buf *b;
    char *d;   /* b->ptr + the bytes written */
    char *lim; /* b->ptr + b->cap; d after an error, so that nothing more fits */
    enum lf_err err;
    bool first; /* no member written yet at this level */
};

/* Starts writing at the end of b, with room for n bytes made at once. */
static void out_start(struct out *o, struct lf_buf *b, size_t n)
{
    o->b = b;
    o->err = lf_buf_grow(b, n);
    o->d = b->ptr + b->len;
    o->lim = o->err ? o->d : b->ptr + b->cap;
    o->first = true;
}

/* Makes room for n more bytes; false (with o->err) when there is none. */
static bool out_room(struct out *o, size_t n)
{
    if (o->err)
        return false;
    o->b->len = (size_t)(o->d - o->b->ptr);
    o->err = lf_buf_grow(o->b, n);
    o->d = o->b->ptr + o->b->len;
    o->lim = o->err ? o->d : o->b->ptr + o->b->cap;
    return !o->err;
}

/* Ends writing: b->len covers what was written. The first error. */
static enum lf_err out_end(struct out *o)
{
    o->b->len = (size_t)(o->d - o->b->ptr);
    return o->err;
}

static inline void put(struct out *o, const char *p, size_t n)
{
    if (n == 0 || (n > (size_t)(o->lim - o->d) && !out_room(o, n)))
        return;
    o->d = lf_stage__put(o->d, p, n);
}

/* Appends s JSON-escaped: what needs no escaping is copied as it is, and only from the
 * first other byte on does the rest go through the escaper. */
static void put_esc(struct out *o, struct lf_str s)
{
    size_t i = lf_json_plain_len(s);
    put(o, s.ptr, i);
    if (i == s.len || o->err)
        return;
    o->b->len = (size_t)(o->d - o->b->ptr);
    o->err = lf_json_escape(o->b, lf_str_make(s.ptr + i, s.len - i));
    o->d = o->b->ptr + o->b->len;
    o->lim = o->err ? o->d : o->b->ptr + o->b->cap;
}

/* Appends s, JSON-escaped unless plain says it needs none. */
static inline void put_str(struct out *o, struct lf_str s, bool plain)
{
    if (plain)
        put(o, s.ptr, s.len);
    else
        put_esc(o, s);
}

/* Writes lit, a literal that starts with the comma before a member, dropping the comma for
 * the first member of its object. */
static inline void put_lit(struct out *o, const char *lit, size_t len)
{
    if (o->first)
        put(o, lit + 1, len - 1);
    else
        put(o, lit, len);
    o->first = false;
}

/* Writes `,"key":` (no comma for the first member of its object); key is escaped unless
 * plain. */
static void put_key(struct out *o, struct lf_str key, bool plain)
{
    put_lit(o, ",\"", 2);
    put_str(o, key, plain);
    put(o, "\":", 2);
}

/* Writes v (0 <= v < 1000) in decimal; printf costs more than the rest of a member. */
static void put_int(struct out *o, int v)
{
    char num[3];
    size_t n = 0;
    if (v >= 100)
        num[n++] = (char)('0' + v / 100);
    if (v >= 10)
        num[n++] = (char)('0' + v / 10 % 10);
    num[n++] = (char)('0' + v % 10);
    put(o, num, n);
}

/* An SD value's body, unescaped (\" \\ \] and nothing else) and JSON-escaped. */
static void put_sd_value(struct out *o, const struct sd_tok *t)
{
    struct lf_str v = t->value;
    size_t i = 0;
    put(o, "\"", 1);
    if (t->value_plain) { /* no backslash, nothing to escape */
        put(o, v.ptr, v.len);
        i = v.len;
    }
    while (i < v.len) {
        const char *bs = memchr(v.ptr + i, '\\', v.len - i);
        size_t run = bs != NULL ? (size_t)(bs - (v.ptr + i)) : v.len - i;
        put_esc(o, lf_str_make(v.ptr + i, run));
        i += run;
        if (i >= v.len)
            break;
        char ch = '\0';
        if (i + 1 < v.len)
            ch = v.ptr[i + 1];
        if (ch == '"' || ch == '\\' || ch == ']') {
            put_esc(o, lf_str_make(v.ptr + i + 1, 1));
            i += 2;
        } else {
            put(o, "\\\\", 2); /* any other backslash is kept as written */
            i++;
        }
    }
    put(o, "\"", 1);
}

/* The SD element whose SD-ID is st->sd[i] as `"ID":{"name":"value",...}`; returns the index
 * of the next element's SD-ID. st->seen holds the IDs so far, then this element's names: a
 * repeated ID, or a name repeated within its element, keeps the first. */
static size_t put_sd_element(struct out *o, struct syslog_state *st, size_t i)
{
    const struct sd_tok *id = &st->sd[i++];
    enum lf_err err = LF_OK;
    bool keep = lf_stage__names_take(&st->seen, 0, id->name, &err);
    size_t ids = st->seen.n;
    if (keep) {
        put_key(o, id->name, id->name_plain);
        put(o, "{", 1);
        o->first = true; /* the element's own members */
    }
    for (; i < st->n_sd && st->sd[i].value.ptr != NULL; i++) {
        const struct sd_tok *t = &st->sd[i];
        if (keep && lf_stage__names_take(&st->seen, ids, t->name, &err)) {
            put_key(o, t->name, t->name_plain);
            put_sd_value(o, t);
        }
    }
    st->seen.n = ids;
    if (keep) {
        put(o, "}", 1);
        o->first = false; /* back at the level of the element, which it wrote */
    }
    o->err = o->err ? o->err : err;
    if (o->err)
        o->lim = o->d;
    return i;
}

static void put_sd(struct out *o, struct syslog_state *st)
{
    put_lit(o, LIT(",\"structured_data\":{"));
    o->first = true;
    lf_stage__names_clear(&st->seen);
    size_t i = 0;
    while (i < st->n_sd && !o->err)
        i = put_sd_element(o, st, i);
    put(o, "}", 1);
    o->first = false;
}

/* True when a member key may be added at the root of an event whose extra is prior. */
static bool free_key(struct lf_str prior, const char *key, size_t len)
{
    return prior.len == 0 || !lf_stage__extra_has(prior, key, len);
}

/* A string member from its literal `,"key":"` when value is present and key is free;
 * value is escaped unless plain. */
static inline void put_free(struct out *o,
                            struct lf_str prior,
                            const char *lit,
                            size_t len,
                            struct lf_str value,
                            bool plain)
{
    if (value.ptr == NULL || !free_key(prior, lit + 2, len - 5))
        return;
    put_lit(o, lit, len);
    put_str(o, value, plain);
    put(o, "\"", 1);
}

/* The members of m, at the level o writes to; prior is the extra to check keys against
 * (empty under a target, where every key is the stage's). */
static void put_members(struct out *o,
                        const struct syslog_spec *sp,
                        struct syslog_state *st,
                        const struct sl_msg *m,
                        struct lf_str prior)
{
    if (m->pri >= 0 && prior.len == 0) { /* the three keys are free: all in one */
        const char *pj = sp->pri_json.ptr + sp->pri_at[m->pri];
        if (!o->first)
            put(o, ",", 1);
        put(o, pj, sp->pri_at[m->pri + 1] - sp->pri_at[m->pri]);
        o->first = false;
    } else if (m->pri >= 0) {
        if (free_key(prior, "priority", 8)) {
            put_lit(o, LIT(",\"priority\":"));
            put_int(o, m->pri);
        }
        if (free_key(prior, "facility", 8)) {
            put_lit(o, LIT(",\"facility\":"));
            put(o, facility_json[m->pri / 8].ptr, facility_json[m->pri / 8].len);
        }
        if (free_key(prior, "severity", 8)) {
            put_lit(o, LIT(",\"severity\":"));
            put(o, severity_json[m->pri % 8].ptr, severity_json[m->pri % 8].len);
        }
    }
    if (m->version > 0 && free_key(prior, "version", 7)) {
        put_lit(o, LIT(",\"version\":"));
        put_int(o, m->version);
    }
    put_free(o, prior, LIT(",\"timestamp\":\""), m->time, true); /* checked: ASCII */
    put_free(o, prior, LIT(",\"hostname\":\""), m->hostname, m->plain & P_HOST);
    put_free(o, prior, LIT(",\"appname\":\""), m->appname, m->plain & P_APP);
    put_free(o, prior, LIT(",\"procid\":\""), m->procid, m->plain & P_PROCID);
    put_free(o, prior, LIT(",\"msgid\":\""), m->msgid, m->plain & P_MSGID);
    if (m->sd.ptr != NULL && free_key(prior, "structured_data", 15))
        put_sd(o, st);
}

/* Renders e's members after its prior extra into st->extra and sets the message. */
static enum lf_err render(const struct syslog_spec *sp,
                          struct syslog_state *st,
                          const struct sl_msg *m,
                          struct lf_event *e)
{
    struct lf_str prior = e->extra;
    struct out o;
    /* Room for the usual case at once: the members are slices of the line (bytes JSON
     * escapes aside), and their keys and literals fit in 512 bytes, 8 per SD part. */
    out_start(&o, &st->extra, prior.len + e->message.len + 512 + 8 * st->n_sd);
    o.first = prior.len == 0;
    put(&o, prior.ptr, prior.len);
    if (sp->target.len == 0) {
        put_members(&o, sp, st, m, prior);
    } else if (free_key(prior, sp->target.name, sp->target.len)) {
        put_key(&o, lf_str_make(sp->target.name, sp->target.len), false);
        put(&o, "{", 1);
        o.first = true;
        put_members(&o, sp, st, m, lf_str_make("", 0));
        put(&o, "}", 1);
        o.first = false;
    }
    if (sp->keep_original && free_key(prior, "event", 5)) {
        put_lit(&o, LIT(",\"event\":{\"original\":\""));
        put_esc(&o, e->message);
        put(&o, "\"}", 2);
    }
    if (m->has_ts)
        e->timestamp_ns = m->ts_ns;
    e->message = m->msg;
    return out_end(&o);
}

static enum lf_err process(const void *spec,
                           void *state,
                           const struct lf_event *ev,
                           int64_t now_ms,
                           const struct lf_stage_out *out)
{
    const struct syslog_spec *sp = spec;
    struct syslog_state *st = state;
    (void)now_ms;
    struct lf_event e = *ev;
    struct lf_str line = ev->message.ptr != NULL ? ev->message : lf_str_make("", 0);
    struct sl_msg m;
    lf_buf_reset(&st->extra);
    enum lf_err err = LF_OK;
    const char *why = parse(sp, st, line, &m, &err);
    if (err) {
        return err;
    } else if (why == NULL) {
        e.message = line;
        err = render(sp, st, &m, &e);
    } else {
        err = lf_buf_append_str(&st->extra, ev->extra);
    }
    return lf_stage__emit_members(&st->extra, ev, &e, why, err, out);
}

const struct lf_stage_ops lf_stage_syslog = {
    .kind = LF_PARSER_SYSLOG,
    LF_STAGE_TABLE_OPS(table),
    .process = process,
};
