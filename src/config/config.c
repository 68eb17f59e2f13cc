/* config.c - loads the YAML config into struct lf_config and checks it as a whole.
 *
 * libyaml's document API gives a node tree with positions. The key tables (tables.c) and
 * their setters (keys.c) read each mapping; this file handles the lists (inputs, outputs,
 * parsers) and the rules that span keys: required-by-type keys, unique ids and names,
 * routes to existing outputs, output types that are not built yet. */
#include "config.h"

#include "logferry/config.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "config_int.h"
#include "logferry/cond.h"

#define CONFIG_MAX_FILE_BYTES (64u * 1024 * 1024)

static const char *const parser_names[] = {
    "container", "multiline", "include_lines", "exclude_lines", "ndjson",     "dissect",
    "kv",        "syslog",    "timestamp",     "regex",         "access_log", "fields",
    "throttle",  "sample",    "redact",        "drop",          NULL,
};
static const enum lf_parser_kind parser_kinds[] = {
    LF_PARSER_CONTAINER,
    LF_PARSER_MULTILINE,
    LF_PARSER_INCLUDE_LINES,
    LF_PARSER_EXCLUDE_LINES,
    LF_PARSER_NDJSON,
    LF_PARSER_DISSECT,
    LF_PARSER_KV,
    LF_PARSER_SYSLOG,
    LF_PARSER_TIMESTAMP,
    LF_PARSER_REGEX,
    LF_PARSER_ACCESS_LOG,
    LF_PARSER_FIELDS,
    LF_PARSER_THROTTLE,
    LF_PARSER_SAMPLE,
    LF_PARSER_REDACT,
    LF_PARSER_DROP,
};

static struct lf_conf_pos pos_of(const yaml_node_t *n)
{
    struct lf_conf_pos p = { (unsigned)n->start_mark.line + 1, (unsigned)n->start_mark.column + 1 };
    return p;
}

static yaml_node_t *get_path(struct lf_conf_ctx *c, yaml_node_t *map, const char *name)
{
    return lf_conf__get(c, map, name);
}

/* The items of a list value; reports anything else. *n is 0 for an empty or bad value. */
static yaml_node_item_t *
list_items(struct lf_conf_ctx *c, yaml_node_t *node, const char *what, size_t *n)
{
    *n = 0;
    if (node->type != YAML_SEQUENCE_NODE) {
        lf_conf__error(c, node, "expected a list of %s, got a %s", what,
                       node->type == YAML_MAPPING_NODE ? "mapping" : "scalar");
        return NULL;
    }
    *n = (size_t)(node->data.sequence.items.top - node->data.sequence.items.start);
    return node->data.sequence.items.start;
}

/* ---- checks from outside the loader ---- */

/* Where a check's problems go: at key inside map, or at anchor for the item itself. */
struct report_at {
    struct lf_conf_ctx *c;
    yaml_node_t *anchor;
    yaml_node_t *map;
};

void lf_config_report(struct lf_config_report *rep, const char *key, const char *fmt, ...)
{
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    rep->n++;
    rep->fn(rep->arg, key, msg);
}

/* The node of a dotted key inside map ("tls.ca_file"), as deep as it is found; a name that
 * holds dots itself ("headers.X.Trace") is tried whole first. NULL if no part is there. */
static yaml_node_t *find_key(struct lf_conf_ctx *c, yaml_node_t *map, const char *key)
{
    yaml_node_t *found = NULL;
    for (const char *p = key;;) {
        yaml_node_t *whole = lf_conf__get(c, map, p);
        if (whole != NULL)
            return whole;
        const char *dot = strchr(p, '.');
        char part[256];
        if (dot == NULL || (size_t)(dot - p) >= sizeof(part))
            return found;
        memcpy(part, p, (size_t)(dot - p));
        part[dot - p] = '\0';
        yaml_node_t *v = lf_conf__get(c, map, part);
        if (v == NULL)
            return found;
        found = map = v;
        p = dot + 1;
    }
}

static void report_to_ctx(void *arg, const char *key, const char *text)
{
    struct report_at *at = arg;
    char msg[1024];
    snprintf(msg, sizeof(msg), "%s", text);
    lf_config_scrub(&at->c->env, msg, sizeof(msg)); /* a path may come from ${VAR} */
    yaml_node_t *node = key != NULL ? find_key(at->c, at->map, key) : NULL;
    size_t mark = key != NULL ? lf_conf__path_key(at->c, key) : at->c->path_len;
    lf_conf__error(at->c, node != NULL ? node : at->anchor, "%s", msg);
    lf_conf__path_pop(at->c, mark);
}

/* Runs the parser check on parser i of in (its key node key, its settings value). */
static void check_parser(struct lf_conf_ctx *c,
                         const struct lf_input_conf *in,
                         size_t i,
                         yaml_node_t *key,
                         yaml_node_t *value)
{
    if (c->checks == NULL || c->checks->parser == NULL)
        return;
    struct report_at at = { c, key, value };
    struct lf_config_report rep = { report_to_ctx, &at, 0 };
    c->checks->parser(in, i, &rep);
}

static void check_output(struct lf_conf_ctx *c, const struct lf_output_conf *o, yaml_node_t *item)
{
    if (c->checks == NULL || c->checks->output == NULL)
        return;
    yaml_node_t *type = lf_conf__get(c, item, "type");
    struct report_at at = { c, type != NULL ? type : item, item };
    struct lf_config_report rep = { report_to_ctx, &at, 0 };
    c->checks->output(o, &rep);
}

/* ---- parsers ---- */

/* Type-dependent required keys; a key given with a bad value was reported already. */
static void check_multiline(struct lf_conf_ctx *c,
                            struct lf_parser_conf *p,
                            yaml_node_t *key,
                            yaml_node_t *value)
{
    const char *need = NULL;
    if (p->u.multiline.preset != NULL && p->u.multiline.pattern != NULL) {
        lf_conf__error(c, key, "give either preset or pattern, not both");
        return;
    }
    if (lf_conf__get(c, value, "preset") != NULL || lf_conf__get(c, value, "pattern") != NULL ||
        (p->u.multiline.type == LF_MULTILINE_COUNT && lf_conf__get(c, value, "count_lines")))
        return;
    if (p->u.multiline.preset != NULL)
        return;
    if (p->u.multiline.type == LF_MULTILINE_COUNT && p->u.multiline.count_lines == 0)
        need = "count_lines\" (needed for type count";
    else if (p->u.multiline.type == LF_MULTILINE_PATTERN && p->u.multiline.pattern == NULL)
        need = "pattern\" (needed for type pattern, unless a preset is given";
    else if (p->u.multiline.type == LF_MULTILINE_WHILE_PATTERN && p->u.multiline.pattern == NULL)
        need = "pattern\" (needed for type while_pattern";
    if (need != NULL)
        lf_conf__error(c, key, "missing required key \"%s)", need);
}

/* Where byte off of the scalar node n's value (expanded: its text after ${VAR}) stands in the
 * file: exact for a one-line scalar written plain, or quoted without escapes ('' in single
 * quotes counted); else the scalar's start. 0-based, as libyaml's marks. */
static yaml_mark_t mark_into(const yaml_node_t *n, const char *expanded, size_t off)
{
    yaml_mark_t m = n->start_mark;
    const char *raw = (const char *)n->data.scalar.value;
    size_t len = n->data.scalar.length;
    if (strcmp(raw, expanded) != 0 || n->end_mark.line != m.line)
        return m;
    size_t width = n->end_mark.column - m.column;
    size_t quotes = 0;
    size_t before = 0;
    for (size_t i = 0; i < len; i++) {
        if (raw[i] == '\'')
            quotes++, before += i < off;
    }
    switch (n->data.scalar.style) {
    case YAML_PLAIN_SCALAR_STYLE:
        if (width == len)
            m.column += off;
        break;
    case YAML_SINGLE_QUOTED_SCALAR_STYLE:
        if (width == len + 2 + quotes)
            m.column += 1 + off + before;
        break;
    case YAML_DOUBLE_QUOTED_SCALAR_STYLE:
        if (width == len + 2)
            m.column += 1 + off;
        break;
    default:
        break;
    }
    return m;
}

/* Checks p->when, read from node (NULL: none), and the parsers that cannot take one. The
 * key path names the `when` in front of each problem. */
/* Compiles the condition when (node's value after ${VAR} expansion) to check it; a problem
 * is reported at its token inside node. */
static void compile_when(struct lf_conf_ctx *c, const char *when, yaml_node_t *node)
{
    if (when == NULL || node == NULL || node->type != YAML_SCALAR_NODE)
        return; /* a value of the wrong type was reported when read */
    struct lf_cond *cond = NULL;
    size_t at = 0;
    struct lf_errbuf eb = { "" };
    enum lf_err err = lf_cond_compile(when, strlen(when), &cond, &at, &eb);
    if (err == LF_ENOMEM)
        c->oom = true;
    else if (err) {
        /* A condition that takes a ${VAR} may hold a secret: the token is not shown. */
        char *got = strstr(eb.msg, ", got ");
        if (got != NULL && strcmp((const char *)node->data.scalar.value, when) != 0)
            snprintf(got, sizeof(eb.msg) - (size_t)(got - eb.msg), "%s",
                     " (the token is not shown: the condition takes text from the environment)");
        lf_config_scrub(&c->env, eb.msg, sizeof(eb.msg));
        lf_conf__error_at(c, mark_into(node, when, at), "%s", eb.msg);
    }
    lf_cond_free(cond);
}

/* A parser's `when` (node: its value, or NULL when it has none). */
static void
check_when(struct lf_conf_ctx *c, struct lf_parser_conf *p, yaml_node_t *key, yaml_node_t *node)
{
    if (node == NULL) {
        if (p->kind == LF_PARSER_DROP)
            lf_conf__error(c, key,
                           "missing required key \"when\" (drop drops the events it "
                           "matches: give it a condition)");
        return;
    }
    p->when_pos = pos_of(node);
    if (p->kind == LF_PARSER_CONTAINER || p->kind == LF_PARSER_MULTILINE) {
        lf_conf__error(c, node, "%s takes no \"when\": it %s, before there are events to test",
                       p->kind == LF_PARSER_CONTAINER ? "container" : "multiline",
                       p->kind == LF_PARSER_CONTAINER ? "decodes the line itself"
                                                      : "joins lines into events");
        return;
    }
    compile_when(c, p->when, node);
}

static void
load_parser(struct lf_conf_ctx *c, const struct lf_input_conf *in, size_t index, yaml_node_t *item)
{
    struct lf_parser_conf *p = &in->parsers[index];
    char q[400];
    if (item->type != YAML_MAPPING_NODE ||
        item->data.mapping.pairs.top == item->data.mapping.pairs.start) {
        lf_conf__error(c, item,
                       "expected a mapping with one parser: container, multiline, "
                       "include_lines, exclude_lines or ndjson");
        return;
    }
    /* The parser's key, and `when` beside it (for every parser, as include_lines' value is
     * a list that cannot hold one). */
    yaml_node_t *key = NULL;
    yaml_node_t *value = NULL;
    yaml_node_t *item_when = NULL;
    for (yaml_node_pair_t *pair = item->data.mapping.pairs.start;
         pair < item->data.mapping.pairs.top; pair++) {
        yaml_node_t *k = lf_conf__node(c, pair->key);
        if (k != NULL && k->type == YAML_SCALAR_NODE &&
            strcmp((const char *)k->data.scalar.value, "when") == 0 && item_when == NULL) {
            item_when = lf_conf__node(c, pair->value);
        } else if (key == NULL) {
            key = k;
            value = lf_conf__node(c, pair->value);
        } else {
            lf_conf__error(c, k != NULL ? k : item,
                           "one parser per list item: start a new item with \"- \"");
        }
    }
    if (key == NULL || value == NULL || key->type != YAML_SCALAR_NODE) {
        lf_conf__error(c, key != NULL ? key : item, "expected a parser name as the key");
        return;
    }
    const char *name = (const char *)key->data.scalar.value;
    size_t i = 0;
    while (parser_names[i] != NULL && strcmp(parser_names[i], name) != 0)
        i++;
    if (parser_names[i] == NULL) {
        const char *hint = lf_conf__suggest_names(name, parser_names);
        char hq[128] = "";
        if (hint != NULL)
            snprintf(hq, sizeof(hq), " (did you mean \"%s\"?)", hint);
        lf_conf__error(c, key, "unknown parser \"%s\"%s", lf_conf__quote(q, sizeof(q), name), hq);
        return;
    }
    const struct lf_conf_key *row = &lf_conf__parser_keys[i];
    p->kind = parser_kinds[i];
    p->pos = pos_of(key);
    size_t mark = lf_conf__path_key(c, row->name);
    size_t n_errors = c->n_errors;
    yaml_node_t *when = NULL;
    if (row->kind == LF_CONF_SECTION) {
        /* The stage's own keys and `when`, which every stage takes. */
        const struct lf_conf_key *const sub[] = { row->arg, lf_conf__when_keys, NULL };
        lf_conf__defaults(c, p, sub);
        if (value->type != YAML_SCALAR_NODE || value->data.scalar.length != 0 ||
            value->data.scalar.style != YAML_PLAIN_SCALAR_STYLE)
            lf_conf__apply(c, value, p, sub); /* `drop:` alone keeps the defaults */
        when = lf_conf__get(c, value, "when");
    } else {
        lf_conf__value(c, row, p, value);
    }
    if (p->kind == LF_PARSER_MULTILINE)
        check_multiline(c, p, key, value);
    if (when != NULL && item_when != NULL) {
        lf_conf__error(c, item_when, "\"when\" is given twice: beside %s and inside it", name);
        item_when = NULL;
    }
    lf_conf__path_pop(c, mark);
    if (item_when != NULL) {
        mark = lf_conf__path_key(c, "when");
        lf_conf__value(c, &lf_conf__when_keys[0], p, item_when);
        when = item_when;
    } else {
        mark = lf_conf__path_key(c, row->name);
        if (when != NULL)
            lf_conf__path_key(c, "when"); /* popped with the parser's name */
    }
    check_when(c, p, key, when);
    lf_conf__path_pop(c, mark);
    if (c->n_errors == n_errors && !c->oom)
        check_parser(c, in, index, key, value); /* what only the stage can tell */
}

static void load_parsers(struct lf_conf_ctx *c, struct lf_input_conf *in, yaml_node_t *node)
{
    size_t n;
    yaml_node_item_t *items = list_items(c, node, "parsers", &n);
    if (n == 0)
        return;
    in->parsers = calloc(n, sizeof(*in->parsers));
    if (in->parsers == NULL) {
        c->oom = true;
        return;
    }
    in->n_parsers = n;
    for (size_t i = 0; i < n; i++) {
        yaml_node_t *item = lf_conf__node(c, items[i]);
        size_t mark = lf_conf__path_index(c, i);
        /* An entry that fails to load stays an empty include_lines: nothing to free. */
        in->parsers[i].kind = LF_PARSER_INCLUDE_LINES;
        if (item != NULL)
            load_parser(c, in, i, item);
        lf_conf__path_pop(c, mark);
    }
}

/* ---- inputs ---- */

/* Appends to roots the directories of glob before its first segment with *, ? or [ (for a
 * plain path, its directory), made absolute against the working directory, against which
 * discovery resolves relative globs. false when out of memory. */
static bool add_glob_root(char **roots, size_t *n, const char *glob)
{
    const char *fixed_end = glob; /* just past the last '/' before any wildcard */
    for (const char *p = glob; *p != '\0' && strchr("*?[", *p) == NULL; p++) {
        if (*p == '/')
            fixed_end = p + 1;
    }
    size_t len = (size_t)(fixed_end - glob);
    while (len > 1 && glob[len - 1] == '/')
        len--;
    char cwd[4096] = "/";
    if (glob[0] != '/' && getcwd(cwd, sizeof(cwd)) == NULL)
        snprintf(cwd, sizeof(cwd), "/"); /* an unreachable cwd: the root then refuses all */
    struct lf_buf b;
    lf_buf_init(&b, SIZE_MAX);
    bool relative = glob[0] != '/';
    enum lf_err err = relative ? lf_buf_append(&b, cwd, strlen(cwd)) : LF_OK;
    if (!err && relative && len > 0 && strcmp(cwd, "/") != 0)
        err = lf_buf_append(&b, "/", 1);
    if (!err)
        err = lf_buf_append(&b, glob, len);
    if (!err)
        err = lf_buf_append(&b, "", 1);
    if (err) {
        lf_buf_release(&b);
        return false;
    }
    for (size_t i = 0; i < *n; i++) {
        if (strcmp(roots[i], b.ptr) == 0) {
            lf_buf_release(&b);
            return true;
        }
    }
    roots[(*n)++] = b.ptr;
    return true;
}

/* allowed_roots left out: each glob's fixed directory part, plus /var/log. An explicit
 * empty list would refuse every file, so it is an error rather than a silent default. */
static void default_roots(struct lf_conf_ctx *c, struct lf_input_conf *in, yaml_node_t *item)
{
    yaml_node_t *given = get_path(c, item, "allowed_roots");
    if (given != NULL || in->type != LF_INPUT_FILE) {
        if (given != NULL && in->n_allowed_roots == 0 && given->type == YAML_SEQUENCE_NODE &&
            given->data.sequence.items.top == given->data.sequence.items.start) {
            size_t mark = lf_conf__path_key(c, "allowed_roots");
            lf_conf__error(c, given,
                           "expected at least one directory (leave the key out for "
                           "the globs' directories plus /var/log)");
            lf_conf__path_pop(c, mark);
        }
        return;
    }
    char **roots = calloc(in->n_paths + 2, sizeof(*roots));
    size_t n = 0;
    bool ok = roots != NULL;
    for (size_t i = 0; ok && i < in->n_paths; i++)
        ok = add_glob_root(roots, &n, in->paths[i]);
    if (ok)
        ok = add_glob_root(roots, &n, "/var/log/");
    if (!ok) {
        c->oom = true;
        for (size_t i = 0; roots != NULL && i < n; i++)
            free(roots[i]);
        free(roots);
        return;
    }
    in->allowed_roots = roots;
    in->n_allowed_roots = n;
}

/* Renders item as JSON into *out for reloads to compare, or leaves NULL (never the same as
 * anything) if it cannot. Problems it runs into were reported by the keys' own loading, or
 * are limits of the whole item only, so none is reported again. */
static void settings_json(struct lf_conf_ctx *c, yaml_node_t *item, char **out)
{
    size_t n_errors = c->n_errors;
    size_t n_msgs = c->n_msgs;
    bool ok = lf_conf__json(c, item, out);
    for (size_t i = n_msgs; i < c->n_msgs; i++)
        free(c->msgs[i].text);
    ok = ok && c->n_errors == n_errors;
    c->n_errors = n_errors;
    c->n_msgs = n_msgs;
    if (!ok) {
        free(*out);
        *out = NULL;
    }
}

/* The keys of type journald are errors on other inputs; directory and files exclude each
 * other. */
static void check_journal_keys(struct lf_conf_ctx *c, struct lf_input_conf *in, yaml_node_t *item)
{
    static const char *const only[] = { "directory", "files",          "units",         "matches",
                                        "priority",  "include_fields", "exclude_fields" };
    for (size_t i = 0; i < sizeof(only) / sizeof(only[0]); i++) {
        yaml_node_t *node = get_path(c, item, only[i]);
        if (node == NULL || in->type == LF_INPUT_JOURNALD)
            continue;
        size_t mark = lf_conf__path_key(c, only[i]);
        lf_conf__error(c, node, "only type journald takes \"%s\"", only[i]);
        lf_conf__path_pop(c, mark);
    }
#ifndef HAVE_LIBSYSTEMD
    if (in->type == LF_INPUT_JOURNALD) {
        size_t mark = lf_conf__path_key(c, "type");
        lf_conf__error(c, get_path(c, item, "type"),
                       "this logferry was built without libsystemd: journald cannot be read");
        lf_conf__path_pop(c, mark);
    }
#endif
    yaml_node_t *files = get_path(c, item, "files");
    if (in->type == LF_INPUT_JOURNALD && files != NULL && get_path(c, item, "directory") != NULL) {
        size_t mark = lf_conf__path_key(c, "files");
        lf_conf__error(c, files, "give either \"directory\" or \"files\", not both");
        lf_conf__path_pop(c, mark);
    }
}

static void load_input(struct lf_conf_ctx *c, struct lf_input_conf *in, yaml_node_t *item)
{
    in->pos = pos_of(item);
    lf_conf__defaults(c, in, lf_conf__input_tables);
    if (item->type != YAML_MAPPING_NODE) {
        lf_conf__error(c, item, "expected a mapping, got a %s",
                       item->type == YAML_SEQUENCE_NODE ? "list" : "scalar");
        return;
    }
    lf_conf__apply(c, item, in, lf_conf__input_tables);
    yaml_node_t *paths = get_path(c, item, "paths");
    if (in->type == LF_INPUT_FILE && paths == NULL) {
        lf_conf__error(c, item, "missing required key \"paths\" (needed for type file)");
    } else if (in->type == LF_INPUT_FILE && in->n_paths == 0 && paths->type == YAML_SEQUENCE_NODE) {
        size_t mark = lf_conf__path_key(c, "paths");
        lf_conf__error(c, paths, "expected at least one path");
        lf_conf__path_pop(c, mark);
    } else if (in->type != LF_INPUT_FILE && paths != NULL) {
        size_t mark = lf_conf__path_key(c, "paths");
        lf_conf__error(c, paths, "not used by type %s: remove it",
                       in->type == LF_INPUT_STDIN ? "stdin" : "journald");
        lf_conf__path_pop(c, mark);
    }
    check_journal_keys(c, in, item);
    default_roots(c, in, item);
    yaml_node_t *parsers = get_path(c, item, "parsers");
    if (parsers != NULL) {
        size_t mark = lf_conf__path_key(c, "parsers");
        load_parsers(c, in, parsers);
        lf_conf__path_pop(c, mark);
    }
    settings_json(c, item, &in->settings_json);
}

/* Resolves node, a list of output names (or one name), into *out (indexes into
 * cfg->outputs, each once; a new array, also when empty). An empty list is an error unless
 * empty_ok says what it means. */
static void resolve_outputs(struct lf_conf_ctx *c,
                            const struct lf_config *cfg,
                            yaml_node_t *node,
                            bool empty_ok,
                            size_t **out,
                            size_t *n_out)
{
    yaml_node_item_t one = 0;
    yaml_node_item_t *items = &one;
    size_t n = 1;
    if (node->type != YAML_SCALAR_NODE)
        items = list_items(c, node, "output names", &n);
    if (n == 0 && node->type == YAML_SEQUENCE_NODE && !empty_ok)
        lf_conf__error(c, node, "expected at least one output name (leave the key out for all)");
    *n_out = 0;
    *out = calloc(n == 0 ? 1 : n, sizeof(**out));
    if (*out == NULL) {
        c->oom = true;
        n = 0;
    }
    for (size_t i = 0; i < n && items != NULL; i++) {
        yaml_node_t *v = items == &one ? node : lf_conf__node(c, items[i]);
        size_t imark = items == &one ? c->path_len : lf_conf__path_index(c, i);
        char *name = NULL;
        char q[400];
        if (v != NULL && lf_conf__scalar(c, v, "an output name", &name)) {
            size_t o = 0;
            while (o < cfg->n_outputs &&
                   (cfg->outputs[o].name == NULL || strcmp(cfg->outputs[o].name, name) != 0))
                o++;
            size_t seen = 0;
            while (seen < *n_out && (*out)[seen] != o)
                seen++;
            if (o == cfg->n_outputs)
                lf_conf__error(c, v, "no output named %s", lf_conf__show(q, sizeof(q), v, name));
            else if (seen < *n_out)
                lf_conf__error(c, v, "output %s is listed twice",
                               lf_conf__show(q, sizeof(q), v, name));
            else
                (*out)[(*n_out)++] = o;
        }
        free(name);
        lf_conf__path_pop(c, imark);
    }
}

/* Points in->outputs at the outputs named in its `outputs:` list, or at all of them. */
static void route_input(struct lf_conf_ctx *c,
                        struct lf_config *cfg,
                        struct lf_input_conf *in,
                        yaml_node_t *item)
{
    yaml_node_t *node = get_path(c, item, "outputs");
    size_t mark = lf_conf__path_key(c, "outputs");
    if (node != NULL) {
        resolve_outputs(c, cfg, node, false, &in->outputs, &in->n_outputs);
    } else {
        in->outputs = calloc(cfg->n_outputs, sizeof(*in->outputs));
        if (in->outputs == NULL)
            c->oom = true;
        for (size_t i = 0; i < cfg->n_outputs && in->outputs != NULL; i++)
            in->outputs[in->n_outputs++] = i;
    }
    lf_conf__path_pop(c, mark);
}

/* One item of an input's `routes:`: its keys, its condition and its outputs. */
static void load_route(struct lf_conf_ctx *c,
                       const struct lf_config *cfg,
                       struct lf_route_conf *r,
                       size_t index,
                       yaml_node_t *item)
{
    r->pos = pos_of(item);
    if (item->type != YAML_MAPPING_NODE) {
        lf_conf__error(c, item, "expected a mapping: {when: CONDITION, outputs: [NAMES]}");
        return;
    }
    lf_conf__apply(c, item, r, lf_conf__route_tables);
    if (r->name == NULL) {
        char name[32];
        snprintf(name, sizeof(name), "route%zu", index + 1);
        r->name = strdup(name);
        if (r->name == NULL)
            c->oom = true;
    } else if (strchr(r->name, ',') != NULL) {
        size_t mark = lf_conf__path_key(c, "name");
        lf_conf__error(c, lf_conf__get(c, item, "name"),
                       "a route name holds no comma (--preview lists an event's routes with "
                       "commas)");
        lf_conf__path_pop(c, mark);
    } else if (strcmp(r->name, "default") == 0) {
        size_t mark = lf_conf__path_key(c, "name");
        lf_conf__error(c, lf_conf__get(c, item, "name"),
                       "\"default\" names where events no route matched go (the input's "
                       "outputs): choose another name");
        lf_conf__path_pop(c, mark);
    }
    yaml_node_t *when = lf_conf__get(c, item, "when");
    if (when != NULL) {
        size_t mark = lf_conf__path_key(c, "when");
        compile_when(c, r->when, when);
        lf_conf__path_pop(c, mark);
    }
    yaml_node_t *outputs = lf_conf__get(c, item, "outputs");
    if (outputs != NULL) {
        size_t mark = lf_conf__path_key(c, "outputs");
        resolve_outputs(c, cfg, outputs, true, &r->outputs, &r->n_outputs);
        lf_conf__path_pop(c, mark);
    }
}

/* An input's `routes:` list (after its outputs: the default route). */
static void load_routes(struct lf_conf_ctx *c,
                        const struct lf_config *cfg,
                        struct lf_input_conf *in,
                        yaml_node_t *item)
{
    yaml_node_t *node = get_path(c, item, "routes");
    if (node == NULL)
        return;
    size_t mark = lf_conf__path_key(c, "routes");
    size_t n;
    yaml_node_item_t *items = list_items(c, node, "routes", &n);
    if (n > LF_MAX_ROUTES) {
        lf_conf__error(c, node, "%zu routes: at most %d per input", n, LF_MAX_ROUTES);
        n = 0;
    }
    in->routes = n > 0 ? calloc(n, sizeof(*in->routes)) : NULL;
    if (n > 0 && in->routes == NULL) {
        c->oom = true;
        n = 0;
    }
    for (size_t i = 0; i < n; i++) {
        yaml_node_t *ri = lf_conf__node(c, items[i]);
        size_t imark = lf_conf__path_index(c, i);
        in->n_routes = i + 1;
        if (ri != NULL)
            load_route(c, cfg, &in->routes[i], i, ri);
        for (size_t j = 0; j < i && in->routes[i].name != NULL; j++) {
            if (in->routes[j].name != NULL && strcmp(in->routes[j].name, in->routes[i].name) == 0)
                lf_conf__error(c, ri, "duplicate route name \"%s\" (routes[%zu] has it)",
                               in->routes[i].name, j);
        }
        lf_conf__path_pop(c, imark);
    }
    /* The batcher fills a batch per output an input with routes reaches. */
    size_t reached = 0;
    for (size_t o = 0; o < cfg->n_outputs && n > 0; o++) {
        bool r = false;
        for (size_t k = 0; k < in->n_outputs && !r; k++)
            r = in->outputs[k] == o;
        for (size_t i = 0; i < in->n_routes && !r; i++) {
            for (size_t k = 0; k < in->routes[i].n_outputs && !r; k++)
                r = in->routes[i].outputs[k] == o;
        }
        reached += r;
    }
    if (reached > LF_MAX_ROUTED_OUTPUTS)
        lf_conf__error(c, node,
                       "the routes and outputs of this input reach %zu outputs: at most %d",
                       reached, LF_MAX_ROUTED_OUTPUTS);
    lf_conf__path_pop(c, mark);
}

/* Reports the second of two equal strings, at its `key:` value. */
static void check_unique(struct lf_conf_ctx *c,
                         yaml_node_t *list,
                         const char *list_name,
                         const char *key,
                         const char *what)
{
    size_t n = (size_t)(list->data.sequence.items.top - list->data.sequence.items.start);
    yaml_node_item_t *items = list->data.sequence.items.start;
    for (size_t i = 1; i < n; i++) {
        yaml_node_t *vi = lf_conf__get(c, lf_conf__node(c, items[i]), key);
        if (vi == NULL || vi->type != YAML_SCALAR_NODE)
            continue;
        for (size_t j = 0; j < i; j++) {
            yaml_node_t *vj = lf_conf__get(c, lf_conf__node(c, items[j]), key);
            if (vj == NULL || vj->type != YAML_SCALAR_NODE ||
                strcmp((const char *)vi->data.scalar.value, (const char *)vj->data.scalar.value))
                continue;
            char q[400];
            size_t mark = lf_conf__path_key(c, list_name);
            lf_conf__path_index(c, i);
            lf_conf__path_key(c, key);
            lf_conf__error(c, vi, "duplicate %s \"%s\" (first defined at %zu:%zu)", what,
                           lf_conf__quote(q, sizeof(q), (const char *)vi->data.scalar.value),
                           vj->start_mark.line + 1, vj->start_mark.column + 1);
            lf_conf__path_pop(c, mark);
            break;
        }
    }
}

/* An item of `inputs`: its keys, then its routes to the outputs (loaded before it). */
static void
load_input_item(struct lf_conf_ctx *c, struct lf_config *cfg, void *in, yaml_node_t *item)
{
    load_input(c, in, item);
    if (item->type == YAML_MAPPING_NODE && cfg->n_outputs > 0) {
        route_input(c, cfg, in, item);
        load_routes(c, cfg, in, item);
    }
}

/* ---- outputs ---- */

/* The output type named by item's `type:` value, or -1 (reported later by the setter). */
static int peek_output_type(struct lf_conf_ctx *c, yaml_node_t *item)
{
    yaml_node_t *t = lf_conf__get(c, item, "type");
    char why[256];
    char *s = NULL;
    int type = -1;
    if (t == NULL || t->type != YAML_SCALAR_NODE)
        return -1;
    if (lf_conf__expand((const char *)t->data.scalar.value, &s, NULL, why, sizeof(why)))
        return -1;
    for (const struct lf_conf_enum *e = lf_conf__output_types; e->name != NULL; e++) {
        if (strcmp(e->name, s) == 0)
            type = e->value;
    }
    free(s);
    return type;
}

/* An item of `outputs` (cfg: unused, as load_list() passes it). */
static void load_output(struct lf_conf_ctx *c, struct lf_config *cfg, void *elem, yaml_node_t *item)
{
    struct lf_output_conf *o = elem;
    (void)cfg;
    o->pos = pos_of(item);
    if (item->type != YAML_MAPPING_NODE) {
        lf_conf__error(c, item, "expected a mapping, got a %s",
                       item->type == YAML_SEQUENCE_NODE ? "list" : "scalar");
        return;
    }
    int type = peek_output_type(c, item);
    const struct lf_conf_key *tables[4];
    lf_conf__output_tables(type, tables);
    lf_conf__defaults(c, o, tables);
    if (type >= 0) {
        size_t n_errors = c->n_errors;
        lf_conf__apply(c, item, o, tables);
        if (c->n_errors == n_errors && !c->oom)
            check_output(c, o, item); /* what only the output's type can tell */
    } else {
        /* Without a known type the other keys cannot be judged: read name and type only. */
        for (const struct lf_conf_key *k = tables[0]; k->name != NULL; k++) {
            yaml_node_t *v = lf_conf__get(c, item, k->name);
            size_t mark = lf_conf__path_key(c, k->name);
            if (v != NULL)
                lf_conf__value(c, k, o, v);
            lf_conf__path_pop(c, mark);
            if (v == NULL)
                lf_conf__error(c, item, "missing required key \"%s\"", k->name);
        }
    }
    settings_json(c, item, &o->settings_json);
}

/* A top-level list: inputs or outputs. */
struct conf_list {
    const char *key; /* "inputs" */
    const char *one; /* "input", for "expected at least one input" */
    const char *id;  /* the key whose values must differ, and what to call it */
    const char *id_what;
    size_t size; /* of one element */
    void (*load)(struct lf_conf_ctx *c, struct lf_config *cfg, void *elem, yaml_node_t *item);
};

static const struct conf_list inputs_list = {
    "inputs", "input", "id", "input id", sizeof(struct lf_input_conf), load_input_item,
};
static const struct conf_list outputs_list = {
    "outputs", "output", "name", "output name", sizeof(struct lf_output_conf), load_output,
};

/* Loads the list at node: a new zeroed array of *n elements (at least one), each loaded by
 * l->load, their ids unique. NULL with *n 0 when empty, not a list, or out of memory. */
static void *load_list(struct lf_conf_ctx *c,
                       struct lf_config *cfg,
                       yaml_node_t *node,
                       const struct conf_list *l,
                       size_t *n)
{
    size_t mark = lf_conf__path_key(c, l->key);
    size_t len;
    yaml_node_item_t *items = list_items(c, node, l->key, &len);
    char *arr = NULL;
    *n = 0;
    if (items != NULL && len == 0)
        lf_conf__error(c, node, "expected at least one %s", l->one);
    if (len > 0) {
        arr = calloc(len, l->size);
        if (arr == NULL)
            c->oom = true;
        else
            *n = len;
    }
    for (size_t i = 0; i < *n; i++) {
        yaml_node_t *item = lf_conf__node(c, items[i]);
        size_t imark = lf_conf__path_index(c, i);
        if (item != NULL)
            l->load(c, cfg, arr + i * l->size, item);
        lf_conf__path_pop(c, imark);
    }
    lf_conf__path_pop(c, mark);
    if (*n > 0)
        check_unique(c, node, l->key, l->id, l->id_what);
    return arr;
}

/* ---- the whole document ---- */

static void load_root(struct lf_conf_ctx *c, struct lf_config *cfg, yaml_node_t *root)
{
    if (root->type != YAML_MAPPING_NODE) {
        lf_conf__error(c, root,
                       "expected a mapping of keys (inputs, outputs, ...) at the top, "
                       "got a %s",
                       root->type == YAML_SEQUENCE_NODE ? "list" : "scalar");
        return;
    }
    lf_conf__apply(c, root, cfg, lf_conf__root_tables);
    yaml_node_t *outputs = lf_conf__get(c, root, "outputs");
    if (outputs != NULL)
        cfg->outputs = load_list(c, cfg, outputs, &outputs_list, &cfg->n_outputs);
    yaml_node_t *inputs = lf_conf__get(c, root, "inputs");
    if (inputs != NULL)
        cfg->inputs = load_list(c, cfg, inputs, &inputs_list, &cfg->n_inputs);
    if (!c->oom && cfg->data_dir != NULL && lf_config_set_data_dir(cfg, cfg->data_dir))
        c->oom = true;
}

static void syntax_error(struct lf_conf_ctx *c, yaml_parser_t *p)
{
    if (p->error == YAML_MEMORY_ERROR) {
        c->oom = true;
        return;
    }
    char ctx[300] = "";
    if (p->context != NULL)
        snprintf(ctx, sizeof(ctx), " %s", p->context);
    lf_conf__error_at(c, p->problem_mark, "YAML syntax error: %s%s",
                      p->problem != NULL ? p->problem : "unknown problem", ctx);
}

/* Parses the text into doc; true if it holds one document (reported otherwise). */
static bool parse_yaml(struct lf_conf_ctx *c, const char *yaml, size_t len, yaml_document_t *doc)
{
    yaml_parser_t p;
    if (!yaml_parser_initialize(&p)) {
        c->oom = true;
        return false;
    }
    yaml_parser_set_input_string(&p, (const unsigned char *)yaml, len);
    if (!yaml_parser_load(&p, doc)) {
        syntax_error(c, &p);
        yaml_parser_delete(&p);
        return false;
    }
    yaml_document_t next;
    if (!yaml_parser_load(&p, &next)) {
        syntax_error(c, &p);
    } else {
        yaml_node_t *root = yaml_document_get_root_node(&next);
        if (root != NULL)
            lf_conf__error(c, root, "expected one YAML document, found a second one");
        yaml_document_delete(&next);
    }
    yaml_parser_delete(&p);
    return true;
}

/* Hands the ${VAR} values met to the config, and a copy to each output, which logs on its
 * own threads and may outlive the config's other parts across a reload. */
static void give_env(struct lf_conf_ctx *c, struct lf_config *cfg)
{
    cfg->env = c->env;
    c->env = (struct lf_env_values){ 0 };
    for (size_t i = 0; i < cfg->n_outputs; i++) {
        if (lf_conf__env_copy(&cfg->outputs[i].env, &cfg->env))
            c->oom = true;
    }
}

enum lf_err lf_config_load_mem(
    const char *name, const char *yaml, size_t len, struct lf_config **out, struct lf_buf *errors)
{
    return lf_config_load_mem_checked(name, yaml, len, NULL, out, errors);
}

enum lf_err lf_config_load_mem_checked(const char *name,
                                       const char *yaml,
                                       size_t len,
                                       const struct lf_config_checks *checks,
                                       struct lf_config **out,
                                       struct lf_buf *errors)
{
    *out = NULL;
    struct lf_conf_ctx c = { .name = name, .errors = errors, .checks = checks };
    struct lf_config *cfg = calloc(1, sizeof(*cfg));
    if (cfg == NULL)
        return LF_ENOMEM;
    cfg->path = strdup(name);
    if (cfg->path == NULL)
        c.oom = true;
    lf_conf__defaults(&c, cfg, lf_conf__root_tables);
    yaml_document_t doc;
    if (!c.oom && parse_yaml(&c, yaml, len, &doc)) {
        c.doc = &doc;
        yaml_node_t *root = yaml_document_get_root_node(&doc);
        if (root == NULL)
            lf_conf__error(&c, NULL, "the config is empty: expected inputs and outputs");
        else
            load_root(&c, cfg, root);
        yaml_document_delete(&doc);
    }
    give_env(&c, cfg);
    lf_conf__flush_errors(&c);
    if (c.oom || c.n_errors > 0) {
        lf_config_free(cfg);
        return c.oom ? LF_ENOMEM : LF_ECONFIG;
    }
    *out = cfg;
    return LF_OK;
}

/* Reads the whole file into b; 0 or an errno value (EFBIG past b's cap). */
static int read_file(const char *path, struct lf_buf *b)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return errno;
    char chunk[16384];
    int e = 0;
    for (;;) {
        ssize_t n = read(fd, chunk, sizeof(chunk));
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0) {
            e = errno;
            break;
        }
        if (n == 0)
            break;
        enum lf_err err = lf_buf_append(b, chunk, (size_t)n);
        if (err) {
            e = err == LF_ENOMEM ? ENOMEM : EFBIG;
            break;
        }
    }
    close(fd);
    return e;
}

enum lf_err lf_config_load(const char *path, struct lf_config **out, struct lf_buf *errors)
{
    return lf_config_load_checked(path, NULL, out, errors);
}

enum lf_err lf_config_load_checked(const char *path,
                                   const struct lf_config_checks *checks,
                                   struct lf_config **out,
                                   struct lf_buf *errors)
{
    struct lf_buf b;
    lf_buf_init(&b, CONFIG_MAX_FILE_BYTES);
    *out = NULL;
    int e = read_file(path, &b);
    if (e != 0) {
        char line[1200];
        int n = snprintf(line, sizeof(line), "%s: cannot read: %s\n", path,
                         e == EFBIG ? "larger than 64 MiB" : lf_strerror(e));
        lf_err_ignore(
            lf_buf_append(errors, line, n > 0 && (size_t)n < sizeof(line) ? (size_t)n : 0));
        lf_buf_release(&b);
        return e == ENOMEM ? LF_ENOMEM : LF_EIO;
    }
    enum lf_err err =
        lf_config_load_mem_checked(path, b.ptr != NULL ? b.ptr : "", b.len, checks, out, errors);
    lf_buf_release(&b);
    return err;
}

enum lf_err lf_config_set_data_dir(struct lf_config *cfg, const char *dir)
{
    size_t n = cfg->n_outputs;
    char **copies = calloc(n + 1, sizeof(*copies));
    bool ok = copies != NULL;
    for (size_t i = 0; ok && i <= n; i++) {
        copies[i] = strdup(dir);
        ok = copies[i] != NULL;
    }
    if (!ok) {
        for (size_t i = 0; copies != NULL && i <= n; i++)
            free(copies[i]);
        free(copies);
        return LF_ENOMEM;
    }
    /* Each output owns its copy: one that outlives this config's string (a reload keeps
     * it running) never reads freed memory. */
    for (size_t i = 0; i < n; i++) {
        free(cfg->outputs[i].data_dir);
        cfg->outputs[i].data_dir = copies[i];
    }
    free(cfg->data_dir);
    cfg->data_dir = copies[n];
    free(copies);
    return LF_OK;
}

/* ---- freeing ---- */

/* What a config owns is freed through the key tables (lf_conf__release()), so a key added to
 * a table is freed with no more code. Only what no row describes is freed by name below. */

static void free_parser(struct lf_parser_conf *p)
{
    /* The settings are the union member the parser's kind chose: only that row owns them. */
    for (size_t i = 0; parser_names[i] != NULL; i++) {
        if (parser_kinds[i] == p->kind) {
            lf_conf__release_row(p, &lf_conf__parser_keys[i]);
            break;
        }
    }
    lf_conf__release_row(p, &lf_conf__when_keys[0]); /* every parser's */
}

static void free_input(struct lf_input_conf *in)
{
    lf_conf__release(in, lf_conf__input_tables);
    for (size_t j = 0; j < in->n_parsers; j++)
        free_parser(&in->parsers[j]);
    /* Not rows: the parsers array (the `parsers` row is read by load_parsers()), the routes
     * resolved from `outputs` names, and the item rendered for reloads to compare. */
    free(in->parsers);
    free(in->outputs);
    for (size_t j = 0; j < in->n_routes; j++) {
        lf_conf__release(&in->routes[j], lf_conf__route_tables);
        free(in->routes[j].outputs);
    }
    free(in->routes);
    free(in->settings_json);
}

static void free_output(struct lf_output_conf *o)
{
    /* The rows of the type it was loaded with: the loader set nothing outside them. */
    const struct lf_conf_key *tables[4];
    lf_conf__output_tables(o->type, tables);
    lf_conf__release(o, tables);
    /* Not rows: the item rendered for reloads, the copies of the config's data_dir and of
     * its ${VAR} values (lf_config_set_data_dir(), give_env()). */
    free(o->settings_json);
    free(o->data_dir);
    lf_conf__env_release(&o->env);
}

void lf_config_free(struct lf_config *cfg)
{
    if (cfg == NULL)
        return;
    for (size_t i = 0; i < cfg->n_inputs; i++)
        free_input(&cfg->inputs[i]);
    free(cfg->inputs);
    for (size_t i = 0; i < cfg->n_outputs; i++)
        free_output(&cfg->outputs[i]);
    free(cfg->outputs);
    lf_conf__release(cfg, lf_conf__root_tables);
    /* Not rows: the ${VAR} values met and the path loaded from. */
    lf_conf__env_release(&cfg->env);
    free(cfg->path);
    free(cfg);
}

static bool same_text(const char *a, const char *b)
{
    return a != NULL && b != NULL && strcmp(a, b) == 0;
}

bool lf_config_input_same(const struct lf_input_conf *a, const struct lf_input_conf *b)
{
    return same_text(a->settings_json, b->settings_json);
}

bool lf_config_output_same(const struct lf_output_conf *a, const struct lf_output_conf *b)
{
    return same_text(a->settings_json, b->settings_json);
}

const struct lf_input_conf *lf_config_input(const struct lf_config *cfg, const char *id)
{
    for (size_t i = 0; i < cfg->n_inputs; i++) {
        if (cfg->inputs[i].id != NULL && strcmp(cfg->inputs[i].id, id) == 0)
            return &cfg->inputs[i];
    }
    return NULL;
}
