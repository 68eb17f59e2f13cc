/* units.c - the scalar syntaxes of the config: sizes, durations, ${VAR} expansion, regexes. */
#include "config.h"

#include "logferry/config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#include "config_int.h"

/* Reads the leading decimal digits of s into *out; returns the first byte after them, or NULL
 * if there are none or the value does not fit in 64 bits. */
static const char *parse_digits(const char *s, uint64_t *out)
{
    uint64_t v = 0;
    const char *p = s;
    while (*p >= '0' && *p <= '9') {
        if (__builtin_mul_overflow(v, 10, &v) ||
            __builtin_add_overflow(v, (uint64_t)(*p - '0'), &v))
            return NULL;
        p++;
    }
    if (p == s)
        return NULL;
    *out = v;
    return p;
}

struct unit {
    const char *suffix;
    uint64_t factor;
};

static bool parse_with_units(const char *s, const struct unit *units, bool bare_ok, uint64_t *out)
{
    uint64_t v;
    const char *p = parse_digits(s, &v);
    if (p == NULL)
        return false;
    if (*p == '\0') {
        if (!bare_ok && v != 0)
            return false;
        *out = v;
        return true;
    }
    for (const struct unit *u = units; u->suffix != NULL; u++) {
        if (strcmp(p, u->suffix) == 0)
            return !__builtin_mul_overflow(v, u->factor, out);
    }
    return false;
}

bool lf_parse_size(const char *s, size_t *out)
{
    static const struct unit units[] = {
        { "KiB", 1024ull },
        { "MiB", 1024ull * 1024 },
        { "GiB", 1024ull * 1024 * 1024 },
        { NULL, 0 },
    };
    uint64_t v;
    if (!parse_with_units(s, units, true, &v) || v > SIZE_MAX)
        return false;
    *out = (size_t)v;
    return true;
}

bool lf_parse_rate(const char *s, uint64_t *n, uint64_t *per_ms)
{
    static const struct unit units[] = {
        { "/s", 1000ull }, { "/m", 60ull * 1000 }, { "/h", 60ull * 60 * 1000 }, { NULL, 0 },
    };
    uint64_t v;
    const char *p = parse_digits(s, &v);
    if (p == NULL || v == 0 || v > LF_RATE_MAX)
        return false;
    for (const struct unit *u = units; u->suffix != NULL; u++) {
        if (strcmp(p, u->suffix) == 0) {
            *n = v;
            *per_ms = u->factor;
            return true;
        }
    }
    return false;
}

bool lf_parse_duration_ms(const char *s, uint64_t *out)
{
    static const struct unit units[] = {
        { "ms", 1ull }, { "s", 1000ull }, { "m", 60ull * 1000 }, { "h", 60ull * 60 * 1000 },
        { NULL, 0 },
    };
    return parse_with_units(s, units, false, out);
}

static bool is_name_start(char ch)
{
    return (ch >= 'A' && ch <= 'Z') || (ch >= 'a' && ch <= 'z') || ch == '_';
}

static bool is_name_char(char ch)
{
    return is_name_start(ch) || (ch >= '0' && ch <= '9');
}

/* Expands one ${...} starting at s (which points at "${"); appends to b (and a value from
 * the environment to seen) and returns the byte after the closing brace, or NULL with why
 * filled. */
static const char *expand_one(const char *s,
                              struct lf_buf *b,
                              struct lf_env_values *seen,
                              enum lf_err *err,
                              char *why,
                              size_t why_len)
{
    const char *name = s + 2;
    const char *p = name;
    if (!is_name_start(*p)) {
        *err = LF_ECONFIG;
        snprintf(why, why_len, "invalid ${...}: expected a variable name of letters, digits and _");
        return NULL;
    }
    while (is_name_char(*p))
        p++;
    size_t name_len = (size_t)(p - name);
    const char *def = NULL;
    size_t def_len = 0;
    if (p[0] == ':' && p[1] == '-') {
        def = p + 2;
        const char *end = strchr(def, '}');
        if (end == NULL)
            p = def + strlen(def);
        else
            p = end;
        def_len = (size_t)(p - def);
    }
    if (*p != '}') {
        *err = LF_ECONFIG;
        snprintf(why, why_len, "invalid ${%.*s: expected } or :-default}",
                 (int)(name_len > 64 ? 64 : name_len), name);
        return NULL;
    }
    char var[256];
    if (name_len >= sizeof(var)) {
        *err = LF_ECONFIG;
        snprintf(why, why_len, "variable name longer than %zu bytes", sizeof(var) - 1);
        return NULL;
    }
    memcpy(var, name, name_len);
    var[name_len] = '\0';
    const char *val = getenv(var);
    if (val != NULL && val[0] == '\0' && def != NULL)
        val = NULL; /* ${VAR:-x} takes x for an empty VAR too, as the shell does */
    if (val != NULL) {
        *err = lf_buf_append(b, val, strlen(val));
        if (!*err && seen != NULL && val[0] != '\0')
            *err = lf_conf__env_add(seen, var, name_len, val);
    } else if (def != NULL) {
        *err = lf_buf_append(b, def, def_len);
    } else {
        *err = LF_ECONFIG;
        snprintf(why, why_len,
                 "environment variable %s is not set (write ${%s:-default} to give a default)", var,
                 var);
        return NULL;
    }
    return *err ? NULL : p + 1;
}

enum lf_err lf_conf__expand(
    const char *s, char **out, struct lf_env_values *seen, char *why, size_t why_len)
{
    struct lf_buf b;
    lf_buf_init(&b, SIZE_MAX);
    enum lf_err err = LF_OK;
    *out = NULL;
    const char *p = s;
    while (*p != '\0') {
        const char *d = strchr(p, '$');
        if (d == NULL)
            d = p + strlen(p);
        err = lf_buf_append(&b, p, (size_t)(d - p));
        if (err || *d == '\0') {
            p = d;
            break;
        }
        if (d[1] == '$') {
            err = lf_buf_append(&b, "$", 1);
            p = d + 2;
        } else if (d[1] == '{') {
            p = expand_one(d, &b, seen, &err, why, why_len);
        } else {
            err = lf_buf_append(&b, "$", 1); /* a lone $ (as in a regex) stays */
            p = d + 1;
        }
        if (err)
            break;
    }
    if (!err)
        err = lf_buf_append(&b, "", 1);
    if (err) {
        lf_buf_release(&b);
        return err == LF_ETOOBIG ? LF_ENOMEM : err;
    }
    *out = b.ptr;
    return LF_OK;
}

const char *lf_conf__regex_check(const char *pattern, char *why, size_t why_len)
{
    int code = 0;
    PCRE2_SIZE off = 0;
    pcre2_code *re =
        pcre2_compile((PCRE2_SPTR)pattern, PCRE2_ZERO_TERMINATED, PCRE2_UTF, &code, &off, NULL);
    if (re != NULL) {
        pcre2_code_free(re);
        return NULL;
    }
    PCRE2_UCHAR text[256];
    if (pcre2_get_error_message(code, text, sizeof(text)) < 0)
        snprintf((char *)text, sizeof(text), "error %d", code);
    snprintf(why, why_len, "%s at offset %zu", (const char *)text, (size_t)off);
    return why;
}
