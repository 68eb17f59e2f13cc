/* members.c - helpers the regex, access_log and fields stages share: the agent's own keys,
 * dotted paths into an event's JSON members, and small writers. */
#include "config.h"

#include <string.h>

#include "stage_int.h"

static const struct lf_str own_keys[] = { LF_STR_LIT("@timestamp"), LF_STR_LIT("log"),
                                          LF_STR_LIT("input"), LF_STR_LIT("host"),
                                          LF_STR_LIT("fields") };

bool lf_stage__is_encoder_key(const char *key, size_t len)
{
    for (size_t i = 0; i < sizeof(own_keys) / sizeof(own_keys[0]); i++) {
        if (own_keys[i].len == len && memcmp(own_keys[i].ptr, key, len) == 0)
            return true;
    }
    return false;
}

bool lf_stage__json_find(struct lf_str list,
                         struct lf_str path,
                         struct lf_str *member,
                         struct lf_str *value)
{
    for (;;) {
        const char *dot = memchr(path.ptr, '.', path.len);
        size_t seg = dot != NULL ? (size_t)(dot - path.ptr) : path.len;
        struct lf_str k;
        struct lf_str m;
        bool found = false;
        while (lf_stage__json_next_member(&list, &k, &m)) {
            if (k.len == seg && memcmp(k.ptr, path.ptr, seg) == 0) {
                found = true;
                break;
            }
        }
        if (!found)
            return false;
        /* The value follows the key's closing quote, ':' and any blanks. */
        const char *v = k.ptr + k.len + 1;
        const char *end = m.ptr + m.len;
        while (v < end && (*v == ':' || *v == ' ' || *v == '\t' || *v == '\r' || *v == '\n'))
            v++;
        if (dot == NULL) {
            *member = m;
            *value = lf_str_make(v, (size_t)(end - v));
            return true;
        }
        if (v >= end || *v != '{' || end[-1] != '}')
            return false;
        list = lf_str_make(v + 1, (size_t)(end - v - 2));
        path = lf_str_make(dot + 1, path.len - seg - 1);
    }
}

enum lf_err lf_stage__append_int(struct lf_buf *b, int64_t v)
{
    char digits[24];
    char *p = digits + sizeof(digits);
    uint64_t u = v < 0 ? 0 - (uint64_t)v : (uint64_t)v;
    do {
        *--p = (char)('0' + u % 10);
        u /= 10;
    } while (u != 0);
    if (v < 0)
        *--p = '-';
    return lf_buf_append(b, p, (size_t)(digits + sizeof(digits) - p));
}

enum lf_err lf_stage__append_key(struct lf_buf *b, bool *first, const char *key, size_t len)
{
    enum lf_err err = *first ? LF_OK : lf_buf_append(b, ",", 1);
    *first = false;
    if (!err)
        err = lf_buf_append(b, "\"", 1);
    if (!err)
        err = lf_buf_append(b, key, len);
    if (!err)
        err = lf_buf_append(b, "\":", 2);
    return err;
}
