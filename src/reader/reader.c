/* reader.c - the encoding-aware line reader: input buffer, newline splitting, offsets.
 *
 *   fd / caller bytes --> in[pos..end) --split on the newline code unit--> line bytes
 *        line inside `in`, UTF-8, valid, short enough: returned as a pointer into `in`
 *        otherwise: decoded chunk by chunk into tmp (decode.c) and returned from there
 *
 * Splitting happens on SOURCE bytes, so offsets are exact source offsets in every encoding.
 * At creation "\n" and "\r" are converted with iconv to learn the newline code unit and its
 * width (1 byte in UTF-8 and every ASCII-compatible charset, where a 0x0A byte is always a
 * newline; 2 in UTF-16; 4 in UTF-32). Wider units are matched only at unit-aligned
 * positions counted from the line start, so a 0x0A byte inside a UTF-16 character never
 * splits a line; a unit cut by the chunk end waits in r->part.
 *
 * "\r\n" loses its "\r": a CR unit at the end of a chunk is held back (r->cr_held) until the
 * next unit shows whether it precedes the newline.
 *
 * "utf-16" without a BOM is read as little-endian (what Windows writes); an FF FE or FE FF
 * BOM at offset 0 picks the byte order. A BOM is consumed only when start_offset is 0;
 * offsets still count its bytes, so the first line starts at offset 2 (UTF-16) or 3 (UTF-8). */
#include "config.h"

#include "logferry/reader.h"

#include <ctype.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#ifdef __SSE2__
#include <emmintrin.h>
#endif

#include "logferry/utf8.h"
#include "reader_int.h"

enum scan_result {
    SCAN_MORE, /* all bytes consumed, the line goes on */
    SCAN_LINE, /* a line is in *line */
    SCAN_SKIP, /* a line ended and was dropped (overflow skip) */
};

/* Lower-cases name and drops '-' and '_' into out, so "UTF-8", "utf8" and "Utf_8" match. */
static void normalize(const char *name, char *out, size_t cap)
{
    size_t n = 0;
    for (; *name != '\0' && n + 1 < cap; name++) {
        if (*name != '-' && *name != '_')
            out[n++] = (char)tolower((unsigned char)*name);
    }
    out[n] = '\0';
}

/* Converts one ASCII character to the source encoding to learn its code unit. */
static size_t encode_unit(const char *enc, char c, unsigned char unit[4])
{
    iconv_t cd = iconv_open(enc, "UTF-8");
    if (cd == (iconv_t)-1)
        return 0;
    char src[1] = { c };
    char dst[16];
    char *in = src;
    size_t in_left = 1;
    char *out = dst;
    size_t out_left = sizeof(dst);
    size_t rc = iconv(cd, &in, &in_left, &out, &out_left);
    size_t n = sizeof(dst) - out_left;
    iconv_close(cd);
    if (rc == (size_t)-1 || (n != 1 && n != 2 && n != 4))
        return 0;
    memcpy(unit, dst, n);
    return n;
}

static enum lf_err setup_iconv(struct lf_reader *r, const char *name, struct lf_errbuf *eb)
{
    char norm[32];
    normalize(name, norm, sizeof(norm));
    const char *enc = name;
    if (strcmp(norm, "utf16") == 0) {
        enc = "UTF-16LE";
        r->bom = LF_READER_BOM_UTF16;
    } else if (strcmp(norm, "utf16le") == 0) {
        r->bom = LF_READER_BOM_UTF16LE;
    } else if (strcmp(norm, "utf16be") == 0) {
        r->bom = LF_READER_BOM_UTF16BE;
    }
    r->cd = iconv_open("UTF-8", enc);
    if (r->cd == (iconv_t)-1) {
        int e = errno;
        if (e == EINVAL)
            return lf_fail(eb, LF_EINVAL, "unknown encoding \"%s\": iconv cannot decode it", name);
        return lf_fail(eb, lf_err_from_errno(e), "iconv_open %s: %s", name, lf_strerror(e));
    }
    if (r->bom == LF_READER_BOM_UTF16) {
        r->cd_be = iconv_open("UTF-8", "UTF-16BE");
        if (r->cd_be == (iconv_t)-1)
            return lf_fail(eb, LF_ENOMEM, "iconv_open UTF-16BE: %s", lf_strerror(errno));
    }
    r->unit = encode_unit(enc, '\n', r->nl);
    size_t cr_unit = encode_unit(enc, '\r', r->cr);
    if (r->unit == 0 || cr_unit != r->unit)
        return lf_fail(eb, LF_EINVAL, "encoding \"%s\" has no fixed-width newline", name);
    return LF_OK;
}

enum lf_err
lf_reader_new(const struct lf_reader_opts *opts, struct lf_reader **out, struct lf_errbuf *eb)
{
    *out = NULL;
    if (opts->buffer_size < 16)
        return lf_fail(eb, LF_EINVAL, "buffer_size %zu is below 16 bytes", opts->buffer_size);
    if (opts->max_line_bytes < 4)
        return lf_fail(eb, LF_EINVAL, "max_line_bytes %zu is below 4 bytes", opts->max_line_bytes);
    struct lf_reader *r = calloc(1, sizeof(*r));
    if (r == NULL)
        return lf_fail(eb, LF_ENOMEM, "out of memory for a line reader");
    r->cd = (iconv_t)-1;
    r->cd_be = (iconv_t)-1;
    r->buffer_size = opts->buffer_size;
    r->max_line_bytes = opts->max_line_bytes;
    r->overflow = opts->overflow;
    r->in_off = opts->start_offset;
    r->done = opts->start_offset;
    lf_buf_init(&r->tmp, opts->max_line_bytes);
    enum lf_err err = LF_OK;
    r->in = malloc(opts->buffer_size);
    if (r->in == NULL) {
        err = lf_fail(eb, LF_ENOMEM, "out of memory for a %zu-byte read buffer", opts->buffer_size);
        goto fail;
    }
    char norm[32];
    normalize(opts->encoding != NULL ? opts->encoding : "utf-8", norm, sizeof(norm));
    if (strcmp(norm, "utf8") == 0 || norm[0] == '\0') {
        r->utf8 = true;
        r->unit = 1;
        r->nl[0] = '\n';
        r->cr[0] = '\r';
        r->bom = LF_READER_BOM_UTF8;
    } else {
        err = setup_iconv(r, opts->encoding, eb);
        if (err)
            goto fail;
    }
    r->bom_check = r->bom != LF_READER_BOM_NONE && opts->start_offset == 0;
    *out = r;
    return LF_OK;
fail:
    lf_reader_free(r);
    return err;
}

void lf_reader_free(struct lf_reader *r)
{
    if (r == NULL)
        return;
    if (r->cd != (iconv_t)-1)
        iconv_close(r->cd);
    if (r->cd_be != (iconv_t)-1)
        iconv_close(r->cd_be);
    lf_buf_release(&r->tmp);
    free(r->in);
    free(r);
}

/* Frees room at the end of the input buffer: everything scanned is dropped. */
static void make_room(struct lf_reader *r)
{
    if (r->pos == r->end) {
        r->pos = 0;
        r->end = 0;
    } else if (r->pos > 0) {
        memmove(r->in, r->in + r->pos, r->end - r->pos);
        r->end -= r->pos;
        r->pos = 0;
    }
}

size_t lf_reader_feed(struct lf_reader *r, const void *data, size_t n)
{
    make_room(r);
    size_t room = r->buffer_size - r->end;
    if (n > room)
        n = room;
    if (n > 0)
        memcpy(r->in + r->end, data, n);
    r->end += n;
    r->stats.bytes += n;
    return n;
}

enum lf_err lf_reader_read_fd(struct lf_reader *r, int fd, struct lf_errbuf *eb)
{
    make_room(r);
    size_t room = r->buffer_size - r->end;
    if (room == 0)
        return lf_fail(eb, LF_EINVAL, "read buffer is full: call lf_reader_next() first");
    ssize_t n = read(fd, r->in + r->end, room);
    if (n < 0) {
        int e = errno;
        if (e == EINTR)
            return LF_OK;
        if (e == EAGAIN || e == EWOULDBLOCK)
            return LF_EAGAIN;
        return lf_fail(eb, lf_err_from_errno(e), "read: %s", lf_strerror(e));
    }
    if (n == 0)
        return LF_EOF;
    r->end += (size_t)n;
    r->stats.bytes += (uint64_t)n;
    return LF_OK;
}

/* Looks for a BOM at offset 0. LF_EAGAIN: the bytes so far are a prefix of one. */
static enum lf_err check_bom(struct lf_reader *r, bool at_eof)
{
    static const unsigned char utf8_bom[3] = { 0xEF, 0xBB, 0xBF };
    static const unsigned char le_bom[2] = { 0xFF, 0xFE };
    static const unsigned char be_bom[2] = { 0xFE, 0xFF };
    const unsigned char *want[2] = { NULL, NULL };
    size_t len = 2;
    if (r->bom == LF_READER_BOM_UTF8) {
        want[0] = utf8_bom;
        len = 3;
    } else {
        if (r->bom != LF_READER_BOM_UTF16BE)
            want[0] = le_bom;
        if (r->bom != LF_READER_BOM_UTF16LE)
            want[1] = be_bom;
    }
    size_t n = r->end - r->pos;
    const unsigned char *p = (const unsigned char *)r->in + r->pos;
    for (int i = 0; i < 2; i++) {
        if (want[i] == NULL)
            continue;
        if (n >= len && memcmp(p, want[i], len) == 0) {
            r->pos += len;
            r->in_off += len;
            r->bom_check = false;
            if (want[i] == be_bom && r->bom == LF_READER_BOM_UTF16) {
                iconv_t le = r->cd;
                r->cd = r->cd_be;
                r->cd_be = le;
                r->nl[0] = 0;
                r->nl[1] = '\n';
                r->cr[0] = 0;
                r->cr[1] = '\r';
            }
            return LF_OK;
        }
        if (n < len && !at_eof && memcmp(p, want[i], n) == 0)
            return LF_EAGAIN;
    }
    r->bom_check = false;
    return LF_OK;
}

/* Whether the unit at p equals want (r->nl or r->cr). Once or twice per line: a byte
 * compare, since memcmp() of a variable 1 to 4 bytes is a call into a vector routine. */
static bool unit_eq(const struct lf_reader *r, const char *p, const unsigned char *want)
{
    const unsigned char *u = (const unsigned char *)p;
    if (r->unit == 1)
        return u[0] == want[0];
    for (size_t i = 0; i < r->unit; i++) {
        if (u[i] != want[i])
            return false;
    }
    return true;
}

/* Finds the newline unit in p[0..n) (n a multiple of the unit) at an aligned position. */
static const char *find_newline(const struct lf_reader *r, const char *p, size_t n)
{
    if (r->unit == 1)
        return memchr(p, r->nl[0], n);
    size_t k = r->nl[0] != 0 ? 0 : r->nl[1] != 0 ? 1 : r->nl[2] != 0 ? 2 : 3;
    size_t i = k;
    while (i < n) {
        const char *hit = memchr(p + i, r->nl[k], n - i);
        if (hit == NULL)
            return NULL;
        size_t start = (size_t)(hit - p) - k;
        if (start % r->unit == 0 && unit_eq(r, p + start, r->nl))
            return p + start;
        i = (size_t)(hit - p) + 1;
    }
    return NULL;
}

/* Bytes find_newline_ascii() looks at itself; a line longer than that is left to memchr()
 * and the UTF-8 check, which are faster over long runs (reader_bench: 1,020-byte lines
 * took 15% longer through the one pass, 100-byte lines 19% less). */
#define ONE_PASS_BYTES 256

/* UTF-8: the first '\n' in p[0..n), or NULL, and in *ascii how many bytes from p on are
 * known to be below 0x80 (complete characters: the UTF-8 check may start after them); all
 * of them up to the newline means the line needs no check. One pass where memchr and the
 * UTF-8 check made two; with SSE2 (part of x86-64), 64 then 16 bytes a step. */
static const char *find_newline_ascii(const char *p, size_t n_all, size_t *ascii)
{
    const unsigned char *u = (const unsigned char *)p;
    size_t n = n_all < ONE_PASS_BYTES ? n_all : ONE_PASS_BYTES;
    size_t i = 0;
    unsigned high = 0;
#ifdef __SSE2__
    const __m128i nl = _mm_set1_epi8('\n');
    for (; n - i >= 64; i += 64) { /* no newline in 64 bytes: one test */
        const __m128i *q = (const __m128i *)(const void *)(u + i);
        __m128i v0 = _mm_loadu_si128(q), v1 = _mm_loadu_si128(q + 1);
        __m128i v2 = _mm_loadu_si128(q + 2), v3 = _mm_loadu_si128(q + 3);
        __m128i e = _mm_or_si128(_mm_or_si128(_mm_cmpeq_epi8(v0, nl), _mm_cmpeq_epi8(v1, nl)),
                                 _mm_or_si128(_mm_cmpeq_epi8(v2, nl), _mm_cmpeq_epi8(v3, nl)));
        if (_mm_movemask_epi8(e) != 0)
            break; /* found in the 16-byte steps below */
        high |=
            (unsigned)_mm_movemask_epi8(_mm_or_si128(_mm_or_si128(v0, v1), _mm_or_si128(v2, v3)));
    }
    for (; n - i >= 16; i += 16) {
        __m128i v = _mm_loadu_si128((const __m128i *)(const void *)(u + i));
        unsigned hit = (unsigned)_mm_movemask_epi8(_mm_cmpeq_epi8(v, nl));
        unsigned hi = (unsigned)_mm_movemask_epi8(v);
        if (hit != 0) {
            unsigned below = (hit & -hit) - 1; /* the bytes before the first newline */
            size_t at = i + (size_t)__builtin_ctz(hit);
            *ascii = high == 0 && (hi & below) == 0 ? at : 0;
            return p + at;
        }
        high |= hi;
    }
#endif
    for (; i < n; i++) {
        if (u[i] == '\n') {
            *ascii = high == 0 ? i : 0;
            return p + i;
        }
        high |= u[i] & 0x80u;
    }
    *ascii = high == 0 ? n : 0;
    return n == n_all ? NULL : memchr(p + n, '\n', n_all - n);
}

static bool is_cr(const struct lf_reader *r, const char *p)
{
    return unit_eq(r, p, r->cr);
}

/* Ends the current line at source offset end_off: fills *line, or drops it (skip). */
static enum scan_result end_line(struct lf_reader *r, struct lf_line *line, uint64_t end_off)
{
    bool over = r->overflowed;
    line->offset = r->line_off;
    line->end_offset = end_off;
    line->flags = 0;
    line->text = lf_str_make(r->tmp.ptr != NULL ? r->tmp.ptr : "", r->tmp.len);
    r->in_line = false;
    r->overflowed = false;
    r->cr_held = false;
    r->part_len = 0;
    r->carry_len = 0;
    lf_buf_reset(&r->tmp); /* the bytes stay readable until the next call */
    if (!r->utf8)
        iconv(r->cd, NULL, NULL, NULL, NULL);
    r->done = end_off;
    if (over && r->overflow == LF_OVERFLOW_SKIP) {
        r->stats.skipped++;
        return SCAN_SKIP;
    }
    if (over) {
        line->flags = LF_LINE_TRUNCATED;
        r->stats.truncated++;
    }
    r->stats.lines++;
    return SCAN_LINE;
}

/* Releases a held CR as line content, since something other than the newline follows. */
static enum lf_err release_cr(struct lf_reader *r)
{
    if (!r->cr_held)
        return LF_OK;
    r->cr_held = false;
    return lf_reader__put(r, "\r", 1);
}

/* Consumes p[0..n) (a whole number of units; p_off its source offset) up to and including
 * the next newline unit. *used: bytes consumed. */
static enum lf_err scan(struct lf_reader *r,
                        const char *p,
                        size_t n,
                        uint64_t p_off,
                        struct lf_line *line,
                        size_t *used,
                        enum scan_result *res)
{
    *used = 0; /* an early failure consumes nothing: the caller adds *used to its position */
    size_t w = r->unit;
    size_t ascii = 0; /* p[0..ascii) is known to be ASCII */
    /* Only a line that starts here can take the fast path, so only it gains by the one pass. */
    const char *nl = r->utf8 && w == 1 && r->line_off == p_off ? find_newline_ascii(p, n, &ascii)
                                                               : find_newline(r, p, n);
    enum lf_err err;
    if (nl == NULL) {
        err = release_cr(r);
        if (err)
            return err;
        bool hold = is_cr(r, p + n - w);
        /* A held CR ends the bytes decoded, so an incomplete character before it is
         * invalid: decode as at the end of a line and leave nothing in the carry. */
        err = lf_reader__decode(r, p, hold ? n - w : n, hold);
        r->cr_held = hold;
        *used = n;
        *res = SCAN_MORE;
        return err;
    }
    size_t seg = (size_t)(nl - p);
    *used = seg + w;
    if (seg > 0) {
        err = release_cr(r);
        if (err)
            return err;
        if (seg >= w && is_cr(r, nl - w))
            seg -= w;
    }
    /* seg == 0: a CR held right before this newline is dropped (end_line() clears it). */
    if (r->utf8 && r->line_off == p_off && seg <= r->max_line_bytes &&
        (seg <= ascii || lf_utf8_valid_len(p + ascii, seg - ascii) == seg - ascii)) {
        /* The fast path: the whole line is here and needs no decoding. */
        *res = end_line(r, line, p_off + *used);
        line->text = lf_str_make(p, seg);
        return LF_OK;
    }
    err = lf_reader__decode(r, p, seg, true);
    if (err)
        return err;
    *res = end_line(r, line, p_off + *used);
    return LF_OK;
}

/* Completes a code unit cut by the previous chunk end and scans it. */
static enum lf_err scan_part(struct lf_reader *r, struct lf_line *line, enum scan_result *res)
{
    size_t take = r->unit - r->part_len;
    if (take > r->end - r->pos)
        take = r->end - r->pos;
    memcpy(r->part + r->part_len, r->in + r->pos, take);
    r->part_len += take;
    r->pos += take;
    r->in_off += take;
    *res = SCAN_MORE;
    if (r->part_len < r->unit)
        return LF_OK;
    char unit[4];
    memcpy(unit, r->part, r->unit);
    r->part_len = 0;
    size_t used;
    return scan(r, unit, r->unit, r->in_off - r->unit, line, &used, res);
}

enum lf_err lf_reader_next(struct lf_reader *r, struct lf_line *line)
{
    for (;;) {
        if (r->bom_check && r->pos < r->end) {
            enum lf_err err = check_bom(r, false);
            if (err)
                return err;
        }
        if (r->pos == r->end) {
            r->pos = 0;
            r->end = 0;
            return LF_EAGAIN;
        }
        if (!r->in_line) {
            r->in_line = true;
            r->line_off = r->in_off;
        }
        enum scan_result res;
        enum lf_err err;
        size_t n = r->end - r->pos;
        if (r->part_len > 0) {
            err = scan_part(r, line, &res);
        } else if (n < r->unit) {
            memcpy(r->part, r->in + r->pos, n);
            r->part_len = n;
            r->pos += n;
            r->in_off += n;
            res = SCAN_MORE;
            err = LF_OK;
        } else {
            size_t used;
            err = scan(r, r->in + r->pos, n - n % r->unit, r->in_off, line, &used, &res);
            r->pos += used;
            r->in_off += used;
        }
        if (err)
            return err;
        if (res == SCAN_LINE)
            return LF_OK;
    }
}

enum lf_err lf_reader_finish(struct lf_reader *r, struct lf_line *line)
{
    if (r->bom_check && r->pos < r->end) {
        enum lf_err err = check_bom(r, true);
        if (err)
            return err;
    }
    enum lf_err err = lf_reader_next(r, line);
    if (err != LF_EAGAIN)
        return err;
    if (!r->in_line)
        return LF_EOF;
    err = lf_reader__decode(r, "", 0, true);
    if (!err)
        err = release_cr(r);
    for (size_t i = 0; !err && i < r->part_len; i += r->unit)
        err = lf_reader__replace(r); /* a unit cut by EOF is one invalid unit */
    if (err)
        return err;
    if (end_line(r, line, r->in_off) == SCAN_SKIP)
        return LF_EOF;
    return LF_OK;
}

uint64_t lf_reader_offset(const struct lf_reader *r)
{
    return r->done;
}

const struct lf_reader_stats *lf_reader_stats(const struct lf_reader *r)
{
    return &r->stats;
}

size_t lf_reader_temp_cap(const struct lf_reader *r)
{
    return r->tmp.cap;
}
