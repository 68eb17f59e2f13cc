/* filter.c - include_lines and exclude_lines: keep or drop events by regex.
 *
 * The regexes are compiled once per input (PCRE2, UTF mode, JIT where available); each
 * chain gets its own match data, the one mutable part. A dropped event is emitted again
 * with LF_EVENT_DROPPED set, never just swallowed: its offsets must still be acknowledged
 * so the registry moves past it (the chain routes it straight to the sink). */
#include "config.h"

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>
#include <stdlib.h>

#include "stage_int.h"

struct filter_spec {
    pcre2_code **re; /* owned */
    size_t n;
    bool include;    /* include_lines: keep only matching events; else drop matching ones */
};

static void free_spec(void *p)
{
    struct filter_spec *s = p;
    if (s == NULL)
        return;
    for (size_t i = 0; i < s->n; i++)
        pcre2_code_free(s->re[i]);
    free(s->re);
    free(s);
}

static enum lf_err compile(const struct lf_parser_conf *pc, bool include, void **out,
                           struct lf_errbuf *eb)
{
    struct filter_spec *s = calloc(1, sizeof(*s));
    if (s == NULL)
        return LF_ENOMEM;
    s->include = include;
    s->re = calloc(pc->u.lines.n_patterns ? pc->u.lines.n_patterns : 1, sizeof(*s->re));
    if (s->re == NULL) {
        free(s);
        return LF_ENOMEM;
    }
    for (size_t i = 0; i < pc->u.lines.n_patterns; i++) {
        int code;
        PCRE2_SIZE off;
        s->re[i] = pcre2_compile((PCRE2_SPTR)pc->u.lines.patterns[i], PCRE2_ZERO_TERMINATED,
                                 PCRE2_UTF, &code, &off, NULL);
        if (s->re[i] == NULL) {
            PCRE2_UCHAR msg[256];
            pcre2_get_error_message(code, msg, sizeof(msg));
            free_spec(s);
            return lf_fail(eb, LF_ECONFIG, "%s at offset %zu of \"%s\"", (const char *)msg,
                           (size_t)off, pc->u.lines.patterns[i]);
        }
        s->n = i + 1;
        /* JIT makes matching several times faster; without it the interpreter is right. */
        pcre2_jit_compile(s->re[i], PCRE2_JIT_COMPLETE);
    }
    *out = s;
    return LF_OK;
}

static enum lf_err compile_include(const struct lf_parser_conf *pc, void **out,
                                   struct lf_errbuf *eb)
{
    return compile(pc, true, out, eb);
}

static enum lf_err compile_exclude(const struct lf_parser_conf *pc, void **out,
                                   struct lf_errbuf *eb)
{
    return compile(pc, false, out, eb);
}

static enum lf_err open_state(const void *spec, void **state)
{
    (void)spec;
    /* Two ovector pairs are enough to know whether a pattern matched at all. */
    *state = pcre2_match_data_create(2, NULL);
    return *state != NULL ? LF_OK : LF_ENOMEM;
}

static void close_state(void *state)
{
    pcre2_match_data_free(state);
}

static bool any_match(const struct filter_spec *s, pcre2_match_data *md, struct lf_str msg)
{
    for (size_t i = 0; i < s->n; i++) {
        /* Messages are valid UTF-8 (the reader guarantees it): skip PCRE2's check. */
        int rc = pcre2_match(s->re[i], (PCRE2_SPTR)msg.ptr, msg.len, 0, PCRE2_NO_UTF_CHECK, md,
                             NULL);
        if (rc >= 0 || rc == PCRE2_ERROR_NOMEMORY)
            return true;
    }
    return false;
}

static enum lf_err process(const void *spec, void *state, const struct lf_event *ev,
                           int64_t now_ms, const struct lf_stage_out *out)
{
    const struct filter_spec *s = spec;
    (void)now_ms;
    bool keep = any_match(s, state, ev->message) == s->include;
    if (keep)
        return out->emit(out->arg, ev);
    struct lf_event dropped = *ev;
    dropped.flags |= LF_EVENT_DROPPED;
    return out->emit(out->arg, &dropped);
}

const struct lf_stage_ops lf_stage_include_lines = {
    .kind = LF_PARSER_INCLUDE_LINES,
    .compile = compile_include,
    .free_spec = free_spec,
    .open = open_state,
    .close = close_state,
    .process = process,
};

const struct lf_stage_ops lf_stage_exclude_lines = {
    .kind = LF_PARSER_EXCLUDE_LINES,
    .compile = compile_exclude,
    .free_spec = free_spec,
    .open = open_state,
    .close = close_state,
    .process = process,
};
