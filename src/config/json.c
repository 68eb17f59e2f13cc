/* json.c - renders a YAML value (fields, labels, headers) once, at load, as compact JSON.
 *
 * Mappings become objects, sequences arrays. A plain (unquoted) scalar that reads as a JSON
 * number, true, false or null (or YAML's ~ and empty value) is written as that literal; any
 * other scalar, and every quoted one, is a JSON string. Values are ${VAR}-expanded first.
 * Depth and size are bounded: YAML aliases can nest a value into itself or multiply it. */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config_int.h"

#define JSON_MAX_DEPTH 32
#define JSON_MAX_BYTES (1024 * 1024)

struct json_out {
    struct lf_conf_ctx *c;
    struct lf_buf b;
    bool failed;  /* a problem was reported, or the limit hit: stop */
    bool too_big; /* JSON_MAX_BYTES reached */
};

static void put(struct json_out *j, const char *p, size_t n)
{
    if (j->failed)
        return;
    enum lf_err err = lf_buf_append(&j->b, p, n);
    if (err == LF_ENOMEM) {
        j->c->oom = true;
        j->failed = true;
    } else if (err) {
        j->failed = true;
        j->too_big = true;
    }
}

static void put_string(struct json_out *j, const char *s)
{
    put(j, "\"", 1);
    for (const char *p = s; *p != '\0' && !j->failed; p++) {
        unsigned char ch = (unsigned char)*p;
        char esc[8];
        if (ch == '"' || ch == '\\') {
            esc[0] = '\\';
            esc[1] = (char)ch;
            put(j, esc, 2);
        } else if (ch == '\n') {
            put(j, "\\n", 2);
        } else if (ch == '\t') {
            put(j, "\\t", 2);
        } else if (ch == '\r') {
            put(j, "\\r", 2);
        } else if (ch < 0x20 || ch == 0x7f) {
            snprintf(esc, sizeof(esc), "\\u%04x", ch);
            put(j, esc, 6);
        } else {
            put(j, p, 1);
        }
    }
    put(j, "\"", 1);
}

/* True if s is a JSON number: -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)? */
static bool is_json_number(const char *s)
{
    const char *p = s;
    if (*p == '-')
        p++;
    if (*p == '0')
        p++;
    else if (*p >= '1' && *p <= '9')
        while (*p >= '0' && *p <= '9')
            p++;
    else
        return false;
    if (*p == '.') {
        p++;
        if (!(*p >= '0' && *p <= '9'))
            return false;
        while (*p >= '0' && *p <= '9')
            p++;
    }
    if (*p == 'e' || *p == 'E') {
        p++;
        if (*p == '+' || *p == '-')
            p++;
        if (!(*p >= '0' && *p <= '9'))
            return false;
        while (*p >= '0' && *p <= '9')
            p++;
    }
    return *p == '\0';
}

static void put_scalar(struct json_out *j, yaml_node_t *node)
{
    char *s = NULL;
    if (!lf_conf__scalar(j->c, node, "a scalar", &s)) {
        j->failed = true;
        return;
    }
    if (node->data.scalar.style != YAML_PLAIN_SCALAR_STYLE)
        put_string(j, s);
    else if (strcmp(s, "true") == 0 || strcmp(s, "false") == 0 || strcmp(s, "null") == 0)
        put(j, s, strlen(s));
    else if (strcmp(s, "~") == 0 || s[0] == '\0')
        put(j, "null", 4);
    else if (is_json_number(s))
        put(j, s, strlen(s));
    else
        put_string(j, s);
    free(s);
}

static void put_value(struct json_out *j, yaml_node_t *node, int depth);

static void put_mapping(struct json_out *j, yaml_node_t *node, int depth)
{
    put(j, "{", 1);
    yaml_node_pair_t *start = node->data.mapping.pairs.start;
    for (yaml_node_pair_t *p = start; p < node->data.mapping.pairs.top && !j->failed; p++) {
        yaml_node_t *k = lf_conf__node(j->c, p->key);
        yaml_node_t *v = lf_conf__node(j->c, p->value);
        if (k == NULL || v == NULL)
            continue;
        if (k->type != YAML_SCALAR_NODE) {
            lf_conf__error(j->c, k, "expected a key name, got a %s",
                           k->type == YAML_MAPPING_NODE ? "mapping" : "list");
            j->failed = true;
            return;
        }
        const char *name = (const char *)k->data.scalar.value;
        for (yaml_node_pair_t *e = start; e < p; e++) {
            yaml_node_t *ek = lf_conf__node(j->c, e->key);
            if (ek != NULL && ek->type == YAML_SCALAR_NODE &&
                strcmp((const char *)ek->data.scalar.value, name) == 0) {
                char q[400];
                lf_conf__error(j->c, k, "duplicate key \"%s\" (first at %zu:%zu)",
                               lf_conf__quote(q, sizeof(q), name), ek->start_mark.line + 1,
                               ek->start_mark.column + 1);
                j->failed = true;
                return;
            }
        }
        if (p > start)
            put(j, ",", 1);
        put_string(j, name);
        put(j, ":", 1);
        size_t mark = lf_conf__path_key(j->c, name);
        put_value(j, v, depth + 1);
        lf_conf__path_pop(j->c, mark);
    }
    put(j, "}", 1);
}

static void put_value(struct json_out *j, yaml_node_t *node, int depth)
{
    if (j->failed)
        return;
    if (depth > JSON_MAX_DEPTH) {
        lf_conf__error(j->c, node, "nested deeper than %d levels", JSON_MAX_DEPTH);
        j->failed = true;
        return;
    }
    if (node->type == YAML_SCALAR_NODE) {
        put_scalar(j, node);
    } else if (node->type == YAML_SEQUENCE_NODE) {
        put(j, "[", 1);
        yaml_node_item_t *start = node->data.sequence.items.start;
        for (yaml_node_item_t *i = start; i < node->data.sequence.items.top && !j->failed; i++) {
            yaml_node_t *item = lf_conf__node(j->c, *i);
            if (item == NULL)
                continue;
            if (i > start)
                put(j, ",", 1);
            size_t mark = lf_conf__path_index(j->c, (size_t)(i - start));
            put_value(j, item, depth + 1);
            lf_conf__path_pop(j->c, mark);
        }
        put(j, "]", 1);
    } else if (node->type == YAML_MAPPING_NODE) {
        put_mapping(j, node, depth);
    }
}

bool lf_conf__json(struct lf_conf_ctx *c, yaml_node_t *node, char **out)
{
    return lf_conf__json_as(c, node, YAML_MAPPING_NODE, out);
}

bool lf_conf__json_as(struct lf_conf_ctx *c, yaml_node_t *node, yaml_node_type_t want, char **out)
{
    *out = NULL;
    if (node->type == YAML_SCALAR_NODE && node->data.scalar.length == 0 &&
        node->data.scalar.style == YAML_PLAIN_SCALAR_STYLE)
        return true; /* `fields:` with nothing after it: no fields */
    if (node->type != want) {
        lf_conf__error(c, node, "expected a %s, got a %s",
                       want == YAML_MAPPING_NODE ? "mapping" : "list",
                       node->type == YAML_SEQUENCE_NODE  ? "list"
                       : node->type == YAML_MAPPING_NODE ? "mapping"
                                                         : "scalar");
        return false;
    }
    struct json_out j = { .c = c, .failed = false };
    lf_buf_init(&j.b, JSON_MAX_BYTES);
    put_value(&j, node, 0);
    put(&j, "", 1);
    if (j.too_big)
        lf_conf__error(c, node, "rendered JSON exceeds %d bytes", JSON_MAX_BYTES);
    if (j.failed) {
        lf_buf_release(&j.b);
        return false;
    }
    *out = j.b.ptr;
    return true;
}
