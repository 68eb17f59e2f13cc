/* stage.h - the per-line stage chain: container, multiline, include/exclude, ndjson.
 *
 * Two levels, like compiled regexes and their match data:
 *   struct lf_chain_spec  per input: each parser's settings compiled once (PCRE2 + JIT)
 *   struct lf_chain       per source (file): each stage's state (a pending multiline
 *                         event, a partial container line), built from a spec
 * Events go in one at a time with lf_chain_process() and come out of the sink zero, one or
 * several at a time, possibly later (multiline holds lines until the next event starts,
 * its timeout passes, or the chain is flushed; container holds runtime partials until the
 * final fragment). A stage may let later events overtake one it holds (the container
 * stage's other stream does), so acknowledged offsets alone could pass a held line: the
 * registry stores min(acknowledged offset, lf_chain_held_offset()), and a crash re-reads
 * from the held line.
 *
 * A stage is one file in src/stage/ exporting a struct lf_stage_ops, plus one row in the
 * table in chain.c; its options are rows of a table (src/stage/options.h). One thread at a time per chain; specs are read-only once built and may
 * be shared by the chains of one input, but for the throttle's buckets, which the input's
 * chains share under the spec's own lock (src/stage/throttle.c), and the redact stage's
 * counts per pattern, atomics the chains add to and lf_chain_spec_redactions() reads. */
#ifndef LF_STAGE_H
#define LF_STAGE_H

#include <stdbool.h>
#include <stdint.h>

#include "logferry/config.h"
#include "logferry/err.h"
#include "logferry/event.h"

/* Where a stage (or the chain) sends what it emits. ev and the bytes it points to are
 * borrowed: valid during the call only. */
struct lf_stage_out {
    enum lf_err (*emit)(void *arg, const struct lf_event *ev);
    void *arg;
};

struct lf_stage_table;

struct lf_stage_ops {
    enum lf_parser_kind kind; /* the parser this stage implements */
    /* The stage's options as a table (src/stage/options.h), or NULL: compile, free_spec,
     * open and close are then the table's generic ones. */
    const struct lf_stage_table *table;
    /* Compiles pc once per input into *spec (regexes, presets). LF_ECONFIG with eb naming
     * the parser and the problem. */
    enum lf_err (*compile)(const struct lf_parser_conf *pc, void **spec, struct lf_errbuf *eb);
    void (*free_spec)(void *spec);
    /* Creates per-source state for spec (NULL is fine for stateless stages). */
    enum lf_err (*open)(const void *spec, void **state);
    void (*close)(void *state);
    /* Takes ev (borrowed during the call) and emits 0..n events through out. Events with
     * LF_EVENT_DROPPED never reach a stage: the chain routes them. */
    enum lf_err (*process)(const void *spec, void *state, const struct lf_event *ev,
                           int64_t now_ms, const struct lf_stage_out *out);
    /* Optional: emits what was held past its time; *next_ms is then the next deadline
     * (INT64_MAX when nothing is held). */
    enum lf_err (*tick)(const void *spec, void *state, int64_t now_ms,
                        const struct lf_stage_out *out, int64_t *next_ms);
    /* Optional: emits everything held (end of input, file closed, shutdown). */
    enum lf_err (*flush)(const void *spec, void *state, const struct lf_stage_out *out);
    /* Optional: true while the state holds part of an event not yet emitted. */
    bool (*holding)(const void *state);
    /* Optional (required with holding): source offset of the first byte held, UINT64_MAX
     * when nothing is held. */
    uint64_t (*held_offset)(const void *state);
};

struct lf_chain_spec;
struct lf_chain;

struct lf_chain_stats {
    uint64_t events_in;       /* events given to lf_chain_process() */
    uint64_t events_out;      /* events that reached the sink, dropped ones excluded */
    uint64_t events_filtered; /* events dropped by a stage, or routed to no output */
};

/* Compiles in's parsers into a new spec in *out; free with lf_chain_spec_free(). An input
 * without parsers gives an empty spec, whose chains pass events straight through.
 * LF_ECONFIG with eb saying `inputs[N].parsers[M]: problem` and *failed (if not NULL) the
 * index M of the parser at fault. */
LF_MUST_CHECK enum lf_err lf_chain_spec_new(const struct lf_input_conf *in, size_t input_idx,
                                            struct lf_chain_spec **out, size_t *failed,
                                            struct lf_errbuf *eb);
void lf_chain_spec_free(struct lf_chain_spec *spec);

/* Calls fn with each pattern of spec's redact stages (in config order) and its matches
 * since spec was compiled, counted over every chain made from it; a pattern named in two
 * redact stages comes once, with their sum. Stops at fn's first error and returns it. Any
 * thread: the counts are atomic. */
LF_MUST_CHECK enum lf_err
lf_chain_spec_redactions(const struct lf_chain_spec *spec,
                         enum lf_err (*fn)(void *arg, const char *pattern, uint64_t n),
                         void *arg);

/* Calls fn with each of spec's routes (in config order, then "default": the events no route
 * matched) and the events it matched since spec was compiled, over every chain made from
 * it; nothing for an input without routes. Stops at fn's first error and returns it. Any
 * thread: the counts are atomic. */
LF_MUST_CHECK enum lf_err
lf_chain_spec_routes(const struct lf_chain_spec *spec,
                     enum lf_err (*fn)(void *arg, const char *route, uint64_t n),
                     void *arg);

/* The names of the routes a routes word names (its bits), comma-separated, in dst (dst_len
 * bytes, cut short if it must); "default" for 0. For --preview. Returns dst. */
const char *lf_chain_spec_route_names(const struct lf_chain_spec *spec, uint64_t routes,
                                      char *dst, size_t dst_len);

/* Compiles parser i of in alone and throws the result away: the config loader's check, so
 * every parser's problem is found in one pass. LF_ECONFIG with eb saying why (no key path
 * in front); LF_ENOMEM. Any thread. */
LF_MUST_CHECK enum lf_err lf_chain_parser_check(const struct lf_input_conf *in, size_t i,
                                                struct lf_errbuf *eb);

/* Returns a new chain for one source in *out, emitting into sink (borrowed: must outlive
 * the chain, like spec); free with lf_chain_free(). LF_ENOMEM. */
LF_MUST_CHECK enum lf_err lf_chain_new(const struct lf_chain_spec *spec,
                                       const struct lf_stage_out *sink, struct lf_chain **out);

/* Frees the chain; anything still held is dropped (flush first to keep it). */
void lf_chain_free(struct lf_chain *c);

/* Runs ev (borrowed during the call) through the stages. Errors: the sink's, or
 * LF_ENOMEM. */
LF_MUST_CHECK enum lf_err lf_chain_process(struct lf_chain *c, const struct lf_event *ev,
                                           int64_t now_ms);

/* Emits events held past their timeout. *next_ms: the next deadline, INT64_MAX if none. */
LF_MUST_CHECK enum lf_err lf_chain_tick(struct lf_chain *c, int64_t now_ms, int64_t *next_ms);

/* Emits everything held, in order. */
LF_MUST_CHECK enum lf_err lf_chain_flush(struct lf_chain *c);

/* True while some stage holds part of an event (the source must stay open for it). */
bool lf_chain_holding(const struct lf_chain *c);

/* Source offset of the first byte some stage holds, UINT64_MAX when none: the registry
 * must not store an offset past it. */
uint64_t lf_chain_held_offset(const struct lf_chain *c);

/* Counters since lf_chain_new(). Borrowed: valid while c lives. */
const struct lf_chain_stats *lf_chain_stats(const struct lf_chain *c);

#endif
