/* chain_harness.h - the harness the stage targets share (fuzz_container, fuzz_multiline,
 * fuzz_ndjson): bytes -> the UTF-8 line reader -> events as the harvester makes them -> a
 * stage chain -> the event encoder, as the daemon runs them.
 *
 * A target is a table of parser lists handed to fuzz_chain_input(), which picks one by the
 * input's first byte. The clock moves one second per line and the chain is ticked whenever
 * its deadline passes, so timeouts fire mid-input; the rest is flushed at the end.
 * Invariants checked:
 *   - every event that comes out has 0 <= offset < end_offset <= the bytes fed, its source,
 *     a valid UTF-8 message, and encodes to one JSON object that jansson parses back;
 *   - while a stage holds something, the held offset lies inside the bytes fed;
 *   - after the flush nothing is held, and events out never exceed lines in.
 * A failed check traps, so libFuzzer keeps the input. Static functions only: each target
 * is one .c file that includes this header. */
#ifndef LF_CHAIN_HARNESS_H
#define LF_CHAIN_HARNESS_H

#include "config.h"

#include <jansson.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "logferry/config.h"
#include "logferry/event.h"
#include "logferry/reader.h"
#include "logferry/stage.h"
#include "logferry/tail.h"
#include "logferry/utf8.h"

#define FUZZ_CHECK(cond)      \
    do {                      \
        if (!(cond))          \
            __builtin_trap(); \
    } while (0)

/* The line limit of every fuzzed input: small, so truncation and size limits are reached. */
#define FUZZ_MAX_LINE_BYTES 512

struct fuzz_chain_spec {
    struct lf_config *cfg; /* owned; the spec borrows from it */
    struct lf_chain_spec *spec;
};

/* Compiles an input whose parsers are the YAML flow list `parsers` into fs. Aborts (with
 * the config errors on stderr) when the list is refused: that is a bug in the target. */
static void fuzz_chain_spec(struct fuzz_chain_spec *fs, const char *parsers)
{
    char yaml[2048];
    int n = snprintf(yaml, sizeof(yaml),
                     "inputs:\n  - id: fz\n    paths: ['/x/*.log']\n    max_line_bytes: %d\n"
                     "    parsers: %s\noutputs:\n  - name: c\n    type: console\n",
                     FUZZ_MAX_LINE_BYTES, parsers);
    FUZZ_CHECK(n > 0 && (size_t)n < sizeof(yaml));
    struct lf_buf errors;
    lf_buf_init(&errors, 1 << 16);
    if (lf_config_load_mem("fuzz.yml", yaml, (size_t)n, &fs->cfg, &errors)) {
        fprintf(stderr, "%.*s", (int)errors.len, errors.ptr);
        abort();
    }
    lf_buf_release(&errors);
    struct lf_errbuf eb = { "" };
    if (lf_chain_spec_new(&fs->cfg->inputs[0], 0, &fs->spec, NULL, &eb)) {
        fprintf(stderr, "%s\n", eb.msg);
        abort();
    }
}

struct fuzz_run {
    struct lf_source *src;
    struct lf_buf json; /* one encoded event at a time */
    uint64_t fed;       /* source bytes given to the reader so far */
    uint64_t lines_in;
    uint64_t events_out;
};

static enum lf_err fuzz_check_event(void *arg, const struct lf_event *ev)
{
    struct fuzz_run *r = arg;
    FUZZ_CHECK(ev->source == r->src);
    FUZZ_CHECK(ev->offset < ev->end_offset);
    FUZZ_CHECK(ev->end_offset <= r->fed);
    FUZZ_CHECK(ev->message.len == 0 || ev->message.ptr != NULL);
    FUZZ_CHECK(lf_utf8_valid(ev->message.ptr, ev->message.len));
    if (ev->flags & LF_EVENT_DROPPED)
        return LF_OK;
    r->events_out++;
    lf_buf_reset(&r->json);
    FUZZ_CHECK(lf_event_encode(&r->json, ev) == LF_OK);
    FUZZ_CHECK(r->json.len > 0 && r->json.ptr[r->json.len - 1] == '\n');
    json_error_t jerr;
    json_t *obj = json_loadb(r->json.ptr, r->json.len - 1, JSON_ALLOW_NUL, &jerr);
    if (obj == NULL || !json_is_object(obj)) {
        fprintf(stderr, "encoded event is not a JSON object (%s): %.*s\n", jerr.text,
                (int)r->json.len, r->json.ptr);
        __builtin_trap();
    }
    json_decref(obj);
    return LF_OK;
}

static void fuzz_check_held(const struct lf_chain *c, const struct fuzz_run *r)
{
    uint64_t held = lf_chain_held_offset(c);
    if (lf_chain_holding(c))
        FUZZ_CHECK(held < r->fed);
    else
        FUZZ_CHECK(held == UINT64_MAX);
}

struct fuzz_clock {
    int64_t now_ms;  /* the monotonic clock given to the chain: one second per line */
    int64_t next_ms; /* the chain's next deadline */
};

static void fuzz_chain_line(struct lf_chain *c,
                            struct fuzz_run *r,
                            struct fuzz_clock *clk,
                            const struct lf_line *line)
{
    const int64_t wall_ns = INT64_C(1796000523) * 1000000000 + clk->now_ms * 1000000;
    struct lf_event ev = lf_tail_line_event(line, wall_ns, r->src);
    r->lines_in++;
    FUZZ_CHECK(lf_chain_process(c, &ev, clk->now_ms) == LF_OK);
    fuzz_check_held(c, r);
    clk->now_ms += 1000;
    if (clk->now_ms >= clk->next_ms || r->lines_in % 4 == 0)
        FUZZ_CHECK(lf_chain_tick(c, clk->now_ms, &clk->next_ms) == LF_OK);
    fuzz_check_held(c, r);
}

/* Runs data as one file's bytes through a chain of fs->spec, checking the invariants above. */
static void fuzz_chain_run(const struct fuzz_chain_spec *fs, const uint8_t *data, size_t size)
{
    struct fuzz_run r = { 0 };
    lf_buf_init(&r.json, 1 << 20);
    FUZZ_CHECK(lf_source_new("/x/app.log", "fz", "node-1", NULL, false, &r.src) == LF_OK);
    const struct lf_stage_out sink = { fuzz_check_event, &r };
    struct lf_chain *c = NULL;
    FUZZ_CHECK(lf_chain_new(fs->spec, &sink, &c) == LF_OK);
    const struct lf_reader_opts o = {
        .encoding = "utf-8",
        .buffer_size = 4096,
        .max_line_bytes = FUZZ_MAX_LINE_BYTES,
        .overflow = LF_OVERFLOW_TRUNCATE,
        .start_offset = 0,
    };
    struct lf_reader *rd = NULL;
    struct lf_errbuf eb = { "" };
    FUZZ_CHECK(lf_reader_new(&o, &rd, &eb) == LF_OK);

    struct fuzz_clock clk = { 1000, INT64_MAX };
    struct lf_line line;
    enum lf_err err;
    size_t at = 0;
    while (at < size) {
        size_t took = lf_reader_feed(rd, data + at, size - at);
        at += took;
        r.fed += took;
        while ((err = lf_reader_next(rd, &line)) == LF_OK)
            fuzz_chain_line(c, &r, &clk, &line);
        FUZZ_CHECK(err == LF_EAGAIN);
    }
    while ((err = lf_reader_finish(rd, &line)) == LF_OK)
        fuzz_chain_line(c, &r, &clk, &line);
    FUZZ_CHECK(err == LF_EOF);

    FUZZ_CHECK(lf_chain_flush(c) == LF_OK);
    FUZZ_CHECK(!lf_chain_holding(c));
    FUZZ_CHECK(lf_chain_held_offset(c) == UINT64_MAX);
    FUZZ_CHECK(r.events_out <= r.lines_in);
    FUZZ_CHECK(lf_chain_stats(c)->events_in == r.lines_in);
    lf_reader_free(rd);
    lf_chain_free(c);
    lf_source_free(r.src);
    lf_buf_release(&r.json);
}

/* One libFuzzer input: data[0] picks configs[data[0] % n] (its spec in specs[], compiled at
 * first use and kept for the process: PCRE2 and config parsing would dominate each run),
 * and the whole input, that byte included, is the file. A seed thus stays a real file. */
static int fuzz_chain_input(const char *const *configs,
                            struct fuzz_chain_spec *specs,
                            size_t n,
                            const uint8_t *data,
                            size_t size)
{
    if (size == 0)
        return 0;
    struct fuzz_chain_spec *fs = &specs[data[0] % n];
    if (fs->spec == NULL)
        fuzz_chain_spec(fs, configs[data[0] % n]);
    fuzz_chain_run(fs, data, size);
    return 0;
}

#endif
