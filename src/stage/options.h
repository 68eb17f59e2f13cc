/* options.h - a stage's options as rows of a table, and the compile, free, open and close
 * every stage built from such a table shares. Shared within src/stage/ only.
 *
 * A stage declares its options as rows (struct lf_stage_opt), as src/config/tables.c does
 * for the config: each row names an option, where it lies in struct lf_parser_conf
 * (offsetof), where it goes in the stage's spec (offsetof), and its kind, which says how:
 * copied, defaulted, refused when empty, JSON-escaped, checked as a target, compiled with
 * PCRE2, loaded as a JSON object. What rows cannot say (dissect's tokenizer, multiline's
 * presets, a time zone) the stage's build step does after them. So:
 *
 *   lf_stage__compile()   spec = calloc(spec_size); each row in order; build()
 *   lf_stage__free_spec() release(); what each row made
 *   lf_stage__open()      state = calloc(state_size); each slot; open()
 *   lf_stage__close()     close(); each slot
 *
 * Errors are LF_ECONFIG with the stage's name in front ("kv: target \"host\" is a key every
 * event has already"); the config loader adds FILE:LINE:COL and the key path. A spec and a
 * state built this way begin with struct lf_stage_head, which names their table: free and
 * close find it there, and offset 0 (the head's) ends the lists and means "none" below.
 *
 * Threads: compile and free on any thread (the config check, a reload); a spec is read-only
 * once compiled and may be shared by the chains of one input; a state belongs to one chain,
 * one thread at a time (stage.h). Nothing here runs per event. */
#ifndef LF_STAGE_OPTIONS_H
#define LF_STAGE_OPTIONS_H

#ifndef PCRE2_CODE_UNIT_WIDTH
#define PCRE2_CODE_UNIT_WIDTH 8
#endif
#include <pcre2.h>
#include <stddef.h>

#include "logferry/buf.h"
#include "logferry/config.h"
#include "logferry/err.h"
#include "logferry/stage.h"

struct lf_stage_table;

/* The first member of every spec and state built from a table. */
struct lf_stage_head {
    const struct lf_stage_table *table; /* borrowed: static */
};

/* A target option once compiled: where a stage's members go. */
struct lf_stage_target {
    char *name; /* owned; "" = the root */
    size_t len;
    char *open; /* owned; `"name":{` with name JSON-escaped; "" at the root */
    size_t open_len;
};

/* A name of a list option (kv's include_keys), with its length. */
struct lf_stage_name {
    char *name; /* owned */
    size_t len;
};

enum lf_stage_opt_kind {
    LF_STAGE_OPT_VALUE,   /* a scalar (enum, bool, size_t, uint64_t): copied */
    LF_STAGE_OPT_STRING,  /* char * -> char *, an owned copy (def when NULL); its length at
                             to_n when not 0 */
    LF_STAGE_OPT_ESCAPED, /* char * -> struct lf_buf holding it JSON-escaped (def when NULL) */
    LF_STAGE_OPT_TARGET,  /* char * -> struct lf_stage_target (def ""); refused when it names
                             a key every event has already: message or the encoder's own */
    LF_STAGE_OPT_NAMES,   /* char ** and its count at from_n -> struct lf_stage_name *, owned,
                             one more than the count (never NULL); the count at to_n */
    LF_STAGE_OPT_REGEX,   /* char * -> pcre2_code *, owned (UTF, JIT); NULL stays NULL */
    LF_STAGE_OPT_REGEXES, /* char ** and its count at from_n -> pcre2_code **, owned, one
                             more than the count; the count at to_n */
    LF_STAGE_OPT_JSON,    /* char * (JSON text) -> json_t *, owned, an object; NULL stays NULL;
                             why is the error when it is no object */
};

/* One option of a stage. */
struct lf_stage_opt {
    const char *name; /* as the config writes it; NULL ends the table */
    enum lf_stage_opt_kind kind;
    size_t from;     /* offsetof the option in struct lf_parser_conf */
    size_t from_n;   /* lists: offsetof their count there */
    size_t to;       /* offsetof where it goes in the spec */
    size_t to_n;     /* offsetof a length or count in the spec; 0: none */
    size_t size;     /* VALUE: its bytes (the same on both sides) */
    const char *def; /* STRING, ESCAPED: the value when the config has none */
    const char *why; /* STRING, ESCAPED: when set, "" is refused with this text; JSON: the
                        text when it is no object. Without the stage's name. */
};

/* What a state holds that open makes and close undoes. */
enum lf_stage_slot_kind {
    LF_STAGE_SLOT_BUF,  /* a struct lf_buf, started empty without a cap, released */
    LF_STAGE_SLOT_FREE, /* a pointer the stage allocates as it goes; free()d */
};

struct lf_stage_slot {
    enum lf_stage_slot_kind kind;
    size_t off; /* offsetof in the state; 0 ends the list */
};

struct lf_stage_table {
    const char *name;                /* the stage, as errors begin; NULL: no prefix */
    const struct lf_stage_opt *opts; /* the options, in the order they are checked */
    size_t spec_size;
    /* Optional: the rest of compiling, after the rows: LF_ECONFIG via lf_fail() with the
     * stage's name in front, or LF_ENOMEM. What it allocates, release frees (both may see
     * a spec it only partly filled, zeroed elsewhere). */
    enum lf_err (*build)(void *spec, const struct lf_parser_conf *pc, struct lf_errbuf *eb);
    void (*release)(void *spec);
    size_t state_size;                 /* 0: the stage keeps no state */
    const struct lf_stage_slot *slots; /* may be NULL */
    /* Optional: the rest of opening (LF_ENOMEM), and what undoes it (it may see a state
     * open only partly made, zeroed elsewhere). */
    enum lf_err (*open)(const void *spec, void *state);
    void (*close)(void *state);
};

/* Rows: T is the spec's type, to_ its field, from_ the field of struct lf_parser_conf
 * (`u.kv.target`). LF_STAGE_VALUE checks at compile time that both are the same size. */
#define LF_STAGE_OPT_FIELD(T, f) sizeof(((T *)0)->f)
#define LF_STAGE_VALUE(name_, T, to_, from_)                                                       \
    {                                                                                              \
        .name = name_, .kind = LF_STAGE_OPT_VALUE,                                                 \
        .from = offsetof(struct lf_parser_conf, from_), .to = offsetof(T, to_),                    \
        .size = LF_STAGE_OPT_FIELD(T, to_) +                                                       \
                0 * sizeof(char[LF_STAGE_OPT_FIELD(T, to_) ==                                      \
                                        LF_STAGE_OPT_FIELD(struct lf_parser_conf, from_)           \
                                    ? 1                                                            \
                                    : -1])                                                         \
    }
/* A row of kind_ taking one string: STRING (its length not kept), ESCAPED, TARGET, REGEX,
 * JSON. */
#define LF_STAGE_TEXT(name_, kind_, T, to_, from_, def_, why_)                        \
    {                                                                                 \
        .name = name_, .kind = kind_, .from = offsetof(struct lf_parser_conf, from_), \
        .to = offsetof(T, to_), .def = def_, .why = why_                              \
    }
/* A STRING whose length goes to len_; a list (NAMES, REGEXES) and its count. */
#define LF_STAGE_STRING(name_, T, to_, len_, from_, def_, why_)                 \
    {                                                                           \
        .name = name_, .kind = LF_STAGE_OPT_STRING,                             \
        .from = offsetof(struct lf_parser_conf, from_), .to = offsetof(T, to_), \
        .to_n = offsetof(T, len_), .def = def_, .why = why_                     \
    }
#define LF_STAGE_LIST(name_, kind_, T, to_, n_, from_, from_n_)                       \
    {                                                                                 \
        .name = name_, .kind = kind_, .from = offsetof(struct lf_parser_conf, from_), \
        .from_n = offsetof(struct lf_parser_conf, from_n_), .to = offsetof(T, to_),   \
        .to_n = offsetof(T, n_)                                                       \
    }
#define LF_STAGE_OPT_END \
    {                    \
        .name = NULL     \
    }

#define LF_STAGE_BUF(T, f)                               \
    {                                                    \
        .kind = LF_STAGE_SLOT_BUF, .off = offsetof(T, f) \
    }
#define LF_STAGE_FREE(T, f)                               \
    {                                                     \
        .kind = LF_STAGE_SLOT_FREE, .off = offsetof(T, f) \
    }
#define LF_STAGE_SLOT_END \
    {                     \
        .off = 0          \
    }

/* The members of a struct lf_stage_ops for a stage built from table t. */
#define LF_STAGE_TABLE_OPS(t)                                                      \
    .table = &(t), .compile = lf_stage__compile, .free_spec = lf_stage__free_spec, \
    .open = lf_stage__open, .close = lf_stage__close

/* The lf_stage_ops members for a table's stage: pc's kind finds the table (through the
 * chain's list of stages, lf_stage__find()). */
LF_MUST_CHECK enum lf_err
lf_stage__compile(const struct lf_parser_conf *pc, void **spec, struct lf_errbuf *eb);
LF_MUST_CHECK enum lf_err lf_stage__compile_table(const struct lf_stage_table *t,
                                                  const struct lf_parser_conf *pc,
                                                  void **spec,
                                                  struct lf_errbuf *eb);
void lf_stage__free_spec(void *spec);
LF_MUST_CHECK enum lf_err lf_stage__open(const void *spec, void **state);
void lf_stage__close(void *state);

/* The stage of a parser kind, NULL for none yet. Defined in chain.c. */
const struct lf_stage_ops *lf_stage__find(enum lf_parser_kind kind);

/* Compiles pattern (len bytes) with PCRE2 options flags and then JIT (*jit says whether it
 * took; without it the interpreter matches). NULL on a bad pattern, with PCRE2's text in
 * why and the offset in *off. */
pcre2_code *lf_stage__pcre2(const char *pattern,
                            size_t len,
                            uint32_t flags,
                            bool *jit,
                            char *why,
                            size_t why_len,
                            size_t *off);

/* Compiles pattern in UTF mode with JIT into *out: LF_ECONFIG with `stage: PCRE2's text at
 * offset N of "pattern"` (no `stage: ` for NULL). */
LF_MUST_CHECK enum lf_err
lf_stage__regex(const char *stage, const char *pattern, pcre2_code **out, struct lf_errbuf *eb);

/* True when target would name a member every event has: message or one the encoder writes
 * itself (@timestamp, log, input, host, fields). */
bool lf_stage__taken_key(const char *key, size_t len);

/* A new C string `"s":` plus tail, s JSON-escaped, in *out; LF_ENOMEM. */
LF_MUST_CHECK enum lf_err lf_stage__member_head(const char *s, const char *tail, char **out);

#endif
