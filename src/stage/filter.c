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
    struct lf_stage_head head;
    pcre2_code **re; /* owned */
    size_t n;
    bool include; /* include_lines: keep only matching events; else drop matching ones */
};

struct filter_state {
    struct lf_stage_head head;
    pcre2_match_data *md; /* owned */
};

static enum lf_err build(void *spec, const struct lf_parser_conf *pc, struct lf_errbuf *eb)
{
    struct filter_spec *s = spec;
    (void)eb;
    s->include = pc->kind == LF_PARSER_INCLUDE_LINES;
    return LF_OK;
}

/* Two ovector pairs are enough to know whether a pattern matched at all. */
static enum lf_err open_md(const void *spec, void *state)
{
    struct filter_state *st = state;
    (void)spec;
    st->md = pcre2_match_data_create(2, NULL);
    return st->md != NULL ? LF_OK : LF_ENOMEM;
}

static void close_md(void *state)
{
    struct filter_state *st = state;
    pcre2_match_data_free(st->md);
}

/* Errors are PCRE2's alone: the config loader names the parser in front. */
static const struct lf_stage_opt opts[] = {
    LF_STAGE_LIST("patterns", LF_STAGE_OPT_REGEXES, struct filter_spec, re, n, u.lines.patterns,
                  u.lines.n_patterns),
    LF_STAGE_OPT_END,
};
static const struct lf_stage_table table = {
    .name = NULL,
    .opts = opts,
    .spec_size = sizeof(struct filter_spec),
    .build = build,
    .state_size = sizeof(struct filter_state),
    .open = open_md,
    .close = close_md,
};

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
    const struct filter_state *st = state;
    bool keep = any_match(s, st->md, ev->message) == s->include;
    if (keep)
        return out->emit(out->arg, ev);
    return lf_stage__emit_dropped(ev, 0, out);
}

const struct lf_stage_ops lf_stage_include_lines = {
    .kind = LF_PARSER_INCLUDE_LINES,
    LF_STAGE_TABLE_OPS(table),
    .process = process,
};

const struct lf_stage_ops lf_stage_exclude_lines = {
    .kind = LF_PARSER_EXCLUDE_LINES,
    LF_STAGE_TABLE_OPS(table),
    .process = process,
};
