/* fuzz_json.c - lf_json_escape() output must parse back (jansson) to the input bytes.
 *
 * The input is first made valid UTF-8 (each byte that does not start a valid sequence
 * becomes U+FFFD), since lf_json_escape() requires UTF-8. */
#include "config.h"

#include <jansson.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "logferry/event.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Length of the valid UTF-8 sequence at p, or 0. */
static size_t seq_len(const uint8_t *p, size_t n)
{
    uint8_t c = p[0];
    if (c < 0x80)
        return 1;
    size_t len = c >= 0xf0 ? 4 : c >= 0xe0 ? 3 : 2;
    if (c < 0xc2 || c > 0xf4 || n < len)
        return 0;
    for (size_t i = 1; i < len; i++) {
        if ((p[i] & 0xc0) != 0x80)
            return 0;
    }
    if ((c == 0xe0 && p[1] < 0xa0) || (c == 0xed && p[1] > 0x9f) || (c == 0xf0 && p[1] < 0x90) ||
        (c == 0xf4 && p[1] > 0x8f))
        return 0;
    return len;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct lf_buf utf8;
    struct lf_buf json;
    lf_buf_init(&utf8, SIZE_MAX / 4);
    lf_buf_init(&json, SIZE_MAX / 4);
    size_t i = 0;
    while (i < size) {
        size_t len = seq_len(data + i, size - i);
        enum lf_err err =
            len > 0 ? lf_buf_append(&utf8, data + i, len) : lf_buf_append(&utf8, "\xef\xbf\xbd", 3);
        if (err)
            abort();
        i += len > 0 ? len : 1;
    }
    if (lf_buf_append(&json, "\"", 1) || lf_json_escape(&json, lf_buf_str(&utf8)) ||
        lf_buf_append(&json, "\"", 1))
        abort();
    json_error_t jerr;
    json_t *s = json_loadb(json.ptr, json.len, JSON_DECODE_ANY | JSON_ALLOW_NUL, &jerr);
    if (s == NULL || !json_is_string(s) || json_string_length(s) != utf8.len ||
        (utf8.len > 0 && memcmp(json_string_value(s), utf8.ptr, utf8.len) != 0))
        abort();
    /* Raw line separators would break JavaScript consumers. */
    if (memmem(json.ptr, json.len, "\xe2\x80\xa8", 3) ||
        memmem(json.ptr, json.len, "\xe2\x80\xa9", 3))
        abort();
    json_decref(s);
    lf_buf_release(&utf8);
    lf_buf_release(&json);
    return 0;
}
