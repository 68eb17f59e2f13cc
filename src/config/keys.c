/* keys.c - the key-table engine: one setter per kind, messages with FILE:LINE:COL.
 *
 * A table row says where a key's value goes (offsetof) and how to read it (its kind); the
 * setters below are the only code that turns YAML scalars into typed values, so every size,
 * duration, bool and enum in the config is read, defaulted and reported the same way. */
#include "config.h"

#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "config_int.h"

/* Makes room for one more message; NULL (and c->oom) if that fails. */
static struct lf_conf_msg *realloc_msgs(struct lf_conf_ctx *c)
{
    if (lf_array_grow(&c->msgs, &c->cap_msgs, c->n_msgs, sizeof(*c->msgs), 16)) {
        c->oom = true;
        return NULL;
    }
    return &c->msgs[c->n_msgs];
}

/* Keeps the message fmt, ap at mark, with the key path, for lf_conf__flush_errors(). */
static LF_PRINTF(3, 0) void
verror_at(struct lf_conf_ctx *c, yaml_mark_t mark, const char *fmt, va_list ap)
{
    char msg[1024];
    vsnprintf(msg, sizeof(msg), fmt, ap);
    char line[1700];
    int n;
    if (c->path_len > 0)
        n = snprintf(line, sizeof(line), "%s:%zu:%zu: %s: %s\n", c->name, mark.line + 1,
                     mark.column + 1, c->path, msg);
    else
        n = snprintf(line, sizeof(line), "%s:%zu:%zu: %s\n", c->name, mark.line + 1,
                     mark.column + 1, msg);
    size_t len = n < 0 ? 0 : (size_t)n;
    if (len >= sizeof(line)) {
        len = sizeof(line) - 1;
        line[len - 1] = '\n';
    }
    c->n_errors++;
    struct lf_conf_msg *m = realloc_msgs(c);
    if (m == NULL)
        return;
    m->line = mark.line;
    m->col = mark.column;
    m->seq = c->n_msgs;
    m->text = strndup(line, len);
    if (m->text == NULL) {
        c->oom = true;
        return;
    }
    c->n_msgs++;
}

void lf_conf__error_at(struct lf_conf_ctx *c, yaml_mark_t mark, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    verror_at(c, mark, fmt, ap);
    va_end(ap);
}

static int cmp_msg(const void *a, const void *b)
{
    const struct lf_conf_msg *x = a;
    const struct lf_conf_msg *y = b;
    if (x->line != y->line)
        return x->line < y->line ? -1 : 1;
    if (x->col != y->col)
        return x->col < y->col ? -1 : 1;
    return x->seq < y->seq ? -1 : x->seq > y->seq;
}

void lf_conf__flush_errors(struct lf_conf_ctx *c)
{
    if (c->n_msgs > 0)
        qsort(c->msgs, c->n_msgs, sizeof(*c->msgs), cmp_msg);
    for (size_t i = 0; i < c->n_msgs; i++) {
        /* A full error buffer keeps the lines it has; the load fails either way. */
        lf_err_ignore(lf_buf_append(c->errors, c->msgs[i].text, strlen(c->msgs[i].text)));
        free(c->msgs[i].text);
    }
    free(c->msgs);
    c->msgs = NULL;
    c->n_msgs = 0;
    c->cap_msgs = 0;
}

void lf_conf__error(struct lf_conf_ctx *c, const yaml_node_t *node, const char *fmt, ...)
{
    yaml_mark_t mark = { 0, 0, 0 };
    if (node != NULL)
        mark = node->start_mark;
    va_list ap;
    va_start(ap, fmt);
    verror_at(c, mark, fmt, ap);
    va_end(ap);
}

/* Appends sep and part to the key path, cut at its size; the length before, to pop to. */
static size_t path_push(struct lf_conf_ctx *c, const char *sep, const char *part)
{
    size_t old = c->path_len;
    int n = snprintf(c->path + old, sizeof(c->path) - old, "%s%s", sep, part);
    if (n > 0)
        c->path_len += (size_t)n;
    if (c->path_len >= sizeof(c->path))
        c->path_len = sizeof(c->path) - 1;
    return old;
}

size_t lf_conf__path_key(struct lf_conf_ctx *c, const char *name)
{
    return path_push(c, c->path_len > 0 ? "." : "", name);
}

size_t lf_conf__path_index(struct lf_conf_ctx *c, size_t i)
{
    char part[32];
    snprintf(part, sizeof(part), "[%zu]", i);
    return path_push(c, "", part);
}

void lf_conf__path_pop(struct lf_conf_ctx *c, size_t len)
{
    c->path_len = len;
    c->path[len] = '\0';
}

const char *lf_conf__quote(char *dst, size_t dst_len, const char *s)
{
    size_t o = 0;
    size_t i = 0;
    for (; s[i] != '\0' && i < 64 && o + 5 < dst_len; i++) {
        unsigned char ch = (unsigned char)s[i];
        if (ch < 0x20 || ch == 0x7f || ch == '"' || ch == '\\')
            o += (size_t)snprintf(dst + o, dst_len - o, "\\x%02x", ch);
        else
            dst[o++] = (char)ch;
    }
    if (s[i] != '\0' && o + 4 < dst_len) {
        memcpy(dst + o, "...", 3);
        o += 3;
    }
    dst[o] = '\0';
    return dst;
}

/* True if a scalar's text has a ${...} that expansion replaces ($$ is a literal $). */
static bool takes_env(const yaml_node_t *node)
{
    if (node == NULL || node->type != YAML_SCALAR_NODE)
        return false;
    for (const char *p = (const char *)node->data.scalar.value; *p != '\0'; p++) {
        if (p[0] == '$' && p[1] == '$')
            p++;
        else if (p[0] == '$' && p[1] == '{')
            return true;
    }
    return false;
}

const char *lf_conf__show(char *dst, size_t dst_len, const yaml_node_t *node, const char *s)
{
    char q[400];
    if (takes_env(node))
        snprintf(dst, dst_len, "from %s",
                 lf_conf__quote(q, sizeof(q), (const char *)node->data.scalar.value));
    else
        snprintf(dst, dst_len, "\"%s\"", lf_conf__quote(q, sizeof(q), s));
    return dst;
}

/* As lf_conf__show(), but a value of the file itself unquoted, for "8 is too small". */
static const char *show_bare(char *dst, size_t dst_len, const yaml_node_t *node, const char *s)
{
    if (!takes_env(node))
        return s;
    char q[400];
    snprintf(dst, dst_len, "the value %s", lf_conf__show(q, sizeof(q), node, s));
    return dst;
}

yaml_node_t *lf_conf__node(struct lf_conf_ctx *c, int id)
{
    return yaml_document_get_node(c->doc, id);
}

static const char *node_kind(const yaml_node_t *n)
{
    if (n->type == YAML_MAPPING_NODE)
        return "a mapping";
    if (n->type == YAML_SEQUENCE_NODE)
        return "a list";
    return "a scalar";
}

static const char *scalar_text(const yaml_node_t *n)
{
    return (const char *)n->data.scalar.value;
}

yaml_node_t *lf_conf__get(struct lf_conf_ctx *c, yaml_node_t *map, const char *name)
{
    if (map == NULL || map->type != YAML_MAPPING_NODE)
        return NULL;
    for (yaml_node_pair_t *p = map->data.mapping.pairs.start; p < map->data.mapping.pairs.top;
         p++) {
        yaml_node_t *k = lf_conf__node(c, p->key);
        if (k != NULL && k->type == YAML_SCALAR_NODE && strcmp(scalar_text(k), name) == 0)
            return lf_conf__node(c, p->value);
    }
    return NULL;
}

bool lf_conf__scalar(struct lf_conf_ctx *c, yaml_node_t *node, const char *what, char **out)
{
    *out = NULL;
    if (node->type != YAML_SCALAR_NODE) {
        lf_conf__error(c, node, "expected %s, got %s", what, node_kind(node));
        return false;
    }
    if (strlen(scalar_text(node)) != node->data.scalar.length) {
        lf_conf__error(c, node, "expected %s, got a value with a NUL byte", what);
        return false;
    }
    char why[512];
    enum lf_err err = lf_conf__expand(scalar_text(node), out, &c->env, why, sizeof(why));
    if (err == LF_ENOMEM) {
        c->oom = true;
        return false;
    }
    if (err) {
        lf_conf__error(c, node, "%s", why);
        return false;
    }
    return true;
}

/* ---- scalar parsing, shared by defaults and YAML values ---- */

static const char *const bool_true[] = { "true", "yes", "on", NULL };
static const char *const bool_false[] = { "false", "no", "off", NULL };

static bool in_list(const char *s, const char *const *list)
{
    for (; *list != NULL; list++) {
        if (strcasecmp(s, *list) == 0)
            return true;
    }
    return false;
}

static const char *number_kind(enum lf_conf_kind kind)
{
    if (kind == LF_CONF_SIZE)
        return "size";
    if (kind == LF_CONF_DURATION)
        return "duration";
    return "number";
}

/* Writes an "expected ..." list of an enum's names into dst. */
static const char *enum_names(const struct lf_conf_enum *e, char *dst, size_t len)
{
    size_t o = 0;
    dst[0] = '\0';
    for (size_t i = 0; e[i].name != NULL && o < len; i++) {
        const char *sep = i == 0 ? "" : e[i + 1].name == NULL ? (i == 1 ? " or " : ", or ") : ", ";
        int n = snprintf(dst + o, len - o, "%s%s", sep, e[i].name);
        if (n > 0)
            o += (size_t)n;
    }
    return dst;
}

static bool parse_count(const char *s, long long *out)
{
    char *end;
    if (s[0] == '\0' || !((s[0] >= '0' && s[0] <= '9') || s[0] == '-' || s[0] == '+'))
        return false;
    errno = 0;
    long long v = strtoll(s, &end, 10);
    if (*end != '\0' || errno != 0)
        return false;
    *out = v;
    return true;
}

static const char *const size_units[] = { "KiB", "MiB", "GiB", "", NULL };
static const char *const duration_units[] = { "ms", "s", "m", "h", NULL };

/* True if s is digits and one of units: a value that failed to parse then overflowed. */
static bool well_formed(const char *s, const char *const *units)
{
    size_t n = strspn(s, "0123456789");
    if (n == 0)
        return false;
    for (; *units != NULL; units++) {
        if (strcmp(s + n, *units) == 0)
            return true;
    }
    return false;
}

static long long max_of(const struct lf_conf_key *k)
{
    if (k->max > 0)
        return k->max;
    return k->kind == LF_CONF_INT ? INT_MAX : LLONG_MAX;
}

/* Checks a number against the row's bounds. */
static bool check_bounds(struct lf_conf_ctx *c,
                         const struct lf_conf_key *k,
                         yaml_node_t *node,
                         const char *s,
                         unsigned long long v)
{
    char q[400];
    const char *unit = k->kind == LF_CONF_SIZE       ? " bytes"
                       : k->kind == LF_CONF_DURATION ? " ms"
                                                     : "";
    if (v < (unsigned long long)k->min) {
        lf_conf__error(c, node, "%s is too small: must be at least %lld%s",
                       show_bare(q, sizeof(q), node, s), k->min, unit);
        return false;
    }
    if (k->max > 0 && v > (unsigned long long)k->max) {
        lf_conf__error(c, node, "%s is too large: must be at most %lld%s",
                       show_bare(q, sizeof(q), node, s), k->max, unit);
        return false;
    }
    return true;
}

/* Reads s as a size (bytes) or a duration (ms), as k's kind says, into *v, within k's bounds;
 * false with the problem reported. */
static bool read_measure(struct lf_conf_ctx *c,
                         const struct lf_conf_key *k,
                         yaml_node_t *node,
                         const char *s,
                         uint64_t *v)
{
    bool size = k->kind == LF_CONF_SIZE;
    const char *what = size ? "size" : "duration";
    size_t bytes = 0;
    bool ok = size ? lf_parse_size(s, &bytes) : lf_parse_duration_ms(s, v);
    if (size)
        *v = bytes;
    char q[400];
    if (!ok && well_formed(s, size ? size_units : duration_units))
        lf_conf__error(c, node, "%s %s is too large", what, lf_conf__show(q, sizeof(q), node, s));
    else if (!ok)
        lf_conf__error(c, node, "invalid %s %s: expected %s", what,
                       lf_conf__show(q, sizeof(q), node, s),
                       size ? "bytes with an optional KiB, MiB or GiB suffix"
                            : "a whole number with a unit ms, s, m or h, or 0");
    return ok && check_bounds(c, k, node, s, *v);
}

/* Parses s for a scalar row and stores it at base + k->off. node is NULL for defaults (whose
 * problems are bugs in a table, reported at 1:1). Takes ownership of s. */
static void set_scalar(
    struct lf_conf_ctx *c, const struct lf_conf_key *k, void *base, yaml_node_t *node, char *s)
{
    char *dst = (char *)base + k->off;
    char q[400];
    char names[256];
    switch (k->kind) {
    case LF_CONF_REGEX: {
        char why[400];
        if (lf_conf__regex_check(s, why, sizeof(why)) != NULL) {
            lf_conf__error(c, node, "invalid regex %s: %s", lf_conf__show(q, sizeof(q), node, s),
                           why);
            break;
        }
    }
        /* fall through */
    case LF_CONF_STRING: {
        lf_conf_check_fn *check = (lf_conf_check_fn *)k->arg;
        const char *why = NULL;
        if ((k->flags & LF_CONF_NONEMPTY) && s[0] == '\0')
            why = "expected a non-empty string";
        else if (check != NULL)
            why = check(s);
        if (why != NULL) {
            lf_conf__error(c, node, "invalid value %s: %s", lf_conf__show(q, sizeof(q), node, s),
                           why);
            break;
        }
        free(*(char **)dst);
        *(char **)dst = s;
        return;
    }
    case LF_CONF_BOOL:
        if (in_list(s, bool_true) || in_list(s, bool_false))
            *(bool *)dst = in_list(s, bool_true);
        else
            lf_conf__error(c, node, "invalid boolean %s: expected true or false",
                           lf_conf__show(q, sizeof(q), node, s));
        break;
    case LF_CONF_SIZE: {
        uint64_t v;
        if (read_measure(c, k, node, s, &v))
            *(size_t *)dst = (size_t)v;
        break;
    }
    case LF_CONF_DURATION: {
        uint64_t v;
        if (read_measure(c, k, node, s, &v))
            *(uint64_t *)dst = v;
        break;
    }
    case LF_CONF_COUNT:
    case LF_CONF_INT: {
        long long v;
        if (!parse_count(s, &v) || (k->kind == LF_CONF_COUNT && v < 0)) {
            lf_conf__error(c, node, "invalid %s %s: expected a whole number%s",
                           number_kind(k->kind), lf_conf__show(q, sizeof(q), node, s),
                           k->kind == LF_CONF_COUNT ? " >= 0" : "");
        } else if (v < k->min || v > max_of(k)) {
            lf_conf__error(c, node, "%s is out of range: expected %lld to %lld",
                           show_bare(q, sizeof(q), node, s), k->min,
                           max_of(k));
        } else if (k->kind == LF_CONF_COUNT) {
            *(size_t *)dst = (size_t)v;
        } else {
            *(int *)dst = (int)v;
        }
        break;
    }
    case LF_CONF_ENUM:
    case LF_CONF_ENUM_STR: {
        const struct lf_conf_enum *e = k->arg;
        for (; e->name != NULL; e++) {
            if (strcmp(e->name, s) == 0)
                break;
        }
        if (e->name == NULL) {
            lf_conf__error(c, node, "invalid value %s: expected %s",
                           lf_conf__show(q, sizeof(q), node, s),
                           enum_names(k->arg, names, sizeof(names)));
        } else if (k->kind == LF_CONF_ENUM) {
            *(int *)dst = e->value;
        } else {
            free(*(char **)dst);
            *(char **)dst = s;
            return;
        }
        break;
    }
    default:
        break;
    }
    free(s);
}

/* Reads a list of strings (or one scalar, taken as a list of one). */
static void
set_list(struct lf_conf_ctx *c, const struct lf_conf_key *k, void *base, yaml_node_t *node)
{
    char ***dst = (char ***)((char *)base + k->off);
    size_t *n_dst = (size_t *)((char *)base + k->off_n);
    yaml_node_item_t one = 0;
    yaml_node_item_t *start = &one;
    yaml_node_item_t *top = &one;
    if (node->type == YAML_SEQUENCE_NODE) {
        start = node->data.sequence.items.start;
        top = node->data.sequence.items.top;
    } else if (node->type == YAML_SCALAR_NODE) {
        top = &one + 1;
    } else {
        lf_conf__error(c, node, "expected a list of strings, got a mapping");
        return;
    }
    size_t n = (size_t)(top - start);
    char **v = calloc(n + 1, sizeof(*v));
    if (v == NULL) {
        c->oom = true;
        return;
    }
    lf_conf_check_fn *check = k->kind == LF_CONF_STRLIST ? (lf_conf_check_fn *)k->arg : NULL;
    size_t got = 0;
    for (size_t i = 0; i < n; i++) {
        yaml_node_t *item = start == &one ? node : lf_conf__node(c, start[i]);
        const char *bad = NULL;
        size_t mark = start == &one ? c->path_len : lf_conf__path_index(c, i);
        char *s = NULL;
        char q[400];
        char why[400];
        if (item != NULL && lf_conf__scalar(c, item, "a string", &s)) {
            if ((k->flags & LF_CONF_NONEMPTY) && s[0] == '\0')
                lf_conf__error(c, item, "expected a non-empty string");
            else if (k->kind == LF_CONF_REGEXLIST &&
                     lf_conf__regex_check(s, why, sizeof(why)) != NULL)
                lf_conf__error(c, item, "invalid regex %s: %s", lf_conf__show(q, sizeof(q), item, s),
                               why);
            else if (check != NULL && (bad = check(s)) != NULL)
                lf_conf__error(c, item, "invalid value %s: %s", lf_conf__show(q, sizeof(q), item, s),
                               bad);
            else
                v[got++] = s, s = NULL;
        }
        free(s);
        lf_conf__path_pop(c, mark);
    }
    for (size_t i = 0; i < *n_dst; i++)
        free((*dst)[i]);
    free(*dst);
    *dst = v;
    *n_dst = got;
}

void lf_conf__value(struct lf_conf_ctx *c,
                    const struct lf_conf_key *k,
                    void *base,
                    yaml_node_t *value)
{
    switch (k->kind) {
    case LF_CONF_STRLIST:
    case LF_CONF_REGEXLIST:
        set_list(c, k, base, value);
        break;
    case LF_CONF_SECTION: {
        const struct lf_conf_key *const tables[] = { k->arg, NULL };
        if (value->type == YAML_SCALAR_NODE && value->data.scalar.length == 0 &&
            value->data.scalar.style == YAML_PLAIN_SCALAR_STYLE)
            break; /* `queue:` with nothing after it keeps the defaults */
        lf_conf__apply(c, value, base, tables);
        break;
    }
    case LF_CONF_JSON: {
        char **dst = (char **)((char *)base + k->off);
        char *json = NULL;
        yaml_node_type_t want = (k->flags & LF_CONF_LIST) ? YAML_SEQUENCE_NODE : YAML_MAPPING_NODE;
        if (lf_conf__json_as(c, value, want, &json)) {
            free(*dst);
            *dst = json;
        }
        break;
    }
    case LF_CONF_EXTERNAL:
        break;
    default: {
        char *s = NULL;
        if (lf_conf__scalar(c, value, "a scalar value", &s))
            set_scalar(c, k, base, value, s);
        break;
    }
    }
}

void lf_conf__defaults(struct lf_conf_ctx *c, void *base, const struct lf_conf_key *const *tables)
{
    for (; *tables != NULL; tables++) {
        for (const struct lf_conf_key *k = *tables; k->name != NULL; k++) {
            if (k->kind == LF_CONF_SECTION) {
                const struct lf_conf_key *const sub[] = { k->arg, NULL };
                lf_conf__defaults(c, base, sub);
            } else if (k->def != NULL) {
                char *s = strdup(k->def);
                if (s == NULL)
                    c->oom = true;
                else
                    set_scalar(c, k, base, NULL, s);
            }
        }
    }
}

static const struct lf_conf_key *find_row(const struct lf_conf_key *const *tables, const char *name)
{
    for (; *tables != NULL; tables++) {
        for (const struct lf_conf_key *k = *tables; k->name != NULL; k++) {
            if (strcmp(k->name, name) == 0)
                return k;
        }
    }
    return NULL;
}

/* True when name, unknown among an input's keys, names a stage: a Filebeat habit
 * (input-level exclude_lines) that belongs in the input's parsers list. */
static bool is_stage_in_input(const struct lf_conf_key *const *tables, const char *name)
{
    const struct lf_conf_key *const stages[] = { lf_conf__parser_keys, NULL };
    return tables == lf_conf__input_tables && find_row(stages, name) != NULL;
}

/* Reports the pair at p as a duplicate if an earlier pair has the same key. */
static bool
is_duplicate(struct lf_conf_ctx *c, yaml_node_t *map, yaml_node_pair_t *p, yaml_node_t *key)
{
    for (yaml_node_pair_t *e = map->data.mapping.pairs.start; e < p; e++) {
        yaml_node_t *ek = lf_conf__node(c, e->key);
        if (ek != NULL && ek->type == YAML_SCALAR_NODE &&
            strcmp(scalar_text(ek), scalar_text(key)) == 0) {
            char q[400];
            lf_conf__error(c, key, "duplicate key \"%s\" (first at %zu:%zu)",
                           lf_conf__quote(q, sizeof(q), scalar_text(key)), ek->start_mark.line + 1,
                           ek->start_mark.column + 1);
            return true;
        }
    }
    return false;
}

static void apply_pair(struct lf_conf_ctx *c,
                       yaml_node_t *map,
                       yaml_node_pair_t *p,
                       void *base,
                       const struct lf_conf_key *const *tables)
{
    yaml_node_t *key = lf_conf__node(c, p->key);
    yaml_node_t *value = lf_conf__node(c, p->value);
    char q[400];
    if (key == NULL || value == NULL)
        return;
    if (key->type != YAML_SCALAR_NODE) {
        lf_conf__error(c, key, "expected a key name, got %s", node_kind(key));
        return;
    }
    if (is_duplicate(c, map, p, key))
        return;
    const struct lf_conf_key *k = find_row(tables, scalar_text(key));
    if (k == NULL && is_stage_in_input(tables, scalar_text(key))) {
        lf_conf__error(c, key, "%s is a stage: parsers: [{%s: ...}]", scalar_text(key),
                       scalar_text(key));
        return;
    }
    if (k == NULL) {
        const char *hint = lf_conf__suggest(scalar_text(key), tables);
        char hq[128];
        if (hint != NULL)
            snprintf(hq, sizeof(hq), " (did you mean \"%s\"?)", hint);
        lf_conf__error(c, key, "unknown key \"%s\"%s",
                       lf_conf__quote(q, sizeof(q), scalar_text(key)), hint != NULL ? hq : "");
        return;
    }
    size_t mark = lf_conf__path_key(c, k->name);
    lf_conf__value(c, k, base, value);
    lf_conf__path_pop(c, mark);
}

static void
check_required(struct lf_conf_ctx *c, yaml_node_t *map, const struct lf_conf_key *const *tables)
{
    for (; *tables != NULL; tables++) {
        for (const struct lf_conf_key *k = *tables; k->name != NULL; k++) {
            if ((k->flags & LF_CONF_REQUIRED) && lf_conf__get(c, map, k->name) == NULL)
                lf_conf__error(c, map, "missing required key \"%s\"", k->name);
        }
    }
}

void lf_conf__apply(struct lf_conf_ctx *c,
                    yaml_node_t *map,
                    void *base,
                    const struct lf_conf_key *const *tables)
{
    if (map->type != YAML_MAPPING_NODE) {
        lf_conf__error(c, map, "expected a mapping, got %s", node_kind(map));
        return;
    }
    for (yaml_node_pair_t *p = map->data.mapping.pairs.start; p < map->data.mapping.pairs.top; p++)
        apply_pair(c, map, p, base, tables);
    check_required(c, map, tables);
}

void lf_conf__release_row(void *base, const struct lf_conf_key *k)
{
    char *dst = (char *)base + k->off;
    switch (k->kind) {
    case LF_CONF_STRING:
    case LF_CONF_ENUM_STR:
    case LF_CONF_REGEX:
    case LF_CONF_JSON:
        free(*(char **)dst);
        *(char **)dst = NULL;
        break;
    case LF_CONF_STRLIST:
    case LF_CONF_REGEXLIST: {
        size_t *n = (size_t *)((char *)base + k->off_n);
        for (size_t i = 0; i < *n; i++)
            free((*(char ***)dst)[i]);
        free(*(char ***)dst);
        *(char ***)dst = NULL;
        *n = 0;
        break;
    }
    case LF_CONF_SECTION: {
        const struct lf_conf_key *const sub[] = { k->arg, NULL };
        lf_conf__release(base, sub);
        break;
    }
    default:
        break;
    }
}

void lf_conf__release(void *base, const struct lf_conf_key *const *tables)
{
    for (; *tables != NULL; tables++) {
        for (const struct lf_conf_key *k = *tables; k->name != NULL; k++)
            lf_conf__release_row(base, k);
    }
}

/* Levenshtein distance, capped: names are short (keys), longer ones are not compared. */
static size_t edit_distance(const char *a, const char *b)
{
    size_t la = strlen(a);
    size_t lb = strlen(b);
    if (la > 32 || lb > 32)
        return SIZE_MAX;
    size_t row[33];
    for (size_t j = 0; j <= lb; j++)
        row[j] = j;
    for (size_t i = 1; i <= la; i++) {
        size_t diag = row[0];
        row[0] = i;
        for (size_t j = 1; j <= lb; j++) {
            size_t up = row[j];
            size_t best = diag + (a[i - 1] == b[j - 1] ? 0 : 1);
            if (up + 1 < best)
                best = up + 1;
            if (row[j - 1] + 1 < best)
                best = row[j - 1] + 1;
            row[j] = best;
            diag = up;
        }
    }
    return row[lb];
}

static bool closer(const char *name, const char *cand, size_t *best)
{
    size_t d = edit_distance(name, cand);
    size_t limit = strlen(cand) / 3 > 2 ? strlen(cand) / 3 : 2;
    if (d <= limit && d < *best) {
        *best = d;
        return true;
    }
    return false;
}

const char *lf_conf__suggest(const char *name, const struct lf_conf_key *const *tables)
{
    const char *hint = NULL;
    size_t best = SIZE_MAX;
    for (; *tables != NULL; tables++) {
        for (const struct lf_conf_key *k = *tables; k->name != NULL; k++) {
            if (closer(name, k->name, &best))
                hint = k->name;
        }
    }
    return hint;
}

const char *lf_conf__suggest_names(const char *name, const char *const *names)
{
    const char *hint = NULL;
    size_t best = SIZE_MAX;
    for (; *names != NULL; names++) {
        if (closer(name, *names, &best))
            hint = *names;
    }
    return hint;
}
