/* fuzz_json_escape.c - lf_json_escape() output must parse back (jansson) to the input bytes.
 *
 * The input is first made valid UTF-8 (each byte that does not start a valid sequence
 * becomes U+FFFD), since lf_json_escape() requires UTF-8. */
#include "config.h"

#include <jansson.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "logferry/event.h"
#include "logferry/utf8.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct lf_buf utf8;
    struct lf_buf json;
    lf_buf_init(&utf8, SIZE_MAX / 4);
    lf_buf_init(&json, SIZE_MAX / 4);
    size_t i = 0;
    while (i < size) {
        int c = lf_utf8_char(data + i, size - i);
        size_t len = c > 0 ? (size_t)c : 0;
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
