/* fuzz_reader.c - libFuzzer target for the line reader.
 *
 * Input: byte 0 picks the encoding, byte 1 buffer_size, byte 2 max_line_bytes, byte 3 the
 * overflow mode (bit 0) and whether to feed through finish (bit 1), bytes 4-7 a cycle of
 * four chunk sizes (1-64); the rest is fed in those chunks. Invariants checked on every line:
 * length <= max_line_bytes, valid UTF-8, offsets strictly increasing, end_offset > offset,
 * lines do not overlap, and nothing points past the bytes fed. */
#include "config.h"

#include "logferry/reader.h"

#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const char *const encodings[] = {
    "utf-8", "utf-16le", "utf-16be", "utf-16", "shift_jis", "gbk", "latin1",
};

#define CHECK(cond)           \
    do {                      \
        if (!(cond))          \
            __builtin_trap(); \
    } while (0)

/* Strict UTF-8 check (no overlongs, surrogates or code points above U+10FFFF). */
static int valid_utf8(const unsigned char *p, size_t n)
{
    size_t i = 0;
    while (i < n) {
        unsigned c = p[i];
        size_t len = c < 0x80 ? 1 : c < 0xC2 ? 0 : c < 0xE0 ? 2 : c < 0xF0 ? 3 : c < 0xF5 ? 4 : 0;
        if (len == 0 || n - i < len)
            return 0;
        unsigned cp = len == 1 ? c : len == 2 ? c & 0x1F : len == 3 ? c & 0x0F : c & 0x07;
        for (size_t k = 1; k < len; k++) {
            if ((p[i + k] & 0xC0) != 0x80)
                return 0;
            cp = cp << 6 | (p[i + k] & 0x3F);
        }
        if ((len == 3 && cp < 0x800) || (len == 4 && (cp < 0x10000 || cp > 0x10FFFF)) ||
            (cp >= 0xD800 && cp <= 0xDFFF))
            return 0;
        i += len;
    }
    return 1;
}

struct state {
    size_t max;
    uint64_t last_end;
    uint64_t fed;
    int lines;
};

static void check_line(struct state *st, const struct lf_line *line)
{
    CHECK(line->text.len <= st->max);
    CHECK(line->text.len == 0 || line->text.ptr != NULL);
    CHECK(valid_utf8((const unsigned char *)line->text.ptr, line->text.len));
    CHECK(line->end_offset > line->offset);
    CHECK(line->offset >= st->last_end);
    CHECK(st->lines == 0 || line->offset > st->last_end - 1);
    CHECK(line->end_offset <= st->fed);
    st->last_end = line->end_offset;
    st->lines++;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 8)
        return 0;
    struct lf_reader_opts o = {
        .encoding = encodings[data[0] % (sizeof(encodings) / sizeof(encodings[0]))],
        .buffer_size = 16 + (size_t)data[1] * 4,
        .max_line_bytes = 4 + (size_t)data[2] * 2,
        .overflow = (data[3] & 1) ? LF_OVERFLOW_SKIP : LF_OVERFLOW_TRUNCATE,
        .start_offset = 0,
    };
    size_t chunks[4];
    for (int i = 0; i < 4; i++)
        chunks[i] = 1 + data[4 + i] % 64;
    const uint8_t *p = data + 8;
    size_t n = size - 8;

    struct lf_reader *r = NULL;
    struct lf_errbuf eb = { "" };
    CHECK(lf_reader_new(&o, &r, &eb) == LF_OK);
    struct state st = { o.max_line_bytes, 0, 0, 0 };
    struct lf_line line;
    size_t at = 0;
    for (int k = 0; at < n; k = (k + 1) % 4) {
        size_t want = chunks[k] < n - at ? chunks[k] : n - at;
        size_t took = lf_reader_feed(r, p + at, want);
        at += took;
        st.fed += took;
        enum lf_err err;
        while ((err = lf_reader_next(r, &line)) == LF_OK)
            check_line(&st, &line);
        CHECK(err == LF_EAGAIN);
        /* Skipped lines move the resume offset too. */
        CHECK(lf_reader_offset(r) >= st.last_end && lf_reader_offset(r) <= st.fed);
    }
    if (data[3] & 2) {
        enum lf_err err;
        while ((err = lf_reader_finish(r, &line)) == LF_OK)
            check_line(&st, &line);
        CHECK(err == LF_EOF);
        CHECK(lf_reader_finish(r, &line) == LF_EOF);
    }
    const struct lf_reader_stats *stats = lf_reader_stats(r);
    CHECK(stats->bytes == n);
    CHECK(stats->lines == (uint64_t)st.lines);
    CHECK(lf_reader_temp_cap(r) <= o.max_line_bytes);
    lf_reader_free(r);
    return 0;
}
