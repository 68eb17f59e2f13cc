/* multiline.c - joins consecutive lines into one event, with Filebeat's semantics.
 *
 * Three ways to decide where an event ends (type), all on one pending event per source:
 *
 *   pattern        a line continues the pending event when
 *                    match after:  it matches pattern (negate: it does not)
 *                    match before: the previous line matched (negate: did not)
 *                  a line matching flush_pattern is the last line of its event
 *   count          exactly count_lines lines per event
 *   while_pattern  consecutive lines matching pattern (negate: not matching) form one
 *                  event; any other line is an event of its own
 *
 * A preset (java, python, go, ruby) is type pattern with a built-in continuation pattern,
 * negate false and match after (docs/multiline.md lists the rules).
 *
 *   line ─► continues? ──yes──► append to pending (bounded by max_lines, max_bytes)
 *              │ no
 *              ▼
 *           emit pending, start a new pending event with the line
 *
 * The pending event is held until the line that ends it arrives, flush_pattern or count
 * closes it, no line came for timeout (tick), or the chain is flushed. While it is held,
 * held_offset() is its first line's offset, so the registry never passes it and a crash
 * re-reads it. Memory: the joined message lives in one buffer per source, capped at
 * max_bytes and reused; lines past max_lines or max_bytes are dropped from the message
 * (flag truncated) but their offsets still belong to the event, as in Filebeat. */
#include "config.h"

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>
#include <stdlib.h>
#include <string.h>

#include "stage_int.h"

/* The flags a joined event inherits from any of its lines. */
#define INHERITED_FLAGS (LF_EVENT_TRUNCATED | LF_EVENT_PARTIAL_JOINED | LF_EVENT_MULTILINE)

struct preset {
    const char *name;
    const char *pattern; /* continuation lines: negate false, match after */
};

/* Each alternative is one documented rule of docs/multiline.md; keep the two in step. */
static const struct preset presets[] = {
    { "java",
      /* frames, elided frames, suppressed and nested causes (indented) */
      "^[ \\t]+(?:at |\\.\\.\\. \\d+ (?:more|common frames omitted)|Caused by: |Suppressed: )"
      /* a cause at the top level */
      "|^Caused by: "
      /* the exception line: a (qualified) class name ending in Exception, Error or
         Throwable, then ": message" or nothing */
      "|^(?:[A-Za-z_$][\\w$]*\\.)*[A-Za-z_$][\\w$]*(?:Exception|Error|Throwable)(?::|$)" },
    { "python",
      /* frames, source lines, carets, exception group boxes */
      "^[ \\t]"
      /* blank lines between chained tracebacks */
      "|^$"
      "|^Traceback \\(most recent call last\\):"
      "|^During handling of the above exception, another exception occurred:"
      "|^The above exception was the direct cause of the following exception:"
      /* the exception line: a (qualified) name ending in Error, Exception, Warning, Exit,
         Interrupt, Iteration or ExceptionGroup, then ": message" or nothing */
      "|^(?:[A-Za-z_]\\w*\\.)*\\w*"
      "(?:Error|Exception|Warning|Exit|Interrupt|Iteration|ExceptionGroup)(?::|$)" },
    { "go",
      /* blank lines between goroutines, and indented file:line lines */
      "^$|^[ \\t]"
      "|^goroutine \\d+ "
      "|^created by "
      "|^\\[signal "
      "|^exit status \\d+$"
      "|^\\.\\.\\.additional frames elided\\.\\.\\.$"
      /* a frame: package-qualified function and its arguments, e.g. main.worker(0x0?) */
      "|^[\\w./-]+\\.[^\\s(]*\\(.*\\)$" },
    { "ruby",
      /* `from` lines of an uncaught exception */
      "^[ \\t]+from \\S"
      /* backtrace lines: path:line:in `method' (or 'method' since Ruby 3.4) */
      "|^[ \\t]*\\S+?:\\d+:in [`']" },
};

struct ml_spec {
    struct lf_stage_head head;
    enum lf_multiline_type type;
    pcre2_code *re;       /* owned; pattern or preset; NULL for type count */
    pcre2_code *flush_re; /* owned; flush_pattern, or NULL */
    bool negate;
    enum lf_multiline_match match;
    size_t count_lines; /* type count */
    size_t max_lines;   /* lines kept in the message at most */
    size_t max_bytes;   /* message bytes at most */
    int64_t timeout_ms; /* idle time before a pending event is emitted; 0: never */
};

struct ml_state {
    struct lf_stage_head head;
    pcre2_match_data *md;     /* owned */
    struct lf_buf msg;        /* the pending event's joined message; cap <= max_bytes */
    struct lf_buf extra;      /* the pending event's first line's extra */
    bool pending;             /* an event is held */
    size_t lines;             /* lines in the pending event, dropped ones included */
    size_t kept;              /* lines (or parts of lines) in msg */
    bool last_matched;        /* match before: the last line matched (negate applied) */
    uint64_t offset;          /* first line's offset */
    uint64_t end_offset;      /* past the last line */
    int64_t timestamp_ns;     /* first line's */
    unsigned flags;           /* LF_EVENT_*, without MULTILINE until emitted */
    struct lf_source *source; /* borrowed; first line's */
    int64_t last_ms;          /* when the last line was added (monotonic ms) */
};

static void release(void *spec)
{
    struct ml_spec *s = spec;
    pcre2_code_free(s->re);
}

static const char *find_preset(const char *name)
{
    for (size_t i = 0; i < sizeof(presets) / sizeof(presets[0]); i++) {
        if (strcmp(presets[i].name, name) == 0)
            return presets[i].pattern;
    }
    return NULL;
}

/* The pattern to compile for pc (its own or its preset's), or NULL after filling eb. */
static const char *line_pattern(const struct lf_parser_conf *pc, struct lf_errbuf *eb)
{
    const char *preset = pc->u.multiline.preset;
    if (preset == NULL)
        return pc->u.multiline.pattern;
    const char *pattern = find_preset(preset);
    if (pattern == NULL)
        lf_fail(eb, LF_ECONFIG, "multiline: unknown preset \"%s\"", preset);
    else if (pc->u.multiline.type != LF_MULTILINE_PATTERN)
        lf_fail(eb, LF_ECONFIG, "multiline: preset %s needs type pattern", preset);
    else if (pc->u.multiline.negate || pc->u.multiline.match != LF_MATCH_AFTER)
        lf_fail(eb, LF_ECONFIG, "multiline: preset %s sets negate and match itself", preset);
    else
        return pattern;
    return NULL;
}

/* The line pattern (its own or its preset's) and the limits, after the rows. */
static enum lf_err build(void *spec, const struct lf_parser_conf *pc, struct lf_errbuf *eb)
{
    struct ml_spec *s = spec;
    s->max_lines = s->max_lines > 0 ? s->max_lines : SIZE_MAX;
    s->max_bytes = s->max_bytes > 0 ? s->max_bytes : SIZE_MAX;
    s->timeout_ms = pc->u.multiline.timeout_ms > INT64_MAX / 2
                        ? INT64_MAX / 2
                        : (int64_t)pc->u.multiline.timeout_ms;
    if (pc->u.multiline.preset != NULL && line_pattern(pc, eb) == NULL)
        return LF_ECONFIG;
    if (s->type == LF_MULTILINE_COUNT)
        return s->count_lines > 0
                   ? LF_OK
                   : lf_fail(eb, LF_ECONFIG, "multiline: count_lines must be at least 1");
    const char *pattern = line_pattern(pc, eb);
    if (pattern == NULL && eb->msg[0] == '\0')
        return lf_fail(eb, LF_ECONFIG, "multiline: pattern is required");
    if (pattern == NULL)
        return LF_ECONFIG;
    return lf_stage__regex("multiline", pattern, &s->re, eb);
}

/* One ovector pair is enough to know whether a pattern matched at all; the message is
 * capped at max_bytes. */
static enum lf_err open_md(const void *spec, void *state)
{
    const struct ml_spec *s = spec;
    struct ml_state *st = state;
    lf_buf_init(&st->msg, s->max_bytes);
    st->md = pcre2_match_data_create(1, NULL);
    return st->md != NULL ? LF_OK : LF_ENOMEM;
}

static void close_md(void *state)
{
    struct ml_state *st = state;
    pcre2_match_data_free(st->md);
}

#define S struct ml_spec
static const struct lf_stage_opt opts[] = {
    LF_STAGE_VALUE("type", S, type, u.multiline.type),
    LF_STAGE_VALUE("negate", S, negate, u.multiline.negate),
    LF_STAGE_VALUE("match", S, match, u.multiline.match),
    LF_STAGE_VALUE("count_lines", S, count_lines, u.multiline.count_lines),
    LF_STAGE_VALUE("max_lines", S, max_lines, u.multiline.max_lines),
    LF_STAGE_VALUE("max_bytes", S, max_bytes, u.multiline.max_bytes),
    /* compiled whatever the type; only type pattern reads it */
    LF_STAGE_TEXT("flush_pattern", LF_STAGE_OPT_REGEX, S, flush_re, u.multiline.flush_pattern,
                  NULL, NULL),
    LF_STAGE_OPT_END,
};
#undef S
static const struct lf_stage_slot slots[] = {
    LF_STAGE_BUF(struct ml_state, msg),
    LF_STAGE_BUF(struct ml_state, extra),
    LF_STAGE_SLOT_END,
};
static const struct lf_stage_table table = {
    .name = "multiline",
    .opts = opts,
    .spec_size = sizeof(struct ml_spec),
    .build = build,
    .release = release,
    .state_size = sizeof(struct ml_state),
    .slots = slots,
    .open = open_md,
    .close = close_md,
};

static bool re_match(const pcre2_code *re, pcre2_match_data *md, struct lf_str s)
{
    /* Messages are valid UTF-8 (the reader guarantees it): skip PCRE2's check. A match
     * that runs out of its limits counts as a match, as in the filter stage. */
    int rc = pcre2_match(re, (PCRE2_SPTR)s.ptr, s.len, 0, PCRE2_NO_UTF_CHECK, md, NULL);
    return rc >= 0 || rc == PCRE2_ERROR_NOMEMORY;
}

/* The longest prefix of s no longer than max that ends on a character boundary. */
static size_t utf8_cut(struct lf_str s, size_t max)
{
    if (s.len <= max)
        return s.len;
    size_t n = max;
    while (n > 0 && ((unsigned char)s.ptr[n] & 0xC0) == 0x80)
        n--;
    return n;
}

/* Adds ev's line to the pending event: its offsets always, its bytes as far as max_lines
 * and max_bytes allow (the rest is dropped and the event flagged truncated). */
static enum lf_err
add_line(const struct ml_spec *s, struct ml_state *st, const struct lf_event *ev, int64_t now_ms)
{
    st->lines++;
    st->end_offset = ev->end_offset;
    st->flags |= ev->flags & INHERITED_FLAGS;
    st->last_ms = now_ms;
    size_t sep = st->kept > 0 ? 1 : 0;
    if (st->kept >= s->max_lines || s->max_bytes - st->msg.len <= sep) {
        st->flags |= LF_EVENT_TRUNCATED;
        return LF_OK;
    }
    size_t room = s->max_bytes - st->msg.len - sep;
    size_t n = utf8_cut(ev->message, room);
    if (n < ev->message.len)
        st->flags |= LF_EVENT_TRUNCATED;
    enum lf_err err = lf_buf_append(&st->msg, "\n", sep);
    if (!err)
        err = lf_buf_append(&st->msg, ev->message.ptr, n);
    if (err)
        return err;
    st->kept++;
    return LF_OK;
}

/* Makes ev's line the first of a new pending event. */
static enum lf_err
start_event(const struct ml_spec *s, struct ml_state *st, const struct lf_event *ev, int64_t now_ms)
{
    lf_buf_reset(&st->msg);
    lf_buf_reset(&st->extra);
    st->pending = true;
    st->lines = 0;
    st->kept = 0;
    st->offset = ev->offset;
    st->end_offset = ev->end_offset;
    st->timestamp_ns = ev->timestamp_ns;
    st->source = ev->source;
    st->flags = 0;
    enum lf_err err = lf_buf_append_str(&st->extra, ev->extra);
    if (err)
        return err;
    return add_line(s, st, ev, now_ms);
}

/* Emits the pending event, if any, and forgets it (keeping the buffers' memory). */
static enum lf_err emit_pending(struct ml_state *st, const struct lf_stage_out *out)
{
    if (!st->pending)
        return LF_OK;
    struct lf_event ev = {
        .message = lf_buf_str(&st->msg),
        .timestamp_ns = st->timestamp_ns,
        .offset = st->offset,
        .end_offset = st->end_offset,
        .flags = st->flags | (st->lines > 1 ? LF_EVENT_MULTILINE : 0),
        .source = st->source,
        .extra = lf_buf_str(&st->extra),
    };
    /* Not held any more once handed on: whoever asks during emit sees it gone. */
    st->pending = false;
    enum lf_err err = out->emit(out->arg, &ev);
    lf_buf_reset(&st->msg);
    lf_buf_reset(&st->extra);
    return err;
}

static enum lf_err process_pattern(const struct ml_spec *s,
                                   struct ml_state *st,
                                   const struct lf_event *ev,
                                   int64_t now_ms,
                                   const struct lf_stage_out *out)
{
    bool matched = re_match(s->re, st->md, ev->message) != s->negate;
    bool ends = s->flush_re != NULL && re_match(s->flush_re, st->md, ev->message);
    enum lf_err err = LF_OK;
    if (st->pending) {
        bool continues = s->match == LF_MATCH_AFTER ? matched : st->last_matched;
        if (ends || continues) {
            err = add_line(s, st, ev, now_ms);
            st->last_matched = matched;
            return err ? err : ends ? emit_pending(st, out) : LF_OK;
        }
        err = emit_pending(st, out);
        if (err)
            return err;
    }
    err = start_event(s, st, ev, now_ms);
    st->last_matched = matched;
    /* A flush_pattern line is always the last of its event, even when it is the first. */
    return err ? err : ends ? emit_pending(st, out) : LF_OK;
}

static enum lf_err process_count(const struct ml_spec *s,
                                 struct ml_state *st,
                                 const struct lf_event *ev,
                                 int64_t now_ms,
                                 const struct lf_stage_out *out)
{
    enum lf_err err = st->pending ? add_line(s, st, ev, now_ms) : start_event(s, st, ev, now_ms);
    if (err)
        return err;
    return st->lines >= s->count_lines ? emit_pending(st, out) : LF_OK;
}

static enum lf_err process_while(const struct ml_spec *s,
                                 struct ml_state *st,
                                 const struct lf_event *ev,
                                 int64_t now_ms,
                                 const struct lf_stage_out *out)
{
    bool matched = re_match(s->re, st->md, ev->message) != s->negate;
    if (matched && st->pending)
        return add_line(s, st, ev, now_ms);
    enum lf_err err = emit_pending(st, out);
    if (!err)
        err = start_event(s, st, ev, now_ms);
    /* A line outside the run is an event of its own, emitted at once. */
    if (!err && !matched)
        err = emit_pending(st, out);
    return err;
}

static enum lf_err process(const void *spec,
                           void *state,
                           const struct lf_event *ev,
                           int64_t now_ms,
                           const struct lf_stage_out *out)
{
    const struct ml_spec *s = spec;
    struct ml_state *st = state;
    switch (s->type) {
    case LF_MULTILINE_COUNT:
        return process_count(s, st, ev, now_ms, out);
    case LF_MULTILINE_WHILE_PATTERN:
        return process_while(s, st, ev, now_ms, out);
    case LF_MULTILINE_PATTERN:
    default:
        return process_pattern(s, st, ev, now_ms, out);
    }
}

static enum lf_err tick(
    const void *spec, void *state, int64_t now_ms, const struct lf_stage_out *out, int64_t *next_ms)
{
    const struct ml_spec *s = spec;
    struct ml_state *st = state;
    *next_ms = INT64_MAX;
    if (!st->pending || s->timeout_ms == 0)
        return LF_OK;
    int64_t deadline = st->last_ms + s->timeout_ms;
    if (now_ms < deadline) {
        *next_ms = deadline;
        return LF_OK;
    }
    return emit_pending(st, out);
}

static enum lf_err flush(const void *spec, void *state, const struct lf_stage_out *out)
{
    (void)spec;
    return emit_pending(state, out);
}

static bool holding(const void *state)
{
    const struct ml_state *st = state;
    return st->pending;
}

static uint64_t held_offset(const void *state)
{
    const struct ml_state *st = state;
    return st->pending ? st->offset : UINT64_MAX;
}

const struct lf_stage_ops lf_stage_multiline = {
    .kind = LF_PARSER_MULTILINE,
    LF_STAGE_TABLE_OPS(table),
    .process = process,
    .tick = tick,
    .flush = flush,
    .holding = holding,
    .held_offset = held_offset,
};
