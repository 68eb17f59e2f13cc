/* members.c - helpers the regex, access_log and fields stages share: the agent's own keys,
 * dotted paths into an event's JSON members, and small writers. */
#include "config.h"

#include <string.h>

#include "stage_int.h"

static const struct lf_str own_keys[] = { LF_STR_LIT("@timestamp"), LF_STR_LIT("log"),
                                          LF_STR_LIT("input"), LF_STR_LIT("host"),
                                          LF_STR_LIT("fields") };

bool lf_stage__is_encoder_key(const char *key, size_t len)
{
    for (size_t i = 0; i < sizeof(own_keys) / sizeof(own_keys[0]); i++) {
        if (own_keys[i].len == len && memcmp(own_keys[i].ptr, key, len) == 0)
            return true;
    }
    return false;
}

static bool is_blank(char c)
{
    return c == ' ' || c == '\t' || c == '\r' || c == '\n';
}

/* Past the JSON string at p (its opening quote) in the list that starts at list; NULL when
 * it does not end. */
static inline const char *skip_string(const char *p, const char *list, const char *end)
{
    const char *s = p + 1;
    for (;;) {
        const char *q = lf_stage__find_quote(s, list, end);
        if (q == NULL)
            return NULL;
        if (q == p + 1 || q[-1] != '\\')
            return q + 1; /* the usual case: no backslash before it */
        const char *b = q;
        while (b > p + 1 && b[-1] == '\\')
            b--;
        if (((q - b) & 1) == 0) /* not escaped */
            return q + 1;
        s = q + 1;
    }
}

/* Past the JSON value at p; NULL when it does not end. Strings are jumped to their
 * closing quote (16 bytes a step), objects and arrays by counting brackets outside
 * strings; a scalar runs to the next ',', '}' or ']' (blanks after it included). */
static const char *skip_value(const char *p, const char *list, const char *end)
{
    if (p >= end)
        return NULL;
    if (*p == '"')
        return skip_string(p, list, end);
    if (*p != '{' && *p != '[') {
        while (p < end && *p != ',' && *p != '}' && *p != ']')
            p++;
        return p;
    }
    int depth = 0;
    while (p < end) {
        char c = *p;
        if (c == '"') {
            p = skip_string(p, list, end);
            if (p == NULL)
                return NULL;
            continue;
        }
        if (c == '{' || c == '[')
            depth++;
        else if ((c == '}' || c == ']') && --depth == 0)
            return p + 1;
        p++;
    }
    return NULL;
}

/* The member of list whose escaped key is key (len bytes): *member and *value. */
static bool find_key(
    struct lf_str list, const char *key, size_t len, struct lf_str *member, struct lf_str *value)
{
    const char *p = list.ptr;
    const char *end = list.ptr + list.len;
    while (p < end) {
        while (p < end && (is_blank(*p) || *p == ','))
            p++;
        if (p >= end || *p != '"')
            return false;
        const char *k = p + 1;
        const char *ke = skip_string(p, list.ptr, end);
        if (ke == NULL)
            return false;
        const char *v = ke;
        while (v < end && (is_blank(*v) || *v == ':'))
            v++;
        const char *ve = skip_value(v, list.ptr, end);
        if (ve == NULL)
            return false;
        if ((size_t)(ke - 1 - k) == len && memcmp(k, key, len) == 0) {
            const char *vt = ve;
            while (vt > v && is_blank(vt[-1]))
                vt--;
            *member = lf_str_make(p, (size_t)(vt - p));
            *value = lf_str_make(v, (size_t)(vt - v));
            return true;
        }
        p = ve;
    }
    return false;
}

bool lf_stage__json_find(struct lf_str list,
                         struct lf_str path,
                         struct lf_str *member,
                         struct lf_str *value)
{
    if (list.len == 0)
        return false;
    for (;;) {
        const char *dot = memchr(path.ptr, '.', path.len);
        size_t seg = dot != NULL ? (size_t)(dot - path.ptr) : path.len;
        if (!find_key(list, path.ptr, seg, member, value))
            return false;
        if (dot == NULL)
            return true;
        if (value->len < 2 || value->ptr[0] != '{' || value->ptr[value->len - 1] != '}')
            return false;
        list = lf_str_make(value->ptr + 1, value->len - 2);
        path = lf_str_make(dot + 1, path.len - seg - 1);
    }
}

enum lf_err lf_stage__append_int(struct lf_buf *b, int64_t v)
{
    char digits[24];
    char *p = digits + sizeof(digits);
    uint64_t u = v < 0 ? 0 - (uint64_t)v : (uint64_t)v;
    do {
        *--p = (char)('0' + u % 10);
        u /= 10;
    } while (u != 0);
    if (v < 0)
        *--p = '-';
    return lf_buf_append(b, p, (size_t)(digits + sizeof(digits) - p));
}

enum lf_err lf_stage__append_key(struct lf_buf *b, bool *first, const char *key, size_t len)
{
    enum lf_err err = *first ? LF_OK : lf_buf_append(b, ",", 1);
    *first = false;
    if (!err)
        err = lf_buf_append(b, "\"", 1);
    if (!err)
        err = lf_buf_append(b, key, len);
    if (!err)
        err = lf_buf_append(b, "\":", 2);
    return err;
}
