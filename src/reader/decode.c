/* decode.c - turns a line's source bytes into UTF-8 in the reader's temp buffer.
 *
 * Two decoders behind lf_reader__decode():
 *   - UTF-8: validate (eight bytes at a time while the text is ASCII), copy valid runs,
 *     replace each invalid byte with U+FFFD;
 *   - anything else: glibc iconv straight into the temp buffer, replacing each invalid
 *     code unit (one byte in byte-oriented charsets, two in UTF-16, four in UTF-32).
 * Both stop appending at max_line_bytes, at a character boundary, and then drop the rest of
 * the line. A character cut by the end of a chunk waits in r->carry (a few bytes), so a long
 * line is decoded as it arrives and its raw bytes are never held whole. */
#include "config.h"

#include <errno.h>
#include <string.h>

#include "logferry/utf8.h"
#include "reader_int.h"

static const char replacement[3] = { '\xEF', '\xBF', '\xBD' };

enum lf_err lf_reader__put(struct lf_reader *r, const void *p, size_t n)
{
    if (r->overflowed)
        return LF_OK;
    size_t room = r->max_line_bytes - r->tmp.len;
    if (n > room) {
        const unsigned char *s = p;
        /* Back off to the start of the character that does not fit. */
        while (room > 0 && (s[room] & 0xC0) == 0x80)
            room--;
        n = room;
        r->overflowed = true;
    }
    return lf_buf_append(&r->tmp, p, n);
}

enum lf_err lf_reader__replace(struct lf_reader *r)
{
    if (r->overflowed)
        return LF_OK;
    r->stats.invalid_bytes++;
    return lf_reader__put(r, replacement, sizeof(replacement));
}

/* Resolves a carried incomplete character with the first bytes of p. Advances *p, *n past
 * the bytes it used. */
static enum lf_err utf8_carry(struct lf_reader *r, const unsigned char **p, size_t *n, bool at_end)
{
    unsigned char stage[8];
    size_t had = r->carry_len;
    size_t take = *n < 4 - had ? *n : 4 - had;
    memcpy(stage, r->carry, had);
    memcpy(stage + had, *p, take);
    int len = lf_utf8_char(stage, had + take);
    if (len > 0) {
        /* A carried character is incomplete, so it needs at least one new byte. */
        *p += (size_t)len - had;
        *n -= (size_t)len - had;
        r->carry_len = 0;
        return lf_reader__put(r, stage, (size_t)len);
    }
    if (len == 0 && !at_end) {
        /* Still incomplete: all of p fits in the carry (fewer than 4 bytes). */
        memcpy(r->carry, stage, had + take);
        r->carry_len = had + take;
        *p += take;
        *n -= take;
        return LF_OK;
    }
    /* Invalid: the lead and each continuation byte after it are invalid one by one, exactly
     * as if the bytes had arrived in one piece. */
    r->carry_len = 0;
    for (size_t i = 0; i < had; i++) {
        enum lf_err err = lf_reader__replace(r);
        if (err)
            return err;
    }
    return LF_OK;
}

static enum lf_err decode_utf8(struct lf_reader *r, const unsigned char *p, size_t n, bool at_end)
{
    enum lf_err err = LF_OK;
    if (r->carry_len > 0) {
        err = utf8_carry(r, &p, &n, at_end);
        if (err || r->carry_len > 0)
            return err;
    }
    while (n > 0 && !r->overflowed) {
        size_t ok = lf_utf8_valid_len(p, n);
        err = lf_reader__put(r, p, ok);
        if (err)
            return err;
        p += ok;
        n -= ok;
        if (n == 0)
            break;
        if (lf_utf8_char(p, n) == 0 && !at_end) {
            memcpy(r->carry, p, n);
            r->carry_len = n;
            return LF_OK;
        }
        err = lf_reader__replace(r);
        if (err)
            return err;
        p++;
        n--;
    }
    return LF_OK;
}

/* Makes room in tmp for the decoding of about n more source bytes (at most 3 UTF-8 bytes per
 * source byte, plus a surrogate pair), never past max_line_bytes. */
static enum lf_err iconv_room(struct lf_reader *r, size_t n)
{
    size_t room = r->max_line_bytes - r->tmp.len;
    size_t want = n < room / 3 ? n * 3 + 4 : room;
    if (want > room)
        want = room;
    if (lf_buf_avail(&r->tmp) >= want)
        return LF_OK;
    return lf_buf_grow(&r->tmp, want);
}

/* Decodes *in with iconv until it is used up or ends in an incomplete character (kept in
 * *in unless flush, which makes it invalid). */
static enum lf_err iconv_run(struct lf_reader *r, char **in, size_t *left, bool flush)
{
    while (*left > 0 && !r->overflowed) {
        enum lf_err err = iconv_room(r, *left);
        if (err)
            return err;
        size_t room = r->max_line_bytes - r->tmp.len;
        size_t avail = lf_buf_avail(&r->tmp);
        char *out = r->tmp.ptr + r->tmp.len;
        size_t out_left = avail < room ? avail : room;
        size_t before = out_left;
        size_t rc = iconv(r->cd, in, left, &out, &out_left);
        int e = errno;
        r->tmp.len += before - out_left;
        if (rc != (size_t)-1)
            break;
        if (e == E2BIG) {
            if (avail < room) {
                err = lf_buf_grow(&r->tmp, avail + 1);
                if (err)
                    return err;
                continue;
            }
            r->overflowed = true;
            break;
        }
        if (e == EINVAL && !flush)
            break;
        /* EILSEQ, or an incomplete character at the end of the line: one U+FFFD per unit. */
        size_t skip = *left < r->unit ? *left : r->unit;
        *in += skip;
        *left -= skip;
        err = lf_reader__replace(r);
        if (err)
            return err;
    }
    return LF_OK;
}

/* Resolves carried bytes with the first bytes of *p, as utf8_carry() does. */
static enum lf_err iconv_carry(struct lf_reader *r, const char **p, size_t *n, bool at_end)
{
    char stage[2 * LF_READER_CARRY_MAX];
    size_t had = r->carry_len;
    size_t take = *n < sizeof(stage) - had ? *n : sizeof(stage) - had;
    memcpy(stage, r->carry, had);
    memcpy(stage + had, *p, take);
    char *in = stage;
    size_t left = had + take;
    enum lf_err err = iconv_run(r, &in, &left, at_end && take == *n);
    if (err)
        return err;
    size_t used = had + take - left;
    if (r->overflowed) {
        r->carry_len = 0; /* the rest of the line is dropped: leave p alone */
        return LF_OK;
    }
    if (used >= had) {
        r->carry_len = 0;
        *p += used - had;
        *n -= used - had;
        return LF_OK;
    }
    if (left <= LF_READER_CARRY_MAX) {
        memmove(r->carry, in, left);
        r->carry_len = left;
        *p += take;
        *n -= take;
        return LF_OK;
    }
    /* A "character" longer than the carry: no charset has one; drop a unit as invalid. */
    memmove(r->carry, stage + r->unit, had - r->unit);
    r->carry_len = had - r->unit;
    return lf_reader__replace(r);
}

static enum lf_err decode_iconv(struct lf_reader *r, const char *p, size_t n, bool at_end)
{
    while (r->carry_len > 0 && !r->overflowed) {
        size_t before = r->carry_len;
        enum lf_err err = iconv_carry(r, &p, &n, at_end);
        if (err)
            return err;
        if (r->carry_len > 0 && (n == 0 || r->carry_len == before))
            return LF_OK;
    }
    char *in = (char *)p; /* iconv's prototype lacks const; it does not write input */
    size_t left = n;
    while (!r->overflowed) {
        enum lf_err err = iconv_run(r, &in, &left, at_end);
        if (err)
            return err;
        if (left <= LF_READER_CARRY_MAX)
            break;
        /* Same impossible case as in iconv_carry(). */
        in += r->unit;
        left -= r->unit;
        err = lf_reader__replace(r);
        if (err)
            return err;
    }
    if (r->overflowed) {
        r->carry_len = 0;
        return LF_OK;
    }
    memcpy(r->carry, in, left);
    r->carry_len = left;
    return LF_OK;
}

enum lf_err lf_reader__decode(struct lf_reader *r, const char *p, size_t n, bool at_end)
{
    if (r->overflowed) {
        r->carry_len = 0;
        return LF_OK;
    }
    if (r->utf8)
        return decode_utf8(r, (const unsigned char *)p, n, at_end);
    return decode_iconv(r, p, n, at_end);
}
