/* access_log.c - the access_log stage: nginx and Apache common and combined log lines
 * become ECS members, and the line's own time becomes @timestamp. No regex.
 *
 *   203.0.113.9 - ann [10/Oct/2026:13:55:36 -0700] "GET /a.gif HTTP/1.1" 200 2326 "ref" "ua"
 *   └ %h ┘   %l └%u┘ └──────── %t ─────────────┘ └──── %r ──────────┘ %>s └%b┘ (combined)
 *
 * One pass: space-separated tokens, a bracketed time, quoted fields that end at a quote
 * not escaped by a backslash. Quoted values are unescaped (\" and \\ as Apache writes
 * them, \xHH as nginx does) unless that would give invalid UTF-8, when the text stays as
 * written. The request splits at its first and last space into method, path and
 * "HTTP/version"; one that does not (`-`, a TLS handshake sent to a plain port) leaves the
 * method out and keeps the text as url.original. Members, ECS names as Filebeat's nginx
 * and apache modules write them:
 *
 *   source.address, source.ip (when %h is an IP address), user.name (%u unless "-"),
 *   ident (%l unless "-"), http.request.method, http.request.referrer (unless "-"),
 *   http.version, http.response.status_code (number), http.response.body.bytes (number;
 *   "-" is 0, as Apache means it), url.original, user_agent.original (unless "-").
 *
 * They go at the root or under target and meet the event's members as dissect's do: at the
 * root a top-level name an earlier stage added keeps its value. A line that is not in the
 * format keeps its message and gets error.message. Whatever follows the last field (nginx
 * formats that append $request_time and the like) is ignored. Per event: slices of the
 * line, members in a buffer the state reuses. */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "logferry/utf8.h"
#include "stage_int.h"

struct access_spec {
    struct lf_stage_head head;
    enum lf_access_format format;
    struct lf_stage_target target;
};

struct access_state {
    struct lf_stage_head head;
    struct lf_buf extra; /* the event's extra, rebuilt per event */
    struct lf_buf value; /* one unescaped value */
};

/* The fields of one line, sliced from it; quoted ones still escaped. */
struct access_line {
    struct lf_str host, ident, user, request, referrer, agent;
    int64_t time_ns;
    bool time_ok; /* the time is within what int64 nanoseconds hold */
    int64_t status, bytes;
};

#define S struct access_spec
static const struct lf_stage_opt opts[] = {
    LF_STAGE_TEXT("target", LF_STAGE_OPT_TARGET, S, target, u.access_log.target, "", NULL),
    LF_STAGE_VALUE("format", S, format, u.access_log.format),
    LF_STAGE_OPT_END,
};
#undef S
static const struct lf_stage_slot slots[] = {
    LF_STAGE_BUF(struct access_state, extra),
    LF_STAGE_BUF(struct access_state, value),
    LF_STAGE_SLOT_END,
};
static const struct lf_stage_table table = {
    .name = "access_log",
    .opts = opts,
    .spec_size = sizeof(struct access_spec),
    .state_size = sizeof(struct access_state),
    .slots = slots,
};

/* ---- scanning ---- */

struct cur {
    const char *p;
    const char *end;
};

/* Skips one or more spaces; false when there is none. */
static bool spaces(struct cur *c)
{
    if (c->p >= c->end || *c->p != ' ')
        return false;
    while (c->p < c->end && *c->p == ' ')
        c->p++;
    return true;
}

/* A non-empty run up to the next space or the end. */
static bool token(struct cur *c, struct lf_str *out)
{
    const char *s = c->p;
    const char *sp = memchr(s, ' ', (size_t)(c->end - s));
    c->p = sp != NULL ? sp : c->end;
    *out = lf_str_make(s, (size_t)(c->p - s));
    return out->len > 0;
}

/* A "..." field; *out is its body, still escaped. */
static bool quoted(struct cur *c, struct lf_str *out)
{
    if (c->p >= c->end || *c->p != '"')
        return false;
    const char *s = ++c->p;
    for (;;) {
        const char *q = memchr(c->p, '"', (size_t)(c->end - c->p));
        if (q == NULL)
            return false;
        size_t bs = 0; /* backslashes right before the quote */
        while (q - bs > s && q[-1 - (ptrdiff_t)bs] == '\\')
            bs++;
        c->p = q + 1;
        if (bs % 2 == 0) {
            *out = lf_str_make(s, (size_t)(q - s));
            return true;
        }
    }
}

/* `10/Oct/2026:13:55:36 -0700` (exactly 26 bytes) into l->time_ns. false when it is not
 * such a time; a year outside 1678-2261 parses but leaves time_ok false. */
static bool parse_time(struct lf_str t, struct access_line *l)
{
    static const char months[] = "JanFebMarAprMayJunJulAugSepOctNovDec";
    static const int mdays[] = { 31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31 };
    const char *p = t.ptr;
    if (t.len != 26 || p[2] != '/' || p[6] != '/' || p[11] != ':' || p[14] != ':' || p[17] != ':' ||
        p[20] != ' ' || (p[21] != '+' && p[21] != '-'))
        return false;
    int mon = 0;
    while (mon < 12 && memcmp(months + 3 * mon, p + 3, 3) != 0)
        mon++;
    int day, year, hh, mm, ss, oh, om;
    if (mon == 12 || !lf_stage__digits(p, 2, &day) || !lf_stage__digits(p + 7, 4, &year) ||
        !lf_stage__digits(p + 12, 2, &hh) || !lf_stage__digits(p + 15, 2, &mm) ||
        !lf_stage__digits(p + 18, 2, &ss) || !lf_stage__digits(p + 22, 2, &oh) ||
        !lf_stage__digits(p + 24, 2, &om) || day < 1 || day > mdays[mon] || hh > 23 || mm > 59 ||
        ss > 60 || oh > 23 || om > 59)
        return false;
    bool leap = (year % 4 == 0 && year % 100 != 0) || year % 400 == 0;
    if (mon == 1 && day == 29 && !leap)
        return false;
    l->time_ok = year >= 1678 && year <= 2261;
    int64_t off = (int64_t)(oh * 60 + om) * 60 * (p[21] == '-' ? -1 : 1);
    int64_t secs =
        lf_stage__days_from_civil(year, mon + 1, day) * 86400 + hh * 3600 + mm * 60 + ss - off;
    l->time_ns = l->time_ok ? secs * 1000000000 : 0;
    return true;
}

/* A run of 1 to 18 digits as a number; -1 for anything else. */
static int64_t number(struct lf_str s)
{
    if (s.len == 0 || s.len > 18)
        return -1;
    int64_t v = 0;
    for (size_t i = 0; i < s.len; i++) {
        if (s.ptr[i] < '0' || s.ptr[i] > '9')
            return -1;
        v = v * 10 + (s.ptr[i] - '0');
    }
    return v;
}

/* Splits line into l; false when it is not in the format. */
static bool scan(const struct access_spec *sp, struct lf_str line, struct access_line *l)
{
    struct cur c = { line.ptr, line.ptr + line.len };
    struct lf_str status;
    struct lf_str bytes;
    if (line.len == 0 || !token(&c, &l->host) || !spaces(&c) || !token(&c, &l->ident) ||
        !spaces(&c) || !token(&c, &l->user) || !spaces(&c) || c.p >= c.end || *c.p != '[')
        return false;
    const char *close = memchr(c.p, ']', (size_t)(c.end - c.p));
    if (close == NULL || !parse_time(lf_str_make(c.p + 1, (size_t)(close - c.p - 1)), l))
        return false;
    c.p = close + 1;
    if (!spaces(&c) || !quoted(&c, &l->request) || !spaces(&c) || !token(&c, &status) ||
        !spaces(&c) || !token(&c, &bytes))
        return false;
    l->status = status.len == 3 ? number(status) : -1;
    l->bytes = bytes.len == 1 && bytes.ptr[0] == '-' ? 0 : number(bytes);
    if (l->status < 0 || l->bytes < 0)
        return false;
    if (sp->format != LF_ACCESS_COMBINED)
        return c.p == c.end || *c.p == ' ';
    return spaces(&c) && quoted(&c, &l->referrer) && spaces(&c) && quoted(&c, &l->agent) &&
           (c.p == c.end || *c.p == ' ');
}

/* v unescaped into st->value, or v itself when it has no backslash or unescaping would
 * give invalid UTF-8. */
static struct lf_str unescape(struct access_state *st, struct lf_str v, enum lf_err *err)
{
    if (memchr(v.ptr, '\\', v.len) == NULL)
        return v;
    lf_buf_reset(&st->value);
    *err = lf_buf_grow(&st->value, v.len);
    if (*err)
        return v;
    char *o = st->value.ptr;
    for (size_t i = 0; i < v.len; i++) {
        int hi;
        int lo;
        if (v.ptr[i] != '\\' || i + 1 >= v.len) {
            *o++ = v.ptr[i];
        } else if (v.ptr[i + 1] == '"' || v.ptr[i + 1] == '\\') {
            *o++ = v.ptr[++i];
        } else if (v.ptr[i + 1] == 'x' && i + 3 < v.len &&
                   (hi = lf_stage__hexval(v.ptr[i + 2])) >= 0 &&
                   (lo = lf_stage__hexval(v.ptr[i + 3])) >= 0) {
            *o++ = (char)(hi << 4 | lo);
            i += 3;
        } else {
            *o++ = v.ptr[i];
        }
    }
    struct lf_str out = lf_str_make(st->value.ptr, (size_t)(o - st->value.ptr));
    return lf_utf8_valid(out.ptr, out.len) ? out : v;
}

/* ---- rendering ---- */

/* True when s looks like an IPv4 or IPv6 address (digits and dots with three dots, or hex
 * digits and colons with at least two colons), not a host name. */
static bool is_ip(struct lf_str s)
{
    size_t dots = 0;
    size_t colons = 0;
    for (size_t i = 0; i < s.len; i++) {
        char ch = s.ptr[i];
        if (ch == '.')
            dots++;
        else if (ch == ':')
            colons++;
        else if (!((ch >= '0' && ch <= '9') || (ch >= 'a' && ch <= 'f') ||
                   (ch >= 'A' && ch <= 'F')))
            return false;
    }
    if (colons >= 2)
        return true;
    if (colons > 0 || dots != 3)
        return false;
    for (size_t i = 0; i < s.len; i++) {
        if (s.ptr[i] != '.' && (s.ptr[i] < '0' || s.ptr[i] > '9'))
            return false;
    }
    return true;
}

static bool is_dash(struct lf_str s)
{
    return s.len == 1 && s.ptr[0] == '-';
}

struct out {
    struct lf_buf *b;
    struct access_state *st;
    struct lf_str prior;
    bool rooted;
    bool first;
    enum lf_err err;
};

/* Opens top-level object name unless an earlier stage has that key at the root; false
 * when it is not to be written. */
static bool open_top_n(struct out *o, const char *name, size_t len)
{
    if (o->err || (o->rooted && o->prior.len > 0 && lf_stage__extra_has(o->prior, name, len)))
        return false;
    o->err = lf_stage__append_key(o->b, &o->first, name, len);
    return !o->err;
}

#define open_top(o, lit) open_top_n(o, lit, sizeof(lit) - 1)

static void put_n(struct out *o, const char *text, size_t n)
{
    if (!o->err)
        o->err = lf_buf_append(o->b, text, n);
}

/* Appends a string literal. */
#define put(o, lit) put_n(o, lit, sizeof(lit) - 1)

/* Appends "v" (v unescaped first when quoted). */
static void put_string(struct out *o, struct lf_str v, bool escaped)
{
    if (escaped)
        v = unescape(o->st, v, &o->err);
    put(o, "\"");
    if (!o->err)
        o->err = lf_json_escape(o->b, v);
    put(o, "\"");
}

static void put_request(struct out *o, const struct access_line *l)
{
    struct lf_str r = l->request;
    const char *first = memchr(r.ptr, ' ', r.len);
    const char *last = first;
    for (const char *p = r.ptr + r.len; first != NULL && p > first; p--) {
        if (p[-1] == ' ') {
            last = p - 1;
            break;
        }
    }
    bool method = first != NULL && first > r.ptr;
    for (const char *p = r.ptr; method && p < first; p++)
        method = *p >= 'A' && *p <= 'Z';
    bool version =
        method && last > first && r.ptr + r.len - last > 6 && memcmp(last + 1, "HTTP/", 5) == 0;
    const char *path_end = version ? last : r.ptr + r.len;
    bool referrer = l->referrer.ptr != NULL && !is_dash(l->referrer);
    if (open_top(o, "http")) {
        put(o, "{");
        if (method || referrer) {
            put(o, "\"request\":{");
            if (method) {
                put(o, "\"method\":");
                put_string(o, lf_str_make(r.ptr, (size_t)(first - r.ptr)), false);
            }
            if (referrer) {
                if (method)
                    put(o, ",");
                put(o, "\"referrer\":");
                put_string(o, l->referrer, true);
            }
            put(o, "},");
        }
        if (version) {
            put(o, "\"version\":");
            put_string(o, lf_str_make(last + 6, (size_t)(r.ptr + r.len - last - 6)), true);
            put(o, ",");
        }
        put(o, "\"response\":{\"status_code\":");
        if (!o->err)
            o->err = lf_stage__append_int(o->b, l->status);
        put(o, ",\"body\":{\"bytes\":");
        if (!o->err)
            o->err = lf_stage__append_int(o->b, l->bytes);
        put(o, "}}}");
    }
    if (is_dash(r))
        return;
    struct lf_str path = method ? lf_str_make(first + 1, (size_t)(path_end - first - 1)) : r;
    if (path.len > 0 && open_top(o, "url")) {
        put(o, "{\"original\":");
        put_string(o, path, true);
        put(o, "}");
    }
}

/* Appends l's members after e's prior extra into st->extra. */
static enum lf_err render(const struct access_spec *sp,
                          struct access_state *st,
                          const struct access_line *l,
                          struct lf_str prior)
{
    struct lf_buf *b = &st->extra;
    struct out o = { b, st, prior, sp->target.len == 0, true, LF_OK };
    if (!lf_stage__open_members(b, prior, &sp->target, &o.err))
        return o.err;
    o.first = !o.rooted || b->len == 0;
    if (open_top(&o, "source")) {
        put(&o, "{\"address\":");
        put_string(&o, l->host, false);
        if (is_ip(l->host)) {
            put(&o, ",\"ip\":");
            put_string(&o, l->host, false);
        }
        put(&o, "}");
    }
    if (!is_dash(l->user) && open_top(&o, "user")) {
        put(&o, "{\"name\":");
        put_string(&o, l->user, false);
        put(&o, "}");
    }
    if (!is_dash(l->ident) && open_top(&o, "ident"))
        put_string(&o, l->ident, false);
    put_request(&o, l);
    if (l->agent.ptr != NULL && !is_dash(l->agent) && open_top(&o, "user_agent")) {
        put(&o, "{\"original\":");
        put_string(&o, l->agent, true);
        put(&o, "}");
    }
    if (!o.rooted)
        put(&o, "}");
    return o.err;
}

static enum lf_err process(const void *spec,
                           void *state,
                           const struct lf_event *ev,
                           int64_t now_ms,
                           const struct lf_stage_out *out)
{
    const struct access_spec *sp = spec;
    struct access_state *st = state;
    (void)now_ms;
    struct lf_event e = *ev;
    struct access_line l;
    l.referrer = lf_str_make(NULL, 0);
    l.agent = lf_str_make(NULL, 0);
    l.time_ok = false;
    const char *why = NULL;
    lf_buf_reset(&st->extra);
    enum lf_err err = LF_OK;
    struct lf_str line = ev->message.ptr != NULL ? ev->message : lf_str_make("", 0);
    if (scan(sp, line, &l)) {
        err = render(sp, st, &l, ev->extra);
        if (l.time_ok)
            e.timestamp_ns = l.time_ns;
        else
            why = "access_log: the time is out of range; @timestamp is the time read";
    } else {
        err = lf_buf_append_str(&st->extra, ev->extra);
        why = sp->format == LF_ACCESS_COMBINED
                  ? "access_log: the line is not in combined log format"
                  : "access_log: the line is not in common log format";
    }
    return lf_stage__emit_members(&st->extra, ev, &e, why, err, out);
}

const struct lf_stage_ops lf_stage_access_log = {
    .kind = LF_PARSER_ACCESS_LOG,
    LF_STAGE_TABLE_OPS(table),
    .process = process,
};
