/* fuzz_jentry.c - libFuzzer target for the journal entry converter (src/input/jentry.c).
 *
 * The input: byte 0 picks max_line_bytes (4 to 67, or 1 MiB when its top bit is set),
 * byte 1 the settings (bit 0 line_overflow skip, bit 1 include "*", bit 2 include FOO and
 * _SYSTEMD_CGROUP, bit 3 exclude _PID, FOO and PRIORITY); the rest is entries separated by
 * 0x1D, each of items separated by 0x1E, run through one converter (so its caches carry
 * from entry to entry). Each entry must give: a message that is valid UTF-8, no longer than
 * max_line_bytes, equal to the first MESSAGE item made UTF-8 (one U+FFFD per bad byte), or
 * a prefix of it cut at a character boundary when truncated; an extra that is empty or,
 * inside braces, a JSON object with one "journald" object and no key twice. */
#include "config.h"

#include <jansson.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "logferry/jentry.h"
#include "logferry/utf8.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define ENTRY_SEP 0x1D
#define ITEM_SEP  0x1E

/* The first MESSAGE item's value made UTF-8, into want; false when there is none. */
static bool reference_message(const uint8_t *p, size_t n, struct lf_buf *want)
{
    size_t i = 0;
    while (i < n) {
        const uint8_t *end = memchr(p + i, ITEM_SEP, n - i);
        size_t len = end != NULL ? (size_t)(end - (p + i)) : n - i;
        if (len >= 8 && memcmp(p + i, "MESSAGE=", 8) == 0) {
            const uint8_t *v = p + i + 8;
            size_t vn = len - 8;
            for (size_t k = 0; k < vn;) {
                int c = lf_utf8_char(v + k, vn - k);
                enum lf_err err = c > 0 ? lf_buf_append(want, v + k, (size_t)c)
                                        : lf_buf_append(want, "\xef\xbf\xbd", 3);
                if (err)
                    abort();
                k += c > 0 ? (size_t)c : 1;
            }
            return true;
        }
        i += len + 1;
    }
    return false;
}

static void check_message(const struct lf_jentry_out *out, const struct lf_buf *want, size_t max)
{
    struct lf_str m = out->message;
    if (m.len > max || !lf_utf8_valid(m.ptr, m.len) || (out->truncated && out->skip))
        abort();
    if (out->skip) {
        if (m.len != 0 || want->len <= max)
            abort();
        return;
    }
    if (!out->truncated) {
        if (m.len != want->len || (m.len > 0 && memcmp(m.ptr, want->ptr, m.len) != 0))
            abort();
        return;
    }
    /* Truncated: a prefix of whole characters, and the next one does not fit. */
    if (want->len <= max || m.len >= want->len || memcmp(m.ptr, want->ptr, m.len) != 0)
        abort();
    int next = lf_utf8_char((const unsigned char *)want->ptr + m.len, want->len - m.len);
    if (next <= 0 || m.len + (size_t)next <= max)
        abort();
}

static void check_extra(struct lf_str extra, struct lf_buf *wrapped)
{
    if (extra.len == 0)
        return;
    lf_buf_reset(wrapped);
    if (lf_buf_append(wrapped, "{", 1) || lf_buf_append_str(wrapped, extra) ||
        lf_buf_append(wrapped, "}", 1))
        abort();
    json_error_t jerr;
    json_t *root =
        json_loadb(wrapped->ptr, wrapped->len,
                   JSON_DECODE_INT_AS_REAL | JSON_REJECT_DUPLICATES | JSON_ALLOW_NUL, &jerr);
    if (root == NULL || json_object_size(root) != 1 ||
        !json_is_object(json_object_get(root, "journald")))
        abort();
    json_decref(root);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 2)
        return 0;
    static char *include_all[] = { (char *)"*" };
    static char *include_named[] = { (char *)"FOO", (char *)"_SYSTEMD_CGROUP" };
    static char *exclude[] = { (char *)"_PID", (char *)"FOO", (char *)"PRIORITY" };
    struct lf_input_conf in;
    memset(&in, 0, sizeof(in));
    in.max_line_bytes = data[0] & 0x80 ? (size_t)1 << 20 : 4 + (size_t)(data[0] & 0x3F);
    in.line_overflow = data[1] & 1 ? LF_OVERFLOW_SKIP : LF_OVERFLOW_TRUNCATE;
    if (data[1] & 2) {
        in.include_fields = include_all;
        in.n_include_fields = 1;
    } else if (data[1] & 4) {
        in.include_fields = include_named;
        in.n_include_fields = 2;
    }
    if (data[1] & 8) {
        in.exclude_fields = exclude;
        in.n_exclude_fields = 3;
    }
    struct lf_jentry *j = NULL;
    if (lf_jentry_new(&in, &j))
        abort();
    struct lf_buf want;
    struct lf_buf wrapped;
    lf_buf_init(&want, SIZE_MAX / 4);
    lf_buf_init(&wrapped, SIZE_MAX / 4);
    size_t i = 2;
    uint64_t usec = 0;
    while (i <= size) {
        const uint8_t *end = i < size ? memchr(data + i, ENTRY_SEP, size - i) : NULL;
        size_t n = end != NULL ? (size_t)(end - (data + i)) : size - i;
        const uint8_t *e = data + i;
        lf_jentry_begin(j, usec++);
        for (size_t k = 0; k <= n;) {
            const uint8_t *iend = k < n ? memchr(e + k, ITEM_SEP, n - k) : NULL;
            size_t len = iend != NULL ? (size_t)(iend - (e + k)) : n - k;
            if (lf_jentry_add(j, e + k, len))
                abort();
            k += len + 1;
        }
        struct lf_jentry_out out;
        if (lf_jentry_end(j, &out))
            abort();
        lf_buf_reset(&want);
        bool has = reference_message(e, n, &want);
        if (!has && (out.message.len != 0 || out.bytes != 0 || out.truncated || out.skip))
            abort();
        check_message(&out, &want, in.max_line_bytes);
        check_extra(out.extra, &wrapped);
        i += n + 1;
    }
    lf_buf_release(&want);
    lf_buf_release(&wrapped);
    lf_jentry_free(j);
    return 0;
}
