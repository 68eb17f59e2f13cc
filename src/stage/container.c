/* container.c - the container stage: CRI and Docker json-file lines become their message.
 *
 *   CRI:     2026-11-30T01:02:03.456789012Z stdout P first half of a long line
 *            2026-11-30T01:02:03.456789013Z stdout F  and its end
 *   Docker:  {"log":"first half","stream":"stderr","time":"2026-11-30T01:02:03.4Z"}
 *            {"log":" and its end\n","stream":"stderr","time":"2026-11-30T01:02:03.5Z"}
 *
 * A runtime splits long lines into partial fragments (CRI tag P; a Docker "log" without a
 * trailing newline) and ends them with a final one. Fragments are joined per stream, so a
 * stdout partial never swallows stderr text, into a buffer the state owns, bounded by the
 * input's max_line_bytes (past it the rest is skipped and the event flagged truncated).
 * While one stream's partial is held, the other stream's complete lines go out at once:
 * they may overtake it, and held_offset keeps the registry from passing the held bytes.
 *
 * The runtime's time becomes @timestamp (RFC 3339 parsed by hand, rfc3339.c).
 * `"stream":"..."` and, for /var/log/containers/<pod>_<ns>_<container>-<id>.log, the
 * Kubernetes members are rendered once per source and pasted into every event's extra.
 * A line in neither format passes through unchanged with "error":{"message":...}; it is
 * counted, never dropped. Nothing is allocated per line once the buffers have grown. */
#include "config.h"

#include <stdlib.h>
#include <string.h>
#ifdef __SSE2__
#include <emmintrin.h>
#endif

#include "logferry/kube.h"
#include "stage_int.h"

enum { STDOUT_IDX = 0, STDERR_IDX = 1, N_STREAMS = 2 };

struct container_spec {
    struct lf_stage_head head;
    enum lf_container_format format;
    enum lf_container_stream stream; /* which stream passes; the other is dropped */
    size_t max_bytes;                /* bound on a joined message: max_line_bytes */
};

/* One stream's partial line, held until its final fragment. */
struct partial {
    struct lf_buf msg;   /* the fragments joined so far (capped at max_bytes) */
    bool active;         /* a fragment is held */
    bool cut;            /* max_bytes was reached: the rest is skipped */
    unsigned flags;      /* LF_EVENT_* of the fragments (the reader may have cut one) */
    uint64_t offset;     /* source offset of the first fragment */
    uint64_t end_offset; /* just past the last fragment */
    int64_t ts_ns;       /* the runtime's time of the first fragment */
};

struct container_state {
    struct lf_stage_head head;
    struct partial part[N_STREAMS];
    struct lf_stage_time_memo memo;
    struct lf_buf text;             /* the decoded Docker "log" of the line in hand */
    struct lf_buf extra;            /* extra when it must be rendered per event */
    struct lf_buf meta[N_STREAMS];  /* `"stream":"stdout"` + Kubernetes members */
    struct lf_buf kube;             /* `,"kubernetes":{...},"container":{...}` or empty */
    const struct lf_source *meta_src; /* the source meta was rendered for */
    const char *meta_path;            /* and its path then */
    bool meta_set;
    struct lf_kube_names names;     /* of meta_path, when it names a container's log */
    bool has_names;
    struct lf_kube_view view;       /* the API server's records kube was rendered from */
    uint64_t kube_gen;              /* the cache's generation when they were looked up */
    const struct lf_kube_cache *kube_cache; /* the cache they came from (NULL: none) */
    bool missed;                    /* counted as shipped without them */
    uint64_t malformed; /* lines passed through with error.message */
};

/* A line, parsed. text is borrowed from the event (CRI) or from state->text (Docker). */
struct cline {
    int stream;
    bool partial;
    int64_t ts_ns;
    struct lf_str text;
};

/* ---- CRI ---- */

static bool stream_of(struct lf_str s, int *out)
{
    if (s.len == 6 && memcmp(s.ptr, "stdout", 6) == 0)
        *out = STDOUT_IDX;
    else if (s.len == 6 && memcmp(s.ptr, "stderr", 6) == 0)
        *out = STDERR_IDX;
    else
        return false;
    return true;
}

/* Splits off the field up to the next space of *rest; false when there is no space. */
static bool next_field(struct lf_str *rest, struct lf_str *field)
{
    const char *sp = memchr(rest->ptr, ' ', rest->len);
    if (sp == NULL)
        return false;
    *field = lf_str_make(rest->ptr, (size_t)(sp - rest->ptr));
    rest->len -= field->len + 1;
    rest->ptr = sp + 1;
    return true;
}

/* `<time> <stream> <tags> <message>`; tags are P or F, optionally followed by `:more`. An
 * F line with an empty message may lack the space after the tag. */
static const char *parse_cri(struct container_state *st, struct lf_str msg, struct cline *ln)
{
    struct lf_str rest = msg;
    struct lf_str f;
    if (!next_field(&rest, &f) || !lf_stage__parse_rfc3339(&st->memo, f.ptr, f.len, &ln->ts_ns))
        return "container: no RFC 3339 time at the start of the line";
    if (!next_field(&rest, &f) || !stream_of(f, &ln->stream))
        return "container: no stdout or stderr after the time";
    if (!next_field(&rest, &f)) {
        f = rest;
        rest = lf_str_make(rest.ptr + rest.len, 0);
    }
    if (f.len == 0 || (f.ptr[0] != 'P' && f.ptr[0] != 'F') || (f.len > 1 && f.ptr[1] != ':'))
        return "container: CRI tag is neither P nor F";
    ln->partial = f.ptr[0] == 'P';
    ln->text = rest;
    return NULL;
}

/* ---- Docker json-file ---- */

struct jcur {
    const char *p;
    const char *end;
};

static inline void skip_ws(struct jcur *c)
{
    while (c->p < c->end && (unsigned char)*c->p <= ' ' &&
           (*c->p == ' ' || *c->p == '\t' || *c->p == '\r' || *c->p == '\n'))
        c->p++;
}

size_t lf_stage__json_plain_run(const char *s, size_t n)
{
    const unsigned char *p = (const unsigned char *)s;
    size_t i = 0;
#ifdef __SSE2__
    /* 16 bytes per step (SSE2 is part of x86-64); the first bit set is the end. */
    const __m128i quote = _mm_set1_epi8('"');
    const __m128i bslash = _mm_set1_epi8('\\');
    const __m128i ctl = _mm_set1_epi8(0x1f);
    for (; n - i >= 16; i += 16) {
        __m128i v = _mm_loadu_si128((const __m128i *)(const void *)(p + i));
        __m128i hit = _mm_or_si128(_mm_or_si128(_mm_cmpeq_epi8(v, quote), _mm_cmpeq_epi8(v, bslash)),
                                   _mm_cmpeq_epi8(_mm_max_epu8(v, ctl), ctl));
        unsigned m = (unsigned)(_mm_movemask_epi8(hit) | _mm_movemask_epi8(v));
        if (m != 0)
            return i + (size_t)__builtin_ctz(m);
    }
#endif
    while (i < n && p[i] >= 0x20 && p[i] < 0x80 && p[i] != '"' && p[i] != '\\')
        i++;
    return i;
}

/* Finds the string at c (which must start with '"'); *raw is its body, still escaped. */
static bool scan_string(struct jcur *c, struct lf_str *raw, bool *escaped)
{
    if (c->p >= c->end || *c->p != '"')
        return false;
    const char *start = ++c->p;
    *escaped = false;
    for (;;) {
        c->p += lf_stage__json_plain_run(c->p, (size_t)(c->end - c->p));
        if (c->p >= c->end)
            return false;
        if (*c->p == '"')
            break;
        if (*c->p == '\\') {
            if (c->end - c->p < 2)
                return false;
            *escaped = true;
            c->p++;
        }
        c->p++; /* the escaped byte, or a control byte or one >= 0x80: data here */
    }
    *raw = lf_str_make(start, (size_t)(c->p - start));
    c->p++;
    return true;
}

/* Skips any JSON value (nested up to 64 levels); lenient about number syntax. */
static bool skip_value(struct jcur *c)
{
    int depth = 0;
    do {
        skip_ws(c);
        if (c->p >= c->end)
            return false;
        struct lf_str raw;
        bool esc;
        char ch = *c->p;
        if (ch == '"') {
            if (!scan_string(c, &raw, &esc))
                return false;
        } else if (ch == '{' || ch == '[') {
            if (++depth > 64)
                return false;
            c->p++;
        } else if (ch == '}' || ch == ']') {
            if (--depth < 0)
                return false;
            c->p++;
        } else if (ch == ',' || ch == ':') {
            c->p++;
        } else {
            const char *start = c->p;
            while (c->p < c->end && strchr(",:]} \t\r\n\"{[", *c->p) == NULL)
                c->p++;
            if (c->p == start)
                return false;
        }
    } while (depth > 0);
    return true;
}

bool lf_stage__json_next_member(struct lf_str *rest, struct lf_str *key, struct lf_str *member)
{
    /* An empty list may be { NULL, 0 } (an event without extra): NULL + 0 is undefined. */
    if (rest->len == 0)
        return false;
    struct jcur c = { rest->ptr, rest->ptr + rest->len };
    skip_ws(&c);
    if (c.p < c.end && *c.p == ',')
        c.p++;
    skip_ws(&c);
    if (c.p >= c.end)
        return false;
    const char *start = c.p;
    bool esc;
    if (!scan_string(&c, key, &esc))
        return false;
    skip_ws(&c);
    if (c.p >= c.end || *c.p++ != ':' || !skip_value(&c))
        return false;
    *member = lf_str_make(start, (size_t)(c.p - start));
    *rest = lf_str_make(c.p, (size_t)(c.end - c.p));
    return true;
}

static int hexval(char ch)
{
    if (ch >= '0' && ch <= '9')
        return ch - '0';
    if (ch >= 'a' && ch <= 'f')
        return ch - 'a' + 10;
    if (ch >= 'A' && ch <= 'F')
        return ch - 'A' + 10;
    return -1;
}

static bool hex4(const char *p, const char *end, unsigned *out)
{
    if (end - p < 4)
        return false;
    unsigned v = 0;
    for (int i = 0; i < 4; i++) {
        int h = hexval(p[i]);
        if (h < 0)
            return false;
        v = v << 4 | (unsigned)h;
    }
    *out = v;
    return true;
}

static size_t utf8_put(char *o, unsigned cp)
{
    if (cp < 0x80) {
        o[0] = (char)cp;
        return 1;
    }
    if (cp < 0x800) {
        o[0] = (char)(0xC0 | cp >> 6);
        o[1] = (char)(0x80 | (cp & 0x3F));
        return 2;
    }
    if (cp < 0x10000) {
        o[0] = (char)(0xE0 | cp >> 12);
        o[1] = (char)(0x80 | (cp >> 6 & 0x3F));
        o[2] = (char)(0x80 | (cp & 0x3F));
        return 3;
    }
    o[0] = (char)(0xF0 | cp >> 18);
    o[1] = (char)(0x80 | (cp >> 12 & 0x3F));
    o[2] = (char)(0x80 | (cp >> 6 & 0x3F));
    o[3] = (char)(0x80 | (cp & 0x3F));
    return 4;
}

/* Decodes \u escapes at p (after the 'u'), pairing surrogates; a lone one becomes U+FFFD.
 * Returns the bytes of p consumed, 0 when the hex digits are bad. */
static size_t decode_u(const char *p, const char *end, unsigned *cp)
{
    unsigned hi;
    if (!hex4(p, end, &hi))
        return 0;
    *cp = hi;
    if (hi < 0xD800 || hi > 0xDFFF)
        return 4;
    unsigned lo;
    if (hi < 0xDC00 && end - p >= 10 && p[4] == '\\' && p[5] == 'u' && hex4(p + 6, end, &lo) &&
        lo >= 0xDC00 && lo <= 0xDFFF) {
        *cp = 0x10000 + ((hi - 0xD800) << 10) + (lo - 0xDC00);
        return 10;
    }
    *cp = 0xFFFD;
    return 4;
}

char lf_stage__json_simple_escape(char e)
{
    switch (e) {
    case '"':
    case '\\':
    case '/':
        return e;
    case 'b':
        return '\b';
    case 'f':
        return '\f';
    case 'n':
        return '\n';
    case 'r':
        return '\r';
    case 't':
        return '\t';
    default:
        return '\0';
    }
}

/* Appends the JSON string body raw, unescaped, to out (which has room for raw.len bytes:
 * decoding never grows the text). false on a bad escape. */
static bool unescape(struct lf_str raw, struct lf_buf *out)
{
    const char *p = raw.ptr;
    const char *end = raw.ptr + raw.len;
    char *o = out->ptr + out->len;
    while (p < end) {
        const char *bs = memchr(p, '\\', (size_t)(end - p));
        size_t plain = bs != NULL ? (size_t)(bs - p) : (size_t)(end - p);
        memcpy(o, p, plain);
        o += plain;
        p += plain;
        if (bs == NULL || ++p >= end)
            break;
        char e = *p++;
        char ch = lf_stage__json_simple_escape(e);
        if (ch != '\0') {
            *o++ = ch;
            continue;
        }
        unsigned cp;
        size_t used = e == 'u' ? decode_u(p, end, &cp) : 0;
        if (used == 0)
            return false;
        p += used;
        o += utf8_put(o, cp);
    }
    out->len = (size_t)(o - out->ptr);
    return true;
}

struct docker_fields {
    struct lf_str log;
    bool log_escaped;
    struct lf_str stream;
    struct lf_str time;
    unsigned seen; /* 1 log, 2 stream, 4 time */
};

static bool docker_member(struct jcur *c, struct docker_fields *df)
{
    struct lf_str key;
    struct lf_str val;
    bool esc;
    if (!scan_string(c, &key, &esc))
        return false;
    skip_ws(c);
    if (c->p >= c->end || *c->p != ':')
        return false;
    c->p++;
    skip_ws(c);
    unsigned bit = 0;
    if (!esc && key.len == 3 && memcmp(key.ptr, "log", 3) == 0)
        bit = 1;
    else if (!esc && key.len == 6 && memcmp(key.ptr, "stream", 6) == 0)
        bit = 2;
    else if (!esc && key.len == 4 && memcmp(key.ptr, "time", 4) == 0)
        bit = 4;
    if (bit == 0)
        return skip_value(c);
    if (!scan_string(c, &val, &esc))
        return false;
    df->seen |= bit;
    if (bit == 1) {
        df->log = val;
        df->log_escaped = esc;
    } else if (bit == 2) {
        df->stream = val;
    } else {
        df->time = val;
    }
    return true;
}

static const char *parse_docker(struct container_state *st, struct lf_str msg, struct cline *ln,
                                enum lf_err *err)
{
    struct jcur c = { msg.ptr, msg.ptr + msg.len };
    struct docker_fields df = { 0 };
    skip_ws(&c);
    if (c.p >= c.end || *c.p++ != '{')
        return "container: not a JSON object";
    skip_ws(&c);
    while (c.p < c.end && *c.p != '}') {
        if (!docker_member(&c, &df))
            return "container: invalid Docker JSON";
        skip_ws(&c);
        if (c.p < c.end && *c.p == ',') {
            c.p++;
            skip_ws(&c);
        }
    }
    if (c.p >= c.end)
        return "container: invalid Docker JSON";
    c.p++;
    skip_ws(&c);
    if (c.p != c.end)
        return "container: bytes after the Docker JSON object";
    if (df.seen != 7)
        return "container: Docker JSON lacks log, stream or time";
    if (!stream_of(df.stream, &ln->stream))
        return "container: Docker stream is neither stdout nor stderr";
    if (!lf_stage__parse_rfc3339(&st->memo, df.time.ptr, df.time.len, &ln->ts_ns))
        return "container: Docker time is not RFC 3339";
    lf_buf_reset(&st->text);
    if ((*err = lf_buf_grow(&st->text, df.log.len)) != LF_OK)
        return NULL;
    if (df.log.len == 0) {
        st->text.len = 0;
    } else if (!df.log_escaped) {
        memcpy(st->text.ptr, df.log.ptr, df.log.len);
        st->text.len = df.log.len;
    } else if (!unescape(df.log, &st->text)) {
        return "container: bad escape in Docker log";
    }
    size_t n = st->text.len;
    ln->partial = n == 0 || st->text.ptr[n - 1] != '\n';
    if (!ln->partial) {
        n--;
        if (n > 0 && st->text.ptr[n - 1] == '\r')
            n--;
    }
    ln->text = lf_str_make(st->text.ptr, n);
    return NULL;
}

/* ---- Kubernetes metadata ---- */

/* `,"kubernetes":{...},"container":{...}`: the names from the path, and what the API server
 * said of the pod (its members, its namespace's labels, the container's image) when known. */
static enum lf_err render_kube(struct lf_buf *b, const struct lf_kube_names *k,
                               const struct lf_kube_view *v)
{
    enum lf_err err = lf_buf_append_cstr(b, ",\"kubernetes\":{");
    if (!err && v->pod != NULL) {
        err = lf_buf_append_str(b, v->pod->members);
    } else {
        if (!err)
            err = lf_buf_append_cstr(b, "\"pod\":{\"name\":\"");
        if (!err)
            err = lf_buf_append_str(b, k->pod); /* names are [a-z0-9.-]: nothing to escape */
        if (!err)
            err = lf_buf_append_cstr(b, "\"},\"namespace\":\"");
        if (!err)
            err = lf_buf_append_str(b, k->ns);
        if (!err)
            err = lf_buf_append_cstr(b, "\"");
    }
    if (!err && v->ns != NULL && v->ns->members.len > 0) {
        err = lf_buf_append(b, ",", 1);
        if (!err)
            err = lf_buf_append_str(b, v->ns->members);
    }
    if (!err)
        err = lf_buf_append_cstr(b, ",\"container\":{\"name\":\"");
    if (!err)
        err = lf_buf_append_str(b, k->container);
    if (!err)
        err = lf_buf_append_cstr(b, "\"}},\"container\":{\"id\":\"");
    if (!err)
        err = lf_buf_append_str(b, k->id);
    if (!err)
        err = lf_buf_append_cstr(b, "\"");
    const struct lf_kube_container *c =
        v->pod != NULL ? lf_kube_pod_container(v->pod, k->container) : NULL;
    if (!err && c != NULL && c->image_json[0] != '\0') {
        err = lf_buf_append(b, ",", 1);
        if (!err)
            err = lf_buf_append_cstr(b, c->image_json);
    }
    if (!err)
        err = lf_buf_append_cstr(b, "}");
    return err;
}

/* Looks the source's pod up again when the cache changed since the last look: true when
 * the records differ from those kube was rendered from (st->view then holds the new ones). */
static bool kube_changed(struct container_state *st, struct lf_kube_cache *kc)
{
    uint64_t gen = lf_kube_cache_gen(kc); /* before the lookup: a change after it moves it */
    if (gen == st->kube_gen)
        return false;
    st->kube_gen = gen;
    struct lf_kube_view v;
    lf_kube_cache_lookup(kc, st->names.ns, st->names.pod, &v);
    if (v.pod == st->view.pod && v.ns == st->view.ns) {
        lf_kube_view_release(&v);
        return false;
    }
    lf_kube_view_release(&st->view);
    st->view = v;
    return true;
}

/* Renders the per-source members once, again only when the source or its path changes, or
 * the API server's records of its pod do (one atomic load per event says they did not), or
 * a reload turned the kubernetes section on or off (the current cache changed). */
static enum lf_err render_meta(struct container_state *st, const struct lf_source *src)
{
    const char *path = src != NULL ? src->path : NULL;
    bool same_src = st->meta_set && st->meta_src == src && st->meta_path == path;
    if (!same_src)
        st->has_names = path != NULL && lf_kube_names_from_path(path, &st->names);
    struct lf_kube_cache *kc = st->has_names ? lf_kube_cache_current() : NULL;
    if (same_src && kc == st->kube_cache && (kc == NULL || !kube_changed(st, kc)))
        return LF_OK;
    if (!same_src)
        st->missed = false;
    if (!same_src || kc != st->kube_cache) {
        st->kube_cache = kc;
        st->kube_gen = 0;
        lf_kube_view_release(&st->view);
        if (kc != NULL)
            (void)kube_changed(st, kc);
        if (kc != NULL && st->view.pod == NULL && !st->missed) {
            st->missed = true; /* its first events ship without the pod's metadata */
            lf_kube_cache_count_miss(kc);
        }
    }
    st->meta_set = false;
    lf_buf_reset(&st->kube);
    enum lf_err err = LF_OK;
    if (st->has_names)
        err = render_kube(&st->kube, &st->names, &st->view);
    static const char *const names[N_STREAMS] = { "\"stream\":\"stdout\"",
                                                  "\"stream\":\"stderr\"" };
    for (int i = 0; i < N_STREAMS && !err; i++) {
        lf_buf_reset(&st->meta[i]);
        err = lf_buf_append_cstr(&st->meta[i], names[i]);
        if (!err)
            err = lf_buf_append_str(&st->meta[i], lf_buf_str(&st->kube));
    }
    if (err)
        return err;
    st->meta_src = src;
    st->meta_path = path;
    st->meta_set = true;
    return LF_OK;
}

/* ev's extra with ours after it; ours alone (no copy) when ev has none. */
static enum lf_err join_extra(struct container_state *st, struct lf_str before, struct lf_str ours,
                              struct lf_str *out)
{
    if (before.len == 0) {
        *out = ours;
        return LF_OK;
    }
    lf_buf_reset(&st->extra);
    enum lf_err err = lf_buf_append_str(&st->extra, before);
    if (!err && ours.len > 0)
        err = lf_buf_append(&st->extra, ",", 1);
    if (!err)
        err = lf_buf_append_str(&st->extra, ours);
    *out = lf_buf_str(&st->extra);
    return err;
}

/* ---- the stage ---- */

static enum lf_err emit_malformed(struct container_state *st, const struct lf_event *ev,
                                  const char *why, const struct lf_stage_out *out)
{
    st->malformed++;
    struct lf_event e = *ev;
    lf_buf_reset(&st->extra);
    enum lf_err err = lf_buf_append_str(&st->extra, ev->extra);
    if (!err)
        err = lf_stage__append_error(&st->extra, why);
    if (!err)
        err = lf_buf_append_str(&st->extra, lf_buf_str(&st->kube));
    if (err)
        return err;
    e.extra = lf_buf_str(&st->extra);
    return out->emit(out->arg, &e);
}

/* Appends s to the partial, cutting at a character boundary at max bytes. */
static enum lf_err append_capped(struct partial *p, struct lf_str s, size_t max)
{
    if (p->cut)
        return LF_OK;
    size_t room = max > p->msg.len ? max - p->msg.len : 0;
    size_t n = s.len;
    if (n > room) {
        n = room;
        while (n > 0 && ((unsigned char)s.ptr[n] & 0xC0) == 0x80)
            n--;
        p->cut = true;
    }
    return lf_buf_append(&p->msg, s.ptr, n);
}

static enum lf_err emit_partial(struct container_state *st, int stream, const struct lf_event *ev,
                                const struct lf_stage_out *out)
{
    struct partial *p = &st->part[stream];
    struct lf_event e = *ev;
    e.message = lf_buf_str(&p->msg);
    e.timestamp_ns = p->ts_ns;
    e.offset = p->offset;
    e.end_offset = p->end_offset;
    e.flags = p->flags | LF_EVENT_PARTIAL_JOINED | (p->cut ? LF_EVENT_TRUNCATED : 0);
    enum lf_err err = join_extra(st, ev->extra, lf_buf_str(&st->meta[stream]), &e.extra);
    p->active = false;
    p->cut = false;
    lf_buf_reset(&p->msg);
    if (err)
        return err;
    return out->emit(out->arg, &e);
}

static enum lf_err take_line(const struct container_spec *sp, struct container_state *st,
                             const struct lf_event *ev, const struct cline *ln,
                             const struct lf_stage_out *out)
{
    struct partial *p = &st->part[ln->stream];
    if (!p->active && !ln->partial) {
        struct lf_event e = *ev;
        e.message = ln->text;
        e.timestamp_ns = ln->ts_ns;
        enum lf_err err = join_extra(st, ev->extra, lf_buf_str(&st->meta[ln->stream]), &e.extra);
        if (err)
            return err;
        return out->emit(out->arg, &e);
    }
    if (!p->active) {
        p->active = true;
        p->cut = false;
        p->flags = 0;
        p->offset = ev->offset;
        p->ts_ns = ln->ts_ns;
        lf_buf_reset(&p->msg);
    }
    p->flags |= ev->flags;
    p->end_offset = ev->end_offset;
    enum lf_err err = append_capped(p, ln->text, sp->max_bytes);
    if (err)
        return err;
    if (ln->partial)
        return LF_OK;
    return emit_partial(st, ln->stream, ev, out);
}

static enum lf_err process(const void *spec, void *state, const struct lf_event *ev,
                           int64_t now_ms, const struct lf_stage_out *out)
{
    const struct container_spec *sp = spec;
    struct container_state *st = state;
    (void)now_ms;
    enum lf_err err = render_meta(st, ev->source);
    if (err)
        return err;
    struct cline ln = { 0 };
    const char *why;
    bool docker = sp->format == LF_CONTAINER_DOCKER ||
                  (sp->format == LF_CONTAINER_AUTO && ev->message.len > 0 &&
                   ev->message.ptr[0] == '{');
    if (docker)
        why = parse_docker(st, ev->message, &ln, &err);
    else
        why = parse_cri(st, ev->message, &ln);
    if (err)
        return err;
    if (why != NULL)
        return emit_malformed(st, ev, why, out);
    if ((sp->stream == LF_STREAM_STDOUT && ln.stream != STDOUT_IDX) ||
        (sp->stream == LF_STREAM_STDERR && ln.stream != STDERR_IDX)) {
        struct lf_event dropped = *ev;
        dropped.flags |= LF_EVENT_DROPPED;
        return out->emit(out->arg, &dropped);
    }
    return take_line(sp, st, ev, &ln, out);
}

/* Emits held partials, the earlier one first. The event of a flush has no line of its own:
 * its extra is ours alone. */
static enum lf_err flush(const void *spec, void *state, const struct lf_stage_out *out)
{
    (void)spec;
    struct container_state *st = state;
    while (st->part[STDOUT_IDX].active || st->part[STDERR_IDX].active) {
        int i = STDOUT_IDX;
        if (!st->part[STDOUT_IDX].active ||
            (st->part[STDERR_IDX].active &&
             st->part[STDERR_IDX].offset < st->part[STDOUT_IDX].offset))
            i = STDERR_IDX;
        struct lf_event ev = { 0 };
        ev.source = (struct lf_source *)st->meta_src;
        enum lf_err err = emit_partial(st, i, &ev, out);
        if (err)
            return err;
    }
    return LF_OK;
}

static bool holding(const void *state)
{
    const struct container_state *st = state;
    return st->part[STDOUT_IDX].active || st->part[STDERR_IDX].active;
}

static uint64_t held_offset(const void *state)
{
    const struct container_state *st = state;
    uint64_t off = UINT64_MAX;
    for (int i = 0; i < N_STREAMS; i++) {
        if (st->part[i].active && st->part[i].offset < off)
            off = st->part[i].offset;
    }
    return off;
}

/* Without the input at hand, max_line_bytes takes its default, 1 MiB. */
static enum lf_err build(void *spec, const struct lf_parser_conf *pc, struct lf_errbuf *eb)
{
    struct container_spec *sp = spec;
    (void)pc;
    (void)eb;
    sp->max_bytes = 1024 * 1024;
    return LF_OK;
}

/* A joined partial is capped at max_bytes. */
static enum lf_err open_parts(const void *spec, void *state)
{
    const struct container_spec *sp = spec;
    struct container_state *st = state;
    for (int i = 0; i < N_STREAMS; i++)
        lf_buf_init(&st->part[i].msg, sp->max_bytes);
    return LF_OK;
}

static void close_parts(void *state)
{
    struct container_state *st = state;
    lf_kube_view_release(&st->view);
}

#define S struct container_spec
static const struct lf_stage_opt opts[] = {
    LF_STAGE_VALUE("format", S, format, u.container.format),
    LF_STAGE_VALUE("stream", S, stream, u.container.stream),
    LF_STAGE_OPT_END,
};
#undef S
#define B(f) LF_STAGE_BUF(struct container_state, f)
static const struct lf_stage_slot slots[] = {
    B(part[0].msg), B(part[1].msg), B(meta[0]), B(meta[1]), B(text), B(extra), B(kube),
    LF_STAGE_SLOT_END,
};
#undef B
static const struct lf_stage_table table = {
    .name = "container",
    .opts = opts,
    .spec_size = sizeof(struct container_spec),
    .build = build,
    .state_size = sizeof(struct container_state),
    .slots = slots,
    .open = open_parts,
    .close = close_parts,
};

enum lf_err lf_stage__container_compile(const struct lf_parser_conf *pc, size_t max_line_bytes,
                                        void **spec, struct lf_errbuf *eb)
{
    enum lf_err err = lf_stage__compile_table(&table, pc, spec, eb);
    if (!err && max_line_bytes > 0)
        ((struct container_spec *)*spec)->max_bytes = max_line_bytes;
    return err;
}

uint64_t lf_stage__container_malformed(const void *state)
{
    const struct container_state *st = state;
    return st->malformed;
}

const struct lf_stage_ops lf_stage_container = {
    .kind = LF_PARSER_CONTAINER,
    LF_STAGE_TABLE_OPS(table),
    .process = process,
    .flush = flush,
    .holding = holding,
    .held_offset = held_offset,
};

/* Shared within src/stage/ (stage_int.h). */
bool lf_stage__json_unescape(struct lf_str raw, struct lf_buf *out)
{
    if (raw.len == 0)
        return true; /* out may have no bytes at all yet: nothing to write at its end */
    return lf_buf_grow(out, raw.len) == LF_OK && unescape(raw, out);
}

int lf_stage__hexval(char ch)
{
    return hexval(ch);
}
