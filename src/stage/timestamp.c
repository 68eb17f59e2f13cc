/* timestamp.c - the timestamp stage: a member's time becomes the event's @timestamp.
 *
 *   extra  "ts":"2026-11-30 12:00:01.123","level":"warn"      field ts, formats [layout]
 *          └─ member ─────────────────────┘                   timezone Europe/Berlin
 *   out    @timestamp 2026-11-30T11:00:01.123Z; with remove_field: "level":"warn"
 *
 * field names a member an earlier stage (ndjson, dissect, kv, syslog) added, a.b.c going
 * into objects ("message" reads the message itself). Its value, a JSON string or number,
 * is tried against each format in order (lib: util/timefmt.c, zones: util/tz.c, both
 * compiled here once); the first that reads all of it sets timestamp_ns. remove_field then
 * drops the member. A missing member, or a value no format reads, keeps the read time and
 * adds error.message (unless the event has one already). The read time is also what a
 * year-less time (rfc3164) is placed against.
 * Per event: no allocation; the members are rebuilt into one reused buffer only when the
 * member is removed from between others or an error added (a first or last member removed
 * leaves a slice of the event's members). */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "logferry/timefmt.h"
#include "logferry/tz.h"
#include "stage_int.h"

#define TS_MAX_VALUE 128 /* an escaped string value is unescaped into this much stack */

struct ts_spec {
    struct lf_stage_head head;
    struct lf_buf field;         /* JSON-escaped, as keys are compared */
    char *timezone;              /* owned; as configured */
    bool from_message;           /* field "message": the message itself */
    struct lf_timefmt **formats; /* owned */
    size_t n_formats;
    struct lf_tz *tz; /* owned; the formats borrow it */
    bool remove_field;
    bool ignore_missing; /* an event without the member passes untouched */
    struct lf_buf why_missing; /* error texts, JSON-safe, NUL-terminated */
    struct lf_buf why_unparsed;
};

struct ts_state {
    struct lf_stage_head head;
    struct lf_buf extra; /* the event's extra when it changes */
};

/* Frees what build() made. */
static void release(void *spec)
{
    struct ts_spec *sp = spec;
    for (size_t i = 0; sp->formats != NULL && i < sp->n_formats; i++)
        lf_timefmt_free(sp->formats[i]);
    free(sp->formats);
    lf_tz_free(sp->tz);
    lf_buf_release(&sp->why_missing);
    lf_buf_release(&sp->why_unparsed);
}

/* Fills the error texts of sp from its field, JSON-escaped as error.message must hold it. */
static enum lf_err set_texts(struct ts_spec *sp)
{
    enum lf_err err = LF_OK;
    struct lf_buf *why[2] = { &sp->why_missing, &sp->why_unparsed };
    const char *tail[2] = { " is missing", " matches none of the formats" };
    for (size_t i = 0; i < 2 && !err; i++) {
        err = lf_buf_append_cstr(why[i], "timestamp: ");
        if (!err)
            err = lf_buf_append_str(why[i], lf_buf_str(&sp->field));
        if (!err)
            err = lf_buf_append(why[i], tail[i], strlen(tail[i]) + 1); /* with the NUL */
    }
    return err;
}

static enum lf_err
compile_formats(struct ts_spec *sp, const struct lf_parser_conf *pc, struct lf_errbuf *eb)
{
    static const char *const defaults[] = { "rfc3339", "rfc3164" };
    size_t n = pc->u.timestamp.n_formats;
    const char *const *names = n > 0 ? (const char *const *)pc->u.timestamp.formats : defaults;
    if (n == 0)
        n = sizeof(defaults) / sizeof(defaults[0]);
    sp->formats = calloc(n, sizeof(*sp->formats));
    if (sp->formats == NULL)
        return LF_ENOMEM;
    sp->n_formats = n;
    for (size_t i = 0; i < n; i++) {
        struct lf_errbuf sub = { "" };
        enum lf_err err = lf_timefmt_new(names[i], sp->tz, &sp->formats[i], &sub);
        if (err)
            return err == LF_ECONFIG ? lf_fail(eb, err, "timestamp: %s", sub.msg) : err;
    }
    return LF_OK;
}

/* Loads the zone and the formats, after the rows. */
static enum lf_err build(void *spec, const struct lf_parser_conf *pc, struct lf_errbuf *eb)
{
    struct ts_spec *sp = spec;
    sp->from_message = sp->field.len == 7 && memcmp(sp->field.ptr, "message", 7) == 0;
    if (sp->from_message && sp->remove_field)
        return lf_fail(eb, LF_ECONFIG, "timestamp: remove_field cannot remove the message");
    lf_buf_init(&sp->why_missing, SIZE_MAX);
    lf_buf_init(&sp->why_unparsed, SIZE_MAX);
    struct lf_errbuf sub = { "" };
    enum lf_err err = lf_tz_load(sp->timezone, &sp->tz, &sub);
    if (err == LF_ECONFIG)
        err = lf_fail(eb, err, "timestamp: timezone %s: %s", sp->timezone, sub.msg);
    if (!err)
        err = compile_formats(sp, pc, eb);
    return err ? err : set_texts(sp);
}

#define S struct ts_spec
static const struct lf_stage_opt opts[] = {
    LF_STAGE_TEXT("field", LF_STAGE_OPT_ESCAPED, S, field, u.timestamp.field, "timestamp",
                  "field must not be empty"),
    LF_STAGE_TEXT("timezone", LF_STAGE_OPT_STRING, S, timezone, u.timestamp.timezone, "UTC",
                  NULL),
    LF_STAGE_VALUE("remove_field", S, remove_field, u.timestamp.remove_field),
    LF_STAGE_VALUE("ignore_missing", S, ignore_missing, u.timestamp.ignore_missing),
    LF_STAGE_OPT_END,
};
#undef S
static const struct lf_stage_slot slots[] = {
    LF_STAGE_BUF(struct ts_state, extra),
    LF_STAGE_SLOT_END,
};
static const struct lf_stage_table table = {
    .name = "timestamp",
    .opts = opts,
    .spec_size = sizeof(struct ts_spec),
    .build = build,
    .release = release,
    .state_size = sizeof(struct ts_state),
    .slots = slots,
};

static struct lf_str skip_ws(struct lf_str s)
{
    while (s.len > 0 && (*s.ptr == ' ' || *s.ptr == '\t' || *s.ptr == '\n' || *s.ptr == '\r'))
        s.ptr++, s.len--;
    return s;
}

/* The value of member m (`"key":value`) whose key body is k. */
static struct lf_str member_value(struct lf_str m, struct lf_str k)
{
    size_t at = (size_t)(k.ptr - m.ptr) + k.len + 1; /* past the closing quote */
    struct lf_str v = skip_ws(lf_str_make(m.ptr + at, m.len - at));
    if (v.len > 0 && *v.ptr == ':')
        v.ptr++, v.len--;
    return skip_ws(v);
}

/* Finds the member at the dotted path in the members list: a key equal to the rest of the
 * path wins over one that only starts it. */
static bool find_member(
    struct lf_str list, const char *path, size_t len, struct lf_str *member, struct lf_str *value)
{
    for (;;) {
        struct lf_str k;
        struct lf_str m;
        struct lf_str rest = list;
        struct lf_str into = { NULL, 0 };
        size_t into_key = 0;
        while (lf_stage__json_next_member(&rest, &k, &m)) {
            if (k.len == len && memcmp(k.ptr, path, len) == 0) {
                *member = m;
                *value = member_value(m, k);
                return true;
            }
            if (into.ptr == NULL && k.len < len && path[k.len] == '.' &&
                memcmp(k.ptr, path, k.len) == 0) {
                struct lf_str v = member_value(m, k);
                if (v.len >= 2 && v.ptr[0] == '{') {
                    into = lf_str_make(v.ptr + 1, v.len - 2);
                    into_key = k.len;
                }
            }
        }
        if (into.ptr == NULL)
            return false;
        list = into;
        path += into_key + 1;
        len -= into_key + 1;
    }
}

static int hex(char c)
{
    return c >= '0' && c <= '9'   ? c - '0'
           : c >= 'a' && c <= 'f' ? c - 'a' + 10
           : c >= 'A' && c <= 'F' ? c - 'A' + 10
                                  : -1;
}

/* The text a JSON value holds for a time: a string's body (unescaped into buf when it has
 * escapes; only ASCII ones can be part of a time) or a number as written. false for other
 * values. */
static bool value_text(struct lf_str v, char *buf, struct lf_str *out)
{
    if (v.len > 0 && (*v.ptr == '-' || (*v.ptr >= '0' && *v.ptr <= '9'))) {
        *out = v;
        return true;
    }
    if (v.len < 2 || v.ptr[0] != '"' || v.ptr[v.len - 1] != '"')
        return false;
    struct lf_str s = lf_str_make(v.ptr + 1, v.len - 2);
    if (memchr(s.ptr, '\\', s.len) == NULL) {
        *out = s;
        return true;
    }
    size_t n = 0;
    for (size_t i = 0; i < s.len; i++) {
        char c = s.ptr[i];
        if (c == '\\' && i + 1 < s.len) {
            char e = s.ptr[++i];
            if (e == 'u' && i + 4 < s.len && s.ptr[i + 1] == '0' && s.ptr[i + 2] == '0' &&
                hex(s.ptr[i + 3]) >= 0 && hex(s.ptr[i + 4]) >= 0 && hex(s.ptr[i + 3]) < 8) {
                c = (char)(hex(s.ptr[i + 3]) * 16 + hex(s.ptr[i + 4]));
                i += 4;
            } else if (e == '"' || e == '\\' || e == '/') {
                c = e;
            } else {
                return false; /* \n, \t, non-ASCII: not part of any time */
            }
        }
        if (n == TS_MAX_VALUE)
            return false;
        buf[n++] = c;
    }
    *out = lf_str_make(buf, n);
    return true;
}

/* extra without member m (a part of it), and the comma that joined it, in *out: a slice of
 * extra when m is its first or last member, else copied into b. */
static enum lf_err
without_member(struct lf_buf *b, struct lf_str extra, struct lf_str m, struct lf_str *out)
{
    size_t start = (size_t)(m.ptr - extra.ptr);
    size_t end = start + m.len;
    size_t i = start;
    while (i > 0 && (extra.ptr[i - 1] == ' ' || extra.ptr[i - 1] == '\t'))
        i--;
    if (i > 0 && extra.ptr[i - 1] == ',') {
        start = i - 1;
    } else {
        size_t j = end;
        while (j < extra.len && (extra.ptr[j] == ' ' || extra.ptr[j] == '\t'))
            j++;
        if (j < extra.len && extra.ptr[j] == ',')
            end = j + 1;
    }
    if (start == 0 || end == extra.len) { /* no copy: what is left is one piece */
        *out = start == 0 ? lf_str_make(extra.ptr + end, extra.len - end)
                          : lf_str_make(extra.ptr, start);
        return LF_OK;
    }
    lf_buf_reset(b);
    enum lf_err err = lf_buf_append(b, extra.ptr, start);
    err = err ? err : lf_buf_append(b, extra.ptr + end, extra.len - end);
    *out = lf_buf_str(b);
    return err;
}

/* Reads the time of e's field into *ns; *why when there is none. */
static bool read_time(const struct ts_spec *sp,
                      const struct lf_event *e,
                      struct lf_str *member,
                      int64_t *ns,
                      const char **why)
{
    char buf[TS_MAX_VALUE];
    struct lf_str text;
    struct lf_str value;
    if (sp->from_message) {
        text = e->message.ptr != NULL ? e->message : lf_str_make("", 0);
    } else if (!find_member(e->extra, sp->field.ptr, sp->field.len, member, &value)) {
        *why = sp->why_missing.ptr;
        return false;
    } else if (!value_text(value, buf, &text)) {
        *why = sp->why_unparsed.ptr;
        return false;
    }
    for (size_t i = 0; i < sp->n_formats; i++) {
        if (lf_timefmt_parse(sp->formats[i], text.ptr, text.len, e->timestamp_ns, ns))
            return true;
    }
    *why = sp->why_unparsed.ptr;
    return false;
}

static enum lf_err process(const void *spec,
                           void *state,
                           const struct lf_event *ev,
                           int64_t now_ms,
                           const struct lf_stage_out *out)
{
    const struct ts_spec *sp = spec;
    struct ts_state *st = state;
    (void)now_ms;
    struct lf_event e = *ev;
    struct lf_str member = { NULL, 0 };
    const char *why = NULL;
    int64_t ns = 0;
    enum lf_err err = LF_OK;
    if (read_time(sp, &e, &member, &ns, &why)) {
        e.timestamp_ns = ns;
        if (sp->remove_field && member.ptr != NULL)
            err = without_member(&st->extra, ev->extra, member, &e.extra);
    } else if (why != sp->why_missing.ptr || !sp->ignore_missing) {
        /* (a missing member with ignore_missing: the read time stays, without an error) */
        lf_buf_reset(&st->extra);
        err = lf_buf_append_str(&st->extra, ev->extra);
        return lf_stage__emit_members(&st->extra, ev, &e, why, err, out);
    }
    return err ? err : out->emit(out->arg, &e);
}

const struct lf_stage_ops lf_stage_timestamp = {
    .kind = LF_PARSER_TIMESTAMP,
    LF_STAGE_TABLE_OPS(table),
    .process = process,
};
