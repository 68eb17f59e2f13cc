/* check_multiline.c - the multiline stage through the real chain: a table of the cases a
 * Filebeat user relies on (negate/match, flush_pattern, count, while_pattern, max_lines,
 * max_bytes, timeouts, the last event at EOF, empty lines, truncation), the presets and
 * the "record starts with" pattern on the real traces of t/data/multiline/, and the
 * steady state allocating nothing. */
#include "config.h"

#include <check.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#include "../bench/alloc_count.h"
#include "logferry/config.h"
#include "logferry/stage.h"

/* ---- the harness: config -> spec -> chain -> a transcript of what came out ---- */

struct fx {
    struct lf_config *cfg;
    struct lf_chain_spec *spec;
    struct lf_chain *chain;
    struct lf_stage_out sink;
    struct lf_buf log; /* transcript: one line per event, tick and held-offset probe */
    size_t n_events;
    uint64_t next_offset; /* where the next fed line starts */
    int64_t next_ts;      /* its timestamp_ns */
};

static void log_str(struct fx *f, const char *s)
{
    ck_assert_int_eq(lf_buf_append(&f->log, s, strlen(s)), LF_OK);
}

/* Appends s with '\n' shown as the two characters \n, so a transcript line is one event. */
static void log_escaped(struct fx *f, struct lf_str s)
{
    for (size_t i = 0; i < s.len; i++) {
        if (s.ptr[i] == '\n')
            log_str(f, "\\n");
        else
            ck_assert_int_eq(lf_buf_append(&f->log, &s.ptr[i], 1), LF_OK);
    }
}

/* Transcript line of an event: `E off-end FLAGS @ts message[ {extra}]`. */
static enum lf_err record_event(void *arg, const struct lf_event *ev)
{
    struct fx *f = arg;
    char head[128];
    char flags[8];
    size_t n = 0;
    if (ev->flags & LF_EVENT_MULTILINE)
        flags[n++] = 'M';
    if (ev->flags & LF_EVENT_TRUNCATED)
        flags[n++] = 'T';
    if (ev->flags & LF_EVENT_PARTIAL_JOINED)
        flags[n++] = 'P';
    if (n == 0)
        flags[n++] = '-';
    flags[n] = '\0';
    snprintf(head, sizeof(head), "E %" PRIu64 "-%" PRIu64 " %s @%" PRId64 " ", ev->offset,
             ev->end_offset, flags, ev->timestamp_ns);
    log_str(f, head);
    log_escaped(f, ev->message);
    if (ev->extra.len > 0) {
        log_str(f, " {");
        log_escaped(f, ev->extra);
        log_str(f, "}");
    }
    log_str(f, "\n");
    f->n_events++;
    return LF_OK;
}

static void fx_open(struct fx *f, const char *multiline_yaml)
{
    char yaml[1024];
    snprintf(yaml, sizeof(yaml),
             "inputs:\n"
             "  - id: t\n"
             "    paths: [/x]\n"
             "    parsers:\n"
             "      - multiline: %s\n"
             "outputs:\n"
             "  - {name: local, type: file, path: /tmp/out}\n",
             multiline_yaml);
    memset(f, 0, sizeof(*f));
    lf_buf_init(&f->log, SIZE_MAX);
    struct lf_buf errors;
    lf_buf_init(&errors, SIZE_MAX);
    enum lf_err err = lf_config_load_mem("t.yml", yaml, strlen(yaml), &f->cfg, &errors);
    ck_assert_str_eq(errors.len > 0 ? errors.ptr : "", "");
    lf_buf_release(&errors);
    ck_assert_int_eq(err, LF_OK);
    struct lf_errbuf eb = { "" };
    ck_assert_int_eq(lf_chain_spec_new(&f->cfg->inputs[0], 0, &f->spec, NULL, &eb), LF_OK);
    f->sink = (struct lf_stage_out){ record_event, f };
    ck_assert_int_eq(lf_chain_new(f->spec, &f->sink, &f->chain), LF_OK);
    f->next_ts = 1000;
}

static void fx_close(struct fx *f)
{
    lf_chain_free(f->chain);
    lf_chain_spec_free(f->spec);
    lf_config_free(f->cfg);
    lf_buf_release(&f->log);
}

/* Feeds one line at now_ms, as the reader would: offsets follow on, '\n' terminated. */
static void
fx_line(struct fx *f, const char *text, unsigned flags, const char *extra, int64_t now_ms)
{
    struct lf_event ev = {
        .message = lf_str_make(text, strlen(text)),
        .timestamp_ns = f->next_ts++,
        .offset = f->next_offset,
        .end_offset = f->next_offset + strlen(text) + 1,
        .flags = flags,
        .extra = extra != NULL ? lf_str_make(extra, strlen(extra)) : lf_str_make("", 0),
    };
    f->next_offset = ev.end_offset;
    ck_assert_int_eq(lf_chain_process(f->chain, &ev, now_ms), LF_OK);
}

/* ---- the table ---- */

enum step_op {
    END = 0,
    LINE,   /* feed text */
    LINE_T, /* feed text flagged truncated by the reader */
    LINE_P, /* feed text flagged partial_joined by the container stage */
    LINE_X, /* feed text with extra `"n":<ms>` */
    TICK,   /* tick at ms; transcript `T <next deadline>` or `T none` */
    FLUSH,  /* flush (end of input); transcript `F` */
    HELD,   /* transcript `H <held offset>` or `H none`, and holding() agrees */
};

struct step {
    enum step_op op;
    int64_t ms; /* now_ms of the step */
    const char *text;
};

struct ml_case {
    const char *name;
    const char *conf; /* the value of `multiline:` */
    struct step steps[16];
    const char *want; /* the whole transcript */
};

#define L(ms, t)        \
    {                   \
        LINE, (ms), (t) \
    }
#define LT(ms, t)         \
    {                     \
        LINE_T, (ms), (t) \
    }
#define LP(ms, t)         \
    {                     \
        LINE_P, (ms), (t) \
    }
#define LX(ms, t)         \
    {                     \
        LINE_X, (ms), (t) \
    }
#define T(ms)            \
    {                    \
        TICK, (ms), NULL \
    }
#define F              \
    {                  \
        FLUSH, 0, NULL \
    }
#define H             \
    {                 \
        HELD, 0, NULL \
    }

static const struct ml_case cases[] = {
    { "negate true, match after: lines not starting with [ join the previous one",
      "{type: pattern, pattern: '^\\[', negate: true, match: after}",
      { L(0, "[1] a"), L(0, " b"), L(0, "c"), H, L(0, "[2] d"), H, F, H },
      "H 0\n"
      "E 0-11 M @1000 [1] a\\n b\\nc\n"
      "H 11\n"
      "E 11-17 - @1003 [2] d\n"
      "H none\n" },
    { "negate false, match after: lines matching the pattern join the previous one",
      "{pattern: '^\\s', match: after}",
      { L(0, "a"), L(0, " b"), L(0, "c"), L(0, " d"), L(0, " e"), F },
      "E 0-5 M @1000 a\\n b\n"
      "E 5-13 M @1002 c\\n d\\n e\n" },
    { "negate false, match before: a matching line is joined to the next one",
      "{pattern: '\\\\$', match: before}",
      { L(0, "a \\"), L(0, "b \\"), L(0, "c"), L(0, "d"), F },
      "E 0-10 M @1000 a \\\\nb \\\\nc\n"
      "E 10-12 - @1003 d\n" },
    { "negate true, match before: lines not matching are joined to the next one",
      "{pattern: ';$', negate: true, match: before}",
      { L(0, "a"), L(0, "b"), L(0, "c;"), L(0, "d;"), H, F },
      "E 0-7 M @1000 a\\nb\\nc;\n"
      "H 7\n"
      "E 7-10 - @1003 d;\n" },
    { "a continuation line at the start of the file begins an event of its own",
      "{pattern: '^\\[', negate: true}",
      { L(0, " orphan"), L(0, " more"), L(0, "[1] a"), F },
      "E 0-14 M @1000  orphan\\n more\n"
      "E 14-20 - @1002 [1] a\n" },
    { "flush_pattern ends the event with the matching line",
      "{pattern: 'Start', negate: true, flush_pattern: 'End'}",
      { L(0, "Start 1"), L(0, "body"), L(0, "End"), H, L(0, "other"), L(0, "End"), H },
      "E 0-17 M @1000 Start 1\\nbody\\nEnd\n"
      "H none\n"
      "E 17-27 M @1003 other\\nEnd\n"
      "H none\n" },
    { "a flush_pattern line that would start an event is an event of its own",
      "{pattern: '^\\[', negate: true, flush_pattern: 'END$'}",
      { L(0, "[1] END"), H, L(0, "[2] x"), H, F },
      "E 0-8 - @1000 [1] END\n"
      "H none\n"
      "H 8\n"
      "E 8-14 - @1001 [2] x\n" },
    { "flush_pattern closes a match before event too",
      "{pattern: '\\\\$', match: before, flush_pattern: '^STOP'}",
      { L(0, "a \\"), L(0, "STOP"), L(0, "b"), F },
      "E 0-9 M @1000 a \\\\nSTOP\n"
      "E 9-11 - @1002 b\n" },
    { "count joins exactly count_lines lines and holds the rest until flushed",
      "{type: count, count_lines: 3}",
      { L(0, "1"), L(0, "2"), L(0, "3"), L(0, "4"), L(0, "5"), L(0, "6"), L(0, "7"), H, F },
      "E 0-6 M @1000 1\\n2\\n3\n"
      "E 6-12 M @1003 4\\n5\\n6\n"
      "H 12\n"
      "E 12-14 - @1006 7\n" },
    { "count 1 passes every line on alone and holds nothing",
      "{type: count, count_lines: 1}",
      { L(0, "a"), H, L(0, "b"), H },
      "E 0-2 - @1000 a\n"
      "H none\n"
      "E 2-4 - @1001 b\n"
      "H none\n" },
    { "while_pattern joins runs of matching lines and passes the others on alone",
      "{type: while_pattern, pattern: '^\\s'}",
      { L(0, "a"), H, L(0, " b"), L(0, " c"), H, L(0, "d"), L(0, "e"), L(0, " f"), F },
      "E 0-2 - @1000 a\n"
      "H none\n"
      "H 2\n"
      "E 2-8 M @1001  b\\n c\n"
      "E 8-10 - @1003 d\n"
      "E 10-12 - @1004 e\n"
      "E 12-15 - @1005  f\n" },
    { "while_pattern with negate joins runs of lines not matching",
      "{type: while_pattern, pattern: '^#', negate: true}",
      { L(0, "x"), L(0, "y"), L(0, "#c"), L(0, "#d"), L(0, "z"), F },
      "E 0-4 M @1000 x\\ny\n"
      "E 4-7 - @1002 #c\n"
      "E 7-10 - @1003 #d\n"
      "E 10-12 - @1004 z\n" },
    { "max_lines keeps the first lines and the event still covers the dropped ones",
      "{pattern: '^\\s', max_lines: 2}",
      { L(0, "a"), L(0, " b"), L(0, " c"), L(0, " d"), L(0, "e"), F },
      "E 0-11 MT @1000 a\\n b\n"
      "E 11-13 - @1004 e\n" },
    { "max_lines 1 keeps the first line only, flagged multiline and truncated",
      "{pattern: '^\\s', max_lines: 1}",
      { L(0, "a"), L(0, " b"), F },
      "E 0-5 MT @1000 a\n" },
    { "max_bytes cuts the joined message and drops lines past it",
      "{pattern: '^\\s', max_bytes: 10}",
      { L(0, "[1] abc"), L(0, " defgh"), L(0, " ij"), L(0, "x"), F },
      "E 0-19 MT @1000 [1] abc\\n d\n"
      "E 19-21 - @1003 x\n" },
    { "max_bytes never cuts a character in two",
      "{pattern: '^\\s', max_bytes: 5}",
      { L(0, "[1] \xc3\xa9"), F },
      "E 0-7 T @1000 [1] \n" },
    { "a line the reader truncated flags the joined event truncated",
      "{pattern: '^\\s'}",
      { L(0, "a"), LT(0, " long"), L(0, "b"), F },
      "E 0-8 MT @1000 a\\n long\n"
      "E 8-10 - @1002 b\n" },
    { "a truncated single line keeps its flag and gets no multiline flag",
      "{pattern: '^\\s'}",
      { LT(0, "cut"), L(0, "b"), F },
      "E 0-4 T @1000 cut\n"
      "E 4-6 - @1001 b\n" },
    { "partial_joined on any line is kept on the joined event",
      "{pattern: '^\\s'}",
      { L(0, "a"), LP(0, " b"), F },
      "E 0-5 MP @1000 a\\n b\n" },
    { "the joined event keeps the first line's extra and timestamp",
      "{pattern: '^\\s'}",
      { LX(7, "a"), LX(8, " b"), F },
      "E 0-5 M @1000 a\\n b {\"n\":7}\n" },
    { "empty lines are joined like any line not matching a negated start pattern",
      "{pattern: '^\\[', negate: true}",
      { L(0, "[1] a"), L(0, ""), L(0, " b"), L(0, ""), L(0, "[2] c"), F },
      "E 0-11 M @1000 [1] a\\n\\n b\\n\n"
      "E 11-17 - @1004 [2] c\n" },
    { "an empty line not matching a continuation pattern is an event of its own",
      "{pattern: '^\\s'}",
      { L(0, "a"), L(0, ""), L(0, " b"), F },
      "E 0-2 - @1000 a\n"
      "E 2-6 M @1001 \\n b\n" },
    { "a pending event is emitted once timeout passes with no new line",
      "{pattern: '^\\s', timeout: 1s}",
      { L(0, "a"), L(100, " b"), T(1099), H, T(1100), H, T(5000) },
      "T 1100\n"
      "H 0\n"
      "E 0-5 M @1000 a\\n b\n"
      "T none\n"
      "H none\n"
      "T none\n" },
    { "the timeout counts from the last line added, not the first",
      "{pattern: '^\\s', timeout: 500ms}",
      { L(0, "a"), L(400, " b"), T(500), L(800, " c"), T(1299), T(1300) },
      "T 900\n"
      "T 1300\n"
      "E 0-8 M @1000 a\\n b\\n c\n"
      "T none\n" },
    { "a line after a timeout starts a new event even when it is a continuation",
      "{pattern: '^\\s', timeout: 1s}",
      { L(0, "a"), T(1000), L(1500, " b"), F },
      "E 0-2 - @1000 a\n"
      "T none\n"
      "E 2-5 - @1001  b\n" },
    { "timeout 0 never flushes: the event waits for its next line or the end",
      "{pattern: '^\\s', timeout: 0}",
      { L(0, "a"), T(1000000000), H, F },
      "T none\n"
      "H 0\n"
      "E 0-2 - @1000 a\n" },
    { "a match before event left open is flushed by its timeout",
      "{pattern: '\\\\$', match: before, timeout: 2s}",
      { L(0, "a \\"), T(1999), T(2000), L(3000, "b") },
      "T 2000\n"
      "E 0-4 - @1000 a \\\n"
      "T none\n" },
    { "count emits an incomplete group at its timeout",
      "{type: count, count_lines: 3, timeout: 1s}",
      { L(0, "1"), L(10, "2"), T(1010), L(2000, "3"), F },
      "E 0-4 M @1000 1\\n2\n"
      "T none\n"
      "E 4-6 - @1002 3\n" },
    { "the last event at end of input is emitted by flush with its offsets",
      "{pattern: '^\\d', negate: true}",
      { L(0, "1 x"), L(0, "  at y"), L(0, "2 z"), L(0, "  at w"), H, F, H, F },
      "E 0-11 M @1000 1 x\\n  at y\n"
      "H 11\n"
      "E 11-22 M @1002 2 z\\n  at w\n"
      "H none\n" },
    { "a while_pattern run at end of input is emitted by flush",
      "{type: while_pattern, pattern: '^-'}",
      { L(0, "-a"), L(0, "-b"), H, F, H },
      "H 0\n"
      "E 0-6 M @1000 -a\\n-b\n"
      "H none\n" },
    { "held offset stays at the first line however many lines follow",
      "{pattern: '^\\s'}",
      { L(0, "head"), L(0, " 1"), L(0, " 2"), L(0, " 3"), H, L(0, "next"), H },
      "H 0\n"
      "E 0-14 M @1000 head\\n 1\\n 2\\n 3\n"
      "H 14\n" },
};

#define N_CASES (sizeof(cases) / sizeof(cases[0]))

static void run_step(struct fx *f, const struct step *s)
{
    char text[64];
    switch (s->op) {
    case LINE:
        fx_line(f, s->text, 0, NULL, s->ms);
        break;
    case LINE_T:
        fx_line(f, s->text, LF_EVENT_TRUNCATED, NULL, s->ms);
        break;
    case LINE_P:
        fx_line(f, s->text, LF_EVENT_PARTIAL_JOINED, NULL, s->ms);
        break;
    case LINE_X:
        snprintf(text, sizeof(text), "\"n\":%" PRId64, s->ms);
        fx_line(f, s->text, 0, text, s->ms);
        break;
    case TICK: {
        int64_t next = 0;
        ck_assert_int_eq(lf_chain_tick(f->chain, s->ms, &next), LF_OK);
        if (next == INT64_MAX)
            snprintf(text, sizeof(text), "T none\n");
        else
            snprintf(text, sizeof(text), "T %" PRId64 "\n", next);
        log_str(f, text);
        break;
    }
    case FLUSH:
        ck_assert_int_eq(lf_chain_flush(f->chain), LF_OK);
        break;
    case HELD: {
        uint64_t held = lf_chain_held_offset(f->chain);
        ck_assert_int_eq(lf_chain_holding(f->chain), held != UINT64_MAX);
        if (held == UINT64_MAX)
            snprintf(text, sizeof(text), "H none\n");
        else
            snprintf(text, sizeof(text), "H %" PRIu64 "\n", held);
        log_str(f, text);
        break;
    }
    case END:
        break;
    }
}

START_TEST(each_case_gives_exactly_its_events_deadlines_and_held_offsets)
{
    const struct ml_case *c = &cases[_i];
    struct fx f;
    fx_open(&f, c->conf);
    /* The case name leads both sides, so a failure names the case. */
    log_str(&f, c->name);
    log_str(&f, "\n");
    for (size_t i = 0; i < sizeof(c->steps) / sizeof(c->steps[0]) && c->steps[i].op != END; i++)
        run_step(&f, &c->steps[i]);
    char want[2048];
    snprintf(want, sizeof(want), "%s\n%s", c->name, c->want);
    ck_assert_int_eq(lf_buf_append(&f.log, "", 1), LF_OK);
    ck_assert_str_eq(f.log.ptr, want);
    fx_close(&f);
}
END_TEST

START_TEST(case_table_covers_at_least_twenty_five_cases)
{
    ck_assert_uint_ge(N_CASES, 25);
}
END_TEST

/* ---- each documented preset rule, one line at a time ---- */

struct rule_case {
    const char *preset;
    const char *line;
    bool continues; /* joins the record line before it */
};

static const struct rule_case rule_cases[] = {
    { "java", "\tat com.example.App.main(App.java:12)", true },
    { "java", "    at App.run(App.java:3)", true },
    { "java", "\t... 5 more", true },
    { "java", "\t... 12 common frames omitted", true },
    { "java", "Caused by: java.io.IOException: gone", true },
    { "java", "\tCaused by: java.io.IOException: gone", true },
    { "java", "\tSuppressed: java.io.IOException: disk quota exceeded", true },
    { "java", "java.lang.IllegalStateException: request failed", true },
    { "java", "App$RepositoryException: could not load", true },
    { "java", "java.lang.OutOfMemoryError", true },
    { "java", "Exception in thread \"main\" java.lang.RuntimeException: x", false },
    { "java", "2026-11-30T01:42:28.380Z INFO  [shop.orders] processed", false },
    { "java", "Error: plain text", false },
    { "python", "  File \"/srv/app.py\", line 3, in <module>", true },
    { "python", "", true },
    { "python", "Traceback (most recent call last):", true },
    { "python", "During handling of the above exception, another exception occurred:", true },
    { "python", "The above exception was the direct cause of the following exception:", true },
    { "python", "KeyError: 'missing'", true },
    { "python", "json.decoder.JSONDecodeError: Expecting value", true },
    { "python", "KeyboardInterrupt", true },
    { "python", "Exception: boom", true },
    { "python", "Boom: custom class name", false },
    { "python", "2026-11-30 01:42:34,526 INFO [billing.worker] invoice", false },
    { "go", "", true },
    { "go", "\t/src/ingest/main.go:24 +0x7b", true },
    { "go", "goroutine 18 [chan receive]:", true },
    { "go", "created by main.main", true },
    { "go", "main.worker(0x0?, 0x0?, 0x0?)", true },
    { "go", "net/http.(*conn).serve(0xc000120000, {0x6f1c18, 0xc000098000})", true },
    { "go", "[signal SIGSEGV: segmentation violation code=0x1 addr=0x0 pc=0x47b0f5]", true },
    { "go", "exit status 2", true },
    { "go", "...additional frames elided...", true },
    { "go", "panic: runtime error: index out of range [5] with length 3", false },
    { "go", "fatal error: all goroutines are asleep - deadlock!", false },
    { "go", "2026/11/30 01:42:48.630776 ingest: batch 0 accepted (0 items)", false },
    { "ruby", "app.rb:31:in `block in <main>'", true },
    { "ruby", "/usr/lib/ruby/3.1.0/json/common.rb:216:in `parse'", true },
    { "ruby", "app.rb:14:in 'Checkout#capture'", true },
    { "ruby", "\tfrom app.rb:25:in `<main>'", true },
    { "ruby", "2026-11-30T01:42:48.712270Z INFO -- checkout: order 0 captured", false },
    { "ruby", "E, [2026-11-30T01:42:48] ERROR -- : failed", false },
};

#define N_RULE_CASES (sizeof(rule_cases) / sizeof(rule_cases[0]))

START_TEST(each_preset_rule_joins_exactly_the_lines_it_documents)
{
    const struct rule_case *r = &rule_cases[_i];
    char conf[64];
    snprintf(conf, sizeof(conf), "{preset: %s}", r->preset);
    struct fx f;
    fx_open(&f, conf);
    log_str(&f, r->line); /* names the case in a failure */
    log_str(&f, "\n");
    fx_line(&f, "RECORD", 0, NULL, 0);
    fx_line(&f, r->line, 0, NULL, 0);
    ck_assert_int_eq(lf_chain_flush(f.chain), LF_OK);
    char want[256];
    size_t len = strlen(r->line);
    if (r->continues)
        snprintf(want, sizeof(want), "%s\nE 0-%zu M @1000 RECORD\\n%s\n", r->line, 8 + len,
                 r->line);
    else
        snprintf(want, sizeof(want), "%s\nE 0-7 - @1000 RECORD\nE 7-%zu - @1001 %s\n", r->line,
                 8 + len, r->line);
    ck_assert_int_eq(lf_buf_append(&f.log, "", 1), LF_OK);
    ck_assert_str_eq(f.log.ptr, want);
    fx_close(&f);
}
END_TEST

/* ---- config errors the stage itself reports ---- */

static void expect_compile_error(const char *conf, const char *msg)
{
    char yaml[512];
    snprintf(yaml, sizeof(yaml),
             "inputs:\n  - id: t\n    paths: [/x]\n    parsers:\n      - multiline: %s\n"
             "outputs:\n  - {name: local, type: file, path: /tmp/out}\n",
             conf);
    struct lf_config *cfg = NULL;
    struct lf_buf errors;
    lf_buf_init(&errors, SIZE_MAX);
    ck_assert_int_eq(lf_config_load_mem("t.yml", yaml, strlen(yaml), &cfg, &errors), LF_OK);
    lf_buf_release(&errors);
    struct lf_chain_spec *spec = NULL;
    struct lf_errbuf eb = { "" };
    size_t failed = 99;
    ck_assert_int_eq(lf_chain_spec_new(&cfg->inputs[0], 0, &spec, &failed, &eb), LF_ECONFIG);
    ck_assert_uint_eq(failed, 0);
    ck_assert_str_eq(eb.msg, msg);
    lf_config_free(cfg);
}

START_TEST(preset_with_negate_is_rejected_naming_the_preset)
{
    expect_compile_error("{preset: java, negate: true}",
                         "inputs[0].parsers[0]: multiline: preset java sets negate and match "
                         "itself");
}
END_TEST

START_TEST(preset_with_match_before_is_rejected)
{
    expect_compile_error("{preset: go, match: before}",
                         "inputs[0].parsers[0]: multiline: preset go sets negate and match "
                         "itself");
}
END_TEST

START_TEST(preset_with_type_count_is_rejected)
{
    expect_compile_error("{preset: ruby, type: count, count_lines: 2}",
                         "inputs[0].parsers[0]: multiline: preset ruby needs type pattern");
}
END_TEST

/* ---- real traces ---- */

struct trace_line {
    uint64_t offset;
    uint64_t end_offset;
    struct lf_str text;
};

struct trace {
    char *data;               /* owned; the whole file */
    struct trace_line *lines; /* owned */
    size_t n;
};

static void trace_load(struct trace *t, const char *name)
{
    const char *dir = getenv("LF_TEST_DATA");
    char path[1024];
    snprintf(path, sizeof(path), "%s/multiline/%s", dir != NULL ? dir : "t/data", name);
    FILE *fp = fopen(path, "rb");
    ck_assert_ptr_nonnull(fp);
    ck_assert_int_eq(fseek(fp, 0, SEEK_END), 0);
    long size = ftell(fp);
    ck_assert_int_gt(size, 0);
    rewind(fp);
    t->data = malloc((size_t)size);
    ck_assert_ptr_nonnull(t->data);
    ck_assert_uint_eq(fread(t->data, 1, (size_t)size, fp), (size_t)size);
    fclose(fp);
    t->lines = calloc((size_t)size, sizeof(*t->lines));
    ck_assert_ptr_nonnull(t->lines);
    t->n = 0;
    size_t start = 0;
    for (size_t i = 0; i < (size_t)size; i++) {
        if (t->data[i] != '\n')
            continue;
        t->lines[t->n++] =
            (struct trace_line){ start, i + 1, lf_str_make(t->data + start, i - start) };
        start = i + 1;
    }
    ck_assert_uint_eq(start, (size_t)size); /* every fixture ends with a newline */
}

static void trace_free(struct trace *t)
{
    free(t->lines);
    free(t->data);
}

/* The events a trace should give: one per line matching record_start (or the first line),
 * with every following line up to the next start. Rendered like record_event(). */
static size_t expected_events(const struct trace *t, const char *record_start, struct fx *f)
{
    int code;
    PCRE2_SIZE off;
    pcre2_code *re = pcre2_compile((PCRE2_SPTR)record_start, PCRE2_ZERO_TERMINATED, PCRE2_UTF,
                                   &code, &off, NULL);
    ck_assert_ptr_nonnull(re);
    pcre2_match_data *md = pcre2_match_data_create(1, NULL);
    size_t n = 0;
    size_t i = 0;
    while (i < t->n) {
        size_t j = i + 1;
        while (j < t->n && pcre2_match(re, (PCRE2_SPTR)t->lines[j].text.ptr, t->lines[j].text.len,
                                       0, 0, md, NULL) < 0)
            j++;
        struct lf_event ev = {
            .message = lf_str_make(t->lines[i].text.ptr,
                                   (size_t)(t->lines[j - 1].end_offset - 1 - t->lines[i].offset)),
            .timestamp_ns = (int64_t)i,
            .offset = t->lines[i].offset,
            .end_offset = t->lines[j - 1].end_offset,
            .flags = j - i > 1 ? LF_EVENT_MULTILINE : 0,
        };
        lf_err_ignore(record_event(f, &ev)); /* always LF_OK: it asserts inside */
        n++;
        i = j;
    }
    pcre2_match_data_free(md);
    pcre2_code_free(re);
    return n;
}

/* Runs the trace through conf and checks the events equal the records that record_start
 * delimits (messages, offsets, end offsets, flags, timestamps), and that there are want. */
static void check_trace(const char *file, const char *conf, const char *record_start, size_t want)
{
    struct trace t;
    trace_load(&t, file);
    struct fx expect;
    fx_open(&expect, conf);
    ck_assert_uint_eq(expected_events(&t, record_start, &expect), want);
    struct fx f;
    fx_open(&f, conf);
    for (size_t i = 0; i < t.n; i++) {
        struct lf_event ev = {
            .message = t.lines[i].text,
            .timestamp_ns = (int64_t)i,
            .offset = t.lines[i].offset,
            .end_offset = t.lines[i].end_offset,
        };
        ck_assert_int_eq(lf_chain_process(f.chain, &ev, 0), LF_OK);
    }
    ck_assert_int_eq(lf_chain_flush(f.chain), LF_OK);
    ck_assert_uint_eq(f.n_events, want);
    ck_assert_int_eq(lf_buf_append(&f.log, "", 1), LF_OK);
    ck_assert_int_eq(lf_buf_append(&expect.log, "", 1), LF_OK);
    ck_assert_str_eq(f.log.ptr, expect.log.ptr);
    fx_close(&f);
    fx_close(&expect);
    trace_free(&t);
}

/* Checks that no event of the trace under conf begins with one of prefixes (lines that
 * belong inside a trace). */
static void
check_no_event_starts_with(const char *file, const char *conf, const char *const *prefixes)
{
    struct trace t;
    trace_load(&t, file);
    struct fx f;
    fx_open(&f, conf);
    for (size_t i = 0; i < t.n; i++) {
        struct lf_event ev = { .message = t.lines[i].text,
                               .offset = t.lines[i].offset,
                               .end_offset = t.lines[i].end_offset };
        ck_assert_int_eq(lf_chain_process(f.chain, &ev, 0), LF_OK);
    }
    ck_assert_int_eq(lf_chain_flush(f.chain), LF_OK);
    ck_assert_int_eq(lf_buf_append(&f.log, "", 1), LF_OK);
    /* Each transcript line is `E a-b FLAGS @ts message`: find the message start. */
    size_t events = 0;
    for (const char *p = f.log.ptr; *p != '\0';) {
        const char *eol = strchr(p, '\n');
        const char *msg = strchr(strchr(p, '@'), ' ') + 1;
        for (size_t k = 0; prefixes[k] != NULL; k++)
            ck_assert_int_ne(strncmp(msg, prefixes[k], strlen(prefixes[k])), 0);
        events++;
        p = eol + 1;
    }
    ck_assert_uint_eq(events, f.n_events);
    fx_close(&f);
    trace_free(&t);
}

static const char *const java_inside[] = { "\tat ",         "Caused by:", "\t... ",
                                           "\tSuppressed:", "java.lang.", NULL };
static const char *const python_inside[] = {
    "  File ", "Traceback ", "KeyError", "During handling", "The above exception", "    ", NULL
};
static const char *const go_inside[] = { "goroutine ", "\t/", "main.", "created by ", NULL };
static const char *const ruby_inside[] = { "app.rb:", "/usr/lib/ruby/", NULL };

START_TEST(java_preset_gives_one_event_per_record_with_its_whole_trace)
{
    check_trace("java.log", "{preset: java}", "^\\d{4}-\\d{2}-\\d{2}T", 60);
    check_no_event_starts_with("java.log", "{preset: java}", java_inside);
}
END_TEST

START_TEST(python_preset_gives_one_event_per_record_with_its_whole_traceback)
{
    check_trace("python.log", "{preset: python}", "^\\d{4}-\\d{2}-\\d{2} ", 60);
    check_no_event_starts_with("python.log", "{preset: python}", python_inside);
}
END_TEST

START_TEST(ruby_preset_gives_one_event_per_record_with_its_whole_backtrace)
{
    check_trace("ruby.log", "{preset: ruby}", "^\\d{4}-\\d{2}-\\d{2}T", 60);
    check_no_event_starts_with("ruby.log", "{preset: ruby}", ruby_inside);
}
END_TEST

START_TEST(go_preset_gives_each_panic_dump_an_event_of_its_own)
{
    /* 63 log lines + 3 panic dumps: the panic is not part of the log line before it. */
    check_trace("go.log", "{preset: go}", "^(?:\\d{4}/\\d{2}/\\d{2} |panic:)", 66);
    check_no_event_starts_with("go.log", "{preset: go}", go_inside);
}
END_TEST

START_TEST(record_start_pattern_gives_the_record_count_of_every_trace)
{
    check_trace("java.log", "{pattern: '^\\d{4}-\\d{2}-\\d{2}T', negate: true, match: after}",
                "^\\d{4}-\\d{2}-\\d{2}T", 60);
    check_trace("python.log", "{pattern: '^\\d{4}-\\d{2}-\\d{2} ', negate: true, match: after}",
                "^\\d{4}-\\d{2}-\\d{2} ", 60);
    check_trace("node.log", "{pattern: '^\\d{4}-\\d{2}-\\d{2}T', negate: true, match: after}",
                "^\\d{4}-\\d{2}-\\d{2}T", 60);
    check_trace("ruby.log", "{pattern: '^\\d{4}-\\d{2}-\\d{2}T', negate: true, match: after}",
                "^\\d{4}-\\d{2}-\\d{2}T", 60);
    check_no_event_starts_with(
        "java.log", "{pattern: '^\\d{4}-\\d{2}-\\d{2}T', negate: true, match: after}", java_inside);
}
END_TEST

START_TEST(go_record_start_pattern_gives_63_or_66_as_panic_joins_or_starts)
{
    check_trace("go.log", "{pattern: '^\\d{4}/\\d{2}/\\d{2} ', negate: true, match: after}",
                "^\\d{4}/\\d{2}/\\d{2} ", 63);
    check_trace("go.log",
                "{pattern: '^(\\d{4}/\\d{2}/\\d{2} |panic:)', negate: true, match: after}",
                "^(?:\\d{4}/\\d{2}/\\d{2} |panic:)", 66);
}
END_TEST

/* ---- memory ---- */

static enum lf_err discard(void *arg, const struct lf_event *ev)
{
    size_t *n = arg;
    (*n) += ev->message.len > 0;
    return LF_OK;
}

START_TEST(steady_state_allocates_nothing_per_event)
{
    struct trace t;
    trace_load(&t, "java.log");
    struct fx f;
    fx_open(&f, "{preset: java}");
    size_t seen = 0;
    struct lf_stage_out sink = { discard, &seen };
    struct lf_chain *chain = NULL;
    ck_assert_int_eq(lf_chain_new(f.spec, &sink, &chain), LF_OK);
    /* One pass grows the buffers to the largest event; the second must allocate nothing. */
    for (int pass = 0; pass < 2; pass++) {
        /* No ck_assert inside the measured loop: Check's assertions allocate. */
        enum lf_err err = LF_OK;
        struct lf_alloc_count before = lf_alloc_count_now();
        for (size_t i = 0; i < t.n && !err; i++) {
            struct lf_event ev = { .message = t.lines[i].text,
                                   .offset = t.lines[i].offset,
                                   .end_offset = t.lines[i].end_offset };
            err = lf_chain_process(chain, &ev, 0);
        }
        if (!err)
            err = lf_chain_flush(chain);
        struct lf_alloc_count after = lf_alloc_count_now();
        ck_assert_int_eq(err, LF_OK);
        if (pass == 1)
            ck_assert_uint_eq(after.calls - before.calls, 0);
    }
    ck_assert_uint_eq(seen, 120);
    lf_chain_free(chain);
    fx_close(&f);
    trace_free(&t);
}
END_TEST

static Suite *multiline_suite(void)
{
    Suite *s = suite_create("multiline");
    TCase *table = tcase_create("filebeat cases");
    tcase_add_loop_test(table, each_case_gives_exactly_its_events_deadlines_and_held_offsets, 0,
                        N_CASES);
    tcase_add_test(table, case_table_covers_at_least_twenty_five_cases);
    suite_add_tcase(s, table);
    TCase *conf = tcase_create("config");
    tcase_add_test(conf, preset_with_negate_is_rejected_naming_the_preset);
    tcase_add_test(conf, preset_with_match_before_is_rejected);
    tcase_add_test(conf, preset_with_type_count_is_rejected);
    suite_add_tcase(s, conf);
    TCase *rules = tcase_create("preset rules");
    tcase_add_loop_test(rules, each_preset_rule_joins_exactly_the_lines_it_documents, 0,
                        N_RULE_CASES);
    suite_add_tcase(s, rules);
    TCase *traces = tcase_create("real traces");
    tcase_add_test(traces, java_preset_gives_one_event_per_record_with_its_whole_trace);
    tcase_add_test(traces, python_preset_gives_one_event_per_record_with_its_whole_traceback);
    tcase_add_test(traces, ruby_preset_gives_one_event_per_record_with_its_whole_backtrace);
    tcase_add_test(traces, go_preset_gives_each_panic_dump_an_event_of_its_own);
    tcase_add_test(traces, record_start_pattern_gives_the_record_count_of_every_trace);
    tcase_add_test(traces, go_record_start_pattern_gives_63_or_66_as_panic_joins_or_starts);
    suite_add_tcase(s, traces);
    /* Run by t/unit/check_multiline_alloc only (see main). */
    TCase *mem = tcase_create("memory");
    tcase_set_tags(mem, "alloc");
    tcase_add_test(mem, steady_state_allocates_nothing_per_event);
    suite_add_tcase(s, mem);
    return s;
}

/* Built twice. t/unit/check_multiline runs every case but the one tagged alloc;
 * t/unit/check_multiline_alloc (LF_CHECK_ALLOC) runs that one alone and, where allocations
 * cannot be counted (under ASan), exits 77 so that the suite counts it as skipped rather than
 * passed. The plain build (make distcheck in CI) runs it. */
int main(void)
{
#ifdef LF_CHECK_ALLOC
    if (!lf_alloc_count_enabled()) {
        printf("SKIP: allocation counting unavailable (sanitizer build): "
               "steady_state_allocates_nothing_per_event not run\n");
        return 77;
    }
    const char *include = "alloc", *exclude = NULL;
#else
    const char *include = NULL, *exclude = "alloc";
#endif
    SRunner *sr = srunner_create(multiline_suite());
    srunner_run_tagged(sr, NULL, NULL, include, exclude, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
