/* utf8.c - UTF-8 character validation (see utf8.h). */
#include "config.h"

#include "logferry/utf8.h"

#include <stdint.h>
#include <string.h>

int lf_utf8_char(const unsigned char *p, size_t n)
{
    unsigned c = p[0];
    if (c < 0x80)
        return 1;
    int need;
    unsigned lo = 0x80;
    unsigned hi = 0xBF;
    if (c < 0xC2) {
        return -1;
    } else if (c < 0xE0) {
        need = 2;
    } else if (c < 0xF0) {
        need = 3;
        if (c == 0xE0)
            lo = 0xA0;
        else if (c == 0xED)
            hi = 0x9F;
    } else if (c < 0xF5) {
        need = 4;
        if (c == 0xF0)
            lo = 0x90;
        else if (c == 0xF4)
            hi = 0x8F;
    } else {
        return -1;
    }
    if (n < 2)
        return 0;
    if (p[1] < lo || p[1] > hi)
        return -1;
    for (int i = 2; i < need; i++) {
        if ((size_t)i >= n)
            return 0;
        if ((p[i] & 0xC0) != 0x80)
            return -1;
    }
    return need;
}

bool lf_utf8_valid(const char *p, size_t n)
{
    const unsigned char *u = (const unsigned char *)p;
    size_t i = 0;
    while (i < n) {
        int len = lf_utf8_char(u + i, n - i);
        if (len <= 0)
            return false;
        i += (size_t)len;
    }
    return true;
}

static inline uint64_t load64(const unsigned char *p)
{
    uint64_t v;
    memcpy(&v, p, sizeof(v));
    return v;
}

size_t lf_utf8_valid_len(const void *bytes, size_t n)
{
    const unsigned char *p = bytes;
    const uint64_t high = 0x8080808080808080u;
    size_t i = 0;
    while (i < n) {
        while (n - i >= 32) {
            uint64_t v =
                load64(p + i) | load64(p + i + 8) | load64(p + i + 16) | load64(p + i + 24);
            if (v & high)
                break;
            i += 32;
        }
        while (n - i >= 8 && (load64(p + i) & high) == 0)
            i += 8;
        while (i < n && p[i] < 0x80)
            i++;
        if (i == n)
            break;
        int len = lf_utf8_char(p + i, n - i);
        if (len <= 0)
            return i;
        i += (size_t)len;
    }
    return i;
}
