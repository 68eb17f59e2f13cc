/* fields.c - event fields and %{field} templates for the outputs (see fields_int.h).
 *
 * The scanner trusts its input to be JSON as the encoder wrote it (one event's line, or
 * the members a stage added), yet never reads past the end it is given: on malformed text a
 * lookup fails or finds a shorter value, nothing worse. Nesting is counted, not recursed,
 * except to enter the objects a path names (at most LF_FIELDS_DEPTH_MAX). */
#include "config.h"

#include "fields_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "logferry/event.h"
#include "logferry/jsonmask.h"

/* ---- scanning ---- */

static const char *skip_ws(const char *p, const char *end)
{
    while (p < end && (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r'))
        p++;
    return p;
}

/* p at '"': returns the byte after the closing quote, or end. */
static const char *skip_string(const char *p, const char *end)
{
    for (p++; p < end; p++) {
        if (*p == '\\')
            p++;
        else if (*p == '"')
            return p + 1;
    }
    return end;
}

/* p at a value: returns the byte after it, or end. */
static const char *skip_value(const char *p, const char *end)
{
    size_t depth = 0;
    while (p < end) {
        char c = *p;
        if (c == '"') {
            p = skip_string(p, end);
        } else if (c == '{' || c == '[') {
            depth++;
            p++;
        } else if (c == '}' || c == ']') {
            if (depth == 0)
                return p; /* the end of the enclosing container: a scalar ended here */
            depth--;
            p++;
        } else if (depth == 0 && (c == ',' || c == ' ' || c == '\n' || c == '\t' || c == '\r')) {
            return p;
        } else {
            p++;
        }
        if (depth == 0 && (c == '"' || c == '}' || c == ']'))
            return p;
    }
    return end;
}

const char *lf_fields_skip_ws(const char *p, const char *end)
{
    return skip_ws(p, end);
}

const char *lf_fields_skip_value(const char *p, const char *end)
{
    return skip_value(p, end);
}

static bool
find(const char *p, const char *end, const char *path, size_t plen, int depth, struct lf_str *val)
{
    if (depth > LF_FIELDS_DEPTH_MAX)
        return false;
    p = skip_ws(p, end);
    if (p < end && *p == '{')
        p++;
    for (;;) {
        p = skip_ws(p, end);
        while (p < end && *p == ',')
            p = skip_ws(p + 1, end);
        if (p >= end || *p != '"')
            return false;
        const char *k = p + 1;
        p = skip_string(p, end);
        if (p >= end)
            return false;
        size_t klen = (size_t)(p - 1 - k);
        p = skip_ws(p, end);
        if (p >= end || *p != ':')
            return false;
        const char *v = skip_ws(p + 1, end);
        p = skip_value(v, end);
        if (klen == plen && memcmp(k, path, plen) == 0) {
            *val = lf_str_make(v, (size_t)(p - v));
            return true;
        }
        if (klen < plen && path[klen] == '.' && memcmp(k, path, klen) == 0 && p > v && *v == '{' &&
            find(v, p, path + klen + 1, plen - klen - 1, depth + 1, val))
            return true;
    }
}

bool lf_fields_find(struct lf_str json, const char *path, size_t plen, struct lf_str *val)
{
    return plen > 0 && find(json.ptr, json.ptr + json.len, path, plen, 0, val);
}

/* ---- values as text ---- */

static unsigned hex4(const char *p)
{
    unsigned v = 0;
    for (int i = 0; i < 4; i++) {
        char c = p[i];
        v <<= 4;
        if (c >= '0' && c <= '9')
            v |= (unsigned)(c - '0');
        else if (c >= 'a' && c <= 'f')
            v |= (unsigned)(c - 'a' + 10);
        else if (c >= 'A' && c <= 'F')
            v |= (unsigned)(c - 'A' + 10);
    }
    return v;
}

/* Appends code point cp as UTF-8 to out[*n] (room checked by the caller). */
static void put_utf8(char *out, size_t *n, unsigned cp)
{
    if (cp < 0x80) {
        out[(*n)++] = (char)cp;
    } else if (cp < 0x800) {
        out[(*n)++] = (char)(0xC0 | (cp >> 6));
        out[(*n)++] = (char)(0x80 | (cp & 0x3F));
    } else if (cp < 0x10000) {
        out[(*n)++] = (char)(0xE0 | (cp >> 12));
        out[(*n)++] = (char)(0x80 | ((cp >> 6) & 0x3F));
        out[(*n)++] = (char)(0x80 | (cp & 0x3F));
    } else {
        out[(*n)++] = (char)(0xF0 | (cp >> 18));
        out[(*n)++] = (char)(0x80 | ((cp >> 12) & 0x3F));
        out[(*n)++] = (char)(0x80 | ((cp >> 6) & 0x3F));
        out[(*n)++] = (char)(0x80 | (cp & 0x3F));
    }
}

static bool is_null(struct lf_str v)
{
    return v.len == 4 && memcmp(v.ptr, "null", 4) == 0;
}

bool lf_fields_text(struct lf_str v, char *out, size_t *n, size_t cap)
{
    if (is_null(v))
        return true;
    if (v.len < 2 || v.ptr[0] != '"') {
        if (cap - *n < v.len)
            return false;
        memcpy(out + *n, v.ptr, v.len);
        *n += v.len;
        return true;
    }
    const char *p = v.ptr + 1;
    const char *end = v.ptr + v.len - 1;
    while (p < end) {
        if (cap - *n < 1)
            return false;
        if (*p != '\\' || end - p < 2) {
            out[(*n)++] = *p++;
            continue;
        }
        char e = p[1];
        p += 2;
        if (e == 'u' && end - p >= 4) {
            unsigned cp = hex4(p);
            p += 4;
            if (cp >= 0xD800 && cp < 0xDC00 && end - p >= 6 && p[0] == '\\' && p[1] == 'u') {
                unsigned lo = hex4(p + 2);
                if (lo >= 0xDC00 && lo < 0xE000) {
                    cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
                    p += 6;
                }
            }
            if (cap - *n < (cp < 0x80 ? 1u : cp < 0x800 ? 2u : cp < 0x10000 ? 3u : 4u))
                return false;
            put_utf8(out, n, cp);
        } else {
            const char *from = "bfnrt";
            const char *to = "\b\f\n\r\t";
            const char *f = strchr(from, e);
            out[(*n)++] = (char)(f != NULL && e != '\0' ? to[f - from] : e);
        }
    }
    return true;
}

/* ---- templates ---- */

void lf_tmpl_release(struct lf_tmpl *t)
{
    for (size_t i = 0; i < t->n; i++)
        free(t->parts[i].text);
    free(t->parts);
    t->parts = NULL;
    t->n = 0;
}

static enum lf_err tmpl_add(struct lf_tmpl *t, bool field, const char *p, size_t len)
{
    if (len == 0 && !field)
        return LF_OK;
    struct lf_tmpl_part *parts = realloc(t->parts, (t->n + 1) * sizeof(*parts));
    if (parts == NULL)
        return LF_ENOMEM;
    t->parts = parts;
    char *text = strndup(p, len);
    if (text == NULL)
        return LF_ENOMEM;
    t->parts[t->n++] = (struct lf_tmpl_part){ .field = field, .text = text, .len = len };
    return LF_OK;
}

enum lf_err lf_tmpl_compile(
    struct lf_tmpl *t, const char *s, const char *name, const char *what, struct lf_errbuf *eb)
{
    const char *lit = s;
    const char *p = s;
    while ((p = strstr(p, "%{")) != NULL) {
        const char *close = strchr(p + 2, '}');
        if (close == NULL || close == p + 2) {
            return lf_fail(eb, LF_ECONFIG, "output %s: %s: %s at column %zu", name, what,
                           close == NULL ? "%{ without its }" : "empty %{}", (size_t)(p - s) + 1);
        }
        if (tmpl_add(t, false, lit, (size_t)(p - lit)) ||
            tmpl_add(t, true, p + 2, (size_t)(close - p - 2)))
            return lf_fail(eb, LF_ENOMEM, "output %s: out of memory", name);
        p = close + 1;
        lit = p;
    }
    if (tmpl_add(t, false, lit, strlen(lit)))
        return lf_fail(eb, LF_ENOMEM, "output %s: out of memory", name);
    return LF_OK;
}

bool lf_tmpl_render(
    const struct lf_tmpl *t, struct lf_str event, char *out, size_t cap, size_t *len)
{
    size_t n = 0;
    for (size_t i = 0; i < t->n; i++) {
        const struct lf_tmpl_part *part = &t->parts[i];
        struct lf_str v;
        if (!part->field) {
            if (cap - n < part->len)
                return false;
            memcpy(out + n, part->text, part->len);
            n += part->len;
        } else if (lf_fields_find(event, part->text, part->len, &v) &&
                   !lf_fields_text(v, out, &n, cap)) {
            return false;
        }
    }
    *len = n;
    return true;
}

enum lf_err lf_tmpl_render_json(const struct lf_tmpl *t, struct lf_str event, struct lf_buf *out)
{
    enum lf_err err = LF_OK;
    for (size_t i = 0; i < t->n && !err; i++) {
        const struct lf_tmpl_part *part = &t->parts[i];
        struct lf_str v;
        if (!part->field)
            err = lf_json_escape(out, lf_str_make(part->text, part->len));
        else if (!lf_fields_find(event, part->text, part->len, &v) || is_null(v))
            continue;
        else if (v.len >= 2 && v.ptr[0] == '"') /* escaped already */
            err = lf_buf_append(out, v.ptr + 1, v.len - 2);
        else
            err = lf_json_escape(out, v);
    }
    return err;
}

/* ---- JSON text inside a JSON string ---- */

enum lf_err lf_json_quote_json(struct lf_buf *out, struct lf_str json)
{
    const unsigned char *p = (const unsigned char *)json.ptr;
    size_t n = json.len;
    size_t start = out->len;
    size_t i = 0;
    enum lf_err err = LF_OK;
    while (i < n && !err) {
        /* Room for the rest with every byte a quote: writes below need no check. */
        if (lf_buf_avail(out) < 2 * (n - i) && (err = lf_buf_grow(out, 2 * (n - i))) != LF_OK)
            break;
        char *o = out->ptr + out->len;
        unsigned char c = 0;
        for (;;) {
#ifdef __SSE2__
            /* 16 bytes stored whole, then the output moves past the plain ones: o is never
             * more than 2 * i past the start, so the store stays within the room made. */
            while (n - i >= 16) {
                __m128i v = _mm_loadu_si128((const __m128i *)(const void *)(p + i));
                _mm_storeu_si128((__m128i *)(void *)o, v);
                unsigned m = lf_json_special_mask(v);
                if (m != 0) {
                    size_t k = (size_t)__builtin_ctz(m);
                    o += k;
                    i += k;
                    break;
                }
                o += 16;
                i += 16;
            }
#endif
            while (i < n && !lf_json_special_byte((char)p[i]))
                *o++ = (char)p[i++];
            if (i == n)
                break;
            c = p[i];
            if (c != '"' && c != '\\')
                break; /* a control character or 0xE2: the escaper's own way */
            *o++ = '\\';
            *o++ = (char)c;
            i++;
        }
        out->len = (size_t)(o - out->ptr);
        if (i < n) { /* c < 0x20: \u00XX; 0xE2: U+2028/9 escaped, else its 3 bytes as they are */
            size_t len = c == 0xe2 && n - i >= 3 ? 3 : 1;
            err = lf_json_escape(out, lf_str_make(json.ptr + i, len));
            i += len;
        }
    }
    if (err)
        out->len = start;
    return err;
}

enum lf_err lf_buf_append_i64(struct lf_buf *out, int64_t v)
{
    char d[24];
    size_t k = sizeof(d);
    uint64_t u = v < 0 ? (uint64_t)0 - (uint64_t)v : (uint64_t)v;
    do {
        d[--k] = (char)('0' + u % 10);
        u /= 10;
    } while (u != 0);
    if (v < 0)
        d[--k] = '-';
    return lf_buf_append(out, d + k, sizeof(d) - k);
}
