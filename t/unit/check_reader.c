/* check_reader.c - the line reader: splitting, decoding, offsets, limits, memory. */
#include "config.h"

#include "logferry/reader.h"

#include <check.h>
#include <fcntl.h>
#include <iconv.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define MAX_LINES 64

/* Everything a run of the reader handed out, for comparing runs. */
struct rec {
    int n;
    char *text[MAX_LINES]; /* owned copies */
    size_t len[MAX_LINES];
    uint64_t off[MAX_LINES];
    uint64_t end[MAX_LINES];
    unsigned flags[MAX_LINES];
    struct lf_reader_stats stats;
    size_t temp_cap;
};

static void rec_add(struct rec *out, const struct lf_line *line)
{
    ck_assert_int_lt(out->n, MAX_LINES);
    int i = out->n++;
    out->text[i] = malloc(line->text.len + 1);
    ck_assert_ptr_nonnull(out->text[i]);
    memcpy(out->text[i], line->text.ptr, line->text.len);
    out->len[i] = line->text.len;
    out->off[i] = line->offset;
    out->end[i] = line->end_offset;
    out->flags[i] = line->flags;
}

static void rec_release(struct rec *out)
{
    for (int i = 0; i < out->n; i++)
        free(out->text[i]);
    memset(out, 0, sizeof(*out));
}

static void drain(struct lf_reader *r, struct rec *out)
{
    struct lf_line line;
    enum lf_err err;
    while ((err = lf_reader_next(r, &line)) == LF_OK)
        rec_add(out, &line);
    ck_assert_int_eq(err, LF_EAGAIN);
}

static void finish(struct lf_reader *r, struct rec *out)
{
    struct lf_line line;
    enum lf_err err;
    while ((err = lf_reader_finish(r, &line)) == LF_OK)
        rec_add(out, &line);
    ck_assert_int_eq(err, LF_EOF);
    /* The final line comes back once only. */
    ck_assert_int_eq(lf_reader_finish(r, &line), LF_EOF);
    out->stats = *lf_reader_stats(r);
    out->temp_cap = lf_reader_temp_cap(r);
}

static struct lf_reader *reader_new(const struct lf_reader_opts *o)
{
    struct lf_reader *r = NULL;
    struct lf_errbuf eb = { "" };
    ck_assert_int_eq(lf_reader_new(o, &r, &eb), LF_OK);
    ck_assert_ptr_nonnull(r);
    return r;
}

/* Feeds src in chunks of `step` bytes (step > 0) or in two chunks cut at `cut`. */
static void drive(const struct lf_reader_opts *o,
                  const char *src,
                  size_t n,
                  size_t step,
                  size_t cut,
                  struct rec *out)
{
    struct lf_reader *r = reader_new(o);
    size_t at = 0;
    while (at < n) {
        size_t stop = n;
        if (step > 0)
            stop = at + step < n ? at + step : n;
        else if (at < cut)
            stop = cut;
        while (at < stop) {
            at += lf_reader_feed(r, src + at, stop - at);
            drain(r, out);
        }
    }
    finish(r, out);
    lf_reader_free(r);
}

static void rec_assert_same(const struct rec *a, const struct rec *b)
{
    ck_assert_int_eq(a->n, b->n);
    for (int i = 0; i < a->n; i++) {
        ck_assert_uint_eq(a->len[i], b->len[i]);
        ck_assert_mem_eq(a->text[i], b->text[i], a->len[i]);
        ck_assert_uint_eq(a->off[i], b->off[i]);
        ck_assert_uint_eq(a->end[i], b->end[i]);
        ck_assert_uint_eq(a->flags[i], b->flags[i]);
    }
    ck_assert_uint_eq(a->stats.lines, b->stats.lines);
    ck_assert_uint_eq(a->stats.truncated, b->stats.truncated);
    ck_assert_uint_eq(a->stats.skipped, b->stats.skipped);
    ck_assert_uint_eq(a->stats.invalid_bytes, b->stats.invalid_bytes);
    ck_assert_uint_eq(a->stats.bytes, b->stats.bytes);
}

/* Converts UTF-8 text to enc with iconv; returns a new buffer (free()) and its length. */
static char *to_enc(const char *enc, const char *utf8, size_t *out_len)
{
    if (strcmp(enc, "utf-8") == 0) {
        *out_len = strlen(utf8);
        return strdup(utf8);
    }
    iconv_t cd = iconv_open(enc, "UTF-8");
    ck_assert_ptr_ne(cd, (iconv_t)-1);
    size_t cap = strlen(utf8) * 4 + 8;
    char *buf = malloc(cap);
    ck_assert_ptr_nonnull(buf);
    char *in = (char *)utf8;
    size_t in_left = strlen(utf8);
    char *out = buf;
    size_t out_left = cap;
    ck_assert_uint_ne(iconv(cd, &in, &in_left, &out, &out_left), (size_t)-1);
    iconv_close(cd);
    *out_len = cap - out_left;
    return buf;
}

/* The text is exactly `want` (a string literal): the same length and the same bytes, so a
 * shortened or lengthened text fails as well as a different one. */
#define assert_text(ptr, len, want)                        \
    do {                                                   \
        ck_assert_uint_eq((len), sizeof(want) - 1);        \
        ck_assert_mem_eq((ptr), (want), sizeof(want) - 1); \
    } while (0)

struct expect {
    const char *text;
    uint64_t off;
    uint64_t end;
    unsigned flags;
};

/* Runs src whole, then split in two at every position and byte at a time, and asserts
 * every run gives exactly `want`. */
static void check_all_splits(
    const struct lf_reader_opts *o, const char *src, size_t n, const struct expect *want, int nwant)
{
    struct lf_reader_opts big = *o;
    big.buffer_size = n + 16;
    struct rec ref = { 0 };
    drive(&big, src, n, 0, 0, &ref);
    ck_assert_int_eq(ref.n, nwant);
    for (int i = 0; i < nwant; i++) {
        ck_assert_uint_eq(ref.len[i], strlen(want[i].text));
        ck_assert_mem_eq(ref.text[i], want[i].text, ref.len[i]);
        ck_assert_uint_eq(ref.off[i], want[i].off);
        ck_assert_uint_eq(ref.end[i], want[i].end);
        ck_assert_uint_eq(ref.flags[i], want[i].flags);
    }
    for (size_t cut = 0; cut <= n; cut++) {
        struct rec got = { 0 };
        drive(&big, src, n, 0, cut, &got);
        rec_assert_same(&ref, &got);
        rec_release(&got);
    }
    struct lf_reader_opts small = *o;
    small.buffer_size = 16;
    for (size_t step = 1; step <= 3; step++) {
        struct rec got = { 0 };
        drive(&small, src, n, step, 0, &got);
        rec_assert_same(&ref, &got);
        rec_release(&got);
    }
    rec_release(&ref);
}

static struct lf_reader_opts opts_for(const char *enc)
{
    struct lf_reader_opts o = {
        .encoding = enc,
        .buffer_size = 64,
        .max_line_bytes = 1024,
        .overflow = LF_OVERFLOW_TRUNCATE,
        .start_offset = 0,
    };
    return o;
}

/* Mixed text: CRLF, empty lines, a lone CR kept, a final line without newline. */
static const char unicode_text[] = "ログ😀é\r\n\nabc\rdef\n\r\n表示ソ十\nlast行";
static const char sjis_text[] = "ログ一行目\r\n\nabc\rdef\n\r\n表示ソ十\nlast行";

static void check_mixed(const char *enc, const char *text, const struct expect *want)
{
    size_t n;
    char *src = to_enc(enc, text, &n);
    struct lf_reader_opts o = opts_for(enc);
    check_all_splits(&o, src, n, want, 6);
    free(src);
}

START_TEST(utf8_lines_are_identical_at_every_split)
{
    static const struct expect want[] = {
        { "ログ😀é", 0, 14, 0 }, { "", 14, 15, 0 },         { "abc\rdef", 15, 23, 0 },
        { "", 23, 25, 0 },      { "表示ソ十", 25, 38, 0 }, { "last行", 38, 45, 0 },
    };
    check_mixed("utf-8", unicode_text, want);
}
END_TEST

START_TEST(utf16le_lines_are_identical_at_every_split)
{
    static const struct expect want[] = {
        { "ログ😀é", 0, 14, 0 }, { "", 14, 16, 0 },         { "abc\rdef", 16, 32, 0 },
        { "", 32, 36, 0 },      { "表示ソ十", 36, 46, 0 }, { "last行", 46, 56, 0 },
    };
    check_mixed("UTF-16LE", unicode_text, want);
}
END_TEST

START_TEST(utf16be_lines_are_identical_at_every_split)
{
    static const struct expect want[] = {
        { "ログ😀é", 0, 14, 0 }, { "", 14, 16, 0 },         { "abc\rdef", 16, 32, 0 },
        { "", 32, 36, 0 },      { "表示ソ十", 36, 46, 0 }, { "last行", 46, 56, 0 },
    };
    check_mixed("UTF-16BE", unicode_text, want);
}
END_TEST

START_TEST(shift_jis_lines_are_identical_at_every_split)
{
    /* ソ, 表 and 十 end in a 0x5C byte: a newline search on bytes must not trip on them. */
    static const struct expect want[] = {
        { "ログ一行目", 0, 12, 0 }, { "", 12, 13, 0 },         { "abc\rdef", 13, 21, 0 },
        { "", 21, 23, 0 },          { "表示ソ十", 23, 32, 0 }, { "last行", 32, 38, 0 },
    };
    check_mixed("SHIFT_JIS", sjis_text, want);
}
END_TEST

/* max_line_bytes 10: lines of 9, 10 and 11 bytes, and one whose 3-byte character
 * straddles the cut. */
static const char limit_text[] = "123456789\n1234567890\n12345678901\nabcdefgh日\nok\n";

static void check_limits(const char *enc,
                         enum lf_line_overflow mode,
                         const struct expect *want,
                         int nwant,
                         uint64_t invalid)
{
    size_t n;
    char *src = to_enc(enc, limit_text, &n);
    struct lf_reader_opts o = opts_for(enc);
    o.max_line_bytes = 10;
    o.overflow = mode;
    check_all_splits(&o, src, n, want, nwant);
    struct rec r = { 0 };
    o.buffer_size = 16;
    drive(&o, src, n, 5, 0, &r);
    ck_assert_uint_eq(r.stats.truncated, mode == LF_OVERFLOW_TRUNCATE ? 2 : 0);
    ck_assert_uint_eq(r.stats.skipped, mode == LF_OVERFLOW_SKIP ? 2 : 0);
    ck_assert_uint_eq(r.stats.invalid_bytes, invalid);
    ck_assert_uint_le(r.temp_cap, 10);
    rec_release(&r);
    free(src);
}

START_TEST(utf8_long_lines_are_cut_at_a_character_boundary)
{
    static const struct expect want[] = {
        { "123456789", 0, 10, 0 },
        { "1234567890", 10, 21, 0 },
        { "1234567890", 21, 33, LF_LINE_TRUNCATED },
        { "abcdefgh", 33, 45, LF_LINE_TRUNCATED },
        { "ok", 45, 48, 0 },
    };
    check_limits("utf-8", LF_OVERFLOW_TRUNCATE, want, 5, 0);
}
END_TEST

START_TEST(utf8_long_lines_are_dropped_in_skip_mode)
{
    static const struct expect want[] = {
        { "123456789", 0, 10, 0 },
        { "1234567890", 10, 21, 0 },
        { "ok", 45, 48, 0 },
    };
    check_limits("utf-8", LF_OVERFLOW_SKIP, want, 3, 0);
}
END_TEST

START_TEST(utf16le_limit_counts_decoded_utf8_bytes)
{
    static const struct expect want[] = {
        { "123456789", 0, 20, 0 },
        { "1234567890", 20, 42, 0 },
        { "1234567890", 42, 66, LF_LINE_TRUNCATED },
        { "abcdefgh", 66, 86, LF_LINE_TRUNCATED },
        { "ok", 86, 92, 0 },
    };
    check_limits("UTF-16LE", LF_OVERFLOW_TRUNCATE, want, 5, 0);
}
END_TEST

START_TEST(shift_jis_long_lines_are_dropped_in_skip_mode)
{
    static const struct expect want[] = {
        { "123456789", 0, 10, 0 },
        { "1234567890", 10, 21, 0 },
        { "ok", 44, 47, 0 },
    };
    check_limits("SHIFT_JIS", LF_OVERFLOW_SKIP, want, 3, 0);
}
END_TEST

START_TEST(lines_of_exactly_buffer_size_are_whole)
{
    /* 16 bytes with the newline, then 16 bytes without it. */
    static const char src[] = "abcdefghijklmno\nABCDEFGHIJKLMNOP\nz\n";
    static const struct expect want[] = {
        { "abcdefghijklmno", 0, 16, 0 },
        { "ABCDEFGHIJKLMNOP", 16, 33, 0 },
        { "z", 33, 35, 0 },
    };
    struct lf_reader_opts o = opts_for("utf-8");
    check_all_splits(&o, src, sizeof(src) - 1, want, 3);
    struct rec r = { 0 };
    o.buffer_size = 16;
    drive(&o, src, sizeof(src) - 1, 16, 0, &r);
    ck_assert_int_eq(r.n, 3);
    assert_text(r.text[1], r.len[1], "ABCDEFGHIJKLMNOP");
    rec_release(&r);
}
END_TEST

START_TEST(invalid_utf8_bytes_become_one_replacement_each)
{
    /* A stray 0xFF, a 3-byte sequence cut by the next byte, an overlong 'A', and an
     * incomplete sequence at the end of the line: 1 + 2 + 2 + 1 replacements. */
    static const char src[] = "a\xFF"
                              "b\xE2\x82q\xC1\x81x\xF0\n"
                              "ok\n";
    static const struct expect want[] = {
        { "a\xEF\xBF\xBD"
          "b\xEF\xBF\xBD\xEF\xBF\xBDq\xEF\xBF\xBD\xEF\xBF\xBDx\xEF\xBF\xBD",
          0, 11, 0 },
        { "ok", 11, 14, 0 },
    };
    struct lf_reader_opts o = opts_for("utf-8");
    check_all_splits(&o, src, sizeof(src) - 1, want, 2);
    struct rec r = { 0 };
    drive(&o, src, sizeof(src) - 1, 0, 0, &r);
    ck_assert_uint_eq(r.stats.invalid_bytes, 6);
    rec_release(&r);
}
END_TEST

/* The one-pass newline search knows which bytes are ASCII: a byte above 0x7F anywhere in a
 * line, before or after the bytes it looks at itself, still gets its UTF-8 check. */
START_TEST(utf8_non_ascii_bytes_are_checked_at_every_offset)
{
    static char src[1200];
    static char want[1200];
    struct lf_reader_opts o = opts_for("utf-8");
    const size_t lens[] = { 1, 15, 16, 17, 63, 64, 65, 100, 255, 256, 257, 300, 700 };
    for (size_t li = 0; li < sizeof(lens) / sizeof(lens[0]); li++) {
        size_t len = lens[li];
        for (size_t at = 0; at < len; at++) {
            for (int kind = 0; kind < 3; kind++) {
                /* kind 0: a stray 0xFF; 1: a valid 2-byte character; 2: CR LF after it */
                memset(src, 'a', len);
                size_t n = len;
                size_t wn = len;
                memset(want, 'a', len);
                if (kind == 0) {
                    src[at] = (char)0xFF;
                    memcpy(want + at, "\xEF\xBF\xBD", 3);
                    memset(want + at + 3, 'a', len - at - 1);
                    wn = len + 2;
                } else if (at + 1 < len) {
                    memcpy(src + at, "\xC3\xA9", 2);
                    memcpy(want + at, "\xC3\xA9", 2);
                }
                if (kind == 2)
                    src[n++] = '\r';
                memcpy(src + n, "\nz\n", 3);
                n += 3;
                struct rec r = { 0 };
                drive(&o, src, n, 0, 0, &r);
                ck_assert_int_eq(r.n, 2);
                ck_assert_msg(r.len[0] == wn && memcmp(r.text[0], want, wn) == 0,
                              "length %zu, byte at %zu, kind %d: %zu bytes back", len, at, kind,
                              r.len[0]);
                ck_assert_uint_eq(r.stats.invalid_bytes, kind == 0 ? 1 : 0);
                ck_assert_uint_eq(r.len[1], 1);
                rec_release(&r);
            }
        }
    }
}
END_TEST

START_TEST(invalid_utf16_units_become_one_replacement_each)
{
    /* "A", a lone high surrogate, "B", newline; then "C" and an odd byte at EOF. */
    static const char src[] = "A\0\x00\xD8"
                              "B\0\n\0"
                              "C\0x";
    static const struct expect want[] = {
        { "A\xEF\xBF\xBD"
          "B",
          0, 8, 0 },
        { "C\xEF\xBF\xBD", 8, 11, 0 },
    };
    struct lf_reader_opts o = opts_for("UTF-16LE");
    check_all_splits(&o, src, sizeof(src) - 1, want, 2);
    struct rec r = { 0 };
    drive(&o, src, sizeof(src) - 1, 0, 0, &r);
    ck_assert_uint_eq(r.stats.invalid_bytes, 2);
    rec_release(&r);
}
END_TEST

START_TEST(utf16_newline_byte_inside_a_character_does_not_split)
{
    /* U+0A0A is the bytes 0A 0A in either order; U+010A is 0A 01 in little-endian. */
    static const char src[] = "\x0A\x0A\x0A\x01\n\0";
    static const struct expect want[] = {
        { "\xE0\xA8\x8A\xC4\x8A", 0, 6, 0 },
    };
    struct lf_reader_opts o = opts_for("UTF-16LE");
    check_all_splits(&o, src, sizeof(src) - 1, want, 1);
}
END_TEST

START_TEST(utf8_bom_is_consumed_at_offset_zero_only)
{
    static const char src[] = "\xEF\xBB\xBFhi\nyo\n";
    static const struct expect want[] = {
        { "hi", 3, 6, 0 },
        { "yo", 6, 9, 0 },
    };
    struct lf_reader_opts o = opts_for("utf-8");
    check_all_splits(&o, src, sizeof(src) - 1, want, 2);

    o.start_offset = 100;
    struct rec r = { 0 };
    drive(&o, src, sizeof(src) - 1, 0, 0, &r);
    ck_assert_int_eq(r.n, 2);
    ck_assert_uint_eq(r.len[0], 5);
    ck_assert_mem_eq(r.text[0], "\xEF\xBB\xBFhi", 5);
    ck_assert_uint_eq(r.off[0], 100);
    ck_assert_uint_eq(r.end[1], 109);
    rec_release(&r);
}
END_TEST

START_TEST(utf16_bom_picks_the_byte_order)
{
    static const char be[] = "\xFE\xFF\0h\0i\0\n";
    static const char le[] = "\xFF\xFEh\0i\0\n\0";
    static const char none[] = "h\0i\0\n\0";
    static const struct expect with_bom[] = { { "hi", 2, 8, 0 } };
    static const struct expect without[] = { { "hi", 0, 6, 0 } };
    struct lf_reader_opts o = opts_for("utf-16");
    check_all_splits(&o, be, sizeof(be) - 1, with_bom, 1);
    check_all_splits(&o, le, sizeof(le) - 1, with_bom, 1);
    check_all_splits(&o, none, sizeof(none) - 1, without, 1);
    o = opts_for("UTF-16LE");
    check_all_splits(&o, le, sizeof(le) - 1, with_bom, 1);
}
END_TEST

START_TEST(a_bom_alone_is_not_a_line)
{
    static const char src[] = "\xEF\xBB\xBF";
    struct rec r = { 0 };
    struct lf_reader_opts o = opts_for("utf-8");
    drive(&o, src, 3, 1, 0, &r);
    ck_assert_int_eq(r.n, 0);
    /* Half a BOM at EOF is just two invalid bytes. */
    drive(&o, src, 2, 1, 0, &r);
    ck_assert_int_eq(r.n, 1);
    assert_text(r.text[0], r.len[0], "\xEF\xBF\xBD\xEF\xBF\xBD");
    rec_release(&r);
}
END_TEST

START_TEST(final_line_without_newline_comes_back_once_from_finish)
{
    struct lf_reader_opts o = opts_for("utf-8");
    struct lf_reader *r = reader_new(&o);
    struct lf_line line;
    ck_assert_uint_eq(lf_reader_feed(r, "one\ntwo", 7), 7);
    ck_assert_int_eq(lf_reader_next(r, &line), LF_OK);
    ck_assert_uint_eq(lf_reader_offset(r), 4);
    ck_assert_int_eq(lf_reader_next(r, &line), LF_EAGAIN);
    ck_assert_uint_eq(lf_reader_offset(r), 4);
    ck_assert_int_eq(lf_reader_finish(r, &line), LF_OK);
    ck_assert_uint_eq(line.text.len, 3);
    ck_assert_mem_eq(line.text.ptr, "two", 3);
    ck_assert_uint_eq(line.offset, 4);
    ck_assert_uint_eq(line.end_offset, 7);
    ck_assert_uint_eq(lf_reader_offset(r), 7);
    ck_assert_int_eq(lf_reader_finish(r, &line), LF_EOF);
    ck_assert_int_eq(lf_reader_finish(r, &line), LF_EOF);
    ck_assert_uint_eq(lf_reader_stats(r)->lines, 2);
    lf_reader_free(r);
}
END_TEST

START_TEST(trailing_cr_at_eof_is_kept)
{
    struct lf_reader_opts o = opts_for("utf-8");
    struct lf_reader *r = reader_new(&o);
    struct lf_line line;
    ck_assert_uint_eq(lf_reader_feed(r, "ab\r", 3), 3);
    ck_assert_int_eq(lf_reader_next(r, &line), LF_EAGAIN);
    ck_assert_int_eq(lf_reader_finish(r, &line), LF_OK);
    ck_assert_uint_eq(line.text.len, 3);
    ck_assert_mem_eq(line.text.ptr, "ab\r", 3);
    lf_reader_free(r);
}
END_TEST

START_TEST(lines_may_hold_nul_bytes)
{
    static const char src[] = "a\0b\n\0\n";
    static const struct expect want[] = {
        { "a", 0, 4, 0 }, /* text checked by length below */
        { "", 4, 6, 0 },
    };
    struct lf_reader_opts o = opts_for("utf-8");
    struct rec r = { 0 };
    drive(&o, src, sizeof(src) - 1, 1, 0, &r);
    ck_assert_int_eq(r.n, 2);
    ck_assert_uint_eq(r.len[0], 3);
    ck_assert_mem_eq(r.text[0], "a\0b", 3);
    ck_assert_uint_eq(r.off[0], want[0].off);
    ck_assert_uint_eq(r.end[0], want[0].end);
    ck_assert_uint_eq(r.len[1], 1);
    ck_assert_mem_eq(r.text[1], "\0", 1);
    ck_assert_uint_eq(r.end[1], want[1].end);
    rec_release(&r);
}
END_TEST

START_TEST(huge_line_keeps_memory_bounded)
{
    const size_t huge = 5 * 1024 * 1024;
    const size_t chunk = 4096;
    struct lf_reader_opts o = opts_for("utf-8");
    o.buffer_size = chunk;
    o.max_line_bytes = 1024;
    struct lf_reader *r = reader_new(&o);
    char *block = malloc(chunk);
    ck_assert_ptr_nonnull(block);
    memset(block, 'x', chunk);
    struct lf_line line;
    for (size_t fed = 0; fed < huge; fed += chunk) {
        ck_assert_uint_eq(lf_reader_feed(r, block, chunk), chunk);
        ck_assert_int_eq(lf_reader_next(r, &line), LF_EAGAIN);
        ck_assert_uint_le(lf_reader_temp_cap(r), 1024);
    }
    ck_assert_uint_eq(lf_reader_feed(r, "\nnext\n", 6), 6);
    ck_assert_int_eq(lf_reader_next(r, &line), LF_OK);
    ck_assert_uint_eq(line.text.len, 1024);
    ck_assert_uint_eq(line.flags, LF_LINE_TRUNCATED);
    ck_assert_uint_eq(line.offset, 0);
    ck_assert_uint_eq(line.end_offset, huge + 1);
    ck_assert_int_eq(lf_reader_next(r, &line), LF_OK);
    assert_text(line.text.ptr, line.text.len, "next");
    ck_assert_uint_eq(line.offset, huge + 1);
    ck_assert_uint_eq(line.end_offset, huge + 6);
    ck_assert_uint_le(lf_reader_temp_cap(r), 1024);
    ck_assert_uint_eq(lf_reader_stats(r)->truncated, 1);
    free(block);
    lf_reader_free(r);
}
END_TEST

START_TEST(huge_utf16_line_is_skipped_with_bounded_memory)
{
    const size_t units = 1024 * 1024;
    struct lf_reader_opts o = opts_for("UTF-16LE");
    o.buffer_size = 4096;
    o.max_line_bytes = 1024;
    o.overflow = LF_OVERFLOW_SKIP;
    struct lf_reader *r = reader_new(&o);
    struct lf_line line;
    static const char unit[2] = { '\xE5', '\x65' }; /* U+65E5, 3 bytes in UTF-8 */
    for (size_t i = 0; i < units; i++) {
        while (lf_reader_feed(r, unit, 2) == 0)
            ck_assert_int_eq(lf_reader_next(r, &line), LF_EAGAIN);
    }
    ck_assert_int_eq(lf_reader_next(r, &line), LF_EAGAIN);
    ck_assert_uint_le(lf_reader_temp_cap(r), 1024);
    ck_assert_uint_eq(lf_reader_feed(r, "\n\0z\0\n\0", 6), 6);
    ck_assert_int_eq(lf_reader_next(r, &line), LF_OK);
    ck_assert_uint_eq(line.text.len, 1);
    ck_assert_uint_eq(line.offset, units * 2 + 2);
    ck_assert_uint_eq(lf_reader_stats(r)->skipped, 1);
    lf_reader_free(r);
}
END_TEST

static void check_round_trip(const char *enc, const char *src, const char *utf8)
{
    struct lf_reader_opts o = opts_for(enc);
    struct expect want[1] = { { utf8, 0, strlen(src), 0 } };
    check_all_splits(&o, src, strlen(src), want, 1);
}

START_TEST(legacy_charsets_decode_to_known_utf8)
{
    check_round_trip("latin1", "caf\xE9\n", "café");
    check_round_trip("ISO-8859-1", "\xA9\xFF\r\n", "©ÿ");
    check_round_trip("cp1252", "\x80 \x93q\x94\n", "€ “q”");
    check_round_trip("gbk", "\xC4\xE3\xBA\xC3\n", "你好");
    check_round_trip("big5", "\xA7\x41\xA6\x6E\n", "你好");
    check_round_trip("euc-kr", "\xC7\xD1\xB1\xB9\n", "한국");
}
END_TEST

START_TEST(undefined_cp1252_byte_becomes_a_replacement)
{
    struct lf_reader_opts o = opts_for("cp1252");
    struct rec r = { 0 };
    drive(&o, "a\x81z\n", 4, 1, 0, &r);
    ck_assert_int_eq(r.n, 1);
    ck_assert_uint_eq(r.len[0], 5);
    ck_assert_mem_eq(r.text[0], "a\xEF\xBF\xBDz", 5);
    ck_assert_uint_eq(r.stats.invalid_bytes, 1);
    rec_release(&r);
}
END_TEST

START_TEST(unknown_encoding_is_rejected_with_its_name)
{
    struct lf_reader_opts o = opts_for("klingon-8");
    struct lf_reader *r = NULL;
    struct lf_errbuf eb = { "" };
    ck_assert_int_eq(lf_reader_new(&o, &r, &eb), LF_EINVAL);
    ck_assert_ptr_null(r);
    ck_assert_str_eq(eb.msg, "unknown encoding \"klingon-8\": iconv cannot decode it");
}
END_TEST

START_TEST(out_of_range_options_are_rejected)
{
    struct lf_reader_opts o = opts_for(NULL);
    struct lf_reader *r = NULL;
    struct lf_errbuf eb = { "" };
    o.buffer_size = 8;
    ck_assert_int_eq(lf_reader_new(&o, &r, &eb), LF_EINVAL);
    ck_assert_str_eq(eb.msg, "buffer_size 8 is below 16 bytes");
    o = opts_for(NULL);
    o.max_line_bytes = 3;
    ck_assert_int_eq(lf_reader_new(&o, &r, &eb), LF_EINVAL);
    ck_assert_str_eq(eb.msg, "max_line_bytes 3 is below 4 bytes");
}
END_TEST

START_TEST(short_valid_lines_point_into_the_input_buffer)
{
    struct lf_reader_opts o = opts_for("UTF8");
    struct lf_reader *r = reader_new(&o);
    struct lf_line line;
    ck_assert_uint_eq(lf_reader_feed(r, "abc\ndef\n", 8), 8);
    ck_assert_int_eq(lf_reader_next(r, &line), LF_OK);
    const char *first = line.text.ptr;
    ck_assert_int_eq(lf_reader_next(r, &line), LF_OK);
    ck_assert_ptr_eq(line.text.ptr, first + 4);
    ck_assert_uint_eq(lf_reader_temp_cap(r), 0);
    lf_reader_free(r);
}
END_TEST

static void read_file(const char *path, const char *enc, size_t buffer_size, struct rec *out)
{
    struct lf_reader_opts o = opts_for(enc);
    o.buffer_size = buffer_size;
    struct lf_reader *r = reader_new(&o);
    int fd = open(path, O_RDONLY);
    ck_assert_int_ge(fd, 0);
    struct lf_errbuf eb = { "" };
    enum lf_err err;
    while ((err = lf_reader_read_fd(r, fd, &eb)) == LF_OK)
        drain(r, out);
    ck_assert_int_eq(err, LF_EOF);
    finish(r, out);
    close(fd);
    lf_reader_free(r);
}

START_TEST(read_fd_reads_a_file_to_the_end)
{
    char path[] = "/tmp/check_reader_XXXXXX";
    int fd = mkstemp(path);
    ck_assert_int_ge(fd, 0);
    FILE *f = fdopen(fd, "w");
    ck_assert_ptr_nonnull(f);
    for (int i = 0; i < 1000; i++)
        fprintf(f, "line %04d\r\n", i);
    fputs("tail", f);
    fclose(f);
    for (size_t bs = 16; bs <= 4096; bs *= 16) {
        struct lf_reader_opts o = opts_for(NULL);
        o.buffer_size = bs;
        struct lf_reader *r = reader_new(&o);
        fd = open(path, O_RDONLY);
        ck_assert_int_ge(fd, 0);
        struct lf_errbuf eb = { "" };
        struct lf_line line;
        enum lf_err err;
        int n = 0;
        while ((err = lf_reader_read_fd(r, fd, &eb)) == LF_OK) {
            while ((err = lf_reader_next(r, &line)) == LF_OK) {
                char want[16];
                snprintf(want, sizeof(want), "line %04d", n);
                ck_assert_uint_eq(line.text.len, 9);
                ck_assert_mem_eq(line.text.ptr, want, 9);
                ck_assert_uint_eq(line.offset, (uint64_t)n * 11);
                ck_assert_uint_eq(line.end_offset, (uint64_t)n * 11 + 11);
                n++;
            }
            ck_assert_int_eq(err, LF_EAGAIN);
        }
        ck_assert_int_eq(err, LF_EOF);
        ck_assert_int_eq(n, 1000);
        ck_assert_int_eq(lf_reader_finish(r, &line), LF_OK);
        assert_text(line.text.ptr, line.text.len, "tail");
        ck_assert_uint_eq(line.end_offset, 11004);
        ck_assert_int_eq(lf_reader_finish(r, &line), LF_EOF);
        close(fd);
        lf_reader_free(r);
    }
    unlink(path);
}
END_TEST

START_TEST(utf16_fixture_file_is_read_with_its_bom)
{
    const char *dir = getenv("LF_TEST_DATA");
    ck_assert_ptr_nonnull(dir);
    char path[4096];
    snprintf(path, sizeof(path), "%s/reader/utf16le-bom.log", dir);
    struct rec r = { 0 };
    read_file(path, "utf-16", 16, &r);
    ck_assert_int_eq(r.n, 3);
    assert_text(r.text[0], r.len[0], "first line");
    ck_assert_uint_eq(r.off[0], 2);
    assert_text(r.text[1], r.len[1], "zweite Zeile: äöü");
    assert_text(r.text[2], r.len[2], "日本語");
    ck_assert_uint_eq(r.end[2], r.stats.bytes);
    rec_release(&r);
}
END_TEST

/* An input from fuzz_reader (crash-84db0bd2, a harness bug: skipped lines move the resume
 * offset past the last line returned). */
START_TEST(utf16_lines_over_the_limit_are_skipped_in_tiny_chunks)
{
    static const char src[] = "\xfe\x88\xff\x68\x00\xe5\x0a\x00\x62\x4b\xde\x4a\xfe\x4b\x4b"
                              "\x00\x00\x00\x00\x00\x00\x4b\x4b\x4b\x4b\x4b\x4b";
    struct lf_reader_opts o = opts_for("utf-16");
    o.max_line_bytes = 4;
    o.overflow = LF_OVERFLOW_SKIP;
    struct rec r = { 0 };
    check_all_splits(&o, src, sizeof(src) - 1, NULL, 0);
    o.buffer_size = 20;
    drive(&o, src, sizeof(src) - 1, 3, 0, &r);
    ck_assert_int_eq(r.n, 0);
    ck_assert_uint_eq(r.stats.skipped, 2);
    ck_assert_uint_eq(r.stats.bytes, 27);
    rec_release(&r);
}
END_TEST

/* Found by fuzz_reader under UBSan: going over max_line_bytes while completing a character
 * carried from the previous chunk moved the input pointer backwards. */
START_TEST(surrogate_pair_over_the_limit_across_chunks_is_cut)
{
    static const char src[] = "a\0b\0\x3d\xd8\x00\xde\n\0z\0\n\0";
    static const struct expect want[] = {
        { "ab", 0, 10, LF_LINE_TRUNCATED },
        { "z", 10, 14, 0 },
    };
    struct lf_reader_opts o = opts_for("UTF-16LE");
    o.max_line_bytes = 4;
    check_all_splits(&o, src, sizeof(src) - 1, want, 2);
}
END_TEST

static Suite *reader_suite(void)
{
    Suite *s = suite_create("reader");
    TCase *tc = tcase_create("splitting");
    tcase_add_test(tc, utf8_lines_are_identical_at_every_split);
    tcase_add_test(tc, utf16le_lines_are_identical_at_every_split);
    tcase_add_test(tc, utf16be_lines_are_identical_at_every_split);
    tcase_add_test(tc, shift_jis_lines_are_identical_at_every_split);
    tcase_add_test(tc, utf16_newline_byte_inside_a_character_does_not_split);
    tcase_add_test(tc, lines_of_exactly_buffer_size_are_whole);
    tcase_add_test(tc, final_line_without_newline_comes_back_once_from_finish);
    tcase_add_test(tc, trailing_cr_at_eof_is_kept);
    tcase_add_test(tc, lines_may_hold_nul_bytes);
    tcase_add_test(tc, short_valid_lines_point_into_the_input_buffer);
    suite_add_tcase(s, tc);

    tc = tcase_create("limits");
    tcase_add_test(tc, utf8_long_lines_are_cut_at_a_character_boundary);
    tcase_add_test(tc, utf8_long_lines_are_dropped_in_skip_mode);
    tcase_add_test(tc, utf16le_limit_counts_decoded_utf8_bytes);
    tcase_add_test(tc, shift_jis_long_lines_are_dropped_in_skip_mode);
    tcase_add_test(tc, huge_line_keeps_memory_bounded);
    tcase_add_test(tc, huge_utf16_line_is_skipped_with_bounded_memory);
    tcase_add_test(tc, utf16_lines_over_the_limit_are_skipped_in_tiny_chunks);
    tcase_add_test(tc, surrogate_pair_over_the_limit_across_chunks_is_cut);
    suite_add_tcase(s, tc);

    tc = tcase_create("encodings");
    tcase_add_test(tc, invalid_utf8_bytes_become_one_replacement_each);
    tcase_add_test(tc, utf8_non_ascii_bytes_are_checked_at_every_offset);
    tcase_add_test(tc, invalid_utf16_units_become_one_replacement_each);
    tcase_add_test(tc, utf8_bom_is_consumed_at_offset_zero_only);
    tcase_add_test(tc, utf16_bom_picks_the_byte_order);
    tcase_add_test(tc, a_bom_alone_is_not_a_line);
    tcase_add_test(tc, legacy_charsets_decode_to_known_utf8);
    tcase_add_test(tc, undefined_cp1252_byte_becomes_a_replacement);
    tcase_add_test(tc, unknown_encoding_is_rejected_with_its_name);
    tcase_add_test(tc, out_of_range_options_are_rejected);
    suite_add_tcase(s, tc);

    tc = tcase_create("files");
    tcase_add_test(tc, read_fd_reads_a_file_to_the_end);
    tcase_add_test(tc, utf16_fixture_file_is_read_with_its_bom);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(reader_suite());
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
