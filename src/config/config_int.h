/* config_int.h - shared within src/config/ only: the key-table engine and its context.
 *
 * Every accepted key is a row of a table (struct lf_conf_key): name, kind, offsetof into the
 * struct being filled, default (a string parsed by the kind's one setter) and help. The engine
 * walks a YAML mapping node, finds each key's row, and runs the kind's setter; problems are
 * appended to the error buffer as `FILE:LINE:COL: key.path: message` and loading goes on, so
 * one run reports every problem. */
#ifndef LF_CONFIG_INT_H
#define LF_CONFIG_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <yaml.h>

#include "logferry/buf.h"
#include "logferry/config.h"
#include "logferry/err.h"

enum lf_conf_kind {
    LF_CONF_STRING = 0, /* char *; arg: optional lf_conf_check_fn */
    LF_CONF_BOOL,       /* bool */
    LF_CONF_SIZE,       /* size_t, bytes with KiB/MiB/GiB; min/max bound it */
    LF_CONF_COUNT,      /* size_t, a plain non-negative integer; min/max bound it */
    LF_CONF_INT,        /* int; min/max bound it */
    LF_CONF_DURATION,   /* uint64_t milliseconds */
    LF_CONF_ENUM,       /* an enum (stored as int); arg: const struct lf_conf_enum[] */
    LF_CONF_ENUM_STR,   /* char *, one of arg's names */
    LF_CONF_REGEX,      /* char *, compiled once with PCRE2 to validate it */
    LF_CONF_STRLIST,    /* char ** at off, size_t count at off_n; a lone scalar is a list of 1;
                           arg: optional lf_conf_check_fn for each entry */
    LF_CONF_REGEXLIST,  /* as STRLIST, each entry a PCRE2 regex */
    LF_CONF_JSON,       /* char *: any YAML value rendered once as compact JSON */
    LF_CONF_SECTION,    /* a nested mapping; arg: sub-table, offsets on the same base */
    LF_CONF_EXTERNAL,   /* accepted here, interpreted by the caller (inputs, parsers, ...) */
};

#define LF_CONF_REQUIRED 0x1u /* a missing key is an error */
#define LF_CONF_NONEMPTY 0x2u /* "" is an error (strings and list entries) */
#define LF_CONF_LIST     0x4u /* LF_CONF_JSON: a list, instead of a mapping */

/* A validator for string values: returns NULL if s is fine, else a static "expected ..."
 * text for the message. */
typedef const char *lf_conf_check_fn(const char *s);

struct lf_conf_enum {
    const char *name; /* NULL ends the table */
    int value;
};

struct lf_conf_key {
    const char *name; /* NULL ends the table */
    enum lf_conf_kind kind;
    size_t off;       /* offsetof the value in the base struct */
    size_t off_n;     /* lists: offsetof the size_t count */
    const char *def;  /* default, parsed by the kind's setter; NULL leaves zero */
    const void *arg;  /* enum table, sub-table or check function (see the kinds) */
    long long min;    /* SIZE, COUNT, INT, DURATION: smallest allowed */
    long long max;    /* largest allowed; 0 = no limit */
    unsigned flags;   /* LF_CONF_REQUIRED, LF_CONF_NONEMPTY */
    const char *help; /* one line for docs and messages */
};

/* One reported problem, kept until the load ends so lines come out in file order. */
struct lf_conf_msg {
    size_t line; /* 0-based, from the libyaml mark */
    size_t col;
    size_t seq; /* report order, to keep sorting stable */
    char *text; /* owned; the whole line with its newline */
};

/* State of one load. */
struct lf_conf_ctx {
    const char *name;      /* borrowed: file name used in messages */
    yaml_document_t *doc;  /* borrowed */
    struct lf_buf *errors; /* borrowed: messages are appended here */
    size_t n_errors;       /* problems reported so far */
    bool oom;              /* an allocation failed: the load returns LF_ENOMEM */
    char path[512];        /* the key path of the value being read, e.g. inputs[0].paths */
    size_t path_len;
    struct lf_env_values env; /* owned until handed to the config: the ${VAR} values met */
    const struct lf_config_checks *checks; /* borrowed; NULL: none */
    struct lf_conf_msg *msgs; /* owned; problems reported so far */
    size_t n_msgs;
    size_t cap_msgs;
};

/* Appends the problems, sorted by position, to c->errors and frees them. */
void lf_conf__flush_errors(struct lf_conf_ctx *c);

/* Reports one problem at node's start (node may be NULL: position 1:1), prefixed with the
 * current key path when it is not empty. */
void lf_conf__error(struct lf_conf_ctx *c, const yaml_node_t *node, const char *fmt, ...)
    LF_PRINTF(3, 4);

/* As lf_conf__error() at an explicit libyaml mark (0-based line and column). */
void lf_conf__error_at(struct lf_conf_ctx *c, yaml_mark_t mark, const char *fmt, ...)
    LF_PRINTF(3, 4);

/* Appends ".name" (or "name" at the root), "[i]" to the key path; returns the length to pass
 * to lf_conf__path_pop(). */
size_t lf_conf__path_key(struct lf_conf_ctx *c, const char *name);
size_t lf_conf__path_index(struct lf_conf_ctx *c, size_t i);
void lf_conf__path_pop(struct lf_conf_ctx *c, size_t len);

/* Copies s into dst (dst_len bytes) for a message: at most 64 bytes, control bytes as \xNN, so
 * one problem stays one line. Returns dst. */
const char *lf_conf__quote(char *dst, size_t dst_len, const char *s);

/* How a message shows value s, read from node (NULL for a table default): quoted as
 * lf_conf__quote() does ("s"), or, when node's text takes anything from the environment,
 * `from ` and that text (`from ${DB_PASSWORD}`): a value from the environment may be a
 * secret, so no message, log or terminal ever gets it. Returns dst. */
const char *lf_conf__show(char *dst, size_t dst_len, const yaml_node_t *node, const char *s);

/* The node with this id; NULL for 0 or a bad id. Borrowed from c->doc. */
yaml_node_t *lf_conf__node(struct lf_conf_ctx *c, int id);

/* The value node of key name in mapping node map; NULL if absent or map is no mapping. */
yaml_node_t *lf_conf__get(struct lf_conf_ctx *c, yaml_node_t *map, const char *name);

/* A scalar's value after ${VAR} expansion, in *out (new string; free() it). false (and the
 * problem reported) if node is not a scalar or expansion fails; *out is then NULL. */
bool lf_conf__scalar(struct lf_conf_ctx *c, yaml_node_t *node, const char *what, char **out);

/* Fills base from the table rows' defaults, then from the mapping node map, checking every key
 * against the tables (NULL-terminated list of tables). Reports unknown keys (with a
 * suggestion), duplicate keys, wrong types, bad values and missing required keys. */
void lf_conf__apply(struct lf_conf_ctx *c,
                    yaml_node_t *map,
                    void *base,
                    const struct lf_conf_key *const *tables);

/* Reads value into base as row k says (what lf_conf__apply() does for each known key). */
void lf_conf__value(struct lf_conf_ctx *c,
                    const struct lf_conf_key *k,
                    void *base,
                    yaml_node_t *value);

/* Sets only the defaults of the tables' rows (sections included). */
void lf_conf__defaults(struct lf_conf_ctx *c, void *base, const struct lf_conf_key *const *tables);

/* Renders node as compact JSON into a new string in *out (free() it); scalars in plain style
 * that read as JSON numbers, true, false or null become literals. false on a problem
 * (reported). */
bool lf_conf__json(struct lf_conf_ctx *c, yaml_node_t *node, char **out);
/* The same for a node that must be of type want (a mapping or a list). */
bool lf_conf__json_as(struct lf_conf_ctx *c, yaml_node_t *node, yaml_node_type_t want, char **out);

/* Frees every string and list the tables' rows own in base (sections included) and leaves
 * them NULL and 0, so a field two tables share is freed once. The only freeing of keys. */
void lf_conf__release(void *base, const struct lf_conf_key *const *tables);
/* The same for one row: a string, a list, or a section's rows. */
void lf_conf__release_row(void *base, const struct lf_conf_key *k);

/* The table row closest to name by edit distance (at most 2, or a third of its length), for
 * "did you mean"; NULL if none is close. */
const char *lf_conf__suggest(const char *name, const struct lf_conf_key *const *tables);
const char *lf_conf__suggest_names(const char *name, const char *const *names);

/* Expands ${VAR}, ${VAR:-default} and $$ in s into a new string in *out (free() it).
 * Each value taken from the environment is added to seen (when not NULL) as well.
 * LF_ECONFIG with why filled on an unset variable or bad syntax; LF_ENOMEM. */
LF_MUST_CHECK enum lf_err lf_conf__expand(
    const char *s, char **out, struct lf_env_values *seen, char *why, size_t why_len);

/* Adds name (name_len bytes) = value to env unless the name is there already. LF_ENOMEM. */
LF_MUST_CHECK enum lf_err
lf_conf__env_add(struct lf_env_values *env, const char *name, size_t name_len, const char *value);

/* Copies src into *dst (emptied first). LF_ENOMEM leaves *dst empty. */
LF_MUST_CHECK enum lf_err lf_conf__env_copy(struct lf_env_values *dst,
                                            const struct lf_env_values *src);

/* Frees what env owns and empties it. */
void lf_conf__env_release(struct lf_env_values *env);

/* Checks a PCRE2 pattern; NULL if it compiles, else why (PCRE2's text and the offset) is filled
 * and returned. */
const char *lf_conf__regex_check(const char *pattern, char *why, size_t why_len);

/* The key tables (tables.c). */
extern const struct lf_conf_key *const lf_conf__root_tables[];
extern const struct lf_conf_key *const lf_conf__input_tables[];
extern const struct lf_conf_key lf_conf__parser_keys[]; /* one row per parser name */
extern const struct lf_conf_key lf_conf__when_keys[];   /* `when`, taken by every parser */
extern const struct lf_conf_key *const lf_conf__route_tables[]; /* an item of `routes:` */
extern const struct lf_conf_enum lf_conf__output_types[];

/* Fills tables (room for 4) with the rows an output of this type accepts, NULL-terminated;
 * a type < 0 gives only the common rows (name, type). */
void lf_conf__output_tables(int type, const struct lf_conf_key **tables);

#endif
