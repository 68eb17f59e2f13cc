/* json.c - JSON string escaping for the event encoder.
 *
 * Most log text needs no escaping, so the loop finds the next byte that may need work and
 * copies the safe run before it with one memcpy. Eight bytes are tested at a time with the
 * usual "has a zero byte" bit trick; a word that may hold a special byte falls back to the
 * 256-entry table; on x86-64, SSE2 tests 16 bytes per step first. The special bytes are
 * control characters, '"', '\\' and 0xE2, the lead byte of U+2028 and U+2029, which are
 * valid in JSON but end a line in JavaScript. */
#include "config.h"

#include "logferry/event.h"
#include "logferry/jsonmask.h"
#include "logferry/utf8.h"

#include <stdint.h>
#include <string.h>
#ifdef __SSE2__
#include <emmintrin.h>
#endif

#define ONES  0x0101010101010101ull
#define HIGHS 0x8080808080808080ull

/* What a byte becomes: 0 = itself; 'u' = \u00XX; 'E' = maybe U+2028/2029; else \<c>. */
static const unsigned char escape_kind[256] = {
    ['\0'] = 'u', [0x01] = 'u', [0x02] = 'u', [0x03] = 'u',  [0x04] = 'u', [0x05] = 'u',
    [0x06] = 'u', [0x07] = 'u', ['\b'] = 'b', ['\t'] = 't',  ['\n'] = 'n', [0x0b] = 'u',
    ['\f'] = 'f', ['\r'] = 'r', [0x0e] = 'u', [0x0f] = 'u',  [0x10] = 'u', [0x11] = 'u',
    [0x12] = 'u', [0x13] = 'u', [0x14] = 'u', [0x15] = 'u',  [0x16] = 'u', [0x17] = 'u',
    [0x18] = 'u', [0x19] = 'u', [0x1a] = 'u', [0x1b] = 'u',  [0x1c] = 'u', [0x1d] = 'u',
    [0x1e] = 'u', [0x1f] = 'u', ['"'] = '"',  ['\\'] = '\\', [0xe2] = 'E',
};

static inline uint64_t has_zero(uint64_t x)
{
    return (x - ONES) & ~x & HIGHS;
}

/* Nonzero if any byte of w is < 0x20, '"', '\\' or 0xE2 (may report false positives). */
static inline uint64_t word_is_special(uint64_t w)
{
    uint64_t ctl = (w - ONES * 0x20) & ~w & HIGHS;
    return ctl | has_zero(w ^ (ONES * '"')) | has_zero(w ^ (ONES * '\\')) |
           has_zero(w ^ (ONES * 0xe2));
}

#ifdef __SSE2__
/* Bit i set if byte i of the 16 at p needs attention (jsonmask.h). */
static inline unsigned special_mask16(const unsigned char *p)
{
    return lf_json_special_mask(_mm_loadu_si128((const __m128i *)(const void *)p));
}
#endif

/* Length of the run of bytes at p that need no escaping. */
static inline __attribute__((always_inline)) size_t safe_run(const unsigned char *p, size_t n)
{
    size_t i = 0;
#ifdef __SSE2__
    /* 16 bytes per step (SSE2 is part of x86-64): exact, so the first set bit is the end. */
    while (n - i >= 16) {
        unsigned m = special_mask16(p + i);
        if (m != 0)
            return i + (size_t)__builtin_ctz(m);
        i += 16;
    }
    if (i < n && n >= 16) {
        /* The tail, with the 16 bytes that end at p + n: those before p + i are plain. */
        unsigned m = special_mask16(p + n - 16) >> (16 - (n - i));
        return m != 0 ? i + (size_t)__builtin_ctz(m) : n;
    }
#endif
    while (n - i >= 8) {
        uint64_t w;
        memcpy(&w, p + i, 8);
        if (word_is_special(w))
            break;
        i += 8;
    }
    while (i < n && escape_kind[p[i]] == 0)
        i++;
    return i;
}

/* Appends the escape for the special byte at p[0]; *used says how many bytes it covered. */
static enum lf_err append_escape(struct lf_buf *out, const unsigned char *p, size_t n, size_t *used)
{
    static const char hex[] = "0123456789abcdef";
    unsigned char kind = escape_kind[p[0]];
    char esc[6] = { '\\', 'u', '0', '0', hex[p[0] >> 4], hex[p[0] & 15] };
    *used = 1;
    if (kind == 'E') {
        if (n >= 3 && p[1] == 0x80 && (p[2] == 0xa8 || p[2] == 0xa9)) {
            *used = 3;
            return lf_buf_append(out, p[2] == 0xa8 ? "\\u2028" : "\\u2029", 6);
        }
        return lf_buf_append(out, p, 1);
    }
    if (kind == 'u')
        return lf_buf_append(out, esc, 6);
    esc[1] = (char)kind;
    return lf_buf_append(out, esc, 2);
}

size_t lf_json_plain_len(struct lf_str s)
{
    return safe_run((const unsigned char *)s.ptr, s.len);
}

enum lf_err lf_json_escape(struct lf_buf *out, struct lf_str s)
{
    const unsigned char *p = (const unsigned char *)s.ptr;
    size_t n = s.len;
    /* Reserve for the common case (nothing to escape) so the loop rarely grows. */
    if (lf_buf_avail(out) < n) {
        enum lf_err err = lf_buf_grow(out, n);
        if (err)
            return err;
    }
    size_t start = out->len;
    size_t i = 0;
    enum lf_err err = LF_OK;
    while (i < n && !err) {
        size_t run = safe_run(p + i, n - i);
        err = lf_buf_append(out, p + i, run);
        i += run;
        if (err || i == n)
            break;
        size_t used = 0;
        err = append_escape(out, p + i, n - i, &used);
        i += used;
    }
    if (err)
        out->len = start; /* leave out as it was, like lf_buf_append() */
    return err;
}

enum lf_err lf_json_escape_lossy(struct lf_buf *out, struct lf_str s)
{
    const unsigned char *p = (const unsigned char *)s.ptr;
    size_t start = out->len;
    size_t i = 0;
    enum lf_err err = LF_OK;
    while (i < s.len && !err) {
        size_t run = lf_utf8_valid_len(p + i, s.len - i);
        err = lf_json_escape(out, lf_str_make(s.ptr + i, run));
        i += run;
        if (err || i == s.len)
            break;
        err = lf_buf_append(out, "\xef\xbf\xbd", 3);
        i++;
    }
    if (err)
        out->len = start;
    return err;
}
