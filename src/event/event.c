/* event.c - sources, timestamps and the per-event JSON encoder.
 *
 * An event's JSON is mostly the same for every event of one source, so lf_source_new()
 * renders that part once, in two pieces, and lf_event_encode() pastes them around the
 * four per-event parts:
 *
 *   {"@timestamp":"<ts>","message":"<escaped>",      per event
 *   "log":{"file":{"path":"/p"},"offset":              src->log_head
 *   <offset>[,"flags":[...]]                           per event
 *   },"input":{"id":"app"},"host":{...},...}\n         src->tail
 *
 * The timestamp text is cached per millisecond (struct lf_ts_cache), so a burst of events
 * read within one millisecond formats it once. */
#include "config.h"

#include "logferry/event.h"

#include <jansson.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define TS_HEAD     "{\"@timestamp\":\""
#define MSG_HEAD    "\",\"message\":\""
#define FLAGS_KNOWN (LF_EVENT_MULTILINE | LF_EVENT_TRUNCATED | LF_EVENT_PARTIAL_JOINED)
#define SRC_MAX     ((size_t)1 << 30) /* cap on a source's rendered metadata */

/* Escapes a C string that may hold bytes that are not UTF-8 (metadata such as paths is bytes). */
static enum lf_err escape_lossy(struct lf_buf *out, const char *s)
{
    return lf_json_escape_lossy(out, lf_str_make(s, strlen(s)));
}

/* Checks that fields_json is an object and returns its members' text, trimmed. */
static enum lf_err fields_members(const char *fields_json, struct lf_str *members)
{
    json_error_t jerr;
    json_t *obj = json_loads(fields_json, 0, &jerr);
    bool is_object = obj != NULL && json_is_object(obj);
    json_decref(obj);
    if (!is_object)
        return LF_EINVAL;
    const char *b = strchr(fields_json, '{') + 1;
    const char *e = strrchr(fields_json, '}');
    while (b < e && strchr(" \t\r\n", *b) != NULL)
        b++;
    while (e > b && strchr(" \t\r\n", e[-1]) != NULL)
        e--;
    *members = lf_str_make(b, (size_t)(e - b));
    return LF_OK;
}

static enum lf_err render_log_head(struct lf_source *src)
{
    if (src->path == NULL)
        return lf_buf_append_str(&src->log_head, LF_STR_LIT("\"log\":{\"offset\":"));
    enum lf_err err =
        lf_buf_append_str(&src->log_head, LF_STR_LIT("\"log\":{\"file\":{\"path\":\""));
    if (!err)
        err = escape_lossy(&src->log_head, src->path);
    if (!err)
        err = lf_buf_append_str(&src->log_head, LF_STR_LIT("\"},\"offset\":"));
    return err;
}

static enum lf_err render_tail(struct lf_source *src,
                               const char *host,
                               const char *fields_json,
                               bool fields_under_root)
{
    struct lf_buf *t = &src->tail;
    struct lf_str members = { "", 0 };
    if (fields_json != NULL && fields_members(fields_json, &members))
        return LF_EINVAL;
    enum lf_err err = lf_buf_append_str(t, LF_STR_LIT("},\"input\":{\"id\":\""));
    src->tail_at[0] = 1;
    if (!err)
        err = escape_lossy(t, src->input_id);
    if (!err)
        err = lf_buf_append_str(t, LF_STR_LIT("\"}"));
    src->tail_at[1] = t->len;
    if (!err && host != NULL) {
        err = lf_buf_append_str(t, LF_STR_LIT(",\"host\":{\"name\":\""));
        if (!err)
            err = escape_lossy(t, host);
        if (!err)
            err = lf_buf_append_str(t, LF_STR_LIT("\"}"));
    }
    src->tail_at[2] = t->len;
    if (!err && fields_json != NULL && !fields_under_root) {
        err = lf_buf_append_str(t, LF_STR_LIT(",\"fields\":{"));
        if (!err)
            err = lf_buf_append_str(t, members);
        if (!err)
            err = lf_buf_append(t, "}", 1);
    }
    src->tail_at[3] = t->len;
    if (!err && fields_under_root && members.len > 0) {
        err = lf_buf_append(t, ",", 1);
        if (!err)
            err = lf_buf_append_str(t, members);
    }
    if (!err)
        err = lf_buf_append_str(t, LF_STR_LIT("}\n"));
    return err;
}

enum lf_err lf_source_new(const char *path,
                          const char *input_id,
                          const char *host,
                          const char *fields_json,
                          bool fields_under_root,
                          struct lf_source **out)
{
    if (input_id == NULL)
        return LF_EINVAL;
    struct lf_source *src = calloc(1, sizeof(*src));
    if (src == NULL)
        return LF_ENOMEM;
    src->pinned_offset = UINT64_MAX;
    lf_buf_init(&src->log_head, SRC_MAX);
    lf_buf_init(&src->tail, SRC_MAX);
    enum lf_err err = LF_ENOMEM;
    src->input_id = strdup(input_id);
    if (src->input_id == NULL)
        goto fail;
    if (path != NULL) {
        src->path = strdup(path);
        if (src->path == NULL)
            goto fail;
    }
    err = render_log_head(src);
    if (err)
        goto fail;
    err = render_tail(src, host, fields_json, fields_under_root);
    if (err)
        goto fail;
    *out = src;
    return LF_OK;
fail:
    lf_source_free(src);
    return err;
}

void lf_source_free(struct lf_source *src)
{
    if (src == NULL)
        return;
    lf_buf_release(&src->log_head);
    lf_buf_release(&src->tail);
    free(src->path);
    free(src->input_id);
    free(src);
}

/* Writes d as `width` decimal digits into p. */
static void put_digits(char *p, unsigned d, int width)
{
    for (int i = width - 1; i >= 0; i--) {
        p[i] = (char)('0' + d % 10);
        d /= 10;
    }
}

/* Converts days since 1970-01-01 to a proleptic Gregorian date (era arithmetic: 400-year
 * cycles of 146097 days, years starting in March so the leap day comes last). */
static void civil_from_days(int64_t z, int64_t *y, unsigned *m, unsigned *d)
{
    z += 719468;
    int64_t era = (z >= 0 ? z : z - 146096) / 146097;
    unsigned doe = (unsigned)(z - era * 146097);
    unsigned yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
    unsigned doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    unsigned mp = (5 * doy + 2) / 153;
    *d = doy - (153 * mp + 2) / 5 + 1;
    *m = mp < 10 ? mp + 3 : mp - 9;
    *y = (int64_t)yoe + era * 400 + (*m <= 2);
}

static int64_t floor_div(int64_t a, int64_t b)
{
    int64_t q = a / b;
    return (a % b != 0 && (a < 0) != (b < 0)) ? q - 1 : q;
}

static void format_ms(int64_t ms, char buf[25])
{
    int64_t secs = floor_div(ms, 1000);
    int64_t days = floor_div(secs, 86400);
    unsigned sod = (unsigned)(secs - days * 86400);
    int64_t y;
    unsigned m;
    unsigned d;
    civil_from_days(days, &y, &m, &d);
    memcpy(buf, "0000-00-00T00:00:00.000Z", 25);
    put_digits(buf, (unsigned)y, 4); /* int64 ns spans 1677..2262: always 4 digits */
    put_digits(buf + 5, m, 2);
    put_digits(buf + 8, d, 2);
    put_digits(buf + 11, sod / 3600, 2);
    put_digits(buf + 14, sod / 60 % 60, 2);
    put_digits(buf + 17, sod % 60, 2);
    put_digits(buf + 20, (unsigned)(ms - secs * 1000), 3);
}

void lf_format_timestamp(int64_t ns, char buf[25])
{
    format_ms(floor_div(ns, 1000000), buf);
}

int64_t lf_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

void lf_ts_cache_init(struct lf_ts_cache *c)
{
    c->ms = 0;
    c->set = false;
    c->text[0] = '\0';
}

/* Appends v in decimal. */
static enum lf_err append_u64(struct lf_buf *out, uint64_t v)
{
    char tmp[20];
    size_t i = sizeof(tmp);
    do {
        tmp[--i] = (char)('0' + v % 10);
        v /= 10;
    } while (v != 0);
    return lf_buf_append(out, tmp + i, sizeof(tmp) - i);
}

static enum lf_err append_flags(struct lf_buf *out, unsigned flags)
{
    static const struct {
        unsigned bit;
        struct lf_str name;
    } names[] = {
        { LF_EVENT_MULTILINE, LF_STR_LIT("\"multiline\"") },
        { LF_EVENT_TRUNCATED, LF_STR_LIT("\"truncated\"") },
        { LF_EVENT_PARTIAL_JOINED, LF_STR_LIT("\"partial_joined\"") },
    };
    enum lf_err err = lf_buf_append_str(out, LF_STR_LIT(",\"flags\":["));
    bool first = true;
    for (size_t i = 0; i < sizeof(names) / sizeof(names[0]) && !err; i++) {
        if ((flags & names[i].bit) == 0)
            continue;
        if (!first)
            err = lf_buf_append(out, ",", 1);
        if (!err)
            err = lf_buf_append_str(out, names[i].name);
        first = false;
    }
    if (!err)
        err = lf_buf_append(out, "]", 1);
    return err;
}

/* Appends src's tail after the '}' that closes "log", leaving out the members the event's
 * extra brings itself (LF_EVENT_OWN_*). */
static enum lf_err append_tail(struct lf_buf *out, const struct lf_source *src, unsigned flags)
{
    static const unsigned own[3] = { LF_EVENT_OWN_INPUT, LF_EVENT_OWN_HOST, LF_EVENT_OWN_FIELDS };
    const char *t = src->tail.ptr;
    if ((flags & (LF_EVENT_OWN_INPUT | LF_EVENT_OWN_HOST | LF_EVENT_OWN_FIELDS)) == 0)
        return lf_buf_append(out, t + 1, src->tail.len - 1);
    enum lf_err err = LF_OK;
    for (size_t i = 0; i < 3 && !err; i++) {
        if ((flags & own[i]) == 0)
            err = lf_buf_append(out, t + src->tail_at[i], src->tail_at[i + 1] - src->tail_at[i]);
    }
    if (!err)
        err = lf_buf_append(out, t + src->tail_at[3], src->tail.len - src->tail_at[3]);
    return err;
}

enum lf_err
lf_event_encode_cached(struct lf_buf *out, const struct lf_event *ev, struct lf_ts_cache *c)
{
    const struct lf_source *src = ev->source;
    if (ev->flags & LF_EVENT_DROPPED)
        return LF_OK;
    int64_t ms = floor_div(ev->timestamp_ns, 1000000);
    if (!c->set || c->ms != ms) {
        format_ms(ms, c->text);
        c->ms = ms;
        c->set = true;
    }
    size_t start = out->len;
    /* One grow for the fixed parts and an unescaped message: the common case. */
    size_t need = sizeof(TS_HEAD) + 24 + sizeof(MSG_HEAD) + ev->message.len + 2 +
                  src->log_head.len + 20 + src->tail.len + ev->extra.len + 2;
    enum lf_err err = lf_buf_avail(out) < need ? lf_buf_grow(out, need) : LF_OK;
    if (!err)
        err = lf_buf_append_str(out, LF_STR_LIT(TS_HEAD));
    if (!err)
        err = lf_buf_append(out, c->text, 24);
    if (!err)
        err = lf_buf_append_str(out, LF_STR_LIT(MSG_HEAD));
    if (!err)
        err = lf_json_escape(out, ev->message);
    if (!err)
        err = lf_buf_append(out, "\",", 2);
    if (!err)
        err = lf_buf_append_str(out, lf_buf_str(&src->log_head));
    if (!err)
        err = append_u64(out, ev->offset);
    if (!err && (ev->flags & FLAGS_KNOWN) != 0)
        err = append_flags(out, ev->flags);
    if (!err && ev->extra.len > 0) {
        /* The tail starts with the '}' that closes "log": the stages' members go after it. */
        err = lf_buf_append(out, "},", 2);
        if (!err)
            err = lf_buf_append_str(out, ev->extra);
        if (!err)
            err = append_tail(out, src, ev->flags);
    } else if (!err) {
        err = lf_buf_append_str(out, lf_buf_str(&src->tail));
    }
    if (err)
        out->len = start; /* leave out as it was, like lf_buf_append() */
    return err;
}

enum lf_err lf_event_encode(struct lf_buf *out, const struct lf_event *ev)
{
    struct lf_ts_cache c;
    lf_ts_cache_init(&c);
    return lf_event_encode_cached(out, ev, &c);
}
